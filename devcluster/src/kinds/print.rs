//! Helpers the kinds share for their `kubectl get` Table columns and cells.

use serde_json::Value;

use crate::meta;
pub(crate) use crate::resource::column as col;
pub(crate) use crate::views::condition_status;

/// A string cell.
pub(crate) fn text_cell(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

/// The `Name` cell.
pub(crate) fn name(obj: &Value) -> Value {
    text_cell(meta::name(obj))
}

/// The `Age` cell.
pub(crate) fn age(obj: &Value) -> Value {
    text_cell(meta::age_of(meta::meta_str(obj, "creationTimestamp")))
}

/// The string at a JSON pointer, or `<none>`.
pub(crate) fn str_at(obj: &Value, pointer: &str) -> String {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("<none>")
        .to_string()
}
