//! The JobSet controller's decisions for one reconcile, as a pure function of what it observed: the
//! ordered [`Step`]s to carry out (creations, deletions, patches, events, the status) and what to do
//! afterwards. The reconcile in [`super`] only dereferences (reads the JobSet, its Workloads, child Jobs
//! and groups) and applies the steps; every choice is here and testable without a cluster.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kwas_api_types::jobset::{JobSet, JobSetStatus, PodGroupManagement, conditions};
use kwas_api_types::names::JOBSET_CONTROLLER_NAME;

use super::children::{
    ChildWiring, child_group_name, children, desired_child_group, desired_child_group_under, desired_job,
    desired_root_group, root_group_name,
};
use super::compile::{desired_fallback_workload, desired_workload};
use super::policy;
use crate::job::plan::PlannedEvent;
use workloadbuilder::sync::{SyncInput, SyncPlan, plan_sync};

/// What a reconcile observed.
#[derive(Debug)]
pub struct Observed<'a> {
    /// The JobSet, freshly read.
    pub js: &'a JobSet,
    /// The Workloads that reference the JobSet.
    pub workloads: &'a [Workload],
    /// The JobSet's child Jobs (all attempts).
    pub jobs: &'a [Job],
    /// The root CompositePodGroup, when it exists.
    pub root: Option<&'a CompositePodGroup>,
    /// The PodGroups of the Workload (centralized management re-syncs their `minCount`).
    pub child_groups: &'a [PodGroup],
    /// Centralized or delegated PodGroups.
    pub management: PodGroupManagement,
    /// The `spec.managedBy` of child Jobs.
    pub job_managed_by: Option<String>,
    /// Whether the cluster serves CompositePodGroups. Without them a new JobSet compiles flat
    /// ([`super::compile::desired_fallback_workload`]); a JobSet whose Workload is flat stays flat.
    pub composite_served: bool,
    /// The time.
    pub now: Timestamp,
}

/// One thing the reconcile does, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Create the Workload; the reconcile then decides again with it.
    CreateWorkload(Box<Workload>),
    /// Write a leaf template's gang `minCount` into the Workload.
    SyncWorkloadMinCount {
        /// The Workload.
        workload: Box<Workload>,
        /// The template.
        template: String,
        /// Its gang size.
        count: i32,
    },
    /// Delete a child Job (foreground).
    DeleteJob(String),
    /// Delete a child's PodGroup.
    DeletePodGroup(String),
    /// Delete the root CompositePodGroup.
    DeleteRootGroup(String),
    /// Create the root CompositePodGroup.
    CreateRootGroup(Box<CompositePodGroup>),
    /// Write a child PodGroup's gang `minCount`.
    SyncPodGroupMinCount {
        /// The group.
        group: Box<PodGroup>,
        /// Its gang size.
        count: i32,
    },
    /// Create a child's PodGroup (centralized management).
    CreatePodGroup(Box<PodGroup>),
    /// Create a child Job (or find it).
    CreateJob(Box<Job>),
    /// Set a child Job's `spec.suspend`.
    SetSuspend(String, bool),
    /// Record an event on the JobSet.
    Event(PlannedEvent),
    /// Delete the JobSet (foreground): its `ttlSecondsAfterFinished` expired.
    DeleteJobSet,
    /// Write the status.
    PatchStatus(Box<JobSetStatus>),
    /// The JobSet is invalid: mark it `Failed` (once) with this message and a Warning event, do nothing
    /// else, and wait for a change.
    Fail(String),
}

/// What the reconcile does after its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Wait for a change.
    AwaitChange,
    /// Reconcile again after this long.
    Requeue(Duration),
}

/// The decision of one reconcile.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Afterwards.
    pub then: Then,
}

impl Decision {
    fn done(steps: Vec<Step>, then: Then) -> Self {
        Decision { steps, then }
    }

    fn fail(message: String) -> Self {
        Decision::done(vec![Step::Fail(message)], Then::AwaitChange)
    }
}

/// A requeue delay of `seconds`, at least one second and at most a day (TTLs and grace periods are user
/// values).
pub fn after_seconds(seconds: i64) -> Duration {
    Duration::from_secs(seconds.clamp(1, 86_400).unsigned_abs())
}

