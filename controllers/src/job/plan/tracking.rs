//! Exact counting with the tracking finalizer: terminated pods are recorded as uncounted first, their
//! finalizer removed, then they move into the counters (upstream's tracking with finalizers).

use std::collections::HashSet;

use k8s_openapi::api::batch::v1::{Job, JobStatus, UncountedTerminatedPods};

use super::indexes::Indexes;
use super::{Tracking, completions, is_indexed};
use crate::job::pods::{PodState, PodView};

pub(crate) fn uncounted(status: &JobStatus) -> (Vec<String>, Vec<String>) {
    let u = status.uncounted_terminated_pods.as_ref();
    (
        u.and_then(|u| u.succeeded.clone()).unwrap_or_default(),
        u.and_then(|u| u.failed.clone()).unwrap_or_default(),
    )
}

fn set_uncounted(status: &mut JobStatus, succeeded: Vec<String>, failed: Vec<String>) {
    status.uncounted_terminated_pods = Some(UncountedTerminatedPods {
        succeeded: Some(succeeded),
        failed: Some(failed),
    });
}

/// Step 1: record terminated pods that still carry the tracking finalizer.
pub fn track(job: &Job, pods: &[PodView]) -> Tracking {
    let mut status = job.status.clone().unwrap_or_default();
    let (mut succeeded, mut failed) = uncounted(&status);
    let indexed = is_indexed(job);
    let total = completions(job).unwrap_or(0);
    let mut completed = Indexes::parse(status.completed_indexes.as_deref().unwrap_or(""), total);
    let before = (succeeded.len(), failed.len(), completed.len());
    let mut remove = Vec::new();
    for p in pods.iter().filter(|p| p.tracked) {
        match p.state {
            PodState::Active => continue,
            PodState::Succeeded if !failed.contains(&p.uid) => {
                if indexed {
                    // The completion index avoids recounting: no uid needed.
                    if let Some(i) = p.index.filter(|i| (0..total).contains(i)) {
                        completed.insert(i);
                    }
                } else if !succeeded.contains(&p.uid) {
                    succeeded.push(p.uid.clone());
                }
            }
            PodState::Succeeded => {}
            PodState::Failed | PodState::Terminating => {
                if !failed.contains(&p.uid) && !succeeded.contains(&p.uid) {
                    failed.push(p.uid.clone());
                }
            }
        }
        remove.push(p.name.clone());
    }
    let changed = (succeeded.len(), failed.len(), completed.len()) != before;
    if indexed {
        status.completed_indexes = (!completed.is_empty()).then(|| completed.to_string());
    }
    set_uncounted(&mut status, succeeded, failed);
    Tracking {
        status,
        changed,
        remove_finalizers: remove,
    }
}

/// Step 3: move uncounted pods whose finalizer is gone (`still_tracked` holds the uids that still carry it)
/// into the counters. Returns true when the status changed.
pub fn flush(job: &Job, status: &mut JobStatus, still_tracked: &HashSet<String>) -> bool {
    let (succeeded, failed) = uncounted(status);
    let (done_s, keep_s): (Vec<_>, Vec<_>) = succeeded.into_iter().partition(|u| !still_tracked.contains(u));
    let (done_f, keep_f): (Vec<_>, Vec<_>) = failed.into_iter().partition(|u| !still_tracked.contains(u));
    let changed = !done_s.is_empty() || !done_f.is_empty();
    let as_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    if is_indexed(job) {
        let completed = Indexes::parse(
            status.completed_indexes.as_deref().unwrap_or(""),
            completions(job).unwrap_or(0),
        );
        let succeeded = i32::try_from(completed.len()).unwrap_or(i32::MAX);
        let flushed = status.succeeded != Some(succeeded);
        status.succeeded = Some(succeeded);
        status.failed = Some(status.failed.unwrap_or(0).saturating_add(as_i32(done_f.len())));
        set_uncounted(status, keep_s, keep_f);
        return changed || flushed;
    }
    status.succeeded = Some(status.succeeded.unwrap_or(0).saturating_add(as_i32(done_s.len())));
    status.failed = Some(status.failed.unwrap_or(0).saturating_add(as_i32(done_f.len())));
    set_uncounted(status, keep_s, keep_f);
    changed
}
