//! Text rendering of the view models, with ANSI colours when asked for. Pure: a view in, a string out.

use std::fmt::Write as _;

use super::model::Kind;
use super::preempted::{PreemptedView, Preemption, describe_preemptor};
use super::tree::{ConditionView, Elided, PodCounts, TreeNode};
use super::why::WhyView;

/// How text is styled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours.
    pub color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    fn green(&self, s: &str) -> String {
        self.paint("32", s)
    }
    fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }
    fn cyan(&self, s: &str) -> String {
        self.paint("36", s)
    }
}

/// Tree rendering options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeOptions {
    /// Pods listed per group (`None`: all; `Some(0)`: none, the group line counts them).
    pub max_pods: Option<usize>,
    /// Longest condition message shown (in characters); the JSON output has them whole.
    pub max_message: usize,
    /// Whether the groups' conditions are shown.
    pub conditions: bool,
}

impl Default for TreeOptions {
    fn default() -> Self {
        Self {
            max_pods: Some(20),
            max_message: 200,
            conditions: true,
        }
    }
}

/// `s` cut to `max` characters, with `…` when cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `4 pods: 4 bound, 4 Running`.
pub fn counts_text(c: &PodCounts) -> String {
    let mut parts = vec![format!("{} bound", c.bound)];
    for (n, what) in [
        (c.pending, "Pending"),
        (c.running, "Running"),
        (c.succeeded, "Succeeded"),
        (c.failed, "Failed"),
        (c.terminating, "terminating"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    format!(
        "{} pod{}: {}",
        c.total,
        if c.total == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

fn status_mark(style: Style, c: &ConditionView) -> String {
    // A DisruptionTarget is bad news when True; the scheduling conditions are good news when True.
    let good = if c.type_ == kwas_api_types::names::conditions::DISRUPTION_TARGET {
        c.status != "True"
    } else {
        c.status == "True"
    };
    match (c.status.as_str(), good) {
        ("True" | "False", true) => style.green(&format!("{}={}", c.type_, c.status)),
        ("True" | "False", false) => style.red(&format!("{}={}", c.type_, c.status)),
        _ => style.yellow(&format!("{}={}", c.type_, c.status)),
    }
}

fn condition_line(style: Style, c: &ConditionView, max: usize) -> String {
    let message = if c.message.is_empty() {
        String::new()
    } else {
        format!(": {}", shorten(&c.message, max))
    };
    format!("{} {}{message}", status_mark(style, c), style.dim(&c.reason))
}

fn phase_text(style: Style, n: &TreeNode) -> String {
    let phase = n.phase.as_deref().unwrap_or("Pending");
    let mut s = match phase {
        "Running" | "Succeeded" => style.green(phase),
        "Failed" => style.red(phase),
        _ => style.yellow(phase),
    };
    if n.terminating {
        s.push_str(&format!(" {}", style.yellow("(terminating)")));
    }
    s
}

fn head(style: Style, n: &TreeNode, namespace: Option<&str>) -> String {
    if let Some(why) = n.elided {
        // A group reached again or too deep: its name and why, nothing below.
        let mark = match why {
            Elided::Cycle | Elided::AlreadyShown => "↻",
            Elided::TooDeep => "…",
        };
        return format!(
            "{} {} {} {}",
            style.yellow(mark),
            style.bold(n.kind.as_str()),
            style.cyan(&n.name),
            style.dim(&why.note())
        );
    }
    let name = match (n.kind, namespace) {
        (Kind::Job | Kind::JobSet | Kind::Workload, Some(ns)) => format!("{ns}/{}", n.name),
        _ => n.name.clone(),
    };
    let mut parts: Vec<String> = vec![format!("{} {}", style.bold(n.kind.as_str()), style.cyan(&name))];
    if let Some(s) = &n.status {
        parts.push(match s.as_str() {
            "Complete" | "Completed" => style.green(s),
            "Failed" => style.red(s),
            _ => style.yellow(s),
        });
    }
    if let Some(p) = &n.policy {
        let min = p
            .min_count
            .map(|m| format!(" minCount={m}"))
            .or_else(|| p.min_group_count.map(|m| format!(" minGroupCount={m}")))
            .unwrap_or_default();
        parts.push(format!("{}{min}", p.mode));
    }
    if let Some(d) = &n.disruption_mode {
        parts.push(format!("disruption {d}"));
    }
    if let Some(p) = n.priority
        && n.kind != Kind::Pod
    {
        parts.push(format!("priority {p}"));
    }
    for t in &n.topology {
        let domains = if t.domains.is_empty() {
            style.dim("(not placed)")
        } else if t.domains.len() == 1 {
            style.green(&t.domains.join(","))
        } else {
            style.red(&t.domains.join(","))
        };
        parts.push(format!("{}={domains}", t.key));
    }
    if n.kind == Kind::Pod {
        parts.push(n.node.clone().unwrap_or_else(|| style.dim("(no node)")));
        parts.push(phase_text(style, n));
        if let Some(c) = n
            .conditions
            .iter()
            .find(|c| c.type_ == kwas_api_types::names::conditions::POD_SCHEDULED && c.status != "True")
        {
            parts.push(style.yellow(&c.reason));
        }
        if n.conditions
            .iter()
            .any(|c| c.type_ == kwas_api_types::names::conditions::DISRUPTION_TARGET && c.status == "True")
        {
            parts.push(style.red("DisruptionTarget"));
        }
    } else if let Some(c) = &n.pods {
        parts.push(counts_text(c));
    }
    parts.join("  ")
}

fn render_children(style: Style, n: &TreeNode, prefix: &str, opts: TreeOptions, out: &mut String) {
    let detail_prefix = if n.children.is_empty() {
        format!("{prefix}    ")
    } else {
        format!("{prefix}│   ")
    };
    if n.kind != Kind::Pod && opts.conditions {
        for c in &n.conditions {
            let _ = writeln!(out, "{detail_prefix}{}", condition_line(style, c, opts.max_message));
        }
    }
    let pods = n.children.iter().filter(|c| c.kind == Kind::Pod).count();
    let limit = match opts.max_pods {
        Some(m) if n.kind == Kind::PodGroup || n.kind == Kind::Job || n.kind == Kind::JobSet => m,
        _ => usize::MAX,
    };
    let mut shown: Vec<&TreeNode> = Vec::new();
    let mut pods_seen = 0usize;
    for c in &n.children {
        if c.kind == Kind::Pod {
            pods_seen += 1;
            if pods_seen > limit {
                continue;
            }
        }
        shown.push(c);
    }
    let hidden = pods.saturating_sub(limit);
    let more = hidden > 0 && limit > 0;
    for (i, c) in shown.iter().enumerate() {
        let last = i + 1 == shown.len() && !more;
        let branch = if last { "└── " } else { "├── " };
        let _ = writeln!(out, "{prefix}{branch}{}", head(style, c, None));
        let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
        render_children(style, c, &child_prefix, opts, out);
    }
    if more {
        let _ = writeln!(
            out,
            "{prefix}└── {}",
            style.dim(&format!(
                "… {hidden} more pod{} (--max-pods all lists every pod)",
                if hidden == 1 { "" } else { "s" }
            ))
        );
    }
}

/// The tree as text.
pub fn tree(style: Style, root: &TreeNode, namespace: &str, opts: TreeOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", head(style, root, Some(namespace)));
    render_children(style, root, "", opts, &mut out);
    out
}

fn age(now: Option<k8s_openapi::jiff::Timestamp>, time: &str) -> String {
    let Ok(t) = time.parse::<k8s_openapi::jiff::Timestamp>() else {
        return time.to_string();
    };
    let time = t.round(k8s_openapi::jiff::Unit::Second).unwrap_or(t).to_string();
    let Some(now) = now else {
        return time;
    };
    let secs = now.as_second().saturating_sub(t.as_second()).max(0);
    let ago = if secs < 120 {
        format!("{secs}s")
    } else if secs < 2 * 3600 {
        format!("{}m", secs / 60)
    } else if secs < 2 * 86400 {
        format!("{}h", secs / 3600)
    } else {
        format!("{}d", secs / 86400)
    };
    format!("{time} ({ago} ago)")
}

/// The answer of `why` as text.
pub fn why(style: Style, v: &WhyView, now: Option<k8s_openapi::jiff::Timestamp>) -> String {
    let mut out = String::new();
    let summary = if v.scheduled {
        style.green(&v.summary)
    } else {
        style.yellow(&v.summary)
    };
    let _ = writeln!(out, "{summary}");
    if !v.groups.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Groups (root first):"));
        for g in &v.groups {
            let policy = g
                .policy
                .as_ref()
                .map(|p| {
                    let min = p
                        .min_count
                        .map(|m| format!(" minCount={m}"))
                        .or_else(|| p.min_group_count.map(|m| format!(" minGroupCount={m}")))
                        .unwrap_or_default();
                    format!("  {}{min}", p.mode)
                })
                .unwrap_or_default();
            let keys = if g.topology_keys.is_empty() {
                String::new()
            } else {
                format!("  topology {}", g.topology_keys.join(", "))
            };
            let _ = writeln!(
                out,
                "  {} {}{policy}{keys}",
                style.bold(g.kind.as_str()),
                style.cyan(&g.name)
            );
            if g.conditions.is_empty() {
                let _ = writeln!(out, "    {}", style.dim("(no scheduling condition yet)"));
            }
            for c in &g.conditions {
                let _ = writeln!(out, "    {} {}", status_mark(style, c), style.dim(&c.reason));
                if !c.message.is_empty() {
                    let _ = writeln!(out, "      {}", c.message);
                }
            }
        }
    }
    if !v.pending.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Waiting pods (PodScheduled):"));
        for p in &v.pending {
            let names = if p.pods.len() > 5 {
                format!("{} and {} more", p.pods[..5].join(", "), p.pods.len() - 5)
            } else {
                p.pods.join(", ")
            };
            let reason = if p.reason.is_empty() {
                style.dim("(no PodScheduled condition yet)")
            } else {
                style.yellow(&p.reason)
            };
            let _ = writeln!(
                out,
                "  {} pod{} ({names}): {reason}",
                p.pods.len(),
                if p.pods.len() == 1 { "" } else { "s" }
            );
            if !p.message.is_empty() {
                let _ = writeln!(out, "    {}", p.message);
            }
        }
    }
    if let Some(e) = &v.last_failed_scheduling {
        let when = e
            .time
            .as_deref()
            .map(|t| format!(" at {}", age(now, t)))
            .unwrap_or_default();
        let times = if e.count > 1 {
            format!(", seen {} times", e.count)
        } else {
            String::new()
        };
        let history = if v.scheduled {
            " (from before it was scheduled)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "\n{} {}{when}{times}{history}:\n  {}",
            style.bold("Latest FailedScheduling event,"),
            e.object,
            e.message
        );
    }
    if !v.causes.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Reasons nodes were rejected:"));
        for c in &v.causes {
            let nodes = match (c.nodes, c.of_nodes) {
                (Some(n), Some(of)) => format!("{n}/{of} nodes: "),
                (Some(n), None) => format!("{n} nodes: "),
                _ => String::new(),
            };
            let _ = writeln!(out, "  - {nodes}{}", style.red(&c.reason));
        }
    }
    let quiet = v.scheduled && !v.preemption.considered;
    if !quiet {
        let explanation = if v.preemption.considered {
            v.preemption.explanation.clone()
        } else {
            style.dim(&v.preemption.explanation)
        };
        let _ = writeln!(out, "\n{} {explanation}", style.bold("Preemption:"));
        if !v.preemption.message.is_empty() {
            let _ = writeln!(out, "  preemption: {}", v.preemption.message);
        }
    }
    if !v.advice.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("What would have to change:"));
        for a in &v.advice {
            let _ = writeln!(out, "  - {a}");
        }
    }
    out
}

