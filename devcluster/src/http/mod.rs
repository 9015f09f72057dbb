//! The HTTP layer: routes Kubernetes REST paths to the API operations, decodes bodies and query
//! parameters, negotiates Table and aggregated-discovery responses, applies injected faults and renders
//! errors as `Status` objects.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as AxState;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

mod discovery;
mod openapi;
pub(crate) mod serve;
mod table;
mod watch;

use crate::api::{self, DeleteOptions, Deleted, ListOptions, PatchType, subresources};
use crate::error::ApiError;
use crate::faults::Verb;
use crate::meta;
use crate::request::{FieldValidation, RequestContext};
use crate::resource::{Propagation, ResourceInfo, SubresourceOp};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::server::Shared;
use table::IncludeObject;
use watch::WatchParams;

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

fn parse_query(q: Option<&str>) -> HashMap<String, String> {
    q.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
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
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Version,
    Health,
    Api,
    Apis,
    Group(String),
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String),
    Resource {
        group: String,
        version: String,
        namespace: Option<String>,
        plural: String,
        name: Option<String>,
        sub: Option<String>,
    },
    Unknown,
}

fn parse_path(path: &str) -> Target {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Target::Version,
        ["healthz" | "livez" | "readyz", ..] => return Target::Health,
        ["openapi", "v2"] => return Target::OpenApiV2,
        ["openapi", "v3"] => return Target::OpenApiV3Index,
        ["openapi", "v3", rest @ ..] => return Target::OpenApiV3(rest.join("/")),
        ["api"] => return Target::Api,
        ["apis"] => return Target::Apis,
        ["apis", g] => return Target::Group((*g).to_string()),
        ["api", v] => return Target::GroupVersion(String::new(), (*v).to_string()),
        ["apis", g, v] => return Target::GroupVersion((*g).to_string(), (*v).to_string()),
        ["api", v, rest @ ..] => (String::new(), (*v).to_string(), rest),
        ["apis", g, v, rest @ ..] => ((*g).to_string(), (*v).to_string(), rest),
        _ => return Target::Unknown,
    };
    let s = |x: &&str| Some((*x).to_string());
    let core = group.is_empty();
    match rest {
        ["namespaces", ns, plural, tail @ ..] if !(core && matches!(*plural, "status" | "finalize")) => {
            let (name, sub) = match tail {
                [] => (None, None),
                [n] => (s(n), None),
                [n, sub] => (s(n), s(sub)),
                _ => return Target::Unknown,
            };
            Target::Resource {
                group,
                version,
                namespace: s(ns),
                plural: (*plural).to_string(),
                name,
                sub,
            }
        }
        [plural] => Target::Resource {
            group,
            version,
            namespace: None,
            plural: (*plural).to_string(),
            name: None,
            sub: None,
        },
        [plural, name] => Target::Resource {
            group,
            version,
            namespace: None,
            plural: (*plural).to_string(),
            name: s(name),
            sub: None,
        },
        [plural, name, sub] => Target::Resource {
            group,
            version,
            namespace: None,
            plural: (*plural).to_string(),
            name: s(name),
            sub: s(sub),
        },
        _ => Target::Unknown,
    }
}

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

/// Refuses requests a web page could have made through the user's browser: a `Host` that is not a loopback
/// name (DNS rebinding: an attacker's domain resolving to 127.0.0.1) or an `Origin` that is not loopback
/// (a cross-site request). Clients such as kubectl, client-go, kube-rs and the Python client send neither.
/// A cluster started to accept remote clients skips the check (it has no authentication either way).
fn guard(shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    if shared.remote_clients {
        return Ok(());
    }
    let host_of = |authority: &str| -> String {
        let authority = authority.trim();
        let host = if let Some(rest) = authority.strip_prefix('[') {
            rest.split(']').next().unwrap_or("")
        } else {
            authority.rsplit_once(':').map_or(authority, |(h, _)| h)
        };
        host.to_ascii_lowercase()
    };
    let loopback = |host: &str| {
        host == "localhost"
            || host.ends_with(".localhost")
            || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    };
    if let Some(h) = headers.get(header::HOST) {
        let host = host_of(h.to_str().unwrap_or(""));
        if !loopback(&host) {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!("host {host:?} is not allowed: devcluster only answers requests addressed to loopback"),
                None,
            ));
        }
    }
    if let Some(o) = headers.get(header::ORIGIN) {
        let origin = o.to_str().unwrap_or("");
        let authority = origin.split_once("://").map_or("", |(_, a)| a);
        if !loopback(&host_of(authority)) {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!("cross-origin request from {origin:?} refused"),
                None,
            ));
        }
    }
    Ok(())
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

