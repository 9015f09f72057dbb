//! The EndpointSlice controller (kube-controller-manager's `pkg/controller/endpointslice` with the
//! `k8s.io/endpointslice` reconciler): the discovery.k8s.io/v1 EndpointSlices of every Service with a
//! selector, derived from the store on every pass, so nothing is lost on restart and a slice a client
//! edits or deletes is put back.
//!
//! For each Service with a non-empty selector (not `ExternalName`):
//!
//! - the pods it selects in its namespace that are not terminal (`Succeeded` / `Failed`) and have an IP
//!   (`status.podIPs`, else `status.podIP`) are its endpoints, ready or not (a pod being deleted too);
//!   a pod bound to a node that does not exist is left out unless the Service has
//!   `publishNotReadyAddresses` (upstream's rule);
//! - each endpoint has the pod's IPv4 address, the conditions upstream computes (`serving` = the pod is
//!   Ready, `terminating` = it is being deleted, `ready` = `publishNotReadyAddresses`, or serving and not
//!   terminating), `nodeName`, the node's `topology.kubernetes.io/zone` as `zone`, `targetRef` (kind
//!   `Pod`, namespace, name, uid) and `hostname` = `spec.hostname` when the pod's `spec.subdomain` is the
//!   Service's name (`ShouldSetHostname`);
//! - the ports are the Service's (name, protocol, `appProtocol`, and the port: a numeric `targetPort`,
//!   or the container port a named one finds in the pod, a port the pod lacks being left out), so pods
//!   with different ports go to different slices; a headless Service without ports gets none;
//! - slices hold at most 100 endpoints (`--max-endpoints-per-slice`), named from `generateName:
//!   <service>-`, labelled with the Service's labels, `kubernetes.io/service-name`,
//!   `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io` and, for a headless
//!   Service, `service.kubernetes.io/headless`, controlled by the Service (so the garbage collector
//!   deletes them with it);
//! - the reconciler's steps are upstream's (`reconcileByPortMapping`): existing slices keep the endpoints
//!   still wanted (updated in place when they changed), slices left empty are deleted (or reused for a
//!   slice that would be created), new endpoints fill the slices being updated first, then the unchanged
//!   slice closest to full, then new slices; a Service without endpoints has one placeholder slice with
//!   neither endpoints nor ports; a slice nothing changes is not written;
//! - slices of the Service's name that another Service (an older one of the same name) controls are
//!   deleted; none are created for a Service being deleted.
//!
//! Unlike upstream, whose slices stay when a Service's selector is removed (kubernetes#118376), a Service
//! that has no selector (or becomes `ExternalName`) loses the slices this controller made for it. Not
//! emulated: IPv6 addresses (devcluster's pods have IPv4 ones only, and a Service without `ipFamilies` gets
//! IPv4 slices alone), topology hints, the `endpoints.kubernetes.io/last-change-trigger-time` annotation,
//! Endpoints and their mirroring, events and metrics.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::api::{DeleteOptions, State};
use crate::kinds::endpointslice::{
    CONTROLLER_NAME, LABEL_HEADLESS, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, endpoints, ports,
};
use crate::meta;
use crate::request::RequestContext;
use crate::store::GroupResource;
use crate::views;

/// The field manager of the controller's writes.
const MANAGER: &str = "endpointslice-controller";
/// Endpoints per slice (kube-controller-manager's `--max-endpoints-per-slice` default).
pub(crate) const MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// The zone label of nodes.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

fn gr(group: &str, plural: &str) -> GroupResource {
    GroupResource::new(group, plural)
}

/// One pass over every Service. Returns the Services (namespace, name) some of whose writes failed.
pub(crate) fn sync(state: &mut State) -> BTreeSet<(String, String)> {
    let mut failed = BTreeSet::new();
    if state.builtin("discovery.k8s.io", "endpointslices").is_none() {
        return failed;
    }
    for svc in state.store.list(&gr("", "services"), None) {
        if !sync_service(state, &svc) {
            failed.insert(key_of(&svc));
        }
    }
    failed
}

fn key_of(obj: &Value) -> (String, String) {
    (meta::namespace(obj).to_string(), meta::name(obj).to_string())
}

/// The controller between passes: a pass recomputes only the Services something they read changed for
/// since the previous one, which the store's history of Services, EndpointSlices, pods and nodes tells.
/// The result is the full pass's ([`sync`]): what a Service's slices are derived from is the Service,
/// the pods of its namespace its selector matches (before or after their change), its slices (labelled
/// with its name, before or after) and the existence and zone of nodes (a node created, deleted or
/// re-zoned, rare, runs a full pass). A Service a write failed for is recomputed on the next pass, as the
/// full pass would; a full pass also runs first and whenever the history no longer reaches back to the
/// previous pass.
#[derive(Debug, Default)]
pub(crate) struct EndpointSlices {
    /// The store's resourceVersion up to which every change was accounted for (`None`: next pass is
    /// full).
    synced: Option<u64>,
    /// Services whose last pass had a write fail.
    retry: BTreeSet<(String, String)>,
}

impl EndpointSlices {
    /// One pass over the Services that need one.
    pub(crate) fn sync(&mut self, state: &mut State) {
        if state.builtin("discovery.k8s.io", "endpointslices").is_none() {
            self.synced = None;
            return;
        }
        let dirty = self.synced.and_then(|since| changed_services(state, since));
        let failed = match dirty {
            None => sync(state),
            Some(mut dirty) => {
                dirty.append(&mut self.retry);
                let services = gr("", "services");
                let mut failed = BTreeSet::new();
                for (namespace, name) in dirty {
                    let Some(svc) = state.store.get(&services, &namespace, &name) else {
                        continue;
                    };
                    if !sync_service(state, &svc) {
                        failed.insert((namespace, name));
                    }
                }
                failed
            }
        };
        self.retry = failed;
        // The pass ran under the cluster's lock: its own writes are all the store saw since it began, and
        // they are what it computed.
        self.synced = Some(state.store.current_rv());
    }
}

