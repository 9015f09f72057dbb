//! The snapshot file: a versioned envelope (`kwas.dev/v1alpha1`, `SchedulingSnapshot`) around the
//! objects, in YAML or JSON, ending with `itemCount` (the number of items) so that a file cut short is
//! an error even when what is left parses. A `v1` `List` (`kubectl get nodes,pods,... -A -o yaml`) is
//! read too, without that check.

use std::collections::HashMap;
use std::fmt;

use k8s_openapi::Resource;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::runtime::informers::{Kind, Object};

/// The envelope's `apiVersion`.
pub const API_VERSION: &str = "kwas.dev/v1alpha1";
/// The envelope's `kind`.
pub const KIND: &str = "SchedulingSnapshot";
/// The largest snapshot read (bytes).
pub const MAX_FILE_BYTES: usize = 256 * 1024 * 1024;

/// What the snapshot says about where and when it was taken.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotMetadata {
    /// When it was taken (RFC 3339); the replay's wall clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<String>,
    /// The API server's `gitVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The `spec.schedulerName`s the cluster's kwas scheduler answers for (the replay's default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduler_names: Vec<String>,
    /// Kinds the API server does not serve (none of them listed), as the scheduler skips them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent_kinds: Vec<String>,
}

/// The scheduling inputs of a cluster. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct SchedulingSnapshot {
    /// Where and when.
    pub metadata: SnapshotMetadata,
    /// The objects, of the kinds in [`Kind::ALL`].
    pub objects: Vec<Object>,
}

/// A snapshot file that cannot be read: where (`items[3].spec.containers[0]`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotError {
    /// The field at fault (empty: the document as a whole).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for SnapshotError {}

fn err(path: impl Into<String>, message: impl Into<String>) -> SnapshotError {
    SnapshotError {
        path: path.into(),
        message: message.into(),
    }
}

/// The `apiVersion` of a kind's objects.
pub(crate) fn api_version(kind: Kind) -> &'static str {
    match kind {
        Kind::Node => Node::API_VERSION,
        Kind::Pod => Pod::API_VERSION,
        Kind::PodGroup => PodGroup::API_VERSION,
        Kind::CompositePodGroup => CompositePodGroup::API_VERSION,
        Kind::PriorityClass => PriorityClass::API_VERSION,
        Kind::Namespace => Namespace::API_VERSION,
        Kind::PersistentVolumeClaim => PersistentVolumeClaim::API_VERSION,
        Kind::PersistentVolume => PersistentVolume::API_VERSION,
        Kind::StorageClass => StorageClass::API_VERSION,
        Kind::CSINode => CSINode::API_VERSION,
        Kind::PodDisruptionBudget => PodDisruptionBudget::API_VERSION,
        Kind::Workload => Workload::API_VERSION,
        Kind::DeviceClass => DeviceClass::API_VERSION,
        Kind::ResourceSlice => ResourceSlice::API_VERSION,
        Kind::ResourceClaim => ResourceClaim::API_VERSION,
    }
}

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> Result<Box<T>, SnapshotError> {
    serde_path_to_error::deserialize::<_, T>(v).map(Box::new).map_err(|e| {
        let path = e.path().to_string();
        err(
            if path == "." { String::new() } else { path },
            e.into_inner().to_string(),
        )
    })
}

fn decode(kind: Kind, v: Value) -> Result<Object, SnapshotError> {
    Ok(match kind {
        Kind::Node => Object::Node(typed(v)?),
        Kind::Pod => Object::Pod(typed(v)?),
        Kind::PodGroup => Object::PodGroup(typed(v)?),
        Kind::CompositePodGroup => Object::CompositePodGroup(typed(v)?),
        Kind::PriorityClass => Object::PriorityClass(typed(v)?),
        Kind::Namespace => Object::Namespace(typed(v)?),
        Kind::PersistentVolumeClaim => Object::PersistentVolumeClaim(typed(v)?),
        Kind::PersistentVolume => Object::PersistentVolume(typed(v)?),
        Kind::StorageClass => Object::StorageClass(typed(v)?),
        Kind::CSINode => Object::CSINode(typed(v)?),
        Kind::PodDisruptionBudget => Object::PodDisruptionBudget(typed(v)?),
        Kind::Workload => Object::Workload(typed(v)?),
        Kind::DeviceClass => Object::DeviceClass(typed(v)?),
        Kind::ResourceSlice => Object::ResourceSlice(typed(v)?),
        Kind::ResourceClaim => Object::ResourceClaim(typed(v)?),
    })
}

