//! Policy resolution (KEP-6089 "Policy Resolution").
//!
//! For every item, independently of its parent:
//! 1. start from a deep copy of the controller's `default_config` (or an empty config);
//! 2. every top-level field the user set replaces that field whole: `policy`, `constraints`,
//!    `disruption_mode`, `resource_claims` when non-empty, `priority_class_name` when non-empty. A user
//!    `gang` with no count therefore replaces a default `basic` (or a default gang's count) and does not
//!    inherit a default count;
//! 3. the item's callbacks run in order on the merged config (each sees the item through an [`ItemView`]).
//!
//! The caller's tree is never mutated: resolution works on copies. Each [`ResolvedItem`] keeps the default,
//! the user's config, the merge and the result, and records where each resolved field came from
//! ([`sources`]).

use crate::types::{ItemView, ResolvedItem, SchedulingConfig, SchedulingPolicy, Source, Sources, WorkloadItem};

/// Merge `user` over `default` (steps 1 and 2 above).
pub fn merge_configs(default: Option<&SchedulingConfig>, user: Option<&SchedulingConfig>) -> SchedulingConfig {
    let mut resolved = default.cloned().unwrap_or_default();
    if let Some(user) = user {
        if let Some(policy) = &user.policy {
            resolved.policy = Some(policy.clone());
        }
        if let Some(constraints) = &user.constraints {
            resolved.constraints = Some(constraints.clone());
        }
        if let Some(mode) = user.disruption_mode {
            resolved.disruption_mode = Some(mode);
        }
        if !user.resource_claims.is_empty() {
            resolved.resource_claims = user.resource_claims.clone();
        }
        if let Some(class) = user.priority_class() {
            resolved.priority_class_name = Some(class.to_string());
        }
    }
    resolved
}

/// Resolve one item and its subtree (merge, then callbacks), `item` being the root (depth 0).
pub fn resolve_item(item: &WorkloadItem) -> ResolvedItem {
    let mut path = Vec::new();
    resolve_at(item, 0, &mut path)
}

fn resolve_at<'a>(item: &'a WorkloadItem, depth: usize, path: &mut Vec<&'a str>) -> ResolvedItem {
    let merged = merge_configs(item.default_config.as_ref(), item.user_config.as_ref());
    let mut config = merged.clone();
    path.push(&item.name);
    if !item.callbacks.is_empty() {
        let view = ItemView::new(item, depth, path);
        for callback in &item.callbacks {
            callback(&view, &mut config);
        }
    }
    let children = item
        .children
        .iter()
        .map(|c| resolve_at(c, depth.saturating_add(1), path))
        .collect();
    path.pop();
    ResolvedItem {
        name: item.name.clone(),
        config_path: item.config_path.clone(),
        name_path: item.name_path.clone(),
        children_path: item.children_path.clone(),
        default_config: item.default_config.clone(),
        user_config: item.user_config.clone(),
        // With no callback the resolved config is the merge: nothing to compare.
        sources: sources(
            item.user_config.as_ref(),
            &merged,
            (!item.callbacks.is_empty()).then_some(&config),
        ),
        merged,
        config,
        callbacks: item.callbacks.len(),
        children,
    }
}

/// Where a field set after the merge came from: the user when the user set it (it replaced the default
/// whole), else the default; `None` when it is unset.
fn merged_source(user_set: bool, merged_set: bool) -> Option<Source> {
    match (user_set, merged_set) {
        (_, false) => None,
        (true, true) => Some(Source::User),
        (false, true) => Some(Source::Default),
    }
}

/// A field's source after the callbacks: [`Source::Callback`] when they changed it (and left it set), its
/// merged source otherwise.
fn resolved_source(changed: bool, resolved_set: bool, merged: Option<Source>) -> Option<Source> {
    match (changed, resolved_set) {
        (_, false) => None,
        (true, true) => Some(Source::Callback),
        (false, true) => merged,
    }
}

