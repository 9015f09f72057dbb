//! Server-side printing: `meta.k8s.io/v1` Table responses for `kubectl get`, with the columns upstream's
//! printers use for the built-in kinds and a CRD's additional printer columns for custom resources.

use serde_json::{Value, json};

use crate::meta;
use crate::resources::{Builtin, ResourceInfo};

/// What a Table row carries in `object` (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter.
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

fn col(name: &str, ty: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": ty, "format": if name == "Name" { "name" } else { "" }, "description": description, "priority": priority})
}

/// The column definitions for a resource.
pub fn columns(res: &ResourceInfo) -> Vec<Value> {
    let name = col("Name", "string", 0, "Name must be unique within a namespace.");
    let age = col(
        "Age",
        "string",
        0,
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    );
    match res.builtin {
        Some(Builtin::Pod) => vec![
            name,
            col(
                "Ready",
                "string",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            col(
                "Status",
                "string",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            col(
                "Restarts",
                "string",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            age,
            col("IP", "string", 1, "IP address allocated to the pod."),
            col("Node", "string", 1, "Name of the Node this pod is scheduled on."),
            col(
                "Nominated Node",
                "string",
                1,
                "Name of the node this pod is nominated to.",
            ),
            col("Readiness Gates", "string", 1, "Pod readiness gates."),
        ],
        Some(Builtin::Node) => vec![
            name,
            col("Status", "string", 0, "The status of the node"),
            col("Roles", "string", 0, "The roles of the node"),
            age,
            col("Version", "string", 0, "Kubelet Version reported by the node."),
            col("Internal-IP", "string", 1, "List of addresses reachable to the node."),
            col("External-IP", "string", 1, "List of addresses reachable to the node."),
        ],
        Some(Builtin::Namespace) => vec![name, col("Status", "string", 0, "The status of the namespace"), age],
        Some(Builtin::Event) => vec![
            col(
                "Last Seen",
                "string",
                0,
                "Time when last event from this source was observed.",
            ),
            col("Type", "string", 0, "Type of this event."),
            col(
                "Reason",
                "string",
                0,
                "Short, machine understandable string that describes the reason for the event.",
            ),
            col("Object", "string", 0, "Object this event is about."),
            col(
                "Message",
                "string",
                0,
                "A human-readable description of the status of this operation.",
            ),
        ],
        Some(Builtin::EventV1) => vec![
            col(
                "Last Seen",
                "string",
                0,
                "Time when last event from this source was observed.",
            ),
            col("Type", "string", 0, "Type of this event."),
            col(
                "Reason",
                "string",
                0,
                "Short, machine understandable string that describes the reason for the event.",
            ),
            col("Object", "string", 0, "Object this event is about."),
            col(
                "Message",
                "string",
                0,
                "A human-readable description of the status of this operation.",
            ),
        ],
        Some(Builtin::Lease) => vec![name, col("Holder", "string", 0, "The holder of the lease."), age],
        Some(Builtin::Job) => vec![
            name,
            col("Status", "string", 0, "Status of the job."),
            col("Completions", "string", 0, "The completion status of the job."),
            col("Duration", "string", 0, "Time required to complete the job."),
            age,
            col("Containers", "string", 1, "Names of each container in the template."),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector of the job."),
        ],
        Some(Builtin::PriorityClass) => vec![
            name,
            col("Value", "integer", 0, "The value of this priority class."),
            col(
                "Global-Default",
                "boolean",
                0,
                "Whether this is the default priority class.",
            ),
            age,
            col(
                "PreemptionPolicy",
                "string",
                0,
                "Preemption policy of pods with this priority class.",
            ),
        ],
        Some(Builtin::ConfigMap) => vec![name, col("Data", "string", 0, "Number of keys."), age],
        Some(Builtin::Secret) => {
            vec![
                name,
                col("Type", "string", 0, "The type of the secret."),
                col("Data", "string", 0, "Number of keys."),
                age,
            ]
        }
        Some(Builtin::Crd) => vec![name, col("Created At", "date", 0, "The time the CRD was created.")],
        Some(Builtin::PodGroup) => vec![
            name,
            col("Policy", "string", 0, "The scheduling policy."),
            col("Scheduled", "string", 0, "The PodGroupInitiallyScheduled condition."),
            age,
            col("Workload", "string", 1, "The Workload this group was created from."),
            col("Parent", "string", 1, "The parent CompositePodGroup."),
        ],
        Some(Builtin::CompositePodGroup) => vec![
            name,
            col("Policy", "string", 0, "The scheduling policy."),
            col(
                "Scheduled",
                "string",
                0,
                "The CompositePodGroupInitiallyScheduled condition.",
            ),
            age,
            col("Workload", "string", 1, "The Workload this group was created from."),
            col("Parent", "string", 1, "The parent CompositePodGroup."),
        ],
        Some(Builtin::Workload) => vec![name, col("Templates", "string", 0, "The top-level templates."), age],
        Some(Builtin::ServiceAccount) => vec![name, age],
        None => {
            let mut cols = vec![name];
            for c in &res.printer_columns {
                cols.push(json!({"name": c.name, "type": c.type_, "format": "", "description": c.description, "priority": c.priority}));
            }
            if !res.printer_columns.iter().any(|c| c.name.eq_ignore_ascii_case("age")) {
                cols.push(age);
            }
            cols
        }
    }
}

fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

fn condition_status<'a>(obj: &'a Value, ty: &str) -> Option<&'a str> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(ty)))
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
}

fn policy(obj: &Value) -> &'static str {
    if obj.pointer("/spec/schedulingPolicy/gang").is_some() {
        "Gang"
    } else if obj.pointer("/spec/schedulingPolicy/basic").is_some() {
        "Basic"
    } else {
        "<none>"
    }
}