/// An object, serialized as itself.
struct Item<'a>(&'a Object);

impl Serialize for Item<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Object::Node(o) => o.serialize(s),
            Object::Pod(o) => o.serialize(s),
            Object::PodGroup(o) => o.serialize(s),
            Object::CompositePodGroup(o) => o.serialize(s),
            Object::PriorityClass(o) => o.serialize(s),
            Object::Namespace(o) => o.serialize(s),
            Object::PersistentVolumeClaim(o) => o.serialize(s),
            Object::PersistentVolume(o) => o.serialize(s),
            Object::StorageClass(o) => o.serialize(s),
            Object::CSINode(o) => o.serialize(s),
            Object::PodDisruptionBudget(o) => o.serialize(s),
            Object::Workload(o) => o.serialize(s),
            Object::DeviceClass(o) => o.serialize(s),
            Object::ResourceSlice(o) => o.serialize(s),
            Object::ResourceClaim(o) => o.serialize(s),
        }
    }
}

/// The file's top level, in this field order: `itemCount` last, so that a file cut short is detected.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: &'a SnapshotMetadata,
    items: Vec<Item<'a>>,
    item_count: usize,
}

fn kind_names() -> String {
    Kind::ALL.iter().map(Kind::as_str).collect::<Vec<_>>().join(", ")
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// A short, printable rendering of a value that is not what was expected.
fn shown(v: &Value) -> String {
    let s = match v {
        Value::String(s) => quoted(s),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        let cut: String = s.chars().take(77).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn str_field<'a>(o: &'a Map<String, Value>, field: &str, path: &str) -> Result<Option<&'a str>, SnapshotError> {
    match o.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(err(
            format!("{path}{field}"),
            format!("Invalid value: {}: must be a string", shown(other)),
        )),
    }
}

/// Parses text as JSON (when it starts with `{`) or YAML, with budgets that admit a large cluster and
/// refuse alias bombs and runaway nesting.
fn decode_text(text: &str) -> Result<Value, SnapshotError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(err(
            "",
            format!(
                "too large: {} bytes (at most {MAX_FILE_BYTES} bytes are read)",
                text.len()
            ),
        ));
    }
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|e| err("", format!("invalid JSON: {e}")));
    }
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_events: 200_000_000,
            max_nodes: 100_000_000,
            max_total_scalar_bytes: MAX_FILE_BYTES,
            max_documents: 1,
        },
        // YAML 1.2 booleans only: a label value `n` or `on` is a string, as kubectl writes it.
        strict_booleans: true,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|e| err("", format!("invalid YAML: {e}")))
}

