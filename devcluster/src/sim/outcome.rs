//! What a simulated container run ends with: the grammar of [`SIM_EXIT_CODE`] and [`SIM_EXIT_REASON`],
//! and which exit code and reason a container reports for its completion index and attempt.
//!
//! Both annotations are a comma-separated list of entries; each entry may select a completion index
//! (`<index>:`, the pod's `batch.kubernetes.io/job-completion-index`) and/or a container (`<name>=`), then
//! gives a `/`-separated sequence of values for successive attempts (the last one repeats):
//!
//! ```text
//! value     = entry *( "," entry )
//! entry     = [ index ":" ] [ container "=" ] values
//! values    = value *( "/" value )
//! index     = 1*DIGIT                 ; 0..=2147483647
//! container = DNS-1123 label          ; a container's name
//! ```
//!
//! A value of [`SIM_EXIT_CODE`] is an exit code, decimal digits in `0..=255` (anything else, negative or
//! larger, is invalid, not clamped). A value of [`SIM_EXIT_REASON`] is a reason: an ASCII letter then
//! letters and digits, at most 128 characters (`OOMKilled`, `Error`, `ContainerCannotRun`). Spaces
//! around tokens are ignored; the whole value is at most [`MAX_LEN`] characters; an entry may not repeat
//! another's selector.
//!
//! A container of the pod of completion index `i` uses, of the entries, the most specific that matches:
//! `i:name=` before `i:` before `name=` before a bare entry. A pod with no completion index only matches
//! entries without one. Its attempt `a` (see [`attempt_base`]) picks the `a`-th value, or the last one.
//!
//! - Exit code: the matching entry's; without one, 137 when the reason is `OOMKilled` (what a real
//!   kubelet reports for an OOM kill), else the fallback: 1 with [`SIM_EXIT_PHASE`] `Failed`, 0
//!   otherwise.
//! - Reason: the matching entry's; without one, `Completed` for exit code 0 and `Error` for any other, as
//!   a real kubelet reports.
//!
//! An invalid annotation is ignored as a whole (the defaults apply) and reported as a `Warning` event
//! ([`INVALID_REASON`]) on the pod; nothing here panics on any input.

use serde_json::Value;

use kwas_api_types::names::annotations::{
    JOB_COMPLETION_INDEX, JOB_INDEX_FAILURE_COUNT, JOB_INDEX_IGNORED_FAILURE_COUNT, SIM_EXIT_CODE, SIM_EXIT_PHASE,
    SIM_EXIT_REASON,
};

/// The longest annotation value read; longer ones are invalid.
pub(crate) const MAX_LEN: usize = 4096;
/// The longest reason.
const MAX_REASON_LEN: usize = 128;
/// The reason of the `Warning` event reporting an invalid simulation annotation.
pub(crate) const INVALID_REASON: &str = "InvalidSimAnnotation";
/// A real kubelet's reason for a container killed by the kernel's OOM killer.
pub(crate) const OOM_KILLED: &str = "OOMKilled";
/// The exit code an OOM kill reports (128 + SIGKILL).
const OOM_EXIT_CODE: u8 = 137;

/// A parsed [`SIM_EXIT_CODE`] or [`SIM_EXIT_REASON`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rules<T> {
    entries: Vec<Entry<T>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry<T> {
    index: Option<u32>,
    container: Option<String>,
    /// Never empty.
    values: Vec<T>,
}

impl<T> Rules<T> {
    /// The value for `container` of the pod of completion index `index` at `attempt` (0 for the first
    /// run), from the most specific matching entry.
    pub(crate) fn lookup(&self, index: Option<u32>, container: &str, attempt: u32) -> Option<&T> {
        let find = |i: Option<u32>, c: Option<&str>| {
            self.entries
                .iter()
                .find(|e| e.index == i && e.container.as_deref() == c)
        };
        let entry = index
            .and_then(|i| find(Some(i), Some(container)).or_else(|| find(Some(i), None)))
            .or_else(|| find(None, Some(container)))
            .or_else(|| find(None, None))?;
        let at = usize::try_from(attempt).unwrap_or(usize::MAX);
        entry.values.get(at).or_else(|| entry.values.last())
    }
}

/// Parses [`SIM_EXIT_CODE`]'s value.
pub(crate) fn parse_exit_codes(text: &str) -> Result<Rules<u8>, String> {
    parse(text, exit_code)
}

/// Parses [`SIM_EXIT_REASON`]'s value.
pub(crate) fn parse_reasons(text: &str) -> Result<Rules<String>, String> {
    parse(text, reason)
}

fn parse<T>(text: &str, value: impl Fn(&str) -> Result<T, String>) -> Result<Rules<T>, String> {
    if text.len() > MAX_LEN {
        return Err(format!("longer than {MAX_LEN} characters"));
    }
    let mut entries: Vec<Entry<T>> = Vec::new();
    for raw in text.split(',') {
        let entry = raw.trim();
        let fail = |why: String| format!("entry {entry:?}: {why}");
        if entry.is_empty() {
            return Err("an entry is empty".into());
        }
        let (index, rest) = match entry.split_once(':') {
            Some((i, rest)) => (Some(completion_index(i.trim()).map_err(fail)?), rest.trim()),
            None => (None, entry),
        };
        let (container, rest) = match rest.split_once('=') {
            Some((c, rest)) => (Some(container_name(c.trim()).map_err(fail)?), rest.trim()),
            None => (None, rest),
        };
        let values = rest
            .split('/')
            .map(|v| value(v.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        if entries.iter().any(|e| e.index == index && e.container == container) {
            return Err(fail("repeats an earlier entry's selector".into()));
        }
        entries.push(Entry {
            index,
            container,
            values,
        });
    }
    Ok(Rules { entries })
}

/// A non-negative decimal integer within `max`, digits only (no sign, no spaces).
fn bounded(text: &str, max: u64) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Too many digits for u64 is out of range too.
    text.parse::<u64>().ok().filter(|n| *n <= max)
}

fn exit_code(text: &str) -> Result<u8, String> {
    bounded(text, u64::from(u8::MAX))
        .and_then(|n| u8::try_from(n).ok())
        .ok_or_else(|| format!("{text:?} is not an exit code (0..=255)"))
}

fn completion_index(text: &str) -> Result<u32, String> {
    bounded(text, i32::MAX.unsigned_abs().into())
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("{text:?} is not a completion index (0..=2147483647)"))
}