/// The Services (namespace, name) whose slices may differ from what the pass up to resourceVersion
/// `since` left, or `None` when only a full pass can tell (the history does not reach back, or a node
/// appeared, went or changed zone).
fn changed_services(state: &mut State, since: u64) -> Option<BTreeSet<(String, String)>> {
    let mut out = BTreeSet::new();
    let history = |state: &mut State, plural: &str, group: &str| {
        state.store.events_since(&gr(group, plural), since, usize::MAX).ok()
    };
    let both = |e: &crate::store::StoredEvent| {
        let prev = e.prev.clone();
        std::iter::once(e.object.clone()).chain(prev)
    };
    for e in history(state, "nodes", "")? {
        let zone = |n: &Value| n.pointer("/metadata/labels").and_then(|l| l.get(ZONE_LABEL)).cloned();
        match &e.prev {
            Some(prev) if e.kind == crate::store::EventType::Modified && zone(prev) == zone(&e.object) => {}
            _ => return None,
        }
    }
    for e in history(state, "services", "")? {
        out.insert(key_of(&e.object));
    }
    for e in history(state, "endpointslices", "discovery.k8s.io")? {
        for s in both(&e) {
            if let Some(service) = s
                .pointer("/metadata/labels")
                .and_then(|l| l.get(LABEL_SERVICE_NAME))
                .and_then(Value::as_str)
            {
                out.insert((meta::namespace(&s).to_string(), service.to_string()));
            }
        }
    }
    let pods = history(state, "pods", "")?;
    if pods.is_empty() {
        return Some(out);
    }
    // The selectors of the namespaces' Services, by their first pair: a pod's labels find the Services
    // that may select it.
    let mut selectors: BTreeMap<String, SelectorIndex> = BTreeMap::new();
    for e in pods {
        for p in both(&e) {
            let namespace = meta::namespace(&p);
            if !selectors.contains_key(namespace) {
                let index = SelectorIndex::of(state, namespace);
                selectors.insert(namespace.to_string(), index);
            }
            if let Some(index) = selectors.get(namespace) {
                index.selecting(&p, &mut out);
            }
        }
    }
    Some(out)
}

/// A Service's name and its selector's pairs.
type Selecting = (String, Vec<(String, String)>);

/// The Services of one namespace that have a selector, by their selector's first pair.
#[derive(Debug, Default)]
struct SelectorIndex {
    by_first: std::collections::HashMap<(String, String), Vec<Selecting>>,
}

impl SelectorIndex {
    fn of(state: &State, namespace: &str) -> Self {
        let mut index = SelectorIndex::default();
        for svc in state.store.list(&gr("", "services"), Some(namespace)) {
            let Some(selector) = selector(&svc) else { continue };
            let pairs = selector_pairs(selector);
            let Some(first) = pairs.first().cloned() else { continue };
            index
                .by_first
                .entry(first)
                .or_default()
                .push((meta::name(&svc).to_string(), pairs));
        }
        index
    }

    /// Adds the Services whose selector matches `pod`'s labels to `out`.
    fn selecting(&self, pod: &Value, out: &mut BTreeSet<(String, String)>) {
        let Some(labels) = pod.pointer("/metadata/labels").and_then(Value::as_object) else {
            return;
        };
        for (k, v) in labels {
            let Some(v) = v.as_str() else { continue };
            let Some(services) = self.by_first.get(&(k.clone(), v.to_string())) else {
                continue;
            };
            for (name, pairs) in services {
                if pairs
                    .iter()
                    .all(|(k, v)| labels.get(k).and_then(Value::as_str) == Some(v.as_str()))
                {
                    out.insert((meta::namespace(pod).to_string(), name.clone()));
                }
            }
        }
    }
}

/// A selector's pairs, as [`selected_pods`] matches them (a value that is not a string as `""`).
fn selector_pairs(selector: &Map<String, Value>) -> Vec<(String, String)> {
    selector
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect()
}

/// The Service's selector, when the controller manages its slices (a non-empty selector, not
/// `ExternalName`).
fn selector(svc: &Value) -> Option<&Map<String, Value>> {
    if svc.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        return None;
    }
    svc.pointer("/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
}

/// The slices this controller manages for a Service's name (`kubernetes.io/service-name` and
/// `managed-by` labels), not being deleted.
fn managed_slices(state: &State, namespace: &str, service: &str) -> Vec<Arc<Value>> {
    state
        .store
        .list_labeled(
            &gr("discovery.k8s.io", "endpointslices"),
            Some(namespace),
            LABEL_SERVICE_NAME,
            service,
        )
        .into_iter()
        .filter(|s| {
            meta::string_map(s, "labels").contains(&(LABEL_MANAGED_BY.to_string(), CONTROLLER_NAME.to_string()))
        })
        .filter(|s| !meta::is_deleting(s))
        .collect()
}

fn owned_by(slice: &Value, svc: &Value) -> bool {
    meta::owner_refs(slice)
        .iter()
        .any(|o| o.uid == meta::uid(svc) && o.kind == "Service" && o.api_version == "v1")
}

/// Reconciles one Service's slices; false when a write failed.
fn sync_service(state: &mut State, svc: &Value) -> bool {
    let namespace = meta::namespace(svc).to_string();
    let existing = managed_slices(state, &namespace, meta::name(svc));
    let Some(selector) = selector(svc) else {
        // Deliberately unlike upstream (kubernetes#118376): slices of a Service that no longer selects
        // go.
        let plan = Plan {
            delete: existing.iter().filter(|s| owned_by(s, svc)).cloned().collect(),
            ..Plan::default()
        };
        return apply(state, svc, plan);
    };
    let pods = selected_pods(state, &namespace, selector);
    let mut plan = Plan::default();
    let families = address_types(svc);
    let mut by_type: BTreeMap<String, Vec<Arc<Value>>> = BTreeMap::new();
    for s in existing {
        let ty = s.get("addressType").and_then(Value::as_str).unwrap_or("").to_string();
        if families.contains(ty.as_str()) {
            by_type.entry(ty).or_default().push(s);
        } else {
            plan.delete.push(s);
        }
    }
    for ty in families {
        let existing = by_type.remove(ty).unwrap_or_default();
        let desired = desired_endpoints(state, svc, &pods, ty);
        reconcile_address_type(svc, ty, existing, desired, &mut plan);
    }
    apply(state, svc, plan)
}

