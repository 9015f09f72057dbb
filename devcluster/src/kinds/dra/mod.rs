//! resource.k8s.io/v1, dynamic resource allocation: DeviceClass, ResourceClaim (+status),
//! ResourceClaimTemplate and ResourceSlice, validated as kube-apiserver v1.37's
//! `pkg/apis/resource/validation` and defaulted as `pkg/apis/resource/v1/defaults.go`, with upstream's size
//! limits. What the four kinds share lives here: the limits, name rules (driver, pool, device, request,
//! qualified attribute names), device claims (requests, sub-requests, selectors, constraints, config),
//! tolerations, allocation results and the claim status rules, and quantity syntax. CEL selector
//! expressions compile in [`cel`].
//!
//! Every field of the v1.37 types is accepted, as on a cluster with every DRA feature gate on (no
//! `dropDisabledFields`). The simulated driver that publishes slices is `sim::dra`; the kubelet's check
//! of a pod's claims is in `sim::kubelet`.

pub(crate) mod cel;
pub(crate) mod deviceclass;
pub(crate) mod resourceclaim;
pub(crate) mod resourceclaimtemplate;
pub(crate) mod resourceslice;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClaim, DeviceRequest, DeviceSelector, DeviceSubRequest, DeviceToleration,
    ExactDeviceRequest, OpaqueDeviceConfiguration, ResourceClaimStatus,
};
use serde_json::{Value, json};

use crate::error::{ApiError, FieldCause};
use crate::kinds::storage::validate_driver_name;
use crate::meta;
use crate::resource::ResourceInfo;
use crate::store::{GroupResource, Store};
use workloadbuilder::validation::strings;

/// The API group.
pub(crate) const GROUP: &str = "resource.k8s.io";
/// `DeviceRequestsMaxSize` (= `AllocationResultsMaxSize`): requests per claim, results per allocation.
pub(crate) const MAX_REQUESTS: usize = 32;
/// `FirstAvailableDeviceRequestMaxSize`: sub-requests per request.
pub(crate) const MAX_SUB_REQUESTS: usize = 8;
/// `DeviceSelectorsMaxSize`: selectors per request or class.
pub(crate) const MAX_SELECTORS: usize = 32;
/// `DeviceConstraintsMaxSize`.
pub(crate) const MAX_CONSTRAINTS: usize = 32;
/// `DeviceConfigMaxSize`: config entries per claim or class (an allocation may carry both: twice that).
pub(crate) const MAX_CONFIG: usize = 32;
/// `DeviceTolerationsMaxLength`.
pub(crate) const MAX_TOLERATIONS: usize = 16;
/// `ResourceClaimReservedForMaxSize`.
pub(crate) const MAX_RESERVED_FOR: usize = 256;
/// `ResourceSliceMaxDevices`.
pub(crate) const MAX_DEVICES: usize = 128;
/// `ResourceSliceMaxDevicesWithAdvancedFeatures`: with taints, counters or list attributes.
pub(crate) const MAX_DEVICES_ADVANCED: usize = 64;
/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
pub(crate) const MAX_ATTRIBUTES_AND_CAPACITIES: usize = 32;
/// `ResourceSliceMaxAttributeValuesPerDevice`: list attributes count each item.
pub(crate) const MAX_ATTRIBUTE_VALUES: usize = 48;
/// `DeviceAttributeMaxValueLength`.
pub(crate) const MAX_ATTRIBUTE_VALUE_LENGTH: usize = 64;
/// `DeviceMaxIDLength`: the name part of a qualified name.
pub(crate) const MAX_ID_LENGTH: usize = 32;
/// `DeviceTaintsMaxLength`.
pub(crate) const MAX_TAINTS: usize = 16;
/// `ResourceSliceMaxCounterSets`.
pub(crate) const MAX_COUNTER_SETS: usize = 8;
/// `ResourceSliceMaxCountersPerCounterSet` (and per device counter consumption).
pub(crate) const MAX_COUNTERS: usize = 32;
/// `ResourceSliceMaxDeviceCounterConsumptionsPerDevice`.
pub(crate) const MAX_COUNTER_CONSUMPTIONS: usize = 2;
/// `BindingConditionsMaxSize` and `BindingFailureConditionsMaxSize`.
pub(crate) const MAX_BINDING_CONDITIONS: usize = 4;
/// `PoolNameMaxLength`.
pub(crate) const MAX_POOL_NAME: usize = 253;
/// `OpaqueParametersMaxLength`: bytes of an opaque configuration's parameters.
pub(crate) const MAX_OPAQUE_PARAMETERS: usize = 10 * 1024;
/// `AllocatedDeviceStatusMaxConditions`.
pub(crate) const MAX_DEVICE_CONDITIONS: usize = 8;
/// `AllocatedDeviceStatusDataMaxLength`.
pub(crate) const MAX_DEVICE_DATA: usize = 10 * 1024;
/// `NetworkDeviceDataMaxIPs`.
pub(crate) const MAX_IPS: usize = 16;
/// The namespace label that allows `adminAccess` requests (`DRAAdminNamespaceLabelKey`).
pub(crate) const ADMIN_ACCESS_LABEL: &str = "resource.kubernetes.io/admin-access";

