//! The hierarchy-agnostic intermediate representation (IR): [`SchedulingConfig`] and the [`WorkloadItem`] tree.
//!
//! The IR is the same at every level of a workload: a leaf item (no children) compiles to a PodGroupTemplate,
//! an item with children to a CompositePodGroupTemplate. Where the API has a one-of union, the IR has a Rust
//! enum ([`SchedulingPolicy`], [`Disruption`]); `None` means "not set at this layer".
//!
//! The IR serializes (and deserializes) in the API's shape and with its member names, so a tool can show it
//! next to the objects it compiles to: `schedulingPolicy: {gang: {minCount: 4}}`,
//! `schedulingConstraints: {topology: [{key: ...}]}`, `disruptionMode: {all: {}}`, `resourceClaims`,
//! `priorityClassName`; unset fields are left out.
//!
//! ```
//! use workloadbuilder::{Disruption, SchedulingConfig};
//!
//! let cfg = SchedulingConfig::gang(Some(4)).with_topology("topology.kubernetes.io/zone")
//!     .with_disruption_mode(Disruption::All);
//! let json = serde_json::to_value(&cfg).unwrap();
//! assert_eq!(json, serde_json::json!({
//!     "schedulingPolicy": {"gang": {"minCount": 4}},
//!     "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
//!     "disruptionMode": {"all": {}},
//! }));
//! assert_eq!(serde_json::from_value::<SchedulingConfig>(json).unwrap(), cfg);
//! // A union with two members is refused, as the API refuses it.
//! let both = serde_json::json!({"schedulingPolicy": {"basic": {}, "gang": {}}});
//! assert!(serde_json::from_value::<SchedulingConfig>(both).is_err());
//! ```

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint;
use serde::{Deserialize, Serialize};

use crate::field::{FieldErrors, FieldPath};

/// The polymorphic scheduling configuration of one group, leaf or composite.
///
/// At a leaf, [`GangPolicy::min_count`] is the PodGroup's `minCount`; at a composite it is the
/// CompositePodGroup's `minGroupCount`.
///
/// ```
/// use workloadbuilder::{Disruption, SchedulingConfig, SchedulingPolicy};
///
/// let cfg = SchedulingConfig::gang(None).with_topology("topology.kubernetes.io/zone").with_disruption_mode(Disruption::All);
/// assert!(cfg.is_gang());
/// assert_eq!(cfg.topology_key(), Some("topology.kubernetes.io/zone"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulingConfig {
    /// Basic or Gang; `None` = not set at this layer.
    #[serde(rename = "schedulingPolicy", default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<SchedulingPolicy>,
    /// Topology constraints; `None` = not set at this layer.
    #[serde(rename = "schedulingConstraints", default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<SchedulingConstraints>,
    /// Single or All; `None` = not set at this layer (the API defaults to Single).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<Disruption>,
    /// Resource claims shared by the group's pods (leaf groups only); empty = not set at this layer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<ResourceClaim>,
    /// The priority class of the group; `None` (or empty) = not set at this layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
}

impl SchedulingConfig {
    /// A config with only the Basic policy set.
    pub fn basic() -> Self {
        Self {
            policy: Some(SchedulingPolicy::Basic),
            ..Self::default()
        }
    }

    /// A config with only the Gang policy set (`min_count` may be left to a callback).
    pub fn gang(min_count: Option<i32>) -> Self {
        Self {
            policy: Some(SchedulingPolicy::Gang(GangPolicy { min_count })),
            ..Self::default()
        }
    }

    /// This config with one topology constraint on `key`.
    pub fn with_topology(mut self, key: impl Into<String>) -> Self {
        self.constraints = Some(SchedulingConstraints::topology(key));
        self
    }

    /// This config with a disruption mode.
    pub fn with_disruption_mode(mut self, mode: Disruption) -> Self {
        self.disruption_mode = Some(mode);
        self
    }

