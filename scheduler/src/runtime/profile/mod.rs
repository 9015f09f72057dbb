//! KubeSchedulerConfiguration files (`kubescheduler.config.k8s.io/v1`), the `--config` of
//! `kwas scheduler` as of kube-scheduler.
//!
//! A file starts from upstream's defaults, like kube-scheduler's: a profile that sets nothing is
//! upstream's default profile (`NodeResourcesFit` with `LeastAllocated` over cpu and memory, upstream's
//! score weights, `PodTopologySpread`'s system default constraints). Without a file kwas' own profile
//! applies ([`SchedulerConfig::default`](crate::core::SchedulerConfig): `MostAllocated`, bin packing).
//!
//! What is honoured:
//!
//! - `profiles[].schedulerName` (default `default-scheduler`, as upstream): the names answered for.
//! - `profiles[].plugins.score` and `.multiPoint`: score plugins enabled, disabled (`*` for all) and
//!   their weights, for `NodeResourcesFit`, `NodeResourcesBalancedAllocation`, `NodeAffinity`,
//!   `TaintToleration`, `InterPodAffinity` and `PodTopologySpread`.
//! - `profiles[].pluginConfig`: `NodeResourcesFit` (`scoringStrategy.type` `MostAllocated` /
//!   `LeastAllocated`, `scoringStrategy.resources` with weights 1..=100), `PodTopologySpread`
//!   (`defaultingType`, `defaultConstraints`), `InterPodAffinity` (`hardPodAffinityWeight`,
//!   `ignorePreferredTermsOfExistingPods`), `NodeResourcesBalancedAllocation` (cpu and memory).
//! - `podInitialBackoffSeconds`, `podMaxBackoffSeconds`, `leaderElection` (`leaderElect`,
//!   `resourceName`, `resourceNamespace`, `leaseDuration`, `renewDeadline`, `retryPeriod`).
//!
//! What cannot be honoured is an error naming the field, never silently dropped: disabling a filter
//! (kwas always runs upstream's default filters), plugins kwas does not implement, extenders,
//! `RequestedToCapacityRatio`, `NodeResourcesFit.ignoredResources`, `NodeAffinityArgs.addedAffinity`,
//! and several profiles whose plugin settings differ (one scheduling algorithm serves every name).
//! Fields that only tune upstream's internals (`percentageOfNodesToScore`, `parallelism`,
//! `DefaultPreemptionArgs`, `VolumeBindingArgs`, client connection, profiling) are accepted with a
//! warning. Unknown fields are errors, as upstream's strict decoding.

mod args;
mod plugins;

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::core::{ScoreWeights, ScoringStrategy};

use super::config::ProfileArgs;
use super::config::RuntimeConfig;

/// API version of the file.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// Kind of the file.
pub const KIND: &str = "KubeSchedulerConfiguration";
/// upstream's default `schedulerName` of a profile.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// An error in a configuration file, with the path of the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct ProfileError {
    /// Field path, e.g. `profiles[0].pluginConfig[1].args.scoringStrategy.type`.
    pub path: String,
    /// What is wrong, in upstream's `field.Error` style.
    pub detail: String,
}

impl ProfileError {
    pub(crate) fn new(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            detail: detail.into(),
        }
    }
}

/// The scoring settings of one profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub scoring: ScoringStrategy,
    pub weights: ScoreWeights,
    pub args: ProfileArgs,
}

/// A loaded configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerProfile {
    /// The profiles' `schedulerName`s, in order.
    pub scheduler_names: Vec<String>,
    /// `NodeResourcesFit` scoring strategy.
    pub scoring: ScoringStrategy,
    /// Score plugin weights (0: disabled).
    pub weights: ScoreWeights,
    /// The profile's plugin arguments.
    pub args: ProfileArgs,
    /// `podInitialBackoffSeconds` / `podMaxBackoffSeconds`.
    pub backoff: Option<(Duration, Duration)>,
    /// `leaderElection`, when the file has it.
    pub leader_election: Option<LeaderElection>,
    /// Fields accepted but not applied, for the log.
    pub warnings: Vec<String>,
}

/// `leaderElection` of the file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaderElection {
    /// `leaderElect` (upstream's default: true).
    pub leader_elect: bool,
    /// `resourceName`.
    pub resource_name: Option<String>,
    /// `resourceNamespace`.
    pub resource_namespace: Option<String>,
    /// `leaseDuration`.
    pub lease_duration: Option<Duration>,
    /// `renewDeadline`.
    pub renew_deadline: Option<Duration>,
    /// `retryPeriod`.
    pub retry_period: Option<Duration>,
}

