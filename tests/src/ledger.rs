//! The all-or-nothing invariant as a pure state machine, fed by watch events.
//!
//! # What "partial" means
//!
//! A gang PodGroup with `minCount` m is *partially bound* while between 1 and m-1 of its pods are bound (have
//! `spec.nodeName`) and it has never had m bound. A gang CompositePodGroup with `minGroupCount` k is
//! partially bound while between 1 and k-1 of its child groups are satisfied (a gang child: m pods bound; a
//! Basic child: one pod bound) and it has never had k. Once a group has been satisfied it stays so for this
//! check: later drops (pods completing and being replaced, a `single`-mode pod preempted, pods deleted with
//! their Job) are disruptions, not partial scheduling. A group recreated under the same name (a new uid) is
//! a new group.
//!
//! The scheduler decides a whole hierarchy at once and then binds its pods concurrently, and a watcher sees
//! those bindings one by one, so every gang passes through "partially bound" for the length of its binding
//! burst. The ledger therefore records each partial *interval* (from the first binding seen to the m-th, or
//! until the group fell back to nothing bound or was deleted) and [`GangLedger::violations`] reports the
//! intervals longer than the allowed burst. The allowance is generous (seconds; a burst normally takes
//! milliseconds) because the point is to catch a gang that *sits* partially bound (waiting for capacity, or
//! abandoned by a scheduler), which lasts until the end of the test, not to time the scheduler. Declared
//! outages (the scheduler stopped on purpose) extend the allowance of the intervals they overlap by their
//! length: a scheduler that dies mid-burst leaves a partial gang that its successor must complete within a
//! burst of coming back.
//!
//! A satisfied group that loses *everything* it had (every pod unbound or deleted, every child back to
//! nothing: a whole `all`-mode gang preempted, a JobSet restarted) must be gang-scheduled again, so it is
//! watched again as if new. Pods being deleted (`deletionTimestamp` set) no longer count as bound, since the
//! scheduler does not count them towards a minimum either; finished pods (`Succeeded`, `Failed`) still do.
//!
//! [`GangLedger::partial_now`] is the end-state check: after the system settles, no gang may be partially
//! bound at all.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::{Duration, Instant};

/// How a partial interval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalEnd {
    /// The group reached its minimum.
    Satisfied,
    /// Its bound pods (or satisfied children) went away before it reached its minimum.
    Abandoned,
    /// The group was deleted (or replaced by a new one of the same name).
    Deleted,
    /// Still open when the ledger was read.
    Open,
}

/// One stretch of time a group spent partially bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialInterval {
    /// `namespace/name`, with `composite ` in front for a CompositePodGroup.
    pub group: String,
    /// The group's minimum (`minCount` or `minGroupCount`) when the interval ended.
    pub minimum: u32,
    /// The most pods (or children) it had while partial.
    pub most: u32,
    /// When it started.
    pub start: Instant,
    /// When it ended (`now` for an open interval).
    pub end: Instant,
    /// How it ended.
    pub ended: IntervalEnd,
}

impl PartialInterval {
    /// Its length.
    pub fn length(&self) -> Duration {
        self.end.saturating_duration_since(self.start)
    }
}

/// An interval longer than its allowance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The interval.
    pub interval: PartialInterval,
    /// What it was allowed: the burst plus the outages it overlapped.
    pub allowed: Duration,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.interval;
        write!(
            f,
            "{} sat partially bound (up to {} of {}) for {:?}, allowed {:?}, ended {:?}",
            i.group,
            i.most,
            i.minimum,
            i.length(),
            self.allowed,
            i.ended
        )
    }
}

/// A group partially bound right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partial {
    /// `namespace/name` (with `composite ` in front for a CompositePodGroup).
    pub group: String,
    /// Pods bound (or children satisfied).
    pub bound: u32,
    /// Its minimum.
    pub minimum: u32,
}

impl fmt::Display for Partial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} has {} of {} bound", self.group, self.bound, self.minimum)
    }
}

/// Counts over everything the ledger saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Gang PodGroups seen.
    pub gangs: usize,
    /// Gang PodGroups that reached their minimum.
    pub gangs_satisfied: usize,
    /// Gang CompositePodGroups seen.
    pub composites: usize,
    /// Gang CompositePodGroups that reached their minimum.
    pub composites_satisfied: usize,
    /// Partial intervals recorded (closed and open).
    pub intervals: usize,
    /// The longest of them.
    pub longest: Duration,
}