    /// This config with a priority class.
    pub fn with_priority_class_name(mut self, name: impl Into<String>) -> Self {
        self.priority_class_name = Some(name.into());
        self
    }

    /// This config with a resource claim appended.
    pub fn with_resource_claim(mut self, claim: ResourceClaim) -> Self {
        self.resource_claims.push(claim);
        self
    }

    /// True when the policy is Gang.
    pub fn is_gang(&self) -> bool {
        matches!(self.policy, Some(SchedulingPolicy::Gang(_)))
    }

    /// The gang policy, if the policy is Gang.
    pub fn gang_policy(&self) -> Option<&GangPolicy> {
        match &self.policy {
            Some(SchedulingPolicy::Gang(g)) => Some(g),
            _ => None,
        }
    }

    /// The gang policy for in-place changes, if the policy is Gang (the usual target of callbacks).
    pub fn gang_policy_mut(&mut self) -> Option<&mut GangPolicy> {
        match &mut self.policy {
            Some(SchedulingPolicy::Gang(g)) => Some(g),
            _ => None,
        }
    }

    /// If the policy is Gang and its count is unset, set it to `count`. Returns true when it did.
    ///
    /// This is the defaulting callback KEP-6089 shows for Job (`minCount = parallelism`).
    pub fn default_gang_min_count(&mut self, count: i32) -> bool {
        match self.gang_policy_mut() {
            Some(g) if g.min_count.is_none() => {
                g.min_count = Some(count);
                true
            }
            _ => false,
        }
    }

    /// The first topology key, if any.
    pub fn topology_key(&self) -> Option<&str> {
        self.constraints.as_ref()?.topology.first().map(|t| t.key.as_str())
    }

    /// The priority class, with an empty string treated as unset.
    pub fn priority_class(&self) -> Option<&str> {
        self.priority_class_name.as_deref().filter(|s| !s.is_empty())
    }
}

/// The scheduling policy: how the members of a group (pods at a leaf, child groups at a composite) are
/// admitted. Serialized as the API's union: `{basic: {}}` or `{gang: {minCount: 4}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "PolicyUnion", try_from = "PolicyUnion")]
pub enum SchedulingPolicy {
    /// Standard, member-by-member scheduling.
    Basic,
    /// All-or-nothing scheduling of at least `min_count` members.
    Gang(GangPolicy),
}

impl SchedulingPolicy {
    /// The allow-list option this policy corresponds to.
    pub fn option(&self) -> PolicyOption {
        match self {
            Self::Basic => PolicyOption::Basic,
            Self::Gang(_) => PolicyOption::Gang,
        }
    }
}

/// The serialized shape of a union of empty members and an optional gang (`{basic: {}}`, `{gang: {...}}`,
/// `{single: {}}`, `{all: {}}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyUnion {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    basic: Option<Empty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gang: Option<GangPolicy>,
}

impl From<SchedulingPolicy> for PolicyUnion {
    fn from(policy: SchedulingPolicy) -> Self {
        match policy {
            SchedulingPolicy::Basic => Self {
                basic: Some(Empty {}),
                gang: None,
            },
            SchedulingPolicy::Gang(g) => Self {
                basic: None,
                gang: Some(g),
            },
        }
    }
}

impl TryFrom<PolicyUnion> for SchedulingPolicy {
    type Error = &'static str;

    fn try_from(u: PolicyUnion) -> Result<Self, Self::Error> {
        match (u.basic, u.gang) {
            (Some(_), None) => Ok(Self::Basic),
            (None, Some(g)) => Ok(Self::Gang(g)),
            _ => Err("schedulingPolicy: must specify exactly one of: `basic`, `gang`"),
        }
    }
}

/// Parameters of the Gang policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GangPolicy {
    /// `minCount` at a leaf, `minGroupCount` at a composite. Must be set (>= 1) once callbacks have run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
}

/// Scheduling constraints (topology).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulingConstraints {
    /// Topology constraints; the API allows at most one.
    #[serde(default)]
    pub topology: Vec<TopologyConstraint>,
}

