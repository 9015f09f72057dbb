//! The protobuf schema of the kinds devcluster serves: field numbers, types and JSON names per message,
//! generated from the upstream `generated.proto` files and Go types of Kubernetes v1.37 by
//! `devcluster/tools/protoschema.py` into `schema/*.txt` (one file per proto package), parsed once.
//!
//! A field line is `<number> <protoName> <jsonName> <opt|rep|map> <type> [ptr] [omitempty] [inline] [nogo]`;
//! a map's type is `<key>,<value>`. `ptr` and `omitempty` come from the Go field, so a decoded object
//! drops zero values exactly where Go's JSON encoding would; `inline` is a struct whose fields JSON
//! inlines into the parent while protobuf nests it (core/v1 `Volume.volumeSource`).

use std::collections::HashMap;
use std::sync::LazyLock;

/// Every schema file, in dependency-free order (references are resolved after all are read).
const FILES: &[(&str, &str)] = &[
    ("meta_v1", include_str!("schema/meta_v1.txt")),
    ("runtime", include_str!("schema/runtime.txt")),
    ("intstr", include_str!("schema/intstr.txt")),
    ("resource_quantity", include_str!("schema/resource_quantity.txt")),
    ("core_v1", include_str!("schema/core_v1.txt")),
    ("apps_v1", include_str!("schema/apps_v1.txt")),
    ("batch_v1", include_str!("schema/batch_v1.txt")),
    ("rbac_v1", include_str!("schema/rbac_v1.txt")),
    ("scheduling_v1", include_str!("schema/scheduling_v1.txt")),
    ("scheduling_v1alpha3", include_str!("schema/scheduling_v1alpha3.txt")),
    ("scheduling_v1beta1", include_str!("schema/scheduling_v1beta1.txt")),
    ("coordination_v1", include_str!("schema/coordination_v1.txt")),
    ("events_v1", include_str!("schema/events_v1.txt")),
    ("policy_v1", include_str!("schema/policy_v1.txt")),
    ("storage_v1", include_str!("schema/storage_v1.txt")),
    ("resource_v1", include_str!("schema/resource_v1.txt")),
    ("authorization_v1", include_str!("schema/authorization_v1.txt")),
    ("authentication_v1", include_str!("schema/authentication_v1.txt")),
    ("autoscaling_v1", include_str!("schema/autoscaling_v1.txt")),
    ("networking_v1", include_str!("schema/networking_v1.txt")),
    ("discovery_v1", include_str!("schema/discovery_v1.txt")),
    ("apiextensions_v1", include_str!("schema/apiextensions_v1.txt")),
];

/// A scalar protobuf type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Double,
    Float,
}

impl Scalar {
    fn parse(s: &str) -> Option<Scalar> {
        Some(match s {
            "string" => Scalar::String,
            "bytes" => Scalar::Bytes,
            "bool" => Scalar::Bool,
            "int32" => Scalar::Int32,
            "int64" => Scalar::Int64,
            "uint32" => Scalar::Uint32,
            "uint64" => Scalar::Uint64,
            "sint32" => Scalar::Sint32,
            "sint64" => Scalar::Sint64,
            "fixed32" => Scalar::Fixed32,
            "fixed64" => Scalar::Fixed64,
            "sfixed32" => Scalar::Sfixed32,
            "sfixed64" => Scalar::Sfixed64,
            "double" => Scalar::Double,
            "float" => Scalar::Float,
            _ => return None,
        })
    }
}

/// A field's value type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Type {
    /// A scalar.
    Scalar(Scalar),
    /// A message, by full name.
    Message(String),
}

/// A field's cardinality.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Label {
    /// Singular.
    Optional,
    /// `repeated`.
    Repeated,
    /// `map<key, value>`; the value is the field's type.
    Map(Scalar),
}

/// One field of a message.
#[derive(Debug, Clone)]
pub(super) struct Field {
    /// The field number.
    pub number: u32,
    /// The JSON name (empty for an inline struct).
    pub json: String,
    /// Singular, repeated or map.
    pub label: Label,
    /// The value type.
    pub ty: Type,
    /// The Go field is a pointer: a zero value is meaningful and kept.
    pub ptr: bool,
    /// The Go field's JSON tag has `omitempty`: a zero scalar is dropped when decoding.
    pub omitempty: bool,
    /// JSON inlines this message's fields into the parent.
    pub inline: bool,
}

