//! Leader election against devcluster: one leader at a time, a leader that cannot renew steps down
//! before its Lease could expire for the others, and a released Lease moves at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kwas_devcluster::{DevCluster, FaultConfig, FaultRule, Verb};
use kwas_shell::{Leadership, LeaseConfig};

fn config(identity: &str) -> LeaseConfig {
    LeaseConfig {
        lease_duration: Duration::from_millis(3000),
        renew_deadline: Duration::from_millis(2000),
        retry_period: Duration::from_millis(200),
        ..LeaseConfig::new("default", "test-lease", identity)
    }
}

/// Waits for a leadership state (the shell's `is_leader` is synchronous).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    kwas_test_tools::wait::eventually_within(Duration::from_secs(30), what, || std::future::ready(f())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_a_partitioned_leader_steps_down_in_time() {
    let c = DevCluster::start(kwas_devcluster::testing::fast_config(
        kwas_devcluster::testing::small_topology(),
    ))
    .await
    .unwrap();
    let a = Leadership::start(c.client(), config("a"));
    until("a leads", || a.is_leader()).await;
    let b = Leadership::start(c.client(), config("b"));
    // b waits while a renews: watched until a has renewed the Lease past the time it would have expired
    // without renewals (read from the Lease itself, not from a clock of the test's).
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> = kube::Api::namespaced(c.client(), "default");
    let renewed_ms = || async {
        leases
            .get_opt("test-lease")
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec?.renew_time)
            .map(|t| t.0.as_millisecond())
    };
    let first = renewed_ms().await.expect("a holds the Lease");
    kwas_test_tools::wait::eventually_within(
        Duration::from_secs(30),
        "a to renew past one lease duration",
        || async {
            assert!(
                a.is_leader() && !b.is_leader(),
                "leadership moved while the leader renewed"
            );
            match renewed_ms().await {
                Some(t) if t - first > 3000 => Ok(()),
                other => Err(format!("renewTime {other:?} ms, first {first} ms")),
            }
        },
    )
    .await;

    // Every Lease write now fails: a cannot renew. It must stop leading within the renew deadline of its
    // last renewal, before the Lease (3 s) could expire for b.
    let cut = Instant::now();
    c.faults().set(FaultConfig {
        seed: 1,
        rules: vec![FaultRule {
            resources: vec!["leases".into()],
            verbs: vec![Verb::Patch, Verb::Get],
            error_rate: 1.0,
            error_code: 500,
            ..Default::default()
        }],
    });
    until("a steps down", || !a.is_leader()).await;
    let stepped_down = cut.elapsed();
    assert!(stepped_down < Duration::from_millis(2500), "took {stepped_down:?}");
    assert!(!b.is_leader());
    c.faults().clear();
    until("someone leads again", || a.is_leader() || b.is_leader()).await;
    assert!(!(a.is_leader() && b.is_leader()), "two leaders");

    // The leader releases on shutdown: the other takes over without waiting for expiry.
    let (leader, standby) = if a.is_leader() { (a, b) } else { (b, a) };
    let released = Instant::now();
    leader.release(Duration::from_secs(5)).await;
    until("the standby leads", || standby.is_leader()).await;
    assert!(
        released.elapsed() < Duration::from_millis(2500),
        "{:?}",
        released.elapsed()
    );
    standby.release(Duration::from_secs(5)).await;
    c.shutdown().await;
}
