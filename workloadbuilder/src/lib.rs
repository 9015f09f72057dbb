//! # workloadbuilder
//!
//! The KEP-6089 translation library: a workload controller describes its workload as a tree of
//! [`WorkloadItem`]s (its own defaults, the user's scheduling intent, callbacks); the library merges,
//! defaults, validates against the controller's allow-lists and compiles the tree into a
//! `scheduling.k8s.io/v1alpha3` [`Workload`](k8s_openapi::api::scheduling::v1alpha3::Workload), then
//! instantiates the runtime CompositePodGroups and PodGroups from it. It is pure: no client, no async, no I/O.
//!
//! | step | API |
//! | --- | --- |
//! | validate the user's API blocks with the controller's allow-lists | [`validate_scheduling_policy`], [`validate_disruption_mode`], their composite twins, [`validate_scheduling_constraints`], [`validate_resource_claims`] |
//! | map the API blocks to the IR | [`map_pod_group_config`], [`map_composite_group_config`] |
//! | describe the structure | [`WorkloadItem`], [`SchedulingConfig`], [`Callback`] ([`WorkloadItem::with_callback`], [`WorkloadItem::with_item_callback`] and its [`ItemView`]) |
//! | resolve, validate, compile | [`WorkloadBuilder::resolve`] (a [`ResolvedItem`] tree with each value's [`Sources`]), [`WorkloadBuilder::validate`], [`WorkloadBuilder::build`]; [`WorkloadBuilder::build_flat`] for clusters without CompositePodGroups |
//! | name objects like upstream | [`generate_workload_name`], [`generate_pod_group_name`] |
//! | create the runtime groups | [`new_composite_pod_group`], [`new_pod_group`]; from a Workload another controller compiled, [`ExistingWorkloadBuilder`] |
//! | delegate to child controllers | [`DownwardMapping`] |
//! | re-sync a live Workload and its groups (a changed gang `minCount`) | [`sync::plan_sync`] |
//! | check objects like kube-apiserver | [`validate_workload`], [`validate_pod_group`], [`validate_composite_pod_group`] and their `_update` variants |
//! | report errors | [`FieldErrors`] of [`FieldError`]s, rendered like the apiserver's, each with its [`ErrorOrigin`] ([`Stage`] and item) |
//! | port Go code | [`porting`]: every upstream Go name and its counterpart here |
//!
//! ## Resolution
//! For every item: a deep copy of the controller's default; each top-level field the user set replaces that
//! field whole (an empty user block maps to "unset" and does not override); then the item's callbacks in
//! order. Callers' trees are never mutated. See [`resolve`].
//!
//! ## Choices this crate makes where KEP-6089 leaves them open
//! - An item whose policy is still unset after resolution compiles to the Basic policy (and must be allowed
//!   as Basic).
//! - The IR uses Rust enums for the API's unions; mapping an API block with two union members set fails
//!   instead of guessing ([`map_pod_group_config`]).
//! - Allow-lists are checked on the resolved config (default + user + callbacks); an unset disruption mode is
//!   not checked (the API defaults it to `single`). A builder with no allow-list allows nothing.
//! - A child of an `all` composite must itself resolve to `all`; an unset child mode is not silently
//!   inherited (it would be `single` once defaulted) but rejected.
//! - Every item of a tree must resolve to the same priority class (the alpha single-priority rule).
//! - Resource claims on a composite item are rejected (CompositePodGroups carry none).
//! - The Workload's owner must be a controller reference (`controller: true`).
//! - Validation errors about an item's configuration are reported under its [`WorkloadItem::config_path`]
//!   when the controller set one, so users see the path of the field they wrote.
//! - An item with an empty name (at any depth) fails before resolution: no callback runs on such a tree.
//! - The owner's `apiVersion` must parse as apimachinery's `schema.ParseGroupVersion` parses it, without an
//!   empty group or version around the `/` ([`parse_group_version`]).
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
//! const JOB_POLICIES: [PolicyOption; 2] = [PolicyOption::Basic, PolicyOption::Gang];
//! const JOB_MODES: [DisruptionModeOption; 2] = [DisruptionModeOption::Single, DisruptionModeOption::All];
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
//!     let scheduling = job.spec.as_ref().and_then(|s| s.scheduling.as_ref());
//!     let path = FieldPath::new("spec").child("scheduling");
//!     // 1. The user's block, checked against what this controller supports.
//!     let mut errs = FieldErrors::new();
//!     if let Some(s) = scheduling {
//!         errs.extend(validate_scheduling_policy(s.scheduling_policy.as_ref(), &path.child("schedulingPolicy"), &JOB_POLICIES));
//!         errs.extend(validate_disruption_mode(s.disruption_mode.as_ref(), &path.child("disruptionMode"), &JOB_MODES));
//!     }
//!     errs.into_result(())?;
//!     // 2. Map it to the IR.
//!     let user = scheduling
//!         .map(|s| map_pod_group_config(
//!             s.scheduling_policy.as_ref(),
//!             s.scheduling_constraints.as_ref(),
//!             s.disruption_mode.as_ref(),
//!             s.resource_claims.as_deref().unwrap_or_default(),
//!         ))
//!         .transpose()
//!         .map_err(|e| e.under(&path))?;
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
//!     let workload_name = generate_workload_name(&name, &owner.uid);
//!     WorkloadBuilder::new(root)
//!         .allow(AllowList::new().policies(JOB_POLICIES).disruption_modes(JOB_MODES))
//!         .build(&workload_name, job.metadata.namespace.as_deref().unwrap_or("default"), &owner)
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
//! ## Example: a JobSet-style composite tree
//! A gang of gangs at the root (`minGroupCount` = number of child groups, by callback), one leaf per
//! replicated job; the user's escape hatch (`basic: {}` at the root) would replace the default gang.
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
//! use workloadbuilder::*;
//!
//! let replicated_jobs = [("driver", 1, 1), ("workers", 4, 8)]; // (name, replicas, parallelism)
//! let children = replicated_jobs.iter().map(|(name, _, parallelism)| {
//!     let parallelism = *parallelism;
//!     WorkloadItem::new(*name)
//!         .with_default(SchedulingConfig::gang(None))
//!         .with_callback(move |cfg| { cfg.default_gang_min_count(parallelism); })
//! });
//! let child_groups: i32 = replicated_jobs.iter().map(|(_, replicas, _)| replicas).sum();
//! let root = WorkloadItem::new("trainer")
//!     .with_default(SchedulingConfig::gang(None).with_topology("kwas.dev/block"))
//!     .with_callback(move |cfg| { cfg.default_gang_min_count(child_groups); })
//!     .with_children(children);
//! let owner = OwnerReference {
//!     api_version: "kwas.dev/v1alpha1".into(),
//!     kind: "JobSet".into(),
//!     name: "trainer".into(),
//!     uid: "uid-2".into(),
//!     controller: Some(true),
//!     block_owner_deletion: Some(true),
//! };
//! let allow = AllowList::new()
//!     .policies([PolicyOption::Basic, PolicyOption::Gang])
//!     .disruption_modes([DisruptionModeOption::Single, DisruptionModeOption::All]);
//! let workload = WorkloadBuilder::new(root).allow(allow).build("trainer-wl", "default", &owner).unwrap();
//! let root = &workload.spec.composite_pod_group_templates.as_ref().unwrap()[0];
//! assert_eq!(root.scheduling_policy.gang.as_ref().unwrap().min_group_count, 5);
//! let leaves = root.pod_group_templates.as_ref().unwrap();
//! assert_eq!(leaves.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["driver", "workers"]);
//! assert_eq!(leaves[1].scheduling_policy.gang.as_ref().unwrap().min_count, 8);
//! assert!(validate_workload(&workload).is_empty());
//!
//! // Runtime groups: the root CompositePodGroup, then one PodGroup per child Job under it.
//! let root_name = generate_pod_group_name("trainer-wl", "trainer");
//! let cpg = new_composite_pod_group(&workload, "trainer", &root_name, None, vec![owner.clone()]).unwrap();
//! let pg = new_pod_group(&workload, "workers", "trainer-workers-0", Some(&root_name), vec![owner]).unwrap();
//! assert_eq!(pg.spec.parent_composite_pod_group_name.as_deref(), Some(root_name.as_str()));
//! assert_eq!(cpg.spec.workload_ref.template_name, "trainer");
//! ```