/// Values JSON and protobuf represent differently, converted by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    /// meta/v1 `Time`: RFC 3339 seconds.
    Time,
    /// meta/v1 `MicroTime`: RFC 3339 with microseconds.
    MicroTime,
    /// meta/v1 `Duration`: a Go duration string.
    Duration,
    /// `resource.Quantity`: a string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`: an embedded object (JSON, or a nested protobuf envelope).
    RawExtension,
    /// Raw JSON bytes: meta/v1 `FieldsV1`, apiextensions `JSON`.
    RawJson,
    /// apiextensions `JSONSchemaPropsOrArray`: a schema or an array of schemas.
    SchemaOrArray,
    /// apiextensions `JSONSchemaPropsOrBool`: a boolean or a schema.
    SchemaOrBool,
    /// apiextensions `JSONSchemaPropsOrStringArray`: a schema or an array of strings.
    SchemaOrStringArray,
    /// A named Go slice (meta/v1 `Verbs`, `ExtraValue`): a JSON array, `repeated items = 1` on the wire.
    Wrapper,
}

/// Where a JSON key of a message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// To this field (index into `fields`).
    Field(usize),
    /// Into this inline field's message.
    Inline(usize),
}

/// One message.
#[derive(Debug)]
pub(super) struct Message {
    /// The full name (`k8s.io.api.core.v1.Pod`).
    pub name: String,
    /// Fields in number order.
    pub fields: Vec<Field>,
    /// Field index by number.
    pub by_number: HashMap<u32, usize>,
    /// Route by JSON key, inline fields' keys included.
    pub by_json: HashMap<String, Route>,
    /// Hand conversion, if any.
    pub special: Option<Special>,
}

/// Every message.
#[derive(Debug)]
pub(super) struct Schema {
    messages: HashMap<String, Message>,
}

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
const EXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1";

fn special_of(name: &str) -> Option<Special> {
    let (pkg, short) = name.rsplit_once('.')?;
    Some(match (pkg, short) {
        (META, "Time") => Special::Time,
        (META, "MicroTime") => Special::MicroTime,
        (META, "Duration") => Special::Duration,
        (META, "FieldsV1") => Special::RawJson,
        ("k8s.io.apimachinery.pkg.api.resource", "Quantity") => Special::Quantity,
        ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => Special::IntOrString,
        ("k8s.io.apimachinery.pkg.runtime", "RawExtension") => Special::RawExtension,
        (EXT, "JSON") => Special::RawJson,
        (EXT, "JSONSchemaPropsOrArray") => Special::SchemaOrArray,
        (EXT, "JSONSchemaPropsOrBool") => Special::SchemaOrBool,
        (EXT, "JSONSchemaPropsOrStringArray") => Special::SchemaOrStringArray,
        _ => return None,
    })
}

impl Schema {
    /// The message of this full name.
    pub(super) fn message(&self, name: &str) -> Option<&Message> {
        self.messages.get(name)
    }

    /// Parses the schema files.
    pub(super) fn parse(files: &[(&str, &str)]) -> Result<Schema, String> {
        let mut messages: HashMap<String, Message> = HashMap::new();
        for (file, text) in files {
            let mut current: Option<Message> = None;
            let mut wrapper_next = None::<String>;
            for (i, line) in text.lines().enumerate() {
                let at = || format!("{file}.txt:{}", i + 1);
                if let Some(c) = line.strip_prefix("# wrapper: ") {
                    wrapper_next = Some(c.trim().to_string());
                    continue;
                }
                if line.trim().is_empty() || line.starts_with('#') || line.starts_with("package ") {
                    continue;
                }
                if let Some(name) = line.strip_prefix("message ") {
                    if let Some(m) = current.take() {
                        messages.insert(m.name.clone(), m);
                    }
                    let name = name.trim().to_string();
                    let special = if wrapper_next.as_deref() == Some(name.as_str()) {
                        Some(Special::Wrapper)
                    } else {
                        special_of(&name)
                    };
                    wrapper_next = None;
                    current = Some(Message {
                        name,
                        fields: Vec::new(),
                        by_number: HashMap::new(),
                        by_json: HashMap::new(),
                        special,
                    });
                    continue;
                }
                let Some(m) = current.as_mut() else {
                    return Err(format!("{}: a field outside a message", at()));
                };
                let parts: Vec<&str> = line.split_whitespace().collect();
                let [number, _proto, json, label, ty, flags @ ..] = parts.as_slice() else {
                    return Err(format!("{}: expected `<number> <proto> <json> <label> <type>`", at()));
                };
                let number: u32 = number.parse().map_err(|_| format!("{}: bad field number", at()))?;
                let scalar_or_message = |t: &str| match Scalar::parse(t) {
                    Some(s) => Type::Scalar(s),
                    None => Type::Message(t.to_string()),
                };
                let (label, ty) = match *label {
                    "opt" => (Label::Optional, scalar_or_message(ty)),
                    "rep" => (Label::Repeated, scalar_or_message(ty)),
                    "map" => {
                        let (k, v) = ty
                            .split_once(',')
                            .ok_or_else(|| format!("{}: map type without key", at()))?;
                        let k = Scalar::parse(k).ok_or_else(|| format!("{}: map key {k} is not a scalar", at()))?;
                        (Label::Map(k), scalar_or_message(v))
                    }
                    other => return Err(format!("{}: unknown label {other}", at())),
                };
                let inline = flags.contains(&"inline");
                m.by_number.insert(number, m.fields.len());
                m.fields.push(Field {
                    number,
                    json: if inline { String::new() } else { (*json).to_string() },
                    label,
                    ty,
                    ptr: flags.contains(&"ptr"),
                    omitempty: flags.contains(&"omitempty"),
                    inline,
                });
            }
            if let Some(m) = current.take() {
                messages.insert(m.name.clone(), m);
            }
        }
        // Resolve references and JSON routes (inline fields contribute their message's keys).
        let mut routes: HashMap<String, HashMap<String, Route>> = HashMap::new();
        for m in messages.values() {
            let mut by_json = HashMap::new();
            for (i, f) in m.fields.iter().enumerate() {
                if let Type::Message(t) = &f.ty
                    && !messages.contains_key(t)
                {
                    return Err(format!("{}.{}: unknown message {t}", m.name, f.number));
                }
                if f.inline {
                    let Type::Message(t) = &f.ty else {
                        return Err(format!("{}.{}: an inline field must be a message", m.name, f.number));
                    };
                    for key in json_keys(&messages, t, 0)? {
                        by_json.insert(key, Route::Inline(i));
                    }
                } else {
                    by_json.insert(f.json.clone(), Route::Field(i));
                }
            }
            routes.insert(m.name.clone(), by_json);
        }
        for (name, by_json) in routes {
            if let Some(m) = messages.get_mut(&name) {
                m.by_json = by_json;
            }
        }
        Ok(Schema { messages })
    }
}

