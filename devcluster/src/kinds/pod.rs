//! core/v1 Pod: API defaults (`SetDefaults_PodSpec`, `SetDefaults_Container`), validation of the fields
//! kwas and its tests use, spec immutability with upstream's message, DefaultTolerationSeconds, the
//! Priority admission plugin, QoS class, graceful deletion, and the `binding` and `eviction` subresources.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::print::{age, col, name, str_at, text_cell};
use crate::admission::priority;
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, StatusStrategy, Strategy, Subresource, SubresourceOp};
use workloadbuilder::validation::strings;

/// How long pods tolerate `not-ready` and `unreachable` nodes by default (DefaultTolerationSeconds).
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "Pod", "pods", true, PodStrategy)
        .short_names(&["po"])
        .in_all()
        .with_status_strategy(PodStatus)
}

#[derive(Debug)]
struct PodStrategy;

impl Strategy for PodStrategy {
    type Object = Pod;

    fn facts(&self) -> Facts {
        Facts {
            subresources: &[
                Subresource {
                    name: "binding",
                    kind: "Binding",
                    group: "",
                    version: "v1",
                    verbs: &["create"],
                    op: SubresourceOp::PodBinding,
                },
                Subresource {
                    name: "eviction",
                    kind: "Eviction",
                    group: "policy",
                    version: "v1",
                    verbs: &["create"],
                    op: SubresourceOp::PodEviction,
                },
                Subresource {
                    name: "log",
                    kind: "",
                    group: "",
                    version: "",
                    verbs: &["get"],
                    op: SubresourceOp::PodLog,
                },
            ],
            ..Facts::PLAIN
        }
    }

    fn supports_field(&self, field: &str) -> bool {
        matches!(
            field,
            "spec.nodeName"
                | "spec.restartPolicy"
                | "spec.schedulerName"
                | "spec.serviceAccountName"
                | "spec.hostNetwork"
                | "status.phase"
                | "status.podIP"
                | "status.podIPs"
                | "status.nominatedNodeName"
                | "spec.schedulingGroup.podGroupName"
        )
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<Pod>(cx.request, res, obj)
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let Some(spec) = obj.get_mut("spec") else {
            return Err(ApiError::invalid(
                "",
                "Pod",
                meta::name(obj),
                vec![FieldCause::required("spec.containers", "")],
            ));
        };
        default_pod_spec(spec);
        if cx.creating() {
            let qos = qos_class(&obj["spec"]);
            obj["status"] = json!({"phase": "Pending", "qosClass": qos});
        }
        Ok(())
    }

    fn admit(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        if !cx.creating() {
            return Ok(());
        }
        add_default_tolerations(&mut obj["spec"]);
        let name = meta::name(obj).to_string();
        match obj.get_mut("spec").and_then(Value::as_object_mut) {
            Some(spec) => priority::resolve_priority(cx.store, res, &name, spec, "pod spec"),
            None => Ok(()),
        }
    }

    fn validate(&self, _cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let mut causes = Vec::new();
        validate_pod_spec(&obj["spec"], "spec", &mut causes, &["Always", "OnFailure", "Never"]);
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid("", "Pod", meta::name(obj), causes))
        }
    }

    fn validate_update(&self, _cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        check_pod_spec_update(meta::name(obj), &old["spec"], &obj["spec"])
    }

    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> i64 {
        pod_grace_period(obj, requested)
    }

    fn columns(&self) -> Vec<Value> {
        let name = crate::resource::name_column();
        let age = crate::resource::age_column();
        vec![
            name,
            col(
                "Ready",
                "string",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            col(
                "Status",
                "string",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            col(
                "Restarts",
                "string",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            age,
            col("IP", "string", 1, "IP address allocated to the pod."),
            col("Node", "string", 1, "Name of the Node this pod is scheduled on."),
            col(
                "Nominated Node",
                "string",
                1,
                "Name of the node this pod is nominated to.",
            ),
            col("Readiness Gates", "string", 1, "Pod readiness gates."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (name, age) = (name(obj), age(obj));
        let str_at = |p: &str| str_at(obj, p);
        {
            let statuses = obj
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let total = obj
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = statuses
                .iter()
                .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                .count();
            let restarts: i64 = statuses
                .iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .sum();
            let mut status = obj
                .pointer("/status/reason")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| {
                    obj.pointer("/status/phase")
                        .and_then(Value::as_str)
                        .unwrap_or("Pending")
                        .to_string()
                });
            for c in &statuses {
                if let Some(r) = c.pointer("/state/waiting/reason").and_then(Value::as_str) {
                    status = r.to_string();
                } else if let Some(r) = c.pointer("/state/terminated/reason").and_then(Value::as_str)
                    && status != "Succeeded"
                    && status != "Failed"
                {
                    status = r.to_string();
                }
            }
            if meta::is_deleting(obj) {
                status = "Terminating".into();
            }
            let node = obj
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            vec![
                name,
                text_cell(format!("{ready}/{total}")),
                text_cell(status),
                text_cell(restarts.to_string()),
                age,
                text_cell(str_at("/status/podIP")),
                text_cell(node),
                text_cell(str_at("/status/nominatedNodeName")),
                text_cell("<none>"),
            ]
        }
    }
}

/// Pods' status writes: `status.resourceClaimStatuses` is validated.
#[derive(Debug)]
struct PodStatus;

impl StatusStrategy for PodStatus {
    fn validate_update(&self, _cx: &mut AdmitContext<'_>, _old: &Value, obj: &Value) -> Result<(), ApiError> {
        let mut causes = Vec::new();
        validate_resource_claim_statuses(obj, &mut causes);
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid("", "Pod", meta::name(obj), causes))
    }
}

/// The PersistentVolumeClaims a pod mounts: `(volume name, claim name)` of each
/// `spec.volumes[].persistentVolumeClaim`.
pub(crate) fn claims(pod: &Value) -> Vec<(String, String)> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let claim = v.pointer("/persistentVolumeClaim/claimName")?.as_str()?;
            let name = v.get("name").and_then(Value::as_str).unwrap_or("");
            Some((name.to_string(), claim.to_string()))
        })
        .collect()
}

