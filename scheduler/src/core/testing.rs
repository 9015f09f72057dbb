//! Builders for the API objects the snapshot takes, for tests, examples and benchmarks.
//!
//! ```
//! use kwas_scheduler::core::testing::{GroupBuilder, node, pod_in_group};
//! let n = node("n1", "4", "32Gi", &[("kwas.dev/rack", "r1")]);
//! let pg = GroupBuilder::gang("ns", "workers", 4).parent("job").topology("kwas.dev/rack").pod_group();
//! let cpg = GroupBuilder::gang("ns", "job", 2).composite();
//! let p = pod_in_group("ns", "w-0", "workers", "500m", "1Gi");
//! assert_eq!(pg.spec.parent_composite_pod_group_name.as_deref(), Some("job"));
//! # let _ = (n, cpg, p);
//! ```

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSchedulingGroup, PodSpec, ResourceRequirements, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kwas_api_types::v1alpha3::{
    AllCompositeDisruptionMode, AllDisruptionMode, BasicSchedulingPolicy, CompositeBasicSchedulingPolicy,
    CompositeDisruptionMode, CompositeGangSchedulingPolicy, CompositePodGroup, CompositePodGroupSchedulingConstraints,
    CompositePodGroupSchedulingPolicy, CompositePodGroupSpec, DisruptionMode, GangSchedulingPolicy, PodGroup,
    PodGroupSchedulingConstraints, PodGroupSchedulingPolicy, PodGroupSpec, TopologyConstraint, WorkloadReference,
};

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// `{}`: the value of the API's empty marker structs (`basic: {}`, `all: {}`). Their `Default` is
/// JSON `null`, which the API server reads as "not set".
fn empty() -> k8s_openapi::serde_json::Value {
    k8s_openapi::serde_json::Value::Object(Default::default())
}

/// A node with `cpu`, `memory`, 110 pods and `labels`.
pub fn node(name: &str, cpu: &str, memory: &str, labels: &[(&str, &str)]) -> Node {
    node_with(name, &[("cpu", cpu), ("memory", memory), ("pods", "110")], labels)
}

/// A node with the given allocatable resources and labels.
pub fn node_with(name: &str, allocatable: &[(&str, &str)], labels: &[(&str, &str)]) -> Node {
    let mut l: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    l.insert("kubernetes.io/hostname".into(), name.into());
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(l),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(quantities(allocatable)),
            ..Default::default()
        }),
    }
}

/// Adds a taint to a node.
pub fn with_taint(mut node: Node, key: &str, value: &str, effect: &str) -> Node {
    let spec = node.spec.get_or_insert_with(Default::default);
    spec.taints.get_or_insert_with(Vec::new).push(Taint {
        key: key.into(),
        value: Some(value.into()),
        effect: effect.into(),
        time_added: None,
    });
    node
}

/// A pending pod with no group, requesting `cpu` and `memory`.
pub fn pod(namespace: &str, name: &str, cpu: &str, memory: &str) -> Pod {
    pod_with(namespace, name, None, &[("cpu", cpu), ("memory", memory)])
}

/// A pending pod of PodGroup `group`, requesting `cpu` and `memory`.
pub fn pod_in_group(namespace: &str, name: &str, group: &str, cpu: &str, memory: &str) -> Pod {
    pod_with(namespace, name, Some(group), &[("cpu", cpu), ("memory", memory)])
}

