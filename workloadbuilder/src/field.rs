//! Field paths and field errors, rendered the way Kubernetes renders `field.ErrorList`.
//!
//! Every validation in this crate reports [`FieldErrors`]: a list of [`FieldError`]s, each with a
//! [`FieldPath`] (`spec.podGroupTemplates[0].schedulingPolicy.gang.minCount`), a [`FieldErrorType`], the bad
//! value when there is one, and a detail. `Display` matches kube-apiserver byte for byte for the value kinds the
//! API uses (strings, integers, null), so users can compare our errors with the apiserver's:
//!
//! ```
//! use workloadbuilder::{FieldError, FieldErrors, FieldPath};
//!
//! let path = FieldPath::new("spec").child("scheduling").child("schedulingPolicy").child("gang").child("minCount");
//! let err = FieldError::invalid(&path, 0, "must be greater than or equal to 1");
//! assert_eq!(
//!     err.to_string(),
//!     "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1"
//! );
//! let errs = FieldErrors::from(vec![err]);
//! let status = errs.to_status("batch", "Job", "train");
//! assert_eq!(status.code, Some(422));
//! assert_eq!(status.reason.as_deref(), Some("Invalid"));
//! ```

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

/// A path to a field inside an object, built like Go's `field.Path`: `spec.items[2].metadata.labels[app]`.
///
/// Paths are cheap strings; building one never fails.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path rooted at `root` (for example `spec` or `metadata`).
    pub fn new(root: impl Into<String>) -> Self {
        Self(root.into())
    }

    /// The empty path. Children of the empty path have no leading dot.
    pub fn root() -> Self {
        Self(String::new())
    }

    /// `self.name`.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self(name.to_string())
        } else {
            Self(format!("{}.{}", self.0, name))
        }
    }

    /// `self[index]`.
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}[{}]", self.0, index))
    }

    /// `self[key]` (map keys, as Go renders them: unquoted).
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{}]", self.0, key))
    }

    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the empty path.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// This path re-rooted under `prefix` (`prefix.self`).
    pub fn under(&self, prefix: &FieldPath) -> Self {
        if prefix.is_empty() {
            self.clone()
        } else if self.0.is_empty() {
            prefix.clone()
        } else if self.0.starts_with('[') {
            Self(format!("{}{}", prefix.0, self.0))
        } else {
            Self(format!("{}.{}", prefix.0, self.0))
        }
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for FieldPath {
    fn from(path: &str) -> Self {
        Self(path.to_string())
    }
}

impl From<String> for FieldPath {
    fn from(path: String) -> Self {
        Self(path)
    }
}

impl From<&FieldPath> for FieldPath {
    fn from(path: &FieldPath) -> Self {
        path.clone()
    }
}

/// The kind of a field error, as in Go's `field.ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldErrorType {
    /// A referenced object or value was not found.
    NotFound,
    /// A required value is missing.
    Required,
    /// A value that must be unique is repeated.
    Duplicate,
    /// A value is malformed or out of range.
    Invalid,
    /// A value is not one of the supported values.
    NotSupported,
    /// A value is valid but not permitted here (allow-lists, immutability).
    Forbidden,
    /// A value is too long.
    TooLong,
    /// A list has too many items.
    TooMany,
    /// An internal error, not the user's fault.
    Internal,
    /// A value has the wrong type.
    TypeInvalid,
}

impl FieldErrorType {
    /// The human-readable name Kubernetes prints (`Invalid value`, `Required value`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Internal => "Internal error",
        }
    }

    /// The `StatusCause.reason` Kubernetes uses for this type (`FieldValueInvalid`, ...).
    pub fn cause_type(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Internal => "InternalError",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }
}

