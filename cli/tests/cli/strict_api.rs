//! What kube-apiserver refuses, sent the way users send it (`kubectl apply` on `kwas dev`): empty union
//! blocks (the field and "must specify one of"), and unknown fields under kubectl's default strict field
//! validation, with a hint for KEP-6089's draft names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{kubectl_stdin, start};

fn job(scheduling: &str) -> String {
    format!(
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: empty
spec:
  parallelism: 2
  completions: 2
  scheduling: {scheduling}
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox
"#
    )
}

fn workload(template: &str) -> String {
    format!(
        r#"apiVersion: scheduling.k8s.io/v1alpha3
kind: Workload
metadata:
  name: empty
spec:
  podGroupTemplates:
    - {template}
"#
    )
}

fn jobset(scheduling: &str) -> String {
    format!(
        r#"apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: empty
spec:
  scheduling: {scheduling}
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: main
                  image: busybox
"#
    )
}

#[test]
fn empty_unions_are_rejected_with_the_field() {
    let dev = start(&[]);
    let cases = [
        (
            job("{schedulingPolicy: {}}"),
            r#"spec.scheduling.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`"#,
        ),
        (
            job("{schedulingPolicy: {gang: {}}, disruptionMode: {}}"),
            r#"spec.scheduling.disruptionMode: Invalid value: "": must specify one of: `single`, `all`"#,
        ),
        (
            workload("{name: w, schedulingPolicy: {}}"),
            r#"spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`"#,
        ),
        (
            workload("{name: w, schedulingPolicy: {basic: {}}, disruptionMode: {}}"),
            r#"spec.podGroupTemplates[0].disruptionMode: Invalid value: "": must specify one of: `single`, `all`"#,
        ),
        (
            jobset("{schedulingPolicy: {}}"),
            r#"spec.scheduling.schedulingPolicy: Invalid value: must specify one of: `basic`, `gang`"#,
        ),
        (
            jobset("{disruptionMode: {}}"),
            r#"spec.scheduling.disruptionMode: Invalid value: must specify one of: `single`, `all`"#,
        ),
        (
            jobset("{replicatedJobPolicies: [{targetReplicatedJob: workers, schedulingPolicy: {}}]}"),
            r#"spec.scheduling.replicatedJobPolicies[0].schedulingPolicy: Invalid value: must specify one of: `basic`, `gang`"#,
        ),
    ];
    for (manifest, expected) in cases {
        let (ok, _, stderr) = kubectl_stdin(&dev, &["apply", "-f", "-"], Some(&manifest));
        assert!(!ok, "accepted:\n{manifest}");
        assert!(
            stderr.contains(expected),
            "{manifest}\nexpected {expected}\ngot {stderr}"
        );
    }
    // Nothing was stored.
    for kind in ["job", "workload.scheduling.k8s.io", "jobset"] {
        let (ok, _, _) = crate::common::kubectl(&dev, &["get", kind, "empty"]);
        assert!(!ok, "a {kind} was stored");
    }
}

/// KEP-6089's Example 1 as its text shows it, in the draft's names.
const KEP_EXAMPLE_1_DRAFT: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: draft
spec:
  parallelism: 4
  completions: 4
  scheduling: # New API field - scheduling intent
    policy:
      gang: {} # MinCount is omitted: Job defaults MinCount = parallelism (4)
    constraints:
      topology:
        - level: "topology.kubernetes.io/zone"
    disruption:
      all: {} # DisruptionMode resolves to All (entire group must be disrupted together)
  template:
    spec:
      containers:
        - name: train-node
          image: training-image:v1
"#;

#[test]
fn draft_field_names_are_unknown_fields_with_a_hint() {
    let dev = start(&[]);
    let (ok, _, stderr) = kubectl_stdin(&dev, &["apply", "-f", "-"], Some(KEP_EXAMPLE_1_DRAFT));
    assert!(!ok);
    for (draft, name) in [
        ("policy", "schedulingPolicy"),
        ("constraints", "schedulingConstraints"),
        ("disruption", "disruptionMode"),
    ] {
        let expected = format!(r#"unknown field "spec.scheduling.{draft}" (did you mean "spec.scheduling.{name}"?)"#);
        assert!(stderr.contains(&expected), "expected {expected}\ngot {stderr}");
    }
    assert!(stderr.contains("strict decoding error"), "{stderr}");
    // A custom resource is pruned the same way and reports the same.
    let (ok, _, stderr) = kubectl_stdin(
        &dev,
        &["apply", "-f", "-"],
        Some(&jobset("{schedulingConstraints: {topology: [{level: kwas.dev/rack}]}}")),
    );
    assert!(!ok);
    assert!(
        stderr.contains(
            r#"unknown field "spec.scheduling.schedulingConstraints.topology[0].level" (did you mean "spec.scheduling.schedulingConstraints.topology[0].key"?)"#
        ),
        "{stderr}"
    );
    // With validation off (`--validate=false`: fieldValidation=Ignore) the draft Job is stored without
    // them (given the restart policy a Job needs, which the KEP's snippet leaves out).
    let runnable = KEP_EXAMPLE_1_DRAFT.replace("      containers:", "      restartPolicy: Never\n      containers:");
    let (ok, _, stderr) = kubectl_stdin(&dev, &["apply", "--validate=false", "-f", "-"], Some(&runnable));
    assert!(ok, "{stderr}");
    assert_eq!(
        crate::common::jsonpath(&dev, &["job", "draft"], "{.spec.scheduling}"),
        "{}"
    );
    // kubectl's warn mode shows the hint as a warning.
    let (ok, _, stderr) = kubectl_stdin(
        &dev,
        &["apply", "--validate=warn", "-f", "-"],
        Some(&runnable.replace("name: draft", "name: draft-warned")),
    );
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(r#"unknown field "spec.scheduling.policy" (did you mean "spec.scheduling.schedulingPolicy"?)"#),
        "{stderr}"
    );
}
