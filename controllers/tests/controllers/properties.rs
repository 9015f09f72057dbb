//! Property tests of the controllers' pure decisions at the limits of every value a user can set: i32 and
//! i64 extremes, zero, negatives, far-past and far-future times, hostile `completedIndexes`. No input may
//! panic, and the work one reconcile asks for stays bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use k8s_openapi::api::batch::v1::{Job, JobSpec, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kwas_api_types::jobset::{JobSet, JobSetStatus, MAX_CHILD_JOBS, PodGroupManagement};
use kwas_controllers::job::plan::{
    Indexes, JobConfig, MAX_POD_CREATE_PER_SYNC, SchedulingDecision, flush, plan, track,
};
use kwas_controllers::job::pods::{PodState, PodView};
use kwas_controllers::jobset::compile::desired_workload;
use kwas_controllers::jobset::decide::{Observed, Step, decide};
use proptest::prelude::*;

fn i32s() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(i32::MIN),
        Just(i32::MAX),
        Just(i32::MAX - 1),
        Just(0),
        Just(-1),
        Just(1),
        0..20i32,
        any::<i32>(),
    ]
}

fn i64s() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::MIN),
        Just(i64::MAX),
        Just(0),
        Just(-1),
        Just(1),
        0..100_000i64,
        any::<i64>(),
    ]
}

fn times() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        Just(Timestamp::MIN),
        Just(Timestamp::MAX),
        Just(Timestamp::UNIX_EPOCH),
        (0..4_000_000_000i64).prop_map(|s| Timestamp::from_second(s).unwrap()),
    ]
}

fn index_lists() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("0-2147483647".to_string()),
        Just("2147483647".to_string()),
        Just("-5--1,3-1,a-b,,".to_string()),
        "[0-9,-]{0,40}",
        proptest::collection::vec((i32s(), i32s()), 0..6).prop_map(|v| v
            .iter()
            .map(|(a, b)| format!("{a}-{b}"))
            .collect::<Vec<_>>()
            .join(",")),
    ]
}

fn pod_states() -> impl Strategy<Value = PodState> {
    prop_oneof![
        Just(PodState::Active),
        Just(PodState::Terminating),
        Just(PodState::Succeeded),
        Just(PodState::Failed),
    ]
}

prop_compose! {
    fn pods()(v in proptest::collection::vec(
        (pod_states(), any::<bool>(), proptest::option::of(i32s()), proptest::option::of(times()), proptest::option::of(times())),
        0..12,
    )) -> Vec<PodView> {
        v.into_iter()
            .enumerate()
            .map(|(n, (state, tracked, index, created, finished))| PodView {
                name: format!("p{n}"),
                uid: format!("u{n}"),
                state,
                tracked,
                ready: state == PodState::Active,
                index,
                created,
                finished,
                pod_group: None,
                scheduled: n % 2 == 0,
            })
            .collect()
    }
}

fn job_specs() -> BoxedStrategy<JobSpec> {
    (
        proptest::option::of(i32s()),
        proptest::option::of(i32s()),
        any::<bool>(),
        proptest::option::of(i32s()),
        proptest::option::of(i32s()),
        proptest::option::of(i32s()),
        proptest::option::of(i64s()),
        proptest::option::of(i32s()),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(parallelism, completions, indexed, backoff_limit, per_index, max_failed, deadline, ttl, suspend)| {
                JobSpec {
                    parallelism,
                    completions,
                    completion_mode: Some(if indexed { "Indexed" } else { "NonIndexed" }.into()),
                    backoff_limit,
                    backoff_limit_per_index: per_index,
                    max_failed_indexes: max_failed,
                    active_deadline_seconds: deadline,
                    ttl_seconds_after_finished: ttl,
                    suspend,
                    ..Default::default()
                }
            },
        )
        .boxed()
}

fn job_statuses() -> BoxedStrategy<JobStatus> {
    (
        proptest::option::of(times()),
        proptest::option::of(times()),
        proptest::option::of(i32s()),
        proptest::option::of(i32s()),
        proptest::option::of(i32s()),
        proptest::option::of(index_lists()),
        proptest::option::of(index_lists()),
    )
        .prop_map(
            |(start, completion, succeeded, failed, active, completed_indexes, failed_indexes)| JobStatus {
                start_time: start.map(Time),
                completion_time: completion.map(Time),
                succeeded,
                failed,
                active,
                completed_indexes,
                failed_indexes,
                ..Default::default()
            },
        )
        .boxed()
}

