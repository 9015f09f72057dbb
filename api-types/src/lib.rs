//! # kwas-api-types
//!
//! API types shared by every kwas crate:
//!
//! - the composite-level WAS building blocks that k8s-openapi lacks ([`WorkloadCompositePodGroupSchedulingPolicy`],
//!   [`WorkloadCompositePodGroupSchedulingConstraints`], [`WorkloadCompositePodGroupDisruptionMode`]), with
//!   serde, schemars schemas usable inside CRDs (union rules as CEL) and garde validation;
//! - [`v1alpha3`]: one module with every `scheduling.k8s.io/v1alpha3` type, the leaf building blocks from
//!   k8s-openapi and the composite ones from this crate side by side;
//! - [`jobset`]: the JobSet project's `jobset.x-k8s.io/v1alpha2` API ([`jobset::v1alpha2`], re-exported
//!   as [`jobset::JobSet`]) with KEP-6089's scheduling block: types, CRD, upstream's webhook defaulting
//!   and validation as pure functions; and kwas' retired `jobsets.kwas.dev/v1alpha1`
//!   ([`jobset::kwas_v1alpha1`]) with its conversion;
//! - [`batch`]: upstream's API validation of the `batch/v1` Job fields the Job controller's failure and
//!   success policies read (what kube-apiserver refuses, with its paths and messages);
//! - [`field`]: field errors as apimachinery's `field.Error` and its name checks;
//! - [`names`]: the well-known annotation keys, labels, finalizers, conditions and reasons;
//! - [`served`]: which versions of `scheduling.k8s.io` a cluster serves, the one to use per kind, and
//!   converting between them;
//! - [`quantity`] and [`duration`]: `resource.Quantity` and Go duration parsing with checked arithmetic.
//!
//! ```
//! use kwas_api_types::v1alpha3::{WorkloadCompositePodGroupSchedulingPolicy, WorkloadPodGroupSchedulingPolicy};
//! use kwas_api_types::names::annotations::GROUP_TEMPLATE_NAME;
//!
//! let root = WorkloadCompositePodGroupSchedulingPolicy::gang(Some(2));
//! let leaf = WorkloadPodGroupSchedulingPolicy::default();
//! assert!(root.gang.is_some() && leaf.gang.is_none());
//! assert_eq!(GROUP_TEMPLATE_NAME, "scheduling.k8s.io/group-template-name");
//! ```

#![warn(missing_docs)]

pub mod batch;
pub mod claims;
#[cfg(feature = "client")]
pub mod client;
mod composite;
pub mod duration;
pub mod field;
pub mod group;
pub mod jobset;
pub mod names;
pub mod quantity;
pub mod served;
#[cfg(feature = "client")]
pub mod versioned;

pub use composite::*;

/// Every `scheduling.k8s.io/v1alpha3` type in one place: the k8s-openapi types (Workload, PodGroup,
/// CompositePodGroup, templates, the `WorkloadPodGroup*` leaf building blocks) and kwas' composite-level
/// building blocks.
pub mod v1alpha3 {
    pub use crate::composite::*;
    pub use k8s_openapi::api::scheduling::v1alpha3::*;
}

pub use k8s_openapi;
