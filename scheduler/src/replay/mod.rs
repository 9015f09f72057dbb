//! Offline replay: the scheduler's decisions on a recorded cluster state, without a cluster.
//!
//! A [`SchedulingSnapshot`] holds the scheduling inputs of a cluster: exactly the objects of the kinds
//! the runtime's informers watch ([`Kind::ALL`]), nothing else. [`take`] lists them from a cluster
//! (`kwas snapshot`); [`SchedulingSnapshot::parse`] reads one back, rejecting anything else with the
//! item and field at fault.
//!
//! [`replay`] (`kwas replay`) feeds the objects to the runtime's `Engine` the way the informers do at
//! start-up (a list of every kind), then runs the live loop's turns as the leader: binding results and
//! informer updates applied, `end_of_batch`, eviction retries, gang health (`publish_health`), one
//! `schedule_one`. Decisions are therefore
//! the live scheduler's own: the same engine, queue, cycle, preemption and condition code; only the I/O
//! is simulated:
//!
//! - a binding succeeds and the informer then shows the pod bound to its node;
//! - a preemption victim (or a released pod) is deleted at once;
//! - status writes (conditions, nominations) succeed; events are not reported.
//!
//! Time is an input: a fixed wall clock (the snapshot's `takenAt`, or [`ReplayOptions::clock`]) and a
//! simulated monotonic clock that jumps to the engine's next timer when nothing is ready (a backoff
//! expiring, a gated unit's waiting message falling due). The replay stops when the queue is quiet (no
//! timer left), when the next timer lies beyond [`ReplayOptions::horizon`] (an unschedulable unit
//! is retried only after `podMaxInUnschedulablePodsDuration`, 5 minutes, and would decide the same), or
//! after [`ReplayOptions::max_cycles`].
//!
//! Pods already bound stay where they are. So that every decision is reported, the scheduler's own
//! status is set aside before the replay: `PodScheduled` on unbound pods and a False
//! `*InitiallyScheduled` on groups (a True one stays: it never regresses). No decision reads them; the
//! report shows each one next to the decision it made ([`PodConditionChange::live`]), so a replay of a
//! snapshot taken after the live scheduler decided says whether it decides the same.
//!
//! Queue order among equal priorities, and the order of a gang's pods, follow arrival. The replay feeds
//! CompositePodGroups, PodGroups and pods by `creationTimestamp`, the order a running scheduler saw them
//! in when they were created one after another; objects created within the same second (the timestamp's
//! resolution) go in file order (namespace and name in the files `kwas snapshot` writes), as a scheduler
//! that restarts lists them. For such a gang the replay may try its members in another order than the
//! live scheduler did: the decision and the group's condition are the same, but which member's message
//! carries the `minCount (...) cannot be satisfied` prefix can differ.

mod file;
mod run;
mod take;
mod text;

pub use crate::runtime::informers::{Kind, Object};
pub use file::{API_VERSION, KIND, MAX_FILE_BYTES, SchedulingSnapshot, SnapshotError, SnapshotMetadata};
pub use run::{
    Binding, GroupConditionChange, Nomination, PendingPod, PodConditionChange, Preemption, Recorded, ReplayOptions,
    ReplayReport, SnapshotSummary, Stop, Victim, replay,
};
pub use take::{TakeError, take};
