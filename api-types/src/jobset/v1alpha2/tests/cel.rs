//! The CRD's CEL rules: upstream's and kwas' scheduling ones.

use serde_json::{Value, json};

use crate::jobset::v1alpha2::JobSetSpec;

fn spec(extra: Value) -> Value {
    let mut spec = json!({"replicatedJobs": [
        {"name": "driver", "replicas": 1, "template": {"spec": {"template": {}}}},
        {"name": "workers", "replicas": 2, "template": {"spec": {"template": {}}}},
    ]});
    if let (Some(s), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        s.extend(extra);
    }
    spec
}

#[track_caller]
fn rejected(new: &Value, old: Option<&Value>, message: &str) {
    let err = JobSetSpec::validate_cel(new, old).expect_err(message);
    assert!(format!("{err:?}").contains(message), "{err:?}");
}

#[test]
fn startup_policy_and_depends_on_are_mutually_exclusive() {
    let mut s = spec(json!({"startupPolicy": {"startupPolicyOrder": "InOrder"}}));
    assert!(JobSetSpec::validate_cel(&s, None).is_ok());
    s["replicatedJobs"][1]["dependsOn"] = json!([{"name": "driver", "status": "Ready"}]);
    rejected(&s, None, "StartupPolicy and DependsOn APIs are mutually exclusive");
    s["startupPolicy"]["startupPolicyOrder"] = json!("AnyOrder");
    assert!(JobSetSpec::validate_cel(&s, None).is_ok());
}

#[test]
fn upstream_immutable_fields() {
    let old = spec(json!({"network": {"subdomain": "a"}, "successPolicy": {"operator": "All"}}));
    assert!(JobSetSpec::validate_cel(&old, Some(&old)).is_ok());
    let new = spec(json!({"network": {"subdomain": "b"}, "successPolicy": {"operator": "All"}}));
    rejected(&new, Some(&old), "Value is immutable");
    let new = spec(json!({"network": {"subdomain": "a"}, "successPolicy": {"operator": "Any"}}));
    rejected(&new, Some(&old), "Value is immutable");
}

#[test]
fn kwas_rules_for_a_webhook_less_cluster() {
    let old = spec(json!({"managedBy": "example.com/old", "suspend": true}));
    let mut new = old.clone();
    new["managedBy"] = json!("example.com/new");
    rejected(&new, Some(&old), "field is immutable");
    let mut more = old.clone();
    more["replicatedJobs"][1]["replicas"] = json!(3);
    rejected(&more, Some(&old), "names, order and replicas");
    let mut resumed = old.clone();
    resumed["suspend"] = json!(false);
    assert!(JobSetSpec::validate_cel(&resumed, Some(&old)).is_ok());
}

#[test]
fn scheduling_rules() {
    let rack = json!({"schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}});
    let mut policy = rack.clone();
    policy["targetReplicatedJob"] = json!("workers");
    let b = spec(json!({"scheduling": {"schedulingPolicy": {"basic": {}}, "replicatedJobPolicies": [policy]}}));
    assert!(JobSetSpec::validate_cel(&b, None).is_ok());
    let mut both = b.clone();
    both["replicatedJobs"][1]["template"]["spec"]["scheduling"] = rack;
    rejected(&both, None, "not both");
    let mut dangling = b.clone();
    dangling["scheduling"]["replicatedJobPolicies"][0]["targetReplicatedJob"] = json!("nope");
    rejected(&dangling, None, "must name a replicated job");
    let mut reserved = b.clone();
    reserved["replicatedJobs"][0]["name"] = json!("jobset");
    rejected(&reserved, None, "may not be `jobset`");
    let mut changed = b.clone();
    changed["scheduling"]["schedulingPolicy"] = json!({"gang": {}});
    rejected(&changed, Some(&b), "spec.scheduling is immutable");
}

/// KEP-6089's two JobSet examples (Option A and Option B, with the v1.37 field names) read, default,
/// validate and pass the CRD's rules.
#[test]
fn kep_6089_examples() {
    use crate::jobset::v1alpha2::validation::{Features, validate_create, validate_scheduling};
    use crate::jobset::v1alpha2::{JobSet, defaults::default_jobset};
    let rack = json!({"topology": [{"key": "topology.kubernetes.io/rack"}]});
    let pod = |name: &str| json!({"spec": {"containers": [{"name": name, "image": format!("{name}-image")}]}});
    let option_a = json!({
        "scheduling": {"schedulingPolicy": {"basic": {}}},
        "replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": {"spec": {"template": pod("main")}}},
            {"name": "workers", "replicas": 16, "template": {"spec": {
                "scheduling": {"schedulingConstraints": rack}, "template": pod("worker")}}},
        ]
    });
    let option_b = json!({
        "scheduling": {"schedulingPolicy": {"basic": {}},
            "replicatedJobPolicies": [{"targetReplicatedJob": "workers", "schedulingConstraints": rack}]},
        "replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": {"spec": {"template": pod("main")}}},
            {"name": "workers", "replicas": 16, "template": {"spec": {"template": pod("worker")}}},
        ]
    });
    for spec in [option_a, option_b] {
        assert!(JobSetSpec::validate_cel(&spec, None).is_ok(), "{spec}");
        let manifest = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "pretrain"}, "spec": spec});
        let mut js: JobSet = serde_json::from_value(manifest).unwrap_or_default();
        assert_eq!(js.spec.replicated_jobs.len(), 2);
        default_jobset(&mut js);
        assert!(validate_create(&js, &Features::default(), &[]).is_empty());
        assert!(validate_scheduling(&js.spec).is_empty());
        let out = serde_json::to_value(&js).unwrap_or_default();
        assert_eq!(
            out["spec"]["network"],
            json!({"enableDNSHostnames": true, "publishNotReadyAddresses": true})
        );
        assert_eq!(out["spec"]["replicatedJobs"][1]["groupName"], "default");
        assert_eq!(out["spec"]["startupPolicy"]["startupPolicyOrder"], "AnyOrder");
        assert_eq!(out["spec"]["successPolicy"]["operator"], "All");
        assert_eq!(
            out["spec"]["replicatedJobs"][1]["template"]["spec"]["completionMode"],
            "Indexed"
        );
    }
}