impl fmt::Display for FieldErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The offending value of a field error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadValue {
    /// No value is printed.
    Omitted,
    /// A null value (printed as `"null"`, as Go does).
    Null,
    /// A string (printed quoted).
    String(String),
    /// An integer (printed bare).
    Int(i64),
    /// A boolean (printed bare).
    Bool(bool),
    /// A structured value, printed as compact JSON.
    Json(String),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Omitted => Ok(()),
            Self::Null => f.write_str("\"null\""),
            Self::String(s) => write!(f, "{}", go_quote(s)),
            Self::Int(i) => write!(f, "{i}"),
            Self::Bool(b) => write!(f, "{b}"),
            Self::Json(s) => f.write_str(s),
        }
    }
}

impl From<&str> for BadValue {
    fn from(v: &str) -> Self {
        Self::String(v.to_string())
    }
}

impl From<String> for BadValue {
    fn from(v: String) -> Self {
        Self::String(v)
    }
}

impl From<&String> for BadValue {
    fn from(v: &String) -> Self {
        Self::String(v.clone())
    }
}

impl From<i32> for BadValue {
    fn from(v: i32) -> Self {
        Self::Int(v.into())
    }
}

impl From<i64> for BadValue {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<usize> for BadValue {
    fn from(v: usize) -> Self {
        Self::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl<T: Into<BadValue>> From<Option<T>> for BadValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

impl From<&serde_json::Value> for BadValue {
    fn from(v: &serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Self::Null,
            serde_json::Value::String(s) => Self::String(s.clone()),
            serde_json::Value::Bool(b) => Self::Bool(*b),
            serde_json::Value::Number(n) => n.as_i64().map_or_else(|| Self::Json(n.to_string()), Self::Int),
            other => Self::Json(other.to_string()),
        }
    }
}

/// Quote a string the way Go's `%q` does for the printable ASCII/UTF-8 text API values consist of.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The step of the builder that found an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Stage {
    /// Before resolution, so before any callback ran: the items' names.
    Resolve,
    /// The structural and configuration rules on the resolved tree (shape, gang counts, disruption modes,
    /// topology, claims, priority).
    Validation,
    /// The controller's allow-lists (an option the controller does not support).
    Allowlist,
    /// Compiling into a Workload: its identity (name, namespace, owner) and what the requested shape cannot
    /// express (a flat Workload has no composite levels).
    Compile,
    /// Re-syncing a live Workload and its groups to a desired one ([`crate::sync`]).
    Sync,
}

impl Stage {
    /// `resolve`, `validation`, `allowlist`, `compile` or `sync`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resolve => "resolve",
            Self::Validation => "validation",
            Self::Allowlist => "allowlist",
            Self::Compile => "compile",
            Self::Sync => "sync",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a field error comes from: the builder's stage and, when the error is about one item of the
/// `WorkloadItem` tree, that item's path (the names from the root to it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ErrorOrigin {
    /// The stage that found the error.
    pub stage: Stage,
    /// The names from the root item to the item the error is about; empty when it is about no single item
    /// (the Workload's identity, for example).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub item: Vec<String>,
}

impl ErrorOrigin {
    /// An origin about no single item.
    pub fn stage(stage: Stage) -> Self {
        Self {
            stage,
            item: Vec::new(),
        }
    }

    /// An origin about the item at `path` (names from the root).
    pub fn item(stage: Stage, path: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            stage,
            item: path.into_iter().map(Into::into).collect(),
        }
    }

    /// The item's name (the last of its path), if the error is about an item.
    pub fn item_name(&self) -> Option<&str> {
        self.item.last().map(String::as_str)
    }
}

/// One field error: where, what kind, the bad value and a detail; and, when the builder reported it, its
/// [`origin`](Self::origin). The origin is not part of the rendering: `Display` is the upstream
/// `<path>: <Type>: <detail>`.
///
/// ```
/// use workloadbuilder::{ErrorOrigin, FieldError, Stage};
/// let err = FieldError::required("spec.podGroupTemplates[0].name", "")
///     .with_origin(ErrorOrigin::item(Stage::Resolve, ["root", ""]));
/// assert_eq!(err.to_string(), "spec.podGroupTemplates[0].name: Required value");
/// assert_eq!(err.stage(), Some(Stage::Resolve));
/// assert_eq!(err.item_path(), ["root", ""]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The kind of error.
    pub error_type: FieldErrorType,
    /// The field the error is about.
    pub field: FieldPath,
    /// The offending value, if printed.
    pub bad_value: BadValue,
    /// A human-readable detail.
    pub detail: String,
    origin: Option<ErrorOrigin>,
}

