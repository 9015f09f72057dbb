//! API semantics clients depend on: watch consistency and 410 recovery, pagination, selectors,
//! generation and status subresources, garbage collection, finalizers, namespace deletion, the simulated
//! kubelet and nodes, admission (priority, scheduling.k8s.io validation), fault injection, event expiry
//! and CRD removal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use axum::http;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::scheduling::v1alpha3::{PodGroup, Workload};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Resource, ResourceExt};
use kwas_devcluster::{FaultConfig, FaultRule, Verb};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(10);

fn obj<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn cm(name: &str, owners: Value) -> ConfigMap {
    obj(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "ownerReferences": owners}, "data": {"k": "0"}}),
    )
}

fn owner_ref(o: &ConfigMap, block: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o.name_any(), "uid": o.uid().unwrap(), "blockOwnerDeletion": block})
}

fn status(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn gone<K>(api: &Api<K>, name: &str) -> bool
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.unwrap().is_none()
}

/// Waits until the garbage collector has worked through everything queued before this call. It works
/// its queue in order, so once the dependent of an owner deleted now (`{name}-dep` of `{name}-owner`) is
/// collected, every earlier item is done.
async fn gc_caught_up(cms: &Api<ConfigMap>, name: &str) {
    let pp = PostParams::default();
    let owner = cms.create(&pp, &cm(&format!("{name}-owner"), json!([]))).await.unwrap();
    cms.create(&pp, &cm(&format!("{name}-dep"), json!([owner_ref(&owner, false)])))
        .await
        .unwrap();
    cms.delete(&format!("{name}-owner"), &DeleteParams::background())
        .await
        .unwrap();
    wait_gone(cms, &format!("{name}-dep")).await;
}

async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    crate::common::eventually_within(T, format!("{name} to be deleted"), || async {
        gone(api, name).await.then_some(())
    })
    .await;
}

fn pod(name: &str, node: Option<&str>, annotations: Value, restart: &str) -> Pod {
    let mut spec = json!({"restartPolicy": restart, "containers": [{"name": "main", "image": "busybox:1.36"}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    obj(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations}, "spec": spec}),
    )
}

#[tokio::test]
async fn watch_from_a_list_sees_every_change_per_object_in_order_under_concurrent_writers() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    for i in 0..10 {
        cms.create(&PostParams::default(), &cm(&format!("o{i}"), json!([])))
            .await
            .unwrap();
    }
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let writers = 4;
    let per_writer = 50;
    let watch_api = cms.clone();
    let collector = tokio::spawn(async move {
        let mut stream = watch_api
            .watch(&WatchParams::default().timeout(60), &rv)
            .await
            .unwrap()
            .boxed();
        let mut seen: HashMap<String, Vec<u64>> = HashMap::new();
        let mut total = 0;
        while total < writers * per_writer {
            match stream.try_next().await.unwrap().unwrap() {
                WatchEvent::Modified(o) => {
                    seen.entry(o.name_any())
                        .or_default()
                        .push(o.resource_version().unwrap().parse().unwrap());
                    total += 1;
                }
                // kube-rs asks for bookmarks by default; they come while the writers pause.
                WatchEvent::Bookmark(_) => {}
                other => panic!("unexpected event {other:?}"),
            }
        }
        seen
    });
    let mut tasks = Vec::new();
    for w in 0..writers {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            let mut written: HashMap<String, usize> = HashMap::new();
            for i in 0..per_writer {
                let name = format!("o{}", (w * 7 + i) % 10);
                cms.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {format!("w{w}"): i.to_string()}})),
                )
                .await
                .unwrap();
                *written.entry(name).or_default() += 1;
            }
            written
        }));
    }
    let mut expected: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        for (k, v) in t.await.unwrap() {
            *expected.entry(k).or_default() += v;
        }
    }
    let seen = tokio::time::timeout(T, collector).await.unwrap().unwrap();
    for (name, rvs) in &seen {
        assert!(
            rvs.windows(2).all(|w| w[0] < w[1]),
            "{name}: events out of order {rvs:?}"
        );
        assert_eq!(rvs.len(), expected[name], "{name}: lost or duplicated events");
        let last = cms
            .get(name)
            .await
            .unwrap()
            .resource_version()
            .unwrap()
            .parse::<u64>()
            .unwrap();
        assert_eq!(*rvs.last().unwrap(), last, "{name}: the last event is the stored state");
    }
    c.shutdown().await;
}

