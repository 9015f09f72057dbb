//! Helpers over the JSON form of objects: metadata fields, timestamps, paths.

use serde_json::{Map, Value};

/// The current time as Kubernetes renders `metav1.Time` (RFC 3339, seconds precision, UTC).
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    format_time(now)
}

/// Formats a timestamp with seconds precision, like `metav1.Time`.
pub fn format_time(t: jiff::Timestamp) -> String {
    let secs = t.as_second();
    match jiff::Timestamp::from_second(secs) {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => t.to_string(),
    }
}

/// Parses an RFC 3339 timestamp.
pub fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    s.parse::<jiff::Timestamp>().ok()
}

/// `metadata` of an object, if it is a map.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata` of an object, created if missing.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let map = ensure_object(obj);
    ensure_object(map.entry("metadata").or_insert_with(|| Value::Object(Map::new())))
}

/// Makes `v` an object (replacing any other value) and returns its map.
pub fn ensure_object(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable!("the value was just made an object"),
    }
}

/// A string field of metadata.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    metadata(obj).and_then(|m| m.get(field)).and_then(Value::as_str)
}

/// `metadata.name` (empty when missing).
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// `metadata.namespace` (empty when missing).
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace").unwrap_or("")
}

/// `metadata.uid` (empty when missing).
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid").unwrap_or("")
}

/// `metadata.resourceVersion` (empty when missing).
pub fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion").unwrap_or("")
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    meta_str(obj, "deletionTimestamp").is_some()
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    string_list(metadata(obj).and_then(|m| m.get("finalizers")))
}

/// Sets `metadata.finalizers` (removing the key when empty).
pub fn set_finalizers(obj: &mut Value, finalizers: Vec<String>) {
    let m = metadata_mut(obj);
    if finalizers.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert(
            "finalizers".into(),
            Value::Array(finalizers.into_iter().map(Value::String).collect()),
        );
    }
}

/// A string map field of metadata (labels, annotations).
pub fn string_map(obj: &Value, field: &str) -> Vec<(String, String)> {
    metadata(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// One annotation.
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)
        .and_then(|m| m.get("annotations"))
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// A list of strings (non-strings skipped).
pub fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// An owner reference, as far as garbage collection needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    /// `apiVersion` of the owner.
    pub api_version: String,
    /// `kind` of the owner.
    pub kind: String,
    /// `name` of the owner.
    pub name: String,
    /// `uid` of the owner.
    pub uid: String,
    /// `controller`.
    pub controller: bool,
    /// `blockOwnerDeletion`.
    pub block_owner_deletion: bool,
}

/// `metadata.ownerReferences`.
pub fn owner_refs(obj: &Value) -> Vec<OwnerRef> {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| OwnerRef {
                    api_version: r.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string(),
                    kind: r.get("kind").and_then(Value::as_str).unwrap_or("").to_string(),
                    name: r.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                    uid: r.get("uid").and_then(Value::as_str).unwrap_or("").to_string(),
                    controller: r.get("controller").and_then(Value::as_bool).unwrap_or(false),
                    block_owner_deletion: r.get("blockOwnerDeletion").and_then(Value::as_bool).unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Reads a dotted path (`spec.nodeName`, `involvedObject.name`) as a string the way field selectors
/// compare values: strings as-is, numbers and booleans rendered, missing as empty.
pub fn field_string(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// Reads a simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`,
/// `.status.conditions[?(@.type=="Ready")].status`) used by printer columns.
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('.');
    let mut cur = obj;
    for raw in split_json_path(path) {
        let (field, selector) = match raw.find('[') {
            Some(i) => (&raw[..i], Some(raw[i + 1..].trim_end_matches(']'))),
            None => (raw, None),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        if let Some(sel) = selector {
            let arr = cur.as_array()?;
            if let Ok(i) = sel.parse::<usize>() {
                cur = arr.get(i)?;
            } else if let Some(filter) = sel.strip_prefix("?(@.").and_then(|s| s.strip_suffix(')')) {
                let (key, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches('"').trim_matches('\'');
                cur = arr.iter().find(|item| field_string(item, key.trim()) == want)?;
            } else {
                return None;
            }
        }
    }
    Some(cur)
}

fn split_json_path(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in path.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '.' if depth == 0 => {
                out.push(&path[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < path.len() {
        out.push(&path[start..]);
    }
    out
}

/// Formats an age the way kubectl does (`5s`, `3m2s`, `4h`, `2d3h`).
pub fn human_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s < 120 {
        format!("{s}s")
    } else if s < 600 {
        let m = s / 60;
        let r = s % 60;
        if r == 0 { format!("{m}m") } else { format!("{m}m{r}s") }
    } else if s < 3 * 3600 {
        let m = s / 60;
        let h = m / 60;
        if h == 0 {
            format!("{m}m")
        } else if m.is_multiple_of(60) {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if s < 48 * 3600 {
        format!("{}h", s / 3600)
    } else if s < 8 * 86400 {
        let h = s / 3600;
        if h.is_multiple_of(24) {
            format!("{}d", h / 24)
        } else {
            format!("{}d{}h", h / 24, h % 24)
        }
    } else {
        format!("{}d", s / 86400)
    }
}

/// The age of an object from a timestamp field, rendered like kubectl.
pub fn age_of(ts: Option<&str>) -> String {
    match ts.and_then(parse_time) {
        Some(t) => {
            let secs = (jiff::Timestamp::now().as_second() - t.as_second()).max(0);
            human_duration(std::time::Duration::from_secs(secs.unsigned_abs()))
        }
        None => "<unknown>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_path_reads_fields_indexes_and_filters() {
        let obj = json!({"spec": {"replicas": 3}, "status": {"conditions": [
            {"type": "Ready", "status": "False"}, {"type": "Complete", "status": "True"}]}});
        assert_eq!(json_path(&obj, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(json_path(&obj, ".status.conditions[1].type"), Some(&json!("Complete")));
        assert_eq!(
            json_path(&obj, ".status.conditions[?(@.type==\"Complete\")].status"),
            Some(&json!("True"))
        );
        assert_eq!(json_path(&obj, ".spec.missing"), None);
    }

    #[test]
    fn durations_render_like_kubectl() {
        assert_eq!(human_duration(std::time::Duration::from_secs(5)), "5s");
        assert_eq!(human_duration(std::time::Duration::from_secs(185)), "3m5s");
        assert_eq!(human_duration(std::time::Duration::from_secs(3 * 3600 + 5)), "3h");
        assert_eq!(human_duration(std::time::Duration::from_secs(50 * 3600)), "2d2h");
    }
}