struct Request {
    method: Method,
    query: HashMap<String, String>,
    headers: HeaderMap,
    body: Bytes,
}

impl Request {
    fn q(&self, k: &str) -> Option<&str> {
        self.query.get(k).map(String::as_str)
    }

    fn content_type(&self) -> String {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_string()
    }

    fn field_manager(&self) -> String {
        if let Some(m) = self.q("fieldManager") {
            return m.to_string();
        }
        let ua = self
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        ua.split('/').next().unwrap_or("").chars().take(128).collect()
    }

    fn write_options(&self) -> Result<RequestContext, ApiError> {
        let field_validation = match self.q("fieldValidation") {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation parameter unsupported: {other}, valid values are: Ignore, Warn, Strict"
                )));
            }
        };
        Ok(RequestContext {
            dry_run: self.q("dryRun") == Some("All"),
            field_manager: self.field_manager(),
            field_validation,
            force: self.q("force") == Some("true"),
            warnings: Vec::new(),
        })
    }

    /// Decodes the body as JSON, or YAML for the YAML content types.
    fn body_value(&self) -> Result<Value, ApiError> {
        if self.body.is_empty() {
            return Ok(Value::Null);
        }
        // Bodies are decoded by their declared media type (none means JSON, as in kube-apiserver: the Python
        // client sends none); `text/plain` and the form types a web page can post without a CORS preflight
        // are refused. A cross-site request without a Content-Type still carries an `Origin`, which
        // [`guard`] refuses.
        let ct = match self.headers.get(header::CONTENT_TYPE) {
            Some(v) => v.to_str().unwrap_or("").to_string(),
            None => "application/json".to_string(),
        };
        let media_type = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let yaml = match media_type.as_str() {
            "application/json"
            | "application/json-patch+json"
            | "application/merge-patch+json"
            | "application/strategic-merge-patch+json" => false,
            "application/yaml" | "application/apply-patch+yaml" => true,
            _ => return Err(ApiError::unsupported_media_type(&ct)),
        };
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(v) => Ok(v),
            Err(json_err) if yaml => {
                let text = std::str::from_utf8(&self.body).map_err(|e| ApiError::bad_request(e.to_string()))?;
                serde_saphyr::from_str::<Value>(text)
                    .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e} (as JSON: {json_err})")))
            }
            Err(e) => Err(ApiError::bad_request(format!(
                "couldn't get version/kind; json parse error: {e}"
            ))),
        }
    }

    fn list_options(&self, res: &ResourceInfo) -> Result<ListOptions, ApiError> {
        let label_selector = LabelSelector::parse(self.q("labelSelector").unwrap_or(""))?;
        let field_selector = FieldSelector::parse(self.q("fieldSelector").unwrap_or(""))?;
        field_selector.check_supported(|f| supported_field(res, f))?;
        let limit = match self.q("limit") {
            Some(l) if !l.is_empty() => l
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?,
            _ => 0,
        };
        Ok(ListOptions {
            label_selector,
            field_selector,
            limit,
            continue_token: self.q("continue").map(str::to_string),
            resource_version: self.q("resourceVersion").map(str::to_string),
            resource_version_match: self.q("resourceVersionMatch").map(str::to_string),
        })
    }
}

/// The field selectors a resource supports: `metadata.name` and `metadata.namespace` everywhere, and what
/// its kind adds.
fn supported_field(res: &ResourceInfo, field: &str) -> bool {
    matches!(field, "metadata.name" | "metadata.namespace") || res.strategy.supports_field(res, field)
}