/// A pod's effective grace period: 0 for unbound or terminal pods, else the request's or the pod's.
fn pod_grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    let own = pod
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(30);
    requested.unwrap_or(own).max(0)
}

/// Applies the pod spec defaults kube-apiserver applies (`SetDefaults_PodSpec`, `SetDefaults_Container`).
pub(crate) fn default_pod_spec(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else { return };
    let defaults = [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("schedulerName", json!(kwas_api_types::names::DEFAULT_SCHEDULER_NAME)),
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

pub(crate) fn validate_pod_spec(spec: &Value, path: &str, causes: &mut Vec<FieldCause>, restart: &[&str]) {
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
                } else if let Some(msg) = strings::is_dns1123_label(n).first() {
                    causes.push(FieldCause::invalid(
                        format!("{path}.containers[{i}].name"),
                        &json!(n),
                        msg,
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
    let claim_names = validate_pod_resource_claims(spec, path, causes);
    for list in ["initContainers", "containers"] {
        for (i, c) in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            validate_container_claims(
                c.pointer("/resources/claims"),
                &format!("{path}.{list}[{i}].resources.claims"),
                &claim_names,
                causes,
            );
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

/// `validatePodResourceClaims`: each entry of `spec.resourceClaims` has a unique DNS-label name and
/// exactly one of `resourceClaimName` / `resourceClaimTemplateName`, each a valid object name. Returns the
/// names, which containers' `resources.claims` must use.
fn validate_pod_resource_claims(
    spec: &Value,
    path: &str,
    causes: &mut Vec<FieldCause>,
) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for (i, claim) in spec
        .get("resourceClaims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}.resourceClaims[{i}]");
        let name = claim.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(FieldCause::required(format!("{p}.name"), ""));
        } else if names.contains(name) {
            causes.push(FieldCause::duplicate(format!("{p}.name"), &json!(name)));
        } else {
            for msg in strings::is_dns1123_label(name) {
                causes.push(FieldCause::invalid(format!("{p}.name"), &json!(name), &msg));
            }
            names.insert(name.to_string());
        }
        let field = |f: &str| claim.get(f).and_then(Value::as_str);
        let (direct, template) = (field("resourceClaimName"), field("resourceClaimTemplateName"));
        match (direct, template) {
            (Some(_), Some(_)) => causes.push(FieldCause::forbidden(
                p.clone(),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            )),
            (None, None) => causes.push(FieldCause::required(
                p.clone(),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
            _ => {}
        }
        for (f, v) in [("resourceClaimName", direct), ("resourceClaimTemplateName", template)] {
            for msg in v.map(strings::is_dns1123_subdomain).unwrap_or_default() {
                causes.push(FieldCause::invalid(format!("{p}.{f}"), &json!(v), &msg));
            }
        }
    }
    names
}

/// `validateResourceClaimNames`: a container's `resources.claims` name claims of the pod, each (with its
/// optional `request`) once.
fn validate_container_claims(
    claims: Option<&Value>,
    path: &str,
    pod_claims: &std::collections::BTreeSet<String>,
    causes: &mut Vec<FieldCause>,
) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, c) in claims.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let p = format!("{path}[{i}]");
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(FieldCause::required(p, ""));
            continue;
        }
        let mut key = name.to_string();
        if let Some(request) = c.get("request").and_then(Value::as_str).filter(|r| !r.is_empty()) {
            for msg in strings::is_dns1123_label(request) {
                causes.push(FieldCause::invalid(format!("{p}.request"), &json!(request), &msg));
            }
            key = format!("{name}/{request}");
        }
        if !seen.insert(key.clone()) {
            causes.push(FieldCause::duplicate(p.clone(), &json!(key)));
        }
        if !pod_claims.contains(name) {
            let detail = if pod_claims.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_string()
            } else {
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    pod_claims.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            };
            causes.push(FieldCause::not_found(p, &json!(name), &detail));
        }
    }
}

