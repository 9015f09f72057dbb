//! Leader election on a `coordination.k8s.io/v1` Lease with client-go's semantics
//! (`k8s.io/client-go/tools/leaderelection`): a candidate takes the Lease only once it has seen the
//! holder's record unchanged for `leaseDuration` on its own clock (so clock skew between replicas does not
//! matter); the leader renews every `retryPeriod` and **stops leading when it could not renew for
//! `renewDeadline`**, which is shorter than `leaseDuration`, so the old leader has stopped acting before
//! any other replica can take over, even if the API server is unreachable to it; on shutdown it releases
//! the Lease so a standby takes over at once.
//!
//! `kube-lease-manager` was used before; it keeps reporting leadership while renewals fail (it retries
//! with a backoff without ever stepping down), so a partitioned leader would act alongside its successor.
//! This elector exists for that difference.
//!
//! The decision is a pure function ([`decide`]) of the Lease, what this candidate observed of it and the
//! time; [`Leadership`] is the thin loop around it.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Leader election settings (client-go's names and defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's identity: unique per process (see [`unique_identity`]).
    pub identity: String,
    /// How long a Lease is valid after its last renewal (client-go `LeaseDuration`, 15 s).
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading (client-go `RenewDeadline`,
    /// 10 s). Must be shorter than `lease_duration`.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and the leader renews (client-go `RetryPeriod`, 2 s).
    pub retry_period: Duration,
    /// Annotations the holder keeps on the Lease (what it serves, for tools to read): written when it
    /// creates or takes the Lease, and when they differ from the Lease's.
    pub annotations: std::collections::BTreeMap<String, String>,
}

impl LeaseConfig {
    /// A Lease `name` in `namespace` for `identity`, with client-go's default timing.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            annotations: Default::default(),
        }
    }

    /// Checks the settings like client-go's `NewLeaderElector`.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() || self.namespace.is_empty() || self.identity.is_empty() {
            return Err("leader election: Required value: name, namespace and identity are required".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(format!(
                "leader election: Invalid value: leaseDuration ({:?}) must be greater than renewDeadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.retry_period.is_zero() || self.renew_deadline <= self.retry_period {
            return Err(format!(
                "leader election: Invalid value: renewDeadline ({:?}) must be greater than retryPeriod ({:?}), which must be positive",
                self.renew_deadline, self.retry_period
            ));
        }
        Ok(())
    }
}

/// A process-unique identity: `base` (a pod or host name) plus a random suffix, as client-go builds it
/// (`hostname + "_" + uuid`), so two processes on one host never share a Lease holder identity.
pub fn unique_identity(base: &str) -> String {
    format!("{base}_{}", uuid::Uuid::new_v4())
}

/// The fields of a Lease that make up its record (client-go's `LeaderElectionRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// `holderIdentity`.
    pub holder: String,
    /// `leaseDurationSeconds`.
    pub duration_seconds: i64,
    /// `renewTime`.
    pub renew_time: Option<String>,
    /// `leaseTransitions`.
    pub transitions: i64,
}

impl Record {
    /// The record of a Lease.
    pub fn of(lease: &Lease) -> Self {
        let spec = lease.spec.as_ref();
        Record {
            holder: spec.and_then(|s| s.holder_identity.clone()).unwrap_or_default(),
            duration_seconds: spec.and_then(|s| s.lease_duration_seconds).map_or(0, i64::from),
            renew_time: spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0.to_string()),
            transitions: spec.and_then(|s| s.lease_transitions).map_or(0, i64::from),
        }
    }
}

/// What a candidate should do with the Lease it just read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Write the Lease with this candidate as holder (renewing if it already holds it).
    Take {
        /// Whether the holder changes (`acquireTime` and `leaseTransitions` change too).
        transition: bool,
    },
    /// Another holder's Lease is still valid: wait.
    Wait,
}

/// client-go's `tryAcquireOrRenew` decision: `observed` is the record this candidate saw last and when (on
/// its own monotonic clock); a record that changed is observed anew at `now`. The holder's lease is
/// valid until `leaseDurationSeconds` (bounded by `max_duration` against a hostile value) after it was
/// observed.
pub fn decide(record: &Record, identity: &str, observed_at: Instant, now: Instant, max_duration: Duration) -> Decision {
    if record.holder == identity {
        return Decision::Take { transition: false };
    }
    if record.holder.is_empty() {
        return Decision::Take { transition: true };
    }
    let duration = Duration::from_secs(u64::try_from(record.duration_seconds.max(0)).unwrap_or(0)).min(max_duration);
    match observed_at.checked_add(duration) {
        Some(expiry) if expiry > now => Decision::Wait,
        _ => Decision::Take { transition: true },
    }
}

