//! A kube client that speaks whichever version of `scheduling.k8s.io` the cluster serves, while the
//! code using it reads and writes the `v1alpha3` types.
//!
//! kwas' core is version-free: it works on the `v1alpha3` types (the only version with every kind).
//! [`negotiated`] wraps a client so that, on a cluster that serves Workload and PodGroup as `v1beta1` (the
//! preferred version wherever it is served, see [`served::negotiate`]), every request for them goes to
//! the `v1beta1` resource and every object crosses the edge relabelled:
//!
//! - a request path `/apis/scheduling.k8s.io/v1alpha3/[namespaces/<ns>/]<workloads|podgroups>…` names
//!   the served version instead;
//! - in a request body (objects, patches, apply configurations), every `apiVersion` of a Workload or
//!   PodGroup (an object or a reference to one: `ownerReferences`, an Event's `involvedObject`) names the
//!   served version; in a response body (objects, lists, watch events, one line at a time) it names
//!   `v1alpha3` again. The two versions have the same fields, so nothing else changes (see
//!   [`served::to_version`]); CompositePodGroup exists only as `v1alpha3` and is left alone.
//!
//! The versions are discovered when the client is made and again (at most every
//! [`REDISCOVER_AFTER`]) when a list or watch of a `scheduling.k8s.io` collection is answered `404`: an
//! admin turned a version off, or discovery failed at the start. A cluster that serves every kind as
//! `v1alpha3` gets the requests untouched.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use kube::client::Body;
use serde_json::Value;

use crate::served::{self, GROUP, Kind, Served};

/// The version kwas' core reads and writes.
pub const CORE_VERSION: &str = "v1alpha3";

/// How long after a discovery a `404` may start another.
pub const REDISCOVER_AFTER: Duration = Duration::from_secs(10);

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// What the cluster serves, as the client negotiated it (shared with the client, so later discoveries
/// show here too).
#[derive(Clone)]
pub struct Negotiation {
    state: Arc<State>,
}

impl std::fmt::Debug for Negotiation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Negotiation").field("served", &self.served()).finish()
    }
}

struct State {
    /// The raw client (every request goes through it).
    raw: kube::Client,
    /// `None` until a discovery succeeded.
    served: RwLock<Option<Served>>,
    /// When the last discovery started.
    discovered_at: Mutex<Option<Instant>>,
}

impl Negotiation {
    /// The versions in use; `None` while no discovery has succeeded (requests then go out unchanged).
    pub fn served(&self) -> Option<Served> {
        self.state.served.read().map(|s| s.clone()).unwrap_or(None)
    }

    /// Discovers again now.
    pub async fn rediscover(&self) -> kube::Result<Served> {
        self.state.rediscover().await
    }
}

