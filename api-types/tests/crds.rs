//! The generated CRDs in `crds/` match the Rust types. Regenerate with
//! `KWAS_UPDATE_CRDS=1 cargo test -p kwas-api-types --test crds`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::CustomResourceExt;
use kwas_api_types::jobset::v1alpha2;

/// `crds/<file>` holds `crd` generated from the Rust type `from`; with `KWAS_UPDATE_CRDS` set, write it.
fn check_up_to_date(file: &str, from: &str, crd: &impl serde::Serialize) {
    let path = format!("{}/../crds/{file}", env!("CARGO_MANIFEST_DIR"));
    let generated = format!(
        "# Generated from {from}; do not edit. Regenerate with\n# `KWAS_UPDATE_CRDS=1 cargo test -p kwas-api-types --test crds`.\n{}",
        serde_saphyr::to_string(crd).unwrap()
    );
    if std::env::var_os("KWAS_UPDATE_CRDS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "crds/{file} is stale: run `KWAS_UPDATE_CRDS=1 cargo test -p kwas-api-types --test crds`"
    );
}

#[test]
fn jobset_v1alpha2_crd_is_up_to_date() {
    check_up_to_date(
        "jobset.x-k8s.io_jobsets.yaml",
        "kwas_api_types::jobset::crd() (v1alpha2::JobSet and v1::JobSet)",
        &kwas_api_types::jobset::crd(),
    );
}

#[test]
fn jobset_v1alpha2_crd_shape() {
    let crd = serde_json::to_value(v1alpha2::JobSet::crd()).unwrap();
    assert_eq!(crd["metadata"]["name"], "jobsets.jobset.x-k8s.io");
    assert!(
        crd["spec"]["names"]["shortNames"].is_null(),
        "no short name, as upstream"
    );
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["name"], "v1alpha2");
    assert!(version["subresources"]["status"].is_object());
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["TerminalState", "Restarts", "Completed", "Suspended", "Age"]);
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let rjob = &spec["properties"]["replicatedJobs"]["items"]["properties"];
    assert_eq!(rjob["groupName"]["default"], "default");
    assert_eq!(rjob["replicas"]["default"], 1);
    assert_eq!(
        rjob["dependsOn"]["x-kubernetes-validations"][0]["rule"],
        "self == oldSelf"
    );
    assert_eq!(
        spec["properties"]["failurePolicy"]["properties"]["restartStrategy"]["default"],
        "Recreate"
    );
    for immutable in [
        "network",
        "successPolicy",
        "failurePolicy",
        "startupPolicy",
        "volumeClaimPolicies",
    ] {
        assert_eq!(
            spec["properties"][immutable]["x-kubernetes-validations"][0]["message"], "Value is immutable",
            "{immutable}"
        );
    }
    assert_eq!(
        spec["x-kubernetes-validations"][0]["message"],
        "StartupPolicy and DependsOn APIs are mutually exclusive"
    );
    assert!(spec["properties"]["scheduling"]["properties"]["replicatedJobPolicies"].is_object());
}