/// The pods of `namespace` whose labels include every pair of `selector`.
fn selected_pods(state: &State, namespace: &str, selector: &Map<String, Value>) -> Vec<Arc<Value>> {
    let pairs: Vec<(&str, &str)> = selector
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    let Some((k, v)) = pairs.first() else {
        return Vec::new();
    };
    state
        .store
        .list_labeled(&gr("", "pods"), Some(namespace), k, v)
        .into_iter()
        .filter(|p| {
            let labels = p.pointer("/metadata/labels").and_then(Value::as_object);
            pairs
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(*k)).and_then(Value::as_str) == Some(*v))
        })
        .collect()
}

/// The address types of a Service's slices (`getAddressTypesForService`): its `ipFamilies`; without
/// them, devcluster being single-stack IPv4, `IPv4`.
fn address_types(svc: &Value) -> BTreeSet<&'static str> {
    let families = meta::string_list(svc.pointer("/spec/ipFamilies"));
    let mut out = BTreeSet::new();
    for f in &families {
        match f.as_str() {
            "IPv4" => {
                out.insert("IPv4");
            }
            "IPv6" => {
                out.insert("IPv6");
            }
            _ => {}
        }
    }
    if out.is_empty() {
        out.insert("IPv4");
    }
    out
}

/// The endpoints the Service wants, by port set: `(the ports' key, the ports, endpoints by identity)`.
type Desired = BTreeMap<String, (Vec<Value>, BTreeMap<String, Value>)>;

fn desired_endpoints(state: &State, svc: &Value, pods: &[Arc<Value>], address_type: &str) -> Desired {
    let publish_not_ready = svc
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut desired: Desired = BTreeMap::new();
    for pod in pods {
        if !should_be_in_endpoints(pod) {
            continue;
        }
        let node_name = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        let node = state.store.get(&gr("", "nodes"), "", node_name);
        if node.is_none() && !publish_not_ready {
            continue;
        }
        let ports = endpoint_ports(svc, pod);
        let key = ports_key(&ports);
        let Some(endpoint) = pod_to_endpoint(pod, node.as_deref(), svc, address_type, publish_not_ready) else {
            continue;
        };
        desired
            .entry(key)
            .or_insert_with(|| (ports, BTreeMap::new()))
            .1
            .insert(endpoint_key(&endpoint), endpoint);
    }
    desired
}

/// `ShouldPodBeInEndpoints(pod, includeTerminating=true)`: not terminal, with an IP.
fn should_be_in_endpoints(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if matches!(phase, "Succeeded" | "Failed") {
        return false;
    }
    !pod_ips(pod).is_empty()
}

fn pod_ips(pod: &Value) -> Vec<String> {
    let ips: Vec<String> = pod
        .pointer("/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("ip").and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if !ips.is_empty() {
        return ips;
    }
    pod.pointer("/status/podIP")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| vec![s.to_string()])
        .unwrap_or_default()
}

/// `podToEndpoint`, or `None` when the pod has no address of the type.
fn pod_to_endpoint(
    pod: &Value,
    node: Option<&Value>,
    svc: &Value,
    address_type: &str,
    publish_not_ready: bool,
) -> Option<Value> {
    let addresses: Vec<String> = pod_ips(pod)
        .into_iter()
        .filter_map(|ip| {
            let parsed: std::net::IpAddr = ip.parse().ok()?;
            match (parsed, address_type) {
                (std::net::IpAddr::V4(v4), "IPv4") => Some(v4.to_string()),
                (std::net::IpAddr::V6(v6), "IPv6") => Some(v6.to_string()),
                _ => None,
            }
        })
        .collect();
    if addresses.is_empty() {
        return None;
    }
    let serving = views::pod_is_ready(pod);
    let terminating = meta::is_deleting(pod);
    let ready = publish_not_ready || (serving && !terminating);
    let mut ep = json!({
        "addresses": addresses,
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {
            "kind": "Pod",
            "namespace": meta::namespace(pod),
            "name": meta::name(pod),
            "uid": meta::uid(pod),
        },
    });
    let node_name = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if !node_name.is_empty() {
        ep["nodeName"] = json!(node_name);
    }
    if let Some(zone) = node
        .and_then(|n| n.pointer("/metadata/labels"))
        .and_then(|l| l.get(ZONE_LABEL))
        .and_then(Value::as_str)
        .filter(|z| !z.is_empty())
    {
        ep["zone"] = json!(zone);
    }
    // `ShouldSetHostname`.
    let hostname = pod.pointer("/spec/hostname").and_then(Value::as_str).unwrap_or("");
    let subdomain = pod.pointer("/spec/subdomain").and_then(Value::as_str).unwrap_or("");
    if !hostname.is_empty() && subdomain == meta::name(svc) && meta::namespace(svc) == meta::namespace(pod) {
        ep["hostname"] = json!(hostname);
    }
    Some(ep)
}

/// `getEndpointPorts`: the Service's ports as the pod serves them.
fn endpoint_ports(svc: &Value, pod: &Value) -> Vec<Value> {
    let service_ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut out = Vec::new();
    for sp in service_ports {
        let protocol = sp.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
        let number = match sp.get("targetPort") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(name)) => find_named_port(pod, name, protocol),
            // `targetPort` defaults to `port`.
            _ => sp.get("port").and_then(Value::as_i64),
        };
        let Some(number) = number else { continue };
        let mut p = json!({
            "name": sp.get("name").and_then(Value::as_str).unwrap_or(""),
            "port": number,
            "protocol": protocol,
        });
        if let Some(app) = sp.get("appProtocol").and_then(Value::as_str) {
            p["appProtocol"] = json!(app);
        }
        out.push(p);
    }
    out
}

