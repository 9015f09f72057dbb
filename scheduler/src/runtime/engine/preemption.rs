//! The delayed-preemption state machine: victims evicted, the preemptor's pods reserved and nominated
//! until the victims are gone (or the timeout), reservations dropped on release or when leadership is lost.

use std::collections::HashSet;
use std::time::Instant;

use kwas_api::names::conditions::{DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER, REASON_UNSCHEDULABLE};
use kwas_api::names::events;
use tracing::{debug, info};

use crate::core::{PodState, PreemptionVerdict, UnitKey};
use crate::runtime::actions::{Action, EventRecord, group_ref, pod_ref};
use crate::runtime::conditions::{DesiredCondition, WAITING_FOR_PREEMPTION};

use super::*;

impl Engine {
    /// This instance stops scheduling: preemptions in progress drop their reservations (the next
    /// leader decides anew). Queue and snapshot stay warm.
    pub fn step_down(&mut self) {
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

    /// Runs preemption for `unit`; on success actuates it and parks the unit. Returns whether it did.
    pub(super) fn preempt(&mut self, unit: &UnitKey, now: Instant, out: &mut Vec<Action>) -> bool {
        let p = self.scheduler.preempt(&mut self.snap, unit);
        let result = match p.verdict {
            PreemptionVerdict::Preempt => "preempt",
            PreemptionVerdict::NotNeeded => "not_needed",
            PreemptionVerdict::NotAllowed => "not_allowed",
            PreemptionVerdict::NotHelpful => "not_helpful",
            PreemptionVerdict::NotReady => "not_ready",
        };
        self.metrics.preemption_attempt(result);
        if p.verdict != PreemptionVerdict::Preempt {
            debug!(unit = %unit, result, message = %p.message, "no preemption");
            return false;
        }
        info!(unit = %unit, victims = p.victims.len(), message = %p.message, "preempting");
        let (preemptor_kind, preemptor_ref, preemptor_name) = match unit {
            UnitKey::Group(g) => (
                "podgroup",
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
        let disruption = format!(
            "{}: preempting to accommodate a higher priority {preemptor_kind}",
            self.settings.primary_name
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
                condition: DesiredCondition::new(DISRUPTION_TARGET, true, REASON_PREEMPTION_BY_SCHEDULER, &disruption),
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
        self.metrics.preemption_victims(p.victims.len());
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
        true
    }
}
