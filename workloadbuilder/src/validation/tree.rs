//! Centralized validation of a resolved [`ResolvedItem`] tree: shape, resolved configs and the controller's
//! allow-lists. Every error is collected with its field path; validation never stops at the first.
//!
//! Paths: shape errors (names, depth, child counts) are reported at the path of the template the item
//! compiles to (`spec.compositePodGroupTemplates[0].podGroupTemplates[1]`); configuration errors under the
//! item's [`config_path`](crate::WorkloadItem::config_path) when the controller set one (the user's own
//! field, such as `spec.scheduling`), otherwise under the template path. Sub-fields use the upstream names
//! (`schedulingPolicy.gang.minCount`, `schedulingConstraints.topology[0].key`, `disruptionMode`,
//! `resourceClaims`, `priorityClassName`).

use std::collections::BTreeSet;

use super::api::{MAX_TEMPLATE_DEPTH, MAX_TEMPLATES_PER_LIST};
use super::blocks::{MIN_ONE, check_claims, check_topology, disruption_mode_not_supported, policy_not_supported};
use super::strings::{is_dns1123_label, is_dns1123_subdomain};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};
use crate::types::{AllowList, DisruptionMode, PolicyOption, ResolvedItem, SchedulingPolicy};

/// The error for a gang whose count no default, user value or callback set.
pub const GANG_MIN_COUNT_UNSET: &str = "gang scheduling requires minCount to be set after resolution";
/// The error for `all` disruption combined with the Basic policy.
pub const ALL_WITH_BASIC: &str = "the disruptionMode `all` is not supported with the Basic scheduling policy";
/// The error for a child that is not `all` under an `all` composite.
pub const ALL_PARENT_CHILD: &str =
    "a group whose parent has the disruptionMode `all` must have the disruptionMode `all` too";
/// The error for resource claims on a composite item.
pub const CLAIMS_ON_COMPOSITE: &str = "resource claims are only supported on PodGroup templates";
/// The error for differing priority classes in one tree.
pub const MIXED_PRIORITY: &str =
    "all priority and priorityClassName values must be identical, detected multiple values";

/// The path of the template the root item compiles to.
pub fn root_template_path(root: &ResolvedItem) -> FieldPath {
    let list = if root.is_leaf() {
        "podGroupTemplates"
    } else {
        "compositePodGroupTemplates"
    };
    FieldPath::new("spec").child(list).index(0)
}

struct Walk<'a> {
    leaf_allow: &'a AllowList,
    composite_allow: &'a AllowList,
    root_class: String,
    names: BTreeSet<String>,
    errs: FieldErrors,
}

/// Validate a resolved tree against the structural rules and the allow-lists (`leaf_allow` for items that
/// compile to PodGroupTemplates, `composite_allow` for the others).
pub fn validate_tree(root: &ResolvedItem, leaf_allow: &AllowList, composite_allow: &AllowList) -> FieldErrors {
    let mut walk = Walk {
        leaf_allow,
        composite_allow,
        root_class: root.config.priority_class().unwrap_or("").to_string(),
        names: BTreeSet::new(),
        errs: FieldErrors::new(),
    };
    walk.item(root, root_template_path(root), 1, false);
    walk.errs
}

