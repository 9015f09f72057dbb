//! JobSets as the JobSet project's users meet them, with kubectl on `kwas dev`: the project's examples
//! applied verbatim (`cli/tests/fixtures/jobset-project/`), DNS hostnames with the headless Service's
//! EndpointSlices, a failure rule that fails fast on one reason and restarts on another, TTL deletion and
//! `managedBy` skipping.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kwas_test_tools::wait::blocking::eventually_within;
use serde_json::Value;

use crate::common::{Dev, apply, get_json, items, kubectl, ok, repo, start};

const PATIENCE: Duration = Duration::from_secs(120);

fn example(name: &str) -> String {
    repo()
        .join("cli/tests/fixtures/jobset-project")
        .join(format!("{name}.yaml"))
        .to_string_lossy()
        .into_owned()
}

fn condition<'a>(js: &'a Value, type_: &str) -> Option<&'a Value> {
    js["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == "True")
}

fn wait_jobset(dev: &Dev, name: &str, type_: &str) -> Value {
    eventually_within(PATIENCE, format!("JobSet {name} {type_}"), || {
        let js = get_json(dev, &["jobset", name]);
        condition(&js, type_).is_some().then_some(js)
    })
}

fn labelled(dev: &Dev, kind: &str, jobset: &str) -> Vec<Value> {
    items(&get_json(
        dev,
        &[kind, "-l", &format!("jobset.sigs.k8s.io/jobset-name={jobset}")],
    ))
}

fn label<'a>(o: &'a Value, key: &str) -> &'a str {
    o["metadata"]["labels"][key].as_str().unwrap_or_default()
}

/// Each example runs to the end the JobSet project documents for it (the simulated containers all exit
/// 0, so the failure-policy example completes too), with the project's labels, conditions and status.
#[test]
fn the_jobset_projects_examples_apply_verbatim_and_run() {
    let dev = start(&["--job-pod-duration", "300ms"]);
    let examples = [
        ("simple-paralleljobs", "paralleljobs"),
        ("simple-success-policy", "success-policy"),
        ("startup-policy-startup-driver-ready", "startup-driver-ready"),
        ("depends-on-depends-on", "depends-on"),
        ("failure-policy-failjobset-action", "failjobset-action-example"),
        ("simple-ttl-after-finished", "jobset-with-ttl"),
        ("simple-coordinator", "coordinator-example"),
        ("simple-jobset-with-network", "network-jobset"),
        ("simple-group", "group-example"),
    ];
    for (file, _) in examples {
        ok(&dev, &["apply", "-f", &example(file)]);
    }
    for (_, name) in examples {
        let js = wait_jobset(&dev, name, "Completed");
        assert_eq!(js["status"]["terminalState"], "Completed", "{name}");
        let statuses = js["status"]["replicatedJobsStatus"].as_array().unwrap();
        assert_eq!(
            statuses.len(),
            js["spec"]["replicatedJobs"].as_array().unwrap().len(),
            "{name}"
        );
    }
    let waited = ok(
        &dev,
        &[
            "wait",
            "--for=condition=StartupPolicyCompleted",
            "jobset/startup-driver-ready",
            "--timeout=5s",
        ],
    );
    assert!(waited.contains("condition met"), "{waited}");

    // dependsOn: the launcher's Job was created once the initializer's completed, the worker's once the
    // launcher's was ready (times to the second).
    let jobs = labelled(&dev, "jobs", "depends-on");
    let job = |rjob: &str| {
        jobs.iter()
            .find(|j| label(j, "jobset.sigs.k8s.io/replicatedjob-name") == rjob)
            .unwrap()
    };
    assert!(
        job("launcher")["metadata"]["creationTimestamp"].as_str()
            >= job("initializer")["status"]["completionTime"].as_str()
    );
    assert!(
        job("worker")["metadata"]["creationTimestamp"].as_str()
            >= job("launcher")["metadata"]["creationTimestamp"].as_str()
    );

    // The coordinator's endpoint on every pod, the group labels, the network's subdomain.
    for pod in labelled(&dev, "pods", "coordinator-example") {
        assert_eq!(
            label(&pod, "jobset.sigs.k8s.io/coordinator"),
            "coordinator-example-driver-0-0.coordinator-example"
        );
        assert_eq!(
            pod["metadata"]["annotations"]["jobset.sigs.k8s.io/coordinator"],
            "coordinator-example-driver-0-0.coordinator-example"
        );
    }
    for pod in labelled(&dev, "pods", "group-example") {
        let (group, global) = match label(&pod, "jobset.sigs.k8s.io/replicatedjob-name") {
            "rj-1" => ("default", "0"),
            _ => ("group-b", "1"),
        };
        assert_eq!(label(&pod, "jobset.sigs.k8s.io/group-name"), group);
        assert_eq!(label(&pod, "jobset.sigs.k8s.io/group-replicas"), "1");
        assert_eq!(label(&pod, "jobset.sigs.k8s.io/job-group-index"), "0");
        assert_eq!(label(&pod, "jobset.sigs.k8s.io/global-replicas"), "2");
        assert_eq!(label(&pod, "jobset.sigs.k8s.io/job-global-index"), global);
    }
    let svc = get_json(&dev, &["service", "example"]);
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(
        svc["spec"]["selector"]["jobset.sigs.k8s.io/jobset-name"],
        "network-jobset"
    );
    for pod in labelled(&dev, "pods", "network-jobset") {
        assert_eq!(pod["spec"]["subdomain"], "example");
    }
    // The success policy removed the leader still running when the workers completed (or it completed).
    let leader_gone_or_done = labelled(&dev, "jobs", "success-policy")
        .iter()
        .filter(|j| label(j, "jobset.sigs.k8s.io/replicatedjob-name") == "leader")
        .all(|j| j["metadata"]["deletionTimestamp"].is_string() || j["status"]["succeeded"] == 1);
    assert!(leader_gone_or_done);
}

