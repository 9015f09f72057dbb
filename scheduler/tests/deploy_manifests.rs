//! The deploy manifests in `deploy/scheduler/` grant exactly what the runtime uses. The `shape` module keeps the
//! crate's own shape deliberate: the declared module layers, no module cycle, the public surface.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod shape;

use std::collections::{BTreeMap, BTreeSet};

use kwas_scheduler::runtime::API_ACCESS;
use serde_json::Value;

fn documents(file: &str) -> Vec<Value> {
    let path = format!("{}/../deploy/scheduler/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.split("\n---")
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        })
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect()
}

type Grants = BTreeMap<(String, String), BTreeSet<String>>;

fn grants(rules: &Value) -> Grants {
    let mut out = Grants::new();
    for r in rules.as_array().unwrap() {
        assert!(r.get("resourceNames").is_none() || r["resourceNames"].as_array().unwrap().len() == 1);
        for g in r["apiGroups"].as_array().unwrap() {
            for res in r["resources"].as_array().unwrap() {
                for v in r["verbs"].as_array().unwrap() {
                    out.entry((g.as_str().unwrap().into(), res.as_str().unwrap().into()))
                        .or_default()
                        .insert(v.as_str().unwrap().into());
                }
            }
        }
    }
    out
}

#[test]
fn the_cluster_role_grants_exactly_what_the_runtime_calls() {
    let docs = documents("rbac.yaml");
    let role = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
    let granted = grants(&role["rules"]);
    let mut wanted = Grants::new();
    for (group, resource, verbs) in API_ACCESS {
        wanted
            .entry((group.to_string(), resource.to_string()))
            .or_default()
            .extend(verbs.iter().map(|v| v.to_string()));
    }
    assert_eq!(granted, wanted);
    for verbs in granted.values() {
        assert!(!verbs.contains("*"), "no wildcards");
    }
}

#[test]
fn the_lease_role_is_namespaced_to_one_lease() {
    let docs = documents("rbac.yaml");
    let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
    assert_eq!(role["metadata"]["namespace"], "kwas-system");
    let granted = grants(&role["rules"]);
    let leases = &granted[&("coordination.k8s.io".to_string(), "leases".to_string())];
    assert_eq!(
        leases,
        &["create", "get", "patch"].iter().map(|s| s.to_string()).collect()
    );
    let named = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r.get("resourceNames").is_some())
        .unwrap();
    assert_eq!(named["resourceNames"][0], "kwas-scheduler");
}

#[test]
fn the_deployment_runs_in_cluster_with_probes_and_its_service_account() {
    let docs = documents("deployment.yaml");
    let d = &docs[0];
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "kwas-scheduler");
    let c = &pod["containers"][0];
    assert_eq!(c["args"][0], "scheduler");
    assert!(
        !c["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().unwrap().contains("kubeconfig"))
    );
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    let sa = &documents("serviceaccount.yaml")[0];
    assert_eq!(sa["metadata"]["namespace"], d["metadata"]["namespace"]);
    let binding = documents("rbac.yaml")
        .into_iter()
        .find(|d| d["kind"] == "ClusterRoleBinding")
        .unwrap();
    assert_eq!(binding["subjects"][0]["name"], "kwas-scheduler");
    assert_eq!(binding["subjects"][0]["namespace"], "kwas-system");
}
