//! The registry of served resources: which group / version / resource the server serves, in discovery
//! order. Built-in resources are fixed at start; CustomResourceDefinitions add and remove entries at run
//! time (through the CRD kind's after-write hook).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{GroupResource, ResourceInfo, split_api_version};

/// The registry of served resources.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    /// Served resources keyed by (group, version, plural).
    by_gvr: BTreeMap<(String, String, String), Arc<ResourceInfo>>,
    /// Group order for discovery (built-ins first, then custom groups in creation order).
    group_order: Vec<String>,
    /// Preferred version per group.
    preferred: BTreeMap<String, String>,
    /// Versions per group in discovery order.
    versions: BTreeMap<String, Vec<String>>,
    /// The built-in resources' plural names in discovery order.
    builtin_order: Vec<String>,
    /// The built-in resources' group and plural.
    builtin: Vec<(String, String)>,
}

impl Registry {
    /// A registry serving `builtins` (in discovery order).
    pub fn new(builtins: Vec<ResourceInfo>) -> Self {
        let builtin_order = builtins.iter().map(|r| r.plural.clone()).collect();
        let builtin = builtins.iter().map(|r| (r.group.clone(), r.plural.clone())).collect();
        let mut r = Registry {
            by_gvr: BTreeMap::new(),
            group_order: Vec::new(),
            preferred: BTreeMap::new(),
            versions: BTreeMap::new(),
            builtin_order,
            builtin,
        };
        for info in builtins {
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

    /// Whether `group` / `plural` is a built-in resource.
    fn is_builtin(&self, group: &str, plural: &str) -> bool {
        self.builtin.iter().any(|(g, p)| g == group && p == plural)
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
        let mut out: Vec<_> = self
            .by_gvr
            .values()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect();
        out.sort_by_key(|r| {
            self.builtin_order
                .iter()
                .position(|p| *p == r.plural)
                .unwrap_or(usize::MAX)
        });
        out
    }

    /// Whether a group version is served at all.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.versions.get(group).is_some_and(|v| v.iter().any(|x| x == version))
    }

    /// Replaces the resources a CRD serves with `infos` (empty to remove them).
    /// Built-in resources are never replaced: CRD admission refuses a CRD that would, and this is the
    /// second line of defence.
    /// Returns whether anything changed.
    pub fn set_custom(
        &mut self,
        group: &str,
        plural: &str,
        infos: Vec<ResourceInfo>,
        preferred_version: Option<&str>,
    ) -> bool {
        if self.is_builtin(group, plural) {
            return false;
        }
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
        true
    }
}
