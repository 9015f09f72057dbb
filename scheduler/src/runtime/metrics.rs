//! Prometheus metrics of the scheduler runtime (served on `/metrics`).
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `kwas_scheduler_group_attempt_duration_seconds` | histogram | `result`: `scheduled`, `unschedulable`, `error` |
//! | `kwas_scheduler_pod_attempt_duration_seconds` | histogram | `result` (units that are plain pods) |
//! | `kwas_scheduler_pods_scheduled_total` | counter | |
//! | `kwas_scheduler_binding_failures_total` | counter | |
//! | `kwas_scheduler_preemption_attempts_total` | counter | `result`: `preempt`, `not_helpful`, `not_allowed`, `not_needed` |
//! | `kwas_scheduler_preemption_victims_total` | counter | |
//! | `kwas_scheduler_queue_depth` | gauge | `queue`: `active`, `backoff`, `unschedulable`, `gated` |
//! | `kwas_scheduler_is_leader` | gauge | |
//! | `kwas_scheduler_api_errors_total` | counter | `operation`: `bind`, `status`, `delete`, `watch` |
//! | `kwas_scheduler_events_dropped_total` | counter | |
//! | `kwas_scheduler_invalid_objects_total` | counter | `kind` (objects the snapshot rejected) |
//!
//! Alongside, kube-scheduler's workload-aware metrics under upstream's names, labels and buckets, so
//! dashboards and alerts written for kube-scheduler read kwas too (`profile` is the scheduler's primary
//! name):
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `scheduler_podgroup_schedule_attempts_total` | counter | `profile`, `result` (`scheduled`, `unschedulable`, `waiting_on_preemption`, `error`), `type` (`podgroup`, `compositepodgroup`) |
//! | `scheduler_podgroup_scheduling_attempt_duration_seconds` | histogram (1 ms x2, 15 buckets) | `profile`, `result`, `type` |
//! | `scheduler_podgroup_scheduling_algorithm_duration_seconds` | histogram (1 ms x2, 15 buckets) | `profile`, `type` |
//! | `scheduler_workload_preemption_attempts_total` | counter | `result` (kwas's preemption results, as in `kwas_scheduler_preemption_attempts_total`) |
//! | `scheduler_workload_preemption_victims` | histogram (1 x2, 11 buckets) | |
//! | `scheduler_preemption_attempts_total` / `scheduler_preemption_victims` | counter / histogram (1 x2, 7 buckets) | (preemptions by plain pods) |
//! | `scheduler_queued_entities` | gauge | `queue` (`active`, `backoff`, `unschedulable`, `gated`), `type` (`pod`, `podgroup`, `compositepodgroup`) |
//! | `scheduler_generated_placements_total` | counter | `profile` |
//! | `scheduler_placement_evaluations_total` | counter | `profile`, `result` (`feasible`, `infeasible`) |
//!
//! kwas evaluates every placement it generates, so the generated and evaluated counts agree; it does not
//! time placements one by one (no `scheduler_placement_evaluation_duration_seconds`).

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::scheduling_queue::{ENTITY_TYPES, QUEUES, QueueDepth};

/// A `result` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    /// The outcome.
    pub result: String,
}

/// A `queue` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    /// The queue state.
    pub queue: String,
}

/// An `operation` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabel {
    /// The API operation.
    pub operation: String,
}

/// A `kind` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// The object kind.
    pub kind: String,
}

type HistogramFamily = Family<ResultLabel, Histogram, fn() -> Histogram>;

/// Upstream's `profile`, `result` and `type` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupAttemptLabels {
    /// The scheduler profile (kwas: the primary scheduler name).
    pub profile: String,
    /// The outcome.
    pub result: String,
    /// `podgroup` or `compositepodgroup`.
    pub r#type: String,
}

/// Upstream's `profile` and `type` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProfileTypeLabels {
    /// The scheduler profile.
    pub profile: String,
    /// `podgroup` or `compositepodgroup`.
    pub r#type: String,
}

/// Upstream's `queue` and `type` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueTypeLabels {
    /// The queue.
    pub queue: String,
    /// `pod`, `podgroup` or `compositepodgroup`.
    pub r#type: String,
}

/// Upstream's `profile` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProfileLabel {
    /// The scheduler profile.
    pub profile: String,
}

/// Upstream's `profile` and `result` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProfileResultLabels {
    /// The scheduler profile.
    pub profile: String,
    /// The outcome.
    pub result: String,
}

