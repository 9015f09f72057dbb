//! `pluginConfig[].args`, validated as upstream's `validation_pluginargs.go`.

use serde::Deserialize;
use serde_json::Value;

use super::{ProfileError, Settings, decode};
use crate::core::DefaultConstraint;
use crate::core::ScoringStrategy;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeResourcesFitArgs {
    api_version: Option<String>,
    kind: Option<String>,
    ignored_resources: Option<Vec<String>>,
    ignored_resource_groups: Option<Vec<String>>,
    scoring_strategy: Option<ScoringStrategyArgs>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScoringStrategyArgs {
    #[serde(rename = "type")]
    type_: Option<String>,
    resources: Option<Vec<ResourceSpec>>,
    requested_to_capacity_ratio: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResourceSpec {
    name: String,
    weight: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BalancedAllocationArgs {
    api_version: Option<String>,
    kind: Option<String>,
    resources: Option<Vec<ResourceSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PodTopologySpreadArgs {
    api_version: Option<String>,
    kind: Option<String>,
    default_constraints: Option<Vec<Value>>,
    defaulting_type: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DefaultConstraintArgs {
    max_skew: i64,
    topology_key: String,
    when_unsatisfiable: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InterPodAffinityArgs {
    api_version: Option<String>,
    kind: Option<String>,
    hard_pod_affinity_weight: Option<i64>,
    ignore_preferred_terms_of_existing_pods: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DefaultPreemptionArgs {
    api_version: Option<String>,
    kind: Option<String>,
    min_candidate_nodes_percentage: Option<i64>,
    min_candidate_nodes_absolute: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VolumeBindingArgs {
    api_version: Option<String>,
    kind: Option<String>,
    bind_timeout_seconds: Option<i64>,
    shape: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeAffinityArgs {
    api_version: Option<String>,
    kind: Option<String>,
    added_affinity: Option<Value>,
}

fn check_kind(api_version: Option<&str>, kind: Option<&str>, want: &str, path: &str) -> Result<(), ProfileError> {
    if let Some(v) = api_version
        && v != super::API_VERSION
    {
        return Err(ProfileError::new(
            format!("{path}.apiVersion"),
            format!("Unsupported value: {v:?}: supported values: \"{}\"", super::API_VERSION),
        ));
    }
    if let Some(k) = kind
        && k != want
    {
        return Err(ProfileError::new(
            format!("{path}.kind"),
            format!("Unsupported value: {k:?}: supported values: \"{want}\""),
        ));
    }
    Ok(())
}

/// Applies plugin `name`'s `args` (at `path`) to `settings`.
pub(super) fn apply(
    name: &str,
    args: Option<Value>,
    path: &str,
    settings: &mut Settings,
    warnings: &mut Vec<String>,
) -> Result<(), ProfileError> {
    let args = args.unwrap_or(Value::Null);
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    match name {
        "NodeResourcesFit" => node_resources_fit(decode(args, path)?, path, settings),
        "NodeResourcesBalancedAllocation" => {
            let a: BalancedAllocationArgs = decode(args, path)?;
            check_kind(
                a.api_version.as_deref(),
                a.kind.as_deref(),
                "NodeResourcesBalancedAllocationArgs",
                path,
            )?;
            let resources = resources(a.resources, &format!("{path}.resources"))?;
            let mut names: Vec<&str> = resources.iter().map(|(n, _)| n.as_str()).collect();
            names.sort_unstable();
            if names != ["cpu", "memory"] {
                return Err(ProfileError::new(
                    format!("{path}.resources"),
                    "Unsupported value: kwas-scheduler balances cpu and memory only",
                ));
            }
            Ok(())
        }
        "PodTopologySpread" => pod_topology_spread(decode(args, path)?, path, settings),
        "InterPodAffinity" => {
            let a: InterPodAffinityArgs = decode(args, path)?;
            check_kind(
                a.api_version.as_deref(),
                a.kind.as_deref(),
                "InterPodAffinityArgs",
                path,
            )?;
            let w = a.hard_pod_affinity_weight.unwrap_or(1);
            if !(0..=100).contains(&w) {
                return Err(ProfileError::new(
                    format!("{path}.hardPodAffinityWeight"),
                    format!("Invalid value: {w}: not in valid range [0-100]"),
                ));
            }
            settings.args.hard_pod_affinity_weight = w;
            settings.args.ignore_preferred_terms_of_existing_pods =
                a.ignore_preferred_terms_of_existing_pods.unwrap_or(false);
            Ok(())
        }
        "DefaultPreemption" => {
            let a: DefaultPreemptionArgs = decode(args, path)?;
            check_kind(
                a.api_version.as_deref(),
                a.kind.as_deref(),
                "DefaultPreemptionArgs",
                path,
            )?;
            if let Some(p) = a.min_candidate_nodes_percentage
                && !(0..=100).contains(&p)
            {
                return Err(ProfileError::new(
                    format!("{path}.minCandidateNodesPercentage"),
                    format!("Invalid value: {p}: not in valid range [0, 100]"),
                ));
            }
            if let Some(n) = a.min_candidate_nodes_absolute
                && n < 0
            {
                return Err(ProfileError::new(
                    format!("{path}.minCandidateNodesAbsolute"),
                    format!("Invalid value: {n}: not in valid range [0, inf)"),
                ));
            }
            warnings.push(format!(
                "{path} is accepted but not applied: kwas-scheduler evaluates every preemption candidate domain"
            ));
            Ok(())
        }
        "VolumeBinding" => {
            let a: VolumeBindingArgs = decode(args, path)?;
            check_kind(a.api_version.as_deref(), a.kind.as_deref(), "VolumeBindingArgs", path)?;
            if a.bind_timeout_seconds.is_some_and(|s| s < 0) {
                return Err(ProfileError::new(
                    format!("{path}.bindTimeoutSeconds"),
                    "Invalid value: invalid BindTimeoutSeconds, should not be a negative value",
                ));
            }
            if a.shape.is_some() || a.bind_timeout_seconds.is_some() {
                warnings.push(format!("{path} is accepted but not applied by kwas-scheduler"));
            }
            Ok(())
        }
        "NodeAffinity" => {
            let a: NodeAffinityArgs = decode(args, path)?;
            check_kind(a.api_version.as_deref(), a.kind.as_deref(), "NodeAffinityArgs", path)?;
            if a.added_affinity.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(ProfileError::new(
                    format!("{path}.addedAffinity"),
                    "Forbidden: addedAffinity is not supported by kwas-scheduler",
                ));
            }
            Ok(())
        }
        other => match args {
            Value::Object(m) if m.keys().all(|k| k == "apiVersion" || k == "kind") => Ok(()),
            _ => Err(ProfileError::new(
                path,
                format!("Invalid value: plugin {other:?} takes no arguments"),
            )),
        },
    }
}

fn node_resources_fit(a: NodeResourcesFitArgs, path: &str, settings: &mut Settings) -> Result<(), ProfileError> {
    check_kind(
        a.api_version.as_deref(),
        a.kind.as_deref(),
        "NodeResourcesFitArgs",
        path,
    )?;
    if a.ignored_resources.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(ProfileError::new(
            format!("{path}.ignoredResources"),
            "Forbidden: ignoredResources is not supported by kwas-scheduler",
        ));
    }
    if a.ignored_resource_groups.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(ProfileError::new(
            format!("{path}.ignoredResourceGroups"),
            "Forbidden: ignoredResourceGroups is not supported by kwas-scheduler",
        ));
    }
    let Some(s) = a.scoring_strategy else {
        return Ok(());
    };
    let spath = format!("{path}.scoringStrategy");
    settings.scoring = match s.type_.as_deref().unwrap_or("LeastAllocated") {
        "LeastAllocated" => ScoringStrategy::LeastAllocated,
        "MostAllocated" => ScoringStrategy::MostAllocated,
        "RequestedToCapacityRatio" => {
            return Err(ProfileError::new(
                format!("{spath}.type"),
                "Unsupported value: \"RequestedToCapacityRatio\": supported values: \"LeastAllocated\", \"MostAllocated\"",
            ));
        }
        other => {
            return Err(ProfileError::new(
                format!("{spath}.type"),
                format!(
                    "Unsupported value: {other:?}: supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
                ),
            ));
        }
    };
    if s.requested_to_capacity_ratio.is_some() {
        return Err(ProfileError::new(
            format!("{spath}.requestedToCapacityRatio"),
            "Forbidden: only for the RequestedToCapacityRatio strategy",
        ));
    }
    settings.args.scoring_resources = Some(resources(s.resources, &format!("{spath}.resources"))?);
    Ok(())
}

/// A `resources` list: upstream's default (cpu and memory, weight 1) when absent or empty; weights
/// 1..=100, names unique.
fn resources(list: Option<Vec<ResourceSpec>>, path: &str) -> Result<Vec<(String, i64)>, ProfileError> {
    let list = list.unwrap_or_default();
    if list.is_empty() {
        return Ok(vec![("cpu".into(), 1), ("memory".into(), 1)]);
    }
    let mut out: Vec<(String, i64)> = Vec::new();
    for (i, r) in list.into_iter().enumerate() {
        let w = r.weight.unwrap_or(1);
        if !(1..=100).contains(&w) {
            return Err(ProfileError::new(
                format!("{path}[{i}].weight"),
                format!(
                    "Invalid value: {w}: resource weight of {} should be in the range 1-100",
                    r.name
                ),
            ));
        }
        if r.name.is_empty() {
            return Err(ProfileError::new(format!("{path}[{i}].name"), "Required value"));
        }
        if out.iter().any(|(n, _)| *n == r.name) {
            return Err(ProfileError::new(
                format!("{path}[{i}].name"),
                format!("Duplicate value: {:?}", r.name),
            ));
        }
        out.push((r.name, w));
    }
    Ok(out)
}

fn pod_topology_spread(a: PodTopologySpreadArgs, path: &str, settings: &mut Settings) -> Result<(), ProfileError> {
    check_kind(
        a.api_version.as_deref(),
        a.kind.as_deref(),
        "PodTopologySpreadArgs",
        path,
    )?;
    let constraints = a.default_constraints.unwrap_or_default();
    let list = match a.defaulting_type.as_deref().unwrap_or("System") {
        "System" => {
            if !constraints.is_empty() {
                return Err(ProfileError::new(
                    format!("{path}.defaultConstraints"),
                    "Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty",
                ));
            }
            settings.args.default_spread_constraints = None;
            return Ok(());
        }
        "List" => constraints,
        other => {
            return Err(ProfileError::new(
                format!("{path}.defaultingType"),
                format!("Unsupported value: {other:?}: supported values: \"System\", \"List\""),
            ));
        }
    };
    let mut out: Vec<DefaultConstraint> = Vec::new();
    for (i, raw) in list.into_iter().enumerate() {
        let cpath = format!("{path}.defaultConstraints[{i}]");
        if raw.get("labelSelector").is_some_and(|v| !v.is_null()) {
            return Err(ProfileError::new(
                format!("{cpath}.labelSelector"),
                "Forbidden: constraint must not define a selector, as they deduced for each pod",
            ));
        }
        let c: DefaultConstraintArgs = decode(raw, &cpath)?;
        if c.max_skew <= 0 || c.max_skew > i64::from(i32::MAX) {
            return Err(ProfileError::new(
                format!("{cpath}.maxSkew"),
                format!("Invalid value: {}: must be greater than zero", c.max_skew),
            ));
        }
        if c.topology_key.is_empty() {
            return Err(ProfileError::new(
                format!("{cpath}.topologyKey"),
                "Required value: can not be empty",
            ));
        }
        let hard = match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" => true,
            "ScheduleAnyway" => false,
            other => {
                return Err(ProfileError::new(
                    format!("{cpath}.whenUnsatisfiable"),
                    format!("Unsupported value: {other:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\""),
                ));
            }
        };
        if out.iter().any(|d| d.key == c.topology_key && d.hard == hard) {
            return Err(ProfileError::new(
                format!("{cpath}.{{topologyKey, whenUnsatisfiable}}"),
                format!("Duplicate value: {{{}, {}}}", c.topology_key, c.when_unsatisfiable),
            ));
        }
        out.push(DefaultConstraint {
            max_skew: c.max_skew,
            key: c.topology_key,
            hard,
        });
    }
    settings.args.default_spread_constraints = Some(out);
    Ok(())
}