/// A 422 `Invalid` of a resource.k8s.io kind with these causes; `Ok` when there are none.
pub(crate) fn invalid(res: &ResourceInfo, obj: &Value, causes: Vec<FieldCause>) -> Result<(), ApiError> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(&res.group, &res.kind, meta::name(obj), causes))
}

/// Field causes collected during a validation, and the CEL expressions to compile at the end (see
/// [`cel::compile_all`]).
/// Compiles the CEL expressions of a decoded `resource.k8s.io` object for `request`, so that its
/// validation only looks them up: decoding runs before the cluster lock is taken on the HTTP write path
/// (compiling a 10 KiB expression is not cheap).
pub(crate) fn precompile(request: &mut crate::request::RequestContext, obj: &Value) {
    request.precompiled = Some(std::sync::Arc::new(cel::precompile(obj)));
}

#[derive(Debug, Default)]
pub(crate) struct Causes {
    /// The causes so far.
    pub list: Vec<FieldCause>,
    /// `(path, expression, must be boolean)` of each expression still to compile.
    cel: Vec<(String, String, bool)>,
    /// The expressions compiled before the cluster lock was taken, when the write path did that.
    compiled: Option<std::sync::Arc<cel::Compiled>>,
}

impl Causes {
    /// Causes of a validation run for `request`, looking up the expressions it compiled beforehand.
    pub(crate) fn for_request(request: &crate::request::RequestContext) -> Self {
        Causes {
            compiled: request
                .precompiled
                .clone()
                .and_then(|p| p.downcast::<cel::Compiled>().ok()),
            ..Default::default()
        }
    }

    fn push(&mut self, c: FieldCause) {
        self.list.push(c);
    }

    /// A CEL expression at `path`: too long is refused at once, the rest compiles in [`Causes::finish`].
    fn expression(&mut self, path: String, expression: &str, boolean: bool) {
        if expression.len() > cel::MAX_EXPRESSION_LENGTH {
            self.push(FieldCause::too_long(path, cel::MAX_EXPRESSION_LENGTH));
        } else {
            self.cel.push((path, expression.to_string(), boolean));
        }
    }

    /// Compiles the collected expressions and returns every cause.
    pub(crate) fn finish(mut self) -> Vec<FieldCause> {
        let pending = std::mem::take(&mut self.cel);
        let compiled = self.compiled.take();
        let looked_up = |e: &String, b: bool| compiled.as_ref().and_then(|c| c.get(&(e.clone(), b)).cloned());
        // Whatever was not compiled beforehand (in-process writers) compiles now.
        let missing: Vec<(String, bool)> = pending
            .iter()
            .filter(|(_, e, b)| looked_up(e, *b).is_none())
            .map(|(_, e, b)| (e.clone(), *b))
            .collect();
        let mut fresh = cel::compile_all(missing).into_iter();
        let results: Vec<Result<(), cel::Refusal>> = pending
            .iter()
            .map(|(_, e, b)| looked_up(e, *b).unwrap_or_else(|| fresh.next().unwrap_or(Err(cel::Refusal::TooComplex))))
            .collect();
        for ((path, expression, _), result) in pending.into_iter().zip(results) {
            match result {
                Ok(()) => {}
                Err(cel::Refusal::Invalid(detail)) => self.push(FieldCause::invalid(path, &json!(expression), &detail)),
                Err(cel::Refusal::TooComplex) => {
                    self.push(FieldCause::forbidden(path, "too complex, exceeds cost limit"))
                }
            }
        }
        self.list
    }
}

// ----- lists -----

/// `validateSlice` / `validateSet`'s size check: too many items is one `Too many` cause and no item is
/// looked at (upstream short-circuits for DoS protection). Whether the items may be validated.
fn within(len: usize, max: usize, path: &str, c: &mut Causes) -> bool {
    if len > max {
        c.push(FieldCause::too_many(path, len, max));
        return false;
    }
    true
}

/// `validateSet`'s uniqueness: the second and later equal keys are `Duplicate` at their index.
fn unique<'a>(keys: impl Iterator<Item = &'a str>, path: &str, c: &mut Causes) {
    let mut seen = BTreeSet::new();
    for (i, k) in keys.enumerate() {
        if !seen.insert(k) {
            c.push(FieldCause::duplicate(format!("{path}[{i}]"), &json!(k)));
        }
    }
}

// ----- names -----