/// Whether the JobSet has a terminal condition.
pub fn is_finished(js: &JobSet) -> bool {
    policy::job_set_finished(js)
}

fn is_terminal(status: &JobSetStatus) -> bool {
    policy::find(status, conditions::COMPLETED).is_some() || policy::find(status, conditions::FAILED).is_some()
}

/// Why the JobSet's current spec cannot be applied to its live Workload `live` (`None`: it can): the spec
/// does not compile, or (for a Workload this controller owns) the re-sync `plan` found that the compiled
/// Workload differs from the live one in more than what kube-apiserver lets change on a Workload (a gang
/// `minCount`), with its messages.
pub fn update_rejection(
    desired: &Result<Workload, workloadbuilder::FieldErrors>,
    live: &Workload,
    plan: &SyncPlan,
) -> Option<(&'static str, String)> {
    match desired {
        Err(errs) => Some((
            conditions::REASON_INVALID_SCHEDULING,
            format!("the edited scheduling configuration is not applied: {errs}"),
        )),
        Ok(_) => plan.workload_rejection().map(|errs| {
            (
                conditions::REASON_IMMUTABLE_FIELD,
                format!(
                    "the edit is not applied: Workload {} cannot change this way: {errs}",
                    live.name_any()
                ),
            )
        }),
    }
}

/// The decision for a rejected edit: the `SchedulingUpdateRejected` condition (with a Warning event when
/// it is new or says something new) and nothing else.
fn reject_update(js: &JobSet, now: Timestamp, reason: &str, message: &str) -> Decision {
    let mut status = js.status.clone().unwrap_or_default();
    let known = policy::find(&status, conditions::SCHEDULING_UPDATE_REJECTED)
        .is_some_and(|c| c.reason == reason && c.message == message);
    policy::set_condition(
        &mut status,
        conditions::SCHEDULING_UPDATE_REJECTED,
        "True",
        reason,
        message,
        now,
        js.metadata.generation,
    );
    let mut steps = Vec::new();
    if !known {
        steps.push(Step::Event(PlannedEvent::warning(
            kwas_api_types::names::events::SCHEDULING_UPDATE_REJECTED,
            message,
        )));
        steps.push(Step::PatchStatus(Box::new(status)));
    }
    Decision::done(steps, Then::AwaitChange)
}

/// Whether `workload` is flat: no CompositePodGroupTemplates, so its PodGroups have no parent.
pub fn is_flat(workload: &Workload) -> bool {
    workload
        .spec
        .composite_pod_group_templates
        .as_ref()
        .is_none_or(Vec::is_empty)
}

/// The `FlatScheduling` condition's message.
fn flat_message(refused: &[String]) -> String {
    let mut m = "the cluster does not serve scheduling.k8s.io compositepodgroups: each replicated job's Jobs are scheduled as gangs of their own, with no gang across the replicated jobs".to_string();
    if !refused.is_empty() {
        m.push_str("; not applied: ");
        m.push_str(&refused.join(", "));
    }
    m
}