/// The JSON keys a message contributes when inlined (its own and its inline fields', recursively).
fn json_keys(messages: &HashMap<String, Message>, name: &str, depth: usize) -> Result<Vec<String>, String> {
    if depth > 8 {
        return Err(format!("{name}: inline fields nest too deeply"));
    }
    let m = messages.get(name).ok_or_else(|| format!("unknown message {name}"))?;
    let mut keys = Vec::new();
    for f in &m.fields {
        match (&f.ty, f.inline) {
            (Type::Message(t), true) => keys.extend(json_keys(messages, t, depth + 1)?),
            _ => keys.push(f.json.clone()),
        }
    }
    Ok(keys)
}

static SCHEMA: LazyLock<Result<Schema, String>> = LazyLock::new(|| Schema::parse(FILES));

/// The schema of every served kind, or why it could not be read.
pub(super) fn schema() -> Result<&'static Schema, &'static str> {
    SCHEMA.as_ref().map_err(String::as_str)
}

/// The proto package of an API group and version.
pub(super) fn package(group: &str, version: &str) -> Option<String> {
    let pkg = match group {
        "" => "core",
        "meta.k8s.io" => return (version == "v1").then(|| META.to_string()),
        "apiextensions.k8s.io" => return (version == "v1").then(|| EXT.to_string()),
        "rbac.authorization.k8s.io" => "rbac",
        "authorization.k8s.io" => "authorization",
        "authentication.k8s.io" => "authentication",
        "apps" | "batch" | "policy" | "autoscaling" => group,
        g => g.strip_suffix(".k8s.io")?,
    };
    if pkg.contains('.') {
        return None;
    }
    Some(format!("k8s.io.api.{pkg}.{version}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_parses_and_every_reference_resolves() {
        let s = schema().unwrap();
        let pod = s.message("k8s.io.api.core.v1.Pod").unwrap();
        assert_eq!(pod.fields.iter().map(|f| f.number).collect::<Vec<_>>(), vec![1, 2, 3]);
        let volume = s.message("k8s.io.api.core.v1.Volume").unwrap();
        assert!(matches!(volume.by_json.get("configMap"), Some(Route::Inline(_))));
        assert_eq!(
            s.message("k8s.io.apimachinery.pkg.apis.meta.v1.Time").unwrap().special,
            Some(Special::Time)
        );
        assert_eq!(
            s.message("k8s.io.apimachinery.pkg.apis.meta.v1.Verbs").unwrap().special,
            Some(Special::Wrapper)
        );
    }

    #[test]
    fn packages_follow_the_api_group() {
        assert_eq!(package("", "v1").as_deref(), Some("k8s.io.api.core.v1"));
        assert_eq!(package("apps", "v1").as_deref(), Some("k8s.io.api.apps.v1"));
        assert_eq!(
            package("scheduling.k8s.io", "v1alpha3").as_deref(),
            Some("k8s.io.api.scheduling.v1alpha3")
        );
        assert_eq!(
            package("rbac.authorization.k8s.io", "v1").as_deref(),
            Some("k8s.io.api.rbac.v1")
        );
        assert_eq!(package("kwas.dev", "v1alpha1"), None);
    }
}
