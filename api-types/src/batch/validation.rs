//! Upstream's API validation (`pkg/apis/batch/validation`) of the JobSpec fields the failure and success
//! policies add: `podFailurePolicy`, `backoffLimitPerIndex`, `maxFailedIndexes`, `successPolicy` and
//! `podReplacementPolicy`, with upstream's limits and messages. The API server refuses such Jobs (the dev
//! cluster's Job admission runs [`validate_policies`]); the Job controller never relies on it: on an
//! invalid spec it still decides without overflow or panic.

use k8s_openapi::api::batch::v1::{JobSpec, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyRule};

use super::{
    ACTION_COUNT, ACTION_FAIL_INDEX, ACTION_FAIL_JOB, ACTION_IGNORE, REPLACE_FAILED, REPLACE_TERMINATING_OR_FAILED,
};
use crate::field::FieldError;

type FieldErrors = Vec<FieldError>;

/// A field path being built (`spec.podFailurePolicy.rules[0]`).
#[derive(Clone, Debug)]
struct FieldPath(String);

impl FieldPath {
    fn new(root: &str) -> Self {
        Self(root.to_string())
    }

    fn child(&self, name: &str) -> Self {
        Self(format!("{}.{name}", self.0))
    }

    fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> Self {
        p.0
    }
}

impl From<&FieldPath> for String {
    fn from(p: &FieldPath) -> Self {
        p.0.clone()
    }
}

const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
const MAX_EXIT_CODE_VALUES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;
const MAX_SUCCESS_POLICY_RULES: usize = 20;
const MAX_SUCCEEDED_INDEXES_LEN: usize = 64 * 1024;
const MAX_FAILED_INDEXES: i32 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i32 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;

/// Upstream's `validateIndexesFormat`: ordered, non-overlapping `a` or `a-b` intervals below `completions`;
/// returns how many indexes they hold.
pub fn validate_indexes_format(s: &str, completions: i32) -> Result<i64, String> {
    if s.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i32> = None;
    let mut total = 0i64;
    for interval in s.split(',') {
        let parts: Vec<&str> = interval.split('-').collect();
        if parts.len() > 2 {
            return Err(format!(
                "the fragment {interval:?} violates the requirement that an index interval can have at most two parts separated by '-'"
            ));
        }
        let mut bounds = Vec::with_capacity(2);
        for part in &parts {
            let x: i32 = part
                .parse()
                .map_err(|_| format!("cannot convert string to integer for index: {part:?}"))?;
            if x >= completions {
                return Err(format!("too large index: {part:?}"));
            }
            if let Some(l) = last
                && l >= x
            {
                return Err(format!("non-increasing order, previous: {l}, current: {x}"));
            }
            last = Some(x);
            bounds.push(x);
        }
        total += match bounds.as_slice() {
            [a, b] => i64::from(*b) - i64::from(*a) + 1,
            _ => 1,
        };
    }
    Ok(total)
}

