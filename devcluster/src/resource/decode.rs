//! Typed decoding: built-in kinds pass through their k8s-openapi model, so wrong types are a 400 like the
//! apiserver's decoding error and unknown fields are dropped and reported per the request's
//! `fieldValidation`. Numeric quantities are canonicalized first.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ResourceInfo;
use crate::error::ApiError;
use crate::request::{FieldValidation, RequestContext};

/// JSON numbers where Kubernetes expects a `Quantity` (`cpu: 1` in YAML arrives as a number): the apiserver
/// accepts them, so they become canonical quantity strings (`1`, `0.5` -> `500m`) before typed decoding.
pub(crate) fn normalize_quantities(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                let quantity_map = matches!(
                    k.as_str(),
                    "requests" | "limits" | "capacity" | "allocatable" | "overhead"
                );
                if let (true, Value::Object(q)) = (quantity_map, &mut *child) {
                    for value in q.values_mut() {
                        if let Value::Number(n) = value {
                            *value = Value::String(quantity_string(n));
                        }
                    }
                } else {
                    normalize_quantities(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_quantities),
        _ => {}
    }
}

fn quantity_string(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let milli = (f * 1000.0).round();
    if (milli - f * 1000.0).abs() < 1e-6 && milli.fract() == 0.0 {
        if milli % 1000.0 == 0.0 {
            format!("{}", milli / 1000.0)
        } else {
            format!("{milli}m")
        }
    } else {
        n.to_string()
    }
}

/// How many unknown fields one request reports: sigs.k8s.io/json stops saving strict decoding errors at
/// 100 (`kubernetes_patch.go`, `saveStrictError`), and so does kube-apiserver's report.
pub(crate) const MAX_REPORTED_UNKNOWN: usize = 100;

/// How long one reported field path may be, in bytes; a longer one keeps its start and end around `...`.
/// Real paths are far shorter; without a bound, long map keys (a CRD's `properties`) on the way down to
/// each of the 100 reported fields would repeat most of the body in every report.
const MAX_PATH_BYTES: usize = 1024;

/// How many list entries (JSON array elements, counted through every level) an object may have before it
/// is decoded through its typed model. Typed decoding is where an object grows most: an empty entry
/// (`{}`, 3 bytes) becomes a whole k8s-openapi struct (a `Volume` is 3,280 bytes, a `Container` 2,336),
/// so the 3 MiB body limit alone would let one request allocate gigabytes and hold the state lock for
/// seconds. kube-apiserver has no such limit (Go's structs grow the same way); this one is far above what
/// any object of a served kind holds: the largest CRDs in use (prometheus-operator's `prometheuses`,
/// 480 KB of JSON) have about 760 entries, a ResourceSlice at most a few thousand (128 devices), a Pod as
/// many as its containers, env vars, volumes and ports (hundreds).
pub(crate) const MAX_LIST_ENTRIES: usize = 10_000;

/// Refuses an object with more than [`MAX_LIST_ENTRIES`] list entries with a 413 naming the limit, in
/// the words of kube-apiserver's JSON patch operation limit.
pub(crate) fn check_list_entries(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let entries = list_entries(obj);
    if entries > MAX_LIST_ENTRIES {
        return Err(ApiError::too_large(format!(
            "Request entity too large: the allowed maximum list entries in a {} is {MAX_LIST_ENTRIES}, got {entries}",
            res.kind
        )));
    }
    Ok(())
}

/// The number of array elements in `v`, at every level (without recursion, so any depth is safe).
pub(crate) fn list_entries(v: &Value) -> usize {
    enum Level<'a> {
        Items(std::slice::Iter<'a, Value>),
        Fields(serde_json::map::Values<'a>),
    }
    fn level(v: &Value) -> Option<Level<'_>> {
        match v {
            Value::Array(a) => Some(Level::Items(a.iter())),
            Value::Object(m) => Some(Level::Fields(m.values())),
            _ => None,
        }
    }
    let mut count = match v {
        Value::Array(a) => a.len(),
        _ => 0,
    };
    let mut stack: Vec<Level<'_>> = level(v).into_iter().collect();
    while let Some(top) = stack.last_mut() {
        let next = match top {
            Level::Items(it) => it.next(),
            Level::Fields(it) => it.next(),
        };
        match next {
            Some(child) => {
                if let Value::Array(a) = child {
                    count = count.saturating_add(a.len());
                }
                if let Some(l) = level(child) {
                    stack.push(l);
                }
            }
            None => {
                stack.pop();
            }
        }
    }
    count
}

