//! `kwas demo` end to end (with a short simulated pod run time): every bundled example completes and the
//! placement trees show each Job in one rack and each JobSet in one block, and the DRA examples' devices:
//! each gang's shared interconnect channel in its own rack, each pod's GPUs on its node.
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
        "Job default/train-dra (Complete)",
        "JobSet default/pretrain-dra (Completed)",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }
    // Every topology-constrained group sits in one domain.
    for l in stdout.lines().filter(|l| l.contains("  ->  ")) {
        let domain = l.rsplit("  ->  ").next().unwrap();
        assert!(!domain.contains(','), "one domain: {l}");
    }
    assert_eq!(stdout.matches("kwas.dev/block=").count(), 3, "{stdout}");
    assert_eq!(stdout.matches("kwas.dev/rack=").count(), 8, "{stdout}");
    // The DRA examples: each gang shares one interconnect channel of its own rack, and its pods' GPUs
    // are listed on their nodes (two per pod for train-dra, one for pretrain-dra's workers).
    let shared: Vec<&str> = stdout.lines().filter(|l| l.contains("[shared: ")).collect();
    assert_eq!(shared.len(), 3, "{stdout}");
    for l in &shared {
        let rack = l
            .split("kwas.dev/rack=")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        assert!(
            l.contains(&format!("[shared: {rack}/channel-")),
            "the channel is the gang's rack's: {l}"
        );
    }
    let gpus: usize = stdout
        .lines()
        .filter_map(|l| l.split("; devices ").nth(1))
        .map(|d| d.trim_end_matches(')').split(", ").count())
        .sum();
    assert_eq!(gpus, 4 * 2 + 8, "{stdout}");
}
