//! CustomResourceDefinitions: validating and establishing them, serving their resources dynamically
//! (every served version, status subresource, printer columns, selectable fields) and treating custom
//! objects per their structural schema: unknown fields pruned (unless
//! `x-kubernetes-preserve-unknown-fields`), `default`s applied, and types, `required`, `enum`,
//! `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems` and `pattern`-free string formats
//! checked with kube-apiserver's messages. `x-kubernetes-validations` (CEL) rules are not evaluated.

use serde_json::{Map, Value, json};

use crate::admission::Operation;
use crate::api::State;
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resources::{GroupResource, PrinterColumn, ResourceInfo};

/// Validates a CRD and fills its status (names accepted, established, stored versions).
pub fn admit(
    _state: &State,
    res: &ResourceInfo,
    op: Operation,
    old: Option<&Value>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let name = meta::name(obj).to_string();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let plural = spec.pointer("/names/plural").and_then(Value::as_str).unwrap_or("");
    let kind = spec.pointer("/names/kind").and_then(Value::as_str).unwrap_or("");
    let scope = spec.get("scope").and_then(Value::as_str).unwrap_or("");
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut causes = Vec::new();
    if name != format!("{plural}.{group}") {
        causes.push(FieldCause::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if !group.contains('.') {
        causes.push(FieldCause::invalid(
            "spec.group",
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        causes.push(FieldCause::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        causes.push(FieldCause::required("spec.names.kind", ""));
    }
    if !matches!(scope, "Namespaced" | "Cluster") {
        causes.push(FieldCause::not_supported(
            "spec.scope",
            &json!(scope),
            &["Cluster", "Namespaced"],
        ));
    }
    if versions.is_empty() {
        causes.push(FieldCause::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let storage: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .collect();
    if !versions.is_empty() && storage.len() != 1 {
        causes.push(FieldCause::invalid(
            "spec.versions",
            &json!(versions.len()),
            "must have exactly one version marked as storage version",
        ));
    }
    if let Some(old) = old {
        for f in ["group"] {
            if old["spec"].get(f) != spec.get(f) {
                causes.push(FieldCause::immutable(
                    format!("spec.{f}"),
                    spec.get(f).unwrap_or(&Value::Null),
                ));
            }
        }
        if old.pointer("/spec/names/plural") != spec.pointer("/names/plural") {
            causes.push(FieldCause::immutable(
                "spec.names.plural",
                spec.pointer("/names/plural").unwrap_or(&Value::Null),
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, &name, causes));
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut)
    {
        names.entry("singular").or_insert(json!(kind.to_lowercase()));
        names.entry("listKind").or_insert(json!(format!("{kind}List")));
    }
    let storage_version = storage
        .first()
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let now = meta::now_rfc3339();
    let mut stored = old
        .and_then(|o| o.pointer("/status/storedVersions"))
        .map(|v| meta::string_list(Some(v)))
        .unwrap_or_default();
    if !stored.contains(&storage_version) {
        stored.push(storage_version);
    }
    let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let transition = if op == Operation::Create {
        now.clone()
    } else {
        old.and_then(|o| o.pointer("/status/conditions/0/lastTransitionTime"))
            .and_then(Value::as_str)
            .unwrap_or(&now)
            .to_string()
    };
    obj["status"] = json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": transition},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": transition},
        ],
        "storedVersions": stored,
    });
    Ok(())
}

/// Serves the resources a stored CRD defines.
pub fn register(state: &mut State, crd: &Value) {
    let spec = &crd["spec"];
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("").to_string();
    let names = &spec["names"];
    let plural = names.get("plural").and_then(Value::as_str).unwrap_or("").to_string();
    let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map_or_else(|| kind.to_lowercase(), str::to_string);
    let namespaced = spec.get("scope").and_then(Value::as_str) == Some("Namespaced");
    let mut infos = Vec::new();
    let mut storage_version = None;
    for v in spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        let version = v.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage_version = Some(version.clone());
        }
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: c.get("name").and_then(Value::as_str).unwrap_or("").into(),
                        type_: c.get("type").and_then(Value::as_str).unwrap_or("string").into(),
                        json_path: c.get("jsonPath").and_then(Value::as_str).unwrap_or("").into(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        description: c.get("description").and_then(Value::as_str).unwrap_or("").into(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selectable_fields = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(|x| x.get("jsonPath").and_then(Value::as_str))
                    .map(|p| p.trim_start_matches('.').to_string())
                    .collect()
            })
            .unwrap_or_default();
        infos.push(ResourceInfo {
            group: group.clone(),
            version,
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced,
            short_names: meta::string_list(names.get("shortNames")),
            categories: meta::string_list(names.get("categories")),
            status_subresource: v.pointer("/subresources/status").is_some(),
            builtin: None,
            storage: GroupResource::new(&group, &plural),
            schema: Some(
                v.pointer("/schema/openAPIV3Schema")
                    .cloned()
                    .unwrap_or(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
            ),
            printer_columns,
            selectable_fields,
        });
    }
    state
        .registry
        .set_custom(&group, &plural, infos, storage_version.as_deref());
}

/// Stops serving a removed CRD's resources and drops its objects.
pub fn unregister(state: &mut State, crd: &Value) {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    state.registry.set_custom(&group, &plural, Vec::new(), None);
    state.store.drop_resource(&GroupResource::new(&group, &plural));
}

/// The name of the CRD that defines a custom resource.
pub fn owning_crd_name(_state: &State, res: &ResourceInfo) -> Option<String> {
    if res.builtin.is_some() {
        None
    } else {
        Some(format!("{}.{}", res.plural, res.group))
    }
}

/// Admits a custom object: prunes, defaults and validates it against its version's schema.
pub fn admit_custom(
    _state: &mut State,
    res: &ResourceInfo,
    obj: &mut Value,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    let _ = subresource;
    let Some(schema) = &res.schema else { return Ok(()) };
    let mut causes = Vec::new();
    if let Some(m) = obj.as_object_mut() {
        let props = schema.get("properties").and_then(Value::as_object);
        let preserve = schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true);
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match props.and_then(|p| p.get(&k)) {
                Some(s) => {
                    if let Some(v) = m.get_mut(&k) {
                        walk(v, s, &k, &mut causes);
                    }
                }
                None if !preserve => {
                    m.remove(&k);
                }
                None => {}
            }
        }
        if let Some(props) = props {
            for (k, s) in props {
                if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") || m.contains_key(k) {
                    continue;
                }
                if let Some(d) = s.get("default") {
                    let mut d = d.clone();
                    walk(&mut d, s, k, &mut causes);
                    m.insert(k.clone(), d);
                }
            }
        }
        for r in meta::string_list(schema.get("required")) {
            if !m.contains_key(&r) && !matches!(r.as_str(), "apiVersion" | "kind" | "metadata") {
                causes.push(FieldCause::required(r, ""));
            }
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&res.group, &res.kind, meta::name(obj), causes))
    }
}

