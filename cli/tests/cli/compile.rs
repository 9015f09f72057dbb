//! `kwas compile` on the bundled examples and on invalid input, through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::process::{Command, Stdio};

fn kwas(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwas"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn compiles_the_bundled_examples() {
    for (file, kinds) in [
        ("examples/jobs/gang-job.yaml", vec!["Workload", "PodGroup"]),
        ("examples/jobs/basic-job.yaml", vec!["Workload", "PodGroup"]),
        (
            "examples/jobsets/option-a.yaml",
            vec!["Workload", "CompositePodGroup", "PodGroup", "PodGroup", "PodGroup"],
        ),
        (
            "examples/jobsets/option-b.yaml",
            vec!["Workload", "CompositePodGroup", "PodGroup", "PodGroup", "PodGroup"],
        ),
        (
            "examples/jobsets/v1-startup-order.yaml",
            vec!["Workload", "CompositePodGroup", "PodGroup", "PodGroup", "PodGroup"],
        ),
    ] {
        let (ok, stdout, stderr) = kwas(&["compile", file], None);
        assert!(ok, "{file}: {stderr}");
        let docs: Vec<serde_json::Value> = stdout
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_saphyr::from_str(d).unwrap())
            .collect();
        let got: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(got, kinds, "{file}");
        assert!(stderr.contains("no metadata.uid"), "{stderr}");
    }
}

/// A jobset.x-k8s.io/v1 JobSet compiles as its v1alpha2 form does (the startup-policy annotation is
/// spec.startupPolicy there), and v1 is checked against v1's fields: spec.startupPolicy is unknown in v1.
#[test]
fn a_v1_jobset_compiles_as_its_v1alpha2_form() {
    let v1 = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/jobsets/v1-startup-order.yaml"
    ))
    .unwrap();
    let alpha = v1
        .replace("apiVersion: jobset.x-k8s.io/v1\n", "apiVersion: jobset.x-k8s.io/v1alpha2\n")
        .replace(
            "  annotations:\n    jobset.sigs.k8s.io/startup-policy: eyJzdGFydHVwUG9saWN5T3JkZXIiOiJJbk9yZGVyIn0=\nspec:\n",
            "spec:\n  startupPolicy:\n    startupPolicyOrder: InOrder\n",
        );
    assert_ne!(v1, alpha);
    let compiled = |text: &str| {
        let (ok, stdout, stderr) = kwas(&["compile", "-", "-o", "json"], Some(text));
        assert!(ok, "{stderr}");
        let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        list
    };
    let from_v1 = compiled(&v1);
    assert_eq!(from_v1["items"].as_array().unwrap().len(), 5);
    assert_eq!(from_v1, compiled(&alpha));
    // The root gang of gangs admits the first stage only (the driver) while the workers wait.
    assert_eq!(
        from_v1["items"][0]["spec"]["compositePodGroupTemplates"][0]["schedulingPolicy"]["gang"]["minGroupCount"],
        1
    );

    let wrong = v1.replace(
        "spec:\n  scheduling:",
        "spec:\n  startupPolicy:\n    startupPolicyOrder: InOrder\n  scheduling:",
    );
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(&wrong));
    assert!(!ok);
    assert!(stderr.contains("startupPolicy"), "{stderr}");
    let bad = v1.replace("eyJzdGFydHVwUG9saWN5T3JkZXIiOiJJbk9yZGVyIn0=", "bm90IGpzb24=");
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(&bad));
    assert!(!ok);
    assert!(
        stderr.contains("metadata.annotations[jobset.sigs.k8s.io/startup-policy]: not the JSON of a StartupPolicy"),
        "{stderr}"
    );
}

#[test]
fn option_b_delegated_groups_are_owned_by_the_child_jobs() {
    let (ok, stdout, _) = kwas(&["compile", "examples/jobsets/option-b.yaml", "-o", "json"], None);
    assert!(ok);
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let group = &list["items"][2];
    assert_eq!(group["kind"], "PodGroup");
    assert_eq!(group["metadata"]["ownerReferences"][0]["kind"], "Job");
    assert_eq!(
        group["spec"]["parentCompositePodGroupName"],
        list["items"][1]["metadata"]["name"]
    );
}

#[test]
fn invalid_manifests_fail_like_kubectl() {
    let job = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: bad, namespace: ml, uid: u1}
