//! Waiting for a condition, the one way every kwas test waits: poll until the condition holds, and when it
//! never does, fail with what was last seen.
//!
//! A look returns one of:
//! - `bool`: holds or not;
//! - `Option<T>`: `Some(value)` once it holds;
//! - `Result<T, E>` with `E: Display`: `Err(e)` is "not yet", and `e` is reported as the last thing seen
//!   when the wait times out (the most useful form: a timeout then says *why* the condition did not hold).
//!
//! Tests never sleep for a fixed time: to assert that something did **not** happen, they first wait for a
//! positive signal that the component has processed the input (a reconcile count, an event, a later write
//! of the same pass) and then look once.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::time::Duration;
//! let mut n = 0;
//! let v = kwas_test_tools::wait::eventually_within(Duration::from_secs(5), "n to reach 3", || {
//!     n += 1;
//!     let seen = n;
//!     async move { if seen >= 3 { Ok(seen) } else { Err(format!("n = {seen}")) } }
//! })
//! .await;
//! assert_eq!(v, 3);
//! # }
//! ```

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// How often a condition is looked at.
pub const POLL: Duration = Duration::from_millis(20);

/// How long [`eventually`] waits: generous, because a loaded 2-core CI machine is slow, and a wait that
/// succeeds returns as soon as the condition holds.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The result of one look at a condition.
pub trait Look {
    /// What the wait returns once the condition holds.
    type Output;
    /// `Ok` when the condition holds, else what was seen (if the look says).
    fn holds(self) -> Result<Self::Output, Option<String>>;
}

impl Look for bool {
    type Output = ();
    fn holds(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Look for Option<T> {
    type Output = T;
    fn holds(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Display> Look for Result<T, E> {
    type Output = T;
    fn holds(self) -> Result<T, Option<String>> {
        self.map_err(|e| Some(e.to_string()))
    }
}

/// A condition that did not hold in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeout {
    /// What was waited for.
    pub what: String,
    /// How long.
    pub after: Duration,
    /// What the last look saw, when the look says.
    pub last: Option<String>,
}

impl Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "timed out after {:?} waiting for {}", self.after, self.what)?;
        if let Some(last) = &self.last {
            write!(f, "; last seen: {last}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Timeout {}

/// Polls `look` every [`POLL`] until it holds, for at most `timeout`.
pub async fn try_eventually_within<L, F, Fut>(
    timeout: Duration,
    what: impl Into<String>,
    mut look: F,
) -> Result<L::Output, Timeout>
where
    L: Look,
    F: FnMut() -> Fut,
    Fut: Future<Output = L>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match look().await.holds() {
            Ok(v) => return Ok(v),
            Err(seen) => seen,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(Timeout {
                what: what.into(),
                after: timeout,
                last,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`try_eventually_within`], panicking with the [`Timeout`] (what was last seen included).
pub async fn eventually_within<L, F, Fut>(timeout: Duration, what: impl Into<String>, look: F) -> L::Output
where
    L: Look,
    F: FnMut() -> Fut,
    Fut: Future<Output = L>,
{
    match try_eventually_within(timeout, what, look).await {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// [`eventually_within`] with [`PATIENCE`].
pub async fn eventually<L, F, Fut>(what: impl Into<String>, look: F) -> L::Output
where
    L: Look,
    F: FnMut() -> Fut,
    Fut: Future<Output = L>,
{
    eventually_within(PATIENCE, what, look).await
}

/// The same waits for synchronous tests (they block the calling thread between looks). A look there
/// usually runs a client process (kubectl), so it is repeated every [`blocking::POLL`], not every 20 ms.
pub mod blocking {
    use super::*;

    /// How often a blocking wait looks again.
    pub const POLL: Duration = Duration::from_millis(100);

    /// Polls `look` every [`POLL`] until it holds, for at most `timeout`.
    pub fn try_eventually_within<L: Look>(
        timeout: Duration,
        what: impl Into<String>,
        mut look: impl FnMut() -> L,
    ) -> Result<L::Output, Timeout> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match look().holds() {
                Ok(v) => return Ok(v),
                Err(seen) => seen,
            };
            if Instant::now() >= deadline {
                return Err(Timeout {
                    what: what.into(),
                    after: timeout,
                    last,
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// [`try_eventually_within`], panicking with the [`Timeout`].
    pub fn eventually_within<L: Look>(
        timeout: Duration,
        what: impl Into<String>,
        look: impl FnMut() -> L,
    ) -> L::Output {
        match try_eventually_within(timeout, what, look) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`eventually_within`] with [`PATIENCE`].
    pub fn eventually<L: Look>(what: impl Into<String>, look: impl FnMut() -> L) -> L::Output {
        eventually_within(PATIENCE, what, look)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_that_never_holds_reports_what_it_last_saw() {
        let mut n = 0;
        let e = blocking::try_eventually_within(Duration::from_millis(60), "n to be negative", || {
            n += 1;
            Err::<(), _>(format!("n = {n}"))
        })
        .unwrap_err();
        assert_eq!(e.what, "n to be negative");
        assert_eq!(e.last, Some(format!("n = {n}")));
        assert!(e.to_string().contains("last seen: n = "), "{e}");
    }

    #[test]
    fn a_wait_returns_the_value_as_soon_as_the_condition_holds() {
        let start = Instant::now();
        let mut looks = 0;
        let v = blocking::eventually("the third look", || {
            looks += 1;
            (looks == 3).then_some(looks)
        });
        assert_eq!(v, 3);
        assert!(start.elapsed() < PATIENCE);
    }

    #[tokio::test]
    async fn an_async_wait_takes_bools_options_and_results() {
        eventually("true", || async { true }).await;
        assert_eq!(eventually("some", || async { Some(7) }).await, 7);
        assert_eq!(eventually("ok", || async { Ok::<_, String>(8) }).await, 8);
        let e = try_eventually_within(Duration::from_millis(30), "false", || async { false })
            .await
            .unwrap_err();
        assert_eq!(e.last, None);
    }
}
