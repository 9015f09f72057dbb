//! Structural schemas of custom resources: unknown fields pruned (unless
//! `x-kubernetes-preserve-unknown-fields`), `default`s applied, and types, `required`, `enum`,
//! `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems` checked with kube-apiserver's
//! messages. `x-kubernetes-validations` (CEL) rules are evaluated afterwards, in [`super::rules`].

use serde_json::{Value, json};

use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::ResourceInfo;

/// Admits a custom object: prunes, defaults and validates it against its version's schema.
pub(crate) fn admit_custom(res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
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

/// Evaluates the schema's `x-kubernetes-validations` rules on an admitted object (`old`: the stored one,
/// on update).
pub(crate) fn check_rules(res: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let Some(rules) = &res.rules else { return Ok(()) };
    let causes = super::rules::evaluate(rules, obj, old);
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