spec:
  parallelism: 2
  scheduling:
    disruptionMode: {all: {}}
  template: {spec: {containers: [{name: c, image: i}]}}
"#;
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(job));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "The Job \"bad\" is invalid: spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the Basic scheduling policy"
    );
    let (ok, _, stderr) = kwas(
        &["compile", "-"],
        Some("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"),
    );
    assert!(!ok);
    assert!(stderr.contains("not v1 Pod"), "{stderr}");
}

fn yaml_docs(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect()
}

#[test]
fn resolved_shows_defaults_user_values_and_callback_results_per_item() {
    let (ok, stdout, stderr) = kwas(&["compile", "--resolved", "examples/jobs/gang-job.yaml"], None);
    assert!(ok, "{stderr}");
    let docs = yaml_docs(&stdout);
    assert_eq!(docs.len(), 1);
    let job = &docs[0];
    assert_eq!(
        (job["kind"].as_str(), job["name"].as_str()),
        (Some("Job"), Some("train"))
    );
    let tree = &job["tree"];
    assert_eq!(tree["name"], "train-pgt-0");
    assert_eq!(tree["configPath"], "spec.scheduling");
    // The controller's default, the user's gang without a count, the callback's count.
    assert_eq!(tree["default"]["schedulingPolicy"], serde_json::json!({"basic": {}}));
    assert_eq!(tree["user"]["schedulingPolicy"], serde_json::json!({"gang": {}}));
    assert_eq!(tree["merged"]["schedulingPolicy"], serde_json::json!({"gang": {}}));
    assert_eq!(
        tree["resolved"]["schedulingPolicy"],
        serde_json::json!({"gang": {"minCount": 4}})
    );
    assert_eq!(tree["sources"]["schedulingPolicy"], "user");
    assert_eq!(tree["sources"]["minCount"], "callback");
    assert_eq!(tree["callbacks"], 1);
    assert!(job.get("errors").is_none());
    // No object is printed and names derived from uids do not matter here.
    assert!(!stdout.contains("kind: Workload"), "{stdout}");
    assert!(!stderr.contains("no metadata.uid"), "{stderr}");
}

#[test]
fn resolved_jobset_trees_have_a_composite_root_and_one_leaf_per_replicated_job() {
    let (ok, stdout, stderr) = kwas(
        &["compile", "--resolved", "examples/jobsets/option-b.yaml", "-o", "json"],
        None,
    );
    assert!(ok, "{stderr}");
    let docs: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let tree = &docs[0]["tree"];
    assert_eq!(tree["name"], "jobset");
    assert_eq!(tree["sources"]["schedulingPolicy"], "default", "{tree}");
    assert_eq!(tree["sources"]["minCount"], "callback", "{tree}");
    let children: Vec<&str> = tree["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(children, ["driver", "workers"]);
    let workers = &tree["children"][1];
    assert_eq!(workers["configPath"], "spec.scheduling.replicatedJobPolicies[0]");
    assert_eq!(workers["sources"]["schedulingPolicy"], "user");
}

#[test]
fn resolved_prints_the_tree_of_an_invalid_manifest_with_its_errors_and_fails() {
    let job = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: bad, namespace: ml, uid: u1}
spec:
  parallelism: 2
  scheduling:
    disruptionMode: {all: {}}
  template: {spec: {containers: [{name: c, image: i}]}}
"#;
    let (ok, stdout, stderr) = kwas(&["compile", "--resolved", "-"], Some(job));
    assert!(!ok);
    assert!(
        stderr.contains("The Job \"bad\" is invalid: spec.scheduling.disruptionMode: Invalid value"),
        "{stderr}"
    );
    let docs = yaml_docs(&stdout);
    let doc = &docs[0];
    assert_eq!(doc["tree"]["sources"]["schedulingPolicy"], "default");
    assert_eq!(doc["tree"]["sources"]["disruptionMode"], "user");
    let err = &doc["errors"][0];
    assert_eq!(err["field"], "spec.scheduling.disruptionMode");
    assert_eq!(err["type"], "FieldValueInvalid");
    assert_eq!(
        err["origin"],
        serde_json::json!({"stage": "validation", "item": ["bad-pgt-0"]})
    );
}

