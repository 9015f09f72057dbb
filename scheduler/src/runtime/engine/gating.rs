//! PreEnqueue gating and the engine's timers: units waiting for their hierarchy or `minCount` pods,
//! the delayed waiting message, backoff expiry and preemption deadlines.

use std::time::{Duration, Instant};

use tracing::debug;

use crate::core::{PodKey, UnitKey};
use crate::runtime::actions::Action;
use crate::runtime::conditions::REASON_SCHEDULING_GATED;
use crate::runtime::scheduling_queue::QueueState;

use super::*;

impl Engine {
    /// One turn of the scheduler's loop after the informer events and binding results of the turn were
    /// applied, in its order: end of batch, deferred actions, then, when `lead` (the leader of a synced
    /// snapshot), eviction retries, gang health and, when `schedule` too, one unit. The live loop and the
    /// offline replay both run it. Returns whether a unit was scheduled.
    pub fn turn(&mut self, now: Now, lead: bool, schedule: bool, out: &mut Vec<Action>) -> bool {
        self.end_of_batch(now);
        self.take_deferred(out);
        if !lead {
            return false;
        }
        self.retry_evictions(now, out);
        self.publish_health(now.instant, out);
        self.recover_gangs(now.instant, out);
        schedule && self.schedule_one(now, out)
    }

    /// Wakes unschedulable units after a batch that freed or added capacity, and preemptors whose
    /// victims are gone or whose reservation timed out.
    pub fn end_of_batch(&mut self, now: Now) {
        self.wall = now.wall;
        let now = now.instant;
        if !self.partial_since.is_empty() {
            let queue = &self.queue;
            self.partial_since.retain(|u, _| queue.state(u).is_some());
        }
        if self.capacity_changed {
            self.capacity_changed = false;
            self.queue.move_all_unschedulable(now);
        }
        let due: Vec<UnitKey> = self
            .ongoing
            .iter()
            .filter(|(_, o)| o.victims.is_empty() || o.deadline <= now)
            .map(|(u, _)| u.clone())
            .collect();
        for u in due {
            if self.queue.state(&u).is_some() {
                self.queue.activate_now(&u, now);
            } else {
                // The preemptor is gone (deleted, or nothing left to place).
                self.release(&u);
            }
        }
        // Units gated long enough for their pods to get the waiting message.
        while let Some((t, _)) = self.gated_due.first() {
            if *t > now {
                break;
            }
            if let Some((_, u)) = self.gated_due.pop_first()
                && self.queue.state(&u) == Some(QueueState::Gated)
                && self.gated.get(&u).is_some_and(|(_, written)| !*written)
            {
                self.touch(&u, now);
            }
        }
        if self
            .gated_pruned
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10))
        {
            let queue = &self.queue;
            self.gated.retain(|u, _| queue.state(u).is_some());
            self.gated_pruned = Some(now);
        }
        self.metrics.queue_depth(self.queue.depth());
    }

    /// When the engine next has something to do without an event.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let messages = self.gated_due.first().map(|(t, _)| *t);
        let deadline = self
            .ongoing
            .values()
            .map(|o| o.deadline)
            .chain(messages)
            .chain(self.next_eviction_retry())
            .chain(self.recovery_due.values().copied())
            .min();
        match (self.queue.next_wakeup(), deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn gate(
        &mut self,
        unit: &UnitKey,
        message: &str,
        pods: Vec<PodKey>,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        debug!(unit = %unit, message, "unit waits in PreEnqueue");
        self.queue.gate(unit, now);
        let delay = self.settings.waiting_message_delay;
        let entry = self.gated.entry(unit.clone()).or_insert_with(|| {
            self.gated_due.insert((now + delay, unit.clone()));
            (now, false)
        });
        if !entry.1 && now.duration_since(entry.0) < delay {
            return;
        }
        entry.1 = true;
        for p in pods {
            self.pod_condition(&p, REASON_SCHEDULING_GATED, message, false, out);
        }
    }
}
