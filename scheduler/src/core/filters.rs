//! Pod filters: which nodes a pod may run on.
//!
//! The *static* filters depend only on the pod's spec and the node's labels, taints and
//! `spec.unschedulable`, so their result is cached per equivalence class (see
//! [`equivalence`](super::equivalence)):
//!
//! - `NodeUnschedulable`: a cordoned node only takes pods that tolerate
//!   `node.kubernetes.io/unschedulable:NoSchedule`;
//! - `NodeAffinity`: `spec.nodeSelector` and `requiredDuringSchedulingIgnoredDuringExecution` node
//!   affinity (terms are ORed, expressions ANDed; operators `In`, `NotIn`, `Exists`, `DoesNotExist`,
//!   `Gt`, `Lt`; `matchFields` on `metadata.name`);
//! - `TaintToleration`: every `NoSchedule` / `NoExecute` taint must be tolerated.
//!
//! The *dynamic* filter `NodeResourcesFit` checks the pod's requests (including one `pods` slot) against
//! what is left on the node. Static failures are `UnschedulableAndUnresolvable` at the pod level (no
//! preemption can help), resource failures are `Unschedulable`. The reason strings match upstream's so a
//! diagnosis reads like kube-scheduler's (`0/5 nodes are available: 2 Insufficient cpu, ...`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, PodSpec, Toleration};

use super::resources::{PODS, Requests, ResourceNames};

/// An error in a pod's scheduling constraints, with its field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintError {
    /// Field path of the bad value.
    pub path: String,
    /// What is wrong.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Expr {
    key: String,
    op: Op,
    values: Vec<String>,
    number: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Term {
    exprs: Vec<Expr>,
    fields: Vec<Expr>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Tol {
    key: Option<String>,
    exists: bool,
    value: String,
    effect: Option<String>,
}

/// The static scheduling constraints of a pod: what the equivalence cache keys on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct StaticSpec {
    node_selector: Vec<(String, String)>,
    required: Option<Vec<Term>>,
    tolerations: Vec<Tol>,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeTaint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

/// The parts of a node the static filters read.
#[derive(Debug)]
pub(crate) struct NodeView<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub taints: &'a [NodeTaint],
    pub unschedulable: bool,
}

/// Why a node was rejected, for diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reject {
    Unschedulable,
    Affinity,
    Taint(String),
    Insufficient(String),
    TooManyPods,
}

impl Reject {
    pub(crate) fn message(&self) -> String {
        match self {
            Reject::Unschedulable => "node(s) were unschedulable".to_string(),
            Reject::Affinity => "node(s) didn't match Pod's node affinity/selector".to_string(),
            Reject::Taint(t) => format!("node(s) had untolerated taint {t}"),
            Reject::Insufficient(r) => format!("Insufficient {r}"),
            Reject::TooManyPods => "Too many pods".to_string(),
        }
    }
}

fn parse_expr(r: &NodeSelectorRequirement, path: &str, field: bool) -> Result<Expr, ConstraintError> {
    let op = match r.operator.as_str() {
        "In" => Op::In,
        "NotIn" => Op::NotIn,
        "Exists" if !field => Op::Exists,
        "DoesNotExist" if !field => Op::DoesNotExist,
        "Gt" if !field => Op::Gt,
        "Lt" if !field => Op::Lt,
        other => {
            return Err(ConstraintError {
                path: format!("{path}.operator"),
                detail: format!("Unsupported value: \"{other}\""),
            });
        }
    };
    let values = r.values.clone().unwrap_or_default();
    let mut number = 0;
    match op {
        Op::In | Op::NotIn if values.is_empty() => {
            return Err(ConstraintError {
                path: format!("{path}.values"),
                detail: "Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
            });
        }
        Op::Exists | Op::DoesNotExist if !values.is_empty() => {
            return Err(ConstraintError {
                path: format!("{path}.values"),
                detail: "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
            });
        }
        Op::Gt | Op::Lt => {
            let parsed = if values.len() == 1 {
                values[0].parse::<i64>().ok()
            } else {
                None
            };
            number = parsed.ok_or_else(|| ConstraintError {
                path: format!("{path}.values"),
                detail: "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'".into(),
            })?;
        }
        _ => {}
    }
    if field && r.key != "metadata.name" {
        return Err(ConstraintError {
            path: format!("{path}.key"),
            detail: format!("Invalid value: \"{}\": not a valid field selector key", r.key),
        });
    }
    Ok(Expr {
        key: r.key.clone(),
        op,
        values,
        number,
    })
}

fn parse_toleration(t: &Toleration, path: &str) -> Result<Tol, ConstraintError> {
    let exists = match t.operator.as_deref() {
        None | Some("") | Some("Equal") => false,
        Some("Exists") => true,
        Some(other) => {
            return Err(ConstraintError {
                path: format!("{path}.operator"),
                detail: format!("Unsupported value: \"{other}\""),
            });
        }
    };
    Ok(Tol {
        key: t.key.clone().filter(|k| !k.is_empty()),
        exists,
        value: t.value.clone().unwrap_or_default(),
        effect: t.effect.clone().filter(|e| !e.is_empty()),
    })
}