/// The Option A example with the root's escape hatch (`basic`, no topology): what a flat Workload can express.
fn option_a_with_a_basic_root() -> String {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/jobsets/option-a.yaml"
    ))
    .unwrap();
    let root = "  scheduling:\n    schedulingConstraints:\n      topology:\n        - key: kwas.dev/block\n";
    assert!(example.contains(root), "the example's root block changed");
    example.replace(root, "  scheduling:\n    schedulingPolicy: {basic: {}}\n")
}

#[test]
fn flat_compiles_one_pod_group_template_per_replicated_job_and_parentless_groups() {
    for management in ["centralized", "delegated"] {
        let (ok, stdout, stderr) = kwas(
            &["compile", "--flat", "--jobset-management", management, "-"],
            Some(&option_a_with_a_basic_root()),
        );
        assert!(ok, "{management}: {stderr}");
        let docs = yaml_docs(&stdout);
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Workload", "PodGroup", "PodGroup", "PodGroup"], "{management}");
        let spec = &docs[0]["spec"];
        assert!(spec.get("compositePodGroupTemplates").is_none(), "{spec}");
        let templates: Vec<&str> = spec["podGroupTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(templates, ["driver", "workers"]);
        let mut names = Vec::new();
        for group in &docs[1..] {
            assert!(group["spec"].get("parentCompositePodGroupName").is_none(), "{group}");
            let owner = group["metadata"]["ownerReferences"][0]["kind"].as_str().unwrap();
            assert_eq!(owner, if management == "centralized" { "JobSet" } else { "Job" });
            names.push(group["metadata"]["name"].as_str().unwrap().to_string());
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 3, "one PodGroup per child Job: {names:?}");
    }
}

#[test]
fn flat_refuses_a_root_gang_or_topology_with_the_fields_and_why() {
    let (ok, stdout, stderr) = kwas(&["compile", "--flat", "examples/jobsets/option-a.yaml"], None);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("The JobSet \"pretrain-a\" is invalid"), "{stderr}");
    assert!(
        stderr.contains("* spec.scheduling.schedulingPolicy: Forbidden: a gang of groups needs a CompositePodGroup"),
        "{stderr}"
    );
    assert!(
        stderr.contains("* spec.scheduling.schedulingConstraints.topology: Forbidden: placing groups together needs a CompositePodGroup"),
        "{stderr}"
    );
}

#[test]
fn flat_leaves_a_jobs_workload_as_it_is() {
    let (ok, flat, _) = kwas(&["compile", "--flat", "examples/jobs/gang-job.yaml"], None);
    assert!(ok);
    let (ok, nested, _) = kwas(&["compile", "examples/jobs/gang-job.yaml"], None);
    assert!(ok);
    assert_eq!(flat, nested);
}

