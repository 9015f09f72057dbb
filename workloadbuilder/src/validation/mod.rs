//! Object validation that mirrors kube-apiserver's `scheduling.k8s.io/v1alpha3` validation
//! (`pkg/apis/scheduling/validation` and the declarative rules of the v1alpha3 types): the create, update
//! and status-update rules of Workload, PodGroup and CompositePodGroup, with upstream's messages and paths,
//! so that an emulated API server can enforce them and a controller can check an object before it writes it.
//! [`strings`] and [`meta`] hold the apimachinery checks they use (DNS names, qualified names, labels,
//! annotations, owner references, conditions), and [`parse_group_version`] apimachinery's
//! `schema.ParseGroupVersion`.
//!
//! A controller author does not need this module to compile a Workload: [`WorkloadBuilder`](crate::WorkloadBuilder)
//! validates the tree and [`AllowList::map_pod_group`](crate::AllowList::map_pod_group) /
//! [`AllowList::map_composite`](crate::AllowList::map_composite) the user's blocks.
//!
//! ```
//! use k8s_openapi::api::scheduling::v1alpha3::{PodGroupTemplate, Workload, WorkloadSpec};
//! use workloadbuilder::validation::validate_workload;
//!
//! let mut workload = Workload::default();
//! workload.metadata.name = Some("train".into());
//! workload.metadata.namespace = Some("default".into());
//! workload.spec = WorkloadSpec {
//!     pod_group_templates: Some(vec![PodGroupTemplate { name: "workers".into(), ..Default::default() }]),
//!     ..Default::default()
//! };
//! assert_eq!(
//!     validate_workload(&workload).to_string(),
//!     "spec.podGroupTemplates[0].schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
//! );
//! ```

pub(crate) mod api;
pub(crate) mod blocks;
pub mod meta;
pub mod strings;
pub(crate) mod tree;

mod group_version;
pub use api::{
    MAX_TEMPLATE_DEPTH, MAX_TEMPLATES_PER_LIST, validate_composite_pod_group,
    validate_composite_pod_group_status_update, validate_composite_pod_group_update, validate_pod_group,
    validate_pod_group_status_update, validate_pod_group_update, validate_workload, validate_workload_update,
};
pub use group_version::{GroupVersion, GroupVersionError, api_group, parse_group_version};
