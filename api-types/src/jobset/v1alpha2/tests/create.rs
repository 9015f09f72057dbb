//! `TestValidateCreate` and `TestGetJobSetNameForValidation`.

use k8s_openapi::api::core::v1::{
    EmptyDirVolumeSource, PersistentVolumeClaim, PersistentVolumeClaimSpec, Volume, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::jobset::v1alpha2::field::is_domain_prefixed_path;
use crate::jobset::v1alpha2::validation::{
    Features, GROUP_NAME_TOO_LONG, JOB_NAME_TOO_LONG, POD_NAME_TOO_LONG, SUBDOMAIN_TOO_LONG,
    jobset_name_for_validation, validate_create,
};
use crate::jobset::v1alpha2::{
    Coordinator, DependsOn, DependsOnStatus, FailurePolicy, FailurePolicyAction, FailurePolicyRule,
    JOBSET_CONTROLLER_NAME, JobSetRestartStrategy, Network, RetentionPolicyType, VolumeClaimPolicy,
    VolumeRetentionPolicy,
};

fn check(js: &JobSet, want: &[&str]) {
    check_with(js, Features::default(), &[], want);
}

#[track_caller]
fn check_with(js: &JobSet, features: Features, pvcs: &[PersistentVolumeClaim], want: &[&str]) {
    assert_errors(&validate_create(js, &features, pvcs), want);
}

fn rule(name: &str, action: FailurePolicyAction) -> FailurePolicyRule {
    FailurePolicyRule {
        name: name.to_string(),
        action,
        ..Default::default()
    }
}

fn with_rules(mut js: JobSet, rules: Vec<FailurePolicyRule>) -> JobSet {
    js.spec.failure_policy = Some(FailurePolicy {
        rules,
        ..Default::default()
    });
    js
}

/// `rj("rj", replicas)`, Indexed with one completion and parallelism 1.
fn indexed_rj(replicas: i32) -> ReplicatedJob {
    indexed(rj("rj", replicas), Some(1), Some(1))
}

/// "generateName that produces overlong child job names is rejected"
#[test]
fn generate_name_that_produces_overlong_child_job_names_is_rejected() {
    let mut js = jobset("", vec![rj("worker", 1)]);
    js.metadata.generate_name = Some(format!("{}-", "a".repeat(49)));
    check(&js, &[JOB_NAME_TOO_LONG]);
}

/// "generateName that produces overlong PVC names is rejected"
#[test]
fn generate_name_that_produces_overlong_pvc_names_is_rejected() {
    let worker = with_job(rj("worker", 1), |j| {
        j.template.spec = Some(PodSpec {
            containers: vec![container("test", &["datasets"])],
            ..Default::default()
        });
    });
    let mut js = jobset("", vec![worker]);
    js.metadata.generate_name = Some(format!("{}-", "a".repeat(49)));
    js.spec.volume_claim_policies = vec![VolumeClaimPolicy {
        templates: vec![pvc_template("datasets")],
        retention_policy: None,
    }];
    check(&js, &["VolumeClaimPolicies template name is too long"]);
}

/// "number of pods exceeds the limit"
#[test]
fn number_of_pods_exceeds_the_limit() {
    let js = jobset(
        "js",
        vec![
            with_job(rj("test-jobset-replicated-job-0", i32::MAX), |j| {
                j.parallelism = Some(i32::MAX)
            }),
            with_job(rj("test-jobset-replicated-job-1", i32::MIN), |j| {
                j.parallelism = Some(i32::MIN)
            }),
        ],
    );
    check(
        &js,
        &[
            "the product of replicas and parallelism must not exceed 2147483647 for replicatedJob 'test-jobset-replicated-job-0'",
            "the product of replicas and parallelism must not exceed 2147483647 for replicatedJob 'test-jobset-replicated-job-1'",
        ],
    );
}

/// "number of pods within the limit"
#[test]
fn number_of_pods_within_the_limit() {
    check(&jobset("js", vec![rj("test-jobset-replicated-job-0", 1)]), &[]);
}

/// "success policy has non matching replicated job"
#[test]
fn success_policy_has_non_matching_replicated_job() {
    let mut js = jobset("js", vec![rj("test-jobset-replicated-job-0", 1)]);
    js.spec.success_policy = Some(SuccessPolicy {
        operator: super::super::Operator::All,
        target_replicated_jobs: vec!["does not exist".to_string()],
    });
    check(
        &js,
        &["invalid replicatedJob name 'does not exist' does not appear in .spec.ReplicatedJobs"],
    );
}

/// "network has invalid dns name"
#[test]
fn network_has_invalid_dns_name() {
    let mut js = jobset("js", vec![rj("test-jobset-replicated-job-0", 1)]);
    js.spec.network = Some(Network {
        enable_dns_hostnames: Some(true),
        subdomain: "a".repeat(64),
        publish_not_ready_addresses: None,
    });
    check(&js, &[SUBDOMAIN_TOO_LONG]);
}

/// "jobset name with invalid character"
#[test]
fn jobset_name_with_invalid_character() {
    check(
        &jobset("js", vec![rj("username.llama65b", 1)]),
        &[
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ],
    );
}

/// "group name is not DNS 1035 compliant"
#[test]
fn group_name_is_not_dns_1035_compliant() {
    let mut r = rj("rj", 1);
    r.group_name = "a".repeat(64);
    check(&jobset("js", vec![r]), &[GROUP_NAME_TOO_LONG]);
}

/// "jobset name will result in job name being too long"
#[test]
fn jobset_name_will_result_in_job_name_being_too_long() {
    check(&jobset(&"a".repeat(62), vec![rj("rj", 101)]), &[JOB_NAME_TOO_LONG]);
}

/// "jobset name will result in a pod name being too long"
#[test]
fn jobset_name_will_result_in_a_pod_name_being_too_long() {
    check(&jobset(&"a".repeat(56), vec![indexed_rj(1)]), &[POD_NAME_TOO_LONG]);
}

fn managed_by(value: &str) -> JobSet {
    let mut js = jobset("js", vec![indexed_rj(1)]);
    js.spec.managed_by = Some(value.to_string());
    js
}

/// "jobset controller name is not a domain-prefixed path"
#[test]
fn jobset_controller_name_is_not_a_domain_prefixed_path() {
    let name = "notDomainPrefixedPathControllerName";
    let want: Vec<String> = is_domain_prefixed_path("spec.managedBy", name)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(!want.is_empty());
    check(&managed_by(name), &want.iter().map(String::as_str).collect::<Vec<_>>());
}

/// "jobset controller name is too long"
#[test]
fn jobset_controller_name_is_too_long() {
    let name = format!("foo.bar/{}", "a".repeat(63));
    check(
        &managed_by(&name),
        &["spec.managedBy: Too long: may not be more than 63 bytes"],
    );
}

/// "jobset controller name is set and valid"
#[test]
fn jobset_controller_name_is_set_and_valid() {
    check(&managed_by(JOBSET_CONTROLLER_NAME), &[]);
}

/// "jobset controller name is unset"
#[test]
fn jobset_controller_name_is_unset() {
    check(&jobset("js", vec![indexed_rj(1)]), &[]);
}

/// "failure policy rule name is valid"
#[test]
fn failure_policy_rule_name_is_valid() {
    let js = with_rules(
        jobset("js", vec![indexed_rj(1)]),
        vec![rule(
            "superAwesomeFailurePolicyRule",
            FailurePolicyAction::RestartJobSet,
        )],
    );
    check(&js, &[]);
}

/// "jobset failure policy has an invalid on job failure reason"
#[test]
fn jobset_failure_policy_has_an_invalid_on_job_failure_reason() {
    let mut r = rule("", FailurePolicyAction::FailJobSet);
    r.on_job_failure_reasons = vec!["fakeReason".to_string()];
    let mut js = with_rules(jobset("js", vec![indexed_rj(1)]), vec![r]);
    if let Some(fp) = &mut js.spec.failure_policy {
        fp.max_restarts = 1;
    }
    check(
        &js,
        &["invalid job failure reason 'fakeReason' in failure policy is not a recognized job failure reason"],
    );
}

/// "jobset failure policy has an invalid replicated job"
#[test]
fn jobset_failure_policy_has_an_invalid_replicated_job() {
    let mut r = rule("", FailurePolicyAction::FailJobSet);
    r.target_replicated_jobs = vec!["fakeReplicatedJob".to_string()];
    let js = with_rules(jobset("js", vec![indexed_rj(1)]), vec![r]);
    check(
        &js,
        &["invalid replicatedJob name 'fakeReplicatedJob' in failure policy does not appear in .spec.ReplicatedJobs"],
    );
}

/// "jobset failure policy rule name is 0 characters long a.k.a unset"
#[test]
fn jobset_failure_policy_rule_name_is_0_characters_long_aka_unset() {
    let js = with_rules(jobset("js", vec![indexed_rj(1)]), vec![FailurePolicyRule::default()]);
    check(
        &js,
        &[
            "invalid failure policy rule name of length 0, the rule name must be at least 1 characters long and at most 128 characters long",
        ],
    );
}

/// "jobset failure policy rule name is greater than 128 characters long"
#[test]
fn jobset_failure_policy_rule_name_is_greater_than_128_characters_long() {
    let js = with_rules(
        jobset("js", vec![indexed_rj(1)]),
        vec![rule(&"a".repeat(129), FailurePolicyAction::RestartJobSet)],
    );
    check(
        &js,
        &[
            "invalid failure policy rule name of length 129, the rule name must be at least 1 characters long and at most 128 characters long",
        ],
    );
}

/// "there are two failure policy rules with the same name"
#[test]
fn there_are_two_failure_policy_rules_with_the_same_name() {
    let r = rule("repeatedRuleName", FailurePolicyAction::RestartJobSet);
    let js = with_rules(jobset("js", vec![indexed_rj(1)]), vec![r.clone(), r]);
    check(
        &js,
        &["rule names are not unique, rules with indices [0 1] all have the same name 'repeatedRuleName'"],
    );
}

const RULE_NAME_MESSAGE: &str = "a failure policy rule name must start with an alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";

/// "failure policy rule name does not start with an alphabetic character"
#[test]
fn failure_policy_rule_name_does_not_start_with_an_alphabetic_character() {
    let js = with_rules(
        jobset("js", vec![indexed_rj(1)]),
        vec![rule("1ruleToRuleThemAll", FailurePolicyAction::RestartJobSet)],
    );
    check(
        &js,
        &[&format!(
            "invalid failure policy rule name '1ruleToRuleThemAll', {RULE_NAME_MESSAGE}"
        )],
    );
}

/// "failure policy rule name does not end with an alphanumeric nor '_'"
#[test]
fn failure_policy_rule_name_does_not_end_with_an_alphanumeric_nor_underscore() {
    let js = with_rules(
        jobset("js", vec![indexed_rj(1)]),
        vec![rule("ruleToRuleThemAll,", FailurePolicyAction::RestartJobSet)],
    );
    check(
        &js,
        &[&format!(
            "invalid failure policy rule name 'ruleToRuleThemAll,', {RULE_NAME_MESSAGE}"
        )],
    );
}

fn coordinated(name: &str, rjobs: Vec<ReplicatedJob>, target: &str, job: i64, pod: i64) -> JobSet {
    let mut js = jobset(name, rjobs);
    js.spec.coordinator = Some(Coordinator {
        replicated_job: target.to_string(),
        job_index: job,
        pod_index: pod,
    });
    js
}

fn two_rjobs() -> Vec<ReplicatedJob> {
    vec![
        indexed(rj("replicatedjob-a", 2), Some(2), Some(2)),
        indexed(rj("replicatedjob-b", 2), Some(2), Some(2)),
    ]
}

/// "coordinator replicated job does not exist"
#[test]
fn coordinator_replicated_job_does_not_exist() {
    let js = coordinated("js", two_rjobs(), "fake-rjob", 0, 0);
    check(&js, &["coordinator replicatedJob fake-rjob does not exist"]);
}

/// "coordinator replicated job missing completions"
#[test]
fn coordinator_replicated_job_missing_completions() {
    let mut rjobs = two_rjobs();
    rjobs[0] = indexed(rj("replicatedjob-a", 2), None, Some(2));
    let js = coordinated("js", rjobs, "replicatedjob-a", 0, 0);
    check(
        &js,
        &["job for coordinator pod must be indexed completion mode, and completions number must be set"],
    );
}

/// "coordinator job index invalid"
#[test]
fn coordinator_job_index_invalid() {
    let js = coordinated("js", two_rjobs(), "replicatedjob-a", 2, 0);
    check(
        &js,
        &["coordinator job index 2 is invalid for replicatedJob replicatedjob-a"],
    );
}

/// "coordinator pod index invalid"
#[test]
fn coordinator_pod_index_invalid() {
    let js = coordinated("js", two_rjobs(), "replicatedjob-a", 0, 2);
    check(
        &js,
        &["coordinator pod index 2 is invalid for replicatedJob replicatedjob-a job index 0"],
    );
}

/// "coordinator label value is too long due to long JobSet name"
#[test]
fn coordinator_label_value_is_too_long_due_to_long_jobset_name() {
    let rjobs = vec![indexed(rj("replicatedjob-a", 1), Some(1), Some(1))];
    let js = coordinated(&"a".repeat(60), rjobs, "replicatedjob-a", 0, 0);
    check(&js, &["spec will lead to invalid label value"]);
}

/// "coordinator label value is too long due to long ReplicatedJob name"
#[test]
fn coordinator_label_value_is_too_long_due_to_long_replicated_job_name() {
    let long = "a".repeat(60);
    let rjobs = vec![indexed(rj(&long, 1), Some(1), Some(1))];
    let js = coordinated("jobset", rjobs, &long, 0, 0);
    check(&js, &["spec will lead to invalid label value"]);
}

/// "coordinator label value is too long due to long SubDomain"
#[test]
fn coordinator_label_value_is_too_long_due_to_long_subdomain() {
    let rjobs = vec![indexed(rj("replicatedjob-a", 1), Some(1), Some(1))];
    let mut js = coordinated("jobset", rjobs, "replicatedjob-a", 0, 0);
    js.spec.network = Some(Network {
        subdomain: "a".repeat(60),
        ..Default::default()
    });
    check(&js, &["spec will lead to invalid label value"]);
}

const RESTART_JOB_REPLICAS: &str = "JobSet cannot have a failure policy rule with RestartJob or RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > 1024";
const RESTART_JOB_GATE: &str = "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not allowed when RestartJob feature gate is disabled";

fn restart_job(replicas: i32, name: &str, action: FailurePolicyAction, enabled: bool, want: &str) {
    let js = with_rules(jobset("js", vec![indexed_rj(replicas)]), vec![rule(name, action)]);
    let features = Features {
        restart_job: enabled,
        ..Default::default()
    };
    check_with(&js, features, &[], &[want]);
}

/// "jobset failure policy rule has RestartJob action and a replicated job with replicas > 1024"
#[test]
fn jobset_failure_policy_rule_has_restart_job_action_and_a_replicated_job_with_replicas_over_1024() {
    restart_job(
        1025,
        "restartJobRule",
        FailurePolicyAction::RestartJob,
        true,
        RESTART_JOB_REPLICAS,
    );
}

/// "jobset failure policy rule has RestartJobAndIgnoreMaxRestarts action and a replicated job with
/// replicas > 1024"
#[test]
fn jobset_failure_policy_rule_has_restart_job_and_ignore_max_restarts_action_and_a_replicated_job_with_replicas_over_1024()
 {
    let action = FailurePolicyAction::RestartJobAndIgnoreMaxRestarts;
    restart_job(
        1025,
        "restartJobAndIgnoreMaxRestartsRule",
        action,
        true,
        RESTART_JOB_REPLICAS,
    );
}

/// "jobset failure policy rule has RestartJob action and RestartJob feature gate is disabled"
#[test]
fn jobset_failure_policy_rule_has_restart_job_action_and_restart_job_feature_gate_is_disabled() {
    restart_job(
        1,
        "restartJobRule",
        FailurePolicyAction::RestartJob,
        false,
        RESTART_JOB_GATE,
    );
}

/// "jobset failure policy rule has RestartJobAndIgnoreMaxRestarts action and RestartJob feature gate is
/// disabled"
#[test]
fn jobset_failure_policy_rule_has_restart_job_and_ignore_max_restarts_action_and_restart_job_feature_gate_is_disabled()
{
    let action = FailurePolicyAction::RestartJobAndIgnoreMaxRestarts;
    restart_job(1, "restartJobAndIgnoreMaxRestartsRule", action, false, RESTART_JOB_GATE);
}

/// `rj(name, 1)` depending (status Complete) on `deps`.
fn depends(name: &str, deps: &[&str]) -> ReplicatedJob {
    let mut r = rj(name, 1);
    r.depends_on = deps
        .iter()
        .map(|d| DependsOn {
            name: (*d).to_string(),
            status: DependsOnStatus::Complete,
        })
        .collect();
    r
}

/// "DependsOn is valid since job-2 depends on job-1 and job-3 depends on job-1"
#[test]
fn depends_on_is_valid_since_job_2_depends_on_job_1_and_job_3_depends_on_job_1() {
    let js = jobset(
        "js",
        vec![
            rj("job-1", 1),
            depends("job-2", &["job-1"]),
            depends("job-3", &["job-1"]),
        ],
    );
    check(&js, &[]);
}

/// "DependsOn is valid since job-2 depends on job-1 and job-3 depends on job-2"
#[test]
fn depends_on_is_valid_since_job_2_depends_on_job_1_and_job_3_depends_on_job_2() {
    let js = jobset(
        "js",
        vec![
            rj("job-1", 1),
            depends("job-2", &["job-1"]),
            depends("job-3", &["job-2"]),
        ],
    );
    check(&js, &[]);
}

/// "DependsOn is valid since job-3 depends on job-1 and job-2"
#[test]
fn depends_on_is_valid_since_job_3_depends_on_job_1_and_job_2() {
    let js = jobset(
        "js",
        vec![rj("job-1", 1), rj("job-2", 1), depends("job-3", &["job-1", "job-2"])],
    );
    check(&js, &[]);
}

/// "DependsOn is invalid since job-2 depends on job-3"
#[test]
fn depends_on_is_invalid_since_job_2_depends_on_job_3() {
    let js = jobset(
        "js",
        vec![
            rj("job-1", 1),
            depends("job-2", &["job-3"]),
            depends("job-3", &["job-1"]),
        ],
    );
    check(&js, &["replicatedJob: job-2 cannot depend on replicatedJob: job-3"]);
}

/// "DependsOn is invalid since job-2 depends on job-3 and job-1"
#[test]
fn depends_on_is_invalid_since_job_2_depends_on_job_3_and_job_1() {
    let js = jobset(
        "js",
        vec![
            rj("job-1", 1),
            depends("job-2", &["job-1", "job-3"]),
            depends("job-3", &["job-1"]),
        ],
    );
    check(&js, &["replicatedJob: job-2 cannot depend on replicatedJob: job-3"]);
}

/// "job-2 depends on invalid ReplicatedJob"
#[test]
fn job_2_depends_on_invalid_replicated_job() {
    let js = jobset("js", vec![rj("job-1", 1), depends("job-2", &["invalid"])]);
    check(&js, &["replicatedJob: job-2 cannot depend on replicatedJob: invalid"]);
}

/// "dependsOn should not fail if there are no replicated jobs"
#[test]
fn depends_on_should_not_fail_if_there_are_no_replicated_jobs() {
    check(&jobset("js", Vec::new()), &[]);
}

/// "dependsOn cannot be set for first replicated job"
#[test]
fn depends_on_cannot_be_set_for_first_replicated_job() {
    let js = jobset("js", vec![depends("job-1", &["invalid"])]);
    check(&js, &["DependsOn can't be set for the first ReplicatedJob"]);
}

/// Upstream's `testPVCSpec`: ReadWriteMany, 1Gi (or, `other`, ReadWriteOnce, 2Gi).
fn pvc_spec(other: bool) -> PersistentVolumeClaimSpec {
    let (mode, size) = if other {
        ("ReadWriteOnce", "2Gi")
    } else {
        ("ReadWriteMany", "1Gi")
    };
    PersistentVolumeClaimSpec {
        access_modes: Some(vec![mode.to_string()]),
        resources: Some(VolumeResourceRequirements {
            requests: Some([("storage".to_string(), Quantity(size.to_string()))].into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pvc_template(name: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(pvc_spec(false)),
        status: None,
    }
}

fn claim_policy(name: &str, retention: RetentionPolicyType) -> VolumeClaimPolicy {
    VolumeClaimPolicy {
        templates: vec![pvc_template(name)],
        retention_policy: Some(VolumeRetentionPolicy {
            when_deleted: Some(retention),
        }),
    }
}

/// A replicated job whose container (or, `init`, init container) mounts the named volumes.
fn mounting(name: &str, mounts: &[&str], init: bool) -> ReplicatedJob {
    with_job(rj(name, 1), |j| {
        let mut pod = PodSpec::default();
        if init {
            pod.init_containers = Some(vec![container("test-init", mounts)]);
        } else {
            pod.containers = vec![container("test", mounts)];
        }
        j.template.spec = Some(pod);
    })
}

fn with_claims(name: &str, rjobs: Vec<ReplicatedJob>, policies: Vec<VolumeClaimPolicy>) -> JobSet {
    let mut js = jobset(name, rjobs);
    js.metadata.namespace = Some("default".to_string());
    js.spec.volume_claim_policies = policies;
    js
}

/// The PVC `test-volume-js` in namespace `default`.
fn existing_pvc(other: bool) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("test-volume-js".to_string()),
            namespace: Some("default".to_string()),
            ..Default::default()
        },
        spec: Some(pvc_spec(other)),
        status: None,
    }
}

/// "volumeClaimPolicy is valid since volume exists in the container"
#[test]
fn volume_claim_policy_is_valid_since_volume_exists_in_the_container() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &["test-volume"], false)],
        vec![claim_policy("test-volume", RetentionPolicyType::Delete)],
    );
    check(&js, &[]);
}

