//! The JobSet project's behaviour (`jobset.x-k8s.io/v1alpha2`) on devcluster with the Job controller:
//! failure policy rules, startup order and `dependsOn`, the success policy's `Any`, TTL after finished,
//! `managedBy`, the coordinator label and the network settings.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use kwas_api_types::jobset::{JobSet, PodGroupManagement};
use kwas_controllers::jobset::{Install, JobSetControllerConfig};
use serde_json::{Value, json};

use crate::common::eventually_within;
use crate::jobset_devcluster::{T, env, env_with, get_js, jobset, js_condition, list, template, wait_js};

async fn create(c: &Client, name: &str, spec: Value) {
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &jobset(name, spec))
        .await
        .unwrap();
}

fn jobs_of<'a>(jobs: &'a [Job], jobset: &str, rjob: &str) -> Vec<&'a Job> {
    jobs.iter()
        .filter(|j| {
            let l = j.labels();
            l.get("jobset.sigs.k8s.io/jobset-name").map(String::as_str) == Some(jobset)
                && l.get("jobset.sigs.k8s.io/replicatedjob-name").map(String::as_str) == Some(rjob)
        })
        .collect()
}

fn job_done(j: &Job, type_: &str) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

/// A rule fails the JobSet at once on one failure reason (`DeadlineExceeded`); any other reason takes the
/// default action (restart) until `maxRestarts`, counted in `restartsCountTowardsMax`.
#[tokio::test]
async fn a_failure_rule_fails_fast_on_one_reason_and_restarts_on_another() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    let policy = json!({"maxRestarts": 2, "rules": [
        {"name": "deadline", "action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]}
    ]});
    let mut slow = template(1, "1h", None, None);
    slow["spec"]["activeDeadlineSeconds"] = json!(1);
    create(
        c,
        "fastfail",
        json!({"failurePolicy": policy, "replicatedJobs": [{"name": "slow", "template": slow}]}),
    )
    .await;
    create(
        c,
        "retry",
        json!({"failurePolicy": policy, "replicatedJobs": [
            {"name": "broken", "template": template(1, "50ms", Some("Failed"), None)}
        ]}),
    )
    .await;
    let failed = wait_js(c, "fastfail", "Failed").await;
    let condition = js_condition(&failed, "Failed").unwrap();
    assert_eq!(condition.reason, "FailJobSetFailurePolicyAction");
    assert_eq!(
        condition.message,
        "applying FailJobSet failure policy action (first failed job: fastfail-slow-0)"
    );
    let status = failed.status.as_ref().unwrap();
    assert_eq!((status.restarts, status.terminal_state.as_str()), (0, "Failed"));

    let failed = wait_js(c, "retry", "Failed").await;
    let condition = js_condition(&failed, "Failed").unwrap();
    assert_eq!(condition.reason, "ReachedMaxRestarts");
    assert_eq!(
        condition.message,
        "jobset failed due to reaching max number of restarts (first failed job: retry-broken-0)"
    );
    let status = failed.status.as_ref().unwrap();
    assert_eq!((status.restarts, status.restarts_count_towards_max), (2, 2));
    let restarting = status
        .conditions
        .iter()
        .find(|c| c.type_ == "RestartingJobSet")
        .unwrap();
    assert_eq!(
        (restarting.status.as_str(), restarting.reason.as_str()),
        ("False", "JobSetFailed")
    );
    e.cluster.shutdown().await;
}

/// `startupPolicyOrder: InOrder`: a replicated job's Jobs are created only once every Job of the previous
/// one is ready; `StartupPolicyCompleted` when all started.
#[tokio::test]
async fn in_order_startup_creates_each_replicated_job_once_the_previous_is_ready() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    create(
        c,
        "ordered",
        json!({"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": [
            {"name": "leader", "replicas": 2, "template": template(1, "3s", None, None)},
            {"name": "workers", "replicas": 2, "template": template(2, "100ms", None, None)}
        ]}),
    )
    .await;
    let leaders_then = eventually_within(T, "the workers' first Job", || async {
        let jobs: Vec<Job> = list(c).await;
        (!jobs_of(&jobs, "ordered", "workers").is_empty()).then(|| {
            jobs_of(&jobs, "ordered", "leader")
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        })
    })
    .await;
    assert_eq!(leaders_then.len(), 2);
    for j in &leaders_then {
        let st = j.status.clone().unwrap_or_default();
        assert!(
            st.ready.unwrap_or(0) + st.succeeded.unwrap_or(0) >= 1,
            "{} not ready when the workers were created: {st:?}",
            j.name_any()
        );
    }
    let done = wait_js(c, "ordered", "Completed").await;
    assert!(js_condition(&done, "StartupPolicyCompleted").is_some());
    let in_progress = done
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "StartupPolicyInProgress")
        .unwrap();
    assert_eq!(in_progress.status, "False", "the two exclude each other");
    e.cluster.shutdown().await;
}

