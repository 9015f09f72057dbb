//! batch/v1 Job: API defaults (completions, parallelism, backoff limit, completion mode, the generated
//! selector and labels), pod template defaults and validation, immutable fields, and `spec.scheduling`
//! validated with the rules the Job controller compiles with (KEP-6089's Job integration). Deleting a Job
//! orphans its pods unless the request says otherwise, as upstream keeps for compatibility.

use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

use super::pod::{default_pod_spec, validate_pod_spec};
use super::print::{age, col, condition_status, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, Operation, Propagation, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("batch", "v1", "Job", "jobs", true, JobStrategy)
        .in_all()
        .with_status()
}

#[derive(Debug)]
struct JobStrategy;

impl Strategy for JobStrategy {
    type Object = Job;

    fn facts(&self) -> Facts {
        Facts {
            default_propagation: Propagation::Orphan,
            ..Facts::PLAIN
        }
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "status.successful"
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<Job>(cx.request, res, obj)
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        if !cx.settings.workload_with_job {
            drop_disabled_scheduling(cx.old, obj);
        }
        prepare_job(res, cx.op, obj)
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        validate_job(res, None, obj, cx.settings.job_scheduling_validation)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        validate_job(res, Some(old), obj, cx.settings.job_scheduling_validation)
    }

    fn columns(&self) -> Vec<Value> {
        let name = crate::resource::name_column();
        let age = crate::resource::age_column();
        vec![
            name,
            col("Status", "string", 0, "Status of the job."),
            col("Completions", "string", 0, "The completion status of the job."),
            col("Duration", "string", 0, "Time required to complete the job."),
            age,
            col("Containers", "string", 1, "Names of each container in the template."),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector of the job."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (name, age) = (name(obj), age(obj));
        {
            let status = if condition_status(obj, "Complete") == Some("True") {
                "Complete"
            } else if condition_status(obj, "Failed") == Some("True") {
                "Failed"
            } else if condition_status(obj, "Suspended") == Some("True") {
                "Suspended"
            } else if condition_status(obj, "FailureTarget") == Some("True") {
                "FailureTarget"
            } else if meta::is_deleting(obj) {
                "Terminating"
            } else {
                "Running"
            };
            let succeeded = obj.pointer("/status/succeeded").and_then(Value::as_i64).unwrap_or(0);
            let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
                Some(c) => format!("{succeeded}/{c}"),
                None => format!(
                    "{succeeded}/1 of {}",
                    obj.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1)
                ),
            };
            let start = obj
                .pointer("/status/startTime")
                .and_then(Value::as_str)
                .and_then(meta::parse_time);
            let end = obj
                .pointer("/status/completionTime")
                .and_then(Value::as_str)
                .and_then(meta::parse_time)
                .unwrap_or_else(jiff::Timestamp::now);
            let duration = start
                .map(|st| {
                    meta::human_duration(std::time::Duration::from_secs(
                        (end.as_second() - st.as_second()).max(0).unsigned_abs(),
                    ))
                })
                .unwrap_or_default();
            let containers: Vec<&str> = obj
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c.get("name").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            let images: Vec<&str> = obj
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c.get("image").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            let selector = obj
                .pointer("/spec/selector/matchLabels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            vec![
                name,
                text_cell(status),
                text_cell(completions),
                text_cell(duration),
                age,
                text_cell(containers.join(",")),
                text_cell(images.join(",")),
                text_cell(selector),
            ]
        }
    }
}

/// Defaults, the generated selector and labels (on create), and the pod template's defaults.
/// kube-apiserver's `dropDisabledFields` for the WorkloadWithJob gate: with the gate off, a Job's
/// `spec.scheduling` is dropped, unless the stored Job already has one (an object written while the gate
/// was on keeps it).
fn drop_disabled_scheduling(old: Option<&Value>, obj: &mut Value) {
    let in_use = old.is_some_and(|o| o.pointer("/spec/scheduling").is_some());
    if !in_use && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("scheduling");
    }
}

fn prepare_job(res: &ResourceInfo, op: Operation, obj: &mut Value) -> Result<(), ApiError> {
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
                kwas_api_types::names::labels::CONTROLLER_UID: uid,
                kwas_api_types::names::labels::JOB_NAME: name,
                kwas_api_types::names::labels::LEGACY_CONTROLLER_UID: uid,
                kwas_api_types::names::labels::LEGACY_JOB_NAME: name,
            });
            spec.insert(
                "selector".into(),
                json!({"matchLabels": {kwas_api_types::names::labels::CONTROLLER_UID: uid}}),
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
    Ok(())
}

