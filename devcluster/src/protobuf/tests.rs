//! The protobuf codec against every served kind: a fully populated object (every property of the
//! kind's k8s-openapi model, with non-zero values) goes JSON -> protobuf -> JSON unchanged and encodes
//! to the same bytes again, so no field of any kind is dropped or renamed silently.

use serde_json::{Map, Value, json};

use super::*;
use crate::resource::ResourceInfo;

/// Builds a value for a schemars schema: every property, one array item, one map entry; `MicroTime`,
/// `Time`, `Quantity`, `IntOrString` and the raw-JSON types in their JSON forms.
struct Populate<'a> {
    defs: &'a Map<String, Value>,
    /// How many times each definition is on the current path (recursive types stop after two).
    stack: Vec<String>,
    counter: u64,
}

impl Populate<'_> {
    fn value(&mut self, schema: &Value) -> Value {
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/$defs/").to_string();
            let short = name.rsplit('.').next().unwrap_or("");
            match short {
                "MicroTime" => return json!("2026-01-02T03:04:05.123456Z"),
                "Time" => return json!("2026-01-02T03:04:05Z"),
                "Quantity" => return json!("1500m"),
                "IntOrString" => {
                    self.counter += 1;
                    return if self.counter.is_multiple_of(2) {
                        json!("25%")
                    } else {
                        json!(8080)
                    };
                }
                "RawExtension" | "JSON" => return json!({"any": ["json", 1, true]}),
                "FieldsV1" => return json!({"f:metadata": {"f:labels": {}}}),
                _ => {}
            }
            if self.stack.iter().filter(|s| **s == name).count() >= 2 {
                return json!({});
            }
            let def = self.defs.get(&name).cloned().unwrap_or(Value::Null);
            self.stack.push(name);
            let v = self.value(&def);
            self.stack.pop();
            return v;
        }
        if let Some(first) = schema.get("oneOf").and_then(Value::as_array).and_then(|a| a.first()) {
            return self.value(first);
        }
        if schema.get("x-kubernetes-int-or-string") == Some(&json!(true)) {
            return json!(8080);
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => {
                let mut out = Map::new();
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    for (k, p) in props {
                        out.insert(k.clone(), self.value(p));
                    }
                }
                if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                    out.insert("key-1".into(), self.value(additional));
                }
                Value::Object(out)
            }
            Some("array") => {
                let item = schema.get("items").cloned().unwrap_or(json!({"type": "string"}));
                json!([self.value(&item)])
            }
            Some("string") => match schema.get("format").and_then(Value::as_str) {
                Some("byte") => json!("aGVsbG8="),
                Some("date-time") => json!("2026-01-02T03:04:05Z"),
                _ => json!("x"),
            },
            Some("integer") => match schema.get("format").and_then(Value::as_str) {
                Some("int64") => json!(1_234_567_890_123_i64),
                _ => json!(7),
            },
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            _ => json!({"any": "value"}),
        }
    }
}

fn populated(schema: &schemars::Schema, api_version: &str, kind: &str) -> Value {
    let root = schema.as_value();
    let defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut p = Populate {
        defs: &defs,
        stack: Vec::new(),
        counter: 0,
    };
    let mut v = p.value(root);
    v["apiVersion"] = json!(api_version);
    v["kind"] = json!(kind);
    v
}

/// Removes `apiVersion` and `kind` from the objects embedded in `expected` (a StatefulSet's
/// `volumeClaimTemplates`) where `decoded` lacks them: an embedded object's TypeMeta has no protobuf
/// field upstream either, so a protobuf client never sends or receives it.
fn drop_embedded_type_meta(expected: &mut Value, decoded: &Value, root: bool) {
    match (expected, decoded) {
        (Value::Object(e), Value::Object(d)) => {
            if !root && !d.contains_key("apiVersion") && !d.contains_key("kind") {
                e.remove("apiVersion");
                e.remove("kind");
            }
            for (k, v) in e.iter_mut() {
                if let Some(dv) = d.get(k) {
                    drop_embedded_type_meta(v, dv, false);
                }
            }
        }
        (Value::Array(e), Value::Array(d)) => {
            for (x, y) in e.iter_mut().zip(d) {
                drop_embedded_type_meta(x, y, false);
            }
        }
        _ => {}
    }
}