#![warn(missing_docs)]

pub mod annotations;
pub mod builder;
pub mod existing;
pub mod field;
pub mod job;
pub mod mapconfig;
pub mod names;
pub mod podgroup;
pub mod porting;
pub mod resolve;
mod sites;
pub mod sync;
pub mod types;
pub mod validation;

pub use annotations::DownwardMapping;
pub use builder::{
    FLAT_COMPOSITE_ALL, FLAT_COMPOSITE_GANG, FLAT_COMPOSITE_TOPOLOGY, GroupVersion, GroupVersionError,
    OWNER_NOT_CONTROLLER, WorkloadBuilder, api_group, parse_group_version,
};
pub use existing::ExistingWorkloadBuilder;
pub use field::{BadValue, ErrorOrigin, FieldError, FieldErrorType, FieldErrors, FieldPath, Stage};
pub use mapconfig::{map_composite_group_config, map_pod_group_config};
pub use names::{generate_pod_group_name, generate_workload_name};
pub use podgroup::{InstantiateError, TemplateRef, find_template, new_composite_pod_group, new_pod_group};
pub use types::{
    AllowList, Callback, DisruptionMode, DisruptionModeOption, GangSchedulingPolicy, ItemView, PolicyOption,
    ResolvedItem, ResourceClaim, SchedulingConfig, SchedulingConstraints, SchedulingPolicy, Source, Sources,
    WorkloadItem,
};
pub use validation::api::{
    validate_composite_pod_group, validate_composite_pod_group_status_update, validate_composite_pod_group_update,
    validate_pod_group, validate_pod_group_status_update, validate_pod_group_update, validate_workload,
    validate_workload_update,
};
pub use validation::blocks::{
    validate_composite_disruption_mode, validate_composite_scheduling_constraints,
    validate_composite_scheduling_policy, validate_disruption_mode, validate_resource_claims,
    validate_scheduling_constraints, validate_scheduling_policy,
};
pub use validation::tree::validate_tree;