fn jobs() -> BoxedStrategy<Job> {
    (job_specs(), job_statuses())
        .prop_map(|(spec, status)| {
            let mut job = Job::default();
            job.metadata.name = Some("j".into());
            job.metadata.namespace = Some("ns".into());
            job.metadata.uid = Some("uid".into());
            job.spec = Some(spec);
            job.status = Some(status);
            job
        })
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The Job controller's whole pure pipeline (track, flush, plan) never panics, creates at most
    /// `MAX_POD_CREATE_PER_SYNC` pods per sync, only valid indexes, and requeues after a finite delay.
    #[test]
    fn job_plan_is_total_and_bounded(job in jobs(), pods in pods(), now in times(), group in any::<bool>()) {
        let tracking = track(&job, &pods);
        let mut status = tracking.status;
        flush(&job, &mut status, &HashSet::new());
        let decision = if group { SchedulingDecision::Group(Some("pg".into())) } else { SchedulingDecision::Group(None) };
        let p = plan(&job, status, &pods, &decision, now, &JobConfig::default());
        prop_assert!(p.create.len() <= MAX_POD_CREATE_PER_SYNC, "{} pods", p.create.len());
        let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(1);
        for index in p.create.iter().flatten() {
            prop_assert!(*index >= 0 && *index < completions.max(1), "index {index}");
        }
        if let Some(after) = p.requeue_after {
            prop_assert!(after <= std::time::Duration::from_secs(u64::MAX / 2));
        }
        // Counters that were valid stay valid (saturating, never wrapping).
        let before = job.status.clone().unwrap_or_default();
        for (was, now) in [(before.succeeded, p.status.succeeded), (before.failed, p.status.failed)] {
            if was.unwrap_or(0) >= 0 {
                prop_assert!(now.unwrap_or(0) >= 0, "{was:?} -> {now:?}");
            }
        }
    }

    /// `completedIndexes` parsing is bounded by the number of intervals, whatever the values.
    #[test]
    fn indexes_parse_any_list(list in index_lists(), completions in i32s(), extra in proptest::collection::vec(i32s().prop_map(|i| i.max(0)), 0..8)) {
        let mut set = Indexes::parse(&list, completions);
        for i in extra {
            set.insert(i);
            prop_assert!(set.contains(i));
        }
        let text = set.to_string();
        prop_assert_eq!(Indexes::parse(&text, i32::MAX).len(), set.len() - u64::from(set.contains(i32::MAX)));
        let missing: Vec<i32> = set.missing(completions).take(5).collect();
        for i in missing {
            prop_assert!(!set.contains(i) && i >= 0 && i < completions);
        }
    }
}

fn jobset(replicas: &[i32], parallelism: i32, max_restarts: i32, restarts: i32, suspend: bool) -> JobSet {
    let replicated: Vec<serde_json::Value> = replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            serde_json::json!({"name": format!("r{i}"), "replicas": r, "template": {"spec": {
                "parallelism": parallelism,
                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}})
        })
        .collect();
    let mut js: JobSet = serde_json::from_value(serde_json::json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns", "uid": "js-uid", "generation": 1},
        "spec": {
            "suspend": suspend,
            "failurePolicy": {"maxRestarts": max_restarts},
            "scheduling": {"schedulingPolicy": {"gang": {"minGroupCount": 1}}},
            "replicatedJobs": replicated,
        }
    }))
    .unwrap();
    js.status = Some(JobSetStatus {
        restarts,
        ..Default::default()
    });
    js
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The JobSet controller's decision never panics and never asks for more than `MAX_CHILD_JOBS` Jobs,
    /// whatever `replicas` (up to i32::MAX in each of 8 replicated jobs), parallelism and restart counts say.
    #[test]
    fn jobset_decide_is_total_and_bounded(
        replicas in proptest::collection::vec(prop_oneof![Just(i32::MAX), Just(0), Just(-1), 0..4i32, Just(MAX_CHILD_JOBS), Just(MAX_CHILD_JOBS + 1)], 1..8),
        parallelism in i32s(),
        max_restarts in i32s(),
        restarts in i32s(),
        suspend in any::<bool>(),
        delegated in any::<bool>(),
        composite_served in any::<bool>(),
        now in times(),
    ) {
        let js = jobset(&replicas, parallelism, max_restarts, restarts, suspend);
        let total: i64 = replicas.iter().map(|r| i64::from((*r).max(0))).sum();
        let workload = desired_workload(&js);
        if total > i64::from(MAX_CHILD_JOBS) || replicas.iter().any(|r| *r < 0) {
            prop_assert!(workload.is_err(), "{total} child Jobs compiled");
        }
        let workloads: Vec<_> = workload.into_iter().collect();
        let observed = Observed {
            js: &js,
            workloads: &workloads,
            jobs: &[],
            root: None,
            child_groups: &[],
            management: if delegated { PodGroupManagement::Delegated } else { PodGroupManagement::Centralized },
            job_managed_by: None,
            composite_served,
            now,
        };
        let d = decide(&observed);
        let creates = d.steps.iter().filter(|s| matches!(s, Step::CreateJob(_))).count();
        prop_assert!(creates <= MAX_CHILD_JOBS as usize);
        let children = kwas_controllers::jobset::children::children(&js);
        prop_assert!(children.len() <= MAX_CHILD_JOBS as usize);
    }
}

#[test]
fn far_future_deadlines_and_ttls_saturate() {
    let mut job = Job::default();
    job.metadata.name = Some("j".into());
    job.metadata.uid = Some("uid".into());
    job.spec = Some(JobSpec {
        active_deadline_seconds: Some(i64::MAX),
        ttl_seconds_after_finished: Some(i32::MAX),
        parallelism: Some(i32::MAX),
        ..Default::default()
    });
    job.status = Some(JobStatus {
        start_time: Some(Time(Timestamp::MAX)),
        ..Default::default()
    });
    let now = Timestamp::MAX - SignedDuration::from_secs(1);
    let p = plan(
        &job,
        job.status.clone().unwrap(),
        &[],
        &SchedulingDecision::Group(None),
        now,
        &JobConfig::default(),
    );
    assert!(p.create.len() <= MAX_POD_CREATE_PER_SYNC);
}
