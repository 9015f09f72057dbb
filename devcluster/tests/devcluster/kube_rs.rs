//! kube-rs against devcluster: typed CRUD, the dynamic API on a CRD, watcher + reflector, a Controller
//! with `owns`, Recorder events, Lease-based leader election, server-side apply, conflicts and retries.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event as KEvent, EventType, Recorder, Reporter};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

const T: Duration = Duration::from_secs(10);

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..Default::default()
    }
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn typed_crud_with_conflicts_and_not_found() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let created = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let rv1 = created.resource_version().unwrap();

    let dup = api_err(cms.create(&PostParams::default(), &cm("a")).await.unwrap_err());
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(dup.message, "configmaps \"a\" already exists");

    let mut updated = created.clone();
    updated.data.as_mut().unwrap().insert("k".into(), "v2".into());
    let updated = cms.replace("a", &PostParams::default(), &updated).await.unwrap();
    assert_ne!(updated.resource_version().unwrap(), rv1);

    // The first copy is stale now.
    let stale = api_err(cms.replace("a", &PostParams::default(), &created).await.unwrap_err());
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    assert!(
        stale.message.contains("the object has been modified"),
        "{}",
        stale.message
    );

    let mut gen_cm = cm("");
    gen_cm.metadata.name = None;
    gen_cm.metadata.generate_name = Some("gen-".into());
    let g = cms.create(&PostParams::default(), &gen_cm).await.unwrap();
    assert!(
        g.name_any().starts_with("gen-") && g.name_any().len() == 9,
        "{}",
        g.name_any()
    );

    let list = cms.list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = list.items.iter().map(|i| i.name_any()).collect();
    assert_eq!(names.len(), 2, "{names:?}");

    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let gone = api_err(cms.get("a").await.unwrap_err());
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    assert_eq!(gone.message, "configmaps \"a\" not found");
    c.shutdown().await;
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[kube(
    group = "test.kwas.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
#[kube(printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#)]
pub struct WidgetSpec {
    size: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    color: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
pub struct WidgetStatus {
    ready: bool,
}

async fn install_widget_crd(c: &kwas_devcluster::DevCluster) {
    let crds: Api<CustomResourceDefinition> = Api::all(c.client());
    crds.create(&PostParams::default(), &Widget::crd()).await.unwrap();
    kube::runtime::wait::await_condition(
        crds,
        "widgets.test.kwas.dev",
        kube::runtime::conditions::is_crd_established(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn dynamic_api_on_a_crd_honors_the_status_subresource_and_schema() {
    let c = crate::common::cluster().await;
    install_widget_crd(&c).await;
    let discovery = kube::Discovery::new(c.client()).run().await.unwrap();
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("test.kwas.dev", "v1", "Widget"))
        .expect("Widget is discoverable");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let api: Api<DynamicObject> = Api::namespaced_with(c.client(), "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.kwas.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 3, "unknown": true}, "status": {"ready": true}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(created.data["spec"], json!({"size": 3}), "unknown fields are pruned");
    assert!(created.data.get("status").is_none(), "status is ignored on create");
    assert_eq!(created.metadata.generation, Some(1));

    // Status writes do not touch spec or generation; spec writes do not touch status.
    let st = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 99}})),
        )
        .await
        .unwrap();
    assert_eq!(st.data["status"]["ready"], true);
    assert_eq!(st.data["spec"]["size"], 3);
    assert_eq!(st.metadata.generation, Some(1));
    let sp = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}, "status": {"ready": false}})),
        )
        .await
        .unwrap();
    assert_eq!(sp.data["spec"]["size"], 4);
    assert_eq!(sp.data["status"]["ready"], true);
    assert_eq!(sp.metadata.generation, Some(2));

    // Schema types are enforced with the apiserver's message.
    let bad = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": "big"}})),
        )
        .await
        .unwrap_err();
    let bad = api_err(bad);
    assert_eq!(bad.code, 422);
    assert!(
        bad.message.contains("spec.size in body must be of type integer"),
        "{}",
        bad.message
    );

    // Typed access through the derived type works too.
    let widgets: Api<Widget> = Api::default_namespaced(c.client());
    let w = widgets.get("w").await.unwrap();
    assert_eq!(w.spec.size, 4);
    assert_eq!(w.status, Some(WidgetStatus { ready: true }));
    c.shutdown().await;
}

