//! `tree`: Job / JobSet -> Workload -> CompositePodGroups -> PodGroups -> pods, each with its policy,
//! minimum, topology constraint and the domain it landed in, its node and its live state. Pure: a
//! [`Snapshot`] in, a [`TreeNode`] out.
//!
//! Each group is shown once. CompositePodGroups name their parents, so bad data can loop (parents that
//! form a cycle, a group its own parent): a group reached again is a single node marked
//! [`Elided::Cycle`] (on the path to itself) or [`Elided::AlreadyShown`], without its subtree, and a
//! Workload's groups that a loop keeps from hanging under a root are shown from the loop's first member.

use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, TopologyConstraint, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kwas_api_types::jobset::JobSet;
use kwas_api_types::names::{conditions, labels};
use serde::Serialize;

use super::model::{Kind, ObjectRef, Snapshot, finished, node_of, phase_of, pod_group_of, terminating};

/// How deep CompositePodGroups may nest before the tree stops (the scheduler allows 4 levels; this bounds
/// the work on a long chain of bad data).
pub const MAX_DEPTH: usize = 32;

/// Why a group's node stands alone, without what is below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Elided {
    /// The group is on the path from the root to here: its parents loop back to it.
    Cycle,
    /// The group is shown earlier in the tree.
    AlreadyShown,
    /// The group nests deeper than [`MAX_DEPTH`] CompositePodGroups.
    TooDeep,
}

impl Elided {
    /// Why, as shown after the group's name.
    pub fn note(self) -> String {
        match self {
            Elided::Cycle => "(cycle: already shown above)".into(),
            Elided::AlreadyShown => "(already shown above)".into(),
            Elided::TooDeep => format!("(nested deeper than {MAX_DEPTH} levels: not shown)"),
        }
    }
}

/// One object of the tree. Fields that do not apply to its kind are left out of the JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeNode {
    /// The object's kind.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Jobs and JobSets: `Complete`, `Completed`, `Failed`, `Suspended` or `Active`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Groups: the scheduling policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Groups: `all` or `single`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<String>,
    /// Groups and pods: the priority the API resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Groups: each topology constraint and the domains the group's bound pods are in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology: Vec<Topology>,
    /// Everything but pods: the pods below, counted by state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods: Option<PodCounts>,
    /// Groups: every status condition; pods: `PodScheduled` and `DisruptionTarget`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionView>,
    /// Pods: the node bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Pods: the phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Pods: being deleted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub terminating: bool,
    /// Groups reached again (a parent cycle, or shown earlier) or nested too deep: this node only names
    /// the group, its details and subtree are not repeated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elided: Option<Elided>,
    /// What sits below.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<TreeNode>,
}

impl TreeNode {
    pub(crate) fn new(kind: Kind, name: String) -> Self {
        Self {
            kind,
            name,
            status: None,
            policy: None,
            disruption_mode: None,
            priority: None,
            topology: Vec::new(),
            pods: None,
            conditions: Vec::new(),
            node: None,
            phase: None,
            terminating: false,
            elided: None,
            children: Vec::new(),
        }
    }

    fn elided(kind: Kind, name: String, why: Elided) -> Self {
        Self {
            elided: Some(why),
            ..Self::new(kind, name)
        }
    }

    /// This node and every node below it, depth first.
    pub fn walk(&self) -> Vec<&TreeNode> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }
}

/// A group's scheduling policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// `gang` or `basic`.
    pub mode: String,
    /// A gang PodGroup's `minCount`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
    /// A gang CompositePodGroup's `minGroupCount`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_group_count: Option<i32>,
}

/// A topology constraint and where the group landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// The node label key.
    pub key: String,
    /// The values of `key` on the nodes of the group's bound pods (one when the constraint holds; none
    /// before placement, or when nodes cannot be read).
    pub domains: Vec<String>,
}

/// Pods counted by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PodCounts {
    /// All pods.
    pub total: usize,
    /// Bound to a node.
    pub bound: usize,
    /// Phase `Pending`.
    pub pending: usize,
    /// Phase `Running`.
    pub running: usize,
    /// Phase `Succeeded`.
    pub succeeded: usize,
    /// Phase `Failed`.
    pub failed: usize,
    /// Being deleted.
    pub terminating: usize,
}

