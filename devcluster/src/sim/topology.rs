//! Simulated nodes from a topology description: pools of `blocks x racks x nodes`, each node with cpu,
//! memory, pods and `nvidia.com/gpu` capacity, DRA GPUs (published by the simulated DRA driver
//! `gpu.kwas.dev` as a ResourceSlice, see `sim::dra`), the well-known topology labels and optional taints.
//!
//! Node names are `<prefix>-b<block>-r<rack>-n<node>`; labels are `kubernetes.io/hostname` (the name),
//! `topology.kubernetes.io/zone` (`zone-<block>` unless the pool names zones), `kwas.dev/block`
//! (`b<block>`) and `kwas.dev/rack` (`b<block>-r<rack>`), plus the pool's own labels. A pool with a
//! prefix other than the default `node` prefixes its domains too (`gpu-b0`, `gpu-b0-r1`), so two pools
//! never share a block or rack.
//!
//! A topology file is YAML:
//!
//! ```yaml
//! pools:
//! - prefix: gpu
//!   blocks: 2
//!   racksPerBlock: 4
//!   nodesPerRack: 8
//!   capacity: {cpu: "64", memory: 512Gi, pods: "110", gpus: 8}
//!   draGpus: {count: 8, model: KW100, memory: 80Gi}
//!   labels: {node.kubernetes.io/instance-type: a3}
//!   taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::kinds::dra::{MAX_ATTRIBUTE_VALUE_LENGTH, MAX_DEVICES};
use crate::meta;

/// The default pool prefix: its nodes are `node-b0-r0-n0`, its domains `b0` and `b0-r0`.
pub const DEFAULT_PREFIX: &str = "node";
/// Capacity of one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Capacity {
    /// CPU cores (a Kubernetes quantity).
    pub cpu: String,
    /// Memory (a Kubernetes quantity).
    pub memory: String,
    /// Max pods.
    pub pods: String,
    /// `nvidia.com/gpu` devices (0 = not advertised).
    pub gpus: u32,
}

impl Default for Capacity {
    fn default() -> Self {
        Capacity {
            cpu: "32".into(),
            memory: "256Gi".into(),
            pods: "110".into(),
            gpus: 0,
        }
    }
}

/// The node annotation that stops a node's simulated kubelet (`"true"`): no status posted (after the node
/// monitor grace period the node lifecycle controller marks it `Unknown` and taints it
/// `node.kubernetes.io/unreachable`), no pod started, ended or stopped there until it is removed.
pub const SIM_NODE_DOWN: &str = "kwas.dev/sim-node-down";

/// Whether a node's simulated kubelet is down ([`SIM_NODE_DOWN`]).
pub fn node_down(node: &serde_json::Value) -> bool {
    crate::meta::annotation(node, SIM_NODE_DOWN) == Some("true")
}

/// The node annotation that tells the simulated DRA driver how many DRA GPUs a node has (`gpu-0` ..
/// `gpu-<n-1>`); a node without it has none. Topology nodes get it from [`DraGpus::count`].
pub const SIM_DRA_GPUS: &str = "kwas.dev/sim-dra-gpus";
/// The node annotation with the DRA GPUs' `model` attribute ([`DraGpus::model`], default `KW100`).
pub const SIM_DRA_GPU_MODEL: &str = "kwas.dev/sim-dra-gpu-model";
/// The node annotation with the DRA GPUs' `memory` capacity ([`DraGpus::memory`], default `80Gi`).
pub const SIM_DRA_GPU_MEMORY: &str = "kwas.dev/sim-dra-gpu-memory";

/// The DRA GPUs of each node of a pool: devices of the simulated DRA driver `gpu.kwas.dev`, separate from
/// the `nvidia.com/gpu` extended resource ([`Capacity::gpus`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DraGpus {
    /// How many (`gpu-0` .. `gpu-<count-1>`); 0 publishes none. At most 128, the devices one
    /// ResourceSlice may hold. 8 by default.
    pub count: u32,
    /// Their `model` attribute (at most 64 bytes). `KW100` by default.
    pub model: String,
    /// Their `memory` capacity (a quantity). `80Gi` by default.
    pub memory: String,
}

impl Default for DraGpus {
    fn default() -> Self {
        DraGpus {
            count: 8,
            model: "KW100".into(),
            memory: "80Gi".into(),
        }
    }
}

impl DraGpus {
    /// No DRA GPUs.
    pub fn none() -> Self {
        DraGpus {
            count: 0,
            ..Default::default()
        }
    }

