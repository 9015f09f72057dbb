//! `why`: the scheduler's last reasons for a whole gang (its groups' conditions, each waiting pod's
//! `PodScheduled` message, the latest `FailedScheduling` event), in its own words, what would have to
//! change for it to fit, and whether preemption was considered. Pure: a [`Snapshot`] in, a [`WhyView`]
//! out.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::ResourceExt;
use kwas_api_types::names::{conditions, events};
use serde::Serialize;

use super::message::{self, GangShortfall, Parsed, Placements, PreemptionOutcome};
use super::model::{Kind, ObjectRef, Snapshot, node_of, pod_condition, pod_group_of};
use super::tree::{self, ConditionView, Policy, TreeNode};

/// A group of the gang and its scheduling conditions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupWhy {
    /// `PodGroup` or `CompositePodGroup`.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Its policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Its topology constraint keys.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_keys: Vec<String>,
    /// `...InitiallyScheduled`, `...Satisfied` and `DisruptionTarget`, as they stand.
    pub conditions: Vec<ConditionView>,
}

/// Waiting pods that share one reason and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPods {
    /// The `PodScheduled` reason (empty when the pod has no such condition yet).
    pub reason: String,
    /// The `PodScheduled` message.
    pub message: String,
    /// The pods, by name.
    pub pods: Vec<String>,
}

/// An event, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    /// `kind/name` of the object it is about.
    pub object: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
    /// When it was last seen (RFC 3339), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// How often it was seen.
    pub count: i64,
}

/// One reason nodes were rejected, with what would make it go away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    /// The reason, in the scheduler's words.
    pub reason: String,
    /// The most nodes it rejected in one message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    /// Out of how many nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of_nodes: Option<u64>,
    /// What would have to change (absent for a reason kwas has no advice for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

/// What the messages say about preemption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionView {
    /// Whether the scheduler considered preemption.
    pub considered: bool,
    /// The outcome.
    pub outcome: PreemptionOutcome,
    /// The PostFilter text, in the scheduler's words (empty when none).
    pub message: String,
    /// What it means.
    pub explanation: String,
}

/// The answer of `why`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhyView {
    /// `Why`.
    pub kind: &'static str,
    /// The namespace.
    pub namespace: String,
    /// What was asked about.
    pub target: ObjectRef,
    /// Whether nothing of it waits to be scheduled.
    pub scheduled: bool,
    /// Pods considered.
    pub pod_count: usize,
    /// Of which waiting to be scheduled.
    pub pending_count: usize,
    /// One line.
    pub summary: String,
    /// The groups of the gang, root first.
    pub groups: Vec<GroupWhy>,
    /// The waiting pods, grouped by message.
    pub pending: Vec<PendingPods>,
    /// The latest `FailedScheduling` event about the gang's pods or groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failed_scheduling: Option<EventView>,
    /// The reasons nodes were rejected.
    pub causes: Vec<Cause>,
    /// The gang minimums that were not reached: per level (pods of a PodGroup, groups of a
    /// CompositePodGroup), where the most members fit.
    pub shortfalls: Vec<GangShortfall>,
    /// Topology constraints no domain satisfied.
    pub placements: Vec<Placements>,
    /// Preemption.
    pub preemption: PreemptionView,
    /// What would have to change, most specific first.
    pub advice: Vec<String>,
}

/// The time an event was last seen.
pub fn event_time(e: &Event) -> Option<k8s_openapi::jiff::Timestamp> {
    e.series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref().map(|t| t.0))
        .or_else(|| e.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// An event as shown.
pub fn event_view(e: &Event) -> EventView {
    let o = &e.involved_object;
    EventView {
        object: format!(
            "{}/{}",
            o.kind.as_deref().unwrap_or("object").to_ascii_lowercase(),
            o.name.as_deref().unwrap_or_default()
        ),
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
        time: event_time(e).map(|t| t.to_string()),
        count: e
            .series
            .as_ref()
            .and_then(|s| s.count)
            .or(e.count)
            .unwrap_or(1)
            .max(1)
            .into(),
    }
}

/// The groups and pods a target stands for.
struct Scope<'a> {
    /// Group nodes (with their conditions), root first.
    groups: Vec<TreeNode>,
    pods: Vec<&'a Pod>,
}

