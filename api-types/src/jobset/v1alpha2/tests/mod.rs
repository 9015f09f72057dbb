//! Upstream's webhook test tables (`pkg/webhooks/jobset_webhook_test.go` at kubernetes-sigs/jobset
//! `08dfbdfd`), one `#[test]` per upstream case, named after it (its name quoted in the doc comment), and
//! the CRD's CEL rules.

use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::validation::FieldError;
use super::{JobSet, JobSetSpec, ReplicatedJob, SuccessPolicy};

mod cel;
mod create;
mod defaulting;
mod update;

/// A container named `name` with image `bash:latest`, mounting the named volumes.
fn container(name: &str, mounts: &[&str]) -> Container {
    Container {
        name: name.to_string(),
        image: Some("bash:latest".to_string()),
        volume_mounts: (!mounts.is_empty()).then(|| {
            mounts
                .iter()
                .map(|m| VolumeMount {
                    name: (*m).to_string(),
                    mount_path: "/test/path".to_string(),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    }
}

/// Upstream's `validPodTemplateSpec`: one container `test`, image `bash:latest`.
fn pod_template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![container("test", &[])],
            ..Default::default()
        }),
    }
}

/// A replicated job as upstream's cases write them: group `default`, the valid pod template.
fn rj(name: &str, replicas: i32) -> ReplicatedJob {
    ReplicatedJob {
        name: name.to_string(),
        group_name: "default".to_string(),
        replicas,
        template: JobTemplateSpec {
            metadata: None,
            spec: Some(JobSpec {
                template: pod_template(),
                ..Default::default()
            }),
        },
        depends_on: Vec::new(),
    }
}

/// `r` with its Job spec changed by `f`.
fn with_job(mut r: ReplicatedJob, f: impl FnOnce(&mut JobSpec)) -> ReplicatedJob {
    f(r.template.spec.get_or_insert_with(JobSpec::default));
    r
}

/// `r` as an Indexed Job with the given completions and parallelism.
fn indexed(r: ReplicatedJob, completions: Option<i32>, parallelism: Option<i32>) -> ReplicatedJob {
    with_job(r, |j| {
        j.completion_mode = Some("Indexed".to_string());
        j.completions = completions;
        j.parallelism = parallelism;
    })
}

/// A JobSet named `name` with the replicated jobs and success policy `All`.
fn jobset(name: &str, rjobs: Vec<ReplicatedJob>) -> JobSet {
    let mut js = JobSet::new(
        name,
        JobSetSpec {
            replicated_jobs: rjobs,
            success_policy: Some(SuccessPolicy::default()),
            ..Default::default()
        },
    );
    if name.is_empty() {
        js.metadata = ObjectMeta::default();
    }
    js
}

/// Upstream's check: every wanted message is in the errors (more are fine); none wanted means none.
#[track_caller]
fn assert_errors(errs: &[FieldError], want: &[&str]) {
    let all = errs.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    if want.is_empty() {
        assert!(errs.is_empty(), "unexpected errors:\n{all}");
    }
    for w in want {
        assert!(all.contains(w), "missing {w:?} in:\n{all}");
    }
}
