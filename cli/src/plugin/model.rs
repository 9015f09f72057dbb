//! What the plugin reads from the cluster ([`Snapshot`]), the objects a command names ([`Target`]) and how
//! objects relate: Job / JobSet -> Workload -> CompositePodGroups -> PodGroups -> pods. Pure: no I/O.

use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kwas_api_types::jobset::JobSet;
use kwas_api_types::names::labels;
use serde::Serialize;

/// The objects of one namespace (and the cluster's nodes) the commands read, listed once.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    /// The namespace listed.
    pub namespace: String,
    /// Jobs.
    pub jobs: Vec<Job>,
    /// JobSets (empty where the CRD is not installed).
    pub jobsets: Vec<JobSet>,
    /// Workloads.
    pub workloads: Vec<Workload>,
    /// CompositePodGroups.
    pub composites: Vec<CompositePodGroup>,
    /// PodGroups.
    pub groups: Vec<PodGroup>,
    /// Pods.
    pub pods: Vec<Pod>,
    /// Nodes (empty when they cannot be read: no topology domains then).
    pub nodes: Vec<Node>,
    /// The pods of every namespace, to count what nodes hold (`why` only; `None` when not read).
    pub all_pods: Option<Vec<Pod>>,
    /// Events (only the reasons a command asks for).
    pub events: Vec<Event>,
    /// What could not be read, said once at the end of the output.
    pub notes: Vec<String>,
}

/// The kinds a command can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Kind {
    /// batch/v1 Job.
    Job,
    /// jobset.x-k8s.io/v1alpha2 JobSet.
    JobSet,
    /// scheduling.k8s.io Workload.
    Workload,
    /// scheduling.k8s.io CompositePodGroup.
    CompositePodGroup,
    /// scheduling.k8s.io PodGroup.
    PodGroup,
    /// v1 Pod.
    Pod,
}

impl Kind {
    /// The kind's name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Job => "Job",
            Kind::JobSet => "JobSet",
            Kind::Workload => "Workload",
            Kind::CompositePodGroup => "CompositePodGroup",
            Kind::PodGroup => "PodGroup",
            Kind::Pod => "Pod",
        }
    }

    /// The kind kubectl-style (`job`, `podgroup`, ...), as in `kind/name`.
    pub fn lower(self) -> &'static str {
        match self {
            Kind::Job => "job",
            Kind::JobSet => "jobset",
            Kind::Workload => "workload",
            Kind::CompositePodGroup => "compositepodgroup",
            Kind::PodGroup => "podgroup",
            Kind::Pod => "pod",
        }
    }

    /// A kind from what a user types: singular, plural, short name or `kind.group`, any case.
    pub fn parse(s: &str) -> Option<Kind> {
        let s = s.to_ascii_lowercase();
        let base = s.split('.').next().unwrap_or_default();
        let kind = match base {
            "job" | "jobs" => Kind::Job,
            "jobset" | "jobsets" | "js" => Kind::JobSet,
            "workload" | "workloads" | "wl" => Kind::Workload,
            "compositepodgroup" | "compositepodgroups" | "cpg" => Kind::CompositePodGroup,
            "podgroup" | "podgroups" | "pg" => Kind::PodGroup,
            "pod" | "pods" | "po" => Kind::Pod,
            _ => return None,
        };
        Some(kind)
    }
}

/// What a command names: `kind/name` or a bare name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The kind, when given.
    pub kind: Option<Kind>,
    /// The name.
    pub name: String,
}

/// Parses `job/NAME`, `jobset/NAME`, `workload/NAME`, `pod/NAME`, `podgroup/NAME`,
/// `compositepodgroup/NAME` (plurals and short names too) or a bare `NAME`.
pub fn parse_target(s: &str) -> Result<Target, String> {
    let s = s.trim();
    let (kind, name) = match s.split_once('/') {
        Some((k, n)) => {
            let kind = Kind::parse(k).ok_or_else(|| {
                format!(
                    "unknown kind {k:?} in {s:?}: use job/, jobset/, workload/, compositepodgroup/, podgroup/ or pod/"
                )
            })?;
            (Some(kind), n)
        }
        None => (None, s),
    };
    if name.is_empty() || name.contains('/') {
        return Err(format!("{s:?} names no object: use KIND/NAME or NAME"));
    }
    Ok(Target {
        kind,
        name: name.to_string(),
    })
}

/// A resolved object: one that exists in the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectRef {
    /// Its kind.
    pub kind: Kind,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind.lower(), self.name)
    }
}

