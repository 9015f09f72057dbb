//! Running the real clients against a cluster: kubectl and the Python client, each with the cluster's
//! kubeconfig, and the repository's paths. Every test that drives a client goes through here, so a client
//! sees the same environment in every crate's tests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The workspace root (manifests in tests resolve against it, as `examples/...`).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| here.to_path_buf())
}

/// What one client run printed.
#[derive(Debug, Clone)]
pub struct Run {
    /// The exit status was success.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Run {
    /// Standard output as JSON (panics with the output when it is not).
    pub fn json(&self) -> serde_json::Value {
        json(&self.stdout)
    }

    /// Standard output, after asserting the run succeeded (panics with both streams otherwise).
    pub fn expect_ok(self, what: &str) -> String {
        assert!(
            self.ok,
            "{what} failed:\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self.stdout
    }
}

/// `text` as JSON; panics with the text when it is not.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// A kubectl 1.37 command for the cluster of `kubeconfig` (`KUBECONFIG` set, `HOME` next to it so that
/// kubectl's cache stays per test), run from the repository root. Panics when kubectl cannot be provided
/// (a missing client fails the test, it never skips it).
pub fn kubectl_command(kubeconfig: &Path) -> Command {
    let kubectl = crate::kubectl().unwrap_or_else(|e| panic!("kubectl 1.37 is not available: {e}"));
    let mut cmd = Command::new(kubectl);
    cmd.env("KUBECONFIG", kubeconfig)
        .env("HOME", kubeconfig.parent().unwrap_or(Path::new("/tmp")))
        .current_dir(repo_root());
    cmd
}

/// A python3 command that has the Kubernetes Python client 37. Panics when it cannot be provided.
pub fn python_command() -> Command {
    let python = crate::python().unwrap_or_else(|e| panic!("the Kubernetes Python client 37 is not available: {e}"));
    let mut cmd = Command::new(python);
    cmd.current_dir(repo_root());
    cmd
}

/// Runs `cmd` with `stdin` as its input (none: an empty, closed input) and collects what it printed.
pub fn run(mut cmd: Command, stdin: Option<&str>) -> Run {
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        input
            .write_all(text.as_bytes())
            .unwrap_or_else(|e| panic!("cannot write the input of {:?}: {e}", cmd.get_program()));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{:?} did not finish: {e}", cmd.get_program()));
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `kubectl args...` against the cluster of `kubeconfig`, with `stdin` as input.
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = kubectl_command(kubeconfig);
    cmd.args(args);
    run(cmd, stdin)
}