fn upstream_attempt_histogram() -> Histogram {
    // kube-scheduler's ExponentialBuckets(0.001, 2, 15): 1 ms .. ~16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn workload_victims_histogram() -> Histogram {
    // ExponentialBuckets(1, 2, 11): the last bucket is [1024, +Inf).
    Histogram::new(exponential_buckets(1.0, 2.0, 11))
}

/// kube-scheduler's metrics kwas exports alongside its own (see the module docs).
#[derive(Clone, Debug)]
struct Upstream {
    profile: String,
    group_attempts: Family<GroupAttemptLabels, Counter>,
    group_attempt_duration: Family<GroupAttemptLabels, Histogram, fn() -> Histogram>,
    group_algorithm_duration: Family<ProfileTypeLabels, Histogram, fn() -> Histogram>,
    workload_preemption_attempts: Family<ResultLabel, Counter>,
    workload_preemption_victims: Histogram,
    pod_preemption_attempts: Counter,
    pod_preemption_victims: Histogram,
    queued_entities: Family<QueueTypeLabels, Gauge>,
    generated_placements: Family<ProfileLabel, Counter>,
    placement_evaluations: Family<ProfileResultLabels, Counter>,
}

impl Upstream {
    fn new(profile: &str) -> Self {
        Self {
            profile: profile.to_string(),
            group_attempts: Family::default(),
            group_attempt_duration: Family::new_with_constructor(upstream_attempt_histogram as fn() -> Histogram),
            group_algorithm_duration: Family::new_with_constructor(upstream_attempt_histogram as fn() -> Histogram),
            workload_preemption_attempts: Family::default(),
            workload_preemption_victims: workload_victims_histogram(),
            pod_preemption_attempts: Counter::default(),
            pod_preemption_victims: Histogram::new(exponential_buckets(1.0, 2.0, 7)),
            queued_entities: Family::default(),
            generated_placements: Family::default(),
            placement_evaluations: Family::default(),
        }
    }

    fn register(&self, registry: &mut Registry) {
        let sub = registry.sub_registry_with_prefix("scheduler");
        sub.register(
            "podgroup_schedule_attempts",
            "Number of attempts to schedule pod group, by the result, scheduler profile and entity type ('podgroup' or 'compositepodgroup'). 'unschedulable' means a pod group could not be scheduled, while 'error' means an internal scheduler problem.",
            self.group_attempts.clone(),
        );
        sub.register(
            "podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            self.group_attempt_duration.clone(),
        );
        sub.register(
            "podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            self.group_algorithm_duration.clone(),
        );
        sub.register(
            "workload_preemption_attempts",
            "Total preemption attempts initiated by workload (including pod groups) in the cluster till now.",
            self.workload_preemption_attempts.clone(),
        );
        sub.register(
            "workload_preemption_victims",
            "Number of pod preemption victims caused by workload preemption.",
            self.workload_preemption_victims.clone(),
        );
        sub.register(
            "preemption_attempts",
            "Total preemption attempts in the cluster till now",
            self.pod_preemption_attempts.clone(),
        );
        sub.register(
            "preemption_victims",
            "Number of selected preemption victims for preemption initiated by a single pod",
            self.pod_preemption_victims.clone(),
        );
        sub.register(
            "queued_entities",
            "Number of queued scheduling entities ('pod', 'podgroup' or 'compositepodgroup'; 'pod' stands for individual pods that are not members of any podgroup) by the queue type.",
            self.queued_entities.clone(),
        );
        sub.register(
            "generated_placements",
            "Number of candidate placements generated when scheduling pod groups, by scheduler profile.",
            self.generated_placements.clone(),
        );
        sub.register(
            "placement_evaluations",
            "Number of candidate placements evaluated when scheduling pod groups, by result and scheduler profile. 'feasible' means the pod group fit into the placement, while 'infeasible' means it did not.",
            self.placement_evaluations.clone(),
        );
    }
}

/// One scheduling attempt of a root unit, for the metrics.
#[derive(Clone, Copy, Debug)]
pub struct Attempt<'a> {
    /// `None` for a plain pod; `Some("podgroup" | "compositepodgroup")` for a group hierarchy.
    pub group_type: Option<&'a str>,
    /// `scheduled`, `unschedulable`, `waiting_on_preemption` or `error`.
    pub result: &'a str,
    /// The whole attempt (algorithm and preemption).
    pub seconds: f64,
    /// The scheduling algorithm alone.
    pub algorithm_seconds: f64,
    /// Topology placements simulated.
    pub placements_evaluated: u64,
    /// Of those, the feasible ones.
    pub placements_feasible: u64,
}

