//! resource.k8s.io/v1 ResourceSlice (cluster-scoped): the devices a driver publishes for one pool, as
//! kube-apiserver's `pkg/registry/resource/resourceslice` strategy and `ValidateResourceSlice*`:
//!
//! - a driver name (a DNS subdomain of at most 63 bytes; upper case is allowed with a warning), a pool
//!   (name, `generation` >= 0, `resourceSliceCount` > 0), exactly one of `nodeName`, `nodeSelector` (one
//!   term), `allNodes`, `perDeviceNodeSelection`; `sharedCounters` or `devices`, not both;
//! - at most 128 devices (64 with taints, counters or list attributes), unique DNS-label names, at most 32
//!   attributes and capacities and 48 attribute values per device, qualified attribute names, exactly one
//!   value per attribute (strings of at most 64 bytes, semantic versions), capacities and their request
//!   policies, taints (`timeAdded` defaulted), counters, binding conditions, per-device node selection;
//! - `spec.driver`, `spec.pool.name` and `spec.nodeName` immutable; `generation` bumped on spec changes;
//! - field selectors `spec.nodeName` and `spec.driver`;
//! - `kubectl get resourceslices`: NAME, NODE, DRIVER, POOL, AGE.
//!
//! devcluster's simulated driver publishes one slice per node (`sim::dra`).

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    CapacityRequestPolicy, Device, DeviceAttribute, DeviceCapacity, ResourceSlice, ResourceSliceSpec,
};
use serde_json::{Value, json};

use super::{
    Causes, GROUP, MAX_ATTRIBUTE_VALUE_LENGTH, MAX_ATTRIBUTE_VALUES, MAX_ATTRIBUTES_AND_CAPACITIES,
    MAX_COUNTER_CONSUMPTIONS, MAX_COUNTER_SETS, MAX_COUNTERS, MAX_DEVICES, MAX_DEVICES_ADVANCED, MAX_TAINTS,
    binding_conditions, check_quantities, dns_label, dns_subdomain, driver_name, fully_qualified_name, invalid,
    label_key, label_value, pool_name, qualified_name, unique, within,
};
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, name, text_cell};
use crate::resource::decode;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        GROUP,
        "v1",
        "ResourceSlice",
        "resourceslices",
        false,
        ResourceSliceStrategy,
    )
}

/// The quantity fields of a slice.
const QUANTITIES: &[&[&str]] = &[
    &["spec", "devices", "*", "capacity", "*", "value"],
    &["spec", "devices", "*", "capacity", "*", "requestPolicy", "default"],
    &[
        "spec",
        "devices",
        "*",
        "capacity",
        "*",
        "requestPolicy",
        "validValues",
        "*",
    ],
    &[
        "spec",
        "devices",
        "*",
        "capacity",
        "*",
        "requestPolicy",
        "validRange",
        "*",
    ],
    &[
        "spec",
        "devices",
        "*",
        "consumesCounters",
        "*",
        "counters",
        "*",
        "value",
    ],
    &["spec", "devices", "*", "nodeAllocatableResources", "*", "mapping", "*"],
    &["spec", "devices", "*", "nodeAllocatableResources", "*", "overhead", "*"],
    &["spec", "sharedCounters", "*", "counters", "*", "value"],
];

#[derive(Debug)]
struct ResourceSliceStrategy;

impl Strategy for ResourceSliceStrategy {
    type Object = ResourceSlice;