/// `ValidateDNS1123Label` (device, request and counter names).
fn dns_label(name: &str, path: &str, c: &mut Causes) {
    for msg in strings::is_dns1123_label(name) {
        c.push(FieldCause::invalid(path, &json!(name), &msg));
    }
}

/// `ValidateDNS1123Subdomain` (class and node names).
fn dns_subdomain(name: &str, path: &str, c: &mut Causes) {
    for msg in strings::is_dns1123_subdomain(name) {
        c.push(FieldCause::invalid(path, &json!(name), &msg));
    }
}

/// A driver name: a CSI driver name's rules (required, at most 63 bytes, a DNS subdomain).
pub(crate) fn driver_name(name: &str, path: &str, c: &mut Causes) {
    validate_driver_name(name, path, &mut c.list);
}

/// `validatePoolName`: required, at most 253 bytes, every `/`-separated part a DNS subdomain.
pub(crate) fn pool_name(name: &str, path: &str, c: &mut Causes) {
    if name.is_empty() {
        c.push(FieldCause::required(path, ""));
        return;
    }
    if name.len() > MAX_POOL_NAME {
        c.push(FieldCause::too_long(path, MAX_POOL_NAME));
    }
    for part in name.split('/') {
        dns_subdomain(part, path, c);
    }
}

/// `validateCIdentifier`: at most 32 bytes, `[A-Za-z_][A-Za-z0-9_]*`.
fn c_identifier(id: &str, path: &str, c: &mut Causes) {
    if id.len() > MAX_ID_LENGTH {
        c.push(FieldCause::too_long(path, MAX_ID_LENGTH));
    }
    let mut chars = id.chars();
    let ok = chars.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && chars.all(|x| x.is_ascii_alphanumeric() || x == '_');
    if !ok {
        c.push(FieldCause::invalid(
            path,
            &json!(id),
            "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name', or 'MY_NAME', or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
        ));
    }
}

/// `validateQualifiedName` of an attribute or capacity name: `<C identifier>` or `<driver-like
/// domain>/<C identifier>`.
pub(crate) fn qualified_name(name: &str, path: &str, c: &mut Causes) {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => c_identifier(id, path, c),
        [domain, id] => {
            if domain.is_empty() {
                c.push(FieldCause::invalid(path, &json!(""), "the domain must not be empty"));
            } else {
                driver_name(domain, path, c);
            }
            if id.is_empty() {
                c.push(FieldCause::invalid(path, &json!(""), "the name must not be empty"));
            } else {
                c_identifier(id, path, c);
            }
        }
        _ => c.push(FieldCause::invalid(
            path,
            &json!(name),
            "must not contain more than one slash",
        )),
    }
}

