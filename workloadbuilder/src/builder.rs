//! The builder: resolution, validation and compilation of a [`WorkloadItem`] tree into a Workload
//! (KEP-6089 "Structural Resolution").
//!
//! - a leaf item compiles to a `PodGroupTemplate`, an item with children to a `CompositePodGroupTemplate`
//!   whose children are split, in order, into its `podGroupTemplates` and `compositePodGroupTemplates`;
//! - the template name is the item's name, verbatim;
//! - policy (a composite gang's count becomes `minGroupCount`), topology constraints, disruption mode,
//!   resource claims (leaves) and priority class are copied; an unset policy compiles to `basic: {}` (Basic is
//!   the backward-compatible default of every WAS integration); an unset disruption mode stays unset (the API
//!   defaults groups to `single`); `priority` and `preemptionPolicy` are left to admission;
//! - the Workload gets `ownerReferences: [owner]` and `spec.controllerRef` naming the owner.

use k8s_openapi::api::scheduling::v1alpha3::{
    AllCompositeDisruptionMode, AllDisruptionMode, BasicSchedulingPolicy, CompositeBasicSchedulingPolicy,
    CompositeDisruptionMode, CompositeGangSchedulingPolicy, CompositePodGroupSchedulingConstraints,
    CompositePodGroupSchedulingPolicy, CompositePodGroupTemplate, DisruptionMode as ApiDisruptionMode,
    GangSchedulingPolicy, PodGroupResourceClaim, PodGroupSchedulingConstraints, PodGroupSchedulingPolicy,
    PodGroupTemplate, SingleCompositeDisruptionMode, SingleDisruptionMode, TypedLocalObjectReference, Workload,
    WorkloadSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::json;

use crate::field::{ErrorOrigin, FieldError, FieldErrorType, FieldErrors, FieldPath, Stage};
use crate::messages::{FLAT_COMPOSITE_ALL, FLAT_COMPOSITE_GANG, FLAT_COMPOSITE_TOPOLOGY, OWNER_NOT_CONTROLLER};
use crate::messages::{disruption_mode_not_supported, policy_not_supported};
use crate::resolve::resolve_item;
use crate::sites::{any_empty_name, site_of, sites};
use crate::types::{
    AllowList, Disruption, DisruptionModeOption, ItemView, PolicyOption, ResolvedItem, SchedulingConfig,
    SchedulingPolicy, WorkloadItem,
};
use crate::validation::api::MAX_TEMPLATES_PER_LIST;
use crate::validation::strings::{is_dns1123_label, is_dns1123_subdomain};
use crate::validation::tree::validate_tree;
use crate::validation::{api_group, parse_group_version};

/// Compiles a [`WorkloadItem`] tree into a `scheduling.k8s.io/v1alpha3` Workload.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use workloadbuilder::{AllowList, DisruptionModeOption, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem};
///
/// let owner = OwnerReference {
///     api_version: "batch/v1".into(),
///     kind: "Job".into(),
///     name: "train".into(),
///     uid: "8a3c".into(),
///     controller: Some(true),
///     block_owner_deletion: Some(true),
/// };
/// let root = WorkloadItem::new("train-pgt-0")
///     .with_default(SchedulingConfig::basic())
///     .with_user_config(Some(SchedulingConfig::gang(None)))
///     .with_callback(|cfg| { cfg.default_gang_min_count(4); });
/// let workload = WorkloadBuilder::new(root)
///     .allow(AllowList::new().policies([PolicyOption::Basic, PolicyOption::Gang])
///         .disruption_modes([DisruptionModeOption::Single, DisruptionModeOption::All]))
///     .build("train", "default", &owner)
///     .unwrap();
/// let template = &workload.spec.pod_group_templates.as_ref().unwrap()[0];
/// assert_eq!(template.scheduling_policy.gang.as_ref().unwrap().min_count, 4);
/// assert_eq!(workload.spec.controller_ref.unwrap().api_group.as_deref(), Some("batch"));
/// ```
#[derive(Clone, Debug)]
pub struct WorkloadBuilder {
    root: WorkloadItem,
    allow: AllowList,
    composite_allow: Option<AllowList>,
}

impl WorkloadBuilder {
    /// A builder for the tree rooted at `root`. Until [`allow`](Self::allow) is called nothing is allowed:
    /// allow-lists are opt-in (KEP-6089 "Controller Opt-In").
    pub fn new(root: WorkloadItem) -> Self {
        Self {
            root,
            allow: AllowList::new(),
            composite_allow: None,
        }
    }

    /// The options this controller supports, at every level unless [`allow_composite`](Self::allow_composite)
    /// sets a different list for composite items.
    pub fn allow(mut self, allow: AllowList) -> Self {
        self.allow = allow;
        self
    }

    /// The options this controller supports for composite items (items with children).
    pub fn allow_composite(mut self, allow: AllowList) -> Self {
        self.composite_allow = Some(allow);
        self
    }

    /// The root item.
    pub fn root(&self) -> &WorkloadItem {
        &self.root
    }

    /// The resolved tree (defaults, user overrides, callbacks) without validation or compilation.
    pub fn resolve(&self) -> ResolvedItem {
        resolve_item(&self.root)
    }

    /// Resolve and validate the tree against the structural rules and the allow-lists.
    ///
    /// An item with an empty name (at any depth) fails before resolution: no callback runs on such a tree.
    ///
    /// Every error carries its [`origin`](FieldError::origin): the stage ([`Stage::Resolve`] for names,
    /// [`Stage::Allowlist`] for an option the controller does not allow, [`Stage::Validation`] for the other
    /// rules) and the item it is about.
    pub fn validate(&self) -> Result<ResolvedItem, FieldErrors> {
        check_item_names(&self.root).into_result(())?;
        let resolved = self.resolve();
        let errs = self.validate_resolved(&resolved);
        errs.into_result(resolved)
    }

    /// Tree validation of `resolved`, each error with its origin.
    fn validate_resolved(&self, resolved: &ResolvedItem) -> FieldErrors {
        let mut errs = validate_tree(
            resolved,
            &self.allow,
            self.composite_allow.as_ref().unwrap_or(&self.allow),
        );
        errs.extend(run_checks(&self.root, resolved));
        attribute(errs, resolved)
    }

    /// Resolve, validate and compile the tree into the Workload `namespace/name` owned by `owner`.
    ///
    /// All problems are reported at once, each with its field path; nothing is returned half-built. An item
    /// with an empty name fails before resolution (with the Workload's own identity errors): no callback runs
    /// on such a tree.
    pub fn build(&self, name: &str, namespace: &str, owner: &OwnerReference) -> Result<Workload, FieldErrors> {
        let mut errs = validate_workload_identity(name, namespace, owner);
        let names = check_item_names(&self.root);
        if !names.is_empty() {
            errs.extend(names);
            return Err(errs);
        }
        let resolved = self.resolve();
        errs.extend(self.validate_resolved(&resolved));
        errs.into_result(())?;
        Ok(compile(&resolved, name, namespace, owner))
    }

    /// Like [`build`](Self::build), but a Workload for clusters without CompositePodGroups, as LeaderWorkerSet
    /// and upstream JobSet compile theirs: only `spec.podGroupTemplates`, one per leaf item (in pre-order),
    /// no `compositePodGroupTemplates`. The runtime groups are then PodGroups without a parent.
    ///
    /// The composite items only give the tree its shape: what they would ask of a CompositePodGroup cannot be
    /// expressed flat and is refused (`Forbidden`, stage [`Stage::Compile`], at the item's configuration): a
    /// Gang policy (a gang of groups), a topology constraint (groups placed together), the disruption mode
    /// `all` (groups disrupted together). Basic (the default when unset) and `single` are fine. The tree must
    /// also be valid as a nested tree, and the flat list holds at most 8 templates. Errors about a leaf's
    /// template are reported at its flat path (`spec.podGroupTemplates[k]`) when it has no config path.
    ///
    /// ```
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    /// use workloadbuilder::{AllowList, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem};
    ///
    /// let owner = OwnerReference {
    ///     api_version: "jobset.x-k8s.io/v1alpha2".into(),
    ///     kind: "JobSet".into(),
    ///     name: "trainer".into(),
    ///     uid: "uid-2".into(),
    ///     controller: Some(true),
    ///     block_owner_deletion: Some(true),
    /// };
    /// let tree = |root: SchedulingConfig| {
    ///     WorkloadItem::new("trainer").with_default(root).with_children([
    ///         WorkloadItem::new("driver").with_default(SchedulingConfig::basic()),
    ///         WorkloadItem::new("workers").with_default(SchedulingConfig::gang(Some(8))),
    ///     ])
    /// };
    /// let allow = AllowList::new().policies([PolicyOption::Basic, PolicyOption::Gang]);
    /// let flat = WorkloadBuilder::new(tree(SchedulingConfig::basic())).allow(allow.clone())
    ///     .build_flat("trainer-wl", "default", &owner).unwrap();
    /// let names: Vec<&str> = flat.spec.pod_group_templates.iter().flatten().map(|t| t.name.as_str()).collect();
    /// assert_eq!(names, ["driver", "workers"]);
    /// assert!(flat.spec.composite_pod_group_templates.is_none());
    /// // A gang of gangs needs a CompositePodGroup.
    /// let errs = WorkloadBuilder::new(tree(SchedulingConfig::gang(Some(2)))).allow(allow)
    ///     .build_flat("trainer-wl", "default", &owner).unwrap_err();
    /// assert!(errs.to_string().starts_with("spec.compositePodGroupTemplates[0].schedulingPolicy: Forbidden"));
    /// ```
    pub fn build_flat(&self, name: &str, namespace: &str, owner: &OwnerReference) -> Result<Workload, FieldErrors> {
        let mut errs = validate_workload_identity(name, namespace, owner);
        let names = check_item_names(&self.root);
        if !names.is_empty() {
            errs.extend(names);
            return Err(errs);
        }
        let resolved = self.resolve();
        let tree_errs = self.validate_resolved(&resolved);
        let flat_errs = check_flat(&resolved);
        if !tree_errs.is_empty() || !flat_errs.is_empty() {
            let sites = sites(&resolved);
            errs.extend(tree_errs.into_iter().map(|e| to_flat_path(e, &sites)));
            errs.extend(flat_errs);
        }
        errs.into_result(())?;
        let mut leaves = Vec::new();
        collect_leaves(&resolved, &mut leaves);
        let templates = leaves.into_iter().map(compile_leaf).collect();
        Ok(workload(name, namespace, owner, Some(templates), None))
    }
}

/// The controller's own rules ([`WorkloadItem::with_check`]) on every item of `root`, in pre-order, each with
/// the resolved config of the same item of `resolved` (the same tree, resolved).
fn run_checks(root: &WorkloadItem, resolved: &ResolvedItem) -> FieldErrors {
    fn walk<'a>(
        item: &'a WorkloadItem,
        depth: usize,
        names: &mut Vec<&'a str>,
        out: &mut Vec<(&'a WorkloadItem, usize, Vec<&'a str>)>,
    ) {
        names.push(&item.name);
        out.push((item, depth, names.clone()));
        for child in &item.children {
            walk(child, depth.saturating_add(1), names, out);
        }
        names.pop();
    }
    let mut errs = FieldErrors::new();
    if !root.iter_has_checks() {
        return errs;
    }
    let mut items = Vec::new();
    walk(root, 0, &mut Vec::new(), &mut items);
    for (((item, depth, names), site), resolved) in items.iter().zip(sites(root)).zip(resolved.iter()) {
        if item.checks.is_empty() {
            continue;
        }
        let view = ItemView::new(item, *depth, names).with_template(&site.template);
        for check in &item.checks {
            if let Err(found) = check(&view, &resolved.config) {
                let origin = || ErrorOrigin::item(Stage::Validation, names.iter().copied());
                errs.extend(found.into_iter().map(|e| e.or_origin(origin)));
            }
        }
    }
    errs
}