/// `<jobset>-<rjob>-<jobIdx>-<podIdx>.<subdomain>`: each pod's hostname and subdomain, and the headless
/// Service's EndpointSlices listing every pod under its hostname, before the pods are ready
/// (`publishNotReadyAddresses`).
#[test]
fn dns_hostnames_and_the_headless_services_endpoint_slices() {
    let dev = start(&[]);
    apply(
        &dev,
        r#"apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: rdzv}
spec:
  network: {subdomain: trainers}
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          metadata: {annotations: {kwas.dev/sim-run-duration: 1h}}
          spec: {containers: [{name: c, image: busybox}]}
"#,
    );
    let want = [
        "rdzv-workers-0-0",
        "rdzv-workers-0-1",
        "rdzv-workers-1-0",
        "rdzv-workers-1-1",
    ];
    let hostnames = eventually_within(PATIENCE, "the EndpointSlice of every pod", || {
        let slices = items(&get_json(
            &dev,
            &["endpointslices", "-l", "kubernetes.io/service-name=trainers"],
        ));
        let mut hostnames: Vec<String> = slices
            .iter()
            .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| e["hostname"].as_str().map(str::to_string))
            .collect();
        hostnames.sort();
        (hostnames == want).then_some(hostnames)
    });
    assert_eq!(hostnames, want);
    for pod in labelled(&dev, "pods", "rdzv") {
        let spec = &pod["spec"];
        assert_eq!(spec["subdomain"], "trainers");
        assert!(want.contains(&spec["hostname"].as_str().unwrap()), "{spec}");
    }
    ok(&dev, &["delete", "jobset", "rdzv", "--wait=true", "--timeout=60s"]);
}

/// A rule fails the JobSet at once when a Job misses its deadline; a Job failing otherwise restarts the
/// JobSet until `maxRestarts`. The outcome is read the way users read it: conditions, status, events.
#[test]
fn a_failure_rule_fails_fast_on_one_reason_and_restarts_on_another() {
    let dev = start(&[]);
    let jobset = |name: &str, template_spec: &str| {
        format!(
            r#"apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {name}}}
spec:
  failurePolicy:
    maxRestarts: 2
    rules:
    - {{name: deadline, action: FailJobSet, onJobFailureReasons: [DeadlineExceeded]}}
  replicatedJobs:
  - name: trainer
    template:
      spec:
        backoffLimit: 0
{template_spec}
"#
        )
    };
    apply(
        &dev,
        &jobset(
            "deadline",
            r#"        activeDeadlineSeconds: 1
        template:
          metadata: {annotations: {kwas.dev/sim-run-duration: 1h}}
          spec: {containers: [{name: c, image: busybox}]}"#,
        ),
    );
    apply(
        &dev,
        &jobset(
            "crash",
            r#"        template:
          metadata: {annotations: {kwas.dev/sim-run-duration: 100ms, kwas.dev/sim-exit-code: "c=1"}}
          spec: {containers: [{name: c, image: busybox}]}"#,
        ),
    );
    let js = wait_jobset(&dev, "deadline", "Failed");
    let failed = condition(&js, "Failed").unwrap();
    assert_eq!(failed["reason"], "FailJobSetFailurePolicyAction");
    assert_eq!(js["status"]["restarts"], 0);
    let js = wait_jobset(&dev, "crash", "Failed");
    let failed = condition(&js, "Failed").unwrap();
    assert_eq!(failed["reason"], "ReachedMaxRestarts");
    assert_eq!(
        (&js["status"]["restarts"], &js["status"]["restartsCountTowardsMax"]),
        (&Value::from(2), &Value::from(2))
    );
    let events = ok(
        &dev,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=crash",
            "-o",
            "json",
        ],
    );
    assert!(
        events.contains("RestartJobSetFailurePolicyAction"),
        "a Warning per restart: {events}"
    );
}