impl SchedulingConstraints {
    /// Constraints with one topology key.
    pub fn topology(key: impl Into<String>) -> Self {
        Self {
            topology: vec![TopologyConstraint { key: key.into() }],
        }
    }
}

/// The disruption mode: whether the members of a group may be disrupted one by one or only together.
/// Serialized as the API's union: `{single: {}}` or `{all: {}}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "DisruptionUnion", try_from = "DisruptionUnion")]
pub enum Disruption {
    /// Members can be disrupted independently.
    Single,
    /// The whole group (subtree, at a composite) is disrupted together.
    All,
}

impl Disruption {
    /// The allow-list option this mode corresponds to.
    pub fn option(self) -> DisruptionModeOption {
        match self {
            Self::Single => DisruptionModeOption::Single,
            Self::All => DisruptionModeOption::All,
        }
    }

    /// `single` or `all`, as the API spells the union members.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::All => "all",
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DisruptionUnion {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    single: Option<Empty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    all: Option<Empty>,
}

impl From<Disruption> for DisruptionUnion {
    fn from(mode: Disruption) -> Self {
        match mode {
            Disruption::Single => Self {
                single: Some(Empty {}),
                all: None,
            },
            Disruption::All => Self {
                single: None,
                all: Some(Empty {}),
            },
        }
    }
}

impl TryFrom<DisruptionUnion> for Disruption {
    type Error = &'static str;

    fn try_from(u: DisruptionUnion) -> Result<Self, Self::Error> {
        match (u.single, u.all) {
            (Some(_), None) => Ok(Self::Single),
            (None, Some(_)) => Ok(Self::All),
            _ => Err("disruptionMode: must specify exactly one of: `single`, `all`"),
        }
    }
}

/// A dynamic resource claim shared by the pods of a leaf group. Exactly one source must be set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaim {
    /// Unique name of the claim inside the group (a DNS label).
    pub name: String,
    /// Name of an existing ResourceClaim in the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    /// Name of a ResourceClaimTemplate in the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// Scheduling policies a controller may allow (KEP-6089 "Controller Opt-In"). Serialized as `basic` /
/// `gang`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyOption {
    /// The Basic policy.
    Basic,
    /// The Gang policy.
    Gang,
}

impl PolicyOption {
    /// `basic` or `gang`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Basic => "basic",
            Self::Gang => "gang",
        }
    }
}

/// Disruption modes a controller may allow (KEP-6089 "Controller Opt-In"). Serialized as `single` / `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DisruptionModeOption {
    /// The Single mode.
    Single,
    /// The All mode.
    All,
}

impl DisruptionModeOption {
    /// `single` or `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::All => "all",
        }
    }
}

/// The options a controller supports. Anything not listed is rejected, so options added to the API in a
/// later release stay off until the controller opts in. An empty list allows nothing.
///
/// ```
/// use workloadbuilder::{AllowList, DisruptionModeOption, PolicyOption};
/// let job = AllowList::new()
///     .policies([PolicyOption::Basic, PolicyOption::Gang])
///     .disruption_modes([DisruptionModeOption::Single, DisruptionModeOption::All]);
/// assert!(job.allows_policy(PolicyOption::Gang));
/// assert!(!AllowList::new().allows_policy(PolicyOption::Basic));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllowList {
    /// Allowed scheduling policies.
    #[serde(default)]
    pub policies: Vec<PolicyOption>,
    /// Allowed disruption modes.
    #[serde(default)]
    pub disruption_modes: Vec<DisruptionModeOption>,
}

impl AllowList {
    /// An allow-list that allows nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// This list with `policies` allowed.
    pub fn policies(mut self, policies: impl IntoIterator<Item = PolicyOption>) -> Self {
        self.policies.extend(policies);
        self
    }

    /// This list with `modes` allowed.
    pub fn disruption_modes(mut self, modes: impl IntoIterator<Item = DisruptionModeOption>) -> Self {
        self.disruption_modes.extend(modes);
        self
    }