/// "volumeClaimPolicy is valid since volume exists in the initContainer"
#[test]
fn volume_claim_policy_is_valid_since_volume_exists_in_the_init_container() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &[], false), mounting("job-2", &["test-volume"], true)],
        vec![claim_policy("test-volume", RetentionPolicyType::Delete)],
    );
    check(&js, &[]);
}

/// "volumeClaimPolicy is invalid since template names are not unique"
#[test]
fn volume_claim_policy_is_invalid_since_template_names_are_not_unique() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &["duplicate-volume"], false)],
        vec![
            claim_policy("duplicate-volume", RetentionPolicyType::Delete),
            claim_policy("duplicate-volume", RetentionPolicyType::Retain),
        ],
    );
    check(&js, &["names must be unique for VolumeClaimPolicies template"]);
}

/// "volumeClaimPolicy is invalid since template name has uppercase letters"
#[test]
fn volume_claim_policy_is_invalid_since_template_name_has_uppercase_letters() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &["InvalidVolumeName"], false)],
        vec![claim_policy("InvalidVolumeName", RetentionPolicyType::Delete)],
    );
    check(
        &js,
        &["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"],
    );
}

/// "volumeClaimPolicy is invalid since template name is too long"
#[test]
fn volume_claim_policy_is_invalid_since_template_name_is_too_long() {
    let long = "a".repeat(64);
    let js = with_claims(
        "js",
        vec![mounting("job-1", &[&long], false)],
        vec![claim_policy(&long, RetentionPolicyType::Delete)],
    );
    check(&js, &["VolumeClaimPolicies template name is too long"]);
}

