//! batch/v1 CronJob: API defaults (`concurrencyPolicy: Allow`, history limits 3 and 1, `suspend: false`,
//! the Job template's pod defaults), validation of the schedule (cron syntax, no `TZ=` prefix), the time
//! zone, the concurrency policy and the template, and `kubectl get` columns. The CronJob controller
//! (`controllers::cronjob`) creates the Jobs.

use k8s_openapi::api::batch::v1::CronJob;
use serde_json::{Value, json};

use super::pod::{default_pod_spec, validate_pod_spec};
use super::print::{age, col, name, text_cell};
use crate::cron::Schedule;
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("batch", "v1", "CronJob", "cronjobs", true, CronJobStrategy)
        .short_names(&["cj"])
        .in_all()
        .with_status()
}

#[derive(Debug)]
struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    type Object = CronJob;

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<CronJob>(cx.request, res, obj)
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("concurrencyPolicy").or_insert(json!("Allow"));
        spec.entry("suspend").or_insert(json!(false));
        spec.entry("successfulJobsHistoryLimit").or_insert(json!(3));
        spec.entry("failedJobsHistoryLimit").or_insert(json!(1));
        if let Some(tspec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
            default_pod_spec(tspec);
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        match obj.pointer("/spec/schedule").and_then(Value::as_str) {
            None | Some("") => causes.push(FieldCause::required("spec.schedule", "")),
            Some(sched) => {
                if let Err(e) = Schedule::parse(sched) {
                    let detail = if e.contains("TZ") {
                        e
                    } else {
                        format!("unparseable schedule: {e}")
                    };
                    causes.push(FieldCause::invalid("spec.schedule", &json!(sched), &detail));
                }
            }
        }
        if let Some(tz) = obj.pointer("/spec/timeZone").and_then(Value::as_str)
            && jiff::tz::TimeZone::get(tz).is_err()
        {
            causes.push(FieldCause::invalid("spec.timeZone", &json!(tz), "unknown time zone"));
        }
        let policy = obj
            .pointer("/spec/concurrencyPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Allow");
        if !["Allow", "Forbid", "Replace"].contains(&policy) {
            causes.push(FieldCause::not_supported(
                "spec.concurrencyPolicy",
                &json!(policy),
                &["Allow", "Forbid", "Replace"],
            ));
        }
        for f in [
            "startingDeadlineSeconds",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        ] {
            if let Some(v) = obj.pointer(&format!("/spec/{f}")).and_then(Value::as_i64)
                && v < 0
            {
                causes.push(FieldCause::invalid(
                    format!("spec.{f}"),
                    &json!(v),
                    "must be greater than or equal to 0",
                ));
            }
        }
        match obj.pointer("/spec/jobTemplate/spec/template/spec") {
            Some(tspec) => validate_pod_spec(
                tspec,
                "spec.jobTemplate.spec.template.spec",
                &mut causes,
                &["OnFailure", "Never"],
            ),
            None => causes.push(FieldCause::required("spec.jobTemplate.spec.template.spec", "")),
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(&res.group, &res.kind, meta::name(obj), causes))
        }
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, _old: &Value, obj: &Value) -> Result<(), ApiError> {
        self.validate(cx, obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Schedule", "string", 0, "The schedule in Cron format."),
            col("Timezone", "string", 0, "The time zone the schedule is interpreted in."),
            col("Suspend", "boolean", 0, "Whether subsequent executions are suspended."),
            col("Active", "integer", 0, "The number of currently running jobs."),
            col(
                "Last Schedule",
                "string",
                0,
                "When the job was last successfully scheduled.",
            ),
            crate::resource::age_column(),
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
        let containers = obj
            .pointer("/spec/jobTemplate/spec/template/spec/containers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let field = |f: &str| {
            containers
                .iter()
                .filter_map(|c| c.get(f).and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(",")
        };
        let last = meta::age_of(obj.pointer("/status/lastScheduleTime").and_then(Value::as_str));
        vec![
            name(obj),
            text_cell(obj.pointer("/spec/schedule").and_then(Value::as_str).unwrap_or("")),
            text_cell(
                obj.pointer("/spec/timeZone")
                    .and_then(Value::as_str)
                    .unwrap_or("<none>"),
            ),
            json!(obj.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false)),
            json!(
                obj.pointer("/status/active")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            ),
            text_cell(if last.is_empty() || last == "<unknown>" {
                "<none>".to_string()
            } else {
                last
            }),
            age(obj),
            text_cell(field("name")),
            text_cell(field("image")),
            text_cell("<none>"),
        ]
    }
}
