//! Reading the scheduler's messages: kube-scheduler's `0/8 nodes are available: 4 Insufficient cpu, ...`
//! fragments, kwas' gang (`minCount (9) cannot be satisfied: 8 scheduled, 0 remaining`) and placement
//! (`0/2 kwas.dev/rack placements are available: kwas.dev/rack=b0-r0, b0-r1: ...`) explanations, the
//! PostFilter (`preemption: ...`) text, and the victims' `DisruptionTarget` and `Preempted` notes. Any
//! string is accepted; what is not recognised is left out, never guessed.

use kwas_scheduler::core::placement_message::PlacementMessage;
use serde::Serialize;

/// One `N/M nodes are available: <reasons>` fragment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodesFragment {
    /// Nodes that would take the pod.
    pub available: u64,
    /// Nodes considered.
    pub total: u64,
    /// Why the others would not, as counted.
    pub reasons: Vec<ReasonCount>,
}

/// A reason and the number of nodes it rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReasonCount {
    /// Nodes rejected for it (absent when the message gives no number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    /// The reason, in the scheduler's words (`Insufficient nvidia.com/gpu`).
    pub reason: String,
}

/// A gang that could not reach its minimum: `minCount (M) cannot be satisfied: S scheduled, R remaining`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GangShortfall {
    /// `minCount` (pods of a PodGroup) or `minGroupCount` (groups of a CompositePodGroup).
    pub of_groups: bool,
    /// The minimum.
    pub min: u64,
    /// Members that could be placed.
    pub scheduled: u64,
    /// Members not tried (they could not change the outcome).
    pub remaining: u64,
}

impl GangShortfall {
    /// How many more members would have to fit.
    pub fn short(&self) -> u64 {
        self.min
            .saturating_sub(self.scheduled.saturating_add(self.remaining))
            .max(1)
    }
}

/// A topology constraint no domain satisfied: `0/T KEY placements are available: KEY=v1, v2: ...`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placements {
    /// The node label key.
    pub key: String,
    /// The domains there are.
    pub total: u64,
    /// The domains named as tried (at most three per explanation, as the scheduler lists them).
    pub tried: Vec<String>,
}

/// Everything recognised in one message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Parsed {
    /// The node fragments, outermost first.
    pub nodes: Vec<NodesFragment>,
    /// The gang shortfalls, in order (a placement message has one per domain tried).
    pub gangs: Vec<GangShortfall>,
    /// The placement explanation.
    pub placements: Option<Placements>,
    /// The PostFilter text after `preemption: `.
    pub preemption: Option<String>,
}

/// Splits off the PostFilter part: (`filter part`, `text after "preemption: "`).
pub fn split_preemption(msg: &str) -> (&str, Option<&str>) {
    const P: &str = "preemption: ";
    let mut from = 0;
    let mut found = None;
    // The last `preemption: ` that starts the message or follows a space.
    while let Some(rel) = msg[from..].find(P) {
        let at = from + rel;
        if at == 0 || msg.as_bytes()[at - 1] == b' ' {
            found = Some(at);
        }
        from = at + P.len();
    }
    match found {
        Some(at) => (msg[..at].trim_end(), Some(msg[at + P.len()..].trim())),
        None => (msg, None),
    }
}

/// The number written at the end of `head` and the one before a `/` ahead of it: `... 0/8` -> (0, 8).
fn trailing_fraction(head: &str) -> Option<(u64, u64)> {
    let b = head.as_bytes();
    let mut i = b.len();
    while i > 0 && b[i - 1].is_ascii_digit() {
        i -= 1;
    }
    let total = head[i..].parse::<u64>().ok()?;
    if i == 0 || b[i - 1] != b'/' {
        return None;
    }
    let slash = i - 1;
    let mut k = slash;
    while k > 0 && b[k - 1].is_ascii_digit() {
        k -= 1;
    }
    let available = head[k..slash].parse::<u64>().ok()?;
    Some((available, total))
}

/// The reasons list of a fragment: up to `. `, `.;`, `; ` or the end, without the closing period.
fn cut_reasons(r: &str) -> &str {
    let end = [". ", ".;", "; "]
        .iter()
        .filter_map(|t| r.find(t))
        .min()
        .unwrap_or(r.len());
    r[..end].trim_end_matches('.').trim()
}

fn starts_with_count(s: &str) -> bool {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && s.as_bytes().get(digits) == Some(&b' ')
}

