//! core/v1 Service: API defaults (type `ClusterIP`, TCP ports, `targetPort` = `port`, single-stack IPv4),
//! a cluster IP allocated from `10.96.0.0/12` and node ports from `30000-32767` (both unique across the
//! cluster, kept on updates, immutable), and kube-apiserver's validation of types and ports. devcluster
//! has no network: no proxy, no DNS, no load balancer (a LoadBalancer's external IP stays `<pending>`);
//! the EndpointSlice controller (`controllers::endpointslice`) lists a Service's pods in EndpointSlices,
//! and `kubectl expose` and manifests with Services work as on a real cluster.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Service;
use serde_json::{Value, json};

use super::print::{age, col, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::{AdmitContext, Facts, Operation, ResourceInfo, Strategy};
use crate::store::{GroupResource, Store};

/// The service cluster IP range, as kube-apiserver's default `--service-cluster-ip-range` (`10.96.0.0/12`).
const RANGE_START: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const RANGE_SIZE: u32 = 1 << 20;
/// The default node port range.
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;
const TYPES: &[&str] = &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "Service", "services", true, ServiceStrategy)
        .short_names(&["svc"])
        .in_all()
        .with_status()
}

#[derive(Debug)]
struct ServiceStrategy;

fn services(store: &Store) -> Vec<std::sync::Arc<Value>> {
    store.list(&GroupResource::new("", "services"), None)
}

fn used_ips(store: &Store, except_uid: &str) -> BTreeSet<String> {
    services(store)
        .iter()
        .filter(|s| meta::uid(s) != except_uid)
        .flat_map(|s| meta::string_list(s.pointer("/spec/clusterIPs")))
        .collect()
}

