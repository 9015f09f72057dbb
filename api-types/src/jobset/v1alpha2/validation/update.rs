//! `ValidateUpdate`: the replicated jobs and `managedBy` are immutable, except that a suspended JobSet's
//! (or one being suspended) pod templates may change their labels, annotations, node selector,
//! tolerations and scheduling gates (for Kueue), and with `ElasticJobSet` an Indexed Job's `parallelism`
//! and `completions` may change while the JobSet has not finished.

use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use serde_json::Value;

use super::{Features, FieldError, is_indexed};
use crate::jobset::v1alpha2::{JobSet, ReplicatedJob, conditions};

fn condition_true(conditions: &[Condition], type_: &str) -> bool {
    conditions.iter().any(|c| c.type_ == type_ && c.status == "True")
}

/// What upstream's webhook rejects when `old` is updated to `new`.
pub fn validate_update(old: &JobSet, new: &JobSet, features: &Features) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut munged = new.spec.replicated_jobs.clone();
    let find_old = |name: &str| old.spec.replicated_jobs.iter().find(|r| r.name == name);

    if features.elastic_jobset {
        let status = old.status.as_ref();
        let conds = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let terminal = condition_true(conds, conditions::COMPLETED) || condition_true(conds, conditions::FAILED);
        for (i, (new_r, munged_r)) in new.spec.replicated_jobs.iter().zip(munged.iter_mut()).enumerate() {
            let Some(old_r) = find_old(&new_r.name) else { continue };
            let path = format!("spec.replicatedJobs[{i}].template.spec");
            let new_job = new_r.template.spec.as_ref();
            if !is_indexed(new_job) {
                continue;
            }
            let (old_job, new_job) = (old_r.template.spec.as_ref(), new_job);
            let get = |j: Option<&JobSpec>, f: fn(&JobSpec) -> Option<i32>| j.and_then(f);
            let (op, np) = (get(old_job, |j| j.parallelism), get(new_job, |j| j.parallelism));
            let (oc, nc) = (get(old_job, |j| j.completions), get(new_job, |j| j.completions));
            if op != np || oc != nc {
                if terminal {
                    errs.push(FieldError::forbidden(
                        &path,
                        "Cannot mutate parallelism or completions when JobSet is in a terminal state (Completed or Failed)",
                    ));
                } else {
                    if let Some(p) = np.filter(|p| op != np && *p < 1) {
                        errs.push(FieldError::invalid(
                            format!("{path}.parallelism"),
                            p,
                            "parallelism must be >= 1",
                        ));
                    }
                    if let Some(c) = nc.filter(|c| oc != nc && *c < 1) {
                        errs.push(FieldError::invalid(
                            format!("{path}.completions"),
                            c,
                            "completions must be >= 1",
                        ));
                    }
                    if let (Some(p), Some(c)) = (np, nc)
                        && p != c
                    {
                        errs.push(FieldError::invalid(
                            format!("{path}.completions"),
                            c,
                            "completions must be equal to parallelism for Elastic Indexed Jobs",
                        ));
                    }
                }
            }
            let job = munged_r.template.spec.get_or_insert_with(JobSpec::default);
            job.parallelism = op;
            job.completions = oc;
        }
    }

    let suspended = |js: &JobSet| js.spec.suspend.unwrap_or(false);
    if suspended(old) || suspended(new) {
        for munged_r in &mut munged {
            let Some(old_r) = find_old(&munged_r.name) else {
                continue;
            };
            allow_kueue_mutations(munged_r, old_r);
        }
    }

    if !semantically_equal(&munged, &old.spec.replicated_jobs) {
        errs.push(FieldError::invalid(
            "spec.replicatedJobs",
            &new.spec.replicated_jobs,
            "field is immutable",
        ));
    }
    if new.spec.managed_by != old.spec.managed_by {
        errs.push(FieldError::invalid(
            "spec.managedBy",
            &new.spec.managed_by,
            "field is immutable",
        ));
    }
    errs
}

/// Copy the pod template fields Kueue may change of a suspended JobSet from `old` into `new`.
fn allow_kueue_mutations(new: &mut ReplicatedJob, old: &ReplicatedJob) {
    let old_pod = old.template.spec.as_ref().map(|j| &j.template);
    let old_meta = old_pod.and_then(|p| p.metadata.as_ref());
    let old_spec = old_pod.and_then(|p| p.spec.as_ref());
    let pod = &mut new.template.spec.get_or_insert_with(JobSpec::default).template;
    let meta = pod.metadata.get_or_insert_with(ObjectMeta::default);
    meta.annotations = old_meta.and_then(|m| m.annotations.clone());
    meta.labels = old_meta.and_then(|m| m.labels.clone());
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    spec.node_selector = old_spec.and_then(|s| s.node_selector.clone());
    spec.tolerations = old_spec.and_then(|s| s.tolerations.clone());
    spec.scheduling_gates = old_spec.and_then(|s| s.scheduling_gates.clone());
}

/// apimachinery's `Semantic.DeepEqual` as far as the JSON form tells: unset, null, empty lists and empty
/// objects are all equal.
fn semantically_equal(a: &[ReplicatedJob], b: &[ReplicatedJob]) -> bool {
    let norm = |v: &[ReplicatedJob]| serde_json::to_value(v).ok().and_then(prune);
    norm(a) == norm(b)
}

/// `v` without nulls, empty lists and empty objects (recursively); `None` when nothing is left.
fn prune(v: Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.into_iter().map(|i| prune(i).unwrap_or(Value::Null)).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(map) => {
            let map: serde_json::Map<String, Value> =
                map.into_iter().filter_map(|(k, v)| prune(v).map(|v| (k, v))).collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        other => Some(other),
    }
}
