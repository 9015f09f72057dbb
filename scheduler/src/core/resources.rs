//! Resource vectors: node allocatable, node usage and pod requests.
//!
//! Every resource name gets a small dense index: `cpu` (millicores), `memory` (bytes),
//! `ephemeral-storage` (bytes) and `pods` (count) are fixed; any other name (`nvidia.com/gpu`,
//! `hugepages-2Mi`, ...) is interned on first sight. A node carries dense vectors; a pod carries a sparse
//! list of its non-zero requests, so the fit check touches only what the pod asks for.
//!
//! Pod requests follow upstream's `PodRequests` rule: the sum of the app containers plus the restartable
//! init containers (sidecars), or the largest init-container step if that is bigger (an init container
//! runs next to the sidecars started before it), plus the pod overhead. Pod-level `spec.resources`
//! requests, when set, replace the container sum for the resources they name.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use kwas_api_types::quantity::{QuantityError, parse_cpu_millis, parse_units};

/// Dense index of a resource name within one [`Snapshot`](super::Snapshot).
pub type ResourceIdx = u16;

/// Index of `cpu` (millicores).
pub const CPU: ResourceIdx = 0;
/// Index of `memory` (bytes).
pub const MEMORY: ResourceIdx = 1;
/// Index of `ephemeral-storage` (bytes).
#[allow(dead_code)] // Index 2 is reserved for it; nothing reads it by index yet.
pub const EPHEMERAL_STORAGE: ResourceIdx = 2;
/// Index of `pods` (count; every pod requests one).
pub const PODS: ResourceIdx = 3;

/// CPU a pod with no CPU request is assumed to use when scoring (upstream's non-zero default, 100m).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory a pod with no memory request is assumed to use when scoring (upstream's default, 200Mi).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Interned resource names.
#[derive(Debug, Clone)]
pub struct ResourceNames {
    names: Vec<String>,
    index: HashMap<String, ResourceIdx>,
}

impl Default for ResourceNames {
    fn default() -> Self {
        let mut names = Self {
            names: Vec::new(),
            index: HashMap::new(),
        };
        for n in ["cpu", "memory", "ephemeral-storage", "pods"] {
            names.intern(n);
        }
        names
    }
}

impl ResourceNames {
    /// The index of `name`, interning it if new.
    pub fn intern(&mut self, name: &str) -> ResourceIdx {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as ResourceIdx;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    /// The name at `idx`.
    pub fn name(&self, idx: ResourceIdx) -> &str {
        self.names.get(idx as usize).map(String::as_str).unwrap_or("unknown")
    }

    /// Number of interned names.
    pub fn len(&self) -> usize {
        self.names.len()
    }
}

/// Parses one quantity of resource `name` into the scheduler's integer unit.
pub fn parse_resource(name: &str, q: &Quantity) -> Result<i64, QuantityError> {
    if name == "cpu" {
        parse_cpu_millis(&q.0)
    } else {
        parse_units(&q.0)
    }
}

/// A sparse list of non-zero requests, sorted by resource index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Requests(pub Vec<(ResourceIdx, i64)>);

impl Requests {
    /// The amount requested of `idx` (0 when absent).
    pub fn get(&self, idx: ResourceIdx) -> i64 {
        self.0.iter().find(|(i, _)| *i == idx).map(|(_, v)| *v).unwrap_or(0)
    }

    fn from_map(map: BTreeMap<ResourceIdx, i64>) -> Self {
        Requests(map.into_iter().filter(|(_, v)| *v != 0).collect())
    }
}

/// An error in a pod's resources, with the field path that holds the bad value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceFieldError {
    /// Field path, e.g. `spec.containers[0].resources.requests[cpu]`.
    pub path: String,
    /// The offending value.
    pub value: String,
    /// What is wrong with it.
    pub error: QuantityError,
}

fn add_list(
    names: &mut ResourceNames,
    into: &mut BTreeMap<ResourceIdx, i64>,
    list: Option<&BTreeMap<String, Quantity>>,
    path: &str,
) -> Result<(), ResourceFieldError> {
    for (name, q) in list.into_iter().flatten() {
        let v = parse_resource(name, q).map_err(|error| ResourceFieldError {
            path: format!("{path}[{name}]"),
            value: q.0.clone(),
            error,
        })?;
        let idx = names.intern(name);
        let e = into.entry(idx).or_insert(0);
        *e = e.saturating_add(v);
    }
    Ok(())
}

fn container_requests(
    names: &mut ResourceNames,
    c: &Container,
    path: &str,
) -> Result<BTreeMap<ResourceIdx, i64>, ResourceFieldError> {
    let mut m = BTreeMap::new();
    let res = c.resources.as_ref();
    // Upstream defaults requests to limits when only limits are set.
    let requests = res.and_then(|r| r.requests.as_ref());
    add_list(names, &mut m, requests, &format!("{path}.resources.requests"))?;
    if let Some(limits) = res.and_then(|r| r.limits.as_ref()) {
        for (name, q) in limits {
            if requests.is_some_and(|r| r.contains_key(name)) {
                continue;
            }
            let v = parse_resource(name, q).map_err(|error| ResourceFieldError {
                path: format!("{path}.resources.limits[{name}]"),
                value: q.0.clone(),
                error,
            })?;
            let idx = names.intern(name);
            m.insert(idx, v);
        }
    }
    Ok(m)
}