impl PodCounts {
    /// Counts `pods`.
    pub fn of(pods: &[&Pod]) -> Self {
        let mut c = PodCounts::default();
        for p in pods {
            c.total += 1;
            if node_of(p).is_some() {
                c.bound += 1;
            }
            match phase_of(p) {
                "Running" => c.running += 1,
                "Succeeded" => c.succeeded += 1,
                "Failed" => c.failed += 1,
                _ => c.pending += 1,
            }
            if terminating(p) {
                c.terminating += 1;
            }
        }
        c
    }
}

/// A condition as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionView {
    /// Its type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
    /// When it last changed (RFC 3339), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl ConditionView {
    /// A metav1.Condition.
    pub fn of(c: &Condition) -> Self {
        Self {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: Some(c.last_transition_time.0.to_string()),
        }
    }

    /// A pod condition.
    pub fn of_pod(c: &k8s_openapi::api::core::v1::PodCondition) -> Self {
        Self {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
            last_transition_time: c.last_transition_time.as_ref().map(|t| t.0.to_string()),
        }
    }
}

/// The tree of `target`.
pub fn tree(snap: &Snapshot, target: &ObjectRef) -> TreeNode {
    let seen = &mut Seen::default();
    match target.kind {
        Kind::Job => match snap.job(&target.name) {
            Some(j) => job_node(snap, j, seen),
            None => TreeNode::new(Kind::Job, target.name.clone()),
        },
        Kind::JobSet => match snap.jobset(&target.name) {
            Some(js) => jobset_node(snap, js, seen),
            None => TreeNode::new(Kind::JobSet, target.name.clone()),
        },
        Kind::Workload => match snap.workload(&target.name) {
            Some(w) => workload_node(snap, w, seen),
            None => TreeNode::new(Kind::Workload, target.name.clone()),
        },
        Kind::CompositePodGroup => match snap.composite(&target.name) {
            Some(c) => composite_node(snap, c, seen),
            None => TreeNode::new(Kind::CompositePodGroup, target.name.clone()),
        },
        Kind::PodGroup => match snap.group(&target.name) {
            Some(g) => group_node(snap, g, seen),
            None => TreeNode::new(Kind::PodGroup, target.name.clone()),
        },
        // A pod is shown in its PodGroup, with the gang it belongs to.
        Kind::Pod => match snap.pod(&target.name) {
            Some(p) => match pod_group_of(p).and_then(|g| snap.group(g)) {
                Some(g) => group_node(snap, g, seen),
                None => pod_node(p),
            },
            None => TreeNode::new(Kind::Pod, target.name.clone()),
        },
    }
}

/// Where the walk that builds a tree is: the CompositePodGroups from the root down to here, and every
/// group shown so far.
#[derive(Debug, Default)]
struct Seen {
    path: Vec<String>,
    shown: BTreeSet<(Kind, String)>,
}

impl Seen {
    fn shown(&self, kind: Kind, name: &str) -> bool {
        self.shown.contains(&(kind, name.to_string()))
    }
}

/// The status of a Job: its terminal or suspended condition, else `Active`.
pub fn job_status(j: &Job) -> String {
    let true_conditions: Vec<&str> = j
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.status == "True")
        .map(|c| c.type_.as_str())
        .collect();
    for t in [
        conditions::JOB_COMPLETE,
        conditions::JOB_FAILED,
        conditions::JOB_SUSPENDED,
    ] {
        if true_conditions.contains(&t) {
            return t.to_string();
        }
    }
    "Active".to_string()
}

/// The status of a JobSet: `Completed`, `Failed`, `Suspended` or `Active`.
pub fn jobset_status(js: &JobSet) -> String {
    let true_conditions: Vec<&str> = js
        .status
        .as_ref()
        .into_iter()
        .flat_map(|s| s.conditions.iter())
        .filter(|c| c.status == "True")
        .map(|c| c.type_.as_str())
        .collect();
    for t in ["Completed", "Failed", "Suspended"] {
        if true_conditions.contains(&t) {
            return t.to_string();
        }
    }
    "Active".to_string()
}