/// The order bare names are looked up in by `tree`: Job, JobSet, Workload, then the groups and pods.
pub const TREE_ORDER: [Kind; 6] = [
    Kind::Job,
    Kind::JobSet,
    Kind::Workload,
    Kind::CompositePodGroup,
    Kind::PodGroup,
    Kind::Pod,
];

/// The order bare names are looked up in by `why` and `who-preempted`: pods and groups first, then the
/// Job, JobSet or Workload whose groups are meant.
pub const UNIT_ORDER: [Kind; 6] = [
    Kind::Pod,
    Kind::PodGroup,
    Kind::CompositePodGroup,
    Kind::Job,
    Kind::JobSet,
    Kind::Workload,
];

fn names<'a, T: ResourceExt + 'a>(items: impl IntoIterator<Item = &'a T>) -> impl Iterator<Item = String> {
    items.into_iter().map(|o| o.name_any())
}

impl Snapshot {
    /// Whether an object of `kind` named `name` was listed.
    pub fn exists(&self, kind: Kind, name: &str) -> bool {
        let mut all: Box<dyn Iterator<Item = String>> = match kind {
            Kind::Job => Box::new(names(&self.jobs)),
            Kind::JobSet => Box::new(names(&self.jobsets)),
            Kind::Workload => Box::new(names(&self.workloads)),
            Kind::CompositePodGroup => Box::new(names(&self.composites)),
            Kind::PodGroup => Box::new(names(&self.groups)),
            Kind::Pod => Box::new(names(&self.pods)),
        };
        all.any(|n| n == name)
    }

    /// The object `target` names: its kind if given, else the first kind of `order` with an object of that
    /// name.
    pub fn resolve(&self, target: &Target, order: &[Kind]) -> Result<ObjectRef, String> {
        match target.kind {
            Some(kind) if self.exists(kind, &target.name) => Ok(ObjectRef {
                kind,
                name: target.name.clone(),
            }),
            Some(kind) => Err(format!(
                "{} {:?} not found in namespace {}",
                kind.lower(),
                target.name,
                self.namespace
            )),
            None => order
                .iter()
                .find(|k| self.exists(**k, &target.name))
                .map(|k| ObjectRef {
                    kind: *k,
                    name: target.name.clone(),
                })
                .ok_or_else(|| {
                    let kinds: Vec<&str> = order.iter().map(|k| k.as_str()).collect();
                    format!(
                        "no {} named {:?} in namespace {}",
                        kinds.join(", "),
                        target.name,
                        self.namespace
                    )
                }),
        }
    }

    /// A Job by name.
    pub fn job(&self, name: &str) -> Option<&Job> {
        self.jobs.iter().find(|o| o.name_any() == name)
    }

    /// A JobSet by name.
    pub fn jobset(&self, name: &str) -> Option<&JobSet> {
        self.jobsets.iter().find(|o| o.name_any() == name)
    }

