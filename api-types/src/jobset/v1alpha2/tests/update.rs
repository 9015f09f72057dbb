//! `TestValidateUpdate`.

use k8s_openapi::api::core::v1::PodSchedulingGate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};

use super::*;
use crate::jobset::v1alpha2::JobSetStatus;
use crate::jobset::v1alpha2::validation::{Features, validate_update};

const IMMUTABLE: &str = "spec.replicatedJobs: Invalid value: ";
const ELASTIC: Features = Features {
    in_place_restart: false,
    restart_job: false,
    elastic_jobset: true,
};

/// A replicated job with only a Job spec (no pod template), as the update cases write them.
fn bare(name: &str, replicas: i32, f: impl FnOnce(&mut JobSpec)) -> ReplicatedJob {
    let mut r = rj(name, replicas);
    let mut job = JobSpec::default();
    f(&mut job);
    r.template.spec = Some(job);
    r
}

fn js(suspend: Option<bool>, rjobs: Vec<ReplicatedJob>) -> JobSet {
    let mut js = JobSet::new("js", JobSetSpec::default());
    js.spec.suspend = suspend;
    js.spec.replicated_jobs = rjobs;
    js
}

/// Upstream's `validReplicatedJobs`.
fn valid_rjobs() -> Vec<ReplicatedJob> {
    (0..2)
        .map(|i| {
            bare(&format!("test-jobset-replicated-job-{i}"), 1, |j| {
                j.parallelism = Some(1)
            })
        })
        .collect()
}

#[track_caller]
fn check(old: &JobSet, new: &JobSet, features: Features, want: &[&str]) {
    assert_errors(&validate_update(old, new, &features), want);
}

/// "update suspend"
#[test]
fn update_suspend() {
    check(
        &js(Some(true), valid_rjobs()),
        &js(None, valid_rjobs()),
        Features::default(),
        &[],
    );
}

/// "update labels"
#[test]
fn update_labels() {
    let mut new = js(None, valid_rjobs());
    new.metadata.labels = Some([("hello".to_string(), "world".to_string())].into());
    check(&js(Some(true), valid_rjobs()), &new, Features::default(), &[]);
}

/// "managedBy is immutable"
#[test]
fn managed_by_is_immutable() {
    let (mut old, mut new) = (js(None, valid_rjobs()), js(None, valid_rjobs()));
    old.spec.managed_by = Some("example.com/old".to_string());
    new.spec.managed_by = Some("example.com/new".to_string());
    let want = ["spec.managedBy: Invalid value: \"example.com/new\": field is immutable"];
    check(&old, &new, Features::default(), &want);
}

/// `test-jobset-replicated-job-0`, 2 replicas, parallelism 2, its pod template changed by `f`.
fn pod_changed(f: impl FnOnce(&mut PodTemplateSpec)) -> Vec<ReplicatedJob> {
    vec![bare("test-jobset-replicated-job-0", 2, |j| {
        j.parallelism = Some(2);
        f(&mut j.template);
    })]
}

fn annotated(t: &mut PodTemplateSpec) {
    t.metadata = Some(ObjectMeta {
        annotations: Some([("key".to_string(), "value".to_string())].into()),
        ..Default::default()
    });
}

fn gated(t: &mut PodTemplateSpec) {
    t.spec.get_or_insert_with(PodSpec::default).scheduling_gates = Some(vec![PodSchedulingGate {
        name: "example.com/gate".to_string(),
    }]);
}

/// "replicated job pod template can be updated for suspended jobset"
#[test]
fn replicated_job_pod_template_can_be_updated_for_suspended_jobset() {
    let old = js(Some(true), pod_changed(|_| {}));
    check(&old, &js(None, pod_changed(annotated)), Features::default(), &[]);
}

/// "replicated job pod template can be updated for jobset getting suspended"
#[test]
fn replicated_job_pod_template_can_be_updated_for_jobset_getting_suspended() {
    let old = js(Some(false), pod_changed(|_| {}));
    check(&old, &js(Some(true), pod_changed(annotated)), Features::default(), &[]);
}

/// "replicated job pod template cannot be updated for running jobset"
#[test]
fn replicated_job_pod_template_cannot_be_updated_for_running_jobset() {
    let old = js(None, pod_changed(|_| {}));
    let want = [IMMUTABLE, "field is immutable"];
    check(&old, &js(None, pod_changed(annotated)), Features::default(), &want);
}

/// "schedulingGates for pod template can be updated for suspended JobSet"
#[test]
fn scheduling_gates_for_pod_template_can_be_updated_for_suspended_jobset() {
    let old = js(Some(true), pod_changed(|_| {}));
    check(&old, &js(None, pod_changed(gated)), Features::default(), &[]);
}

/// "schedulingGates for pod template cannot be updated for unsuspended JobSet"
#[test]
fn scheduling_gates_for_pod_template_cannot_be_updated_for_unsuspended_jobset() {
    let old = js(None, pod_changed(|_| {}));
    check(&old, &js(None, pod_changed(gated)), Features::default(), &[IMMUTABLE]);
}

/// "replicated job name cannot be updated"
#[test]
fn replicated_job_name_cannot_be_updated() {
    let old = js(Some(true), pod_changed(|_| {}));
    let new = js(
        None,
        vec![bare("new-replicated-job-name", 2, |j| j.parallelism = Some(2))],
    );
    check(&old, &new, Features::default(), &[IMMUTABLE]);
}

