//! `kwas demo` end to end (with a short simulated pod run time): every bundled example completes, shown
//! as `kubectl kwas tree` snapshots while it runs (plain text: the output is piped), and the placement
//! trees show each Job in one rack and each JobSet in one block, and the DRA examples' devices: each
//! gang's shared interconnect channel in its own rack, each pod's GPUs on its node. Then the preemption
//! scene: the priority-1000 gang evicts the whole `all` gang, whose pods run again whole once it is done,
//! and `kubectl kwas who-preempted` names the preemptor and both priorities.
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
    // The live trees, as plain snapshots.
    assert!(stdout.contains("\nJob default/train  "), "{stdout}");
    assert!(stdout.contains("\nJobSet default/pretrain-a  "), "{stdout}");
    assert!(!stdout.contains('\x1b'), "no colours when piped");
    let (examples, scene) = stdout.split_once("\nPreemption: ").expect("the preemption scene");
    let placements = examples.split_once("\nPlacements (").expect("the placements").1;
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
        assert!(examples.contains(line), "{line:?} in\n{stdout}");
    }
    // Every topology-constrained group sits in one domain.
    for l in placements.lines().filter(|l| l.contains("  ->  ")) {
        let domain = l.rsplit("  ->  ").next().unwrap();
        assert!(!domain.contains(','), "one domain: {l}");
    }
    assert_eq!(placements.matches("kwas.dev/block=").count(), 3, "{stdout}");
    assert_eq!(placements.matches("kwas.dev/rack=").count(), 8, "{stdout}");
    // The DRA examples: each gang shares one interconnect channel of its own rack, and its pods' GPUs
    // are listed on their nodes (two per pod for train-dra, one for pretrain-dra's workers).
    let shared: Vec<&str> = placements.lines().filter(|l| l.contains("[shared: ")).collect();
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
    let gpus: usize = placements
        .lines()
        .filter_map(|l| l.split("; devices ").nth(1))
        .map(|d| d.trim_end_matches(')').split(", ").count())
        .sum();
    assert_eq!(gpus, 4 * 2 + 8, "{stdout}");

    // The preemption scene: the victim runs on every node, the preemptor comes, the victim's group is
    // marked and all 16 of its pods go; the preemptor completes and the victim's pods run again, whole.
    for line in [
        "  applied examples/preemption/background.yaml",
        "background 0/16 bound",
        "urgent Complete",
        "DisruptionTarget=True PreemptionByScheduler",
        "$ kubectl kwas who-preempted job/background\njob/background: 1 group and 16 pods preempted by podgroup default/urgent-",
        "(priority 1000) over priority 10:",
    ] {
        assert!(scene.contains(line), "{line:?} in\n{scene}");
    }
    let running = scene.find("] background 16/16 bound, 0 done").unwrap();
    let urgent = scene.find("  applied examples/preemption/urgent.yaml").unwrap();
    assert!(running < urgent, "the preemptor comes once the victim runs:\n{scene}");
    let last = scene.lines().rfind(|l| l.starts_with('[')).unwrap();
    assert!(
        last.ends_with("] background 16/16 bound, 0 done · urgent Complete"),
        "{last}"
    );
}
