//! Configuration of the scheduler runtime.

use std::net::SocketAddr;
use std::time::Duration;

use kwas_api_types::names::SCHEDULER_NAME;

use crate::core::{DefaultConstraint, SchedulerConfig};

/// Retry timing of units that could not be scheduled (upstream's pod backoff, applied per unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffConfig {
    /// Backoff after the first failed attempt (upstream `podInitialBackoffSeconds`, 1s). Doubles with
    /// every further failed attempt.
    pub initial: Duration,
    /// Upper bound of the backoff (upstream `podMaxBackoffSeconds`, 10s).
    pub max: Duration,
    /// How long an unschedulable unit waits for a cluster event before it is retried anyway (upstream
    /// `podMaxInUnschedulablePodsDuration`, 5 minutes).
    pub max_unschedulable: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(10),
            max_unschedulable: Duration::from_secs(300),
        }
    }
}

impl BackoffConfig {
    /// The backoff after `attempts` failed attempts (1 -> `initial`, doubling, capped at `max`).
    pub fn backoff(&self, attempts: u32) -> Duration {
        let shift = attempts.saturating_sub(1).min(30);
        self.initial.saturating_mul(1u32 << shift).min(self.max)
    }
}

pub use kwas_shell::LeaseConfig;

/// Leader election on a Lease named `kwas-scheduler` in `namespace` for `identity`, with client-go's
/// timing (leaseDuration 15 s, renewDeadline 10 s, retryPeriod 2 s).
pub fn scheduler_lease(namespace: impl Into<String>, identity: impl Into<String>) -> LeaseConfig {
    LeaseConfig::new(namespace, SCHEDULER_NAME, identity)
}

/// Everything the runtime is configured with. `RuntimeConfig::default()` answers for
/// `kwas-scheduler`, without leader election or admin server.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeConfig {
    /// The `spec.schedulerName`s this scheduler answers for. Pods naming another scheduler are never
    /// placed, but count on their nodes. The first name is the one events and messages carry.
    pub scheduler_names: Vec<String>,
    /// Leader election; `None` schedules right away (a single replica).
    pub leader_election: Option<LeaseConfig>,
    /// Where to serve `/healthz`, `/readyz` and `/metrics`; `None` serves nothing.
    pub admin_addr: Option<SocketAddr>,
    /// Bindings in flight at once.
    pub bind_concurrency: usize,
    /// Status patches, evictions and deletions in flight at once.
    pub write_concurrency: usize,
    /// Events buffered for publication; further events are dropped (and counted) while it is full.
    pub event_buffer: usize,
    /// Retry timing.
    pub backoff: BackoffConfig,
    /// How long a preemptor keeps its nominated nodes reserved while its victims terminate. After that
    /// it is retried like any unit and may preempt again.
    pub preemption_timeout: Duration,
    /// How long a gang may stay partially bound (some pods bound, its minimum not reached: what a crash
    /// mid-binding leaves when the rest no longer fits) before its bound pods are evicted, releasing the
    /// capacity they hold; its controller recreates them and the gang is scheduled again, whole.
    pub partial_gang_timeout: Duration,
    /// How long a unit waits in PreEnqueue before its pods get the waiting message. Pods of a gang
    /// usually arrive within milliseconds of each other; writing "waiting for minCount pods" to each
    /// of them first would double the API writes of every gang.
    pub waiting_message_delay: Duration,
    /// The scheduling algorithm's configuration.
    pub core: SchedulerConfig,
    /// Plugin arguments of the profile (see `runtime::profile`).
    pub profile: ProfileArgs,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            scheduler_names: vec![SCHEDULER_NAME.to_string()],
            leader_election: None,
            admin_addr: None,
            bind_concurrency: 64,
            write_concurrency: 32,
            event_buffer: 4096,
            backoff: BackoffConfig::default(),
            preemption_timeout: Duration::from_secs(120),
            partial_gang_timeout: Duration::from_secs(60),
            waiting_message_delay: Duration::from_secs(1),
            core: SchedulerConfig::default(),
            profile: ProfileArgs::default(),
        }
    }
}

impl RuntimeConfig {
    /// The name events and messages carry (the first scheduler name).
    pub fn primary_name(&self) -> &str {
        self.scheduler_names
            .first()
            .map(String::as_str)
            .unwrap_or(SCHEDULER_NAME)
    }
}

/// What a profile sets beyond [`SchedulerConfig`]'s strategy and weights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileArgs {
    /// `NodeResourcesFit` `scoringStrategy.resources` (name, weight); `None`: kwas' default, cpu and
    /// memory plus the extended resources a pod requests, weight 1 each.
    pub scoring_resources: Option<Vec<(String, i64)>>,
    /// `PodTopologySpread` default constraints; `None`: upstream's system defaults.
    pub default_spread_constraints: Option<Vec<DefaultConstraint>>,
    /// `InterPodAffinityArgs.hardPodAffinityWeight`.
    pub hard_pod_affinity_weight: i64,
    /// `InterPodAffinityArgs.ignorePreferredTermsOfExistingPods`.
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for ProfileArgs {
    fn default() -> Self {
        Self {
            scoring_resources: None,
            default_spread_constraints: None,
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let b = BackoffConfig::default();
        assert_eq!(b.backoff(0), Duration::from_secs(1));
        assert_eq!(b.backoff(1), Duration::from_secs(1));
        assert_eq!(b.backoff(2), Duration::from_secs(2));
        assert_eq!(b.backoff(4), Duration::from_secs(8));
        assert_eq!(b.backoff(5), Duration::from_secs(10));
        assert_eq!(b.backoff(u32::MAX), Duration::from_secs(10));
    }
}
