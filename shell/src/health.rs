//! What `/healthz` and `/readyz` answer: a process is healthy while no supervised task has failed and (for
//! a component that beats) its loop has beaten recently; ready once its component says so.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A loop that has not beaten for this long is stalled (`/healthz` fails).
pub const STALL_AFTER: Duration = Duration::from_secs(30);

/// Health, readiness and leadership of a process, shared by its components and its admin server.
#[derive(Debug)]
pub struct Health {
    started: Instant,
    beats: AtomicBool,
    beat_ms: AtomicU64,
    ready: AtomicBool,
    leader: AtomicBool,
    failure: Mutex<Option<String>>,
    admin_addr: std::sync::OnceLock<std::net::SocketAddr>,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            beats: AtomicBool::new(false),
            beat_ms: AtomicU64::new(0),
            ready: AtomicBool::new(false),
            leader: AtomicBool::new(false),
            failure: Mutex::new(None),
            admin_addr: std::sync::OnceLock::new(),
        }
    }
}

impl Health {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A heartbeat of the process's main loop; once a component beats, missing beats for
    /// [`STALL_AFTER`] make the process unhealthy.
    pub fn beat(&self) {
        self.beat_ms.store(self.now_ms(), Ordering::Relaxed);
        self.beats.store(true, Ordering::Relaxed);
    }

    /// Whether the process is healthy: nothing failed and the main loop (if it beats) is not stalled.
    pub fn healthy(&self) -> bool {
        if self.failure.lock().is_some() {
            return false;
        }
        !self.beats.load(Ordering::Relaxed)
            || self.now_ms().saturating_sub(self.beat_ms.load(Ordering::Relaxed))
                <= u64::try_from(STALL_AFTER.as_millis()).unwrap_or(u64::MAX)
    }

    /// Why the process is unhealthy, when a task failed.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().clone()
    }

    /// Records a failure: `/healthz` and `/readyz` fail from now on (the first failure is kept).
    pub fn fail(&self, why: impl Into<String>) {
        let mut f = self.failure.lock();
        if f.is_none() {
            *f = Some(why.into());
        }
        self.ready.store(false, Ordering::Relaxed);
        self.leader.store(false, Ordering::Relaxed);
    }

    /// Sets readiness.
    pub fn set_ready(&self, ready: bool) {
        self.ready
            .store(ready && self.failure.lock().is_none(), Ordering::Relaxed);
    }

    /// Whether the process is ready.
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Sets whether this instance leads.
    pub fn set_leader(&self, leader: bool) {
        self.leader.store(leader, Ordering::Relaxed);
    }

    /// Whether this instance leads.
    pub fn leader(&self) -> bool {
        self.leader.load(Ordering::Relaxed)
    }

    /// Records where the admin server listens.
    pub fn set_admin_addr(&self, addr: std::net::SocketAddr) {
        let _ = self.admin_addr.set(addr);
    }

    /// Where the admin server listens, once it does.
    pub fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        self.admin_addr.get().copied()
    }

    /// The process is stopping: not ready, not leading.
    pub fn stopped(&self) {
        self.ready.store(false, Ordering::Relaxed);
        self.leader.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_makes_the_process_unhealthy_and_unready_for_good() {
        let h = Health::default();
        assert!(h.healthy());
        h.set_ready(true);
        assert!(h.ready());
        h.fail("the scheduling loop panicked");
        h.fail("a later failure");
        assert!(!h.healthy() && !h.ready());
        h.set_ready(true);
        assert!(!h.ready());
        assert_eq!(h.failure().as_deref(), Some("the scheduling loop panicked"));
    }
}
