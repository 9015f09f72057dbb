//! Runtime groups from a Workload's templates: [`new_pod_group`] and [`new_composite_pod_group`].
//!
//! The template's scheduling policy, constraints, disruption mode, resource claims (PodGroups) and priority
//! class are copied inline into the group's spec, `spec.workloadRef` names the Workload and the template, and
//! `spec.parentCompositePodGroupName` links the group under its parent instance. `priority` is left to priority
//! admission (it resolves the class), as for pods.
//!
//! A top-level template instantiates root groups (no parent); a nested template needs the name of the parent
//! CompositePodGroup instance. Asking for a template that does not exist, of the wrong kind, or with the wrong
//! parent shape is an [`InstantiateError`].
//!
//! ```
//! use k8s_openapi::api::scheduling::v1alpha3::{PodGroupSchedulingPolicy, PodGroupTemplate, GangSchedulingPolicy, Workload, WorkloadSpec};
//! use workloadbuilder::{generate_pod_group_name, new_pod_group, TemplateKey};
//!
//! let mut workload = Workload::default();
//! workload.metadata.name = Some("train-647cf7d9".into());
//! workload.metadata.namespace = Some("default".into());
//! workload.spec = WorkloadSpec {
//!     pod_group_templates: Some(vec![PodGroupTemplate {
//!         name: "train-pgt-0".into(),
//!         scheduling_policy: PodGroupSchedulingPolicy { basic: None, gang: Some(GangSchedulingPolicy { min_count: 4 }) },
//!         ..Default::default()
//!     }]),
//!     ..Default::default()
//! };
//! let name = generate_pod_group_name(TemplateKey { workload: "train-647cf7d9", template: "train-pgt-0" });
//! // The template, the group's name, its parent's name, its owners: the two names are typed.
//! let group = new_pod_group(&workload, "train-pgt-0", &name, None, vec![]).unwrap();
//! assert_eq!(group.spec.scheduling_policy.gang.unwrap().min_count, 4);
//! assert_eq!(group.spec.workload_ref.unwrap().template_name, "train-pgt-0");
//! ```

use k8s_openapi::api::scheduling::v1alpha3::{
    CompositePodGroup, CompositePodGroupSpec, CompositePodGroupTemplate, PodGroup, PodGroupSpec, PodGroupTemplate,
    Workload, WorkloadReference,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::field::{ErrorOrigin, FieldError, FieldErrors, FieldPath, Stage};
use crate::names::GroupName;

/// Why a runtime group cannot be instantiated from a Workload.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstantiateError {
    /// The Workload has no template of that name.
    #[error("template {template:?} not found in Workload {workload:?}")]
    TemplateNotFound {
        /// The Workload's name.
        workload: String,
        /// The template asked for.
        template: String,
    },
    /// The template is a PodGroupTemplate where a CompositePodGroupTemplate was asked for, or the reverse.
    #[error("template {template:?} in Workload {workload:?} is a {found}, not a {wanted}")]
    WrongKind {
        /// The Workload's name.
        workload: String,
        /// The template asked for.
        template: String,
        /// The kind found.
        found: &'static str,
        /// The kind asked for.
        wanted: &'static str,
    },
    /// The template is nested under a composite template, so its groups need a parent instance.
    #[error(
        "template {template:?} in Workload {workload:?} is nested under {parent_template:?}: its groups need a parent CompositePodGroup"
    )]
    ParentRequired {
        /// The Workload's name.
        workload: String,
        /// The template asked for.
        template: String,
        /// The template's parent template.
        parent_template: String,
    },
    /// The template is top-level, so its groups are roots and take no parent.
    #[error("template {template:?} in Workload {workload:?} is top-level: its groups are roots and take no parent")]
    UnexpectedParent {
        /// The Workload's name.
        workload: String,
        /// The template asked for.
        template: String,
    },
}

/// Where a template sits in a Workload.
#[derive(Clone, Copy, Debug)]
pub enum TemplateRef<'a> {
    /// A PodGroupTemplate and the name of its parent template, if nested.
    PodGroup(&'a PodGroupTemplate, Option<&'a str>),
    /// A CompositePodGroupTemplate and the name of its parent template, if nested.
    Composite(&'a CompositePodGroupTemplate, Option<&'a str>),
}

impl<'a> TemplateRef<'a> {
    /// The template's parent template name, `None` for top-level templates.
    pub fn parent_template(&self) -> Option<&'a str> {
        match self {
            Self::PodGroup(_, p) | Self::Composite(_, p) => *p,
        }
    }
}

/// Find the template named `name` anywhere in `workload`'s template tree.
pub fn find_template<'a>(workload: &'a Workload, name: &str) -> Option<TemplateRef<'a>> {
    fn in_composites<'a>(
        list: &'a [CompositePodGroupTemplate],
        parent: Option<&'a str>,
        name: &str,
    ) -> Option<TemplateRef<'a>> {
        for t in list {
            if t.name == name {
                return Some(TemplateRef::Composite(t, parent));
            }
            if let Some(leaf) = t.pod_group_templates.iter().flatten().find(|l| l.name == name) {
                return Some(TemplateRef::PodGroup(leaf, Some(&t.name)));
            }
            if let Some(found) = in_composites(
                t.composite_pod_group_templates.as_deref().unwrap_or_default(),
                Some(&t.name),
                name,
            ) {
                return Some(found);
            }
        }
        None
    }
    if let Some(leaf) = workload
        .spec
        .pod_group_templates
        .iter()
        .flatten()
        .find(|l| l.name == name)
    {
        return Some(TemplateRef::PodGroup(leaf, None));
    }
    in_composites(
        workload
            .spec
            .composite_pod_group_templates
            .as_deref()
            .unwrap_or_default(),
        None,
        name,
    )
}