    /// A Workload by name.
    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|o| o.name_any() == name)
    }

    /// A CompositePodGroup by name.
    pub fn composite(&self, name: &str) -> Option<&CompositePodGroup> {
        self.composites.iter().find(|o| o.name_any() == name)
    }

    /// A PodGroup by name.
    pub fn group(&self, name: &str) -> Option<&PodGroup> {
        self.groups.iter().find(|o| o.name_any() == name)
    }

    /// A pod by name.
    pub fn pod(&self, name: &str) -> Option<&Pod> {
        self.pods.iter().find(|o| o.name_any() == name)
    }

    /// A node by name.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|o| o.name_any() == name)
    }

    /// The Workloads whose `spec.controllerRef` is the `kind` object `name` (or, for a JobSet, the one its
    /// status names), by name.
    pub fn workloads_of(&self, kind: &str, name: &str) -> Vec<&Workload> {
        let mut out: Vec<&Workload> = self
            .workloads
            .iter()
            .filter(|w| {
                w.spec
                    .controller_ref
                    .as_ref()
                    .is_some_and(|r| r.kind == kind && r.name == name)
                    || w.owner_references()
                        .iter()
                        .any(|o| o.kind == kind && o.name == name && o.controller == Some(true))
            })
            .collect();
        if kind == "JobSet"
            && let Some(w) = self
                .jobset(name)
                .and_then(|js| js.status.as_ref()?.workload_name.as_deref())
                .and_then(|n| self.workload(n))
            && !out.iter().any(|o| o.name_any() == w.name_any())
        {
            out.push(w);
        }
        out.sort_by_key(|w| w.name_any());
        out
    }

    /// The root groups of Workload `name`: its CompositePodGroups and PodGroups with no parent (or a
    /// parent that is gone), CompositePodGroups first, by name.
    pub fn roots_of_workload(&self, name: &str) -> (Vec<&CompositePodGroup>, Vec<&PodGroup>) {
        let mut composites: Vec<&CompositePodGroup> = self
            .composites
            .iter()
            .filter(|c| c.spec.workload_ref.workload_name == name)
            .filter(|c| {
                c.spec
                    .parent_composite_pod_group_name
                    .as_deref()
                    .is_none_or(|p| self.composite(p).is_none())
            })
            .collect();
        composites.sort_by_key(|c| c.name_any());
        let mut groups: Vec<&PodGroup> = self
            .groups
            .iter()
            .filter(|g| g.spec.workload_ref.as_ref().is_some_and(|w| w.workload_name == name))
            .filter(|g| {
                g.spec
                    .parent_composite_pod_group_name
                    .as_deref()
                    .is_none_or(|p| self.composite(p).is_none())
            })
            .collect();
        groups.sort_by_key(|g| g.name_any());
        (composites, groups)
    }

    /// The children of CompositePodGroup `name`, by name (itself among them when it is its own parent).
    pub fn children_of(&self, name: &str) -> (Vec<&CompositePodGroup>, Vec<&PodGroup>) {
        let mut composites: Vec<&CompositePodGroup> = self
            .composites
            .iter()
            .filter(|c| c.spec.parent_composite_pod_group_name.as_deref() == Some(name))
            .collect();
        composites.sort_by_key(|c| c.name_any());
        let mut groups: Vec<&PodGroup> = self
            .groups
            .iter()
            .filter(|g| g.spec.parent_composite_pod_group_name.as_deref() == Some(name))
            .collect();
        groups.sort_by_key(|g| g.name_any());
        (composites, groups)
    }

    /// The pods of PodGroup `name`, by name.
    pub fn pods_of_group(&self, name: &str) -> Vec<&Pod> {
        let mut pods: Vec<&Pod> = self.pods.iter().filter(|p| pod_group_of(p) == Some(name)).collect();
        pods.sort_by_key(|p| p.name_any());
        pods
    }

    /// The pods of Job `name` (its `job-name` label or its controller reference), by name.
    pub fn pods_of_job(&self, name: &str) -> Vec<&Pod> {
        let mut pods: Vec<&Pod> = self
            .pods
            .iter()
            .filter(|p| {
                p.labels().get(labels::JOB_NAME).map(String::as_str) == Some(name)
                    || p.owner_references()
                        .iter()
                        .any(|o| o.kind == "Job" && o.name == name && o.controller == Some(true))
            })
            .collect();
        pods.sort_by_key(|p| p.name_any());
        pods
    }

    /// The Jobs of JobSet `name` (its label or its controller reference), by name.
    pub fn jobs_of_jobset(&self, name: &str) -> Vec<&Job> {
        let mut jobs: Vec<&Job> = self
            .jobs
            .iter()
            .filter(|j| {
                j.labels().get(labels::JOBSET_NAME).map(String::as_str) == Some(name)
                    || j.owner_references()
                        .iter()
                        .any(|o| o.kind == "JobSet" && o.name == name && o.controller == Some(true))
            })
            .collect();
        jobs.sort_by_key(|j| j.name_any());
        jobs
    }

    /// The CompositePodGroups above PodGroup or CompositePodGroup `parent` (its parent first), stopping at
    /// a cycle or a missing parent.
    pub fn ancestors(&self, parent: Option<&str>) -> Vec<&CompositePodGroup> {
        let mut out: Vec<&CompositePodGroup> = Vec::new();
        let mut parent = parent.map(str::to_string);
        while let Some(p) = parent {
            let Some(c) = self.composite(&p) else { break };
            if out.iter().any(|o| o.name_any() == c.name_any()) {
                break;
            }
            out.push(c);
            parent = c.spec.parent_composite_pod_group_name.clone();
        }
        out
    }

    /// The value of label `key` on node `node`.
    pub fn node_label(&self, node: &str, key: &str) -> Option<&str> {
        self.node(node)?.labels().get(key).map(String::as_str)
    }

    /// The distinct values of label `key` on the nodes `pods` are bound to.
    pub fn domains(&self, key: &str, pods: &[&Pod]) -> Vec<String> {
        let values: BTreeSet<&str> = pods
            .iter()
            .filter_map(|p| node_of(p))
            .filter_map(|n| self.node_label(n, key))
            .collect();
        values.into_iter().map(str::to_string).collect()
    }
}