/// The children of a Job or JobSet: its Workloads' trees, then the groups its pods name outside them,
/// then its pods that name no group.
fn owner_children(snap: &Snapshot, workloads: Vec<&Workload>, pods: &[&Pod], seen: &mut Seen) -> Vec<TreeNode> {
    let mut children: Vec<TreeNode> = workloads.into_iter().map(|w| workload_node(snap, w, seen)).collect();
    let others: BTreeSet<&str> = pods
        .iter()
        .filter_map(|p| pod_group_of(p))
        .filter(|g| !seen.shown(Kind::PodGroup, g))
        .collect();
    for g in others {
        match snap.group(g) {
            Some(group) => children.push(group_node(snap, group, seen)),
            None => {
                // The pods name a PodGroup that does not exist (yet): shown under that name.
                let mut node = TreeNode::new(Kind::PodGroup, g.to_string());
                let members: Vec<&Pod> = pods.iter().copied().filter(|p| pod_group_of(p) == Some(g)).collect();
                node.pods = Some(PodCounts::of(&members));
                node.conditions.push(ConditionView {
                    type_: "Exists".into(),
                    status: "False".into(),
                    reason: "NotFound".into(),
                    message: format!("the pods name PodGroup {g}, which does not exist"),
                    last_transition_time: None,
                });
                node.children = members.into_iter().map(pod_node).collect();
                children.push(node);
            }
        }
    }
    children.extend(pods.iter().filter(|p| pod_group_of(p).is_none()).map(|p| pod_node(p)));
    children
}

fn job_node(snap: &Snapshot, j: &Job, seen: &mut Seen) -> TreeNode {
    let name = j.name_any();
    let mut node = TreeNode::new(Kind::Job, name.clone());
    node.status = Some(job_status(j));
    let pods = snap.pods_of_job(&name);
    node.pods = Some(PodCounts::of(&pods));
    node.children = owner_children(snap, snap.workloads_of("Job", &name), &pods, seen);
    node
}

fn jobset_node(snap: &Snapshot, js: &JobSet, seen: &mut Seen) -> TreeNode {
    let name = js.name_any();
    let mut node = TreeNode::new(Kind::JobSet, name.clone());
    node.status = Some(jobset_status(js));
    let mut pods: Vec<&Pod> = snap
        .pods
        .iter()
        .filter(|p| p.labels().get(labels::JOBSET_NAME) == Some(&name))
        .collect();
    pods.sort_by_key(|p| p.name_any());
    node.pods = Some(PodCounts::of(&pods));
    node.children = owner_children(snap, snap.workloads_of("JobSet", &name), &pods, seen);
    node
}

fn workload_node(snap: &Snapshot, w: &Workload, seen: &mut Seen) -> TreeNode {
    let name = w.name_any();
    let mut node = TreeNode::new(Kind::Workload, name.clone());
    let (composites, groups) = snap.roots_of_workload(&name);
    for c in composites {
        node.children.push(composite_node(snap, c, seen));
    }
    // CompositePodGroups whose parents loop hang under no root: each loop from its first member by name
    // (the rest of it, and what hangs under it, below that one).
    let mut looped: Vec<&CompositePodGroup> = snap
        .composites
        .iter()
        .filter(|c| c.spec.workload_ref.workload_name == name)
        .filter(|c| {
            snap.ancestors(c.spec.parent_composite_pod_group_name.as_deref())
                .iter()
                .any(|a| a.name_any() == c.name_any())
        })
        .collect();
    looped.sort_by_key(|c| c.name_any());
    for c in looped {
        if !seen.shown(Kind::CompositePodGroup, &c.name_any()) {
            node.children.push(composite_node(snap, c, seen));
        }
    }
    for g in groups {
        node.children.push(group_node(snap, g, seen));
    }
    node.pods = Some(sum_counts(&node.children));
    node
}

fn sum_counts(children: &[TreeNode]) -> PodCounts {
    let mut c = PodCounts::default();
    for n in children {
        match (n.kind, n.pods) {
            (Kind::Pod, _) => {
                c.total += 1;
                if n.node.is_some() {
                    c.bound += 1;
                }
                match n.phase.as_deref() {
                    Some("Running") => c.running += 1,
                    Some("Succeeded") => c.succeeded += 1,
                    Some("Failed") => c.failed += 1,
                    _ => c.pending += 1,
                }
                if n.terminating {
                    c.terminating += 1;
                }
            }
            (_, Some(p)) => {
                c.total += p.total;
                c.bound += p.bound;
                c.pending += p.pending;
                c.running += p.running;
                c.succeeded += p.succeeded;
                c.failed += p.failed;
                c.terminating += p.terminating;
            }
            _ => {}
        }
    }
    c
}