    /// True when `policy` is allowed.
    pub fn allows_policy(&self, policy: PolicyOption) -> bool {
        self.policies.contains(&policy)
    }

    /// True when `mode` is allowed.
    pub fn allows_disruption_mode(&self, mode: DisruptionModeOption) -> bool {
        self.disruption_modes.contains(&mode)
    }
}

/// A controller-supplied function run on an item's resolved config after the merge (KEP-6089
/// `WorkloadItemFunc`, which receives the whole item). Callbacks are mostly defaulting functions (gang
/// `minCount`), but may do anything. Each one sees the item it runs for ([`ItemView`]) and its config;
/// [`WorkloadItem::with_callback`] adds one that only looks at the config,
/// [`WorkloadItem::with_item_callback`] one that also looks at the item.
pub type Callback = Arc<dyn Fn(&ItemView<'_>, &mut SchedulingConfig) + Send + Sync>;

/// A controller's own rule on an item's resolved config, run by [`WorkloadBuilder::validate`] and
/// [`WorkloadBuilder::build`](crate::WorkloadBuilder::build) after the library's rules (added with
/// [`WorkloadItem::with_check`]). Its errors are reported as returned, with the origin stage
/// [`Stage::Validation`](crate::Stage::Validation) and the item; build their paths with
/// [`ItemView::config_field`] so they land on the user's field.
///
/// [`WorkloadBuilder::validate`]: crate::WorkloadBuilder::validate
pub type Check = Arc<dyn Fn(&ItemView<'_>, &SchedulingConfig) -> Result<(), FieldErrors> + Send + Sync>;

/// What a callback sees of the item it runs for: a read-only view of the [`WorkloadItem`] and its place in
/// the tree (KEP-6089's `WorkloadItemFunc` receives the item itself).
///
/// ```
/// use workloadbuilder::{SchedulingConfig, WorkloadBuilder, WorkloadItem};
///
/// // A gang of gangs whose minGroupCount defaults to its number of child groups, by looking at the item.
/// let root = WorkloadItem::new("trainer")
///     .with_default(SchedulingConfig::gang(None))
///     .with_item_callback(|item, cfg| {
///         assert_eq!((item.name(), item.depth()), ("trainer", 0));
///         let children = i32::try_from(item.child_count()).unwrap_or(i32::MAX);
///         cfg.default_gang_min_count(children);
///     })
///     .with_child(WorkloadItem::new("driver"))
///     .with_child(WorkloadItem::new("workers"));
/// let resolved = WorkloadBuilder::new(root).resolve();
/// assert_eq!(resolved.config.gang_policy().and_then(|g| g.min_count), Some(2));
/// ```
#[derive(Clone, Copy)]
pub struct ItemView<'a> {
    item: &'a WorkloadItem,
    depth: usize,
    path: &'a [&'a str],
    template: Option<&'a FieldPath>,
}