/// `validateFullyQualifiedName`: a qualified name that has a domain.
pub(crate) fn fully_qualified_name(name: &str, path: &str, c: &mut Causes) {
    qualified_name(name, path, c);
    if !name.contains('/') {
        c.push(FieldCause::invalid(
            path,
            &json!(name),
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
}

/// `ValidateLabelName` (taint and toleration keys, binding conditions).
fn label_key(key: &str, path: &str, c: &mut Causes) {
    crate::kinds::validate::label_name(key, path, &mut c.list);
}

fn label_value(value: &str, path: &str, c: &mut Causes) {
    for msg in strings::is_valid_label_value(value) {
        c.push(FieldCause::invalid(path, &json!(value), &msg));
    }
}

// ----- quantities -----

/// Whether `s` follows the quantity grammar (any sign, any size).
fn quantity_parses(s: &str) -> bool {
    !matches!(
        kwas_api_types::quantity::parse_units(s),
        Err(kwas_api_types::quantity::QuantityError::Empty | kwas_api_types::quantity::QuantityError::Syntax)
    )
}

/// Every string at `pattern` (object keys, `*` for any key or index) under `v` that is not a quantity:
/// the decoding error kube-apiserver answers with a 400 before validating.
pub(crate) fn check_quantities(res: &ResourceInfo, obj: &Value, patterns: &[&[&str]]) -> Result<(), ApiError> {
    fn walk(v: &Value, pattern: &[&str]) -> bool {
        let Some((first, rest)) = pattern.split_first() else {
            return v.as_str().is_none_or(quantity_parses);
        };
        match (v, *first) {
            (Value::Object(m), "*") => m.values().all(|x| walk(x, rest)),
            (Value::Array(a), "*") => a.iter().all(|x| walk(x, rest)),
            (Value::Object(m), key) => m.get(key).is_none_or(|x| walk(x, rest)),
            _ => true,
        }
    }
    if patterns.iter().all(|p| walk(obj, p)) {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {}: {}",
        res.kind,
        res.version,
        res.kind,
        kwas_api_types::quantity::QuantityError::Syntax
    )))
}

/// The quantity fields of a device claim, relative to it.
pub(crate) const CLAIM_QUANTITIES: &[&[&str]] = &[
    &["requests", "*", "exactly", "capacity", "requests", "*"],
    &["requests", "*", "firstAvailable", "*", "capacity", "requests", "*"],
];

// ----- device claims -----

/// Request names and, for requests with sub-requests, their sub-request names (`gatherRequestNames`).
pub(crate) type RequestNames = BTreeMap<String, Option<BTreeSet<String>>>;

/// `gatherRequestNames`.
pub(crate) fn request_names(claim: Option<&DeviceClaim>) -> RequestNames {
    let mut out = RequestNames::new();
    for r in claim.and_then(|d| d.requests.as_ref()).into_iter().flatten() {
        let subs = r
            .first_available
            .as_ref()
            .filter(|f| !f.is_empty())
            .map(|f| f.iter().map(|s| s.name.clone()).collect());
        out.insert(r.name.clone(), subs);
    }
    out
}

fn has_request(names: &RequestNames, reference: &str) -> bool {
    let segments: Vec<&str> = reference.split('/').collect();
    match segments.as_slice() {
        [r] => names.contains_key(*r),
        [r, s] => names
            .get(*r)
            .is_some_and(|subs| subs.as_ref().is_some_and(|subs| subs.contains(*s))),
        _ => false,
    }
}

const REQUEST_REF: &str =
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

/// `validateRequestNameRef`.
fn request_ref(reference: &str, path: &str, names: &RequestNames, c: &mut Causes) {
    let segments: Vec<&str> = reference.split('/').collect();
    if segments.len() > 2 {
        c.push(FieldCause::invalid(path, &json!(reference), REQUEST_REF));
        return;
    }
    for s in &segments {
        dns_label(s, path, c);
    }
    if !has_request(names, reference) {
        c.push(FieldCause::invalid(path, &json!(reference), REQUEST_REF));
    }
}

/// A list of request references (constraints, config): at most [`MAX_REQUESTS`], unique, each existing.
fn request_refs(refs: Option<&Vec<String>>, path: &str, names: &RequestNames, c: &mut Causes) {
    let refs = refs.map(Vec::as_slice).unwrap_or_default();
    if !within(refs.len(), MAX_REQUESTS, path, c) {
        return;
    }
    for (i, r) in refs.iter().enumerate() {
        request_ref(r, &format!("{path}[{i}]"), names, c);
    }
    unique(refs.iter().map(String::as_str), path, c);
}

/// `SetDefaults_ExactDeviceRequest` / `SetDefaults_DeviceSubRequest` on the JSON of a device claim
/// (`allocationMode: ExactCount`, `count: 1` for it), and a toleration's `operator: Equal`.
pub(crate) fn default_device_claim(devices: &mut Value) {
    let Some(requests) = devices.get_mut("requests").and_then(Value::as_array_mut) else {
        return;
    };
    for r in requests {
        if let Some(e) = r.get_mut("exactly").filter(|e| e.is_object()) {
            default_request(e);
        }
        for s in r
            .get_mut("firstAvailable")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            default_request(s);
        }
    }
}

fn default_request(r: &mut Value) {
    let Some(m) = r.as_object_mut() else { return };
    let mode = m
        .entry("allocationMode")
        .or_insert(json!("ExactCount"))
        .as_str()
        .unwrap_or("")
        .to_string();
    if mode == "ExactCount" && m.get("count").and_then(Value::as_i64).unwrap_or(0) == 0 {
        m.insert("count".into(), json!(1));
    }
    for t in m
        .get_mut("tolerations")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(t) = t.as_object_mut() {
            t.entry("operator").or_insert(json!("Equal"));
        }
    }
}

/// `validateDeviceClaim` at `path` (`spec.devices`). Constraint attributes are gathered first for the
/// derived attributes' check.
pub(crate) fn device_claim(claim: Option<&DeviceClaim>, path: &str, c: &mut Causes) {
    let Some(claim) = claim else { return };
    let names = request_names(Some(claim));
    let constraint_attrs = constraint_attributes(claim);
    let requests = claim.requests.as_deref().unwrap_or_default();
    let rp = format!("{path}.requests");
    if within(requests.len(), MAX_REQUESTS, &rp, c) {
        for (i, r) in requests.iter().enumerate() {
            device_request(r, &format!("{rp}[{i}]"), &constraint_attrs, c);
        }
        unique(requests.iter().map(|r| r.name.as_str()), &rp, c);
    }
    let constraints = claim.constraints.as_deref().unwrap_or_default();
    let cp = format!("{path}.constraints");
    if within(constraints.len(), MAX_CONSTRAINTS, &cp, c) {
        for (i, k) in constraints.iter().enumerate() {
            let kp = format!("{cp}[{i}]");
            request_refs(k.requests.as_ref(), &format!("{kp}.requests"), &names, c);
            match (&k.match_attribute, &k.distinct_attribute) {
                (Some(a), _) => fully_qualified_name(a, &format!("{kp}.matchAttribute"), c),
                (None, Some(a)) => fully_qualified_name(a, &format!("{kp}.distinctAttribute"), c),
                (None, None) => c.push(FieldCause::required(
                    kp,
                    "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set",
                )),
            }
        }
    }
    let config = claim.config.as_deref().unwrap_or_default();
    let fp = format!("{path}.config");
    if within(config.len(), MAX_CONFIG, &fp, c) {
        for (i, k) in config.iter().enumerate() {
            let kp = format!("{fp}[{i}]");
            request_refs(k.requests.as_ref(), &format!("{kp}.requests"), &names, c);
            opaque(k.opaque.as_ref(), &kp, c);
        }
    }
}