fn conditions_of(list: Option<&Vec<Condition>>) -> Vec<ConditionView> {
    let mut out: Vec<ConditionView> = list.into_iter().flatten().map(ConditionView::of).collect();
    out.sort_by(|a, b| {
        condition_rank(&a.type_)
            .cmp(&condition_rank(&b.type_))
            .then(a.type_.cmp(&b.type_))
    });
    out
}

/// Scheduling conditions first, then `PodGroupSatisfied`, `DisruptionTarget`, then the rest.
fn condition_rank(t: &str) -> u8 {
    match t {
        conditions::POD_GROUP_INITIALLY_SCHEDULED | conditions::COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED => 0,
        "PodGroupSatisfied" | "CompositePodGroupSatisfied" => 1,
        conditions::DISRUPTION_TARGET => 2,
        _ => 3,
    }
}

fn topology(constraints: Option<&Vec<TopologyConstraint>>, snap: &Snapshot, pods: &[&Pod]) -> Vec<Topology> {
    constraints
        .into_iter()
        .flatten()
        .map(|t| Topology {
            key: t.key.clone(),
            domains: snap.domains(&t.key, pods),
        })
        .collect()
}

/// Every pod below CompositePodGroup `name`, each once (however its descendants loop).
fn descendant_pods<'a>(snap: &'a Snapshot, name: &str) -> Vec<&'a Pod> {
    let mut pods: Vec<&Pod> = Vec::new();
    let mut visited: BTreeSet<String> = BTreeSet::new();
    let mut next = vec![name.to_string()];
    while let Some(c) = next.pop() {
        if !visited.insert(c.clone()) {
            continue;
        }
        let (composites, groups) = snap.children_of(&c);
        pods.extend(groups.iter().flat_map(|g| snap.pods_of_group(&g.name_any())));
        next.extend(composites.iter().map(|child| child.name_any()));
    }
    pods
}

fn composite_node(snap: &Snapshot, c: &CompositePodGroup, seen: &mut Seen) -> TreeNode {
    let name = c.name_any();
    if seen.path.contains(&name) {
        return TreeNode::elided(Kind::CompositePodGroup, name, Elided::Cycle);
    }
    if seen.shown(Kind::CompositePodGroup, &name) {
        return TreeNode::elided(Kind::CompositePodGroup, name, Elided::AlreadyShown);
    }
    if seen.path.len() >= MAX_DEPTH {
        return TreeNode::elided(Kind::CompositePodGroup, name, Elided::TooDeep);
    }
    seen.shown.insert((Kind::CompositePodGroup, name.clone()));
    let mut node = TreeNode::new(Kind::CompositePodGroup, name.clone());
    node.policy = Some(match &c.spec.scheduling_policy.gang {
        Some(g) => Policy {
            mode: "gang".into(),
            min_count: None,
            min_group_count: Some(g.min_group_count),
        },
        None => Policy {
            mode: "basic".into(),
            min_count: None,
            min_group_count: None,
        },
    });
    node.disruption_mode = c.spec.disruption_mode.as_ref().and_then(|d| {
        if d.all.is_some() {
            Some("all".to_string())
        } else if d.single.is_some() {
            Some("single".to_string())
        } else {
            None
        }
    });
    node.priority = c.spec.priority;
    let pods = descendant_pods(snap, &name);
    node.topology = topology(
        c.spec.scheduling_constraints.as_ref().and_then(|s| s.topology.as_ref()),
        snap,
        &pods,
    );
    node.pods = Some(PodCounts::of(&pods));
    node.conditions = conditions_of(c.status.as_ref().and_then(|s| s.conditions.as_ref()));
    let (composites, groups) = snap.children_of(&name);
    seen.path.push(name);
    for child in composites {
        node.children.push(composite_node(snap, child, seen));
    }
    for g in groups {
        node.children.push(group_node(snap, g, seen));
    }
    seen.path.pop();
    node
}

