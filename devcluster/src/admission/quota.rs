//! ResourceQuota accounting and admission (kube-apiserver's `ResourceQuota` admission plugin and the
//! resource quota controller's usage): object counts (`pods`, `services`, `configmaps`, `secrets`,
//! `persistentvolumeclaims`, `resourcequotas`, `count/<resource>[.<group>]`) and the compute resources of
//! non-terminal pods (`requests.cpu`, `requests.memory`, `limits.*`, `cpu` / `memory` as requests, and
//! `requests.<extended resource>`), with a pod's requests as upstream computes them (the larger of its
//! containers' sum and its largest init container). A create that would take any quota of its namespace
//! past `spec.hard` is refused with upstream's `exceeded quota` message. Quota scopes and scope selectors
//! are not evaluated (a scoped quota counts everything in its namespace).

use serde_json::{Map, Value, json};

use kwas_api_types::quantity::{parse_cpu_millis, parse_units};

use crate::error::ApiError;
use crate::meta;
use crate::resource::ResourceInfo;
use crate::store::{GroupResource, Store};

/// Whether a quota key is measured in milli-units (CPU).
fn milli(key: &str) -> bool {
    key == "cpu" || key.ends_with(".cpu")
}

/// A quantity string in the key's unit (millicores for CPU, whole units otherwise); hostile values count
/// as the largest amount (never as none).
pub(crate) fn amount(key: &str, q: &Value) -> i64 {
    let s = match q {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return 0,
    };
    let parsed = if milli(key) {
        parse_cpu_millis(&s)
    } else {
        parse_units(&s)
    };
    parsed.unwrap_or(i64::MAX)
}

/// The quantity string of an amount.
fn format(key: &str, n: i64) -> String {
    if milli(key) {
        return if n % 1000 == 0 {
            (n / 1000).to_string()
        } else {
            format!("{n}m")
        };
    }
    if key.contains("memory") || key.contains("storage") {
        for (suffix, shift) in [("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            if n != 0 && n % (1i64 << shift) == 0 {
                return format!("{}{suffix}", n >> shift);
            }
        }
    }
    n.to_string()
}