/// "volumeClaimPolicy is invalid since no matching volumeMount in containers"
#[test]
fn volume_claim_policy_is_invalid_since_no_matching_volume_mount_in_containers() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &[], false)],
        vec![claim_policy("test-volume", RetentionPolicyType::Delete)],
    );
    check(&js, &["replicatedJob containers don't have a matching volumeMount"]);
}

/// "volumeClaimPolicy is invalid since volume name conflicts with existing volume"
#[test]
fn volume_claim_policy_is_invalid_since_volume_name_conflicts_with_existing_volume() {
    let r = with_job(mounting("job-1", &["conflicting-volume"], false), |j| {
        if let Some(pod) = &mut j.template.spec {
            pod.volumes = Some(vec![Volume {
                name: "conflicting-volume".to_string(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Default::default()
            }]);
        }
    });
    let js = with_claims(
        "js",
        vec![r],
        vec![claim_policy("conflicting-volume", RetentionPolicyType::Delete)],
    );
    check(&js, &["volume name conflicts with VolumeClaimPolicy template name"]);
}

/// "volumeClaimPolicy is valid when existing PVC matches template spec"
#[test]
fn volume_claim_policy_is_valid_when_existing_pvc_matches_template_spec() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &["test-volume"], false)],
        vec![claim_policy("test-volume", RetentionPolicyType::Retain)],
    );
    check_with(&js, Features::default(), &[existing_pvc(false)], &[]);
}

