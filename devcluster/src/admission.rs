//! Admission where kube-apiserver has it: decoding built-in kinds through their typed k8s-openapi models
//! (unknown fields dropped, reported per `fieldValidation`), API defaults, validation and immutable fields,
//! the Priority admission plugin for Pods, PodGroups and CompositePodGroups, DefaultTolerationSeconds, the
//! PodGroupProtection finalizer, and scheduling.k8s.io/v1alpha3 validation through workloadbuilder.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::api::{FieldValidation, RequestContext, State};
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resources::{Builtin, GroupResource, ResourceInfo};

/// The operation being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// create.
    Create,
    /// update or patch.
    Update,
}

/// The system priority classes that exist without objects in every cluster.
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// Admits an object: decodes, defaults, mutates and validates it in place.
pub fn admit(
    state: &mut State,
    ctx: &mut RequestContext,
    res: &ResourceInfo,
    op: Operation,
    old: Option<&Value>,
    obj: &mut Value,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    *obj = crate::convert::to_storage(&storage_info(res), std::mem::take(obj));
    validate_name(res, obj)?;
    match res.builtin {
        Some(b) => {
            decode_builtin(ctx, res, b, obj)?;
            match b {
                Builtin::Namespace => admit_namespace(op, obj),
                Builtin::Pod => admit_pod(state, res, op, old, obj, subresource)?,
                Builtin::Job => admit_job(res, op, old, obj, subresource, state.settings.job_scheduling_validation)?,
                Builtin::PriorityClass => admit_priority_class(state, res, op, old, obj)?,
                Builtin::PodGroup | Builtin::CompositePodGroup => admit_group(state, res, op, old, obj, subresource)?,
                Builtin::Workload => scheduling::validate(res, op, old, obj, subresource)?,
                Builtin::Crd => crate::crd::admit(state, res, op, old, obj)?,
                Builtin::Node => admit_node(obj),
                _ => {}
            }
        }
        None => crate::crd::admit_custom(state, res, obj, subresource)?,
    }
    Ok(())
}

/// The resource an events.k8s.io request is stored as.
fn storage_info(res: &ResourceInfo) -> ResourceInfo {
    if res.builtin == Some(Builtin::EventV1) {
        let mut r = res.clone();
        r.group = String::new();
        r.version = "v1".into();
        r.builtin = Some(Builtin::Event);
        r
    } else {
        res.clone()
    }
}

// ----- names -----

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Whether `s` is a DNS-1123 label.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(|p| !p.is_empty() && p.len() <= 63 && is_dns_label(p))
}

fn validate_name(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let name = meta::name(obj);
    let cause = match res.builtin {
        Some(Builtin::Namespace) if !is_dns_label(name) => Some(LABEL_MSG),
        Some(Builtin::Event | Builtin::EventV1 | Builtin::Crd) => None,
        _ if !is_dns_subdomain(name) => Some(SUBDOMAIN_MSG),
        _ => None,
    };
    if let Some(msg) = cause {
        return Err(ApiError::invalid(
            &res.group,
            &res.kind,
            name,
            vec![FieldCause::invalid("metadata.name", &json!(name), msg)],
        ));
    }
    let mut causes = Vec::new();
    validate_labels(obj, &mut causes);
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, name, causes));
    }
    Ok(())
}

fn validate_labels(obj: &Value, causes: &mut Vec<FieldCause>) {
    for (k, v) in meta::string_map(obj, "labels") {
        let (prefix, name) = match k.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, k.as_str()),
        };
        let name_ok = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && name.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
        if !name_ok || prefix.is_some_and(|p| !is_dns_subdomain(p)) {
            causes.push(FieldCause::invalid(
                "metadata.labels",
                &json!(k),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ));
        }
        let value_ok = v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && (v.is_empty()
                || (v.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
                    && v.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())));
        if !value_ok {
            causes.push(FieldCause::invalid(
                "metadata.labels",
                &json!(v),
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ));
        }
    }
}

// ----- typed decoding -----

/// JSON numbers where Kubernetes expects a `Quantity` (`cpu: 1` in YAML arrives as a number): the apiserver
/// accepts them, so they become canonical quantity strings (`1`, `0.5` -> `500m`) before typed decoding.
pub fn normalize_quantities(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                let quantity_map = matches!(
                    k.as_str(),
                    "requests" | "limits" | "capacity" | "allocatable" | "overhead"
                );
                if let (true, Value::Object(q)) = (quantity_map, &mut *child) {
                    for value in q.values_mut() {
                        if let Value::Number(n) = value {
                            *value = Value::String(quantity_string(n));
                        }
                    }
                } else {
                    normalize_quantities(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_quantities),
        _ => {}
    }
}