impl SchedulerProfile {
    /// Upstream's default profile for `names` (what a file with only `schedulerName`s gives).
    pub fn upstream_default(names: Vec<String>) -> Self {
        let s = plugins::upstream_settings();
        Self {
            scheduler_names: names,
            scoring: s.scoring,
            weights: s.weights,
            args: s.args,
            backoff: None,
            leader_election: None,
            warnings: Vec::new(),
        }
    }

    /// Parses a file's YAML or JSON text.
    pub fn from_yaml(text: &str) -> Result<Self, ProfileError> {
        let value: Value = serde_saphyr::from_str(text).map_err(|e| ProfileError::new("<file>", e.to_string()))?;
        Self::from_value(value)
    }

    /// Reads a decoded file.
    pub fn from_value(value: Value) -> Result<Self, ProfileError> {
        if !value.is_object() {
            return Err(ProfileError::new(
                "<file>",
                format!("Invalid value: expected a {KIND} object"),
            ));
        }
        let file: File = decode(value, "")?;
        file.into_profile()
    }

    /// Applies the file to `config`: names, scoring, plugin arguments, backoff, leader election (the
    /// Lease's identity is kept).
    pub fn apply(&self, config: &mut RuntimeConfig) {
        config.scheduler_names = self.scheduler_names.clone();
        config.core.scoring = self.scoring;
        config.core.weights = self.weights;
        config.profile = self.args.clone();
        if let Some((initial, max)) = self.backoff {
            config.backoff.initial = initial;
            config.backoff.max = max;
        }
        if let Some(le) = &self.leader_election {
            if !le.leader_elect {
                config.leader_election = None;
            } else if let Some(lease) = config.leader_election.as_mut() {
                if let Some(n) = &le.resource_name {
                    lease.name = n.clone();
                }
                if let Some(n) = &le.resource_namespace {
                    lease.namespace = n.clone();
                }
                if let Some(d) = le.lease_duration {
                    lease.lease_duration = d;
                }
                if let Some(d) = le.renew_deadline {
                    lease.renew_deadline = d;
                }
                if let Some(d) = le.retry_period {
                    lease.retry_period = d;
                }
            }
        }
    }
}

/// Deserializes `value` strictly, naming the field of an error below `base`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(value: Value, base: &str) -> Result<T, ProfileError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = match (base.is_empty(), inner.as_str()) {
            (true, ".") => "<file>".to_string(),
            (true, p) => p.to_string(),
            (false, ".") => base.to_string(),
            (false, p) => format!("{base}.{p}"),
        };
        ProfileError::new(path, e.into_inner().to_string())
    })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    parallelism: Option<i32>,
    leader_election: Option<FileLeaderElection>,
    client_connection: Option<Value>,
    healthz_bind_address: Option<String>,
    metrics_bind_address: Option<String>,
    enable_profiling: Option<bool>,
    enable_contention_profiling: Option<bool>,
    percentage_of_nodes_to_score: Option<i32>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    profiles: Option<Vec<Value>>,
    extenders: Option<Vec<Value>>,
    delay_cache_until_active: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileLeaderElection {
    leader_elect: Option<bool>,
    lease_duration: Option<String>,
    renew_deadline: Option<String>,
    retry_period: Option<String>,
    resource_lock: Option<String>,
    resource_name: Option<String>,
    resource_namespace: Option<String>,
}