/// "volumeClaimPolicy retention policy must be retain for existing PVC"
#[test]
fn volume_claim_policy_retention_policy_must_be_retain_for_existing_pvc() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &["test-volume"], false)],
        vec![claim_policy("test-volume", RetentionPolicyType::Delete)],
    );
    let want = ["retentionPolicy must be retain when PVC exist"];
    check_with(&js, Features::default(), &[existing_pvc(false)], &want);
}

/// "volumeClaimPolicy is invalid when existing PVC does not match template spec"
#[test]
fn volume_claim_policy_is_invalid_when_existing_pvc_does_not_match_template_spec() {
    let js = with_claims(
        "js",
        vec![mounting("job-1", &["test-volume"], false)],
        vec![claim_policy("test-volume", RetentionPolicyType::Retain)],
    );
    let want = ["spec does not match existing PVC"];
    check_with(&js, Features::default(), &[existing_pvc(true)], &want);
}

/// An in-place restarting JobSet whose job-1 has the given Job fields.
fn in_place(
    parallelism: Option<i32>,
    completions: Option<i32>,
    backoff: Option<i32>,
    replacement: Option<&str>,
) -> JobSet {
    let r = with_job(rj("job-1", 1), |j| {
        j.parallelism = parallelism;
        j.completions = completions;
        j.backoff_limit = backoff;
        j.pod_replacement_policy = replacement.map(str::to_string);
    });
    let mut js = jobset("js", vec![r]);
    js.spec.failure_policy = Some(FailurePolicy {
        restart_strategy: JobSetRestartStrategy::InPlaceRestart,
        ..Default::default()
    });
    js
}