/// `4 Insufficient cpu, 2 node(s) were unschedulable` -> the counted reasons.
pub fn parse_reasons(r: &str) -> Vec<ReasonCount> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (idx, _) in r.match_indices(", ") {
        if idx >= start && starts_with_count(&r[idx + 2..]) {
            parts.push(&r[start..idx]);
            start = idx + 2;
        }
    }
    parts.push(&r[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once(' ') {
            Some((n, reason)) if starts_with_count(p) => ReasonCount {
                nodes: n.parse().ok(),
                reason: reason.trim().to_string(),
            },
            _ => ReasonCount {
                nodes: None,
                reason: p.to_string(),
            },
        })
        .collect()
}

fn nodes_fragments(text: &str) -> Vec<NodesFragment> {
    const NODES: &str = " nodes are available";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find(NODES) {
        let at = from + rel;
        let after = at + NODES.len();
        if let Some((available, total)) = trailing_fraction(&text[..at]) {
            let reasons = text[after..]
                .strip_prefix(": ")
                .map(|r| parse_reasons(cut_reasons(r)))
                .unwrap_or_default();
            out.push(NodesFragment {
                available,
                total,
                reasons,
            });
        }
        from = after;
    }
    out
}

fn gang_shortfalls(text: &str) -> Vec<GangShortfall> {
    const CANNOT: &str = ") cannot be satisfied: ";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find(CANNOT) {
        let at = from + rel;
        from = at + CANNOT.len();
        let head = &text[..at];
        let Some(open) = head.rfind(" (").or_else(|| head.rfind('(')) else {
            continue;
        };
        let word = head[..open].rsplit(' ').next().unwrap_or_default();
        let of_groups = match word {
            "minCount" => false,
            "minGroupCount" => true,
            _ => continue,
        };
        let min_text = head[open..].trim_start_matches([' ', '(']);
        let Ok(min) = min_text.parse::<u64>() else { continue };
        let rest = &text[from..];
        let mut scheduled = None;
        let mut remaining = None;
        for part in rest.split([',', ':']).take(2) {
            let part = part.trim();
            if let Some(n) = part.strip_suffix(" scheduled") {
                scheduled = n.trim().parse::<u64>().ok();
            } else if let Some(n) = part.strip_suffix(" remaining") {
                remaining = n.trim().parse::<u64>().ok();
            }
        }
        if let (Some(scheduled), Some(remaining)) = (scheduled, remaining) {
            out.push(GangShortfall {
                of_groups,
                min,
                scheduled,
                remaining,
            });
        }
    }
    out
}

/// The placement message in `text` (it may follow a group's own explanation), read with the
/// scheduler's parser, [`PlacementMessage`], which sits next to the formatter.
fn placements(text: &str) -> Option<Placements> {
    const P: &str = " placements are available";
    let at = text.find(P)?;
    // Back from the key to the `0/T` it follows.
    let space = text[..at].rfind(' ')?;
    let start = text[..space]
        .rfind(|c: char| !(c.is_ascii_digit() || c == '/'))
        .map_or(0, |i| i + 1);
    match text[start..].parse::<PlacementMessage>().ok()? {
        PlacementMessage::Unavailable { key, total, failures } => {
            let mut tried: Vec<String> = Vec::new();
            for v in failures.into_iter().flat_map(|f| f.values) {
                if !v.is_empty() && !tried.contains(&v) {
                    tried.push(v);
                }
            }
            Some(Placements {
                key,
                total: total as u64,
                tried,
            })
        }
        PlacementMessage::NoDomains { .. } => None,
    }
}

/// Reads one scheduler message.
pub fn parse(msg: &str) -> Parsed {
    let (filter, preemption) = split_preemption(msg);
    Parsed {
        nodes: nodes_fragments(filter),
        gangs: gang_shortfalls(filter),
        placements: placements(filter),
        preemption: preemption.map(str::to_string),
    }
}

/// What the PostFilter text says about preemption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PreemptionOutcome {
    /// Not tried: `preemptionPolicy: Never`.
    NotEligible,
    /// Tried: no lower-priority victims would make it fit.
    NoVictims,
    /// Not tried: what rejects the pods does not change by evicting pods.
    NotHelpful,
    /// Victims are being evicted; the unit waits for them.
    InProgress,
    /// Some other PostFilter text.
    Other,
    /// The messages say nothing about preemption.
    NotRecorded,
}

impl PreemptionOutcome {
    /// Whether the scheduler considered preemption at all.
    pub fn considered(self) -> bool {
        !matches!(self, PreemptionOutcome::NotRecorded)
    }
}

/// The group condition message of a unit waiting for its victims (the scheduler's
/// `WAITING_FOR_PREEMPTION`).
pub const WAITING_FOR_PREEMPTION: &str = "waiting for podgroup preemption to complete";

