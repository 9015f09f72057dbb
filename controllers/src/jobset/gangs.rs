//! A kwas extension to the JobSet's failure policy, opt-in per JobSet: a child Job whose gang was
//! scheduled once and has stayed below its `minCount` (the scheduler's `PodGroupSatisfied=False`: a
//! member's node was lost, a member was evicted or rejected by its kubelet) for the seconds the annotation
//! `kwas.dev/unsatisfied-gang-failure-seconds` gives counts as failed, with reason `PodGroupBelowMinCount`.
//! The JobSet's failure policy then decides as for any failed Job: no policy fails the JobSet, a rule
//! without `onJobFailureReasons` that matches it (by replicated job or message pattern) applies its action,
//! else the default restarts the JobSet (each attempt gets fresh groups). Without the annotation nothing
//! changes; upstream leaves live gang health to its KEP-6413 drafts.
//!
//! The failure exists only in the JobSet's decision (a `Failed` condition on a copy of the Job, dated when
//! the grace period ended); the Job itself is not touched.

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kwas_api_types::jobset::JobSet;
use kwas_api_types::names::annotations::UNSATISFIED_GANG_FAILURE_SECONDS;
use kwas_api_types::names::conditions as job_conditions;
use kwas_api_types::names::conditions::{
    POD_GROUP_INITIALLY_SCHEDULED, POD_GROUP_SATISFIED, REASON_POD_GROUP_BELOW_MIN_COUNT,
};

use super::policy::job_finished;

/// The grace period the JobSet opts into, in seconds (at most a day; a value that does not parse as a
/// non-negative integer opts into nothing).
pub fn grace_seconds(js: &JobSet) -> Option<i64> {
    js.annotations()
        .get(UNSATISFIED_GANG_FAILURE_SECONDS)?
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|s| *s >= 0)
        .map(|s| s.min(86_400))
}

fn condition<'a>(
    group: &'a PodGroup,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    group
        .status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// The child Jobs with the failures the opt-in attributes to them, and, when a gang is below its
/// `minCount` but its grace period has not ended, the seconds until the first one ends (reconcile then).
pub fn with_broken_gangs(js: &JobSet, jobs: &[Job], groups: &[PodGroup], now: Timestamp) -> (Vec<Job>, Option<i64>) {
    let Some(grace) = grace_seconds(js) else {
        return (jobs.to_vec(), None);
    };
    let mut next: Option<i64> = None;
    let out = jobs
        .iter()
        .map(|job| {
            if job_finished(job).is_some() {
                return job.clone();
            }
            let labels = job.labels();
            let Some(rjob) = labels.get(kwas_api_types::jobset::v1alpha2::REPLICATED_JOB_NAME_KEY) else {
                return job.clone();
            };
            // The child's PodGroup (both management strategies name it so).
            let group_name: String = workloadbuilder::job::delegated_pod_group_name(&job.name_any(), rjob).into();
            let Some(group) = groups.iter().find(|g| {
                g.metadata.name.as_deref() == Some(group_name.as_str()) && g.metadata.deletion_timestamp.is_none()
            }) else {
                return job.clone();
            };
            let scheduled_once = condition(group, POD_GROUP_INITIALLY_SCHEDULED).is_some_and(|c| c.status == "True");
            let Some(unsatisfied) = condition(group, POD_GROUP_SATISFIED).filter(|c| c.status == "False") else {
                return job.clone();
            };
            if !scheduled_once {
                return job.clone();
            }
            let since = unsatisfied.last_transition_time.0;
            let ends = since.as_second().saturating_add(grace);
            let left = ends.saturating_sub(now.as_second());
            if left > 0 {
                next = Some(next.map_or(left, |n| n.min(left)));
                return job.clone();
            }
            let mut failed = job.clone();
            let status = failed.status.get_or_insert_with(JobStatus::default);
            status.conditions.get_or_insert_with(Vec::new).push(JobCondition {
                type_: job_conditions::JOB_FAILED.into(),
                status: "True".into(),
                reason: Some(REASON_POD_GROUP_BELOW_MIN_COUNT.into()),
                message: Some(format!(
                    "the gang of PodGroup {group_name} has been below its minCount for more than {grace}s ({})",
                    unsatisfied.message
                )),
                last_transition_time: Some(Time(Timestamp::from_second(ends).unwrap_or(now))),
                last_probe_time: None,
            });
            failed
        })
        .collect();
    (out, next)
}