/// Where each field of `resolved` came from, given the user's config, the merge and the resolved config
/// (`None` when no callback ran, so that the resolved config is the merge).
pub fn sources(
    user: Option<&SchedulingConfig>,
    merged: &SchedulingConfig,
    resolved: Option<&SchedulingConfig>,
) -> Sources {
    let user_sets = |f: fn(&SchedulingConfig) -> bool| user.is_some_and(f);
    // Whether the callbacks changed the field `f` compares.
    let changed = |f: &dyn Fn(&SchedulingConfig, &SchedulingConfig) -> bool| resolved.is_some_and(|r| f(r, merged));
    let resolved = resolved.unwrap_or(merged);
    let policy_source = merged_source(user_sets(|u| u.policy.is_some()), merged.policy.is_some());
    let kind = |c: &SchedulingConfig| c.policy.as_ref().map(SchedulingPolicy::option);
    let count = |c: &SchedulingConfig| c.gang_policy().and_then(|g| g.min_count);
    Sources {
        scheduling_policy: resolved_source(
            changed(&|r, m| kind(r) != kind(m)),
            resolved.policy.is_some(),
            policy_source,
        ),
        min_count: resolved_source(
            changed(&|r, m| count(r) != count(m)),
            count(resolved).is_some(),
            policy_source,
        ),
        scheduling_constraints: resolved_source(
            changed(&|r, m| r.constraints != m.constraints),
            resolved.constraints.is_some(),
            merged_source(user_sets(|u| u.constraints.is_some()), merged.constraints.is_some()),
        ),
        disruption_mode: resolved_source(
            changed(&|r, m| r.disruption_mode != m.disruption_mode),
            resolved.disruption_mode.is_some(),
            merged_source(
                user_sets(|u| u.disruption_mode.is_some()),
                merged.disruption_mode.is_some(),
            ),
        ),
        resource_claims: resolved_source(
            changed(&|r, m| r.resource_claims != m.resource_claims),
            !resolved.resource_claims.is_empty(),
            merged_source(
                user_sets(|u| !u.resource_claims.is_empty()),
                !merged.resource_claims.is_empty(),
            ),
        ),
        priority_class_name: resolved_source(
            changed(&|r, m| r.priority_class() != m.priority_class()),
            resolved.priority_class().is_some(),
            merged_source(
                user_sets(|u| u.priority_class().is_some()),
                merged.priority_class().is_some(),
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Disruption, GangPolicy, ResourceClaim, SchedulingPolicy};

    #[test]
    fn user_gang_replaces_default_basic() {
        let cfg = merge_configs(Some(&SchedulingConfig::basic()), Some(&SchedulingConfig::gang(None)));
        assert_eq!(cfg.policy, Some(SchedulingPolicy::Gang(GangPolicy { min_count: None })));
    }

    #[test]
    fn user_gang_does_not_inherit_default_count() {
        let cfg = merge_configs(
            Some(&SchedulingConfig::gang(Some(8))),
            Some(&SchedulingConfig::gang(None)),
        );
        assert_eq!(cfg.gang_policy().unwrap().min_count, None);
    }

    #[test]
    fn unset_user_fields_keep_defaults() {
        let default = SchedulingConfig::gang(Some(2))
            .with_topology("kwas.dev/rack")
            .with_disruption_mode(Disruption::All)
            .with_priority_class_name("high")
            .with_resource_claim(ResourceClaim {
                name: "gpu".into(),
                resource_claim_name: Some("c".into()),
                resource_claim_template_name: None,
            });
        let empty_user = SchedulingConfig {
            priority_class_name: Some(String::new()),
            ..SchedulingConfig::default()
        };
        assert_eq!(merge_configs(Some(&default), Some(&empty_user)), default);
        assert_eq!(merge_configs(Some(&default), None), default);
    }

    #[test]
    fn user_fields_replace_whole() {
        let default = SchedulingConfig::basic()
            .with_topology("a")
            .with_disruption_mode(Disruption::Single);
        let user = SchedulingConfig {
            constraints: Some(crate::types::SchedulingConstraints { topology: vec![] }),
            disruption_mode: Some(Disruption::All),
            ..SchedulingConfig::default()
        };
        let cfg = merge_configs(Some(&default), Some(&user));
        assert_eq!(cfg.policy, Some(SchedulingPolicy::Basic));
        assert!(cfg.constraints.unwrap().topology.is_empty());
        assert_eq!(cfg.disruption_mode, Some(Disruption::All));
    }

    #[test]
    fn sources_tell_defaults_user_values_and_callbacks_apart() {
        let default = SchedulingConfig::basic()
            .with_topology("kwas.dev/rack")
            .with_priority_class_name("high");
        let user = SchedulingConfig {
            disruption_mode: Some(Disruption::All),
            ..SchedulingConfig::gang(None)
        };
        let item = WorkloadItem::new("job")
            .with_default(default.clone())
            .with_user_config(Some(user.clone()))
            .with_callback(|c| {
                c.default_gang_min_count(4);
            })
            .with_callback(|c| {
                c.resource_claims.push(ResourceClaim {
                    name: "gpu".into(),
                    resource_claim_name: Some("c".into()),
                    resource_claim_template_name: None,
                });
            });
        let r = resolve_item(&item);
        assert_eq!(r.default_config.as_ref(), Some(&default));
        assert_eq!(r.user_config.as_ref(), Some(&user));
        assert_eq!(r.merged, merge_configs(Some(&default), Some(&user)));
        assert_eq!(r.callbacks, 2);
        assert_eq!(
            r.sources,
            Sources {
                scheduling_policy: Some(Source::User),
                min_count: Some(Source::Callback),
                scheduling_constraints: Some(Source::Default),
                disruption_mode: Some(Source::User),
                resource_claims: Some(Source::Callback),
                priority_class_name: Some(Source::Default),
            }
        );
        // A callback that switches the policy and one that unsets a field.
        let item = WorkloadItem::new("job")
            .with_default(SchedulingConfig::gang(Some(2)).with_topology("a"))
            .with_callback(|c| {
                c.policy = Some(SchedulingPolicy::Basic);
                c.constraints = None;
            });
        let r = resolve_item(&item);
        assert_eq!(r.sources.scheduling_policy, Some(Source::Callback));
        assert_eq!(r.sources.min_count, None);
        assert_eq!(r.sources.scheduling_constraints, None);
        // Nothing set anywhere.
        assert_eq!(resolve_item(&WorkloadItem::new("x")).sources, Sources::default());
        // A default gang count kept as it is.
        let r = resolve_item(&WorkloadItem::new("x").with_default(SchedulingConfig::gang(Some(3))));
        assert_eq!(r.sources.min_count, Some(Source::Default));
    }

    #[test]
    fn resolved_trees_round_trip_through_serde() {
        let item = WorkloadItem::new("root")
            .with_default(SchedulingConfig::gang(None))
            .with_callback(|c| {
                c.default_gang_min_count(2);
            })
            .with_config_path("spec.scheduling")
            .with_child(
                WorkloadItem::new("leaf")
                    .with_default(SchedulingConfig::basic())
                    .with_user_config(Some(SchedulingConfig {
                        resource_claims: vec![ResourceClaim {
                            name: "gpu".into(),
                            resource_claim_name: None,
                            resource_claim_template_name: Some("t".into()),
                        }],
                        priority_class_name: Some("high".into()),
                        ..SchedulingConfig::default()
                    })),
            );
        let r = resolve_item(&item);
        let yaml = serde_saphyr::to_string(&r).unwrap();
        let back: ResolvedItem = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(back, r);
        assert!(yaml.contains("configPath: spec.scheduling"), "{yaml}");
        assert!(yaml.contains("resourceClaimTemplateName: t"), "{yaml}");
    }

    #[test]
    fn callbacks_run_in_order_after_merge_and_inputs_are_untouched() {
        let item = WorkloadItem::new("job")
            .with_default(SchedulingConfig::basic())
            .with_user_config(Some(SchedulingConfig::gang(None)))
            .with_callback(|c| {
                c.default_gang_min_count(4);
            })
            .with_callback(|c| {
                if let Some(g) = c.gang_policy_mut() {
                    g.min_count = g.min_count.map(|n| n * 42);
                }
            });
        let before = format!("{item:?}");
        let resolved = resolve_item(&item);
        assert_eq!(resolved.config.gang_policy().unwrap().min_count, Some(168));
        assert_eq!(format!("{item:?}"), before);
        assert_eq!(item.user_config, Some(SchedulingConfig::gang(None)));
    }
}
