//! The placement tree of a workload: group -> topology domain -> nodes, from what the cluster shows.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup};
use kube::ResourceExt;

/// Everything the tree reads, listed once.
#[derive(Debug, Default)]
pub struct ClusterView {
    /// Pods.
    pub pods: Vec<Pod>,
    /// PodGroups.
    pub groups: Vec<PodGroup>,
    /// CompositePodGroups.
    pub composites: Vec<CompositePodGroup>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// The DRA devices each consumer held (`pod/<name>` or `podgroup/<name>` -> devices), as
    /// [`ClusterView::record_devices`] saw them.
    pub devices: BTreeMap<String, Vec<String>>,
}

fn pod_group(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.scheduling_group.as_ref()?.pod_group_name.as_deref()
}

fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref()
}

impl ClusterView {
    /// Records the devices allocated to `claims` for the consumers they are reserved for: a device of a
    /// node's own pool by name (`gpu-3`), any other as `pool/device`.
    pub fn record_devices(&mut self, claims: &[k8s_openapi::api::resource::v1::ResourceClaim]) {
        for c in claims {
            let Some(status) = c.status.as_ref() else { continue };
            let Some(results) = status
                .allocation
                .as_ref()
                .and_then(|a| a.devices.as_ref())
                .and_then(|d| d.results.as_ref())
            else {
                continue;
            };
            for r in status.reserved_for.iter().flatten() {
                let key = format!("{}/{}", r.resource.trim_end_matches('s'), r.name);
                let held = self.devices.entry(key).or_default();
                for d in results {
                    let name = if self.nodes.iter().any(|n| n.name_any() == d.pool) {
                        d.device.clone()
                    } else {
                        format!("{}/{}", d.pool, d.device)
                    };
                    if !held.contains(&name) {
                        held.push(name);
                    }
                }
            }
        }
    }