const IN_PLACE: Features = Features {
    in_place_restart: true,
    restart_job: false,
    elastic_jobset: false,
};

/// "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"
#[test]
fn in_place_restart_restart_strategy_cannot_be_set_when_in_place_restart_feature_gate_is_disabled() {
    check(
        &in_place(None, None, None, None),
        &["InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"],
    );
}

/// "InPlaceRestart restart strategy can be set when InPlaceRestart feature gate is enabled"
#[test]
fn in_place_restart_restart_strategy_can_be_set_when_in_place_restart_feature_gate_is_enabled() {
    let js = in_place(Some(1), Some(1), Some(i32::MAX), Some("Failed"));
    check_with(&js, IN_PLACE, &[], &[]);
}

/// "InPlaceRestart enabled: backoffLimit is not MaxInt32"
#[test]
fn in_place_restart_enabled_backoff_limit_is_not_max_int32() {
    let js = in_place(Some(1), Some(1), Some(0), Some("Failed"));
    let want = ["replicatedJob job-1: must be set to 2147483647 (MaxInt32) when in-place restart is enabled"];
    check_with(&js, IN_PLACE, &[], &want);
}

/// "InPlaceRestart enabled: podReplacementPolicy is not Failed"
#[test]
fn in_place_restart_enabled_pod_replacement_policy_is_not_failed() {
    let js = in_place(Some(1), Some(1), Some(i32::MAX), Some("TerminatingOrFailed"));
    let want = ["replicatedJob job-1: must be set to Failed when in-place restart is enabled"];
    check_with(&js, IN_PLACE, &[], &want);
}

