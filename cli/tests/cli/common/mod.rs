//! `kwas dev` as a child process and the real kubectl 1.37 against it, shared by the CLI's end-to-end
//! tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `kwas dev`, killed on drop.
pub struct Dev {
    child: Child,
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Dev {
    /// The process id of `kwas dev`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether `kwas dev` is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The peak resident memory of `kwas dev` so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0)
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs kubectl against `dev` from the repository root (so manifests resolve as `examples/...`).
pub fn kubectl(dev: &Dev, args: &[&str]) -> (bool, String, String) {
    kubectl_stdin(dev, args, None)
}

/// As [`kubectl`], feeding `stdin` (for `apply -f -`).
pub fn kubectl_stdin(dev: &Dev, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let run = kwas_test_tools::run::kubectl(&dev.kubeconfig, args, stdin);
    (run.ok, run.stdout, run.stderr)
}

/// kubectl that must succeed; its stdout.
pub fn ok(dev: &Dev, args: &[&str]) -> String {
    let (success, stdout, stderr) = kubectl(dev, args);
    assert!(success, "kubectl {args:?}: {stderr}");
    stdout
}

/// `kubectl apply -f -` with `manifest`.
pub fn apply(dev: &Dev, manifest: &str) {
    let (success, _, stderr) = kubectl_stdin(dev, &["apply", "-f", "-"], Some(manifest));
    assert!(success, "kubectl apply: {stderr}\n{manifest}");
}

/// The repository root.
pub use kwas_test_tools::run::repo_root as repo;
/// The toolkit's waits: poll a condition, report what was last seen on timeout.
pub use kwas_test_tools::wait::blocking::eventually;

/// `kubectl get <args> -o json`, which must succeed.
pub fn get_json(dev: &Dev, args: &[&str]) -> serde_json::Value {
    let mut all: Vec<&str> = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    kwas_test_tools::run::json(&ok(dev, &all))
}

/// The `items` of a list.
pub fn items(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

/// Starts `kwas dev` on a free port with `args` and waits until the API server answers.
pub fn start(args: &[&str]) -> Dev {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kwas-dev.kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_kwas"))
        .args(["dev", "--port", "0", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dev = Dev {
        child,
        kubeconfig,
        _dir: dir,
    };
    // Ready as a user sees it: the API answers and kwas' JobSet CRD (installed right after the server
    // starts) is served.
    eventually("kwas dev to answer", || {
        dev.kubeconfig.exists()
            && kubectl(&dev, &["get", "--raw", "/readyz"]).0
            && kubectl(&dev, &["get", "--raw", "/apis/jobset.x-k8s.io/v1alpha2"]).0
    });
    dev
}

/// `kubectl get <args> -o jsonpath=<path>`.
pub fn jsonpath(dev: &Dev, args: &[&str], path: &str) -> String {
    let mut all: Vec<&str> = vec!["get"];
    all.extend_from_slice(args);
    let p = format!("jsonpath={path}");
    all.extend_from_slice(&["-o", &p]);
    ok(dev, &all)
}