fn pod_terminal(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// A pod's `requests` or `limits` of `resource`: max(sum over containers, max over init containers).
fn pod_resource(pod: &Value, kind: &str, resource: &str) -> i64 {
    let key = if resource == "cpu" { "cpu" } else { "units" };
    let of = |c: &Value| {
        c.pointer(&format!("/resources/{kind}/{}", resource.replace('/', "~1")))
            .map_or(0, |q| amount(key, q))
    };
    let list = |f: &str| {
        pod.pointer(&format!("/spec/{f}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let sum = list("containers").iter().map(of).fold(0i64, i64::saturating_add);
    let init = list("initContainers").iter().map(of).max().unwrap_or(0);
    sum.max(init)
}

/// What one object adds to the quota key `key` (0 if the key does not measure it).
fn object_usage(gr: &GroupResource, obj: &Value, key: &str) -> i64 {
    let group_resource = if gr.group.is_empty() {
        gr.resource.clone()
    } else {
        format!("{}.{}", gr.resource, gr.group)
    };
    let core = |plural: &str| gr.group.is_empty() && gr.resource == plural;
    if key == format!("count/{group_resource}") || (gr.group.is_empty() && key == gr.resource) {
        if core("pods") && pod_terminal(obj) {
            return 0;
        }
        return 1;
    }
    if core("services") {
        let ty = obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
        return match key {
            "services.loadbalancers" => i64::from(ty == "LoadBalancer"),
            "services.nodeports" => obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map_or(0, |p| p.iter().filter(|p| p.get("nodePort").is_some()).count() as i64),
            _ => 0,
        };
    }
    if core("persistentvolumeclaims") && key == "requests.storage" {
        return obj
            .pointer("/spec/resources/requests/storage")
            .map_or(0, |q| amount("units", q));
    }
    if core("pods") && !pod_terminal(obj) {
        let (kind, resource) = match key.split_once('.') {
            Some(("requests", r)) => ("requests", r),
            Some(("limits", r)) => ("limits", r),
            _ if key == "cpu" || key == "memory" || key == "ephemeral-storage" => ("requests", key),
            _ => return 0,
        };
        return pod_resource(obj, kind, resource);
    }
    0
}

/// Where objects measured by a quota key are stored.
fn measured(key: &str) -> Vec<GroupResource> {
    let core = |p: &str| vec![GroupResource::new("", p)];
    match key {
        "pods" | "cpu" | "memory" | "ephemeral-storage" => core("pods"),
        k if k.starts_with("requests.") || k.starts_with("limits.") => {
            if k == "requests.storage" {
                core("persistentvolumeclaims")
            } else {
                core("pods")
            }
        }
        "services" | "services.loadbalancers" | "services.nodeports" => core("services"),
        "configmaps" | "secrets" | "persistentvolumeclaims" | "resourcequotas" | "replicationcontrollers" => core(key),
        k => match k.strip_prefix("count/") {
            Some(gr) => match gr.split_once('.') {
                Some((plural, group)) => vec![GroupResource::new(group, plural)],
                None => core(gr),
            },
            None => Vec::new(),
        },
    }
}

/// The current usage of every key of `hard` in `namespace`.
pub(crate) fn usage(store: &Store, namespace: &str, hard: &Map<String, Value>) -> Map<String, Value> {
    let mut used = Map::new();
    for key in hard.keys() {
        let mut total = 0i64;
        for gr in measured(key) {
            for o in store.list(&gr, Some(namespace)) {
                if !meta::is_deleting(&o) {
                    total = total.saturating_add(object_usage(&gr, &o, key));
                }
            }
        }
        used.insert(key.clone(), json!(format(key, total)));
    }
    used
}

/// Refuses a create that would exceed a quota of its namespace.
pub(crate) fn check_create(store: &Store, res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let namespace = meta::namespace(obj);
    if !res.namespaced || namespace.is_empty() {
        return Ok(());
    }
    let quotas = store.list(&GroupResource::new("", "resourcequotas"), Some(namespace));
    for q in quotas {
        let Some(hard) = q.pointer("/spec/hard").and_then(Value::as_object) else {
            continue;
        };
        let mut requested = Vec::new();
        let mut used_now = Vec::new();
        let mut limited = Vec::new();
        let mut exceeded = false;
        // A pod must state every compute resource a quota limits (upstream: "must specify").
        if res.storage == GroupResource::new("", "pods") && !pod_terminal(obj) {
            let mut missing = Vec::new();
            for key in hard.keys() {
                let (kind, resource) = match key.split_once('.') {
                    Some((k @ ("requests" | "limits"), r)) if r == "cpu" || r == "memory" => (k, r),
                    _ if key == "cpu" || key == "memory" => ("requests", key.as_str()),
                    _ => continue,
                };
                let containers = obj
                    .pointer("/spec/containers")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let unset: Vec<&str> = containers
                    .iter()
                    .filter(|c| c.pointer(&format!("/resources/{kind}/{resource}")).is_none())
                    .filter_map(|c| c.get("name").and_then(Value::as_str))
                    .collect();
                if !unset.is_empty() {
                    missing.push(format!("{key} for: {}", unset.join(",")));
                }
            }
            if !missing.is_empty() {
                return Err(ApiError::forbidden(
                    &res.group,
                    &res.plural,
                    meta::name(obj),
                    &format!("failed quota: {}: must specify {}", meta::name(&q), missing.join("; ")),
                ));
            }
        }
        let current = usage(store, namespace, hard);
        for (key, limit) in hard {
            let add = object_usage(&res.storage, obj, key);
            if add == 0 {
                continue;
            }
            let used = current.get(key).map_or(0, |u| amount(key, u));
            let limit_n = amount(key, limit);
            requested.push(format!("{key}={}", format(key, add)));
            used_now.push(format!("{key}={}", format(key, used)));
            limited.push(format!(
                "{key}={}",
                limit.as_str().map_or_else(|| limit.to_string(), str::to_string)
            ));
            if used.saturating_add(add) > limit_n {
                exceeded = true;
            }
        }
        if exceeded {
            return Err(ApiError::forbidden(
                &res.group,
                &res.plural,
                meta::name(obj),
                &format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    meta::name(&q),
                    requested.join(","),
                    used_now.join(","),
                    limited.join(",")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_format_in_their_units() {
        assert_eq!(format("requests.cpu", 1500), "1500m");
        assert_eq!(format("cpu", 2000), "2");
        assert_eq!(format("requests.memory", 1 << 30), "1Gi");
        assert_eq!(format("requests.memory", 1000), "1000");
        assert_eq!(format("pods", 1024), "1024");
        assert_eq!(amount("pods", &json!("10")), 10);
        assert_eq!(amount("requests.cpu", &json!("500m")), 500);
        assert_eq!(amount("requests.memory", &json!("bogus")), i64::MAX);
    }

    #[test]
    fn a_pod_counts_its_larger_of_containers_and_init_containers() {
        let pod = json!({"spec": {
            "containers": [{"resources": {"requests": {"cpu": "250m", "nvidia.com/gpu": "2"}}},
                           {"resources": {"requests": {"cpu": "250m"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "1"}}}]}});
        assert_eq!(pod_resource(&pod, "requests", "cpu"), 1000);
        assert_eq!(pod_resource(&pod, "requests", "nvidia.com/gpu"), 2);
    }
}
