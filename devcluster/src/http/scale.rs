//! The `scale` subresource (autoscaling/v1 `Scale`) of Deployments, ReplicaSets and StatefulSets, as
//! `kubectl scale` and autoscalers use it: GET reads `spec.replicas`, `status.replicas` and the selector;
//! PUT and PATCH change `spec.replicas` (a `resourceVersion` in the body is a precondition).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::request::Request;
use super::respond;
use crate::api::PatchType;
use crate::cluster::Shared;
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::patch;
use crate::resource::ResourceInfo;
use crate::selectors::LabelSelector;

/// The `Scale` of a workload.
fn scale_of(obj: &Value) -> Value {
    let md = meta::metadata(obj);
    let field = |f: &str| md.and_then(|m| m.get(f)).cloned().unwrap_or(Value::Null);
    let selector = LabelSelector::from_api(obj.pointer("/spec/selector")).map_or_else(String::new, |s| s.to_string());
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": field("name"),
            "namespace": field("namespace"),
            "uid": field("uid"),
            "resourceVersion": field("resourceVersion"),
            "creationTimestamp": field("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        },
    })
}

fn scale_response(code: StatusCode, req: &Request, scale: &Value) -> Result<Response, ApiError> {
    let wire = req
        .wire
        .for_kind("autoscaling/v1", "Scale")
        .unwrap_or(crate::protobuf::Wire::Json);
    match wire {
        crate::protobuf::Wire::Protobuf { .. } => match crate::protobuf::encode(scale) {
            Ok(body) => Ok(respond::bytes_response(code, crate::protobuf::MEDIA_TYPE, body, &[])),
            Err(e) => Err(ApiError::internal(format!(
                "Scale could not be encoded as protobuf: {e}"
            ))),
        },
        crate::protobuf::Wire::Json => Ok(respond::bytes_response(
            code,
            "application/json",
            scale.to_string().into_bytes(),
            &[],
        )),
    }
}

/// Serves `GET|PUT|PATCH <resource>/<name>/scale`.
pub(super) fn serve(
    shared: &Arc<Shared>,
    req: &Request,
    res: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<Response, ApiError> {
    let current = shared.with(|s| s.get(res, ns, name))?;
    let desired = match req.method.as_str() {
        "GET" => return scale_response(StatusCode::OK, req, &scale_of(&current)),
        "PUT" => {
            let mut warnings = Vec::new();
            req.body_value(&mut warnings)?
        }
        "PATCH" => {
            let mut warnings = Vec::new();
            let patch_body = req.body_value(&mut warnings)?;
            let mut scale = scale_of(&current);
            let applied = match req.patch_type()? {
                PatchType::Json => patch::json_patch(&mut scale, &patch_body),
                PatchType::Merge => patch::merge_patch(&mut scale, &patch_body),
                PatchType::Strategic => patch::strategic_merge_patch(&mut scale, &patch_body),
                PatchType::Apply => patch::merge_patch(&mut scale, &patch_body),
            };
            applied.map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!(
                        "the server rejected our request due to an error in our request: {}",
                        e.0
                    ),
                    None,
                )
            })?;
            scale
        }
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({} {}/scale)",
                req.method, res.plural
            )));
        }
    };
    let replicas = desired.pointer("/spec/replicas");
    let replicas = match replicas.and_then(Value::as_i64) {
        Some(r) if (0..=i64::from(i32::MAX)).contains(&r) => r,
        _ => {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![FieldCause::invalid(
                    "spec.replicas",
                    replicas.unwrap_or(&Value::Null),
                    "must be greater than or equal to 0",
                )],
            ));
        }
    };
    let mut updated = (*current).clone();
    updated["spec"]["replicas"] = json!(replicas);
    if let Some(rv) = desired.pointer("/metadata/resourceVersion").and_then(Value::as_str)
        && !rv.is_empty()
    {
        meta::metadata_mut(&mut updated).insert("resourceVersion".into(), json!(rv));
    }
    let mut ctx = req.write_options()?;
    let stored = shared.with(|s| s.update(res, ns, name, updated, None, &mut ctx))?;
    scale_response(StatusCode::OK, req, &scale_of(&stored))
}
