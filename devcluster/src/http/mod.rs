//! The HTTP layer: routes Kubernetes REST paths to the API operations, decodes bodies and query
//! parameters, negotiates Table and aggregated-discovery responses, applies injected faults and renders
//! errors as `Status` objects.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as AxState;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

mod discovery;
mod openapi;
mod path;
mod request;
mod resource;
pub(crate) mod serve;
mod table;
mod watch;

use self::path::{Target, parse_path};
use self::request::{Request, guard, parse_query};
use self::resource::resource;
use crate::error::ApiError;
use crate::server::Shared;

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// kube-apiserver accepts request bodies up to 3 MiB.
const MAX_BODY: usize = 3 * 1024 * 1024;

/// The router of the API server.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(contained)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(shared)
}

/// Serves one request: reads its body within the size limit, takes an in-flight slot, and turns a panic
/// while handling it into a 500 for this request alone (the server and every other request go on).
async fn contained(
    AxState(shared): AxState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    use futures::FutureExt;
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return error_response(&ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {MAX_BODY}"),
                None,
            ));
        }
    };
    let mutating = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    let Some(_slot) = shared.in_flight.admit(mutating) else {
        return error_response(&ApiError::too_many_requests(
            "Too many requests, please try again later.",
        ));
    };
    let path = uri.path().to_string();
    match std::panic::AssertUnwindSafe(dispatch(shared, method, uri, headers, body))
        .catch_unwind()
        .await
    {
        Ok(r) => r,
        Err(_) => {
            tracing::error!(%path, "a request handler panicked; answering 500");
            error_response(&ApiError::internal(format!(
                "an internal error occurred while handling {path}"
            )))
        }
    }
}

fn json_response(code: StatusCode, body: String, warnings: &[String]) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for w in warnings {
        let v = format!("299 - {}", serde_json::to_string(w).unwrap_or_default());
        if let Ok(h) = HeaderValue::from_str(&v) {
            r.headers_mut().append(header::WARNING, h);
        }
    }
    r
}

fn value_response(code: StatusCode, v: &Value) -> Response {
    json_response(code, v.to_string(), &[])
}

fn error_response(e: &ApiError) -> Response {
    let code = StatusCode::from_u16(e.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json_response(code, serde_json::to_string(&*e.0).unwrap_or_default(), &[]);
    if e.code() == 429
        && let Ok(h) = HeaderValue::from_str("1")
    {
        r.headers_mut().insert(header::RETRY_AFTER, h);
    }
    r
}

fn accepts_table(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(|s| s.contains("as=Table")))
}

fn accepts_aggregated(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|s| s.split(','))
        .any(|part| part.contains("as=APIGroupDiscoveryList") && part.contains("v=v2") && !part.contains("v=v2beta1"))
}

/// A parsed REST path.
async fn dispatch(shared: Arc<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(e) = guard(&shared, &headers) {
        return error_response(&e);
    }
    let target = parse_path(uri.path());
    let query = parse_query(uri.query());
    match target {
        Target::Version => value_response(StatusCode::OK, &discovery::version()),
        Target::Health => {
            let mut r = Response::new(Body::from("ok"));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            r
        }
        Target::Api => {
            if accepts_aggregated(&headers) {
                let doc = shared.with(|s| discovery::aggregated(&s.registry, true));
                return aggregated_response(&doc);
            }
            value_response(StatusCode::OK, &discovery::core_versions(&shared.server_address))
        }
        Target::Apis => {
            if accepts_aggregated(&headers) {
                let doc = shared.with(|s| discovery::aggregated(&s.registry, false));
                return aggregated_response(&doc);
            }
            let doc = shared.with(|s| discovery::group_list(&s.registry));
            value_response(StatusCode::OK, &doc)
        }
        Target::Group(g) => match shared.with(|s| discovery::group(&s.registry, &g)) {
            Some(doc) => value_response(StatusCode::OK, &doc),
            None => error_response(&ApiError::path_not_found()),
        },
        Target::GroupVersion(g, v) => match shared.with(|s| discovery::resource_list(&s.registry, &g, &v)) {
            Some(doc) => value_response(StatusCode::OK, &doc),
            None => error_response(&ApiError::path_not_found()),
        },
        Target::OpenApiV2 | Target::OpenApiV3Index | Target::OpenApiV3(_) => openapi(&shared, target, &headers),
        Target::Resource {
            group,
            version,
            namespace,
            plural,
            name,
            sub,
        } => {
            let req = Request {
                method,
                query,
                headers,
                body,
            };
            match resource(shared, &req, &group, &version, namespace, &plural, name, sub).await {
                Ok(r) => r,
                Err(e) => error_response(&e),
            }
        }
        Target::Unknown => error_response(&ApiError::path_not_found()),
    }
}

fn aggregated_response(doc: &Value) -> Response {
    let mut r = Response::new(Body::from(doc.to_string()));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(AGGREGATED));
    r
}

fn openapi(shared: &Shared, target: Target, _headers: &HeaderMap) -> Response {
    match target {
        Target::OpenApiV3Index => match shared.with(|s| openapi::v3_index(&s.registry)) {
            Some(doc) => value_response(StatusCode::OK, &doc),
            None => error_response(&ApiError::path_not_found()),
        },
        Target::OpenApiV3(path) => match shared.with(|s| openapi::v3_document(&s.registry, &path)) {
            Some(doc) => value_response(StatusCode::OK, &doc),
            None => error_response(&ApiError::path_not_found()),
        },
        _ => error_response(&ApiError::path_not_found()),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error_response(&self)
    }
}