/// The leaves of `item`'s subtree, in pre-order.
fn collect_leaves<'a>(item: &'a ResolvedItem, out: &mut Vec<&'a ResolvedItem>) {
    if item.is_leaf() {
        out.push(item);
    }
    for child in &item.children {
        collect_leaves(child, out);
    }
}

/// What a flat Workload cannot express: composite items asking for more than Basic and `single`, and more
/// leaves than a template list holds.
fn check_flat(root: &ResolvedItem) -> FieldErrors {
    let mut leaves = Vec::new();
    collect_leaves(root, &mut leaves);
    let composites_are_plain = root.iter().filter(|i| !i.is_leaf()).all(|i| {
        !i.config.is_gang() && i.config.topology_key().is_none() && i.config.disruption_mode != Some(Disruption::All)
    });
    let mut errs = FieldErrors::new();
    if composites_are_plain && leaves.len() <= MAX_TEMPLATES_PER_LIST {
        return errs;
    }
    for (site, item) in sites(root).into_iter().zip(root.iter()) {
        if item.is_leaf() {
            continue;
        }
        let path = site.config.clone().unwrap_or_else(|| site.template.clone());
        let origin = ErrorOrigin::item(Stage::Compile, site.names.iter());
        let c = &item.config;
        if c.is_gang() {
            errs.push(
                FieldError::forbidden(path.child("schedulingPolicy"), FLAT_COMPOSITE_GANG).with_origin(origin.clone()),
            );
        }
        if c.topology_key().is_some() {
            errs.push(
                FieldError::forbidden(
                    path.child("schedulingConstraints").child("topology"),
                    FLAT_COMPOSITE_TOPOLOGY,
                )
                .with_origin(origin.clone()),
            );
        }
        if c.disruption_mode == Some(Disruption::All) {
            errs.push(FieldError::forbidden(path.child("disruptionMode"), FLAT_COMPOSITE_ALL).with_origin(origin));
        }
    }
    if leaves.len() > MAX_TEMPLATES_PER_LIST {
        errs.push(
            FieldError::too_many(
                FieldPath::new("spec").child("podGroupTemplates"),
                leaves.len(),
                MAX_TEMPLATES_PER_LIST,
            )
            .with_origin(ErrorOrigin::stage(Stage::Compile)),
        );
    }
    errs
}

