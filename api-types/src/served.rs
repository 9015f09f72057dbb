//! What a cluster serves of `scheduling.k8s.io`, and converting between the versions kwas knows.
//!
//! A Kubernetes v1.37 cluster may serve Workload and PodGroup as `v1beta1` (the default once the beta is
//! enabled), as `v1alpha3`, or both; CompositePodGroup exists only as `v1alpha3`. kube-apiserver stores one
//! object and serves it through every enabled version; the versions have the same fields (they convert
//! through the same internal type), so converting is re-labelling the object. kwas keeps its core
//! version-free (it works on the `v1alpha3` types) and converts at the edge with [`to_version`].
//!
//! [`negotiate`] picks, per kind, the version a component should use from what discovery lists: the most
//! stable version kwas knows ([`KNOWN_VERSIONS`], `v1beta1` before `v1alpha3`), and says what that enables
//! ([`Served::features`]).
//!
//! ```
//! use kwas_api_types::served::{negotiate, Kind};
//! // A cluster whose admin enabled the beta only.
//! let served = negotiate([("scheduling.k8s.io/v1beta1", ["workloads", "podgroups"].as_slice())]);
//! assert_eq!(served.version(Kind::Workload), Some("v1beta1"));
//! assert_eq!(served.version(Kind::CompositePodGroup), None);
//! assert!(!served.features().multi_level);
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The API group.
pub const GROUP: &str = "scheduling.k8s.io";

/// The versions of [`GROUP`] kwas can read and write, most preferred first.
pub const KNOWN_VERSIONS: [&str; 2] = ["v1beta1", "v1alpha3"];

/// The kinds kwas uses from [`GROUP`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `workloads`.
    Workload,
    /// `podgroups`.
    PodGroup,
    /// `compositepodgroups`.
    CompositePodGroup,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 3] = [Kind::Workload, Kind::PodGroup, Kind::CompositePodGroup];

    /// The resource (plural) name.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Workload => "workloads",
            Kind::PodGroup => "podgroups",
            Kind::CompositePodGroup => "compositepodgroups",
        }
    }

    /// The kind name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Workload => "Workload",
            Kind::PodGroup => "PodGroup",
            Kind::CompositePodGroup => "CompositePodGroup",
        }
    }
}

/// The version of each kind a component uses; `None` when the cluster serves the kind in no version kwas
/// knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    workload: Option<&'static str>,
    pod_group: Option<&'static str>,
    composite_pod_group: Option<&'static str>,
}

/// What the served versions let kwas do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// Gangs: Workloads and PodGroups are served.
    pub gangs: bool,
    /// Gangs of gangs (KEP-6012): CompositePodGroups are served too; without them controllers compile
    /// flat Workloads (`WorkloadBuilder::build_flat`).
    pub multi_level: bool,
}

impl Served {
    /// The version of `kind` to use.
    pub fn version(&self, kind: Kind) -> Option<&'static str> {
        match kind {
            Kind::Workload => self.workload,
            Kind::PodGroup => self.pod_group,
            Kind::CompositePodGroup => self.composite_pod_group,
        }
    }

    /// `group/version` of `kind`, for `apiVersion`.
    pub fn api_version(&self, kind: Kind) -> Option<String> {
        self.version(kind).map(|v| format!("{GROUP}/{v}"))
    }

    /// What these versions enable.
    pub fn features(&self) -> Features {
        let gangs = self.workload.is_some() && self.pod_group.is_some();
        Features {
            gangs,
            multi_level: gangs && self.composite_pod_group.is_some(),
        }
    }

    /// One line per kind, for a `doctor`-style report: `Workload: scheduling.k8s.io/v1beta1`, or `not served`.
    pub fn describe(&self) -> Vec<String> {
        Kind::ALL
            .iter()
            .map(|k| match self.api_version(*k) {
                Some(v) => format!("{}: {v}", k.name()),
                None => format!("{}: not served", k.name()),
            })
            .collect()
    }
}