    fn supports_field(&self, field: &str) -> bool {
        matches!(field, "spec.nodeName" | "spec.driver")
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        normalize_device_quantities(obj);
        decode::typed::<ResourceSlice>(cx.request, res, obj)?;
        check_quantities(res, obj, QUANTITIES)?;
        super::precompile(cx.request, obj);
        Ok(())
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        // `SetDefaults_DeviceTaint`: a taint without `timeAdded` gets the current time, in seconds.
        let now = crate::meta::now_rfc3339();
        for device in obj
            .pointer_mut("/spec/devices")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for t in device
                .get_mut("taints")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(t) = t.as_object_mut()
                    && t.get("timeAdded").is_none_or(Value::is_null)
                {
                    t.insert("timeAdded".into(), json!(now));
                }
            }
        }
        let driver = obj.pointer("/spec/driver").and_then(Value::as_str).unwrap_or("");
        if driver != driver.to_lowercase() {
            cx.request.warnings.push(format!(
                "spec.driver: driver names should be lowercase; {driver:?} contains uppercase characters"
            ));
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let slice: ResourceSlice = decode::parse(res, obj)?;
        let mut c = Causes::for_request(cx.request);
        spec(&slice.spec, None, &mut c);
        invalid(res, obj, c.finish())
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let (new, old): (ResourceSlice, ResourceSlice) = (decode::parse(res, obj)?, decode::parse(res, old)?);
        let mut c = Causes::for_request(cx.request);
        spec(&new.spec, Some(&old.spec), &mut c);
        invalid(res, obj, c.finish())
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "Node",
                "string",
                0,
                "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.",
            ),
            col(
                "Driver",
                "string",
                0,
                "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.",
            ),
            col(
                "Pool",
                "string",
                0,
                "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required.",
            ),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let at = |p: &str| text_cell(obj.pointer(p).and_then(Value::as_str).unwrap_or(""));
        vec![
            name(obj),
            at("/spec/nodeName"),
            at("/spec/driver"),
            at("/spec/pool/name"),
            age(obj),
        ]
    }
}

/// Numeric capacity values (`value: 80` in YAML) become quantity strings, as the apiserver accepts them.
fn normalize_device_quantities(obj: &mut Value) {
    for device in obj
        .pointer_mut("/spec/devices")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for cap in device
            .get_mut("capacity")
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|m| m.values_mut())
        {
            if let Some(v) = cap.get_mut("value")
                && v.is_number()
            {
                let mut wrapped = json!({"capacity": {"v": v.clone()}});
                decode::normalize_quantities(&mut wrapped);
                *v = wrapped["capacity"]["v"].take();
            }
        }
    }
}

