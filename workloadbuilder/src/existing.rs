//! Building from a Workload that already exists (KEP-5547's `NewBuilderFromExistingWorkload`): a controller
//! that did not compile the Workload (a child Job whose parent JobSet delegates PodGroup management to it, a
//! Job resuming with its retained Workload) instantiates runtime groups from the persisted templates, and
//! never compiles the Workload again.
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
//! use workloadbuilder::{
//!     AllowList, DownwardMapping, ExistingWorkloadBuilder, PolicyOption, SchedulingConfig, WorkloadBuilder,
//!     WorkloadItem,
//! };
//!
//! // The parent compiled and created this Workload.
//! let parent = OwnerReference {
//!     api_version: "jobset.x-k8s.io/v1alpha2".into(),
//!     kind: "JobSet".into(),
//!     name: "trainer".into(),
//!     uid: "uid-2".into(),
//!     controller: Some(true),
//!     block_owner_deletion: Some(true),
//! };
//! let tree = WorkloadItem::new("trainer")
//!     .with_default(SchedulingConfig::basic())
//!     .with_child(WorkloadItem::new("workers").with_default(SchedulingConfig::gang(Some(8))));
//! let workload = WorkloadBuilder::new(tree)
//!     .allow(AllowList::new().policies([PolicyOption::Basic, PolicyOption::Gang]))
//!     .build("trainer-wl", "default", &parent)
//!     .unwrap();
//!
//! // A child Job reads its downward mapping and instantiates its own PodGroup, owned by itself.
//! let job = OwnerReference { kind: "Job".into(), api_version: "batch/v1".into(), name: "trainer-workers-0".into(),
//!     uid: "uid-3".into(), ..parent.clone() };
//! let mapping = DownwardMapping::new("workers").with_parent("trainer-root");
//! let builder = ExistingWorkloadBuilder::new(&workload).with_owner(job.clone());
//! let name = builder.pod_group_name_for(&mapping, &job.uid);
//! let group = builder.new_pod_group_from_mapping(&name, &mapping).unwrap();
//! assert_eq!(group.spec.scheduling_policy.gang.unwrap().min_count, 8);
//! assert_eq!(group.spec.parent_composite_pod_group_name.as_deref(), Some("trainer-root"));
//! assert_eq!(group.metadata.owner_references.unwrap()[0].uid, "uid-3");
//!
//! // Rebuilding the Workload from it is refused.
//! let errs = builder.build("trainer-wl", "default", &job).unwrap_err();
//! assert!(errs.to_string().contains("is never rebuilt"));
//! ```

use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::annotations::DownwardMapping;
use crate::field::{ErrorOrigin, FieldError, FieldErrors, FieldPath, Stage};
use crate::names::{GroupName, TemplateKey, generate_pod_group_name_for_owner};
use crate::podgroup::{InstantiateError, TemplateRef, find_template, new_composite_pod_group, new_pod_group};

/// The one helper that instantiates a Workload's runtime groups (PodGroups and CompositePodGroups), all
/// with the same owners, from a Workload that exists: one a controller just compiled, or one it read from
/// the API server. Every method takes the template (`&str`), then the group's name ([`GroupName`]), then
/// the parent instance's name (`Option<&GroupName>`): the arguments cannot be swapped. Refuses to build the
/// Workload again.
///
/// ```
/// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// # use workloadbuilder::{AllowList, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem};
/// use workloadbuilder::{ExistingWorkloadBuilder, GroupName};
/// # let owner = OwnerReference { api_version: "v1".into(), kind: "X".into(), name: "x".into(),
/// #     uid: "u".into(), controller: Some(true), block_owner_deletion: Some(true) };
/// let tree = WorkloadItem::new("set").with_child(WorkloadItem::new("member").with_default(SchedulingConfig::gang(Some(2))));
/// let workload = WorkloadBuilder::new(tree).allow(AllowList::new().policies([PolicyOption::Basic, PolicyOption::Gang]))
///     .build("x-wl", "default", &owner).unwrap();
/// let groups = ExistingWorkloadBuilder::new(&workload).with_owners(Some(owner));
/// let base = GroupName::new("x");
/// let root = base.child("root");
/// let set = groups.new_composite_pod_group("set", &root, None).unwrap();
/// let member = groups.new_pod_group("member", &base.child(0), Some(&root)).unwrap();
/// assert_eq!(member.spec.parent_composite_pod_group_name.as_deref(), set.metadata.name.as_deref());
/// ```
#[derive(Clone, Debug)]
pub struct ExistingWorkloadBuilder<'a> {
    workload: &'a Workload,
    owners: Vec<OwnerReference>,
}