/// JSON -> protobuf -> JSON is the identity and protobuf is stable, for `object` of `kind`.
fn round_trip(object: &Value) {
    let bytes = encode(object).unwrap_or_else(|e| panic!("{} does not encode: {e}", object["kind"]));
    let decoded = decode(&bytes).unwrap_or_else(|e| panic!("{} does not decode: {e}", object["kind"]));
    let mut object = object.clone();
    drop_embedded_type_meta(&mut object, &decoded.object, true);
    let object = &object;
    assert!(decoded.unknown.is_empty(), "{:?}", decoded.unknown);
    if decoded.object != *object {
        let mut missing = Vec::new();
        crate::resource::decode::unknown_fields(object, &decoded.object, "", &mut missing);
        panic!(
            "{} changed in the round trip; lost: {missing:?}\nbefore: {object:#}\nafter: {:#}",
            object["kind"], decoded.object
        );
    }
    assert_eq!(
        encode(&decoded.object).unwrap(),
        bytes,
        "{} encodes differently",
        object["kind"]
    );
}

fn builtin_kinds() -> Vec<ResourceInfo> {
    crate::kinds::builtin_resources()
}

/// Whether `path` of a `res` object is one of the documented [`SCHEMA_GAPS`].
fn known_gap(res: &ResourceInfo, path: &str) -> bool {
    // The gaps name `<message>.<field>`; the test knows which path reaches each.
    let by_path = [
        ("Node", "status.nodeInfo.runningInUserNamespace", SCHEMA_GAPS[0]),
        (
            "ResourceClaim",
            "spec.devices.requests[0].exactly.derivedAttributes",
            SCHEMA_GAPS[1],
        ),
        (
            "ResourceClaim",
            "spec.devices.requests[0].firstAvailable[0].derivedAttributes",
            SCHEMA_GAPS[2],
        ),
        (
            "ResourceClaimTemplate",
            "spec.spec.devices.requests[0].exactly.derivedAttributes",
            SCHEMA_GAPS[1],
        ),
        (
            "ResourceClaimTemplate",
            "spec.spec.devices.requests[0].firstAvailable[0].derivedAttributes",
            SCHEMA_GAPS[2],
        ),
        (
            "ResourceSlice",
            "spec.devices[0].consumesCounters[0].compatibilityGroups",
            SCHEMA_GAPS[3],
        ),
    ];
    by_path
        .iter()
        .any(|(kind, p, gap)| res.kind == *kind && path == *p && SCHEMA_GAPS.contains(gap))
}

fn remove_path(object: &mut Value, path: &str) {
    let pointer = format!("/{}", path.replace(['.', '['], "/").replace(']', ""));
    if let Some((parent, key)) = pointer.rsplit_once('/')
        && let Some(m) = object.pointer_mut(parent).and_then(Value::as_object_mut)
    {
        m.remove(key);
    }
}

/// Every field of `object` the protobuf schema lacks (encoding stops at the first; this removes each and
/// tries again, so one run names them all).
fn missing_fields(object: &Value) -> Vec<String> {
    let mut object = object.clone();
    let mut missing = Vec::new();
    while let Err(e) = encode(&object) {
        if !e.message.starts_with("field not in") || missing.contains(&e.path) {
            missing.push(format!("{e}"));
            break;
        }
        remove_path(&mut object, &e.path);
        missing.push(e.path.clone());
    }
    missing
}

#[test]
fn every_served_kind_round_trips_fully_populated() {
    let mut covered = Vec::new();
    let mut missing = Vec::new();
    for res in builtin_kinds() {
        let Some(schema) = res.strategy.json_schema() else {
            panic!("{} has no typed schema to test its protobuf form with", res.kind);
        };
        let object = populated(&schema, &res.api_version(), &res.kind);
        let mut object = object;
        for path in missing_fields(&object) {
            if !known_gap(&res, &path) {
                missing.push(format!("{} {}: {path}", res.api_version(), res.kind));
            }
            remove_path(&mut object, &path);
        }
        round_trip(&object);
        covered.push(res.kind.clone());
        // Every subresource body kind too (Binding, Eviction, Scale, ...).
        for sub in res.strategy.subresources() {
            if sub.kind.is_empty() {
                continue;
            }
            let api_version = if sub.group.is_empty() {
                sub.version.to_string()
            } else {
                format!("{}/{}", sub.group, sub.version)
            };
            assert!(supports(&api_version, sub.kind), "{} has no protobuf form", sub.kind);
        }
    }
    assert!(
        missing.is_empty(),
        "fields the protobuf schema lacks:\n{}",
        missing.join("\n")
    );
    assert!(covered.len() >= 15, "{covered:?}");
}

