//! `TaintToleration` (filter and score): every `NoSchedule` / `NoExecute` taint of the node must be
//! tolerated; the score prefers nodes with fewer untolerated `PreferNoSchedule` taints. Operators
//! `Equal`, `Exists` and, as in v1.37 (`TaintTolerationComparisonOperators`), `Gt` / `Lt`, which
//! compare a numeric taint value with the toleration's (`Gt` tolerates a taint whose value is greater).
//! Static: cached per equivalence class. `NodeUnschedulable` reads the same tolerations.

use k8s_openapi::api::core::v1::{PodSpec, Toleration};

use crate::core::framework::{ConstraintError, NodeView, Reject};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TolOp {
    Equal,
    Exists,
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Tol {
    key: Option<String>,
    op: TolOp,
    value: String,
    effect: Option<String>,
}

/// A pod's tolerations.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct Tolerations(Vec<Tol>);

impl Tolerations {
    /// Reads `spec.tolerations`; a malformed toleration is a field error.
    pub(crate) fn from_pod_spec(spec: &PodSpec) -> Result<Self, ConstraintError> {
        let mut tolerations = Vec::new();
        for (i, t) in spec.tolerations.iter().flatten().enumerate() {
            tolerations.push(parse_toleration(t, &format!("spec.tolerations[{i}]"))?);
        }
        Ok(Self(tolerations))
    }

    /// The filter.
    pub(crate) fn filter(&self, node: &NodeView<'_>) -> Result<(), Reject> {
        for t in node.taints {
            if (t.effect == "NoSchedule" || t.effect == "NoExecute") && !self.tolerates(&t.key, &t.value, &t.effect) {
                return Err(Reject::Taint(format!("{{{}: {}}}", t.key, t.value)));
            }
        }
        Ok(())
    }

    pub(crate) fn tolerates(&self, key: &str, value: &str, effect: &str) -> bool {
        self.0.iter().any(|t| {
            if t.effect.as_deref().is_some_and(|e| e != effect) {
                return false;
            }
            match &t.key {
                Some(k) if k != key => return false,
                None if t.op != TolOp::Exists => return false,
                _ => {}
            }
            match t.op {
                TolOp::Exists => true,
                TolOp::Equal => t.value == value,
                TolOp::Gt(bound) => numeric(value).is_some_and(|v| v > bound),
                TolOp::Lt(bound) => numeric(value).is_some_and(|v| v < bound),
            }
        })
    }

    /// The number of the node's `PreferNoSchedule` taints the pod does not tolerate (the score's raw
    /// value; fewer is better).
    pub(crate) fn intolerable_preferred(&self, node: &NodeView<'_>) -> i64 {
        node.taints
            .iter()
            .filter(|t| t.effect == "PreferNoSchedule" && !self.tolerates(&t.key, &t.value, &t.effect))
            .count() as i64
    }
}

/// A decimal integer taint or toleration value (upstream's `IsDecimalInteger` + `ParseInt`).
fn numeric(v: &str) -> Option<i64> {
    let digits = v.strip_prefix('-').unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    v.parse().ok()
}

fn parse_toleration(t: &Toleration, path: &str) -> Result<Tol, ConstraintError> {
    let value = t.value.clone().unwrap_or_default();
    let op = match t.operator.as_deref() {
        None | Some("") | Some("Equal") => TolOp::Equal,
        Some("Exists") => TolOp::Exists,
        Some(cmp @ ("Gt" | "Lt")) => {
            let Some(bound) = numeric(&value) else {
                return Err(ConstraintError {
                    path: format!("{path}.value"),
                    detail: format!("Invalid value: \"{value}\": must be a valid integer when operator is '{cmp}'"),
                });
            };
            if cmp == "Gt" {
                TolOp::Gt(bound)
            } else {
                TolOp::Lt(bound)
            }
        }
        Some(other) => {
            return Err(ConstraintError {
                path: format!("{path}.operator"),
                detail: format!(
                    "Unsupported value: \"{other}\": supported values: \"Equal\", \"Exists\", \"Gt\", \"Lt\""
                ),
            });
        }
    };
    Ok(Tol {
        key: t.key.clone().filter(|k| !k.is_empty()),
        op,
        value,
        effect: t.effect.clone().filter(|e| !e.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::framework::NodeTaint;
    use std::collections::BTreeMap;

    fn tol(op: &str, value: &str) -> Tolerations {
        let spec = PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("gpu-gen".into()),
                operator: Some(op.into()),
                value: Some(value.into()),
                effect: Some("NoSchedule".into()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        Tolerations::from_pod_spec(&spec).unwrap()
    }

    #[test]
    fn comparison_operators_follow_v1_37() {
        // Gt tolerates a taint whose value is greater than the toleration's.
        assert!(tol("Gt", "3").tolerates("gpu-gen", "5", "NoSchedule"));
        assert!(!tol("Gt", "5").tolerates("gpu-gen", "5", "NoSchedule"));
        assert!(tol("Lt", "5").tolerates("gpu-gen", "3", "NoSchedule"));
        assert!(!tol("Lt", "5").tolerates("gpu-gen", "7", "NoSchedule"));
        // Non-numeric taint values are never tolerated by a comparison.
        assert!(!tol("Gt", "3").tolerates("gpu-gen", "high", "NoSchedule"));
        assert!(!tol("Gt", "3").tolerates("gpu-gen", "05", "NoSchedule"));
        assert!(tol("Gt", "-10").tolerates("gpu-gen", "-2", "NoSchedule"));
        assert!(!tol("Gt", "3").tolerates("other", "5", "NoSchedule"));
        // A non-numeric toleration value is a field error.
        let bad = PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("k".into()),
                operator: Some("Gt".into()),
                value: Some("x".into()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(
            Tolerations::from_pod_spec(&bad).unwrap_err().path,
            "spec.tolerations[0].value"
        );
        assert!(numeric("9223372036854775808").is_none());
    }

    #[test]
    fn prefer_no_schedule_counts_untolerated_taints() {
        let labels = BTreeMap::new();
        let taints = vec![
            NodeTaint {
                key: "a".into(),
                value: "".into(),
                effect: "PreferNoSchedule".into(),
            },
            NodeTaint {
                key: "b".into(),
                value: "".into(),
                effect: "PreferNoSchedule".into(),
            },
            NodeTaint {
                key: "c".into(),
                value: "".into(),
                effect: "NoSchedule".into(),
            },
        ];
        let view = NodeView {
            name: "n",
            labels: &labels,
            taints: &taints,
            unschedulable: false,
        };
        let spec = PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("a".into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(
            Tolerations::from_pod_spec(&spec).unwrap().intolerable_preferred(&view),
            1
        );
    }
}
