//! Runtime hierarchy checks (KEP-6012 "Group hierarchy", KEP-5710 priority divergence).
//!
//! The apiserver validates a Workload's template tree, but the runtime groups are separate objects a
//! misbehaving controller can wire wrongly. Before a hierarchy is scheduled the core checks it and
//! rejects the whole tree with a reason:
//!
//! - a cycle in the parent references;
//! - more than 4 levels (the root is level 1; a PodGroup under three composite levels is level 4);
//! - groups that reference more than one Workload;
//! - groups or pods with different priorities (all groups and pods of one tree share one priority);
//! - pods with different `spec.schedulerName`s;
//! - a composite with disruption mode `all` whose child is `single`, or a Basic group with `all`;
//! - pods whose preemption policy differs from their group's (KEP-5710);
//! - (KEP-6012 Beta) a group that does not match its Workload's template: the template it names is
//!   missing, of the other kind, with another policy or disruption mode, or not a child of its parent
//!   group's template. Checked when the Workload is observed (the scheduler watches Workloads).
//!
//! Structural problems carry the condition reason `Invalid`; a pod-level mismatch (priority or
//! scheduler name) carries `SchedulerError` with upstream's message.

use std::collections::HashSet;

use kwas_api_types::names::conditions::{REASON_INVALID, REASON_SCHEDULER_ERROR};
use thiserror::Error;

use super::model::{DisruptionMode, GroupKind, Policy};
use super::snapshot::Snapshot;

/// Maximum depth of a group hierarchy (root = 1).
pub const MAX_DEPTH: usize = 4;

/// Why a hierarchy is rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HierarchyError {
    /// The parent references form a cycle.
    #[error("invalid group hierarchy: the parent references form a cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// The hierarchy is deeper than `MAX_DEPTH` (4, KEP-6012).
    #[error("invalid group hierarchy: maximum hierarchy depth is {MAX_DEPTH}, {group} is at depth {depth}")]
    TooDeep {
        /// The group found too deep.
        group: String,
        /// Its depth.
        depth: usize,
    },
    /// Groups of the tree reference different Workloads.
    #[error("invalid group hierarchy: groups reference more than one Workload: {first:?} and {second:?}")]
    MultipleWorkloads {
        /// One Workload.
        first: String,
        /// Another.
        second: String,
    },
    /// Groups of the tree have different priorities.
    #[error(
        "invalid group hierarchy: all groups in a hierarchy should have the same priority, got: {first} and {second}"
    )]
    MixedGroupPriority {
        /// One priority.
        first: i32,
        /// Another.
        second: i32,
    },
    /// A pod's priority differs from its group's.
    #[error("all pods in a single pod group should match the priority of the pod group, got: {group} and {pod}")]
    MixedPodPriority {
        /// The group's priority.
        group: i32,
        /// The pod's.
        pod: i32,
    },
    /// Pods of the tree name different schedulers.
    #[error(
        "all pods in a single pod group should have the same .spec.schedulerName set, got: {first:?} and {second:?}"
    )]
    MixedSchedulerName {
        /// One scheduler name.
        first: String,
        /// Another.
        second: String,
    },
    /// A composite with disruption mode `all` has a `single` child.
    #[error("invalid group hierarchy: {parent} has disruption mode `all` but its child {child} has `single`")]
    DisruptionNesting {
        /// The `all` composite.
        parent: String,
        /// The `single` child.
        child: String,
    },
    /// A pod's preemption policy differs from its group's (KEP-5710).
    #[error(
        "all pods in a single pod group should match the preemptionPolicy of the pod group, got: {group} and {pod}"
    )]
    MixedPreemptionPolicy {
        /// The group's.
        group: &'static str,
        /// The pod's.
        pod: &'static str,
    },
    /// A group does not match the Workload template it names (KEP-6012 Beta).
    #[error("invalid group hierarchy: {group} does not match its Workload {workload:?}: {detail}")]
    TemplateMismatch {
        /// The group.
        group: String,
        /// The Workload.
        workload: String,
        /// What differs.
        detail: String,
    },
    /// A Basic group asks for disruption mode `all`.
    #[error(
        "invalid group hierarchy: the disruptionMode `all` is not supported with the Basic scheduling policy ({0})"
    )]
    AllWithBasic(String),
}

impl HierarchyError {
    /// The condition reason to report on the groups (`Invalid` or `SchedulerError`).
    pub fn reason(&self) -> &'static str {
        match self {
            HierarchyError::MixedPodPriority { .. }
            | HierarchyError::MixedSchedulerName { .. }
            | HierarchyError::MixedPreemptionPolicy { .. } => REASON_SCHEDULER_ERROR,
            _ => REASON_INVALID,
        }
    }
}

/// Result of climbing from a group to its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Climb {
    Root(u32),
    /// A parent is not observed yet.
    Waiting(String),
    Invalid(HierarchyError),
}

pub(crate) fn group_label(snap: &Snapshot, id: u32) -> String {
    let g = snap.group(id);
    format!("{} {}", g.key.kind.as_str(), g.key.name)
}

