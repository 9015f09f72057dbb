//! The official Python client (`pip install 'kubernetes==37.*'`) against devcluster: Workload, PodGroup
//! and CompositePodGroup through its typed scheduling.k8s.io/v1alpha3 API, a Job with `spec.scheduling`
//! through its batch API, the apps/v1, RBAC, authorization, Service and pod-log APIs, and the
//! resource.k8s.io/v1 kinds through `ResourceV1Api`, and one JobSet through both of the JobSet CRD's
//! versions (v1alpha2, v1) through `CustomObjectsApi`. The checks live in `tests/python/client_test.py`; a
//! missing client fails the test with instructions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_drives_scheduling_objects_and_jobs() {
    let c = crate::common::cluster_with(|c| c.conversion_webhooks.register_jobset()).await;
    let crds: kube::Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        kube::Api::all(c.client());
    crds.create(&Default::default(), &kwas_api_types::jobset::crd())
        .await
        .unwrap();
    crate::common::eventually_within(std::time::Duration::from_secs(10), "the JobSet CRD served", || async {
        let api: kube::Api<kwas_api_types::jobset::JobSet> = kube::Api::default_namespaced(c.client());
        api.list(&Default::default()).await.ok().map(|_| ())
    })
    .await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_test.py");
    let python = crate::common::python_path();
    let kubeconfig = c.kubeconfig_path().to_path_buf();
    let out =
        tokio::task::spawn_blocking(move || std::process::Command::new(python).arg(script).arg(kubeconfig).output())
            .await
            .unwrap()
            .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python client checks failed:\n{stdout}\n{stderr}");
    assert!(stdout.lines().any(|l| l == "9 passed, 0 failed"), "{stdout}");
    c.shutdown().await;
}