fn attempt_histogram() -> Histogram {
    // 100µs .. ~3.3s
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

/// The runtime's metrics. Cheap to clone; every clone updates the same series.
#[derive(Clone, Debug)]
pub struct Metrics {
    group_attempts: HistogramFamily,
    pod_attempts: HistogramFamily,
    pods_scheduled: Counter,
    binding_failures: Counter,
    preemption_attempts: Family<ResultLabel, Counter>,
    preemption_victims: Counter,
    queue_depth: Family<QueueLabel, Gauge>,
    is_leader: Gauge,
    api_errors: Family<OperationLabel, Counter>,
    events_dropped: Counter,
    invalid_objects: Family<KindLabel, Counter>,
    upstream: Upstream,
    registry: Arc<Registry>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Metrics in a registry of their own, for the default scheduler name.
    pub fn new() -> Self {
        Self::with_profile(kwas_api_types::names::SCHEDULER_NAME)
    }

    /// Metrics in a registry of their own; upstream's `profile` label is `profile`.
    pub fn with_profile(profile: &str) -> Self {
        let mut registry = Registry::default();
        let m = Self {
            group_attempts: Family::new_with_constructor(attempt_histogram as fn() -> Histogram),
            pod_attempts: Family::new_with_constructor(attempt_histogram as fn() -> Histogram),
            pods_scheduled: Counter::default(),
            binding_failures: Counter::default(),
            preemption_attempts: Family::default(),
            preemption_victims: Counter::default(),
            queue_depth: Family::default(),
            is_leader: Gauge::default(),
            api_errors: Family::default(),
            events_dropped: Counter::default(),
            invalid_objects: Family::default(),
            upstream: Upstream::new(profile),
            registry: Arc::new(Registry::default()),
        };
        m.upstream.register(&mut registry);
        let sub = registry.sub_registry_with_prefix("kwas_scheduler");
        sub.register(
            "group_attempt_duration_seconds",
            "Duration of scheduling attempts of group units (one cycle for a whole hierarchy), by result",
            m.group_attempts.clone(),
        );
        sub.register(
            "pod_attempt_duration_seconds",
            "Duration of scheduling attempts of plain pods, by result",
            m.pod_attempts.clone(),
        );
        sub.register("pods_scheduled", "Pods bound to a node", m.pods_scheduled.clone());
        sub.register(
            "binding_failures",
            "Bindings the API server rejected",
            m.binding_failures.clone(),
        );
        sub.register(
            "preemption_attempts",
            "Preemption attempts by result",
            m.preemption_attempts.clone(),
        );
        sub.register(
            "preemption_victims",
            "Pods chosen as preemption victims",
            m.preemption_victims.clone(),
        );
        sub.register(
            "queue_depth",
            "Units in the scheduling queue by state",
            m.queue_depth.clone(),
        );
        sub.register("is_leader", "1 while this instance schedules", m.is_leader.clone());
        sub.register("api_errors", "Failed API calls by operation", m.api_errors.clone());
        sub.register(
            "events_dropped",
            "Events dropped because the event buffer was full",
            m.events_dropped.clone(),
        );
        sub.register(
            "invalid_objects",
            "Objects the scheduler could not take into its snapshot, by kind",
            m.invalid_objects.clone(),
        );
        Self {
            registry: Arc::new(registry),
            ..m
        }
    }

    /// The registry the metrics are in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The metrics in Prometheus' text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// Records a scheduling attempt: kwas's histogram (where `waiting_on_preemption` counts as
    /// `unschedulable`) and, for groups, upstream's.
    pub fn attempt(&self, a: Attempt<'_>) {
        let family = if a.group_type.is_some() {
            &self.group_attempts
        } else {
            &self.pod_attempts
        };
        let own = if a.result == "waiting_on_preemption" {
            "unschedulable"
        } else {
            a.result
        };
        family
            .get_or_create(&ResultLabel {
                result: own.to_string(),
            })
            .observe(a.seconds);
        let u = &self.upstream;
        if let Some(type_) = a.group_type {
            let labels = GroupAttemptLabels {
                profile: u.profile.clone(),
                result: a.result.to_string(),
                r#type: type_.to_string(),
            };
            u.group_attempts.get_or_create(&labels).inc();
            u.group_attempt_duration.get_or_create(&labels).observe(a.seconds);
            u.group_algorithm_duration
                .get_or_create(&ProfileTypeLabels {
                    profile: u.profile.clone(),
                    r#type: type_.to_string(),
                })
                .observe(a.algorithm_seconds);
        }
        if a.placements_evaluated > 0 {
            let profile = ProfileLabel {
                profile: u.profile.clone(),
            };
            u.generated_placements
                .get_or_create(&profile)
                .inc_by(a.placements_evaluated);
            let feasible = a.placements_feasible.min(a.placements_evaluated);
            for (result, n) in [
                ("feasible", feasible),
                ("infeasible", a.placements_evaluated - feasible),
            ] {
                if n > 0 {
                    u.placement_evaluations
                        .get_or_create(&ProfileResultLabels {
                            profile: u.profile.clone(),
                            result: result.to_string(),
                        })
                        .inc_by(n);
                }
            }
        }
    }

    /// Counts a bound pod.
    pub fn pod_scheduled(&self) {
        self.pods_scheduled.inc();
    }

    /// Pods bound so far.
    pub fn pods_scheduled(&self) -> u64 {
        self.pods_scheduled.get()
    }

    /// Counts a rejected binding.
    pub fn binding_failure(&self) {
        self.binding_failures.inc();
    }

    /// Bindings rejected so far.
    pub fn binding_failures(&self) -> u64 {
        self.binding_failures.get()
    }

    /// Counts a preemption step only kwas has (a victim evicted again, a partial gang released, waiting
    /// for an earlier preemption's victims) in `kwas_scheduler_preemption_attempts_total` alone.
    pub fn kwas_preemption_attempt(&self, result: &str) {
        self.preemption_attempts
            .get_or_create(&ResultLabel {
                result: result.to_string(),
            })
            .inc();
    }

    /// Counts a preemption attempt by a group (`workload`, upstream's workload preemption) or a plain pod.
    pub fn preemption_attempt(&self, workload: bool, result: &str) {
        self.kwas_preemption_attempt(result);
        if workload {
            self.upstream
                .workload_preemption_attempts
                .get_or_create(&ResultLabel {
                    result: result.to_string(),
                })
                .inc();
        } else {
            self.upstream.pod_preemption_attempts.inc();
        }
    }

    /// Counts the victims of one preemption by a group (`workload`) or a plain pod.
    pub fn preemption_victims(&self, workload: bool, n: usize) {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        self.preemption_victims.inc_by(n);
        #[allow(clippy::cast_precision_loss)]
        let observed = n as f64;
        if workload {
            self.upstream.workload_preemption_victims.observe(observed);
        } else {
            self.upstream.pod_preemption_victims.observe(observed);
        }
    }

    /// Victims so far.
    pub fn victims(&self) -> u64 {
        self.preemption_victims.get()
    }

    /// Sets the queue depth gauges.
    pub fn queue_depth(&self, d: QueueDepth) {
        for (queue, n) in [
            ("active", d.active),
            ("backoff", d.backoff),
            ("unschedulable", d.unschedulable),
            ("gated", d.gated),
        ] {
            self.queue_depth
                .get_or_create(&QueueLabel { queue: queue.into() })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        for (q, row) in QUEUES.iter().zip(d.by_type.iter()) {
            for (t, n) in ENTITY_TYPES.iter().zip(row.iter()) {
                self.upstream
                    .queued_entities
                    .get_or_create(&QueueTypeLabels {
                        queue: (*q).to_string(),
                        r#type: (*t).to_string(),
                    })
                    .set(i64::try_from(*n).unwrap_or(i64::MAX));
            }
        }
    }

    /// Sets the leader gauge.
    pub fn leader(&self, leader: bool) {
        self.is_leader.set(i64::from(leader));
    }

    /// Counts a failed API call.
    pub fn api_error(&self, operation: &str) {
        self.api_errors
            .get_or_create(&OperationLabel {
                operation: operation.to_string(),
            })
            .inc();
    }

    /// Counts a dropped event.
    pub fn event_dropped(&self) {
        self.events_dropped.inc();
    }

    /// Counts an object the snapshot rejected.
    pub fn invalid_object(&self, kind: &str) {
        self.invalid_objects
            .get_or_create(&KindLabel { kind: kind.to_string() })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_exported_under_their_names() {
        let m = Metrics::with_profile("kwas-scheduler");
        let attempt = |group_type, result, placements_evaluated, placements_feasible| Attempt {
            group_type,
            result,
            seconds: 0.002,
            algorithm_seconds: 0.001,
            placements_evaluated,
            placements_feasible,
        };
        m.attempt(attempt(Some("podgroup"), "scheduled", 3, 1));
        m.attempt(attempt(Some("compositepodgroup"), "waiting_on_preemption", 0, 0));
        m.attempt(attempt(None, "unschedulable", 0, 0));
        m.pod_scheduled();
        m.pod_scheduled();
        m.preemption_victims(true, 3);
        m.preemption_attempt(true, "preempt");
        m.preemption_attempt(false, "not_helpful");
        m.preemption_victims(false, 2);
        let mut by_type = [[0; ENTITY_TYPES.len()]; QUEUES.len()];
        by_type[0] = [1, 0, 1];
        by_type[1][1] = 1;
        by_type[3][2] = 4;
        m.queue_depth(QueueDepth {
            active: 2,
            backoff: 1,
            unschedulable: 0,
            gated: 4,
            by_type,
        });
        m.leader(true);
        let text = m.clone().encode();
        for needle in [
            "kwas_scheduler_group_attempt_duration_seconds_count{result=\"scheduled\"} 1",
            "kwas_scheduler_group_attempt_duration_seconds_count{result=\"unschedulable\"} 1",
            "kwas_scheduler_pod_attempt_duration_seconds_count{result=\"unschedulable\"} 1",
            "kwas_scheduler_pods_scheduled_total 2",
            "kwas_scheduler_preemption_victims_total 5",
            "kwas_scheduler_preemption_attempts_total{result=\"preempt\"} 1",
            "kwas_scheduler_queue_depth{queue=\"gated\"} 4",
            "kwas_scheduler_is_leader 1",
            // kube-scheduler's names and labels.
            "scheduler_podgroup_schedule_attempts_total{profile=\"kwas-scheduler\",result=\"scheduled\",type=\"podgroup\"} 1",
            "scheduler_podgroup_schedule_attempts_total{profile=\"kwas-scheduler\",result=\"waiting_on_preemption\",type=\"compositepodgroup\"} 1",
            "scheduler_podgroup_scheduling_attempt_duration_seconds_count{profile=\"kwas-scheduler\",result=\"scheduled\",type=\"podgroup\"} 1",
            "scheduler_podgroup_scheduling_attempt_duration_seconds_bucket{le=\"0.001\",profile=\"kwas-scheduler\",result=\"scheduled\",type=\"podgroup\"} 0",
            "scheduler_podgroup_scheduling_algorithm_duration_seconds_count{profile=\"kwas-scheduler\",type=\"podgroup\"} 1",
            "scheduler_workload_preemption_attempts_total{result=\"preempt\"} 1",
            "scheduler_workload_preemption_victims_count 1",
            "scheduler_workload_preemption_victims_bucket{le=\"1024.0\"} 1",
            "scheduler_preemption_attempts_total 1",
            "scheduler_preemption_victims_count 1",
            "scheduler_queued_entities{queue=\"active\",type=\"pod\"} 1",
            "scheduler_queued_entities{queue=\"active\",type=\"compositepodgroup\"} 1",
            "scheduler_queued_entities{queue=\"gated\",type=\"compositepodgroup\"} 4",
            "scheduler_queued_entities{queue=\"unschedulable\",type=\"podgroup\"} 0",
            "scheduler_generated_placements_total{profile=\"kwas-scheduler\"} 3",
            "scheduler_placement_evaluations_total{profile=\"kwas-scheduler\",result=\"feasible\"} 1",
            "scheduler_placement_evaluations_total{profile=\"kwas-scheduler\",result=\"infeasible\"} 2",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        assert_eq!(m.pods_scheduled(), 2);
    }

    #[test]
    fn values_at_their_limits_do_not_panic() {
        let m = Metrics::new();
        m.preemption_victims(true, usize::MAX);
        m.attempt(Attempt {
            group_type: Some("podgroup"),
            result: "scheduled",
            seconds: f64::MAX,
            algorithm_seconds: 0.0,
            placements_evaluated: u64::MAX,
            placements_feasible: u64::MAX,
        });
        let mut by_type = [[0; ENTITY_TYPES.len()]; QUEUES.len()];
        by_type[0][0] = usize::MAX;
        m.queue_depth(QueueDepth {
            active: usize::MAX,
            by_type,
            ..Default::default()
        });
        assert!(
            m.encode()
                .contains("scheduler_queued_entities{queue=\"active\",type=\"pod\"} 9223372036854775807")
        );
    }
}
