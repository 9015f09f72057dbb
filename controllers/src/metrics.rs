//! Prometheus metrics of the controllers: reconciles by result, reconcile durations and scheduling-object
//! syncs, per controller, and whether this instance leads (`kwas_controller_is_leader`).
//!
//! `kwas_controller_reconciles_total` counts every reconcile once it is over: `result="success"` or
//! `"error"`, and `"skipped"` for an object left alone because another controller manages it (such
//! reconciles are not timed). A rising `skipped` count shows objects this instance is not configured to
//! manage, and tells a test that the controller has seen such an object and done nothing with it.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of the reconcile counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// The controller (`job`, `jobset`).
    pub controller: String,
    /// `success` or `error`; `skipped` for an object the controller looked at and left alone because
    /// another controller manages it (a Job whose `spec.managedBy` names another controller).
    pub result: String,
}

/// Labels of the duration histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller (`job`, `jobset`).
    pub controller: String,
}

type HistogramFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The controllers' metrics, registered in a Prometheus registry.
#[derive(Clone, Debug)]
pub struct Metrics {
    reconciles: Family<ResultLabels, Counter>,
    durations: HistogramFamily,
    scheduling_syncs: Family<ResultLabels, Counter>,
    job_scheduling_syncs: Family<OutcomeLabels, Counter>,
    is_leader: Gauge,
}

/// Labels of upstream's `job_scheduling_object_syncs_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// `success` or `error`.
    pub result: String,
}

impl Metrics {
    /// Metrics registered in `registry` under the `kwas_controller` prefix.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self {
            reconciles: Family::default(),
            durations: Family::new_with_constructor(duration_histogram as fn() -> Histogram),
            scheduling_syncs: Family::default(),
            job_scheduling_syncs: Family::default(),
            is_leader: Gauge::default(),
        };
        // KEP-5547's metric of the Job controller, under upstream's name (no prefix).
        registry.register(
            "job_scheduling_object_syncs",
            "Syncs of a Job's Workload and PodGroup by result (error includes a blocked Job)",
            metrics.job_scheduling_syncs.clone(),
        );
        let sub = registry.sub_registry_with_prefix("kwas_controller");
        sub.register(
            "reconciles",
            "Reconciles by controller and result",
            metrics.reconciles.clone(),
        );
        sub.register(
            "reconcile_duration_seconds",
            "Duration of reconciles by controller",
            metrics.durations.clone(),
        );
        sub.register(
            "scheduling_object_syncs",
            "Workload / PodGroup / CompositePodGroup syncs by controller and result",
            metrics.scheduling_syncs.clone(),
        );
        sub.register(
            "is_leader",
            "1 while this instance runs the controllers (holds the Lease, or runs without leader election)",
            metrics.is_leader.clone(),
        );
        metrics
    }

    /// Metrics that are not exported anywhere (tests, embedded use).
    pub fn unregistered() -> Self {
        Self::new(&mut Registry::default())
    }

    /// Start timing a reconcile of `controller`; finish with [`ReconcileTimer::finish`].
    pub fn reconcile(&self, controller: &str) -> ReconcileTimer<'_> {
        ReconcileTimer {
            metrics: self,
            controller: controller.to_string(),
            start: Instant::now(),
        }
    }

    /// Count a scheduling-object sync of `controller` (for the Job controller also under upstream's
    /// `job_scheduling_object_syncs_total`).
    pub fn scheduling_sync(&self, controller: &str, ok: bool) {
        if controller == "job" {
            self.job_scheduling_syncs
                .get_or_create(&OutcomeLabels {
                    result: if ok { "success" } else { "error" }.to_string(),
                })
                .inc();
        }
        self.scheduling_syncs
            .get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result: if ok { "success" } else { "error" }.to_string(),
            })
            .inc();
    }

    /// Sets the leader gauge.
    pub fn leader(&self, leader: bool) {
        self.is_leader.set(i64::from(leader));
    }

    /// Count a reconcile of `controller` that left its object alone (another controller manages it).
    pub fn skipped(&self, controller: &str) {
        self.reconciles
            .get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result: "skipped".to_string(),
            })
            .inc();
    }

    /// The number of reconciles of `controller` with `result` so far.
    pub fn reconciles(&self, controller: &str, result: &str) -> u64 {
        self.reconciles
            .get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result: result.to_string(),
            })
            .get()
    }
}

/// Times one reconcile.
#[derive(Debug)]
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    controller: String,
    start: Instant,
}

impl ReconcileTimer<'_> {
    /// Record the reconcile's duration and result.
    pub fn finish(self, ok: bool) {
        self.metrics
            .durations
            .get_or_create(&ControllerLabels {
                controller: self.controller.clone(),
            })
            .observe(self.start.elapsed().as_secs_f64());
        self.metrics
            .reconciles
            .get_or_create(&ResultLabels {
                controller: self.controller,
                result: if ok { "success" } else { "error" }.to_string(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_are_counted_and_exported() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        metrics.reconcile("job").finish(true);
        metrics.reconcile("job").finish(false);
        metrics.scheduling_sync("job", true);
        metrics.scheduling_sync("job", false);
        metrics.skipped("job");
        assert_eq!(metrics.reconciles("job", "success"), 1);
        assert_eq!(metrics.reconciles("job", "skipped"), 1);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("kwas_controller_reconciles_total{controller=\"job\",result=\"error\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("job_scheduling_object_syncs_total{result=\"error\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("job_scheduling_object_syncs_total{result=\"success\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("kwas_controller_reconcile_duration_seconds_count{controller=\"job\"} 2"),
            "{text}"
        );
        assert!(text.contains("kwas_controller_scheduling_object_syncs_total"), "{text}");
        assert!(text.contains("kwas_controller_is_leader 0"), "{text}");
        metrics.leader(true);
        text.clear();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains("kwas_controller_is_leader 1"), "{text}");
    }
}