#[cfg(test)]
mod tests {
    use super::super::children::{Child, child_group_name};
    use super::*;
    use k8s_openapi::api::scheduling::v1alpha3::PodGroupStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    fn js(annotation: Option<&str>) -> JobSet {
        let mut js = JobSet::new("train", Default::default());
        if let Some(a) = annotation {
            js.metadata.annotations = Some([(UNSATISFIED_GANG_FAILURE_SECONDS.to_string(), a.to_string())].into());
        }
        js
    }

    fn job() -> Job {
        let mut job = Job::default();
        job.metadata.name = Some("train-workers-0".into());
        job.metadata.labels = Some(
            [(
                kwas_api_types::jobset::v1alpha2::REPLICATED_JOB_NAME_KEY.to_string(),
                "workers".to_string(),
            )]
            .into(),
        );
        job
    }

    fn group(initially: &str, satisfied: &str, since: i64) -> PodGroup {
        let child = Child {
            replicated_job: "workers".into(),
            index: 0,
            name: "train-workers-0".into(),
        };
        let c = |t: &str, s: &str| Condition {
            type_: t.into(),
            status: s.into(),
            reason: "R".into(),
            message: "1 of 2 members scheduled".into(),
            last_transition_time: Time(Timestamp::from_second(since).unwrap()),
            observed_generation: None,
        };
        let mut g = PodGroup::default();
        g.metadata.name = Some(child_group_name(&child));
        g.status = Some(PodGroupStatus {
            conditions: Some(vec![
                c(POD_GROUP_INITIALLY_SCHEDULED, initially),
                c(POD_GROUP_SATISFIED, satisfied),
            ]),
            ..Default::default()
        });
        g
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn only_an_opted_in_jobset_counts_a_gang_broken_past_its_grace_period_as_a_failure() {
        let jobs = [job()];
        let broken = [group("True", "False", 1000)];
        // Not opted in, or a value that is not a number of seconds: nothing.
        for annotation in [None, Some("soon"), Some("-1")] {
            let (out, next) = with_broken_gangs(&js(annotation), &jobs, &broken, at(5000));
            assert!(job_finished(&out[0]).is_none() && next.is_none(), "{annotation:?}");
        }
        let js = js(Some("60"));
        // Within the grace period: reconcile when it ends.
        let (out, next) = with_broken_gangs(&js, &jobs, &broken, at(1030));
        assert!(job_finished(&out[0]).is_none());
        assert_eq!(next, Some(30));
        // Past it: failed, dated when the grace period ended.
        let (out, next) = with_broken_gangs(&js, &jobs, &broken, at(1060));
        let c = job_finished(&out[0]).unwrap();
        assert_eq!(
            (c.type_.as_str(), c.reason.as_deref()),
            ("Failed", Some("PodGroupBelowMinCount"))
        );
        assert_eq!(c.last_transition_time.as_ref().unwrap().0, at(1060));
        assert!(c.message.as_deref().unwrap().contains("1 of 2 members scheduled"));
        assert_eq!(next, None);
        // A gang never scheduled yet (waiting for room), a satisfied one, a finished Job: nothing.
        for g in [group("False", "False", 0), group("True", "True", 0)] {
            let (out, _) = with_broken_gangs(&js, &jobs, &[g], at(5000));
            assert!(job_finished(&out[0]).is_none());
        }
        let mut done = job();
        done.status = Some(JobStatus {
            conditions: Some(vec![JobCondition {
                type_: "Complete".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let (out, _) = with_broken_gangs(&js, &[done], &broken, at(5000));
        assert_eq!(job_finished(&out[0]).unwrap().type_, "Complete");
    }
}