#[derive(Debug, Clone)]
struct Group {
    uid: String,
    /// `Some(m)` for a gang, `None` for Basic (minimum 1, never partial).
    gang: Option<u32>,
    parent: Option<String>,
    composite: bool,
    satisfied: bool,
    partial_since: Option<Instant>,
    most: u32,
}

impl Group {
    fn minimum(&self) -> u32 {
        self.gang.unwrap_or(1).max(1)
    }
}

/// The ledger: groups, their bound pods, and the partial intervals so far.
#[derive(Debug, Clone)]
pub struct GangLedger {
    burst: Duration,
    groups: BTreeMap<String, Group>,
    /// Pod uid -> the group key it names.
    pods: HashMap<String, Option<String>>,
    bound: HashMap<String, BTreeSet<String>>,
    intervals: Vec<PartialInterval>,
    outages: Vec<(Instant, Option<Instant>)>,
    seen_gangs: BTreeSet<(String, String)>,
    satisfied_gangs: BTreeSet<(String, String)>,
}

fn pod_group_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

fn composite_key(namespace: &str, name: &str) -> String {
    format!("composite {namespace}/{name}")
}

impl GangLedger {
    /// An empty ledger allowing partial intervals of up to `burst` (plus overlapping outages).
    pub fn new(burst: Duration) -> Self {
        Self {
            burst,
            groups: BTreeMap::new(),
            pods: HashMap::new(),
            bound: HashMap::new(),
            intervals: Vec::new(),
            outages: Vec::new(),
            seen_gangs: BTreeSet::new(),
            satisfied_gangs: BTreeSet::new(),
        }
    }

    /// A pod was created or changed: `group` is its `spec.schedulingGroup.podGroupName`, `bound` whether it
    /// has a node.
    pub fn pod_applied(&mut self, now: Instant, namespace: &str, uid: &str, group: Option<&str>, bound: bool) {
        let key = group.map(|g| pod_group_key(namespace, g));
        let before = self.pods.insert(uid.to_string(), key.clone());
        if let Some(old) = before.flatten().filter(|g| Some(g) != key.as_ref()) {
            self.unbind(&old, uid);
            self.refresh(&old, now);
        }
        if let Some(k) = key {
            let set = self.bound.entry(k.clone()).or_default();
            if bound {
                set.insert(uid.to_string());
            } else {
                set.remove(uid);
            }
            self.refresh(&k, now);
        }
    }

    /// A pod was deleted.
    pub fn pod_deleted(&mut self, now: Instant, uid: &str) {
        if let Some(Some(k)) = self.pods.remove(uid) {
            self.unbind(&k, uid);
            self.refresh(&k, now);
        }
    }

    fn unbind(&mut self, group: &str, uid: &str) {
        if let Some(set) = self.bound.get_mut(group) {
            set.remove(uid);
            if set.is_empty() {
                self.bound.remove(group);
            }
        }
    }

    /// A PodGroup was created or changed: `gang_min` is its gang `minCount` (`None` for Basic), `parent`
    /// its `parentCompositePodGroupName`.
    pub fn pod_group_applied(
        &mut self,
        now: Instant,
        namespace: &str,
        name: &str,
        uid: &str,
        gang_min: Option<i32>,
        parent: Option<&str>,
    ) {
        let key = pod_group_key(namespace, name);
        let parent = parent.map(|p| composite_key(namespace, p));
        self.group_applied(now, key, uid, gang_min, parent, false);
    }

    /// A CompositePodGroup was created or changed: `gang_min` is its gang `minGroupCount` (`None` for
    /// Basic).
    pub fn composite_applied(
        &mut self,
        now: Instant,
        namespace: &str,
        name: &str,
        uid: &str,
        gang_min: Option<i32>,
        parent: Option<&str>,
    ) {
        let key = composite_key(namespace, name);
        let parent = parent.map(|p| composite_key(namespace, p));
        self.group_applied(now, key, uid, gang_min, parent, true);
    }

    fn group_applied(
        &mut self,
        now: Instant,
        key: String,
        uid: &str,
        gang_min: Option<i32>,
        parent: Option<String>,
        composite: bool,
    ) {
        if self.groups.get(&key).is_some_and(|g| g.uid != uid) {
            self.close(&key, now, IntervalEnd::Deleted);
            self.groups.remove(&key);
        }
        let gang = gang_min.map(|m| u32::try_from(m).unwrap_or(0));
        if gang.is_some() {
            self.seen_gangs.insert((key.clone(), uid.to_string()));
        }
        let old_parent = {
            let g = self.groups.entry(key.clone()).or_insert_with(|| Group {
                uid: uid.to_string(),
                gang,
                parent: parent.clone(),
                composite,
                satisfied: false,
                partial_since: None,
                most: 0,
            });
            g.gang = gang;
            std::mem::replace(&mut g.parent, parent)
        };
        self.refresh(&key, now);
        if let Some(p) = old_parent {
            self.refresh(&p, now);
        }
    }