/// Decodes through the typed model and back: wrong types are a 400 like the apiserver's decoding error,
/// unknown fields are dropped and reported per the request's `fieldValidation`. An object with more than
/// [`MAX_LIST_ENTRIES`] list entries is refused before decoding.
pub(crate) fn typed<T: DeserializeOwned + Serialize>(
    ctx: &mut RequestContext,
    res: &ResourceInfo,
    obj: &mut Value,
) -> Result<(), ApiError> {
    check_list_entries(res, obj)?;
    let typed: T = serde_json::from_value(obj.clone()).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })?;
    let back = serde_json::to_value(&typed).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut unknown = Vec::new();
    let more = unknown_fields(obj, &back, "", &mut unknown);
    report_unknown_counted(ctx, &unknown, more)?;
    *obj = back;
    Ok(())
}

/// Reports fields the decoding dropped per the request's `fieldValidation` (a 400 `strict decoding
/// error` under `Strict`, warnings under `Warn`, nothing under `Ignore`): the first
/// [`MAX_REPORTED_UNKNOWN`] unknown fields of a walk that found `more` besides. Under `Strict` the error
/// ends with how many more there are; under `Warn` each reported field is one warning (at most
/// [`MAX_REPORTED_UNKNOWN`], as kube-apiserver warns at most that many).
pub(crate) fn report_unknown_counted(
    ctx: &mut RequestContext,
    unknown: &[String],
    more: usize,
) -> Result<(), ApiError> {
    if unknown.is_empty() {
        return Ok(());
    }
    let described = unknown.iter().take(MAX_REPORTED_UNKNOWN).map(|f| describe_unknown(f));
    match ctx.field_validation {
        FieldValidation::Strict => {
            let mut list = described.collect::<Vec<_>>().join(", ");
            let more = more.saturating_add(unknown.len().saturating_sub(MAX_REPORTED_UNKNOWN));
            if more > 0 {
                list.push_str(&format!(", and {more} more unknown fields"));
            }
            Err(ApiError::bad_request(format!("strict decoding error: {list}")))
        }
        FieldValidation::Warn => {
            ctx.warnings.extend(described);
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}

/// The names of KEP-6089's drafts and the fields the API settled on: (draft, field, where it applies).
const DRAFT_NAMES: [(&str, &str, &str); 4] = [
    ("policy", "schedulingPolicy", "scheduling"),
    ("constraints", "schedulingConstraints", "scheduling"),
    ("disruption", "disruptionMode", "scheduling"),
    ("level", "key", "topology"),
];

/// `unknown field "<path>"`, with a hint when the field is a KEP-6089 draft name inside a scheduling block
/// (`unknown field "spec.scheduling.policy" (did you mean "spec.scheduling.schedulingPolicy"?)`).
pub(crate) fn describe_unknown(field: &str) -> String {
    let (parent, last) = field.rsplit_once('.').unwrap_or(("", field));
    // Workload templates hold the scheduling blocks directly (`spec.podGroupTemplates[0].policy`).
    let within = |scope: &str| parent.contains(scope) || (scope == "scheduling" && parent.contains("Templates["));
    let hint = DRAFT_NAMES
        .iter()
        .find(|(draft, _, scope)| *draft == last && within(scope))
        .map(|(_, name, _)| {
            let suggestion = if parent.is_empty() {
                (*name).to_string()
            } else {
                format!("{parent}.{name}")
            };
            format!(" (did you mean {suggestion:?}?)")
        })
        .unwrap_or_default();
    format!("unknown field {field:?}{hint}")
}

/// Fields present (non-null) in `input` but dropped by the typed round trip, under `path`: the first
/// [`MAX_REPORTED_UNKNOWN`] go to `out` (each path at most [`MAX_PATH_BYTES`] long); returns how many more
/// there are. Paths are only built for the reported fields, so the walk allocates nothing per visited
/// field and the report stays small however deep or wide the body is.
pub(crate) fn unknown_fields(input: &Value, typed: &Value, path: &str, out: &mut Vec<String>) -> usize {
    let mut walk = UnknownWalk {
        segments: Vec::new(),
        root: path,
        out,
        more: 0,
    };
    walk.visit(input, typed);
    walk.more
}

/// One step of a field path.
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

struct UnknownWalk<'a, 'o> {
    segments: Vec<Segment<'a>>,
    root: &'a str,
    out: &'o mut Vec<String>,
    more: usize,
}

impl<'a> UnknownWalk<'a, '_> {
    fn visit(&mut self, input: &'a Value, typed: &'a Value) {
        match (input, typed) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in a {
                    match b.get(k) {
                        None if !v.is_null() && !is_empty_container(v) => self.found(k),
                        Some(tv) => {
                            self.segments.push(Segment::Key(k));
                            self.visit(v, tv);
                            self.segments.pop();
                        }
                        None => {}
                    }
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                    self.segments.push(Segment::Index(i));
                    self.visit(x, y);
                    self.segments.pop();
                }
            }
            _ => {}
        }
    }

    fn found(&mut self, key: &str) {
        if self.out.len() >= MAX_REPORTED_UNKNOWN {
            self.more = self.more.saturating_add(1);
            return;
        }
        let mut pieces: Vec<std::borrow::Cow<'_, str>> = Vec::with_capacity(2 * self.segments.len() + 3);
        if !self.root.is_empty() {
            pieces.push(self.root.into());
        }
        for s in &self.segments {
            match s {
                Segment::Key(k) => {
                    if !pieces.is_empty() {
                        pieces.push(".".into());
                    }
                    pieces.push((*k).into());
                }
                Segment::Index(i) => pieces.push(format!("[{i}]").into()),
            }
        }
        if !pieces.is_empty() {
            pieces.push(".".into());
        }
        pieces.push(key.into());
        self.out.push(join_elided(&pieces));
    }
}

