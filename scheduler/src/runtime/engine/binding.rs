//! Bindings in flight: a confirmed binding, a conflict left to the informer, a rejected one forgotten
//! and retried.

use kwas_api_types::names::conditions::REASON_SCHEDULER_ERROR;
use kwas_api_types::names::events;
use tracing::{debug, warn};

use crate::core::{PodKey, PodState};
use crate::runtime::actions::{Action, EventRecord, pod_ref};
use crate::runtime::scheduling_queue::Failure;

use super::*;

impl Engine {
    /// A binding finished.
    pub fn bind_finished(&mut self, pod: &PodKey, node: &str, result: BindResult, now: Now, out: &mut Vec<Action>) {
        self.wall = now.wall;
        let now = now.instant;
        let unit = self.binding.remove(pod);
        let allocated = self.claim_allocations.remove(pod).unwrap_or_default();
        let uid = self.pods.get(pod).and_then(|m| m.uid.clone());
        match result {
            BindResult::Bound => {
                self.metrics.pod_scheduled();
                out.push(Action::Event(EventRecord {
                    regarding: pod_ref(pod, uid.as_deref()),
                    related: None,
                    warning: false,
                    reason: events::SCHEDULED.into(),
                    action: "Binding".into(),
                    note: format!("Successfully assigned {}/{} to {node}", pod.namespace, pod.name),
                }));
            }
            BindResult::Conflict(e) => {
                debug!(pod = %pod, error = %e, "binding conflict; waiting for the informer");
            }
            BindResult::Failed(e) => {
                self.metrics.binding_failure();
                warn!(pod = %pod, node, error = %e, "binding rejected");
                if matches!(self.snap.pod_state(pod), Some((PodState::Assumed, _))) {
                    let _ = self.snap.forget(pod);
                    self.pod_health_changed(pod);
                }
                // Allocations this binding was to write are free again (unless the informer already
                // shows them written by a gang mate).
                for (ns, claim) in &allocated {
                    self.snap.forget_claim_allocation(ns, claim);
                }
                let message = format!("Binding rejected: {e}");
                self.pod_condition(pod, REASON_SCHEDULER_ERROR, &message, true, out);
                if let Some(unit) = unit {
                    if self.queue.state(&unit).is_none() {
                        self.touch(&unit, now);
                    }
                    self.queue.failed(&unit, Failure::Error, now);
                }
            }
        }
    }
}
