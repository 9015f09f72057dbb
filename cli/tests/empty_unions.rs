//! Empty union blocks, sent the way users send them (`kubectl apply` on `kwas dev`): rejected as
//! kube-apiserver rejects them, with the field and "must specify one of".
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{kubectl_stdin, start};

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
        r#"apiVersion: kwas.dev/v1alpha1
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
            r#"spec.scheduling.schedulingPolicy: Invalid value: "object": must specify one of: `basic`, `gang`"#,
        ),
        (
            jobset("{disruptionMode: {}}"),
            r#"spec.scheduling.disruptionMode: Invalid value: "object": must specify one of: `single`, `all`"#,
        ),
        (
            jobset("{replicatedJobPolicies: [{targetReplicatedJob: workers, schedulingPolicy: {}}]}"),
            r#"spec.scheduling.replicatedJobPolicies[0].schedulingPolicy: Invalid value: "object": must specify one of: `basic`, `gang`"#,
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
        let (ok, _, _) = common::kubectl(&dev, &["get", kind, "empty"]);
        assert!(!ok, "a {kind} was stored");
    }
}
