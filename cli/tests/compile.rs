//! `kwas compile` on the bundled examples and on invalid input, through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::process::{Command, Stdio};

fn kwas(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwas"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn compiles_the_bundled_examples() {
    for (file, kinds) in [
        ("examples/jobs/gang-job.yaml", vec!["Workload", "PodGroup"]),
        ("examples/jobs/basic-job.yaml", vec!["Workload", "PodGroup"]),
        (
            "examples/jobsets/option-a.yaml",
            vec!["Workload", "CompositePodGroup", "PodGroup", "PodGroup", "PodGroup"],
        ),
        (
            "examples/jobsets/option-b.yaml",
            vec!["Workload", "CompositePodGroup", "PodGroup", "PodGroup", "PodGroup"],
        ),
    ] {
        let (ok, stdout, stderr) = kwas(&["compile", file], None);
        assert!(ok, "{file}: {stderr}");
        let docs: Vec<serde_json::Value> = stdout
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_saphyr::from_str(d).unwrap())
            .collect();
        let got: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(got, kinds, "{file}");
        assert!(stderr.contains("no metadata.uid"), "{stderr}");
    }
}

#[test]
fn option_b_delegated_groups_are_owned_by_the_child_jobs() {
    let (ok, stdout, _) = kwas(&["compile", "examples/jobsets/option-b.yaml", "-o", "json"], None);
    assert!(ok);
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let group = &list["items"][2];
    assert_eq!(group["kind"], "PodGroup");
    assert_eq!(group["metadata"]["ownerReferences"][0]["kind"], "Job");
    assert_eq!(
        group["spec"]["parentCompositePodGroupName"],
        list["items"][1]["metadata"]["name"]
    );
}

#[test]
fn invalid_manifests_fail_like_kubectl() {
    let job = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: bad, namespace: ml, uid: u1}
spec:
  parallelism: 2
  scheduling:
    disruptionMode: {all: {}}
  template: {spec: {containers: [{name: c, image: i}]}}
"#;
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(job));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "The Job \"bad\" is invalid: spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the Basic scheduling policy"
    );
    let (ok, _, stderr) = kwas(
        &["compile", "-"],
        Some("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"),
    );
    assert!(!ok);
    assert!(stderr.contains("not v1 Pod"), "{stderr}");
}