/// Picks each kind's version from discovery: `(groupVersion, resource names)` pairs, as
/// `/apis/<group>/<version>` lists them (other groups and unknown versions are ignored; a subresource such
/// as `podgroups/status` does not count as the kind).
pub fn negotiate<'a, G, R>(discovered: G) -> Served
where
    G: IntoIterator<Item = (&'a str, R)>,
    R: AsRef<[&'a str]>,
{
    let mut lists: Vec<(&'static str, Vec<&'a str>)> = Vec::new();
    for (group_version, resources) in discovered {
        let Some((group, version)) = group_version.split_once('/') else {
            continue;
        };
        if group != GROUP {
            continue;
        }
        if let Some(known) = KNOWN_VERSIONS.iter().find(|v| **v == version) {
            lists.push((known, resources.as_ref().to_vec()));
        }
    }
    let pick = |kind: Kind| {
        KNOWN_VERSIONS
            .iter()
            .find(|v| lists.iter().any(|(lv, rs)| lv == *v && rs.contains(&kind.plural())))
            .copied()
    };
    Served {
        workload: pick(Kind::Workload),
        pod_group: pick(Kind::PodGroup),
        composite_pod_group: pick(Kind::CompositePodGroup),
    }
}

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
#[error("cannot convert to {api_version}: {source}")]
pub struct ConversionError {
    /// The target `apiVersion`.
    pub api_version: String,
    /// What failed.
    #[source]
    pub source: serde_json::Error,
}

/// Converts `object` of one version of [`GROUP`] into the same kind at `version` (`v1beta1`,
/// `v1alpha3`): the fields are the same in every version, so the object is re-labelled and read as the
/// target type; a field the target type lacks is an error, never dropped silently.
pub fn to_version<From, To>(object: &From, version: &str) -> Result<To, ConversionError>
where
    From: Serialize,
    To: Serialize + DeserializeOwned,
{
    let api_version = format!("{GROUP}/{version}");
    let fail = |source| ConversionError {
        api_version: api_version.clone(),
        source,
    };
    let mut value = serde_json::to_value(object).map_err(fail)?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), serde_json::Value::String(api_version.clone()));
    }
    let strict: To = serde_json::from_value(value.clone()).map_err(fail)?;
    // A field the target type does not know would vanish in `from_value`: compare what comes back.
    let back = serde_json::to_value(&strict).map_err(fail)?;
    if let Some(missing) = first_lost_field(&value, &back, String::new()) {
        return Err(fail(serde::de::Error::custom(format!(
            "field {missing} does not exist in {version}"
        ))));
    }
    Ok(strict)
}