fn group_nodes(t: &TreeNode) -> Vec<TreeNode> {
    t.walk()
        .into_iter()
        .filter(|n| matches!(n.kind, Kind::PodGroup | Kind::CompositePodGroup) && n.elided.is_none())
        .map(|n| TreeNode {
            children: Vec::new(),
            ..n.clone()
        })
        .collect()
}

fn scope<'a>(snap: &'a Snapshot, target: &ObjectRef) -> Scope<'a> {
    let t = tree::tree(snap, target);
    let mut groups = group_nodes(&t);
    // A pod or a group is seen with the CompositePodGroups above it.
    let parent = match target.kind {
        Kind::Pod => snap
            .pod(&target.name)
            .and_then(pod_group_of)
            .and_then(|g| snap.group(g))
            .and_then(|g| g.spec.parent_composite_pod_group_name.as_deref()),
        Kind::PodGroup => snap
            .group(&target.name)
            .and_then(|g| g.spec.parent_composite_pod_group_name.as_deref()),
        Kind::CompositePodGroup => snap
            .composite(&target.name)
            .and_then(|c| c.spec.parent_composite_pod_group_name.as_deref()),
        _ => None,
    };
    let mut above: Vec<TreeNode> = snap
        .ancestors(parent)
        .into_iter()
        .map(|c| {
            let mut n = tree::tree(
                snap,
                &ObjectRef {
                    kind: Kind::CompositePodGroup,
                    name: c.name_any(),
                },
            );
            n.children.clear();
            n
        })
        .collect();
    above.reverse();
    above.append(&mut groups);
    let names: Vec<&str> = t
        .walk()
        .into_iter()
        .filter(|n| n.kind == Kind::Pod)
        .map(|n| n.name.as_str())
        .collect();
    let mut pods: Vec<&Pod> = snap
        .pods
        .iter()
        .filter(|p| names.contains(&p.name_any().as_str()))
        .collect();
    // The asked-about pod's own message comes first.
    if target.kind == Kind::Pod {
        pods.sort_by_key(|p| p.name_any() != target.name);
    }
    Scope { groups: above, pods }
}

fn scheduling_conditions(n: &TreeNode) -> Vec<ConditionView> {
    n.conditions
        .iter()
        .filter(|c| {
            matches!(
                c.type_.as_str(),
                conditions::POD_GROUP_INITIALLY_SCHEDULED
                    | conditions::COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED
                    | "PodGroupSatisfied"
                    | "CompositePodGroupSatisfied"
                    | conditions::DISRUPTION_TARGET
            )
        })
        .cloned()
        .collect()
}

/// A resource amount in its usual unit: CPU in cores or millicores, memory in binary units, the rest
/// as a count.
pub fn format_amount(resource: &str, amount: i128) -> String {
    if resource == "cpu" {
        return if amount % 1000 == 0 {
            (amount / 1000).to_string()
        } else {
            format!("{amount}m")
        };
    }
    if matches!(resource, "memory" | "ephemeral-storage") || resource.starts_with("hugepages-") {
        for (unit, size) in [("Ti", 1i128 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
            if amount >= size && amount % size == 0 {
                return format!("{}{unit}", amount / size);
            }
        }
    }
    amount.to_string()
}

/// What pod `p` requests of `resource` (containers summed, the largest init container if larger; CPU in
/// millicores).
pub fn request_of(p: &Pod, resource: &str) -> Option<i128> {
    let spec = p.spec.as_ref()?;
    let parse = |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| -> Option<i128> {
        let v = if resource == "cpu" {
            kwas_api_types::quantity::parse_cpu_millis(&q.0)
        } else {
            kwas_api_types::quantity::parse_units(&q.0)
        };
        v.ok().map(i128::from)
    };
    let of = |c: &k8s_openapi::api::core::v1::Container| -> Option<i128> {
        c.resources.as_ref()?.requests.as_ref()?.get(resource).and_then(parse)
    };
    let sum: i128 = spec.containers.iter().filter_map(of).sum();
    let init = spec.init_containers.iter().flatten().filter_map(of).max().unwrap_or(0);
    let total = sum.max(init);
    (total > 0).then_some(total)
}

struct Ctx<'a> {
    snap: &'a Snapshot,
    /// The gang's groups (leaf PodGroups are the ones with pods).
    groups: &'a [TreeNode],
    pending: &'a [&'a Pod],
    keys: Vec<String>,
    short: Option<u64>,
    remaining: bool,
}