/// An error about a leaf's nested template path moved to the leaf's flat path (`spec.podGroupTemplates[k]`,
/// `k` its pre-order rank among the leaves).
fn to_flat_path(mut e: FieldError, sites: &[crate::sites::Site]) -> FieldError {
    let leaves = || sites.iter().filter(|s| s.leaf);
    let Some((k, site)) = leaves().enumerate().find(|(_, s)| s.names.as_slice() == e.item_path()) else {
        return e;
    };
    if let Some(rest) = e.field.as_str().strip_prefix(site.template.as_str())
        && (rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
    {
        e.field = FieldPath::from(format!("spec.podGroupTemplates[{k}]{rest}"));
    }
    e
}

/// When some item has an empty name: every name error of the tree (`Required`, `Invalid`, `Duplicate`, at the
/// `name` of the template each item compiles to, as tree validation reports them), found before resolution
/// so that no callback runs on it. Empty otherwise (tree validation checks the names then).
fn check_item_names(root: &WorkloadItem) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if !any_empty_name(root) {
        return errs;
    }
    let mut seen = std::collections::HashSet::new();
    for site in sites(root) {
        let name = site.names.last().map_or("", String::as_str);
        let path = site.name.clone().unwrap_or_else(|| site.template.child("name"));
        let origin = ErrorOrigin::item(Stage::Resolve, site.names.iter());
        if name.is_empty() {
            errs.push(FieldError::required(path, "").with_origin(origin));
            continue;
        }
        for msg in is_dns1123_label(name) {
            errs.push(FieldError::invalid(path.clone(), name, msg).with_origin(origin.clone()));
        }
        if !seen.insert(name.to_string()) {
            errs.push(FieldError::duplicate(path, name).with_origin(origin));
        }
    }
    errs
}