#[test]
fn lists_status_and_options_round_trip() {
    let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "pods \"x\" not found", "reason": "NotFound", "code": 404,
        "details": {"name": "x", "kind": "pods", "causes": [{"reason": "FieldValueInvalid", "message": "m", "field": "spec"}]}});
    round_trip(&status);
    let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "12", "continue": "c"},
        "items": [{"metadata": {"name": "a", "namespace": "default", "labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}]});
    round_trip(&list);
    let delete = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground", "preconditions": {"uid": "u", "resourceVersion": "3"}, "dryRun": ["All"]});
    round_trip(&delete);
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 5}});
    round_trip(&eviction);
}

#[test]
fn zero_values_drop_where_go_would_and_stay_where_they_mean_something() {
    // What client-go sends for `kubectl create job x --image=busybox`: Go writes every non-pointer field,
    // zero or not. Pointer fields (parallelism: 0 suspends the Job's pods) keep their zero.
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": ""},
        "spec": {"parallelism": 0, "suspend": false, "template": {"metadata": {}, "spec": {
            "containers": [{"name": "x", "image": "busybox", "resources": {}, "imagePullPolicy": "", "stdin": false}],
            "restartPolicy": "Never", "nodeName": ""}}}, "status": {}});
    let bytes = encode(&job).unwrap();
    let back = decode(&bytes).unwrap().object;
    assert_eq!(back["metadata"], json!({"name": "x"}));
    assert_eq!(back["spec"]["parallelism"], json!(0));
    assert_eq!(back["spec"]["suspend"], json!(false));
    let c = &back["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c, &json!({"name": "x", "image": "busybox", "resources": {}}));
    assert_eq!(back["spec"]["template"]["spec"].get("nodeName"), None);
}

#[test]
fn hostile_bodies_are_errors_not_panics() {
    let ok = encode(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})).unwrap();
    // Every truncation of a valid body and every single-byte corruption decodes or fails cleanly.
    for cut in 0..ok.len() {
        let _ = decode(&ok[..cut]);
    }
    for i in 0..ok.len() {
        for b in [0x00, 0x7f, 0x80, 0xff] {
            let mut bad = ok.clone();
            bad[i] = b;
            let _ = decode(&bad);
        }
    }
    assert!(decode(b"k8s\0").is_err());
    assert!(decode(b"{}").is_err());
    // Unknown kinds and deep nesting.
    let unknown = encode_as("v1", "Namespace", &json!({})).unwrap();
    let mut forged = unknown.clone();
    let pos = forged.windows(9).position(|w| w == b"Namespace").unwrap();
    forged[pos..pos + 9].copy_from_slice(b"Nonesuchx");
    assert!(decode(&forged).unwrap_err().message.contains("no kind"));
    let mut deep = json!({});
    for _ in 0..200 {
        deep = json!({"properties": {"a": deep}});
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": deep}}]}});
    assert!(encode(&crd).is_err());
}

#[test]
fn unknown_field_numbers_are_reported() {
    let mut bytes = encode(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})).unwrap();
    // Append field 99 (varint) to the envelope's raw object: rebuild the envelope by hand.
    let raw = {
        let mut w = wire::Writer::default();
        w.bytes(1, &{
            let mut m = wire::Writer::default();
            m.bytes(1, b"a");
            m.buf
        });
        w.tag(99, wire::WireType::Varint);
        w.varint(7);
        w.buf
    };
    let mut tm = wire::Writer::default();
    tm.bytes(1, b"v1");
    tm.bytes(2, b"ConfigMap");
    let mut env = wire::Writer::default();
    env.buf.extend_from_slice(&MAGIC);
    env.bytes(1, &tm.buf);
    env.bytes(2, &raw);
    bytes.clear();
    bytes.extend_from_slice(&env.buf);
    let d = decode(&bytes).unwrap();
    assert_eq!(d.object["metadata"]["name"], "a");
    assert_eq!(
        d.unknown,
        vec!["unknown field number 99 of k8s.io.api.core.v1.ConfigMap".to_string()]
    );
}