#[tokio::test]
async fn watcher_and_reflector_track_changes() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    cms.create(&PostParams::default(), &cm("before")).await.unwrap();
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(writer, watcher(cms.clone(), watcher::Config::default().any_semantic()))
        .applied_objects()
        .boxed();
    let handle = tokio::spawn(async move {
        let mut stream = stream;
        while stream.try_next().await.is_ok_and(|x| x.is_some()) {}
    });
    reader.wait_until_ready().await.unwrap();
    cms.create(&PostParams::default(), &cm("after")).await.unwrap();
    cms.patch(
        "before",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    crate::common::eventually_within(T, "reflector sees both objects with the change", || {
        let reader = reader.clone();
        async move {
            let names: Vec<String> = reader.state().iter().map(|o| o.name_any()).collect();
            let before = reader.state().into_iter().find(|o| o.name_any() == "before")?;
            (names.len() == 2 && before.data.as_ref()?.get("k")? == "changed").then_some(())
        }
    })
    .await;
    cms.delete("after", &DeleteParams::default()).await.unwrap();
    crate::common::eventually_within(T, "reflector drops the deleted object", || {
        let reader = reader.clone();
        async move { (reader.state().len() == 1).then_some(()) }
    })
    .await;
    handle.abort();
    c.shutdown().await;
}

struct Ctx {
    client: kube::Client,
    reconciles: std::sync::atomic::AtomicUsize,
}

async fn reconcile(w: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    ctx.reconciles.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let ns = w.namespace().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    let mut child = cm(&format!("{}-config", w.name_any()));
    child.metadata.owner_references = Some(vec![w.controller_owner_ref(&()).unwrap()]);
    child.data = Some(BTreeMap::from([("size".to_string(), w.spec.size.to_string())]));
    cms.patch(
        &child.name_any(),
        &PatchParams::apply("widget-controller").force(),
        &Patch::Apply(&child),
    )
    .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Widget>, _: &kube::Error, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn controller_with_owns_reconciles_children_and_gc_removes_them() {
    let c = crate::common::cluster().await;
    install_widget_crd(&c).await;
    let client = c.client();
    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        reconciles: Default::default(),
    });
    let controller = Controller::new(widgets.clone(), watcher::Config::default())
        .owns(cms.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    let handle = tokio::spawn(controller);

    widgets
        .create(
            &PostParams::default(),
            &Widget::new("w1", WidgetSpec { size: 2, color: None }),
        )
        .await
        .unwrap();
    crate::common::eventually_within(T, "the child ConfigMap", || {
        let cms = cms.clone();
        async move { cms.get_opt("w1-config").await.ok().flatten() }
    })
    .await;
    // Deleting the child triggers a reconcile through `owns`, which recreates it.
    let before = ctx.reconciles.load(std::sync::atomic::Ordering::SeqCst);
    cms.delete("w1-config", &DeleteParams::default()).await.unwrap();
    crate::common::eventually_within(T, "the child recreated", || {
        let cms = cms.clone();
        let ctx = ctx.clone();
        async move {
            let again = cms.get_opt("w1-config").await.ok().flatten()?;
            (ctx.reconciles.load(std::sync::atomic::Ordering::SeqCst) > before
                && again.metadata.deletion_timestamp.is_none())
            .then_some(())
        }
    })
    .await;
    // Deleting the owner garbage-collects the child.
    widgets.delete("w1", &DeleteParams::background()).await.unwrap();
    crate::common::eventually_within(T, "the child garbage-collected", || {
        let cms = cms.clone();
        async move { cms.get_opt("w1-config").await.ok().flatten().is_none().then_some(()) }
    })
    .await;
    handle.abort();
    c.shutdown().await;
}

