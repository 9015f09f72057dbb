//! Work for the built-in controllers (garbage collector, namespace controller, CRD cleanup): a queue that
//! never holds the same item twice. Writes queue items; the controllers drain them.

use std::collections::{HashSet, VecDeque};

use crate::store::ObjectRef;

/// Work the garbage collector and namespace controller pick up.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum GcItem {
    /// An object with this uid is gone: its dependents may be orphaned.
    OwnerGone(String),
    /// An object being deleted in the foreground: delete its dependents, then drop the finalizer.
    Foreground(ObjectRef),
    /// An object being deleted with orphaning: release its dependents, then drop the finalizer.
    Orphan(ObjectRef),
    /// A namespace being deleted: delete its content, then the namespace.
    Namespace(String),
    /// A CRD being deleted: delete its custom resources, then the CRD.
    CrdCleanup(String),
}

/// The queue of [`GcItem`]s.
#[derive(Debug, Default)]
pub(crate) struct WorkQueue {
    queue: VecDeque<GcItem>,
    pending: HashSet<GcItem>,
}

impl WorkQueue {
    /// Queues an item; an item already waiting is not queued twice.
    pub fn push(&mut self, item: GcItem) {
        if self.pending.insert(item.clone()) {
            self.queue.push_back(item);
        }
    }

    /// The next item.
    pub fn pop(&mut self) -> Option<GcItem> {
        let item = self.queue.pop_front()?;
        self.pending.remove(&item);
        Some(item)
    }

    /// Whether work is waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}