/// The details of allow-list errors (Forbidden: an option the controller does not support).
fn allowlist_details() -> [String; 4] {
    [
        policy_not_supported(PolicyOption::Basic),
        policy_not_supported(PolicyOption::Gang),
        disruption_mode_not_supported(DisruptionModeOption::Single),
        disruption_mode_not_supported(DisruptionModeOption::All),
    ]
}

/// `errs` (from tree validation of `root`) with their origins: the allow-list or validation stage, and the
/// item whose template or config path each error is under.
fn attribute(errs: FieldErrors, root: &ResolvedItem) -> FieldErrors {
    if errs.is_empty() {
        return errs;
    }
    let sites = sites(root);
    let allowlist = allowlist_details();
    errs.into_iter()
        .map(|e| {
            let stage = if e.error_type == FieldErrorType::Forbidden && allowlist.contains(&e.detail) {
                Stage::Allowlist
            } else {
                Stage::Validation
            };
            let item = site_of(&sites, &e.field).map(|s| s.names.clone()).unwrap_or_default();
            e.or_origin(|| ErrorOrigin { stage, item })
        })
        .collect()
}

fn validate_workload_identity(name: &str, namespace: &str, owner: &OwnerReference) -> FieldErrors {
    let mut errs = FieldErrors::new();
    // Paths are built only for an error: a valid identity allocates nothing here.
    let meta = |field: &str| FieldPath::new("metadata").child(field);
    let origin = || ErrorOrigin::stage(Stage::Compile);
    if name.is_empty() {
        errs.push(FieldError::required(meta("name"), ""));
    }
    for msg in is_dns1123_subdomain(name).into_iter().filter(|_| !name.is_empty()) {
        errs.push(FieldError::invalid(meta("name"), name, msg));
    }
    if namespace.is_empty() {
        errs.push(FieldError::required(meta("namespace"), ""));
    }
    for msg in is_dns1123_label(namespace)
        .into_iter()
        .filter(|_| !namespace.is_empty())
    {
        errs.push(FieldError::invalid(meta("namespace"), namespace, msg));
    }
    let owner_path = || meta("ownerReferences").index(0);
    if owner.controller != Some(true) {
        errs.push(FieldError::invalid(
            owner_path().child("controller"),
            owner.controller,
            OWNER_NOT_CONTROLLER,
        ));
    }
    for (field, value) in [
        ("apiVersion", &owner.api_version),
        ("kind", &owner.kind),
        ("name", &owner.name),
        ("uid", &owner.uid),
    ] {
        if value.is_empty() {
            errs.push(FieldError::required(owner_path().child(field), OWNER_NOT_CONTROLLER));
        }
    }
    if !owner.api_version.is_empty()
        && let Err(e) = parse_group_version(&owner.api_version)
    {
        errs.push(FieldError::invalid(
            owner_path().child("apiVersion"),
            owner.api_version.as_str(),
            e.to_string(),
        ));
    }
    if errs.is_empty() {
        return errs;
    }
    errs.into_iter().map(|e| e.or_origin(origin)).collect()
}

