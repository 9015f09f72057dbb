//! Composite-level WAS building blocks (`WorkloadCompositePodGroup*`).
//!
//! KEP-6089 defines the leaf-level building blocks (`WorkloadPodGroup*`, shipped in k8s-openapi) and says
//! "an analogous set of types prefixed with `WorkloadCompositePodGroup...` is provided under the same API
//! group". k8s-openapi 0.29 does not carry those, so they live here, with the same JSON shape as their leaf
//! twins:
//!
//! | leaf (k8s-openapi)                      | composite (here)                                 | JSON                       |
//! |-----------------------------------------|--------------------------------------------------|----------------------------|
//! | `WorkloadPodGroupSchedulingPolicy`      | [`WorkloadCompositePodGroupSchedulingPolicy`]    | `basic: {}` / `gang: {minCount}` vs `{minGroupCount}` |
//! | `WorkloadPodGroupSchedulingConstraints` | [`WorkloadCompositePodGroupSchedulingConstraints`] | `topology: [{key}]`      |
//! | `WorkloadPodGroupDisruptionMode`        | [`WorkloadCompositePodGroupDisruptionMode`]      | `single: {}` / `all: {}`   |
//!
//! # Unions and empty blocks
//! The policy and the disruption mode are unions, and KEP-6089 says of both "Exactly one ... must be set".
//! Their schemas carry CEL rules that reject more than one member and an *empty* block
//! (`schedulingPolicy: {}`: "must specify one of"), as kube-apiserver does, and `workloadbuilder` rejects
//! an empty block the same way (`AllowList::map_composite`). To leave the controller's default in place,
//! omit the block. The same rules are available client-side through [`garde::Validate`].

use garde::Validate;
use k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// Scheduling policy of a composite group: how its child groups are admitted.
///
/// Exactly one member must be set; an empty value is invalid (omit the block to keep the controller's
/// default).
///
/// ```
/// use kwas_api_types::WorkloadCompositePodGroupSchedulingPolicy as Policy;
/// let gang: Policy = serde_json::from_str(r#"{"gang": {"minGroupCount": 2}}"#).unwrap();
/// assert_eq!(gang, Policy::gang(Some(2)));
/// assert_eq!(serde_json::to_string(&Policy::basic()).unwrap(), r#"{"basic":{}}"#);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema, Validate)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, x_kube(cel))]
#[x_kube(
    validation = Rule::new("!(has(self.basic) && has(self.gang))")
        .message("must specify exactly one of: `basic`, `gang`"),
    validation = Rule::new("has(self.basic) || has(self.gang)")
        .message("must specify one of: `basic`, `gang`")
)]
pub struct WorkloadCompositePodGroupSchedulingPolicy {
    /// Basic: the child groups are admitted and scheduled independently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[garde(skip)]
    pub basic: Option<WorkloadCompositePodGroupBasicSchedulingPolicy>,

    /// Gang: the child groups are an all-or-nothing unit of at least `minGroupCount` groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[garde(dive)]
    pub gang: Option<WorkloadCompositePodGroupGangSchedulingPolicy>,
}

impl WorkloadCompositePodGroupSchedulingPolicy {
    /// `{basic: {}}`.
    pub fn basic() -> Self {
        Self {
            basic: Some(WorkloadCompositePodGroupBasicSchedulingPolicy {}),
            gang: None,
        }
    }

    /// `{gang: {minGroupCount}}`; `None` leaves the count to the controller's default.
    pub fn gang(min_group_count: Option<i32>) -> Self {
        Self {
            basic: None,
            gang: Some(WorkloadCompositePodGroupGangSchedulingPolicy { min_group_count }),
        }
    }

    /// True when no member is set (an invalid block: exactly one member must be set).
    pub fn is_empty(&self) -> bool {
        self.basic.is_none() && self.gang.is_none()
    }
}

/// Basic composite policy. Intentionally empty: its presence selects the policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema, Validate)]
pub struct WorkloadCompositePodGroupBasicSchedulingPolicy {}

