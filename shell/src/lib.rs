//! # kwas-shell
//!
//! The process shell that `kwas controllers` and `kwas scheduler` share, around their components:
//!
//! | module | what it does |
//! | --- | --- |
//! | [`health`] | what `/healthz` and `/readyz` answer: failures, a stall detector for loops that beat, readiness, leadership |
//! | [`admin`] | the admin server: `/healthz`, `/livez`, `/readyz`, `/metrics` |
//! | [`lease`] | leader election on a Lease with client-go's semantics (renew deadline, local-clock expiry, release on shutdown) |
//! | [`supervisor`] | component tasks: one that fails or panics fails the health check and stops the process, which exits non-zero |
//! | [`shutdown`] | one shutdown signal, fired by SIGINT / SIGTERM or by a failing task |
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use kwas_shell::{Health, Shutdown, Supervisor, admin, shutdown::os_signal};
//!
//! let health = Arc::new(Health::default());
//! let shutdown = Shutdown::new();
//! shutdown.fire_on(os_signal());
//! let metrics: admin::MetricsEncoder = Arc::new(|| Ok(String::from("# EOF\n")));
//! let (_addr, _server) =
//!     admin::serve("127.0.0.1:0".parse()?, health.clone(), metrics, shutdown.wait()).await?;
//! let mut supervisor = Supervisor::new(health.clone(), shutdown.clone());
//! let stop = shutdown.wait();
//! supervisor.spawn("component", async move {
//!     health_ready(&health);
//!     stop.await;
//!     Ok::<(), std::io::Error>(())
//! });
//! supervisor.wait().await?; // Err: a component failed; exit non-zero
//! # fn health_ready(h: &Health) { h.set_ready(true) }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod admin;
pub mod health;
pub mod lease;
pub mod shutdown;
pub mod supervisor;

pub use health::Health;
pub use lease::{Leadership, LeaseConfig};
pub use shutdown::Shutdown;
pub use supervisor::{Supervisor, TaskFailed};
