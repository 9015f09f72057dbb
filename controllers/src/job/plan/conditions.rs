//! Job conditions and the time arithmetic of the plan. Additions saturate: a user-set duration such as
//! `activeDeadlineSeconds: 9223372036854775807` means "never", it cannot overflow.

use std::time::Duration;

use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

pub(crate) fn find<'a>(status: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_ && c.status == "True")
}

pub(crate) fn set_condition(
    status: &mut JobStatus,
    type_: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let time = Some(Time(now));
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != value {
                c.last_transition_time = time.clone();
            }
            c.status = value.into();
            c.reason = Some(reason.into());
            c.message = Some(message.into());
            c.last_probe_time = time;
        }
        None => conditions.push(JobCondition {
            type_: type_.into(),
            status: value.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_probe_time: time.clone(),
            last_transition_time: time,
        }),
    }
}

pub(crate) fn remove_condition(status: &mut JobStatus, type_: &str) {
    if let Some(c) = status.conditions.as_mut() {
        c.retain(|c| c.type_ != type_);
    }
}

pub(crate) fn to_duration(d: SignedDuration) -> Duration {
    Duration::try_from(d).unwrap_or_default()
}

pub(crate) fn since(now: Timestamp, then: Timestamp) -> SignedDuration {
    now.duration_since(then)
}

/// `t + d`, or `None` when that is past the latest representable time (it never comes).
pub(crate) fn later(t: Timestamp, d: SignedDuration) -> Option<Timestamp> {
    t.checked_add(d).ok()
}