    /// `count` DRA GPUs of the default model and memory.
    pub fn with_count(count: u32) -> Self {
        DraGpus {
            count,
            ..Default::default()
        }
    }

    fn validate(&self, pool: &str) -> Result<()> {
        let max = crate::kinds::dra::MAX_DEVICES;
        if usize::try_from(self.count).map_or(true, |c| c > max) {
            return Err(Error::Config(format!(
                "pool {pool}: at most {max} DRA GPUs per node (the devices one ResourceSlice may hold), not {}",
                self.count
            )));
        }
        if self.model.is_empty() || self.model.len() > crate::kinds::dra::MAX_ATTRIBUTE_VALUE_LENGTH {
            return Err(Error::Config(format!(
                "pool {pool}: the DRA GPU model must have 1 to {} bytes",
                crate::kinds::dra::MAX_ATTRIBUTE_VALUE_LENGTH
            )));
        }
        if !matches!(kwas_api_types::quantity::parse_units(&self.memory), Ok(n) if n > 0) {
            return Err(Error::Config(format!(
                "pool {pool}: DRA GPU memory {:?} is not a positive quantity",
                self.memory
            )));
        }
        Ok(())
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taint {
    /// Key.
    pub key: String,
    /// Value.
    #[serde(default)]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

impl Taint {
    /// Parses `key[=value]:Effect`.
    pub fn parse(s: &str) -> Result<Taint> {
        let (kv, effect) = s
            .rsplit_once(':')
            .ok_or_else(|| Error::Config(format!("taint {s:?}: expected key[=value]:Effect")))?;
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        let t = Taint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
        };
        t.validate()?;
        Ok(t)
    }

    fn validate(&self) -> Result<()> {
        if self.key.is_empty() {
            return Err(Error::Config("taint key must not be empty".into()));
        }
        if !matches!(self.effect.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            return Err(Error::Config(format!(
                "taint {}: effect {:?} is not one of NoSchedule, PreferNoSchedule, NoExecute",
                self.key, self.effect
            )));
        }
        Ok(())
    }
}

/// A pool of identical nodes laid out as blocks x racks x nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePool {
    /// Name prefix (`node` by default).
    pub prefix: String,
    /// Number of blocks.
    pub blocks: u32,
    /// Racks in each block.
    pub racks_per_block: u32,
    /// Nodes in each rack.
    pub nodes_per_rack: u32,
    /// Zone names, assigned to blocks round-robin; empty means `zone-<block>`.
    pub zones: Vec<String>,
    /// Capacity of each node.
    pub capacity: Capacity,
    /// DRA GPUs of each node (8 `KW100` with `80Gi` by default).
    pub dra_gpus: DraGpus,
    /// Extra labels.
    pub labels: BTreeMap<String, String>,
    /// Taints.
    pub taints: Vec<Taint>,
}

impl Default for NodePool {
    fn default() -> Self {
        NodePool {
            prefix: DEFAULT_PREFIX.into(),
            blocks: 1,
            racks_per_block: 1,
            nodes_per_rack: 3,
            zones: Vec::new(),
            capacity: Capacity::default(),
            dra_gpus: DraGpus::default(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
        }
    }
}

/// A whole topology.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Topology {
    /// Node pools.
    pub pools: Vec<NodePool>,
}

/// One node to create.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeSpec {
    /// Node name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Capacity.
    pub capacity: Capacity,
    /// DRA GPUs.
    pub dra_gpus: DraGpus,
    /// Taints.
    pub taints: Vec<Taint>,
}

impl NodeSpec {
    /// A node with default capacity (and the default 8 DRA GPUs) and only the hostname label.
    pub fn new(name: &str) -> Self {
        let mut labels = BTreeMap::new();
        labels.insert(kwas_api_types::names::labels::HOSTNAME.to_string(), name.to_string());
        NodeSpec {
            name: name.to_string(),
            labels,
            capacity: Capacity::default(),
            dra_gpus: DraGpus::default(),
            taints: Vec::new(),
        }
    }

    /// With these DRA GPUs.
    pub fn with_dra_gpus(mut self, dra_gpus: DraGpus) -> Self {
        self.dra_gpus = dra_gpus;
        self
    }
}

