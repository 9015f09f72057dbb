//! Label selectors (`app=web,tier in (a,b),!canary`) and field selectors (`spec.nodeName=n1,status.phase!=Failed`)
//! with the grammar and semantics of `k8s.io/apimachinery/pkg/labels` and `.../fields`, and node selectors
//! (`core/v1 NodeSelector`: a volume's node affinity) with `component-helpers/scheduling/corev1/nodeaffinity`'s.

use serde_json::Value;

use crate::error::ApiError;
use crate::meta;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelRequirement {
    /// `key` exists.
    Exists(String),
    /// `!key`: key does not exist.
    DoesNotExist(String),
    /// `key=value` / `key==value`.
    Equals(String, String),
    /// `key!=value` (also matches objects without the key).
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)` (also matches objects without the key).
    NotIn(String, Vec<String>),
    /// `key>n`.
    Gt(String, i64),
    /// `key<n`.
    Lt(String, i64),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<LabelRequirement>);

fn split_top_level(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c)
            }
            ')' => {
                depth -= 1;
                cur.push(c)
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

fn valid_label_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_label_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl LabelSelector {
    /// Parses a selector string; errors are 400 BadRequest like kube-apiserver's.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let bad = |detail: &str| ApiError::bad_request(format!("unable to parse requirement: {detail}"));
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let req = if let Some(key) = part.strip_prefix('!') {
                LabelRequirement::DoesNotExist(key.trim().to_string())
            } else if let Some((k, rest)) = split_set_op(&part, " notin ") {
                LabelRequirement::NotIn(k, parse_set(&rest).ok_or_else(|| bad(&part))?)
            } else if let Some((k, rest)) = split_set_op(&part, " in ") {
                LabelRequirement::In(k, parse_set(&rest).ok_or_else(|| bad(&part))?)
            } else if let Some((k, v)) = part.split_once("!=") {
                LabelRequirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==") {
                LabelRequirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once('=') {
                LabelRequirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once('>') {
                LabelRequirement::Gt(k.trim().into(), v.trim().parse().map_err(|_| bad(&part))?)
            } else if let Some((k, v)) = part.split_once('<') {
                LabelRequirement::Lt(k.trim().into(), v.trim().parse().map_err(|_| bad(&part))?)
            } else {
                LabelRequirement::Exists(part.clone())
            };
            let (key, values): (&str, Vec<&str>) = match &req {
                LabelRequirement::Exists(k) | LabelRequirement::DoesNotExist(k) => (k, vec![]),
                LabelRequirement::Equals(k, v) | LabelRequirement::NotEquals(k, v) => (k, vec![v.as_str()]),
                LabelRequirement::In(k, vs) | LabelRequirement::NotIn(k, vs) => {
                    (k, vs.iter().map(String::as_str).collect())
                }
                LabelRequirement::Gt(k, _) | LabelRequirement::Lt(k, _) => (k, vec![]),
            };
            if !valid_label_key(key) {
                return Err(bad(&format!("key: Invalid value: {key:?}")));
            }
            if let Some(v) = values.iter().find(|v| !valid_label_value(v)) {
                return Err(bad(&format!("values[0][{key}]: Invalid value: {v:?}")));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// The selector of an API object's `metav1.LabelSelector` (`matchLabels`, `matchExpressions`), as
    /// `metav1.LabelSelectorAsSelector` builds it; `None` for `null` (which matches nothing).
    pub fn from_api(sel: Option<&Value>) -> Option<Self> {
        let sel = sel.filter(|s| !s.is_null())?;
        let mut reqs = Vec::new();
        if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in m {
                reqs.push(LabelRequirement::Equals(
                    k.clone(),
                    v.as_str().unwrap_or("").to_string(),
                ));
            }
        }
        for e in sel
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("").to_string();
            let values = meta::string_list(e.get("values"));
            reqs.push(match e.get("operator").and_then(Value::as_str) {
                Some("In") => LabelRequirement::In(key, values),
                Some("NotIn") => LabelRequirement::NotIn(key, values),
                Some("Exists") => LabelRequirement::Exists(key),
                Some("DoesNotExist") => LabelRequirement::DoesNotExist(key),
                _ => return None,
            });
        }
        Some(LabelSelector(reqs))
    }

    /// A `key=value` (or `key in (value)`) requirement of the selector, if it has one: only objects with that
    /// label can match.
    pub fn equality(&self) -> Option<(&str, &str)> {
        self.0.iter().find_map(|r| match r {
            LabelRequirement::Equals(k, v) => Some((k.as_str(), v.as_str())),
            LabelRequirement::In(k, vs) if vs.len() == 1 => Some((k.as_str(), vs[0].as_str())),
            _ => None,
        })
    }

    /// Whether the labels satisfy every requirement.
    pub fn matches_labels(&self, labels: &serde_json::Map<String, Value>) -> bool {
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelRequirement::Exists(k) => labels.contains_key(k),
            LabelRequirement::DoesNotExist(k) => !labels.contains_key(k),
            LabelRequirement::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelRequirement::Gt(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x > *n),
            LabelRequirement::Lt(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x < *n),
        })
    }

    /// Whether an object's labels satisfy the selector.
    pub fn matches(&self, obj: &Value) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let empty = serde_json::Map::new();
        let labels = meta::metadata(obj)
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        self.matches_labels(labels)
    }
}

/// The selector's string form (`app=web,tier in (a,b),!canary`), as `labels.Selector.String()` prints it.
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|r| match r {
                LabelRequirement::Exists(k) => k.clone(),
                LabelRequirement::DoesNotExist(k) => format!("!{k}"),
                LabelRequirement::Equals(k, v) => format!("{k}={v}"),
                LabelRequirement::NotEquals(k, v) => format!("{k}!={v}"),
                LabelRequirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                LabelRequirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                LabelRequirement::Gt(k, n) => format!("{k}>{n}"),
                LabelRequirement::Lt(k, n) => format!("{k}<{n}"),
            })
            .collect();
        write!(f, "{}", parts.join(","))
    }
}

fn split_set_op(part: &str, op: &str) -> Option<(String, String)> {
    let i = part.find(op)?;
    Some((part[..i].trim().to_string(), part[i + op.len()..].trim().to_string()))
}

fn parse_set(s: &str) -> Option<Vec<String>> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

/// One field requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted field path (`spec.nodeName`).
    pub field: String,
    /// The value compared.
    pub value: String,
    /// `!=` rather than `=`.
    pub negated: bool,
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldRequirement>);

impl FieldSelector {
    /// Parses `a=b,c!=d` (with `\`-escapes in values).
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_escaped(s) {
            if part.is_empty() {
                continue;
            }
            let (field, value, negated) = if let Some((f, v)) = split_unescaped(&part, "!=") {
                (f, v, true)
            } else if let Some((f, v)) = split_unescaped(&part, "==") {
                (f, v, false)
            } else if let Some((f, v)) = split_unescaped(&part, "=") {
                (f, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            reqs.push(FieldRequirement {
                field: field.trim().to_string(),
                value: unescape(&value),
                negated,
            });
        }
        Ok(FieldSelector(reqs))
    }

    /// Checks every field against the fields the resource supports, like kube-apiserver's
    /// `field label not supported` error.
    pub fn check_supported(&self, supported: impl Fn(&str) -> bool) -> Result<(), ApiError> {
        for r in &self.0 {
            if !supported(&r.field) {
                return Err(ApiError::bad_request(format!("field label not supported: {}", r.field)));
            }
        }
        Ok(())
    }

    /// Whether the object satisfies every requirement (fields read from the object's JSON form).
    pub fn matches(&self, obj: &Value) -> bool {
        self.0
            .iter()
            .all(|r| (meta::field_string(obj, &r.field) == r.value) != r.negated)
    }
}

fn split_escaped(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

fn split_unescaped(s: &str, op: &str) -> Option<(String, String)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if s[i..].starts_with(op) {
            return Some((s[..i].to_string(), s[i + op.len()..].to_string()));
        }
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a node satisfies a `NodeSelector` (`nodeSelectorTerms`, as in a PersistentVolume's
/// `nodeAffinity.required`): any term matches when all its `matchExpressions` hold on the node's labels and
/// all its `matchFields` on its name; an empty term matches nothing.
pub fn node_selector_matches(selector: &Value, node: &Value) -> bool {
    let empty = serde_json::Map::new();
    let labels = meta::metadata(node)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let holds = |r: &Value, value: Option<&str>| -> bool {
        let values = meta::string_list(r.get("values"));
        let int = |s: &str| s.parse::<i64>().ok();
        match r.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
            "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            "Gt" | "Lt" => {
                let (Some(have), Some(want)) = (value.and_then(int), values.first().and_then(|v| int(v))) else {
                    return false;
                };
                if r.get("operator").and_then(Value::as_str) == Some("Gt") {
                    have > want
                } else {
                    have < want
                }
            }
            _ => false,
        }
    };
    selector
        .get("nodeSelectorTerms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|term| {
            let exprs: Vec<&Value> = term
                .get("matchExpressions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            let fields: Vec<&Value> = term
                .get("matchFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            if exprs.is_empty() && fields.is_empty() {
                return false;
            }
            exprs.iter().all(|r| {
                let key = r.get("key").and_then(Value::as_str).unwrap_or("");
                holds(r, labels.get(key).and_then(Value::as_str))
            }) && fields.iter().all(|r| {
                let key = r.get("key").and_then(Value::as_str).unwrap_or("");
                key == "metadata.name" && holds(r, Some(meta::name(node)))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels}, "spec": {"nodeName": "n1"},
               "status": {"phase": "Running"}})
    }

    #[test]
    fn label_selector_operators() {
        let o = obj(json!({"app": "web", "tier": "front", "n": "7"}));
        for (sel, want) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app!=db", true),
            ("tier in (front,back)", true),
            ("tier notin (front)", false),
            ("missing notin (x)", true),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app=web,tier=back", false),
            ("n>5", true),
            ("n<5", false),
            ("", true),
        ] {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(&o), want, "{sel}");
        }
    }

    #[test]
    fn invalid_label_selectors_are_bad_requests() {
        let err = LabelSelector::parse("a in b").unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(LabelSelector::parse("a=b c").is_err());
    }

    #[test]
    fn field_selector_matches_and_negates() {
        let o = obj(json!({}));
        for (sel, want) in [
            ("metadata.name=p", true),
            ("metadata.namespace=ns,spec.nodeName=n1", true),
            ("spec.nodeName=n2", false),
            ("status.phase!=Failed,status.phase!=Succeeded", true),
            ("status.phase!=Running", false),
            ("spec.schedulerName=", true),
        ] {
            assert_eq!(FieldSelector::parse(sel).unwrap().matches(&o), want, "{sel}");
        }
        assert_eq!(FieldSelector::parse("metadata.name=a\\,b").unwrap().0[0].value, "a,b");
        assert_eq!(FieldSelector::parse("metadata.name=é!x").unwrap().0[0].value, "é!x");
        assert!(FieldSelector::parse("é").is_err());
    }

    #[test]
    fn node_selectors_match_like_node_affinity() {
        let node = json!({"metadata": {"name": "n1", "labels": {"zone": "a", "gpus": "8"}}});
        let sel = |terms: Value| json!({"nodeSelectorTerms": terms});
        assert!(node_selector_matches(
            &sel(json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}])),
            &node
        ));
        assert!(!node_selector_matches(
            &sel(json!([{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}])),
            &node
        ));
        assert!(node_selector_matches(
            &sel(json!([{}, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}])),
            &node
        ));
        assert!(
            !node_selector_matches(&sel(json!([{}])), &node),
            "an empty term matches nothing"
        );
        assert!(node_selector_matches(
            &sel(
                json!([{"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]},
            {"key": "rack", "operator": "DoesNotExist"}]}])
            ),
            &node
        ));
        assert!(!node_selector_matches(
            &sel(json!([{"matchExpressions": [{"key": "gpus", "operator": "Lt", "values": ["x"]}]}])),
            &node
        ));
        assert!(!node_selector_matches(&json!({}), &node));
    }
}
