//! Pod filters, one file per kube-scheduler plugin: which nodes a pod may run on.
//!
//! | plugin | kind | rejects with | code |
//! | --- | --- | --- | --- |
//! | `node_unschedulable` | static | `node(s) were unschedulable` | UU |
//! | `node_affinity` | static | `node(s) didn't match Pod's node affinity/selector` | UU |
//! | `taint_toleration` | static | `node(s) had untolerated taint {key: value}` | UU |
//! | `node_ports` | dynamic | `node(s) didn't have free ports for the requested pod ports` | U |
//! | `node_resources_fit` | dynamic | `Insufficient <resource>`, `Too many pods` | U |
//! | `volumes` (NodeVolumeLimits) | dynamic | `node(s) exceed max volume count` | U |
//! | `volumes` (VolumeBinding) | dynamic | `node(s) had volume node affinity conflict`, `node(s) didn't find available persistent volumes to bind` | UU |
//! | `volumes` (VolumeZone) | dynamic | `node(s) had no available volume zone` | UU |
//! | `pod_topology_spread` | dynamic | `node(s) didn't match pod topology spread constraints` (U), `... (missing required label)` (UU) | |
//! | `inter_pod_affinity` | dynamic | `node(s) didn't match pod affinity rules` (UU), `node(s) didn't match pod anti-affinity rules` (U), `node(s) didn't satisfy existing pods anti-affinity rules` (U) | |
//!
//! A pod whose every node is rejected with UU is UnschedulableAndUnresolvable as a member: preemption
//! cannot help it, and its gang does not try.
//!
//! The *static* filters depend only on the pod's spec and the node's labels, taints and
//! `spec.unschedulable`; their result is cached per equivalence class (see
//! [`equivalence`](super::equivalence)) and a failure is `UnschedulableAndUnresolvable` at the pod level
//! (no preemption can help). *Dynamic* filters read what is placed on the node; a failure is
//! `Unschedulable`. Each static plugin parses its part of the pod spec into `StaticSpec` (the
//! equivalence key) and has a `filter` with upstream's contract (`Ok` or the rejection reason); adding
//! one is a file here, a field of `StaticSpec` and a line in `StaticSpec::check`. Reason strings
//! match upstream's, so a diagnosis reads like kube-scheduler's (`0/5 nodes are available: 2
//! Insufficient cpu, ...`).

pub(crate) mod inter_pod_affinity;
pub(crate) mod node_affinity;
pub(crate) mod node_ports;
pub(crate) mod node_resources_fit;
pub(crate) mod node_unschedulable;
pub(crate) mod pod_selector;
pub(crate) mod pod_topology_spread;
pub(crate) mod taint_toleration;
pub mod volumes;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec};

pub(crate) use node_resources_fit::{fits, insufficient};

#[cfg(test)]
use super::framework::NodeTaint;
use super::framework::{ConstraintError, NodeView, Reject};

/// A pod's constraints that depend on other pods or on storage: evaluated per pod and node in the
/// cycle, never cached (pods placed earlier in the cycle change their outcome).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct DynamicSpec {
    pub ports: Vec<node_ports::HostPort>,
    pub affinity: inter_pod_affinity::PodAffinity,
    pub spread: Vec<pod_topology_spread::Constraint>,
    pub claims: Vec<String>,
    /// (uid, kind) of the controller owner, for the default spread constraints.
    pub owner: Option<(String, String)>,
}

impl DynamicSpec {
    /// Reads a pod's dynamic constraints; `None` when it has none (the fast path).
    pub(crate) fn from_pod(
        pod: &Pod,
        spec: &PodSpec,
        labels: &BTreeMap<String, String>,
    ) -> Result<Option<Self>, ConstraintError> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let owner = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .map(|r| (r.uid.clone(), r.kind.clone()));
        let d = DynamicSpec {
            ports: node_ports::from_pod_spec(spec),
            affinity: inter_pod_affinity::PodAffinity::from_pod_spec(spec, namespace, labels)?,
            spread: pod_topology_spread::from_pod_spec(spec, labels)?,
            claims: volumes::claims_of(spec, name),
            owner: owner.filter(|(_, k)| matches!(k.as_str(), "ReplicaSet" | "StatefulSet" | "ReplicationController")),
        };
        let empty = d.ports.is_empty()
            && d.affinity.is_empty()
            && d.spread.is_empty()
            && d.claims.is_empty()
            && d.owner.is_none();
        Ok((!empty).then_some(d))
    }

    /// Whether the pod has inter-pod dependencies (affinity, anti-affinity, spread): a gang failing with
    /// them gets the `PlacementNotGuaranteed` reason (KEP-4671).
    pub(crate) fn inter_pod(&self) -> bool {
        !self.affinity.required.is_empty()
            || !self.affinity.anti_required.is_empty()
            || self.spread.iter().any(|c| c.hard)
    }
}

/// The static scheduling constraints of a pod: what the equivalence cache keys on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct StaticSpec {
    pub(crate) affinity: node_affinity::NodeAffinity,
    pub(crate) tolerations: taint_toleration::Tolerations,
}

impl StaticSpec {
    /// Extracts the static constraints from a pod spec.
    pub(crate) fn from_pod_spec(spec: &PodSpec) -> Result<Self, ConstraintError> {
        Ok(Self {
            affinity: node_affinity::NodeAffinity::from_pod_spec(spec)?,
            tolerations: taint_toleration::Tolerations::from_pod_spec(spec)?,
        })
    }

    /// The static scores' raw values on a node: the preferred node-affinity weight matched and the
    /// number of untolerated `PreferNoSchedule` taints.
    pub(crate) fn raw_scores(&self, node: &NodeView<'_>) -> (i64, i64) {
        (
            self.affinity.preferred_weight(node),
            self.tolerations.intolerable_preferred(node),
        )
    }