    fn label(&self, node: &str, key: &str) -> Option<&str> {
        self.nodes
            .iter()
            .find(|n| n.name_any() == node)?
            .metadata
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    fn pods_of_group(&self, group: &str) -> Vec<&Pod> {
        self.pods.iter().filter(|p| pod_group(p) == Some(group)).collect()
    }

    /// The distinct values of `key` on the nodes of `pods`, rendered `key=v1[,v2...]`.
    fn domain(&self, key: &str, pods: &[&Pod]) -> String {
        let mut values: Vec<&str> = pods
            .iter()
            .filter_map(|p| node_of(p))
            .filter_map(|n| self.label(n, key))
            .collect();
        values.sort_unstable();
        values.dedup();
        if values.is_empty() {
            format!("{key}=(not placed)")
        } else {
            format!("{key}={}", values.join(","))
        }
    }

    fn group_line(&self, g: &PodGroup) -> String {
        let policy = match &g.spec.scheduling_policy.gang {
            Some(gang) => format!("gang minCount={}", gang.min_count),
            None => "basic".to_string(),
        };
        let pods = self.pods_of_group(&g.name_any());
        let key = g
            .spec
            .scheduling_constraints
            .as_ref()
            .and_then(|c| c.topology.as_ref())
            .and_then(|t| t.first())
            .map(|t| t.key.clone());
        let domain = key
            .map(|k| format!("  ->  {}", self.domain(&k, &pods)))
            .unwrap_or_default();
        let plural = if pods.len() == 1 { "" } else { "s" };
        let shared = self
            .devices
            .get(&format!("podgroup/{}", g.name_any()))
            .map(|d| format!("  [shared: {}]", d.join(", ")))
            .unwrap_or_default();
        format!(
            "PodGroup {} ({policy}, {} pod{plural}){domain}{shared}",
            g.name_any(),
            pods.len()
        )
    }

    fn nodes_lines(&self, pods: &[&Pod], prefix: &str, out: &mut String) {
        let mut by_node: BTreeMap<&str, (usize, Vec<String>)> = BTreeMap::new();
        for p in pods {
            let e = by_node.entry(node_of(p).unwrap_or("(pending)")).or_default();
            e.0 += 1;
            if let Some(d) = self.devices.get(&format!("pod/{}", p.name_any())) {
                e.1.extend(d.iter().cloned());
            }
        }
        let n = by_node.len();
        for (i, (node, (count, mut devices))) in by_node.into_iter().enumerate() {
            let branch = if i + 1 == n { "└── " } else { "├── " };
            devices.sort();
            let devices = if devices.is_empty() {
                String::new()
            } else {
                format!("; devices {}", devices.join(", "))
            };
            let _ = writeln!(
                out,
                "{prefix}{branch}{node} ({count} pod{}{devices})",
                if count == 1 { "" } else { "s" }
            );
        }
    }

    /// The tree of a root PodGroup (a Job's).
    pub fn pod_group_tree(&self, title: &str, group: &str) -> String {
        let mut out = format!("{title}\n");
        match self.groups.iter().find(|g| g.name_any() == group) {
            Some(g) => {
                let _ = writeln!(out, "└── {}", self.group_line(g));
                self.nodes_lines(&self.pods_of_group(group), "    ", &mut out);
            }
            None => {
                let _ = writeln!(out, "└── (no PodGroup {group})");
            }
        }
        out
    }

    /// The tree of a root CompositePodGroup and the PodGroups under it.
    pub fn composite_tree(&self, title: &str, root: &str) -> String {
        let mut out = format!("{title}\n");
        let Some(c) = self.composites.iter().find(|c| c.name_any() == root) else {
            let _ = writeln!(out, "└── (no CompositePodGroup {root})");
            return out;
        };
        let children: Vec<&PodGroup> = {
            let mut v: Vec<&PodGroup> = self
                .groups
                .iter()
                .filter(|g| g.spec.parent_composite_pod_group_name.as_deref() == Some(root))
                .collect();
            v.sort_by_key(|g| g.name_any());
            v
        };
        let all_pods: Vec<&Pod> = children
            .iter()
            .flat_map(|g| self.pods_of_group(&g.name_any()))
            .collect();
        let policy = match &c.spec.scheduling_policy.gang {
            Some(gang) => format!("gang minGroupCount={}", gang.min_group_count),
            None => "basic".to_string(),
        };
        let key = c
            .spec
            .scheduling_constraints
            .as_ref()
            .and_then(|s| s.topology.as_ref())
            .and_then(|t| t.first())
            .map(|t| t.key.clone());
        let domain = key
            .map(|k| format!("  ->  {}", self.domain(&k, &all_pods)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "└── CompositePodGroup {root} ({policy}, {} groups){domain}",
            children.len()
        );
        for (i, g) in children.iter().enumerate() {
            let last = i + 1 == children.len();
            let _ = writeln!(out, "    {}{}", if last { "└── " } else { "├── " }, self.group_line(g));
            let prefix = if last { "        " } else { "    │   " };
            self.nodes_lines(&self.pods_of_group(&g.name_any()), prefix, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, rack: &str) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"kwas.dev/rack": rack}}})).unwrap()
    }

    fn pod(name: &str, group: &str, node: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"nodeName": node, "schedulingGroup": {"podGroupName": group}, "containers": []}})).unwrap()
    }

    #[test]
    fn a_gang_in_one_rack() {
        let group: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "pg"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}, "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}}
        }))
        .unwrap();
        let view = ClusterView {
            pods: vec![pod("a", "pg", "n1"), pod("b", "pg", "n1"), pod("c", "pg", "n2")],
            groups: vec![group],
            composites: vec![],
            nodes: vec![node("n1", "r1"), node("n2", "r1")],
            devices: Default::default(),
        };
        assert_eq!(
            view.pod_group_tree("Job default/train", "pg"),
            "Job default/train\n└── PodGroup pg (gang minCount=3, 3 pods)  ->  kwas.dev/rack=r1\n    ├── n1 (2 pods)\n    └── n2 (1 pod)\n"
        );
    }

    #[test]
    fn devices_held_are_shown_on_nodes_and_groups() {
        let group: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "pg"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}
        }))
        .unwrap();
        let mut view = ClusterView {
            pods: vec![pod("a", "pg", "n1"), pod("b", "pg", "n1")],
            groups: vec![group],
            composites: vec![],
            nodes: vec![node("n1", "r1")],
            devices: Default::default(),
        };
        let claim = |name: &str, consumer: serde_json::Value, results: serde_json::Value| {
            serde_json::from_value::<k8s_openapi::api::resource::v1::ResourceClaim>(json!({
                "metadata": {"name": name}, "spec": {},
                "status": {"allocation": {"devices": {"results": results}}, "reservedFor": [consumer]}
            }))
            .unwrap()
        };
        view.record_devices(&[
            claim(
                "a-gpu",
                json!({"resource": "pods", "name": "a", "uid": "1"}),
                json!([{"request": "gpu", "driver": "gpu.kwas.dev", "pool": "n1", "device": "gpu-1"}]),
            ),
            claim(
                "b-gpu",
                json!({"resource": "pods", "name": "b", "uid": "2"}),
                json!([{"request": "gpu", "driver": "gpu.kwas.dev", "pool": "n1", "device": "gpu-0"}]),
            ),
            claim(
                "net",
                json!({"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "pg", "uid": "3"}),
                json!([{"request": "c", "driver": "interconnect.kwas.dev", "pool": "r1", "device": "channel-0"}]),
            ),
        ]);
        assert_eq!(
            view.pod_group_tree("Job default/train", "pg"),
            "Job default/train\n└── PodGroup pg (gang minCount=2, 2 pods)  [shared: r1/channel-0]\n    └── n1 (2 pods; devices gpu-0, gpu-1)\n"
        );
    }
}