/// A pending pod with arbitrary requests.
pub fn pod_with(namespace: &str, name: &str, group: Option<&str>, requests: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(requests)),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            scheduling_group: group.map(|g| PodSchedulingGroup {
                pod_group_name: Some(g.into()),
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// The same pod bound to `node`.
pub fn bound(mut pod: Pod, node: &str) -> Pod {
    if let Some(s) = pod.spec.as_mut() {
        s.node_name = Some(node.into());
    }
    pod
}

/// The same pod with `spec.priority`.
pub fn with_priority(mut pod: Pod, priority: i32) -> Pod {
    if let Some(s) = pod.spec.as_mut() {
        s.priority = Some(priority);
    }
    pod
}

/// A PodGroup or CompositePodGroup under construction.
#[derive(Debug, Clone)]
pub struct GroupBuilder {
    namespace: String,
    name: String,
    min: Option<i32>,
    parent: Option<String>,
    topology: Option<String>,
    all: bool,
    priority: Option<i32>,
    preemption_policy: Option<String>,
    workload: String,
    created: i64,
}

impl GroupBuilder {
    fn new(namespace: &str, name: &str, min: Option<i32>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            min,
            parent: None,
            topology: None,
            all: false,
            priority: None,
            preemption_policy: None,
            workload: "workload".into(),
            created: 0,
        }
    }

    /// A gang with `minCount` / `minGroupCount` = `min`.
    pub fn gang(namespace: &str, name: &str, min: i32) -> Self {
        Self::new(namespace, name, Some(min))
    }

    /// A Basic group.
    pub fn basic(namespace: &str, name: &str) -> Self {
        Self::new(namespace, name, None)
    }

    /// Sets the parent CompositePodGroup.
    pub fn parent(mut self, parent: &str) -> Self {
        self.parent = Some(parent.into());
        self
    }

    /// Sets a topology constraint on `key`.
    pub fn topology(mut self, key: &str) -> Self {
        self.topology = Some(key.into());
        self
    }

    /// Disruption mode `all`.
    pub fn all(mut self) -> Self {
        self.all = true;
        self
    }

    /// Sets `spec.priority`.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = Some(p);
        self
    }

    /// Sets `spec.preemptionPolicy`.
    pub fn preemption_policy(mut self, p: &str) -> Self {
        self.preemption_policy = Some(p.into());
        self
    }

    /// Sets the Workload name in `spec.workloadRef`.
    pub fn workload(mut self, w: &str) -> Self {
        self.workload = w.into();
        self
    }

    /// Sets the creation timestamp (seconds since the epoch); children are ordered by it.
    pub fn created(mut self, secs: i64) -> Self {
        self.created = secs;
        self
    }

    fn meta(&self) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            creation_timestamp: k8s_openapi::jiff::Timestamp::from_second(self.created).ok().map(Time),
            ..Default::default()
        }
    }

    fn workload_ref(&self) -> WorkloadReference {
        WorkloadReference {
            workload_name: self.workload.clone(),
            template_name: self.name.clone(),
        }
    }

    /// Builds a PodGroup.
    pub fn pod_group(&self) -> PodGroup {
        PodGroup {
            metadata: self.meta(),
            spec: PodGroupSpec {
                scheduling_policy: PodGroupSchedulingPolicy {
                    basic: self.min.is_none().then_some(BasicSchedulingPolicy(empty())),
                    gang: self.min.map(|m| GangSchedulingPolicy { min_count: m }),
                },
                scheduling_constraints: self.topology.as_ref().map(|k| PodGroupSchedulingConstraints {
                    topology: Some(vec![TopologyConstraint { key: k.clone() }]),
                }),
                disruption_mode: self.all.then_some(DisruptionMode {
                    all: Some(AllDisruptionMode(empty())),
                    single: None,
                }),
                parent_composite_pod_group_name: self.parent.clone(),
                priority: self.priority,
                preemption_policy: self.preemption_policy.clone(),
                workload_ref: Some(self.workload_ref()),
                ..Default::default()
            },
            status: None,
        }
    }

    /// Builds a CompositePodGroup.
    pub fn composite(&self) -> CompositePodGroup {
        CompositePodGroup {
            metadata: self.meta(),
            spec: CompositePodGroupSpec {
                scheduling_policy: CompositePodGroupSchedulingPolicy {
                    basic: self.min.is_none().then_some(CompositeBasicSchedulingPolicy(empty())),
                    gang: self.min.map(|m| CompositeGangSchedulingPolicy { min_group_count: m }),
                },
                scheduling_constraints: self.topology.as_ref().map(|k| CompositePodGroupSchedulingConstraints {
                    topology: Some(vec![TopologyConstraint { key: k.clone() }]),
                }),
                disruption_mode: self.all.then_some(CompositeDisruptionMode {
                    all: Some(AllCompositeDisruptionMode(empty())),
                    single: None,
                }),
                parent_composite_pod_group_name: self.parent.clone(),
                priority: self.priority,
                preemption_policy: self.preemption_policy.clone(),
                workload_ref: self.workload_ref(),
                ..Default::default()
            },
            status: None,
        }
    }
}

/// A gang PodGroup with `minCount` = `min`.
pub fn pod_group_gang(namespace: &str, name: &str, min: i32) -> PodGroup {
    GroupBuilder::gang(namespace, name, min).pod_group()
}
