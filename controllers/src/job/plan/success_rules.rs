//! `spec.successPolicy` (Indexed Jobs), as upstream's `success_policy.go`: the Job meets its success
//! criteria (`SuccessCriteriaMet`, reason `SuccessPolicy`, message `Matched rules at index N`) as soon as
//! one rule matches the succeeded indexes; its remaining pods are then terminated and it completes.

use k8s_openapi::api::batch::v1::Job;

use super::indexes::Indexes;

/// The Job reason of a matched success policy.
pub const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";

/// Upstream's `matchSuccessPolicy`: the message of the first rule met by `succeeded`. A rule whose
/// `succeededIndexes` parses to nothing is skipped; an empty `succeeded` meets no rule.
pub fn match_success_policy(job: &Job, completions: i32, succeeded: &Indexes) -> Option<String> {
    let policy = job.spec.as_ref()?.success_policy.as_ref()?;
    if succeeded.is_empty() {
        return None;
    }
    for (index, rule) in policy.rules.iter().enumerate() {
        let met = if let Some(indexes) = &rule.succeeded_indexes {
            let required = Indexes::parse(indexes, completions);
            if required.is_empty() {
                continue;
            }
            let contained = required.overlap(succeeded);
            contained == required.len()
                || rule
                    .succeeded_count
                    .is_some_and(|c| contained >= u64::try_from(c).unwrap_or(u64::MAX))
        } else if let Some(count) = rule.succeeded_count {
            succeeded.len() >= u64::try_from(count).unwrap_or(u64::MAX)
        } else {
            false
        };
        if met {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}
