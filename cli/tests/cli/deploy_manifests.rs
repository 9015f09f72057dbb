//! The deploy manifests of both components (`deploy/controllers/`, `deploy/scheduler/`) grant exactly
//! what each component calls (its `API_ACCESS`), name one Lease each, and run the `kwas` binary in-cluster
//! with probes under its own service account.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// One deployable component: its folder under `deploy/`, the `kwas` subcommand it runs, its name (service
/// account, Lease) and what it calls.
struct Component {
    folder: &'static str,
    command: &'static str,
    name: &'static str,
    access: &'static [(&'static str, &'static str, &'static [&'static str])],
}

const COMPONENTS: [Component; 2] = [
    Component {
        folder: "controllers",
        command: "controllers",
        name: "kwas-controllers",
        access: kwas_controllers::process::API_ACCESS,
    },
    Component {
        folder: "scheduler",
        command: "scheduler",
        name: "kwas-scheduler",
        access: kwas_scheduler::runtime::API_ACCESS,
    },
];

fn documents(c: &Component, file: &str) -> Vec<Value> {
    let path = kwas_test_tools::run::repo_root()
        .join("deploy")
        .join(c.folder)
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
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
fn each_cluster_role_grants_exactly_what_its_component_calls() {
    for c in &COMPONENTS {
        let docs = documents(c, "rbac.yaml");
        let role = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
        let granted = grants(&role["rules"]);
        let mut wanted = Grants::new();
        for (group, resource, verbs) in c.access {
            wanted
                .entry((group.to_string(), resource.to_string()))
                .or_default()
                .extend(verbs.iter().map(|v| v.to_string()));
        }
        assert_eq!(granted, wanted, "{}", c.folder);
        assert!(granted.values().all(|v| !v.contains("*")), "{}: no wildcards", c.folder);
    }
}

#[test]
fn each_lease_role_names_one_lease_which_the_deployment_uses() {
    for c in &COMPONENTS {
        let docs = documents(c, "rbac.yaml");
        let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
        let named = role["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r.get("resourceNames").is_some())
            .unwrap();
        assert_eq!(named["resourceNames"][0], c.name, "{}", c.folder);
        let deployment = &documents(c, "deployment.yaml")[0];
        let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let lease = format!("--lease-name={}", c.name);
        assert!(args.contains(&lease.as_str()), "{}: {args:?}", c.folder);
    }
}

#[test]
fn each_lease_role_is_namespaced_and_minimal() {
    for c in &COMPONENTS {
        let docs = documents(c, "rbac.yaml");
        let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
        assert_eq!(role["metadata"]["namespace"], "kwas-system", "{}", c.folder);
        let granted = grants(&role["rules"]);
        let leases = &granted[&("coordination.k8s.io".to_string(), "leases".to_string())];
        assert_eq!(
            leases,
            &["create", "get", "patch"].iter().map(|s| s.to_string()).collect(),
            "{}",
            c.folder
        );
    }
}

#[test]
fn each_deployment_runs_in_cluster_with_probes_and_its_service_account() {
    for c in &COMPONENTS {
        let d = &documents(c, "deployment.yaml")[0];
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], c.name, "{}", c.folder);
        let container = &pod["containers"][0];
        assert_eq!(container["args"][0], c.command, "{}", c.folder);
        assert!(
            !container["args"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a.as_str().unwrap().contains("kubeconfig")),
            "{}: in-cluster config only",
            c.folder
        );
        assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    }
    for c in &COMPONENTS {
        let d = &documents(c, "deployment.yaml")[0];
        let sa = &documents(c, "serviceaccount.yaml")[0];
        assert_eq!(sa["metadata"]["namespace"], d["metadata"]["namespace"], "{}", c.folder);
        let binding = documents(c, "rbac.yaml")
            .into_iter()
            .find(|d| d["kind"] == "ClusterRoleBinding")
            .unwrap();
        assert_eq!(binding["subjects"][0]["name"], c.name, "{}", c.folder);
        assert_eq!(binding["subjects"][0]["namespace"], "kwas-system", "{}", c.folder);
    }
}
