//! The gang monitor itself, against the real API: a gang bound by hand, one pod at a time while the
//! scheduler is stopped, is reported.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::ResourceExt;
use kube::api::{ObjectMeta, PostParams};
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::grid;

async fn bind(e2e: &E2e, pod: &Pod, node: &str) {
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(pod.name_any()),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.into()),
            ..Default::default()
        },
    };
    e2e.api::<Pod>()
        .create_subresource::<Binding, Status>("binding", &pod.name_any(), &PostParams::default(), &binding)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_monitor_reports_a_gang_bound_one_pod_at_a_time() {
    let mut e2e = E2e::start(grid(1, 1, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start_with_burst(&client, Duration::from_millis(300))
        .await
        .unwrap();
    e2e.stack_mut().stop_scheduler().await;
    e2e.create(&JobBuilder::new("gang").parallelism(3).gang().build().unwrap())
        .await
        .unwrap();
    let pods = eventually("three pods", || async {
        let pods = pods_of_job(&client, "gang").await?;
        check(pods.len() == 3, || format!("{} pods", pods.len())).map(|()| pods)
    })
    .await
    .unwrap();

    let bound_at = std::time::Instant::now();
    bind(&e2e, &pods[0], "node-b0-r0-n0").await;
    eventually("the partial gang seen", || async {
        let partial = monitor.partial_now();
        check(
            partial.len() == 1 && partial[0].bound == 1 && partial[0].minimum == 3,
            || format!("{partial:?}"),
        )
    })
    .await
    .unwrap();
    // Reported once the gang has sat partial for longer than the burst allowance, not before.
    let err = eventually("the violation reported", || async {
        match monitor.check_no_partial_binding() {
            Ok(s) => Err(not_yet(format!("{s:?}"))),
            Err(e) => Ok(e.to_string()),
        }
    })
    .await
    .unwrap();
    assert!(
        bound_at.elapsed() >= Duration::from_millis(300),
        "reported early: {err}"
    );
    assert!(err.contains("sat partially bound (up to 1 of 3)"), "{err}");

    // Completing it later does not undo the violation; the end state is whole again.
    for p in &pods[1..] {
        bind(&e2e, p, "node-b0-r0-n1").await;
    }
    eventually("the gang whole", || async {
        let partial = monitor.partial_now();
        check(partial.is_empty(), || format!("{partial:?}"))
    })
    .await
    .unwrap();
    assert!(monitor.check_settled().await.is_err());
    e2e.shutdown().await;
}