/// `validateResourceSliceSpec`.
fn spec(spec: &ResourceSliceSpec, old: Option<&ResourceSliceSpec>, c: &mut Causes) {
    driver_name(&spec.driver, "spec.driver", c);
    pool_name(&spec.pool.name, "spec.pool.name", c);
    if spec.pool.resource_slice_count <= 0 {
        c.push(FieldCause::invalid(
            "spec.pool.resourceSliceCount",
            &json!(spec.pool.resource_slice_count),
            "must be greater than zero",
        ));
    }
    if spec.pool.generation < 0 {
        c.push(FieldCause::invalid(
            "spec.pool.generation",
            &json!(spec.pool.generation),
            "must be greater than or equal to zero",
        ));
    }
    if let Some(old) = old {
        if spec.pool.name != old.pool.name {
            c.push(FieldCause::immutable("spec.pool.name", &json!(spec.pool.name)));
        }
        if spec.driver != old.driver {
            c.push(FieldCause::immutable("spec.driver", &json!(spec.driver)));
        }
        if spec.node_name != old.node_name {
            c.push(FieldCause::immutable("spec.nodeName", &json!(spec.node_name)));
        }
    }
    let mut set = Vec::new();
    match spec.node_name.as_deref() {
        Some("") => c.push(FieldCause::invalid(
            "spec.nodeName",
            &json!(""),
            "must be either unset or set to a non-empty string",
        )),
        Some(n) => {
            set.push("`nodeName`");
            dns_subdomain(n, "spec.nodeName", c);
        }
        None => {}
    }
    if let Some(sel) = &spec.node_selector {
        set.push("`nodeSelector`");
        let v = serde_json::to_value(sel).unwrap_or(Value::Null);
        crate::kinds::validate::node_selector(&v, "spec.nodeSelector", &mut c.list);
        if sel.node_selector_terms.len() != 1 {
            c.push(FieldCause::invalid(
                "spec.nodeSelector.nodeSelectorTerms",
                &v["nodeSelectorTerms"],
                "must have exactly one node selector term",
            ));
        }
    }
    for (flag, field) in [
        (spec.all_nodes, "allNodes"),
        (spec.per_device_node_selection, "perDeviceNodeSelection"),
    ] {
        match flag {
            Some(true) => set.push(if field == "allNodes" {
                "`allNodes`"
            } else {
                "`perDeviceNodeSelection`"
            }),
            Some(false) => c.push(FieldCause::invalid(
                format!("spec.{field}"),
                &json!(false),
                "must be either unset or set to true",
            )),
            None => {}
        }
    }
    const ONE_OF: &str = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
    match set.len() {
        0 => c.push(FieldCause::required("spec", ONE_OF)),
        1 => {}
        _ => c.push(FieldCause::invalid(
            "spec",
            &json!(format!("{{{}}}", set.join(", "))),
            &format!("{ONE_OF}, but multiple fields are set"),
        )),
    }
    if spec.shared_counters.is_some() && spec.devices.is_some() {
        c.push(FieldCause::invalid(
            "spec",
            &json!(""),
            "only one of `sharedCounters` or `devices` is allowed",
        ));
    }
    let devices = spec.devices.as_deref().unwrap_or_default();
    let advanced = devices.iter().any(|d| {
        d.taints.as_ref().is_some_and(|t| !t.is_empty())
            || d.consumes_counters.as_ref().is_some_and(|t| !t.is_empty())
            || d.attributes.iter().flatten().any(|(_, a)| is_list(a))
    });
    let max = if advanced { MAX_DEVICES_ADVANCED } else { MAX_DEVICES };
    if within(devices.len(), max, "spec.devices", c) {
        let per_device = spec.per_device_node_selection == Some(true);
        for (i, d) in devices.iter().enumerate() {
            let before = old.and_then(|o| o.devices.iter().flatten().find(|x| x.name == d.name));
            device(d, before, &format!("spec.devices[{i}]"), per_device, c);
        }
        unique(devices.iter().map(|d| d.name.as_str()), "spec.devices", c);
    }
    let sets = spec.shared_counters.as_deref().unwrap_or_default();
    if within(sets.len(), MAX_COUNTER_SETS, "spec.sharedCounters", c) {
        for (i, cs) in sets.iter().enumerate() {
            let p = format!("spec.sharedCounters[{i}]");
            counter_name(&cs.name, &format!("{p}.name"), c);
            counters(cs.counters.keys(), &format!("{p}.counters"), c);
        }
        unique(sets.iter().map(|s| s.name.as_str()), "spec.sharedCounters", c);
    }
    if let Some(attr) = &spec.partition_type_attribute {
        if !devices
            .iter()
            .any(|d| d.consumes_counters.as_ref().is_some_and(|x| !x.is_empty()))
        {
            c.push(FieldCause::invalid(
                "spec.partitionTypeAttribute",
                &json!(attr),
                "may only be set on a slice which declares devices that consume counters",
            ));
        } else {
            fully_qualified_name(attr, "spec.partitionTypeAttribute", c);
        }
    }
    skip_node_operations(spec.skip_node_operations.as_deref(), "spec.skipNodeOperations", c);
}

