//! # lws-controller
//!
//! A small LeaderWorkerSet-style controller, written only against the public API of `workloadbuilder` (and
//! the KEP-6089 building blocks of `kwas-api-types`), to show what an out-of-tree controller author writes.
//!
//! A `LeaderWorkerSet` (`leaderworkersets.examples.kwas.dev/v1alpha1`) runs `replicas` groups of `size` pods:
//! one leader and `size - 1` workers. Its scheduling hierarchy has three levels and shows multi-instantiation
//! (KEP-6089 "Parent Instance Linkage"): one CompositePodGroup instance per replica, all from the same
//! template, each with a leader and a workers PodGroup under it.
//!
//! | item | template | runtime objects |
//! | --- | --- | --- |
//! | the set | composite `lws` (default Basic: replicas start independently) | one root CompositePodGroup |
//! | a replica | composite `group` (default a gang of its two groups, `all` disruption) | `replicas` CompositePodGroups `<lws>-<i>` |
//! | the leader | leaf `leader` (gang of 1) | PodGroup `<lws>-<i>-leader` per replica |
//! | the workers | leaf `workers` (gang of `size - 1`) | PodGroup `<lws>-<i>-workers` per replica |
//!
//! The user can override the set's and the replica's composite blocks (`spec.scheduling`,
//! `spec.scheduling.group`); `group.schedulingPolicy: {basic: {}}` is the escape hatch from the per-replica
//! gang (the atomic disruption default then falls back to `single`, since `all` needs a gang).
//!
//! [`desired`] computes every object of a LeaderWorkerSet (pure, snapshot-tested); the binary reconciles them.

pub mod controller;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSchedulingGroup, PodTemplateSpec};
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{CustomResource, ResourceExt};
use kwas_api_types::{
    WorkloadCompositePodGroupDisruptionMode, WorkloadCompositePodGroupSchedulingConstraints,
    WorkloadCompositePodGroupSchedulingPolicy,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use workloadbuilder::{
    AllowList, CompositeBlock, Disruption, DisruptionModeOption, ExistingWorkloadBuilder, FieldError, FieldErrors,
    FieldPath, GroupName, OwnerKey, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem,
    generate_workload_name,
};

/// The label with the LeaderWorkerSet's name on every object it owns.
pub const SET_LABEL: &str = "examples.kwas.dev/leaderworkerset";
/// The label with a pod's replica index.
pub const REPLICA_LABEL: &str = "examples.kwas.dev/replica";
/// The label with a pod's role (`leader` or `worker`).
pub const ROLE_LABEL: &str = "examples.kwas.dev/role";

/// `replicas` groups of one leader and `size - 1` workers.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "examples.kwas.dev",
    version = "v1alpha1",
    kind = "LeaderWorkerSet",
    namespaced,
    status = "LeaderWorkerSetStatus",
    shortname = "lws",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSetSpec {
    /// Number of leader + workers groups.
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// Pods per group, the leader included.
    #[schemars(range(min = 1))]
    pub size: i32,
    /// The leader's pod template.
    #[schemars(schema_with = "preserve")]
    pub leader_template: PodTemplateSpec,
    /// The workers' pod template.
    #[schemars(schema_with = "preserve")]
    pub worker_template: PodTemplateSpec,
    /// Scheduling intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<LwsScheduling>,
}

fn preserve(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// Composite building blocks for the set and for each replica.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LwsScheduling {
    /// The set's policy (default Basic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<WorkloadCompositePodGroupSchedulingPolicy>,
    /// The set's topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<WorkloadCompositePodGroupSchedulingConstraints>,
    /// The set's disruption mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<WorkloadCompositePodGroupDisruptionMode>,
    /// Each replica's blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupScheduling>,
}

/// A replica's composite building blocks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupScheduling {
    /// Default: a gang of the leader and workers groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<WorkloadCompositePodGroupSchedulingPolicy>,
    /// For example one rack per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<WorkloadCompositePodGroupSchedulingConstraints>,
    /// Default `all` (a replica is disrupted as a whole) when the replica is a gang.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<WorkloadCompositePodGroupDisruptionMode>,
}

/// Observed state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSetStatus {
    /// Replicas whose pods are all running.
    pub ready_replicas: i32,
    /// The compiled Workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_name: Option<String>,
}