/// `FindPort` for a named target port: a container port of that name and protocol (sidecars, init
/// containers that restart `Always`, too).
fn find_named_port(pod: &Value, name: &str, protocol: &str) -> Option<i64> {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let sidecars = pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"));
    containers
        .chain(sidecars)
        .flat_map(|c| c.get("ports").and_then(Value::as_array).into_iter().flatten())
        .find(|p| {
            p.get("name").and_then(Value::as_str) == Some(name)
                && p.get("protocol").and_then(Value::as_str).unwrap_or("TCP") == protocol
        })
        .and_then(|p| p.get("containerPort"))
        .and_then(Value::as_i64)
}

/// A port set's identity, whatever the order (`NewPortMapKey`).
fn ports_key(ports: &[Value]) -> String {
    let s = |p: &Value, k: &str| match p.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "-".to_string(),
    };
    let mut parts: Vec<String> = ports
        .iter()
        .map(|p| {
            format!(
                "{}/{}/{}/{}",
                s(p, "name"),
                s(p, "port"),
                s(p, "protocol"),
                s(p, "appProtocol")
            )
        })
        .collect();
    parts.sort();
    parts.join(",")
}

/// An endpoint's identity (`hashEndpoint`): its target, hostname and addresses. Ordered by the target's
/// name, so slices list pods in name order.
fn endpoint_key(ep: &Value) -> String {
    let mut addresses = meta::string_list(ep.get("addresses"));
    addresses.sort();
    let target = |k: &str| {
        ep.pointer(&format!("/targetRef/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        target("name"),
        target("namespace"),
        ep.get("hostname").and_then(Value::as_str).unwrap_or(""),
        addresses.join(",")
    )
}

/// What one pass writes for a Service.
#[derive(Debug, Default)]
struct Plan {
    /// New slices.
    create: Vec<Value>,
    /// Changed slices (the stored object with its new content).
    update: Vec<Value>,
    /// Slices to delete.
    delete: Vec<Arc<Value>>,
}

/// The labels of a Service's slices (`setEndpointSliceLabels`).
fn slice_labels(svc: &Value) -> Map<String, Value> {
    let mut labels: Map<String, Value> = svc
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|l| {
            l.iter()
                .filter(|(k, _)| ![LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS].contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let cluster_ip = svc.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or("");
    if cluster_ip.is_empty() || cluster_ip == "None" {
        labels.insert(LABEL_HEADLESS.into(), json!(""));
    }
    labels.insert(LABEL_SERVICE_NAME.into(), json!(meta::name(svc)));
    labels.insert(LABEL_MANAGED_BY.into(), json!(CONTROLLER_NAME));
    labels
}

/// `newEndpointSlice`: an unnamed slice of the Service.
fn new_slice(svc: &Value, address_type: &str, ports: &[Value]) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": format!("{}-", meta::name(svc)),
            "namespace": meta::namespace(svc),
            "labels": slice_labels(svc),
            "ownerReferences": [{
                "apiVersion": "v1",
                "kind": "Service",
                "name": meta::name(svc),
                "uid": meta::uid(svc),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "addressType": address_type,
        "endpoints": [],
        "ports": ports,
    })
}

fn labels_of(slice: &Value) -> Map<String, Value> {
    slice
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn set_endpoints(slice: &mut Value, eps: Vec<Value>) {
    slice["endpoints"] = Value::Array(eps);
}

fn endpoint_count(slice: &Value) -> usize {
    endpoints(slice).len()
}

/// Fills `slice` from `desired` (in identity order) up to [`MAX_ENDPOINTS_PER_SLICE`].
fn fill(slice: &mut Value, desired: &mut BTreeMap<String, Value>) {
    let mut eps = endpoints(slice).to_vec();
    while eps.len() < MAX_ENDPOINTS_PER_SLICE {
        let Some((_, ep)) = desired.pop_first() else { break };
        eps.push(ep);
    }
    set_endpoints(slice, eps);
}

/// `reconcileByAddressType` for one address type, adding to `plan`.
fn reconcile_address_type(
    svc: &Value,
    address_type: &str,
    existing: Vec<Arc<Value>>,
    desired: Desired,
    plan: &mut Plan,
) {
    let labels = slice_labels(svc);
    let existing_count = existing.len();
    let mut delete: Vec<Arc<Value>> = Vec::new();
    let mut create: Vec<Value> = Vec::new();
    let mut update: Vec<Value> = Vec::new();
    let mut existing_by_ports: BTreeMap<String, Vec<Arc<Value>>> = BTreeMap::new();
    for s in existing {
        if owned_by(&s, svc) {
            existing_by_ports.entry(ports_key(ports(&s))).or_default().push(s);
        } else {
            delete.push(s);
        }
    }
    for (key, (port_list, mut wanted)) in desired {
        let slices = existing_by_ports.remove(&key).unwrap_or_default();
        let (c, u, d) = reconcile_by_ports(svc, address_type, &labels, slices, &mut wanted, &port_list);
        create.extend(c);
        update.extend(u);
        delete.extend(d);
    }
    // Port sets no longer wanted.
    delete.extend(existing_by_ports.into_values().flatten());
    // A Service without endpoints keeps one placeholder slice.
    if existing_count == delete.len() && create.is_empty() {
        let placeholder = new_slice(svc, address_type, &[]);
        let is_placeholder = |s: &Value| {
            meta::namespace(s) == meta::namespace(&placeholder)
                && labels_of(s) == labels
                && s.get("addressType") == placeholder.get("addressType")
                && endpoints(s).is_empty()
                && ports(s).is_empty()
        };
        if delete.len() == 1 && is_placeholder(&delete[0]) {
            delete.clear();
        } else {
            create.push(placeholder);
        }
    }
    // `finalize`: slices to create take the place of owned slices that would be deleted.
    let mut i = 0;
    while i < delete.len() && !create.is_empty() {
        let victim = &delete[i];
        if victim.get("addressType").and_then(Value::as_str) == Some(address_type) && owned_by(victim, svc) {
            let Some(mut replacement) = create.pop() else { break };
            let m = meta::metadata_mut(&mut replacement);
            m.remove("generateName");
            m.insert("name".into(), json!(meta::name(victim)));
            m.insert("resourceVersion".into(), json!(meta::resource_version(victim)));
            update.push(replacement);
            delete.remove(i);
        } else {
            i += 1;
        }
    }
    plan.create.extend(create);
    plan.update.extend(update);
    plan.delete.extend(delete);
}

/// `reconcileByPortMapping`: `(create, update, delete)` for the slices of one port set.
fn reconcile_by_ports(
    svc: &Value,
    address_type: &str,
    labels: &Map<String, Value>,
    existing: Vec<Arc<Value>>,
    wanted: &mut BTreeMap<String, Value>,
    port_list: &[Value],
) -> (Vec<Value>, Vec<Value>, Vec<Arc<Value>>) {
    let mut unchanged: BTreeMap<String, Value> = BTreeMap::new();
    let mut to_update: BTreeMap<String, Value> = BTreeMap::new();
    let mut to_delete: Vec<Arc<Value>> = Vec::new();
    // 1. Keep the endpoints still wanted, in their new form.
    for s in existing {
        let mut kept = Vec::new();
        let mut changed = false;
        for ep in endpoints(&s) {
            if let Some(want) = wanted.remove(&endpoint_key(ep)) {
                if &want != ep {
                    changed = true;
                }
                kept.push(want);
            }
        }
        let labels_changed = &labels_of(&s) != labels;
        if changed || kept.len() != endpoint_count(&s) {
            if kept.is_empty() {
                to_delete.push(s);
            } else {
                let mut copy = (*s).clone();
                set_endpoints(&mut copy, kept);
                copy["metadata"]["labels"] = Value::Object(labels.clone());
                to_update.insert(meta::name(&s).to_string(), copy);
            }
        } else if labels_changed {
            let mut copy = (*s).clone();
            copy["metadata"]["labels"] = Value::Object(labels.clone());
            to_update.insert(meta::name(&s).to_string(), copy);
        } else {
            unchanged.insert(meta::name(&s).to_string(), (*s).clone());
        }
    }
    // 2. Fill the slices being updated, the fullest first.
    if !wanted.is_empty() && !to_update.is_empty() {
        let mut names: Vec<(usize, String)> = to_update.iter().map(|(n, s)| (endpoint_count(s), n.clone())).collect();
        names.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (_, n) in names {
            if let Some(s) = to_update.get_mut(&n) {
                fill(s, wanted);
            }
        }
    }
    // 3. The rest into the unchanged slice that ends closest to full, else into new slices.
    let mut create = Vec::new();
    while !wanted.is_empty() {
        let mut target: Option<String> = None;
        if wanted.len() < MAX_ENDPOINTS_PER_SLICE && !unchanged.is_empty() {
            let mut closest = MAX_ENDPOINTS_PER_SLICE;
            for (n, s) in &unchanged {
                let total = wanted.len().saturating_add(endpoint_count(s));
                if total <= MAX_ENDPOINTS_PER_SLICE {
                    let diff = MAX_ENDPOINTS_PER_SLICE - total;
                    if diff < closest {
                        closest = diff;
                        target = Some(n.clone());
                    }
                }
            }
        }
        match target.and_then(|n| unchanged.remove(&n).map(|s| (n, s))) {
            Some((n, mut s)) => {
                fill(&mut s, wanted);
                to_update.insert(n, s);
            }
            None => {
                let mut s = new_slice(svc, address_type, port_list);
                fill(&mut s, wanted);
                create.push(s);
            }
        }
    }
    (create, to_update.into_values().collect(), to_delete)
}

/// `finalize`: creates (none for a Service being deleted), updates, deletes. False when a write failed.
fn apply(state: &mut State, svc: &Value, plan: Plan) -> bool {
    let Some(res) = state.builtin("discovery.k8s.io", "endpointslices") else {
        return true;
    };
    let mut ok = true;
    let namespace = meta::namespace(svc).to_string();
    if !meta::is_deleting(svc) {
        for slice in plan.create {
            if let Err(e) = state.create(&res, &namespace, slice, &mut RequestContext::manager(MANAGER)) {
                tracing::debug!(service = %meta::name(svc), error = %e, "creating an EndpointSlice failed");
                ok = false;
            }
        }
    }
    for slice in plan.update {
        let name = meta::name(&slice).to_string();
        if let Err(e) = state.update(
            &res,
            &namespace,
            &name,
            slice,
            None,
            &mut RequestContext::manager(MANAGER),
        ) {
            tracing::debug!(service = %meta::name(svc), slice = %name, error = %e, "updating an EndpointSlice failed");
            ok = false;
        }
    }
    for slice in plan.delete {
        let opts = DeleteOptions {
            precondition_uid: Some(meta::uid(&slice).to_string()),
            ..Default::default()
        };
        if let Err(e) = state.delete(&res, &namespace, meta::name(&slice), &opts) {
            tracing::debug!(service = %meta::name(svc), slice = %meta::name(&slice), error = %e, "deleting an EndpointSlice failed");
            ok = false;
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> RequestContext {
        RequestContext::manager("t")
    }

    fn service(state: &mut State, name: &str, spec: Value) -> Arc<Value> {
        let res = state.builtin("", "services").unwrap();
        state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": name}, "spec": spec}),
                &mut ctx(),
            )
            .unwrap()
    }

    /// A pod on `node` with an IP, Ready or not, as a kubelet reports it.
    fn pod(state: &mut State, name: &str, labels: Value, spec: Value, ready: bool, ip: &str) {
        let res = state.builtin("", "pods").unwrap();
        let mut spec = spec;
        if spec.get("containers").is_none() {
            spec["containers"] = json!([{"name": "c", "image": "i"}]);
        }
        let created = state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": name, "labels": labels}, "spec": spec}),
                &mut ctx(),
            )
            .unwrap();
        let mut running = (*created).clone();
        running["status"] = json!({"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]});
        state
            .update(&res, "default", name, running, Some("status"), &mut ctx())
            .unwrap();
    }

    fn node(state: &mut State, name: &str, zone: &str) {
        let res = state.builtin("", "nodes").unwrap();
        state
            .create(
                &res,
                "",
                json!({"metadata": {"name": name, "labels": {ZONE_LABEL: zone}}}),
                &mut ctx(),
            )
            .unwrap();
    }

    fn slices(state: &State, service: &str) -> Vec<Arc<Value>> {
        managed_slices(state, "default", service)
    }

    #[test]
    fn a_headless_service_publishing_not_ready_addresses_lists_its_pods_with_hostnames() {
        let mut state = State::new(1000, Default::default());
        node(&mut state, "n1", "zone-a");
        let svc = service(
            &mut state,
            "js",
            json!({"clusterIP": "None", "selector": {"app": "js"}, "publishNotReadyAddresses": true}),
        );
        for (i, ip) in ["10.244.0.1", "10.244.0.2"].iter().enumerate() {
            pod(
                &mut state,
                &format!("js-w-0-{i}"),
                json!({"app": "js"}),
                json!({"nodeName": "n1", "hostname": format!("w-{i}"), "subdomain": "js"}),
                false,
                ip,
            );
        }
        pod(
            &mut state,
            "other",
            json!({"app": "x"}),
            json!({"nodeName": "n1"}),
            true,
            "10.244.0.9",
        );
        sync(&mut state);
        let all = slices(&state, "js");
        assert_eq!(all.len(), 1);
        let s = &all[0];
        assert!(
            meta::name(s).starts_with("js-") && meta::name(s).len() == "js-".len() + 5,
            "{}",
            meta::name(s)
        );
        assert_eq!(s["addressType"], "IPv4");
        assert_eq!(s["ports"], Value::Null);
        assert_eq!(s["metadata"]["labels"][LABEL_HEADLESS], "");
        assert_eq!(s["metadata"]["labels"][LABEL_SERVICE_NAME], "js");
        assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], meta::uid(&svc));
        assert_eq!(s["metadata"]["ownerReferences"][0]["controller"], true);
        let eps = endpoints(s);
        assert_eq!(eps.len(), 2);
        assert_eq!(eps[0]["hostname"], "w-0");
        assert_eq!(eps[0]["addresses"], json!(["10.244.0.1"]));
        assert_eq!(
            eps[0]["conditions"],
            json!({"ready": true, "serving": false, "terminating": false})
        );
        assert_eq!(eps[0]["nodeName"], "n1");
        assert_eq!(eps[0]["zone"], "zone-a");
        assert_eq!(eps[0]["targetRef"]["kind"], "Pod");
        assert_eq!(eps[0]["targetRef"]["name"], "js-w-0-0");
        assert_eq!(eps[1]["hostname"], "w-1");
        // A second pass changes nothing.
        let rv = meta::resource_version(s).to_string();
        sync(&mut state);
        let again = slices(&state, "js");
        assert_eq!(meta::resource_version(&again[0]), rv);
    }

    #[test]
    fn ports_follow_the_service_and_unready_pods_are_not_ready() {
        let mut state = State::new(1000, Default::default());
        node(&mut state, "n1", "zone-a");
        service(
            &mut state,
            "web",
            json!({"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "metrics", "port": 9000, "targetPort": "metrics"}]}),
        );
        let with_metrics = json!({"nodeName": "n1", "hostname": "h", "subdomain": "other",
            "containers": [{"name": "c", "image": "i", "ports": [{"name": "metrics", "containerPort": 9100}]}]});
        pod(&mut state, "a", json!({"app": "web"}), with_metrics, true, "10.244.0.1");
        pod(
            &mut state,
            "b",
            json!({"app": "web"}),
            json!({"nodeName": "n1"}),
            false,
            "10.244.0.2",
        );
        sync(&mut state);
        let all = slices(&state, "web");
        assert_eq!(all.len(), 2, "pods with different ports get different slices");
        let by_ports = |n: usize| all.iter().find(|s| ports(s).len() == n).unwrap().clone();
        let two = by_ports(2);
        assert_eq!(
            two["ports"],
            json!([{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9100, "protocol": "TCP"}])
        );
        assert_eq!(endpoints(&two)[0]["conditions"]["ready"], true);
        assert!(
            endpoints(&two)[0].get("hostname").is_none(),
            "the subdomain is another service's"
        );
        assert!(two["metadata"]["labels"].get(LABEL_HEADLESS).is_none());
        let one = by_ports(1);
        assert_eq!(endpoints(&one)[0]["targetRef"]["name"], "b");
        assert_eq!(
            endpoints(&one)[0]["conditions"],
            json!({"ready": false, "serving": false, "terminating": false})
        );
    }

    #[test]
    fn slices_hold_at_most_100_endpoints_and_shrink_to_a_placeholder() {
        let mut state = State::new(10_000, Default::default());
        node(&mut state, "n1", "zone-a");
        service(
            &mut state,
            "big",
            json!({"selector": {"app": "big"}, "ports": [{"port": 80}]}),
        );
        for i in 0..150 {
            pod(
                &mut state,
                &format!("p{i:03}"),
                json!({"app": "big"}),
                json!({"nodeName": "n1"}),
                true,
                &format!("10.244.{}.{}", i / 200, i % 200 + 1),
            );
        }
        sync(&mut state);
        let mut sizes: Vec<usize> = slices(&state, "big").iter().map(|s| endpoint_count(s)).collect();
        sizes.sort();
        assert_eq!(sizes, vec![50, 100]);
        let pods = state.builtin("", "pods").unwrap();
        let now = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        for i in 0..150 {
            state.delete(&pods, "default", &format!("p{i:03}"), &now).unwrap();
        }
        sync(&mut state);
        let left = slices(&state, "big");
        assert_eq!(left.len(), 1, "one placeholder");
        assert_eq!(left[0]["endpoints"], Value::Null);
        assert_eq!(left[0]["ports"], Value::Null);
        let rv = meta::resource_version(&left[0]).to_string();
        sync(&mut state);
        assert_eq!(
            meta::resource_version(&slices(&state, "big")[0]),
            rv,
            "the placeholder stays"
        );
    }

    #[test]
    fn terminal_pods_pods_on_missing_nodes_and_selectorless_services_get_nothing() {
        let mut state = State::new(1000, Default::default());
        node(&mut state, "n1", "zone-a");
        service(
            &mut state,
            "web",
            json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}),
        );
        pod(
            &mut state,
            "gone-node",
            json!({"app": "web"}),
            json!({"nodeName": "nope"}),
            true,
            "10.244.0.1",
        );
        pod(
            &mut state,
            "done",
            json!({"app": "web"}),
            json!({"nodeName": "n1"}),
            true,
            "10.244.0.2",
        );
        let pods = state.builtin("", "pods").unwrap();
        let mut done = (*state.store.get(&gr("", "pods"), "default", "done").unwrap()).clone();
        done["status"]["phase"] = json!("Succeeded");
        state
            .update(&pods, "default", "done", done, Some("status"), &mut ctx())
            .unwrap();
        sync(&mut state);
        let all = slices(&state, "web");
        assert_eq!(all.len(), 1);
        assert!(endpoints(&all[0]).is_empty(), "{}", all[0]);
        // The selector goes: so do the slices.
        let services = state.builtin("", "services").unwrap();
        let mut svc = (*state.store.get(&gr("", "services"), "default", "web").unwrap()).clone();
        svc["spec"]["selector"] = Value::Null;
        state
            .update(&services, "default", "web", svc, None, &mut ctx())
            .unwrap();
        sync(&mut state);
        assert!(slices(&state, "web").is_empty());
    }

    #[test]
    fn an_edited_slice_is_put_back_and_a_terminating_pod_is_not_ready() {
        let mut state = State::new(1000, Default::default());
        node(&mut state, "n1", "zone-a");
        service(
            &mut state,
            "web",
            json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}),
        );
        pod(
            &mut state,
            "a",
            json!({"app": "web"}),
            json!({"nodeName": "n1"}),
            true,
            "10.244.0.1",
        );
        sync(&mut state);
        let res = state.builtin("discovery.k8s.io", "endpointslices").unwrap();
        let s = slices(&state, "web")[0].clone();
        let mut edited = (*s).clone();
        edited["endpoints"] = json!([{"addresses": ["10.9.9.9"]}]);
        state
            .update(&res, "default", meta::name(&s), edited, None, &mut ctx())
            .unwrap();
        sync(&mut state);
        let fixed = slices(&state, "web");
        assert_eq!(fixed.len(), 1);
        assert_eq!(endpoints(&fixed[0])[0]["addresses"], json!(["10.244.0.1"]));
        // Deleted with a grace period (and no kubelet to stop it), the pod stays: terminating and not
        // ready, but still serving.
        let pods = state.builtin("", "pods").unwrap();
        state.delete(&pods, "default", "a", &Default::default()).unwrap();
        assert!(meta::is_deleting(
            &state.store.get(&gr("", "pods"), "default", "a").unwrap()
        ));
        sync(&mut state);
        let s = slices(&state, "web");
        assert_eq!(
            endpoints(&s[0])[0]["conditions"],
            json!({"ready": false, "serving": true, "terminating": true})
        );
    }

    /// A full pass after `slices`' incremental one finds nothing to write: both leave the same slices.
    fn full_pass_agrees(state: &mut State) {
        let rv = state.store.current_rv();
        assert!(sync(state).is_empty());
        assert_eq!(
            state.store.current_rv(),
            rv,
            "the full pass wrote what the incremental one missed"
        );
    }

    fn relabel(state: &mut State, name: &str, labels: Value) {
        let res = state.builtin("", "pods").unwrap();
        let mut p = (*state.store.get(&gr("", "pods"), "default", name).unwrap()).clone();
        p["metadata"]["labels"] = labels;
        state.update(&res, "default", name, p, None, &mut ctx()).unwrap();
    }

    fn endpoint_names(state: &State, service: &str) -> Vec<String> {
        let mut names: Vec<String> = slices(state, service)
            .iter()
            .flat_map(|s| endpoints(s).to_vec())
            .map(|ep| ep["targetRef"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn incremental_passes_follow_pods_services_slices_and_nodes() {
        let mut state = State::new(1000, Default::default());
        let mut inc = EndpointSlices::default();
        node(&mut state, "n1", "zone-a");
        node(&mut state, "n2", "zone-b");
        service(
            &mut state,
            "web",
            json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}),
        );
        service(
            &mut state,
            "db",
            json!({"selector": {"app": "db", "tier": "x"}, "ports": [{"port": 5432}]}),
        );
        pod(
            &mut state,
            "a",
            json!({"app": "web"}),
            json!({"nodeName": "n1"}),
            true,
            "10.244.0.1",
        );
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "web"), ["a"]);
        assert_eq!(slices(&state, "db").len(), 1, "a placeholder");
        full_pass_agrees(&mut state);
        // Nothing changed: nothing written.
        let rv = state.store.current_rv();
        inc.sync(&mut state);
        assert_eq!(state.store.current_rv(), rv);
        // A new pod is picked up.
        pod(
            &mut state,
            "b",
            json!({"app": "web"}),
            json!({"nodeName": "n2"}),
            true,
            "10.244.0.2",
        );
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "web"), ["a", "b"]);
        full_pass_agrees(&mut state);
        // A pod leaving one selection for another (only one of the other's two pairs first).
        relabel(&mut state, "a", json!({"app": "db"}));
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "web"), ["b"]);
        assert!(endpoint_names(&state, "db").is_empty());
        full_pass_agrees(&mut state);
        relabel(&mut state, "a", json!({"tier": "x", "app": "db"}));
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "db"), ["a"]);
        full_pass_agrees(&mut state);
        // A pod's status.
        let res = state.builtin("", "pods").unwrap();
        let mut b = (*state.store.get(&gr("", "pods"), "default", "b").unwrap()).clone();
        b["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        state
            .update(&res, "default", "b", b, Some("status"), &mut ctx())
            .unwrap();
        inc.sync(&mut state);
        assert_eq!(endpoints(&slices(&state, "web")[0])[0]["conditions"]["ready"], false);
        full_pass_agrees(&mut state);
        // A node changing zone, then going.
        let nodes = state.builtin("", "nodes").unwrap();
        let mut n2 = (*state.store.get(&gr("", "nodes"), "", "n2").unwrap()).clone();
        n2["metadata"]["labels"][ZONE_LABEL] = json!("zone-c");
        state.update(&nodes, "", "n2", n2, None, &mut ctx()).unwrap();
        inc.sync(&mut state);
        assert_eq!(endpoints(&slices(&state, "web")[0])[0]["zone"], "zone-c");
        full_pass_agrees(&mut state);
        let now = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        state.delete(&nodes, "", "n2", &now).unwrap();
        inc.sync(&mut state);
        assert!(endpoint_names(&state, "web").is_empty(), "b's node is gone");
        full_pass_agrees(&mut state);
        // A slice a client edits, then deletes, is put back.
        let slice_res = state.builtin("discovery.k8s.io", "endpointslices").unwrap();
        let s = slices(&state, "db")[0].clone();
        let mut edited = (*s).clone();
        edited["endpoints"] = json!([]);
        state
            .update(&slice_res, "default", meta::name(&s), edited, None, &mut ctx())
            .unwrap();
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "db"), ["a"]);
        full_pass_agrees(&mut state);
        let s = slices(&state, "db")[0].clone();
        state.delete(&slice_res, "default", meta::name(&s), &now).unwrap();
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "db"), ["a"]);
        full_pass_agrees(&mut state);
        // A pod deleted.
        state.delete(&res, "default", "a", &now).unwrap();
        inc.sync(&mut state);
        assert!(endpoint_names(&state, "db").is_empty());
        assert_eq!(slices(&state, "db").len(), 1, "a placeholder");
        full_pass_agrees(&mut state);
        // A Service's new selector.
        let services = state.builtin("", "services").unwrap();
        let mut web = (*state.store.get(&gr("", "services"), "default", "web").unwrap()).clone();
        web["spec"]["selector"] = json!({"app": "web2"});
        state
            .update(&services, "default", "web", web, None, &mut ctx())
            .unwrap();
        pod(
            &mut state,
            "c",
            json!({"app": "web2"}),
            json!({"nodeName": "n1"}),
            true,
            "10.244.0.3",
        );
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "web"), ["c"]);
        full_pass_agrees(&mut state);
    }

    #[test]
    fn only_the_services_a_change_concerns_are_recomputed() {
        let mut state = State::new(1000, Default::default());
        node(&mut state, "n1", "zone-a");
        service(
            &mut state,
            "web",
            json!({"selector": {"app": "web"}, "clusterIP": "None"}),
        );
        service(
            &mut state,
            "db",
            json!({"selector": {"app": "db"}, "clusterIP": "None"}),
        );
        let key = |n: &str| ("default".to_string(), n.to_string());
        let since = state.store.current_rv();
        pod(
            &mut state,
            "a",
            json!({"app": "web", "x": "y"}),
            json!({"nodeName": "n1"}),
            true,
            "10.244.0.1",
        );
        pod(&mut state, "z", json!({"other": "web"}), json!({}), true, "10.244.0.2");
        assert_eq!(changed_services(&mut state, since), Some([key("web")].into()));
        // A node's status (not its zone) concerns no Service; a new node, every one.
        let since = state.store.current_rv();
        let nodes = state.builtin("", "nodes").unwrap();
        let mut n1 = (*state.store.get(&gr("", "nodes"), "", "n1").unwrap()).clone();
        n1["status"] = json!({"conditions": [{"type": "Ready", "status": "Unknown"}]});
        state.update(&nodes, "", "n1", n1, Some("status"), &mut ctx()).unwrap();
        assert_eq!(changed_services(&mut state, since), Some(BTreeSet::new()));
        node(&mut state, "n2", "zone-b");
        assert_eq!(changed_services(&mut state, since), None);
    }

    #[test]
    fn a_history_that_no_longer_reaches_the_last_pass_runs_a_full_one() {
        let mut state = State::new(2, Default::default());
        let mut inc = EndpointSlices::default();
        node(&mut state, "n1", "zone-a");
        service(
            &mut state,
            "web",
            json!({"selector": {"app": "web"}, "clusterIP": "None"}),
        );
        inc.sync(&mut state);
        let since = state.store.current_rv();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            pod(
                &mut state,
                name,
                json!({"app": "web"}),
                json!({"nodeName": "n1"}),
                true,
                &format!("10.244.0.{}", i + 1),
            );
        }
        assert_eq!(changed_services(&mut state, since), None);
        inc.sync(&mut state);
        assert_eq!(endpoint_names(&state, "web"), ["a", "b", "c"]);
        full_pass_agrees(&mut state);
    }
}