#[tokio::test]
async fn expired_versions_get_410_and_watchers_recover_from_dropped_streams() {
    let c = crate::common::cluster_with(|cfg| cfg.watch_history = 5).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let first = cms
        .create(&PostParams::default(), &cm("first", json!([])))
        .await
        .unwrap();
    for i in 0..20 {
        cms.create(&PostParams::default(), &cm(&format!("x{i}"), json!([])))
            .await
            .unwrap();
    }
    let mut stream = cms
        .watch(&WatchParams::default(), &first.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert!(e.message.starts_with("too old resource version"), "{}", e.message);
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }

    // Drop a third of watch streams after each event: a kube-rs reflector still converges.
    c.faults().set(FaultConfig {
        seed: 42,
        rules: vec![FaultRule {
            resources: vec!["configmaps".into()],
            verbs: vec![Verb::Watch],
            drop_watch_rate: 0.3,
            ..Default::default()
        }],
    });
    let (reader, writer) = kube::runtime::reflector::store::<ConfigMap>();
    let watch = kube::runtime::reflector(writer, kube::runtime::watcher(cms.clone(), Default::default()));
    let handle = tokio::spawn(async move {
        let mut s = watch.boxed();
        while let Some(_ev) = s.next().await {}
    });
    reader.wait_until_ready().await.unwrap();
    for i in 0..40 {
        cms.patch(
            &format!("x{}", i % 20),
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": i.to_string()}})),
        )
        .await
        .unwrap();
    }
    cms.delete("x0", &DeleteParams::default()).await.unwrap();
    crate::common::eventually_within(T, "the reflector to converge", || {
        let reader = reader.clone();
        let cms = cms.clone();
        async move {
            let truth: BTreeMap<String, String> = cms
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .map(|o| (o.name_any(), o.resource_version().unwrap()))
                .collect();
            let cached: BTreeMap<String, String> = reader
                .state()
                .iter()
                .map(|o| (o.name_any(), o.resource_version().unwrap()))
                .collect();
            (truth == cached).then_some(())
        }
    })
    .await;
    handle.abort();
    c.shutdown().await;
}

#[tokio::test]
async fn bookmarks_and_streaming_initial_events() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    cms.create(&PostParams::default(), &cm("a", json!([]))).await.unwrap();
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = cms
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            },
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let ev = tokio::time::timeout(T, stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match ev {
        WatchEvent::Bookmark(b) => assert_eq!(b.metadata.resource_version, rv),
        other => panic!("expected a bookmark, got {other:?}"),
    }
    // sendInitialEvents: the state, then the initial-events-end bookmark.
    let mut stream = cms.watch(&WatchParams::streaming_lists(), "").await.unwrap().boxed();
    assert!(matches!(stream.try_next().await.unwrap().unwrap(), WatchEvent::Added(o) if o.name_any() == "a"));
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(b) => assert_eq!(
            b.metadata
                .annotations
                .get("k8s.io/initial-events-end")
                .map(String::as_str),
            Some("true")
        ),
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
    c.shutdown().await;
}