    /// A PodGroup was deleted.
    pub fn pod_group_deleted(&mut self, now: Instant, namespace: &str, name: &str) {
        self.group_deleted(now, pod_group_key(namespace, name));
    }

    /// A CompositePodGroup was deleted.
    pub fn composite_deleted(&mut self, now: Instant, namespace: &str, name: &str) {
        self.group_deleted(now, composite_key(namespace, name));
    }

    fn group_deleted(&mut self, now: Instant, key: String) {
        self.close(&key, now, IntervalEnd::Deleted);
        if let Some(parent) = self.groups.remove(&key).and_then(|g| g.parent) {
            self.refresh(&parent, now);
        }
    }

    /// The scheduler was stopped on purpose at `now`.
    pub fn outage_begin(&mut self, now: Instant) {
        self.outages.push((now, None));
    }

    /// The scheduler is back (running and synced) at `now`.
    pub fn outage_end(&mut self, now: Instant) {
        if let Some(last) = self.outages.last_mut()
            && last.1.is_none()
        {
            last.1 = Some(now);
        }
    }

    /// How many of `key`'s pods are bound (leaf) or children satisfied (composite).
    fn count(&self, key: &str, group: &Group) -> u32 {
        let n = if group.composite {
            self.groups
                .values()
                .filter(|c| c.parent.as_deref() == Some(key) && c.satisfied)
                .count()
        } else {
            self.bound.get(key).map_or(0, BTreeSet::len)
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn close(&mut self, key: &str, now: Instant, ended: IntervalEnd) {
        if let Some(g) = self.groups.get_mut(key)
            && let Some(start) = g.partial_since.take()
        {
            self.intervals.push(PartialInterval {
                group: key.to_string(),
                minimum: g.minimum(),
                most: g.most,
                start,
                end: now,
                ended,
            });
            g.most = 0;
        }
    }

    fn refresh(&mut self, key: &str, now: Instant) {
        let Some(group) = self.groups.get(key) else { return };
        let count = self.count(key, group);
        let minimum = group.minimum();
        let parent = group.parent.clone();
        let uid = group.uid.clone();
        if group.satisfied {
            if count == 0 {
                // Everything it had is gone (a whole-gang preemption): its next pods are a new gang.
                if let Some(g) = self.groups.get_mut(key) {
                    g.satisfied = false;
                }
                if let Some(p) = parent {
                    self.refresh(&p, now);
                }
            }
            return;
        }
        if count >= minimum {
            self.close(key, now, IntervalEnd::Satisfied);
            if let Some(g) = self.groups.get_mut(key) {
                g.satisfied = true;
                if g.gang.is_some() {
                    self.satisfied_gangs.insert((key.to_string(), uid));
                }
            }
            if let Some(p) = parent {
                self.refresh(&p, now);
            }
        } else if count == 0 {
            self.close(key, now, IntervalEnd::Abandoned);
        } else if let Some(g) = self.groups.get_mut(key) {
            g.partial_since.get_or_insert(now);
            g.most = g.most.max(count);
        }
    }

    /// Every partial interval so far, the open ones ending at `now`.
    pub fn intervals(&self, now: Instant) -> Vec<PartialInterval> {
        let mut out = self.intervals.clone();
        for (key, g) in &self.groups {
            if let Some(start) = g.partial_since {
                out.push(PartialInterval {
                    group: key.clone(),
                    minimum: g.minimum(),
                    most: g.most,
                    start,
                    end: now,
                    ended: IntervalEnd::Open,
                });
            }
        }
        out
    }

    /// How much of `start..end` the declared outages cover (an outage not yet ended lasts until `end`).
    fn outage_overlap(&self, start: Instant, end: Instant) -> Duration {
        self.outages
            .iter()
            .map(|(from, to)| {
                let from = (*from).max(start);
                let to = to.unwrap_or(end).min(end);
                to.saturating_duration_since(from)
            })
            .sum()
    }

    /// The intervals, up to `now`, that lasted longer than the burst plus the outages they overlap.
    pub fn violations(&self, now: Instant) -> Vec<Violation> {
        self.intervals(now)
            .into_iter()
            .filter_map(|interval| {
                let allowed = self.burst + self.outage_overlap(interval.start, interval.end);
                (interval.length() > allowed).then_some(Violation { interval, allowed })
            })
            .collect()
    }

    /// The gangs partially bound right now (never satisfied, some but not enough bound).
    pub fn partial_now(&self) -> Vec<Partial> {
        self.groups
            .iter()
            .filter(|(_, g)| !g.satisfied && g.gang.is_some())
            .filter_map(|(key, g)| {
                let bound = self.count(key, g);
                (bound > 0).then(|| Partial {
                    group: key.clone(),
                    bound,
                    minimum: g.minimum(),
                })
            })
            .collect()
    }

    /// Counts over everything seen, with the open intervals ending at `now`.
    pub fn summary(&self, now: Instant) -> Summary {
        let intervals = self.intervals(now);
        let is_composite = |k: &String| k.starts_with("composite ");
        Summary {
            gangs: self.seen_gangs.iter().filter(|(k, _)| !is_composite(k)).count(),
            gangs_satisfied: self.satisfied_gangs.iter().filter(|(k, _)| !is_composite(k)).count(),
            composites: self.seen_gangs.iter().filter(|(k, _)| is_composite(k)).count(),
            composites_satisfied: self.satisfied_gangs.iter().filter(|(k, _)| is_composite(k)).count(),
            intervals: intervals.len(),
            longest: intervals.iter().map(PartialInterval::length).max().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "default";
    const BURST: Duration = Duration::from_secs(5);

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn a_gang_bound_in_one_burst_is_not_a_violation() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_group_applied(t0, NS, "g", "u1", Some(3), None);
        for i in 0..3 {
            l.pod_applied(at(t0, 1), NS, &format!("p{i}"), Some("g"), false);
        }
        for i in 0..3 {
            l.pod_applied(at(t0, 10 + i), NS, &format!("p{i}"), Some("g"), true);
        }
        assert!(l.violations(at(t0, 60_000)).is_empty());
        assert!(l.partial_now().is_empty());
        let s = l.summary(at(t0, 60_000));
        assert_eq!((s.gangs, s.gangs_satisfied, s.intervals), (1, 1, 1));
        assert_eq!(s.longest, Duration::from_millis(2));
    }

    #[test]
    fn a_gang_that_sits_partially_bound_is_a_violation_and_partial_now() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_group_applied(t0, NS, "g", "u1", Some(3), None);
        l.pod_applied(at(t0, 10), NS, "p0", Some("g"), true);
        l.pod_applied(at(t0, 11), NS, "p1", Some("g"), true);
        l.pod_applied(at(t0, 12), NS, "p2", Some("g"), false);
        assert!(l.violations(at(t0, 4_000)).is_empty(), "still within a burst");
        let v = l.violations(at(t0, 6_000));
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].interval.most, v[0].interval.minimum), (2, 3));
        assert_eq!(v[0].interval.ended, IntervalEnd::Open);
        assert_eq!(
            l.partial_now(),
            [Partial {
                group: "default/g".into(),
                bound: 2,
                minimum: 3
            }]
        );
        // Completing late closes the interval, but it stays a violation.
        l.pod_applied(at(t0, 7_000), NS, "p2", Some("g"), true);
        assert!(l.partial_now().is_empty());
        assert_eq!(l.violations(at(t0, 8_000))[0].interval.ended, IntervalEnd::Satisfied);
    }

    #[test]
    fn pods_seen_before_their_group_count_once_it_appears() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_applied(t0, NS, "p0", Some("g"), true);
        l.pod_applied(t0, NS, "p1", Some("g"), true);
        l.pod_group_applied(at(t0, 5), NS, "g", "u1", Some(2), None);
        assert_eq!(l.summary(at(t0, 10)).gangs_satisfied, 1);
        assert_eq!(l.summary(at(t0, 10)).intervals, 0);
    }

    #[test]
    fn drops_after_satisfaction_are_disruptions_not_partial_binding() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_group_applied(t0, NS, "g", "u1", Some(2), None);
        l.pod_applied(t0, NS, "p0", Some("g"), true);
        l.pod_applied(t0, NS, "p1", Some("g"), true);
        l.pod_deleted(at(t0, 100), "p0");
        assert!(l.partial_now().is_empty());
        assert!(l.violations(at(t0, 60_000)).is_empty());
    }

    #[test]
    fn a_gang_that_lost_everything_is_watched_again() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.composite_applied(t0, NS, "root", "r1", Some(1), None);
        l.pod_group_applied(t0, NS, "g", "u1", Some(2), Some("root"));
        l.pod_applied(t0, NS, "p0", Some("g"), true);
        l.pod_applied(t0, NS, "p1", Some("g"), true);
        l.pod_applied(at(t0, 10), NS, "p0", Some("g"), false);
        l.pod_deleted(at(t0, 10), "p1");
        // Replacements: one bound alone is partial again, for the group and its parent.
        l.pod_applied(at(t0, 20), NS, "p2", Some("g"), true);
        assert_eq!(l.partial_now().len(), 1);
        assert_eq!(l.violations(at(t0, 6_000)).len(), 1);
        l.pod_applied(at(t0, 6_100), NS, "p3", Some("g"), true);
        assert!(l.partial_now().is_empty());
        assert_eq!(l.summary(at(t0, 6_200)).composites_satisfied, 1);
    }

    #[test]
    fn a_recreated_group_is_a_new_gang() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_group_applied(t0, NS, "g", "u1", Some(2), None);
        l.pod_applied(t0, NS, "p0", Some("g"), true);
        l.pod_applied(t0, NS, "p1", Some("g"), true);
        l.pod_deleted(t0, "p0");
        l.pod_deleted(t0, "p1");
        l.pod_group_applied(at(t0, 10), NS, "g", "u2", Some(2), None);
        l.pod_applied(at(t0, 20), NS, "p2", Some("g"), true);
        assert_eq!(l.partial_now().len(), 1, "the new incarnation starts unsatisfied");
        assert_eq!(l.summary(at(t0, 30)).gangs, 2);
    }

    #[test]
    fn a_lowered_min_count_satisfies_the_gang() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_group_applied(t0, NS, "g", "u1", Some(4), None);
        for i in 0..3 {
            l.pod_applied(t0, NS, &format!("p{i}"), Some("g"), false);
        }
        l.pod_group_applied(at(t0, 100), NS, "g", "u1", Some(3), None);
        for i in 0..3 {
            l.pod_applied(at(t0, 200), NS, &format!("p{i}"), Some("g"), true);
        }
        assert!(l.partial_now().is_empty());
        assert_eq!(l.summary(at(t0, 300)).gangs_satisfied, 1);
    }

    #[test]
    fn a_composite_is_partial_while_only_some_children_are_satisfied() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.composite_applied(t0, NS, "root", "r1", Some(2), None);
        l.pod_group_applied(t0, NS, "a", "a1", Some(1), Some("root"));
        l.pod_group_applied(t0, NS, "b", "b1", Some(1), Some("root"));
        l.pod_applied(at(t0, 10), NS, "a0", Some("a"), true);
        assert_eq!(l.partial_now()[0].group, "composite default/root");
        assert_eq!(l.violations(at(t0, 6_000)).len(), 1);
        l.pod_applied(at(t0, 6_500), NS, "b0", Some("b"), true);
        assert!(l.partial_now().is_empty());
        let s = l.summary(at(t0, 7_000));
        assert_eq!((s.composites, s.composites_satisfied), (1, 1));
    }

    #[test]
    fn an_outage_extends_the_allowance_of_the_intervals_it_overlaps() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_group_applied(t0, NS, "g", "u1", Some(2), None);
        l.pod_applied(at(t0, 10), NS, "p0", Some("g"), true);
        l.outage_begin(at(t0, 20));
        assert!(
            l.violations(at(t0, 30_000)).is_empty(),
            "an open outage covers the interval"
        );
        l.outage_end(at(t0, 8_000));
        assert!(l.violations(at(t0, 12_000)).is_empty(), "8 s of outage + 5 s of burst");
        assert_eq!(l.violations(at(t0, 14_000)).len(), 1);
    }

    #[test]
    fn basic_groups_are_never_partial_and_abandoned_intervals_are_kept() {
        let t0 = Instant::now();
        let mut l = GangLedger::new(BURST);
        l.pod_group_applied(t0, NS, "basic", "b", None, None);
        l.pod_applied(t0, NS, "x", Some("basic"), true);
        l.pod_group_applied(t0, NS, "g", "u1", Some(3), None);
        l.pod_applied(t0, NS, "p0", Some("g"), true);
        l.pod_deleted(at(t0, 7_000), "p0");
        assert!(l.partial_now().is_empty());
        let v = l.violations(at(t0, 8_000));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].interval.ended, IntervalEnd::Abandoned);
        assert_eq!(l.summary(at(t0, 8_000)).gangs, 1);
    }
}
