//! The admin server: `/healthz`, `/readyz` and `/metrics`.
//!
//! - `/healthz` answers 200 while the scheduling loop is alive (it beats at least every second; no
//!   beat for [`STALL_AFTER`] answers 503), for a liveness probe.
//! - `/readyz` answers 200 once every informer has listed its kind, leader or not (a follower is a
//!   ready standby), for a readiness probe.
//! - `/metrics` serves the Prometheus text format.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::metrics::Metrics;

/// How long without a beat of the scheduling loop `/healthz` tolerates.
pub const STALL_AFTER: Duration = Duration::from_secs(30);

/// State shared by the scheduling loop and the admin server.
#[derive(Debug)]
pub struct Health {
    started: Instant,
    beat_ms: AtomicU64,
    ready: AtomicBool,
    leader: AtomicBool,
    running: AtomicBool,
    admin_addr: std::sync::OnceLock<std::net::SocketAddr>,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            beat_ms: AtomicU64::new(0),
            ready: AtomicBool::new(false),
            leader: AtomicBool::new(false),
            running: AtomicBool::new(true),
            admin_addr: std::sync::OnceLock::new(),
        }
    }
}

impl Health {
    /// The loop is alive.
    pub fn beat(&self) {
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.beat_ms.store(ms, Ordering::Relaxed);
    }

    /// Whether the loop beat within [`STALL_AFTER`] and has not stopped.
    pub fn healthy(&self) -> bool {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.beat_ms.load(Ordering::Relaxed);
        self.running.load(Ordering::Relaxed) && now.saturating_sub(last) <= STALL_AFTER.as_millis() as u64
    }

    /// Sets readiness.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether every informer has synced.
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Sets leadership.
    pub fn set_leader(&self, leader: bool) {
        self.leader.store(leader, Ordering::Relaxed);
    }

    /// Whether this instance schedules.
    pub fn leader(&self) -> bool {
        self.leader.load(Ordering::Relaxed)
    }

    /// Records where the admin server listens.
    pub fn set_admin_addr(&self, addr: std::net::SocketAddr) {
        let _ = self.admin_addr.set(addr);
    }

    /// Where the admin server listens (the actual port when configured with port 0).
    pub fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        self.admin_addr.get().copied()
    }

    /// The loop stopped.
    pub fn stopped(&self) {
        self.running.store(false, Ordering::Relaxed);
        self.ready.store(false, Ordering::Relaxed);
        self.leader.store(false, Ordering::Relaxed);
    }
}

#[derive(Clone)]
struct AdminState {
    health: Arc<Health>,
    metrics: Metrics,
}

async fn healthz(State(s): State<AdminState>) -> impl IntoResponse {
    if s.health.healthy() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "scheduling loop stalled")
    }
}

async fn readyz(State(s): State<AdminState>) -> impl IntoResponse {
    if s.health.ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "informers not synced")
    }
}

async fn serve_metrics(State(s): State<AdminState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.encode(),
    )
}

/// The admin router.
pub fn router(health: Arc<Health>, metrics: Metrics) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(serve_metrics))
        .with_state(AdminState { health, metrics })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_follows_the_loop() {
        let h = Health::default();
        h.beat();
        assert!(h.healthy());
        assert!(!h.ready());
        h.set_ready(true);
        h.set_leader(true);
        assert!(h.ready() && h.leader());
        h.stopped();
        assert!(!h.healthy() && !h.ready() && !h.leader());
    }
}