#[tokio::test]
async fn recorder_events_show_in_both_event_apis() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let obj = cms.create(&PostParams::default(), &cm("evented")).await.unwrap();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "kwas-test".into(),
            instance: None,
        },
    );
    let reference = obj.object_ref(&());
    let ev = KEvent {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("hello".into()),
        action: "Test".into(),
        secondary: None,
    };
    recorder.publish(&ev, &reference).await.unwrap();
    recorder.publish(&ev, &reference).await.unwrap();
    let v1: Api<k8s_openapi::api::events::v1::Event> = Api::default_namespaced(client.clone());
    let list = v1.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1, "the second publish updates the series");
    assert_eq!(list.items[0].series.as_ref().map(|s| s.count), Some(2));
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(client.clone());
    let sel = format!("involvedObject.name=evented,involvedObject.uid={}", obj.uid().unwrap());
    let list = core.list(&ListParams::default().fields(&sel)).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].reason.as_deref(), Some("Tested"));
    assert_eq!(list.items[0].message.as_deref(), Some("hello"));
    assert_eq!(list.items[0].reporting_component.as_deref(), Some("kwas-test"));
    c.shutdown().await;
}

/// A minimal Lease-based leader election, the way client-go's leaderelection uses the API: create the
/// Lease or take it over when expired, renew with optimistic concurrency.
async fn try_acquire(leases: &Api<Lease>, me: &str, lease_secs: i32) -> bool {
    let now = jiff::Timestamp::now();
    let spec = |transitions: i32| LeaseSpec {
        holder_identity: Some(me.into()),
        lease_duration_seconds: Some(lease_secs),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..Default::default()
    };
    match leases.get_opt("leader").await.unwrap() {
        None => {
            let lease = Lease {
                metadata: kube::api::ObjectMeta {
                    name: Some("leader".into()),
                    ..Default::default()
                },
                spec: Some(spec(0)),
            };
            leases.create(&PostParams::default(), &lease).await.is_ok()
        }
        Some(mut current) => {
            let s = current.spec.clone().unwrap_or_default();
            let holder = s.holder_identity.clone().unwrap_or_default();
            let renewed = s.renew_time.map(|t| t.0).unwrap_or(now);
            let expired =
                renewed + jiff::SignedDuration::from_secs(i64::from(s.lease_duration_seconds.unwrap_or(0))) < now;
            if holder != me && !expired {
                return false;
            }
            let transitions = s.lease_transitions.unwrap_or(0) + i32::from(holder != me);
            current.spec = Some(spec(transitions));
            // resourceVersion from the read makes this a compare-and-swap.
            leases.replace("leader", &PostParams::default(), &current).await.is_ok()
        }
    }
}

