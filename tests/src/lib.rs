//! # kwas-tests
//!
//! End-to-end suites that run devcluster, the Job and JobSet controllers and the scheduler in one process
//! ([`kwas_stack::Stack`]), the way a user runs them: Jobs and JobSets are created through the API with
//! kube-rs, and every assertion reads the API. The path under test is the whole one: Job (or JobSet) ->
//! controllers -> Workload, CompositePodGroup, PodGroups and pods -> scheduler -> bindings -> the simulated
//! kubelet -> pod phases -> Job and JobSet status.
//!
//! ```sh
//! cargo test -p kwas-tests                                        # the suite (about 20 s)
//! cargo bench -p kwas-tests --bench scheduler_perf_jobs           # the benchmark (release, a few minutes)
//! ```
//!
//! ## The suite (`tests/e2e/`)
//!
//! | file | what a user would see |
//! | --- | --- |
//! | `jobs.rs` | a gang Job runs to completion in one rack; a gang that does not fit binds nothing (pods and group say why) until the user deletes what is in the way, then runs; a Basic Job runs pod by pod; gang and Basic Jobs share a cluster |
//! | `jobsets.rs` | a JobSet gang of gangs with a rack constraint per Job and a block constraint at the root lands each Job in one rack, all in the one block with room, under centralized (Option A) and delegated (Option B) PodGroup management |
//! | `preemption.rs` | a higher-priority gang evicts an `all` gang whole (which re-runs whole once room frees) and only one pod of a `single` gang; with both kinds running, one `single` pod goes rather than the `all` gang |
//! | `lifecycle.rs` | a `minCount` edit on a Job is re-synced to its Workload and PodGroup and lets the gang run (an edit above `parallelism` is refused with its field path); deleting a JobSet removes its Jobs, pods, PodGroups, CompositePodGroup and Workload, frees its nodes and touches no other JobSet |
//! | `restarts.rs` | the scheduler and the controllers killed mid-flight (a gang half bound, Jobs half created) and later restarted gracefully: every Job completes with one pod per completion and one Workload / PodGroup each, and no gang is left partially bound |
//! | `coexistence.rs` | kwas next to another scheduler ([`ForeignScheduler`] binding `default-scheduler`'s pods, a DaemonSet's among them) and pods bound by `spec.nodeName`: gangs go around what others run, cordoned nodes and nodes whose kubelet went silent; a terminating pod holds its node until gone; the kubelet (`OutOfcpu`) referees; a gang Job runs where CompositePodGroups are not served |
//! | `shapes.rs` | the stack on each shape of a v1.37 cluster (devcluster's profiles): every scheduling version (the components use v1beta1, kubectl reads either), a stock cluster with the beta only (JobSets run flat with a `FlatScheduling` condition, a Job's `spec.scheduling` is dropped), the alpha without CompositePodGroups |
//! | `recovery.rs` | a node lost under a running gang: with `kwas.dev/gang-recovery-seconds` the gang runs again whole in another rack and the Job counts none of it; without, it is reported below its minimum and left |
//! | `chaos.rs` | seeded random kills of elected schedulers and controllers, API faults, silent kubelets and a second scheduler's pods: no partial gang, no overcommitted node, no duplicate, every Job finishes |
//! | `monitor.rs` | the gang monitor reports a gang bound one pod at a time through the API |
//! | `perf_smoke.rs` | every benchmark scenario at a tenth of its size |
//!
//! Every test watches its whole run with a [`GangMonitor`] and ends with
//! [`GangMonitor::check_settled`]: "no partial gang binding" is an invariant over time, not only a final
//! state. What counts as partial, and why a short binding burst is allowed, is documented in [`ledger`].
//!
//! ## Choices
//!
//! - **Timing.** [`test_config`] runs the product's stack with a fast kubelet and short retry backoffs;
//!   every wait polls the API with a generous deadline ([`PATIENCE`]) so a busy machine slows the suite
//!   down instead of failing it.
//! - **Burst allowance.** A gang may be seen partially bound for at most [`monitor::BURST`] (5 s) plus any
//!   outage the test declares (a scheduler stopped on purpose); a burst takes milliseconds, a stuck gang
//!   sits there until the test ends.
//! - **Crashes.** The stack stops its components gracefully (the scheduler finishes the bindings it
//!   started); [`E2e::detached_scheduler`] and [`E2e::detached_controllers`] run them on runtimes of their
//!   own so a test can kill them mid-work like a killed process.
//! - **Priorities.** The `all` preemption test gives its gangs their priority the usual way, a Job with
//!   `spec.scheduling` and a pod `priorityClassName` (the Job controller's PodGroup carries the class);
//!   the others use PodGroups the user creates and Jobs whose pods join them
//!   (`schedulingGroup.podGroupName`), so both ways a user forms a gang are covered.
//! - **Victims.** Preempted pods are made to ignore SIGTERM ([`JobBuilder::shutdown_after`]) so they end
//!   `Failed` and their Job replaces them, as a training process killed at the end of its grace period
//!   would; a pod that exits 0 on SIGTERM ends `Succeeded` and counts as a completion.
//!
//! ## The benchmark
//!
//! [`perf`] mirrors scheduler_perf's gang workloads (`GangScheduling`, `TopologyAwareScheduling`,
//! `CPGGangScheduling`, and `SchedulingBasic` for reference) at 1000 nodes by default, submitted as Jobs
//! and JobSets, and reports pods/s from the first pod's creation to the last bind and from the first Job's
//! submission to the last bind, as a markdown table.
#![warn(missing_docs)]

pub mod error;
pub mod foreign;
pub mod harness;
pub mod inspect;
pub mod ledger;
pub mod monitor;
pub mod objects;
pub mod perf;

pub use error::{Error, Result};
pub use foreign::ForeignScheduler;
pub use harness::{Detached, E2e, NS, NotYet, PATIENCE, check, eventually, eventually_within, not_yet, test_config};
pub use monitor::GangMonitor;
pub use objects::{Intent, JobBuilder, JobSetBuilder, gang_pod_group, priority_class};
