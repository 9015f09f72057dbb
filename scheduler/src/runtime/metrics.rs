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

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::scheduling_queue::QueueDepth;

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
    registry: Arc<Registry>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Metrics in a registry of their own.
    pub fn new() -> Self {
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
            registry: Arc::new(Registry::default()),
        };
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

    /// Records a scheduling attempt.
    pub fn attempt(&self, group: bool, result: &str, seconds: f64) {
        let family = if group {
            &self.group_attempts
        } else {
            &self.pod_attempts
        };
        family
            .get_or_create(&ResultLabel {
                result: result.to_string(),
            })
            .observe(seconds);
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

    /// Counts a preemption attempt.
    pub fn preemption_attempt(&self, result: &str) {
        self.preemption_attempts
            .get_or_create(&ResultLabel {
                result: result.to_string(),
            })
            .inc();
    }

    /// Counts preemption victims.
    pub fn preemption_victims(&self, n: usize) {
        self.preemption_victims.inc_by(n as u64);
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
                .set(n as i64);
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
        let m = Metrics::new();
        m.attempt(true, "scheduled", 0.002);
        m.attempt(false, "unschedulable", 0.001);
        m.pod_scheduled();
        m.pod_scheduled();
        m.preemption_victims(3);
        m.preemption_attempt("preempt");
        m.queue_depth(QueueDepth {
            active: 2,
            backoff: 1,
            unschedulable: 0,
            gated: 4,
        });
        m.leader(true);
        let text = m.clone().encode();
        for needle in [
            "kwas_scheduler_group_attempt_duration_seconds_count{result=\"scheduled\"} 1",
            "kwas_scheduler_pod_attempt_duration_seconds_count{result=\"unschedulable\"} 1",
            "kwas_scheduler_pods_scheduled_total 2",
            "kwas_scheduler_preemption_victims_total 3",
            "kwas_scheduler_preemption_attempts_total{result=\"preempt\"} 1",
            "kwas_scheduler_queue_depth{queue=\"gated\"} 4",
            "kwas_scheduler_is_leader 1",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        assert_eq!(m.pods_scheduled(), 2);
    }
}