/// A running election: [`Leadership::subscribe`] says whether this replica leads right now.
#[derive(Debug)]
pub struct Leadership {
    rx: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Leadership {
    /// Starts campaigning for the Lease.
    pub fn start(client: Client, config: LeaseConfig) -> Self {
        let (tx, rx) = watch::channel(false);
        let (stop, stop_rx) = watch::channel(false);
        let api: Api<Lease> = Api::namespaced(client, &config.namespace);
        let task = tokio::spawn(campaign(api, config, tx, stop_rx));
        Leadership { rx, stop, task }
    }

    /// A receiver of the current leadership (`true` while this replica leads).
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }

    /// Whether this replica leads right now.
    pub fn is_leader(&self) -> bool {
        *self.rx.borrow()
    }

    /// Stops campaigning and releases the Lease if this replica holds it (so a standby takes over at
    /// once). Waits at most `timeout`.
    pub async fn release(self, timeout: Duration) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(timeout, self.task).await.is_err() {
            tracing::warn!("the Lease was not released in time");
        }
    }
}

/// Upper bound of a foreign `leaseDurationSeconds` this candidate honours.
const MAX_FOREIGN_DURATION: Duration = Duration::from_secs(3600);

async fn campaign(api: Api<Lease>, config: LeaseConfig, tx: watch::Sender<bool>, mut stop: watch::Receiver<bool>) {
    let mut observed: Option<(Record, Instant)> = None;
    let jitter = |d: Duration| d + d.mul_f64(fastrand::f64() * 0.2);
    loop {
        // Acquire.
        loop {
            if *stop.borrow() {
                return;
            }
            match try_acquire_or_renew(&api, &config, &mut observed).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => tracing::debug!(error = %e, lease = %config.name, "acquiring the Lease failed"),
            }
            tokio::select! {
                _ = tokio::time::sleep(jitter(config.retry_period)) => {}
                _ = stop.changed() => {}
            }
        }
        tracing::info!(lease = %config.name, identity = %config.identity, "acquired the Lease; leading");
        tx.send_replace(true);
        let mut renewed = Instant::now();
        // Renew until the deadline passes without a successful renewal, or shutdown.
        loop {
            tokio::select! {
                _ = tokio::time::sleep(config.retry_period) => {}
                _ = stop.changed() => {
                    tx.send_replace(false);
                    release(&api, &config).await;
                    return;
                }
            }
            let left = config.renew_deadline.saturating_sub(renewed.elapsed());
            let attempt = tokio::time::timeout(left, try_acquire_or_renew(&api, &config, &mut observed)).await;
            match attempt {
                Ok(Ok(true)) => renewed = Instant::now(),
                Ok(Ok(false)) => {
                    // Someone else holds it now.
                    tracing::warn!(lease = %config.name, "the Lease was taken over; no longer leading");
                    break;
                }
                Ok(Err(e)) => tracing::warn!(error = %e, lease = %config.name, "renewing the Lease failed"),
                Err(_) => {}
            }
            if renewed.elapsed() >= config.renew_deadline {
                tracing::error!(
                    lease = %config.name,
                    deadline = ?config.renew_deadline,
                    "could not renew the Lease before the renew deadline; no longer leading"
                );
                break;
            }
        }
        tx.send_replace(false);
    }
}

