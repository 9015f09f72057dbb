//! `kwas doctor` against real API servers: `kwas dev` (everything kwas needs, its own JobSet CRD with the
//! conversion webhook) and a bare devcluster (no JobSet CRD); the table, `-o json`, the exit status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use kwas_devcluster::{DevCluster, DevClusterConfig, Profile};
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
        serde_json::json!(["v1beta1", "v1alpha3"])
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

/// devcluster in each cluster shape (its profiles, and `--runtime-config` turning off both versions of the
/// scheduling API): no CompositePodGroups is degraded (flat gangs), the beta alone is served to kwas as it
/// is, and no Workload API at all is blocked (exit 1, the fix named).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_shapes_without_composite_groups_or_the_alpha_api() {
    let none = vec![
        ("scheduling.k8s.io/v1alpha3".to_string(), false),
        ("scheduling.k8s.io/v1beta1".to_string(), false),
    ];
    for (name, config, workload_version) in [
        (
            "no-composite",
            Profile::NoComposite.apply(DevClusterConfig::default()),
            Some("v1beta1"),
        ),
        (
            "stock-1.37",
            Profile::Stock137.apply(DevClusterConfig::default()),
            Some("v1beta1"),
        ),
        (
            "no scheduling API",
            DevClusterConfig {
                runtime_config: none.clone(),
                ..DevClusterConfig::default()
            },
            None,
        ),
    ] {
        let blocked = workload_version.is_none();
        let cluster = DevCluster::start(config).await.unwrap();
        let path = cluster.kubeconfig_path().to_path_buf();
        let (ok, table, stderr) = tokio::task::spawn_blocking(move || doctor(&path, &[])).await.unwrap();
        assert_eq!(ok, !blocked, "{name}: {table}\n{stderr}");
        let row = |api: &str| table.lines().find(|l| l.starts_with(api)).unwrap().to_string();
        let cpg = row("scheduling.k8s.io CompositePodGroup");
        assert!(
            cpg.contains("not served") && cpg.contains("degraded") && cpg.contains("JobSets compile flat"),
            "{name}: {cpg}"
        );
        let workload = row("scheduling.k8s.io Workload");
        match workload_version {
            Some(v) => assert!(
                workload.contains(" ok ") && workload.ends_with(&format!("reads Workloads as {v}")),
                "{name}: {workload}"
            ),
            None => {
                assert!(
                    workload.contains("blocked") && workload.contains("no Workload API"),
                    "{name}: {workload}"
                );
                assert!(
                    stderr.contains("kwas' components cannot run on this cluster as it is"),
                    "{stderr}"
                );
            }
        }
        if name == "stock-1.37" {
            let job = row("batch/v1 Job spec.scheduling");
            assert!(job.contains("degraded") && job.contains("WorkloadWithJob"), "{job}");
        }
        cluster.shutdown().await;
    }
}
