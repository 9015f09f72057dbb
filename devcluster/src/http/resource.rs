//! The resource handlers: get, list, watch, create, update, patch, delete, deletecollection and the
//! subresources of one served resource, after fault injection. Creates, updates and patches run through
//! [`guaranteed`], which takes the cluster lock only for the steps that need it (on a blocking thread when
//! the body or the object is large); updates and patches of one object take turns.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::request::{Request, delete_options, verb_of};
use super::respond;
use super::table::{self, IncludeObject};
use super::watch::{self, WatchParams};
use super::{accepts_table, value_response};
use crate::api::{Deleted, subresources};
use crate::cluster::Shared;
use crate::cluster::guaranteed;
use crate::error::ApiError;
use crate::meta;
use crate::protobuf::Wire;
use crate::request::RequestContext;
use crate::resource::{ResourceInfo, SubresourceOp};

#[allow(clippy::too_many_arguments)]
pub(super) async fn resource(
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
    shared.requests.record(crate::requests::RequestKey {
        client: crate::requests::client_of(
            req.headers
                .get(axum::http::header::USER_AGENT)
                .and_then(|h| h.to_str().ok()),
        ),
        verb: verb_label(verb, req),
        group: res.group.clone(),
        resource: res.plural.clone(),
        subresource: sub.clone().unwrap_or_default(),
    });
    let decision = shared
        .faults
        .decide_sub(&res.plural, sub.as_deref().unwrap_or(""), verb);
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

/// kube-apiserver's `verb` label of `apiserver_request_total` (a server-side apply patch is `APPLY`).
fn verb_label(verb: crate::faults::Verb, req: &Request) -> &'static str {
    use crate::faults::Verb;
    match verb {
        Verb::Get => "GET",
        Verb::List => "LIST",
        Verb::Watch => "WATCH",
        Verb::Create => "POST",
        Verb::Update => "PUT",
        Verb::Patch => {
            let apply = req
                .headers
                .get(axum::http::header::CONTENT_TYPE)
                .and_then(|h| h.to_str().ok())
                .is_some_and(|c| c.starts_with("application/apply-patch"));
            if apply { "APPLY" } else { "PATCH" }
        }
        Verb::Delete => "DELETE",
        Verb::Deletecollection => "DELETECOLLECTION",
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
    // Custom resources have no protobuf form: JSON when the client accepts it, else 406.
    let wire = req.wire.for_kind(&res.api_version(), &res.kind).map_err(|e| {
        ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: application/json, application/yaml ({e})"),
            None,
        )
    })?;
    let object = |code: StatusCode, obj: &Value, warnings: &[String]| respond::object(code, wire, &res, obj, warnings);
    if res.strategy.ephemeral() && (req.method.as_str(), &sub) != ("POST", &None) {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {plural})",
            req.method
        )));
    }
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
                wire: if table { Wire::Json } else { wire },
            };
            let Some(slot) = shared.in_flight.watch() else {
                return Err(ApiError::too_many_requests(
                    "Too many requests, please try again later.",
                ));
            };
            let content_type = match p.wire {
                Wire::Json => "application/json",
                Wire::Protobuf { .. } => crate::protobuf::WATCH_MEDIA_TYPE,
            };
            let body = watch::start(shared.clone(), p, slot, req.connection.clone())?;
            let mut r = Response::new(body);
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
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
            respond::list(wire, &res, &result.items, &md)
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
            object(StatusCode::OK, &obj, &[])
        }
        ("POST", None, None) => {
            let mut ctx = req.write_options()?;
            let body = res.to_storage(req.body_value(&mut ctx.warnings)?)?;
            let heavy = guaranteed::is_heavy(&shared, &res, &ns, None, &body);
            let (s, r) = (shared.clone(), res.clone());
            let (obj, ctx) = write(ctx, heavy, move |ctx| guaranteed::create(&s, &r, &ns, body, ctx)).await?;
            object(StatusCode::CREATED, &obj, &ctx.warnings)
        }
        (method, Some(n), Some(sub_name)) if subresource_op(&res, method, sub_name).is_some() => {
            let mut warnings = Vec::new();
            match subresource_op(&res, method, sub_name) {
                Some(SubresourceOp::PodBinding) => {
                    let body = req.body_value(&mut warnings)?;
                    shared.with(|s| subresources::bind(s, &res, &ns, &n, &body))?;
                    Ok(created_status(req.wire))
                }
                Some(SubresourceOp::PodEviction) => {
                    let body = req.body_value(&mut warnings)?;
                    let dry_run = req.q("dryRun") == Some("All");
                    shared.with(|s| subresources::evict(s, &res, &ns, &n, &body, dry_run))?;
                    Ok(created_status(req.wire))
                }
                Some(SubresourceOp::NamespaceFinalize) => {
                    let body = req.body_value(&mut warnings)?;
                    let obj = shared.with(|s| subresources::finalize_namespace(s, &res, &n, &body))?;
                    object(StatusCode::OK, &obj, &warnings)
                }
                Some(SubresourceOp::Scale) => super::scale::serve(&shared, req, &res, &ns, &n),
                Some(SubresourceOp::PodLog) => super::logs::serve(&shared, req, &res, &ns, &n),
                None => Err(ApiError::path_not_found()),
            }
        }
        ("PUT", Some(n), None | Some("status")) => {
            let mut ctx = req.write_options()?;
            let body = res.to_storage(req.body_value(&mut ctx.warnings)?)?;
            let subresource = sub.as_deref().filter(|_| res.status_subresource);
            if sub.is_some() && subresource.is_none() {
                return Err(ApiError::path_not_found());
            }
            let subresource = subresource.map(str::to_string);
            let turn = shared.write_turns.take(&res, &ns, &n).await;
            let heavy = guaranteed::is_heavy(&shared, &res, &ns, Some(&n), &body);
            let (s, r) = (shared.clone(), res.clone());
            let written = write(ctx, heavy, move |ctx| {
                guaranteed::update(&s, &r, &ns, &n, body, subresource.as_deref(), ctx)
            })
            .await;
            drop(turn);
            let (obj, ctx) = written?;
            object(StatusCode::OK, &obj, &ctx.warnings)
        }
        ("PATCH", Some(n), None | Some("status")) => {
            let mut ctx = req.write_options()?;
            let patch_type = req.patch_type()?;
            let subresource = sub.as_deref().filter(|_| res.status_subresource);
            if sub.is_some() && subresource.is_none() {
                return Err(ApiError::path_not_found());
            }
            let patch = req.body_value(&mut ctx.warnings)?;
            let subresource = subresource.map(str::to_string);
            let turn = shared.write_turns.take(&res, &ns, &n).await;
            let heavy = guaranteed::is_heavy(&shared, &res, &ns, Some(&n), &patch);
            let (s, r) = (shared.clone(), res.clone());
            let written = write(ctx, heavy, move |ctx| {
                guaranteed::patch(&s, &r, &ns, &n, patch_type, &patch, subresource.as_deref(), ctx)
            })
            .await;
            drop(turn);
            let (obj, ctx) = written?;
            object(StatusCode::OK, &obj, &ctx.warnings)
        }
        ("DELETE", Some(n), None) => {
            let mut warnings = Vec::new();
            let mut opts = delete_options(req, &mut warnings)?;
            if req.q("dryRun") == Some("All") {
                opts.dry_run = true;
            }
            let deleted = shared.with(|s| s.delete(&res, &ns, &n, &opts))?;
            let obj = match &deleted {
                Deleted::Removed(o) | Deleted::Pending(o) => o.clone(),
            };
            object(StatusCode::OK, &obj, &warnings)
        }
        ("DELETE", None, None) => {
            let opts = delete_options(req, &mut Vec::new())?;
            let list = req.list_options(&res)?;
            let ns_filter = namespace.as_deref().filter(|_| res.namespaced);
            let items = shared.with(|s| s.delete_collection(&res, ns_filter, &list, &opts))?;
            respond::list(wire, &res, &items, &json!({}))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {plural})",
            req.method
        ))),
    }
}

/// Runs a write: its steps take the cluster lock and work through the request body between them. A
/// `heavy` one (see [`guaranteed::is_heavy`]) runs on a blocking thread, so that it holds up no async
/// worker serving other requests either; a light one runs here. Returns the written object with the
/// request context (its warnings).
async fn write(
    mut ctx: RequestContext,
    heavy: bool,
    steps: impl FnOnce(&mut RequestContext) -> Result<Arc<Value>, ApiError> + Send + 'static,
) -> Result<(Arc<Value>, RequestContext), ApiError> {
    if !heavy {
        return steps(&mut ctx).map(|obj| (obj, ctx));
    }
    tokio::task::spawn_blocking(move || steps(&mut ctx).map(|obj| (obj, ctx)))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "a write stopped before it answered");
            ApiError::internal("an internal error occurred while writing the object")
        })?
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
                    "get" => method == "GET",
                    "patch" => method == "PATCH",
                    _ => false,
                })
        })
        .map(|s| s.op)
}

/// The `Status` a successful subresource create answers with.
fn created_status(wire: Wire) -> Response {
    respond::status(
        StatusCode::CREATED,
        wire,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}