impl StaticSpec {
    /// Extracts the static constraints from a pod spec.
    pub(crate) fn from_pod_spec(spec: &PodSpec) -> Result<Self, ConstraintError> {
        let node_selector = spec
            .node_selector
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut required = None;
        let req = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref());
        if let Some(sel) = req {
            let base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
            let mut terms = Vec::new();
            for (i, t) in sel.node_selector_terms.iter().enumerate() {
                let mut exprs = Vec::new();
                for (j, r) in t.match_expressions.iter().flatten().enumerate() {
                    exprs.push(parse_expr(
                        r,
                        &format!("{base}.nodeSelectorTerms[{i}].matchExpressions[{j}]"),
                        false,
                    )?);
                }
                let mut fields = Vec::new();
                for (j, r) in t.match_fields.iter().flatten().enumerate() {
                    fields.push(parse_expr(
                        r,
                        &format!("{base}.nodeSelectorTerms[{i}].matchFields[{j}]"),
                        true,
                    )?);
                }
                terms.push(Term { exprs, fields });
            }
            required = Some(terms);
        }
        let mut tolerations = Vec::new();
        for (i, t) in spec.tolerations.iter().flatten().enumerate() {
            tolerations.push(parse_toleration(t, &format!("spec.tolerations[{i}]"))?);
        }
        Ok(Self {
            node_selector,
            required,
            tolerations,
        })
    }

    fn tolerates(&self, key: &str, value: &str, effect: &str) -> bool {
        self.tolerations.iter().any(|t| {
            if t.effect.as_deref().is_some_and(|e| e != effect) {
                return false;
            }
            match &t.key {
                Some(k) if k != key => return false,
                None if !t.exists => return false,
                _ => {}
            }
            t.exists || t.value == value
        })
    }

    /// Runs the static filters; `Err` carries the first rejecting filter's reason.
    pub(crate) fn check(&self, node: &NodeView<'_>) -> Result<(), Reject> {
        if node.unschedulable && !self.tolerates("node.kubernetes.io/unschedulable", "", "NoSchedule") {
            return Err(Reject::Unschedulable);
        }
        if !self.matches_affinity(node) {
            return Err(Reject::Affinity);
        }
        for t in node.taints {
            if (t.effect == "NoSchedule" || t.effect == "NoExecute") && !self.tolerates(&t.key, &t.value, &t.effect) {
                return Err(Reject::Taint(format!("{{{}: {}}}", t.key, t.value)));
            }
        }
        Ok(())
    }

    fn matches_affinity(&self, node: &NodeView<'_>) -> bool {
        for (k, v) in &self.node_selector {
            if node.labels.get(k) != Some(v) {
                return false;
            }
        }
        match &self.required {
            None => true,
            Some(terms) => terms.iter().any(|t| term_matches(t, node)),
        }
    }
}

fn term_matches(t: &Term, node: &NodeView<'_>) -> bool {
    if t.exprs.is_empty() && t.fields.is_empty() {
        return false;
    }
    t.exprs
        .iter()
        .all(|e| expr_matches(e, node.labels.get(&e.key).map(String::as_str)))
        && t.fields.iter().all(|e| expr_matches(e, Some(node.name)))
}

fn expr_matches(e: &Expr, value: Option<&str>) -> bool {
    match e.op {
        Op::In => value.is_some_and(|v| e.values.iter().any(|x| x == v)),
        Op::NotIn => value.is_none_or(|v| !e.values.iter().any(|x| x == v)),
        Op::Exists => value.is_some(),
        Op::DoesNotExist => value.is_none(),
        Op::Gt => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > e.number),
        Op::Lt => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < e.number),
    }
}

/// `NodeResourcesFit`: does `req` fit next to `requested` within `allocatable`?
#[inline]
pub(crate) fn fits(req: &Requests, allocatable: &[i64], requested: &[i64]) -> bool {
    req.0.iter().all(|&(i, v)| {
        let i = i as usize;
        let alloc = allocatable.get(i).copied().unwrap_or(0);
        let used = requested.get(i).copied().unwrap_or(0);
        used.saturating_add(v) <= alloc
    })
}

/// The first resource `req` does not fit, for diagnostics.
pub(crate) fn insufficient(
    req: &Requests,
    allocatable: &[i64],
    requested: &[i64],
    names: &ResourceNames,
) -> Option<Reject> {
    for &(i, v) in &req.0 {
        let alloc = allocatable.get(i as usize).copied().unwrap_or(0);
        let used = requested.get(i as usize).copied().unwrap_or(0);
        if used.saturating_add(v) > alloc {
            return Some(if i == PODS {
                Reject::TooManyPods
            } else {
                Reject::Insufficient(names.name(i).to_string())
            });
        }
    }
    None
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
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, NodeSelectorTerm};

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
