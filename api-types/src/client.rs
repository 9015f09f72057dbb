//! kube clients that never resend a write the server may have acted on.
//!
//! kube 5's default retry layer resends any request answered 429, 503 or 504, creates included. A 504 can
//! be a response lost after the API server committed the write (a dropped connection, a proxy timeout), so
//! a create with `generateName` resent on it makes a second object: a Job gets one pod too many. client-go
//! resends only what the server says it did not act on (a 429 or 5xx carrying `Retry-After`). [`client`]
//! turns kube's layer off: every error reaches the caller, whose reconcile, cycle or status writer retries
//! against the state it re-reads (the controllers requeue with backoff, the scheduler's writers retry with
//! preconditions). The `Retry-After` resend is left to those callers: kube's client stack offers no place
//! for a retry layer outside its boxed service.

/// A kube client for `config` with kube's automatic resend turned off (see the module docs).
pub fn client(mut config: kube::Config) -> kube::Result<kube::Client> {
    config.default_retry = false;
    kube::Client::try_from(config)
}

/// Whether kube would resend the request on its own: never, for clients built by [`client`].
pub fn resends(config: &kube::Config) -> bool {
    config.default_retry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_resends_by_default_and_ours_do_not() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        assert!(resends(&config), "kube resends by default");
        let mut ours = config.clone();
        ours.default_retry = false;
        assert!(!resends(&ours));
    }
}