/// `gatherConstraintAttributes`: attribute names by the request they constrain (`""` for every request).
fn constraint_attributes(claim: &DeviceClaim) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for k in claim.constraints.as_deref().unwrap_or_default() {
        let Some(attr) = k.match_attribute.as_ref().or(k.distinct_attribute.as_ref()) else {
            continue;
        };
        let targets = k.requests.as_deref().unwrap_or_default();
        if targets.is_empty() {
            out.entry(String::new()).or_default().insert(attr.clone());
        }
        for t in targets {
            out.entry(t.clone()).or_default().insert(attr.clone());
        }
    }
    out
}

fn device_request(r: &DeviceRequest, path: &str, attrs: &BTreeMap<String, BTreeSet<String>>, c: &mut Causes) {
    dns_label(&r.name, &format!("{path}.name"), c);
    let first = r.first_available.as_deref().unwrap_or_default();
    match (r.exactly.as_ref(), first.is_empty()) {
        (None, true) => c.push(FieldCause::required(
            path,
            "exactly one of `exactly` or `firstAvailable` is required",
        )),
        (Some(_), false) => c.push(FieldCause::invalid(
            path,
            &Value::Null,
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        )),
        (None, false) => {
            let fp = format!("{path}.firstAvailable");
            if within(first.len(), MAX_SUB_REQUESTS, &fp, c) {
                for (i, s) in first.iter().enumerate() {
                    sub_request(s, &format!("{fp}[{i}]"), &format!("{}/{}", r.name, s.name), attrs, c);
                }
                unique(first.iter().map(|s| s.name.as_str()), &fp, c);
            }
        }
        (Some(e), true) => exact_request(e, &format!("{path}.exactly"), &r.name, attrs, c),
    }
}

fn exact_request(
    e: &ExactDeviceRequest,
    path: &str,
    request: &str,
    attrs: &BTreeMap<String, BTreeSet<String>>,
    c: &mut Causes,
) {
    class_name(&e.device_class_name, &format!("{path}.deviceClassName"), c);
    selectors(e.selectors.as_deref(), &format!("{path}.selectors"), c);
    derived_attributes(
        e.derived_attributes.as_deref(),
        &format!("{path}.derivedAttributes"),
        request,
        attrs,
        c,
    );
    allocation_mode(e.allocation_mode.as_deref(), e.count, path, c);
    tolerations(e.tolerations.as_deref(), &format!("{path}.tolerations"), c);
}

fn sub_request(
    s: &DeviceSubRequest,
    path: &str,
    reference: &str,
    attrs: &BTreeMap<String, BTreeSet<String>>,
    c: &mut Causes,
) {
    dns_label(&s.name, &format!("{path}.name"), c);
    class_name(&s.device_class_name, &format!("{path}.deviceClassName"), c);
    selectors(s.selectors.as_deref(), &format!("{path}.selectors"), c);
    derived_attributes(
        s.derived_attributes.as_deref(),
        &format!("{path}.derivedAttributes"),
        reference,
        attrs,
        c,
    );
    allocation_mode(s.allocation_mode.as_deref(), s.count, path, c);
    tolerations(s.tolerations.as_deref(), &format!("{path}.tolerations"), c);
}

/// `validateDeviceClass` of a request: required, a DNS subdomain.
fn class_name(name: &str, path: &str, c: &mut Causes) {
    if name.is_empty() {
        c.push(FieldCause::required(path, ""));
    } else {
        dns_subdomain(name, path, c);
    }
}

/// `validateSelectorSlice`: at most [`MAX_SELECTORS`], each with a CEL expression that compiles.
pub(crate) fn selectors(list: Option<&[DeviceSelector]>, path: &str, c: &mut Causes) {
    let list = list.unwrap_or_default();
    if !within(list.len(), MAX_SELECTORS, path, c) {
        return;
    }
    for (i, s) in list.iter().enumerate() {
        match &s.cel {
            None => c.push(FieldCause::required(format!("{path}[{i}].cel"), "")),
            Some(sel) => c.expression(format!("{path}[{i}].cel.expression"), &sel.expression, true),
        }
    }
}

