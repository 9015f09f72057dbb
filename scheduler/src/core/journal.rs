//! The assume/revert journal (KEP-6012, "In-memory simulation state revert").
//!
//! Every tentative change a cycle makes to the snapshot (a pod assumed on a node, a preemption victim
//! taken off its node, a victim put back, a ResourceClaim allocated) is applied through the journal and recorded. A caller takes a
//! [`Journal::mark`] before trying something and [`Journal::revert_to`] it when the attempt fails; the
//! recorded changes are undone in exact reverse order, the way Go's deferred `revertFn`s run. Nested
//! attempts (a group inside a topology candidate inside a parent group) simply nest marks, so reverts
//! accumulate up the recursion: a child that succeeded keeps its assumptions visible to its siblings, and
//! all of them go when the enclosing attempt is reverted. At the end of a cycle the whole journal is
//! reverted and the snapshot is exactly as before.

use super::model::PodKey;
use super::snapshot::{Sim, Snapshot, SnapshotError};

/// One recorded change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A pending pod placed on a node.
    Assume { pod: u32, node: u32 },
    /// A placed pod taken off its node (preemption simulation).
    Remove { pod: u32, node: u32 },
    /// A removed pod put back on its node (reprieve).
    Restore { pod: u32, node: u32 },
    /// A ResourceClaim allocated (its devices held) for a pod placed just before.
    Allocate { claim: u32 },
}

/// A position in the journal to revert to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark(usize);

/// The log of simulated changes; see the module docs.
#[derive(Debug, Default)]
pub struct Journal {
    ops: Vec<Op>,
    /// Counts every change recorded or undone: state derived from the snapshot at one generation
    /// holds until the next.
    generation: u64,
}

impl Journal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current position.
    pub fn mark(&self) -> Mark {
        Mark(self.ops.len())
    }

    /// Number of recorded changes.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// The number of changes recorded or undone so far (see [`Journal`]'s `generation`).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    fn push(&mut self, op: Op) {
        self.ops.push(op);
        self.generation = self.generation.wrapping_add(1);
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub(crate) fn assume_id(&mut self, snap: &mut Snapshot, pod: u32, node: u32) {
        snap.simulate(pod, node, Sim::Assume);
        self.push(Op::Assume { pod, node });
    }

    pub(crate) fn remove_id(&mut self, snap: &mut Snapshot, pod: u32, node: u32) {
        snap.simulate(pod, node, Sim::Remove);
        self.push(Op::Remove { pod, node });
    }

    pub(crate) fn restore_id(&mut self, snap: &mut Snapshot, pod: u32, node: u32) {
        snap.simulate(pod, node, Sim::Restore);
        self.push(Op::Restore { pod, node });
    }

    pub(crate) fn allocate(&mut self, snap: &mut Snapshot, claim: u32, allocation: crate::core::dra::Allocated) {
        snap.dra.allocate(claim, allocation);
        self.push(Op::Allocate { claim });
    }

    pub(crate) fn ops_since(&self, mark: Mark) -> &[Op] {
        self.ops.get(mark.0..).unwrap_or(&[])
    }

    /// Tentatively places a pending pod on a node.
    pub fn assume(&mut self, snap: &mut Snapshot, pod: &PodKey, node: &str) -> Result<(), SnapshotError> {
        let pid = snap
            .pod_id(pod)
            .ok_or_else(|| SnapshotError::PodNotFound(pod.clone()))?;
        let nid = snap
            .node_id(node)
            .ok_or_else(|| SnapshotError::NodeNotFound(node.to_string()))?;
        let p = snap.pod(pid);
        if !p.schedulable_pending() {
            return Err(SnapshotError::WrongState {
                pod: pod.clone(),
                state: p.state,
                expected: "Pending and not yet placed in this simulation",
            });
        }
        self.assume_id(snap, pid, nid);
        Ok(())
    }

    /// Tentatively takes a placed pod off its node.
    pub fn remove(&mut self, snap: &mut Snapshot, pod: &PodKey) -> Result<(), SnapshotError> {
        let pid = snap
            .pod_id(pod)
            .ok_or_else(|| SnapshotError::PodNotFound(pod.clone()))?;
        let p = snap.pod(pid);
        let node = p.placed_node().ok_or(SnapshotError::WrongState {
            pod: pod.clone(),
            state: p.state,
            expected: "placed on a node",
        })?;
        self.remove_id(snap, pid, node);
        Ok(())
    }

    /// Undoes every change recorded after `mark`, newest first.
    pub fn revert_to(&mut self, snap: &mut Snapshot, mark: Mark) {
        while self.ops.len() > mark.0 {
            self.generation = self.generation.wrapping_add(1);
            match self.ops.pop() {
                Some(Op::Assume { pod, node }) => snap.simulate(pod, node, Sim::Unassume),
                Some(Op::Remove { pod, node }) => snap.simulate(pod, node, Sim::Restore),
                Some(Op::Restore { pod, node }) => snap.simulate(pod, node, Sim::Remove),
                Some(Op::Allocate { claim }) => snap.dra.unallocate(claim),
                None => break,
            }
        }
    }

    /// Undoes everything.
    pub fn revert_all(&mut self, snap: &mut Snapshot) {
        self.revert_to(snap, Mark(0));
    }
}