#[test]
fn watch_frames_round_trip() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "5"}});
    let mut stream = watch_frame("ADDED", &encode(&pod).unwrap());
    stream.extend(watch_frame("DELETED", &encode(&pod).unwrap()));
    let half = stream.len() - 3;
    let mut buf = stream[..half].to_vec();
    let first = read_watch_frames(&mut buf).unwrap();
    assert_eq!(first.len(), 1);
    buf.extend_from_slice(&stream[half..]);
    let second = read_watch_frames(&mut buf).unwrap();
    assert_eq!(second, vec![("DELETED".to_string(), pod.clone())]);
    assert_eq!(first[0].1, pod);
}

#[test]
fn accept_headers_negotiate_like_client_go() {
    let n = |s: &str| Wire::negotiate(std::iter::once(s));
    assert_eq!(
        n("application/vnd.kubernetes.protobuf, */*"),
        Wire::Protobuf { json_fallback: true }
    );
    assert_eq!(
        n("application/vnd.kubernetes.protobuf"),
        Wire::Protobuf { json_fallback: false }
    );
    assert_eq!(n("application/json, application/vnd.kubernetes.protobuf"), Wire::Json);
    assert_eq!(
        n("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
        Wire::Json
    );
    assert_eq!(Wire::negotiate(std::iter::empty()), Wire::Json);
    assert_eq!(
        n("application/vnd.kubernetes.protobuf, */*").for_kind("kwas.dev/v1alpha1", "JobSet"),
        Ok(Wire::Json)
    );
    assert!(
        n("application/vnd.kubernetes.protobuf")
            .for_kind("kwas.dev/v1alpha1", "JobSet")
            .is_err()
    );
}

fn configmap_envelope(raw: &[u8]) -> Vec<u8> {
    let mut tm = wire::Writer::default();
    tm.bytes(1, b"v1");
    tm.bytes(2, b"ConfigMap");
    let mut env = wire::Writer::default();
    env.buf.extend_from_slice(&MAGIC);
    env.bytes(1, &tm.buf);
    env.bytes(2, raw);
    env.buf
}

fn pod_envelope(spec: &[u8]) -> Vec<u8> {
    let mut raw = wire::Writer::default();
    raw.bytes(2, spec);
    let mut tm = wire::Writer::default();
    tm.bytes(1, b"v1");
    tm.bytes(2, b"Pod");
    let mut env = wire::Writer::default();
    env.buf.extend_from_slice(&MAGIC);
    env.bytes(1, &tm.buf);
    env.bytes(2, &raw.buf);
    env.buf
}

#[test]
fn empty_repeated_messages_past_the_limit_stop_decoding() {
    use crate::resource::decode::MAX_LIST_ENTRIES;
    // PodSpec.containers is field 2: each empty Container is two bytes.
    let mut spec = wire::Writer::default();
    for _ in 0..MAX_LIST_ENTRIES {
        spec.bytes(2, b"");
    }
    let d = decode(&pod_envelope(&spec.buf)).unwrap();
    assert_eq!(
        d.object["spec"]["containers"].as_array().map(Vec::len),
        Some(MAX_LIST_ENTRIES)
    );
    spec.bytes(2, b"");
    let e = decode(&pod_envelope(&spec.buf)).unwrap_err();
    assert!(e.too_large, "{e}");
    assert_eq!(
        e.to_string(),
        "spec.containers: the allowed maximum list entries in an object is 10000, got more"
    );
}

#[test]
fn at_most_100_unknown_field_numbers_are_kept_and_the_rest_counted() {
    let mut raw = wire::Writer::default();
    for _ in 0..1000 {
        raw.tag(99, wire::WireType::Varint);
        raw.varint(1);
    }
    let d = decode(&configmap_envelope(&raw.buf)).unwrap();
    assert_eq!(d.unknown.len(), 100);
    assert_eq!(d.unknown_more, 900);
}