fn verb_of(method: &Method, name: bool, watch: bool) -> Verb {
    match (method.as_str(), name) {
        ("GET", _) if watch => Verb::Watch,
        ("GET", true) => Verb::Get,
        ("GET", false) => Verb::List,
        ("POST", _) => Verb::Create,
        ("PUT", _) => Verb::Update,
        ("PATCH", _) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::Deletecollection,
        _ => Verb::Get,
    }
}

fn encode(res: &ResourceInfo, obj: &Value) -> String {
    if res.needs_conversion(obj) {
        serde_json::to_string(&res.present(obj)).unwrap_or_default()
    } else {
        serde_json::to_string(obj).unwrap_or_default()
    }
}

#[allow(clippy::too_many_arguments)]
async fn resource(
    shared: Arc<Shared>,
    req: &Request,
    group: &str,
    version: &str,
    namespace: Option<String>,
    plural: &str,
    name: Option<String>,
    sub: Option<String>,
) -> Result<Response, ApiError> {
    let res = shared
        .with(|s| s.resource(group, version, plural))
        .ok_or_else(ApiError::path_not_found)?;
    if namespace.is_some() && !res.namespaced {
        return Err(ApiError::path_not_found());
    }
    let watch = matches!(req.q("watch"), Some("true" | "1"));
    let verb = verb_of(&req.method, name.is_some(), watch);
    let decision = shared.faults.decide(&res.plural, verb);
    if !decision.latency.is_zero() {
        tokio::time::sleep(decision.latency).await;
    }
    if let Some(e) = decision.error {
        return Err(e);
    }
    let handled = handle(&shared, req, &res, namespace, plural, name, sub, watch).await;
    // "Committed, but the response was lost": the request took effect and the client still sees an error.
    match (handled, decision.lost_response) {
        (Ok(_), Some(e)) => Err(e),
        (handled, _) => handled,
    }
}