/// The first field path present in `before` and absent in `after`.
fn first_lost_field(before: &serde_json::Value, after: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => b.iter().find_map(|(k, v)| {
            let here = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            match a.get(k) {
                None if !v.is_null() => Some(here),
                None => None,
                Some(av) => first_lost_field(v, av, here),
            }
        }),
        (Value::Array(b), Value::Array(a)) => b
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (bv, av))| first_lost_field(bv, av, format!("{path}[{i}]"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::scheduling::{v1alpha3, v1beta1};
    use serde_json::json;

    fn full_workload() -> serde_json::Value {
        json!({
            "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
            "spec": {
                "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
                "podGroupTemplates": [{
                    "name": "t",
                    "schedulingPolicy": {"gang": {"minCount": 4}},
                    "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]},
                    "disruptionMode": {"all": {}},
                    "priorityClassName": "high", "priority": 10,
                    "resourceClaims": [{"name": "c", "resourceClaimTemplateName": "rct"}]
                }],
                "compositePodGroupTemplates": [{
                    "name": "root",
                    "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                    "podGroupTemplates": [{"name": "leaf", "schedulingPolicy": {"basic": {}}}]
                }]
            }
        })
    }

    fn full_pod_group() -> serde_json::Value {
        json!({
            "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns"},
            "spec": {
                "workloadRef": {"workloadName": "w", "templateName": "t"},
                "parentCompositePodGroupName": "root-0",
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]},
                "disruptionMode": {"single": {}},
                "priorityClassName": "high", "priority": 10, "preemptionPolicy": "Never",
                "resourceClaims": [{"name": "c", "resourceClaimName": "shared"}]
            },
            "status": {
                "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "resourceClaimStatuses": [{"name": "c", "resourceClaimName": "shared"}]
            }
        })
    }

    /// The fields a test object sets that its type does not know (so the test itself stays honest).
    fn known<T: DeserializeOwned + Serialize>(v: &serde_json::Value) -> serde_json::Value {
        let typed: T = serde_json::from_value(v.clone()).unwrap();
        let back = serde_json::to_value(typed).unwrap();
        assert_eq!(
            first_lost_field(v, &back, String::new()),
            None,
            "the fixture uses unknown fields"
        );
        back
    }

    #[test]
    fn a_workload_converts_to_v1beta1_and_back_without_losing_a_field() {
        let alpha = known::<v1alpha3::Workload>(&full_workload());
        let typed: v1alpha3::Workload = serde_json::from_value(alpha.clone()).unwrap();
        let beta: v1beta1::Workload = to_version(&typed, "v1beta1").unwrap();
        let beta_json = serde_json::to_value(&beta).unwrap();
        assert_eq!(beta_json["apiVersion"], "scheduling.k8s.io/v1beta1");
        let back: v1alpha3::Workload = to_version(&beta, "v1alpha3").unwrap();
        assert_eq!(serde_json::to_value(back).unwrap(), alpha);
    }

    #[test]
    fn a_pod_group_converts_to_v1beta1_and_back_without_losing_a_field() {
        let alpha = known::<v1alpha3::PodGroup>(&full_pod_group());
        let typed: v1alpha3::PodGroup = serde_json::from_value(alpha.clone()).unwrap();
        let beta: v1beta1::PodGroup = to_version(&typed, "v1beta1").unwrap();
        let back: v1alpha3::PodGroup = to_version(&beta, "v1alpha3").unwrap();
        assert_eq!(serde_json::to_value(back).unwrap(), alpha);
    }

    #[test]
    fn a_field_the_target_version_lacks_is_an_error_not_a_silent_drop() {
        // A Workload read as a PodGroup: its `spec.podGroupTemplates` has no place there.
        let alpha: v1alpha3::Workload = serde_json::from_value(full_workload()).unwrap();
        let err = to_version::<_, v1beta1::PodGroup>(&alpha, "v1beta1").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot convert to scheduling.k8s.io/v1beta1"),
            "{err}"
        );
    }

    #[test]
    fn the_beta_is_preferred_and_composite_groups_need_the_alpha() {
        let both = negotiate([
            (
                "scheduling.k8s.io/v1alpha3",
                ["workloads", "podgroups", "podgroups/status", "compositepodgroups"].as_slice(),
            ),
            (
                "scheduling.k8s.io/v1beta1",
                ["workloads", "podgroups", "podgroups/status"].as_slice(),
            ),
        ]);
        assert_eq!(both.version(Kind::Workload), Some("v1beta1"));
        assert_eq!(both.version(Kind::PodGroup), Some("v1beta1"));
        assert_eq!(both.version(Kind::CompositePodGroup), Some("v1alpha3"));
        assert_eq!(
            both.features(),
            Features {
                gangs: true,
                multi_level: true
            }
        );
        assert_eq!(
            both.describe(),
            [
                "Workload: scheduling.k8s.io/v1beta1",
                "PodGroup: scheduling.k8s.io/v1beta1",
                "CompositePodGroup: scheduling.k8s.io/v1alpha3"
            ]
        );
    }

    #[test]
    fn unknown_versions_other_groups_and_subresources_count_for_nothing() {
        let served = negotiate([
            ("scheduling.k8s.io/v1", ["priorityclasses"].as_slice()),
            ("scheduling.k8s.io/v1alpha1", ["workloads", "podgroups"].as_slice()),
            ("example.com/v1beta1", ["workloads"].as_slice()),
            ("scheduling.k8s.io/v1beta1", ["podgroups/status"].as_slice()),
            ("v1", ["pods"].as_slice()),
        ]);
        assert_eq!(served, Served::default());
        assert_eq!(
            served.features(),
            Features {
                gangs: false,
                multi_level: false
            }
        );
    }
}