    /// Runs the static filters in upstream's order; `Err` carries the first rejecting filter's reason.
    pub(crate) fn check(&self, node: &NodeView<'_>) -> Result<(), Reject> {
        node_unschedulable::filter(&self.tolerations, node)?;
        self.affinity.filter(node)?;
        self.tolerations.filter(node)
    }
}

/// Formats upstream's diagnosis: `0/N nodes are available: 2 Insufficient cpu, 1 node(s) were
/// unschedulable.`
pub(crate) fn diagnosis(total: usize, rejects: &BTreeMap<String, usize>) -> String {
    if rejects.is_empty() {
        return format!("0/{total} nodes are available.");
    }
    let parts: Vec<String> = rejects.iter().map(|(r, n)| format!("{n} {r}")).collect();
    format!("0/{total} nodes are available: {}.", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Toleration,
    };

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|s| s.to_string()).collect())
            },
        }
    }

    fn spec_with_terms(terms: Vec<Vec<NodeSelectorRequirement>>) -> PodSpec {
        PodSpec {
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: terms
                            .into_iter()
                            .map(|e| NodeSelectorTerm {
                                match_expressions: Some(e),
                                match_fields: None,
                            })
                            .collect(),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn check(spec: &PodSpec, l: &BTreeMap<String, String>, taints: &[NodeTaint], unsched: bool) -> Result<(), Reject> {
        let s = StaticSpec::from_pod_spec(spec).unwrap();
        s.check(&NodeView {
            name: "n1",
            labels: l,
            taints,
            unschedulable: unsched,
        })
    }

    #[test]
    fn affinity_operators() {
        let l = labels(&[("zone", "a"), ("gen", "5")]);
        let cases = [
            (req("zone", "In", &["a", "b"]), true),
            (req("zone", "In", &["b"]), false),
            (req("zone", "NotIn", &["b"]), true),
            (req("zone", "NotIn", &["a"]), false),
            (req("missing", "NotIn", &["a"]), true),
            (req("zone", "Exists", &[]), true),
            (req("missing", "Exists", &[]), false),
            (req("missing", "DoesNotExist", &[]), true),
            (req("zone", "DoesNotExist", &[]), false),
            (req("gen", "Gt", &["4"]), true),
            (req("gen", "Gt", &["5"]), false),
            (req("gen", "Lt", &["6"]), true),
            (req("gen", "Lt", &["5"]), false),
            (req("zone", "Gt", &["1"]), false),
        ];
        for (r, want) in cases {
            let spec = spec_with_terms(vec![vec![r.clone()]]);
            assert_eq!(check(&spec, &l, &[], false).is_ok(), want, "{r:?}");
        }
        // Terms are ORed.
        let spec = spec_with_terms(vec![vec![req("zone", "In", &["b"])], vec![req("gen", "In", &["5"])]]);
        assert!(check(&spec, &l, &[], false).is_ok());
        // Expressions within a term are ANDed.
        let spec = spec_with_terms(vec![vec![req("zone", "In", &["a"]), req("gen", "In", &["4"])]]);
        assert_eq!(check(&spec, &l, &[], false), Err(Reject::Affinity));
    }

    #[test]
    fn bad_operators_are_field_errors() {
        let spec = spec_with_terms(vec![vec![req("gen", "Gt", &["x"])]]);
        let err = StaticSpec::from_pod_spec(&spec).unwrap_err();
        assert_eq!(
            err.path,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"
        );
        let spec = spec_with_terms(vec![vec![req("gen", "Like", &["x"])]]);
        assert!(
            StaticSpec::from_pod_spec(&spec)
                .unwrap_err()
                .detail
                .contains("Unsupported value")
        );
    }

    #[test]
    fn node_selector_taints_and_cordon() {
        let l = labels(&[("disk", "ssd")]);
        let mut spec = PodSpec {
            node_selector: Some([("disk".to_string(), "ssd".to_string())].into()),
            ..Default::default()
        };
        assert!(check(&spec, &l, &[], false).is_ok());
        assert_eq!(check(&spec, &labels(&[]), &[], false), Err(Reject::Affinity));
        let taint = NodeTaint {
            key: "gpu".into(),
            value: "true".into(),
            effect: "NoSchedule".into(),
        };
        let soft = NodeTaint {
            key: "x".into(),
            value: String::new(),
            effect: "PreferNoSchedule".into(),
        };
        assert_eq!(
            check(&spec, &l, &[taint.clone(), soft.clone()], false),
            Err(Reject::Taint("{gpu: true}".into()))
        );
        spec.tolerations = Some(vec![Toleration {
            key: Some("gpu".into()),
            operator: Some("Equal".into()),
            value: Some("true".into()),
            effect: Some("NoSchedule".into()),
            ..Default::default()
        }]);
        assert!(check(&spec, &l, &[taint.clone(), soft], false).is_ok());
        assert_eq!(check(&spec, &l, &[], true), Err(Reject::Unschedulable));
        spec.tolerations = Some(vec![Toleration {
            operator: Some("Exists".into()),
            ..Default::default()
        }]);
        assert!(
            check(&spec, &l, &[taint], true).is_ok(),
            "an empty-key Exists toleration tolerates everything"
        );
    }

    #[test]
    fn diagnosis_reads_like_upstream() {
        let mut m = BTreeMap::new();
        m.insert(Reject::Insufficient("cpu".into()).message(), 2);
        m.insert(Reject::Unschedulable.message(), 1);
        assert_eq!(
            diagnosis(3, &m),
            "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable."
        );
    }
}
