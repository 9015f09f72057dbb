//! Centralized validation of a resolved [`ResolvedItem`] tree: shape, resolved configs and the controller's
//! allow-lists. Every error is collected with its field path; validation never stops at the first.
//!
//! Paths: shape errors (names, depth, child counts) are reported at the path of the template the item
//! compiles to (`spec.compositePodGroupTemplates[0].podGroupTemplates[1]`); configuration errors under the
//! item's [`config_path`](crate::WorkloadItem::config_path) when the controller set one (the user's own
//! field, such as `spec.scheduling`), otherwise under the template path. Sub-fields use the upstream names
//! (`schedulingPolicy.gang.minCount`, `schedulingConstraints.topology[0].key`, `disruptionMode`,
//! `resourceClaims`, `priorityClassName`).

use std::collections::HashSet;

use super::api::{MAX_TEMPLATE_DEPTH, MAX_TEMPLATES_PER_LIST};
use super::blocks::{MAX_TOPOLOGY_CONSTRAINTS, MIN_ONE, check_claims, check_topology};
use super::strings::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};
use crate::messages::{
    ALL_PARENT_CHILD, ALL_WITH_BASIC, CLAIMS_ON_COMPOSITE, GANG_MIN_COUNT_UNSET, MIXED_PRIORITY,
    disruption_mode_not_supported, policy_not_supported,
};
use crate::types::{AllowList, Disruption, PolicyOption, ResolvedItem, SchedulingPolicy};

/// The path of the template the root item compiles to.
pub fn root_template_path(root: &ResolvedItem) -> FieldPath {
    let list = if root.is_leaf() {
        "podGroupTemplates"
    } else {
        "compositePodGroupTemplates"
    };
    FieldPath::new("spec").child(list).index(0)
}

/// A field path that is only materialized when an error is reported: validation of a valid tree allocates
/// no paths.
#[derive(Clone, Copy)]
enum Loc<'a> {
    /// The template the root compiles to ([`root_template_path`]).
    Root(&'a ResolvedItem),
    Path(&'a FieldPath),
    Child(&'a Loc<'a>, &'static str),
    Index(&'a Loc<'a>, usize),
}

impl Loc<'_> {
    fn path(&self) -> FieldPath {
        match self {
            Self::Root(root) => root_template_path(root),
            Self::Path(p) => (*p).clone(),
            Self::Child(parent, name) => parent.path().child(name),
            Self::Index(parent, i) => parent.path().index(*i),
        }
    }
}

struct Walk<'a> {
    leaf_allow: &'a AllowList,
    composite_allow: &'a AllowList,
    root_class: &'a str,
    names: Seen<'a>,
    errs: FieldErrors,
}

/// The names seen so far: a short list scanned in order for the usual small tree (no hashing, no table),
/// a hash set once the tree is large.
#[derive(Default)]
struct Seen<'a> {
    few: Vec<&'a str>,
    many: HashSet<&'a str>,
}

impl<'a> Seen<'a> {
    const FEW: usize = 16;

    /// False when `name` was seen before.
    fn insert(&mut self, name: &'a str) -> bool {
        if !self.many.is_empty() {
            return self.many.insert(name);
        }
        if self.few.contains(&name) {
            return false;
        }
        self.few.push(name);
        if self.few.len() > Self::FEW {
            self.many.extend(self.few.drain(..));
        }
        true
    }
}

/// Validate a resolved tree against the structural rules and the allow-lists (`leaf_allow` for items that
/// compile to PodGroupTemplates, `composite_allow` for the others).
pub fn validate_tree(root: &ResolvedItem, leaf_allow: &AllowList, composite_allow: &AllowList) -> FieldErrors {
    let mut walk = Walk {
        leaf_allow,
        composite_allow,
        root_class: root.config.priority_class().unwrap_or(""),
        names: Seen::default(),
        errs: FieldErrors::new(),
    };
    walk.item(root, Loc::Root(root), 1, false);
    walk.errs
}