impl Walk<'_> {
    fn item(&mut self, item: &ResolvedItem, template: FieldPath, depth: usize, parent_all: bool) {
        self.name(item, &template);
        let cfg = item.config_path.clone().unwrap_or_else(|| template.clone());
        let leaf = item.is_leaf();
        self.config(item, &cfg, leaf, parent_all);
        if leaf {
            return;
        }
        if depth >= MAX_TEMPLATE_DEPTH {
            self.errs.push(FieldError::invalid(
                template,
                BadValue::Omitted,
                format!("maximum template hierarchy depth is {MAX_TEMPLATE_DEPTH}"),
            ));
            return;
        }
        let leaves = item.children.iter().filter(|c| c.is_leaf()).count();
        let composites = item.children.len() - leaves;
        if leaves > MAX_TEMPLATES_PER_LIST {
            self.errs.push(FieldError::too_many(
                template.child("podGroupTemplates"),
                leaves,
                MAX_TEMPLATES_PER_LIST,
            ));
        }
        if composites > MAX_TEMPLATES_PER_LIST {
            self.errs.push(FieldError::too_many(
                template.child("compositePodGroupTemplates"),
                composites,
                MAX_TEMPLATES_PER_LIST,
            ));
        }
        let all = item.config.disruption_mode == Some(DisruptionMode::All);
        let (mut li, mut ci) = (0, 0);
        for child in &item.children {
            let path = if child.is_leaf() {
                li += 1;
                template.child("podGroupTemplates").index(li - 1)
            } else {
                ci += 1;
                template.child("compositePodGroupTemplates").index(ci - 1)
            };
            self.item(child, path, depth + 1, all);
        }
    }

    fn name(&mut self, item: &ResolvedItem, template: &FieldPath) {
        let path = template.child("name");
        if item.name.is_empty() {
            self.errs.push(FieldError::required(path, ""));
            return;
        }
        for msg in is_dns1123_label(&item.name) {
            self.errs
                .push(FieldError::invalid(path.clone(), item.name.as_str(), msg));
        }
        if !self.names.insert(item.name.clone()) {
            self.errs.push(FieldError::duplicate(path, item.name.as_str()));
        }
    }

    fn config(&mut self, item: &ResolvedItem, cfg: &FieldPath, leaf: bool, parent_all: bool) {
        let c = &item.config;
        let allow = if leaf { self.leaf_allow } else { self.composite_allow };
        let policy_path = cfg.child("schedulingPolicy");
        let count_field = if leaf { "minCount" } else { "minGroupCount" };
        let policy = c.policy.clone().unwrap_or(SchedulingPolicy::Basic);
        if !allow.allows_policy(policy.option()) {
            self.errs.push(FieldError::forbidden(
                policy_path.clone(),
                policy_not_supported(policy.option()),
            ));
        }
        if let SchedulingPolicy::Gang(g) = &policy {
            let count_path = policy_path.child("gang").child(count_field);
            match g.min_count {
                None => self.errs.push(FieldError::required(count_path, GANG_MIN_COUNT_UNSET)),
                Some(n) if n < 1 => self.errs.push(FieldError::invalid(count_path, n, MIN_ONE)),
                Some(_) => {}
            }
        }
        if let Some(constraints) = &c.constraints {
            self.errs.extend(check_topology(
                &constraints.topology,
                &cfg.child("schedulingConstraints").child("topology"),
            ));
        }
        let mode_path = cfg.child("disruptionMode");
        if let Some(mode) = c.disruption_mode {
            if !allow.allows_disruption_mode(mode.option()) {
                self.errs.push(FieldError::forbidden(
                    mode_path.clone(),
                    disruption_mode_not_supported(mode.option()),
                ));
            }
            if mode == DisruptionMode::All && policy.option() == PolicyOption::Basic {
                self.errs
                    .push(FieldError::invalid(mode_path.clone(), "", ALL_WITH_BASIC));
            }
        }
        if parent_all && c.disruption_mode != Some(DisruptionMode::All) {
            let effective = c.disruption_mode.unwrap_or(DisruptionMode::Single);
            self.errs
                .push(FieldError::invalid(mode_path, effective.as_str(), ALL_PARENT_CHILD));
        }
        let claims_path = cfg.child("resourceClaims");
        if !c.resource_claims.is_empty() {
            if leaf {
                self.errs.extend(check_claims(
                    c.resource_claims.iter().map(|r| {
                        (
                            r.name.as_str(),
                            r.resource_claim_name.as_deref(),
                            r.resource_claim_template_name.as_deref(),
                        )
                    }),
                    &claims_path,
                ));
            } else {
                self.errs.push(FieldError::forbidden(claims_path, CLAIMS_ON_COMPOSITE));
            }
        }
        let class = c.priority_class().unwrap_or("");
        let class_path = cfg.child("priorityClassName");
        for msg in is_dns1123_subdomain(class).into_iter().filter(|_| !class.is_empty()) {
            self.errs.push(FieldError::invalid(class_path.clone(), class, msg));
        }
        if class != self.root_class {
            self.errs.push(FieldError::invalid(class_path, class, MIXED_PRIORITY));
        }
    }
}
