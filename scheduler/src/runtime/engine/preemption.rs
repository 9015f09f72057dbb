//! The delayed-preemption state machine: victims evicted, the preemptor's pods reserved and nominated
//! until the victims are gone (or the timeout), reservations dropped on release or when leadership is lost.
//!
//! What a preemption in progress means is also read back from the cluster, so a restart or a new leader
//! never preempts twice and never leaves an eviction half done:
//! - a unit whose pending pods are nominated to nodes where pods are still terminating, or marked as
//!   victims but not yet deleted, waits for them (as upstream's `PodEligibleToPreemptOthers`) instead of
//!   choosing new victims; the wait is bounded by the preemption timeout (victims that outlive it are
//!   not waited for again);
//! - a pod marked as a victim (`DisruptionTarget`, reason `PreemptionByScheduler`) that is still not being
//!   deleted is evicted again every [`EVICTION_RETRY`] by the leader until it is gone, whoever marked it.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use kwas_api_types::names::conditions::{DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER, REASON_UNSCHEDULABLE};
use kwas_api_types::names::events;
use tracing::{debug, info};

use crate::core::{GroupKind, PodState, PreemptionVerdict, UnitKey};
use crate::runtime::actions::{Action, EventRecord, group_ref, pod_ref};
use crate::runtime::conditions::{DesiredCondition, WAITING_FOR_PREEMPTION};

use super::*;

/// How long a marked victim may stay undeleted before the leader evicts it again.
pub const EVICTION_RETRY: Duration = Duration::from_secs(5);

impl Engine {
    /// Keeps the retry schedule of marked victims in step with the pod's latest version.
    pub(super) fn track_victim(&mut self, key: &PodKey, meta: &PodMeta, now: Instant) {
        if meta.victim && !meta.deleting {
            self.evict_due.entry(key.clone()).or_insert(now + EVICTION_RETRY);
        } else {
            self.evict_due.remove(key);
        }
    }

