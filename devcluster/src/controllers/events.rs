//! Event expiry (kube-apiserver's event TTL).

use std::time::Duration;

use serde_json::Value;

use crate::api::State;
use crate::meta;
use crate::store::GroupResource;

/// The longest the expiry scan waits between two passes. kube-apiserver expires events through etcd
/// leases it reuses for up to a minute (`--lease-reuse-duration-seconds`), so an event there lives up to
/// that much past its TTL; scanning every sweep (every 200 ms) cost a full pass over every event, under the
/// cluster lock, several times a second.
const MAX_SCAN_INTERVAL: Duration = Duration::from_secs(10);

/// When the event expiry last scanned: it scans at most every tenth of the TTL (so a short test TTL still
/// expires promptly), and at least every [`MAX_SCAN_INTERVAL`].
#[derive(Debug, Default)]
pub(super) struct Expiry {
    last: Option<std::time::Instant>,
}

impl Expiry {
    /// Expires events (see [`expire`]) if the last scan is old enough at `now`.
    pub(super) fn sweep(&mut self, state: &mut State, event_ttl: Duration, now: std::time::Instant) {
        if self.due(event_ttl, now) {
            expire(state, event_ttl);
        }
    }

    /// Whether a scan is due at `now`; if so, records it.
    fn due(&mut self, event_ttl: Duration, now: std::time::Instant) -> bool {
        let interval = (event_ttl / 10).min(MAX_SCAN_INTERVAL);
        if self.last.is_some_and(|t| now.saturating_duration_since(t) < interval) {
            return false;
        }
        self.last = Some(now);
        true
    }
}

/// Deletes events older than `event_ttl`.
pub(super) fn expire(state: &mut State, event_ttl: Duration) {
    let events = GroupResource::new("", "events");
    let ttl = jiff::SignedDuration::from_secs(i64::try_from(event_ttl.as_secs()).unwrap_or(i64::MAX));
    let cutoff = jiff::Timestamp::now().checked_sub(ttl).unwrap_or(jiff::Timestamp::MIN);
    let expired: Vec<_> = state
        .store
        .list(&events, None)
        .into_iter()
        .filter(|e| {
            let last = e
                .get("lastTimestamp")
                .and_then(Value::as_str)
                .or_else(|| e.pointer("/series/lastObservedTime").and_then(Value::as_str))
                .or_else(|| e.get("eventTime").and_then(Value::as_str))
                .or_else(|| meta::meta_str(e, "creationTimestamp"));
            last.and_then(meta::parse_time).is_some_and(|t| t < cutoff)
        })
        .collect();
    if let Some(res) = state.registry.get("", "v1", "events") {
        for e in expired {
            state.remove_now(&res, meta::namespace(&e), meta::name(&e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_scans_every_tenth_of_the_ttl_and_at_least_every_ten_seconds() {
        let t = std::time::Instant::now();
        let mut e = Expiry::default();
        let ttl = Duration::from_secs(2);
        assert!(e.due(ttl, t), "the first sweep scans");
        assert!(!e.due(ttl, t + Duration::from_millis(199)));
        assert!(e.due(ttl, t + Duration::from_millis(200)));
        // The default TTL (one hour) scans every ten seconds, not every six minutes.
        let mut e = Expiry::default();
        let hour = Duration::from_secs(3600);
        assert!(e.due(hour, t));
        assert!(!e.due(hour, t + Duration::from_millis(9_999)));
        assert!(e.due(hour, t + MAX_SCAN_INTERVAL));
        // A zero TTL scans every sweep.
        let mut e = Expiry::default();
        assert!(e.due(Duration::ZERO, t));
        assert!(e.due(Duration::ZERO, t));
    }
}