fn used_node_ports(store: &Store, except_uid: &str) -> BTreeSet<i64> {
    services(store)
        .iter()
        .filter(|s| meta::uid(s) != except_uid)
        .flat_map(|s| {
            s.pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The lowest free cluster IP (`.0` is the network, `.1` the `kubernetes` service's by convention).
fn allocate_ip(used: &BTreeSet<String>) -> Option<String> {
    (2..RANGE_SIZE - 1)
        .map(|i| Ipv4Addr::from(RANGE_START + i).to_string())
        .find(|ip| !used.contains(ip))
}

impl Strategy for ServiceStrategy {
    type Object = Service;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        let old = cx.old;
        let name = meta::name(obj).to_string();
        let uid = meta::uid(obj).to_string();
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("type").or_insert(json!("ClusterIP"));
        let ty = spec.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        if ty == "ExternalName" {
            return Ok(());
        }
        spec.entry("sessionAffinity").or_insert(json!("None"));
        spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
        if ty == "NodePort" || ty == "LoadBalancer" {
            spec.entry("externalTrafficPolicy").or_insert(json!("Cluster"));
        }
        if ty == "LoadBalancer" {
            spec.entry("allocateLoadBalancerNodePorts").or_insert(json!(true));
        }
        // The cluster IP: kept from the old object when an update leaves it out, else allocated.
        let old_ip = old.and_then(|o| o.pointer("/spec/clusterIP")).cloned();
        if let (Some(ip), None | Some(Value::Null)) = (&old_ip, spec.get("clusterIP")) {
            spec.insert("clusterIP".into(), ip.clone());
            if let Some(ips) = old.and_then(|o| o.pointer("/spec/clusterIPs")) {
                spec.insert("clusterIPs".into(), ips.clone());
            }
        }
        let ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("").to_string();
        if ip.is_empty() {
            let Some(ip) = allocate_ip(&used_ips(cx.store, &uid)) else {
                return Err(ApiError::internal("failed to allocate a serviceIP: range is full"));
            };
            spec.insert("clusterIP".into(), json!(ip));
        }
        let ip = spec.get("clusterIP").cloned().unwrap_or(Value::Null);
        spec.entry("clusterIPs").or_insert(json!([ip]));
        if ip != "None" {
            spec.entry("ipFamilies").or_insert(json!(["IPv4"]));
        }
        spec.entry("ipFamilyPolicy").or_insert(json!("SingleStack"));
        let needs_node_ports = ty == "NodePort"
            || (ty == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
        let old_ports: Vec<Value> = old
            .and_then(|o| o.pointer("/spec/ports"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut taken = if needs_node_ports {
            used_node_ports(cx.store, &uid)
        } else {
            BTreeSet::new()
        };
        for p in spec
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(p) = p.as_object_mut() else { continue };
            p.entry("protocol").or_insert(json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                p.entry("targetPort").or_insert(port);
            }
            if !needs_node_ports {
                continue;
            }
            if p.get("nodePort").and_then(Value::as_i64).is_none() {
                let kept = old_ports
                    .iter()
                    .find(|o| o.get("port") == p.get("port") && o.get("protocol") == p.get("protocol"))
                    .and_then(|o| o.get("nodePort"))
                    .and_then(Value::as_i64);
                let port = match kept {
                    Some(k) => k,
                    None => NODE_PORTS.clone().find(|n| !taken.contains(n)).ok_or_else(|| {
                        ApiError::invalid(
                            &res.group,
                            &res.kind,
                            &name,
                            vec![FieldCause::invalid(
                                "spec.ports",
                                &Value::Null,
                                "node port range is full",
                            )],
                        )
                    })?,
                };
                p.insert("nodePort".into(), json!(port));
            }
            if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                taken.insert(n);
            }
        }
        if cx.op == Operation::Create {
            meta::ensure_object(obj).insert("status".into(), json!({"loadBalancer": {}}));
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        let ty = obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
        if !TYPES.contains(&ty) {
            causes.push(FieldCause::not_supported("spec.type", &json!(ty), TYPES));
        }
        let ports = obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if ty == "ExternalName" {
            if obj
                .pointer("/spec/externalName")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                causes.push(FieldCause::required("spec.externalName", ""));
            }
        } else if ports.is_empty() && obj.pointer("/spec/clusterIP").and_then(Value::as_str) != Some("None") {
            causes.push(FieldCause::required("spec.ports", ""));
        }
        let mut names = BTreeSet::new();
        let mut node_ports = BTreeSet::new();
        for (i, p) in ports.iter().enumerate() {
            let port_name = p.get("name").and_then(Value::as_str).unwrap_or("");
            if ports.len() > 1 && port_name.is_empty() {
                causes.push(FieldCause::required(format!("spec.ports[{i}].name"), ""));
            }
            if !port_name.is_empty() && !names.insert(port_name.to_string()) {
                causes.push(FieldCause::duplicate(
                    format!("spec.ports[{i}].name"),
                    &json!(port_name),
                ));
            }
            match p.get("port").and_then(Value::as_i64) {
                Some(n) if (1..=65535).contains(&n) => {}
                Some(n) => causes.push(FieldCause::invalid(
                    format!("spec.ports[{i}].port"),
                    &json!(n),
                    "must be between 1 and 65535, inclusive",
                )),
                None => causes.push(FieldCause::required(format!("spec.ports[{i}].port"), "")),
            }
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            if !["TCP", "UDP", "SCTP"].contains(&protocol) {
                causes.push(FieldCause::not_supported(
                    format!("spec.ports[{i}].protocol"),
                    &json!(protocol),
                    &["SCTP", "TCP", "UDP"],
                ));
            }
            if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                if !NODE_PORTS.contains(&n) {
                    causes.push(FieldCause::invalid(
                        format!("spec.ports[{i}].nodePort"),
                        &json!(n),
                        "provided port is not in the valid range. The range of valid ports is 30000-32767",
                    ));
                } else if !node_ports.insert((n, protocol.to_string()))
                    || used_node_ports(cx.store, meta::uid(obj)).contains(&n)
                {
                    causes.push(FieldCause::invalid(
                        format!("spec.ports[{i}].nodePort"),
                        &json!(n),
                        "provided port is already allocated",
                    ));
                }
            }
        }
        let ip = obj.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or("");
        if !ip.is_empty() && ip != "None" {
            match ip.parse::<Ipv4Addr>() {
                Ok(a) if (RANGE_START..RANGE_START + RANGE_SIZE).contains(&u32::from(a)) => {
                    if used_ips(cx.store, meta::uid(obj)).contains(ip) {
                        causes.push(FieldCause::invalid(
                            "spec.clusterIPs",
                            &json!([ip]),
                            &format!("failed to allocate IP {ip}: provided IP is already allocated"),
                        ));
                    }
                }
                _ => causes.push(FieldCause::invalid(
                    "spec.clusterIPs",
                    &json!([ip]),
                    "failed to allocate IP: the provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12",
                )),
            }
        }
        invalid(res, obj, causes)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let before = old.pointer("/spec/clusterIP");
        let after = obj.pointer("/spec/clusterIP");
        if before.is_some() && before != after {
            return invalid(
                res,
                obj,
                vec![FieldCause::invalid(
                    "spec.clusterIPs[0]",
                    after.unwrap_or(&Value::Null),
                    "may not change once set",
                )],
            );
        }
        self.validate(cx, obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Type", "string", 0, "The type of the service."),
            col("Cluster-IP", "string", 0, "The IP address of the service."),
            col("External-IP", "string", 0, "The external IP addresses of the service."),
            col("Port(s)", "string", 0, "The ports of the service."),
            crate::resource::age_column(),
            col("Selector", "string", 1, "The label selector of the service."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let ty = obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
        let ip = obj
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        let external = match ty {
            "ExternalName" => obj
                .pointer("/spec/externalName")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            "LoadBalancer" => "<pending>".to_string(),
            _ => {
                let ips = meta::string_list(obj.pointer("/spec/externalIPs"));
                if ips.is_empty() {
                    "<none>".to_string()
                } else {
                    ips.join(",")
                }
            }
        };
        let ports: Vec<String> = obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                match p.get("nodePort").and_then(Value::as_i64) {
                    Some(n) => format!("{port}:{n}/{proto}"),
                    None => format!("{port}/{proto}"),
                }
            })
            .collect();
        let selector: Vec<String> = obj
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        vec![
            name(obj),
            text_cell(ty),
            text_cell(ip),
            text_cell(external),
            text_cell(if ports.is_empty() {
                "<none>".to_string()
            } else {
                ports.join(",")
            }),
            age(obj),
            text_cell(if selector.is_empty() {
                "<none>".to_string()
            } else {
                selector.join(",")
            }),
        ]
    }
}
