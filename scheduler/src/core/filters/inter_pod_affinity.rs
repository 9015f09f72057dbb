//! `InterPodAffinity` (filter and score): required and preferred pod affinity and anti-affinity, with
//! upstream's semantics: a term matches pods selected by its label selector (plus `matchLabelKeys` /
//! `mismatchLabelKeys` resolved against the incoming pod) in its namespaces (the listed ones, those
//! matching `namespaceSelector`, else the pod's own), and is satisfied per domain of its `topologyKey`.
//!
//! - required affinity: every term needs a matching pod in the node's domain; a term no pod in the
//!   cluster matches is waived when the incoming pod matches it itself (the first pod of a group that
//!   wants to be together). Failure is `UnschedulableAndUnresolvable`.
//! - required anti-affinity: no term may have a matching pod in the node's domain (`Unschedulable`).
//! - existing pods' required anti-affinity: a node is refused when a pod in its domain has a term that
//!   matches the incoming pod (symmetry; `Unschedulable`).
//! - scoring: the weights of preferred terms matched in the node's domain, plus (symmetrically) the
//!   preferred terms of existing pods that match the incoming pod, and their required affinity terms
//!   with weight 1 (`hardPodAffinityWeight`); normalized between the lowest and highest node.
//!
//! Pods placed earlier in the same cycle count like running ones, so gang members see each other.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodAffinityTerm, PodSpec};

use super::pod_selector::{Namespaces, PodSelector};
use crate::core::framework::ConstraintError;

/// One affinity term.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Term {
    pub selector: PodSelector,
    pub namespaces: Namespaces,
    pub key: String,
}

/// A pod's inter-pod affinity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct PodAffinity {
    pub required: Vec<Term>,
    pub anti_required: Vec<Term>,
    /// (weight, term); anti-affinity weights are negative.
    pub preferred: Vec<(i64, Term)>,
}

impl PodAffinity {
    pub(crate) fn is_empty(&self) -> bool {
        self.required.is_empty() && self.anti_required.is_empty() && self.preferred.is_empty()
    }

    /// Every term: required, anti-required, preferred.
    pub(crate) fn terms(&self) -> impl Iterator<Item = &Term> {
        self.required
            .iter()
            .chain(&self.anti_required)
            .chain(self.preferred.iter().map(|(_, t)| t))
    }

    /// Reads `spec.affinity.podAffinity` and `podAntiAffinity`.
    pub(crate) fn from_pod_spec(
        spec: &PodSpec,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<Self, ConstraintError> {
        let mut out = PodAffinity::default();
        let Some(aff) = spec.affinity.as_ref() else {
            return Ok(out);
        };
        let term = |t: &PodAffinityTerm, path: &str| -> Result<Term, ConstraintError> {
            if t.topology_key.is_empty() {
                return Err(ConstraintError {
                    path: format!("{path}.topologyKey"),
                    detail: "Required value: can not be empty".into(),
                });
            }
            let selector = PodSelector::parse(t.label_selector.as_ref(), &format!("{path}.labelSelector"))?
                .with_label_keys(t.match_label_keys.as_deref().unwrap_or_default(), labels, true)
                .with_label_keys(t.mismatch_label_keys.as_deref().unwrap_or_default(), labels, false);
            let ns_selector = match t.namespace_selector.as_ref() {
                Some(s) => Some(PodSelector::parse(Some(s), &format!("{path}.namespaceSelector"))?),
                None => None,
            };
            let names: BTreeSet<String> = t.namespaces.iter().flatten().cloned().collect();
            Ok(Term {
                selector,
                namespaces: Namespaces::new(names, ns_selector, namespace),
                key: t.topology_key.clone(),
            })
        };
        if let Some(a) = aff.pod_affinity.as_ref() {
            let base = "spec.affinity.podAffinity";
            for (i, t) in a
                .required_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .enumerate()
            {
                out.required.push(term(
                    t,
                    &format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
                )?);
            }
            for (i, w) in a
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .enumerate()
            {
                let path = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
                out.preferred.push((
                    weight(w.weight, &path)?,
                    term(&w.pod_affinity_term, &format!("{path}.podAffinityTerm"))?,
                ));
            }
        }
        if let Some(a) = aff.pod_anti_affinity.as_ref() {
            let base = "spec.affinity.podAntiAffinity";
            for (i, t) in a
                .required_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .enumerate()
            {
                out.anti_required.push(term(
                    t,
                    &format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
                )?);
            }
            for (i, w) in a
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .enumerate()
            {
                let path = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
                out.preferred.push((
                    -weight(w.weight, &path)?,
                    term(&w.pod_affinity_term, &format!("{path}.podAffinityTerm"))?,
                ));
            }
        }
        Ok(out)
    }
}

fn weight(w: i32, path: &str) -> Result<i64, ConstraintError> {
    if (1..=100).contains(&w) {
        Ok(i64::from(w))
    } else {
        Err(ConstraintError {
            path: format!("{path}.weight"),
            detail: format!("Invalid value: {w}: must be in the range 1-100"),
        })
    }
}
