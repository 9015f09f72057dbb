//! Container logs of the simulated kubelet: a short, truthful record per container run (started, how
//! long it was told to run, exited with what), the current run and the previous one, as
//! `kubectl logs [--previous]` reads them through `pods/log`. Bounded: at most [`MAX_LINES`] lines per
//! run; logs go with their pod.

use std::collections::HashMap;

use jiff::Timestamp;

/// The most lines kept per container run.
pub(crate) const MAX_LINES: usize = 1000;

/// One line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    /// When it was written.
    pub at: Timestamp,
    /// The text, without newline.
    pub text: String,
}

/// One container run's lines, and whether the run has ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Run {
    /// The lines, oldest first.
    pub lines: Vec<Line>,
    /// The run ended (its container exited).
    pub ended: bool,
}

/// The logs of every pod's containers, by pod uid and container name: (current run, previous run).
#[derive(Debug, Default)]
pub(crate) struct PodLogs {
    pods: HashMap<String, HashMap<String, (Run, Option<Run>)>>,
}

impl PodLogs {
    /// Starts a new run of a container (the current one, if any, becomes the previous).
    pub(crate) fn start(&mut self, uid: &str, container: &str) {
        let runs = self.pods.entry(uid.to_string()).or_default();
        match runs.get_mut(container) {
            Some((current, previous)) => *previous = Some(std::mem::take(current)),
            None => {
                runs.insert(container.to_string(), (Run::default(), None));
            }
        }
    }

    /// Appends a line to a container's current run.
    pub(crate) fn write(&mut self, uid: &str, container: &str, text: impl Into<String>) {
        let runs = self.pods.entry(uid.to_string()).or_default();
        let (current, _) = runs.entry(container.to_string()).or_default();
        current.lines.push(Line {
            at: Timestamp::now(),
            text: text.into(),
        });
        if current.lines.len() > MAX_LINES {
            let drop = current.lines.len() - MAX_LINES;
            current.lines.drain(..drop);
        }
    }

    /// Marks a container's current run as ended.
    pub(crate) fn end(&mut self, uid: &str, container: &str) {
        if let Some((current, _)) = self.pods.get_mut(uid).and_then(|r| r.get_mut(container)) {
            current.ended = true;
        }
    }

    /// A container's current (or previous) run.
    pub(crate) fn run(&self, uid: &str, container: &str, previous: bool) -> Option<&Run> {
        let (current, prev) = self.pods.get(uid)?.get(container)?;
        if previous { prev.as_ref() } else { Some(current) }
    }

    /// Forgets a pod's logs.
    pub(crate) fn remove(&mut self, uid: &str) {
        self.pods.remove(uid);
    }
}

/// Which lines a `pods/log` request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LogOptions {
    /// `tailLines`: only the last n.
    pub tail_lines: Option<usize>,
    /// `sinceSeconds`: only lines at most this old.
    pub since_seconds: Option<i64>,
    /// `timestamps`: prefix each line with its RFC 3339 time.
    pub timestamps: bool,
    /// `limitBytes`: at most this many bytes.
    pub limit_bytes: Option<usize>,
}

/// Renders a run's lines per the options, from line `from` on.
pub(crate) fn render(run: &Run, opts: &LogOptions, from: usize, now: Timestamp) -> String {
    let lines = run.lines.get(from..).unwrap_or(&[]);
    let start = opts.tail_lines.map_or(0, |n| lines.len().saturating_sub(n));
    let mut out = String::new();
    for l in &lines[start..] {
        if let Some(s) = opts.since_seconds
            && now.as_second().saturating_sub(l.at.as_second()) > s
        {
            continue;
        }
        if opts.timestamps {
            out.push_str(&l.at.to_string());
            out.push(' ');
        }
        out.push_str(&l.text);
        out.push('\n');
    }
    if let Some(limit) = opts.limit_bytes
        && out.len() > limit
    {
        let mut cut = limit;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_rotate_and_stay_bounded() {
        let mut logs = PodLogs::default();
        logs.start("u", "c");
        for i in 0..(MAX_LINES + 5) {
            logs.write("u", "c", format!("line {i}"));
        }
        logs.end("u", "c");
        assert_eq!(logs.run("u", "c", false).unwrap().lines.len(), MAX_LINES);
        logs.start("u", "c");
        logs.write("u", "c", "again");
        assert!(logs.run("u", "c", true).unwrap().ended);
        assert_eq!(logs.run("u", "c", false).unwrap().lines.len(), 1);
        let opts = LogOptions {
            tail_lines: Some(2),
            ..Default::default()
        };
        let prev = logs.run("u", "c", true).unwrap();
        let text = render(prev, &opts, 0, Timestamp::now());
        assert_eq!(text, format!("line {}\nline {}\n", MAX_LINES + 3, MAX_LINES + 4));
        let cut = render(
            prev,
            &LogOptions {
                limit_bytes: Some(3),
                ..Default::default()
            },
            0,
            Timestamp::now(),
        );
        assert_eq!(cut, "lin");
        logs.remove("u");
        assert!(logs.run("u", "c", false).is_none());
    }
}
