//! Watching a kind whose stored objects may not all decode into the controller's type.
//!
//! kube-runtime's typed watcher decodes a whole list page at once: one object that does not decode (a
//! JobSet whose template holds a value of the wrong type under a schema that preserves unknown fields,
//! an object written by a newer version of the CRD) fails every list, and the controller stops handling
//! all the others. [`watch`] lists and watches the kind untyped and decodes each object on its own:
//! an object that decodes feeds the controller's cache and triggers its reconcile; one that does not is
//! left out of the cache (a stale earlier version is removed) and reported on the object itself with a
//! Warning event `DecodeError` carrying the decoder's message, once per resourceVersion.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tracing::warn;

/// How many (uid, resourceVersion) pairs of reported objects are remembered before the memory is reset.
const REPORTED_CAPACITY: usize = 10_000;

/// Decodes `obj` into `K`, or returns its metadata and the decoder's message.
pub fn decode<K: Resource + DeserializeOwned>(obj: DynamicObject) -> Result<K, Box<(ObjectMeta, String)>> {
    let meta = obj.metadata.clone();
    obj.try_parse::<K>().map_err(|e| Box::new((meta, e.to_string())))
}

/// A watch of `K` for `Controller::for_stream`: the reader of the cache and the stream of decoded
/// objects whose `projection` changed (see [`crate::triggers::relevant`]; deletions pass too).
/// `placeholder` builds a `K` with only the given metadata (used to drop an object from the cache when its
/// new version does not decode).
pub fn watch<K>(
    client: Client,
    config: watcher::Config,
    recorder: Recorder,
    placeholder: fn(ObjectMeta) -> K,
    projection: fn(&K) -> u64,
) -> (Store<K>, impl Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let (reader, writer) = reflector::store::<K>();
    let reported: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
    let report = move |meta: &ObjectMeta, message: String| {
        report_invalid(&recorder, &resource, &reported, meta, message);
    };
    let stream = watcher(api, config)
        .default_backoff()
        .try_filter_map(move |event| {
            let decoded = match event {
                watcher::Event::Apply(o) => Some(match decode::<K>(o) {
                    Ok(k) => watcher::Event::Apply(k),
                    Err(invalid) => {
                        let (meta, message) = *invalid;
                        report(&meta, message);
                        watcher::Event::Delete(placeholder(meta))
                    }
                }),
                watcher::Event::InitApply(o) => match decode::<K>(o) {
                    Ok(k) => Some(watcher::Event::InitApply(k)),
                    Err(invalid) => {
                        let (meta, message) = *invalid;
                        report(&meta, message);
                        None
                    }
                },
                watcher::Event::Delete(o) => Some(watcher::Event::Delete(
                    decode::<K>(o).unwrap_or_else(|invalid| placeholder(invalid.0)),
                )),
                watcher::Event::Init => Some(watcher::Event::Init),
                watcher::Event::InitDone => Some(watcher::Event::InitDone),
            };
            std::future::ready(Ok(decoded))
        })
        .reflect(writer);
    let stream = crate::triggers::relevant_with(stream, projection, placeholder).boxed();
    (reader, stream)
}

fn report_invalid(
    recorder: &Recorder,
    resource: &ApiResource,
    reported: &Mutex<HashSet<(String, String)>>,
    meta: &ObjectMeta,
    message: String,
) {
    let key = (
        meta.uid.clone().unwrap_or_default(),
        meta.resource_version.clone().unwrap_or_default(),
    );
    {
        let mut seen = reported.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= REPORTED_CAPACITY {
            seen.clear();
        }
        if !seen.insert(key) {
            return;
        }
    }
    warn!(
        kind = %resource.kind,
        namespace = meta.namespace.as_deref().unwrap_or_default(),
        name = meta.name.as_deref().unwrap_or_default(),
        error = %message,
        "object does not decode; left out until it changes"
    );
    let reference = ObjectReference {
        api_version: Some(resource.api_version.clone()),
        kind: Some(resource.kind.clone()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    };
    let recorder = recorder.clone();
    // The watch stream cannot wait for the API server; the event is published on its own.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let event = Event {
                type_: EventType::Warning,
                reason: kwas_api_types::names::events::DECODE_ERROR.to_string(),
                note: Some(
                    format!("the object cannot be decoded: {message}")
                        .chars()
                        .take(1024)
                        .collect(),
                ),
                action: "Decode".to_string(),
                secondary: None,
            };
            if let Err(e) = recorder.publish(&event, &reference).await {
                warn!(error = %e, "failed to record event");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwas_api_types::jobset::JobSet;

    #[test]
    fn one_object_decodes_on_its_own() {
        let good: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "good", "namespace": "ns"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": {"spec": {"containers": []}}}}}]}
        }))
        .unwrap();
        assert!(decode::<JobSet>(good).is_ok());
        let bad: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "bad", "namespace": "ns", "uid": "u"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": {"spec": {"containers": 5}}}}}]}
        }))
        .unwrap();
        let (meta, message) = *decode::<JobSet>(bad).unwrap_err();
        assert_eq!(meta.name.as_deref(), Some("bad"));
        assert!(message.contains("invalid type"), "{message}");
    }
}