#[tokio::test]
async fn pagination_is_a_consistent_snapshot() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    for i in 0..25 {
        cms.create(&PostParams::default(), &cm(&format!("p{i:02}"), json!([])))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(first.items.len(), 10);
    assert_eq!(first.metadata.remaining_item_count, Some(15));
    cms.create(&PostParams::default(), &cm("p99", json!([]))).await.unwrap();
    let mut names: Vec<String> = first.items.iter().map(|o| o.name_any()).collect();
    let mut token = first.metadata.continue_.clone();
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = cms
            .list(&ListParams::default().limit(10).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(page.metadata.resource_version, first.metadata.resource_version);
        names.extend(page.items.iter().map(|o| o.name_any()));
        token = page.metadata.continue_;
    }
    assert_eq!(
        names.len(),
        25,
        "the object created between pages is not in the snapshot"
    );
    let err = status(
        cms.list(&ListParams::default().continue_token("999-1"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    c.shutdown().await;
}

#[tokio::test]
async fn label_and_field_selectors() {
    let c = crate::common::cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    let mut a = pod("a", Some("node-b0-r0-n0"), json!({}), "Always");
    a.metadata.labels = Some(BTreeMap::from([
        ("app".into(), "web".into()),
        ("tier".into(), "front".into()),
    ]));
    let mut b = pod("b", None, json!({}), "Always");
    b.metadata.labels = Some(BTreeMap::from([("app".into(), "db".into())]));
    pods.create(&PostParams::default(), &a).await.unwrap();
    pods.create(&PostParams::default(), &b).await.unwrap();
    let names = |l: kube::core::ObjectList<Pod>| l.items.iter().map(|p| p.name_any()).collect::<Vec<_>>();
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("app in (web,cache),tier"))
                .await
                .unwrap()
        ),
        vec!["a"]
    );
    assert_eq!(
        names(pods.list(&ListParams::default().labels("app!=web")).await.unwrap()),
        vec!["b"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().fields("spec.nodeName=node-b0-r0-n0"))
                .await
                .unwrap()
        ),
        vec!["a"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().fields("spec.nodeName="))
                .await
                .unwrap()
        ),
        vec!["b"]
    );
    crate::common::eventually_within(T, "pod a running", || async {
        let l = pods
            .list(&ListParams::default().fields("status.phase=Running"))
            .await
            .ok()?;
        (names(l) == vec!["a"]).then_some(())
    })
    .await;
    let all: Api<Pod> = Api::all(c.client());
    assert_eq!(
        all.list(&ListParams::default().fields("metadata.namespace=default,metadata.name=b"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let err = status(
        pods.list(&ListParams::default().fields("spec.containers=x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "field label not supported: spec.containers")
    );
    c.shutdown().await;
}

#[tokio::test]
async fn generation_tracks_spec_and_status_is_a_separate_subresource() {
    let c = crate::common::cluster().await;
    let jobs: Api<Job> = Api::default_namespaced(c.client());
    let job: Job = obj(
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    let j = jobs.create(&PostParams::default(), &job).await.unwrap();
    assert_eq!(j.metadata.generation, Some(1));
    let spec = j.spec.as_ref().unwrap();
    assert_eq!(
        (spec.parallelism, spec.completions, spec.backoff_limit),
        (Some(1), Some(1), Some(6))
    );
    let uid = j.uid().unwrap();
    assert_eq!(
        spec.selector.as_ref().unwrap().match_labels.as_ref().unwrap()["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        spec.template.metadata.as_ref().unwrap().labels.as_ref().unwrap()["job-name"],
        "j"
    );

    let s = jobs
        .patch_status(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 1}, "spec": {"parallelism": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(
        (
            s.metadata.generation,
            s.spec.unwrap().parallelism,
            s.status.unwrap().active
        ),
        (Some(1), Some(1), Some(1))
    );
    let m = jobs
        .patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}, "status": {"active": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(
        (m.metadata.generation, m.status.unwrap().active),
        (Some(1), Some(1)),
        "metadata changes keep generation; status is untouched"
    );
    let p = jobs
        .patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"parallelism": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.generation, Some(2));
    // A no-op write keeps the resourceVersion.
    let again = jobs
        .patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"parallelism": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(again.resource_version(), p.resource_version());

    let err = status(
        jobs.patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"restartPolicy": "OnFailure"}}}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .starts_with("Job.batch \"j\" is invalid: spec.template: Invalid value:"),
        "{}",
        err.message
    );
    assert!(err.message.ends_with("field is immutable"), "{}", err.message);
    let bad: Job = obj(
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    let err = status(jobs.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(
        err.message,
        "Job.batch \"bad\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
    );
    assert_eq!(err.details.unwrap().causes[0].field, "spec.template.spec.restartPolicy");
    c.shutdown().await;
}

#[tokio::test]
async fn garbage_collection_background_foreground_orphan_and_multiple_owners() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let pp = PostParams::default();

    // Background.
    let owner = cms.create(&pp, &cm("bg-owner", json!([]))).await.unwrap();
    cms.create(&pp, &cm("bg-dep", json!([owner_ref(&owner, false)])))
        .await
        .unwrap();
    cms.delete("bg-owner", &DeleteParams::background()).await.unwrap();
    wait_gone(&cms, "bg-dep").await;

    // Foreground: the owner waits for its blocking dependent, which waits for its own finalizer.
    let owner = cms.create(&pp, &cm("fg-owner", json!([]))).await.unwrap();
    let mut held = cm("fg-dep", json!([owner_ref(&owner, true)]));
    held.metadata.finalizers = Some(vec!["test.kwas.dev/hold".into()]);
    cms.create(&pp, &held).await.unwrap();
    cms.delete("fg-owner", &DeleteParams::foreground()).await.unwrap();
    let o = cms.get("fg-owner").await.unwrap();
    assert!(o.metadata.deletion_timestamp.is_some());
    assert_eq!(o.finalizers(), &["foregroundDeletion".to_string()]);
    crate::common::eventually_within(T, "the dependent marked for deletion", || async {
        cms.get("fg-dep").await.ok()?.metadata.deletion_timestamp.map(|_| ())
    })
    .await;
    gc_caught_up(&cms, "barrier-fg").await;
    assert!(
        !gone(&cms, "fg-owner").await,
        "the owner waits for its blocking dependent"
    );
    cms.patch(
        "fg-dep",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_gone(&cms, "fg-dep").await;
    wait_gone(&cms, "fg-owner").await;

    // Orphan: the dependent stays, without the ownerReference.
    let owner = cms.create(&pp, &cm("or-owner", json!([]))).await.unwrap();
    cms.create(&pp, &cm("or-dep", json!([owner_ref(&owner, true)])))
        .await
        .unwrap();
    cms.delete("or-owner", &DeleteParams::orphan()).await.unwrap();
    wait_gone(&cms, "or-owner").await;
    let dep = cms.get("or-dep").await.unwrap();
    assert!(dep.owner_references().is_empty());

    // Two owners: collected only when both are gone.
    let a = cms.create(&pp, &cm("own-a", json!([]))).await.unwrap();
    let b = cms.create(&pp, &cm("own-b", json!([]))).await.unwrap();
    cms.create(&pp, &cm("shared", json!([owner_ref(&a, false), owner_ref(&b, false)])))
        .await
        .unwrap();
    cms.delete("own-a", &DeleteParams::background()).await.unwrap();
    gc_caught_up(&cms, "barrier-shared").await;
    assert!(!gone(&cms, "shared").await, "one owner remains");
    cms.delete("own-b", &DeleteParams::background()).await.unwrap();
    wait_gone(&cms, "shared").await;

    // A dependent created after its owner is gone is collected too.
    cms.create(&pp, &cm("late", json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}])))
        .await
        .unwrap();
    wait_gone(&cms, "late").await;

    // An owner of a kind the server does not serve cannot be checked: its dependent stays, as upstream.
    cms.create(&pp, &cm("foreign", json!([{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "ing", "uid": "11111111-0000-0000-0000-000000000000"}])))
        .await
        .unwrap();
    gc_caught_up(&cms, "barrier-foreign").await;
    assert!(!gone(&cms, "foreign").await);
    c.shutdown().await;
}

#[tokio::test]
async fn finalizers_and_delete_preconditions() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let mut f = cm("fin", json!([]));
    f.metadata.finalizers = Some(vec!["test.kwas.dev/a".into()]);
    let created = cms.create(&PostParams::default(), &f).await.unwrap();

    let mut dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("wrong".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = status(cms.delete("fin", &dp).await.unwrap_err());
    assert_eq!(err.code, 409);
    assert!(
        err.message.contains("Precondition failed: UID in precondition: wrong"),
        "{}",
        err.message
    );

    dp.preconditions = Some(kube::api::Preconditions {
        uid: created.uid(),
        resource_version: None,
    });
    let pending = cms.delete("fin", &dp).await.unwrap();
    let still = pending
        .left()
        .expect("the object is returned while its finalizer is pending");
    assert!(still.metadata.deletion_timestamp.is_some());
    let err = status(
        cms.patch(
            "fin",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["test.kwas.dev/a", "test.kwas.dev/b"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("no new finalizers can be added if the object is being deleted"),
        "{}",
        err.message
    );
    cms.patch(
        "fin",
        &PatchParams::default(),
        &Patch::Json::<()>(serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers"}])).unwrap()),
    )
    .await
    .unwrap();
    assert!(gone(&cms, "fin").await);
    c.shutdown().await;
}

#[tokio::test]
async fn namespace_deletion_cascades_and_blocks_new_content() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.create(&PostParams::default(), &obj(json!({"metadata": {"name": "team"}})))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team");
    cms.create(&PostParams::default(), &cm("one", json!([]))).await.unwrap();
    pods.create(
        &PostParams::default(),
        &pod(
            "runner",
            Some("node-b0-r1-n0"),
            json!({"kwas.dev/sim-shutdown-duration": "300ms"}),
            "Always",
        ),
    )
    .await
    .unwrap();
    crate::common::eventually_within(T, "pod running", || async {
        (pods.get("runner").await.ok()?.status?.phase.as_deref()? == "Running").then_some(())
    })
    .await;
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    let ns = nss.get("team").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    let err = status(
        cms.create(&PostParams::default(), &cm("two", json!([])))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "configmaps \"two\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    // The pod terminates gracefully first.
    let p = pods.get("runner").await.unwrap();
    assert!(p.metadata.deletion_timestamp.is_some());
    wait_gone(&nss, "team").await;
    assert!(cms.list(&ListParams::default()).await.unwrap().items.is_empty());
    let err = status(
        cms.create(&PostParams::default(), &cm("three", json!([])))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.message.as_str()), (404, "namespaces \"team\" not found"));
    c.shutdown().await;
}

async fn wait_phase(pods: &Api<Pod>, name: &str, phase: &str) -> Pod {
    crate::common::eventually_within(T, format!("{name} {phase}"), || async {
        let p = pods.get(name).await.ok()?;
        (p.status.as_ref()?.phase.as_deref()? == phase).then_some(p)
    })
    .await
}

#[tokio::test]
async fn kubelet_restart_policies_exit_phases_and_graceful_deletion() {
    let c = crate::common::cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    let pp = PostParams::default();
    let node = Some("node-b0-r0-n0");
    pods.create(
        &pp,
        &pod(
            "fails",
            node,
            json!({"kwas.dev/sim-run-duration": "100ms", "kwas.dev/sim-exit-phase": "Failed"}),
            "Never",
        ),
    )
    .await
    .unwrap();
    pods.create(
        &pp,
        &pod(
            "restarts",
            node,
            json!({"kwas.dev/sim-run-duration": "100ms"}),
            "Always",
        ),
    )
    .await
    .unwrap();
    pods.create(
        &pp,
        &pod(
            "retries",
            node,
            json!({"kwas.dev/sim-run-duration": "100ms", "kwas.dev/sim-exit-phase": "Failed"}),
            "OnFailure",
        ),
    )
    .await
    .unwrap();
    let failed = wait_phase(&pods, "fails", "Failed").await;
    let t = failed.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!((t.exit_code, t.reason.as_deref()), (1, Some("Error")));
    for name in ["restarts", "retries"] {
        crate::common::eventually_within(T, format!("{name} restarting"), || async {
            let p = pods.get(name).await.ok()?;
            let cs = p.status?.container_statuses?;
            (cs[0].restart_count >= 2 && cs[0].last_state.as_ref()?.terminated.is_some()).then_some(())
        })
        .await;
        assert_eq!(
            pods.get(name).await.unwrap().status.unwrap().phase.as_deref(),
            Some("Running")
        );
    }

    // Graceful deletion: the pod stays Terminating while its containers shut down.
    pods.create(
        &pp,
        &pod(
            "graceful",
            node,
            json!({"kwas.dev/sim-shutdown-duration": "400ms"}),
            "Always",
        ),
    )
    .await
    .unwrap();
    wait_phase(&pods, "graceful", "Running").await;
    let started = std::time::Instant::now();
    pods.delete("graceful", &DeleteParams::default()).await.unwrap();
    let p = pods.get("graceful").await.unwrap();
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
    wait_gone(&pods, "graceful").await;
    assert!(
        started.elapsed() >= Duration::from_millis(350),
        "deleted after {:?}",
        started.elapsed()
    );

    // A shutdown longer than the grace period is cut at the grace period.
    pods.create(
        &pp,
        &pod("slow", node, json!({"kwas.dev/sim-shutdown-duration": "1h"}), "Always"),
    )
    .await
    .unwrap();
    wait_phase(&pods, "slow", "Running").await;
    pods.delete(
        "slow",
        &DeleteParams {
            grace_period_seconds: Some(1),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    wait_gone(&pods, "slow").await;

    // Unbound pods are deleted at once.
    pods.create(&pp, &pod("unbound", None, json!({}), "Always"))
        .await
        .unwrap();
    pods.delete("unbound", &DeleteParams::default()).await.unwrap();
    assert!(gone(&pods, "unbound").await);
    c.shutdown().await;
}

#[tokio::test]
async fn binding_eviction_cordon_and_node_removal() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    pods.create(&PostParams::default(), &pod("p", None, json!({}), "Always"))
        .await
        .unwrap();
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "node-b0-r1-n1"}});
    let req = |body: &Value| {
        http::Request::post("/api/v1/namespaces/default/pods/p/binding")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap())
            .unwrap()
    };
    client.request_text(req(&binding)).await.unwrap();
    let err = status(client.request_text(req(&binding)).await.unwrap_err());
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-b0-r1-n1\""
    );
    let running = wait_phase(&pods, "p", "Running").await;
    let conds: Vec<String> = running
        .status
        .unwrap()
        .conditions
        .unwrap()
        .iter()
        .filter(|c| c.status == "True")
        .map(|c| c.type_.clone())
        .collect();
    for want in [
        "PodScheduled",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodReadyToStartContainers",
    ] {
        assert!(conds.contains(&want.to_string()), "{want} missing from {conds:?}");
    }

    // Node removal fails the pods on it.
    c.remove_node("node-b0-r1-n1").unwrap();
    let failed = wait_phase(&pods, "p", "Failed").await;
    let st = failed.status.unwrap();
    assert_eq!(st.reason.as_deref(), Some("NodeLost"));
    assert!(
        st.conditions
            .unwrap()
            .iter()
            .any(|c| c.type_ == "DisruptionTarget" && c.reason.as_deref() == Some("DeletionByPodGC"))
    );

    // Eviction: marked as a disruption target, then deleted.
    pods.create(
        &PostParams::default(),
        &pod("ev", Some("node-b0-r0-n0"), json!({}), "Always"),
    )
    .await
    .unwrap();
    wait_phase(&pods, "ev", "Running").await;
    pods.evict("ev", &kube::api::EvictParams::default()).await.unwrap();
    wait_gone(&pods, "ev").await;

    // Cordon: unschedulable with the matching taint; uncordon removes both; add a node at run time.
    c.cordon("node-b0-r0-n0").unwrap();
    let n = nodes.get("node-b0-r0-n0").await.unwrap();
    assert_eq!(n.spec.as_ref().unwrap().unschedulable, Some(true));
    assert!(
        n.spec
            .unwrap()
            .taints
            .unwrap()
            .iter()
            .any(|t| t.key == "node.kubernetes.io/unschedulable" && t.effect == "NoSchedule")
    );
    c.uncordon("node-b0-r0-n0").unwrap();
    let n = nodes.get("node-b0-r0-n0").await.unwrap();
    assert!(n.spec.unwrap().taints.is_none());
    // A pod bound to a node that does not exist yet starts when the node is added.
    pods.create(
        &PostParams::default(),
        &pod("early", Some("extra"), json!({}), "Always"),
    )
    .await
    .unwrap();
    // The kubelet handles pod events in order: once a pod created after `early` on a node that exists
    // runs, the kubelet has looked at `early` too (and would have started it before the later pod).
    pods.create(
        &PostParams::default(),
        &pod("after-early", Some("node-b0-r0-n0"), json!({}), "Always"),
    )
    .await
    .unwrap();
    wait_phase(&pods, "after-early", "Running").await;
    assert_eq!(
        pods.get("early").await.unwrap().status.unwrap().phase.as_deref(),
        Some("Pending")
    );
    c.add_node(kwas_devcluster::NodeSpec::new("extra")).unwrap();
    assert_eq!(nodes.list(&ListParams::default()).await.unwrap().items.len(), 4);
    wait_phase(&pods, "early", "Running").await;
    c.shutdown().await;
}