impl<'a> Walk<'a> {
    fn item(&mut self, item: &'a ResolvedItem, template: Loc<'_>, depth: usize, parent_all: bool) {
        self.name(item, template);
        let cfg = item.config_path.as_ref().map_or(template, Loc::Path);
        let leaf = item.is_leaf();
        self.config(item, cfg, leaf, parent_all);
        if leaf {
            return;
        }
        if depth >= MAX_TEMPLATE_DEPTH {
            self.errs.push(FieldError::invalid(
                template.path(),
                BadValue::Omitted,
                format!("maximum template hierarchy depth is {MAX_TEMPLATE_DEPTH}"),
            ));
            return;
        }
        let leaves = item.children.iter().filter(|c| c.is_leaf()).count();
        let composites = item.children.len() - leaves;
        let list = |name: &str| {
            item.children_path
                .clone()
                .unwrap_or_else(|| template.path().child(name))
        };
        if leaves > MAX_TEMPLATES_PER_LIST {
            self.errs.push(FieldError::too_many(
                list("podGroupTemplates"),
                leaves,
                MAX_TEMPLATES_PER_LIST,
            ));
        }
        if composites > MAX_TEMPLATES_PER_LIST {
            self.errs.push(FieldError::too_many(
                list("compositePodGroupTemplates"),
                composites,
                MAX_TEMPLATES_PER_LIST,
            ));
        }
        let all = item.config.disruption_mode == Some(Disruption::All);
        let leaf_list = Loc::Child(&template, "podGroupTemplates");
        let composite_list = Loc::Child(&template, "compositePodGroupTemplates");
        let (mut li, mut ci) = (0, 0);
        for child in &item.children {
            let path = if child.is_leaf() {
                li += 1;
                Loc::Index(&leaf_list, li - 1)
            } else {
                ci += 1;
                Loc::Index(&composite_list, ci - 1)
            };
            self.item(child, path, depth + 1, all);
        }
    }

    fn name(&mut self, item: &'a ResolvedItem, template: Loc<'_>) {
        let path = || item.name_path.clone().unwrap_or_else(|| template.path().child("name"));
        if item.name.is_empty() {
            self.errs.push(FieldError::required(path(), ""));
            return;
        }
        for msg in is_dns1123_label(&item.name) {
            self.errs.push(FieldError::invalid(path(), item.name.as_str(), msg));
        }
        if !self.names.insert(&item.name) {
            self.errs.push(FieldError::duplicate(path(), item.name.as_str()));
        }
    }

    fn config(&mut self, item: &'a ResolvedItem, cfg: Loc<'_>, leaf: bool, parent_all: bool) {
        let c = &item.config;
        let allow = if leaf { self.leaf_allow } else { self.composite_allow };
        let count_field = if leaf { "minCount" } else { "minGroupCount" };
        let policy = c.policy.as_ref().unwrap_or(&SchedulingPolicy::Basic);
        if !allow.allows_policy(policy.option()) {
            self.errs.push(FieldError::forbidden(
                cfg.path().child("schedulingPolicy"),
                policy_not_supported(policy.option()),
            ));
        }
        if let SchedulingPolicy::Gang(g) = policy {
            let count_path = || cfg.path().child("schedulingPolicy").child("gang").child(count_field);
            match g.min_count {
                None => self.errs.push(FieldError::required(count_path(), GANG_MIN_COUNT_UNSET)),
                Some(n) if n < 1 => self.errs.push(FieldError::invalid(count_path(), n, MIN_ONE)),
                Some(_) => {}
            }
        }
        if let Some(constraints) = &c.constraints {
            let t = &constraints.topology;
            let valid = t.len() <= MAX_TOPOLOGY_CONSTRAINTS
                && t.iter()
                    .all(|k| !k.key.is_empty() && is_qualified_name(&k.key).is_empty());
            if !valid {
                self.errs.extend(check_topology(
                    t,
                    &cfg.path().child("schedulingConstraints").child("topology"),
                ));
            }
        }
        if let Some(mode) = c.disruption_mode {
            if !allow.allows_disruption_mode(mode.option()) {
                self.errs.push(FieldError::forbidden(
                    cfg.path().child("disruptionMode"),
                    disruption_mode_not_supported(mode.option()),
                ));
            }
            if mode == Disruption::All && policy.option() == PolicyOption::Basic {
                self.errs.push(FieldError::invalid(
                    cfg.path().child("disruptionMode"),
                    "",
                    ALL_WITH_BASIC,
                ));
            }
        }
        if parent_all && c.disruption_mode != Some(Disruption::All) {
            let effective = c.disruption_mode.unwrap_or(Disruption::Single);
            self.errs.push(FieldError::invalid(
                cfg.path().child("disruptionMode"),
                effective.as_str(),
                ALL_PARENT_CHILD,
            ));
        }
        if !c.resource_claims.is_empty() {
            let claims_path = cfg.path().child("resourceClaims");
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
        if !class.is_empty() {
            for msg in is_dns1123_subdomain(class) {
                self.errs
                    .push(FieldError::invalid(cfg.path().child("priorityClassName"), class, msg));
            }
        }
        // Lengths first: no priority class is the common case, and comparing two empty strings went
        // through glibc's memcmp, which profiled at 14-20% of a valid build.
        if class.len() != self.root_class.len() || (!class.is_empty() && class != self.root_class) {
            self.errs.push(FieldError::invalid(
                cfg.path().child("priorityClassName"),
                class,
                MIXED_PRIORITY,
            ));
        }
    }
}
