//! Label selectors over pods (`metav1.LabelSelector`: `matchLabels`, `matchExpressions` with `In`,
//! `NotIn`, `Exists`, `DoesNotExist`) and the namespaces an affinity term applies to. Used by
//! `InterPodAffinity` and `PodTopologySpread`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::core::framework::ConstraintError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Requirement {
    key: String,
    op: Op,
    values: BTreeSet<String>,
}

/// A parsed label selector. `None` inside means a null selector, which matches nothing; an empty
/// selector matches everything (`metav1.LabelSelectorAsSelector`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct PodSelector(Option<Vec<Requirement>>);

impl PodSelector {
    /// Parses `sel` (at `path`, for errors).
    pub(crate) fn parse(sel: Option<&LabelSelector>, path: &str) -> Result<Self, ConstraintError> {
        let Some(sel) = sel else {
            return Ok(PodSelector(None));
        };
        let mut reqs = Vec::new();
        for (k, v) in sel.match_labels.iter().flatten() {
            reqs.push(Requirement {
                key: k.clone(),
                op: Op::In,
                values: [v.clone()].into(),
            });
        }
        for (i, e) in sel.match_expressions.iter().flatten().enumerate() {
            let op = match e.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => {
                    return Err(ConstraintError {
                        path: format!("{path}.matchExpressions[{i}].operator"),
                        detail: format!("Unsupported value: \"{other}\""),
                    });
                }
            };
            let values: BTreeSet<String> = e.values.iter().flatten().cloned().collect();
            if matches!(op, Op::In | Op::NotIn) && values.is_empty() {
                return Err(ConstraintError {
                    path: format!("{path}.matchExpressions[{i}].values"),
                    detail: "Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
                });
            }
            reqs.push(Requirement {
                key: e.key.clone(),
                op,
                values,
            });
        }
        Ok(PodSelector(Some(reqs)))
    }

    /// Adds `key In (value)` (`matchLabelKeys`) or `key NotIn (value)` (`mismatchLabelKeys`) for each key
    /// the incoming pod has a label for.
    pub(crate) fn with_label_keys(
        mut self,
        keys: &[String],
        labels: &BTreeMap<String, String>,
        matching: bool,
    ) -> Self {
        if let Some(reqs) = self.0.as_mut() {
            for k in keys {
                if let Some(v) = labels.get(k) {
                    reqs.push(Requirement {
                        key: k.clone(),
                        op: if matching { Op::In } else { Op::NotIn },
                        values: [v.clone()].into(),
                    });
                }
            }
        }
        self
    }

    /// Whether `labels` satisfy the selector.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let Some(reqs) = &self.0 else { return false };
        reqs.iter().all(|r| {
            let v = labels.get(&r.key);
            match r.op {
                Op::In => v.is_some_and(|v| r.values.contains(v)),
                Op::NotIn => v.is_none_or(|v| !r.values.contains(v)),
                Op::Exists => v.is_some(),
                Op::DoesNotExist => v.is_none(),
            }
        })
    }

    /// An equality requirement, if any: only pods with this label can match (an index can narrow the
    /// candidates to those).
    pub(crate) fn equality(&self) -> Option<(&str, &str)> {
        self.0.as_ref()?.iter().find_map(|r| match (r.op, r.values.len()) {
            (Op::In, 1) => r.values.iter().next().map(|v| (r.key.as_str(), v.as_str())),
            _ => None,
        })
    }

    /// A null selector (matches nothing).
    pub(crate) fn is_null(&self) -> bool {
        self.0.is_none()
    }
}

/// The namespaces an affinity term selects: the listed ones and those whose labels match the selector;
/// the pod's own namespace when both are unset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct Namespaces {
    names: BTreeSet<String>,
    selector: Option<PodSelector>,
}

impl Namespaces {
    pub(crate) fn new(names: BTreeSet<String>, selector: Option<PodSelector>, own: &str) -> Self {
        let names = if names.is_empty() && selector.is_none() {
            [own.to_string()].into()
        } else {
            names
        };
        Namespaces { names, selector }
    }

    /// Whether namespace `ns` (with labels from `ns_labels`) is selected.
    pub(crate) fn contains(&self, ns: &str, ns_labels: impl FnOnce(&str) -> Option<BTreeMap<String, String>>) -> bool {
        if self.names.contains(ns) {
            return true;
        }
        match &self.selector {
            Some(sel) => sel.matches(&ns_labels(ns).unwrap_or_default()),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn null_matches_nothing_and_empty_matches_everything() {
        assert!(!PodSelector::parse(None, "s").unwrap().matches(&labels(&[])));
        assert!(
            PodSelector::parse(Some(&LabelSelector::default()), "s")
                .unwrap()
                .matches(&labels(&[("a", "b")]))
        );
    }

    #[test]
    fn operators_and_label_keys() {
        let sel = LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: Some(vec!["db".into()]),
            }]),
        };
        let s = PodSelector::parse(Some(&sel), "s").unwrap();
        assert!(s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert_eq!(s.equality(), Some(("app", "web")));
        let own = labels(&[("pod-template-hash", "abc")]);
        let s = s.with_label_keys(&["pod-template-hash".into(), "absent".into()], &own, true);
        assert!(!s.matches(&labels(&[("app", "web")])));
        assert!(s.matches(&labels(&[("app", "web"), ("pod-template-hash", "abc")])));
        let bad = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "Like".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert!(PodSelector::parse(Some(&bad), "s").is_err());
    }

    #[test]
    fn namespaces_default_to_the_pods_own() {
        let n = Namespaces::new(BTreeSet::new(), None, "team-a");
        assert!(n.contains("team-a", |_| None));
        assert!(!n.contains("team-b", |_| None));
        let all = Namespaces::new(
            BTreeSet::new(),
            Some(PodSelector::parse(Some(&LabelSelector::default()), "s").unwrap()),
            "team-a",
        );
        assert!(all.contains("team-b", |_| None));
    }
}
