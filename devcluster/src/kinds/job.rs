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
    if let Some(old) = old {
        // Upstream's ValidateJobSpecUpdate: these never change after creation.
        for f in [
            "selector",
            "completionMode",
            "manualSelector",
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
        let suspended = old["spec"].get("suspend").and_then(Value::as_bool) == Some(true);
        let started = old.pointer("/status/startTime").is_some();
        if (started || !suspended) && old["spec"].get("template") != spec.get("template") {
            causes.push(FieldCause::immutable(
                "spec.template",
                spec.get("template").unwrap_or(&Value::Null),
            ));
        }
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