impl FieldError {
    /// A `Required value` error.
    pub fn required(field: impl Into<FieldPath>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Required, field, BadValue::Omitted, detail)
    }

    /// An `Invalid value` error.
    pub fn invalid(field: impl Into<FieldPath>, value: impl Into<BadValue>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Invalid, field, value.into(), detail)
    }

    /// A `Duplicate value` error.
    pub fn duplicate(field: impl Into<FieldPath>, value: impl Into<BadValue>) -> Self {
        Self::new(FieldErrorType::Duplicate, field, value.into(), "")
    }

    /// A `Forbidden` error.
    pub fn forbidden(field: impl Into<FieldPath>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Forbidden, field, BadValue::Omitted, detail)
    }

    /// A `Not found` error.
    pub fn not_found(field: impl Into<FieldPath>, value: impl Into<BadValue>) -> Self {
        Self::new(FieldErrorType::NotFound, field, value.into(), "")
    }

    /// An `Unsupported value` error listing the supported values.
    pub fn not_supported(field: impl Into<FieldPath>, value: impl Into<BadValue>, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(FieldErrorType::NotSupported, field, value.into(), detail)
    }

    /// A `Too many` error for a list of `actual` items whose limit is `max`.
    pub fn too_many(field: impl Into<FieldPath>, actual: usize, max: usize) -> Self {
        let noun = if max == 1 { "item" } else { "items" };
        Self::new(
            FieldErrorType::TooMany,
            field,
            BadValue::from(actual),
            format!("must have at most {max} {noun}"),
        )
    }

    /// A `Too long` error for a value longer than `max` bytes.
    pub fn too_long(field: impl Into<FieldPath>, max: usize) -> Self {
        Self::new(
            FieldErrorType::TooLong,
            field,
            BadValue::Omitted,
            format!("may not be more than {max} bytes"),
        )
    }

    /// An `Internal error`.
    pub fn internal(field: impl Into<FieldPath>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Internal, field, BadValue::Omitted, detail)
    }

    fn new(
        error_type: FieldErrorType,
        field: impl Into<FieldPath>,
        bad_value: BadValue,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            error_type,
            field: field.into(),
            bad_value,
            detail: detail.into(),
            origin: None,
        }
    }

    /// Where the error comes from, when the builder reported it.
    pub fn origin(&self) -> Option<&ErrorOrigin> {
        self.origin.as_ref()
    }

    /// The builder stage that found the error, if known.
    pub fn stage(&self) -> Option<Stage> {
        self.origin.as_ref().map(|o| o.stage)
    }

    /// The name of the item the error is about, if known.
    pub fn item(&self) -> Option<&str> {
        self.origin.as_ref().and_then(ErrorOrigin::item_name)
    }

    /// The names from the root item to the item the error is about (empty when unknown or about no item).
    pub fn item_path(&self) -> &[String] {
        self.origin.as_ref().map_or(&[], |o| o.item.as_slice())
    }

    /// This error with its origin set (replacing any earlier one).
    pub fn with_origin(mut self, origin: ErrorOrigin) -> Self {
        self.origin = Some(origin);
        self
    }

    /// This error with its origin set to `origin` unless it already has one.
    pub fn or_origin(mut self, origin: impl FnOnce() -> ErrorOrigin) -> Self {
        if self.origin.is_none() {
            self.origin = Some(origin());
        }
        self
    }

    /// The error without its field path (`Invalid value: 0: must be ...`), as in a `StatusCause.message`.
    pub fn body(&self) -> String {
        let mut s = self.error_type.as_str().to_string();
        let prints_value = !matches!(
            self.error_type,
            FieldErrorType::Required | FieldErrorType::Forbidden | FieldErrorType::TooLong | FieldErrorType::Internal
        ) && self.bad_value != BadValue::Omitted;
        if prints_value {
            s.push_str(": ");
            s.push_str(&self.bad_value.to_string());
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// This error with its path re-rooted under `prefix`.
    pub fn under(mut self, prefix: &FieldPath) -> Self {
        self.field = self.field.under(prefix);
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

impl serde::Serialize for FieldPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for FieldPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self)
    }
}