impl<'a> ItemView<'a> {
    pub(crate) fn new(item: &'a WorkloadItem, depth: usize, path: &'a [&'a str]) -> Self {
        Self {
            item,
            depth,
            path,
            template: None,
        }
    }

    pub(crate) fn with_template(mut self, template: &'a FieldPath) -> Self {
        self.template = Some(template);
        self
    }

    /// The path of `member` of the item's configuration (`schedulingPolicy`, `disruptionMode`, ...): under
    /// the item's [config path](WorkloadItem::with_config_path) when the controller set one (the field the
    /// user wrote), else under the template the item compiles to (in a [`Check`]; a callback, which runs
    /// before the tree is laid out, gets `member` alone).
    ///
    /// ```
    /// use workloadbuilder::{FieldError, SchedulingConfig, WorkloadBuilder, WorkloadItem, AllowList, PolicyOption};
    ///
    /// // The controller's own rule: a gang no larger than the replicas the user asked for.
    /// let replicas = 2;
    /// let item = WorkloadItem::new("workers")
    ///     .with_user_config(Some(SchedulingConfig::gang(Some(3))))
    ///     .with_config_path("spec.groups[0].scheduling")
    ///     .with_check(move |item, cfg| match cfg.gang_policy().and_then(|g| g.min_count) {
    ///         Some(n) if n > replicas => Err(FieldError::invalid(
    ///             item.config_field("schedulingPolicy").child("gang").child("minCount"),
    ///             n,
    ///             format!("must be less than or equal to replicas ({replicas})"),
    ///         ).into()),
    ///         _ => Ok(()),
    ///     });
    /// let errs = WorkloadBuilder::new(item).allow(AllowList::new().policies([PolicyOption::Gang]))
    ///     .validate().unwrap_err();
    /// assert_eq!(errs.to_string(),
    ///     "spec.groups[0].scheduling.schedulingPolicy.gang.minCount: Invalid value: 3: must be less than or equal to replicas (2)");
    /// ```
    pub fn config_field(&self, member: &str) -> FieldPath {
        match self.item.config_path.as_ref().or(self.template) {
            Some(base) => base.child(member),
            None => FieldPath::new(member),
        }
    }

    /// The item's name (its template's name).
    pub fn name(&self) -> &'a str {
        &self.item.name
    }

    /// How deep the item is: 0 for the root, 1 for its children, ...
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// True for the root item.
    pub fn is_root(&self) -> bool {
        self.depth == 0
    }

    /// True when the item has no children (it compiles to a PodGroupTemplate).
    pub fn is_leaf(&self) -> bool {
        self.item.is_leaf()
    }

    /// The names of the item's children, in order.
    pub fn child_names(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.item.children.iter().map(|c| c.name.as_str())
    }

    /// The number of children.
    pub fn child_count(&self) -> usize {
        self.item.children.len()
    }

    /// The names from the root to this item, both included.
    pub fn path(&self) -> &'a [&'a str] {
        self.path
    }

    /// Where the item's configuration lives in the controller's API, if the controller said so.
    pub fn config_path(&self) -> Option<&'a FieldPath> {
        self.item.config_path.as_ref()
    }

    /// The controller's defaults for the item, as given (before the merge).
    pub fn default_config(&self) -> Option<&'a SchedulingConfig> {
        self.item.default_config.as_ref()
    }

    /// The user's configuration of the item, as given (before the merge).
    pub fn user_config(&self) -> Option<&'a SchedulingConfig> {
        self.item.user_config.as_ref()
    }
}

impl fmt::Debug for ItemView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemView")
            .field("name", &self.name())
            .field("depth", &self.depth)
            .field("path", &self.path)
            .field("children", &self.child_names().collect::<Vec<_>>())
            .field("config_path", &self.config_path())
            .finish()
    }
}

/// One logical component of a workload: the whole JobSet, one replicated job, one standalone Job, ...
///
/// No children = a leaf (compiles to a PodGroupTemplate); children = a composite (CompositePodGroupTemplate).
///
/// ```
/// use workloadbuilder::{SchedulingConfig, WorkloadItem};
///
/// let job = WorkloadItem::new("train")
///     .with_default(SchedulingConfig::basic())
///     .with_user_config(Some(SchedulingConfig::gang(None)))
///     .with_callback(|cfg| {
///         cfg.default_gang_min_count(4);
///     });
/// assert!(job.is_leaf());
/// ```
#[derive(Clone, Default)]
pub struct WorkloadItem {
    /// The template name this item compiles to (a DNS label, unique in the tree).
    pub name: String,
    /// The controller's complete set of defaults for this item.
    pub default_config: Option<SchedulingConfig>,
    /// What the user configured at this level; `None` when the user left the scheduling block unset.
    pub user_config: Option<SchedulingConfig>,
    /// Run in order on the resolved config after the merge, whichever way they were added.
    pub callbacks: Vec<Callback>,
    /// Sub-components.
    pub children: Vec<WorkloadItem>,
    /// Where this item's scheduling configuration lives in the controller's own API (for example
    /// `spec.scheduling` of a Job, or `spec.scheduling.replicatedJobPolicies[1]` of a JobSet). When set,
    /// validation errors about the item's configuration are reported under this path, so users see paths
    /// of the object they wrote; otherwise under the compiled template's path in the Workload.
    pub config_path: Option<FieldPath>,
    /// Where this item's name comes from in the controller's API (`spec.groups[1].name`). When set, errors
    /// about the name (empty, not a DNS label, a duplicate) are reported there instead of at the template's
    /// `name` in the Workload.
    pub name_path: Option<FieldPath>,
    /// Where this item's children come from in the controller's API (`spec.groups`). When set, too many
    /// children for one template list (the API's limit of 8) is reported there.
    pub children_path: Option<FieldPath>,
    /// The controller's own rules, run after the library's on the resolved config.
    pub checks: Vec<Check>,
}

