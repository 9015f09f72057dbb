//! `TestJobSetDefaulting`.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use super::*;
use crate::jobset::v1alpha2::defaults::default_jobset;
use crate::jobset::v1alpha2::{
    FailurePolicy, FailurePolicyRule, JOBSET_CONTROLLER_NAME, Network, Operator, RetentionPolicyType, StartupPolicy,
    StartupPolicyOptions, VolumeClaimPolicy, VolumeRetentionPolicy,
};

/// Upstream's `TestPodTemplate`: restart policy Never, one container.
fn test_pod_template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            restart_policy: Some("Never".to_string()),
            containers: vec![Container {
                name: "test-container".to_string(),
                image: Some("busybox:latest".to_string()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

fn network(dns: bool, publish: bool) -> Option<Network> {
    Some(Network {
        enable_dns_hostnames: Some(dns),
        subdomain: String::new(),
        publish_not_ready_addresses: Some(publish),
    })
}

/// A JobSet already holding every default (upstream's `defaultSuccessPolicy`, `defaultStartupPolicy`,
/// `defaultNetwork`, managed by the JobSet controller) with one Indexed replicated job of
/// `TestPodTemplate`.
fn defaulted() -> JobSet {
    let rjob = ReplicatedJob {
        template: JobTemplateSpec {
            metadata: None,
            spec: Some(JobSpec {
                template: test_pod_template(),
                completion_mode: Some("Indexed".to_string()),
                ..Default::default()
            }),
        },
        ..Default::default()
    };
    let mut js = JobSet::new(
        "",
        JobSetSpec {
            replicated_jobs: vec![rjob],
            success_policy: Some(SuccessPolicy::default()),
            startup_policy: Some(StartupPolicy::default()),
            network: network(true, true),
            managed_by: Some(JOBSET_CONTROLLER_NAME.to_string()),
            ..Default::default()
        },
    );
    js.metadata = Default::default();
    js
}

fn job(js: &mut JobSet) -> &mut JobSpec {
    js.spec.replicated_jobs[0]
        .template
        .spec
        .get_or_insert_with(JobSpec::default)
}

#[track_caller]
fn check(mut js: JobSet, want: &JobSet) {
    default_jobset(&mut js);
    assert_eq!(&js, want);
}

/// "job completion mode is unset"
#[test]
fn job_completion_mode_is_unset() {
    let mut js = defaulted();
    job(&mut js).completion_mode = None;
    check(js, &defaulted());
}

/// "job completion mode is set to non-indexed"
#[test]
fn job_completion_mode_is_set_to_non_indexed() {
    let mut js = defaulted();
    js.spec.startup_policy = None;
    job(&mut js).completion_mode = Some("NonIndexed".to_string());
    let mut want = defaulted();
    job(&mut want).completion_mode = Some("NonIndexed".to_string());
    check(js, &want);
}

/// "enableDNSHostnames is unset"
#[test]
fn enable_dns_hostnames_is_unset() {
    let mut js = defaulted();
    js.spec.network = None;
    check(js, &defaulted());
}

/// "enableDNSHostnames is false"
#[test]
fn enable_dns_hostnames_is_false() {
    let mut js = defaulted();
    js.spec.network = Some(Network {
        enable_dns_hostnames: Some(false),
        ..Default::default()
    });
    job(&mut js).completion_mode = Some("NonIndexed".to_string());
    let mut want = defaulted();
    want.spec.network = network(false, true);
    job(&mut want).completion_mode = Some("NonIndexed".to_string());
    check(js, &want);
}

/// "PublishNotReadyNetworkAddresess is false"
#[test]
fn publish_not_ready_network_addresess_is_false() {
    let mut js = defaulted();
    js.spec.network = Some(Network {
        publish_not_ready_addresses: Some(false),
        ..Default::default()
    });
    let mut want = defaulted();
    want.spec.network = network(true, false);
    check(js, &want);
}

/// "PublishNotReadyNetworkAddresess is true"
#[test]
fn publish_not_ready_network_addresess_is_true() {
    let mut js = defaulted();
    js.spec.network = network(false, true);
    let mut want = defaulted();
    want.spec.network = network(false, true);
    check(js, &want);
}

fn with_restart_policy(mut js: JobSet, policy: Option<&str>) -> JobSet {
    job(&mut js).template.spec = Some(PodSpec {
        restart_policy: policy.map(str::to_string),
        ..Default::default()
    });
    js
}

/// "pod restart policy unset"
#[test]
fn pod_restart_policy_unset() {
    check(
        with_restart_policy(defaulted(), None),
        &with_restart_policy(defaulted(), Some("OnFailure")),
    );
}

/// "pod restart policy set"
#[test]
fn pod_restart_policy_set() {
    let always = with_restart_policy(defaulted(), Some("Always"));
    check(always.clone(), &always);
}

/// "success policy unset"
#[test]
fn success_policy_unset() {
    let mut js = with_restart_policy(defaulted(), Some("Always"));
    js.spec.success_policy = None;
    check(js, &with_restart_policy(defaulted(), Some("Always")));
}

fn any_operator(mut js: JobSet) -> JobSet {
    js.spec.success_policy = Some(SuccessPolicy {
        operator: Operator::Any,
        target_replicated_jobs: Vec::new(),
    });
    js
}

/// "success policy operator set, replicatedJobNames unset"
#[test]
fn success_policy_operator_set_replicated_job_names_unset() {
    let js = any_operator(with_restart_policy(defaulted(), Some("Always")));
    check(js.clone(), &js);
}

/// "startup policy order InOrder set"
#[test]
fn startup_policy_order_in_order_set() {
    let mut js = any_operator(with_restart_policy(defaulted(), Some("Always")));
    js.spec.startup_policy = Some(StartupPolicy {
        startup_policy_order: StartupPolicyOptions::InOrder,
    });
    check(js.clone(), &js);
}

/// "managedBy field is left nil"
#[test]
fn managed_by_field_is_left_nil() {
    let mut js = defaulted();
    js.spec.managed_by = None;
    js.spec.startup_policy = None;
    let mut want = defaulted();
    want.spec.managed_by = None;
    check(js, &want);
}

/// "when provided, managedBy field is preserved"
#[test]
fn when_provided_managed_by_field_is_preserved() {
    let mut js = defaulted();
    js.spec.managed_by = Some("other-controller".to_string());
    js.spec.startup_policy = None;
    let mut want = defaulted();
    want.spec.managed_by = Some("other-controller".to_string());
    check(js, &want);
}

fn with_rule_names(mut js: JobSet, names: &[&str]) -> JobSet {
    js.spec.failure_policy = Some(FailurePolicy {
        rules: names
            .iter()
            .map(|n| FailurePolicyRule {
                name: (*n).to_string(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    js.spec.startup_policy = None;
    js
}

/// "failure policy rule name is defaulted when: there is one rule and it does not have a name"
#[test]
fn failure_policy_rule_name_is_defaulted_when_there_is_one_rule_and_it_does_not_have_a_name() {
    let mut want = with_rule_names(defaulted(), &["failurePolicyRule0"]);
    want.spec.startup_policy = defaulted().spec.startup_policy;
    check(with_rule_names(defaulted(), &[""]), &want);
}

/// "failure policy rule name is defaulted when: there are two rules, the first rule has a name, the
/// second rule does not have a name"
#[test]
fn failure_policy_rule_name_is_defaulted_when_the_second_of_two_rules_does_not_have_a_name() {
    let mut want = with_rule_names(defaulted(), &["ruleWithAName", "failurePolicyRule1"]);
    want.spec.startup_policy = defaulted().spec.startup_policy;
    check(with_rule_names(defaulted(), &["ruleWithAName", ""]), &want);
}

/// "volumeClaimPolicy retentionPolicy is defaulted to Delete when nil"
#[test]
fn volume_claim_policy_retention_policy_is_defaulted_to_delete_when_nil() {
    let template = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("test-volume".to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut js = defaulted();
    js.spec.volume_claim_policies = vec![VolumeClaimPolicy {
        templates: vec![template],
        retention_policy: None,
    }];
    let mut want = js.clone();
    want.spec.volume_claim_policies[0].retention_policy = Some(VolumeRetentionPolicy {
        when_deleted: Some(RetentionPolicyType::Delete),
    });
    check(js, &want);
}
