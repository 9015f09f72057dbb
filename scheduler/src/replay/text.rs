//! The report for people: what would happen, grouped so a gang of a hundred pods with one message is
//! one entry.

use std::fmt::Write as _;

use super::run::{Recorded, ReplayReport, Stop};

/// At most this many pod names are listed for one message.
const NAMES_SHOWN: usize = 8;

fn names(list: &[&str]) -> String {
    let mut s = list.iter().take(NAMES_SHOWN).copied().collect::<Vec<_>>().join(", ");
    if list.len() > NAMES_SHOWN {
        let _ = write!(s, " and {} more", list.len() - NAMES_SHOWN);
    }
    s
}

fn live_note(live: Option<&Recorded>, status: &str, reason: &str, message: &str) -> String {
    match live {
        Some(l) if l.same(status, reason, message) => "      (the same in the snapshot)\n".to_string(),
        Some(l) => format!(
            "      (the snapshot says: {} ({}): {})\n",
            l.status, l.reason, l.message
        ),
        None => String::new(),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl ReplayReport {
    /// The report as text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let s_ = &mut s;
        let objects = crate::runtime::informers::Kind::ALL
            .iter()
            .filter_map(|k| {
                self.snapshot
                    .objects
                    .get(k.as_str())
                    .map(|n| format!("{n} {}", k.as_str()))
            })
            .collect::<Vec<_>>()
            .join(", ");
        let taken = match (&self.snapshot.taken_at, &self.snapshot.server_version) {
            (Some(t), Some(v)) => format!(" taken at {t} (server {v})"),
            (Some(t), None) => format!(" taken at {t}"),
            (None, Some(v)) => format!(" (server {v})"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            s_,
            "Snapshot{taken}: {}.",
            if objects.is_empty() {
                "no objects".to_string()
            } else {
                objects
            }
        );
        let _ = writeln!(
            s_,
            "Pods: {} bound, {} pending for {}.",
            self.snapshot.bound_pods,
            self.snapshot.pending_pods,
            self.scheduler_names.join(", ")
        );
        let simulated = self.simulated_millis as f64 / 1000.0;
        let why = match self.stopped {
            Stop::Quiet => "the queue is quiet".to_string(),
            Stop::Horizon => format!(
                "nothing else is due within the {}s horizon (unschedulable units are retried on a cluster change)",
                self.horizon_seconds
            ),
            Stop::MaxCycles => "stopped at the maximum number of cycles with units still ready".to_string(),
        };
        let _ = writeln!(
            s_,
            "Replayed {} over {simulated}s of simulated time from {}: {why}.",
            plural(
                usize::try_from(self.cycles).unwrap_or(usize::MAX),
                "scheduling cycle",
                "scheduling cycles"
            ),
            self.clock
        );

        let _ = writeln!(s_, "\nBindings ({}):", self.bindings.len());
        if self.bindings.is_empty() {
            let _ = writeln!(s_, "  none");
        }
        for b in &self.bindings {
            match &b.pod_group {
                Some(g) => {
                    let _ = writeln!(s_, "  {} -> {}  (PodGroup {g})", b.pod, b.node);
                }
                None => {
                    let _ = writeln!(s_, "  {} -> {}", b.pod, b.node);
                }
            }
        }

        if !self.preemptions.is_empty() {
            let _ = writeln!(s_, "\nPreemptions ({}):", self.preemptions.len());
            for p in &self.preemptions {
                let who = match &p.preemptor {
                    Some(x) => format!("{x} preempts"),
                    None if p.action == "Releasing" => "released".to_string(),
                    None => "evicted again".to_string(),
                };
                let _ = writeln!(s_, "  {who} {}:", plural(p.victims.len(), "pod", "pods"));
                for v in &p.victims {
                    match &v.node {
                        Some(n) => {
                            let _ = writeln!(s_, "    {} on {n}", v.pod);
                        }
                        None => {
                            let _ = writeln!(s_, "    {}", v.pod);
                        }
                    }
                }
                let _ = writeln!(s_, "    {}", p.message);
            }
        }

        if !self.nominations.is_empty() {
            let _ = writeln!(s_, "\nNominations ({}):", self.nominations.len());
            for n in &self.nominations {
                let _ = writeln!(s_, "  {} -> {}", n.pod, n.node.as_deref().unwrap_or("(cleared)"));
            }
        }

        let groups = self.last_group_conditions();
        let _ = writeln!(s_, "\nGroup conditions ({}):", groups.len());
        if groups.is_empty() {
            let _ = writeln!(s_, "  none");
        }
        for c in groups {
            let _ = writeln!(
                s_,
                "  {}: {}={} ({})\n      {}",
                c.group, c.type_, c.status, c.reason, c.message
            );
            s_.push_str(&live_note(c.live.as_ref(), &c.status, &c.reason, &c.message));
        }

        // Pods left unbound with the same last condition (and the same relation to the snapshot)
        // together; the conditions of pods bound later are in the JSON report.
        let bound: std::collections::HashSet<&str> = self.bindings.iter().map(|b| b.pod.as_str()).collect();
        let mut by_condition: Vec<(String, Vec<&str>)> = Vec::new();
        for c in self.last_pod_conditions() {
            if bound.contains(c.pod.as_str()) {
                continue;
            }
            let head = format!(
                "{}={} ({})\n      {}\n{}",
                c.type_,
                c.status,
                c.reason,
                c.message,
                live_note(c.live.as_ref(), &c.status, &c.reason, &c.message)
            );
            match by_condition.iter_mut().find(|(h, _)| *h == head) {
                Some((_, pods)) => pods.push(&c.pod),
                None => by_condition.push((head, vec![&c.pod])),
            }
        }
        let n: usize = by_condition.iter().map(|(_, p)| p.len()).sum();
        let _ = writeln!(
            s_,
            "\nPod conditions of unbound pods ({}, the last change of each):",
            plural(n, "pod", "pods")
        );
        if by_condition.is_empty() {
            let _ = writeln!(s_, "  none");
        }
        for (head, pods) in &by_condition {
            let _ = write!(s_, "  {}:\n    {head}", names(pods));
        }

        let _ = writeln!(s_, "\nStill pending ({}):", self.pending.len());
        if self.pending.is_empty() {
            let _ = writeln!(s_, "  none");
        } else {
            let pods: Vec<&str> = self.pending.iter().map(|p| p.pod.as_str()).collect();
            let _ = writeln!(s_, "  {}", names(&pods));
        }
        if !self.waiting_on_preemption.is_empty() {
            let _ = writeln!(
                s_,
                "\nWaiting for preemption victims: {}",
                self.waiting_on_preemption.join(", ")
            );
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(s_, "\nWarnings:");
            for w in &self.warnings {
                let _ = writeln!(s_, "  {w}");
            }
        }
        s
    }
}