/// Classifies a PostFilter text.
pub fn preemption_outcome(text: &str) -> PreemptionOutcome {
    let t = text.to_ascii_lowercase();
    if t.contains("not eligible") {
        PreemptionOutcome::NotEligible
    } else if t.contains("no preemption victims found") || t.contains("no set of lower-priority victims") {
        PreemptionOutcome::NoVictims
    } else if t.contains("not helpful") {
        PreemptionOutcome::NotHelpful
    } else if t.contains(WAITING_FOR_PREEMPTION) {
        PreemptionOutcome::InProgress
    } else {
        PreemptionOutcome::Other
    }
}

/// The preemptor a victim's note or condition names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Preemptor {
    /// `podgroup`, `compositepodgroup` or `pod` (as written; `workload` in the scheduler's retry note).
    pub kind: String,
    /// Its namespace, when named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name (a pod preemptor's event names its UID, as upstream's does), when named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its priority, when written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The node the victim was on, when written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

fn split_ref(r: &str) -> (Option<String>, Option<String>) {
    match r.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() => (Some(ns.to_string()), Some(name.to_string())),
        _ if !r.is_empty() => (None, Some(r.to_string())),
        _ => (None, None),
    }
}

/// Reads a victim's `DisruptionTarget` message: `<scheduler>: preempting to accommodate a higher priority
/// <kind>` and the form naming the preemptor, `... <kind> <namespace>/<name> (priority <P>)`.
pub fn parse_disruption(msg: &str) -> Option<Preemptor> {
    const P: &str = "preempting to accommodate a higher priority ";
    let at = msg.find(P)?;
    let rest = msg[at + P.len()..].trim();
    let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    if kind.is_empty() {
        return None;
    }
    let rest = rest.trim();
    let (object, priority) = match rest.split_once(" (priority ") {
        Some((o, p)) => (o.trim(), p.trim_end_matches(')').trim().parse::<i64>().ok()),
        None => (rest, None),
    };
    let (namespace, name) = split_ref(object.split_whitespace().next().unwrap_or_default());
    Some(Preemptor {
        kind: kind.to_string(),
        namespace,
        name,
        priority,
        node: None,
    })
}

