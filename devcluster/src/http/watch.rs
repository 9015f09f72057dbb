//! Watch streams: newline-delimited JSON watch events read from the store's per-resource history, so a
//! watch started at a list's resourceVersion sees every later change of every object exactly once and in
//! order. Selector watches see an object entering their selection as `ADDED` and leaving it as `DELETED`.
//! Versions older than the retained history get a `410 Expired` ERROR event; `allowWatchBookmarks` adds
//! periodic BOOKMARK events; `sendInitialEvents=true` streams the current state first and marks its end
//! with the `k8s.io/initial-events-end` bookmark.
//!
//! Each watch runs in its own task, reading the history under the state lock only for a moment, so no
//! watcher waits for another and no writer waits for any watcher. What a watcher has ready for its client
//! waits in its [`Outbox`], bounded in bytes ([`ServerSettings::watch_buffer_bytes`]); when it is full the
//! watch waits for the client to take some. A client that takes nothing for
//! [`ServerSettings::watch_stall_timeout`] while bytes wait for it is unresponsive: its connection is
//! closed, as kube-apiserver closes an unresponsive watcher (`Forcing ... watcher close due to
//! unresponsiveness`); the stream just ends and the client watches again from the last resourceVersion it
//! saw (or relists on `410 Expired`).
//!
//! [`ServerSettings::watch_buffer_bytes`]: crate::cluster::ServerSettings::watch_buffer_bytes
//! [`ServerSettings::watch_stall_timeout`]: crate::cluster::ServerSettings::watch_stall_timeout

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use bytes::BytesMut;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::Instant;

use super::serve::Connection;
use super::table::{self, IncludeObject};
use crate::cluster::Shared;
use crate::error::ApiError;
use crate::meta;
use crate::protobuf::{self, Wire};
use crate::resource::ResourceInfo;
use crate::selectors::{FieldSelector, LabelSelector};
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

/// Small watch lines are sent together up to this size; a line at least this long is sent alone, as is
/// (a stored JSON line is shared with the history and every other watcher, not copied).
const CHUNK: usize = 64 * 1024;

/// Why a watch stopped sending.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The client went away, the watch's timeout passed or the server is shutting down.
    Done,
    /// The client took nothing for the stall timeout while bytes waited for it.
    Unresponsive,
}

/// When the client last took bytes from a watch, in milliseconds since the watch started.
#[derive(Debug)]
struct Progress {
    start: Instant,
    millis: std::sync::atomic::AtomicU64,
}

impl Progress {
    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.millis.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        let ms = self.millis.load(std::sync::atomic::Ordering::Relaxed);
        self.start.checked_add(Duration::from_millis(ms)).unwrap_or(self.start)
    }
}

/// Bytes ready for the client, holding their share of the watcher's byte budget until the connection
/// asks for what comes after them (so what the connection is still writing counts too).
#[derive(Debug)]
struct Queued {
    bytes: Bytes,
    room: OwnedSemaphorePermit,
}

/// A watcher's outgoing bytes: at most `budget` of them wait for the client at once, counting what the
/// connection is writing (a single larger piece waits alone).
#[derive(Debug)]
struct Outbox {
    tx: mpsc::UnboundedSender<Queued>,
    room: Arc<Semaphore>,
    budget: u32,
    progress: Arc<Progress>,
    stall: Duration,
    deadline: Instant,
    shutdown: watch::Receiver<bool>,
}

impl Outbox {
    /// Queues `bytes` once there is room for them. Fails when the client is gone or unresponsive, the
    /// watch's deadline passed or the server is shutting down.
    async fn push(&mut self, bytes: Bytes) -> Result<(), Stop> {
        if bytes.is_empty() {
            return Ok(());
        }
        let want = u32::try_from(bytes.len()).unwrap_or(u32::MAX).min(self.budget);
        let waiting_since = Instant::now();
        let acquire = self.room.clone().acquire_many_owned(want);
        tokio::pin!(acquire);
        loop {
            let stalled_at = self.progress.last().max(waiting_since) + self.stall;
            tokio::select! {
                biased;
                room = &mut acquire => {
                    let room = room.map_err(|_| Stop::Done)?;
                    return self.tx.send(Queued { bytes, room }).map_err(|_| Stop::Done);
                }
                _ = tokio::time::sleep_until(stalled_at) => {
                    if self.progress.last().max(waiting_since) + self.stall <= Instant::now() {
                        return Err(Stop::Unresponsive);
                    }
                }
                _ = tokio::time::sleep_until(self.deadline) => return Err(Stop::Done),
                _ = crate::cluster::stopped(&mut self.shutdown) => return Err(Stop::Done),
                _ = self.tx.closed() => return Err(Stop::Done),
            }
        }
    }
}

