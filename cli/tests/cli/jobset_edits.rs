//! Edits of a running JobSet, the way users make them (`kubectl patch` on `kwas dev`): the CRD's
//! transition rules reject what the Workload cannot take, with the field and the rule's message, and a gang's
//! `minCount` edit reaches the Workload.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{apply, eventually, jsonpath, kubectl, start};

fn manifest() -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/jobsets/option-a.yaml"))
        .unwrap()
        .replace("gang: {}", "gang: {minCount: 4}")
        .replace("sim-run-duration: 30s", "sim-run-duration: 1h")
}

fn patch(dev: &crate::common::Dev, op: &str) -> (bool, String) {
    let (ok, _, stderr) = kubectl(dev, &["patch", "jobset", "pretrain-a", "--type=json", "-p", op]);
    (ok, stderr)
}

#[test]
fn edits_the_workload_cannot_take_are_rejected_and_a_min_count_edit_is_applied() {
    let dev = start(&[]);
    apply(&dev, &manifest());
    let mut workload = String::new();
    eventually("the JobSet's Workload", || {
        workload = jsonpath(&dev, &["jobset", "pretrain-a"], "{.status.workloadName}");
        !workload.is_empty() && kubectl(&dev, &["get", "workload.scheduling.k8s.io", &workload]).0
    });

    let (ok, err) = patch(
        &dev,
        r#"[{"op":"replace","path":"/spec/replicatedJobs/1/replicas","value":3}]"#,
    );
    assert!(!ok);
    assert!(
        err.contains(r#"The JobSet "pretrain-a" is invalid: spec.replicatedJobs: Invalid value: the replicated jobs (their names, order and replicas) are immutable"#),
        "{err}"
    );
    let (ok, err) = patch(
        &dev,
        r#"[{"op":"replace","path":"/spec/replicatedJobs/1/template/spec/template/spec/containers/0/image","value":"other"}]"#,
    );
    assert!(!ok);
    assert!(
        err.contains(
            r#"spec.replicatedJobs: Invalid value: the Job templates are immutable unless the JobSet is suspended"#
        ),
        "{err}"
    );
    let (ok, err) = patch(
        &dev,
        r#"[{"op":"remove","path":"/spec/replicatedJobs/1/template/spec/scheduling/schedulingConstraints"}]"#,
    );
    assert!(!ok);
    assert!(
        err.contains("spec.scheduling is immutable, except the gang's minCount"),
        "{err}"
    );
    let (ok, err) = patch(&dev, r#"[{"op":"remove","path":"/spec/scheduling"}]"#);
    assert!(!ok);
    assert!(err.contains("spec.scheduling: Invalid value"), "{err}");
    // Nothing of the rejected edits was stored.
    assert_eq!(
        jsonpath(&dev, &["jobset", "pretrain-a"], "{.spec.replicatedJobs[1].replicas}"),
        "2"
    );

    let (ok, err) = patch(
        &dev,
        r#"[{"op":"replace","path":"/spec/replicatedJobs/1/template/spec/scheduling/schedulingPolicy/gang/minCount","value":3}]"#,
    );
    assert!(ok, "{err}");
    eventually("the Workload's workers template to take minCount 3", || {
        jsonpath(
            &dev,
            &["workload.scheduling.k8s.io", &workload],
            "{.spec.compositePodGroupTemplates[0].podGroupTemplates[?(@.name==\"workers\")].schedulingPolicy.gang.minCount}",
        ) == "3"
    });
    eventually("both worker PodGroups to take minCount 3", || {
        let counts = jsonpath(&dev, &["podgroups"], "{.items[*].spec.schedulingPolicy.gang.minCount}");
        counts.split_whitespace().filter(|c| *c == "3").count() == 2
    });
}