/// Handles one resource request after routing and fault injection.
#[allow(clippy::too_many_arguments)]
async fn handle(
    shared: &Arc<Shared>,
    req: &Request,
    res: &Arc<ResourceInfo>,
    namespace: Option<String>,
    plural: &str,
    name: Option<String>,
    sub: Option<String>,
    watch: bool,
) -> Result<Response, ApiError> {
    let res = res.clone();
    let shared = shared.clone();
    let ns = namespace.clone().unwrap_or_default();
    let table = accepts_table(&req.headers);
    match (req.method.as_str(), name, sub.as_deref()) {
        ("GET", None, None) if watch => {
            let opts = req.list_options(&res)?;
            let timeout = req
                .q("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .map(Duration::from_secs)
                .unwrap_or(shared.settings.watch_timeout);
            let p = WatchParams {
                res: res.clone(),
                namespace: namespace.filter(|_| res.namespaced),
                label: opts.label_selector,
                field: opts.field_selector,
                resource_version: opts.resource_version,
                send_initial_events: req.q("sendInitialEvents") == Some("true"),
                bookmarks: req.q("allowWatchBookmarks") == Some("true"),
                timeout,
                table: table.then(|| IncludeObject::parse(req.q("includeObject"))),
            };
            let Some(slot) = shared.in_flight.watch() else {
                return Err(ApiError::too_many_requests(
                    "Too many requests, please try again later.",
                ));
            };
            let body = watch::start(shared.clone(), p, slot)?;
            let mut r = Response::new(body);
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
            Ok(r)
        }
        ("GET", None, None) => {
            let opts = req.list_options(&res)?;
            let ns_filter = namespace.as_deref().filter(|_| res.namespaced);
            let result = shared.with(|s| s.list(&res, ns_filter, &opts))?;
            if table {
                let objs: Vec<Value> = result.items.iter().map(|o| res.present(o)).collect();
                let t = table::table(
                    &res,
                    &objs,
                    &result.resource_version.to_string(),
                    result.continue_token.as_deref(),
                    IncludeObject::parse(req.q("includeObject")),
                );
                return Ok(value_response(StatusCode::OK, &t));
            }
            let mut md = json!({"resourceVersion": result.resource_version.to_string()});
            if let Some(c) = &result.continue_token {
                md["continue"] = json!(c);
            }
            if let Some(r) = result.remaining {
                md["remainingItemCount"] = json!(r);
            }
            let mut body = String::with_capacity(64 + result.items.len() * 512);
            body.push_str("{\"kind\":");
            body.push_str(&serde_json::to_string(&format!("{}List", res.kind)).unwrap_or_default());
            body.push_str(",\"apiVersion\":");
            body.push_str(&serde_json::to_string(&res.api_version()).unwrap_or_default());
            body.push_str(",\"metadata\":");
            body.push_str(&md.to_string());
            body.push_str(",\"items\":[");
            for (i, o) in result.items.iter().enumerate() {
                if i > 0 {
                    body.push(',');
                }
                body.push_str(&encode(&res, o));
            }
            body.push_str("]}");
            Ok(json_response(StatusCode::OK, body, &[]))
        }
        ("GET", Some(n), None | Some("status")) => {
            let obj = shared.with(|s| s.get(&res, &ns, &n))?;
            if table {
                let t = table::table(
                    &res,
                    &[res.present(&obj)],
                    meta::resource_version(&obj),
                    None,
                    IncludeObject::parse(req.q("includeObject")),
                );
                return Ok(value_response(StatusCode::OK, &t));
            }
            Ok(json_response(StatusCode::OK, encode(&res, &obj), &[]))
        }
        ("POST", None, None) => {
            let mut ctx = req.write_options()?;
            let body = res.to_storage(req.body_value()?);
            let obj = shared.with(|s| s.create(&res, &ns, body, &mut ctx))?;
            Ok(json_response(StatusCode::CREATED, encode(&res, &obj), &ctx.warnings))
        }
        (method, Some(n), Some(sub_name)) if subresource_op(&res, method, sub_name).is_some() => {
            let body = req.body_value()?;
            match subresource_op(&res, method, sub_name) {
                Some(SubresourceOp::PodBinding) => {
                    shared.with(|s| subresources::bind(s, &res, &ns, &n, &body))?;
                    Ok(created_status())
                }
                Some(SubresourceOp::PodEviction) => {
                    shared.with(|s| subresources::evict(s, &res, &ns, &n, &body))?;
                    Ok(created_status())
                }
                Some(SubresourceOp::NamespaceFinalize) => {
                    let obj = shared.with(|s| subresources::finalize_namespace(s, &res, &n, &body))?;
                    Ok(json_response(StatusCode::OK, encode(&res, &obj), &[]))
                }
                None => Err(ApiError::path_not_found()),
            }
        }
        ("PUT", Some(n), None | Some("status")) => {
            let mut ctx = req.write_options()?;
            let body = res.to_storage(req.body_value()?);
            let subresource = sub.as_deref().filter(|_| res.status_subresource);
            if sub.is_some() && subresource.is_none() {
                return Err(ApiError::path_not_found());
            }
            let obj = shared.with(|s| s.update(&res, &ns, &n, body, subresource, &mut ctx))?;
            Ok(json_response(StatusCode::OK, encode(&res, &obj), &ctx.warnings))
        }
        ("PATCH", Some(n), None | Some("status")) => {
            let mut ctx = req.write_options()?;
            let ct = req.content_type();
            let patch_type = if ct.starts_with("application/json-patch+json") {
                PatchType::Json
            } else if ct.starts_with("application/merge-patch+json") {
                PatchType::Merge
            } else if ct.starts_with("application/strategic-merge-patch+json") {
                PatchType::Strategic
            } else if ct.starts_with("application/apply-patch") {
                PatchType::Apply
            } else {
                return Err(ApiError::unsupported_media_type(&ct));
            };
            let subresource = sub.as_deref().filter(|_| res.status_subresource);
            if sub.is_some() && subresource.is_none() {
                return Err(ApiError::path_not_found());
            }
            let patch = req.body_value()?;
            let obj = shared.with(|s| s.patch(&res, &ns, &n, patch_type, &patch, subresource, &mut ctx))?;
            Ok(json_response(StatusCode::OK, encode(&res, &obj), &ctx.warnings))
        }
        ("DELETE", Some(n), None) => {
            let mut opts = delete_options(req)?;
            if req.q("dryRun") == Some("All") {
                opts.dry_run = true;
            }
            let deleted = shared.with(|s| s.delete(&res, &ns, &n, &opts))?;
            let obj = match &deleted {
                Deleted::Removed(o) | Deleted::Pending(o) => o.clone(),
            };
            Ok(json_response(StatusCode::OK, encode(&res, &obj), &[]))
        }
        ("DELETE", None, None) => {
            let opts = delete_options(req)?;
            let list = req.list_options(&res)?;
            let ns_filter = namespace.as_deref().filter(|_| res.namespaced);
            let items = shared.with(|s| s.delete_collection(&res, ns_filter, &list, &opts))?;
            let body = format!(
                "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{{}},\"items\":[{}]}}",
                res.kind,
                res.api_version(),
                items.iter().map(|o| encode(&res, o)).collect::<Vec<_>>().join(",")
            );
            Ok(json_response(StatusCode::OK, body, &[]))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {plural})",
            req.method
        ))),
    }
}