fn derived_attributes(
    list: Option<&[k8s_openapi::api::resource::v1::DeviceDerivedAttribute]>,
    path: &str,
    request: &str,
    attrs: &BTreeMap<String, BTreeSet<String>>,
    c: &mut Causes,
) {
    let list = list.unwrap_or_default();
    let used = |name: &str| {
        let has = |k: &str| attrs.get(k).is_some_and(|s| s.contains(name));
        has("") || has(request) || request.split_once('/').is_some_and(|(parent, _)| has(parent))
    };
    for (i, a) in list.iter().enumerate() {
        let ap = format!("{path}[{i}]");
        if a.name.is_empty() {
            c.push(FieldCause::required(format!("{ap}.name"), ""));
        } else if !used(&a.name) {
            c.push(FieldCause::invalid(
                format!("{ap}.name"),
                &json!(a.name),
                "must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request",
            ));
        }
        if a.expression.is_empty() {
            c.push(FieldCause::required(format!("{ap}.expression"), ""));
        } else {
            c.expression(format!("{ap}.expression"), &a.expression, false);
        }
    }
    unique(list.iter().map(|a| a.name.as_str()), path, c);
}

/// `validateDeviceAllocationMode`.
fn allocation_mode(mode: Option<&str>, count: Option<i64>, path: &str, c: &mut Causes) {
    let count = count.unwrap_or(0);
    match mode.unwrap_or("") {
        "All" if count != 0 => c.push(FieldCause::invalid(
            format!("{path}.count"),
            &json!(count),
            "must not be specified when allocationMode is 'All'",
        )),
        "ExactCount" if count <= 0 => c.push(FieldCause::invalid(
            format!("{path}.count"),
            &json!(count),
            "must be greater than zero",
        )),
        "All" | "ExactCount" => {}
        other => c.push(FieldCause::not_supported(
            format!("{path}.allocationMode"),
            &json!(other),
            &["All", "ExactCount"],
        )),
    }
}

const TAINT_EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "None"];

/// `validateDeviceToleration` of each toleration (at most [`MAX_TOLERATIONS`]).
fn tolerations(list: Option<&[DeviceToleration]>, path: &str, c: &mut Causes) {
    let list = list.unwrap_or_default();
    if !within(list.len(), MAX_TOLERATIONS, path, c) {
        return;
    }
    for (i, t) in list.iter().enumerate() {
        let tp = format!("{path}[{i}]");
        if let Some(k) = t.key.as_deref().filter(|k| !k.is_empty()) {
            label_key(k, &format!("{tp}.key"), c);
        }
        let value = t.value.as_deref().unwrap_or("");
        match t.operator.as_deref().unwrap_or("") {
            "Exists" => {
                if !value.is_empty() {
                    c.push(FieldCause::invalid(
                        format!("{tp}.value"),
                        &json!(value),
                        "must be empty for operator `Exists`",
                    ));
                }
            }
            "Equal" => label_value(value, &format!("{tp}.value"), c),
            "" => c.push(FieldCause::required(format!("{tp}.operator"), "")),
            other => c.push(FieldCause::not_supported(
                format!("{tp}.operator"),
                &json!(other),
                &["Equal", "Exists"],
            )),
        }
        if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty())
            && !TAINT_EFFECTS.contains(&e)
        {
            c.push(FieldCause::not_supported(
                format!("{tp}.effect"),
                &json!(e),
                TAINT_EFFECTS,
            ));
        }
    }
}

/// `validateDeviceConfiguration`: an `opaque` configuration is required at `path`.
pub(crate) fn opaque(config: Option<&OpaqueDeviceConfiguration>, path: &str, c: &mut Causes) {
    let Some(o) = config else {
        c.push(FieldCause::required(format!("{path}.opaque"), ""));
        return;
    };
    driver_name(&o.driver, &format!("{path}.opaque.driver"), c);
    raw_object(
        &o.parameters.0,
        &format!("{path}.opaque.parameters"),
        MAX_OPAQUE_PARAMETERS,
        c,
    );
}

/// `validateRawExtension`: a JSON object of at most `max` bytes.
fn raw_object(v: &Value, path: &str, max: usize, c: &mut Causes) {
    match v {
        Value::Null => c.push(FieldCause::required(path, "")),
        Value::Object(_) => {
            if v.to_string().len() > max {
                c.push(FieldCause::too_long(path, max));
            }
        }
        _ => c.push(FieldCause::invalid(
            path,
            &json!("<value omitted>"),
            "must be a valid JSON object",
        )),
    }
}

