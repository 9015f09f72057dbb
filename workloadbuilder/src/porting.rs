//! # Porting from the Go library
//!
//! Every exported name of the upstream Go `workloadbuilder` package (`k8s.io/component-helpers/scheduling/
//! schedulingv1/workloadbuilder`) in the shapes KEP-6089 and KEP-5547 gave it over time, the Job
//! integration's helpers, and the API and apimachinery names a port meets, with their Rust counterparts.
//! Rust names follow the Go ones in Rust casing; where the behaviour differs, the note says how.
//!
//! ## The IR
//!
//! | Go | Rust | notes |
//! | --- | --- | --- |
//! | `SchedulingConfig` | [`SchedulingConfig`](crate::SchedulingConfig) | fields `policy`, `constraints`, `disruption_mode`, `resource_claims`, `priority_class_name` (later KEP text's `PriorityClassName`); `None` / empty = not set at this layer. Serializes in the API's shape |
//! | `SchedulingPolicy{Basic, Gang}` | [`SchedulingPolicy`](crate::SchedulingPolicy) | an enum: `Basic` or `Gang(GangPolicy)`; two members at once cannot be built (the map helpers refuse such input) |
//! | `BasicSchedulingPolicy` | [`SchedulingPolicy::Basic`](crate::SchedulingPolicy::Basic) | a variant |
//! | `GangSchedulingPolicy{MinCount *int32}` | [`GangPolicy`](crate::GangPolicy) `{ min_count: Option<i32> }` | at a composite the count is `minGroupCount` |
//! | `SchedulingConstraints{Topology}` | [`SchedulingConstraints`](crate::SchedulingConstraints) `{ topology }` | `TopologyConstraint` is k8s-openapi's (`key`, the KEP draft's `level`) |
//! | `DisruptionMode{Single, All}` | [`Disruption`](crate::Disruption) | an enum |
//! | `SingleDisruptionMode`, `AllDisruptionMode` | [`Disruption::Single`](crate::Disruption::Single), [`Disruption::All`](crate::Disruption::All) | variants |
//! | `ResourceClaim` | [`ResourceClaim`](crate::ResourceClaim) | |
//! | `SchedulingMode` (the KEP's name for the policy building block) | [`SchedulingPolicy`](crate::SchedulingPolicy) | the API calls it `schedulingPolicy` |
//!
//! ## The tree, callbacks and resolution
//!
//! | Go | Rust | notes |
//! | --- | --- | --- |
//! | `WorkloadItem{Name, DefaultConfig, UserConfig, Callbacks, Children}` | [`WorkloadItem`](crate::WorkloadItem) `{ name, default_config, user_config, callbacks, children, config_path }` | built with [`WorkloadItem::new`](crate::WorkloadItem::new) and `with_*`; children are owned values, not pointers |
//! | `WorkloadItem.Input` (`WorkloadInput`) | [`WorkloadItem::user_config`](crate::WorkloadItem::user_config) + [`WorkloadItem::config_path`](crate::WorkloadItem::config_path) | the controller maps its blocks itself ([`map_pod_group_config`](crate::AllowList::map_pod_group)) and says where they live; the library does not map internally |
//! | `WorkloadInput{Policy, Constraints, DisruptionMode, ResourceClaims}`, `PolicyInput`, `ConstraintsInput`, `DisruptionModeInput`, `ResourceClaimsInput` (`PodGroupData`, `PathElements`) | [`AllowList::map_pod_group`](crate::AllowList::map_pod_group) on a [`PodGroupBlock`](crate::PodGroupBlock) / [`AllowList::map_composite`](crate::AllowList::map_composite) on a [`CompositeBlock`](crate::CompositeBlock), and [`WorkloadItem::with_config_path`](crate::WorkloadItem::with_config_path) | one path per item: the sub-paths are the API member names (`schedulingPolicy`, `schedulingConstraints`, `disruptionMode`, `resourceClaims`), not configurable per block as `PathElements` are |
//! | `WorkloadItemFunc func(*WorkloadItem)` | [`Callback`](crate::Callback), added with [`WorkloadItem::with_item_callback`](crate::WorkloadItem::with_item_callback) | the callback sees the item read-only ([`ItemView`](crate::ItemView): name, depth, path, children, config path, default and user configs) and mutates the resolved config it is given, never the item |
//! | `SchedulingConfigFunc func(*SchedulingConfig)` | [`WorkloadItem::with_callback`](crate::WorkloadItem::with_callback) | both kinds run in the order added |
//! | `ResolvedConfig` (each node's) | [`ResolvedItem::config`](crate::ResolvedItem::config), from [`WorkloadBuilder::resolve`](crate::WorkloadBuilder::resolve) | the resolved tree also keeps the default, the user's config, the merge and each field's [`Source`](crate::Source) |
//!
//! ## The builder
//!
//! | Go | Rust | notes |
//! | --- | --- | --- |
//! | `WorkloadBuilder` (interface, first KEP-6089 text), `Builder` (struct, later) | [`WorkloadBuilder`](crate::WorkloadBuilder) | |
//! | `NewBuilder(root)`, `NewBuilder(root, opts)` | [`WorkloadBuilder::new`](crate::WorkloadBuilder::new)`(root)` + [`allow`](crate::WorkloadBuilder::allow) | the Workload's identity goes to `build`, the allow-list to `allow` (and [`allow_composite`](crate::WorkloadBuilder::allow_composite) for composite items) |
//! | `BuildOptions{Name, Namespace, Owner}` | the arguments of [`WorkloadBuilder::build`](crate::WorkloadBuilder::build) | the owner must be a controller reference (`controller: true`) with a well-formed `apiVersion` ([`parse_group_version`](crate::validation::parse_group_version), apimachinery's `schema.ParseGroupVersion`, stricter about an empty group or version) |
//! | `BuildOptions{AllowedPolicies, AllowedDisruptionModes}` | [`AllowList`](crate::AllowList) `{ policies, disruption_modes }` | an empty list allows nothing, as upstream |
//! | `BuildOptions{DisableDeclarativeValidation}` | none | there is no declarative validation to switch off: the builder always runs its structural and allow-list checks; the building blocks' own rules are the explicit [`AllowList::validate_pod_group`](crate::AllowList::validate_pod_group) family, which a controller calls or not |
//! | `Build(ctx, name, namespace, owner)`, `(*Builder).BuildWorkload()` | [`WorkloadBuilder::build`](crate::WorkloadBuilder::build)`(name, namespace, owner) -> Result<Workload, FieldErrors>` | no context (pure); nothing is cached: instantiate groups from the returned Workload. Errors carry their [`origin`](crate::FieldError::origin) (stage and item). An item with an empty name fails before any callback runs |
//! | "flat templates vs nested sub-group templates" (Structural Resolution) | [`WorkloadBuilder::build_flat`](crate::WorkloadBuilder::build_flat) | only `podGroupTemplates`; refuses composite levels with a gang, a topology or `all` |
//! | `(*Builder).Validate(ctx, rootPath, ValidationInput)` | [`WorkloadBuilder::validate`](crate::WorkloadBuilder::validate) `-> Result<ResolvedItem, FieldErrors>` | `rootPath` is each item's `config_path`; returns the resolved tree when valid |
//! | `ValidationInput{OldRoot}` | none in the builder | update rules live where the objects are: [`validate_workload_update`](crate::validation::validate_workload_update), [`job::validate_job_scheduling_update`](crate::job::validate_job_scheduling_update), and the impossible changes of [`sync::plan_sync`](crate::sync::plan_sync) |
//! | `NewBuilderFromExistingWorkload(workload, opts)` | [`ExistingWorkloadBuilder::new`](crate::ExistingWorkloadBuilder::new)`(&workload)` + [`with_owner`](crate::ExistingWorkloadBuilder::with_owner) | `opts.Owner` is `with_owner`; building is refused ([`ExistingWorkloadBuilder::build`](crate::ExistingWorkloadBuilder::build) returns a `Forbidden` field error); upstream's no-op `Validate` has no counterpart (check a Workload with [`validate_workload`](crate::validation::validate_workload)) |
//! | `(*Builder).NewPodGroup(podGroupName, templateName)` | [`ExistingWorkloadBuilder::new_pod_group`](crate::ExistingWorkloadBuilder::new_pod_group)`(template, &name, parent)`, or the free [`new_pod_group`](crate::new_pod_group)`(workload, template, &name, parent, owners)` | the template comes first, the name is a [`GroupName`](crate::GroupName): the two cannot be swapped |
//! | `NewCompositePodGroup` | [`new_composite_pod_group`](crate::new_composite_pod_group), [`ExistingWorkloadBuilder::new_composite_pod_group`](crate::ExistingWorkloadBuilder::new_composite_pod_group) | |
//! | the re-sync of `gang.minCount` ("recompiles ... and patches the delta") | [`sync::plan_sync`](crate::sync::plan_sync) | a pure plan (patches and impossible changes); the controller applies it |
//!
//! ## Map helpers and allow-lists
//!
//! | Go | Rust | notes |
//! | --- | --- | --- |
//! | `MapPodGroupConfig(policy, constraints, disruption, claims)` | [`AllowList::map_pod_group`](crate::AllowList::map_pod_group)`(Some(block), &path) -> Result<Option<SchedulingConfig>, FieldErrors>` | validates first (with the same allow-list the builder gets); a union block with two members, or none, is an error |
//! | `MapCompositeGroupConfig(policy, constraints, disruption)` | [`AllowList::map_composite`](crate::AllowList::map_composite) | same |
//! | `ValidateSchedulingPolicy(policy, fldPath, allowed...)` | [`AllowList::validate_pod_group`](crate::AllowList::validate_pod_group)`(&block, &path)`, [`AllowList::validate_composite`](crate::AllowList::validate_composite) | the whole block at once: policy, disruption mode, constraints, claims |
//! | `ValidateDisruptionMode(mode, fldPath, allowed...)` | the same two methods | |
//! | `SchedulingPolicyOption`: `BasicPolicy`, `GangPolicy` | [`PolicyOption`](crate::PolicyOption)`::{Basic, Gang}` | |
//! | `DisruptionModeOption`: `SingleMode`, `AllMode` | [`DisruptionModeOption`](crate::DisruptionModeOption)`::{Single, All}` | |
//!
//! ## Names and annotations
//!
//! | Go | Rust | notes |
//! | --- | --- | --- |
//! | `GeneratePodGroupName(workloadName, templateName)` | [`generate_pod_group_name`](crate::generate_pod_group_name)`(TemplateKey { workload, template })` | bit for bit; returns a [`GroupName`](crate::GroupName) |
//! | `GeneratePodGroupName(workloadName, templateName, job.UID)` (KEP-5547) | [`generate_pod_group_name_for_owner`](crate::generate_pod_group_name_for_owner)`(key, uid)`; for a Job [`job::job_owned_pod_group_name`](crate::job::job_owned_pod_group_name); from a mapping [`ExistingWorkloadBuilder::pod_group_name_for`](crate::ExistingWorkloadBuilder::pod_group_name_for) | an empty uid gives the two-argument name |
//! | `GenerateWorkloadName`, `computeWorkloadName(job)` | [`generate_workload_name`](crate::generate_workload_name)`(OwnerKey { name, uid })` (or `&OwnerReference`); [`job::job_workload_name`](crate::job::job_workload_name) | |
//! | `podGroupTemplateName(job)` | [`job::pod_group_template_name`](crate::job::pod_group_template_name) | `<job>-pgt-0` |
//! | `GroupTemplateNameAnnotation` (`scheduling.k8s.io/group-template-name`) | [`annotations::GROUP_TEMPLATE_NAME`](crate::annotations::GROUP_TEMPLATE_NAME) | written and read through [`DownwardMapping`](crate::DownwardMapping) |
//! | `ParentCompositePodGroupAnnotation` (`scheduling.k8s.io/parent-compositepodgroup`) | [`annotations::PARENT_COMPOSITE_POD_GROUP_ALT`](crate::annotations::PARENT_COMPOSITE_POD_GROUP_ALT) | KEP-6089 spells it `parent-composite-podgroup` ([`annotations::PARENT_COMPOSITE_POD_GROUP`](crate::annotations::PARENT_COMPOSITE_POD_GROUP)); [`DownwardMapping`](crate::DownwardMapping) handles both spellings |
//!
//! ## The Job integration (KEP-5547)
//!
//! | Go | Rust | notes |
//! | --- | --- | --- |
//! | `jobutil.WorkloadInput(policy, constraints, disruption, claims)`, `jobutil.WorkloadInputForJobV1(scheduling)`, `mapSchedulingInput(cfg)` | [`job::map_job_scheduling`](crate::job::map_job_scheduling)`(scheduling, path)` | the IR plus errors under `path` |
//! | `jobutil.WorkloadItemForJob(name, priorityClassName, parallelism, input)`, `buildWorkloadItem(job)` | [`job::job_workload_item`](crate::job::job_workload_item)`(&job)` | takes the whole Job; checks its blocks first |
//! | `defaultMinCountForJob(job)` | the callback of [`job::job_workload_item`](crate::job::job_workload_item), via [`SchedulingConfig::default_gang_min_count`](crate::SchedulingConfig::default_gang_min_count) | `max(1, parallelism)` |
//! | `(jm *Controller).generateWorkload(job)`, `JobReconciler.generateWorkload` | [`job::build_job_workload`](crate::job::build_job_workload)`(&job)`; the builder itself [`job::job_workload_builder`](crate::job::job_workload_builder) | |
//! | the Job's `Validate` call (`NewBuilder(...).Validate()` in `pkg/apis/batch/validation`) | [`job::validate_job_scheduling`](crate::job::validate_job_scheduling), [`job::validate_job_scheduling_update`](crate::job::validate_job_scheduling_update) | |
//! | `metav1.NewControllerRef(job, controllerKind)` | [`job::job_controller_ref`](crate::job::job_controller_ref) | `None` for a Job without a name or uid |
//!
//! ## API and apimachinery
//!
//! | Go | Rust | notes |
//! | --- | --- | --- |
//! | `schedulingv1alpha3.WorkloadPodGroup*` (`SchedulingPolicy`, `BasicSchedulingPolicy`, `GangSchedulingPolicy`, `SchedulingConstraints`, `DisruptionMode`, `SingleDisruptionMode`, `AllDisruptionMode`, `ResourceClaim`) | `k8s_openapi::api::scheduling::v1alpha3::WorkloadPodGroup*` | the empty structs are newtypes over a JSON value (`WorkloadPodGroupAllDisruptionMode(json!({}))`) |
//! | `schedulingv1alpha3.WorkloadCompositePodGroup*` | `kwas_api_types::WorkloadCompositePodGroup*` | not in k8s-openapi; same JSON shape |
//! | `batchv1.JobSchedulingConfiguration{Policy, Constraints, DisruptionMode, ResourceClaims}` | `k8s_openapi::api::batch::v1::JobSchedulingConfiguration{scheduling_policy, scheduling_constraints, disruption_mode, resource_claims}` | the API's names; `kwas compile` points KEP drafts' `policy` / `constraints` / `disruption` / `level` to them |
//! | `field.ErrorList`, `field.Error`, `field.Path` | [`FieldErrors`](crate::FieldErrors), [`FieldError`](crate::FieldError), [`FieldPath`](crate::FieldPath) | same rendering (`<path>: <Type>: <detail>`); a `FieldError` also carries its [`ErrorOrigin`](crate::ErrorOrigin) |
//! | `schema.ParseGroupVersion` | [`parse_group_version`](crate::validation::parse_group_version), [`api_group`](crate::validation::api_group) | |
//!
//! ## Example: KEP-5547's Job controller, ported
//!
//! The Go of KEP-5547 (`NewBuilder(item, BuildOptions{...}).BuildWorkload()`, then
//! `NewBuilderFromExistingWorkload(workload, opts).NewPodGroup(name, template)`), including KEP-6089's
//! non-defaulting callback `multiplyMinCountForAdjustedJob` (with checked arithmetic: Go's `MinCount *= 42`
//! would overflow silently):
//!
//! ```
//! use k8s_openapi::api::batch::v1::{Job, JobSchedulingConfiguration, JobSpec};
//! use k8s_openapi::api::scheduling::v1alpha3::{WorkloadPodGroupGangSchedulingPolicy, WorkloadPodGroupSchedulingPolicy};
//! use workloadbuilder::job::{
//!     job_allow_list, job_controller_ref, job_owned_pod_group_name, job_workload_item, job_workload_name,
//! };
//! use workloadbuilder::{ExistingWorkloadBuilder, FieldErrors, TemplateKey, WorkloadBuilder};
//!
//! /// KEP-6089's `multiplyMinCountForAdjustedJob`: a callback that is not a default.
//! fn multiply_min_count_for_adjusted_job(
//!     job: &Job,
//! ) -> impl Fn(&mut workloadbuilder::SchedulingConfig) + Send + Sync + 'static {
//!     let adjusted = job.metadata.annotations.as_ref()
//!         .and_then(|a| a.get("isAdjustedJob.example.com"))
//!         .is_some_and(|v| v == "true");
//!     move |cfg| {
//!         if let Some(g) = cfg.gang_policy_mut().filter(|_| adjusted) {
//!             g.min_count = g.min_count.and_then(|n| n.checked_mul(42));
//!         }
//!     }
//! }
//!
//! fn generate_workload(job: &Job) -> Result<k8s_openapi::api::scheduling::v1alpha3::Workload, FieldErrors> {
//!     // NewBuilder(buildWorkloadItem(job), BuildOptions{Name, Namespace, Owner, Allowed...}).BuildWorkload()
//!     let item = job_workload_item(job)?.with_callback(multiply_min_count_for_adjusted_job(job));
//!     WorkloadBuilder::new(item).allow(job_allow_list()).build(
//!         &job_workload_name(job),
//!         job.metadata.namespace.as_deref().unwrap_or("default"),
//!         &job_controller_ref(job).unwrap_or_default(),
//!     )
//! }
//!
//! let mut job = Job::default();
//! job.metadata.name = Some("train".into());
//! job.metadata.namespace = Some("ml".into());
//! job.metadata.uid = Some("uid-1".into());
//! job.metadata.annotations = Some([("isAdjustedJob.example.com".to_string(), "true".to_string())].into());
//! job.spec = Some(JobSpec {
//!     parallelism: Some(2),
//!     scheduling: Some(JobSchedulingConfiguration {
//!         scheduling_policy: Some(WorkloadPodGroupSchedulingPolicy {
//!             basic: None,
//!             gang: Some(WorkloadPodGroupGangSchedulingPolicy { min_count: None }),
//!         }),
//!         ..Default::default()
//!     }),
//!     ..Default::default()
//! });
//! let workload = generate_workload(&job).unwrap();
//! let template = &workload.spec.pod_group_templates.as_ref().unwrap()[0];
//! assert_eq!(template.scheduling_policy.gang.as_ref().unwrap().min_count, 84); // max(1, 2) * 42
//!
//! // NewBuilderFromExistingWorkload(workload, BuildOptions{Owner: job}).NewPodGroup(name, template)
//! let owner = job_controller_ref(&job).unwrap();
//! let key = TemplateKey { workload: workload.metadata.name.as_deref().unwrap(), template: &template.name };
//! let name = job_owned_pod_group_name(&job, key);
//! let builder = ExistingWorkloadBuilder::new(&workload).with_owner(owner);
//! let group = builder.new_pod_group(&template.name, &name, None).unwrap();
//! assert_eq!(group.spec.scheduling_policy.gang.unwrap().min_count, 84);
//! // ... and BuildWorkload on it is refused.
//! assert!(builder.build("train-wl", "ml", &job_controller_ref(&job).unwrap()).is_err());
//! ```