/// Collects small watch lines into chunks of about [`CHUNK`] bytes.
#[derive(Debug, Default)]
struct Chunker {
    chunk: BytesMut,
}

impl Chunker {
    async fn add(&mut self, out: &mut Outbox, line: Bytes) -> Result<(), Stop> {
        if line.len() >= CHUNK {
            self.flush(out).await?;
            return out.push(line).await;
        }
        self.chunk.extend_from_slice(&line);
        if self.chunk.len() >= CHUNK {
            self.flush(out).await?;
        }
        Ok(())
    }

    async fn flush(&mut self, out: &mut Outbox) -> Result<(), Stop> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        out.push(self.chunk.split().freeze()).await
    }
}

/// Starts a watch: returns the streaming body, after checking the parameters. `connection` is closed if
/// the client stops reading.
pub fn start(
    shared: Arc<Shared>,
    p: WatchParams,
    slot: OwnedSemaphorePermit,
    connection: Option<Connection>,
) -> Result<Body, ApiError> {
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
    let (tx, rx) = mpsc::unbounded_channel::<Queued>();
    let budget = u32::try_from(shared.settings.watch_buffer_bytes.max(1)).unwrap_or(u32::MAX);
    let progress = Arc::new(Progress {
        start: Instant::now(),
        millis: Default::default(),
    });
    // A client's `timeoutSeconds` may be any u64: a deadline past what the clock can represent never comes.
    let now = Instant::now();
    let deadline = now
        .checked_add(p.timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));
    let mut out = Outbox {
        tx,
        room: Arc::new(Semaphore::new(budget as usize)),
        budget,
        progress: progress.clone(),
        stall: shared.settings.watch_stall_timeout,
        deadline,
        shutdown: shared.shutdown_signal(),
    };
    tokio::spawn(async move {
        let stop = run(&shared, &p, &mut out).await;
        if stop == Stop::Unresponsive {
            tracing::info!(
                resource = %p.res.storage,
                stall = ?shared.settings.watch_stall_timeout,
                "Forcing watcher close due to unresponsiveness"
            );
            if let Some(c) = connection {
                c.close();
            }
        }
        drop(slot);
    });
    // The room of the bytes last handed to the connection is given back when it asks for more.
    let stream = futures::stream::unfold((rx, progress, None), |(mut rx, progress, handed)| async move {
        drop::<Option<OwnedSemaphorePermit>>(handed);
        let Queued { bytes, room } = rx.recv().await?;
        progress.touch();
        Some((Ok::<_, std::convert::Infallible>(bytes), (rx, progress, Some(room))))
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

/// The watch line for one change: the event's shared encoding when this watcher sees it as stored, or
/// that encoding relabelled when this resource serves the stored object under another `apiVersion` only
/// (Workload and PodGroup as v1beta1), so no watcher clones and encodes the object again.
fn event_line(p: &WatchParams, e: &StoredEvent, ty: &str, obj: &Value) -> Bytes {
    if p.wire == Wire::Json && p.table.is_none() && ty == e.kind.as_str() {
        if !p.res.needs_conversion(obj) {
            return e.encoded_line();
        }
        if let Some(line) = relabelled_line(&p.res, &e.encoded_line(), ty, obj) {
            return line;
        }
    }
    frame(p, ty, obj)
}

/// `line` (the stored object's watch line) with the object's leading `apiVersion` set to `res`'s, when
/// that is all that presenting it through `res` changes: no field conversion, no conversion webhook, the
/// same kind, and the stored `apiVersion` first in the encoding (serde_json writes keys sorted).
fn relabelled_line(res: &ResourceInfo, line: &[u8], ty: &str, obj: &Value) -> Option<Bytes> {
    if res.strategy.converts_fields() || res.conversion.is_some() {
        return None;
    }
    if obj.get("kind").and_then(Value::as_str) != Some(res.kind.as_str()) {
        return None;
    }
    let stored = serde_json::to_string(obj.get("apiVersion")?.as_str()?).ok()?;
    let prefix = format!("{{\"type\":\"{ty}\",\"object\":{{\"apiVersion\":{stored},");
    let rest = line.strip_prefix(prefix.as_bytes())?;
    let served = serde_json::to_string(&res.api_version()).ok()?;
    let mut out = Vec::with_capacity(line.len() + 8);
    out.extend_from_slice(format!("{{\"type\":\"{ty}\",\"object\":{{\"apiVersion\":{served},").as_bytes());
    out.extend_from_slice(rest);
    Some(Bytes::from(out))
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

/// Streams the watch into `out` until it ends; returns why.
async fn run(shared: &Shared, p: &WatchParams, out: &mut Outbox) -> Stop {
    match stream(shared, p, out).await {
        Ok(()) => Stop::Done,
        Err(stop) => stop,
    }
}

async fn stream(shared: &Shared, p: &WatchParams, out: &mut Outbox) -> Result<(), Stop> {
    let gr = p.res.storage.clone();
    let plural = p.res.plural.clone();
    let deadline = out.deadline;
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
    let mut chunker = Chunker::default();
    if initial {
        let (objs, rv) = shared.with(|s| (s.store.list(&gr, p.namespace.as_deref()), s.store.current_rv()));
        last = rv;
        for o in objs {
            if matches(p, &o) {
                chunker.add(out, frame(p, "ADDED", &o)).await?;
            }
        }
        chunker.flush(out).await?;
        if p.send_initial_events {
            out.push(bookmark(p, rv, true)).await?;
        }
    } else {
        last = requested.unwrap_or(0);
    }

    let mut next_bookmark = Instant::now() + shared.settings.bookmark_interval;
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
                return out.push(error_event(p, &err)).await;
            }
        };
        if events.is_empty() {
            tokio::select! {
                changed = sub.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                }
                _ = tokio::time::sleep_until(next_bookmark) => {
                    next_bookmark = Instant::now() + shared.settings.bookmark_interval;
                    if p.bookmarks {
                        out.push(bookmark(p, current, false)).await?;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return Ok(()),
                _ = crate::cluster::stopped(&mut shutdown) => return Ok(()),
                _ = out.tx.closed() => return Ok(()),
            }
            continue;
        }
        // The lines of every event this watcher sees, in chunks.
        for e in &events {
            last = e.rv;
            let Some((ty, obj)) = transition(p, e) else { continue };
            chunker.add(out, event_line(p, e, ty, obj)).await?;
            if shared.faults.drop_watch(&plural) {
                chunker.flush(out).await?;
                return Ok(());
            }
        }
        chunker.flush(out).await?;
        if Instant::now() >= deadline {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PodGroup stored as v1alpha3 and watched through v1beta1: the shared line, relabelled, is what
    /// encoding the presented object would give; for a resource that converts fields there is no shortcut.
    #[test]
    fn a_relabelled_line_equals_the_presented_encoding() {
        let find = |g: &str, v: &str, r: &str| {
            crate::kinds::builtin_resources()
                .into_iter()
                .find(|x| x.group == g && x.version == v && x.plural == r)
                .unwrap()
        };
        let beta = find("scheduling.k8s.io", "v1beta1", "podgroups");
        let stored = serde_json::json!({
            "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload", "name": "w", "uid": "u"}]},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}
        });
        let shared = line("MODIFIED", &serde_json::to_string(&stored).unwrap());
        let relabelled = relabelled_line(&beta, &shared, "MODIFIED", &stored).expect("a relabel");
        let presented = line("MODIFIED", &serde_json::to_string(&beta.present(&stored)).unwrap());
        assert_eq!(relabelled, presented);
        // Another type in the line than asked for, or another kind: no shortcut.
        assert!(relabelled_line(&beta, &shared, "ADDED", &stored).is_none());
        let mut workload = stored.clone();
        workload["kind"] = "Workload".into();
        assert!(relabelled_line(&beta, &shared, "MODIFIED", &workload).is_none());
        let events = find("events.k8s.io", "v1", "events");
        let ev = serde_json::json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}});
        let ev_line = line("ADDED", &serde_json::to_string(&ev).unwrap());
        assert!(relabelled_line(&events, &ev_line, "ADDED", &ev).is_none());
    }
}