/// The cells of one row.
pub fn cells(res: &ResourceInfo, obj: &Value) -> Vec<Value> {
    let name = s(meta::name(obj));
    let age = s(meta::age_of(meta::meta_str(obj, "creationTimestamp")));
    let str_at = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("<none>").to_string();
    match res.builtin {
        Some(Builtin::Pod) => {
            let statuses = obj
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let total = obj
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = statuses
                .iter()
                .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                .count();
            let restarts: i64 = statuses
                .iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .sum();
            let mut status = obj
                .pointer("/status/reason")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| {
                    obj.pointer("/status/phase")
                        .and_then(Value::as_str)
                        .unwrap_or("Pending")
                        .to_string()
                });
            for c in &statuses {
                if let Some(r) = c.pointer("/state/waiting/reason").and_then(Value::as_str) {
                    status = r.to_string();
                } else if let Some(r) = c.pointer("/state/terminated/reason").and_then(Value::as_str)
                    && status != "Succeeded"
                    && status != "Failed"
                {
                    status = r.to_string();
                }
            }
            if meta::is_deleting(obj) {
                status = "Terminating".into();
            }
            let node = obj
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            vec![
                name,
                s(format!("{ready}/{total}")),
                s(status),
                s(restarts.to_string()),
                age,
                s(str_at("/status/podIP")),
                s(node),
                s(str_at("/status/nominatedNodeName")),
                s("<none>"),
            ]
        }
        Some(Builtin::Node) => {
            let mut status = match condition_status(obj, "Ready") {
                Some("True") => "Ready".to_string(),
                Some("False") => "NotReady".to_string(),
                _ => "Unknown".to_string(),
            };
            if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
                status.push_str(",SchedulingDisabled");
            }
            let roles: Vec<String> = meta::string_map(obj, "labels")
                .into_iter()
                .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/").map(str::to_string))
                .collect();
            let ip = obj
                .pointer("/status/addresses")
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter()
                        .find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
                })
                .and_then(|x| x.get("address"))
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            vec![
                name,
                s(status),
                s(if roles.is_empty() {
                    "<none>".to_string()
                } else {
                    roles.join(",")
                }),
                age,
                s(str_at("/status/nodeInfo/kubeletVersion")),
                s(ip),
                s("<none>"),
            ]
        }
        Some(Builtin::Namespace) => vec![name, s(str_at("/status/phase")), age],
        Some(Builtin::Event | Builtin::EventV1) => {
            let (inv, msg, last) = if res.builtin == Some(Builtin::EventV1) {
                ("regarding", "note", "deprecatedLastTimestamp")
            } else {
                ("involvedObject", "message", "lastTimestamp")
            };
            let last_seen = obj
                .get(last)
                .and_then(Value::as_str)
                .or_else(|| obj.get("eventTime").and_then(Value::as_str))
                .or_else(|| meta::meta_str(obj, "creationTimestamp"));
            let kind = obj
                .pointer(&format!("/{inv}/kind"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_lowercase();
            let oname = obj
                .pointer(&format!("/{inv}/name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![
                s(meta::age_of(last_seen)),
                s(obj.get("type").and_then(Value::as_str).unwrap_or("")),
                s(obj.get("reason").and_then(Value::as_str).unwrap_or("")),
                s(format!("{kind}/{oname}")),
                s(obj.get(msg).and_then(Value::as_str).unwrap_or("").trim()),
            ]
        }
        Some(Builtin::Lease) => vec![name, s(str_at("/spec/holderIdentity")), age],
        Some(Builtin::Job) => {
            let status = if condition_status(obj, "Complete") == Some("True") {
                "Complete"
            } else if condition_status(obj, "Failed") == Some("True") {
                "Failed"
            } else if condition_status(obj, "Suspended") == Some("True") {
                "Suspended"
            } else if condition_status(obj, "FailureTarget") == Some("True") {
                "FailureTarget"
            } else if meta::is_deleting(obj) {
                "Terminating"
            } else {
                "Running"
            };
            let succeeded = obj.pointer("/status/succeeded").and_then(Value::as_i64).unwrap_or(0);
            let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
                Some(c) => format!("{succeeded}/{c}"),
                None => format!(
                    "{succeeded}/1 of {}",
                    obj.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1)
                ),
            };
            let start = obj
                .pointer("/status/startTime")
                .and_then(Value::as_str)
                .and_then(meta::parse_time);
            let end = obj
                .pointer("/status/completionTime")
                .and_then(Value::as_str)
                .and_then(meta::parse_time)
                .unwrap_or_else(jiff::Timestamp::now);
            let duration = start
                .map(|st| {
                    meta::human_duration(std::time::Duration::from_secs(
                        (end.as_second() - st.as_second()).max(0).unsigned_abs(),
                    ))
                })
                .unwrap_or_default();
            let containers: Vec<&str> = obj
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c.get("name").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            let images: Vec<&str> = obj
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c.get("image").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            let selector = obj
                .pointer("/spec/selector/matchLabels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            vec![
                name,
                s(status),
                s(completions),
                s(duration),
                age,
                s(containers.join(",")),
                s(images.join(",")),
                s(selector),
            ]
        }
        Some(Builtin::PriorityClass) => vec![
            name,
            obj.get("value").cloned().unwrap_or(json!(0)),
            obj.get("globalDefault").cloned().unwrap_or(json!(false)),
            age,
            s(obj.get("preemptionPolicy").and_then(Value::as_str).unwrap_or("")),
        ],
        Some(Builtin::ConfigMap) => vec![
            name,
            json!(obj.get("data").and_then(Value::as_object).map_or(0, |m| m.len())),
            age,
        ],
        Some(Builtin::Secret) => vec![
            name,
            s(obj.get("type").and_then(Value::as_str).unwrap_or("Opaque")),
            json!(obj.get("data").and_then(Value::as_object).map_or(0, |m| m.len())),
            age,
        ],
        Some(Builtin::Crd) => vec![name, s(meta::meta_str(obj, "creationTimestamp").unwrap_or(""))],
        Some(Builtin::PodGroup | Builtin::CompositePodGroup) => {
            let cond = if res.builtin == Some(Builtin::PodGroup) {
                kwas_api::names::conditions::POD_GROUP_INITIALLY_SCHEDULED
            } else {
                kwas_api::names::conditions::COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED
            };
            vec![
                name,
                s(policy(obj)),
                s(condition_status(obj, cond).unwrap_or("<none>")),
                age,
                s(str_at("/spec/workloadRef/name")),
                s(str_at("/spec/parentCompositePodGroupName")),
            ]
        }
        Some(Builtin::Workload) => {
            let names: Vec<&str> = ["podGroupTemplates", "compositePodGroupTemplates"]
                .iter()
                .filter_map(|k| obj.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
                .flatten()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .collect();
            vec![name, s(names.join(",")), age]
        }
        Some(Builtin::ServiceAccount) => vec![name, age],
        None => {
            let mut out = vec![name];
            for c in &res.printer_columns {
                let v = meta::json_path(obj, &c.json_path).cloned().unwrap_or(Value::Null);
                let cell = if c.type_ == "date" {
                    match v.as_str() {
                        Some(t) => s(meta::age_of(Some(t))),
                        None => s("<unknown>"),
                    }
                } else {
                    v
                };
                out.push(cell);
            }
            if !res.printer_columns.iter().any(|c| c.name.eq_ignore_ascii_case("age")) {
                out.push(age);
            }
            out
        }
    }
}

/// One Table row.
pub fn row(res: &ResourceInfo, obj: &Value, include: IncludeObject) -> Value {
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => {
            let mut md = meta::metadata(obj).cloned().unwrap_or_default();
            md.remove("managedFields");
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md})
        }
    };
    let mut r = json!({"cells": cells(res, obj)});
    if !object.is_null() {
        r["object"] = object;
    }
    r
}

/// A Table of objects (already in the client's version).
pub fn table(
    res: &ResourceInfo,
    objs: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    include: IncludeObject,
) -> Value {
    let mut md = json!({"resourceVersion": resource_version});
    if let Some(c) = continue_token {
        md["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": md,
        "columnDefinitions": columns(res),
        "rows": objs.iter().map(|o| row(res, o, include)).collect::<Vec<_>>(),
    })
}