fn quantity_string(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let milli = (f * 1000.0).round();
    if (milli - f * 1000.0).abs() < 1e-6 && milli.fract() == 0.0 {
        if milli % 1000.0 == 0.0 {
            format!("{}", milli / 1000.0)
        } else {
            format!("{milli}m")
        }
    } else {
        n.to_string()
    }
}

fn decode_builtin(ctx: &mut RequestContext, res: &ResourceInfo, b: Builtin, obj: &mut Value) -> Result<(), ApiError> {
    use k8s_openapi::api;
    if matches!(b, Builtin::Pod | Builtin::Job | Builtin::Node) {
        normalize_quantities(obj);
    }
    match b {
        Builtin::Namespace => roundtrip::<api::core::v1::Namespace>(ctx, res, obj),
        Builtin::Node => roundtrip::<api::core::v1::Node>(ctx, res, obj),
        Builtin::Pod => roundtrip::<api::core::v1::Pod>(ctx, res, obj),
        Builtin::Event | Builtin::EventV1 => roundtrip::<api::core::v1::Event>(ctx, res, obj),
        Builtin::ConfigMap => roundtrip::<api::core::v1::ConfigMap>(ctx, res, obj),
        Builtin::Secret => roundtrip::<api::core::v1::Secret>(ctx, res, obj),
        Builtin::ServiceAccount => roundtrip::<api::core::v1::ServiceAccount>(ctx, res, obj),
        Builtin::Lease => roundtrip::<api::coordination::v1::Lease>(ctx, res, obj),
        Builtin::Job => roundtrip::<api::batch::v1::Job>(ctx, res, obj),
        Builtin::PriorityClass => roundtrip::<api::scheduling::v1::PriorityClass>(ctx, res, obj),
        Builtin::Workload => roundtrip::<api::scheduling::v1alpha3::Workload>(ctx, res, obj),
        Builtin::PodGroup => roundtrip::<api::scheduling::v1alpha3::PodGroup>(ctx, res, obj),
        Builtin::CompositePodGroup => roundtrip::<api::scheduling::v1alpha3::CompositePodGroup>(ctx, res, obj),
        Builtin::Crd => roundtrip::<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        >(ctx, res, obj),
    }
}

