//! `crds/leaderworkerset.yaml` matches the Rust types. Regenerate with
//! `KWAS_UPDATE_CRDS=1 cargo test -p lws-controller --test crd`.
#![allow(clippy::unwrap_used)]

use kube::CustomResourceExt;
use lws_controller::LeaderWorkerSet;

#[test]
fn crd_is_up_to_date() {
    let path = format!("{}/../../crds/leaderworkerset.yaml", env!("CARGO_MANIFEST_DIR"));
    let generated = format!(
        "# Generated from lws_controller::LeaderWorkerSet (examples/lws-controller); do not edit. Regenerate with\n# `KWAS_UPDATE_CRDS=1 cargo test -p lws-controller --test crd`.\n{}",
        serde_saphyr::to_string(&LeaderWorkerSet::crd()).unwrap()
    );
    if std::env::var_os("KWAS_UPDATE_CRDS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    assert!(
        std::fs::read_to_string(&path).unwrap_or_default() == generated,
        "crds/leaderworkerset.yaml is stale: run `KWAS_UPDATE_CRDS=1 cargo test -p lws-controller --test crd`"
    );
}
