//! Live gang health (KEP-6413): `PodGroupSatisfied` on gang PodGroups, `True` (`MinCountSatisfied`) while
//! at least `minCount` members are scheduled (assumed or bound) or succeeded (a member that finished its
//! work does not break the gang: a gang whose pods end one after another, or all succeeded, stays
//! satisfied), `False` (`BelowMinCount`) once the gang has fallen below it, with the message `N of M
//! members scheduled` (`…, K succeeded` when members succeeded). Unlike `PodGroupInitiallyScheduled`
//! it follows the gang both ways; it is absent until the gang first reaches its minimum.
//!
//! Recovery (a kwas extension, opt-in): a gang whose PodGroup carries `kwas.dev/gang-recovery-seconds`
//! and stays `BelowMinCount` that long is scheduled again whole ([`Engine::recover_gangs`]): its
//! surviving members are evicted with `DisruptionTarget`, so it is placed anew, in another domain if its
//! own has no room (its replacements would otherwise wait, pinned to the survivors' domain).
//!
//! Which groups to look at is collected as pods and groups change ([`Engine::health_changed`]); the leader
//! publishes the conditions once per turn ([`Engine::publish_health`]), writing only when the status,
//! reason or message changes (a count change within the same status rewrites the message only). A new
//! leader looks at every gang once, so the condition is derived from the cluster after restarts and
//! leader changes.

use std::time::Instant;

use kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS;
use kwas_api_types::names::conditions::{POD_GROUP_SATISFIED, REASON_BELOW_MIN_COUNT, REASON_MIN_COUNT_SATISFIED};

use crate::core::{GroupKey, GroupKind};

use super::*;

/// The condition a gang with `scheduled` (and `succeeded`) of `min` members gets, given whether it has the
/// condition already: `None` while a gang that never reached its minimum has none (the condition is
/// absent until the first transition).
pub(crate) fn desired_health(
    scheduled: u32,
    succeeded: u32,
    min: u32,
    has_condition: bool,
) -> Option<(bool, &'static str, String)> {
    let satisfied = u64::from(scheduled) + u64::from(succeeded) >= u64::from(min);
    if !satisfied && !has_condition {
        return None;
    }
    let reason = if satisfied {
        REASON_MIN_COUNT_SATISFIED
    } else {
        REASON_BELOW_MIN_COUNT
    };
    let message = if succeeded > 0 {
        format!("{scheduled} of {min} members scheduled, {succeeded} succeeded")
    } else {
        format!("{scheduled} of {min} members scheduled")
    };
    Some((satisfied, reason, message))
}

impl Engine {
    /// Notes that the gang health of PodGroup `group` in `namespace` may have changed.
    pub(super) fn health_changed(&mut self, namespace: &str, group: &str) {
        self.health_dirty
            .insert(GroupKey::pod_group(namespace.to_string(), group.to_string()));
    }

    /// Notes that the gang health of `pod`'s group may have changed.
    pub(super) fn pod_health_changed(&mut self, pod: &PodKey) {
        if let Some(g) = self.pods.get(pod).and_then(|m| m.group.clone()) {
            let ns = pod.namespace.clone();
            self.health_changed(&ns, &g);
        }
    }

    /// Every gang is looked at on the next [`Engine::publish_health`] (a new leader).
    pub(super) fn recheck_all_health(&mut self) {
        self.health_all = true;
    }

    /// Writes `PodGroupSatisfied` where it changed (a leader's job; a follower only collects), and notes
    /// when a broken gang with a recovery policy is due to be scheduled again ([`Engine::recover_gangs`]).
    pub fn publish_health(&mut self, now: Instant, out: &mut Vec<Action>) {
        let keys: Vec<GroupKey> = if std::mem::take(&mut self.health_all) {
            self.health_dirty.clear();
            self.groups
                .keys()
                .filter(|k| k.kind == GroupKind::PodGroup)
                .cloned()
                .collect()
        } else {
            self.health_dirty.drain().collect()
        };
        for key in keys {
            let Some((scheduled, min)) = self.snap.gang_members_scheduled(&key) else {
                continue;
            };
            let succeeded = self.snap.gang_members_succeeded(&key);
            let has = self
                .groups
                .get(&key)
                .is_some_and(|m| m.conditions.iter().any(|c| c.type_ == POD_GROUP_SATISFIED));
            let desired = desired_health(scheduled, succeeded, min, has);
            let broken = desired.as_ref().is_some_and(|(status, _, _)| !status);
            match self.groups.get(&key).and_then(|m| m.recovery_after) {
                Some(after) if broken => {
                    self.recovery_due.entry(key.clone()).or_insert(now + after);
                }
                _ => {
                    self.recovery_due.remove(&key);
                }
            }
            if let Some((status, reason, message)) = desired {
                self.group_condition(&key, POD_GROUP_SATISFIED, status, reason, &message, out);
            }
        }
    }