/// Gang composite policy: all-or-nothing over child groups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema, Validate)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadCompositePodGroupGangSchedulingPolicy {
    /// Minimum number of child groups that must be schedulable together. Must be >= 1 when set; when
    /// omitted the controller injects a context-specific default (for example the number of child groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    #[garde(range(min = 1))]
    pub min_group_count: Option<i32>,
}

/// Scheduling constraints of a composite group (topology).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema, Validate)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadCompositePodGroupSchedulingConstraints {
    /// Topology constraints for the whole subtree. At most one entry; its `key` is a node label key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1), extend("x-kubernetes-list-type" = "atomic"))]
    #[garde(length(max = 1))]
    pub topology: Option<Vec<TopologyConstraint>>,
}

impl WorkloadCompositePodGroupSchedulingConstraints {
    /// Constraints with one topology key.
    pub fn topology(key: impl Into<String>) -> Self {
        Self {
            topology: Some(vec![TopologyConstraint { key: key.into() }]),
        }
    }
}

/// Disruption mode of a composite group: whether its children may be disrupted one by one or only together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema, Validate)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, x_kube(cel))]
#[x_kube(
    validation = Rule::new("!(has(self.single) && has(self.all))")
        .message("must specify exactly one of: `single`, `all`"),
    validation = Rule::new("has(self.single) || has(self.all)")
        .message("must specify one of: `single`, `all`")
)]
pub struct WorkloadCompositePodGroupDisruptionMode {
    /// Children can be disrupted independently of each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[garde(skip)]
    pub single: Option<WorkloadCompositePodGroupSingleDisruptionMode>,

    /// The whole subtree can only be disrupted together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[garde(skip)]
    pub all: Option<WorkloadCompositePodGroupAllDisruptionMode>,
}

impl WorkloadCompositePodGroupDisruptionMode {
    /// `{single: {}}`.
    pub fn single() -> Self {
        Self {
            single: Some(WorkloadCompositePodGroupSingleDisruptionMode {}),
            all: None,
        }
    }

    /// `{all: {}}`.
    pub fn all() -> Self {
        Self {
            single: None,
            all: Some(WorkloadCompositePodGroupAllDisruptionMode {}),
        }
    }

    /// True when no member is set (an invalid block: exactly one member must be set).
    pub fn is_empty(&self) -> bool {
        self.single.is_none() && self.all.is_none()
    }
}

/// Single composite disruption mode. Intentionally empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema, Validate)]
pub struct WorkloadCompositePodGroupSingleDisruptionMode {}

/// All composite disruption mode. Intentionally empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema, Validate)]
pub struct WorkloadCompositePodGroupAllDisruptionMode {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_shape_matches_the_leaf_blocks() {
        use k8s_openapi::api::scheduling::v1alpha3 as leaf;
        let leaf_gang = leaf::WorkloadPodGroupSchedulingPolicy {
            basic: None,
            gang: Some(leaf::WorkloadPodGroupGangSchedulingPolicy { min_count: Some(3) }),
        };
        assert_eq!(
            serde_json::to_value(&leaf_gang).unwrap(),
            json!({"gang": {"minCount": 3}})
        );
        assert_eq!(
            serde_json::to_value(WorkloadCompositePodGroupSchedulingPolicy::gang(Some(3))).unwrap(),
            json!({"gang": {"minGroupCount": 3}})
        );
        let leaf_all = leaf::WorkloadPodGroupDisruptionMode {
            all: Some(leaf::WorkloadPodGroupAllDisruptionMode(json!({}))),
            single: None,
        };
        assert_eq!(serde_json::to_value(&leaf_all).unwrap(), json!({"all": {}}));
        assert_eq!(
            serde_json::to_value(WorkloadCompositePodGroupDisruptionMode::all()).unwrap(),
            json!({"all": {}})
        );
        assert_eq!(
            serde_json::to_value(WorkloadCompositePodGroupSchedulingConstraints::topology(
                "kwas.dev/block"
            ))
            .unwrap(),
            json!({"topology": [{"key": "kwas.dev/block"}]})
        );
    }