/// `dependsOn: Complete`: the dependent replicated job's Jobs are created once every Job it depends on
/// completed.
#[tokio::test]
async fn depends_on_complete_waits_for_every_job_of_the_dependency() {
    let e = env(PodGroupManagement::Delegated).await;
    let c = &e.client;
    create(
        c,
        "staged",
        json!({"replicatedJobs": [
            {"name": "init", "replicas": 2, "template": template(1, "500ms", None, None)},
            {"name": "main", "dependsOn": [{"name": "init", "status": "Complete"}],
             "template": template(1, "100ms", None, None)}
        ]}),
    )
    .await;
    let init_then = eventually_within(T, "the main Job", || async {
        let jobs: Vec<Job> = list(c).await;
        (!jobs_of(&jobs, "staged", "main").is_empty()).then(|| {
            jobs_of(&jobs, "staged", "init")
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        })
    })
    .await;
    assert_eq!(init_then.len(), 2);
    assert!(init_then.iter().all(|j| job_done(j, "Complete")), "{init_then:?}");
    wait_js(c, "staged", "Completed").await;
    e.cluster.shutdown().await;
}

/// `successPolicy: {operator: Any, targetReplicatedJobs: [quick]}`: the first quick Job's success
/// completes the JobSet and the slow Jobs are removed.
#[tokio::test]
async fn success_policy_any_completes_on_the_first_targeted_job() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    create(
        c,
        "anyone",
        json!({"successPolicy": {"operator": "Any", "targetReplicatedJobs": ["quick"]}, "replicatedJobs": [
            {"name": "quick", "template": template(1, "100ms", None, None)},
            {"name": "slow", "replicas": 2, "template": template(1, "1h", None, None)}
        ]}),
    )
    .await;
    let done = wait_js(c, "anyone", "Completed").await;
    assert_eq!(done.status.as_ref().unwrap().terminal_state, "Completed");
    eventually_within(T, "the slow Jobs removed", || async {
        let jobs: Vec<Job> = list(c).await;
        jobs_of(&jobs, "anyone", "slow").is_empty().then_some(())
    })
    .await;
    e.cluster.shutdown().await;
}

/// `ttlSecondsAfterFinished`: a finished JobSet is deleted (foreground) once its TTL passed.
#[tokio::test]
async fn ttl_after_finished_deletes_the_jobset() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    create(
        c,
        "shortlived",
        json!({"ttlSecondsAfterFinished": 1, "replicatedJobs": [
            {"name": "w", "template": template(1, "100ms", None, None)}
        ]}),
    )
    .await;
    wait_js(c, "shortlived", "Completed").await;
    let api = Api::<JobSet>::namespaced(c.clone(), "default");
    eventually_within(T, "the JobSet and its Jobs deleted", || async {
        let gone = api.get_opt("shortlived").await.unwrap().is_none();
        let jobs: Vec<Job> = list(c).await;
        (gone && jobs_of(&jobs, "shortlived", "w").is_empty()).then_some(())
    })
    .await;
    e.cluster.shutdown().await;
}

/// `spec.managedBy`: standalone, kwas runs JobSets without it and with kwas' name but not another
/// controller's; alongside the JobSet project, only those naming kwas.
#[tokio::test]
async fn managed_by_decides_whose_jobset_it_is() {
    for (install, runs) in [
        (Install::Standalone, ["unset", "kwas", "upstream"].as_slice()),
        (Install::Alongside, ["kwas"].as_slice()),
    ] {
        let e = env_with(JobSetControllerConfig {
            install,
            ..Default::default()
        })
        .await;
        let c = &e.client;
        let rjobs = json!([{"name": "w", "template": template(1, "100ms", None, None)}]);
        for (name, by) in [
            ("other", Some("example.com/other")),
            ("unset", None),
            ("upstream", Some("jobset.sigs.k8s.io/jobset-controller")),
            ("kwas", Some("kwas.dev/jobset-controller")),
        ] {
            let mut spec = json!({"replicatedJobs": rjobs});
            if let Some(by) = by {
                spec["managedBy"] = json!(by);
            }
            create(c, name, spec).await;
        }
        for name in runs {
            wait_js(c, name, "Completed").await;
        }
        // The ones kwas left alone: no Jobs, no status (the controller handled them before the ones that
        // completed: every JobSet is reconciled as soon as it is seen).
        let jobs: Vec<Job> = list(c).await;
        for name in ["other", "unset", "upstream", "kwas"]
            .iter()
            .filter(|n| !runs.contains(n))
        {
            assert!(jobs_of(&jobs, name, "w").is_empty(), "{install:?}: {name} got Jobs");
            assert!(
                get_js(c, name).await.status.is_none(),
                "{install:?}: {name} got a status"
            );
        }
        e.cluster.shutdown().await;
    }
}

