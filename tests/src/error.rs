//! The suite's error type.

use std::time::Duration;

/// What can go wrong while driving the stack.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The stack (devcluster, CRDs, controllers, scheduler) could not be started or restarted.
    #[error("stack: {0}")]
    Stack(#[from] kwas_stack::Error),
    /// An API request failed.
    #[error("API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// A condition did not hold within its deadline.
    #[error("timed out after {after:?} waiting for {what}{}", last.as_deref().map(|l| format!(" (last seen: {l})")).unwrap_or_default())]
    Timeout {
        /// What was awaited.
        what: String,
        /// The deadline.
        after: Duration,
        /// The last observation, when the caller reports one.
        last: Option<String>,
    },
    /// An object read from the API is not what the suite expects of it.
    #[error("{0}")]
    Unexpected(String),
    /// An object could not be built from its JSON description.
    #[error("invalid object: {0}")]
    Json(#[from] serde_json::Error),
}

/// The suite's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