/// `validateSkipNodeOperations` and the values' enumeration.
pub(crate) fn skip_node_operations(ops: Option<&[String]>, path: &str, c: &mut Causes) {
    const OPS: &[&str] = &["*", "NodePrepareResources", "NodeUnprepareResources"];
    let ops = ops.unwrap_or_default();
    for (i, o) in ops.iter().enumerate() {
        if !OPS.contains(&o.as_str()) {
            c.push(FieldCause::not_supported(format!("{path}[{i}]"), &json!(o), OPS));
        }
    }
    unique(ops.iter().map(String::as_str), path, c);
    let has = |x: &str| ops.iter().any(|o| o == x);
    if has("NodePrepareResources") && !has("NodeUnprepareResources") && !has("*") {
        c.push(FieldCause::invalid(
            path,
            &json!(ops),
            "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped",
        ));
    }
}

fn counter_name(name: &str, path: &str, c: &mut Causes) {
    if name.is_empty() {
        c.push(FieldCause::required(path, ""));
    } else {
        dns_label(name, path, c);
    }
}

/// A counter map: required, at most [`MAX_COUNTERS`], DNS-label names.
fn counters<'a>(names: impl ExactSizeIterator<Item = &'a String>, path: &str, c: &mut Causes) {
    if names.len() == 0 {
        c.push(FieldCause::required(path, ""));
        return;
    }
    if !within(names.len(), MAX_COUNTERS, path, c) {
        return;
    }
    for n in names {
        dns_label(n, path, c);
    }
}

fn is_list(a: &DeviceAttribute) -> bool {
    a.bools.is_some() || a.ints.is_some() || a.strings.is_some() || a.versions.is_some()
}

/// The map key of `name` in a path (`attributes[model]`), truncated in the middle past the longest
/// qualified name (`truncateIfTooLong`).
fn key(path: &str, name: &str) -> String {
    const MAX: usize = 63 + 1 + 32;
    if name.len() <= MAX || !name.is_ascii() {
        return format!("{path}[{name}]");
    }
    let remaining = MAX - 3;
    let head = &name[..remaining.div_ceil(2)];
    let tail = &name[name.len() - remaining / 2..];
    format!("{path}[{head}...{tail}]")
}