impl SchedulingSnapshot {
    /// Reads a snapshot: a `kwas.dev/v1alpha1` `SchedulingSnapshot`, or a `v1` `List` of objects of
    /// the kinds the scheduler reads. Anything else is an error naming the item and field.
    pub fn parse(text: &str) -> Result<Self, SnapshotError> {
        let doc = decode_text(text)?;
        let Value::Object(mut top) = doc else {
            return Err(err(
                "",
                format!("Invalid value: {}: expected a {KIND} object", shown(&doc)),
            ));
        };
        let api = str_field(&top, "apiVersion", "")?.unwrap_or_default().to_string();
        let kind = str_field(&top, "kind", "")?.unwrap_or_default().to_string();
        let envelope = match (api.as_str(), kind.as_str()) {
            (API_VERSION, KIND) => true,
            ("v1", "List") => false,
            (_, KIND) => {
                return Err(err(
                    "apiVersion",
                    format!(
                        "Unsupported value: {}: supported values: {}",
                        quoted(&api),
                        quoted(API_VERSION)
                    ),
                ));
            }
            ("", "") => {
                return Err(err(
                    "kind",
                    format!("Required value: expected apiVersion {API_VERSION} and kind {KIND} (or a v1 List)"),
                ));
            }
            _ => {
                return Err(err(
                    "kind",
                    format!(
                        "Unsupported value: {} ({}): supported values: {KIND} ({API_VERSION}), List (v1)",
                        quoted(&kind),
                        quoted(&api)
                    ),
                ));
            }
        };
        for key in top.keys() {
            let known = matches!(key.as_str(), "apiVersion" | "kind" | "metadata" | "items")
                || (envelope && key == "itemCount");
            if !known {
                return Err(err(key.clone(), "Forbidden: unknown field"));
            }
        }
        let metadata = match top.remove("metadata") {
            Some(m) if envelope => serde_path_to_error::deserialize::<_, SnapshotMetadata>(m).map_err(|e| {
                let path = e.path().to_string();
                let path = if path == "." {
                    "metadata".to_string()
                } else {
                    format!("metadata.{path}")
                };
                err(path, e.into_inner().to_string())
            })?,
            _ => SnapshotMetadata::default(),
        };
        if let Some(t) = &metadata.taken_at {
            t.parse::<k8s_openapi::jiff::Timestamp>()
                .map_err(|e| err("metadata.takenAt", format!("Invalid value: {}: {e}", quoted(t))))?;
        }
        let items = match top.remove("items") {
            Some(Value::Array(items)) => items,
            Some(Value::Null) | None => Vec::new(),
            Some(other) => {
                return Err(err(
                    "items",
                    format!("Invalid value: {}: must be a list", shown(&other)),
                ));
            }
        };
        if envelope {
            // Written after the items: a file cut short, even at the end of a line, lacks it or
            // holds fewer items.
            match top.get("itemCount") {
                None | Some(Value::Null) => {
                    return Err(err(
                        "itemCount",
                        "Required value: the number of items, written last (is the file cut short?)",
                    ));
                }
                Some(Value::Number(n)) if n.as_u64() == u64::try_from(items.len()).ok() => {}
                Some(Value::Number(n)) if n.as_u64().is_some() => {
                    return Err(err(
                        "itemCount",
                        format!(
                            "Invalid value: {n}: the file holds {} items (is it cut short?)",
                            items.len()
                        ),
                    ));
                }
                Some(other) => {
                    return Err(err(
                        "itemCount",
                        format!("Invalid value: {}: must be a non-negative integer", shown(other)),
                    ));
                }
            }
        }
        let mut objects = Vec::with_capacity(items.len());
        let mut seen: HashMap<(Kind, String), usize> = HashMap::new();
        for (i, item) in items.into_iter().enumerate() {
            let path = format!("items[{i}]");
            let o = item_object(item, &path)?;
            let id = (o.kind(), o.key());
            if let Some(first) = seen.get(&id) {
                return Err(err(
                    path,
                    format!("Duplicate value: {} {} (also items[{first}])", id.0.as_str(), id.1),
                ));
            }
            seen.insert(id, i);
            objects.push(o);
        }
        Ok(Self { metadata, objects })
    }

    /// The objects in file order: [`Kind::ALL`] order, then by namespace and name.
    fn ordered(&self) -> Vec<&Object> {
        let mut order: Vec<(usize, String, &Object)> = self
            .objects
            .iter()
            .map(|o| {
                let k = Kind::ALL.iter().position(|k| *k == o.kind()).unwrap_or(usize::MAX);
                (k, o.key(), o)
            })
            .collect();
        order.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        order.into_iter().map(|(_, _, o)| o).collect()
    }