/// What this controller supports, at every level: declared once, for the user's blocks and the builder.
fn allow() -> AllowList {
    AllowList::new()
        .policies([PolicyOption::Basic, PolicyOption::Gang])
        .disruption_modes([DisruptionModeOption::Single, DisruptionModeOption::All])
}

/// Every object a LeaderWorkerSet owns.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    /// The Workload.
    pub workload: Workload,
    /// The set's CompositePodGroup.
    pub root: CompositePodGroup,
    /// Per replica: its CompositePodGroup, its leader and workers PodGroups, and its pods.
    pub replicas: Vec<Replica>,
}

/// One replica's objects.
#[derive(Clone, Debug, PartialEq)]
pub struct Replica {
    /// The replica's CompositePodGroup (from the `group` template).
    pub group: CompositePodGroup,
    /// The leader's PodGroup.
    pub leader: PodGroup,
    /// The workers' PodGroup (absent when `size` is 1).
    pub workers: Option<PodGroup>,
    /// The leader pod, then the worker pods.
    pub pods: Vec<Pod>,
}

/// The controller reference to the LeaderWorkerSet (`None` before it has a uid).
fn owner(lws: &LeaderWorkerSet) -> Option<OwnerReference> {
    kube::Resource::controller_owner_ref(lws, &()).map(|r| OwnerReference {
        block_owner_deletion: Some(true),
        ..r
    })
}

/// The pods' priority class (`None` when unset or empty).
fn class_of(t: &PodTemplateSpec) -> Option<String> {
    t.spec
        .as_ref()
        .and_then(|p| p.priority_class_name.clone())
        .filter(|c| !c.is_empty())
}

/// The LeaderWorkerSet's `WorkloadItem` tree.
pub fn workload_item(lws: &LeaderWorkerSet) -> Result<WorkloadItem, FieldErrors> {
    let s = lws.spec.scheduling.clone().unwrap_or_default();
    let g = s.group.clone().unwrap_or_default();
    let (root_path, group_path) = (
        FieldPath::new("spec").child("scheduling"),
        FieldPath::new("spec.scheduling.group"),
    );
    let root_block = CompositeBlock::new(&s.scheduling_policy, &s.scheduling_constraints, &s.disruption_mode);
    let root_user = allow().map_composite(Some(root_block), &root_path)?;
    let group_block = CompositeBlock::new(&g.scheduling_policy, &g.scheduling_constraints, &g.disruption_mode);
    let group_user = allow().map_composite(Some(group_block), &group_path)?;
    let user_chose_mode = group_user.as_ref().is_some_and(|u| u.disruption_mode.is_some());
    // One priority across the hierarchy and its pods (KEP-5710): every group carries the pods' class.
    let (class, worker_class) = (class_of(&lws.spec.leader_template), class_of(&lws.spec.worker_template));
    let with_class = |cfg| SchedulingConfig {
        priority_class_name: class.clone(),
        ..cfg
    };
    let gang = |count| with_class(SchedulingConfig::gang(count).with_disruption_mode(Disruption::All));
    let leaf = |name: &str, count: i32| WorkloadItem::new(name).with_default(gang(Some(count)));
    let same = class.clone();
    let workers = leaf("workers", (lws.spec.size - 1).max(1)).with_check(move |_, _| match worker_class == same {
        true => Ok(()),
        false => Err(FieldError::invalid(
            "spec.workerTemplate.spec.priorityClassName",
            worker_class.clone().unwrap_or_default(),
            "must equal spec.leaderTemplate.spec.priorityClassName: leader and workers share one priority",
        )
        .into()),
    });
    let children = if lws.spec.size > 1 { 2 } else { 1 };
    let group = WorkloadItem::new("group")
        .with_default(gang(None))
        .with_user_config(group_user)
        .with_config_path(group_path)
        .with_callback(move |cfg| {
            // A gang of the leader and workers groups; an escape to Basic drops the atomic default.
            if !cfg.is_gang() && !user_chose_mode {
                cfg.disruption_mode = Some(Disruption::Single);
            }
            cfg.default_gang_min_count(children);
        })
        // The controller's own rule, reported at the user's field: a gang of at most the replica's groups.
        .with_check(move |item, cfg| match cfg.gang_policy().and_then(|g| g.min_count) {
            Some(n) if n > children => {
                let path = item
                    .config_field("schedulingPolicy")
                    .child("gang")
                    .child("minGroupCount");
                Err(
                    FieldError::invalid(path, n, format!("must be at most the groups of a replica ({children})"))
                        .into(),
                )
            }
            _ => Ok(()),
        })
        .with_child(leaf("leader", 1))
        .with_children((lws.spec.size > 1).then_some(workers));
    let root = WorkloadItem::new("lws").with_default(with_class(SchedulingConfig::basic()));
    Ok(root
        .with_user_config(root_user)
        .with_config_path(root_path)
        .with_child(group))
}

