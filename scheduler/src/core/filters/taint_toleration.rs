//! `TaintToleration` (filter): every `NoSchedule` / `NoExecute` taint of the node must be tolerated.
//! Static: cached per equivalence class. `NodeUnschedulable` reads the same tolerations.

use k8s_openapi::api::core::v1::{PodSpec, Toleration};

use super::{ConstraintError, NodeView, Reject};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Tol {
    key: Option<String>,
    exists: bool,
    value: String,
    effect: Option<String>,
}

/// A pod's tolerations.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct Tolerations(Vec<Tol>);

impl Tolerations {
    /// Reads `spec.tolerations`; a malformed toleration is a field error.
    pub(crate) fn from_pod_spec(spec: &PodSpec) -> Result<Self, ConstraintError> {
        let mut tolerations = Vec::new();
        for (i, t) in spec.tolerations.iter().flatten().enumerate() {
            tolerations.push(parse_toleration(t, &format!("spec.tolerations[{i}]"))?);
        }
        Ok(Self(tolerations))
    }

    /// The filter.
    pub(crate) fn filter(&self, node: &NodeView<'_>) -> Result<(), Reject> {
        for t in node.taints {
            if (t.effect == "NoSchedule" || t.effect == "NoExecute") && !self.tolerates(&t.key, &t.value, &t.effect) {
                return Err(Reject::Taint(format!("{{{}: {}}}", t.key, t.value)));
            }
        }
        Ok(())
    }

    pub(crate) fn tolerates(&self, key: &str, value: &str, effect: &str) -> bool {
        self.0.iter().any(|t| {
            if t.effect.as_deref().is_some_and(|e| e != effect) {
                return false;
            }
            match &t.key {
                Some(k) if k != key => return false,
                None if !t.exists => return false,
                _ => {}
            }
            t.exists || t.value == value
        })
    }
}

fn parse_toleration(t: &Toleration, path: &str) -> Result<Tol, ConstraintError> {
    let exists = match t.operator.as_deref() {
        None | Some("") | Some("Equal") => false,
        Some("Exists") => true,
        Some(other) => {
            return Err(ConstraintError {
                path: format!("{path}.operator"),
                detail: format!("Unsupported value: \"{other}\""),
            });
        }
    };
    Ok(Tol {
        key: t.key.clone().filter(|k| !k.is_empty()),
        exists,
        value: t.value.clone().unwrap_or_default(),
        effect: t.effect.clone().filter(|e| !e.is_empty()),
    })
}