fn victims_priority(ps: &[&Preemption]) -> Option<i32> {
    let mut prios: Vec<i32> = ps.iter().filter_map(|p| p.victim.priority).collect();
    prios.sort_unstable();
    prios.dedup();
    (prios.len() == 1).then(|| prios[0])
}

fn by_line(style: Style, who: Option<&super::preempted::PreemptorView>, victims: Option<i32>) -> String {
    match who {
        Some(who) => {
            let over = match (who.priority, victims) {
                (Some(_), Some(v)) => format!(" over priority {v}"),
                _ => String::new(),
            };
            format!("by {}{over}", style.red(&describe_preemptor(who)))
        }
        None => style.dim("by the scheduler, no preemptor named"),
    }
}

/// The answer of `who-preempted` as text: the groups one by one, the pods by preemptor.
pub fn preempted(style: Style, v: &PreemptedView, now: Option<k8s_openapi::jiff::Timestamp>) -> String {
    let mut out = String::new();
    let summary = if v.preempted {
        style.red(&v.summary)
    } else {
        style.green(&v.summary)
    };
    let _ = writeln!(out, "{summary}");
    for p in v.preemptions.iter().filter(|p| p.victim.kind != Kind::Pod) {
        let prio = p.victim.priority.map(|x| format!("  priority {x}")).unwrap_or_default();
        let when = p
            .time
            .as_deref()
            .map(|t| format!("  at {}", age(now, t)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "\n{} {}{prio}{when}",
            style.bold(p.victim.kind.as_str()),
            style.cyan(&p.victim.name)
        );
        let inferred = if p.source == "inferred" {
            style.dim("  (named by its pods' Preempted events)")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  preempted {}{inferred}",
            by_line(style, p.preemptor.as_ref(), p.victim.priority)
        );
        let _ = writeln!(out, "  {}: {}", style.dim("DisruptionTarget"), p.message);
    }
    // Pods, grouped by preemptor in order of first appearance.
    let pods: Vec<&Preemption> = v.preemptions.iter().filter(|p| p.victim.kind == Kind::Pod).collect();
    let mut preemptors: Vec<Option<&super::preempted::PreemptorView>> = Vec::new();
    for p in &pods {
        if !preemptors.contains(&p.preemptor.as_ref()) {
            preemptors.push(p.preemptor.as_ref());
        }
    }
    for who in preemptors {
        let these: Vec<&Preemption> = pods.iter().copied().filter(|p| p.preemptor.as_ref() == who).collect();
        let n = these.len();
        let _ = writeln!(
            out,
            "\n{} pod{} preempted {}:",
            n,
            if n == 1 { "" } else { "s" },
            by_line(style, who, victims_priority(&these))
        );
        for p in &these {
            let mut line = format!("  {}", style.cyan(&p.victim.name));
            if !p.victim.exists {
                line.push_str(&format!(" {}", style.dim("(gone)")));
            }
            if let Some(node) = &p.victim.node {
                line.push_str(&format!("  on {node}"));
            }
            if victims_priority(&these).is_none()
                && let Some(prio) = p.victim.priority
            {
                line.push_str(&format!("  priority {prio}"));
            }
            if let Some(t) = &p.time {
                line.push_str(&format!("  at {}", age(now, t)));
            }
            let _ = writeln!(out, "{line}");
        }
        // The scheduler's words, once per distinct message shape.
        let mut said: Vec<&str> = Vec::new();
        for p in &these {
            if !said.contains(&p.message.as_str()) {
                said.push(&p.message);
            }
        }
        let what = if these.iter().all(|p| p.source == "event") {
            "Preempted event"
        } else {
            "message"
        };
        if let Some(first) = said.first() {
            let similar = if said.len() > 1 {
                format!(" (one of {} alike)", said.len())
            } else {
                String::new()
            };
            let _ = writeln!(out, "  {}{similar}: {first}", style.dim(what));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::tree::{Policy, Topology};

    fn node(kind: Kind, name: &str) -> TreeNode {
        TreeNode::new(kind, name.to_string())
    }

    fn sample() -> TreeNode {
        let mut job = node(Kind::Job, "train");
        job.status = Some("Active".into());
        job.pods = Some(PodCounts {
            total: 3,
            bound: 2,
            pending: 1,
            running: 2,
            ..PodCounts::default()
        });
        let mut g = node(Kind::PodGroup, "pg");
        g.policy = Some(Policy {
            mode: "gang".into(),
            min_count: Some(3),
            min_group_count: None,
        });
        g.topology = vec![Topology {
            key: "kwas.dev/rack".into(),
            domains: vec!["r1".into()],
        }];
        g.pods = job.pods;
        g.conditions = vec![ConditionView {
            type_: "PodGroupInitiallyScheduled".into(),
            status: "False".into(),
            reason: "Unschedulable".into(),
            message: "x".repeat(300),
            last_transition_time: None,
        }];
        for (name, n, phase) in [
            ("a", Some("n1"), "Running"),
            ("b", Some("n1"), "Running"),
            ("c", None, "Pending"),
        ] {
            let mut p = node(Kind::Pod, name);
            p.node = n.map(str::to_string);
            p.phase = Some(phase.into());
            g.children.push(p);
        }
        job.children = vec![g];
        job
    }

    #[test]
    fn a_plain_tree_reads_like_kubectl_tree() {
        let text = tree(Style::default(), &sample(), "default", TreeOptions::default());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Job default/train  Active  3 pods: 2 bound, 1 Pending, 2 Running"
        );
        assert_eq!(
            lines[1],
            "└── PodGroup pg  gang minCount=3  kwas.dev/rack=r1  3 pods: 2 bound, 1 Pending, 2 Running"
        );
        assert!(lines[2].starts_with("    │   PodGroupInitiallyScheduled=False Unschedulable: xxx"));
        assert!(
            lines[2].ends_with('…') && lines[2].chars().count() < 300,
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], "    ├── Pod a  n1  Running");
        assert_eq!(lines[5], "    └── Pod c  (no node)  Pending");
        assert!(!text.contains('\x1b'), "no colour unless asked");
    }

    #[test]
    fn pods_beyond_the_limit_are_counted() {
        let opts = TreeOptions {
            max_pods: Some(1),
            ..TreeOptions::default()
        };
        let text = tree(Style::default(), &sample(), "default", opts);
        assert!(text.contains("    ├── Pod a"), "{text}");
        assert!(text.contains("    └── … 2 more pods"), "{text}");
        let none = tree(
            Style::default(),
            &sample(),
            "default",
            TreeOptions {
                max_pods: Some(0),
                ..TreeOptions::default()
            },
        );
        assert!(!none.contains("Pod a") && !none.contains("more pods"), "{none}");
    }

    #[test]
    fn colours_only_when_asked() {
        let text = tree(Style { color: true }, &sample(), "default", TreeOptions::default());
        assert!(
            text.contains("\x1b[31mPodGroupInitiallyScheduled=False\x1b[0m"),
            "{text}"
        );
    }

    #[test]
    fn ages_are_relative_to_now() {
        let now: k8s_openapi::jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        assert_eq!(age(Some(now), "2026-01-01T00:09:30Z"), "2026-01-01T00:09:30Z (30s ago)");
        assert_eq!(age(Some(now), "2026-01-01T00:00:00Z"), "2026-01-01T00:00:00Z (10m ago)");
        assert_eq!(age(Some(now), "garbage"), "garbage");
        assert_eq!(age(None, "2026-01-01T00:00:00Z"), "2026-01-01T00:00:00Z");
        assert_eq!(shorten("héllo", 3), "hé…");
    }
}