fn type_matches(v: &Value, ty: &str, schema: &Value) -> bool {
    if schema.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return v.is_string() || v.is_i64() || v.is_u64();
    }
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

fn walk(v: &mut Value, schema: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    if v.is_null() {
        if schema.get("nullable").and_then(Value::as_bool) != Some(true) {
            causes.push(FieldCause::invalid(
                path,
                v,
                &format!(
                    "{path} in body must be of type {}: \"null\"",
                    schema.get("type").and_then(Value::as_str).unwrap_or("object")
                ),
            ));
        }
        return;
    }
    if let Some(ty) = schema.get("type").and_then(Value::as_str)
        && !type_matches(v, ty, schema)
    {
        let got = match v {
            Value::String(_) => "string",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_f64() => "number",
            Value::Number(_) => "integer",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
            Value::Null => "null",
        };
        causes.push(FieldCause::invalid(
            path,
            &json!(got),
            &format!("{path} in body must be of type {ty}: {got:?}"),
        ));
        return;
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        let allowed: Vec<String> = e
            .iter()
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
            .collect();
        let refs: Vec<&str> = allowed.iter().map(String::as_str).collect();
        causes.push(FieldCause::not_supported(path, v, &refs));
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            causes.push(FieldCause::invalid(
                path,
                v,
                &format!("{path} in body should be greater than or equal to {min}"),
            ));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            causes.push(FieldCause::invalid(
                path,
                v,
                &format!("{path} in body should be less than or equal to {max}"),
            ));
        }
    }
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            causes.push(FieldCause::invalid(
                path,
                v,
                &format!("{path} in body should be at least {min} chars long"),
            ));
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            causes.push(FieldCause::invalid(
                path,
                v,
                &format!("{path} in body may not be more than {max} bytes"),
            ));
        }
    }
    match v {
        Value::Object(m) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let preserve = schema
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool)
                == Some(true)
                || schema.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true);
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let child_path = format!("{path}.{k}");
                match (props.and_then(|p| p.get(&k)), additional) {
                    (Some(s), _) | (None, Some(s)) => {
                        if let Some(c) = m.get_mut(&k) {
                            walk(c, s, &child_path, causes);
                        }
                    }
                    (None, None) if !preserve && props.is_some() => {
                        m.remove(&k);
                    }
                    (None, None) if !preserve && schema.get("type").and_then(Value::as_str) == Some("object") => {
                        m.remove(&k);
                    }
                    _ => {}
                }
            }
            if let Some(props) = props {
                for (k, s) in props {
                    if !m.contains_key(k)
                        && let Some(d) = s.get("default")
                    {
                        m.insert(k.clone(), d.clone());
                    }
                }
            }
            for r in meta::string_list(schema.get("required")) {
                if !m.contains_key(&r) {
                    causes.push(FieldCause::required(format!("{path}.{r}"), ""));
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                causes.push(FieldCause::invalid(
                    path,
                    &json!(items.len()),
                    &format!("{path} in body should have at least {min} items"),
                ));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && (items.len() as u64) > max
            {
                causes.push(FieldCause::new_too_many(path, items.len(), max));
            }
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, s, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

impl FieldCause {
    /// `<field>: Too many: <n>: must have at most <max> items`.
    fn new_too_many(path: &str, n: usize, max: u64) -> FieldCause {
        FieldCause {
            field: path.to_string(),
            reason: "FieldValueTooMany",
            message: format!("Too many: {n}: must have at most {max} items"),
        }
    }
}

/// A tiny helper for callers building CRD JSON in tests and tools.
pub fn crd_object(group: &str, kind: &str, plural: &str, namespaced: bool, schema: Value) -> Value {
    let mut v = Map::new();
    v.insert("name".into(), json!("v1"));
    v.insert("served".into(), json!(true));
    v.insert("storage".into(), json!(true));
    v.insert("schema".into(), json!({"openAPIV3Schema": schema}));
    v.insert("subresources".into(), json!({"status": {}}));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "versions": [Value::Object(v)],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_prunes_defaults_and_validates() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1},
                "mode": {"type": "string", "default": "fast", "enum": ["fast", "slow"]},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}});
        let mut obj = json!({"apiVersion": "x.dev/v1", "kind": "Thing", "metadata": {"name": "t"},
            "spec": {"size": 2, "junk": 1, "extra": {"anything": [1]}}, "top": 1});
        let mut causes = Vec::new();
        walk(
            obj.get_mut("spec").unwrap(),
            &schema["properties"]["spec"],
            "spec",
            &mut causes,
        );
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(
            obj["spec"],
            json!({"size": 2, "mode": "fast", "extra": {"anything": [1]}})
        );

        let mut bad = json!({"size": "big", "mode": "medium"});
        let mut causes = Vec::new();
        walk(&mut bad, &schema["properties"]["spec"], "spec", &mut causes);
        let rendered: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            rendered,
            vec![
                "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\"",
                "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
            ]
        );
        let mut missing = json!({});
        let mut causes = Vec::new();
        walk(&mut missing, &schema["properties"]["spec"], "spec", &mut causes);
        assert_eq!(causes[0].field, "spec.size");
        assert_eq!(causes[0].reason, "FieldValueRequired");
    }
}