/// Upstream's `validateCompletions` (elastic Indexed Jobs, GA): `completions` is immutable, except on an
/// Indexed Job, where it may change together with `parallelism` (to the same value).
fn completions_update(old: &Value, spec: &serde_json::Map<String, Value>) -> Option<FieldCause> {
    let completions = spec.get("completions").unwrap_or(&Value::Null);
    if old.get("completions").unwrap_or(&Value::Null) == completions {
        return None;
    }
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    if !indexed {
        return Some(FieldCause::immutable("spec.completions", completions));
    }
    // An Indexed Job without completions is refused by the create-time rules already.
    if completions.is_null() || spec.get("parallelism") == Some(completions) {
        return None;
    }
    Some(FieldCause::invalid(
        "spec.completions",
        completions,
        "can only be modified in tandem with spec.parallelism",
    ))
}

/// Copies into `old` (a stored pod template) the scheduling directives of `new` that a suspended Job
/// that never started may change, as upstream's `validatePodTemplateUpdate` does: node affinity (an
/// affinity with only node affinity may be removed whole), node selector, tolerations, scheduling gates,
/// labels and annotations.
fn allow_scheduling_directives(old: &mut Value, new: &Value) {
    let new_affinity = new.pointer("/spec/affinity").filter(|a| !a.is_null());
    let Some(old_obj) = old.as_object_mut() else { return };
    let old_spec = meta::ensure_object(old_obj.entry("spec").or_insert(json!({})));
    let old_affinity = old_spec.get("affinity").filter(|a| !a.is_null()).cloned();
    match (new_affinity, old_affinity) {
        (None, Some(mut a)) => {
            if let Some(a) = a.as_object_mut() {
                a.remove("nodeAffinity");
            }
            if a.as_object().is_some_and(serde_json::Map::is_empty) {
                old_spec.remove("affinity");
            } else {
                old_spec.insert("affinity".into(), a);
            }
        }
        (Some(n), None) => {
            let mut a = serde_json::Map::new();
            if let Some(node) = n.get("nodeAffinity") {
                a.insert("nodeAffinity".into(), node.clone());
            }
            old_spec.insert("affinity".into(), Value::Object(a));
        }
        (Some(n), Some(mut a)) => {
            if let Some(a) = a.as_object_mut() {
                match n.get("nodeAffinity") {
                    Some(node) => a.insert("nodeAffinity".into(), node.clone()),
                    None => a.remove("nodeAffinity"),
                };
            }
            old_spec.insert("affinity".into(), a);
        }
        (None, None) => {}
    }
    for field in ["nodeSelector", "tolerations", "schedulingGates"] {
        match new.pointer(&format!("/spec/{field}")) {
            Some(v) => old_spec.insert(field.into(), v.clone()),
            None => old_spec.remove(field),
        };
    }
    let old_meta = meta::ensure_object(old_obj.entry("metadata").or_insert(json!({})));
    for field in ["labels", "annotations"] {
        match new.pointer(&format!("/metadata/{field}")) {
            Some(v) => old_meta.insert(field.into(), v.clone()),
            None => old_meta.remove(field),
        };
    }
}

/// Upstream's `validateJobSpec` for the selector: required (generated unless `manualSelector`), and,
/// manual or generated, it must match the template's labels (the pods the Job produces).
fn selector_causes(spec: &serde_json::Map<String, Value>) -> Vec<FieldCause> {
    let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) else {
        return vec![FieldCause::required("spec.selector", "")];
    };
    let empty = serde_json::Map::new();
    let labels = spec
        .get("template")
        .and_then(|t| t.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    match crate::selectors::LabelSelector::from_api(Some(selector)) {
        Some(sel) if !sel.matches_labels(labels) => vec![FieldCause::invalid(
            "spec.template.metadata.labels",
            &Value::Object(labels.clone()),
            "`selector` does not match template `labels`",
        )],
        _ => Vec::new(),
    }
}

/// Upstream's `ValidateJobSpecUpdate`: what an update may not change.
fn update_causes(old: &Value, spec: &serde_json::Map<String, Value>) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    // These never change after creation (`manualSelector` may: upstream's case "update parallelism,
    // activeDeadlineSeconds, ttl, manualSelector").
    for f in [
        "selector",
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        if old["spec"].get(f) != spec.get(f) {
            causes.push(FieldCause::immutable(
                format!("spec.{f}"),
                spec.get(f).unwrap_or(&Value::Null),
            ));
        }
    }
    causes.extend(completions_update(&old["spec"], spec));
    // Upstream's validatePodTemplateUpdate: the template is immutable, except the scheduling
    // directives of a Job that is suspended and never started.
    let suspended = old["spec"].get("suspend").and_then(Value::as_bool) == Some(true);
    let started = old.pointer("/status/startTime").is_some();
    let template = spec.get("template").unwrap_or(&Value::Null);
    let mut old_template = old["spec"].get("template").cloned().unwrap_or(Value::Null);
    if suspended && !started {
        allow_scheduling_directives(&mut old_template, template);
    }
    if &old_template != template {
        causes.push(FieldCause::immutable("spec.template", template));
    }
    causes
}