impl<'a> ExistingWorkloadBuilder<'a> {
    /// A builder over `workload` (as read from the API server). Its groups have no owner until
    /// [`with_owner`](Self::with_owner) gives them one.
    pub fn new(workload: &'a Workload) -> Self {
        Self {
            workload,
            owners: Vec::new(),
        }
    }

    /// This builder with `owner` appended to the owners of the groups it instantiates (KEP-5547's
    /// `BuildOptions.Owner`: the controller reference of the object that manages them; a further
    /// non-controller reference, such as the Workload's own, may follow).
    pub fn with_owner(mut self, owner: OwnerReference) -> Self {
        self.owners.push(owner);
        self
    }

    /// The groups it makes are also owned by `owners` (an `Option<OwnerReference>` works: `None` adds none).
    pub fn with_owners(mut self, owners: impl IntoIterator<Item = OwnerReference>) -> Self {
        self.owners.extend(owners);
        self
    }

    /// The Workload.
    pub fn workload(&self) -> &'a Workload {
        self.workload
    }

    /// The owners the groups get.
    pub fn owners(&self) -> &[OwnerReference] {
        &self.owners
    }

    /// The Workload's template named `name`, anywhere in its tree.
    pub fn template(&self, name: &str) -> Option<TemplateRef<'a>> {
        find_template(self.workload, name)
    }

    /// A PodGroup named `name` from the PodGroupTemplate `template`, under the CompositePodGroup `parent`
    /// (required for nested templates, forbidden for top-level ones); see [`new_pod_group`].
    pub fn new_pod_group(
        &self,
        template: &str,
        name: &GroupName,
        parent: Option<&GroupName>,
    ) -> Result<PodGroup, InstantiateError> {
        new_pod_group(self.workload, template, name, parent, self.owners.clone())
    }

    /// A CompositePodGroup named `name` from the CompositePodGroupTemplate `template`, under `parent`; see
    /// [`new_composite_pod_group`].
    pub fn new_composite_pod_group(
        &self,
        template: &str,
        name: &GroupName,
        parent: Option<&GroupName>,
    ) -> Result<CompositePodGroup, InstantiateError> {
        new_composite_pod_group(self.workload, template, name, parent, self.owners.clone())
    }

    /// A delegated child's PodGroup named `name`: the template and the parent instance its parent wrote in
    /// the downward-mapping annotations.
    pub fn new_pod_group_from_mapping(
        &self,
        name: &GroupName,
        mapping: &DownwardMapping,
    ) -> Result<PodGroup, InstantiateError> {
        let parent = mapping.parent_composite_pod_group.as_deref().map(GroupName::new);
        self.new_pod_group(&mapping.group_template_name, name, parent.as_ref())
    }

    /// The name KEP-5547 gives the PodGroup of the object with uid `owner_uid` mapped by `mapping`:
    /// `GeneratePodGroupName(workloadName, templateName, uid)` ([`generate_pod_group_name_for_owner`]).
    pub fn pod_group_name_for(&self, mapping: &DownwardMapping, owner_uid: &str) -> GroupName {
        let key = TemplateKey {
            workload: self.workload.metadata.name.as_deref().unwrap_or_default(),
            template: &mapping.group_template_name,
        };
        generate_pod_group_name_for_owner(key, owner_uid)
    }

    /// Refused: a builder made from an existing Workload never compiles it again (only the Workload's
    /// owner compiles it, with [`WorkloadBuilder::build`](crate::WorkloadBuilder::build)). The signature is
    /// `WorkloadBuilder::build`'s, so code written against either gets the refusal as field errors
    /// (`Forbidden` at `metadata.name`, stage [`Stage::Compile`]).
    pub fn build(&self, name: &str, namespace: &str, _owner: &OwnerReference) -> Result<Workload, FieldErrors> {
        let existing = format!(
            "{}/{}",
            self.workload.metadata.namespace.as_deref().unwrap_or_default(),
            self.workload.metadata.name.as_deref().unwrap_or_default()
        );
        let detail = format!(
            "cannot build Workload {namespace}/{name} from a builder made from the existing Workload {existing}: \
             it only instantiates that Workload's groups, and a Workload is never rebuilt over"
        );
        Err(FieldError::forbidden(FieldPath::new("metadata").child("name"), detail)
            .with_origin(ErrorOrigin::stage(Stage::Compile))
            .into())
    }
}
