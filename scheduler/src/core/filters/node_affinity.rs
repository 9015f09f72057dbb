//! `NodeAffinity` (filter and score): `spec.nodeSelector` and `requiredDuringSchedulingIgnoredDuringExecution`
//! node affinity filter: terms are ORed, expressions ANDed; operators `In`, `NotIn`, `Exists`,
//! `DoesNotExist`, `Gt`, `Lt`; `matchFields` on `metadata.name`. The score sums the weights of the
//! `preferredDuringSchedulingIgnoredDuringExecution` terms a node matches. Static: cached per
//! equivalence class.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, PodSpec};

use crate::core::framework::{ConstraintError, NodeView, Reject};

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

/// A pod's required node affinity: `spec.nodeSelector` and the required terms.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct NodeAffinity {
    node_selector: Vec<(String, String)>,
    required: Option<Vec<Term>>,
    preferred: Vec<(i64, Term)>,
}

impl NodeAffinity {
    /// Reads the pod's node selector and required node affinity; malformed expressions are field errors.
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
        let mut preferred = Vec::new();
        let prefs = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| n.preferred_during_scheduling_ignored_during_execution.as_ref());
        for (i, p) in prefs.into_iter().flatten().enumerate() {
            let base = format!("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
            if !(1..=100).contains(&p.weight) {
                return Err(ConstraintError {
                    path: format!("{base}.weight"),
                    detail: format!("Invalid value: {}: must be in the range 1-100", p.weight),
                });
            }
            let mut exprs = Vec::new();
            for (j, r) in p.preference.match_expressions.iter().flatten().enumerate() {
                exprs.push(parse_expr(
                    r,
                    &format!("{base}.preference.matchExpressions[{j}]"),
                    false,
                )?);
            }
            let mut fields = Vec::new();
            for (j, r) in p.preference.match_fields.iter().flatten().enumerate() {
                fields.push(parse_expr(r, &format!("{base}.preference.matchFields[{j}]"), true)?);
            }
            preferred.push((i64::from(p.weight), Term { exprs, fields }));
        }
        Ok(Self {
            node_selector,
            required,
            preferred,
        })
    }

    /// The score's raw value: the weights of the preferred terms the node matches.
    pub(crate) fn preferred_weight(&self, node: &NodeView<'_>) -> i64 {
        self.preferred
            .iter()
            .filter(|(_, t)| term_matches(t, node))
            .map(|(w, _)| *w)
            .sum()
    }

    /// The filter.
    pub(crate) fn filter(&self, node: &NodeView<'_>) -> Result<(), Reject> {
        if self.matches(node) {
            Ok(())
        } else {
            Err(Reject::Affinity)
        }
    }

    fn matches(&self, node: &NodeView<'_>) -> bool {
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
