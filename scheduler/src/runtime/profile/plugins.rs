//! One profile: `plugins` (which score plugins run, with which weight) and `pluginConfig`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{ProfileArgs, ProfileError, Settings, args, decode};
use crate::core::{ScoreWeights, ScoringStrategy};

/// Upstream's in-tree plugins: (name, implements Filter or PreFilter, default score weight).
/// Every filter runs in kwas (as kube-scheduler's default profile); a score weight of 0 means the
/// plugin does not score by default.
const IN_TREE: &[(&str, bool, i64)] = &[
    ("SchedulingGates", false, 0),
    ("PrioritySort", false, 0),
    ("NodeUnschedulable", true, 0),
    ("NodeName", true, 0),
    ("TaintToleration", true, 3),
    ("NodeAffinity", true, 2),
    ("NodePorts", true, 0),
    ("NodeResourcesFit", true, 1),
    ("VolumeRestrictions", true, 0),
    ("NodeVolumeLimits", true, 0),
    ("VolumeBinding", true, 0),
    ("VolumeZone", true, 0),
    ("PodTopologySpread", true, 2),
    ("InterPodAffinity", true, 2),
    ("DefaultPreemption", false, 0),
    ("NodeResourcesBalancedAllocation", false, 1),
    ("ImageLocality", false, 1),
    ("DefaultBinder", false, 0),
    ("DynamicResources", true, 0),
    ("GangScheduling", false, 0),
];

/// Score plugins kwas scores with; others' weights are accepted and ignored (`ImageLocality`: the
/// simulated nodes have no images).
const SCORED: &[&str] = &[
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "NodeAffinity",
    "TaintToleration",
    "InterPodAffinity",
    "PodTopologySpread",
];

