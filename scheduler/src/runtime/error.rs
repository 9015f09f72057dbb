//! The runtime's error type.

/// Why the runtime could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot be used.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The admin server could not listen on its address.
    #[error("admin server on {addr}: {source}")]
    Admin {
        /// The address.
        addr: std::net::SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A Kubernetes API call failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// True when the error is an API status with `code`.
pub(crate) fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == code)
}
