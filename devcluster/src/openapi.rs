//! OpenAPI documents.

use serde_json::Value;

use crate::resources::Registry;

/// `/openapi/v3`.
pub fn v3_index(_registry: &Registry) -> Option<Value> {
    None
}

/// `/openapi/v3/<group-version path>`.
pub fn v3_document(_registry: &Registry, _path: &str) -> Option<Value> {
    None
}