const COMPLETIONS_EQUAL: &str = "replicatedJob job-1: completions and parallelism must be set and equal to each other when in-place restart is enabled";

/// "InPlaceRestart enabled: completions != parallelism"
#[test]
fn in_place_restart_enabled_completions_not_equal_to_parallelism() {
    let js = in_place(Some(1), Some(2), Some(i32::MAX), Some("Failed"));
    check_with(&js, IN_PLACE, &[], &[COMPLETIONS_EQUAL]);
}

/// "InPlaceRestart enabled: completions is nil"
#[test]
fn in_place_restart_enabled_completions_is_nil() {
    let js = in_place(Some(1), None, Some(i32::MAX), Some("Failed"));
    check_with(&js, IN_PLACE, &[], &[COMPLETIONS_EQUAL]);
}

/// "InPlaceRestart enabled: parallelism is nil"
#[test]
fn in_place_restart_enabled_parallelism_is_nil() {
    let js = in_place(None, Some(1), Some(i32::MAX), Some("Failed"));
    check_with(&js, IN_PLACE, &[], &[COMPLETIONS_EQUAL]);
}

/// TestGetJobSetNameForValidation "name is used directly"
#[test]
fn name_is_used_directly() {
    let meta = ObjectMeta {
        name: Some("jobset-name".to_string()),
        ..Default::default()
    };
    assert_eq!(jobset_name_for_validation(&meta), "jobset-name");
}