    /// The leader evicts again the victims whose eviction did not complete (a failed delete, a crash or
    /// a leader change between marking and deleting).
    pub fn retry_evictions(&mut self, now: Now, out: &mut Vec<Action>) {
        let now = now.instant;
        let due: Vec<PodKey> = self
            .evict_due
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(p, _)| p.clone())
            .collect();
        for pod in due {
            self.evict_due.insert(pod.clone(), now + EVICTION_RETRY);
            let uid = self.pods.get(&pod).and_then(|m| m.uid.clone());
            info!(pod = %pod, "evicting a marked preemption victim again");
            self.metrics.kwas_preemption_attempt("eviction_retry");
            let message = format!(
                "{}: preempting to accommodate a higher priority workload",
                self.settings.primary_name
            );
            out.push(Action::Evict {
                pod: pod.clone(),
                uid: uid.clone(),
                condition: DesiredCondition::new(DISRUPTION_TARGET, true, REASON_PREEMPTION_BY_SCHEDULER, &message)
                    .observed(self.pods.get(&pod).and_then(|m| m.generation)),
                event: EventRecord {
                    regarding: pod_ref(&pod, uid.as_deref()),
                    related: None,
                    warning: false,
                    reason: events::PREEMPTED.into(),
                    action: "Preempting".into(),
                    note: "Preempted: the eviction of this victim was retried".into(),
                },
            });
        }
    }

    /// The earliest eviction retry.
    pub(super) fn next_eviction_retry(&self) -> Option<Instant> {
        self.evict_due.values().min().copied()
    }

    /// Pods the cluster shows a preemption of `unit` still waits for: on the nodes its pending pods are
    /// nominated to, the pods being deleted or marked as victims.
    fn victims_in_cluster(&self, unit: &UnitKey) -> HashSet<PodKey> {
        let nominated: HashSet<&str> = self
            .snap
            .unit_summary(unit)
            .pending
            .iter()
            .filter_map(|p| self.pods.get(p)?.nominated_node_name.as_deref())
            .collect();
        if nominated.is_empty() {
            return HashSet::new();
        }
        self.pods
            .iter()
            .filter(|(k, m)| (m.deleting || m.victim) && !self.lingering.contains(*k))
            .filter(|(_, m)| m.node_name.as_deref().is_some_and(|n| nominated.contains(n)))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// This instance stops scheduling: preemptions in progress drop their reservations (the next
    /// leader decides anew). Queue and snapshot stay warm.
    pub fn step_down(&mut self) {
        // Whoever leads next (this instance again, say) looks at every gang's health once.
        self.recheck_all_health();
        let units: Vec<UnitKey> = self.ongoing.keys().cloned().collect();
        for u in units {
            self.release(&u);
        }
    }

    pub(super) fn release(&mut self, unit: &UnitKey) {
        let Some(o) = self.ongoing.remove(unit) else {
            return;
        };
        for p in &o.reserved {
            self.reserved_by.remove(p);
            if matches!(self.snap.pod_state(p), Some((PodState::Assumed, _))) {
                let _ = self.snap.forget(p);
            }
        }
        for v in &o.victims {
            self.victim_of.remove(v);
        }
    }

    /// Runs preemption for `unit`; on success (or with an earlier preemption still in progress)
    /// actuates it and parks the unit. Otherwise returns upstream's PostFilter message to append to the
    /// failure (`preemption: ...`; empty when there is nothing to say).
    pub(super) fn preempt(&mut self, unit: &UnitKey, now: Instant, out: &mut Vec<Action>) -> Result<(), String> {
        // A preemption the cluster shows in progress (decided before a restart or by another leader):
        // wait for its victims rather than choosing new ones.
        let waiting = self.victims_in_cluster(unit);
        if !waiting.is_empty() {
            self.metrics.kwas_preemption_attempt("in_progress");
            debug!(unit = %unit, victims = waiting.len(), "waiting for the victims of an earlier preemption");
            for v in &waiting {
                self.victim_of.insert(v.clone(), unit.clone());
            }
            self.ongoing.insert(
                unit.clone(),
                Ongoing {
                    victims: waiting,
                    reserved: Vec::new(),
                    deadline: now + self.settings.preemption_timeout,
                },
            );
            self.queue.park(unit, now);
            return Ok(());
        }
        let p = self.scheduler.preempt(&mut self.snap, unit);
        let result = match p.verdict {
            PreemptionVerdict::Preempt => "preempt",
            PreemptionVerdict::NotNeeded => "not_needed",
            PreemptionVerdict::NotAllowed => "not_allowed",
            PreemptionVerdict::NotHelpful => "not_helpful",
            PreemptionVerdict::NotReady => "not_ready",
        };
        self.metrics
            .preemption_attempt(matches!(unit, UnitKey::Group(_)), result);
        if p.verdict != PreemptionVerdict::Preempt {
            debug!(unit = %unit, result, message = %p.message, "no preemption");
            return Err(match p.verdict {
                PreemptionVerdict::NotAllowed | PreemptionVerdict::NotHelpful => p.message,
                _ => String::new(),
            });
        }
        info!(unit = %unit, victims = p.victims.len(), message = %p.message, "preempting");
        let (preemptor_kind, preemptor_ref, preemptor_name) = match unit {
            UnitKey::Group(g) => (
                match g.kind {
                    GroupKind::PodGroup => "podgroup",
                    GroupKind::CompositePodGroup => "compositepodgroup",
                },
                group_ref(g, self.groups.get(g).and_then(|m| m.uid.as_deref())),
                format!("{}/{}", g.namespace, g.name),
            ),
            UnitKey::Pod(k) => {
                let uid = self.pods.get(k).and_then(|m| m.uid.clone());
                (
                    "pod",
                    pod_ref(k, uid.as_deref()),
                    uid.unwrap_or_else(|| format!("{}/{}", k.namespace, k.name)),
                )
            }
        };
        // Upstream's message, then who preempted (victims keep it: `kubectl kwas who-preempted`).
        let (namespace, name) = match unit {
            UnitKey::Group(g) => (&g.namespace, &g.name),
            UnitKey::Pod(k) => (&k.namespace, &k.name),
        };
        let disruption = format!(
            "{}: preempting to accommodate a higher priority {preemptor_kind} {namespace}/{name} (priority {})",
            self.settings.primary_name,
            self.snap.unit_summary(unit).priority
        );
        let mut victims = HashSet::new();
        let mut cancelled: Vec<UnitKey> = Vec::new();
        for v in &p.victims {
            if let Some(holder) = self.reserved_by.get(&v.pod) {
                // A reservation of a lower-priority preemptor: it loses the reservation instead.
                if !cancelled.contains(holder) {
                    cancelled.push(holder.clone());
                }
                continue;
            }
            victims.insert(v.pod.clone());
            let uid = self.pods.get(&v.pod).and_then(|m| m.uid.clone());
            out.push(Action::Evict {
                pod: v.pod.clone(),
                uid: uid.clone(),
                condition: DesiredCondition::new(DISRUPTION_TARGET, true, REASON_PREEMPTION_BY_SCHEDULER, &disruption)
                    .observed(self.pods.get(&v.pod).and_then(|m| m.generation)),
                event: EventRecord {
                    regarding: pod_ref(&v.pod, uid.as_deref()),
                    related: Some(preemptor_ref.clone()),
                    warning: false,
                    reason: events::PREEMPTED.into(),
                    action: "Preempting".into(),
                    note: format!("Preempted by {preemptor_kind} {preemptor_name} on node {}", v.node),
                },
            });
        }
        for holder in cancelled {
            let pods = self
                .ongoing
                .get(&holder)
                .map(|o| o.reserved.clone())
                .unwrap_or_default();
            self.release(&holder);
            for pod in pods {
                self.nominate(&pod, None, out);
            }
            self.queue.activate_now(&holder, now);
        }
        self.metrics
            .preemption_victims(matches!(unit, UnitKey::Group(_)), p.victims.len());
        for g in &p.victim_groups {
            self.group_condition(
                g,
                DISRUPTION_TARGET,
                true,
                REASON_PREEMPTION_BY_SCHEDULER,
                &disruption,
                out,
            );
        }
        // Reserve the nominated nodes and tell the pods.
        let mut reserved = Vec::new();
        for a in &p.nominations {
            if self.snap.assume(&a.pod, &a.node).is_ok() {
                reserved.push(a.pod.clone());
                self.reserved_by.insert(a.pod.clone(), unit.clone());
            }
            self.nominate(&a.pod, Some(a.node.clone()), out);
        }
        if let UnitKey::Group(root) = unit {
            for g in self.snap.hierarchy_members(root) {
                let ty = g.kind.api().initially_scheduled_condition();
                self.group_condition(&g, ty, false, REASON_UNSCHEDULABLE, WAITING_FOR_PREEMPTION, out);
            }
        }
        for v in &victims {
            self.victim_of.insert(v.clone(), unit.clone());
        }
        self.ongoing.insert(
            unit.clone(),
            Ongoing {
                victims,
                reserved,
                deadline: now + self.settings.preemption_timeout,
            },
        );
        self.queue.park(unit, now);
        Ok(())
    }
}
