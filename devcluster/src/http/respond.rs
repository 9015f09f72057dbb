//! Response bodies in the negotiated encoding: JSON (the default) or the Kubernetes protobuf form for
//! clients that ask for it first (client-go's typed clients, kubectl's generators). An object that has no
//! complete protobuf form (a field the v1.37 schema snapshot lacks, see `protobuf::SCHEMA_GAPS`) is
//! answered in JSON when the client accepts JSON too, as client-go always does: never with the field
//! dropped.

use std::borrow::Cow;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::protobuf::{self, Wire};
use crate::resource::ResourceInfo;

/// A body with its content type and `Warning` headers.
pub(super) fn bytes_response(
    code: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
    warnings: &[String],
) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    for w in warnings {
        let v = format!("299 - {}", serde_json::to_string(w).unwrap_or_default());
        if let Ok(h) = HeaderValue::from_str(&v) {
            r.headers_mut().append(header::WARNING, h);
        }
    }
    r
}

/// The JSON of an object as the resource serves it.
pub(super) fn json_of(res: &ResourceInfo, obj: &Value) -> String {
    if res.needs_conversion(obj) {
        serde_json::to_string(&res.present(obj)).unwrap_or_default()
    } else {
        serde_json::to_string(obj).unwrap_or_default()
    }
}

/// The object as the resource serves it (converted from its stored version when they differ).
pub(super) fn presented<'a>(res: &ResourceInfo, obj: &'a Value) -> Cow<'a, Value> {
    if res.needs_conversion(obj) {
        Cow::Owned(res.present(obj))
    } else {
        Cow::Borrowed(obj)
    }
}

fn encoding_failed(what: &str, e: &protobuf::ProtoError) -> ApiError {
    tracing::error!(%what, error = %e, "a response could not be encoded as protobuf");
    ApiError::internal(format!("{what} could not be encoded as protobuf: {e}"))
}

/// One object.
pub(super) fn object(
    code: StatusCode,
    wire: Wire,
    res: &ResourceInfo,
    obj: &Value,
    warnings: &[String],
) -> Result<Response, ApiError> {
    match wire {
        Wire::Json => Ok(bytes_response(
            code,
            "application/json",
            json_of(res, obj).into_bytes(),
            warnings,
        )),
        Wire::Protobuf { json_fallback } => match protobuf::encode(&presented(res, obj)) {
            Ok(body) => Ok(bytes_response(code, protobuf::MEDIA_TYPE, body, warnings)),
            Err(e) if json_fallback => {
                tracing::warn!(kind = %res.kind, error = %e, "answering JSON: the object has no complete protobuf form");
                object(code, Wire::Json, res, obj, warnings)
            }
            Err(e) => Err(encoding_failed(&res.kind, &e)),
        },
    }
}

/// A list of objects with its `ListMeta`.
pub(super) fn list<T: std::ops::Deref<Target = Value>>(
    wire: Wire,
    res: &ResourceInfo,
    items: &[T],
    metadata: &Value,
) -> Result<Response, ApiError> {
    let kind = format!("{}List", res.kind);
    match wire {
        Wire::Json => {
            let mut body = String::with_capacity(64 + items.len() * 512);
            body.push_str("{\"kind\":");
            body.push_str(&serde_json::to_string(&kind).unwrap_or_default());
            body.push_str(",\"apiVersion\":");
            body.push_str(&serde_json::to_string(&res.api_version()).unwrap_or_default());
            body.push_str(",\"metadata\":");
            body.push_str(&metadata.to_string());
            body.push_str(",\"items\":[");
            for (i, o) in items.iter().enumerate() {
                if i > 0 {
                    body.push(',');
                }
                body.push_str(&json_of(res, o));
            }
            body.push_str("]}");
            Ok(bytes_response(
                StatusCode::OK,
                "application/json",
                body.into_bytes(),
                &[],
            ))
        }
        Wire::Protobuf { json_fallback } => {
            let value = json!({
                "metadata": metadata,
                "items": items.iter().map(|o| presented(res, o).into_owned()).collect::<Vec<_>>(),
            });
            match protobuf::encode_as(&res.api_version(), &kind, &value) {
                Ok(body) => Ok(bytes_response(StatusCode::OK, protobuf::MEDIA_TYPE, body, &[])),
                Err(e) if json_fallback => {
                    tracing::warn!(%kind, error = %e, "answering JSON: the list has no complete protobuf form");
                    list(Wire::Json, res, items, metadata)
                }
                Err(e) => Err(encoding_failed(&kind, &e)),
            }
        }
    }
}

/// A `meta/v1` `Status` (errors, and the success of a subresource create).
pub(super) fn status(code: StatusCode, wire: Wire, status: &Value) -> Response {
    if let Wire::Protobuf { .. } = wire {
        match protobuf::encode_as("v1", "Status", status) {
            Ok(body) => return bytes_response(code, protobuf::MEDIA_TYPE, body, &[]),
            Err(e) => tracing::error!(error = %e, "a Status could not be encoded as protobuf; answering JSON"),
        }
    }
    bytes_response(code, "application/json", status.to_string().into_bytes(), &[])
}

/// An error as its `Status`.
pub(super) fn error(e: &ApiError, wire: Wire) -> Response {
    let code = StatusCode::from_u16(e.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_value(&*e.0).unwrap_or_default();
    let mut r = status(code, wire, &body);
    // `Retry-After` carries the Status' hint, as kube-apiserver sends it (none when the hint is 0).
    if let Some(after) =
        e.0.details
            .as_ref()
            .and_then(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
        && let Ok(h) = HeaderValue::from_str(&after.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, h);
    }
    r
}
