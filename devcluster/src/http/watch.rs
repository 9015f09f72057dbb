//! Watch streams: newline-delimited JSON watch events read from the store's per-resource history, so a
//! watch started at a list's resourceVersion sees every later change of every object exactly once and in
//! order. Selector watches see an object entering their selection as `ADDED` and leaving it as `DELETED`.
//! Versions older than the retained history get a `410 Expired` ERROR event; `allowWatchBookmarks` adds
//! periodic BOOKMARK events; `sendInitialEvents=true` streams the current state first and marks its end
//! with the `k8s.io/initial-events-end` bookmark.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::table::{self, IncludeObject};
use crate::error::ApiError;
use crate::meta;
use crate::protobuf::{self, Wire};
use crate::resource::ResourceInfo;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::server::Shared;
use crate::store::{EventType, StoredEvent};

/// Parameters of one watch.
#[derive(Debug, Clone)]
pub struct WatchParams {
    /// The watched resource (in the client's version).
    pub res: Arc<ResourceInfo>,
    /// The namespace, for namespaced watches.
    pub namespace: Option<String>,
    /// `labelSelector`.
    pub label: LabelSelector,
    /// `fieldSelector`.
    pub field: FieldSelector,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `sendInitialEvents`.
    pub send_initial_events: bool,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `timeoutSeconds` (or the server default).
    pub timeout: Duration,
    /// Table output (`as=Table`), with what rows carry.
    pub table: Option<IncludeObject>,
    /// JSON lines, or length-prefixed protobuf `WatchEvent`s.
    pub wire: Wire,
}

const BATCH: usize = 512;

/// Starts a watch: returns the streaming body, after checking the parameters.
pub fn start(shared: Arc<Shared>, p: WatchParams, slot: OwnedSemaphorePermit) -> Result<Body, ApiError> {
    if let Some(rv) = &p.resource_version
        && !rv.is_empty()
        && rv.parse::<u64>().is_err()
    {
        return Err(ApiError::bad_request(format!("invalid resource version: {rv}")));
    }
    if p.send_initial_events && !p.bookmarks {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![crate::error::FieldCause::forbidden(
                "allowWatchBookmarks",
                "allowWatchBookmarks required when sendInitialEvents is provided",
            )],
        ));
    }
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(async move {
        run(shared, p, tx).await;
        drop(slot);
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    });
    Ok(Body::from_stream(stream))
}

fn matches(p: &WatchParams, obj: &Value) -> bool {
    if let Some(ns) = &p.namespace
        && meta::namespace(obj) != ns
    {
        return false;
    }
    if !p.label.matches(obj) {
        return false;
    }
    if p.field.0.is_empty() {
        return true;
    }
    if p.res.strategy.converts_fields() {
        return p.field.matches(&p.res.present(obj));
    }
    p.field.matches(obj)
}

/// The event a watcher sees for a stored change, if any.
fn transition<'a>(p: &WatchParams, e: &'a StoredEvent) -> Option<(&'static str, &'a Value)> {
    match e.kind {
        EventType::Added => matches(p, &e.object).then_some(("ADDED", &*e.object)),
        EventType::Deleted => {
            let was = e.prev.as_deref().is_none_or(|prev| matches(p, prev)) || matches(p, &e.object);
            was.then_some(("DELETED", &*e.object))
        }
        EventType::Modified => {
            let now = matches(p, &e.object);
            let was = e.prev.as_deref().is_some_and(|prev| matches(p, prev));
            match (was, now) {
                (true, true) => Some(("MODIFIED", &*e.object)),
                (false, true) => Some(("ADDED", &*e.object)),
                (true, false) => Some(("DELETED", &*e.object)),
                (false, false) => None,
            }
        }
    }
}

fn encode_object(p: &WatchParams, obj: &Value) -> String {
    if let Some(include) = p.table {
        let presented = p.res.present(obj);
        let rv = meta::resource_version(&presented).to_string();
        return table::table(&p.res, &[presented], &rv, None, include).to_string();
    }
    if !p.res.needs_conversion(obj) {
        return serde_json::to_string(obj).unwrap_or_default();
    }
    serde_json::to_string(&p.res.present(obj)).unwrap_or_default()
}

/// The stream's bytes for one event of `obj` as this watcher sees it: a JSON line, or a protobuf frame.
fn frame(p: &WatchParams, ty: &str, obj: &Value) -> Bytes {
    match p.wire {
        Wire::Json => line(ty, &encode_object(p, obj)),
        Wire::Protobuf { .. } => {
            let presented = if p.res.needs_conversion(obj) {
                std::borrow::Cow::Owned(p.res.present(obj))
            } else {
                std::borrow::Cow::Borrowed(obj)
            };
            match protobuf::encode(&presented) {
                Ok(b) => Bytes::from(protobuf::watch_frame(ty, &b)),
                Err(e) => {
                    tracing::error!(error = %e, kind = %p.res.kind, "a watch event could not be encoded as protobuf");
                    error_event(
                        p,
                        &ApiError::internal(format!("{} could not be encoded as protobuf: {e}", p.res.kind)),
                    )
                }
            }
        }
    }
}

