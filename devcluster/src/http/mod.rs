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
mod logs;
mod openapi;
mod path;
mod request;
mod resource;
mod respond;
mod scale;
pub(crate) mod serve;
mod table;
mod watch;

use self::path::{Target, parse_path};
use self::request::{Request, guard, parse_query};
use self::resource::resource;
use crate::cluster::Shared;
use crate::error::ApiError;
use crate::protobuf::Wire;

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

/// Serves one request: takes an in-flight slot (a request past the limit is answered 429 at once, its body
/// unread), reads the body within the size limit and [`ServerSettings::request_timeout`], and turns a
/// panic while handling it into a 500 for this request alone (the server and every other request go on).
///
/// The slot is taken before the body is read, as kube-apiserver's max-in-flight filter runs before its
/// handlers read the body: a client that sends its body slowly holds one slot, not the server. Bodies of
/// reads (`GET`, `HEAD`, `OPTIONS`) are never read: no read takes one.
///
/// [`ServerSettings::request_timeout`]: crate::cluster::ServerSettings::request_timeout
async fn contained(
    AxState(shared): AxState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
    body: Body,
) -> Response {
    use futures::FutureExt;
    let wire = negotiate(&headers);
    let mutating = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    let Some(_slot) = shared.in_flight.admit(mutating) else {
        return respond::error(
            &ApiError::too_many_requests("Too many requests, please try again later."),
            wire,
        );
    };
    let body = if mutating {
        match read_body(&headers, body, shared.settings.request_timeout).await {
            Ok(b) => b,
            Err(e) => return respond::error(&e, wire),
        }
    } else {
        Bytes::new()
    };
    let connection = extensions.get::<serve::Connection>().cloned();
    let path = uri.path().to_string();
    match std::panic::AssertUnwindSafe(dispatch(shared, method, uri, headers, body, wire, connection))
        .catch_unwind()
        .await
    {
        Ok(r) => r,
        Err(_) => {
            tracing::error!(%path, "a request handler panicked; answering 500");
            respond::error(
                &ApiError::internal(format!("an internal error occurred while handling {path}")),
                wire,
            )
        }
    }
}

/// Reads a request body of at most [`MAX_BODY`] bytes (a larger declared `Content-Length` is refused
/// before any of it is read) within `timeout`: a body still arriving then is answered as kube-apiserver's
/// timeout filter answers a request past its deadline (504 `Timeout`).
async fn read_body(headers: &HeaderMap, body: Body, timeout: std::time::Duration) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {MAX_BODY}"),
            None,
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(too_large()),
        Err(_) => Err(ApiError::new(
            504,
            "Timeout",
            "Timeout: request did not complete within the allotted timeout",
            Some(Default::default()),
        )),
    }
}

/// The response encoding the client asked for (`Accept`).
fn negotiate(headers: &HeaderMap) -> Wire {
    Wire::negotiate(headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()))
}

fn value_response(code: StatusCode, v: &Value) -> Response {
    respond::bytes_response(code, "application/json", v.to_string().into_bytes(), &[])
}

fn error_response(e: &ApiError) -> Response {
    respond::error(e, Wire::Json)
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

/// Routes one request by its path.
#[allow(clippy::too_many_arguments)]
async fn dispatch(
    shared: Arc<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    wire: Wire,
    connection: Option<serve::Connection>,
) -> Response {
    if let Err(e) = guard(&shared, &headers) {
        return respond::error(&e, wire);
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
                wire,
                connection,
            };
            match resource(shared, &req, &group, &version, namespace, &plural, name, sub).await {
                Ok(r) => r,
                Err(e) => respond::error(&e, wire),
            }
        }
        Target::Unknown => respond::error(&ApiError::path_not_found(), wire),
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
