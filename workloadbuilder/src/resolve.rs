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
//! The caller's tree is never mutated: resolution works on copies.

use crate::types::{ItemView, ResolvedItem, SchedulingConfig, WorkloadItem};

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
    let mut config = merge_configs(item.default_config.as_ref(), item.user_config.as_ref());
    path.push(&item.name);
    {
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
        config,
        children,
        config_path: item.config_path.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DisruptionMode, GangSchedulingPolicy, ResourceClaim, SchedulingPolicy};

    #[test]
    fn user_gang_replaces_default_basic() {
        let cfg = merge_configs(Some(&SchedulingConfig::basic()), Some(&SchedulingConfig::gang(None)));
        assert_eq!(
            cfg.policy,
            Some(SchedulingPolicy::Gang(GangSchedulingPolicy { min_count: None }))
        );
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
            .with_disruption_mode(DisruptionMode::All)
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
            .with_disruption_mode(DisruptionMode::Single);
        let user = SchedulingConfig {
            constraints: Some(crate::types::SchedulingConstraints { topology: vec![] }),
            disruption_mode: Some(DisruptionMode::All),
            ..SchedulingConfig::default()
        };
        let cfg = merge_configs(Some(&default), Some(&user));
        assert_eq!(cfg.policy, Some(SchedulingPolicy::Basic));
        assert!(cfg.constraints.unwrap().topology.is_empty());
        assert_eq!(cfg.disruption_mode, Some(DisruptionMode::All));
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
