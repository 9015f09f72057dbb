//! The scheduling queue of root units: active, backoff, unschedulable and gated, like upstream's
//! activeQ, backoffQ, unschedulablePods and PreEnqueue-gated pods, one entry per root unit (a plain
//! pod, a standalone PodGroup or a root CompositePodGroup).
//!
//! - **Active** units are popped highest priority first; among equal priorities a unit that already
//!   has placed pods (a gang interrupted mid-binding, or one scaled up) goes first, then the unit seen
//!   first.
//! - A failed attempt makes the unit **unschedulable** with a backoff of `initial * 2^(attempts-1)`
//!   capped at `max`. A relevant cluster event moves it to **backoff** (or straight to active when the
//!   backoff has passed); after `max_unschedulable` without event it is retried anyway. A binding error
//!   puts the unit in backoff directly.
//! - A **gated** unit failed its PreEnqueue check (its group or root is not observed, too few pods);
//!   only an event that touches the unit wakes it, and waiting costs no backoff.
//!
//! The queue is pure: it never looks at the cluster; the runtime tells it what happened.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::config::BackoffConfig;
use crate::core::UnitKey;

/// Where a unit stands in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Ready to be popped.
    Active,
    /// Waiting for its backoff to expire.
    Backoff,
    /// Failed; waiting for a cluster event (or `max_unschedulable`).
    Unschedulable,
    /// Failed its PreEnqueue check; waiting for an event that touches it.
    Gated,
    /// Popped and being handled.
    InFlight,
}

/// Why an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The unit does not fit now; retry on a cluster event.
    Unschedulable,
    /// An API error (binding); retry after the backoff.
    Error,
}

/// How many units are in each state (the `kwas_scheduler_queue_depth` gauge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueDepth {
    /// Active units.
    pub active: usize,
    /// Units in backoff.
    pub backoff: usize,
    /// Unschedulable units.
    pub unschedulable: usize,
    /// Gated units.
    pub gated: usize,
    /// The same by entity type (upstream's `scheduler_queued_entities{queue,type}`): for each of
    /// active, backoff, unschedulable and gated, the units that are plain pods, PodGroups and
    /// CompositePodGroups (roots of hierarchies).
    pub by_type: [[usize; ENTITY_TYPES.len()]; QUEUES.len()],
}

/// The queues of [`QueueDepth::by_type`], in order (upstream's `queue` label values).
pub const QUEUES: [&str; 4] = ["active", "backoff", "unschedulable", "gated"];
/// The entity types of [`QueueDepth::by_type`], in order (upstream's `type` label values).
pub const ENTITY_TYPES: [&str; 3] = ["pod", "podgroup", "compositepodgroup"];

fn entity_type(unit: &UnitKey) -> usize {
    match unit {
        UnitKey::Pod(_) => 0,
        UnitKey::Group(g) => match g.kind {
            crate::core::model::GroupKind::PodGroup => 1,
            crate::core::model::GroupKind::CompositePodGroup => 2,
        },
    }
}

fn queue_index(state: QueueState) -> Option<usize> {
    match state {
        QueueState::Active => Some(0),
        QueueState::Backoff => Some(1),
        QueueState::Unschedulable => Some(2),
        QueueState::Gated => Some(3),
        QueueState::InFlight => None,
    }
}

type ActiveKey = (Reverse<i32>, u8, u64, UnitKey);

#[derive(Debug)]
struct Entry {
    state: QueueState,
    priority: i32,
    /// 0 when the unit has placed pods (goes first), 1 otherwise.
    partial: u8,
    seq: u64,
    attempts: u32,
    backoff_until: Option<Instant>,
    since: Instant,
}

impl Entry {
    fn active_key(&self, unit: &UnitKey) -> ActiveKey {
        (Reverse(self.priority), self.partial, self.seq, unit.clone())
    }
}