    fn envelope(&self) -> Envelope<'_> {
        let items: Vec<Item<'_>> = self.ordered().into_iter().map(Item).collect();
        Envelope {
            api_version: API_VERSION,
            kind: KIND,
            metadata: &self.metadata,
            item_count: items.len(),
            items,
        }
    }

    /// The snapshot as the JSON value of its file.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self.envelope())
    }

    /// The snapshot as YAML (fields in the API's order).
    pub fn to_yaml(&self) -> Result<String, SnapshotError> {
        serde_saphyr::to_string(&self.envelope()).map_err(|e| err("", e.to_string()))
    }

    /// The snapshot as JSON (pretty; fields in the API's order).
    pub fn to_json(&self) -> Result<String, SnapshotError> {
        serde_json::to_string_pretty(&self.envelope()).map_err(|e| err("", e.to_string()))
    }

    /// How many objects of each kind, in [`Kind::ALL`] order (kinds with none left out).
    pub fn counts(&self) -> Vec<(Kind, usize)> {
        Kind::ALL
            .iter()
            .map(|k| (*k, self.objects.iter().filter(|o| o.kind() == *k).count()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

fn item_object(item: Value, path: &str) -> Result<Object, SnapshotError> {
    let Value::Object(map) = &item else {
        return Err(err(
            path,
            format!("Invalid value: {}: expected an object", shown(&item)),
        ));
    };
    let prefix = format!("{path}.");
    let api = str_field(map, "apiVersion", &prefix)?;
    let kind_name = str_field(map, "kind", &prefix)?;
    let (Some(api), Some(kind_name)) = (api, kind_name) else {
        return Err(err(path, "Required value: apiVersion and kind are required"));
    };
    let Some(kind) = Kind::ALL.iter().copied().find(|k| k.as_str() == kind_name) else {
        return Err(err(
            format!("{path}.kind"),
            format!(
                "Unsupported value: {}: a snapshot holds only what the scheduler reads: {}",
                quoted(kind_name),
                kind_names()
            ),
        ));
    };
    let want = api_version(kind);
    if api != want {
        return Err(err(
            format!("{path}.apiVersion"),
            format!(
                "Unsupported value: {} for kind {kind_name}: supported values: {}",
                quoted(api),
                quoted(want)
            ),
        ));
    }
    let meta = match map.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            return Err(err(
                format!("{path}.metadata"),
                format!("Invalid value: {}: expected an object", shown(other)),
            ));
        }
    };
    let meta_path = format!("{path}.metadata.");
    let (name, namespace) = match meta {
        Some(m) => (
            str_field(m, "name", &meta_path)?.map(str::to_string),
            str_field(m, "namespace", &meta_path)?.map(str::to_string),
        ),
        None => (None, None),
    };
    let what = match (&namespace, &name) {
        (Some(ns), Some(n)) => format!("{path} ({kind_name} {ns}/{n})"),
        (None, Some(n)) => format!("{path} ({kind_name} {n})"),
        _ => path.to_string(),
    };
    if name.as_deref().is_none_or(str::is_empty) {
        return Err(err(format!("{path}.metadata.name"), "Required value: name is required"));
    }
    decode(kind, item).map_err(|e| SnapshotError {
        path: if e.path.is_empty() {
            what
        } else {
            format!("{what}: {}", e.path)
        },
        message: e.message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_decodes_from_its_own_encoding() {
        for kind in Kind::ALL {
            let v = serde_json::json!({
                "apiVersion": api_version(kind),
                "kind": kind.as_str(),
                "metadata": {"name": "x"},
            });
            let o = decode(kind, v).unwrap();
            assert_eq!(o.kind(), kind);
            let back = serde_json::to_value(Item(&o)).unwrap();
            assert_eq!(back["kind"], kind.as_str());
            assert_eq!(back["apiVersion"], api_version(kind));
        }
    }
}