/// Decodes through the typed model and back: wrong types are a 400 like the apiserver's decoding error,
/// unknown fields are dropped and reported per the request's `fieldValidation`.
fn roundtrip<T: DeserializeOwned + Serialize>(
    ctx: &mut RequestContext,
    res: &ResourceInfo,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let typed: T = serde_json::from_value(obj.clone()).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })?;
    let back = serde_json::to_value(&typed).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut unknown = Vec::new();
    unknown_fields(obj, &back, "", &mut unknown);
    if !unknown.is_empty() {
        match ctx.field_validation {
            FieldValidation::Strict => {
                let list = unknown
                    .iter()
                    .map(|f| format!("unknown field {f:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(ApiError::bad_request(format!("strict decoding error: {list}")));
            }
            FieldValidation::Warn => {
                ctx.warnings
                    .extend(unknown.iter().map(|f| format!("unknown field {f:?}")));
            }
            FieldValidation::Ignore => {}
        }
    }
    *obj = back;
    Ok(())
}

/// Fields present (non-null) in `input` but dropped by the typed round trip.
pub fn unknown_fields(input: &Value, typed: &Value, path: &str, out: &mut Vec<String>) {
    match (input, typed) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get(k) {
                    None if !v.is_null() && !is_empty_container(v) => out.push(p),
                    Some(tv) => unknown_fields(v, tv, &p, out),
                    None => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                unknown_fields(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty_container(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty()) || matches!(v, Value::Array(a) if a.is_empty())
}

// ----- namespaces and nodes -----

fn admit_namespace(op: Operation, obj: &mut Value) {
    let name = meta::name(obj).to_string();
    let m = meta::metadata_mut(obj);
    let labels = m.entry("labels").or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        l.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
    if op == Operation::Create {
        obj["spec"] = json!({"finalizers": [crate::api::NAMESPACE_FINALIZER]});
        obj["status"] = json!({"phase": "Active"});
    }
}

/// The taint the node lifecycle controller keeps in step with `spec.unschedulable`.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

fn admit_node(obj: &mut Value) {
    if obj.get("spec").is_none() {
        obj["spec"] = json!({});
    }
    let unschedulable = obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    let spec = meta::ensure_object(&mut obj["spec"]);
    let mut taints = spec
        .get("taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has = taints
        .iter()
        .any(|t| t.get("key").and_then(Value::as_str) == Some(UNSCHEDULABLE_TAINT));
    if unschedulable && !has {
        taints.push(json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": meta::now_rfc3339()}));
    } else if !unschedulable && has {
        taints.retain(|t| t.get("key").and_then(Value::as_str) != Some(UNSCHEDULABLE_TAINT));
    }
    if taints.is_empty() {
        spec.remove("taints");
    } else {
        spec.insert("taints".into(), Value::Array(taints));
    }
}

// ----- pods -----

fn admit_pod(
    state: &mut State,
    res: &ResourceInfo,
    op: Operation,
    old: Option<&Value>,
    obj: &mut Value,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    if subresource == Some("status") {
        return Ok(());
    }
    let name = meta::name(obj).to_string();
    let Some(spec) = obj.get_mut("spec") else {
        return Err(ApiError::invalid(
            "",
            "Pod",
            &name,
            vec![FieldCause::required("spec.containers", "")],
        ));
    };
    default_pod_spec(spec);
    match op {
        Operation::Create => {
            let mut causes = Vec::new();
            validate_pod_spec(&obj["spec"], "spec", &mut causes, &["Always", "OnFailure", "Never"]);
            if !causes.is_empty() {
                return Err(ApiError::invalid("", "Pod", &name, causes));
            }
            add_default_tolerations(&mut obj["spec"]);
            let spec = obj.get_mut("spec").and_then(Value::as_object_mut);
            if let Some(spec) = spec {
                resolve_priority(state, res, &name, spec, "pod spec")?;
            }
            let qos = qos_class(&obj["spec"]);
            obj["status"] = json!({"phase": "Pending", "qosClass": qos});
        }
        Operation::Update => {
            if let Some(old) = old {
                check_pod_spec_update(&name, &old["spec"], &obj["spec"])?;
            }
        }
    }
    Ok(())
}

/// Applies the pod spec defaults kube-apiserver applies (`SetDefaults_PodSpec`, `SetDefaults_Container`).
pub fn default_pod_spec(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else { return };
    let defaults = [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("schedulerName", json!(kwas_api::names::DEFAULT_SCHEDULER_NAME)),
        ("enableServiceLinks", json!(true)),
    ];
    for (k, v) in defaults {
        s.entry(k).or_insert(v);
    }
    for list in ["containers", "initContainers"] {
        if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                default_container(c);
            }
        }
    }
}

fn default_container(c: &mut Value) {
    let Some(m) = c.as_object_mut() else { return };
    m.entry("terminationMessagePath")
        .or_insert(json!("/dev/termination-log"));
    m.entry("terminationMessagePolicy").or_insert(json!("File"));
    if !m.contains_key("imagePullPolicy") {
        let image = m.get("image").and_then(Value::as_str).unwrap_or("");
        let tag = image
            .rsplit('/')
            .next()
            .and_then(|last| last.split_once(':').map(|(_, t)| t.to_string()));
        let policy = match tag.as_deref() {
            None | Some("latest") if !image.contains('@') => "Always",
            _ => "IfNotPresent",
        };
        m.insert("imagePullPolicy".into(), json!(policy));
    }
    let res = m.entry("resources").or_insert(json!({}));
    if let Some(r) = res.as_object_mut()
        && let Some(limits) = r.get("limits").cloned()
    {
        let requests = r.entry("requests").or_insert(json!({}));
        if let (Some(req), Some(lim)) = (requests.as_object_mut(), limits.as_object()) {
            for (k, v) in lim {
                req.entry(k.clone()).or_insert(v.clone());
            }
        }
    }
    if let Some(ports) = m.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            if let Some(p) = p.as_object_mut() {
                p.entry("protocol").or_insert(json!("TCP"));
            }
        }
    }
}

fn validate_pod_spec(spec: &Value, path: &str, causes: &mut Vec<FieldCause>, restart: &[&str]) {
    let containers = spec.get("containers").and_then(Value::as_array);
    match containers {
        None => causes.push(FieldCause::required(format!("{path}.containers"), "")),
        Some(cs) if cs.is_empty() => causes.push(FieldCause::required(format!("{path}.containers"), "")),
        Some(cs) => {
            let mut seen = std::collections::HashSet::new();
            for (i, c) in cs.iter().enumerate() {
                let n = c.get("name").and_then(Value::as_str).unwrap_or("");
                if n.is_empty() {
                    causes.push(FieldCause::required(format!("{path}.containers[{i}].name"), ""));
                } else if !is_dns_label(n) {
                    causes.push(FieldCause::invalid(
                        format!("{path}.containers[{i}].name"),
                        &json!(n),
                        LABEL_MSG,
                    ));
                } else if !seen.insert(n.to_string()) {
                    causes.push(FieldCause::duplicate(format!("{path}.containers[{i}].name"), &json!(n)));
                }
                if c.get("image").and_then(Value::as_str).unwrap_or("").is_empty() {
                    causes.push(FieldCause::required(format!("{path}.containers[{i}].image"), ""));
                }
            }
        }
    }
    if let Some(rp) = spec.get("restartPolicy").and_then(Value::as_str)
        && !restart.contains(&rp)
    {
        causes.push(FieldCause::not_supported(
            format!("{path}.restartPolicy"),
            &json!(rp),
            restart,
        ));
    }
}

fn add_default_tolerations(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else { return };
    let tolerations = s.entry("tolerations").or_insert(json!([]));
    let Some(list) = tolerations.as_array_mut() else { return };
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let tolerated = list.iter().any(|t| {
            let k = t.get("key").and_then(Value::as_str);
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (k == Some(key) || (k.is_none() && t.get("operator").and_then(Value::as_str) == Some("Exists")))
                && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}));
        }
    }
}