/// `validatePodResourceClaimStatuses`: each status names an entry of `spec.resourceClaims`, once, and a
/// generated claim's name is a valid object name.
fn validate_resource_claim_statuses(pod: &Value, causes: &mut Vec<FieldCause>) {
    let claims: Vec<&str> = pod
        .pointer("/spec/resourceClaims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for (i, st) in pod
        .pointer("/status/resourceClaimStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("status.resourceClaimStatuses[{i}]");
        let name = st.get("name").and_then(Value::as_str).unwrap_or("");
        if !claims.contains(&name) {
            causes.push(FieldCause::invalid(
                format!("{p}.name"),
                &json!(name),
                "must match the name of an entry in `spec.resourceClaims`",
            ));
        }
        if !seen.insert(name) {
            causes.push(FieldCause::duplicate(format!("{p}.name"), &json!(name)));
        }
        if let Some(claim) = st.get("resourceClaimName").and_then(Value::as_str) {
            for msg in strings::is_dns1123_subdomain(claim) {
                causes.push(FieldCause::invalid(format!("{p}.name"), &json!(claim), &msg));
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn resource_claims_are_validated_and_their_statuses_written_through_pods_status() {
        use crate::api::State;
        use crate::request::RequestContext;
        let mut state = State::new(100, Default::default());
        let res = state.builtin("", "pods").unwrap();
        let pod = |name: &str, claims: Value, container_claims: Value| {
            json!({"metadata": {"name": name}, "spec": {"resourceClaims": claims,
                "containers": [{"name": "c", "image": "i", "resources": {"claims": container_claims}}]}})
        };
        let err = state
            .create(
                &res,
                "default",
                pod(
                    "bad",
                    json!([{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"},
                        {"name": "gpu", "resourceClaimName": "a"}, {"name": "Bad_Name"},
                        {"name": "ok", "resourceClaimTemplateName": "Not/Valid"}]),
                    json!([{"name": "gpu"}, {"name": "gpu"}, {"name": "other"}]),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        for want in [
            "spec.resourceClaims[0]: Forbidden: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            "spec.resourceClaims[1].name: Duplicate value: \"gpu\"",
            "spec.resourceClaims[2].name: Invalid value: \"Bad_Name\"",
            "spec.resourceClaims[2]: Required value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            "spec.resourceClaims[3].resourceClaimTemplateName: Invalid value: \"Not/Valid\"",
            "spec.containers[0].resources.claims[1]: Duplicate value: \"gpu\"",
            "spec.containers[0].resources.claims[2]: Not found: \"other\": must be one of the names in pod.spec.resourceClaims: Bad_Name, gpu, ok",
        ] {
            assert!(err.message().contains(want), "{want}\nmissing from\n{}", err.message());
        }
        let p = state
            .create(
                &res,
                "default",
                pod(
                    "good",
                    json!([{"name": "gpu", "resourceClaimTemplateName": "gpus"}]),
                    json!([{"name": "gpu"}]),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        let mut st = (*p).clone();
        st["status"]["resourceClaimStatuses"] = json!([{"name": "gpu", "resourceClaimName": "good-gpu-x7k2"}]);
        let p = state
            .update(
                &res,
                "default",
                "good",
                st,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert_eq!(
            p["status"]["resourceClaimStatuses"][0]["resourceClaimName"],
            "good-gpu-x7k2"
        );
        let mut st = (*p).clone();
        st["status"]["resourceClaimStatuses"] = json!([{"name": "other", "resourceClaimName": "x"}]);
        let err = state
            .update(
                &res,
                "default",
                "good",
                st,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(
            err.message().contains("status.resourceClaimStatuses[0].name: Invalid value: \"other\": must match the name of an entry in `spec.resourceClaims`"),
            "{}",
            err.message()
        );
    }
}