impl WorkloadItem {
    /// An item with a name and nothing else.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// This item with the controller's defaults.
    pub fn with_default(mut self, config: SchedulingConfig) -> Self {
        self.default_config = Some(config);
        self
    }

    /// This item with the user's configuration (`None`: the user configured nothing here).
    pub fn with_user_config(mut self, config: Option<SchedulingConfig>) -> Self {
        self.user_config = config;
        self
    }

    /// This item with a callback appended that looks only at the resolved config.
    pub fn with_callback(mut self, f: impl Fn(&mut SchedulingConfig) + Send + Sync + 'static) -> Self {
        self.callbacks
            .push(Arc::new(move |_: &ItemView<'_>, cfg: &mut SchedulingConfig| f(cfg)));
        self
    }

    /// This item with a callback appended that also sees the item ([`ItemView`]: its name, depth, children,
    /// config path, default and user configs). Callbacks of both kinds run in the order they were added.
    pub fn with_item_callback(
        mut self,
        f: impl Fn(&ItemView<'_>, &mut SchedulingConfig) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.push(Arc::new(f));
        self
    }

    /// This item with a child appended.
    pub fn with_child(mut self, child: WorkloadItem) -> Self {
        self.children.push(child);
        self
    }

    /// This item with children appended.
    pub fn with_children(mut self, children: impl IntoIterator<Item = WorkloadItem>) -> Self {
        self.children.extend(children);
        self
    }

    /// This item with the path of its configuration in the controller's API.
    pub fn with_config_path(mut self, path: impl Into<FieldPath>) -> Self {
        self.config_path = Some(path.into());
        self
    }

    /// This item with the path its name comes from in the controller's API.
    pub fn with_name_path(mut self, path: impl Into<FieldPath>) -> Self {
        self.name_path = Some(path.into());
        self
    }

    /// This item with the path its children come from in the controller's API.
    pub fn with_children_path(mut self, path: impl Into<FieldPath>) -> Self {
        self.children_path = Some(path.into());
        self
    }

    /// This item with a rule of the controller's own appended ([`Check`]): it sees the item and its
    /// resolved config and returns the errors to report (build their paths with [`ItemView::config_field`]).
    pub fn with_check(
        mut self,
        f: impl Fn(&ItemView<'_>, &SchedulingConfig) -> Result<(), FieldErrors> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push(Arc::new(f));
        self
    }

    /// True when the item has no children (compiles to a PodGroupTemplate).
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// True when some item of the subtree has a check.
    pub(crate) fn iter_has_checks(&self) -> bool {
        !self.checks.is_empty() || self.children.iter().any(WorkloadItem::iter_has_checks)
    }
}

impl fmt::Debug for WorkloadItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkloadItem")
            .field("name", &self.name)
            .field("default_config", &self.default_config)
            .field("user_config", &self.user_config)
            .field("callbacks", &self.callbacks.len())
            .field("children", &self.children)
            .field("config_path", &self.config_path)
            .field("name_path", &self.name_path)
            .field("children_path", &self.children_path)
            .field("checks", &self.checks.len())
            .finish()
    }
}

/// Where a resolved value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// The controller's default (the user left the field unset).
    Default,
    /// The user's configuration (it replaced the default whole).
    User,
    /// A callback set or changed it after the merge.
    Callback,
}

/// Where each top-level field of a resolved config came from; `None` for a field that is unset after
/// resolution. The gang count is tracked apart from the policy, so that a user's `gang: {}` completed by a
/// defaulting callback reads `schedulingPolicy: user, minCount: callback`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sources {
    /// The policy's kind (Basic or Gang).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<Source>,
    /// The gang's `minCount` (`minGroupCount` at a composite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<Source>,
    /// The scheduling constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<Source>,
    /// The disruption mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<Source>,
    /// The resource claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claims: Option<Source>,
    /// The priority class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<Source>,
}

