//! The resource registry: which group / version / resource the server serves, with the discovery facts
//! clients read (kind, namespaced, verbs, short names, categories, subresources) and how each one is
//! stored. Built-in resources are fixed; CustomResourceDefinitions add and remove entries at run time.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// A stored resource: API group and plural resource name (version-independent).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// The API group (`""` for core).
    pub group: String,
    /// The plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// Builds a group resource.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::error::qualified(&self.group, &self.resource))
    }
}

/// The built-in kinds that get typed defaulting, validation or special behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// core/v1 Namespace.
    Namespace,
    /// core/v1 Node.
    Node,
    /// core/v1 Pod.
    Pod,
    /// core/v1 Event (the storage form of events).
    Event,
    /// events.k8s.io/v1 Event, stored as core/v1 Event and converted on the way in and out.
    EventV1,
    /// core/v1 ConfigMap.
    ConfigMap,
    /// core/v1 Secret.
    Secret,
    /// core/v1 ServiceAccount.
    ServiceAccount,
    /// coordination.k8s.io/v1 Lease.
    Lease,
    /// batch/v1 Job.
    Job,
    /// scheduling.k8s.io/v1 PriorityClass.
    PriorityClass,
    /// scheduling.k8s.io/v1alpha3 Workload.
    Workload,
    /// scheduling.k8s.io/v1alpha3 PodGroup.
    PodGroup,
    /// scheduling.k8s.io/v1alpha3 CompositePodGroup.
    CompositePodGroup,
    /// apiextensions.k8s.io/v1 CustomResourceDefinition.
    Crd,
}

/// One additional printer column of a custom resource (`kubectl get` output).
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type (`string`, `integer`, `date`, ...).
    pub type_: String,
    /// JSONPath-like path into the object (`.spec.replicas`).
    pub json_path: String,
    /// Priority: 0 columns always show, others only with `-o wide`.
    pub priority: i64,
    /// Description for the Table column definition.
    pub description: String,
}

/// Everything the server knows about one served group / version / resource.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: String,
    /// Served version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural name (the URL segment).
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// kubectl short names.
    pub short_names: Vec<String>,
    /// Categories (`all`, ...).
    pub categories: Vec<String>,
    /// Whether a `status` subresource is served (and the main resource ignores status changes).
    pub status_subresource: bool,
    /// Typed behaviour, for built-in kinds.
    pub builtin: Option<Builtin>,
    /// Where the objects are stored; events.k8s.io events share core events' storage.
    pub storage: GroupResource,
    /// For custom resources: the version's OpenAPI v3 schema (pruning, defaulting).
    pub schema: Option<Value>,
    /// For custom resources: additional printer columns.
    pub printer_columns: Vec<PrinterColumn>,
    /// For custom resources: extra selectable fields (`.spec.foo` paths).
    pub selectable_fields: Vec<String>,
}

impl ResourceInfo {
    /// `group/version`, or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The stored group resource.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// The verbs the main resource supports.
    pub fn verbs(&self) -> Vec<&'static str> {
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }

    /// Whether this resource is one of kwas' scheduling kinds.
    pub fn is_scheduling_group_kind(&self) -> bool {
        matches!(self.builtin, Some(Builtin::PodGroup | Builtin::CompositePodGroup))
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    short_names: &[&str],
    categories: &[&str],
    status_subresource: bool,
    b: Builtin,
) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        status_subresource,
        builtin: Some(b),
        storage: GroupResource::new(group, plural),
        schema: None,
        printer_columns: Vec::new(),
        selectable_fields: Vec::new(),
    }
}

/// The built-in resources, in discovery order.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    let mut events_v1 = builtin(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        &["ev"],
        &[],
        false,
        Builtin::EventV1,
    );
    events_v1.storage = GroupResource::new("", "events");
    vec![
        builtin(
            "",
            "v1",
            "Namespace",
            "namespaces",
            false,
            &["ns"],
            &[],
            true,
            Builtin::Namespace,
        ),
        builtin("", "v1", "Node", "nodes", false, &["no"], &[], true, Builtin::Node),
        builtin("", "v1", "Pod", "pods", true, &["po"], &["all"], true, Builtin::Pod),
        builtin("", "v1", "Event", "events", true, &["ev"], &[], false, Builtin::Event),
        builtin(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            true,
            &["cm"],
            &[],
            false,
            Builtin::ConfigMap,
        ),
        builtin("", "v1", "Secret", "secrets", true, &[], &[], false, Builtin::Secret),
        builtin(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            true,
            &["sa"],
            &[],
            false,
            Builtin::ServiceAccount,
        ),
        events_v1,
        builtin(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            &[],
            &[],
            false,
            Builtin::Lease,
        ),
        builtin("batch", "v1", "Job", "jobs", true, &[], &["all"], true, Builtin::Job),
        builtin(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            false,
            &["pc"],
            &[],
            false,
            Builtin::PriorityClass,
        ),
        builtin(
            "scheduling.k8s.io",
            "v1alpha3",
            "Workload",
            "workloads",
            true,
            &[],
            &[],
            false,
            Builtin::Workload,
        ),
        builtin(
            "scheduling.k8s.io",
            "v1alpha3",
            "PodGroup",
            "podgroups",
            true,
            &[],
            &[],
            true,
            Builtin::PodGroup,
        ),
        builtin(
            "scheduling.k8s.io",
            "v1alpha3",
            "CompositePodGroup",
            "compositepodgroups",
            true,
            &[],
            &[],
            true,
            Builtin::CompositePodGroup,
        ),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            &["crd", "crds"],
            &[],
            true,
            Builtin::Crd,
        ),
    ]
}

