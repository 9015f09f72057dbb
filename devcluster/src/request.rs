//! The per-request context of a write.

/// How strictly unknown fields in a request body are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn (the default).
    #[default]
    Warn,
    /// Reject requests with unknown fields.
    Strict,
}

/// The per-request context of a write: its options (`dryRun`, `fieldManager`, `fieldValidation`, `force`)
/// and what handling it produces besides the object (warnings for the `Warning` header). Every write takes
/// its own context, so nothing a request sets leaks into another (an in-process component such as the
/// kubelet or the garbage collector writes with [`RequestContext::manager`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestContext {
    /// `dryRun=All`: run everything, persist nothing.
    pub dry_run: bool,
    /// The field manager (`fieldManager`, or derived from the User-Agent).
    pub field_manager: String,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `force` for server-side apply.
    pub force: bool,
    /// Warnings collected while handling the request.
    pub warnings: Vec<String>,
    /// What the kind's decoding prepared, without the cluster lock, for its validation under the lock to
    /// look up (the compiled CEL expressions of a DRA object: see `kinds::dra::cel::precompile`). Opaque
    /// here: only the kind that stored it reads it.
    pub precompiled: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

impl RequestContext {
    /// Options for an in-process component writing as `manager`.
    pub fn manager(manager: &str) -> Self {
        RequestContext {
            field_manager: manager.to_string(),
            ..Default::default()
        }
    }
}