/// Decides one reconcile of a JobSet that is not being deleted.
pub fn decide(o: &Observed<'_>) -> Decision {
    let js = o.js;
    let name = js.name_any();
    if is_finished(js) {
        // Clean up what a finished JobSet still runs; delete it when its TTL expired.
        let decided = policy::evaluate(js, o.jobs, o.now);
        let mut steps: Vec<Step> = decided.delete.into_iter().map(Step::DeleteJob).collect();
        if decided.delete_jobset {
            steps.push(Step::DeleteJobSet);
        }
        let then = match decided.requeue_after_seconds {
            Some(s) if !decided.delete_jobset => Then::Requeue(after_seconds(s)),
            _ => Then::AwaitChange,
        };
        return Decision::done(steps, then);
    }

    // 1. Compile: nested, or flat where CompositePodGroups are not served (a JobSet keeps the shape of
    // the Workload it has).
    let flat = match o.workloads {
        [one] => is_flat(one),
        _ => !o.composite_served,
    };
    let (desired, refused) = if flat {
        match desired_fallback_workload(js) {
            Ok((w, refused)) => (Ok(w), Some(refused)),
            Err(e) => (Err(e), Some(Vec::new())),
        }
    } else {
        (desired_workload(js), None)
    };

    // 2. The Workload (created first, then decided again), its gang sizes, then the root group.
    let workload = match (o.workloads, desired.as_ref()) {
        ([], Ok(desired)) => {
            return Decision::done(vec![Step::CreateWorkload(Box::new(desired.clone()))], Then::AwaitChange);
        }
        ([], Err(errs)) => return Decision::fail(format!("Failed to compile Workload for JobSet {name}: {errs}")),
        ([one], _) => one,
        (many, _) => {
            return Decision::fail(format!("found {} Workloads referencing JobSet {name}", many.len()));
        }
    };
    // An edit of a running JobSet is applied only when its Workload can take it (a gang minCount); any
    // other is reported and nothing else happens until it is reverted, so no running group is orphaned.
    let uid = js.metadata.uid.clone().unwrap_or_default();
    let owned = crate::sync::is_owned(&workload.metadata, JOBSET_CONTROLLER_NAME, &uid);
    // The re-sync plan: only a Workload this controller created for this JobSet is patched (another is used
    // as it is, its groups follow its templates); centralized PodGroups the JobSet controls follow too.
    let centralized = o.management == PodGroupManagement::Centralized;
    let groups: Vec<PodGroup> = o
        .child_groups
        .iter()
        .filter(|g| {
            centralized && g.metadata.deletion_timestamp.is_none() && crate::sync::is_controlled_by(&g.metadata, &uid)
        })
        .cloned()
        .collect();
    let sync = plan_sync(SyncInput {
        desired: if owned { desired.as_ref().ok() } else { None },
        live: workload,
        pod_groups: &groups,
        composite_pod_groups: &[],
    });
    if let Some((reason, message)) = update_rejection(&desired, workload, &sync) {
        return reject_update(js, o.now, reason, &message);
    }
    let mut steps = Vec::new();
    for t in &sync.workload {
        steps.push(Step::SyncWorkloadMinCount {
            workload: Box::new(workload.clone()),
            template: t.template.clone(),
            count: t.desired,
        });
    }
    // The opt-in gang health rule (kwas): a gang broken past its grace period counts as a failed Job.
    let (jobs, gang_wait) = super::gangs::with_broken_gangs(js, o.jobs, o.child_groups, o.now);
    let decided = policy::evaluate(js, &jobs, o.now);
    let mut status = decided.status.clone();
    status
        .conditions
        .retain(|c| c.type_ != conditions::SCHEDULING_UPDATE_REJECTED);
    status.workload_name = Some(workload.name_any());
    let root_name = (!flat).then(|| root_group_name(&workload.name_any()));
    status.composite_pod_group_name = root_name.clone();
    match &refused {
        Some(refused) => {
            let message = flat_message(refused);
            let known = policy::find(&status, conditions::FLAT_SCHEDULING)
                .is_some_and(|c| c.status == "True" && c.message == message);
            if !known {
                steps.push(Step::Event(PlannedEvent::warning(
                    conditions::FLAT_SCHEDULING,
                    &message,
                )));
            }
            policy::set_condition(
                &mut status,
                conditions::FLAT_SCHEDULING,
                "True",
                conditions::REASON_COMPOSITE_NOT_SERVED,
                &message,
                o.now,
                js.metadata.generation,
            );
        }
        None => status.conditions.retain(|c| c.type_ != conditions::FLAT_SCHEDULING),
    }
    steps.extend(decided.events.iter().cloned().map(Step::Event));
    if decided.restart_started {
        steps.push(Step::PatchStatus(Box::new(status)));
        return Decision::done(steps, Then::Requeue(Duration::ZERO));
    }
    if decided.restarting {
        // Tear down the previous attempt: its Jobs, their PodGroups and the root group.
        let all = children(js);
        for j in &decided.delete {
            steps.push(Step::DeleteJob(j.clone()));
            if let Some(c) = all.iter().find(|c| c.name == *j) {
                steps.push(Step::DeletePodGroup(child_group_name(c)));
            }
        }
        if let Some(root) = root_name {
            steps.push(Step::DeleteRootGroup(root));
        }
        steps.push(Step::PatchStatus(Box::new(status)));
        return Decision::done(steps, Then::Requeue(Duration::from_secs(1)));
    }
    steps.extend(decided.delete.iter().cloned().map(Step::DeleteJob));
    if decided.delete.is_empty() || !is_terminal(&status) {
        // The root group, then (centralized) each child's PodGroup before its Job.
        match o.root {
            _ if flat => {}
            Some(r) if r.metadata.deletion_timestamp.is_some() => {
                steps.push(Step::PatchStatus(Box::new(status)));
                return Decision::done(steps, Then::Requeue(Duration::from_secs(1)));
            }
            Some(_) => {}
            None => match desired_root_group(js, workload) {
                Ok(group) => steps.push(Step::CreateRootGroup(Box::new(group))),
                Err(e) => return Decision::fail(e.to_string()),
            },
        }
        let wiring = ChildWiring {
            management: o.management,
            root_group: root_name.clone(),
            job_managed_by: o.job_managed_by.clone(),
            restart_attempt: status.restarts,
        };
        for planned in &sync.pod_groups {
            if let Some(group) = groups
                .iter()
                .find(|g| g.metadata.name.as_deref() == Some(planned.name.as_str()))
            {
                steps.push(Step::SyncPodGroupMinCount {
                    group: Box::new(group.clone()),
                    count: planned.desired,
                });
            }
        }
        for child in &decided.create {
            if centralized {
                let group = if flat {
                    desired_child_group_under(js, workload, child, None)
                } else {
                    desired_child_group(js, workload, child)
                };
                match group {
                    Ok(group) => steps.push(Step::CreatePodGroup(Box::new(group))),
                    Err(e) => return Decision::fail(e.to_string()),
                }
            }
            steps.push(Step::CreateJob(Box::new(desired_job(js, child, &wiring))));
        }
        steps.extend(
            decided
                .set_suspend
                .iter()
                .map(|(job, suspend)| Step::SetSuspend(job.clone(), *suspend)),
        );
    }
    // A JobSet that finishes now with a TTL is reconciled again when the TTL expires (status writes do not
    // trigger reconciles).
    let then = match (js.spec.ttl_seconds_after_finished, gang_wait) {
        (Some(ttl), _) if is_terminal(&status) => Then::Requeue(after_seconds(i64::from(ttl))),
        // A gang below its minCount whose grace period ends later: decide again then.
        (_, Some(left)) if !is_terminal(&status) => Then::Requeue(after_seconds(left)),
        _ => Then::AwaitChange,
    };
    steps.push(Step::PatchStatus(Box::new(status)));
    Decision::done(steps, then)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    fn jobset(scheduling: serde_json::Value) -> JobSet {
        let mut js: JobSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "train", "namespace": "ml", "uid": "js-uid"},
            "spec": {
                "scheduling": scheduling,
                "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
                    "parallelism": 4,
                    "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}]
            }
        }))
        .unwrap();
        js.metadata.generation = Some(1);
        js
    }

    fn gang() -> JobSet {
        jobset(serde_json::json!({
            "schedulingPolicy": {"basic": {}},
            "replicatedJobPolicies": [{"targetReplicatedJob": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]
        }))
    }

    fn observe<'a>(
        js: &'a JobSet,
        workloads: &'a [Workload],
        jobs: &'a [Job],
        root: Option<&'a CompositePodGroup>,
    ) -> Observed<'a> {
        Observed {
            js,
            workloads,
            jobs,
            root,
            child_groups: &[],
            management: PodGroupManagement::Centralized,
            job_managed_by: None,
            composite_served: true,
            now: Timestamp::UNIX_EPOCH,
        }
    }

    fn kinds(d: &Decision) -> Vec<String> {
        d.steps
            .iter()
            .map(|s| match s {
                Step::CreateWorkload(_) => "CreateWorkload".into(),
                Step::SyncWorkloadMinCount { template, count, .. } => {
                    format!("SyncWorkloadMinCount {template}={count}")
                }
                Step::DeleteJob(j) => format!("DeleteJob {j}"),
                Step::DeletePodGroup(g) => format!("DeletePodGroup {g}"),
                Step::DeleteRootGroup(g) => format!("DeleteRootGroup {g}"),
                Step::CreateRootGroup(g) => format!("CreateRootGroup {}", g.name_any()),
                Step::SyncPodGroupMinCount { group, count } => {
                    format!("SyncPodGroupMinCount {}={count}", group.name_any())
                }
                Step::CreatePodGroup(g) => format!("CreatePodGroup {}", g.name_any()),
                Step::CreateJob(j) => format!("CreateJob {}", j.name_any()),
                Step::SetSuspend(j, s) => format!("SetSuspend {j}={s}"),
                Step::Event(e) => format!("Event {}", e.reason),
                Step::DeleteJobSet => "DeleteJobSet".into(),
                Step::PatchStatus(_) => "PatchStatus".into(),
                Step::Fail(m) => format!("Fail {m}"),
            })
            .collect()
    }

    #[test]
    fn a_new_jobset_creates_its_workload_first() {
        let js = gang();
        let d = decide(&observe(&js, &[], &[], None));
        assert_eq!(kinds(&d), ["CreateWorkload"]);
        assert_eq!(d.then, Then::AwaitChange);
    }

    #[test]
    fn with_its_workload_it_creates_the_root_then_each_group_before_its_job() {
        let js = gang();
        let workload = desired_workload(&js).unwrap();
        let d = decide(&observe(&js, std::slice::from_ref(&workload), &[], None));
        let k = kinds(&d);
        assert_eq!(k[0], "SyncWorkloadMinCount workers=4");
        assert!(k[1].starts_with("CreateRootGroup "), "{k:?}");
        assert!(
            k[2].starts_with("CreatePodGroup ") && k[3] == "CreateJob train-workers-0",
            "{k:?}"
        );
        assert!(
            k[4].starts_with("CreatePodGroup ") && k[5] == "CreateJob train-workers-1",
            "{k:?}"
        );
        assert_eq!(k.last().unwrap(), "PatchStatus");
        assert_eq!(d.then, Then::AwaitChange);
        // Delegated: no PodGroups, only Jobs.
        let mut o = observe(&js, std::slice::from_ref(&workload), &[], None);
        o.management = PodGroupManagement::Delegated;
        assert!(!kinds(&decide(&o)).iter().any(|s| s.starts_with("CreatePodGroup")));
    }

    #[test]
    fn without_composite_pod_groups_a_jobset_runs_flat_and_says_what_it_leaves_out() {
        // The user asked for a gang of gangs and a topology across the replicated jobs.
        let js = jobset(serde_json::json!({
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]},
            "replicatedJobPolicies": [{"targetReplicatedJob": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]
        }));
        let mut o = observe(&js, &[], &[], None);
        o.composite_served = false;
        let d = decide(&o);
        let [Step::CreateWorkload(workload)] = d.steps.as_slice() else {
            panic!("{:?}", kinds(&d));
        };
        assert!(is_flat(workload), "{workload:?}");
        let templates = workload.spec.pod_group_templates.as_deref().unwrap_or_default();
        assert_eq!(templates.len(), 1);
        assert_eq!(
            templates[0].scheduling_policy.gang.as_ref().map(|g| g.min_count),
            Some(4)
        );
        // With it: no root group, each PodGroup without a parent, the condition and one Warning event.
        let workload = (**workload).clone();
        let o = Observed {
            workloads: std::slice::from_ref(&workload),
            ..o
        };
        let d = decide(&o);
        let k = kinds(&d);
        assert!(!k.iter().any(|s| s.contains("RootGroup")), "{k:?}");
        assert_eq!(k.iter().filter(|s| s.starts_with("CreatePodGroup")).count(), 2, "{k:?}");
        for step in &d.steps {
            if let Step::CreatePodGroup(g) = step {
                assert_eq!(g.spec.parent_composite_pod_group_name, None);
            }
        }
        assert!(k.contains(&"Event FlatScheduling".to_string()), "{k:?}");
        let Some(Step::PatchStatus(status)) = d.steps.last() else {
            panic!("{k:?}")
        };
        assert_eq!(status.composite_pod_group_name, None);
        let c = policy::find(status, conditions::FLAT_SCHEDULING).unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "CompositePodGroupsNotServed")
        );
        assert!(
            c.message.ends_with(
                "not applied: spec.scheduling.schedulingPolicy.gang, spec.scheduling.schedulingConstraints.topology"
            ),
            "{}",
            c.message
        );
        // The next reconcile repeats no event; a flat Workload stays flat once CompositePodGroups are served.
        let mut js2 = js.clone();
        js2.status = Some((**status).clone());
        let o = Observed {
            js: &js2,
            composite_served: true,
            ..o
        };
        let k = kinds(&decide(&o));
        assert!(!k.iter().any(|s| s.starts_with("Event")), "{k:?}");
        assert!(!k.iter().any(|s| s.contains("RootGroup")), "{k:?}");
    }

    #[test]
    fn a_root_group_being_deleted_is_waited_for() {
        let js = gang();
        let workload = desired_workload(&js).unwrap();
        let mut root = desired_root_group(&js, &workload).unwrap();
        root.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        let d = decide(&observe(&js, std::slice::from_ref(&workload), &[], Some(&root)));
        assert!(!kinds(&d).iter().any(|s| s.starts_with("Create")), "{:?}", kinds(&d));
        assert_eq!(d.then, Then::Requeue(Duration::from_secs(1)));
    }

    #[test]
    fn invalid_intent_and_ambiguous_workloads_fail_without_creating_anything() {
        let js = jobset(serde_json::json!({
            "replicatedJobPolicies": [{"targetReplicatedJob": "nobody", "schedulingPolicy": {"basic": {}}}]
        }));
        let d = decide(&observe(&js, &[], &[], None));
        assert_eq!(d.steps.len(), 1);
        assert!(matches!(&d.steps[0], Step::Fail(m) if m.starts_with("Failed to compile Workload for JobSet train")));
        let js = gang();
        let w = desired_workload(&js).unwrap();
        let d = decide(&observe(&js, &[w.clone(), w], &[], None));
        assert_eq!(kinds(&d), ["Fail found 2 Workloads referencing JobSet train"]);
        assert_eq!(d.then, Then::AwaitChange);
    }

    fn with_policy(policy: serde_json::Value) -> JobSet {
        let mut p = policy;
        p["targetReplicatedJob"] = serde_json::json!("workers");
        jobset(serde_json::json!({"schedulingPolicy": {"basic": {}}, "replicatedJobPolicies": [p]}))
    }

    #[test]
    fn a_min_count_edit_is_applied_to_an_owned_workload_only() {
        let live = desired_workload(&gang()).unwrap();
        let edited = with_policy(serde_json::json!({"schedulingPolicy": {"gang": {"minCount": 2}}}));
        let k = kinds(&decide(&observe(&edited, std::slice::from_ref(&live), &[], None)));
        assert_eq!(k[0], "SyncWorkloadMinCount workers=2", "{k:?}");
        assert!(!k.iter().any(|s| s.starts_with("Event")), "{k:?}");
        // A Workload this controller did not create (no managed-by annotation) is never patched.
        let mut foreign = live.clone();
        foreign.metadata.annotations = None;
        let k = kinds(&decide(&observe(&edited, std::slice::from_ref(&foreign), &[], None)));
        assert!(!k.iter().any(|s| s.starts_with("SyncWorkloadMinCount")), "{k:?}");
        assert!(k.iter().any(|s| s == "CreateJob train-workers-0"), "{k:?}");
        // Nor one that another JobSet (another uid) owns.
        let mut other = live;
        for r in other.metadata.owner_references.iter_mut().flatten() {
            r.uid = "someone-else".into();
        }
        let k = kinds(&decide(&observe(&edited, std::slice::from_ref(&other), &[], None)));
        assert!(!k.iter().any(|s| s.starts_with("SyncWorkloadMinCount")), "{k:?}");
    }

    #[test]
    fn an_edit_the_workload_cannot_take_is_reported_and_nothing_else_happens() {
        let live = desired_workload(&gang()).unwrap();
        for (edited, reason) in [
            // An immutable field: the topology of a running group.
            (
                with_policy(serde_json::json!({"schedulingPolicy": {"gang": {"minCount": 4}},
                    "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}})),
                conditions::REASON_IMMUTABLE_FIELD,
            ),
            // The policy kind.
            (
                with_policy(serde_json::json!({"schedulingPolicy": {"basic": {}}})),
                conditions::REASON_IMMUTABLE_FIELD,
            ),
            // A scheduling configuration that does not compile.
            (
                jobset(serde_json::json!({"replicatedJobPolicies": [{"targetReplicatedJob": "nobody"}]})),
                conditions::REASON_INVALID_SCHEDULING,
            ),
        ] {
            let d = decide(&observe(&edited, std::slice::from_ref(&live), &[], None));
            assert_eq!(kinds(&d), ["Event SchedulingUpdateRejected", "PatchStatus"], "{reason}");
            let Some(Step::PatchStatus(status)) = d.steps.last() else {
                unreachable!()
            };
            let c = policy::find(status, conditions::SCHEDULING_UPDATE_REJECTED).unwrap();
            assert_eq!(c.reason, reason);
            assert!(c.message.contains("not applied"), "{}", c.message);
            // Decided again with the condition written: nothing new to say.
            let mut again = edited.clone();
            again.status = Some((**status).clone());
            let d = decide(&observe(&again, std::slice::from_ref(&live), &[], None));
            assert!(d.steps.is_empty(), "{:?}", kinds(&d));
            // Reverted: the condition goes and the JobSet is managed again.
            let mut reverted = gang();
            reverted.status = Some((**status).clone());
            let d = decide(&observe(&reverted, std::slice::from_ref(&live), &[], None));
            let Some(Step::PatchStatus(status)) = d.steps.last() else {
                unreachable!()
            };
            assert!(policy::find(status, conditions::SCHEDULING_UPDATE_REJECTED).is_none());
            assert!(kinds(&d).iter().any(|s| s == "CreateJob train-workers-0"));
        }
    }

    #[test]
    fn a_finished_jobset_only_cleans_up() {
        let mut js = gang();
        js.status = Some(JobSetStatus {
            conditions: vec![Condition {
                type_: conditions::COMPLETED.into(),
                status: "True".into(),
                reason: "AllJobsCompleted".into(),
                message: String::new(),
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
                observed_generation: Some(1),
            }],
            ..Default::default()
        });
        assert!(is_finished(&js));
        let d = decide(&observe(&js, &[], &[], None));
        assert!(
            d.steps.iter().all(|s| matches!(s, Step::DeleteJob(_))),
            "{:?}",
            kinds(&d)
        );
        assert_eq!(d.then, Then::AwaitChange);
    }

    #[test]
    fn a_min_count_edit_re_syncs_the_centralized_groups_the_jobset_controls() {
        let js = gang();
        let live = desired_workload(&js).unwrap();
        let root = desired_root_group(&js, &live).unwrap();
        let all = children(&js);
        let mut groups: Vec<PodGroup> = all
            .iter()
            .map(|c| desired_child_group(&js, &live, c).unwrap())
            .collect();
        // A group being deleted and one another JobSet controls are left alone.
        let mut deleting = groups[0].clone();
        deleting.metadata.name = Some("deleting".into());
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        let mut foreign = groups[0].clone();
        foreign.metadata.name = Some("foreign".into());
        for r in foreign.metadata.owner_references.iter_mut().flatten() {
            r.uid = "someone-else".into();
        }
        groups.extend([deleting, foreign]);
        let edited = with_policy(serde_json::json!({"schedulingPolicy": {"gang": {"minCount": 2}}}));
        let mut o = observe(&edited, std::slice::from_ref(&live), &[], Some(&root));
        o.child_groups = &groups;
        let k = kinds(&decide(&o));
        let synced: Vec<&String> = k.iter().filter(|s| s.starts_with("SyncPodGroupMinCount")).collect();
        let expected: Vec<String> = all
            .iter()
            .map(|c| format!("SyncPodGroupMinCount {}=2", super::super::children::child_group_name(c)))
            .collect();
        assert_eq!(synced, expected.iter().collect::<Vec<_>>(), "{k:?}");
        assert_eq!(k[0], "SyncWorkloadMinCount workers=2", "{k:?}");
        // Delegated: the Job controller re-syncs its own groups.
        o.management = PodGroupManagement::Delegated;
        let k = kinds(&decide(&o));
        assert!(!k.iter().any(|s| s.starts_with("SyncPodGroupMinCount")), "{k:?}");
    }
}
