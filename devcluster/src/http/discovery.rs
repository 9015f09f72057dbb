//! Discovery documents: `/version`, `/api`, `/apis`, per-group and per-group-version resource lists, and
//! the aggregated discovery form (`apidiscovery.k8s.io/v2`) kubectl and client-go ask for first.

use serde_json::{Value, json};

use crate::resource::{Registry, ResourceInfo};

use crate::{KUBE_MINOR, KUBE_VERSION};

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "emulationMajor": "1",
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": format!("{KUBE_VERSION}+kwas-devcluster"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_doc(registry: &Registry, group: &str) -> Value {
    let (versions, preferred) = registry.group_versions(group);
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let pref = preferred.unwrap_or_else(|| versions.first().cloned().unwrap_or_default());
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": {"groupVersion": format!("{group}/{pref}"), "version": pref},
    })
}

/// `/apis`.
pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| group_doc(registry, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`.
pub fn group(registry: &Registry, group: &str) -> Option<Value> {
    if group.is_empty() || !registry.groups().iter().any(|g| g == group) {
        return None;
    }
    let mut doc = group_doc(registry, group);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// The subresources a resource serves: (name, kind, group, version, verbs).
fn subresources(
    r: &ResourceInfo,
) -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Vec<&'static str>,
)> {
    let mut out = Vec::new();
    if r.status_subresource {
        out.push(("status", "", "", "", vec!["get", "patch", "update"]));
    }
    for sub in r.strategy.subresources() {
        out.push((sub.name, sub.kind, sub.group, sub.version, sub.verbs.to_vec()));
    }
    out
}

/// A hash of the version objects of `r` are stored in (kube-apiserver's `storageVersionHash`): the same for
/// every served version of one resource (Workload and PodGroup as v1beta1 and v1alpha3, stored as
/// v1alpha3; a CRD's versions, stored in its storage version), so clients can tell they share storage.
fn storage_version_hash(r: &ResourceInfo) -> String {
    use base64::Engine;
    let storage = match (r.strategy.storage_type(), &r.conversion) {
        (Some((api_version, kind)), _) => format!("{api_version}/{kind}"),
        (None, Some(c)) => format!("{}/{}", c.storage_api_version, r.kind),
        (None, None) => format!("{}/{}", r.api_version(), r.kind),
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in storage.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    base64::engine::general_purpose::STANDARD.encode(h.to_be_bytes())
}

/// `/api/v1` or `/apis/<group>/<version>`.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    if !registry.serves_group_version(group, version) {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut resources = Vec::new();
    for r in registry.resources_in(group, version) {
        let mut doc = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs(),
            "storageVersionHash": storage_version_hash(&r),
        });
        if !r.short_names.is_empty() {
            doc["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            doc["categories"] = json!(r.categories);
        }
        resources.push(doc);
        for (sub, kind, sg, sv, verbs) in subresources(&r) {
            let mut d = json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": if kind.is_empty() { r.kind.as_str() } else { kind },
                "verbs": verbs,
            });
            if !sg.is_empty() {
                d["group"] = json!(sg);
            }
            if !sv.is_empty() && !sg.is_empty() {
                d["version"] = json!(sv);
            }
            resources.push(d);
        }
    }
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// The aggregated discovery document for `/api` (core) or `/apis` (every other group).
pub fn aggregated(registry: &Registry, core: bool) -> Value {
    let groups: Vec<String> = if core {
        vec![String::new()]
    } else {
        registry.groups().into_iter().filter(|g| !g.is_empty()).collect()
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|g| {
            let (versions, preferred) = registry.group_versions(g);
            let mut ordered = versions.clone();
            if let Some(p) = &preferred {
                ordered.retain(|v| v != p);
                ordered.insert(0, p.clone());
            }
            let vs: Vec<Value> = ordered
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = registry
                        .resources_in(g, v)
                        .iter()
                        .map(|r| {
                            let mut d = json!({
                                "resource": r.plural,
                                "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                                "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": r.singular,
                                "verbs": r.verbs(),
                            });
                            if !r.short_names.is_empty() {
                                d["shortNames"] = json!(r.short_names);
                            }
                            if !r.categories.is_empty() {
                                d["categories"] = json!(r.categories);
                            }
                            let subs: Vec<Value> = subresources(r)
                                .into_iter()
                                .map(|(sub, kind, sg, sv, verbs)| {
                                    json!({
                                        "subresource": sub,
                                        "responseKind": {
                                            "group": if sg.is_empty() { r.group.as_str() } else { sg },
                                            "version": if sv.is_empty() { r.version.as_str() } else { sv },
                                            "kind": if kind.is_empty() { r.kind.as_str() } else { kind },
                                        },
                                        "verbs": verbs,
                                    })
                                })
                                .collect();
                            if !subs.is_empty() {
                                d["subresources"] = json!(subs);
                            }
                            d
                        })
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g}, "versions": vs})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resource_list_has_pods_with_subresources() {
        let reg = Registry::new(crate::kinds::builtin_resources());
        let doc = resource_list(&reg, "", "v1").unwrap();
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        for n in [
            "pods",
            "pods/status",
            "pods/binding",
            "pods/eviction",
            "nodes",
            "namespaces",
            "events",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
        let pods = &doc["resources"].as_array().unwrap()[names.iter().position(|n| *n == "pods").unwrap()];
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["namespaced"], json!(true));
    }

    #[test]
    fn groups_list_scheduling_with_every_version_beta_before_alpha() {
        let reg = Registry::new(crate::kinds::builtin_resources());
        let doc = group(&reg, "scheduling.k8s.io").unwrap();
        let versions: Vec<&str> = doc["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(versions, vec!["v1", "v1beta1", "v1alpha3"]);
        assert_eq!(doc["preferredVersion"]["version"], "v1");
        let beta = resource_list(&reg, "scheduling.k8s.io", "v1beta1").unwrap();
        let names: Vec<&str> = beta["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"workloads") && names.contains(&"podgroups"),
            "{names:?}"
        );
        assert!(!names.contains(&"compositepodgroups"), "{names:?}");
        // One storage: the same storageVersionHash through both versions.
        let hash = |version: &str| {
            resource_list(&reg, "scheduling.k8s.io", version).unwrap()["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == "podgroups")
                .unwrap()["storageVersionHash"]
                .clone()
        };
        assert_eq!(hash("v1beta1"), hash("v1alpha3"));
        assert!(resource_list(&reg, "scheduling.k8s.io", "v1alpha3").is_some());
        assert!(resource_list(&reg, "scheduling.k8s.io", "v9").is_none());
        let agg = aggregated(&reg, false);
        assert!(
            agg["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["metadata"]["name"] == "batch")
        );
    }
}