/// What `client`'s cluster serves of [`GROUP`], from its discovery documents
/// (`/apis/scheduling.k8s.io/<version>` for each version kwas knows; a `404` is a version not served).
pub async fn discover(client: &kube::Client) -> kube::Result<Served> {
    let mut lists = Vec::new();
    for version in served::KNOWN_VERSIONS {
        let gv = format!("{GROUP}/{version}");
        match client.list_api_group_resources(&gv).await {
            Ok(list) => lists.push((gv, list.resources.into_iter().map(|r| r.name).collect::<Vec<_>>())),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(served::negotiate(lists.iter().map(|(gv, names)| {
        (gv.as_str(), names.iter().map(String::as_str).collect::<Vec<&str>>())
    })))
}

/// `client` speaking the versions its cluster serves (see the module docs), and the negotiation. Never
/// fails: when discovery fails, requests go out unchanged until a `404` starts another discovery.
pub async fn negotiated(client: kube::Client) -> (kube::Client, Negotiation) {
    let state = Arc::new(State {
        raw: client.clone(),
        served: RwLock::new(None),
        discovered_at: Mutex::new(Some(Instant::now())),
    });
    if let Err(e) = state.rediscover().await {
        tracing::warn!(error = %e, "discovering the served scheduling.k8s.io versions failed; trying again on a 404");
        if let Ok(mut at) = state.discovered_at.lock() {
            *at = None;
        }
    }
    let service_state = state.clone();
    let service = tower::service_fn(move |req: http::Request<Body>| {
        let state = service_state.clone();
        async move { state.call(req).await }
    });
    let wrapped =
        kube::Client::new(service, client.default_namespace().to_string()).with_valid_until(*client.valid_until());
    (wrapped, Negotiation { state })
}

impl State {
    async fn rediscover(&self) -> kube::Result<Served> {
        let served = discover(&self.raw).await?;
        if let Ok(mut s) = self.served.write() {
            if s.as_ref() != Some(&served) {
                tracing::info!(served = ?served.describe(), "scheduling.k8s.io versions negotiated");
            }
            *s = Some(served.clone());
        }
        Ok(served)
    }

    /// Starts a discovery in the background unless one started within [`REDISCOVER_AFTER`].
    fn rediscover_soon(self: &Arc<Self>) {
        let Ok(mut at) = self.discovered_at.lock() else { return };
        if at.is_some_and(|t| t.elapsed() < REDISCOVER_AFTER) {
            return;
        }
        *at = Some(Instant::now());
        drop(at);
        let state = self.clone();
        tokio::spawn(async move {
            if let Err(e) = state.rediscover().await {
                tracing::warn!(error = %e, "discovering the served scheduling.k8s.io versions failed");
            }
        });
    }

    async fn call(self: Arc<Self>, req: http::Request<Body>) -> kube::Result<http::Response<ResponseBody>> {
        let map = self
            .served
            .read()
            .ok()
            .and_then(|s| s.as_ref().map(Relabel::from_served))
            .unwrap_or_default();
        let (mut parts, body) = req.into_parts();
        let collection = scheduling_collection(parts.uri.path());
        if !map.is_identity()
            && let Some(path) = map.request_path(parts.uri.path())
        {
            let mut uri = http::uri::Parts::from(parts.uri.clone());
            let pq = match parts.uri.query() {
                Some(q) => format!("{path}?{q}"),
                None => path,
            };
            uri.path_and_query = pq.parse().ok();
            if let Ok(u) = http::Uri::from_parts(uri) {
                parts.uri = u;
            }
        }
        let body = if map.is_identity() {
            body
        } else {
            let bytes = body.collect_bytes().await?;
            Body::from(map.request_body(bytes))
        };
        let watch = parts
            .uri
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
        let response = self.raw.send(http::Request::from_parts(parts, body)).await?;
        if response.status() == http::StatusCode::NOT_FOUND && collection {
            self.rediscover_soon();
        }
        let (parts, body) = response.into_parts();
        let body: ResponseBody = if map.is_identity() {
            body.map_err(BoxError::from).boxed_unsync()
        } else if watch {
            relabel_lines(body, map)
        } else {
            let stream = futures::stream::once(async move {
                let bytes = body.collect_bytes().await.map_err(BoxError::from)?;
                Ok::<_, BoxError>(http_body::Frame::data(map.response_body(bytes)))
            });
            http_body_util::StreamBody::new(stream).boxed_unsync()
        };
        Ok(http::Response::from_parts(parts, body))
    }
}

/// Whether `path` is a `scheduling.k8s.io` collection (a list or watch, not one object).
fn scheduling_collection(path: &str) -> bool {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["apis", g, _, _] => *g == GROUP,
        ["apis", g, _, "namespaces", _, _] => *g == GROUP,
        _ => false,
    }
}

/// The served version of each kind that differs from [`CORE_VERSION`].
#[derive(Debug, Clone, Default)]
struct Relabel {
    workload: Option<&'static str>,
    pod_group: Option<&'static str>,
}

impl Relabel {
    fn from_served(served: &Served) -> Relabel {
        let other = |k| served.version(k).filter(|v| *v != CORE_VERSION);
        Relabel {
            workload: other(Kind::Workload),
            pod_group: other(Kind::PodGroup),
        }
    }

    fn is_identity(&self) -> bool {
        self.workload.is_none() && self.pod_group.is_none()
    }

    /// The served version of the kind named `kind` (`Workload`, `PodGroupList`, …), when it differs.
    fn for_kind(&self, kind: &str) -> Option<&'static str> {
        match kind.strip_suffix("List").unwrap_or(kind) {
            "Workload" => self.workload,
            "PodGroup" => self.pod_group,
            _ => None,
        }
    }

    fn for_plural(&self, plural: &str) -> Option<&'static str> {
        match plural {
            "workloads" => self.workload,
            "podgroups" => self.pod_group,
            _ => None,
        }
    }

    /// The request path with the served version, when it names a core-version resource that differs.
    fn request_path(&self, path: &str) -> Option<String> {
        let segs: Vec<&str> = path.split('/').collect();
        // ["", "apis", group, version, ("namespaces", ns,)? plural, ...]
        if segs.len() < 5 || segs[1] != "apis" || segs[2] != GROUP || segs[3] != CORE_VERSION {
            return None;
        }
        let plural = if segs[4] == "namespaces" {
            segs.get(6).copied()?
        } else {
            segs[4]
        };
        let version = self.for_plural(plural)?;
        let mut out = segs.clone();
        out[3] = version;
        Some(out.join("/"))
    }

    fn request_body(&self, bytes: Bytes) -> Bytes {
        let needle = format!("{GROUP}/{CORE_VERSION}");
        rewrite(bytes, &needle, |kind| self.for_kind(kind))
    }

    /// The served versions that differ from [`CORE_VERSION`], each once.
    fn other_versions(&self) -> Vec<&'static str> {
        let mut versions: Vec<&'static str> = [self.workload, self.pod_group].into_iter().flatten().collect();
        versions.dedup();
        versions
    }

    fn response_body(&self, bytes: Bytes) -> Bytes {
        let mut out = bytes;
        for version in self.other_versions() {
            let needle = format!("{GROUP}/{version}");
            out = rewrite(out, &needle, |kind| {
                (self.for_kind(kind) == Some(version)).then_some(CORE_VERSION)
            });
        }
        out
    }

    /// Whether `bytes` may hold an object [`Relabel::response_body`] changes.
    fn response_needs_rewrite(&self, bytes: &[u8]) -> bool {
        self.other_versions()
            .into_iter()
            .any(|version| contains(bytes, format!("{GROUP}/{version}").as_bytes()))
    }
}