/// The pieces joined, at most [`MAX_PATH_BYTES`] long: the first and last parts around `...` when longer
/// (only those parts are copied).
fn join_elided(pieces: &[std::borrow::Cow<'_, str>]) -> String {
    let total = pieces.iter().fold(0usize, |n, p| n.saturating_add(p.len()));
    if total <= MAX_PATH_BYTES {
        return pieces.concat();
    }
    let half = MAX_PATH_BYTES / 2;
    let mut head = String::with_capacity(half + 4);
    for p in pieces {
        if head.len() >= half {
            break;
        }
        head.push_str(p);
    }
    let mut tail_pieces = Vec::new();
    let mut tail_len = 0usize;
    for p in pieces.iter().rev() {
        if tail_len >= half {
            break;
        }
        tail_len = tail_len.saturating_add(p.len());
        tail_pieces.push(p.as_ref());
    }
    let tail: String = tail_pieces.into_iter().rev().collect();
    let head = &head[..floor_char_boundary(&head, half)];
    let tail = &tail[ceil_char_boundary(&tail, tail.len().saturating_sub(half))..];
    format!("{head}...{tail}")
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn is_empty_container(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty()) || matches!(v, Value::Array(a) if a.is_empty())
}

/// The object as its typed model, for validation (a decoding error is the apiserver's 400; an object with
/// more than [`MAX_LIST_ENTRIES`] list entries is refused before decoding).
pub(crate) fn parse<T: DeserializeOwned>(res: &ResourceInfo, v: &Value) -> Result<T, ApiError> {
    check_list_entries(res, v)?;
    serde_json::from_value(v.clone()).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })
}