/// The watch line for one change: the event's shared encoding when this watcher sees it as stored.
fn event_line(p: &WatchParams, e: &StoredEvent, ty: &str, obj: &Value) -> Bytes {
    if p.wire == Wire::Json && p.table.is_none() && ty == e.kind.as_str() && !p.res.needs_conversion(obj) {
        return e.encoded_line();
    }
    frame(p, ty, obj)
}

fn line(ty: &str, object_json: &str) -> Bytes {
    let mut s = String::with_capacity(object_json.len() + 32);
    s.push_str("{\"type\":\"");
    s.push_str(ty);
    s.push_str("\",\"object\":");
    s.push_str(object_json);
    s.push_str("}\n");
    Bytes::from(s)
}

fn bookmark(p: &WatchParams, rv: u64, initial_end: bool) -> Bytes {
    let mut md = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": p.res.kind, "apiVersion": p.res.api_version(), "metadata": md});
    match p.wire {
        Wire::Json => line("BOOKMARK", &obj.to_string()),
        Wire::Protobuf { .. } => frame(p, "BOOKMARK", &obj),
    }
}

fn error_event(p: &WatchParams, err: &ApiError) -> Bytes {
    let status = serde_json::to_value(&*err.0).unwrap_or_default();
    if let Wire::Protobuf { .. } = p.wire
        && let Ok(b) = protobuf::encode_as("v1", "Status", &status)
    {
        return Bytes::from(protobuf::watch_frame("ERROR", &b));
    }
    line("ERROR", &status.to_string())
}

async fn run(shared: Arc<Shared>, p: WatchParams, tx: mpsc::Sender<Bytes>) {
    let gr = p.res.storage.clone();
    let plural = p.res.plural.clone();
    // A client's `timeoutSeconds` may be any u64: a deadline past what the clock can represent never comes.
    let now = tokio::time::Instant::now();
    let deadline = now
        .checked_add(p.timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));
    let mut shutdown = shared.shutdown_signal();
    let mut sub = shared.with(|s| s.store.subscribe(&gr));
    sub.borrow_and_update();

    let requested: Option<u64> = p
        .resource_version
        .as_deref()
        .filter(|rv| !rv.is_empty())
        .and_then(|rv| rv.parse().ok());
    let initial = p.send_initial_events || requested.is_none_or(|rv| rv == 0);
    let mut last: u64;
    if initial {
        let (objs, rv) = shared.with(|s| (s.store.list(&gr, p.namespace.as_deref()), s.store.current_rv()));
        last = rv;
        for o in objs {
            if matches(&p, &o) && tx.send(frame(&p, "ADDED", &o)).await.is_err() {
                return;
            }
        }
        if p.send_initial_events && tx.send(bookmark(&p, rv, true)).await.is_err() {
            return;
        }
    } else {
        last = requested.unwrap_or(0);
    }

    let mut next_bookmark = tokio::time::Instant::now() + shared.settings.bookmark_interval;
    loop {
        sub.borrow_and_update();
        let batch = shared.with(|s| {
            s.store
                .events_since(&gr, last, BATCH)
                .map(|ev| (ev, s.store.current_rv()))
        });
        let (events, current) = match batch {
            Ok(b) => b,
            Err(expired) => {
                let err = ApiError::expired(format!(
                    "too old resource version: {} ({})",
                    expired.requested, expired.oldest
                ));
                let _ = tx.send(error_event(&p, &err)).await;
                return;
            }
        };
        if events.is_empty() {
            tokio::select! {
                changed = sub.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(next_bookmark) => {
                    next_bookmark = tokio::time::Instant::now() + shared.settings.bookmark_interval;
                    if p.bookmarks && tx.send(bookmark(&p, current, false)).await.is_err() {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return,
                _ = crate::server::stopped(&mut shutdown) => return,
                _ = tx.closed() => return,
            }
            continue;
        }
        // One chunk per batch: the lines of every event this watcher sees.
        let mut chunk = bytes::BytesMut::new();
        let mut dropped = false;
        for e in &events {
            last = e.rv;
            let Some((ty, obj)) = transition(&p, e) else { continue };
            chunk.extend_from_slice(&event_line(&p, e, ty, obj));
            if shared.faults.drop_watch(&plural) {
                dropped = true;
                break;
            }
        }
        if !chunk.is_empty() && tx.send(chunk.freeze()).await.is_err() {
            return;
        }
        if dropped {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            return;
        }
    }
}
