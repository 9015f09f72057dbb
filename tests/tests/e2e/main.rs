//! The end-to-end suite: Jobs and JobSets created through the API like a user would, the real Job and JobSet
//! controllers, the scheduler and devcluster's simulated kubelet, all in one process per test. Every test
//! watches the whole run with a [`GangMonitor`](kwas_tests::GangMonitor): no gang may sit partially bound.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chaos;
mod coexistence;
mod jobs;
mod jobset_api;
mod jobsets;
mod lifecycle;
mod monitor;
mod perf_smoke;
mod preemption;
mod recovery;
mod restarts;
mod shapes;

use kwas_devcluster::{Capacity, Topology};

/// `blocks` x `racks` x `nodes` nodes of `cpu` cores and 64Gi each.
pub fn grid(blocks: u32, racks: u32, nodes: u32, cpu: &str) -> Topology {
    Topology::grid(
        blocks,
        racks,
        nodes,
        Capacity {
            cpu: cpu.into(),
            memory: "64Gi".into(),
            ..Default::default()
        },
    )
}

/// Scheduling attempts of PodGroups and CompositePodGroups with `result` the stack's scheduler has finished
/// so far (upstream's `scheduler_podgroup_schedule_attempts_total`). The scheduler makes one attempt at a
/// time, so once this has risen twice, an attempt that started after the first reading is over.
pub fn group_attempts(e2e: &kwas_tests::E2e, result: &str) -> u64 {
    let text = e2e
        .stack()
        .scheduler()
        .expect("the stack runs its scheduler")
        .metrics()
        .encode();
    let label = format!("result=\"{result}\"");
    text.lines()
        .filter(|l| l.starts_with("scheduler_podgroup_schedule_attempts_total{") && l.contains(&label))
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("a counter: {l}"))
        })
        .sum()
}