/// The registry of served resources.
#[derive(Debug, Clone)]
pub struct Registry {
    /// Served resources keyed by (group, version, plural).
    by_gvr: BTreeMap<(String, String, String), Arc<ResourceInfo>>,
    /// Group order for discovery (built-ins first, then custom groups in creation order).
    group_order: Vec<String>,
    /// Preferred version per group.
    preferred: BTreeMap<String, String>,
    /// Versions per group in discovery order.
    versions: BTreeMap<String, Vec<String>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry with the built-in resources.
    pub fn new() -> Self {
        let mut r = Registry {
            by_gvr: BTreeMap::new(),
            group_order: Vec::new(),
            preferred: BTreeMap::new(),
            versions: BTreeMap::new(),
        };
        for info in builtin_resources() {
            r.insert(info, false);
        }
        r
    }

    fn insert(&mut self, info: ResourceInfo, preferred: bool) {
        if !self.group_order.contains(&info.group) {
            self.group_order.push(info.group.clone());
        }
        let versions = self.versions.entry(info.group.clone()).or_default();
        if !versions.contains(&info.version) {
            versions.push(info.version.clone());
        }
        if preferred || !self.preferred.contains_key(&info.group) {
            self.preferred.insert(info.group.clone(), info.version.clone());
        }
        self.by_gvr.insert(
            (info.group.clone(), info.version.clone(), info.plural.clone()),
            Arc::new(info),
        );
    }

    /// Looks a resource up by group, version and plural.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Looks a resource up by apiVersion and kind (ownerReferences, SSA bodies).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let (group, version) = split_api_version(api_version);
        self.by_gvr
            .values()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// Any served version of a stored group resource (the preferred one first).
    pub fn by_group_resource(&self, gr: &GroupResource) -> Option<Arc<ResourceInfo>> {
        let preferred = self.preferred.get(&gr.group);
        if let Some(v) = preferred
            && let Some(r) = self.get(&gr.group, v, &gr.resource)
        {
            return Some(r);
        }
        self.by_gvr
            .values()
            .find(|r| r.group == gr.group && r.plural == gr.resource)
            .cloned()
    }

    /// Every stored group resource (one entry per storage, not per version).
    pub fn stored_resources(&self) -> Vec<Arc<ResourceInfo>> {
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for r in self.by_gvr.values() {
            if r.storage == r.group_resource() && seen.insert(r.storage.clone()) {
                out.push(r.clone());
            }
        }
        out
    }

    /// Groups in discovery order.
    pub fn groups(&self) -> Vec<String> {
        self.group_order
            .iter()
            .filter(|g| self.versions.get(*g).is_some_and(|v| !v.is_empty()))
            .cloned()
            .collect()
    }

    /// A group's versions in discovery order, and its preferred version.
    pub fn group_versions(&self, group: &str) -> (Vec<String>, Option<String>) {
        (
            self.versions.get(group).cloned().unwrap_or_default(),
            self.preferred.get(group).cloned(),
        )
    }

    /// Resources served in one group version.
    pub fn resources_in(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        let builtin_order: Vec<String> = builtin_resources().into_iter().map(|r| r.plural).collect();
        let mut out: Vec<_> = self
            .by_gvr
            .values()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect();
        out.sort_by_key(|r| builtin_order.iter().position(|p| *p == r.plural).unwrap_or(usize::MAX));
        out
    }

    /// Whether a group version is served at all.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.versions.get(group).is_some_and(|v| v.iter().any(|x| x == version))
    }

    /// Replaces the resources a CRD serves with `infos` (empty to remove them).
    pub fn set_custom(&mut self, group: &str, plural: &str, infos: Vec<ResourceInfo>, preferred_version: Option<&str>) {
        self.by_gvr.retain(|(g, _, p), _| !(g == group && p == plural));
        let remaining: Vec<String> = self
            .by_gvr
            .keys()
            .filter(|(g, _, _)| g == group)
            .map(|(_, v, _)| v.clone())
            .collect();
        if let Some(vs) = self.versions.get_mut(group) {
            vs.retain(|v| remaining.contains(v));
        }
        if self.preferred.get(group).is_some_and(|v| !remaining.contains(v)) {
            self.preferred.remove(group);
            if let Some(v) = self.versions.get(group).and_then(|vs| vs.first()) {
                self.preferred.insert(group.to_string(), v.clone());
            }
        }
        for info in infos {
            let is_preferred = preferred_version == Some(info.version.as_str());
            self.insert(info, is_preferred);
        }
    }

    /// Resolves a resource name the way kubectl's RESTMapper would, for the command-line tools: plural,
    /// singular, kind or short name, optionally qualified with `.group`.
    pub fn resolve(&self, name: &str) -> Option<Arc<ResourceInfo>> {
        let lower = name.to_lowercase();
        let (base, group) = match lower.split_once('.') {
            Some((b, g)) => (b.to_string(), Some(g.to_string())),
            None => (lower.clone(), None),
        };
        let mut candidates: Vec<_> = self
            .by_gvr
            .values()
            .filter(|r| group.as_ref().is_none_or(|g| &r.group == g))
            .filter(|r| {
                r.plural == base || r.singular == base || r.kind.to_lowercase() == base || r.short_names.contains(&base)
            })
            .cloned()
            .collect();
        candidates.sort_by_key(|r| (self.preferred.get(&r.group) != Some(&r.version), !r.group.is_empty()));
        candidates.into_iter().next()
    }
}

/// Splits `group/version` (or `version` for core) into its parts.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}
