//! JSON patch (RFC 6902, `application/json-patch+json`) as kube-apiserver applies it with
//! `gopkg.in/evanphx/json-patch.v4`, with its limits checked before the work they bound is done.
//!
//! What kube-apiserver does (`k8s.io/apiserver` `pkg/endpoints/handlers/patch.go`, `applyJSPatch`): a body
//! that is not a list of operations is a 400 with the decoder's words; more than
//! [`MAX_OPERATIONS`] operations is a 413; any operation that fails is a 422 whose message is the
//! generic `the server rejected our request due to an error in our request` (json-patch's own text is
//! dropped). The `copy` operations of one patch may add at most [`MAX_COPY_BYTES`] (`JSONPatchMaxCopyBytes`,
//! `pkg/server/config.go`), counted as json-patch counts them: the JSON size of each copied value, summed
//! over the patch. json-patch makes the copy and then counts it; here the size is measured first, without
//! allocating, and a copy that would pass the limit is never made, so memory never grows past it.
//!
//! json-patch v4's semantics are kept where they differ from the RFC: negative array indices count
//! from the end (`SupportNegativeIndices`, which kube-apiserver leaves on: `/metadata/finalizers/-1`),
//! `replace` of a missing member of an object adds it, `copy` from a missing member of an object copies
//! `null`, and a path's first segment is skipped whatever it holds. Indices are parsed as Go's
//! `strconv.Atoi` parses them, with checked arithmetic, and one out of range is an error, never an
//! allocation. Two guards kube-apiserver lacks: the array elements shifted by indexed `add`, `remove` and
//! `move` are counted, and a patch that would shift more than [`MAX_ELEMENT_SHIFTS`] is refused (each
//! shift is a memory move of the array's tail: 10,000 inserts at the head of a long array would
//! otherwise move hundreds of gigabytes), and `test` compares values exactly (json-patch's comparison
//! ignores members the document lacks).

use serde_json::{Map, Value};

/// kube-apiserver's `maxJSONPatchOperations` (`pkg/endpoints/handlers/patch.go`).
pub const MAX_OPERATIONS: usize = 10_000;

/// kube-apiserver's default `JSONPatchMaxCopyBytes` (`pkg/server/config.go`), which it sets as
/// json-patch's `AccumulatedCopySizeLimit`: what the `copy` operations of one patch may add, in bytes.
pub const MAX_COPY_BYTES: u64 = 3 * 1024 * 1024;

/// How many array elements the indexed operations of one patch may shift (devcluster's own guard).
pub const MAX_ELEMENT_SHIFTS: u64 = 1 << 25;

/// Why a JSON patch was not applied, by the status kube-apiserver answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonPatchError {
    /// The body is not a list of operations: 400 with the decoder's message.
    Decode(String),
    /// More operations than [`MAX_OPERATIONS`]: 413.
    TooManyOperations(usize),
    /// An operation failed: 422 with the generic message (this text is json-patch's, for the logs).
    Apply(String),
}

impl std::fmt::Display for JsonPatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonPatchError::Decode(m) | JsonPatchError::Apply(m) => f.write_str(m),
            JsonPatchError::TooManyOperations(n) => write!(
                f,
                "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {n}"
            ),
        }
    }
}

/// The name Go's `encoding/json` gives a JSON value's type in an unmarshal error.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Applies a JSON patch to `target`. On error `target` may be partly patched: callers patch a copy.
pub fn apply(target: &mut Value, patch: &Value) -> Result<(), JsonPatchError> {
    let ops: &[Value] = match patch {
        // Go decodes `null` into an empty patch.
        Value::Null => &[],
        Value::Array(ops) => ops,
        other => {
            return Err(JsonPatchError::Decode(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_type(other)
            )));
        }
    };
    if let Some(bad) = ops.iter().find(|op| !op.is_object() && !op.is_null()) {
        return Err(JsonPatchError::Decode(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
            go_type(bad)
        )));
    }
    if ops.len() > MAX_OPERATIONS {
        return Err(JsonPatchError::TooManyOperations(ops.len()));
    }
    let mut budget = Budget { copied: 0, shifted: 0 };
    for op in ops {
        apply_op(target, op, &mut budget).map_err(JsonPatchError::Apply)?;
    }
    Ok(())
}

/// What one patch has used of its limits.
struct Budget {
    copied: u64,
    shifted: u64,
}