/// `AuthorizedForAdmin`: requests with `adminAccess: true` need the namespace label
/// `resource.kubernetes.io/admin-access: "true"`. `path` is the device claim's.
pub(crate) fn admin_access(store: &Store, namespace: &str, claim: Option<&DeviceClaim>, path: &str, c: &mut Causes) {
    let labelled = store
        .get(&GroupResource::new("", "namespaces"), "", namespace)
        .is_some_and(|ns| {
            meta::string_map(&ns, "labels")
                .iter()
                .any(|(k, v)| k == ADMIN_ACCESS_LABEL && v == "true")
        });
    if labelled {
        return;
    }
    for (i, r) in claim
        .and_then(|d| d.requests.as_ref())
        .into_iter()
        .flatten()
        .enumerate()
    {
        if r.exactly.as_ref().and_then(|e| e.admin_access) == Some(true) {
            c.push(FieldCause::forbidden(
                format!("{path}.requests[{i}].exactly.adminAccess"),
                &format!(
                    "admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
                ),
            ));
        }
    }
}

// ----- claim status -----

/// A device's identity in an allocation and in the status (`driver/pool/device`, and the share id).
fn device_id(driver: &str, pool: &str, device: &str, share: Option<&str>) -> String {
    match share {
        Some(s) => format!("{driver}/{pool}/{device}/{s}"),
        None => format!("{driver}/{pool}/{device}"),
    }
}

/// `validateResourceClaimStatusUpdate`: `reservedFor` (at most 256, unique uids, complete references,
/// only with an allocation, no additions while the claim is being deleted), the devices' status (allocated
/// devices only), and an allocation that is set once: unchanged while set, validated when new.
pub(crate) fn status_update(
    new: &ResourceClaimStatus,
    old: &ResourceClaimStatus,
    deleting: bool,
    names: &RequestNames,
    c: &mut Causes,
) {
    let reserved = new.reserved_for.as_deref().unwrap_or_default();
    let rp = "status.reservedFor";
    if within(reserved.len(), MAX_RESERVED_FOR, rp, c) {
        for (i, r) in reserved.iter().enumerate() {
            for (f, v) in [("resource", &r.resource), ("name", &r.name), ("uid", &r.uid)] {
                if v.is_empty() {
                    c.push(FieldCause::required(format!("{rp}[{i}].{f}"), ""));
                }
            }
        }
        unique(reserved.iter().map(|r| r.uid.as_str()), rp, c);
    }
    let allocated: BTreeSet<String> = new
        .allocation
        .as_ref()
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref())
        .into_iter()
        .flatten()
        .map(|r| device_id(&r.driver, &r.pool, &r.device, r.share_id.as_deref()))
        .collect();
    let devices = new.devices.as_deref().unwrap_or_default();
    for (i, d) in devices.iter().enumerate() {
        let dp = format!("status.devices[{i}]");
        driver_name(&d.driver, &format!("{dp}.driver"), c);
        pool_name(&d.pool, &format!("{dp}.pool"), c);
        dns_label(&d.device, &format!("{dp}.device"), c);
        let id = device_id(&d.driver, &d.pool, &d.device, d.share_id.as_deref());
        if !allocated.contains(&id) {
            c.push(FieldCause::invalid(
                dp.clone(),
                &json!(id),
                "must be an allocated device in the claim",
            ));
        }
        let conditions = d.conditions.as_deref().unwrap_or_default();
        if conditions.len() > MAX_DEVICE_CONDITIONS {
            c.push(FieldCause::too_many(
                format!("{dp}.conditions"),
                conditions.len(),
                MAX_DEVICE_CONDITIONS,
            ));
        }
        if let Some(data) = d.data.as_ref().filter(|x| !x.0.is_null()) {
            raw_object(&data.0, &format!("{dp}.data"), MAX_DEVICE_DATA, c);
        }
        if let Some(n) = &d.network_data {
            if n.interface_name.as_deref().unwrap_or("").len() > 256 {
                c.push(FieldCause::too_long(format!("{dp}.networkData.interfaceName"), 256));
            }
            if n.hardware_address.as_deref().unwrap_or("").len() > 128 {
                c.push(FieldCause::too_long(format!("{dp}.networkData.hardwareAddress"), 128));
            }
            let ips = n.ips.as_deref().unwrap_or_default();
            let ip = format!("{dp}.networkData.ips");
            if within(ips.len(), MAX_IPS, &ip, c) {
                unique(ips.iter().map(String::as_str), &ip, c);
            }
        }
    }
    unique(
        devices
            .iter()
            .map(|d| device_id(&d.driver, &d.pool, &d.device, d.share_id.as_deref()))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
        "status.devices",
        c,
    );
    if !reserved.is_empty() {
        if new.allocation.is_none() {
            c.push(FieldCause::forbidden(
                rp,
                "may not be specified when `allocated` is not set",
            ));
        } else if deleting {
            let before: BTreeSet<&str> = old
                .reserved_for
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|r| r.uid.as_str())
                .collect();
            if reserved.iter().any(|r| !before.contains(r.uid.as_str())) {
                c.push(FieldCause::forbidden(
                    rp,
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                ));
            }
        }
    }
    match (&old.allocation, &new.allocation) {
        (Some(before), Some(after)) if before != after => c.push(FieldCause::immutable(
            "status.allocation",
            &serde_json::to_value(after).unwrap_or(Value::Null),
        )),
        (None, Some(after)) => allocation(after, names, c),
        _ => {}
    }
}