/// `workloadbuilder`'s field errors as the 422 `Invalid` Status kube-apiserver returns, with a cause per
/// field; `Ok` when there are none.
pub(crate) fn check(errors: workloadbuilder::FieldErrors, res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::from(errors.to_status(
            &res.group,
            &res.kind,
            crate::meta::name(obj),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numeric_quantities_become_strings() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": 0.5, "memory": "1Gi", "nvidia.com/gpu": 1}, "limits": {"cpu": 2}}}]}});
        normalize_quantities(&mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}, "limits": {"cpu": "2"}})
        );
    }

    #[test]
    fn list_entries_are_counted_at_every_level() {
        assert_eq!(list_entries(&json!({"a": 1})), 0);
        assert_eq!(list_entries(&json!([1, [2, 3], {"x": [4, 5, 6]}])), 3 + 2 + 3);
        let mut deep = json!([]);
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        // Deeper than any recursion could go: counted without recursion.
        assert_eq!(list_entries(&deep), 100_000);
        // serde_json drops deep values recursively: take it apart level by level.
        while let Value::Array(mut a) = deep {
            deep = a.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn an_object_with_too_many_list_entries_is_refused_before_typed_decoding() {
        let res = crate::kinds::builtin_resources()
            .into_iter()
            .find(|r| r.kind == "Pod")
            .unwrap();
        let mut ctx = RequestContext::default();
        let containers = vec![json!({}); MAX_LIST_ENTRIES + 1];
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": containers}});
        let err = typed::<k8s_openapi::api::core::v1::Pod>(&mut ctx, &res, &mut pod).unwrap_err();
        assert_eq!(err.code(), 413);
        assert_eq!(err.reason(), "RequestEntityTooLarge");
        assert_eq!(
            err.message(),
            "Request entity too large: the allowed maximum list entries in a Pod is 10000, got 10001"
        );
        let containers = vec![json!({"name": "c", "image": "i"}); MAX_LIST_ENTRIES];
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": containers}});
        typed::<k8s_openapi::api::core::v1::Pod>(&mut ctx, &res, &mut pod).unwrap();
    }

    #[test]
    fn at_most_100_unknown_fields_are_reported_and_the_rest_counted() {
        let mut input = serde_json::Map::new();
        for i in 0..250 {
            input.insert(format!("u{i:03}"), json!(1));
        }
        input.insert("known".into(), json!({"deeper": {"x": 1}}));
        let typed = json!({"known": {}});
        let mut out = Vec::new();
        let more = unknown_fields(&Value::Object(input), &typed, "", &mut out);
        assert_eq!(out.len(), MAX_REPORTED_UNKNOWN);
        assert_eq!(out[0], "known.deeper");
        assert_eq!(out[1], "u000");
        assert_eq!(more, 151);

        let mut ctx = RequestContext {
            field_validation: FieldValidation::Strict,
            ..Default::default()
        };
        let err = report_unknown_counted(&mut ctx, &out, more).unwrap_err();
        assert!(
            err.message()
                .starts_with("strict decoding error: unknown field \"known.deeper\", unknown field \"u000\", ")
        );
        assert!(
            err.message()
                .ends_with(", unknown field \"u098\", and 151 more unknown fields"),
            "{}",
            err.message()
        );
        let mut ctx = RequestContext::default();
        report_unknown_counted(&mut ctx, &out, more).unwrap();
        assert_eq!(ctx.warnings.len(), MAX_REPORTED_UNKNOWN);
    }

    #[test]
    fn long_paths_are_reported_with_their_middle_elided() {
        let key = "k".repeat(600);
        let input = json!({&key: {&key: {&key: [{"unknown": 1}]}}});
        let typed = json!({&key: {&key: {&key: [{}]}}});
        let mut out = Vec::new();
        assert_eq!(unknown_fields(&input, &typed, "spec", &mut out), 0);
        assert_eq!(out.len(), 1);
        let p = &out[0];
        assert!(p.len() <= MAX_PATH_BYTES + 3, "{}", p.len());
        assert!(p.starts_with("spec.kkk"), "{p}");
        assert!(p.contains("..."), "{p}");
        assert!(p.ends_with("kkk[0].unknown"), "{p}");
        let mut out = Vec::new();
        unknown_fields(&json!({"a": [{"b": 1}]}), &json!({"a": [{}]}), "spec", &mut out);
        assert_eq!(out, ["spec.a[0].b"]);
    }

    #[test]
    fn draft_names_get_a_hint_inside_scheduling_blocks_only() {
        assert_eq!(
            describe_unknown("spec.scheduling.policy"),
            "unknown field \"spec.scheduling.policy\" (did you mean \"spec.scheduling.schedulingPolicy\"?)"
        );
        assert_eq!(
            describe_unknown("spec.scheduling.schedulingConstraints.topology[0].level"),
            "unknown field \"spec.scheduling.schedulingConstraints.topology[0].level\" \
             (did you mean \"spec.scheduling.schedulingConstraints.topology[0].key\"?)"
        );
        assert_eq!(
            describe_unknown("spec.podGroupTemplates[0].constraints"),
            "unknown field \"spec.podGroupTemplates[0].constraints\" \
             (did you mean \"spec.podGroupTemplates[0].schedulingConstraints\"?)"
        );
        assert_eq!(describe_unknown("spec.policy"), "unknown field \"spec.policy\"");
        assert_eq!(describe_unknown("level"), "unknown field \"level\"");
    }
}