#[tokio::test]
async fn priority_admission_for_pods_and_groups() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let pcs: Api<PriorityClass> = Api::all(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pgs: Api<PodGroup> = Api::default_namespaced(client.clone());
    pcs.create(
        &PostParams::default(),
        &obj(json!({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"})),
    )
    .await
    .unwrap();
    let p = pods
        .create(&PostParams::default(), &{
            let mut p = pod("hi", None, json!({}), "Always");
            p.spec.as_mut().unwrap().priority_class_name = Some("high".into());
            p
        })
        .await
        .unwrap();
    let spec = p.spec.unwrap();
    assert_eq!(
        (spec.priority, spec.preemption_policy.as_deref()),
        (Some(1000), Some("Never"))
    );
    assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));

    let err = status(
        pods.create(&PostParams::default(), &{
            let mut p = pod("nope", None, json!({}), "Always");
            p.spec.as_mut().unwrap().priority_class_name = Some("missing".into());
            p
        })
        .await
        .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            403,
            "pods \"nope\" is forbidden: no PriorityClass with name missing was found"
        )
    );
    let err = status(
        pods.create(&PostParams::default(), &{
            let mut p = pod("wrong", None, json!({}), "Always");
            p.spec.as_mut().unwrap().priority_class_name = Some("high".into());
            p.spec.as_mut().unwrap().priority = Some(5);
            p
        })
        .await
        .unwrap_err(),
    );
    assert!(
        err.message
            .contains("the integer value of priority (5) must not be provided in pod spec"),
        "{}",
        err.message
    );

    let err = status(
        pcs.create(
            &PostParams::default(),
            &obj(json!({"metadata": {"name": "huge"}, "value": 2_000_000_000})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    pcs.create(
        &PostParams::default(),
        &obj(json!({"metadata": {"name": "default-pc"}, "value": 7, "globalDefault": true})),
    )
    .await
    .unwrap();
    let err = status(
        pcs.create(
            &PostParams::default(),
            &obj(json!({"metadata": {"name": "second"}, "value": 8, "globalDefault": true})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    let p = pods
        .create(&PostParams::default(), &pod("plain", None, json!({}), "Always"))
        .await
        .unwrap();
    let spec = p.spec.unwrap();
    assert_eq!(
        (spec.priority_class_name.as_deref(), spec.priority),
        (Some("default-pc"), Some(7))
    );

    let g = pgs
        .create(&PostParams::default(), &obj(json!({"metadata": {"name": "g"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "high"}})))
        .await
        .unwrap();
    let gs = g.spec.clone();
    assert_eq!(
        (gs.priority, gs.preemption_policy.as_deref()),
        (Some(1000), Some("Never"))
    );
    assert_eq!(
        serde_json::to_value(&gs.disruption_mode).unwrap(),
        json!({"single": {}})
    );
    assert_eq!(g.finalizers(), &["scheduling.k8s.io/podgroup-protection".to_string()]);
    c.shutdown().await;
}

#[tokio::test]
async fn scheduling_objects_are_validated_by_workloadbuilder() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let wls: Api<Workload> = Api::default_namespaced(client.clone());
    let pgs: Api<PodGroup> = Api::default_namespaced(client.clone());
    let err = status(
        wls.create(
            &PostParams::default(),
            &obj(json!({"metadata": {"name": "empty"}, "spec": {}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message
            .starts_with("Workload.scheduling.k8s.io \"empty\" is invalid: "),
        "{}",
        err.message
    );
    let causes = err.details.unwrap().causes;
    assert!(
        !causes.is_empty() && causes.iter().all(|c| c.field.starts_with("spec")),
        "{causes:?}"
    );

    let ok = json!({"metadata": {"name": "wl"}, "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]}});
    wls.create(&PostParams::default(), &obj(ok)).await.unwrap();
    let err = status(
        wls.patch(
            "wl",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"podGroupTemplates": [
            {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}},
            {"name": "more", "schedulingPolicy": {"basic": {}}}]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.details
            .unwrap()
            .causes
            .iter()
            .any(|c| c.field.starts_with("spec.podGroupTemplates"))
    );

    pgs.create(
        &PostParams::default(),
        &obj(json!({"metadata": {"name": "pg"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})),
    )
    .await
    .unwrap();
    pgs.patch(
        "pg",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})),
    )
    .await
    .unwrap();
    let err = status(
        pgs.patch(
            "pg",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"schedulingPolicy": {"gang": null, "basic": {}}}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.details
            .unwrap()
            .causes
            .iter()
            .any(|c| c.field.starts_with("spec.schedulingPolicy"))
    );

    // PodGroup protection: a deleted group waits for its non-terminal pods.
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut member = pod(
        "member",
        Some("node-b0-r0-n0"),
        json!({"kwas.dev/sim-run-duration": "300ms"}),
        "Never",
    );
    member.spec.as_mut().unwrap().scheduling_group = Some(obj(json!({"podGroupName": "pg"})));
    pods.create(&PostParams::default(), &member).await.unwrap();
    pgs.delete("pg", &DeleteParams::default()).await.unwrap();
    assert!(pgs.get("pg").await.unwrap().metadata.deletion_timestamp.is_some());
    wait_phase(&pods, "member", "Succeeded").await;
    wait_gone(&pgs, "pg").await;
    c.shutdown().await;
}

#[tokio::test]
async fn strict_field_validation_and_injected_faults() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {}, "bogus": 1});
    let req = |q: &str| {
        http::Request::post(format!("/api/v1/namespaces/default/configmaps?fieldValidation={q}"))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap()
    };
    let err = status(client.request_text(req("Strict")).await.unwrap_err());
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "strict decoding error: unknown field \"bogus\"")
    );
    let created: Value = serde_json::from_str(&client.request_text(req("Ignore")).await.unwrap()).unwrap();
    assert!(created.get("bogus").is_none());

    // The same seed injects the same failures.
    let rules = FaultConfig {
        seed: 3,
        rules: vec![FaultRule {
            resources: vec!["configmaps".into()],
            verbs: vec![Verb::Get],
            error_rate: 0.5,
            error_code: 500,
            ..Default::default()
        }],
    };
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut runs = Vec::new();
    for _ in 0..2 {
        c.faults().set(rules.clone());
        let mut pattern = Vec::new();
        for _ in 0..20 {
            pattern.push(match cms.get("s").await {
                Ok(_) => false,
                Err(kube::Error::Api(s)) if s.code == 500 && s.message.contains("injected fault") => true,
                Err(e) => panic!("{e}"),
            });
        }
        runs.push(pattern);
    }
    assert_eq!(runs[0], runs[1]);
    assert!(
        runs[0].iter().any(|x| *x) && runs[0].iter().any(|x| !*x),
        "{:?}",
        runs[0]
    );
    c.faults().clear();
    let latency = FaultConfig {
        seed: 1,
        rules: vec![FaultRule {
            latency: Duration::from_millis(150),
            ..Default::default()
        }],
    };
    c.faults().set(latency);
    let t = std::time::Instant::now();
    cms.get("s").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(150));
    c.shutdown().await;
}

#[tokio::test]
async fn events_expire_and_crd_deletion_removes_its_objects() {
    let c = crate::common::cluster_with(|cfg| cfg.server.event_ttl = Duration::from_secs(1)).await;
    let client = c.client();
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(client.clone());
    events
        .create(&PostParams::default(), &obj(json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "x", "namespace": "default"},
            "reason": "R", "message": "m", "type": "Normal", "lastTimestamp": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()})))
        .await
        .unwrap();
    assert!(!gone(&events, "e1").await);
    wait_gone(&events, "e1").await;

    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    crds.create(
        &PostParams::default(),
        &obj(crd_object("x.kwas.dev", "Thing", "things", true, schema)),
    )
    .await
    .unwrap();
    let ar = kube::core::ApiResource {
        group: "x.kwas.dev".into(),
        version: "v1".into(),
        api_version: "x.kwas.dev/v1".into(),
        kind: "Thing".into(),
        plural: "things".into(),
    };
    let things: Api<kube::api::DynamicObject> = Api::default_namespaced_with(client.clone(), &ar);
    things
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "x.kwas.dev/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"a": 1}})),
        )
        .await
        .unwrap();
    crds.delete("things.x.kwas.dev", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&crds, "things.x.kwas.dev").await;
    let err = status(things.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(err.code, 404);
    c.shutdown().await;
}

