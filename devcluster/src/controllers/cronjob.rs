//! The CronJob controller: at each scheduled time (in `spec.timeZone`, UTC when unset) a Job
//! `<cronjob>-<minutes since the epoch>` from the job template, owned by the CronJob and annotated with
//! `batch.kubernetes.io/cronjob-scheduled-timestamp`; `concurrencyPolicy` (Allow, Forbid, Replace),
//! `startingDeadlineSeconds`, `suspend`, the history limits, and `status.active`, `lastScheduleTime`,
//! `lastSuccessfulTime`. Missed times are not caught up one by one: the most recent one runs, as
//! upstream does after more than a hundred misses.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::{DeleteOptions, State};
use crate::cron::Schedule;
use crate::meta;
use crate::request::RequestContext;
use crate::resource::Propagation;
use crate::store::GroupResource;

const MANAGER: &str = "cronjob-controller";
const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// One pass over every CronJob.
pub(super) fn sync(state: &mut State, now: jiff::Timestamp) {
    let cronjobs = state.store.list(&GroupResource::new("batch", "cronjobs"), None);
    for cj in cronjobs {
        if !meta::is_deleting(&cj) {
            sync_one(state, &cj, now);
        }
    }
}

fn finished(job: &Value) -> Option<(&'static str, String)> {
    let conditions = job.pointer("/status/conditions").and_then(Value::as_array)?;
    for (ty, outcome) in [("Complete", "Succeeded"), ("Failed", "Failed")] {
        if let Some(c) = conditions.iter().find(|c| {
            c.get("type").and_then(Value::as_str) == Some(ty) && c.get("status").and_then(Value::as_str) == Some("True")
        }) {
            let at = c
                .get("lastTransitionTime")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            return Some((outcome, at));
        }
    }
    None
}

/// The latest scheduled time in (`after`, `now`], if any.
fn latest_due(
    schedule: &Schedule,
    tz: &jiff::tz::TimeZone,
    after: jiff::Timestamp,
    now: jiff::Timestamp,
) -> Option<jiff::Timestamp> {
    let mut t = after.to_zoned(tz.clone()).datetime();
    let mut due = None;
    for _ in 0..100_000 {
        let next = schedule.next_after(t)?;
        let at = next.to_zoned(tz.clone()).ok()?.timestamp();
        if at > now {
            break;
        }
        due = Some(at);
        t = next;
    }
    due
}