/// Reads a `Preempted` event's note: `Preempted by <kind> <namespace>/<name> on node <node>` (a pod
/// preemptor is named by UID).
pub fn parse_preempted_note(note: &str) -> Option<Preemptor> {
    const P: &str = "Preempted by ";
    let rest = note.trim().strip_prefix(P)?;
    let (kind, rest) = rest.split_once(' ')?;
    let (object, node) = match rest.split_once(" on node ") {
        Some((o, n)) => (o.trim(), Some(n.trim().to_string()).filter(|n| !n.is_empty())),
        None => (rest.trim(), None),
    };
    let (namespace, name) = split_ref(object);
    Some(Preemptor {
        kind: kind.to_string(),
        namespace,
        name,
        priority: None,
        node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gang_of_gpus_too_big_for_any_rack() {
        let m = "0/2 kwas.dev/rack placements are available: kwas.dev/rack=b0-r0, b0-r1: minCount (5) cannot be satisfied: 4 scheduled, 0 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: no set of lower-priority victims makes the pod group schedulable.";
        let p = parse(m);
        assert_eq!(
            p.placements,
            Some(Placements {
                key: "kwas.dev/rack".into(),
                total: 2,
                tried: vec!["b0-r0".into(), "b0-r1".into()]
            })
        );
        assert_eq!(
            p.gangs,
            vec![GangShortfall {
                of_groups: false,
                min: 5,
                scheduled: 4,
                remaining: 0
            }]
        );
        assert_eq!(p.gangs[0].short(), 1);
        assert_eq!(
            p.nodes,
            vec![NodesFragment {
                available: 0,
                total: 4,
                reasons: vec![ReasonCount {
                    nodes: Some(4),
                    reason: "Insufficient nvidia.com/gpu".into()
                }]
            }]
        );
        assert_eq!(
            preemption_outcome(p.preemption.as_deref().unwrap()),
            PreemptionOutcome::NoVictims
        );
    }

    #[test]
    fn every_domain_tried_is_read() {
        let p = parse(
            "0/2 kwas.dev/rack placements are available: kwas.dev/rack=b0-r0: minCount (5) cannot be satisfied: 3 scheduled, 1 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.; kwas.dev/rack=b0-r1: minCount (5) cannot be satisfied: 4 scheduled, 0 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: no set of lower-priority victims makes the pod group schedulable.",
        );
        let scheduled: Vec<u64> = p.gangs.iter().map(|g| g.scheduled).collect();
        assert_eq!(scheduled, [3, 4]);
        assert_eq!(p.nodes.len(), 2);
        assert_eq!(p.placements.unwrap().tried, ["b0-r0", "b0-r1"]);
    }

    #[test]
    fn upstream_pod_messages() {
        let p = parse(
            "0/8 nodes are available: 3 Insufficient cpu, 4 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: 0/8 nodes are available: 8 No preemption victims found for incoming pod.",
        );
        let reasons: Vec<(Option<u64>, &str)> = p.nodes[0]
            .reasons
            .iter()
            .map(|r| (r.nodes, r.reason.as_str()))
            .collect();
        assert_eq!(
            reasons,
            [
                (Some(3), "Insufficient cpu"),
                (Some(4), "node(s) didn't match pod anti-affinity rules"),
                (
                    Some(1),
                    "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
                ),
            ]
        );
        assert_eq!(p.nodes.len(), 1, "the PostFilter's fragment is not a filter reason");
        assert_eq!(
            preemption_outcome(p.preemption.as_deref().unwrap()),
            PreemptionOutcome::NoVictims
        );
        assert_eq!(
            preemption_outcome(&parse("0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.").preemption.unwrap()),
            PreemptionOutcome::NotEligible
        );
        assert_eq!(
            preemption_outcome("0/2 nodes are available: 2 Preemption is not helpful for scheduling."),
            PreemptionOutcome::NotHelpful
        );
        assert_eq!(
            preemption_outcome("pod group is waiting for podgroup preemption to complete"),
            PreemptionOutcome::InProgress
        );
        assert_eq!(parse("0/3 nodes are available").nodes[0].reasons, vec![]);
    }

    #[test]
    fn composite_messages_name_the_group_count() {
        let p = parse(
            "minGroupCount (3) cannot be satisfied: 1 scheduled, 0 remaining: PodGroup default/w in kwas.dev/block=b0: minCount (4) cannot be satisfied: 0 scheduled, 3 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        );
        let g = p.gangs[0];
        assert!(g.of_groups);
        assert_eq!((g.min, g.scheduled, g.remaining, g.short()), (3, 1, 0, 2));
        assert_eq!((p.gangs[1].min, p.gangs[1].of_groups), (4, false), "the member's own");
        assert_eq!(p.nodes[0].reasons[0].reason, "Insufficient nvidia.com/gpu");
    }

    #[test]
    fn hostile_messages_are_read_without_guessing() {
        for m in [
            "",
            "preemption: ",
            "/ nodes are available: ",
            "99999999999999999999999/1 nodes are available: 1 x",
            "minCount (",
            "minCount (x) cannot be satisfied: a scheduled, b remaining",
            ") cannot be satisfied: ",
            "0/ placements are available",
            " placements are available",
            "é nodes are available: é, ü",
            "0/8 nodes are available: , , 3",
        ] {
            let _ = parse(m);
            let _ = parse_disruption(m);
            let _ = parse_preempted_note(m);
        }
        let huge = parse(
            "minCount (18446744073709551615) cannot be satisfied: 18446744073709551615 scheduled, 18446744073709551615 remaining",
        );
        assert_eq!(huge.gangs[0].short(), 1);
        let unknown = parse("0/5 nodes are available: 5 node(s) were struck by lightning.");
        assert_eq!(unknown.nodes[0].reasons[0].reason, "node(s) were struck by lightning");
    }

    #[test]
    fn victims_name_their_preemptor_in_either_form() {
        assert_eq!(
            parse_disruption("kwas-scheduler: preempting to accommodate a higher priority podgroup"),
            Some(Preemptor {
                kind: "podgroup".into(),
                ..Preemptor::default()
            })
        );
        assert_eq!(
            parse_disruption(
                "kwas-scheduler: preempting to accommodate a higher priority compositepodgroup ns/big (priority 1000)"
            ),
            Some(Preemptor {
                kind: "compositepodgroup".into(),
                namespace: Some("ns".into()),
                name: Some("big".into()),
                priority: Some(1000),
                node: None,
            })
        );
        assert_eq!(parse_disruption("the gang stayed below its minimum"), None);
        assert_eq!(
            parse_preempted_note("Preempted by podgroup default/urgent-pg on node node-b0-r0-n1"),
            Some(Preemptor {
                kind: "podgroup".into(),
                namespace: Some("default".into()),
                name: Some("urgent-pg".into()),
                priority: None,
                node: Some("node-b0-r0-n1".into()),
            })
        );
        let pod = parse_preempted_note("Preempted by pod 5e25b286-dc64 on node n1").unwrap();
        assert_eq!((pod.namespace, pod.name.as_deref()), (None, Some("5e25b286-dc64")));
        assert_eq!(
            parse_preempted_note("Preempted: the eviction of this victim was retried"),
            None
        );
    }
}
