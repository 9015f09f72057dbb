//! Publishing `events.k8s.io/v1` Events as client-go's event broadcaster does
//! (`k8s.io/client-go/tools/events`): an event equal to one published in the last six minutes (same
//! regarding and related object, reason, action, type and note) is counted on that one as a series
//! (`series.count`, `series.lastObservedTime`) instead of creating another; a different note is a new
//! event. kube-runtime's `Recorder` leaves the note out of that key, so a pod whose `FailedScheduling`
//! message changes would keep showing its first message; this recorder follows upstream.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::Mutex;

use super::actions::EventRecord;

/// How long an event stays open for its repeats.
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);
/// The longest note kept (upstream's limit on `note`).
const MAX_NOTE: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    regarding: (Option<String>, Option<String>, Option<String>, Option<String>),
    related: Option<(Option<String>, Option<String>, Option<String>)>,
    reason: String,
    action: String,
    warning: bool,
    note: String,
}

#[derive(Debug, Clone)]
struct Open {
    namespace: String,
    name: String,
    count: i32,
    last: Timestamp,
}

/// Publishes events (cheap to clone; clones share the open series).
#[derive(Clone)]
pub(crate) struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    open: Arc<Mutex<HashMap<Key, Open>>>,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("controller", &self.controller)
            .finish()
    }
}

fn key(e: &EventRecord, note: &str) -> Key {
    let r = &e.regarding;
    Key {
        regarding: (r.kind.clone(), r.namespace.clone(), r.name.clone(), r.uid.clone()),
        related: e
            .related
            .as_ref()
            .map(|x| (x.kind.clone(), x.name.clone(), x.uid.clone())),
        reason: e.reason.clone(),
        action: e.action.clone(),
        warning: e.warning,
        note: note.to_string(),
    }
}

impl EventRecorder {
    /// A recorder reporting as `controller` (instance: `POD_NAME`, else the controller).
    pub(crate) fn new(client: Client, controller: &str) -> Self {
        Self {
            client,
            controller: controller.to_string(),
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| controller.to_string()),
            open: Arc::default(),
        }
    }

    /// Publishes `e`: a new Event, or one more of a series.
    pub(crate) async fn publish(&self, e: &EventRecord) -> Result<(), kube::Error> {
        let note: String = e.note.chars().take(MAX_NOTE).collect();
        let now = Timestamp::now();
        let k = key(e, &note);
        let repeat = {
            let mut open = self.open.lock().await;
            let window = k8s_openapi::jiff::SignedDuration::try_from(SERIES_WINDOW).unwrap_or_default();
            open.retain(|_, o| o.last.checked_add(window).is_ok_and(|end| end > now));
            open.get_mut(&k).map(|o| {
                o.count = o.count.saturating_add(1);
                o.last = now;
                o.clone()
            })
        };
        if let Some(o) = repeat {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &o.namespace);
            let patch = json!({"series": {"count": o.count, "lastObservedTime": MicroTime(now)}});
            match api.patch(&o.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => return Ok(()),
                // Gone (expired by the server): start over with a new event.
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    self.open.lock().await.remove(&k);
                }
                Err(err) => return Err(err),
            }
        }
        let namespace = e.regarding.namespace.clone().unwrap_or_else(|| "default".into());
        let name = format!(
            "{}.{:x}",
            e.regarding.name.as_deref().unwrap_or(&self.controller),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                namespace: Some(namespace.clone()),
                name: Some(name.clone()),
                ..Default::default()
            },
            action: Some(e.action.clone()),
            reason: Some(e.reason.clone()),
            note: Some(note),
            type_: Some(if e.warning { "Warning" } else { "Normal" }.into()),
            event_time: Some(MicroTime(now)),
            regarding: Some(e.regarding.clone()),
            related: e.related.clone(),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            series: None::<EventSeries>,
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &event).await?;
        self.open.lock().await.insert(
            k,
            Open {
                namespace,
                name,
                count: 1,
                last: now,
            },
        );
        Ok(())
    }
}

/// For tests: a reference to a pod.
#[cfg(test)]
fn pod(name: &str, uid: &str) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        kind: Some("Pod".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        uid: Some(uid.into()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(note: &str) -> EventRecord {
        EventRecord {
            regarding: pod("p", "u"),
            related: None,
            warning: true,
            reason: "FailedScheduling".into(),
            action: "Scheduling".into(),
            note: note.into(),
        }
    }

    #[test]
    fn the_note_is_part_of_the_key() {
        assert_eq!(key(&record("a"), "a"), key(&record("a"), "a"));
        assert_ne!(key(&record("a"), "a"), key(&record("b"), "b"));
        let mut other = record("a");
        other.regarding = pod("q", "v");
        assert_ne!(key(&record("a"), "a"), key(&other, "a"));
    }
}