/// `bytes` with the `apiVersion` of every object of a kind `target` names set to
/// `scheduling.k8s.io/<target>`; untouched when it does not contain `needle` or is not JSON.
fn rewrite(bytes: Bytes, needle: &str, target: impl Fn(&str) -> Option<&'static str> + Copy) -> Bytes {
    if !contains(&bytes, needle.as_bytes()) {
        return bytes;
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return bytes;
    };
    if !relabel(&mut value, target) {
        return bytes;
    }
    let mut out = serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec());
    if bytes.ends_with(b"\n") {
        out.push(b'\n');
    }
    Bytes::from(out)
}

/// Sets the `apiVersion` of every `scheduling.k8s.io` object (or reference) in `value` whose kind
/// `target` names a version for; whether anything changed.
fn relabel(value: &mut Value, target: impl Fn(&str) -> Option<&'static str> + Copy) -> bool {
    match value {
        Value::Object(map) => {
            let mut changed = false;
            let wanted = match (map.get("apiVersion"), map.get("kind")) {
                (Some(Value::String(av)), Some(Value::String(kind))) if av.starts_with("scheduling.k8s.io/") => {
                    target(kind).map(|v| format!("{GROUP}/{v}")).filter(|w| w != av)
                }
                _ => None,
            };
            if let Some(w) = wanted {
                map.insert("apiVersion".into(), Value::String(w));
                changed = true;
            }
            for (_, v) in map.iter_mut() {
                changed |= relabel(v, target);
            }
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, v| relabel(v, target) | c),
        _ => false,
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(haystack, needle).is_some()
}

/// A watch body relabelled one event (line) at a time, as the events arrive.
fn relabel_lines(body: Body, map: Relabel) -> ResponseBody {
    let stream = futures::stream::unfold(
        (body.into_data_stream(), BytesMut::new(), false),
        move |(mut stream, mut buf, done)| {
            let map = map.clone();
            async move {
                if done {
                    return None;
                }
                loop {
                    match stream.next().await {
                        Some(Ok(chunk)) => {
                            buf.extend_from_slice(&chunk);
                            let Some(last) = buf.iter().rposition(|b| *b == b'\n') else {
                                continue;
                            };
                            let lines = buf.split_to(last + 1).freeze();
                            // Most events (pods, nodes) name no scheduling version: passed on as they are.
                            if !map.response_needs_rewrite(&lines) {
                                return Some((Ok(http_body::Frame::data(lines)), (stream, buf, false)));
                            }
                            let mut out = BytesMut::new();
                            for line in lines.split_inclusive(|b| *b == b'\n') {
                                out.extend_from_slice(&map.response_body(lines.slice_ref(line)));
                            }
                            return Some((Ok(http_body::Frame::data(out.freeze())), (stream, buf, false)));
                        }
                        Some(Err(e)) => return Some((Err(BoxError::from(e)), (stream, buf, true))),
                        None => {
                            if buf.is_empty() {
                                return None;
                            }
                            let rest = map.response_body(buf.split().freeze());
                            return Some((Ok(http_body::Frame::data(rest)), (stream, buf, true)));
                        }
                    }
                }
            }
        },
    );
    http_body_util::StreamBody::new(stream).boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn beta() -> Relabel {
        Relabel {
            workload: Some("v1beta1"),
            pod_group: Some("v1beta1"),
        }
    }

    #[test]
    fn paths_of_workloads_and_pod_groups_name_the_served_version() {
        let m = beta();
        assert_eq!(
            m.request_path("/apis/scheduling.k8s.io/v1alpha3/namespaces/ns/podgroups/g/status")
                .as_deref(),
            Some("/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups/g/status")
        );
        assert_eq!(
            m.request_path("/apis/scheduling.k8s.io/v1alpha3/workloads").as_deref(),
            Some("/apis/scheduling.k8s.io/v1beta1/workloads")
        );
        for untouched in [
            "/apis/scheduling.k8s.io/v1alpha3/namespaces/ns/compositepodgroups",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            "/apis/scheduling.k8s.io/v1alpha3",
            "/api/v1/namespaces/ns/pods",
            "/apis/batch/v1alpha3/podgroups",
        ] {
            assert_eq!(m.request_path(untouched), None, "{untouched}");
        }
        assert_eq!(
            Relabel::default().request_path("/apis/scheduling.k8s.io/v1alpha3/workloads"),
            None
        );
    }

    #[test]
    fn bodies_are_relabelled_both_ways_with_references_and_without_composites() {
        let m = beta();
        let out = json!({
            "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
            "metadata": {"name": "g", "ownerReferences": [
                {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload", "name": "w", "uid": "1"},
                {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "name": "c", "uid": "2"},
                {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "3"}
            ]},
            "spec": {"parentCompositePodGroupName": "c"}
        });
        let sent = m.request_body(Bytes::from(serde_json::to_vec(&out).unwrap()));
        let sent: Value = serde_json::from_slice(&sent).unwrap();
        assert_eq!(sent["apiVersion"], "scheduling.k8s.io/v1beta1");
        let refs = &sent["metadata"]["ownerReferences"];
        assert_eq!(refs[0]["apiVersion"], "scheduling.k8s.io/v1beta1");
        assert_eq!(refs[1]["apiVersion"], "scheduling.k8s.io/v1alpha3");
        assert_eq!(refs[2]["apiVersion"], "batch/v1");
        let back = m.response_body(Bytes::from(serde_json::to_vec(&sent).unwrap()));
        assert_eq!(serde_json::from_slice::<Value>(&back).unwrap(), out);
    }

    #[test]
    fn lists_and_watch_events_come_back_in_the_core_version() {
        let m = beta();
        let list = json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroupList", "metadata": {},
            "items": [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "a"}}]});
        let back: Value =
            serde_json::from_slice(&m.response_body(Bytes::from(serde_json::to_vec(&list).unwrap()))).unwrap();
        assert_eq!(back["apiVersion"], "scheduling.k8s.io/v1alpha3");
        assert_eq!(back["items"][0]["apiVersion"], "scheduling.k8s.io/v1alpha3");
        let event =
            b"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"Workload\"}}\n";
        let back = m.response_body(Bytes::from_static(event));
        assert!(back.ends_with(b"\n"));
        assert!(contains(&back, b"scheduling.k8s.io/v1alpha3"), "{back:?}");
    }

    #[test]
    fn what_is_not_json_or_names_no_scheduling_version_passes_unchanged() {
        let m = beta();
        for raw in [
            &b"not json scheduling.k8s.io/v1alpha3"[..],
            b"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}",
            b"",
        ] {
            assert_eq!(m.request_body(Bytes::copy_from_slice(raw)), raw);
            assert_eq!(m.response_body(Bytes::copy_from_slice(raw)), raw);
        }
    }

    #[test]
    fn collections_are_told_from_objects() {
        assert!(scheduling_collection("/apis/scheduling.k8s.io/v1beta1/podgroups"));
        assert!(scheduling_collection(
            "/apis/scheduling.k8s.io/v1alpha3/namespaces/ns/workloads"
        ));
        assert!(!scheduling_collection(
            "/apis/scheduling.k8s.io/v1alpha3/namespaces/ns/workloads/w"
        ));
        assert!(!scheduling_collection("/api/v1/pods"));
    }
}