#[tokio::test]
async fn lease_based_leader_election_has_one_leader_and_fails_over() {
    let c = crate::common::cluster().await;
    let leases: Api<Lease> = Api::namespaced(c.client(), "kube-system");
    let (a, b) = tokio::join!(try_acquire(&leases, "a", 1), try_acquire(&leases, "b", 1));
    assert!(a ^ b, "exactly one contender wins the race (a={a}, b={b})");
    let (leader, other) = if a { ("a", "b") } else { ("b", "a") };
    assert!(try_acquire(&leases, leader, 1).await, "the leader renews");
    assert!(
        !try_acquire(&leases, other, 1).await,
        "the other cannot take a live lease"
    );
    let renewed = leases.get("leader").await.unwrap().spec.unwrap().renew_time.unwrap().0;
    // The other contender keeps trying, as an elector does, until the lease has expired.
    let taken = crate::common::eventually_within(T, "the lease to expire", || async {
        try_acquire(&leases, other, 1).await.then(jiff::Timestamp::now)
    })
    .await;
    assert!(
        taken >= renewed + jiff::SignedDuration::from_secs(1),
        "the other takes the expired lease"
    );
    let lease = leases.get("leader").await.unwrap();
    assert_eq!(lease.spec.as_ref().unwrap().holder_identity.as_deref(), Some(other));
    assert_eq!(lease.spec.as_ref().unwrap().lease_transitions, Some(1));
    c.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_tracks_managers_and_conflicts() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let applied =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1", "b": "2"}});
    let obj = cms
        .patch("ssa", &PatchParams::apply("alice"), &Patch::Apply(&applied))
        .await
        .unwrap();
    let managers: Vec<_> = obj
        .managed_fields()
        .iter()
        .map(|m| (m.manager.clone().unwrap(), m.operation.clone().unwrap()))
        .collect();
    assert_eq!(managers, vec![("alice".to_string(), "Apply".to_string())]);

    let bob = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "9"}});
    let err = api_err(
        cms.patch("ssa", &PatchParams::apply("bob"), &Patch::Apply(&bob))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"alice\" using v1: .data.a"
    );
    let forced = cms
        .patch("ssa", &PatchParams::apply("bob").force(), &Patch::Apply(&bob))
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");

    // alice stops managing b: it is removed; a now belongs to bob and stays.
    let alice2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {}});
    let after = cms
        .patch("ssa", &PatchParams::apply("alice"), &Patch::Apply(&alice2))
        .await
        .unwrap();
    assert_eq!(
        after.data.unwrap(),
        BTreeMap::from([("a".to_string(), "9".to_string())])
    );

    // An update by another manager takes ownership of what it changed.
    let edited = cms
        .patch(
            "ssa",
            &PatchParams {
                field_manager: Some("kubectl-edit".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"a": "10"}})),
        )
        .await
        .unwrap();
    assert!(
        edited
            .managed_fields()
            .iter()
            .any(|m| m.manager.as_deref() == Some("kubectl-edit") && m.operation.as_deref() == Some("Update"))
    );
    let err = api_err(
        cms.patch("ssa", &PatchParams::apply("bob"), &Patch::Apply(&bob))
            .await
            .unwrap_err(),
    );
    assert!(
        err.message.contains("conflict with \"kubectl-edit\""),
        "{}",
        err.message
    );
    c.shutdown().await;
}

#[tokio::test]
async fn concurrent_writers_converge_with_conflict_retries() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let mut counter = cm("counter");
    counter.data = Some(BTreeMap::from([("n".to_string(), "0".to_string())]));
    cms.create(&PostParams::default(), &counter).await.unwrap();
    let conflicts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let cms = cms.clone();
        let conflicts = conflicts.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                loop {
                    let mut cur = cms.get("counter").await.unwrap();
                    let n: i64 = cur.data.as_ref().unwrap()["n"].parse().unwrap();
                    cur.data.as_mut().unwrap().insert("n".into(), (n + 1).to_string());
                    match cms.replace("counter", &PostParams::default(), &cur).await {
                        Ok(_) => break,
                        Err(kube::Error::Api(s)) if s.code == 409 => {
                            conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(e) => panic!("unexpected error {e}"),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let n = cms.get("counter").await.unwrap().data.unwrap()["n"].clone();
    assert_eq!(
        n,
        "80",
        "no lost update ({} conflicts retried)",
        conflicts.load(std::sync::atomic::Ordering::Relaxed)
    );
    c.shutdown().await;
}

#[tokio::test]
async fn pods_run_on_simulated_nodes() {
    let c = crate::common::cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-pod", "annotations": {"kwas.dev/sim-run-duration": "200ms"}},
        "spec": {"restartPolicy": "Never", "nodeName": "node-b0-r0-n1", "containers": [{"name": "main", "image": "busybox"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let running =
        kube::runtime::wait::await_condition(pods.clone(), "job-pod", kube::runtime::conditions::is_pod_running());
    tokio::time::timeout(T, running).await.unwrap().unwrap();
    let p = pods.get("job-pod").await.unwrap();
    let st = p.status.unwrap();
    assert!(st.start_time.is_some() && st.pod_ip.is_some() && st.host_ip.is_some());
    assert!(st.container_statuses.unwrap()[0].ready);
    let done = crate::common::eventually_within(T, "pod succeeded", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("job-pod").await.ok()?;
            (p.status.as_ref()?.phase.as_deref()? == "Succeeded").then_some(p)
        }
    })
    .await;
    let term = done.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!((term.exit_code, term.reason.as_deref()), (0, Some("Completed")));
    c.shutdown().await;
}
