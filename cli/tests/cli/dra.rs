//! Dynamic resource allocation end to end, driven with kubectl 1.37 on `kwas dev` (the simulated DRA
//! drivers, the ResourceClaim controller, the scheduler's allocator, the kubelet's check): a gang needing
//! eight GPUs in one interconnect domain, sharing its PodGroup's channel; a gang that does not fit
//! binds nothing and allocates nothing; claims released when the Job ends; a claim the scheduler cannot
//! honour rejected distinctly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{Dev, apply, eventually, get_json, items, jsonpath, ok, start};
use serde_json::Value;

/// Claims by name.
fn claims(dev: &Dev) -> BTreeMap<String, Value> {
    items(&get_json(dev, &["resourceclaims"]))
        .into_iter()
        .map(|c| (c["metadata"]["name"].as_str().unwrap().to_string(), c))
        .collect()
}

/// (pool, device) of a claim's allocation.
fn allocated(c: &Value) -> Vec<(String, String)> {
    c["status"]["allocation"]["devices"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["pool"].as_str().unwrap().to_string(),
                r["device"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The pods of Job `job`.
fn pods_of(dev: &Dev, job: &str) -> Vec<Value> {
    items(&get_json(
        dev,
        &["pods", "-l", &format!("batch.kubernetes.io/job-name={job}")],
    ))
}

#[test]
fn a_gang_gets_eight_gpus_in_one_interconnect_domain_and_releases_them_when_done() {
    let dev = start(&[]);
    ok(&dev, &["apply", "-f", "examples/dra/gang-job.yaml"]);
    eventually("the gang's four pods to run", || {
        let pods = pods_of(&dev, "train-dra");
        pods.len() == 4 && pods.iter().all(|p| p["status"]["phase"] == "Running")
    });
    let pods = pods_of(&dev, "train-dra");
    let rack_of: BTreeMap<String, String> = items(&get_json(&dev, &["nodes"]))
        .iter()
        .map(|n| {
            (
                n["metadata"]["name"].as_str().unwrap().to_string(),
                n["metadata"]["labels"]["kwas.dev/rack"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let racks: BTreeSet<&String> = pods
        .iter()
        .map(|p| &rack_of[p["spec"]["nodeName"].as_str().unwrap()])
        .collect();
    assert_eq!(racks.len(), 1, "one rack");
    let rack = racks.into_iter().next().unwrap().clone();
    let all = claims(&dev);
    // Each pod: its own claim, two GPUs on its node; the group's channel, recorded in its status too.
    let mut gpus = BTreeSet::new();
    let mut channel = None;
    for p in &pods {
        let node = p["spec"]["nodeName"].as_str().unwrap();
        let statuses: BTreeMap<&str, &str> = p["status"]["resourceClaimStatuses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["name"].as_str().unwrap(), s["resourceClaimName"].as_str().unwrap()))
            .collect();
        let own = &all[statuses["gpus"]];
        let devices = allocated(own);
        assert_eq!(devices.len(), 2, "{own}");
        assert!(
            devices.iter().all(|(pool, _)| pool == node),
            "GPUs on the pod's node: {devices:?}"
        );
        assert_eq!(own["status"]["reservedFor"][0]["resource"], "pods");
        gpus.extend(devices.into_iter().map(|(pool, d)| format!("{pool}/{d}")));
        let shared = statuses["channel"];
        assert!(channel.is_none_or(|c| c == shared), "one channel for the gang");
        channel = Some(shared);
    }
    assert_eq!(gpus.len(), 8, "eight distinct GPUs: {gpus:?}");
    // Their interconnect domain, read from the slices, is the gang's rack.
    let slices = items(&get_json(&dev, &["resourceslices"]));
    for g in &gpus {
        let (pool, device) = g.split_once('/').unwrap();
        let slice = slices.iter().find(|s| s["spec"]["pool"]["name"] == pool).unwrap();
        let d = slice["spec"]["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == device)
            .unwrap();
        assert_eq!(d["attributes"]["interconnectDomain"]["string"], rack.as_str());
    }
    let channel = &all[channel.unwrap()];
    let devices = allocated(channel);
    assert_eq!(
        devices,
        vec![(rack.clone(), devices[0].1.clone())],
        "the rack's channel"
    );
    assert_eq!(channel["status"]["reservedFor"][0]["resource"], "podgroups");
    assert_eq!(
        jsonpath(&dev, &["resourceclaims"], "{.items[*].status.reservedFor[*].resource}")
            .split_whitespace()
            .count(),
        5
    );

    // The Job ends: its pods' claims go, the group's channel is deallocated.
    eventually("the Job to complete and its devices to be released", || {
        let all = claims(&dev);
        jsonpath(&dev, &["job", "train-dra"], "{.status.succeeded}") == "4"
            && all.len() == 1
            && all
                .values()
                .all(|c| c["status"]["allocation"].is_null() && c["status"]["reservedFor"].is_null())
    });
    let rest = claims(&dev);
    let group_claim = rest.values().next().unwrap();
    assert!(
        group_claim["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|f| f.is_empty()),
        "{group_claim}"
    );
}

#[test]
fn a_gang_that_does_not_fit_binds_nothing_and_allocates_nothing() {
    // Eight nodes of two DRA GPUs: eight pods of two GPUs fit, nine do not.
    let dev = start(&["--dra-gpus", "2"]);
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/dra/gang-job.yaml"),
    )
    .unwrap()
    .replace("parallelism: 4", "parallelism: 9")
    .replace("completions: 4", "completions: 9")
    // No rack constraint and no channel: only the GPUs limit the gang.
    .replace("    schedulingConstraints:\n      topology:\n        - key: kwas.dev/rack\n", "")
    .replace(
        "    resourceClaims:\n      - name: channel\n        resourceClaimTemplateName: interconnect-channel\n",
        "",
    )
    .replace(
        "        # The PodGroup's claim, named identically: all pods share the group's one channel.\n        - name: channel\n          resourceClaimTemplateName: interconnect-channel\n",
        "",
    )
    .replace("              - name: channel\n", "");
    apply(&dev, &manifest);
    eventually("the gang to be reported unschedulable", || {
        let groups = items(&get_json(&dev, &["podgroups"]));
        groups.iter().any(|g| {
            g["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter().any(|c| {
                    c["status"] == "False"
                        && c["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("cannot allocate all claims"))
                })
            })
        })
    });
    let pods = pods_of(&dev, "train-dra");
    assert_eq!(pods.len(), 9);
    assert!(pods.iter().all(|p| p["spec"]["nodeName"].is_null()), "nothing bound");
    let all = claims(&dev);
    assert_eq!(all.len(), 9, "each pod's claim exists");
    assert!(
        all.values().all(|c| c["status"]["allocation"].is_null()),
        "nothing allocated"
    );
    let notes = ok(&dev, &["get", "events", "--field-selector", "reason=FailedScheduling"]);
    assert!(notes.contains("cannot allocate all claims"), "{notes}");
}

#[test]
fn a_claim_the_scheduler_cannot_honour_is_rejected_distinctly() {
    let dev = start(&[]);
    apply(
        &dev,
        "apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: counted}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.kwas.dev
        capacity: {requests: {memory: 10Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: wants-capacity}
spec:
  schedulerName: kwas-scheduler
  resourceClaims: [{name: gpu, resourceClaimName: counted}]
  containers: [{name: main, image: app:v1, resources: {claims: [{name: gpu}]}}]
",
    );
    eventually("the pod to be rejected as unsupported", || {
        jsonpath(
            &dev,
            &["pod", "wants-capacity"],
            "{.status.conditions[?(@.type==\"PodScheduled\")].reason}",
        ) == "Unsupported"
    });
    let message = jsonpath(
        &dev,
        &["pod", "wants-capacity"],
        "{.status.conditions[?(@.type==\"PodScheduled\")].message}",
    );
    assert!(message.contains("consumable capacity"), "{message}");
    assert_eq!(jsonpath(&dev, &["pod", "wants-capacity"], "{.spec.nodeName}"), "");
}