impl Topology {
    /// One pool of `blocks x racks x nodes`.
    pub fn grid(blocks: u32, racks_per_block: u32, nodes_per_rack: u32, capacity: Capacity) -> Self {
        Topology {
            pools: vec![NodePool {
                blocks,
                racks_per_block,
                nodes_per_rack,
                capacity,
                ..Default::default()
            }],
        }
    }

    /// Parses a YAML topology.
    pub fn from_yaml(text: &str) -> Result<Self> {
        let t: Topology = serde_saphyr::from_str(text).map_err(|e| Error::Config(format!("topology: {e}")))?;
        t.validate()?;
        Ok(t)
    }

    /// Checks names and taints.
    pub fn validate(&self) -> Result<()> {
        for p in &self.pools {
            if !workloadbuilder::validation::strings::is_dns1123_label(&p.prefix).is_empty() {
                return Err(Error::Config(format!("pool prefix {:?} must be a DNS label", p.prefix)));
            }
            for t in &p.taints {
                t.validate()?;
            }
            p.dra_gpus.validate(&p.prefix)?;
            for (q, what) in [
                (&p.capacity.cpu, "cpu"),
                (&p.capacity.memory, "memory"),
                (&p.capacity.pods, "pods"),
            ] {
                if q.is_empty() || !q.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                    return Err(Error::Config(format!(
                        "pool {}: {what} capacity {q:?} is not a quantity",
                        p.prefix
                    )));
                }
            }
        }
        Ok(())
    }

    /// The nodes the topology describes.
    pub fn nodes(&self) -> Vec<NodeSpec> {
        use kwas_api_types::names::labels;
        let mut out = Vec::new();
        for p in &self.pools {
            for b in 0..p.blocks {
                let zone = if p.zones.is_empty() {
                    format!("zone-{b}")
                } else {
                    p.zones[(b as usize) % p.zones.len()].clone()
                };
                for r in 0..p.racks_per_block {
                    for n in 0..p.nodes_per_rack {
                        let name = format!("{}-b{b}-r{r}-n{n}", p.prefix);
                        let mut l = p.labels.clone();
                        l.insert(labels::HOSTNAME.into(), name.clone());
                        l.insert(labels::ZONE.into(), zone.clone());
                        let domain = if p.prefix == DEFAULT_PREFIX {
                            String::new()
                        } else {
                            format!("{}-", p.prefix)
                        };
                        l.insert(labels::BLOCK.into(), format!("{domain}b{b}"));
                        l.insert(labels::RACK.into(), format!("{domain}b{b}-r{r}"));
                        out.push(NodeSpec {
                            name,
                            labels: l,
                            capacity: p.capacity.clone(),
                            dra_gpus: p.dra_gpus.clone(),
                            taints: p.taints.clone(),
                        });
                    }
                }
            }
        }
        out
    }
}

/// Command-line flags describing one grid pool (the `devcluster` binary and `kwas dev` share them).
#[derive(Debug, Clone, clap::Args)]
pub struct NodePoolArgs {
    /// Number of blocks.
    #[arg(long, default_value_t = 1)]
    pub blocks: u32,
    /// Racks per block.
    #[arg(long, default_value_t = 2)]
    pub racks_per_block: u32,
    /// Nodes per rack.
    #[arg(long, default_value_t = 4)]
    pub nodes_per_rack: u32,
    /// CPU capacity of each node.
    #[arg(long, default_value = "32")]
    pub cpu: String,
    /// Memory capacity of each node.
    #[arg(long, default_value = "256Gi")]
    pub memory: String,
    /// Pod capacity of each node.
    #[arg(long, default_value = "110")]
    pub pods: String,
    /// `nvidia.com/gpu` devices per node (8 by default, so the bundled GPU examples run; 0 for none).
    #[arg(long, default_value_t = 8)]
    pub gpus: u32,
    /// DRA GPUs per node, published by the simulated DRA driver `gpu.kwas.dev` (model `KW100`, `80Gi`;
    /// separate from `--gpus`; 0 for none, at most 128).
    #[arg(long, default_value_t = 8)]
    pub dra_gpus: u32,
    /// A taint for every node, `key[=value]:Effect` (repeatable).
    #[arg(long = "taint")]
    pub taints: Vec<String>,
    /// A label for every node, `key=value` (repeatable).
    #[arg(long = "node-label")]
    pub labels: Vec<String>,
}

