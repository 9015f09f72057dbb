//! What a controller does after a failed reconcile, and how a panic in one reconcile is contained.
//!
//! - An error the object itself causes ([`Error::MissingField`], [`Error::Serde`], an object that does not
//!   decode) cannot go away by
//!   retrying: the controller waits for the object to change.
//! - Any other error (the API server unavailable, a conflict, a rejected write) is retried per object with
//!   exponential backoff: 1 s, 2 s, 4 s, … capped at 60 s (upstream's Job controller uses the same
//!   `DefaultJobApiBackOff` / `MaxJobApiBackOff`). A successful reconcile resets the object's backoff.
//! - A panic in a reconcile is caught ([`contain`]), turned into [`Error::Panic`], recorded as a Warning
//!   event `ReconcileError` on the object, and retried with backoff like a transient error: one bad object
//!   costs its own retries, never the controller.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::Duration;

use futures::FutureExt;
use kube::runtime::controller::Action;

use crate::error::{Error, Result};

/// The first retry delay.
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// The longest retry delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// An object's identity for its backoff: namespace, name and uid (a recreated object starts afresh).
pub type Key = (String, String, String);

/// The key of `obj`.
pub fn key<K: kube::Resource>(obj: &K) -> Key {
    let m = obj.meta();
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
        m.uid.clone().unwrap_or_default(),
    )
}

/// Per-object failure counts.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: Mutex<HashMap<Key, u32>>,
}

impl Backoff {
    /// The delay before retrying `key` after one more failure.
    pub fn failed(&self, key: Key) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let n = failures.entry(key).or_insert(0);
        let delay = delay(*n);
        *n = n.saturating_add(1);
        delay
    }

    /// Forgets `key`'s failures (after a success, or when the object is gone).
    pub fn succeeded(&self, key: &Key) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(key);
    }

    /// How many objects are backing off.
    pub fn len(&self) -> usize {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no object is backing off.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The delay after `failures` earlier failures: `INITIAL_BACKOFF * 2^failures`, at most `MAX_BACKOFF`.
pub fn delay(failures: u32) -> Duration {
    INITIAL_BACKOFF
        .checked_mul(2u32.checked_pow(failures).unwrap_or(u32::MAX))
        .map_or(MAX_BACKOFF, |d| d.min(MAX_BACKOFF))
}

/// Whether retrying can help: errors the object itself causes wait for it to change.
pub fn is_transient(error: &Error) -> bool {
    !matches!(
        error,
        Error::MissingField(_) | Error::Serde(_) | Error::Kube(kube::Error::SerdeError(_))
    )
}

/// The error policy's action for `error` on the object `key`.
pub fn action(backoff: &Backoff, key: Key, error: &Error) -> Action {
    if is_transient(error) {
        Action::requeue(backoff.failed(key))
    } else {
        backoff.succeeded(&key);
        Action::await_change()
    }
}

/// Runs a reconcile, turning a panic into [`Error::Panic`].
pub async fn contain<T>(reconcile: impl Future<Output = Result<T>>) -> Result<T> {
    match AssertUnwindSafe(reconcile).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(Error::Panic(message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let b = Backoff::default();
        let k = ("ns".to_string(), "a".to_string(), "u".to_string());
        let delays: Vec<u64> = (0..9).map(|_| b.failed(k.clone()).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        b.succeeded(&k);
        assert_eq!(b.failed(k), INITIAL_BACKOFF);
        assert_eq!(delay(u32::MAX), MAX_BACKOFF);
        assert_eq!(delay(31), MAX_BACKOFF);
        assert_eq!(delay(32), MAX_BACKOFF);
    }

    #[test]
    fn invalid_objects_wait_for_a_change() {
        let b = Backoff::default();
        let k = ("ns".to_string(), "a".to_string(), "u".to_string());
        assert_eq!(
            action(&b, k.clone(), &Error::MissingField("metadata.namespace")),
            Action::await_change()
        );
        assert_eq!(
            action(&b, k.clone(), &Error::Panic("boom".into())),
            Action::requeue(INITIAL_BACKOFF)
        );
        assert_eq!(
            action(&b, k, &Error::Panic("boom".into())),
            Action::requeue(2 * INITIAL_BACKOFF)
        );
    }

    #[tokio::test]
    async fn a_panic_becomes_an_error() {
        let r: Result<()> = contain(async { panic!("index out of bounds") }).await;
        assert!(matches!(r, Err(Error::Panic(m)) if m == "index out of bounds"));
        let r: Result<()> = contain(async { panic!("{}", String::from("formatted")) }).await;
        assert!(matches!(r, Err(Error::Panic(m)) if m == "formatted"));
        assert!(contain(async { Ok::<_, Error>(7) }).await.is_ok());
    }
}
