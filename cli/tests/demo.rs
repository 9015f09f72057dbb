//! `kwas demo` end to end (with a short simulated pod run time): every bundled example completes and the
//! placement trees show each Job in one rack and each JobSet in one block.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn the_demo_runs_every_example_and_prints_placements() {
    let out = Command::new(env!("CARGO_BIN_EXE_kwas"))
        .args(["demo", "--pod-duration", "1s"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "train Complete",
        "process Complete",
        "pretrain-a Completed",
        "pretrain-b Completed",
        "Job default/train (Complete)",
        "JobSet default/pretrain-a (Completed)",
        "JobSet default/pretrain-b (Completed)",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }
    // Every topology-constrained group sits in one domain.
    for l in stdout.lines().filter(|l| l.contains("  ->  ")) {
        let domain = l.rsplit("  ->  ").next().unwrap();
        assert!(!domain.contains(','), "one domain: {l}");
    }
    assert_eq!(stdout.matches("kwas.dev/block=").count(), 2, "{stdout}");
    assert_eq!(stdout.matches("kwas.dev/rack=").count(), 5, "{stdout}");
}