impl NodePoolArgs {
    /// The topology the flags describe.
    pub fn topology(&self) -> Result<Topology> {
        let mut labels = BTreeMap::new();
        for l in &self.labels {
            let (k, v) = l
                .split_once('=')
                .ok_or_else(|| Error::Config(format!("node label {l:?}: expected key=value")))?;
            labels.insert(k.to_string(), v.to_string());
        }
        let taints = self
            .taints
            .iter()
            .map(|t| Taint::parse(t))
            .collect::<Result<Vec<_>>>()?;
        let t = Topology {
            pools: vec![NodePool {
                blocks: self.blocks,
                racks_per_block: self.racks_per_block,
                nodes_per_rack: self.nodes_per_rack,
                capacity: Capacity {
                    cpu: self.cpu.clone(),
                    memory: self.memory.clone(),
                    pods: self.pods.clone(),
                    gpus: self.gpus,
                },
                dra_gpus: DraGpus::with_count(self.dra_gpus),
                labels,
                taints,
                ..Default::default()
            }],
        };
        t.validate()?;
        Ok(t)
    }
}

/// The Node object for a spec: Ready, with capacity, addresses and node info.
pub fn node_object(spec: &NodeSpec, index: usize) -> Value {
    let now = crate::meta::now_rfc3339();
    let mut capacity = json!({
        "cpu": spec.capacity.cpu,
        "memory": spec.capacity.memory,
        "pods": spec.capacity.pods,
        "ephemeral-storage": "500Gi",
    });
    if spec.capacity.gpus > 0 {
        capacity["nvidia.com/gpu"] = json!(spec.capacity.gpus.to_string());
    }
    let mut labels = spec.labels.clone();
    labels
        .entry("kubernetes.io/os".into())
        .or_insert_with(|| "linux".into());
    labels
        .entry("kubernetes.io/arch".into())
        .or_insert_with(|| "amd64".into());
    labels
        .entry(kwas_api_types::names::labels::HOSTNAME.into())
        .or_insert_with(|| spec.name.clone());
    let ip = format!("10.{}.{}.{}", 64 + (index >> 16) % 64, (index >> 8) % 256, index % 256);
    let condition = |ty: &str, status: &str, reason: &str, message: &str| json!({"type": ty, "status": status, "reason": reason, "message": message, "lastHeartbeatTime": now, "lastTransitionTime": now});
    let taints: Vec<Value> = spec
        .taints
        .iter()
        .map(|t| {
            let mut v = json!({"key": t.key, "effect": t.effect});
            if !t.value.is_empty() {
                v["value"] = json!(t.value);
            }
            v
        })
        .collect();
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": spec.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("{:032x}", index),
                "systemUUID": uuid::Uuid::new_v4().to_string(),
                "bootID": uuid::Uuid::new_v4().to_string(),
                "kernelVersion": "6.1.0-kwas",
                "osImage": "kwas devcluster simulated node",
                "containerRuntimeVersion": "kwas-sim://1.0.0",
                "kubeletVersion": crate::KUBE_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }
    });
    if !taints.is_empty() {
        node["spec"]["taints"] = json!(taints);
    }
    if spec.dra_gpus.count > 0 {
        node["metadata"]["annotations"] = json!({
            SIM_DRA_GPUS: spec.dra_gpus.count.to_string(),
            SIM_DRA_GPU_MODEL: spec.dra_gpus.model,
            SIM_DRA_GPU_MEMORY: spec.dra_gpus.memory,
        });
    }
    node
}

/// The device attribute naming the GPUs' interconnect domain (a string: the node's `kwas.dev/rack`
/// label, else the node name), for `matchAttribute` constraints.
pub const DRA_ATTRIBUTE_INTERCONNECT_DOMAIN: &str = "interconnectDomain";

