//! `kwas doctor` against real API servers: `kwas dev` (everything kwas needs, its own JobSet CRD with the
//! conversion webhook) and a bare devcluster (no JobSet CRD); the table, `-o json`, the exit status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use kwas_devcluster::{DevCluster, DevClusterConfig};
use serde_json::Value;

use crate::common::start;

fn doctor(kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kwas"))
        .args(["doctor", "--kubeconfig"])
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn kwas_dev_serves_everything_kwas_needs() {
    let dev = start(&[]);
    let (ok, table, stderr) = doctor(&dev.kubeconfig, &[]);
    assert!(ok, "{stderr}");
    for line in [
        "scheduling.k8s.io Workload",
        "scheduling.k8s.io PodGroup",
        "scheduling.k8s.io CompositePodGroup",
        "batch/v1 Job spec.scheduling",
        "jobset.x-k8s.io JobSet",
        "resource.k8s.io (DRA)",
    ] {
        let row = table
            .lines()
            .find(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("{line}: {table}"));
        assert!(row.contains(" ok "), "{row}");
    }
    assert!(table.contains("kwas' JobSet CRD (standalone install)"), "{table}");
    assert!(
        table.ends_with("kwas' components can run on this cluster.\n"),
        "{table}"
    );

    let (ok, json, _) = doctor(&dev.kubeconfig, &["-o", "json"]);
    assert!(ok);
    let report: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        report["facts"]["scheduling"]["workloads"],
        serde_json::json!(["v1alpha3"])
    );
    assert_eq!(report["facts"]["job_scheduling"], true);
    assert_eq!(
        report["facts"]["jobset_versions"],
        serde_json::json!(["v1", "v1alpha2"])
    );
    assert_eq!(
        report["facts"]["jobset_conversion"],
        "kwas-system/kwas-controllers-webhook"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_the_jobset_crd_runs_kwas_without_jobsets() {
    let cluster = DevCluster::start(DevClusterConfig::default()).await.unwrap();
    let path = cluster.kubeconfig_path().to_path_buf();
    let (ok, table, stderr) = tokio::task::spawn_blocking(move || doctor(&path, &[])).await.unwrap();
    assert!(ok, "{stderr}");
    let row = table.lines().find(|l| l.starts_with("jobset.x-k8s.io JobSet")).unwrap();
    assert!(
        row.contains("not served") && row.contains("degraded") && row.contains("no JobSet CRD"),
        "{row}"
    );
    cluster.shutdown().await;
}

/// devcluster with kube-apiserver's `--runtime-config` turning off CompositePodGroups, then the whole
/// alpha scheduling API: degraded (no multi-level gangs), then blocked (exit 1, the fix named).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_shapes_without_composite_groups_or_the_alpha_api() {
    for (switch, blocked) in [
        ("scheduling.k8s.io/v1alpha3/compositepodgroups", false),
        ("scheduling.k8s.io/v1alpha3", true),
    ] {
        let cluster = DevCluster::start(DevClusterConfig {
            runtime_config: vec![(switch.to_string(), false)],
            ..DevClusterConfig::default()
        })
        .await
        .unwrap();
        let path = cluster.kubeconfig_path().to_path_buf();
        let (ok, table, stderr) = tokio::task::spawn_blocking(move || doctor(&path, &[])).await.unwrap();
        assert_eq!(ok, !blocked, "{switch}: {table}\n{stderr}");
        let row = |api: &str| table.lines().find(|l| l.starts_with(api)).unwrap().to_string();
        let cpg = row("scheduling.k8s.io CompositePodGroup");
        assert!(
            cpg.contains("not served") && cpg.contains("degraded") && cpg.contains("no multi-level gangs"),
            "{cpg}"
        );
        let workload = row("scheduling.k8s.io Workload");
        if blocked {
            assert!(
                workload.contains("blocked") && workload.contains("enable scheduling.k8s.io/v1alpha3"),
                "{workload}"
            );
            assert!(
                stderr.contains("kwas' components cannot run on this cluster as it is"),
                "{stderr}"
            );
        } else {
            assert!(workload.contains(" ok "), "{workload}");
        }
        cluster.shutdown().await;
    }
}
