//! scheduling.k8s.io/v1alpha3 CompositePodGroup: PodGroups' strategy (see [`super::podgroup`]) over the
//! composite type and its validation rules.

use k8s_openapi::api::scheduling::v1alpha3::CompositePodGroup;
use workloadbuilder::FieldErrors;

use super::podgroup::{GroupKind, group_resource};
use crate::resource::ResourceInfo;

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    group_resource::<CompositePodGroup>()
}

impl GroupKind for CompositePodGroup {
    const KIND: &'static str = "CompositePodGroup";
    const PLURAL: &'static str = "compositepodgroups";
    const SCHEDULED_CONDITION: &'static str =
        kwas_api_types::names::conditions::COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED;
    const SCHEDULED_DESCRIPTION: &'static str = "The CompositePodGroupInitiallyScheduled condition.";

    fn validate(&self) -> FieldErrors {
        workloadbuilder::validation::validate_composite_pod_group(self)
    }

    fn validate_update(&self, old: &Self) -> FieldErrors {
        workloadbuilder::validation::validate_composite_pod_group_update(self, old)
    }

    fn validate_status_update(&self, old: &Self) -> FieldErrors {
        workloadbuilder::validation::validate_composite_pod_group_status_update(self, old)
    }
}