/// The operation serving subresource `sub` of `res` for `method` (creates are POST, updates PUT).
fn subresource_op(res: &ResourceInfo, method: &str, sub: &str) -> Option<SubresourceOp> {
    res.strategy
        .subresources()
        .iter()
        .find(|s| {
            s.name == sub
                && s.verbs.iter().any(|v| match *v {
                    "create" => method == "POST",
                    "update" => method == "PUT",
                    _ => false,
                })
        })
        .map(|s| s.op)
}

/// The `Status` a successful subresource create answers with.
fn created_status() -> Response {
    value_response(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

fn delete_options(req: &Request) -> Result<DeleteOptions, ApiError> {
    let body = req.body_value()?;
    let mut opts = if body.is_object() {
        DeleteOptions::from_body(&body)?
    } else {
        DeleteOptions::default()
    };
    if let Some(g) = req.q("gracePeriodSeconds").and_then(|g| g.parse().ok()) {
        opts.grace_period_seconds = Some(g);
    }
    if let Some(p) = req.q("propagationPolicy") {
        opts.propagation = Some(api::parse_propagation(p)?);
    }
    if let Some(o) = req.q("orphanDependents") {
        opts.propagation = Some(if o == "true" {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
    }
    if req.q("dryRun") == Some("All") {
        opts.dry_run = true;
    }
    Ok(opts)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error_response(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_like_the_apiserver() {
        let r = |g: &str, v: &str, ns: Option<&str>, p: &str, n: Option<&str>, s: Option<&str>| Target::Resource {
            group: g.into(),
            version: v.into(),
            namespace: ns.map(Into::into),
            plural: p.into(),
            name: n.map(Into::into),
            sub: s.map(Into::into),
        };
        assert_eq!(
            parse_path("/api/v1/namespaces"),
            r("", "v1", None, "namespaces", None, None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x"),
            r("", "v1", None, "namespaces", Some("x"), None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/status"),
            r("", "v1", None, "namespaces", Some("x"), Some("status"))
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/finalize"),
            r("", "v1", None, "namespaces", Some("x"), Some("finalize"))
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/pods"),
            r("", "v1", Some("x"), "pods", None, None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/pods/p/binding"),
            r("", "v1", Some("x"), "pods", Some("p"), Some("binding"))
        );
        assert_eq!(
            parse_path("/apis/scheduling.k8s.io/v1alpha3/namespaces/d/podgroups/g/status"),
            r(
                "scheduling.k8s.io",
                "v1alpha3",
                Some("d"),
                "podgroups",
                Some("g"),
                Some("status")
            )
        );
        assert_eq!(
            parse_path("/apis/batch/v1/jobs"),
            r("batch", "v1", None, "jobs", None, None)
        );
        assert_eq!(
            parse_path("/apis/batch/v1"),
            Target::GroupVersion("batch".into(), "v1".into())
        );
        assert_eq!(parse_path("/apis"), Target::Apis);
        assert_eq!(parse_path("/nope"), Target::Unknown);
    }
}