/// `validateDevice`.
fn device(d: &Device, old: Option<&Device>, path: &str, per_device: bool, c: &mut Causes) {
    dns_label(&d.name, &format!("{path}.name"), c);
    let attributes = d.attributes.as_ref().map(BTreeMap::len).unwrap_or(0);
    let capacities = d.capacity.as_ref().map(BTreeMap::len).unwrap_or(0);
    let total = attributes.saturating_add(capacities);
    if total > MAX_ATTRIBUTES_AND_CAPACITIES {
        c.push(FieldCause::invalid(
            path,
            &json!(total),
            &format!("the total number of attributes and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}"),
        ));
    }
    let values: usize = d
        .attributes
        .iter()
        .flatten()
        .map(|(_, a)| {
            let items = a.bools.as_ref().map_or(0, Vec::len)
                + a.ints.as_ref().map_or(0, Vec::len)
                + a.strings.as_ref().map_or(0, Vec::len)
                + a.versions.as_ref().map_or(0, Vec::len);
            items.max(1)
        })
        .fold(0usize, usize::saturating_add);
    if values > MAX_ATTRIBUTE_VALUES {
        c.push(FieldCause::invalid(
            path,
            &json!(values),
            &format!("the total number of attribute values must not exceed {MAX_ATTRIBUTE_VALUES}"),
        ));
    }
    // Past the limits, the entries themselves are not looked at (each could be large).
    if total <= MAX_ATTRIBUTES_AND_CAPACITIES {
        let ap = format!("{path}.attributes");
        for (k, a) in d.attributes.iter().flatten() {
            qualified_name(k, &ap, c);
            attribute(a, &key(&ap, k), c);
        }
        if old.is_none_or(|o| o.capacity != d.capacity) {
            let cp = format!("{path}.capacity");
            let multiple = d.allow_multiple_allocations == Some(true);
            for (k, cap) in d.capacity.iter().flatten() {
                qualified_name(k, &cp, c);
                capacity(cap, multiple, &key(&cp, k), c);
            }
        }
    }
    if old.is_none_or(|o| o.taints != d.taints) {
        let taints = d.taints.as_deref().unwrap_or_default();
        let tp = format!("{path}.taints");
        if within(taints.len(), MAX_TAINTS, &tp, c) {
            for (i, t) in taints.iter().enumerate() {
                let p = format!("{tp}[{i}]");
                if t.key.is_empty() {
                    c.push(FieldCause::required(format!("{p}.key"), ""));
                } else {
                    label_key(&t.key, &format!("{p}.key"), c);
                }
                if let Some(v) = t.value.as_deref().filter(|v| !v.is_empty()) {
                    label_value(v, &format!("{p}.value"), c);
                }
                match t.effect.as_str() {
                    "" => c.push(FieldCause::required(format!("{p}.effect"), "")),
                    "NoExecute" | "NoSchedule" | "None" => {}
                    other => c.push(FieldCause::not_supported(
                        format!("{p}.effect"),
                        &json!(other),
                        &["NoExecute", "NoSchedule", "None"],
                    )),
                }
            }
        }
    }
    let consumes = d.consumes_counters.as_deref().unwrap_or_default();
    let cp = format!("{path}.consumesCounters");
    if within(consumes.len(), MAX_COUNTER_CONSUMPTIONS, &cp, c) {
        for (i, k) in consumes.iter().enumerate() {
            counter_name(&k.counter_set, &format!("{cp}[{i}].counterSet"), c);
            counters(k.counters.keys(), &format!("{cp}[{i}].counters"), c);
        }
        unique(consumes.iter().map(|k| k.counter_set.as_str()), &cp, c);
    }
    let mut set = Vec::new();
    if let Some(n) = d.node_name.as_deref() {
        if n.is_empty() {
            c.push(FieldCause::invalid(
                format!("{path}.nodeName"),
                &json!(n),
                "must not be empty",
            ));
        } else {
            set.push("`nodeName`");
            dns_subdomain(n, &format!("{path}.nodeName"), c);
        }
    }
    if let Some(sel) = &d.node_selector {
        set.push("`nodeSelector`");
        let v = serde_json::to_value(sel).unwrap_or(Value::Null);
        crate::kinds::validate::node_selector(&v, &format!("{path}.nodeSelector"), &mut c.list);
    }
    match d.all_nodes {
        Some(true) => set.push("`allNodes`"),
        Some(false) => c.push(FieldCause::invalid(
            format!("{path}.allNodes"),
            &json!(false),
            "must be either unset or set to true",
        )),
        None => {}
    }
    const PER_DEVICE: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";
    if per_device {
        match set.len() {
            0 => c.push(FieldCause::required(path, PER_DEVICE)),
            1 => {}
            _ => c.push(FieldCause::invalid(
                path,
                &json!(format!("{{{}}}", set.join(", "))),
                PER_DEVICE,
            )),
        }
    } else if d.node_name.is_some() || d.node_selector.is_some() || d.all_nodes.is_some() {
        c.push(FieldCause::invalid(
            path,
            &Value::Null,
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ));
    }
    binding_conditions(
        d.binding_conditions.as_deref(),
        d.binding_failure_conditions.as_deref(),
        path,
        c,
    );
    for (k, m) in d.node_allocatable_resources.iter().flatten() {
        if m.mapping.is_none() && m.overhead.is_none() {
            c.push(FieldCause::required(
                key(&format!("{path}.nodeAllocatableResources"), k),
                "at least one of mapping or overhead must be set",
            ));
        }
    }
}