impl serde::Serialize for FieldErrorType {
    /// As the `StatusCause.reason` Kubernetes uses (`FieldValueInvalid`, ...).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.cause_type())
    }
}

impl serde::Serialize for BadValue {
    /// `null`, a string, an integer, a boolean or the structured value; [`BadValue::Omitted`] as `null`
    /// (a [`FieldError`] leaves it out).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Omitted | Self::Null => serializer.serialize_none(),
            Self::String(s) => serializer.serialize_str(s),
            Self::Int(i) => serializer.serialize_i64(*i),
            Self::Bool(b) => serializer.serialize_bool(*b),
            Self::Json(s) => match serde_json::from_str::<serde_json::Value>(s) {
                Ok(v) => v.serialize(serializer),
                Err(_) => serializer.serialize_str(s),
            },
        }
    }
}

impl serde::Serialize for FieldError {
    /// `{type, field, badValue?, detail?, message, origin?}`: `type` is the `StatusCause.reason`
    /// (`FieldValueInvalid`), `message` the upstream rendering (`<path>: <Type>: <detail>`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", &self.error_type)?;
        map.serialize_entry("field", &self.field)?;
        if self.bad_value != BadValue::Omitted {
            map.serialize_entry("badValue", &self.bad_value)?;
        }
        if !self.detail.is_empty() {
            map.serialize_entry("detail", &self.detail)?;
        }
        map.serialize_entry("message", &self.to_string())?;
        if let Some(origin) = &self.origin {
            map.serialize_entry("origin", origin)?;
        }
        map.end()
    }
}

impl serde::Serialize for FieldErrors {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// A list of field errors, collected (never stopping at the first) and rendered like Kubernetes' aggregate:
/// one error prints alone, several print as `[a, b]` with duplicates removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldErrors(Vec<FieldError>);

impl FieldErrors {
    /// An empty list.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Append one error.
    pub fn push(&mut self, error: FieldError) {
        self.0.push(error);
    }

    /// Append every error of `other`.
    pub fn extend(&mut self, other: impl IntoIterator<Item = FieldError>) {
        self.0.extend(other);
    }

    /// True when there are no errors.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The errors, in the order they were found.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.0.iter()
    }

    /// The errors as a slice.
    pub fn as_slice(&self) -> &[FieldError] {
        &self.0
    }

    /// `Ok(value)` when empty, `Err(self)` otherwise.
    pub fn into_result<T>(self, value: T) -> Result<T, FieldErrors> {
        if self.is_empty() { Ok(value) } else { Err(self) }
    }

    /// Every path re-rooted under `prefix`.
    pub fn under(self, prefix: &FieldPath) -> Self {
        Self(self.0.into_iter().map(|e| e.under(prefix)).collect())
    }

    /// True when some error is at `path` with type `error_type`.
    pub fn contains(&self, error_type: FieldErrorType, path: &str) -> bool {
        self.0
            .iter()
            .any(|e| e.error_type == error_type && e.field.as_str() == path)
    }

    /// The `422 Invalid` Status kube-apiserver returns for these errors on object `name` of `kind` in `group`
    /// (`""` for the core group): message `Kind.group "name" is invalid: ...`, one cause per error.
    pub fn to_status(&self, group: &str, kind: &str, name: &str) -> Status {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = if self.is_empty() {
            format!("{qualified} {} is invalid", go_quote(name))
        } else {
            format!("{qualified} {} is invalid: {self}", go_quote(name))
        };
        let causes = self
            .0
            .iter()
            .map(|e| StatusCause {
                field: Some(e.field.to_string()),
                message: Some(e.body()),
                reason: Some(e.error_type.cause_type().to_string()),
            })
            .collect();
        Status {
            code: Some(422),
            details: Some(StatusDetails {
                causes: Some(causes),
                group: Some(group.to_string()),
                kind: Some(kind.to_string()),
                name: Some(name.to_string()),
                retry_after_seconds: None,
                uid: None,
            }),
            message: Some(message),
            metadata: Default::default(),
            reason: Some("Invalid".to_string()),
            status: Some("Failure".to_string()),
        }
    }
}

impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut seen: Vec<String> = Vec::new();
        for e in &self.0 {
            let msg = e.to_string();
            if !seen.contains(&msg) {
                seen.push(msg);
            }
        }
        match seen.len() {
            0 => Ok(()),
            1 => f.write_str(&seen[0]),
            _ => write!(f, "[{}]", seen.join(", ")),
        }
    }
}

impl std::error::Error for FieldErrors {}

impl From<Vec<FieldError>> for FieldErrors {
    fn from(errors: Vec<FieldError>) -> Self {
        Self(errors)
    }
}

impl From<FieldError> for FieldErrors {
    fn from(error: FieldError) -> Self {
        Self(vec![error])
    }
}

impl IntoIterator for FieldErrors {
    type Item = FieldError;
    type IntoIter = std::vec::IntoIter<FieldError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a FieldErrors {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromIterator<FieldError> for FieldErrors {
    fn from_iter<I: IntoIterator<Item = FieldError>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl Extend<FieldError> for FieldErrors {
    fn extend<I: IntoIterator<Item = FieldError>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_go() {
        let p = FieldPath::new("spec")
            .child("templates")
            .index(2)
            .child("labels")
            .key("app");
        assert_eq!(p.to_string(), "spec.templates[2].labels[app]");
        assert_eq!(FieldPath::root().child("a").to_string(), "a");
        assert_eq!(
            FieldPath::from("gang.minCount")
                .under(&FieldPath::new("spec"))
                .to_string(),
            "spec.gang.minCount"
        );
        assert_eq!(
            FieldPath::root().index(1).under(&FieldPath::new("items")).to_string(),
            "items[1]"
        );
    }

    #[test]
    fn error_bodies_render_like_go() {
        let p = FieldPath::new("spec");
        assert_eq!(
            FieldError::required(p.child("x"), "").to_string(),
            "spec.x: Required value"
        );
        assert_eq!(
            FieldError::required(p.child("x"), "must be set").to_string(),
            "spec.x: Required value: must be set"
        );
        assert_eq!(
            FieldError::invalid(p.child("x"), "a\"b", "bad").to_string(),
            "spec.x: Invalid value: \"a\\\"b\": bad"
        );
        assert_eq!(
            FieldError::invalid(p.child("x"), -3, "bad").to_string(),
            "spec.x: Invalid value: -3: bad"
        );
        assert_eq!(
            FieldError::invalid(p.clone(), BadValue::Null, "bad").to_string(),
            "spec: Invalid value: \"null\": bad"
        );
        assert_eq!(
            FieldError::duplicate(p.child("n"), "a").to_string(),
            "spec.n: Duplicate value: \"a\""
        );
        assert_eq!(
            FieldError::forbidden(p.child("f"), "no").to_string(),
            "spec.f: Forbidden: no"
        );
        assert_eq!(
            FieldError::too_many(p.child("t"), 2, 1).to_string(),
            "spec.t: Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            FieldError::too_many(p.child("t"), 9, 8).to_string(),
            "spec.t: Too many: 9: must have at most 8 items"
        );
        assert_eq!(
            FieldError::not_supported(p.child("s"), "Maybe", &["False", "True", "Unknown"]).to_string(),
            "spec.s: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\""
        );
    }

    #[test]
    fn origins_are_kept_out_of_the_rendering_and_serialized() {
        let plain = FieldError::invalid("spec.x", 0, "must be greater than or equal to 1");
        assert_eq!(plain.origin(), None);
        assert_eq!(plain.stage(), None);
        assert_eq!(plain.item(), None);
        assert!(plain.item_path().is_empty());
        let with = plain
            .clone()
            .with_origin(ErrorOrigin::item(Stage::Validation, ["root", "workers"]));
        assert_eq!(with.to_string(), plain.to_string());
        assert_eq!(with.body(), plain.body());
        assert_eq!(with.stage(), Some(Stage::Validation));
        assert_eq!(with.item(), Some("workers"));
        assert_eq!(with.item_path(), ["root", "workers"]);
        assert_ne!(with, plain);
        // `or_origin` keeps an origin that is already there.
        let kept = with.clone().or_origin(|| ErrorOrigin::stage(Stage::Compile));
        assert_eq!(kept.stage(), Some(Stage::Validation));
        assert_eq!(
            plain.clone().or_origin(|| ErrorOrigin::stage(Stage::Compile)).stage(),
            Some(Stage::Compile)
        );
        assert_eq!(
            serde_json::to_value(&with).unwrap(),
            serde_json::json!({
                "type": "FieldValueInvalid",
                "field": "spec.x",
                "badValue": 0,
                "detail": "must be greater than or equal to 1",
                "message": "spec.x: Invalid value: 0: must be greater than or equal to 1",
                "origin": {"stage": "validation", "item": ["root", "workers"]},
            })
        );
        let errs: FieldErrors = vec![
            FieldError::required("metadata.name", "").with_origin(ErrorOrigin::stage(Stage::Compile)),
            FieldError::invalid("spec.y", BadValue::Json("{\"a\":1}".into()), "bad"),
            FieldError::invalid("spec.z", BadValue::Null, "bad"),
        ]
        .into();
        assert_eq!(
            serde_json::to_value(&errs).unwrap(),
            serde_json::json!([
                {"type": "FieldValueRequired", "field": "metadata.name", "message": "metadata.name: Required value",
                 "origin": {"stage": "compile"}},
                {"type": "FieldValueInvalid", "field": "spec.y", "badValue": {"a": 1}, "detail": "bad",
                 "message": "spec.y: Invalid value: {\"a\":1}: bad"},
                {"type": "FieldValueInvalid", "field": "spec.z", "badValue": null, "detail": "bad",
                 "message": "spec.z: Invalid value: \"null\": bad"},
            ])
        );
        let origin: ErrorOrigin = serde_json::from_value(serde_json::json!({"stage": "allowlist"})).unwrap();
        assert_eq!(origin, ErrorOrigin::stage(Stage::Allowlist));
        assert_eq!(Stage::Sync.to_string(), "sync");
    }

    #[test]
    fn aggregate_and_status() {
        let mut errs = FieldErrors::new();
        errs.push(FieldError::required("spec.a", ""));
        errs.push(FieldError::required("spec.a", ""));
        errs.push(FieldError::invalid("spec.b", 0, "must be greater than or equal to 1"));
        assert_eq!(
            errs.to_string(),
            "[spec.a: Required value, spec.b: Invalid value: 0: must be greater than or equal to 1]"
        );
        let status = errs.to_status("scheduling.k8s.io", "Workload", "w");
        assert_eq!(
            status.message.as_deref(),
            Some(
                "Workload.scheduling.k8s.io \"w\" is invalid: [spec.a: Required value, spec.b: Invalid value: 0: \
                 must be greater than or equal to 1]"
            )
        );
        let details = status.details.unwrap();
        let causes = details.causes.unwrap();
        assert_eq!(causes.len(), 3);
        assert_eq!(causes[2].reason.as_deref(), Some("FieldValueInvalid"));
        assert_eq!(causes[2].field.as_deref(), Some("spec.b"));
        assert_eq!(
            causes[2].message.as_deref(),
            Some("Invalid value: 0: must be greater than or equal to 1")
        );
        let single: FieldErrors = FieldError::forbidden("spec.x", "no").into();
        assert_eq!(
            single.to_status("", "Pod", "p").message.as_deref(),
            Some("Pod \"p\" is invalid: spec.x: Forbidden: no")
        );
    }
}