    /// Schedules again, whole, the broken gangs whose recovery is due: evicts their surviving members with
    /// `DisruptionTarget` (retried until they are gone, as preemption's victims); their controllers
    /// recreate them and the gang is placed anew. A gang whole again by then is left alone.
    pub fn recover_gangs(&mut self, now: Instant, out: &mut Vec<Action>) {
        if self.recovery_due.is_empty() {
            return;
        }
        let due: Vec<GroupKey> = self
            .recovery_due
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.recovery_due.remove(&key);
            let Some((scheduled, min)) = self.snap.gang_members_scheduled(&key) else {
                continue;
            };
            let succeeded = self.snap.gang_members_succeeded(&key);
            if u64::from(scheduled) + u64::from(succeeded) >= u64::from(min) {
                continue;
            }
            let survivors = self.bound_pods_of(&key);
            if survivors.is_empty() {
                continue;
            }
            let after = self.groups.get(&key).and_then(|m| m.recovery_after).unwrap_or_default();
            tracing::info!(group = %key, survivors = survivors.len(), "scheduling a broken gang again whole");
            self.metrics.kwas_preemption_attempt("broken_gang_replaced");
            let message = format!(
                "{}: gang {} stayed below its minimum ({scheduled} of {min} members scheduled) for {}s; its members are evicted so it is scheduled again whole ({GANG_RECOVERY_SECONDS})",
                self.settings.primary_name,
                key.name,
                after.as_secs()
            );
            self.evict_bound(survivors, &message, "Recovering", out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_follows_the_gang_both_ways_once_it_formed() {
        assert_eq!(desired_health(0, 0, 4, false), None);
        assert_eq!(desired_health(3, 0, 4, false), None);
        assert_eq!(
            desired_health(4, 0, 4, false),
            Some((true, REASON_MIN_COUNT_SATISFIED, "4 of 4 members scheduled".into()))
        );
        assert_eq!(
            desired_health(3, 0, 4, true),
            Some((false, REASON_BELOW_MIN_COUNT, "3 of 4 members scheduled".into()))
        );
        assert_eq!(
            desired_health(u32::MAX, u32::MAX, u32::MAX, true),
            Some((
                true,
                REASON_MIN_COUNT_SATISFIED,
                format!("{} of {} members scheduled, {} succeeded", u32::MAX, u32::MAX, u32::MAX)
            ))
        );
        assert_eq!(
            desired_health(0, 0, 1, true),
            Some((false, REASON_BELOW_MIN_COUNT, "0 of 1 members scheduled".into()))
        );
    }

    /// A gang whose members finish one after another, or all succeeded, stays satisfied; one that lost a
    /// running member while others succeeded does not.
    #[test]
    fn succeeded_members_keep_the_gang_satisfied() {
        assert_eq!(
            desired_health(0, 4, 4, true),
            Some((
                true,
                REASON_MIN_COUNT_SATISFIED,
                "0 of 4 members scheduled, 4 succeeded".into()
            ))
        );
        assert_eq!(
            desired_health(3, 1, 4, true),
            Some((
                true,
                REASON_MIN_COUNT_SATISFIED,
                "3 of 4 members scheduled, 1 succeeded".into()
            ))
        );
        assert_eq!(
            desired_health(2, 1, 4, true),
            Some((
                false,
                REASON_BELOW_MIN_COUNT,
                "2 of 4 members scheduled, 1 succeeded".into()
            ))
        );
    }
}