/// `network.subdomain`, `publishNotReadyAddresses: false` and `spec.coordinator` reach the Service and the
/// pods; `enableDNSHostnames: false` makes neither a Service nor subdomains.
#[tokio::test]
async fn network_settings_and_the_coordinator_reach_the_pods() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    create(
        c,
        "torch",
        json!({
            "network": {"subdomain": "rendezvous", "publishNotReadyAddresses": false},
            "coordinator": {"replicatedJob": "workers", "jobIndex": 0, "podIndex": 0},
            "replicatedJobs": [{"name": "workers", "replicas": 2, "template": template(2, "100ms", None, None)}]
        }),
    )
    .await;
    create(
        c,
        "nodns",
        json!({"network": {"enableDNSHostnames": false},
               "replicatedJobs": [{"name": "w", "template": template(1, "100ms", None, None)}]}),
    )
    .await;
    wait_js(c, "torch", "Completed").await;
    wait_js(c, "nodns", "Completed").await;
    let services = Api::<Service>::namespaced(c.clone(), "default");
    let svc = services.get("rendezvous").await.unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.publish_not_ready_addresses, Some(false));
    assert_eq!(spec.selector.unwrap()["jobset.sigs.k8s.io/jobset-name"], "torch");
    assert!(services.get_opt("torch").await.unwrap().is_none());
    assert!(services.get_opt("nodns").await.unwrap().is_none());
    let pods: Vec<Pod> = list(c).await;
    for p in &pods {
        let spec = p.spec.as_ref().unwrap();
        match p.labels()["jobset.sigs.k8s.io/jobset-name"].as_str() {
            "torch" => {
                assert_eq!(spec.subdomain.as_deref(), Some("rendezvous"));
                assert_eq!(
                    p.labels()["jobset.sigs.k8s.io/coordinator"],
                    "torch-workers-0-0.rendezvous"
                );
                assert_eq!(
                    p.annotations()["jobset.sigs.k8s.io/coordinator"],
                    "torch-workers-0-0.rendezvous"
                );
            }
            _ => {
                assert_eq!(spec.subdomain, None);
                assert!(!p.labels().contains_key("jobset.sigs.k8s.io/coordinator"));
            }
        }
    }
    e.cluster.shutdown().await;
}

/// `volumeClaimPolicies`: one PVC per template named `<template>-<jobset>`, owned by the JobSet when its
/// retention policy is `Delete` and not when `Retain`; the pods that mount a template's name claim it
/// (upstream's webhook refuses a template no container mounts, as the controller does here).
#[tokio::test]
async fn volume_claim_policies_create_the_claims_and_the_pods_mount_them() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    let mut t = template(1, "1h", None, None);
    t["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "data", "mountPath": "/data"}, {"name": "cache", "mountPath": "/cache"}]);
    let claim = |name: &str| {
        json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}})
    };
    create(
        c,
        "stateful",
        json!({
            "volumeClaimPolicies": [
                {"templates": [claim("data")], "retentionPolicy": {"whenDeleted": "Delete"}},
                {"templates": [claim("cache")], "retentionPolicy": {"whenDeleted": "Retain"}}
            ],
            "replicatedJobs": [{"name": "w", "template": t}]
        }),
    )
    .await;
    let pod = eventually_within(T, "the pod", || async {
        let pods: Vec<Pod> = list(c).await;
        let js = get_js(c, "stateful").await;
        assert!(js_condition(&js, "Failed").is_none(), "{:?}", js.status);
        pods.into_iter().next()
    })
    .await;
    let volumes = pod.spec.unwrap().volumes.unwrap_or_default();
    let claims: Vec<(&str, Option<&str>)> = volumes
        .iter()
        .map(|v| {
            (
                v.name.as_str(),
                v.persistent_volume_claim.as_ref().map(|p| p.claim_name.as_str()),
            )
        })
        .collect();
    assert!(claims.contains(&("data", Some("data-stateful"))), "{claims:?}");
    assert!(claims.contains(&("cache", Some("cache-stateful"))), "{claims:?}");
    let pvcs = Api::<PersistentVolumeClaim>::namespaced(c.clone(), "default");
    let data = pvcs.get("data-stateful").await.unwrap();
    assert_eq!(data.labels()["jobset.sigs.k8s.io/jobset-name"], "stateful");
    assert_eq!(data.owner_references()[0].kind, "JobSet");
    let cache = pvcs.get("cache-stateful").await.unwrap();
    assert!(cache.owner_references().is_empty(), "Retain: not garbage-collected");
    e.cluster.shutdown().await;
}
