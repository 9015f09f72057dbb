//! `NodeUnschedulable` (filter): a cordoned node only takes pods that tolerate
//! `node.kubernetes.io/unschedulable:NoSchedule`. Static: cached per equivalence class.

use super::taint_toleration::Tolerations;
use crate::core::framework::{NodeView, Reject};

/// The filter.
pub(crate) fn filter(tolerations: &Tolerations, node: &NodeView<'_>) -> Result<(), Reject> {
    if node.unschedulable && !tolerations.tolerates("node.kubernetes.io/unschedulable", "", "NoSchedule") {
        return Err(Reject::Unschedulable);
    }
    Ok(())
}