#[tokio::test]
async fn delete_collection_with_a_selector() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    for (n, l) in [("a", "x"), ("b", "x"), ("c", "y")] {
        let mut o = cm(n, json!([]));
        o.metadata.labels = Some(BTreeMap::from([("group".into(), l.into())]));
        cms.create(&PostParams::default(), &o).await.unwrap();
    }
    cms.delete_collection(&DeleteParams::default(), &ListParams::default().labels("group=x"))
        .await
        .unwrap();
    let left: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| o.name_any())
        .collect();
    assert_eq!(left, vec!["c"]);
    c.shutdown().await;
}

#[tokio::test]
async fn clusters_start_and_stop_quickly_even_when_stopped_at_once() {
    let t = std::time::Instant::now();
    for _ in 0..10 {
        let c = kwas_devcluster::DevCluster::start(kwas_devcluster::DevClusterConfig {
            topology: kwas_devcluster::Topology::grid(2, 2, 4, Default::default()),
            ..Default::default()
        })
        .await
        .unwrap();
        assert_eq!(c.node_names().len(), 16);
        // Shut down before the background tasks ever ran: they must still see the signal.
        c.shutdown().await;
    }
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "10 start/stop cycles took {:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn deleting_a_large_namespace_finishes_promptly() {
    let c = crate::common::cluster().await;
    let nss: Api<Namespace> = Api::all(c.client());
    nss.create(&PostParams::default(), &obj(json!({"metadata": {"name": "big"}})))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(c.client(), "big");
    futures::stream::iter(0..3000)
        .map(|i| {
            let cms = cms.clone();
            async move {
                cms.create(
                    &PostParams::default(),
                    &obj(json!({"metadata": {"name": format!("cm-{i}")}})),
                )
                .await
                .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await
        .unwrap();
    let started = std::time::Instant::now();
    nss.delete("big", &DeleteParams::default()).await.unwrap();
    wait_gone(&nss, "big").await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    c.shutdown().await;
}

/// A CustomResourceDefinition with one served storage version `v1` and a status subresource.
fn crd_object(group: &str, kind: &str, plural: &str, namespaced: bool, schema: Value) -> Value {
    let mut v = serde_json::Map::new();
    v.insert("name".into(), json!("v1"));
    v.insert("served".into(), json!(true));
    v.insert("storage".into(), json!(true));
    v.insert("schema".into(), json!({"openAPIV3Schema": schema}));
    v.insert("subresources".into(), json!({"status": {}}));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "versions": [Value::Object(v)],
        }
    })
}