fn compile(root: &ResolvedItem, name: &str, namespace: &str, owner: &OwnerReference) -> Workload {
    let (pod_group_templates, composite_pod_group_templates) = if root.is_leaf() {
        (Some(vec![compile_leaf(root)]), None)
    } else {
        (None, Some(vec![compile_composite(root)]))
    };
    workload(
        name,
        namespace,
        owner,
        pod_group_templates,
        composite_pod_group_templates,
    )
}

/// The Workload `namespace/name` owned by `owner` with these templates.
fn workload(
    name: &str,
    namespace: &str,
    owner: &OwnerReference,
    pod_group_templates: Option<Vec<PodGroupTemplate>>,
    composite_pod_group_templates: Option<Vec<CompositePodGroupTemplate>>,
) -> Workload {
    // The owner's apiVersion was checked with the Workload's identity; a malformed one never gets here.
    let group = api_group(&owner.api_version).unwrap_or_default();
    Workload {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            owner_references: Some(vec![owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            composite_pod_group_templates,
            controller_ref: Some(TypedLocalObjectReference {
                api_group: (!group.is_empty()).then(|| group.to_string()),
                kind: owner.kind.clone(),
                name: owner.name.clone(),
            }),
            pod_group_templates,
        },
    }
}

fn empty() -> serde_json::Value {
    json!({})
}

fn topology(config: &SchedulingConfig) -> Option<Vec<k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint>> {
    config
        .constraints
        .as_ref()
        .filter(|c| !c.topology.is_empty())
        .map(|c| c.topology.clone())
}

fn compile_leaf(item: &ResolvedItem) -> PodGroupTemplate {
    let c = &item.config;
    let scheduling_policy = match c.policy.as_ref().unwrap_or(&SchedulingPolicy::Basic) {
        SchedulingPolicy::Basic => PodGroupSchedulingPolicy {
            basic: Some(BasicSchedulingPolicy(empty())),
            gang: None,
        },
        SchedulingPolicy::Gang(g) => PodGroupSchedulingPolicy {
            basic: None,
            gang: Some(GangSchedulingPolicy {
                min_count: g.min_count.unwrap_or_default(),
            }),
        },
    };
    PodGroupTemplate {
        disruption_mode: c.disruption_mode.map(|m| match m {
            Disruption::Single => ApiDisruptionMode {
                single: Some(SingleDisruptionMode(empty())),
                all: None,
            },
            Disruption::All => ApiDisruptionMode {
                single: None,
                all: Some(AllDisruptionMode(empty())),
            },
        }),
        name: item.name.clone(),
        preemption_policy: None,
        priority: None,
        priority_class_name: c.priority_class().map(str::to_string),
        resource_claims: (!c.resource_claims.is_empty()).then(|| {
            c.resource_claims
                .iter()
                .map(|r| PodGroupResourceClaim {
                    name: r.name.clone(),
                    resource_claim_name: r.resource_claim_name.clone(),
                    resource_claim_template_name: r.resource_claim_template_name.clone(),
                })
                .collect()
        }),
        scheduling_constraints: topology(c).map(|t| PodGroupSchedulingConstraints { topology: Some(t) }),
        scheduling_policy,
    }
}

fn compile_composite(item: &ResolvedItem) -> CompositePodGroupTemplate {
    let c = &item.config;
    let scheduling_policy = match c.policy.as_ref().unwrap_or(&SchedulingPolicy::Basic) {
        SchedulingPolicy::Basic => CompositePodGroupSchedulingPolicy {
            basic: Some(CompositeBasicSchedulingPolicy(empty())),
            gang: None,
        },
        SchedulingPolicy::Gang(g) => CompositePodGroupSchedulingPolicy {
            basic: None,
            gang: Some(CompositeGangSchedulingPolicy {
                min_group_count: g.min_count.unwrap_or_default(),
            }),
        },
    };
    let leaves: Vec<PodGroupTemplate> = item.children.iter().filter(|c| c.is_leaf()).map(compile_leaf).collect();
    let composites: Vec<CompositePodGroupTemplate> = item
        .children
        .iter()
        .filter(|c| !c.is_leaf())
        .map(compile_composite)
        .collect();
    CompositePodGroupTemplate {
        composite_pod_group_templates: (!composites.is_empty()).then_some(composites),
        disruption_mode: c.disruption_mode.map(|m| match m {
            Disruption::Single => CompositeDisruptionMode {
                single: Some(SingleCompositeDisruptionMode(empty())),
                all: None,
            },
            Disruption::All => CompositeDisruptionMode {
                single: None,
                all: Some(AllCompositeDisruptionMode(empty())),
            },
        }),
        name: item.name.clone(),
        pod_group_templates: (!leaves.is_empty()).then_some(leaves),
        preemption_policy: None,
        priority: None,
        priority_class_name: c.priority_class().map(str::to_string),
        scheduling_constraints: topology(c).map(|t| CompositePodGroupSchedulingConstraints { topology: Some(t) }),
        scheduling_policy,
    }
}