fn group_node(snap: &Snapshot, g: &PodGroup, seen: &mut Seen) -> TreeNode {
    let name = g.name_any();
    if !seen.shown.insert((Kind::PodGroup, name.clone())) {
        return TreeNode::elided(Kind::PodGroup, name, Elided::AlreadyShown);
    }
    let mut node = TreeNode::new(Kind::PodGroup, name.clone());
    node.policy = Some(match &g.spec.scheduling_policy.gang {
        Some(gang) => Policy {
            mode: "gang".into(),
            min_count: Some(gang.min_count),
            min_group_count: None,
        },
        None => Policy {
            mode: "basic".into(),
            min_count: None,
            min_group_count: None,
        },
    });
    node.disruption_mode = g.spec.disruption_mode.as_ref().and_then(|d| {
        if d.all.is_some() {
            Some("all".to_string())
        } else if d.single.is_some() {
            Some("single".to_string())
        } else {
            None
        }
    });
    node.priority = g.spec.priority;
    let pods = snap.pods_of_group(&name);
    node.topology = topology(
        g.spec.scheduling_constraints.as_ref().and_then(|s| s.topology.as_ref()),
        snap,
        &pods,
    );
    node.pods = Some(PodCounts::of(&pods));
    node.conditions = conditions_of(g.status.as_ref().and_then(|s| s.conditions.as_ref()));
    node.children = pods.into_iter().map(pod_node).collect();
    node
}

/// A pod's node in the tree.
pub fn pod_node(p: &Pod) -> TreeNode {
    let mut node = TreeNode::new(Kind::Pod, p.name_any());
    node.node = node_of(p).map(str::to_string);
    node.phase = Some(phase_of(p).to_string());
    node.terminating = terminating(p);
    node.priority = p.spec.as_ref().and_then(|s| s.priority);
    for t in [conditions::POD_SCHEDULED, conditions::DISRUPTION_TARGET] {
        if let Some(c) = super::model::pod_condition(p, t) {
            node.conditions.push(ConditionView::of_pod(c));
        }
    }
    node
}

