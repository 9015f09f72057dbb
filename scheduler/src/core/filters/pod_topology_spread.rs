//! `PodTopologySpread` (filter and score): `DoNotSchedule` constraints filter, `ScheduleAnyway` ones
//! score, with upstream's semantics: matching pods (label selector plus `matchLabelKeys`, in the pod's
//! namespace) are counted per domain of `topologyKey` over the nodes the pod could use
//! (`nodeAffinityPolicy: Honor` counts only nodes matching its node affinity and selector, the default;
//! `nodeTaintsPolicy: Honor` only nodes whose taints it tolerates, default `Ignore`); a node passes when
//! its domain's count plus one (if the pod matches its own selector) minus the lowest count over the
//! domains is at most `maxSkew`, where the lowest count is 0 while fewer than `minDomains` domains
//! exist. A node without the key fails (`UnschedulableAndUnresolvable`), a skew violation is
//! `Unschedulable`.
//!
//! Cluster default constraints: when a pod sets none and is controlled by a ReplicaSet, StatefulSet or
//! ReplicationController, upstream's system defaults apply as scoring-only constraints (`hostname`
//! maxSkew 3, `topology.kubernetes.io/zone` maxSkew 5), counting the pods of the same controller (the
//! pods its selector would select). A profile can replace them (`defaultingType: List`), with
//! `DoNotSchedule` ones filtering like a pod's own.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;

use super::pod_selector::PodSelector;
use crate::core::framework::ConstraintError;

/// Which pods a constraint counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Counted {
    /// Pods matching the selector (in the pod's namespace).
    Selector(PodSelector),
    /// Pods with the same controller owner (system default constraints).
    SameOwner(String),
}

/// One topology spread constraint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Constraint {
    pub max_skew: i64,
    pub key: String,
    /// `DoNotSchedule` (filter) rather than `ScheduleAnyway` (score).
    pub hard: bool,
    pub counted: Counted,
    pub min_domains: Option<i64>,
    pub honor_affinity: bool,
    pub honor_taints: bool,
}

/// A cluster-wide default constraint (KubeSchedulerConfiguration `PodTopologySpreadArgs.defaultConstraints`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultConstraint {
    /// `maxSkew`.
    pub max_skew: i64,
    /// `topologyKey`.
    pub key: String,
    /// `whenUnsatisfiable: DoNotSchedule` (a filter) rather than `ScheduleAnyway` (a score).
    pub hard: bool,
}

/// Upstream's system defaults (`defaultingType: System`): `kubernetes.io/hostname` with maxSkew 3 and
/// `topology.kubernetes.io/zone` with maxSkew 5.
pub fn system_default_constraints() -> Vec<DefaultConstraint> {
    vec![
        DefaultConstraint {
            max_skew: 3,
            key: "kubernetes.io/hostname".into(),
            hard: false,
        },
        DefaultConstraint {
            max_skew: 5,
            key: "topology.kubernetes.io/zone".into(),
            hard: false,
        },
    ]
}

/// Reads `spec.topologySpreadConstraints`.
pub(crate) fn from_pod_spec(
    spec: &PodSpec,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<Constraint>, ConstraintError> {
    let mut out = Vec::new();
    for (i, c) in spec.topology_spread_constraints.iter().flatten().enumerate() {
        let path = format!("spec.topologySpreadConstraints[{i}]");
        if c.max_skew < 1 {
            return Err(ConstraintError {
                path: format!("{path}.maxSkew"),
                detail: format!("Invalid value: {}: must be greater than zero", c.max_skew),
            });
        }
        if c.topology_key.is_empty() {
            return Err(ConstraintError {
                path: format!("{path}.topologyKey"),
                detail: "Required value: can not be empty".into(),
            });
        }
        let hard = match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" => true,
            "ScheduleAnyway" => false,
            other => {
                return Err(ConstraintError {
                    path: format!("{path}.whenUnsatisfiable"),
                    detail: format!(
                        "Unsupported value: \"{other}\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
                    ),
                });
            }
        };
        if let Some(m) = c.min_domains
            && (m < 1 || !hard)
        {
            return Err(ConstraintError {
                path: format!("{path}.minDomains"),
                detail: format!("Invalid value: {m}: must be greater than 0 and only with DoNotSchedule"),
            });
        }
        let policy = |v: Option<&String>, default: bool, field: &str| -> Result<bool, ConstraintError> {
            match v.map(String::as_str) {
                None => Ok(default),
                Some("Honor") => Ok(true),
                Some("Ignore") => Ok(false),
                Some(other) => Err(ConstraintError {
                    path: format!("{path}.{field}"),
                    detail: format!("Unsupported value: \"{other}\": supported values: \"Honor\", \"Ignore\""),
                }),
            }
        };
        let selector = PodSelector::parse(c.label_selector.as_ref(), &format!("{path}.labelSelector"))?
            .with_label_keys(c.match_label_keys.as_deref().unwrap_or_default(), labels, true);
        out.push(Constraint {
            max_skew: i64::from(c.max_skew),
            key: c.topology_key.clone(),
            hard,
            counted: Counted::Selector(selector),
            min_domains: c.min_domains.map(i64::from),
            honor_affinity: policy(c.node_affinity_policy.as_ref(), true, "nodeAffinityPolicy")?,
            honor_taints: policy(c.node_taints_policy.as_ref(), false, "nodeTaintsPolicy")?,
        });
    }
    Ok(out)
}

/// The default constraints for a pod that sets none and is controlled by `owner` (uid, kind).
pub(crate) fn defaults(defaults: &[DefaultConstraint], owner: Option<(&str, &str)>) -> Vec<Constraint> {
    let Some((uid, kind)) = owner else { return Vec::new() };
    if !matches!(kind, "ReplicaSet" | "StatefulSet" | "ReplicationController") {
        return Vec::new();
    }
    defaults
        .iter()
        .map(|d| Constraint {
            max_skew: d.max_skew,
            key: d.key.clone(),
            hard: d.hard,
            counted: Counted::SameOwner(uid.to_string()),
            min_domains: None,
            honor_affinity: true,
            honor_taints: false,
        })
        .collect()
}