fn workload_name(workload: &Workload) -> String {
    workload.metadata.name.clone().unwrap_or_default()
}

fn check_parent(
    workload: &Workload,
    template: &str,
    parent_template: Option<&str>,
    parent: Option<&GroupName>,
) -> Result<(), InstantiateError> {
    match (parent_template, parent) {
        (Some(pt), None) => Err(InstantiateError::ParentRequired {
            workload: workload_name(workload),
            template: template.to_string(),
            parent_template: pt.to_string(),
        }),
        (None, Some(_)) => Err(InstantiateError::UnexpectedParent {
            workload: workload_name(workload),
            template: template.to_string(),
        }),
        _ => Ok(()),
    }
}

fn metadata(workload: &Workload, name: &GroupName, owners: Vec<OwnerReference>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: workload.metadata.namespace.clone(),
        owner_references: (!owners.is_empty()).then_some(owners),
        ..ObjectMeta::default()
    }
}

fn reference(workload: &Workload, template: &str) -> WorkloadReference {
    WorkloadReference {
        template_name: template.to_string(),
        workload_name: workload_name(workload),
    }
}

/// A PodGroup named `name` from the PodGroupTemplate `template` of `workload`, under the CompositePodGroup
/// `parent` (required for nested templates, forbidden for top-level ones), owned by `owners`.
pub fn new_pod_group(
    workload: &Workload,
    template: &str,
    name: &GroupName,
    parent: Option<&GroupName>,
    owners: Vec<OwnerReference>,
) -> Result<PodGroup, InstantiateError> {
    let (t, parent_template) = match find_template(workload, template) {
        Some(TemplateRef::PodGroup(t, p)) => (t, p),
        Some(TemplateRef::Composite(..)) => {
            return Err(InstantiateError::WrongKind {
                workload: workload_name(workload),
                template: template.to_string(),
                found: "CompositePodGroupTemplate",
                wanted: "PodGroupTemplate",
            });
        }
        None => {
            return Err(InstantiateError::TemplateNotFound {
                workload: workload_name(workload),
                template: template.to_string(),
            });
        }
    };
    check_parent(workload, template, parent_template, parent)?;
    Ok(PodGroup {
        metadata: metadata(workload, name, owners),
        spec: PodGroupSpec {
            disruption_mode: t.disruption_mode.clone(),
            parent_composite_pod_group_name: parent.map(GroupName::to_string),
            preemption_policy: t.preemption_policy.clone(),
            priority: None,
            priority_class_name: t.priority_class_name.clone(),
            resource_claims: t.resource_claims.clone(),
            scheduling_constraints: t.scheduling_constraints.clone(),
            scheduling_policy: t.scheduling_policy.clone(),
            workload_ref: Some(reference(workload, template)),
        },
        status: None,
    })
}

/// A CompositePodGroup named `name` from the CompositePodGroupTemplate `template` of `workload`, under the
/// CompositePodGroup `parent` (required for nested templates, forbidden for top-level ones), owned by `owners`.
pub fn new_composite_pod_group(
    workload: &Workload,
    template: &str,
    name: &GroupName,
    parent: Option<&GroupName>,
    owners: Vec<OwnerReference>,
) -> Result<CompositePodGroup, InstantiateError> {
    let (t, parent_template) = match find_template(workload, template) {
        Some(TemplateRef::Composite(t, p)) => (t, p),
        Some(TemplateRef::PodGroup(..)) => {
            return Err(InstantiateError::WrongKind {
                workload: workload_name(workload),
                template: template.to_string(),
                found: "PodGroupTemplate",
                wanted: "CompositePodGroupTemplate",
            });
        }
        None => {
            return Err(InstantiateError::TemplateNotFound {
                workload: workload_name(workload),
                template: template.to_string(),
            });
        }
    };
    check_parent(workload, template, parent_template, parent)?;
    Ok(CompositePodGroup {
        metadata: metadata(workload, name, owners),
        spec: CompositePodGroupSpec {
            disruption_mode: t.disruption_mode.clone(),
            parent_composite_pod_group_name: parent.map(GroupName::to_string),
            preemption_policy: t.preemption_policy.clone(),
            priority: None,
            priority_class_name: t.priority_class_name.clone(),
            scheduling_constraints: t.scheduling_constraints.clone(),
            scheduling_policy: t.scheduling_policy.clone(),
            workload_ref: reference(workload, template),
        },
        status: None,
    })
}

impl From<InstantiateError> for FieldErrors {
    /// An instantiate error as an `Internal error` at `spec.workloadRef.templateName` (origin stage
    /// [`Stage::Compile`]): a controller asked for a template its own Workload does not have, so a
    /// controller's error handling can be a plain `?`.
    fn from(e: InstantiateError) -> Self {
        let path = FieldPath::new("spec").child("workloadRef").child("templateName");
        FieldError::internal(path, e.to_string())
            .with_origin(ErrorOrigin::stage(Stage::Compile))
            .into()
    }
}