impl Budget {
    fn shift(&mut self, elements: usize) -> Result<(), String> {
        let elements = u64::try_from(elements).unwrap_or(u64::MAX);
        self.shifted = self.shifted.saturating_add(elements);
        if self.shifted > MAX_ELEMENT_SHIFTS {
            return Err(format!(
                "Unable to complete the patch, its indexed operations shift more than {MAX_ELEMENT_SHIFTS} array elements"
            ));
        }
        Ok(())
    }
}

/// A string member of an operation (`path`, `from`).
fn member<'a>(op: &'a Map<String, Value>, name: &str, kind: &str) -> Result<&'a str, String> {
    match op.get(name) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(format!("missing value: {kind} operation, missing {name} field")),
        Some(other) => Err(format!(
            "{kind} operation failed to decode {name}: json: cannot unmarshal {} into Go value of type string",
            go_type(other)
        )),
    }
}

fn apply_op(doc: &mut Value, op: &Value, budget: &mut Budget) -> Result<(), String> {
    let empty = Map::new();
    let op = op.as_object().unwrap_or(&empty);
    let kind = match op.get("op") {
        Some(Value::String(s)) => s.as_str(),
        _ => "unknown",
    };
    // A missing `value` is `null`, as json-patch marshals its nil node.
    let value = op.get("value").unwrap_or(&Value::Null);
    match kind {
        "add" => {
            let path = member(op, "path", kind)?;
            let (parent, key) = locate(doc, path).ok_or_else(|| missing(kind, "path", path))?;
            add(parent, &key, value.clone(), budget).map_err(|e| format!("error in add for path: '{path}': {e}"))
        }
        "remove" => {
            let path = member(op, "path", kind)?;
            let (parent, key) = locate(doc, path).ok_or_else(|| missing(kind, "path", path))?;
            remove(parent, &key, budget)
                .map(drop)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "replace" => {
            let path = member(op, "path", kind)?;
            if path.is_empty() {
                if !value.is_object() && !value.is_array() {
                    return Err("replace operation value must be object or array".into());
                }
                *doc = value.clone();
                return Ok(());
            }
            let (parent, key) = locate(doc, path).ok_or_else(|| missing(kind, "path", path))?;
            replace(parent, &key, value.clone())
                .map_err(|e| format!("replace operation does not apply: doc is missing key: {path}: {e}"))
        }
        "move" => {
            let from = member(op, "from", kind)?;
            let (parent, key) = locate(doc, from).ok_or_else(|| missing(kind, "from path", from))?;
            let moved = remove(parent, &key, budget).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let path = member(op, "path", kind)?;
            let (parent, key) = locate(doc, path).ok_or_else(|| missing(kind, "destination path", path))?;
            add(parent, &key, moved, budget).map_err(|e| format!("error in move for path: '{path}': {e}"))
        }
        "copy" => {
            let from = member(op, "from", kind)?;
            let (parent, key) = locate(doc, from).ok_or_else(|| missing(kind, "from path", from))?;
            get(parent, &key).map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
            let path = member(op, "path", kind)?;
            if locate(doc, path).is_none() {
                return Err(missing(kind, "destination path", path));
            }
            // The source's size is measured (without allocating) before anything is copied.
            let (parent, key) = locate(doc, from).ok_or_else(|| missing(kind, "from path", from))?;
            let source = get(parent, &key).map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
            let room = MAX_COPY_BYTES.saturating_sub(budget.copied);
            let size = source.map_or(0, |v| go_json_size(v, room));
            budget.copied = budget.copied.saturating_add(size);
            if budget.copied > MAX_COPY_BYTES {
                return Err(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is {}, exceeding the limit {MAX_COPY_BYTES}",
                    budget.copied
                ));
            }
            let copied = source.cloned().unwrap_or(Value::Null);
            let (parent, key) = locate(doc, path).ok_or_else(|| missing(kind, "destination path", path))?;
            add(parent, &key, copied, budget).map_err(|e| format!("error while adding value during copy: {e}"))
        }
        "test" => {
            let path = member(op, "path", kind)?;
            let actual = if path.is_empty() {
                Some(&*doc)
            } else {
                let (parent, key) = locate(doc, path)
                    .ok_or_else(|| format!("test operation does not apply: is missing path: {path}"))?;
                get(parent, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?
            };
            let passed = match actual {
                None | Some(Value::Null) => value.is_null(),
                Some(actual) => actual == value,
            };
            if passed {
                Ok(())
            } else {
                Err(format!("test failed: testing value {path} failed"))
            }
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}

fn missing(kind: &str, what: &str, path: &str) -> String {
    format!("missing value: {kind} operation does not apply: doc is missing {what}: \"{path}\"")
}

/// RFC 6901 unescaping, in json-patch's order (`~1` then `~0`, in one pass).
fn unescape(token: &str) -> String {
    if !token.contains('~') {
        return token.to_string();
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('~', Some('1')) => {
                out.push('/');
                chars.next();
            }
            ('~', Some('0')) => {
                out.push('~');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// json-patch's `findObject`: the container the path's last token is a key of (an object or an array),
/// and that key. The first token is skipped, whatever it holds (a well-formed pointer's is empty); `None`
/// when the path has no `/` or a container on the way is missing, `null` or not a container.
fn locate<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let mut tokens = path.split('/');
    tokens.next()?;
    let mut rest: Vec<&str> = tokens.collect();
    let key = unescape(rest.pop()?);
    let mut cur = doc;
    for token in rest {
        let token = unescape(token);
        let next = match cur {
            Value::Object(m) => m.get_mut(&token)?,
            Value::Array(a) => {
                let i = existing_index(&token, a.len()).ok()?;
                a.get_mut(i)?
            }
            _ => return None,
        };
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        cur = next;
    }
    (cur.is_object() || cur.is_array()).then_some((cur, key))
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, in range of a 64-bit int.
fn atoi(token: &str) -> Result<i64, String> {
    let digits = token.strip_prefix(['+', '-']).unwrap_or(token);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {token:?}: invalid syntax"));
    }
    token
        .parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {token:?}: value out of range"))
}

/// An index into an array of `len` elements, negative ones counting from the end.
fn resolve(idx: i64, len: usize) -> Result<usize, String> {
    let invalid = || format!("invalid index referenced: Unable to access invalid index: {idx}");
    let len_i = i64::try_from(len).map_err(|_| invalid())?;
    let idx = if idx < 0 {
        if idx < len_i.checked_neg().ok_or_else(invalid)? {
            return Err(invalid());
        }
        idx.checked_add(len_i).ok_or_else(invalid)?
    } else {
        idx
    };
    let idx = usize::try_from(idx).map_err(|_| invalid())?;
    if idx >= len {
        return Err(invalid());
    }
    Ok(idx)
}

/// The index of an existing element.
fn existing_index(token: &str, len: usize) -> Result<usize, String> {
    resolve(atoi(token)?, len)
}

/// The value at `key` of a container: `None` for a missing member of an object (json-patch's nil); an
/// index out of range is an error.
fn get<'a>(parent: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match parent {
        Value::Object(m) => Ok(m.get(key)),
        Value::Array(a) => {
            let i = existing_index(key, a.len())?;
            Ok(a.get(i))
        }
        _ => Err("invalid state detected".into()),
    }
}

fn add(parent: &mut Value, key: &str, value: Value, budget: &mut Budget) -> Result<(), String> {
    match parent {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(value);
                return Ok(());
            }
            let idx = atoi(key).map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            // Inserting into n elements addresses n + 1 slots.
            let slots = a.len().checked_add(1).ok_or("invalid index referenced")?;
            let i = resolve(idx, slots)?;
            budget.shift(a.len().saturating_sub(i))?;
            a.insert(i, value);
            Ok(())
        }
        _ => Err("invalid state detected".into()),
    }
}

fn remove(parent: &mut Value, key: &str, budget: &mut Budget) -> Result<Value, String> {
    match parent {
        Value::Object(m) => m
            .remove(key)
            .ok_or_else(|| format!("missing value: Unable to remove nonexistent key: {key}")),
        Value::Array(a) => {
            let i = existing_index(key, a.len())?;
            budget.shift(a.len().saturating_sub(i).saturating_sub(1))?;
            Ok(a.remove(i))
        }
        _ => Err("invalid state detected".into()),
    }
}

fn replace(parent: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match parent {
        // json-patch's object `get` finds no error in a missing member: the replace adds it.
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(a) => {
            let i = existing_index(key, a.len())?;
            if let Some(slot) = a.get_mut(i) {
                *slot = value;
            }
            Ok(())
        }
        _ => Err("invalid state detected".into()),
    }
}

/// The length of `v` as Go's `encoding/json` writes it (compact, `<`, `>`, `&`, U+2028 and U+2029
/// escaped as `\u00XX`), which is what json-patch counts a copy as. Stops counting once past `limit`
/// (returning a value above it), so measuring a huge value costs no more than `limit` allows.
pub fn go_json_size(v: &Value, limit: u64) -> u64 {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let mut size = 0u64;
    let mut stack: Vec<&Value> = vec![v];
    while let Some(v) = stack.pop() {
        let own: u64 = match v {
            Value::Null => 4,
            Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => count(n.to_string().len()),
            Value::String(s) => go_string_size(s),
            // Brackets and the commas between elements.
            Value::Array(a) => count(a.len().max(1)).saturating_add(1),
            // Braces, commas, and each key with its colon.
            Value::Object(m) => {
                let mut n = count(m.len().max(1)).saturating_add(1);
                for k in m.keys() {
                    n = n.saturating_add(go_string_size(k)).saturating_add(1);
                    if size.saturating_add(n) > limit {
                        break;
                    }
                }
                n
            }
        };
        size = size.saturating_add(own);
        if size > limit {
            return size;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(m) => stack.extend(m.values()),
            _ => {}
        }
    }
    size
}

/// The length of a string as Go's `encoding/json` quotes it.
fn go_string_size(s: &str) -> u64 {
    let mut n: u64 = 2;
    for c in s.chars() {
        let w: u64 = match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if u32::from(c) < 0x20 => 6,
            c => u64::try_from(c.len_utf8()).unwrap_or(4),
        };
        n = n.saturating_add(w);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(mut doc: Value, ops: Value) -> Result<Value, JsonPatchError> {
        apply(&mut doc, &ops).map(|()| doc)
    }

    #[test]
    fn operations_follow_json_patch_v4() {
        let doc = json!({"metadata": {"name": "a", "finalizers": ["x", "y", "z"]}, "data": {"k": "v"}});
        let out = patched(
            doc.clone(),
            json!([
                {"op": "add", "path": "/data/n", "value": "1"},
                {"op": "add", "path": "/metadata/finalizers/0", "value": "first"},
                {"op": "add", "path": "/metadata/finalizers/-", "value": "last"},
                {"op": "remove", "path": "/metadata/finalizers/-1"},
                {"op": "replace", "path": "/metadata/finalizers/1", "value": "X"},
                {"op": "move", "from": "/data/k", "path": "/data/moved"},
                {"op": "copy", "from": "/data/n", "path": "/data/copied"},
                {"op": "test", "path": "/data/copied", "value": "1"},
                {"op": "test", "path": "/data/absent", "value": null},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "finalizers": ["first", "X", "y", "z"]},
                   "data": {"n": "1", "moved": "v", "copied": "1"}})
        );
        // A negative index on add counts the slot after the last element.
        let out = patched(
            json!({"a": [1, 2]}),
            json!([{"op": "add", "path": "/a/-1", "value": 3}]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": [1, 2, 3]}));
        let out = patched(
            json!({"a": [1, 2]}),
            json!([{"op": "add", "path": "/a/-3", "value": 0}]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": [0, 1, 2]}));
        // v4's quirks: replace adds a missing member; copy from a missing member copies null.
        let out = patched(
            json!({"a": {}}),
            json!([{"op": "replace", "path": "/a/b", "value": 1}, {"op": "copy", "from": "/a/none", "path": "/a/c"}]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"b": 1, "c": null}}));
        // Escapes.
        let out = patched(
            json!({"a/b": {"~c": 1}}),
            json!([{"op": "remove", "path": "/a~1b/~0c"}]),
        )
        .unwrap();
        assert_eq!(out, json!({"a/b": {}}));
    }

    #[test]
    fn bad_operations_and_indices_are_errors_not_panics_or_allocations() {
        let doc = json!({"a": [1, 2, 3], "m": {"k": 1}, "s": "str"});
        for ops in [
            json!([{"op": "add", "path": "/a/4", "value": 0}]),
            json!([{"op": "add", "path": "/a/-5", "value": 0}]),
            json!([{"op": "add", "path": "/a/99999999999999999999999", "value": 0}]),
            json!([{"op": "add", "path": "/a/9223372036854775807", "value": 0}]),
            json!([{"op": "add", "path": "/a/-9223372036854775808", "value": 0}]),
            json!([{"op": "add", "path": "/a/1e3", "value": 0}]),
            json!([{"op": "add", "path": "/a/", "value": 0}]),
            json!([{"op": "remove", "path": "/a/3"}]),
            json!([{"op": "remove", "path": "/a/-4"}]),
            json!([{"op": "remove", "path": "/m/none"}]),
            json!([{"op": "replace", "path": "/a/3", "value": 0}]),
            json!([{"op": "move", "from": "/a/-9223372036854775808", "path": "/m/x"}]),
            json!([{"op": "move", "from": "/m", "path": "/m/inside"}]),
            json!([{"op": "copy", "from": "/a/18446744073709551616", "path": "/m/x"}]),
            json!([{"op": "add", "path": "/s/x", "value": 0}]),
            json!([{"op": "add", "path": "/nowhere/x", "value": 0}]),
            json!([{"op": "add", "path": "", "value": 0}]),
            json!([{"op": "add", "value": 0}]),
            json!([{"op": "add", "path": 7, "value": 0}]),
            json!([{"op": "test", "path": "/m/k", "value": 2}]),
            json!([{"op": "frobnicate", "path": "/m"}]),
            json!([null]),
        ] {
            let err = patched(doc.clone(), ops.clone()).unwrap_err();
            assert!(matches!(err, JsonPatchError::Apply(_)), "{ops}: {err:?}");
        }
        assert!(matches!(
            patched(doc.clone(), json!({"op": "add"})),
            Err(JsonPatchError::Decode(_))
        ));
        assert!(matches!(
            patched(doc.clone(), json!(["add"])),
            Err(JsonPatchError::Decode(_))
        ));
        assert_eq!(patched(doc.clone(), Value::Null).unwrap(), doc);
        let many = Value::Array(vec![
            json!({"op": "test", "path": "/m/k", "value": 1});
            MAX_OPERATIONS + 1
        ]);
        assert_eq!(
            patched(doc.clone(), many),
            Err(JsonPatchError::TooManyOperations(MAX_OPERATIONS + 1))
        );
    }

    #[test]
    fn copies_stop_at_three_mebibytes_before_they_are_made() {
        let doc = json!({"data": {"a": "x".repeat(1_000_000)}});
        let doubling: Vec<Value> = (0..12)
            .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
            .collect();
        let err = patched(doc.clone(), Value::Array(doubling)).unwrap_err();
        let JsonPatchError::Apply(message) = err else {
            panic!("{err:?}")
        };
        assert!(
            message.starts_with("Unable to complete the copy, the accumulated size increase of copy is "),
            "{message}"
        );
        assert!(message.ends_with("exceeding the limit 3145728"), "{message}");
        // Three copies of 1,000,002 bytes fit; the fourth does not.
        let copies = |n: usize| {
            Value::Array(
                (0..n)
                    .map(|i| json!({"op": "copy", "from": "/data/a", "path": format!("/data/b{i}")}))
                    .collect(),
            )
        };
        assert!(patched(doc.clone(), copies(3)).is_ok());
        assert!(patched(doc, copies(4)).is_err());
    }

    #[test]
    fn sizes_are_counted_as_go_writes_json() {
        for (v, go) in [
            (json!(null), "null"),
            (
                json!({"a": [1, true, "x<y"], "b": {}}),
                r#"{"a":[1,true,"x\u003cy"],"b":{}}"#,
            ),
            (json!([]), "[]"),
            (json!({"q\"": "\n\u{1}é\u{2028}"}), r#"{"q\"":"\n\u0001é\u2028"}"#),
            (json!(-1.5), "-1.5"),
        ] {
            assert_eq!(go_json_size(&v, u64::MAX), go.len() as u64, "{v}");
        }
        // Counting stops soon after the limit.
        let huge = json!(vec!["x"; 100_000]);
        assert!(go_json_size(&huge, 10) > 10);
    }

    #[test]
    fn indexed_inserts_that_would_shift_too_much_are_refused() {
        let doc = json!({"a": vec![0; 200_000]});
        let ops: Vec<Value> = (0..MAX_OPERATIONS)
            .map(|_| json!({"op": "add", "path": "/a/0", "value": 1}))
            .collect();
        let started = std::time::Instant::now();
        let err = patched(doc, Value::Array(ops)).unwrap_err();
        assert!(
            matches!(err, JsonPatchError::Apply(ref m) if m.contains("shift")),
            "{err:?}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        // Appends shift nothing.
        let ops: Vec<Value> = (0..MAX_OPERATIONS)
            .map(|_| json!({"op": "add", "path": "/a/-", "value": 1}))
            .collect();
        assert!(patched(json!({"a": vec![0; 200_000]}), Value::Array(ops)).is_ok());
    }
}