fn labels(lws: &LeaderWorkerSet, replica: Option<i32>, role: Option<&str>) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([(SET_LABEL.to_string(), lws.name_any())]);
    if let Some(r) = replica {
        l.insert(REPLICA_LABEL.to_string(), r.to_string());
    }
    if let Some(role) = role {
        l.insert(ROLE_LABEL.to_string(), role.to_string());
    }
    l
}

fn pod(lws: &LeaderWorkerSet, name: String, template: &PodTemplateSpec, replica: i32, role: &str, group: &str) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut pod_labels = meta.labels.unwrap_or_default();
    pod_labels.extend(labels(lws, Some(replica), Some(role)));
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.scheduling_group = Some(PodSchedulingGroup {
        pod_group_name: Some(group.to_string()),
    });
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: lws.namespace(),
            labels: Some(pod_labels),
            annotations: meta.annotations,
            owner_references: owner(lws).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Every object of `lws`, from its spec alone.
pub fn desired(lws: &LeaderWorkerSet) -> Result<Desired, FieldErrors> {
    let (name, uid) = (lws.name_any(), lws.metadata.uid.clone().unwrap_or_default());
    let workload_name = generate_workload_name(OwnerKey { name: &name, uid: &uid });
    let namespace = lws.namespace().unwrap_or_default();
    let builder = WorkloadBuilder::new(workload_item(lws)?).allow(allow());
    let mut workload = builder.build(&workload_name, &namespace, &owner(lws).unwrap_or_default())?;
    workload.metadata.labels = Some(labels(lws, None, None));
    // Every runtime group: one owner, one naming rule (`<parent>-<key>`), template then name then parent.
    let groups = ExistingWorkloadBuilder::new(&workload).with_owners(owner(lws));
    let base = GroupName::new(name);
    let label = |meta: &mut ObjectMeta, i, role| meta.labels = Some(labels(lws, i, role));
    let root_name = base.child("root");
    let mut root = groups.new_composite_pod_group("lws", &root_name, None)?;
    label(&mut root.metadata, None, None);
    let mut replicas = Vec::new();
    for i in 0..lws.spec.replicas.max(0) {
        let group_name = base.child(i);
        let mut group = groups.new_composite_pod_group("group", &group_name, Some(&root_name))?;
        label(&mut group.metadata, Some(i), None);
        let mut leader = groups.new_pod_group("leader", &group_name.child("leader"), Some(&group_name))?;
        label(&mut leader.metadata, Some(i), Some("leader"));
        let mut workers = (lws.spec.size > 1)
            .then(|| groups.new_pod_group("workers", &group_name.child("workers"), Some(&group_name)))
            .transpose()?;
        if let Some(w) = workers.as_mut() {
            label(&mut w.metadata, Some(i), Some("worker"));
        }
        let pods = replica_pods(lws, i, &group_name);
        replicas.push(Replica {
            group,
            leader,
            workers,
            pods,
        });
    }
    Ok(Desired {
        workload,
        root,
        replicas,
    })
}

/// Replica `i`'s pods: the leader (named like the replica's group), then the workers `<group>-<j>`.
fn replica_pods(lws: &LeaderWorkerSet, i: i32, group: &GroupName) -> Vec<Pod> {
    let leader = pod(
        lws,
        group.to_string(),
        &lws.spec.leader_template,
        i,
        "leader",
        &group.child("leader"),
    );
    let workers = (1..lws.spec.size).map(|j| {
        let (name, template) = (group.child(j).into(), &lws.spec.worker_template);
        pod(lws, name, template, i, "worker", &group.child("workers"))
    });
    std::iter::once(leader).chain(workers).collect()
}
