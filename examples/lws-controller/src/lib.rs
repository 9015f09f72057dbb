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
    AllowList, DisruptionMode, DisruptionModeOption, FieldErrors, FieldPath, PolicyOption, SchedulingConfig,
    WorkloadBuilder, WorkloadItem, generate_workload_name, map_composite_group_config, new_composite_pod_group,
    new_pod_group, validate_composite_disruption_mode, validate_composite_scheduling_policy,
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

const POLICIES: [PolicyOption; 2] = [PolicyOption::Basic, PolicyOption::Gang];
const MODES: [DisruptionModeOption; 2] = [DisruptionModeOption::Single, DisruptionModeOption::All];

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

/// The LeaderWorkerSet's `WorkloadItem` tree.
pub fn workload_item(lws: &LeaderWorkerSet) -> Result<WorkloadItem, FieldErrors> {
    let s = lws.spec.scheduling.clone().unwrap_or_default();
    let root_path = FieldPath::new("spec").child("scheduling");
    let group_path = root_path.child("group");
    let g = s.group.clone().unwrap_or_default();
    let mut errs = validate_composite_scheduling_policy(
        s.scheduling_policy.as_ref(),
        &root_path.child("schedulingPolicy"),
        &POLICIES,
    );
    errs.extend(validate_composite_disruption_mode(
        s.disruption_mode.as_ref(),
        &root_path.child("disruptionMode"),
        &MODES,
    ));
    errs.extend(validate_composite_scheduling_policy(
        g.scheduling_policy.as_ref(),
        &group_path.child("schedulingPolicy"),
        &POLICIES,
    ));
    errs.extend(validate_composite_disruption_mode(
        g.disruption_mode.as_ref(),
        &group_path.child("disruptionMode"),
        &MODES,
    ));
    // One priority across the hierarchy and its pods (KEP-5710): every group carries the pods' class.
    let class_of = |t: &PodTemplateSpec| {
        t.spec
            .as_ref()
            .and_then(|p| p.priority_class_name.clone())
            .filter(|c| !c.is_empty())
    };
    let class = class_of(&lws.spec.leader_template);
    let worker_class = class_of(&lws.spec.worker_template);
    if worker_class != class {
        errs.push(workloadbuilder::FieldError::invalid(
            FieldPath::new("spec")
                .child("workerTemplate")
                .child("spec")
                .child("priorityClassName"),
            worker_class.unwrap_or_default(),
            "must equal spec.leaderTemplate.spec.priorityClassName: leader and workers share one priority",
        ));
    }
    errs.into_result(())?;
    let with_class = |cfg: SchedulingConfig| match &class {
        Some(c) => cfg.with_priority_class_name(c.clone()),
        None => cfg,
    };
    let root_user = map_composite_group_config(
        s.scheduling_policy.as_ref(),
        s.scheduling_constraints.as_ref(),
        s.disruption_mode.as_ref(),
    )
    .map_err(|e| e.under(&root_path))?;
    let group_user = map_composite_group_config(
        g.scheduling_policy.as_ref(),
        g.scheduling_constraints.as_ref(),
        g.disruption_mode.as_ref(),
    )
    .map_err(|e| e.under(&group_path))?;
    let user_chose_mode = group_user.disruption_mode.is_some();
    let workers = (lws.spec.size - 1).max(1);
    let leaf = |name: &str, count: i32| {
        WorkloadItem::new(name).with_default(with_class(
            SchedulingConfig::gang(Some(count)).with_disruption_mode(DisruptionMode::All),
        ))
    };
    let mut group = WorkloadItem::new("group")
        .with_default(with_class(
            SchedulingConfig::gang(None).with_disruption_mode(DisruptionMode::All),
        ))
        .with_user_config(Some(group_user))
        .with_config_path(group_path)
        .with_callback(move |cfg| {
            // A gang of the leader and workers groups; an escape to Basic drops the atomic default.
            if !cfg.is_gang() && !user_chose_mode {
                cfg.disruption_mode = Some(DisruptionMode::Single);
            }
        })
        .with_child(leaf("leader", 1));
    let children = if lws.spec.size > 1 { 2 } else { 1 };
    group = group.with_callback(move |cfg| {
        cfg.default_gang_min_count(children);
    });
    if lws.spec.size > 1 {
        group = group.with_child(leaf("workers", workers));
    }
    Ok(WorkloadItem::new("lws")
        .with_default(with_class(SchedulingConfig::basic()))
        .with_user_config(Some(root_user))
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
    let name = lws.name_any();
    let namespace = lws.namespace().unwrap_or_default();
    let allow = AllowList::new().policies(POLICIES).disruption_modes(MODES);
    let workload_name = generate_workload_name(&name, lws.metadata.uid.as_deref().unwrap_or_default());
    let mut workload = WorkloadBuilder::new(workload_item(lws)?).allow(allow).build(
        &workload_name,
        &namespace,
        &owner(lws).unwrap_or_default(),
    )?;
    workload.metadata.labels = Some(labels(lws, None, None));
    let instantiate = |e: workloadbuilder::InstantiateError| {
        FieldErrors::from(workloadbuilder::FieldError::internal("spec", e.to_string()))
    };
    let root_name = format!("{name}-root");
    let mut root = new_composite_pod_group(&workload, "lws", &root_name, None, owner(lws).into_iter().collect())
        .map_err(instantiate)?;
    root.metadata.labels = Some(labels(lws, None, None));
    let mut replicas = Vec::new();
    for i in 0..lws.spec.replicas.max(0) {
        let group_name = format!("{name}-{i}");
        let mut group = new_composite_pod_group(
            &workload,
            "group",
            &group_name,
            Some(&root_name),
            owner(lws).into_iter().collect(),
        )
        .map_err(instantiate)?;
        group.metadata.labels = Some(labels(lws, Some(i), None));
        let leader_group = format!("{group_name}-leader");
        let mut leader = new_pod_group(
            &workload,
            "leader",
            &leader_group,
            Some(&group_name),
            owner(lws).into_iter().collect(),
        )
        .map_err(instantiate)?;
        leader.metadata.labels = Some(labels(lws, Some(i), Some("leader")));
        let mut pods = vec![pod(
            lws,
            group_name.clone(),
            &lws.spec.leader_template,
            i,
            "leader",
            &leader_group,
        )];
        let workers = if lws.spec.size > 1 {
            let workers_group = format!("{group_name}-workers");
            let mut pg = new_pod_group(
                &workload,
                "workers",
                &workers_group,
                Some(&group_name),
                owner(lws).into_iter().collect(),
            )
            .map_err(instantiate)?;
            pg.metadata.labels = Some(labels(lws, Some(i), Some("worker")));
            for j in 1..lws.spec.size {
                pods.push(pod(
                    lws,
                    format!("{group_name}-{j}"),
                    &lws.spec.worker_template,
                    i,
                    "worker",
                    &workers_group,
                ));
            }
            Some(pg)
        } else {
            None
        };
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