/// The settings of upstream's default profile.
pub(super) fn upstream_settings() -> Settings {
    Settings {
        scoring: ScoringStrategy::LeastAllocated,
        weights: ScoreWeights::UPSTREAM,
        args: ProfileArgs {
            // Upstream scores cpu and memory only, weight 1 each.
            scoring_resources: Some(vec![("cpu".into(), 1), ("memory".into(), 1)]),
            ..ProfileArgs::default()
        },
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Profile {
    scheduler_name: Option<String>,
    percentage_of_nodes_to_score: Option<i32>,
    plugins: Option<Plugins>,
    plugin_config: Option<Vec<PluginConfig>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Plugins {
    pre_enqueue: Option<PluginSet>,
    queue_sort: Option<PluginSet>,
    pre_filter: Option<PluginSet>,
    filter: Option<PluginSet>,
    post_filter: Option<PluginSet>,
    pre_score: Option<PluginSet>,
    score: Option<PluginSet>,
    reserve: Option<PluginSet>,
    permit: Option<PluginSet>,
    pre_bind: Option<PluginSet>,
    bind: Option<PluginSet>,
    post_bind: Option<PluginSet>,
    multi_point: Option<PluginSet>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginSet {
    enabled: Option<Vec<Plugin>>,
    disabled: Option<Vec<Plugin>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Plugin {
    name: String,
    weight: Option<i32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginConfig {
    name: String,
    args: Option<Value>,
}

fn in_tree(name: &str) -> Option<(bool, i64)> {
    IN_TREE.iter().find(|(n, ..)| *n == name).map(|(_, f, w)| (*f, *w))
}

fn unknown(path: String, name: &str) -> ProfileError {
    ProfileError::new(
        path,
        format!("Invalid value: {name:?}: not an in-tree plugin; kwas-scheduler runs no out-of-tree plugins"),
    )
}

/// Reads profile `raw` at `path`: its scheduler name and settings.
pub(super) fn profile(raw: Value, path: &str, warnings: &mut Vec<String>) -> Result<(String, Settings), ProfileError> {
    let p: Profile = decode(raw, path)?;
    let name = p
        .scheduler_name
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| super::DEFAULT_SCHEDULER_NAME.to_string());
    if p.percentage_of_nodes_to_score.is_some() {
        warnings.push(format!(
            "{path}.percentageOfNodesToScore is accepted but not applied: kwas scores every feasible node"
        ));
    }
    let mut settings = upstream_settings();
    let plugins = p.plugins.unwrap_or_default();
    let weights = score_weights(&plugins, &format!("{path}.plugins"), warnings)?;
    settings.weights = weights;
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in p.plugin_config.into_iter().flatten().enumerate() {
        let cpath = format!("{path}.pluginConfig[{i}]");
        if in_tree(&c.name).is_none() {
            return Err(unknown(format!("{cpath}.name"), &c.name));
        }
        if seen.contains(&c.name) {
            return Err(ProfileError::new(
                format!("{cpath}.name"),
                format!("Duplicate value: {:?}", c.name),
            ));
        }
        seen.push(c.name.clone());
        args::apply(&c.name, c.args, &format!("{cpath}.args"), &mut settings, warnings)?;
    }
    Ok((name, settings))
}

/// The score weights `plugins` leaves (upstream's merge: the defaults through `multiPoint`, then the
/// `score` point's disabled and enabled lists), and the checks that no filter is disabled.
fn score_weights(plugins: &Plugins, path: &str, warnings: &mut Vec<String>) -> Result<ScoreWeights, ProfileError> {
    // Name -> weight of the score plugins in effect, starting from upstream's defaults.
    let mut score: BTreeMap<String, i64> = IN_TREE
        .iter()
        .filter(|(_, _, w)| *w > 0)
        .map(|(n, _, w)| (n.to_string(), *w))
        .collect();
    let weight = |p: &Plugin, ppath: &str| -> Result<i64, ProfileError> {
        match p.weight {
            None | Some(0) => Ok(1),
            Some(w) if w < 0 => Err(ProfileError::new(
                format!("{ppath}.weight"),
                format!("Invalid value: {w}: must be a positive number"),
            )),
            Some(w) => Ok(i64::from(w)),
        }
    };
    // Extension points other than score: enabling an in-tree plugin changes nothing (kwas runs them
    // all); disabling one would leave a constraint unchecked, which kwas does not do.
    let others: [(&str, &Option<PluginSet>); 12] = [
        ("preEnqueue", &plugins.pre_enqueue),
        ("queueSort", &plugins.queue_sort),
        ("preFilter", &plugins.pre_filter),
        ("filter", &plugins.filter),
        ("postFilter", &plugins.post_filter),
        ("preScore", &plugins.pre_score),
        ("reserve", &plugins.reserve),
        ("permit", &plugins.permit),
        ("preBind", &plugins.pre_bind),
        ("bind", &plugins.bind),
        ("postBind", &plugins.post_bind),
        ("multiPoint", &plugins.multi_point),
    ];
    for (point, set) in others {
        let Some(set) = set else { continue };
        for (i, p) in set.enabled.iter().flatten().enumerate() {
            let ppath = format!("{path}.{point}.enabled[{i}]");
            if in_tree(&p.name).is_none() {
                return Err(unknown(format!("{ppath}.name"), &p.name));
            }
            if point == "multiPoint" && has_score(&p.name) {
                score.insert(p.name.clone(), weight(p, &ppath)?);
            }
        }
        for (i, p) in set.disabled.iter().flatten().enumerate() {
            let ppath = format!("{path}.{point}.disabled[{i}].name");
            if p.name == "*" {
                if point == "multiPoint" || point == "preScore" {
                    // Re-enabling what is wanted is left to the score point (multiPoint "*" would
                    // also disable every filter).
                    if point == "multiPoint" {
                        return Err(ProfileError::new(
                            ppath,
                            "Forbidden: disabling every plugin would disable the filters, which kwas-scheduler always runs; disable score plugins under plugins.score",
                        ));
                    }
                    continue;
                }
                return Err(filter_disabled(ppath, point, "*"));
            }
            let Some((filter, _)) = in_tree(&p.name) else {
                return Err(unknown(ppath, &p.name));
            };
            if point == "multiPoint" && !filter {
                score.remove(&p.name);
                continue;
            }
            if filter || matches!(point, "queueSort" | "bind" | "preEnqueue") {
                return Err(filter_disabled(ppath, point, &p.name));
            }
            if point == "postFilter" || point == "preScore" {
                // DefaultPreemption (postFilter) and pre-score halves: kwas keeps upstream's behaviour.
                return Err(filter_disabled(ppath, point, &p.name));
            }
        }
    }
    if let Some(set) = &plugins.score {
        for (i, p) in set.disabled.iter().flatten().enumerate() {
            if p.name == "*" {
                score.clear();
            } else if in_tree(&p.name).is_some() {
                score.remove(&p.name);
            } else {
                return Err(unknown(format!("{path}.score.disabled[{i}].name"), &p.name));
            }
        }
        for (i, p) in set.enabled.iter().flatten().enumerate() {
            let ppath = format!("{path}.score.enabled[{i}]");
            if in_tree(&p.name).is_none() {
                return Err(unknown(format!("{ppath}.name"), &p.name));
            }
            if !has_score(&p.name) {
                return Err(ProfileError::new(
                    format!("{ppath}.name"),
                    format!("Invalid value: {:?}: not a score plugin", p.name),
                ));
            }
            score.insert(p.name.clone(), weight(p, &ppath)?);
        }
    }
    let explicit = |name: &str| {
        [&plugins.multi_point, &plugins.score]
            .into_iter()
            .flatten()
            .any(|set| set.enabled.iter().flatten().any(|p| p.name == name))
    };
    for name in score.keys() {
        // ImageLocality is on by default upstream; only an explicit enable is worth a warning.
        if !SCORED.contains(&name.as_str()) && explicit(name) {
            warnings.push(format!(
                "score plugin {name} is accepted but does not score in kwas-scheduler"
            ));
        }
    }
    let w = |n: &str| score.get(n).copied().unwrap_or(0);
    Ok(ScoreWeights {
        node_resources_fit: w("NodeResourcesFit"),
        balanced_allocation: w("NodeResourcesBalancedAllocation"),
        node_affinity: w("NodeAffinity"),
        taint_toleration: w("TaintToleration"),
        inter_pod_affinity: w("InterPodAffinity"),
        pod_topology_spread: w("PodTopologySpread"),
    })
}

/// Plugins that implement Score.
fn has_score(name: &str) -> bool {
    SCORED.contains(&name) || matches!(name, "ImageLocality" | "VolumeBinding")
}

fn filter_disabled(path: String, point: &str, name: &str) -> ProfileError {
    ProfileError::new(
        path,
        format!(
            "Forbidden: disabling {name:?} at {point} is not supported: kwas-scheduler always runs kube-scheduler's default filters, queueing, preemption and binding"
        ),
    )
}
