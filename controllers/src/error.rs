//! The controllers' error type.

/// Errors of a reconcile; [`crate::retry`] decides how each is retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// An object could not be (de)serialized.
    #[error("serialization: {0}")]
    Serde(#[from] serde_json::Error),
    /// An object the controller works on is missing a required field.
    #[error("{0}")]
    MissingField(&'static str),
    /// Creating a scheduling object failed; an event was recorded and the object will be retried.
    #[error("creating {kind} {name}: {source}")]
    Create {
        /// The kind of object.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// A write conditional on a cached object's resourceVersion was refused: the cache is older than the
    /// stored object. The reconcile reads the object and runs again.
    #[error("the cached object is older than the stored one")]
    StaleCache,
    /// The reconcile panicked; the panic was contained and the object is retried with backoff.
    #[error("reconcile panicked: {0}")]
    Panic(String),
}

/// A reconcile result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// True when the error is a 404 from the API server.
pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

/// True when the error is a 409 AlreadyExists / Conflict from the API server.
pub fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}