impl File {
    fn into_profile(self) -> Result<SchedulerProfile, ProfileError> {
        if self.api_version.as_deref() != Some(API_VERSION) {
            return Err(ProfileError::new(
                "apiVersion",
                format!(
                    "Unsupported value: {:?}: supported values: \"{API_VERSION}\"",
                    self.api_version.unwrap_or_default()
                ),
            ));
        }
        if self.kind.as_deref() != Some(KIND) {
            return Err(ProfileError::new(
                "kind",
                format!(
                    "Unsupported value: {:?}: supported values: \"{KIND}\"",
                    self.kind.unwrap_or_default()
                ),
            ));
        }
        if self.extenders.as_ref().is_some_and(|e| !e.is_empty()) {
            return Err(ProfileError::new(
                "extenders",
                "Forbidden: scheduler extenders are not supported by kwas-scheduler",
            ));
        }
        let mut warnings = Vec::new();
        for (set, field) in [
            (self.parallelism.is_some(), "parallelism"),
            (self.client_connection.is_some(), "clientConnection"),
            (self.healthz_bind_address.is_some(), "healthzBindAddress"),
            (self.metrics_bind_address.is_some(), "metricsBindAddress"),
            (self.enable_profiling.is_some(), "enableProfiling"),
            (self.enable_contention_profiling.is_some(), "enableContentionProfiling"),
            (self.percentage_of_nodes_to_score.is_some(), "percentageOfNodesToScore"),
            (self.delay_cache_until_active.is_some(), "delayCacheUntilActive"),
        ] {
            if set {
                warnings.push(format!("{field} is accepted but not applied by kwas-scheduler"));
            }
        }
        let backoff = backoff(self.pod_initial_backoff_seconds, self.pod_max_backoff_seconds)?;
        let leader_election = self.leader_election.map(leader_election).transpose()?;

        let profiles = self.profiles.unwrap_or_default();
        if profiles.is_empty() {
            // Upstream defaults an absent list to one profile named default-scheduler.
            let mut p = SchedulerProfile::upstream_default(vec![DEFAULT_SCHEDULER_NAME.to_string()]);
            p.backoff = backoff;
            p.leader_election = leader_election;
            p.warnings = warnings;
            return Ok(p);
        }
        let mut names: Vec<String> = Vec::new();
        let mut first: Option<Settings> = None;
        for (i, raw) in profiles.into_iter().enumerate() {
            let path = format!("profiles[{i}]");
            let (name, settings) = plugins::profile(raw, &path, &mut warnings)?;
            if names.contains(&name) {
                return Err(ProfileError::new(
                    format!("{path}.schedulerName"),
                    format!("Duplicate value: {name:?}"),
                ));
            }
            names.push(name);
            match &first {
                None => first = Some(settings),
                Some(f) if *f == settings => {}
                Some(_) => {
                    return Err(ProfileError::new(
                        path,
                        "Invalid value: profiles with different plugins or plugin arguments are not supported: \
                         one kwas-scheduler runs one algorithm for every scheduler name",
                    ));
                }
            }
        }
        let Some(settings) = first else {
            return Err(ProfileError::new("profiles", "Required value"));
        };
        Ok(SchedulerProfile {
            scheduler_names: names,
            scoring: settings.scoring,
            weights: settings.weights,
            args: settings.args,
            backoff,
            leader_election,
            warnings,
        })
    }
}

fn backoff(initial: Option<i64>, max: Option<i64>) -> Result<Option<(Duration, Duration)>, ProfileError> {
    if initial.is_none() && max.is_none() {
        return Ok(None);
    }
    let initial = initial.unwrap_or(1);
    let max = max.unwrap_or(10);
    // Upstream: both positive, max at least initial; a day bounds what a duration here can mean.
    const LIMIT: i64 = 86_400;
    if initial <= 0 || initial > LIMIT {
        return Err(ProfileError::new(
            "podInitialBackoffSeconds",
            format!("Invalid value: {initial}: must be in the range 1-{LIMIT}"),
        ));
    }
    if max < initial || max > LIMIT {
        return Err(ProfileError::new(
            "podMaxBackoffSeconds",
            format!("Invalid value: {max}: must be at least podInitialBackoffSeconds ({initial}) and at most {LIMIT}"),
        ));
    }
    Ok(Some((
        Duration::from_secs(initial.unsigned_abs()),
        Duration::from_secs(max.unsigned_abs()),
    )))
}

fn leader_election(le: FileLeaderElection) -> Result<LeaderElection, ProfileError> {
    let duration = |v: Option<String>, field: &str| -> Result<Option<Duration>, ProfileError> {
        v.map(|s| {
            kwas_api_types::duration::parse_go_duration(&s)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    ProfileError::new(
                        format!("leaderElection.{field}"),
                        format!("Invalid value: {s:?}: must be a positive duration"),
                    )
                })
        })
        .transpose()
    };
    if let Some(lock) = le.resource_lock.as_deref()
        && lock != "leases"
    {
        return Err(ProfileError::new(
            "leaderElection.resourceLock",
            format!("Unsupported value: {lock:?}: supported values: \"leases\""),
        ));
    }
    let out = LeaderElection {
        leader_elect: le.leader_elect.unwrap_or(true),
        resource_name: le.resource_name.filter(|s| !s.is_empty()),
        resource_namespace: le.resource_namespace.filter(|s| !s.is_empty()),
        lease_duration: duration(le.lease_duration, "leaseDuration")?,
        renew_deadline: duration(le.renew_deadline, "renewDeadline")?,
        retry_period: duration(le.retry_period, "retryPeriod")?,
    };
    if let (Some(l), Some(r)) = (out.lease_duration, out.renew_deadline)
        && r >= l
    {
        return Err(ProfileError::new(
            "leaderElection.renewDeadline",
            "Invalid value: must be less than leaseDuration",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
