//! Server-side printing: `meta.k8s.io/v1` Table responses for `kubectl get`. The columns and cells come
//! from each kind's strategy (upstream's printers for built-in kinds, a CRD's additional printer columns
//! for custom resources).

use serde_json::{Value, json};

use crate::meta;
use crate::resource::ResourceInfo;

/// What a Table row carries in `object` (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter.
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// One Table row.
fn row(res: &ResourceInfo, obj: &Value, include: IncludeObject) -> Value {
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => {
            let mut md = meta::metadata(obj).cloned().unwrap_or_default();
            md.remove("managedFields");
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md})
        }
    };
    let mut r = json!({"cells": res.strategy.cells(res, obj)});
    if !object.is_null() {
        r["object"] = object;
    }
    r
}

/// A Table of objects (already in the client's version).
pub(crate) fn table(
    res: &ResourceInfo,
    objs: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
    include: IncludeObject,
) -> Value {
    let mut md = json!({"resourceVersion": resource_version});
    if let Some(c) = continue_token {
        md["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": md,
        "columnDefinitions": res.strategy.columns(res),
        "rows": objs.iter().map(|o| row(res, o, include)).collect::<Vec<_>>(),
    })
}
