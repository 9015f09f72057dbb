//! Gangs left partially bound: released after `partial_gang_timeout` so they never hold capacity forever.
//!
//! A group unit whose cycle is unschedulable while some of its pods are bound is below its minimum with
//! those pods holding capacity: what a crash between a gang's bindings leaves when the rest no longer
//! fits, or a gang that lost a member whose replacement does not fit. Whatever the cause, once it has
//! stayed so for `partial_gang_timeout` its bound pods are evicted (marked `DisruptionTarget`, so the
//! leader retries the eviction until they are gone); their controller recreates them and the gang is
//! scheduled again, whole.

use std::time::Instant;

use kwas_api_types::names::conditions::{DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER};
use kwas_api_types::names::events;
use tracing::warn;

use crate::core::{GroupKey, GroupKind, PodKey, PodState, UnitKey};
use crate::runtime::actions::{Action, EventRecord, pod_ref};
use crate::runtime::conditions::DesiredCondition;

use super::*;

impl Engine {
    /// After an unschedulable cycle of `unit`: when it holds bound pods without reaching its minimum, starts
    /// (or reads) its partial timer, and once the timer passes `partial_gang_timeout` evicts those pods.
    /// Returns whether it released the unit.
    pub(super) fn release_if_stuck(&mut self, unit: &UnitKey, now: Instant, out: &mut Vec<Action>) -> bool {
        let UnitKey::Group(root) = unit else {
            return false;
        };
        let bound = self.bound_pods_of(root);
        if bound.is_empty() {
            self.partial_since.remove(unit);
            return false;
        }
        let since = *self.partial_since.entry(unit.clone()).or_insert(now);
        let timeout = self.settings.partial_gang_timeout;
        if now.duration_since(since) < timeout {
            return false;
        }
        warn!(unit = %unit, pods = bound.len(), ?timeout, "releasing a gang left partially bound");
        self.metrics.kwas_preemption_attempt("partial_gang_released");
        let message = format!(
            "{}: the gang stayed below its minimum for {}s with these pods bound; they are released so the gang can be scheduled whole",
            self.settings.primary_name,
            timeout.as_secs()
        );
        self.evict_bound(bound, &message, "Releasing", out);
        self.partial_since.remove(unit);
        self.queue.failed(unit, Failure::Unschedulable, now);
        true
    }

    /// Evicts `pods` of a gang the scheduler gives up on as it is (a partial gang released, a broken one
    /// recovered): `DisruptionTarget` with `message`, deleted (retried until gone), a `Preempted` Warning
    /// event with `action`.
    pub(super) fn evict_bound(&self, pods: Vec<PodKey>, message: &str, action: &str, out: &mut Vec<Action>) {
        for pod in pods {
            let meta = self.pods.get(&pod);
            let uid = meta.and_then(|m| m.uid.clone());
            out.push(Action::Evict {
                condition: DesiredCondition::new(DISRUPTION_TARGET, true, REASON_PREEMPTION_BY_SCHEDULER, message)
                    .observed(meta.and_then(|m| m.generation)),
                event: EventRecord {
                    regarding: pod_ref(&pod, uid.as_deref()),
                    related: None,
                    warning: true,
                    reason: events::PREEMPTED.into(),
                    action: action.into(),
                    note: message.to_string(),
                },
                pod,
                uid,
            });
        }
    }

    /// The bound (or assumed), not terminating pods of the PodGroups under `root`.
    pub(super) fn bound_pods_of(&self, root: &GroupKey) -> Vec<PodKey> {
        let members = self.snap.hierarchy_members(root);
        let groups: HashSet<&str> = members
            .iter()
            .filter(|g| g.kind == GroupKind::PodGroup)
            .map(|g| g.name.as_str())
            .collect();
        let mut pods: Vec<PodKey> = self
            .pods
            .iter()
            .filter(|(k, m)| {
                k.namespace == root.namespace && !m.deleting && m.group.as_deref().is_some_and(|g| groups.contains(g))
            })
            .filter(|(k, _)| matches!(self.snap.pod_state(k), Some((PodState::Bound | PodState::Assumed, _))))
            .map(|(k, _)| k.clone())
            .collect();
        pods.sort();
        pods
    }
}