/// The DRA GPUs a node declares (its annotations; none without [`SIM_DRA_GPUS`]). Counts above what one
/// slice holds are capped; a model too long for an attribute or a memory that is no quantity falls back
/// to the default.
pub(crate) fn node_gpus(node: &Value) -> DraGpus {
    let Some(count) = meta::annotation(node, SIM_DRA_GPUS) else {
        return DraGpus::none();
    };
    let default = DraGpus::default();
    let max = u32::try_from(MAX_DEVICES).unwrap_or(u32::MAX);
    DraGpus {
        count: count.trim().parse::<u32>().map_or(0, |n| n.min(max)),
        model: meta::annotation(node, SIM_DRA_GPU_MODEL)
            .filter(|m| !m.is_empty() && m.len() <= MAX_ATTRIBUTE_VALUE_LENGTH)
            .map_or(default.model, str::to_string),
        memory: meta::annotation(node, SIM_DRA_GPU_MEMORY)
            .filter(|m| matches!(kwas_api_types::quantity::parse_units(m), Ok(n) if n > 0))
            .map_or(default.memory, str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_names_and_labels_nodes() {
        let t = Topology::grid(
            2,
            2,
            2,
            Capacity {
                gpus: 8,
                ..Default::default()
            },
        );
        let nodes = t.nodes();
        assert_eq!(nodes.len(), 8);
        let n = &nodes[7];
        assert_eq!(n.name, "node-b1-r1-n1");
        assert_eq!(n.labels["kubernetes.io/hostname"], "node-b1-r1-n1");
        assert_eq!(n.labels["topology.kubernetes.io/zone"], "zone-1");
        assert_eq!(n.labels["kwas.dev/block"], "b1");
        assert_eq!(n.labels["kwas.dev/rack"], "b1-r1");
        let obj = node_object(n, 7);
        assert_eq!(obj["status"]["capacity"]["nvidia.com/gpu"], "8");
        assert_eq!(obj["metadata"]["annotations"][SIM_DRA_GPUS], "8");
        assert_eq!(obj["metadata"]["annotations"][SIM_DRA_GPU_MODEL], "KW100");
        assert_eq!(obj["metadata"]["annotations"][SIM_DRA_GPU_MEMORY], "80Gi");
        let none = node_object(&NodeSpec::new("x").with_dra_gpus(DraGpus::none()), 1);
        assert!(none["metadata"].get("annotations").is_none());
    }

    #[test]
    fn command_line_flags_describe_a_grid() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            pool: NodePoolArgs,
        }
        let cli = Cli::try_parse_from([
            "devcluster",
            "--blocks=2",
            "--nodes-per-rack=1",
            "--gpus=8",
            "--dra-gpus=2",
            "--taint=dedicated=gpu:NoSchedule",
            "--node-label=pool=a",
        ])
        .unwrap();
        let nodes = cli.pool.topology().unwrap().nodes();
        assert_eq!(nodes.len(), 4, "2 blocks x 2 racks (default) x 1 node");
        assert_eq!(nodes[0].capacity.gpus, 8);
        assert_eq!(nodes[0].dra_gpus, DraGpus::with_count(2));
        assert_eq!(nodes[0].labels["pool"], "a");
        assert_eq!(
            nodes[0].taints[0],
            Taint {
                key: "dedicated".into(),
                value: "gpu".into(),
                effect: "NoSchedule".into()
            }
        );
        let bad = Cli::try_parse_from(["devcluster", "--taint=oops"]).unwrap();
        assert!(bad.pool.topology().is_err());
        let too_many = Cli::try_parse_from(["devcluster", "--dra-gpus=129"]).unwrap();
        assert!(too_many.pool.topology().is_err());
    }

    #[test]
    fn yaml_topology_with_taints_and_zones() {
        let t = Topology::from_yaml(
            "pools:\n- prefix: gpu\n  blocks: 3\n  racksPerBlock: 1\n  nodesPerRack: 1\n  zones: [a, b]\n  capacity: {cpu: \"8\", memory: 64Gi, pods: \"110\", gpus: 4}\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n",
        )
        .unwrap();
        let nodes = t.nodes();
        assert_eq!(
            nodes
                .iter()
                .map(|n| n.labels["topology.kubernetes.io/zone"].as_str())
                .collect::<Vec<_>>(),
            vec!["a", "b", "a"]
        );
        assert_eq!(nodes[0].taints[0].effect, "NoSchedule");
        assert!(Topology::from_yaml("pools:\n- taints: [{key: k, effect: Sometimes}]\n").is_err());
        let dra = Topology::from_yaml("pools:\n- draGpus: {count: 4, model: KW200, memory: 40Gi}\n").unwrap();
        assert_eq!(
            dra.nodes()[0].dra_gpus,
            DraGpus {
                count: 4,
                model: "KW200".into(),
                memory: "40Gi".into()
            }
        );
        assert_eq!(
            Topology::from_yaml("pools:\n- {}\n").unwrap().nodes()[0].dra_gpus,
            DraGpus::default()
        );
        assert!(Topology::from_yaml("pools:\n- draGpus: {memory: lots}\n").is_err());
        assert!(Taint::parse("dedicated=gpu:NoSchedule").is_ok());
        assert!(Taint::parse("nokey").is_err());
    }
}