/// The queue. See the module docs.
#[derive(Debug)]
pub struct SchedulingQueue {
    config: BackoffConfig,
    entries: HashMap<UnitKey, Entry>,
    active: BTreeSet<ActiveKey>,
    backoff: BTreeSet<(Instant, u64, UnitKey)>,
    /// Unschedulable units by the time they became so (oldest first).
    unschedulable: BTreeSet<(Instant, u64, UnitKey)>,
    gated: usize,
    by_type: [[usize; ENTITY_TYPES.len()]; QUEUES.len()],
    seq: u64,
}

impl SchedulingQueue {
    /// An empty queue.
    pub fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            entries: HashMap::new(),
            active: BTreeSet::new(),
            backoff: BTreeSet::new(),
            unschedulable: BTreeSet::new(),
            gated: 0,
            by_type: Default::default(),
            seq: 0,
        }
    }

    /// The state of a unit, if queued.
    pub fn state(&self, unit: &UnitKey) -> Option<QueueState> {
        self.entries.get(unit).map(|e| e.state)
    }

    /// Failed attempts of a unit so far.
    #[cfg(test)]
    pub fn attempts(&self, unit: &UnitKey) -> u32 {
        self.entries.get(unit).map_or(0, |e| e.attempts)
    }

    /// Units per state.
    pub fn depth(&self) -> QueueDepth {
        QueueDepth {
            active: self.active.len(),
            backoff: self.backoff.len(),
            unschedulable: self.unschedulable.len(),
            gated: self.gated,
            by_type: self.by_type,
        }
    }

    fn count(&mut self, unit: &UnitKey, state: QueueState, entering: bool) {
        if let Some(q) = queue_index(state) {
            let n = &mut self.by_type[q][entity_type(unit)];
            *n = if entering {
                n.saturating_add(1)
            } else {
                n.saturating_sub(1)
            };
        }
    }

    /// Number of queued units (in flight included).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is queued.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn leave(&mut self, unit: &UnitKey) {
        let Some(e) = self.entries.get(unit) else {
            return;
        };
        let state = e.state;
        match e.state {
            QueueState::Active => {
                let k = e.active_key(unit);
                self.active.remove(&k);
            }
            QueueState::Backoff => {
                if let Some(t) = e.backoff_until {
                    self.backoff.remove(&(t, e.seq, unit.clone()));
                }
            }
            QueueState::Unschedulable => {
                self.unschedulable.remove(&(e.since, e.seq, unit.clone()));
            }
            QueueState::Gated => self.gated -= 1,
            QueueState::InFlight => {}
        }
        self.count(unit, state, false);
    }

    fn enter(&mut self, unit: &UnitKey, state: QueueState, now: Instant) {
        let Some(e) = self.entries.get_mut(unit) else {
            return;
        };
        e.state = state;
        e.since = now;
        match state {
            QueueState::Active => {
                let k = e.active_key(unit);
                self.active.insert(k);
            }
            QueueState::Backoff => {
                let t = *e.backoff_until.get_or_insert(now);
                self.backoff.insert((t, e.seq, unit.clone()));
            }
            QueueState::Unschedulable => {
                self.unschedulable.insert((now, e.seq, unit.clone()));
            }
            QueueState::Gated => self.gated += 1,
            QueueState::InFlight => {}
        }
        self.count(unit, state, true);
    }

    fn set_state(&mut self, unit: &UnitKey, state: QueueState, now: Instant) {
        self.leave(unit);
        self.enter(unit, state, now);
    }

    /// Backoff or active, depending on whether the unit's backoff has passed.
    fn activation_state(&self, unit: &UnitKey, now: Instant) -> QueueState {
        match self.entries.get(unit).and_then(|e| e.backoff_until) {
            Some(t) if t > now => QueueState::Backoff,
            _ => QueueState::Active,
        }
    }

    /// Something about `unit` changed (a pod or group of it was added or updated): queue it if it is
    /// new, refresh its priority, and wake it if it is gated or unschedulable. `partial` tells whether
    /// it already has placed pods.
    pub fn touch(&mut self, unit: &UnitKey, priority: i32, partial: bool, now: Instant) {
        let partial = if partial { 0 } else { 1 };
        if !self.entries.contains_key(unit) {
            self.seq += 1;
            self.entries.insert(
                unit.clone(),
                Entry {
                    state: QueueState::InFlight,
                    priority,
                    partial,
                    seq: self.seq,
                    attempts: 0,
                    backoff_until: None,
                    since: now,
                },
            );
            self.enter(unit, QueueState::Active, now);
            return;
        }
        let state = self.entries.get(unit).map(|e| e.state);
        // Re-key with the new priority.
        self.leave(unit);
        if let Some(e) = self.entries.get_mut(unit) {
            e.priority = priority;
            e.partial = partial;
        }
        match state {
            Some(QueueState::Gated) | Some(QueueState::Unschedulable) => {
                let s = self.activation_state(unit, now);
                self.enter(unit, s, now);
            }
            Some(s) => {
                let since = self.entries.get(unit).map_or(now, |e| e.since);
                self.enter(unit, s, since);
            }
            None => {}
        }
    }

    /// Wakes `unit` and makes it active now, whatever its backoff (its preemption completed).
    pub fn activate_now(&mut self, unit: &UnitKey, now: Instant) {
        let Some(state) = self.state(unit) else {
            return;
        };
        if state != QueueState::InFlight {
            self.leave(unit);
        }
        if let Some(e) = self.entries.get_mut(unit) {
            e.backoff_until = None;
        }
        if state != QueueState::InFlight {
            self.enter(unit, QueueState::Active, now);
        }
    }

    /// A cluster event that may make unschedulable units fit (capacity freed, a node added or
    /// changed): every unschedulable unit moves to backoff or active. Gated units stay.
    pub fn move_all_unschedulable(&mut self, now: Instant) {
        let units: Vec<UnitKey> = self.unschedulable.iter().map(|(_, _, u)| u.clone()).collect();
        for u in units {
            let s = self.activation_state(&u, now);
            self.set_state(&u, s, now);
        }
    }

    /// Pops the next unit to schedule: backoffs that expired become active, unschedulable units
    /// older than `max_unschedulable` are retried, then the best active unit is returned (in flight
    /// until [`done`](Self::done), [`failed`](Self::failed), [`park`](Self::park),
    /// [`gate`](Self::gate) or [`remove`](Self::remove)).
    pub fn pop(&mut self, now: Instant) -> Option<UnitKey> {
        self.flush(now);
        let first = self.active.pop_first()?;
        let unit = first.3;
        if let Some(e) = self.entries.get_mut(&unit) {
            e.state = QueueState::InFlight;
            e.since = now;
        }
        self.count(&unit, QueueState::Active, false);
        Some(unit)
    }

    fn flush(&mut self, now: Instant) {
        while let Some((t, _, _)) = self.backoff.first() {
            if *t > now {
                break;
            }
            if let Some((_, _, u)) = self.backoff.pop_first() {
                if let Some(e) = self.entries.get_mut(&u) {
                    e.state = QueueState::InFlight;
                }
                self.count(&u, QueueState::Backoff, false);
                self.enter(&u, QueueState::Active, now);
            }
        }
        let max = self.config.max_unschedulable;
        let stale: Vec<UnitKey> = self
            .unschedulable
            .iter()
            .take_while(|(since, _, _)| now.duration_since(*since) >= max)
            .map(|(_, _, u)| u.clone())
            .collect();
        for u in stale {
            let s = self.activation_state(&u, now);
            self.set_state(&u, s, now);
        }
    }

    /// When the queue next has something to do on its own (a backoff expiring, an unschedulable unit
    /// timing out).
    pub fn next_wakeup(&self) -> Option<Instant> {
        let backoff = self.backoff.first().map(|(t, _, _)| *t);
        let max = self.config.max_unschedulable;
        let stale = self.unschedulable.first().map(|(since, _, _)| *since + max);
        match (backoff, stale) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The unit was scheduled completely: it leaves the queue and its backoff resets.
    pub fn done(&mut self, unit: &UnitKey) {
        self.remove(unit);
    }

    /// The unit has nothing to do (or is gone): it leaves the queue.
    pub fn remove(&mut self, unit: &UnitKey) {
        self.leave(unit);
        self.entries.remove(unit);
    }

    /// An attempt failed: the unit backs off (see the module docs). Returns the backoff.
    pub fn failed(&mut self, unit: &UnitKey, failure: Failure, now: Instant) -> Duration {
        if !self.entries.contains_key(unit) {
            self.touch(unit, 0, false, now);
        }
        let attempts = self.entries.get(unit).map_or(0, |e| e.attempts) + 1;
        let backoff = self.config.backoff(attempts);
        self.leave(unit);
        if let Some(e) = self.entries.get_mut(unit) {
            e.attempts = attempts;
            e.backoff_until = Some(now + backoff);
        }
        let state = match failure {
            Failure::Unschedulable => QueueState::Unschedulable,
            Failure::Error => QueueState::Backoff,
        };
        self.enter(unit, state, now);
        backoff
    }

    /// The unit waits for an event without counting a failed attempt (its preemption is in progress).
    pub fn park(&mut self, unit: &UnitKey, now: Instant) {
        if self.entries.contains_key(unit) {
            self.set_state(unit, QueueState::Unschedulable, now);
        }
    }

    /// The unit failed its PreEnqueue check: it waits for an event that touches it.
    pub fn gate(&mut self, unit: &UnitKey, now: Instant) {
        if self.entries.contains_key(unit) {
            self.set_state(unit, QueueState::Gated, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{GroupKey, PodKey};

    fn g(name: &str) -> UnitKey {
        UnitKey::Group(GroupKey::pod_group("ns", name))
    }

    fn cfg() -> BackoffConfig {
        BackoffConfig {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(4),
            max_unschedulable: Duration::from_secs(60),
        }
    }

    #[test]
    fn pops_by_priority_then_partial_then_arrival() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        q.touch(&g("low"), 0, false, t);
        q.touch(&g("first"), 10, false, t);
        q.touch(&g("second"), 10, false, t);
        q.touch(&g("partial"), 10, true, t);
        q.touch(&UnitKey::Pod(PodKey::new("ns", "p")), 5, false, t);
        let order: Vec<UnitKey> = std::iter::from_fn(|| q.pop(t)).collect();
        assert_eq!(
            order,
            vec![
                g("partial"),
                g("first"),
                g("second"),
                UnitKey::Pod(PodKey::new("ns", "p")),
                g("low")
            ]
        );
        assert_eq!(q.len(), 5, "popped units stay in flight until resolved");
    }

    #[test]
    fn touching_refreshes_priority() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        q.touch(&g("a"), 0, false, t);
        q.touch(&g("b"), 1, false, t);
        q.touch(&g("a"), 5, false, t);
        assert_eq!(q.pop(t), Some(g("a")));
        assert_eq!(q.depth().active, 1);
    }

    #[test]
    fn failures_back_off_and_wait_for_events() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        let a = g("a");
        q.touch(&a, 0, false, t);
        assert_eq!(q.pop(t), Some(a.clone()));
        assert_eq!(q.failed(&a, Failure::Unschedulable, t), Duration::from_secs(1));
        assert_eq!(q.state(&a), Some(QueueState::Unschedulable));
        // No event: nothing to pop, even after the backoff.
        assert_eq!(q.pop(t + Duration::from_secs(5)), None);
        // An event within the backoff moves it to backoff, then active when it expires.
        q.move_all_unschedulable(t + Duration::from_millis(500));
        assert_eq!(q.state(&a), Some(QueueState::Backoff));
        assert_eq!(q.next_wakeup(), Some(t + Duration::from_secs(1)));
        assert_eq!(q.pop(t + Duration::from_millis(900)), None);
        assert_eq!(q.pop(t + Duration::from_secs(1)), Some(a.clone()));
        // Second failure doubles, fourth is capped.
        assert_eq!(q.failed(&a, Failure::Unschedulable, t), Duration::from_secs(2));
        q.pop(t);
        assert_eq!(q.failed(&a, Failure::Error, t), Duration::from_secs(4));
        assert_eq!(
            q.state(&a),
            Some(QueueState::Backoff),
            "API errors retry on the backoff alone"
        );
        assert_eq!(q.failed(&a, Failure::Error, t), Duration::from_secs(4));
        assert_eq!(q.attempts(&a), 4);
        q.done(&a);
        assert!(q.is_empty());
    }

    #[test]
    fn an_event_after_the_backoff_activates_directly() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        let a = g("a");
        q.touch(&a, 0, false, t);
        q.pop(t);
        q.failed(&a, Failure::Unschedulable, t);
        q.touch(&a, 0, false, t + Duration::from_secs(2));
        assert_eq!(q.state(&a), Some(QueueState::Active));
    }

    #[test]
    fn unschedulable_units_are_retried_after_max_unschedulable() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        let a = g("a");
        q.touch(&a, 0, false, t);
        q.pop(t);
        q.failed(&a, Failure::Unschedulable, t);
        assert_eq!(q.next_wakeup(), Some(t + Duration::from_secs(60)));
        assert_eq!(q.pop(t + Duration::from_secs(59)), None);
        assert_eq!(q.pop(t + Duration::from_secs(60)), Some(a));
    }

    #[test]
    fn gated_units_wait_for_a_touch_and_cost_no_backoff() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        let a = g("a");
        q.touch(&a, 0, false, t);
        q.pop(t);
        q.gate(&a, t);
        assert_eq!(q.depth().gated, 1);
        q.move_all_unschedulable(t);
        assert_eq!(
            q.state(&a),
            Some(QueueState::Gated),
            "capacity events do not wake gated units"
        );
        assert_eq!(q.pop(t + Duration::from_secs(3600)), None);
        q.touch(&a, 0, false, t);
        assert_eq!(q.state(&a), Some(QueueState::Active));
        let mut by_type = [[0; ENTITY_TYPES.len()]; QUEUES.len()];
        by_type[0][1] = 1;
        assert_eq!(
            q.depth(),
            QueueDepth {
                active: 1,
                by_type,
                ..Default::default()
            }
        );
    }

    #[test]
    fn entities_are_counted_by_queue_and_type_through_every_move() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        let pod = UnitKey::Pod(PodKey::new("ns", "p"));
        let group = g("a");
        let composite = UnitKey::Group(GroupKey {
            kind: crate::core::model::GroupKind::CompositePodGroup,
            namespace: "ns".into(),
            name: "root".into(),
        });
        let check = |q: &SchedulingQueue| {
            let d = q.depth();
            let sums: Vec<usize> = d.by_type.iter().map(|row| row.iter().sum()).collect();
            assert_eq!(sums, vec![d.active, d.backoff, d.unschedulable, d.gated], "{d:?}");
        };
        for u in [&pod, &group, &composite] {
            q.touch(u, 0, false, t);
        }
        check(&q);
        assert_eq!(q.depth().by_type[0], [1, 1, 1]);
        let first = q.pop(t).unwrap();
        q.failed(&first, Failure::Error, t);
        check(&q);
        let second = q.pop(t).unwrap();
        q.failed(&second, Failure::Unschedulable, t);
        check(&q);
        let third = q.pop(t).unwrap();
        q.gate(&third, t);
        check(&q);
        // The backoff expires and the unschedulable unit times out: both move to active.
        let later = t + Duration::from_secs(3600);
        let popped = q.pop(later);
        check(&q);
        assert!(popped.is_some());
        q.remove(&pod);
        q.remove(&group);
        q.remove(&composite);
        check(&q);
        assert_eq!(q.depth(), QueueDepth::default());
    }

    #[test]
    fn parked_units_keep_their_attempts_and_activate_now_skips_backoff() {
        let mut q = SchedulingQueue::new(cfg());
        let t = Instant::now();
        let a = g("a");
        q.touch(&a, 0, false, t);
        q.pop(t);
        q.failed(&a, Failure::Unschedulable, t);
        q.touch(&a, 0, false, t);
        q.pop(t + Duration::from_secs(1));
        q.park(&a, t + Duration::from_secs(1));
        assert_eq!(q.attempts(&a), 1);
        q.activate_now(&a, t + Duration::from_secs(1));
        assert_eq!(q.pop(t + Duration::from_secs(1)), Some(a));
    }
}