fn qos_class(spec: &Value) -> &'static str {
    let containers = spec
        .get("containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let req = c.pointer("/resources/requests").and_then(Value::as_object);
        let lim = c.pointer("/resources/limits").and_then(Value::as_object);
        if req.is_some_and(|r| !r.is_empty()) || lim.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        for r in ["cpu", "memory"] {
            let l = lim.and_then(|l| l.get(r));
            let q = req.and_then(|q| q.get(r));
            if l.is_none() || l != q {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Pod spec updates may only change container images, activeDeadlineSeconds, tolerations (additions),
/// terminationGracePeriodSeconds and scheduling gates (removals), as in kube-apiserver.
fn check_pod_spec_update(name: &str, old: &Value, new: &Value) -> Result<(), ApiError> {
    let mut a = old.clone();
    let mut b = new.clone();
    for spec in [&mut a, &mut b] {
        if let Some(m) = spec.as_object_mut() {
            m.remove("activeDeadlineSeconds");
            m.remove("terminationGracePeriodSeconds");
            m.remove("tolerations");
            m.remove("schedulingGates");
            for list in ["containers", "initContainers"] {
                if let Some(cs) = m.get_mut(list).and_then(Value::as_array_mut) {
                    for c in cs {
                        if let Some(c) = c.as_object_mut() {
                            c.remove("image");
                        }
                    }
                }
            }
        }
    }
    let tolerations_ok = {
        let old_t = old
            .get("tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let new_t = new
            .get("tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        old_t.iter().all(|t| new_t.contains(t))
    };
    let gates_ok = {
        let old_g = old
            .get("schedulingGates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let new_g = new
            .get("schedulingGates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        new_g.iter().all(|g| old_g.contains(g))
    };
    if a != b || !tolerations_ok {
        return Err(ApiError::invalid(
            "",
            "Pod",
            name,
            vec![FieldCause::forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            )],
        ));
    }
    if !gates_ok {
        return Err(ApiError::invalid(
            "",
            "Pod",
            name,
            vec![FieldCause::forbidden(
                "spec.schedulingGates",
                "only deletion is allowed, but found new scheduling gate",
            )],
        ));
    }
    Ok(())
}

// ----- priority -----

/// Resolves `priorityClassName` into `priority` and `preemptionPolicy` on a pod spec or group spec, like
/// the Priority admission plugin: unknown classes are forbidden, a set integer priority must match, and
/// with no class the global default class (the lowest-valued one when several claim it) applies.
fn resolve_priority(
    state: &State,
    res: &ResourceInfo,
    name: &str,
    spec: &mut Map<String, Value>,
    where_: &str,
) -> Result<(), ApiError> {
    let pcs = GroupResource::new("scheduling.k8s.io", "priorityclasses");
    let class_name = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let (class_name, value, policy) = if class_name.is_empty() {
        let default = state
            .store
            .list(&pcs, None)
            .into_iter()
            .filter(|pc| pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(|pc| pc.get("value").and_then(Value::as_i64).unwrap_or(0));
        match default {
            Some(pc) => (
                Some(meta::name(&pc).to_string()),
                pc.get("value").and_then(Value::as_i64).unwrap_or(0),
                pc.get("preemptionPolicy").and_then(Value::as_str).map(str::to_string),
            ),
            None => (None, 0, None),
        }
    } else {
        match state.store.get(&pcs, "", &class_name) {
            Some(pc) => (
                Some(class_name.clone()),
                pc.get("value").and_then(Value::as_i64).unwrap_or(0),
                pc.get("preemptionPolicy").and_then(Value::as_str).map(str::to_string),
            ),
            None => {
                return Err(ApiError::forbidden(
                    &res.group,
                    &res.plural,
                    name,
                    &format!("no PriorityClass with name {class_name} was found"),
                ));
            }
        }
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(ApiError::forbidden(
            &res.group,
            &res.plural,
            name,
            &format!(
                "the integer value of priority ({given}) must not be provided in {where_}; priority admission controller computed {value} from the given PriorityClass name"
            ),
        ));
    }
    let policy = policy.unwrap_or_else(|| "PreemptLowerPriority".to_string());
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && given != policy
    {
        return Err(ApiError::forbidden(
            &res.group,
            &res.plural,
            name,
            &format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in {where_}; priority admission controller computed {policy} from the given PriorityClass name"
            ),
        ));
    }
    if let Some(c) = class_name {
        spec.insert("priorityClassName".into(), Value::String(c));
    }
    spec.insert("priority".into(), json!(value));
    spec.insert("preemptionPolicy".into(), Value::String(policy));
    Ok(())
}

fn admit_priority_class(
    state: &State,
    res: &ResourceInfo,
    op: Operation,
    old: Option<&Value>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let name = meta::name(obj).to_string();
    if let Some(m) = obj.as_object_mut() {
        m.entry("preemptionPolicy").or_insert(json!("PreemptLowerPriority"));
    }
    let value = obj.get("value").and_then(Value::as_i64);
    let mut causes = Vec::new();
    let system = name.starts_with("system-");
    match value {
        None => causes.push(FieldCause::required("value", "")),
        Some(v) if !system && v > i64::from(kwas_api::names::HIGHEST_USER_DEFINABLE_PRIORITY) => {
            causes.push(FieldCause::forbidden(
                "value",
                "maximum allowed value of a user defined priority is 1000000000",
            ))
        }
        _ => {}
    }
    if system && op == Operation::Create && !matches!(name.as_str(), "system-node-critical" | "system-cluster-critical")
    {
        causes.push(FieldCause::forbidden(
            "metadata.name",
            "priority class names with 'system-' prefix are reserved for system use only",
        ));
    }
    if let Some(p) = obj.get("preemptionPolicy").and_then(Value::as_str)
        && !matches!(p, "PreemptLowerPriority" | "Never")
    {
        causes.push(FieldCause::not_supported(
            "preemptionPolicy",
            &json!(p),
            &["Never", "PreemptLowerPriority"],
        ));
    }
    if let Some(old) = old {
        if old.get("value") != obj.get("value") {
            causes.push(FieldCause::forbidden("value", "may not be changed in an update."));
        }
        if old.get("preemptionPolicy") != obj.get("preemptionPolicy") {
            causes.push(FieldCause::immutable(
                "preemptionPolicy",
                obj.get("preemptionPolicy").unwrap_or(&Value::Null),
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, &name, causes));
    }
    if obj.get("globalDefault").and_then(Value::as_bool) == Some(true) {
        let pcs = GroupResource::new("scheduling.k8s.io", "priorityclasses");
        if let Some(other) = state
            .store
            .list(&pcs, None)
            .into_iter()
            .find(|pc| meta::name(pc) != name && pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
        {
            return Err(ApiError::forbidden(
                &res.group,
                &res.plural,
                &name,
                &format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    meta::name(&other)
                ),
            ));
        }
    }
    Ok(())
}

// ----- jobs -----

fn admit_job(
    res: &ResourceInfo,
    op: Operation,
    old: Option<&Value>,
    obj: &mut Value,
    subresource: Option<&str>,
    scheduling_validation: bool,
) -> Result<(), ApiError> {
    if subresource == Some("status") {
        return Ok(());
    }
    let name = meta::name(obj).to_string();
    let uid = meta::uid(obj).to_string();
    let spec = obj.get_mut("spec").map(meta::ensure_object);
    let Some(spec) = spec else {
        return Err(ApiError::invalid(
            &res.group,
            &res.kind,
            &name,
            vec![FieldCause::required("spec.template", "")],
        ));
    };
    if op == Operation::Create {
        let has_parallelism = spec.get("parallelism").is_some();
        if !spec.contains_key("completions") && !has_parallelism {
            spec.insert("completions".into(), json!(1));
        }
        spec.entry("parallelism").or_insert(json!(1));
        if spec.contains_key("backoffLimitPerIndex") {
            spec.entry("backoffLimit").or_insert(json!(i32::MAX));
        } else {
            spec.entry("backoffLimit").or_insert(json!(6));
        }
        spec.entry("completionMode").or_insert(json!("NonIndexed"));
        spec.entry("suspend").or_insert(json!(false));
        let replacement = if spec.contains_key("podFailurePolicy") {
            "Failed"
        } else {
            "TerminatingOrFailed"
        };
        spec.entry("podReplacementPolicy").or_insert(json!(replacement));
        spec.entry("manualSelector").or_insert(json!(false));
        let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
        if !manual {
            let labels = json!({
                kwas_api::names::labels::CONTROLLER_UID: uid,
                kwas_api::names::labels::JOB_NAME: name,
                kwas_api::names::labels::LEGACY_CONTROLLER_UID: uid,
                kwas_api::names::labels::LEGACY_JOB_NAME: name,
            });
            spec.insert(
                "selector".into(),
                json!({"matchLabels": {kwas_api::names::labels::CONTROLLER_UID: uid}}),
            );
            let template = spec.entry("template").or_insert(json!({}));
            let tl = meta::metadata_mut(template).entry("labels").or_insert(json!({}));
            if let (Some(tl), Some(add)) = (tl.as_object_mut(), labels.as_object()) {
                for (k, v) in add {
                    tl.insert(k.clone(), v.clone());
                }
            }
        }
    }
    if let Some(tspec) = spec.get_mut("template").and_then(|t| t.get_mut("spec")) {
        default_pod_spec(tspec);
    }
    let mut causes = Vec::new();
    match spec.get("template").and_then(|t| t.get("spec")) {
        Some(tspec) => validate_pod_spec(tspec, "spec.template.spec", &mut causes, &["OnFailure", "Never"]),
        None => causes.push(FieldCause::required("spec.template.spec", "")),
    }
    for f in ["parallelism", "completions", "backoffLimit"] {
        if let Some(v) = spec.get(f).and_then(Value::as_i64)
            && v < 0
        {
            causes.push(FieldCause::invalid(
                format!("spec.{f}"),
                &json!(v),
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(old) = old {
        for f in ["selector", "completionMode", "manualSelector"] {
            if old["spec"].get(f) != spec.get(f) {
                causes.push(FieldCause::immutable(
                    format!("spec.{f}"),
                    spec.get(f).unwrap_or(&Value::Null),
                ));
            }
        }
        let suspended = old["spec"].get("suspend").and_then(Value::as_bool) == Some(true);
        let started = old.pointer("/status/startTime").is_some();
        if (started || !suspended) && old["spec"].get("template") != spec.get("template") {
            causes.push(FieldCause::immutable(
                "spec.template",
                spec.get("template").unwrap_or(&Value::Null),
            ));
        }
    }
    // spec.scheduling (KEP-6089 Job integration): the same rules the Job controller compiles with.
    if scheduling_validation && let Ok(job) = serde_json::from_value::<k8s_openapi::api::batch::v1::Job>(obj.clone()) {
        let errs = match old.map(|o| serde_json::from_value::<k8s_openapi::api::batch::v1::Job>(o.clone())) {
            Some(Ok(old_job)) => workloadbuilder::job::validate_job_scheduling_update(&job, &old_job),
            _ => workloadbuilder::job::validate_job_scheduling(&job),
        };
        causes.extend(errs.iter().map(FieldCause::from));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, &name, causes));
    }
    Ok(())
}

// ----- PodGroups and CompositePodGroups -----

fn admit_group(
    state: &mut State,
    res: &ResourceInfo,
    op: Operation,
    old: Option<&Value>,
    obj: &mut Value,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    let name = meta::name(obj).to_string();
    if subresource.is_none() {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("disruptionMode").or_insert(json!({"single": {}}));
            if op == Operation::Create {
                resolve_priority(state, res, &name, spec, "the spec")?;
            }
        }
        if op == Operation::Create && state.settings.podgroup_protection {
            let mut f = meta::finalizers(obj);
            let protection = kwas_api::names::finalizers::POD_GROUP_PROTECTION;
            if !f.iter().any(|x| x == protection) {
                f.push(protection.to_string());
                meta::set_finalizers(obj, f);
            }
        }
    }
    scheduling::validate(res, op, old, obj, subresource)
}

/// scheduling.k8s.io/v1alpha3 validation: kube-apiserver's create, update and status-update rules for
/// Workloads, PodGroups and CompositePodGroups, as implemented by `workloadbuilder`'s `validate_*`.
pub mod scheduling {
    use super::*;
    use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};

    fn typed<T: DeserializeOwned>(res: &ResourceInfo, v: &Value) -> Result<T, ApiError> {
        serde_json::from_value(v.clone()).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                res.kind, res.version, res.kind
            ))
        })
    }

    /// Validates a Workload, PodGroup or CompositePodGroup create, update or status update; the errors are
    /// the 422 `Invalid` Status kube-apiserver returns, with a cause per field.
    pub fn validate(
        res: &ResourceInfo,
        op: Operation,
        old: Option<&Value>,
        obj: &Value,
        subresource: Option<&str>,
    ) -> Result<(), ApiError> {
        let status = subresource == Some("status");
        let errors = match (res.builtin, op, old) {
            (Some(Builtin::Workload), Operation::Create, _) => {
                workloadbuilder::validate_workload(&typed::<Workload>(res, obj)?)
            }
            (Some(Builtin::Workload), Operation::Update, Some(old)) => {
                workloadbuilder::validate_workload_update(&typed::<Workload>(res, obj)?, &typed(res, old)?)
            }
            (Some(Builtin::PodGroup), Operation::Create, _) => {
                workloadbuilder::validate_pod_group(&typed::<PodGroup>(res, obj)?)
            }
            (Some(Builtin::PodGroup), Operation::Update, Some(old)) if status => {
                workloadbuilder::validate_pod_group_status_update(&typed::<PodGroup>(res, obj)?, &typed(res, old)?)
            }
            (Some(Builtin::PodGroup), Operation::Update, Some(old)) => {
                workloadbuilder::validate_pod_group_update(&typed::<PodGroup>(res, obj)?, &typed(res, old)?)
            }
            (Some(Builtin::CompositePodGroup), Operation::Create, _) => {
                workloadbuilder::validate_composite_pod_group(&typed::<CompositePodGroup>(res, obj)?)
            }
            (Some(Builtin::CompositePodGroup), Operation::Update, Some(old)) if status => {
                workloadbuilder::validate_composite_pod_group_status_update(
                    &typed::<CompositePodGroup>(res, obj)?,
                    &typed(res, old)?,
                )
            }
            (Some(Builtin::CompositePodGroup), Operation::Update, Some(old)) => {
                workloadbuilder::validate_composite_pod_group_update(
                    &typed::<CompositePodGroup>(res, obj)?,
                    &typed(res, old)?,
                )
            }
            _ => return Ok(()),
        };
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::from(errors.to_status(&res.group, &res.kind, meta::name(obj))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_quantities_become_strings() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": 0.5, "memory": "1Gi", "nvidia.com/gpu": 1}, "limits": {"cpu": 2}}}]}});
        normalize_quantities(&mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}, "limits": {"cpu": "2"}})
        );
    }

    #[test]
    fn pod_spec_defaults_and_update_rules() {
        let mut spec = json!({"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1"}}}]});
        default_pod_spec(&mut spec);
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(spec["containers"][0]["resources"]["requests"], json!({"cpu": "1"}));
        let mut changed = spec.clone();
        changed["containers"][0]["image"] = json!("nginx:2");
        assert!(check_pod_spec_update("p", &spec, &changed).is_ok());
        changed["nodeName"] = json!("n1");
        let err = check_pod_spec_update("p", &spec, &changed).unwrap_err();
        assert!(
            err.message()
                .starts_with("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields")
        );
    }
}