/// The PodGroup a pod names in `spec.schedulingGroup`.
pub fn pod_group_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.scheduling_group.as_ref()?.pod_group_name.as_deref()
}

/// The node a pod is bound to.
pub fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref().filter(|n| !n.is_empty())
}

/// A pod's phase (`Pending` when it reports none).
pub fn phase_of(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

/// Whether a pod is being deleted.
pub fn terminating(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_some()
}

/// Whether a pod has finished (`Succeeded` or `Failed`).
pub fn finished(p: &Pod) -> bool {
    matches!(phase_of(p), "Succeeded" | "Failed")
}

/// A condition of a pod, as a metav1.Condition-like view.
pub fn pod_condition<'a>(p: &'a Pod, type_: &str) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// A condition of a list of metav1.Conditions.
pub fn condition<'a>(conditions: Option<&'a Vec<Condition>>, type_: &str) -> Option<&'a Condition> {
    conditions?.iter().find(|c| c.type_ == type_)
}

/// Whether `pod_name` looks like a pod the Job controller created for Job `job`: `<job>-<5 chars>` or,
/// for an Indexed Job, `<job>-<index>-<5 chars>` (the pod itself may be gone; only its events remain).
pub fn named_like_job_pod(pod_name: &str, job: &str) -> bool {
    let Some(rest) = pod_name.strip_prefix(job).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let random = |s: &str| s.len() == 5 && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    match rest.split_once('-') {
        None => random(rest),
        Some((index, r)) => !index.is_empty() && index.chars().all(|c| c.is_ascii_digit()) && random(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_like_kubectl_names() {
        assert_eq!(
            parse_target("job/train"),
            Ok(Target {
                kind: Some(Kind::Job),
                name: "train".into()
            })
        );
        assert_eq!(parse_target("pg/x").unwrap().kind, Some(Kind::PodGroup));
        assert_eq!(
            parse_target("podgroups.scheduling.k8s.io/x").unwrap().kind,
            Some(Kind::PodGroup)
        );
        assert_eq!(parse_target("JobSet/x").unwrap().kind, Some(Kind::JobSet));
        assert_eq!(parse_target("train").unwrap().kind, None);
        for bad in ["", "job/", "/x", "deployment/x", "job/a/b", "  "] {
            assert!(parse_target(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bare_names_resolve_in_order_and_missing_ones_are_errors() {
        let job: Job = serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).unwrap();
        let pod: Pod = serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).unwrap();
        let snap = Snapshot {
            namespace: "ns".into(),
            jobs: vec![job],
            pods: vec![pod],
            ..Snapshot::default()
        };
        let t = parse_target("x").unwrap();
        assert_eq!(snap.resolve(&t, &TREE_ORDER).unwrap().kind, Kind::Job);
        assert_eq!(snap.resolve(&t, &UNIT_ORDER).unwrap().kind, Kind::Pod);
        let err = snap
            .resolve(&parse_target("jobset/x").unwrap(), &TREE_ORDER)
            .unwrap_err();
        assert_eq!(err, "jobset \"x\" not found in namespace ns");
        let err = snap.resolve(&parse_target("y").unwrap(), &TREE_ORDER[..3]).unwrap_err();
        assert_eq!(err, "no Job, JobSet, Workload named \"y\" in namespace ns");
    }

    #[test]
    fn job_pod_names_are_recognised_without_the_pod() {
        assert!(named_like_job_pod("train-ab1cd", "train"));
        assert!(named_like_job_pod("train-3-ab1cd", "train"));
        assert!(!named_like_job_pod("train-dra-ab1cd", "train"));
        assert!(!named_like_job_pod("train", "train"));
        assert!(!named_like_job_pod("train-", "train"));
        assert!(!named_like_job_pod("trainer-ab1cd", "train"));
        assert!(!named_like_job_pod("train-ABCDE", "train"));
    }

    #[test]
    fn ancestors_stop_at_cycles() {
        let cpg = |name: &str, parent: &str| -> CompositePodGroup {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "spec": {"parentCompositePodGroupName": parent, "schedulingPolicy": {}, "workloadRef": {"templateName": "t", "workloadName": "w"}}
            }))
            .unwrap()
        };
        let snap = Snapshot {
            composites: vec![cpg("a", "b"), cpg("b", "a")],
            ..Snapshot::default()
        };
        assert_eq!(snap.ancestors(Some("a")).len(), 2);
        assert!(snap.ancestors(Some("missing")).is_empty());
    }
}