/// `validateDeviceAttribute`: exactly one value.
fn attribute(a: &DeviceAttribute, path: &str, c: &mut Causes) {
    let mut n = 0;
    if a.bool.is_some() {
        n += 1;
    }
    if a.int.is_some() {
        n += 1;
    }
    if let Some(s) = &a.string {
        n += 1;
        string_value(s, &format!("{path}.string"), c);
    }
    if let Some(v) = &a.version {
        n += 1;
        version_value(v, &format!("{path}.version"), c);
    }
    for (present, len, field) in [
        (a.bools.is_some(), a.bools.as_ref().map_or(0, Vec::len), "bools"),
        (a.ints.is_some(), a.ints.as_ref().map_or(0, Vec::len), "ints"),
        (a.strings.is_some(), a.strings.as_ref().map_or(0, Vec::len), "strings"),
        (
            a.versions.is_some(),
            a.versions.as_ref().map_or(0, Vec::len),
            "versions",
        ),
    ] {
        if present {
            n += 1;
            if len == 0 {
                c.push(FieldCause::invalid(
                    format!("{path}.{field}"),
                    &json!([]),
                    "must not be empty if specified",
                ));
            }
        }
    }
    for (i, s) in a.strings.iter().flatten().enumerate() {
        string_value(s, &format!("{path}.strings[{i}]"), c);
    }
    for (i, v) in a.versions.iter().flatten().enumerate() {
        version_value(v, &format!("{path}.versions[{i}]"), c);
    }
    match n {
        0 => c.push(FieldCause::invalid(
            path,
            &json!(""),
            "exactly one value must be specified",
        )),
        1 => {}
        _ => c.push(FieldCause::invalid(
            path,
            &serde_json::to_value(a).unwrap_or(Value::Null),
            "exactly one value must be specified",
        )),
    }
}

fn string_value(s: &str, path: &str, c: &mut Causes) {
    if s.len() > MAX_ATTRIBUTE_VALUE_LENGTH {
        c.push(FieldCause::too_long(path, MAX_ATTRIBUTE_VALUE_LENGTH));
    }
}

fn version_value(v: &str, path: &str, c: &mut Causes) {
    if !is_semver(v) {
        c.push(FieldCause::invalid(
            path,
            &json!(v),
            "must be a string compatible with semver.org spec 2.0.0",
        ));
    }
    string_value(v, path, c);
}

/// Whether `v` is a semantic version (semver.org 2.0.0: `MAJOR.MINOR.PATCH[-pre][+build]`).
pub(crate) fn is_semver(v: &str) -> bool {
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    let ident = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| numeric(p))
        && pre.is_none_or(|p| {
            p.split('.')
                .all(|x| ident(x) && (numeric(x) || !x.bytes().all(|b| b.is_ascii_digit())))
        })
        && build.is_none_or(|b| b.split('.').all(ident))
}

/// `CapacityRequestPolicyDiscreteMaxOptions`: a request policy's valid values.
const MAX_VALID_VALUES: usize = 10;

/// A quantity in thousandths for comparisons; out-of-range values saturate.
fn milli(q: &str) -> i64 {
    use kwas_api_types::quantity::{QuantityError, parse_scaled};
    match parse_scaled(q, 3) {
        Ok(v) => v,
        Err(QuantityError::TooLarge) => i64::MAX,
        Err(QuantityError::Negative) => -1,
        Err(_) => 0,
    }
}

/// A capacity's request policy: only on devices that allow multiple allocations, then
/// `validateRequestPolicy`.
fn capacity(cap: &DeviceCapacity, multiple: bool, path: &str, c: &mut Causes) {
    let Some(policy) = &cap.request_policy else {
        return;
    };
    let pp = format!("{path}.requestPolicy");
    if !multiple {
        c.push(FieldCause::forbidden(pp, "allowMultipleAllocations must be true"));
        return;
    }
    request_policy(&cap.value.0, policy, &pp, c);
}