fn where_(keys: &[String]) -> String {
    match keys.first() {
        Some(k) => format!("on nodes of one {k} domain"),
        None => "on the cluster's nodes".to_string(),
    }
}

/// A node's allocatable `resource` (CPU in millicores).
fn allocatable(n: &k8s_openapi::api::core::v1::Node, resource: &str) -> i128 {
    n.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get(resource))
        .and_then(|q| {
            if resource == "cpu" {
                kwas_api_types::quantity::parse_cpu_millis(&q.0).ok()
            } else {
                kwas_api_types::quantity::parse_units(&q.0).ok()
            }
        })
        .map_or(0, i128::from)
}

/// How many pods of `per_pod` `resource` each the schedulable nodes still hold, per value of `key` (one
/// entry, `None`, without a key), counting that resource alone; `None` when the cluster's pods or nodes
/// could not be read.
pub fn room(
    snap: &Snapshot,
    resource: &str,
    per_pod: i128,
    key: Option<&str>,
) -> Option<BTreeMap<Option<String>, u64>> {
    let all = snap.all_pods.as_ref()?;
    if snap.nodes.is_empty() || per_pod <= 0 {
        return None;
    }
    let mut used: BTreeMap<&str, i128> = BTreeMap::new();
    for p in all.iter().filter(|p| !super::model::finished(p)) {
        if let Some(n) = node_of(p) {
            *used.entry(n).or_default() += request_of(p, resource).unwrap_or(0);
        }
    }
    let mut out: BTreeMap<Option<String>, u64> = BTreeMap::new();
    for n in &snap.nodes {
        if n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
            continue;
        }
        let domain = match key {
            Some(k) => match n.labels().get(k) {
                Some(v) => Some(v.clone()),
                None => continue,
            },
            None => None,
        };
        let free = allocatable(n, resource) - used.get(n.name_any().as_str()).copied().unwrap_or(0);
        let fits = u64::try_from((free.max(0)) / per_pod).unwrap_or(u64::MAX);
        let e = out.entry(domain).or_default();
        *e = e.saturating_add(fits);
    }
    Some(out)
}