fn validate_on_exit_codes(
    req: &PodFailurePolicyOnExitCodesRequirement,
    path: &FieldPath,
    containers: &[&str],
    errs: &mut FieldErrors,
) {
    let op = path.child("operator");
    match req.operator.as_str() {
        "" => errs.push(FieldError::required(op, "valid values: [\"In\" \"NotIn\"]")),
        "In" | "NotIn" => {}
        other => errs.push(FieldError::not_supported(op, other, &["In", "NotIn"])),
    }
    if let Some(name) = &req.container_name
        && !containers.contains(&name.as_str())
    {
        errs.push(FieldError::invalid(
            path.child("containerName"),
            name,
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values = path.child("values");
    if req.values.is_empty() {
        errs.push(FieldError::invalid(&values, "[]", "at least one value is required"));
    } else if req.values.len() > MAX_EXIT_CODE_VALUES {
        errs.push(FieldError::too_many(&values, req.values.len(), MAX_EXIT_CODE_VALUES));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (j, v) in req.values.iter().enumerate() {
        if req.operator == "In" && *v == 0 {
            errs.push(FieldError::invalid(
                values.index(j),
                *v,
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(*v) {
            errs.push(FieldError::duplicate(values.index(j), *v));
        }
    }
    if req.values.windows(2).any(|w| w[0] > w[1]) {
        errs.push(FieldError::invalid(
            &values,
            format!("{:?}", req.values),
            "must be ordered",
        ));
    }
}

fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    name_ok && prefix_ok
}

fn validate_rule(
    spec: &JobSpec,
    rule: &PodFailurePolicyRule,
    path: &FieldPath,
    containers: &[&str],
    errs: &mut FieldErrors,
) {
    let action = path.child("action");
    let supported = [ACTION_COUNT, ACTION_FAIL_INDEX, ACTION_FAIL_JOB, ACTION_IGNORE];
    match rule.action.as_str() {
        "" => errs.push(FieldError::required(action, format!("valid values: {supported:?}"))),
        ACTION_FAIL_INDEX if spec.backoff_limit_per_index.is_none() => errs.push(FieldError::invalid(
            action,
            ACTION_FAIL_INDEX,
            "requires the backoffLimitPerIndex to be set",
        )),
        a if supported.contains(&a) => {}
        other => errs.push(FieldError::not_supported(action, other, &supported)),
    }
    if let Some(req) = &rule.on_exit_codes {
        validate_on_exit_codes(req, &path.child("onExitCodes"), containers, errs);
    }
    let patterns = rule.on_pod_conditions.as_deref().unwrap_or_default();
    let cpath = path.child("onPodConditions");
    if patterns.len() > MAX_CONDITION_PATTERNS {
        errs.push(FieldError::too_many(&cpath, patterns.len(), MAX_CONDITION_PATTERNS));
    }
    for (j, p) in patterns.iter().enumerate() {
        if !is_qualified_name(&p.type_) {
            errs.push(FieldError::invalid(
                cpath.index(j).child("type"),
                &p.type_,
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            ));
        }
        let status = p.status.as_deref().unwrap_or("True");
        if !["True", "False", "Unknown"].contains(&status) {
            errs.push(FieldError::not_supported(
                cpath.index(j).child("status"),
                status,
                &["False", "True", "Unknown"],
            ));
        }
    }
    match (rule.on_exit_codes.is_some(), !patterns.is_empty()) {
        (true, true) => errs.push(FieldError::invalid_omitted(
            path,
            "specifying both OnExitCodes and OnPodConditions is not supported",
        )),
        (false, false) => errs.push(FieldError::invalid_omitted(
            path,
            "specifying one of OnExitCodes and OnPodConditions is required",
        )),
        _ => {}
    }
}

/// The errors upstream's `ValidateJobSpec` reports on the policy fields of `spec` (paths under `spec.`).
pub fn validate_policies(spec: &JobSpec) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let root = FieldPath::new("spec");
    let indexed = spec.completion_mode.as_deref() == Some("Indexed");
    if let Some(v) = spec.backoff_limit_per_index {
        if v < 0 {
            errs.push(FieldError::invalid(
                root.child("backoffLimitPerIndex"),
                v,
                "must be greater than or equal to 0",
            ));
        }
        if !indexed {
            errs.push(FieldError::invalid(
                root.child("backoffLimitPerIndex"),
                v,
                "requires indexed completion mode",
            ));
        }
    }
    if let Some(m) = spec.max_failed_indexes {
        let path = root.child("maxFailedIndexes");
        if m < 0 {
            errs.push(FieldError::invalid(&path, m, "must be greater than or equal to 0"));
        }
        if spec.backoff_limit_per_index.is_none() {
            errs.push(FieldError::required(
                root.child("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
        if !indexed {
            errs.push(FieldError::invalid(&path, m, "requires indexed completion mode"));
        } else {
            if spec.completions.is_some_and(|c| m > c) {
                errs.push(FieldError::invalid(
                    &path,
                    m,
                    "must be less than or equal to completions",
                ));
            }
            if m > MAX_FAILED_INDEXES {
                errs.push(FieldError::invalid(
                    &path,
                    m,
                    format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
                ));
            }
        }
    }
    if indexed && spec.backoff_limit_per_index.is_some() && spec.completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT)
    {
        if spec.max_failed_indexes.is_none() {
            errs.push(FieldError::required(
                root.child("maxFailedIndexes"),
                format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
            ));
        }
        if let Some(p) = spec.parallelism.filter(|p| *p > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS) {
            errs.push(FieldError::invalid(
                root.child("parallelism"),
                p,
                format!(
                    "must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
                ),
            ));
        }
    }
    if let Some(policy) = &spec.pod_failure_policy {
        let rules = root.child("podFailurePolicy").child("rules");
        if policy.rules.len() > MAX_POD_FAILURE_POLICY_RULES {
            errs.push(FieldError::too_many(
                &rules,
                policy.rules.len(),
                MAX_POD_FAILURE_POLICY_RULES,
            ));
        }
        let pod = spec.template.spec.as_ref();
        let containers: Vec<&str> = pod
            .map(|p| {
                p.containers
                    .iter()
                    .chain(p.init_containers.iter().flatten())
                    .map(|c| c.name.as_str())
                    .collect()
            })
            .unwrap_or_default();
        for (i, rule) in policy.rules.iter().enumerate() {
            validate_rule(spec, rule, &rules.index(i), &containers, &mut errs);
        }
        let restart = pod.and_then(|p| p.restart_policy.as_deref());
        if matches!(restart, Some("OnFailure")) {
            errs.push(FieldError::invalid(
                root.child("template").child("spec").child("restartPolicy"),
                "OnFailure",
                "only \"Never\" is supported when podFailurePolicy is specified",
            ));
        }
    }
    if let Some(policy) = &spec.success_policy {
        let path = root.child("successPolicy");
        if !indexed {
            errs.push(FieldError::invalid_omitted(&path, "requires indexed completion mode"));
        } else {
            let rules = path.child("rules");
            if policy.rules.is_empty() {
                errs.push(FieldError::required(
                    &rules,
                    "at least one rules must be specified when the successPolicy is specified",
                ));
            }
            if policy.rules.len() > MAX_SUCCESS_POLICY_RULES {
                errs.push(FieldError::too_many(
                    &rules,
                    policy.rules.len(),
                    MAX_SUCCESS_POLICY_RULES,
                ));
            }
            let completions = spec.completions.unwrap_or(0);
            for (i, rule) in policy.rules.iter().enumerate() {
                let rp = rules.index(i);
                if rule.succeeded_count.is_none() && rule.succeeded_indexes.is_none() {
                    errs.push(FieldError::required(
                        &rp,
                        "at least one of succeededCount or succeededIndexes must be specified",
                    ));
                }
                let mut total = 0i64;
                if let Some(s) = &rule.succeeded_indexes {
                    let ip = rp.child("succeededIndexes");
                    if s.len() > MAX_SUCCEEDED_INDEXES_LEN {
                        errs.push(FieldError::too_long(&ip, s, MAX_SUCCEEDED_INDEXES_LEN));
                    }
                    match validate_indexes_format(s, completions) {
                        Ok(t) => total = t,
                        Err(e) => errs.push(FieldError::invalid(
                            ip,
                            s,
                            format!("error parsing succeededIndexes: {e}"),
                        )),
                    }
                }
                if let Some(n) = rule.succeeded_count {
                    let cp = rp.child("succeededCount");
                    if n < 0 {
                        errs.push(FieldError::invalid(&cp, n, "must be greater than or equal to 0"));
                    }
                    if n > completions {
                        errs.push(FieldError::invalid(
                            &cp,
                            n,
                            format!(
                                "must be less than or equal to {completions} (the number of specified completions)"
                            ),
                        ));
                    }
                    if rule.succeeded_indexes.is_some() && i64::from(n) > total {
                        errs.push(FieldError::invalid(
                            &cp,
                            n,
                            format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                        ));
                    }
                }
            }
        }
    }
    if let Some(r) = spec.pod_replacement_policy.as_deref() {
        let path = root.child("podReplacementPolicy");
        if spec.pod_failure_policy.is_some() {
            if r != REPLACE_FAILED {
                errs.push(FieldError::not_supported(path, r, &[REPLACE_FAILED]));
            }
        } else if r != REPLACE_FAILED && r != REPLACE_TERMINATING_OR_FAILED {
            errs.push(FieldError::not_supported(
                path,
                r,
                &[REPLACE_FAILED, REPLACE_TERMINATING_OR_FAILED],
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{
        PodFailurePolicy, PodFailurePolicyOnPodConditionsPattern, SuccessPolicy, SuccessPolicyRule,
    };
    use k8s_openapi::api::core::v1::{Container, PodSpec};

    fn spec() -> JobSpec {
        let mut s = JobSpec::default();
        s.template.spec = Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                ..Container::default()
            }],
            restart_policy: Some("Never".into()),
            ..PodSpec::default()
        });
        s
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    /// The refusals of upstream's TestValidateJob for these fields, one by one.
    #[test]
    fn refuses_what_upstream_refuses() {
        let exit = |action: &str, op: &str, values: Vec<i32>, container: Option<&str>| PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: container.map(str::to_string),
                operator: op.into(),
                values,
            }),
            on_pod_conditions: None,
        };
        let cases: Vec<(&str, JobSpec)> = vec![
            ("requires the backoffLimitPerIndex", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy {
                    rules: vec![exit("FailIndex", "In", vec![1], None)],
                });
                s
            }),
            ("must not be 0 for the In operator", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy {
                    rules: vec![exit("Ignore", "In", vec![0, 1], None)],
                });
                s
            }),
            ("must be ordered", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy {
                    rules: vec![exit("Ignore", "In", vec![2, 1], None)],
                });
                s
            }),
            ("Duplicate value", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy {
                    rules: vec![exit("Ignore", "NotIn", vec![1, 1], None)],
                });
                s
            }),
            ("must be one of the container or initContainer names", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy {
                    rules: vec![exit("Ignore", "In", vec![1], Some("other"))],
                });
                s
            }),
            ("specifying one of OnExitCodes and OnPodConditions is required", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy {
                    rules: vec![PodFailurePolicyRule {
                        action: "Ignore".into(),
                        on_exit_codes: None,
                        on_pod_conditions: None,
                    }],
                });
                s
            }),
            ("Unsupported value", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy {
                    rules: vec![PodFailurePolicyRule {
                        action: "Ignore".into(),
                        on_exit_codes: None,
                        on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                            type_: "DisruptionTarget".into(),
                            status: Some("Maybe".into()),
                        }]),
                    }],
                });
                s
            }),
            ("only \"Never\" is supported when podFailurePolicy is specified", {
                let mut s = spec();
                s.pod_failure_policy = Some(PodFailurePolicy { rules: vec![] });
                if let Some(p) = s.template.spec.as_mut() {
                    p.restart_policy = Some("OnFailure".into());
                }
                s
            }),
            ("requires indexed completion mode", {
                let mut s = spec();
                s.backoff_limit_per_index = Some(1);
                s
            }),
            ("when maxFailedIndexes is specified", {
                let mut s = spec();
                s.completion_mode = Some("Indexed".into());
                s.completions = Some(3);
                s.max_failed_indexes = Some(1);
                s
            }),
            ("must be less than or equal to completions", {
                let mut s = spec();
                s.completion_mode = Some("Indexed".into());
                s.completions = Some(3);
                s.backoff_limit_per_index = Some(1);
                s.max_failed_indexes = Some(4);
                s
            }),
            ("must be specified when completions is above 100000", {
                let mut s = spec();
                s.completion_mode = Some("Indexed".into());
                s.completions = Some(i32::MAX);
                s.backoff_limit_per_index = Some(1);
                s
            }),
            ("error parsing succeededIndexes: non-increasing order", {
                let mut s = spec();
                s.completion_mode = Some("Indexed".into());
                s.completions = Some(10);
                s.success_policy = Some(SuccessPolicy {
                    rules: vec![SuccessPolicyRule {
                        succeeded_indexes: Some("3,1".into()),
                        succeeded_count: None,
                    }],
                });
                s
            }),
            ("the number of indexes in the specified succeededIndexes field", {
                let mut s = spec();
                s.completion_mode = Some("Indexed".into());
                s.completions = Some(10);
                s.success_policy = Some(SuccessPolicy {
                    rules: vec![SuccessPolicyRule {
                        succeeded_indexes: Some("0-1".into()),
                        succeeded_count: Some(3),
                    }],
                });
                s
            }),
            ("at least one of succeededCount or succeededIndexes", {
                let mut s = spec();
                s.completion_mode = Some("Indexed".into());
                s.completions = Some(10);
                s.success_policy = Some(SuccessPolicy {
                    rules: vec![SuccessPolicyRule::default()],
                });
                s
            }),
            ("spec.successPolicy: Invalid value", {
                let mut s = spec();
                s.success_policy = Some(SuccessPolicy { rules: vec![] });
                s
            }),
            (
                "spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\"",
                {
                    let mut s = spec();
                    s.pod_failure_policy = Some(PodFailurePolicy { rules: vec![] });
                    s.pod_replacement_policy = Some("TerminatingOrFailed".into());
                    s
                },
            ),
        ];
        for (want, s) in cases {
            let got = messages(&validate_policies(&s));
            assert!(got.iter().any(|m| m.contains(want)), "want {want:?} in {got:?}");
        }
    }

    #[test]
    fn accepts_the_recommended_gang_policy_and_valid_policies() {
        let mut s = spec();
        s.pod_failure_policy = Some(PodFailurePolicy {
            rules: vec![PodFailurePolicyRule {
                action: "Ignore".into(),
                on_exit_codes: None,
                on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "DisruptionTarget".into(),
                    status: None,
                }]),
            }],
        });
        s.pod_replacement_policy = Some("Failed".into());
        assert!(
            validate_policies(&s).is_empty(),
            "{:?}",
            messages(&validate_policies(&s))
        );
        let mut s = spec();
        s.completion_mode = Some("Indexed".into());
        s.completions = Some(i32::MAX);
        s.parallelism = Some(10);
        s.backoff_limit_per_index = Some(i32::MAX);
        s.max_failed_indexes = Some(100_000);
        s.success_policy = Some(SuccessPolicy {
            rules: vec![SuccessPolicyRule {
                succeeded_indexes: Some("0-2147483646".into()),
                succeeded_count: Some(i32::MAX),
            }],
        });
        assert!(
            validate_policies(&s).is_empty(),
            "{:?}",
            messages(&validate_policies(&s))
        );
        assert_eq!(validate_indexes_format("0,2-4,7", 8), Ok(5));
        assert!(validate_indexes_format("1-2-3", 8).is_err());
        assert!(validate_indexes_format("-1", 8).is_err());
    }
}