fn request_policy(max: &str, policy: &CapacityRequestPolicy, path: &str, c: &mut Causes) {
    let values = policy.valid_values.as_deref().unwrap_or_default();
    if !values.is_empty() && policy.valid_range.is_some() {
        c.push(FieldCause::forbidden(
            path,
            "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time",
        ));
        return;
    }
    let cap = milli(max);
    if !values.is_empty() {
        let vp = format!("{path}.validValues");
        let Some(default) = &policy.default else {
            c.push(FieldCause::required(
                format!("{path}.default"),
                "required when validValues is defined",
            ));
            return;
        };
        for (i, w) in values.windows(2).enumerate() {
            if milli(&w[0].0) > milli(&w[1].0) {
                c.push(FieldCause::invalid(
                    format!("{vp}[{}]", i + 1),
                    &json!(w[1].0),
                    "values must be sorted in ascending order",
                ));
            }
        }
        if !within(values.len(), MAX_VALID_VALUES, &vp, c) {
            return;
        }
        for (i, v) in values.iter().enumerate() {
            if milli(&v.0) > cap {
                c.push(FieldCause::invalid(
                    format!("{vp}[{i}]"),
                    &json!(v.0),
                    &format!("option is larger than capacity value: {max}"),
                ));
            }
        }
        if !values.iter().any(|v| milli(&v.0) == milli(&default.0)) {
            c.push(FieldCause::invalid(
                vp,
                &json!(default.0),
                "default value is not valid according to the requestPolicy",
            ));
        }
    } else if let Some(range) = &policy.valid_range {
        let rp = format!("{path}.validRange");
        let Some(default) = &policy.default else {
            c.push(FieldCause::required(
                format!("{path}.default"),
                "required when validRange is defined",
            ));
            return;
        };
        let (min, def) = (milli(&range.min.0), milli(&default.0));
        if min > cap {
            c.push(FieldCause::invalid(
                format!("{rp}.min"),
                &json!(range.min.0),
                &format!("min is larger than capacity value: {max}"),
            ));
        }
        if def < min {
            c.push(FieldCause::invalid(
                format!("{rp}.default"),
                &json!(default.0),
                &format!("default is less than min: {}", range.min.0),
            ));
        }
        if let Some(m) = &range.max {
            let mx = milli(&m.0);
            if min > mx {
                c.push(FieldCause::invalid(
                    format!("{rp}.max"),
                    &json!(range.min.0),
                    &format!("min is larger than max: {}", m.0),
                ));
            }
            if mx > cap {
                c.push(FieldCause::invalid(
                    format!("{rp}.max"),
                    &json!(m.0),
                    &format!("max is larger than capacity value: {max}"),
                ));
            }
            if def > mx {
                c.push(FieldCause::invalid(
                    format!("{rp}.default"),
                    &json!(default.0),
                    &format!("default is more than max: {}", m.0),
                ));
            }
        }
        if let Some(step) = &range.step {
            let st = milli(&step.0);
            if st <= 0 {
                c.push(FieldCause::invalid(
                    format!("{rp}.step"),
                    &json!(step.0),
                    "must be greater than zero",
                ));
            } else if def.checked_sub(min).is_some_and(|d| d % st != 0) {
                c.push(FieldCause::invalid(
                    format!("{rp}.step"),
                    &json!(default.0),
                    &format!(
                        "value is not a multiple of a given step ({}) from ({})",
                        step.0, range.min.0
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::api::State;
    use crate::request::RequestContext;

    fn slice(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    fn gpus(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| {
                json!({"name": format!("gpu-{i}"), "attributes": {"model": {"string": "KW100"}, "index": {"int": i}},
                "capacity": {"memory": {"value": "80Gi"}}})
            })
            .collect()
    }

    #[test]
    fn a_node_slice_is_valid_and_its_identity_immutable() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("resource.k8s.io", "resourceslices").unwrap();
        let s = state
            .create(
                &res,
                "",
                slice(
                    "n1-gpu",
                    json!({"driver": "gpu.kwas.dev", "nodeName": "n1", "pool": {"name": "n1", "generation": 0, "resourceSliceCount": 1},
                    "devices": gpus(8)}),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert_eq!(
            res.strategy.cells(&res, &s)[..4],
            [json!("n1-gpu"), json!("n1"), json!("gpu.kwas.dev"), json!("n1")]
        );
        let mut moved = (*s).clone();
        moved["spec"]["nodeName"] = json!("n2");
        moved["spec"]["driver"] = json!("other.example.com");
        let err = state
            .update(&res, "", "n1-gpu", moved, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        for want in [
            "spec.nodeName: Invalid value: \"n2\": field is immutable",
            "spec.driver: Invalid value: \"other.example.com\": field is immutable",
        ] {
            assert!(err.message().contains(want), "{want} missing from {}", err.message());
        }
        let mut more = (*s).clone();
        more["spec"]["devices"] = json!(gpus(9));
        let s2 = state
            .update(&res, "", "n1-gpu", more, None, &mut RequestContext::manager("t"))
            .unwrap();
        assert_eq!(s2["metadata"]["generation"], 2);
    }

    #[test]
    fn hostile_slices_are_refused_with_field_paths() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("resource.k8s.io", "resourceslices").unwrap();
        let mut bad_devices = gpus(2);
        bad_devices[1]["name"] = json!("gpu-0");
        bad_devices[0]["attributes"]["model"] = json!({"string": "x".repeat(65), "int": 1});
        bad_devices[0]["attributes"]["bad/key/x"] = json!({"bool": true});
        bad_devices[0]["attributes"]["version"] = json!({"version": "1.2"});
        bad_devices[0]["attributes"]["none"] = json!({});
        let err = state
            .create(
                &res,
                "",
                slice(
                    "bad",
                    json!({"driver": "Not A Driver", "nodeName": "n1", "allNodes": true,
                    "pool": {"name": "", "generation": -1, "resourceSliceCount": 0}, "devices": bad_devices}),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert_eq!(err.code(), 422);
        for want in [
            "spec.driver: Invalid value: \"Not A Driver\"",
            "spec.pool.name: Required value",
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
            "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
            "spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
            "spec.devices[1]: Duplicate value: \"gpu-0\"",
            "spec.devices[0].attributes[model].string: Too long: must have at most 64 bytes",
            "spec.devices[0].attributes[model]: Invalid value: {",
            "spec.devices[0].attributes: Invalid value: \"bad/key/x\": must not contain more than one slash",
            "spec.devices[0].attributes[version].version: Invalid value: \"1.2\": must be a string compatible with semver.org spec 2.0.0",
            "spec.devices[0].attributes[none]: Invalid value: \"\": exactly one value must be specified",
        ] {
            assert!(err.message().contains(want), "{want}\nmissing from\n{}", err.message());
        }
        let err = state
            .create(
                &res,
                "",
                slice(
                    "many",
                    json!({"driver": "gpu.kwas.dev", "allNodes": true, "pool": {"name": "p", "resourceSliceCount": 1, "generation": 0},
                    "devices": gpus(129)}),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(
            err.message()
                .contains("spec.devices: Too many: 129: must have at most 128 items"),
            "{}",
            err.message()
        );
        let err = state
            .create(
                &res,
                "",
                slice(
                    "none",
                    json!({"driver": "gpu.kwas.dev", "pool": {"name": "p", "resourceSliceCount": 1, "generation": 0}}),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(
            err.message()
                .contains("spec: Required value: exactly one of `nodeName`"),
            "{}",
            err.message()
        );
        let err = state
            .create(
                &res,
                "",
                slice(
                    "q",
                    json!({"driver": "gpu.kwas.dev", "allNodes": true, "pool": {"name": "p", "resourceSliceCount": 1, "generation": 0},
                    "devices": [{"name": "d", "capacity": {"memory": {"value": "lots"}}}]}),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert_eq!(err.code(), 400, "{}", err.message());
        assert!(super::is_semver("1.2.3-rc.1+build.5"));
        assert!(!super::is_semver("01.2.3"));
    }
}