/// An item after policy resolution: defaults, then the user's overrides, then callbacks. It keeps every
/// step, so a tool can show where each value came from ([`Sources`]); it serializes (and deserializes) with
/// the API's member names:
///
/// ```
/// use workloadbuilder::{SchedulingConfig, Source, WorkloadBuilder, WorkloadItem};
///
/// let item = WorkloadItem::new("train-pgt-0")
///     .with_default(SchedulingConfig::basic())
///     .with_user_config(Some(SchedulingConfig::gang(None)))
///     .with_callback(|cfg| { cfg.default_gang_min_count(4); });
/// let resolved = WorkloadBuilder::new(item).resolve();
/// assert_eq!(resolved.sources.scheduling_policy, Some(Source::User));
/// assert_eq!(resolved.sources.min_count, Some(Source::Callback));
/// assert_eq!(serde_json::to_value(&resolved).unwrap(), serde_json::json!({
///     "name": "train-pgt-0",
///     "default": {"schedulingPolicy": {"basic": {}}},
///     "user": {"schedulingPolicy": {"gang": {}}},
///     "merged": {"schedulingPolicy": {"gang": {}}},
///     "resolved": {"schedulingPolicy": {"gang": {"minCount": 4}}},
///     "sources": {"schedulingPolicy": "user", "minCount": "callback"},
///     "callbacks": 1,
/// }));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolvedItem {
    /// The item's name.
    pub name: String,
    /// The item's [`WorkloadItem::config_path`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_path: Option<FieldPath>,
    /// The item's [`WorkloadItem::name_path`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_path: Option<FieldPath>,
    /// The item's [`WorkloadItem::children_path`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children_path: Option<FieldPath>,
    /// The controller's defaults, as given.
    #[serde(rename = "default", default, skip_serializing_if = "Option::is_none")]
    pub default_config: Option<SchedulingConfig>,
    /// The user's configuration, as given (`None`: the user configured nothing at this item).
    #[serde(rename = "user", default, skip_serializing_if = "Option::is_none")]
    pub user_config: Option<SchedulingConfig>,
    /// The defaults with the user's fields merged over them: what the callbacks received.
    #[serde(default)]
    pub merged: SchedulingConfig,
    /// The resolved configuration, after the callbacks: what is validated and compiled.
    #[serde(rename = "resolved", default)]
    pub config: SchedulingConfig,
    /// Where each field of [`config`](Self::config) came from.
    #[serde(default)]
    pub sources: Sources,
    /// How many callbacks ran on the item.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub callbacks: usize,
    /// Resolved children, in the item's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ResolvedItem>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ResolvedItem {
    /// True when the item has no children.
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// The item named `name` in this subtree (pre-order, first match).
    pub fn find(&self, name: &str) -> Option<&ResolvedItem> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    /// Every item of the subtree in pre-order.
    pub fn iter(&self) -> impl Iterator<Item = &ResolvedItem> {
        let mut stack = vec![self];
        std::iter::from_fn(move || {
            let next = stack.pop()?;
            stack.extend(next.children.iter().rev());
            Some(next)
        })
    }
}
