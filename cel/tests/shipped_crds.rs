//! Every CRD the project ships (`crds/`) passes kube-apiserver's write-time checks of its CEL rules:
//! each rule compiles and fits the per-expression and per-schema cost budgets, so the CRD installs on a
//! real cluster as it does on devcluster.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

#[test]
fn every_shipped_crd_fits_kube_apiservers_cel_budgets() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (i, v) in crd["spec"]["versions"].as_array().unwrap().iter().enumerate() {
            let schema = &v["schema"]["openAPIV3Schema"];
            let compiled = kwas_cel::crd::compile(schema);
            let errors = compiled.write_errors(&format!("spec.versions[{i}].schema.openAPIV3Schema"));
            assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
            assert!(
                compiled.estimated_total() <= kwas_cel::crd::STATIC_ESTIMATED_CRD_COST_LIMIT,
                "{}: {}",
                path.display(),
                compiled.estimated_total()
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "the JobSet and LeaderWorkerSet CRDs");
}