fn container_name(text: &str) -> Result<String, String> {
    let b = text.as_bytes();
    let ok = (1..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric);
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!("{text:?} is not a container name (a DNS-1123 label)"))
    }
}

fn reason(text: &str) -> Result<String, String> {
    let b = text.as_bytes();
    let ok = (1..=MAX_REASON_LEN).contains(&b.len())
        && b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.iter().all(u8::is_ascii_alphanumeric);
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!(
            "{text:?} is not a reason (a letter, then letters and digits, at most {MAX_REASON_LEN})"
        ))
    }
}

/// How a pod's containers end their runs, from its annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    codes: Option<Rules<u8>>,
    reasons: Option<Rules<String>>,
    /// The exit code without a matching [`SIM_EXIT_CODE`] entry (1 for [`SIM_EXIT_PHASE`] `Failed`).
    fallback: u8,
}

impl Outcome {
    /// The outcome `annotation` (a pod's annotations by key) describes, and a message for each invalid
    /// annotation (ignored: its default applies).
    pub(crate) fn from_annotations<'a>(annotation: impl Fn(&str) -> Option<&'a str>) -> (Outcome, Vec<String>) {
        let mut problems = Vec::new();
        let fallback = match annotation(SIM_EXIT_PHASE) {
            None | Some("Succeeded") => 0,
            Some("Failed") => 1,
            Some(other) => {
                problems.push(format!(
                    "invalid {SIM_EXIT_PHASE} {other:?}: neither Succeeded nor Failed; using Succeeded"
                ));
                0
            }
        };
        let codes = annotation(SIM_EXIT_CODE).and_then(|v| match parse_exit_codes(v) {
            Ok(r) => Some(r),
            Err(why) => {
                problems.push(format!(
                    "invalid {SIM_EXIT_CODE} {:?}: {why}; using exit code {fallback} for every container",
                    shorten(v)
                ));
                None
            }
        });
        let reasons = annotation(SIM_EXIT_REASON).and_then(|v| match parse_reasons(v) {
            Ok(r) => Some(r),
            Err(why) => {
                problems.push(format!(
                    "invalid {SIM_EXIT_REASON} {:?}: {why}; using Completed for exit code 0 and Error otherwise",
                    shorten(v)
                ));
                None
            }
        });
        (
            Outcome {
                codes,
                reasons,
                fallback,
            },
            problems,
        )
    }

    /// The exit code and reason of `container` of the pod of completion index `index` at `attempt`.
    pub(crate) fn of(&self, index: Option<u32>, container: &str, attempt: u32) -> (i32, String) {
        let reason = self
            .reasons
            .as_ref()
            .and_then(|r| r.lookup(index, container, attempt))
            .cloned();
        let code = self
            .codes
            .as_ref()
            .and_then(|r| r.lookup(index, container, attempt))
            .copied()
            .unwrap_or(if reason.as_deref() == Some(OOM_KILLED) {
                OOM_EXIT_CODE
            } else {
                self.fallback
            });
        let reason = reason.unwrap_or_else(|| if code == 0 { "Completed" } else { "Error" }.to_string());
        (i32::from(code), reason)
    }
}

/// At most 200 characters of an annotation value, for messages.
fn shorten(v: &str) -> String {
    match v.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &v[..at]),
        None => v.to_string(),
    }
}

/// The pod's completion index (annotation, else label `batch.kubernetes.io/job-completion-index`).
pub(crate) fn pod_completion_index(pod: &Value) -> Option<u32> {
    let label = pod
        .pointer("/metadata/labels")
        .and_then(|l| l.get(JOB_COMPLETION_INDEX))
        .and_then(Value::as_str);
    crate::meta::annotation(pod, JOB_COMPLETION_INDEX)
        .or(label)
        .and_then(|v| completion_index(v).ok())
}

/// The attempt of a pod's first run: how many pods of its completion index failed before it, as the Job
/// controller counts them on pods of Jobs with `backoffLimitPerIndex` (the annotations
/// `batch.kubernetes.io/job-index-failure-count` plus `batch.kubernetes.io/job-index-ignored-failure-count`;
/// missing or invalid ones count 0). A container's attempt is this plus its `restartCount`.
pub(crate) fn attempt_base(pod: &Value) -> u32 {
    [JOB_INDEX_FAILURE_COUNT, JOB_INDEX_IGNORED_FAILURE_COUNT]
        .iter()
        .filter_map(|k| crate::meta::annotation(pod, k))
        .filter_map(|v| bounded(v.trim(), i32::MAX.unsigned_abs().into()))
        .filter_map(|n| u32::try_from(n).ok())
        .fold(0u32, u32::saturating_add)
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