/// Whether a pod still waits to be scheduled: not bound, not finished, not being deleted.
pub fn waiting(p: &Pod) -> bool {
    node_of(p).is_none() && !finished(p) && !terminating(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn node(name: &str, rack: &str) -> k8s_openapi::api::core::v1::Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"kwas.dev/rack": rack}}})).unwrap()
    }

    fn pod(name: &str, group: &str, node: Option<&str>, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"batch.kubernetes.io/job-name": "train"}},
            "spec": {"nodeName": node, "schedulingGroup": {"podGroupName": group}, "containers": []},
            "status": {"phase": phase}
        }))
        .unwrap()
    }

    fn snapshot() -> Snapshot {
        let job: Job = serde_json::from_value(json!({"metadata": {"name": "train"}, "status": {"active": 2}})).unwrap();
        let workload: Workload = serde_json::from_value(json!({
            "metadata": {"name": "train-w"},
            "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"}}
        }))
        .unwrap();
        let group: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "train-pg"},
            "spec": {
                "workloadRef": {"workloadName": "train-w", "templateName": "t"},
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]},
                "disruptionMode": {"all": {}},
                "priority": 10
            },
            "status": {"conditions": [
                {"type": "PodGroupSatisfied", "status": "True", "reason": "MinCountSatisfied", "message": "2 of 2 members scheduled", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled", "message": "minCount (2) satisfied: 2 scheduled", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]}
        }))
        .unwrap();
        Snapshot {
            namespace: "default".into(),
            jobs: vec![job],
            workloads: vec![workload],
            groups: vec![group],
            pods: vec![
                pod("train-b", "train-pg", Some("n2"), "Running"),
                pod("train-a", "train-pg", Some("n1"), "Running"),
            ],
            nodes: vec![node("n1", "r1"), node("n2", "r1")],
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_gang_job_is_job_workload_group_pods_with_its_domain() {
        let snap = snapshot();
        let t = tree(
            &snap,
            &ObjectRef {
                kind: Kind::Job,
                name: "train".into(),
            },
        );
        assert_eq!(t.status.as_deref(), Some("Active"));
        assert_eq!(t.pods.unwrap().bound, 2);
        let w = &t.children[0];
        assert_eq!((w.kind, w.name.as_str()), (Kind::Workload, "train-w"));
        let g = &w.children[0];
        assert_eq!(g.policy.as_ref().unwrap().min_count, Some(2));
        assert_eq!(g.disruption_mode.as_deref(), Some("all"));
        assert_eq!(g.priority, Some(10));
        assert_eq!(
            g.topology,
            vec![Topology {
                key: "kwas.dev/rack".into(),
                domains: vec!["r1".into()]
            }]
        );
        // The scheduling condition first, the live one next.
        assert_eq!(g.conditions[0].type_, "PodGroupInitiallyScheduled");
        assert_eq!(g.conditions[1].type_, "PodGroupSatisfied");
        let pods: Vec<&str> = g.children.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(pods, ["train-a", "train-b"]);
        assert_eq!(g.children[0].node.as_deref(), Some("n1"));
    }

    #[test]
    fn pods_naming_a_missing_group_and_pods_naming_none_are_still_shown() {
        let mut snap = snapshot();
        snap.workloads.clear();
        snap.groups.clear();
        let mut lone = pod("train-c", "x", None, "Pending");
        lone.spec.as_mut().unwrap().scheduling_group = None;
        snap.pods.push(lone);
        let t = tree(
            &snap,
            &ObjectRef {
                kind: Kind::Job,
                name: "train".into(),
            },
        );
        assert_eq!(t.children.len(), 2, "{t:#?}");
        assert_eq!(t.children[0].kind, Kind::PodGroup);
        assert_eq!(t.children[0].conditions[0].reason, "NotFound");
        assert_eq!(t.children[0].children.len(), 2);
        assert_eq!(
            (t.children[1].kind, t.children[1].name.as_str()),
            (Kind::Pod, "train-c")
        );
    }

    #[test]
    fn objects_with_nothing_but_a_name_do_not_break_the_tree() {
        let bare_pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}})).unwrap();
        let bare_group: PodGroup =
            serde_json::from_value(json!({"metadata": {"name": "g"}, "spec": {"schedulingPolicy": {}}})).unwrap();
        let snap = Snapshot {
            pods: vec![bare_pod],
            groups: vec![bare_group],
            ..Snapshot::default()
        };
        for (kind, name) in [(Kind::Pod, "p"), (Kind::PodGroup, "g"), (Kind::Job, "absent")] {
            let t = tree(
                &snap,
                &ObjectRef {
                    kind,
                    name: name.into(),
                },
            );
            assert_eq!(t.name, name);
        }
    }

    fn composite(name: &str, parent: Option<&str>) -> CompositePodGroup {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "parentCompositePodGroupName": parent,
                "schedulingPolicy": {"gang": {"minGroupCount": 2147483647}},
                "workloadRef": {"templateName": "t", "workloadName": "w"}
            }
        }))
        .unwrap()
    }

    fn member_group(name: &str, parent: &str) -> PodGroup {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "parentCompositePodGroupName": parent,
                "schedulingPolicy": {"gang": {"minCount": 1}},
                "workloadRef": {"templateName": "t", "workloadName": "w"}
            }
        }))
        .unwrap()
    }

    /// Hostile parents: `a` and `b` each other's parent, `s` its own, and `c00` -> ... -> `c39` a chain
    /// deeper than [`MAX_DEPTH`] under the root `c00`; a PodGroup with one pod under `b`, `s` and `c39`.
    fn hostile() -> Snapshot {
        let workload: Workload = serde_json::from_value(json!({"metadata": {"name": "w"}})).unwrap();
        let mut composites = vec![
            composite("a", Some("b")),
            composite("b", Some("a")),
            composite("s", Some("s")),
            composite("c00", None),
        ];
        for i in 1..40 {
            composites.push(composite(&format!("c{i:02}"), Some(&format!("c{:02}", i - 1))));
        }
        Snapshot {
            namespace: "default".into(),
            workloads: vec![workload],
            composites,
            groups: vec![
                member_group("b-pg", "b"),
                member_group("s-pg", "s"),
                member_group("c39-pg", "c39"),
            ],
            pods: vec![
                pod("b-0", "b-pg", Some("n1"), "Running"),
                pod("s-0", "s-pg", None, "Pending"),
                pod("c39-0", "c39-pg", None, "Pending"),
            ],
            ..Snapshot::default()
        }
    }

    fn of(kind: Kind, name: &str) -> ObjectRef {
        ObjectRef {
            kind,
            name: name.into(),
        }
    }

    /// The names of the nodes shown in full (not elided), each as often as it appears.
    fn shown(t: &TreeNode) -> Vec<&str> {
        t.walk()
            .into_iter()
            .filter(|n| n.elided.is_none())
            .map(|n| n.name.as_str())
            .collect()
    }

    fn elided(t: &TreeNode) -> Vec<(&str, Elided)> {
        t.walk()
            .into_iter()
            .filter_map(|n| n.elided.map(|e| (n.name.as_str(), e)))
            .collect()
    }

    #[test]
    fn a_two_cycle_is_shown_once_with_the_return_marked() {
        let snap = hostile();
        let t = tree(&snap, &of(Kind::CompositePodGroup, "a"));
        assert_eq!(shown(&t), ["a", "b", "b-pg", "b-0"], "{t:#?}");
        assert_eq!(elided(&t), [("a", Elided::Cycle)]);
        let b = &t.children[0];
        assert_eq!(b.name, "b");
        let back = &b.children[0];
        assert_eq!(back.elided, Some(Elided::Cycle));
        assert!(back.children.is_empty() && back.pods.is_none() && back.policy.is_none());
        // Pods are counted once however the parents loop.
        assert_eq!(t.pods.unwrap().total, 1);
        assert_eq!(b.pods.unwrap().total, 1);
        assert_eq!(t.policy.as_ref().unwrap().min_group_count, Some(i32::MAX));
    }

    #[test]
    fn a_composite_that_is_its_own_parent_is_marked_under_itself() {
        let snap = hostile();
        let t = tree(&snap, &of(Kind::CompositePodGroup, "s"));
        assert_eq!(shown(&t), ["s", "s-pg", "s-0"], "{t:#?}");
        assert_eq!(elided(&t), [("s", Elided::Cycle)]);
        assert_eq!(t.pods.unwrap().total, 1);
    }

    #[test]
    fn a_long_chain_shows_each_group_once_down_to_the_depth_limit() {
        let snap = hostile();
        let t = tree(&snap, &of(Kind::CompositePodGroup, "c00"));
        let names = shown(&t);
        let expected: Vec<String> = (0..MAX_DEPTH).map(|i| format!("c{i:02}")).collect();
        assert_eq!(names, expected, "{names:?}");
        assert_eq!(elided(&t), [("c32", Elided::TooDeep)]);
        // The pod below the cut still counts at the top.
        assert_eq!(t.pods.unwrap().total, 1);
    }

    #[test]
    fn a_workload_shows_every_group_once_even_those_a_loop_keeps_from_a_root() {
        let snap = hostile();
        let t = tree(&snap, &of(Kind::Workload, "w"));
        let tops: Vec<&str> = t.children.iter().map(|c| c.name.as_str()).collect();
        // The root first, then each loop from its first member by name.
        assert_eq!(tops, ["c00", "a", "s"], "{t:#?}");
        let names = shown(&t);
        let unique: BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "each group shown once: {names:?}");
        for name in ["a", "b", "s", "b-pg", "s-pg", "c00", "c31"] {
            assert!(unique.contains(name), "{name} shown: {names:?}");
        }
        assert_eq!(
            elided(&t),
            [("c32", Elided::TooDeep), ("a", Elided::Cycle), ("s", Elided::Cycle)]
        );
        assert_eq!(t.pods.unwrap().total, 3);
    }

    #[test]
    fn a_group_reached_again_is_one_marked_line_in_text_and_a_field_in_json() {
        let snap = hostile();
        let t = tree(&snap, &of(Kind::Workload, "w"));
        let text = crate::plugin::render::tree(
            crate::plugin::render::Style::default(),
            &t,
            "default",
            crate::plugin::render::TreeOptions::default(),
        );
        for name in ["a", "b", "s"] {
            let full = format!("── CompositePodGroup {name}  ");
            assert_eq!(text.matches(&full).count(), 1, "{name} once in full:\n{text}");
        }
        assert_eq!(
            text.matches("↻ CompositePodGroup a (cycle: already shown above)")
                .count(),
            1,
            "{text}"
        );
        assert_eq!(
            text.matches("↻ CompositePodGroup s (cycle: already shown above)")
                .count(),
            1,
            "{text}"
        );
        assert_eq!(
            text.matches("… CompositePodGroup c32 (nested deeper than 32 levels: not shown)")
                .count(),
            1,
            "{text}"
        );
        assert!(!text.contains("CompositePodGroup c33"), "{text}");
        // The marked line has nothing under it: the next line is b's PodGroup, a sibling.
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.contains("↻ CompositePodGroup a")).unwrap();
        assert!(lines[at + 1].contains("PodGroup b-pg"), "{text}");

        let json = serde_json::to_value(&t).unwrap();
        let back = &json["children"][1]["children"][0]["children"][0];
        assert_eq!(
            back,
            &json!({"kind": "CompositePodGroup", "name": "a", "elided": "cycle"})
        );
        assert!(
            !json["children"][0].to_string().contains("c33"),
            "nothing below the depth limit"
        );
    }
}