/// One `tryAcquireOrRenew`: `Ok(true)` when this candidate holds the Lease afterwards.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    config: &LeaseConfig,
    observed: &mut Option<(Record, Instant)>,
) -> Result<bool, kube::Error> {
    let now_wall = MicroTime(jiff::Timestamp::now());
    let duration = i32::try_from(config.lease_duration.as_secs()).unwrap_or(i32::MAX);
    let Some(lease) = api.get_opt(&config.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                namespace: Some(config.namespace.clone()),
                annotations: (!config.annotations.is_empty()).then(|| config.annotations.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(duration),
                acquire_time: Some(now_wall.clone()),
                renew_time: Some(now_wall),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        };
    };
    let record = Record::of(&lease);
    let now = Instant::now();
    let observed_at = match observed {
        Some((r, at)) if *r == record => *at,
        _ => {
            *observed = Some((record.clone(), now));
            now
        }
    };
    let Decision::Take { transition } = decide(&record, &config.identity, observed_at, now, MAX_FOREIGN_DURATION)
    else {
        return Ok(false);
    };
    let mut spec = serde_json::json!({
        "holderIdentity": config.identity,
        "leaseDurationSeconds": duration,
        "renewTime": now_wall,
    });
    if transition {
        let transitions = lease
            .spec
            .as_ref()
            .and_then(|s| s.lease_transitions)
            .unwrap_or(0)
            .saturating_add(1);
        spec["acquireTime"] = serde_json::json!(now_wall);
        spec["leaseTransitions"] = serde_json::json!(transitions);
    }
    // The patch carries the resourceVersion read above as a precondition: a concurrent writer makes it a
    // 409 (a merge patch keeps the RBAC to `get`, `create` and `patch`, as kube-lease-manager needed).
    let mut patch = serde_json::json!({
        "metadata": {"resourceVersion": lease.metadata.resource_version},
        "spec": spec,
    });
    let current = lease.metadata.annotations.clone().unwrap_or_default();
    if config.annotations.iter().any(|(k, v)| current.get(k) != Some(v)) {
        patch["metadata"]["annotations"] = serde_json::json!(config.annotations);
    }
    match api
        .patch(&config.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(written) => {
            *observed = Some((Record::of(&written), Instant::now()));
            Ok(true)
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Gives the Lease up if this candidate holds it (client-go's `ReleaseOnCancel`).
async fn release(api: &Api<Lease>, config: &LeaseConfig) {
    let Ok(Some(lease)) = api.get_opt(&config.name).await else {
        return;
    };
    if Record::of(&lease).holder != config.identity {
        return;
    }
    let now = MicroTime(jiff::Timestamp::now());
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": lease.metadata.resource_version},
        "spec": {"holderIdentity": null, "leaseDurationSeconds": 1, "renewTime": now, "acquireTime": now},
    });
    match api
        .patch(&config.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => tracing::info!(lease = %config.name, "released the Lease"),
        Err(e) => tracing::warn!(error = %e, lease = %config.name, "releasing the Lease failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(holder: &str, seconds: i64) -> Record {
        Record {
            holder: holder.into(),
            duration_seconds: seconds,
            renew_time: Some("t".into()),
            transitions: 0,
        }
    }

    #[test]
    fn a_candidate_waits_a_whole_lease_duration_on_its_own_clock() {
        let t0 = Instant::now();
        let max = MAX_FOREIGN_DURATION;
        let r = record("other", 15);
        assert_eq!(decide(&r, "me", t0, t0, max), Decision::Wait);
        assert_eq!(decide(&r, "me", t0, t0 + Duration::from_secs(14), max), Decision::Wait);
        assert_eq!(
            decide(&r, "me", t0, t0 + Duration::from_secs(15), max),
            Decision::Take { transition: true }
        );
        // The holder renews: the record changes and is observed anew, so the wait starts over.
        assert_eq!(
            decide(
                &r,
                "me",
                t0 + Duration::from_secs(10),
                t0 + Duration::from_secs(15),
                max
            ),
            Decision::Wait
        );
    }

    #[test]
    fn own_and_free_leases_are_taken_and_hostile_durations_are_bounded() {
        let t0 = Instant::now();
        let max = MAX_FOREIGN_DURATION;
        assert_eq!(
            decide(&record("me", 15), "me", t0, t0, max),
            Decision::Take { transition: false }
        );
        assert_eq!(
            decide(&record("", 15), "me", t0, t0, max),
            Decision::Take { transition: true }
        );
        let later = t0 + max;
        assert_eq!(
            decide(&record("other", i64::MAX), "me", t0, later, max),
            Decision::Take { transition: true }
        );
        assert_eq!(
            decide(&record("other", -5), "me", t0, t0, max),
            Decision::Take { transition: true }
        );
    }

    #[test]
    fn settings_follow_client_go_rules() {
        let ok = LeaseConfig::new("ns", "l", "me");
        assert!(ok.validate().is_ok());
        let bad = LeaseConfig {
            renew_deadline: Duration::from_secs(15),
            ..ok.clone()
        };
        assert!(bad.validate().unwrap_err().contains("renewDeadline"));
        let bad = LeaseConfig {
            retry_period: Duration::from_secs(10),
            ..ok.clone()
        };
        assert!(bad.validate().is_err());
        assert_ne!(unique_identity("pod"), unique_identity("pod"));
        assert!(unique_identity("pod").starts_with("pod_"));
    }
}