/// TestGetJobSetNameForValidation "generateName uses apiserver truncation rules"
#[test]
fn generate_name_uses_apiserver_truncation_rules() {
    let meta = ObjectMeta {
        generate_name: Some("a".repeat(60)),
        ..Default::default()
    };
    let got = jobset_name_for_validation(&meta);
    assert_eq!(got.len(), 63);
    assert!(got.starts_with(&"a".repeat(58)));
}

/// TestGetJobSetNameForValidation "empty metadata returns empty name"
#[test]
fn empty_metadata_returns_empty_name() {
    assert_eq!(jobset_name_for_validation(&ObjectMeta::default()), "");
}

/// kwas: the scheduling block's rules with field paths.
#[test]
fn kwas_scheduling_rules() {
    use crate::jobset::v1alpha2::validation::validate_scheduling;
    use crate::jobset::{JobSetScheduling, ReplicatedJobPolicy};
    let policy = |target: &str| ReplicatedJobPolicy {
        target_replicated_job: target.to_string(),
        ..Default::default()
    };
    let mut js = jobset("js", vec![rj("jobset", 1), rj("workers", 1)]);
    js.spec.scheduling = Some(JobSetScheduling {
        replicated_job_policies: vec![policy("nope"), policy("workers")],
        ..Default::default()
    });
    js.spec.replicated_jobs[1] = with_job(rj("workers", 1), |j| j.scheduling = Some(Default::default()));
    assert_errors(
        &validate_scheduling(&js.spec),
        &[
            "spec.replicatedJobs[0].name: Invalid value: \"jobset\"",
            "spec.scheduling.replicatedJobPolicies[0].targetReplicatedJob: Invalid value: \"nope\": every targetReplicatedJob must name a replicated job",
            "spec.scheduling.replicatedJobPolicies[1].targetReplicatedJob: Invalid value: \"workers\": a replicated job's scheduling may be set in its Job template (spec.replicatedJobs[1].template.spec.scheduling) or in spec.scheduling.replicatedJobPolicies, not both",
        ],
    );
    js.spec.replicated_jobs = (0..9).map(|i| rj(&format!("r{i}"), 1)).collect();
    js.spec.scheduling = None;
    assert_errors(
        &validate_scheduling(&js.spec),
        &["spec.replicatedJobs: Too long: must have at most 8 items"],
    );
}