/// For each PodGroup of the gang whose waiting pods request `resource`: how many more of them must fit,
/// how many the roomiest domain holds, and what is missing there.
fn insufficient(resource: &str, ctx: &Ctx) -> Vec<String> {
    let mut out = Vec::new();
    for g in ctx.groups.iter().filter(|g| g.kind == Kind::PodGroup) {
        let members = ctx.snap.pods_of_group(&g.name);
        let waiting: Vec<&&Pod> = members.iter().filter(|p| tree::waiting(p)).collect();
        let Some(per) = waiting.iter().filter_map(|p| request_of(p, resource)).max() else {
            continue;
        };
        let bound = members
            .iter()
            .filter(|p| node_of(p).is_some() && !super::model::finished(p))
            .count() as u64;
        let need = match g.policy.as_ref().and_then(|p| p.min_count) {
            Some(min) => u64::try_from(min).unwrap_or(0).saturating_sub(bound),
            None => waiting.len() as u64,
        }
        .max(1);
        // The group's own key, else the nearest above it.
        let key = g
            .topology
            .first()
            .map(|t| t.key.clone())
            .or_else(|| ctx.keys.last().cloned());
        let Some(room) = room(ctx.snap, resource, per, key.as_deref()) else {
            continue;
        };
        let Some((domain, fit)) = room.iter().max_by_key(|(d, f)| (**f, std::cmp::Reverse((*d).clone()))) else {
            continue;
        };
        if *fit >= need {
            // This resource alone would not stop it; the rest of the message says what does.
            continue;
        }
        let short = need - fit;
        let where_ = match (&key, domain) {
            (Some(k), Some(v)) => format!(" in one {k} domain; the roomiest, {k}={v}, holds {fit}"),
            _ => format!("; the cluster's nodes hold {fit}"),
        };
        let lower = match g.policy.as_ref().and_then(|p| p.min_count) {
            Some(_) if bound + fit > 0 => format!(", or lower minCount to {}", bound + fit),
            _ => String::new(),
        };
        out.push(format!(
            "PodGroup {}: {need} more pod{} of {} {resource} each must fit{where_}: free or add {} {resource} there, at least {} on each node used{lower} (counting {resource} alone)",
            g.name,
            if need == 1 { "" } else { "s" },
            format_amount(resource, per),
            format_amount(resource, per.saturating_mul(i128::from(short))),
            format_amount(resource, per),
        ));
    }
    out
}

fn advice_for(reason: &str, ctx: &Ctx) -> Option<String> {
    let r = reason.to_ascii_lowercase();
    if let Some(resource) = reason.strip_prefix("Insufficient ") {
        let resource = resource.trim();
        let exact = insufficient(resource, ctx);
        if !exact.is_empty() {
            return Some(exact.join("\n"));
        }
        let each: Vec<i128> = ctx.pending.iter().filter_map(|p| request_of(p, resource)).collect();
        let per_pod = each.iter().copied().max();
        let pods = ctx.short.unwrap_or(ctx.pending.len().max(1) as u64);
        let at_least = if ctx.remaining { "at least " } else { "" };
        let plural = if pods == 1 { "" } else { "s" };
        return Some(match per_pod {
            Some(per) => {
                let total = per.saturating_mul(i128::from(pods));
                format!(
                    "{at_least}{pods} more pod{plural} must fit, each needing {} {resource} on one node: free or add {at_least}{} {resource} {} (for example by adding nodes with {resource}), or lower the gang's minimum",
                    format_amount(resource, per),
                    format_amount(resource, total),
                    where_(&ctx.keys)
                )
            }
            None => format!(
                "{at_least}{pods} more pod{plural} must fit: free or add {resource} {}, or lower the gang's minimum",
                where_(&ctx.keys)
            ),
        });
    }
    if r.contains("didn't match pod anti-affinity") {
        let add = match ctx.short {
            Some(n) if !ctx.remaining => format!("add {n} node{}", if n == 1 { "" } else { "s" }),
            _ => "add nodes".to_string(),
        };
        return Some(format!(
            "the pods' required anti-affinity keeps them on separate nodes (domains of its topologyKey) and there are too few: {add}, make the term preferred instead of required, or lower the gang's minimum"
        ));
    }
    let advice = if r.contains("existing pods anti-affinity") {
        "pods already running forbid these pods next to them (their anti-affinity): move or relax those pods, or add nodes".to_string()
    } else if r.contains("didn't match pod affinity") {
        "no node satisfies the pods' required pod affinity: check its labelSelector and topologyKey, or start the pods it wants to be near".to_string()
    } else if r.contains("node affinity/selector") {
        "too few nodes match the pods' nodeSelector / node affinity: label more nodes, or relax the selector"
            .to_string()
    } else if r.contains("untolerated taint") {
        "the nodes are tainted: add a toleration to the pods, or remove the taint".to_string()
    } else if r.contains("were unschedulable") {
        "the nodes are cordoned (spec.unschedulable): uncordon them".to_string()
    } else if r.contains("topology spread") {
        "the topology spread constraint cannot be met: raise maxSkew, use whenUnsatisfiable: ScheduleAnyway, or add nodes in other domains".to_string()
    } else if r.contains("free ports") {
        "the requested host ports are taken: free them or drop hostPort".to_string()
    } else if r.contains("too many pods") {
        "the nodes are at their pod capacity: add nodes or remove pods".to_string()
    } else if r.contains("volume") || r.contains("persistentvolume") {
        "a volume does not fit the nodes: check the PersistentVolumeClaims, their StorageClass and the volumes' node affinity".to_string()
    } else if r.contains("resourceclaim") || r.contains("allocate all claims") || r.contains("device class") {
        "the pods' ResourceClaims cannot be allocated: create the missing claims or device classes, or free or add matching devices".to_string()
    } else {
        return None;
    };
    Some(advice)
}