/// Follows parent references from `id` up to the root.
pub(crate) fn climb(snap: &Snapshot, id: u32) -> Climb {
    let mut seen = vec![id];
    let mut cur = id;
    loop {
        let g = snap.group(cur);
        let Some(parent_name) = g.parent_name.as_ref() else {
            return Climb::Root(cur);
        };
        let Some(parent) = snap.parent(cur) else {
            return Climb::Waiting(format!(
                "waiting for the parent composite pod group {parent_name:?} to appear in scheduling queue"
            ));
        };
        if let Some(pos) = seen.iter().position(|x| *x == parent) {
            let mut names: Vec<String> = seen[pos..].iter().map(|x| group_label(snap, *x)).collect();
            names.push(group_label(snap, parent));
            return Climb::Invalid(HierarchyError::Cycle(names));
        }
        seen.push(parent);
        if seen.len() > MAX_DEPTH + 8 {
            // Far deeper than allowed: report it without walking an arbitrarily long chain.
            return Climb::Invalid(HierarchyError::TooDeep {
                group: group_label(snap, id),
                depth: seen.len(),
            });
        }
        cur = parent;
    }
}

/// KEP-6012's Beta check of one group against its Workload's template.
fn check_template(snap: &Snapshot, id: u32) -> Result<(), HierarchyError> {
    let g = snap.group(id);
    let (Some(workload), Some(template)) = (g.workload.as_ref(), g.template.as_ref()) else {
        return Ok(());
    };
    let Some(shape) = snap.workload_template(&g.key.namespace, workload, template) else {
        return Ok(()); // The Workload is not observed (yet): nothing to compare with.
    };
    let mismatch = |detail: String| HierarchyError::TemplateMismatch {
        group: group_label(snap, id),
        workload: workload.clone(),
        detail,
    };
    let Some(shape) = shape else {
        return Err(mismatch(format!("it has no template {template:?}")));
    };
    let composite = g.key.kind == GroupKind::CompositePodGroup;
    if shape.composite != composite {
        let want = if shape.composite {
            "compositePodGroupTemplate"
        } else {
            "podGroupTemplate"
        };
        return Err(mismatch(format!("template {template:?} is a {want}")));
    }
    let gang = matches!(g.policy, Policy::Gang { .. });
    if shape.gang != gang {
        let want = if shape.gang { "gang" } else { "basic" };
        return Err(mismatch(format!(
            "template {template:?} has the {want} scheduling policy"
        )));
    }
    if shape.all != (g.disruption == DisruptionMode::All) {
        let want = if shape.all { "all" } else { "single" };
        return Err(mismatch(format!("template {template:?} has disruption mode `{want}`")));
    }
    let parent_template = snap.parent(id).and_then(|p| snap.group(p).template.clone());
    if g.parent_name.is_some() && parent_template.is_some() && shape.parent != parent_template {
        return Err(mismatch(format!(
            "template {template:?} is not a child of template {:?}",
            parent_template.unwrap_or_default()
        )));
    }
    if g.parent_name.is_none() && shape.parent.is_some() {
        return Err(mismatch(format!(
            "template {template:?} is nested under {:?} but the group has no parent",
            shape.parent.clone().unwrap_or_default()
        )));
    }
    Ok(())
}

/// Checks a whole tree from its root (see the module docs).
pub(crate) fn validate_tree(snap: &Snapshot, root: u32) -> Result<(), HierarchyError> {
    let mut workload: Option<String> = None;
    let mut priority: Option<i32> = None;
    let mut scheduler: Option<String> = None;
    let mut visited = HashSet::new();
    let mut stack = vec![(root, 1usize)];
    while let Some((id, depth)) = stack.pop() {
        if !visited.insert(id) {
            continue;
        }
        let g = snap.group(id);
        if depth > MAX_DEPTH {
            return Err(HierarchyError::TooDeep {
                group: group_label(snap, id),
                depth,
            });
        }
        if let Some(w) = g.workload.as_ref() {
            match workload.as_ref() {
                Some(first) if first != w => {
                    return Err(HierarchyError::MultipleWorkloads {
                        first: first.clone(),
                        second: w.clone(),
                    });
                }
                _ => workload = Some(w.clone()),
            }
        }
        match priority {
            Some(p) if p != g.priority => {
                return Err(HierarchyError::MixedGroupPriority {
                    first: p,
                    second: g.priority,
                });
            }
            _ => priority = Some(g.priority),
        }
        if g.disruption == DisruptionMode::All && g.policy == Policy::Basic {
            return Err(HierarchyError::AllWithBasic(group_label(snap, id)));
        }
        check_template(snap, id)?;
        match g.key.kind {
            GroupKind::PodGroup => {
                for &pid in snap.members(id) {
                    let p = snap.pod(pid);
                    if p.priority != g.priority {
                        return Err(HierarchyError::MixedPodPriority {
                            group: g.priority,
                            pod: p.priority,
                        });
                    }
                    if p.explicit_preemption_policy && p.preemption_policy != g.preemption_policy {
                        return Err(HierarchyError::MixedPreemptionPolicy {
                            group: g.preemption_policy.as_str(),
                            pod: p.preemption_policy.as_str(),
                        });
                    }
                    match scheduler.as_ref() {
                        Some(s) if *s != p.scheduler_name => {
                            return Err(HierarchyError::MixedSchedulerName {
                                first: s.clone(),
                                second: p.scheduler_name.clone(),
                            });
                        }
                        _ => scheduler = Some(p.scheduler_name.clone()),
                    }
                }
            }
            GroupKind::CompositePodGroup => {
                for &c in snap.children(id) {
                    let child = snap.group(c);
                    if g.disruption == DisruptionMode::All && child.disruption == DisruptionMode::Single {
                        return Err(HierarchyError::DisruptionNesting {
                            parent: group_label(snap, id),
                            child: group_label(snap, c),
                        });
                    }
                    stack.push((c, depth + 1));
                }
            }
        }
    }
    Ok(())
}