/// One Indexed `test-jobset-replicated-job-0` with the given replicas, parallelism and completions.
fn scaled(replicas: i32, parallelism: Option<i32>, completions: Option<i32>) -> Vec<ReplicatedJob> {
    vec![bare("test-jobset-replicated-job-0", replicas, |j| {
        j.completion_mode = Some("Indexed".to_string());
        j.parallelism = parallelism;
        j.completions = completions;
    })]
}

/// "valid scaling of parallelism and completions"
#[test]
fn valid_scaling_of_parallelism_and_completions() {
    let old = js(None, scaled(2, Some(2), Some(2)));
    check(&old, &js(None, scaled(2, Some(8), Some(8))), ELASTIC, &[]);
}

/// "invalid scaling of parallelism to < 1"
#[test]
fn invalid_scaling_of_parallelism_to_less_than_1() {
    let old = js(None, scaled(1, Some(2), None));
    let want = ["spec.replicatedJobs[0].template.spec.parallelism: Invalid value: 0: parallelism must be >= 1"];
    check(&old, &js(None, scaled(1, Some(0), None)), ELASTIC, &want);
}

/// "invalid scaling of completions to < 1"
#[test]
fn invalid_scaling_of_completions_to_less_than_1() {
    let old = js(None, scaled(1, None, Some(2)));
    let want = ["spec.replicatedJobs[0].template.spec.completions: Invalid value: 0: completions must be >= 1"];
    check(&old, &js(None, scaled(1, None, Some(0))), ELASTIC, &want);
}

fn finished(mut js: JobSet, type_: &str) -> JobSet {
    js.status = Some(JobSetStatus {
        conditions: vec![Condition {
            type_: type_.to_string(),
            status: "True".to_string(),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            message: String::new(),
            observed_generation: None,
            reason: String::new(),
        }],
        ..Default::default()
    });
    js
}

const TERMINAL: &str = "spec.replicatedJobs[0].template.spec: Forbidden: Cannot mutate parallelism or completions when JobSet is in a terminal state (Completed or Failed)";

/// "cannot scale parallelism if JobSet is Completed"
#[test]
fn cannot_scale_parallelism_if_jobset_is_completed() {
    let old = finished(js(None, scaled(1, Some(2), None)), "Completed");
    check(&old, &js(None, scaled(1, Some(4), None)), ELASTIC, &[TERMINAL]);
}

/// "cannot scale completions if JobSet is Failed"
#[test]
fn cannot_scale_completions_if_jobset_is_failed() {
    let old = finished(js(None, scaled(1, None, Some(2))), "Failed");
    check(&old, &js(None, scaled(1, None, Some(4))), ELASTIC, &[TERMINAL]);
}

/// "immutability still enforced for other fields during valid scale"
#[test]
fn immutability_still_enforced_for_other_fields_during_valid_scale() {
    let old = js(None, scaled(1, Some(2), None));
    check(&old, &js(None, scaled(2, Some(4), None)), ELASTIC, &[IMMUTABLE]);
}

/// "invalid scaling of parallelism and completions when feature gate is disabled"
#[test]
fn invalid_scaling_of_parallelism_and_completions_when_feature_gate_is_disabled() {
    let job = |n| {
        vec![bare("test-jobset-replicated-job-0", 2, |j| {
            j.parallelism = Some(n);
            j.completions = Some(n);
        })]
    };
    check(&js(None, job(2)), &js(None, job(8)), Features::default(), &[IMMUTABLE]);
}

/// "invalid scaling: parallelism and completions must be equal"
#[test]
fn invalid_scaling_parallelism_and_completions_must_be_equal() {
    let old = js(None, scaled(2, Some(2), Some(2)));
    let want = [
        "spec.replicatedJobs[0].template.spec.completions: Invalid value: 5: completions must be equal to parallelism for Elastic Indexed Jobs",
    ];
    check(&old, &js(None, scaled(2, Some(4), Some(5))), ELASTIC, &want);
}

/// "adding a new ReplicatedJob while suspended does not panic and is rejected"
#[test]
fn adding_a_new_replicated_job_while_suspended_does_not_panic_and_is_rejected() {
    let job = |name| bare(name, 1, |j| j.parallelism = Some(2));
    let old = js(Some(true), vec![job("job-a")]);
    let new = js(Some(true), vec![job("job-a"), job("job-b")]);
    check(&old, &new, Features::default(), &[IMMUTABLE]);
}

/// "reordering ReplicatedJobs evaluates ElasticJobSet scaling correctly by name"
#[test]
fn reordering_replicated_jobs_evaluates_elastic_jobset_scaling_correctly_by_name() {
    let job = |name, n| {
        bare(name, 1, |j| {
            j.parallelism = Some(n);
            j.completions = Some(n);
        })
    };
    let old = js(None, vec![job("job-a", 2), job("job-b", 2)]);
    let new = js(None, vec![job("job-b", 2), job("job-a", 4)]);
    let errs = validate_update(&old, &new, &ELASTIC);
    assert_errors(&errs, &[IMMUTABLE]);
    assert_eq!(errs.len(), 1, "no elastic scaling errors: {errs:?}");
}

/// "invalid scaling: immutability enforced for NonIndexed jobs even when ElasticJobSet is enabled"
#[test]
fn invalid_scaling_immutability_enforced_for_non_indexed_jobs_even_when_elastic_jobset_is_enabled() {
    let job = |n| {
        vec![bare("test-jobset-replicated-job-0", 1, |j| {
            j.completion_mode = Some("NonIndexed".to_string());
            j.parallelism = Some(n);
            j.completions = Some(n);
        })]
    };
    check(&js(None, job(2)), &js(None, job(4)), ELASTIC, &[IMMUTABLE]);
}