fn add_into(into: &mut BTreeMap<ResourceIdx, i64>, from: &BTreeMap<ResourceIdx, i64>) {
    for (k, v) in from {
        let e = into.entry(*k).or_insert(0);
        *e = e.saturating_add(*v);
    }
}

fn max_into(into: &mut BTreeMap<ResourceIdx, i64>, from: &BTreeMap<ResourceIdx, i64>) {
    for (k, v) in from {
        let e = into.entry(*k).or_insert(0);
        *e = (*e).max(*v);
    }
}

/// Computes a pod's effective requests (see the module docs), including one `pods` slot.
pub fn pod_requests(names: &mut ResourceNames, spec: &PodSpec) -> Result<Requests, ResourceFieldError> {
    let mut app = BTreeMap::new();
    for (i, c) in spec.containers.iter().enumerate() {
        let r = container_requests(names, c, &format!("spec.containers[{i}]"))?;
        add_into(&mut app, &r);
    }
    let mut sidecars = BTreeMap::new();
    let mut init_peak = BTreeMap::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let r = container_requests(names, c, &format!("spec.initContainers[{i}]"))?;
        if c.restart_policy.as_deref() == Some("Always") {
            add_into(&mut sidecars, &r);
            max_into(&mut init_peak, &sidecars);
        } else {
            let mut step = r;
            add_into(&mut step, &sidecars);
            max_into(&mut init_peak, &step);
        }
    }
    add_into(&mut app, &sidecars);
    max_into(&mut app, &init_peak);
    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        let mut m = BTreeMap::new();
        add_list(names, &mut m, Some(pod_level), "spec.resources.requests")?;
        for (k, v) in m {
            app.insert(k, v);
        }
    }
    let mut overhead = BTreeMap::new();
    add_list(names, &mut overhead, spec.overhead.as_ref(), "spec.overhead")?;
    add_into(&mut app, &overhead);
    app.insert(PODS, 1);
    Ok(Requests::from_map(app))
}

/// Parses a node's allocatable (falling back to capacity) into a dense vector.
pub fn node_allocatable(
    names: &mut ResourceNames,
    allocatable: Option<&BTreeMap<String, Quantity>>,
) -> Result<Vec<i64>, ResourceFieldError> {
    let mut m = BTreeMap::new();
    add_list(names, &mut m, allocatable, "status.allocatable")?;
    let mut v = vec![0i64; names.len()];
    for (k, val) in m {
        if let Some(slot) = v.get_mut(k as usize) {
            *slot = val;
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ResourceRequirements;

    fn container(reqs: &[(&str, &str)]) -> Container {
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(
                    reqs.iter()
                        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn init_container_rule() {
        let mut names = ResourceNames::default();
        let mut init_big = container(&[("cpu", "3")]);
        init_big.name = "init".into();
        let mut sidecar = container(&[("cpu", "500m"), ("memory", "1Gi")]);
        sidecar.restart_policy = Some("Always".into());
        let spec = PodSpec {
            containers: vec![
                container(&[("cpu", "1")]),
                container(&[("cpu", "1"), ("nvidia.com/gpu", "2")]),
            ],
            init_containers: Some(vec![sidecar, init_big]),
            overhead: Some([("cpu".to_string(), Quantity("100m".into()))].into()),
            ..Default::default()
        };
        let r = pod_requests(&mut names, &spec).unwrap();
        // app 2000 + sidecar 500 = 2500; init step 3000 + sidecar 500 = 3500 wins; + overhead 100.
        assert_eq!(r.get(CPU), 3600);
        assert_eq!(r.get(MEMORY), 1 << 30);
        assert_eq!(r.get(PODS), 1);
        let gpu = names.intern("nvidia.com/gpu");
        assert_eq!(r.get(gpu), 2);
    }

    #[test]
    fn limits_default_requests_and_errors_have_paths() {
        let mut names = ResourceNames::default();
        let c = Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                limits: Some([("memory".to_string(), Quantity("2Gi".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let spec = PodSpec {
            containers: vec![c, container(&[("cpu", "lots")])],
            ..Default::default()
        };
        let err = pod_requests(&mut names, &spec).unwrap_err();
        assert_eq!(err.path, "spec.containers[1].resources.requests[cpu]");
        assert_eq!(err.value, "lots");
        let spec = PodSpec {
            containers: vec![spec.containers[0].clone()],
            ..Default::default()
        };
        assert_eq!(pod_requests(&mut names, &spec).unwrap().get(MEMORY), 2 << 30);
    }
}
