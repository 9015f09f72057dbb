//! Property: over random sequences of pod outcomes (success, a counted failure, a failure the policy
//! ignores on `DisruptionTarget`) and reconciles, the Job's counters equal the pods' terminal states, and an
//! ignored failure is never counted, never fails the Job.

use proptest::prelude::*;

use super::*;

/// One reconcile, then what the controller applies: released finalizers, deletions, creations.
fn reconcile(job: &mut Job, pods: &mut Vec<P>, next: &mut usize) -> Plan {
    let views: Vec<PodView> = pods.iter().map(|p| p.view.clone()).collect();
    let outcomes: PodOutcomes = pods.iter().map(|p| (p.view.uid.clone(), p.outcome.clone())).collect();
    let released = track_with(job, &views, &outcomes, now()).remove_finalizers;
    let plan = sync(job, pods);
    for p in pods.iter_mut() {
        if released.contains(&p.view.name) {
            p.view.tracked = false;
        }
    }
    pods.retain(|p| !plan.delete.contains(&p.view.name));
    for index in &plan.create {
        let mut p = pod(*next, PodState::Active);
        p.view.index = *index;
        pods.push(p);
        *next += 1;
    }
    job.status = Some(plan.status.clone());
    plan
}

proptest! {
    #[test]
    fn counters_equal_terminal_pods(
        steps in proptest::collection::vec((0usize..16, 0u8..3), 0..40),
        parallelism in 1i32..5,
        is_indexed in any::<bool>(),
        strict in any::<bool>(),
    ) {
        let backoff_limit = if strict { 0 } else { i32::MAX };
        let mut j = with_policy(job(parallelism, Some(1000), backoff_limit), vec![on_condition("Ignore", "DisruptionTarget")]);
        if is_indexed {
            j = indexed(j);
        }
        let mut pods: Vec<P> = Vec::new();
        let mut next = 0usize;
        let (mut succeeded, mut counted, mut succeeded_indexes) = (0i32, 0i32, std::collections::BTreeSet::new());
        for (pick, outcome) in steps {
            let plan = reconcile(&mut j, &mut pods, &mut next);
            if conditions(&plan).iter().any(|c| c.0 == FAILURE_TARGET) {
                break;
            }
            let active: Vec<usize> = (0..pods.len()).filter(|&k| pods[k].view.state == PodState::Active).collect();
            let Some(&k) = active.get(pick % active.len().max(1)) else { continue };
            let p = &mut pods[k];
            match outcome {
                0 => {
                    p.view.state = PodState::Succeeded;
                    succeeded += 1;
                    if let Some(i) = p.view.index {
                        succeeded_indexes.insert(i);
                    }
                }
                1 => {
                    p.view.state = PodState::Failed;
                    p.outcome.containers.push(ContainerExit { name: "main".into(), exit_code: 1 });
                    counted += 1;
                }
                _ => {
                    p.view.state = PodState::Failed;
                    p.outcome.conditions.push(("DisruptionTarget".into(), "True".into()));
                    p.outcome.containers.push(ContainerExit { name: "main".into(), exit_code: 137 });
                }
            }
        }
        let plan = reconcile(&mut j, &mut pods, &mut next);
        let plan = if conditions(&plan).iter().any(|c| c.0 == FAILURE_TARGET) {
            reconcile(&mut j, &mut pods, &mut next)
        } else {
            plan
        };
        prop_assert_eq!(plan.status.failed.unwrap_or(0), counted);
        let want_succeeded = if is_indexed { succeeded_indexes.len() as i32 } else { succeeded };
        prop_assert_eq!(plan.status.succeeded.unwrap_or(0), want_succeeded);
        let failed_job = conditions(&plan).iter().any(|c| c.0 == FAILURE_TARGET || c.0 == FAILED);
        prop_assert_eq!(failed_job, strict && counted > 0);
        let uncounted = plan.status.uncounted_terminated_pods.clone().unwrap_or_default();
        prop_assert!(uncounted.failed.unwrap_or_default().is_empty());
    }
}