#[test]
fn delegated_child_jobs_get_distinct_pod_groups() {
    let (ok, stdout, stderr) = kwas(
        &[
            "compile",
            "--jobset-management",
            "delegated",
            "examples/jobsets/option-a.yaml",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    let docs = yaml_docs(&stdout);
    let mut names: Vec<&str> = docs
        .iter()
        .filter(|d| d["kind"] == "PodGroup")
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "{names:?}");
}

/// KEP-6089's Example 1 as the KEP text writes it (draft field names).
const KEP_EXAMPLE_1_DRAFT: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  parallelism: 4
  completions: 4
  scheduling: # New API field - scheduling intent
    policy:
      gang: {} # MinCount is omitted: Job defaults MinCount = parallelism (4)
    constraints:
      topology:
        - level: "topology.kubernetes.io/zone"
    disruption:
      all: {} # DisruptionMode resolves to All (entire group must be disrupted together)
  template:
    spec:
      containers:
        - name: train-node
          image: training-image:v1
"#;

#[test]
fn the_kep_example_with_draft_field_names_fails_with_hints() {
    for args in [
        &["compile", "-"][..],
        &["compile", "--resolved", "-"],
        &["compile", "--flat", "-"],
    ] {
        let (ok, stdout, stderr) = kwas(args, Some(KEP_EXAMPLE_1_DRAFT));
        assert!(!ok, "{args:?}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(
            stderr.trim(),
            "The Job \"train\" is invalid: strict decoding found unknown fields:\n\
             * spec.scheduling.constraints: unknown field; did you mean schedulingConstraints? (constraints is the KEP-6089 draft name)\n\
             * spec.scheduling.constraints.topology[0].level: unknown field; did you mean key? (level is the KEP-6089 draft name)\n\
             * spec.scheduling.disruption: unknown field; did you mean disruptionMode? (disruption is the KEP-6089 draft name)\n\
             * spec.scheduling.policy: unknown field; did you mean schedulingPolicy? (policy is the KEP-6089 draft name)",
            "{args:?}"
        );
    }
    // With the API's names it compiles: gang of 4 in one zone, disrupted together.
    let fixed = KEP_EXAMPLE_1_DRAFT
        .replace("policy:", "schedulingPolicy:")
        .replace("constraints:", "schedulingConstraints:")
        .replace("level:", "key:")
        .replace("disruption:", "disruptionMode:");
    let (ok, stdout, stderr) = kwas(&["compile", "-"], Some(&fixed));
    assert!(ok, "{stderr}");
    let workload = &yaml_docs(&stdout)[0];
    let template = &workload["spec"]["podGroupTemplates"][0];
    assert_eq!(template["schedulingPolicy"]["gang"]["minCount"], 4);
    assert_eq!(
        template["schedulingConstraints"]["topology"][0]["key"],
        "topology.kubernetes.io/zone"
    );
    assert_eq!(template["disruptionMode"], serde_json::json!({"all": {}}));
}

#[test]
fn unknown_fields_anywhere_in_jobs_and_jobsets_are_errors_with_their_paths() {
    let job = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: j, creationTimestamp: null, lables: {a: b}}
spec:
  parallelism: 2
  template:
    metadata: {}
    spec:
      containers: [{name: c, image: i, imagePullPolicyy: Always}]
status: {}
"#;
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(job));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "The Job \"j\" is invalid: strict decoding found unknown fields:\n\
         * metadata.lables: unknown field\n\
         * spec.template.spec.containers[0].imagePullPolicyy: unknown field"
    );
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/jobsets/option-b.yaml"
    ))
    .unwrap();
    let target = "- targetReplicatedJob: workers\n";
    assert!(example.contains(target), "the example's policies changed");
    let indent = example[..example.find(target).unwrap()]
        .rsplit('\n')
        .next()
        .unwrap()
        .len();
    let draft = example.replace(
        target,
        &format!("{target}{}  policy: {{gang: {{}}}}\n", " ".repeat(indent)),
    );
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(&draft));
    assert!(!ok);
    assert!(
        stderr.contains(
            "* spec.scheduling.replicatedJobPolicies[0].policy: unknown field; did you mean schedulingPolicy?"
        ),
        "{stderr}"
    );
}

#[test]
fn workloads_are_decoded_strictly_and_checked_with_the_api_servers_rules() {
    let (ok, stdout, _) = kwas(&["compile", "examples/jobsets/option-b.yaml"], None);
    assert!(ok);
    let workload = yaml_docs(&stdout).remove(0);
    assert_eq!(workload["kind"], "Workload");
    let input = serde_json::to_string(&workload).unwrap();
    let (ok, again, stderr) = kwas(&["compile", "-"], Some(&input));
    assert!(ok, "{stderr}");
    assert_eq!(yaml_docs(&again), std::slice::from_ref(&workload));
    assert!(stderr.contains("a compiled Workload, checked"), "{stderr}");
    // A draft name in a template.
    let mut draft = workload.clone();
    draft["spec"]["compositePodGroupTemplates"][0]["policy"] = serde_json::json!({"basic": {}});
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(&serde_json::to_string(&draft).unwrap()));
    assert!(!ok);
    assert!(
        stderr.contains("* spec.compositePodGroupTemplates[0].policy: unknown field; did you mean schedulingPolicy?"),
        "{stderr}"
    );
    // A Workload the API server would refuse.
    let mut invalid = workload;
    invalid["spec"]["compositePodGroupTemplates"][0]["schedulingPolicy"]["gang"]["minGroupCount"] =
        serde_json::json!(0);
    let (ok, _, stderr) = kwas(&["compile", "-"], Some(&serde_json::to_string(&invalid).unwrap()));
    assert!(!ok);
    assert!(stderr.contains("The Workload \""), "{stderr}");
    assert!(stderr.contains("minGroupCount"), "{stderr}");
}