fn preemption_view(outcome: PreemptionOutcome, message: String, priority: Option<i32>) -> PreemptionView {
    let prio = priority.map(|p| format!(" (priority {p})")).unwrap_or_default();
    let explanation = match outcome {
        PreemptionOutcome::NotEligible => {
            "not tried: the pods' preemptionPolicy is Never, so they never evict others".to_string()
        }
        PreemptionOutcome::NoVictims => format!(
            "considered: evicting pods of lower priority than the gang{prio} would not make it fit, so nothing was evicted"
        ),
        PreemptionOutcome::NotHelpful => {
            "considered and not helpful: what rejects the pods does not change when other pods are evicted".to_string()
        }
        PreemptionOutcome::InProgress => {
            "under way: victims are being evicted, and the gang is placed once they are gone".to_string()
        }
        PreemptionOutcome::Other => "considered; see the scheduler's words".to_string(),
        PreemptionOutcome::NotRecorded => "the scheduler's messages record no preemption attempt".to_string(),
    };
    PreemptionView {
        considered: outcome.considered(),
        outcome,
        message,
        explanation,
    }
}

/// The answer of `why` for `target` (which must exist in `snap`).
pub fn why(snap: &Snapshot, target: &ObjectRef) -> WhyView {
    let Scope { groups, pods } = scope(snap, target);
    let pending: Vec<&Pod> = pods.iter().copied().filter(|p| tree::waiting(p)).collect();

    // Waiting pods grouped by what they say.
    let mut by_message: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for p in &pending {
        let (reason, message) = pod_condition(p, conditions::POD_SCHEDULED)
            .filter(|c| c.status != "True")
            .map(|c| {
                (
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
            .unwrap_or_default();
        let key = (reason, message);
        if !by_message.contains_key(&key) {
            order.push(key.clone());
        }
        by_message.entry(key).or_default().push(p.name_any());
    }
    let pending_groups: Vec<PendingPods> = order
        .into_iter()
        .map(|k| {
            let pods = by_message.remove(&k).unwrap_or_default();
            PendingPods {
                reason: k.0,
                message: k.1,
                pods,
            }
        })
        .collect();

    // The latest FailedScheduling event about the gang.
    let pod_names: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    let group_names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    let last_event = snap
        .events
        .iter()
        .filter(|e| e.reason.as_deref() == Some(events::FAILED_SCHEDULING))
        .filter(|e| {
            let o = &e.involved_object;
            let name = o.name.as_deref().unwrap_or_default();
            match o.kind.as_deref() {
                Some("Pod") => pod_names.iter().any(|n| n == name),
                Some("PodGroup" | "CompositePodGroup") => group_names.contains(&name),
                _ => false,
            }
        })
        .max_by_key(|e| event_time(e))
        .map(event_view);

    // Every message that still explains something: unsatisfied group conditions, waiting pods, the
    // latest event when something waits.
    let mut messages: Vec<String> = Vec::new();
    for g in &groups {
        for c in &g.conditions {
            if c.type_.ends_with("InitiallyScheduled") && c.status != "True" && !c.message.is_empty() {
                messages.push(c.message.clone());
            }
        }
    }
    messages.extend(
        pending_groups
            .iter()
            .map(|p| p.message.clone())
            .filter(|m| !m.is_empty()),
    );
    let unsatisfied = !messages.is_empty() || !pending.is_empty();
    if unsatisfied && let Some(e) = &last_event {
        messages.push(e.message.clone());
    }
    let parsed: Vec<Parsed> = messages.iter().map(|m| message::parse(m)).collect();

    let mut shortfalls: Vec<GangShortfall> = Vec::new();
    let mut placements: Vec<Placements> = Vec::new();
    let mut reasons: Vec<(String, Option<u64>, Option<u64>)> = Vec::new();
    let mut postfilter: Option<String> = None;
    for p in &parsed {
        // Per level, the domain where the most fit (a placement message has one per domain).
        for g in &p.gangs {
            match shortfalls.iter_mut().find(|s| s.of_groups == g.of_groups) {
                Some(best) => {
                    if (g.scheduled, std::cmp::Reverse(g.remaining))
                        > (best.scheduled, std::cmp::Reverse(best.remaining))
                    {
                        *best = *g;
                    }
                }
                None => shortfalls.push(*g),
            }
        }
        if let Some(pl) = &p.placements
            && !placements.contains(pl)
        {
            placements.push(pl.clone());
        }
        for f in &p.nodes {
            for r in &f.reasons {
                match reasons.iter_mut().find(|(x, _, _)| *x == r.reason) {
                    Some(e) => {
                        if r.nodes > e.1 {
                            e.1 = r.nodes;
                            e.2 = Some(f.total);
                        }
                    }
                    None => reasons.push((r.reason.clone(), r.nodes, Some(f.total))),
                }
            }
        }
        if postfilter.is_none() {
            postfilter.clone_from(&p.preemption);
        }
    }

    // Preemption: a unit waiting for its victims says so in its group condition, or by the nominated
    // nodes of its pods.
    let waiting_for_victims = messages.iter().any(|m| m.contains(message::WAITING_FOR_PREEMPTION))
        || pending.iter().any(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                .is_some_and(|n| !n.is_empty())
        });
    let (outcome, pf_message) = if waiting_for_victims {
        (PreemptionOutcome::InProgress, postfilter.unwrap_or_default())
    } else {
        match postfilter {
            Some(t) => (message::preemption_outcome(&t), t),
            None => (PreemptionOutcome::NotRecorded, String::new()),
        }
    };
    let priority = pending
        .iter()
        .chain(pods.iter())
        .find_map(|p| p.spec.as_ref().and_then(|s| s.priority))
        .or_else(|| groups.iter().find_map(|g| g.priority));
    let preemption = preemption_view(outcome, pf_message, priority);

    // Advice.
    let keys: Vec<String> = groups
        .iter()
        .rev()
        .flat_map(|g| g.topology.iter().map(|t| t.key.clone()))
        .collect();
    let leaf = shortfalls.iter().find(|s| !s.of_groups);
    let ctx = Ctx {
        snap,
        groups: &groups,
        pending: &pending,
        keys: keys.clone(),
        short: leaf.map(GangShortfall::short),
        remaining: leaf.is_some_and(|s| s.remaining > 0),
    };
    let causes: Vec<Cause> = reasons
        .into_iter()
        .map(|(reason, nodes, of_nodes)| Cause {
            advice: advice_for(&reason, &ctx),
            reason,
            nodes,
            of_nodes,
        })
        .collect();
    let mut advice: Vec<String> = Vec::new();
    for c in &causes {
        for a in c.advice.iter().flat_map(|a| a.lines()) {
            if !advice.iter().any(|x| x == a) {
                advice.push(a.to_string());
            }
        }
    }
    for s in &shortfalls {
        let (min, members) = if s.of_groups {
            ("minGroupCount", "groups")
        } else {
            ("minCount", "pods")
        };
        // Members left untried mean the count of what fits is incomplete: only a lower bound is known.
        let more = if s.remaining > 0 {
            format!("at least {} more", s.short())
        } else {
            format!("{} more", s.short())
        };
        let lower = if s.scheduled > 0 && s.remaining == 0 {
            format!(", or lower {min} to {}", s.scheduled)
        } else {
            String::new()
        };
        advice.push(format!(
            "the gang needs {} {members} placed together ({min}) and {} fit ({} not tried): make room for {more}{lower}",
            s.min, s.scheduled, s.remaining
        ));
    }
    for p in &placements {
        let tried = if p.tried.is_empty() {
            String::new()
        } else {
            format!(" (tried {})", p.tried.join(", "))
        };
        advice.push(format!(
            "no {} domain of {} holds the whole group{tried}: the room must be in one domain; spreading it over several does not help",
            p.key, p.total
        ));
    }
    if unsatisfied && advice.is_empty() {
        if messages.is_empty() {
            advice.push(
                "the scheduler has said nothing yet: the pods may not have been tried (is their schedulerName served?), or they wait for their group".to_string(),
            );
        } else {
            advice.push(
                "kwas cannot derive advice from these messages; the scheduler's words above are the reason".to_string(),
            );
        }
    }

    let scheduled = pending.is_empty() && !groups.iter().any(waiting_group);
    let bound = pods.iter().filter(|p| node_of(p).is_some()).count();
    let summary = if pods.is_empty() && groups.is_empty() {
        format!("{target} has no groups and no pods")
    } else if scheduled {
        format!(
            "{target}: nothing waits to be scheduled ({bound} of {} pods bound)",
            pods.len()
        )
    } else if pending.is_empty() {
        format!("{target}: no pod waits, but a group is not scheduled yet")
    } else {
        format!(
            "{target}: {} of {} pods wait to be scheduled ({bound} bound)",
            pending.len(),
            pods.len()
        )
    };
    WhyView {
        kind: "Why",
        namespace: snap.namespace.clone(),
        target: target.clone(),
        scheduled,
        pod_count: pods.len(),
        pending_count: pending.len(),
        summary,
        groups: groups
            .iter()
            .map(|g| GroupWhy {
                kind: g.kind,
                name: g.name.clone(),
                policy: g.policy.clone(),
                topology_keys: g.topology.iter().map(|t| t.key.clone()).collect(),
                conditions: scheduling_conditions(g),
            })
            .collect(),
        pending: pending_groups,
        last_failed_scheduling: last_event,
        causes,
        shortfalls,
        placements,
        preemption,
        advice,
    }
}

/// A group whose scheduling condition is False, or that has none yet while it has pods.
fn waiting_group(g: &TreeNode) -> bool {
    let cond = g.conditions.iter().find(|c| c.type_.ends_with("InitiallyScheduled"));
    match cond {
        Some(c) => c.status != "True",
        None => g.pods.is_some_and(|p| p.total > 0 && p.bound < p.total),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
    use serde_json::json;

    fn gpu_gang() -> Snapshot {
        let msg = "0/2 kwas.dev/rack placements are available: kwas.dev/rack=b0-r0, b0-r1: minCount (5) cannot be satisfied: 4 scheduled, 0 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: no set of lower-priority victims makes the pod group schedulable.";
        let group: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "gpus-pg"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 5}}, "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}, "priority": 0},
            "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable", "message": msg, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .unwrap();
        let pods = (0..5)
            .map(|i| {
                serde_json::from_value(json!({
                    "metadata": {"name": format!("gpus-{i}"), "labels": {"batch.kubernetes.io/job-name": "gpus"}},
                    "spec": {"schedulingGroup": {"podGroupName": "gpus-pg"}, "priority": 0, "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8", "cpu": "1500m"}}}]},
                    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg}]}
                }))
                .unwrap()
            })
            .collect();
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "gpus-0"},
            "reason": "FailedScheduling", "message": msg, "lastTimestamp": "2026-01-01T00:00:01Z", "count": 3
        }))
        .unwrap();
        Snapshot {
            namespace: "default".into(),
            groups: vec![group],
            pods,
            events: vec![event],
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_gpu_shortage_asks_for_gpus_in_one_domain() {
        let snap = gpu_gang();
        let w = why(
            &snap,
            &ObjectRef {
                kind: Kind::PodGroup,
                name: "gpus-pg".into(),
            },
        );
        assert!(!w.scheduled);
        assert_eq!((w.pod_count, w.pending_count), (5, 5));
        assert_eq!(w.pending.len(), 1, "one message for the five pods");
        assert_eq!(w.pending[0].pods.len(), 5);
        assert_eq!(w.causes[0].reason, "Insufficient nvidia.com/gpu");
        assert_eq!((w.causes[0].nodes, w.causes[0].of_nodes), (Some(4), Some(4)));
        let advice = w.causes[0].advice.as_deref().unwrap();
        assert!(
            advice.starts_with(
                "1 more pod must fit, each needing 8 nvidia.com/gpu on one node: free or add 8 nvidia.com/gpu on nodes of one kwas.dev/rack domain"
            ),
            "{advice}"
        );
        assert_eq!(w.preemption.outcome, PreemptionOutcome::NoVictims);
        assert!(w.preemption.considered);
        assert_eq!(w.last_failed_scheduling.as_ref().unwrap().count, 3);
        assert!(
            w.advice.iter().any(|a| a.contains("lower minCount to 4")),
            "{:?}",
            w.advice
        );
        assert!(
            w.advice.iter().any(|a| a.contains("no kwas.dev/rack domain of 2")),
            "{:?}",
            w.advice
        );
        // The whole gang from any pod of it.
        let by_pod = why(
            &snap,
            &ObjectRef {
                kind: Kind::Pod,
                name: "gpus-3".into(),
            },
        );
        assert_eq!(by_pod.pending_count, 5);
        assert_eq!(by_pod.pending[0].pods[0], "gpus-3");
    }

    #[test]
    fn everything_bound_says_so() {
        let mut snap = gpu_gang();
        for p in &mut snap.pods {
            p.spec.as_mut().unwrap().node_name = Some("n1".into());
            p.status = None;
        }
        snap.groups[0].status = None;
        let w = why(
            &snap,
            &ObjectRef {
                kind: Kind::PodGroup,
                name: "gpus-pg".into(),
            },
        );
        assert!(w.scheduled, "{w:#?}");
        assert!(w.causes.is_empty() && w.advice.is_empty());
        assert_eq!(w.preemption.outcome, PreemptionOutcome::NotRecorded);
    }

    #[test]
    fn unknown_reasons_and_missing_fields_get_no_invented_advice() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SomethingNew", "message": "0/3 nodes are available: 3 node(s) are on fire."}]}
        }))
        .unwrap();
        let bare: Pod = serde_json::from_value(json!({"metadata": {"name": "q"}})).unwrap();
        let snap = Snapshot {
            pods: vec![pod, bare],
            ..Snapshot::default()
        };
        let w = why(
            &snap,
            &ObjectRef {
                kind: Kind::Pod,
                name: "p".into(),
            },
        );
        assert_eq!(w.causes[0].reason, "node(s) are on fire");
        assert_eq!(w.causes[0].advice, None);
        assert!(w.advice[0].starts_with("kwas cannot derive advice"), "{:?}", w.advice);
        let q = why(
            &snap,
            &ObjectRef {
                kind: Kind::Pod,
                name: "q".into(),
            },
        );
        assert!(
            q.advice[0].starts_with("the scheduler has said nothing yet"),
            "{:?}",
            q.advice
        );
    }

    #[test]
    fn amounts_read_as_people_write_them() {
        assert_eq!(format_amount("cpu", 1500), "1500m");
        assert_eq!(format_amount("cpu", 4000), "4");
        assert_eq!(format_amount("memory", 3 << 30), "3Gi");
        assert_eq!(format_amount("memory", 1000), "1000");
        assert_eq!(format_amount("nvidia.com/gpu", i128::MAX), i128::MAX.to_string());
    }
}
