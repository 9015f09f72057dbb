//! # workloadbuilder
//!
//! The KEP-6089 translation library: a workload controller describes its workload as a tree of
//! [`WorkloadItem`]s (its own defaults, the user's scheduling intent, callbacks); the library merges,
//! defaults, validates against the controller's [`AllowList`] and compiles the tree into a
//! `scheduling.k8s.io/v1alpha3` [`Workload`](k8s_openapi::api::scheduling::v1alpha3::Workload), then
//! instantiates the runtime CompositePodGroups and PodGroups from it. It is pure: no client, no async, no I/O.
//! A controller author's guide with a complete example is `docs/library.md` at the repository root.
//!
//! | step | API |
//! | --- | --- |
//! | declare what the controller supports, once | [`AllowList`] (of [`PolicyOption`]s and [`DisruptionModeOption`]s) |
//! | validate and map the user's blocks, errors at the user's field | [`AllowList::map_pod_group`] / [`AllowList::map_composite`] on a [`PodGroupBlock`] / [`CompositeBlock`] |
//! | describe the structure | [`WorkloadItem`], [`SchedulingConfig`] ([`SchedulingPolicy`], [`GangPolicy`], [`SchedulingConstraints`], [`Disruption`], [`ResourceClaim`]), callbacks ([`WorkloadItem::with_callback`], [`WorkloadItem::with_item_callback`], [`ItemView`]) |
//! | the controller's own rules, errors at the user's field | [`WorkloadItem::with_check`] ([`Check`], [`ItemView::config_field`]), [`WorkloadItem::with_config_path`], [`WorkloadItem::with_name_path`], [`WorkloadItem::with_children_path`] |
//! | resolve, validate, compile | [`WorkloadBuilder::resolve`] (a [`ResolvedItem`] tree with each value's [`Sources`]), [`WorkloadBuilder::validate`], [`WorkloadBuilder::build`]; [`WorkloadBuilder::build_flat`] for clusters without CompositePodGroups |
//! | name objects like upstream | [`generate_workload_name`] ([`OwnerKey`]), [`generate_pod_group_name`] ([`TemplateKey`]), [`GroupName`] |
//! | create the runtime groups | [`ExistingWorkloadBuilder`] (owners once, one argument order), or [`new_composite_pod_group`] / [`new_pod_group`]; [`find_template`] |
//! | delegate to child controllers | [`DownwardMapping`] and its annotations |
//! | re-sync a live Workload and its groups | [`sync::plan_sync`]: changed gang counts, missing groups, and how to replace a Workload the API would refuse to update |
//! | report errors | [`FieldErrors`] of [`FieldError`]s, rendered like the apiserver's, each with its [`ErrorOrigin`] ([`Stage`] and item); `From<InstantiateError>` makes `?` work |
//! | the Job integration | [`job`] |
//! | check objects like kube-apiserver | [`validation`] (it mirrors kube-apiserver's `scheduling.k8s.io` validation) |
//! | match on error messages | [`messages`] |
//! | port Go code | [`porting`]: every upstream Go name and its counterpart here |
//!
//! ## Resolution
//! For every item: a deep copy of the controller's default; each top-level field the user set replaces that
//! field whole; then the item's callbacks in order. Callers' trees are never mutated. After resolution the
//! library's rules run, then the controller's [checks](WorkloadItem::with_check).
//!
//! ## Choices this crate makes where KEP-6089 leaves them open
//! - An empty union block (`schedulingPolicy: {}`, `disruptionMode: {}`) is invalid, as the KEP's "Exactly one
//!   ... must be set" and kube-apiserver say; an omitted block leaves the controller's default in place.
//! - An item whose policy is still unset after resolution compiles to the Basic policy (and must be allowed
//!   as Basic).
//! - The IR uses Rust enums for the API's unions; mapping an API block with two union members set fails
//!   instead of guessing.
//! - Allow-lists are checked on the user's blocks ([`AllowList::map_pod_group`]) and again on the resolved
//!   config (default + user + callbacks); an unset disruption mode is not checked (the API defaults it to
//!   `single`). A builder with no allow-list allows nothing. [`WorkloadBuilder::allow_composite`] gives
//!   composite items a list of their own; without it every level uses the one list.
//! - A child of an `all` composite must itself resolve to `all`; an unset child mode is not silently
//!   inherited (it would be `single` once defaulted) but rejected.
//! - Every item of a tree must resolve to the same priority class (the alpha single-priority rule).
//! - Resource claims on a composite item are rejected (CompositePodGroups carry none).
//! - The Workload's owner must be a controller reference (`controller: true`) with a well-formed `apiVersion`
//!   ([`validation::parse_group_version`]).
//! - Errors about an item are reported at the paths the controller gave it (config, name, children), so users
//!   see the path of the field they wrote; otherwise at the compiled template's path.
//! - An item with an empty name (at any depth) fails before resolution: no callback runs on such a tree.
//! - Callbacks see their item read-only ([`ItemView`]) and change only the resolved config.
//!
//! ## Example: the Job controller (KEP-6089 "Library Usage Example")
//! ```
//! use k8s_openapi::api::batch::v1::{Job, JobSchedulingConfiguration, JobSpec};
//! use k8s_openapi::api::scheduling::v1alpha3::{
//!     TopologyConstraint, Workload, WorkloadPodGroupAllDisruptionMode, WorkloadPodGroupDisruptionMode,
//!     WorkloadPodGroupGangSchedulingPolicy, WorkloadPodGroupSchedulingConstraints, WorkloadPodGroupSchedulingPolicy,
//! };
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
//! use workloadbuilder::*;
//!
//! /// The callback of KEP-6089: gang minCount defaults to the Job's parallelism.
//! fn default_min_count_for_job(job: &Job) -> impl Fn(&mut SchedulingConfig) + Send + Sync + 'static {
//!     let parallelism = job.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1).max(1);
//!     move |cfg| {
//!         cfg.default_gang_min_count(parallelism);
//!     }
//! }
//!
//! fn generate_workload(job: &Job) -> Result<Workload, FieldErrors> {
//!     // 1. What this controller supports, declared once.
//!     let allow = AllowList::new()
//!         .policies([PolicyOption::Basic, PolicyOption::Gang])
//!         .disruption_modes([DisruptionModeOption::Single, DisruptionModeOption::All]);
//!     // 2. The user's block, validated with it and mapped to the IR, errors under `spec.scheduling`.
//!     let path = FieldPath::new("spec").child("scheduling");
//!     let scheduling = job.spec.as_ref().and_then(|s| s.scheduling.as_ref());
//!     let user = allow.map_pod_group(scheduling.map(PodGroupBlock::from), &path)?;
//!     // 3. A flat tree: one leaf, Basic by default, minCount defaulted by callback.
//!     let name = job.metadata.name.clone().unwrap_or_default();
//!     let root = WorkloadItem::new(format!("{name}-pgt-0"))
//!         .with_default(SchedulingConfig::basic())
//!         .with_user_config(user)
//!         .with_callback(default_min_count_for_job(job))
//!         .with_config_path(path);
//!     // 4. Compile.
//!     let owner = OwnerReference {
//!         api_version: "batch/v1".into(),
//!         kind: "Job".into(),
//!         name: name.clone(),
//!         uid: job.metadata.uid.clone().unwrap_or_default(),
//!         controller: Some(true),
//!         block_owner_deletion: Some(true),
//!     };
//!     WorkloadBuilder::new(root)
//!         .allow(allow)
//!         .build(&generate_workload_name(&owner), job.metadata.namespace.as_deref().unwrap_or("default"), &owner)
//! }
//!
//! // KEP-6089 Example 1: gang (minCount from parallelism), zone topology, atomic disruption.
//! let mut job = Job::default();
//! job.metadata.name = Some("train".into());
//! job.metadata.namespace = Some("ml".into());
//! job.metadata.uid = Some("uid-1".into());
//! job.spec = Some(JobSpec {
//!     parallelism: Some(4),
//!     completions: Some(4),
//!     scheduling: Some(JobSchedulingConfiguration {
//!         scheduling_policy: Some(WorkloadPodGroupSchedulingPolicy {
//!             basic: None,
//!             gang: Some(WorkloadPodGroupGangSchedulingPolicy { min_count: None }),
//!         }),
//!         scheduling_constraints: Some(WorkloadPodGroupSchedulingConstraints {
//!             topology: Some(vec![TopologyConstraint { key: "topology.kubernetes.io/zone".into() }]),
//!         }),
//!         disruption_mode: Some(WorkloadPodGroupDisruptionMode {
//!             all: Some(WorkloadPodGroupAllDisruptionMode(serde_json::json!({}))),
//!             single: None,
//!         }),
//!         resource_claims: None,
//!     }),
//!     ..Default::default()
//! });
//! let workload = generate_workload(&job).unwrap();
//! assert_eq!(workload.metadata.name.as_deref(), Some("train-647cf7d9"));
//! let template = &workload.spec.pod_group_templates.as_ref().unwrap()[0];
//! assert_eq!(template.name, "train-pgt-0");
//! assert_eq!(template.scheduling_policy.gang.as_ref().unwrap().min_count, 4);
//! assert!(template.disruption_mode.as_ref().unwrap().all.is_some());
//!
//! // The same Job asking for `all` with Basic is rejected, with the user's field path.
//! job.spec.as_mut().unwrap().scheduling.as_mut().unwrap().scheduling_policy = None;
//! let errs = generate_workload(&job).unwrap_err();
//! assert_eq!(
//!     errs.to_string(),
//!     "spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the Basic scheduling policy"
//! );
//! ```
//!
//! ## Example: a JobSet-style composite tree and its runtime groups
//! A gang of gangs at the root (`minGroupCount` = number of child groups, by callback), one leaf per
//! replicated job.
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
//! use workloadbuilder::*;
//!
//! fn main() -> Result<(), FieldErrors> {
//!     let replicated_jobs = [("driver", 1, 1), ("workers", 4, 8)]; // (name, replicas, parallelism)
//!     let children = replicated_jobs.iter().map(|(name, _, parallelism)| {
//!         let parallelism = *parallelism;
//!         WorkloadItem::new(*name)
//!             .with_default(SchedulingConfig::gang(None))
//!             .with_callback(move |cfg| { cfg.default_gang_min_count(parallelism); })
//!     });
//!     let child_groups: i32 = replicated_jobs.iter().map(|(_, replicas, _)| replicas).sum();
//!     let root = WorkloadItem::new("trainer")
//!         .with_default(SchedulingConfig::gang(None).with_topology("kwas.dev/block"))
//!         .with_callback(move |cfg| { cfg.default_gang_min_count(child_groups); })
//!         .with_children(children);
//!     let owner = OwnerReference {
//!         api_version: "jobset.x-k8s.io/v1alpha2".into(),
//!         kind: "JobSet".into(),
//!         name: "trainer".into(),
//!         uid: "uid-2".into(),
//!         controller: Some(true),
//!         block_owner_deletion: Some(true),
//!     };
//!     let allow = AllowList::new()
//!         .policies([PolicyOption::Basic, PolicyOption::Gang])
//!         .disruption_modes([DisruptionModeOption::Single, DisruptionModeOption::All]);
//!     let workload = WorkloadBuilder::new(root).allow(allow).build("trainer-wl", "default", &owner)?;
//!     let root = &workload.spec.composite_pod_group_templates.as_ref().unwrap()[0];
//!     assert_eq!(root.scheduling_policy.gang.as_ref().unwrap().min_group_count, 5);
//!     let leaves = root.pod_group_templates.as_ref().unwrap();
//!     assert_eq!(leaves.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["driver", "workers"]);
//!     assert_eq!(leaves[1].scheduling_policy.gang.as_ref().unwrap().min_count, 8);
//!     assert!(validation::validate_workload(&workload).is_empty());
//!
//!     // Runtime groups: the root CompositePodGroup, then one PodGroup per child Job under it. The template
//!     // is a `&str`, the names are `GroupName`s: they cannot be swapped; `?` converts instantiate errors.
//!     let groups = ExistingWorkloadBuilder::new(&workload).with_owner(owner);
//!     let root_name = generate_pod_group_name(TemplateKey { workload: "trainer-wl", template: "trainer" });
//!     let cpg = groups.new_composite_pod_group("trainer", &root_name, None)?;
//!     let pg = groups.new_pod_group("workers", &GroupName::new("trainer-workers").child(0), Some(&root_name))?;
//!     assert_eq!(pg.spec.parent_composite_pod_group_name.as_deref(), Some(root_name.as_str()));
//!     assert_eq!(cpg.spec.workload_ref.template_name, "trainer");
//!     Ok(())
//! }
//! ```