    #[test]
    fn round_trips_and_empty_blocks() {
        let p: WorkloadCompositePodGroupSchedulingPolicy = serde_json::from_value(json!({})).unwrap();
        assert!(p.is_empty());
        let p: WorkloadCompositePodGroupSchedulingPolicy = serde_json::from_value(json!({"gang": {}})).unwrap();
        assert_eq!(p, WorkloadCompositePodGroupSchedulingPolicy::gang(None));
        let d: WorkloadCompositePodGroupDisruptionMode = serde_json::from_value(json!({"single": {}})).unwrap();
        assert_eq!(d, WorkloadCompositePodGroupDisruptionMode::single());
        assert!(!d.is_empty());
    }

    #[test]
    fn cel_rules_reject_two_union_members_and_none() {
        assert!(WorkloadCompositePodGroupSchedulingPolicy::validate_cel(&json!({"basic": {}}), None).is_ok());
        let err = WorkloadCompositePodGroupSchedulingPolicy::validate_cel(&json!({}), None).unwrap_err();
        assert!(
            format!("{err:?}").contains("must specify one of: `basic`, `gang`"),
            "{err:?}"
        );
        let err = WorkloadCompositePodGroupDisruptionMode::validate_cel(&json!({}), None).unwrap_err();
        assert!(
            format!("{err:?}").contains("must specify one of: `single`, `all`"),
            "{err:?}"
        );
        let err = WorkloadCompositePodGroupSchedulingPolicy::validate_cel(
            &json!({"basic": {}, "gang": {"minGroupCount": 2}}),
            None,
        )
        .unwrap_err();
        assert!(
            format!("{err:?}").contains("must specify exactly one of: `basic`, `gang`"),
            "{err:?}"
        );
        assert!(WorkloadCompositePodGroupDisruptionMode::validate_cel(&json!({"all": {}}), None).is_ok());
        assert!(
            WorkloadCompositePodGroupDisruptionMode::validate_cel(&json!({"all": {}, "single": {}}), None).is_err()
        );
    }

    #[test]
    fn garde_checks_counts_and_topology_length() {
        assert!(
            WorkloadCompositePodGroupSchedulingPolicy::gang(Some(1))
                .validate()
                .is_ok()
        );
        assert!(WorkloadCompositePodGroupSchedulingPolicy::gang(None).validate().is_ok());
        let err = WorkloadCompositePodGroupSchedulingPolicy::gang(Some(0))
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("gang.min_group_count"), "{err}");
        let two = WorkloadCompositePodGroupSchedulingConstraints {
            topology: Some(vec![
                TopologyConstraint { key: "a".into() },
                TopologyConstraint { key: "b".into() },
            ]),
        };
        assert!(two.validate().is_err());
        assert!(
            WorkloadCompositePodGroupSchedulingConstraints::topology("a")
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn schemas_carry_the_crd_rules() {
        let schema = serde_json::to_value(schemars::schema_for!(WorkloadCompositePodGroupSchedulingPolicy)).unwrap();
        let rules = &schema["x-kubernetes-validations"];
        assert_eq!(rules[0]["rule"], "!(has(self.basic) && has(self.gang))", "{schema:#}");
        let schema =
            serde_json::to_value(schemars::schema_for!(WorkloadCompositePodGroupGangSchedulingPolicy)).unwrap();
        assert_eq!(schema["properties"]["minGroupCount"]["minimum"], 1, "{schema:#}");
        let schema =
            serde_json::to_value(schemars::schema_for!(WorkloadCompositePodGroupSchedulingConstraints)).unwrap();
        assert_eq!(schema["properties"]["topology"]["maxItems"], 1, "{schema:#}");
        assert_eq!(
            schema["properties"]["topology"]["x-kubernetes-list-type"], "atomic",
            "{schema:#}"
        );
    }
}