/// `ttlSecondsAfterFinished` deletes a finished JobSet with everything below it; a JobSet another
/// controller manages (`spec.managedBy`) is left alone.
#[test]
fn ttl_deletes_a_finished_jobset_and_another_controllers_jobset_is_left_alone() {
    let dev = start(&["--job-pod-duration", "200ms"]);
    let manifest = |name: &str, extra: &str| {
        format!(
            r#"apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {name}}}
spec:
{extra}
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          spec: {{containers: [{{name: c, image: busybox}}]}}
"#
        )
    };
    apply(
        &dev,
        &manifest("elsewhere", "  managedBy: example.com/other-controller"),
    );
    apply(&dev, &manifest("brief", "  ttlSecondsAfterFinished: 2"));
    wait_jobset(&dev, "brief", "Completed");
    let waited = ok(&dev, &["wait", "--for=delete", "jobset/brief", "--timeout=60s"]);
    assert!(waited.contains("condition met"), "{waited}");
    let (found, _, _) = kubectl(&dev, &["get", "jobset", "brief"]);
    assert!(!found, "deleted");
    eventually_within(PATIENCE, "the TTL'd JobSet's Jobs gone", || {
        labelled(&dev, "jobs", "brief").is_empty().then_some(())
    });
    // Reconciled before `brief` (created first): nothing was made for it.
    let other = get_json(&dev, &["jobset", "elsewhere"]);
    assert!(other["status"].is_null(), "{other}");
    assert!(labelled(&dev, "jobs", "elsewhere").is_empty());
    let (found, _, _) = kubectl(&dev, &["get", "service", "elsewhere"]);
    assert!(!found);
}

/// A `jobset.x-k8s.io/v1` JobSet (`examples/jobsets/v1-startup-order.yaml`) on `kwas dev`: applied as v1,
/// read through either version with the CRD's conversion (the startup-policy annotation is
/// `spec.startupPolicy` in v1alpha2), started in order and completed; `kubectl get jobsets` reads v1, the
/// version discovery prefers.
#[test]
fn a_v1_jobset_starts_in_order_and_reads_through_both_versions() {
    let dev = start(&["--job-pod-duration", "300ms"]);
    ok(
        &dev,
        &[
            "apply",
            "-f",
            &repo().join("examples/jobsets/v1-startup-order.yaml").to_string_lossy(),
        ],
    );
    let js = wait_jobset(&dev, "startup-order", "Completed");
    assert_eq!(js["apiVersion"], "jobset.x-k8s.io/v1");
    assert!(js["spec"].get("startupPolicy").is_none());
    assert!(condition(&js, "StartupPolicyCompleted").is_some(), "{js}");
    let alpha = get_json(&dev, &["jobsets.v1alpha2.jobset.x-k8s.io", "startup-order"]);
    assert_eq!(alpha["apiVersion"], "jobset.x-k8s.io/v1alpha2");
    assert_eq!(alpha["spec"]["startupPolicy"]["startupPolicyOrder"], "InOrder");
    assert_eq!(alpha["status"], js["status"]);
    // The driver's Job came first: the workers' were created once it was ready.
    let jobs = labelled(&dev, "jobs", "startup-order");
    assert_eq!(jobs.len(), 3);
    let created = |rjob: &str| {
        jobs.iter()
            .filter(|j| label(j, "jobset.sigs.k8s.io/replicatedjob-name") == rjob)
            .map(|j| j["metadata"]["creationTimestamp"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let driver = created("driver");
    assert!(created("workers").iter().all(|w| w >= &driver[0]));
    // The table through v1 has the CRD's printer columns.
    let table = ok(&dev, &["get", "jobsets"]);
    assert!(
        table.contains("TERMINALSTATE") && table.contains("startup-order"),
        "{table}"
    );
}