/// `validateAllocationResult` of a new allocation.
fn allocation(a: &AllocationResult, names: &RequestNames, c: &mut Causes) {
    let p = "status.allocation";
    if let Some(d) = &a.devices {
        let results = d.results.as_deref().unwrap_or_default();
        let rp = format!("{p}.devices.results");
        if within(results.len(), MAX_REQUESTS, &rp, c) {
            for (i, r) in results.iter().enumerate() {
                let ip = format!("{rp}[{i}]");
                request_ref(&r.request, &format!("{ip}.request"), names, c);
                driver_name(&r.driver, &format!("{ip}.driver"), c);
                pool_name(&r.pool, &format!("{ip}.pool"), c);
                dns_label(&r.device, &format!("{ip}.device"), c);
                binding_conditions(
                    r.binding_conditions.as_deref(),
                    r.binding_failure_conditions.as_deref(),
                    &ip,
                    c,
                );
                tolerations(r.tolerations.as_deref(), &format!("{ip}.tolerations"), c);
                if let Some(share) = &r.share_id {
                    uid(share, &format!("{ip}.shareID"), c);
                }
            }
        }
        let config = d.config.as_deref().unwrap_or_default();
        let cp = format!("{p}.devices.config");
        if within(config.len(), 2 * MAX_CONFIG, &cp, c) {
            for (i, k) in config.iter().enumerate() {
                let kp = format!("{cp}[{i}]");
                match k.source.as_str() {
                    "" => c.push(FieldCause::required(format!("{kp}.source"), "")),
                    "FromClaim" | "FromClass" => {}
                    other => c.push(FieldCause::not_supported(
                        format!("{kp}.source"),
                        &json!(other),
                        &["FromClaim", "FromClass"],
                    )),
                }
                request_refs(k.requests.as_ref(), &format!("{kp}.requests"), names, c);
                opaque(k.opaque.as_ref(), &kp, c);
            }
        }
    }
    if let Some(sel) = &a.node_selector {
        let v = serde_json::to_value(sel).unwrap_or(Value::Null);
        crate::kinds::validate::node_selector(&v, &format!("{p}.nodeSelector"), &mut c.list);
    }
}

/// `validateUID`: an RFC 4122 UUID in lowercase normalized form.
fn uid(s: &str, path: &str, c: &mut Causes) {
    if uuid::Uuid::parse_str(s).is_err() {
        c.push(FieldCause::invalid(
            path,
            &json!(s),
            "error validating uid: invalid UUID format",
        ));
    } else if s.len() != 36 || s != s.to_lowercase() {
        c.push(FieldCause::invalid(
            path,
            &json!(s),
            "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
        ));
    }
}

/// `validateDeviceBindingParameters` at `path` (a device or an allocation result).
pub(crate) fn binding_conditions(
    conditions: Option<&[String]>,
    failures: Option<&[String]>,
    path: &str,
    c: &mut Causes,
) {
    let (conds, fails) = (conditions.unwrap_or_default(), failures.unwrap_or_default());
    for (list, name) in [(conds, "bindingConditions"), (fails, "bindingFailureConditions")] {
        let lp = format!("{path}.{name}");
        if within(list.len(), MAX_BINDING_CONDITIONS, &lp, c) {
            for (i, k) in list.iter().enumerate() {
                label_key(k, &format!("{lp}[{i}]"), c);
            }
            unique(list.iter().map(String::as_str), &lp, c);
        }
    }
    for (i, f) in fails.iter().enumerate() {
        if conds.contains(f) {
            c.push(FieldCause::invalid(
                format!("{path}.bindingFailureConditions[{i}]"),
                &json!(f),
                "bindingFailureConditions must not overlap with bindingConditions",
            ));
        }
    }
    if conds.is_empty() && !fails.is_empty() {
        c.push(FieldCause::invalid(
            format!("{path}.bindingConditions"),
            &json!(conds),
            "bindingConditions are required to use bindingFailureConditions",
        ));
    }
    if fails.is_empty() && !conds.is_empty() {
        c.push(FieldCause::invalid(
            format!("{path}.bindingFailureConditions"),
            &json!(fails),
            "bindingFailureConditions are required to use bindingConditions",
        ));
    }
}