#![warn(missing_docs)]

mod annotations;
mod block;
mod builder;
mod existing;
mod field;
pub mod job;
mod mapconfig;
pub mod messages;
mod names;
mod podgroup;
pub mod porting;
mod resolve;
mod sites;
pub mod sync;
mod types;
pub mod validation;

pub use annotations::{
    DownwardMapping, GROUP_TEMPLATE_NAME, PARENT_COMPOSITE_POD_GROUP, PARENT_COMPOSITE_POD_GROUP_ALT,
};
pub use block::{CompositeBlock, PodGroupBlock};
pub use builder::WorkloadBuilder;
pub use existing::ExistingWorkloadBuilder;
pub use field::{BadValue, ErrorOrigin, FieldError, FieldErrorType, FieldErrors, FieldPath, Stage};
pub use names::{
    GroupName, OwnerKey, TemplateKey, generate_pod_group_name, generate_pod_group_name_for_owner,
    generate_workload_name, safe_hash,
};
pub use podgroup::{InstantiateError, TemplateRef, find_template, new_composite_pod_group, new_pod_group};
pub use types::{
    AllowList, Callback, Check, Disruption, DisruptionModeOption, GangPolicy, ItemView, PolicyOption, ResolvedItem,
    ResourceClaim, SchedulingConfig, SchedulingConstraints, SchedulingPolicy, Source, Sources, WorkloadItem,
};

/// The controller author's guide (`docs/library.md`), compiled and run with the doctests so its example
/// stays in sync with the crate.
#[cfg(doctest)]
#[doc = include_str!("../../docs/library.md")]
mod library_guide {}