fn sync_one(state: &mut State, cj: &Value, now: jiff::Timestamp) {
    let ns = meta::namespace(cj).to_string();
    let uid = meta::uid(cj).to_string();
    let name = meta::name(cj).to_string();
    let jobs: Vec<Arc<Value>> = state
        .store
        .list(&GroupResource::new("batch", "jobs"), Some(&ns))
        .into_iter()
        .filter(|j| meta::owner_refs(j).iter().any(|r| r.controller && r.uid == uid))
        .collect();
    let mut active: Vec<Arc<Value>> = jobs
        .iter()
        .filter(|j| finished(j).is_none() && !meta::is_deleting(j))
        .cloned()
        .collect();
    let mut last_schedule = cj
        .pointer("/status/lastScheduleTime")
        .and_then(Value::as_str)
        .map(str::to_string);
    let suspended = cj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let schedule = cj
        .pointer("/spec/schedule")
        .and_then(Value::as_str)
        .and_then(|s| Schedule::parse(s).ok());
    let tz = cj
        .pointer("/spec/timeZone")
        .and_then(Value::as_str)
        .and_then(|z| jiff::tz::TimeZone::get(z).ok())
        .unwrap_or(jiff::tz::TimeZone::UTC);
    let after = last_schedule
        .as_deref()
        .or(meta::meta_str(cj, "creationTimestamp"))
        .and_then(meta::parse_time)
        .unwrap_or(now);
    if let (false, Some(schedule)) = (suspended, schedule)
        && let Some(due) = latest_due(&schedule, &tz, after, now)
    {
        let deadline = cj.pointer("/spec/startingDeadlineSeconds").and_then(Value::as_i64);
        let too_late = deadline.is_some_and(|d| now.as_second().saturating_sub(due.as_second()) > d);
        let policy = cj
            .pointer("/spec/concurrencyPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Allow");
        let forbidden = policy == "Forbid" && !active.is_empty();
        if !too_late && !forbidden {
            if policy == "Replace" {
                if let Some(res) = state.builtin("batch", "jobs") {
                    for j in &active {
                        let opts = DeleteOptions {
                            propagation: Some(Propagation::Background),
                            ..Default::default()
                        };
                        let _ = state.delete(&res, &ns, meta::name(j), &opts);
                    }
                }
                active.clear();
            }
            if let Some(job) = create_job(state, cj, due) {
                active.push(job);
            }
            last_schedule = Some(meta::format_time(due));
        }
    }
    // History limits.
    let mut done: Vec<(&'static str, String, Arc<Value>)> = jobs
        .iter()
        .filter_map(|j| finished(j).map(|(o, at)| (o, at, j.clone())))
        .collect();
    done.sort_by(|a, b| a.1.cmp(&b.1));
    if let Some(res) = state.builtin("batch", "jobs") {
        for (outcome, limit_field, default) in [
            ("Succeeded", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ] {
            let limit = usize::try_from(
                cj.pointer(&format!("/spec/{limit_field}"))
                    .and_then(Value::as_i64)
                    .unwrap_or(default)
                    .max(0),
            )
            .unwrap_or(0);
            let of: Vec<_> = done.iter().filter(|(o, _, _)| *o == outcome).collect();
            for (_, _, j) in of.iter().take(of.len().saturating_sub(limit)) {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..Default::default()
                };
                let _ = state.delete(&res, &ns, meta::name(j), &opts);
            }
        }
    }
    let last_success = done
        .iter()
        .filter(|(o, _, _)| *o == "Succeeded")
        .map(|(_, at, _)| at.clone())
        .max();
    let mut status = json!({});
    if !active.is_empty() {
        status["active"] = json!(active
            .iter()
            .map(|j| json!({"apiVersion": "batch/v1", "kind": "Job", "name": meta::name(j), "namespace": ns, "uid": meta::uid(j), "resourceVersion": meta::resource_version(j)}))
            .collect::<Vec<_>>());
    }
    if let Some(t) = last_schedule {
        status["lastScheduleTime"] = json!(t);
    }
    if let Some(t) = last_success {
        status["lastSuccessfulTime"] = json!(t);
    }
    let Some(current) = state.store.get(&GroupResource::new("batch", "cronjobs"), &ns, &name) else {
        return;
    };
    if current.get("status") == Some(&status) {
        return;
    }
    let Some(res) = state.builtin("batch", "cronjobs") else {
        return;
    };
    let mut new = (*current).clone();
    new["status"] = status;
    if let Err(e) = state.update(
        &res,
        &ns,
        &name,
        new,
        Some("status"),
        &mut RequestContext::manager(MANAGER),
    ) {
        tracing::debug!(cronjob = %name, error = %e, "cronjob status update failed");
    }
}

fn create_job(state: &mut State, cj: &Value, due: jiff::Timestamp) -> Option<Arc<Value>> {
    let res = state.builtin("batch", "jobs")?;
    let ns = meta::namespace(cj);
    let name = format!("{}-{}", meta::name(cj), due.as_second() / 60);
    let template = cj.pointer("/spec/jobTemplate").cloned().unwrap_or(json!({}));
    let mut metadata = template.get("metadata").cloned().unwrap_or(json!({}));
    let m = meta::ensure_object(&mut metadata);
    m.insert("name".into(), json!(name));
    m.insert("namespace".into(), json!(ns));
    meta::ensure_object(m.entry("annotations").or_insert(json!({})))
        .insert(SCHEDULED.into(), json!(meta::format_time(due)));
    m.insert(
        "ownerReferences".into(),
        json!([{"apiVersion": "batch/v1", "kind": "CronJob", "name": meta::name(cj), "uid": meta::uid(cj), "controller": true, "blockOwnerDeletion": true}]),
    );
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": template.get("spec").cloned().unwrap_or(json!({}))});
    match state.create(&res, ns, job, &mut RequestContext::manager(MANAGER)) {
        Ok(j) => Some(j),
        Err(e) => {
            tracing::debug!(cronjob = %meta::name(cj), error = %e, "creating a Job failed");
            state.store.get(&res.storage, ns, &name)
        }
    }
}