/// The Job's validation (with `old` on updates: immutable fields and the scheduling update rules).
fn validate_job(
    res: &ResourceInfo,
    old: Option<&Value>,
    obj: &Value,
    scheduling_validation: bool,
) -> Result<(), ApiError> {
    let name = meta::name(obj);
    let empty = serde_json::Map::new();
    let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
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
    causes.extend(selector_causes(spec));
    if let Some(old) = old {
        causes.extend(update_causes(old, spec));
    }
    // The failure and success policies (upstream's ValidateJobSpec for those fields).
    let job = serde_json::from_value::<k8s_openapi::api::batch::v1::Job>(obj.clone());
    if let Ok(Some(spec)) = job.as_ref().map(|j| j.spec.as_ref()) {
        causes.extend(
            kwas_api_types::batch::validate_policies(spec)
                .iter()
                .map(FieldCause::from),
        );
    }
    // spec.scheduling (KEP-6089 Job integration): the same rules the Job controller compiles with.
    if scheduling_validation && let Ok(job) = job {
        let errs = match old.map(|o| serde_json::from_value::<k8s_openapi::api::batch::v1::Job>(o.clone())) {
            Some(Ok(old_job)) => workloadbuilder::job::validate_job_scheduling_update(&job, &old_job),
            _ => workloadbuilder::job::validate_job_scheduling(&job),
        };
        causes.extend(errs.iter().map(FieldCause::from));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, name, causes));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Cases of upstream's `TestValidateJobUpdate` (`pkg/apis/batch/validation/validation_test.go`), each
    //! named after its case, on [`update_causes`]. Upstream's `AllowMutableSchedulingDirectives` is true
    //! for a Job that is suspended and never started, as its strategy sets it.
    use super::*;

    fn old(extra: Value, suspended: bool) -> Value {
        let mut spec = json!({
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
            "completionMode": "NonIndexed",
            "parallelism": 1,
            "completions": 1,
            "suspend": suspended,
            "template": {
                "metadata": {"labels": {"batch.kubernetes.io/controller-uid": "u"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}], "dnsPolicy": "ClusterFirst"}
            }
        });
        merge(&mut spec, extra);
        json!({"spec": spec})
    }

    fn merge(into: &mut Value, extra: Value) {
        if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
            for (k, v) in extra {
                match (into.get_mut(&k), v) {
                    (Some(i @ Value::Object(_)), v @ Value::Object(_)) => merge(i, v),
                    (_, v) => {
                        into.insert(k, v);
                    }
                }
            }
        }
    }

    /// The fields of the causes of updating `old` with `change` merged into its spec.
    fn update(old: &Value, change: impl FnOnce(&mut Value)) -> Vec<String> {
        let mut spec = old["spec"].clone();
        change(&mut spec);
        update_causes(old, spec.as_object().unwrap())
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn node_affinity() -> Value {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
        ]}}})
    }

    #[test]
    fn immutable_completions_for_non_indexed_jobs() {
        let causes = update(&old(json!({}), false), |s| s["completions"] = json!(2));
        assert_eq!(causes.len(), 1);
        assert!(causes[0].starts_with("spec.completions: "), "{causes:?}");
    }

    #[test]
    fn immutable_completions_for_non_indexed_job_when_allow_elastic_indexed_jobs_is_true() {
        let o = old(json!({"completions": 2}), false);
        let causes = update(&o, |s| {
            s["completions"] = json!(4);
            s["parallelism"] = json!(4);
        });
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert!(causes[0].contains("field is immutable"), "{causes:?}");
    }

    /// "mutable completions for indexed job when AllowElasticIndexedJobs is true": together with
    /// parallelism, up and down.
    #[test]
    fn mutable_completions_for_indexed_job_in_tandem_with_parallelism() {
        let o = old(
            json!({"completionMode": "Indexed", "completions": 4, "parallelism": 4}),
            false,
        );
        for n in [2, 6] {
            assert_eq!(
                update(&o, |s| {
                    s["completions"] = json!(n);
                    s["parallelism"] = json!(n);
                }),
                Vec::<String>::new()
            );
        }
        // "immutable completions for indexed job when AllowElasticIndexedJobs is true" when parallelism
        // does not follow.
        let causes = update(&o, |s| s["completions"] = json!(6));
        assert_eq!(
            causes,
            ["spec.completions: Invalid value: 6: can only be modified in tandem with spec.parallelism"]
        );
    }

    #[test]
    fn immutable_pod_template() {
        let causes = update(&old(json!({}), false), |s| {
            s["template"]["spec"]["dnsPolicy"] = json!("ClusterFirstWithHostNet")
        });
        assert_eq!(causes.len(), 1);
        assert!(causes[0].starts_with("spec.template: "), "{causes:?}");
    }

    #[test]
    fn immutable_node_affinity() {
        let causes = update(&old(json!({}), false), |s| {
            s["template"]["spec"]["affinity"] = node_affinity()
        });
        assert!(causes[0].starts_with("spec.template: "), "{causes:?}");
    }

    #[test]
    fn add_node_affinity() {
        let causes = update(&old(json!({}), true), |s| {
            s["template"]["spec"]["affinity"] = node_affinity()
        });
        assert_eq!(causes, Vec::<String>::new());
    }

    #[test]
    fn update_node_affinity() {
        let o = old(json!({"template": {"spec": {"affinity": node_affinity()}}}), true);
        let causes = update(&o, |s| {
            s["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                [0]["matchExpressions"][0]["values"] = json!(["w"])
        });
        assert_eq!(causes, Vec::<String>::new());
    }

    #[test]
    fn remove_node_affinity() {
        let o = old(json!({"template": {"spec": {"affinity": node_affinity()}}}), true);
        let causes = update(&o, |s| {
            s["template"]["spec"]["affinity"]
                .as_object_mut()
                .unwrap()
                .remove("nodeAffinity");
        });
        assert_eq!(causes, Vec::<String>::new());
    }

    #[test]
    fn remove_affinity() {
        let o = old(json!({"template": {"spec": {"affinity": node_affinity()}}}), true);
        let causes = update(&o, |s| {
            s["template"]["spec"].as_object_mut().unwrap().remove("affinity");
        });
        assert_eq!(causes, Vec::<String>::new());
        // Pod affinity is not a scheduling directive a suspended Job may drop.
        let mut with_pod_affinity = node_affinity();
        with_pod_affinity["podAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}
        ]});
        let o = old(json!({"template": {"spec": {"affinity": with_pod_affinity}}}), true);
        let causes = update(&o, |s| {
            s["template"]["spec"].as_object_mut().unwrap().remove("affinity");
        });
        assert_eq!(causes.len(), 1, "{causes:?}");
    }

    #[test]
    fn immutable_tolerations() {
        let causes = update(&old(json!({}), false), |s| {
            s["template"]["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}])
        });
        assert_eq!(causes.len(), 1, "{causes:?}");
    }

    /// "mutable tolerations", and the node selector, scheduling gates, labels and annotations with them;
    /// a started Job (status.startTime set) may change none of them.
    #[test]
    fn mutable_tolerations() {
        let change = |s: &mut Value| {
            s["template"]["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
            s["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
            s["template"]["spec"]["schedulingGates"] = json!([{"name": "gate"}]);
            s["template"]["metadata"]["annotations"] = json!({"a": "b"});
            s["template"]["metadata"]["labels"]["extra"] = json!("x");
        };
        let suspended = old(json!({}), true);
        assert_eq!(update(&suspended, change), Vec::<String>::new());
        let mut started = suspended.clone();
        started["status"] = json!({"startTime": "2026-01-01T00:00:00Z"});
        assert_eq!(update(&started, change).len(), 1);
    }

    /// `TestValidateJob`'s selector cases: "spec.selector:Required value" and "spec.template.metadata.labels:
    /// Invalid value: ... `selector` does not match template `labels`".
    #[test]
    fn the_selector_is_required_and_must_match_the_template_labels() {
        let spec = old(json!({}), false)["spec"].clone();
        assert!(selector_causes(spec.as_object().unwrap()).is_empty());
        let mut missing = spec.clone();
        missing.as_object_mut().unwrap().remove("selector");
        let causes = selector_causes(missing.as_object().unwrap());
        assert_eq!(
            (causes[0].field.as_str(), causes[0].message.as_str()),
            ("spec.selector", "Required value")
        );
        let mut mismatch = spec;
        mismatch["selector"] = json!({"matchLabels": {"app": "other"}});
        let causes = selector_causes(mismatch.as_object().unwrap());
        assert_eq!(causes[0].field, "spec.template.metadata.labels");
        assert!(
            causes[0]
                .message
                .ends_with("`selector` does not match template `labels`"),
            "{causes:?}"
        );
    }

    /// "update parallelism, activeDeadlineSeconds, ttl, manualSelector".
    #[test]
    fn update_parallelism_active_deadline_seconds_ttl_manual_selector() {
        let causes = update(&old(json!({"parallelism": 5}), false), |s| {
            s["parallelism"] = json!(2);
            s["activeDeadlineSeconds"] = json!(3);
            s["ttlSecondsAfterFinished"] = json!(2);
            s["manualSelector"] = json!(true);
        });
        assert_eq!(causes, Vec::<String>::new());
    }
}
