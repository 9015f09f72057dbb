//! The [`Strategy`] of a kind (kube-apiserver's `registry/generic` + `strategy.go`): everything particular
//! to one kind, which the generic store, API operations, HTTP layer, discovery and Table printing ask for
//! and never decide themselves. Each built-in kind implements it in its own file under `kinds/`: its typed
//! model ([`Strategy::Object`], which decoding and the test schema default to), its [`Facts`], and the
//! steps where it differs from a plain kind (every method has the plain kind's behaviour as its default).
//! The generic layers hold it erased, as a [`DynStrategy`].
//!
//! Admission runs, for every create and update: the kind's storage conversion, generic name and label
//! validation, [`Strategy::decode`] (typed decoding), [`Strategy::prepare`] (API defaults and the fields the
//! server owns), [`Strategy::admit`] (mutating admission plugins such as Priority), then
//! [`Strategy::validate`] or [`Strategy::validate_update`]. A write through the `status` subresource
//! decodes the same way, then runs the resource's [`StatusStrategy`] instead (upstream's `statusStrategy`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::ResourceInfo;
use crate::error::ApiError;
use crate::request::RequestContext;
use crate::store::Store;
use crate::work::GcItem;

/// The operation being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// create.
    Create,
    /// update or patch.
    Update,
}

/// The deletion propagation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Dependents are deleted in the background after the owner.
    Background,
    /// The owner stays (with `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
    /// Dependents lose their ownerReference and stay.
    Orphan,
}

/// The simulated CSI driver's default `allocatable.count` per node (`CsiConfig::attach_limit`).
pub(crate) const DEFAULT_SIM_DISK_ATTACH_LIMIT: u32 = 16;

/// Settings of the API behaviour that kinds read, and of the built-in controllers that run on the state.
#[derive(Debug, Clone)]
pub(crate) struct ApiSettings {
    /// Whether PodGroups and CompositePodGroups get the `scheduling.k8s.io/podgroup-protection` finalizer
    /// on create (and the protection controller removes it).
    pub podgroup_protection: bool,
    /// Whether a Job's `spec.scheduling` is validated on create and update (kube-apiserver with the
    /// WorkloadWithJob gate does). Off, any block is stored and the Job controller meets it.
    pub job_scheduling_validation: bool,
    /// kube-apiserver's WorkloadWithJob gate (alpha in v1.37): off, a Job's `spec.scheduling` is dropped
    /// on write as a disabled field.
    pub workload_with_job: bool,
    /// The simulated CSI driver's `allocatable.count` on every CSINode.
    pub sim_disk_attach_limit: u32,
    /// The CRD conversion webhooks, called in-process ([`super::conversion`]).
    pub conversion_webhooks: super::conversion::ConversionWebhooks,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            podgroup_protection: true,
            job_scheduling_validation: true,
            workload_with_job: true,
            sim_disk_attach_limit: DEFAULT_SIM_DISK_ATTACH_LIMIT,
            conversion_webhooks: super::conversion::ConversionWebhooks::default(),
        }
    }
}

/// What admission may read and where it reports: the resource and the object it replaces, the request, the
/// store (read-only: priority classes, other objects), the settings, and which write this is.
#[derive(Debug)]
pub(crate) struct AdmitContext<'a> {
    /// The resource written.
    pub res: &'a ResourceInfo,
    /// The stored object an update replaces (`None` for a create).
    pub old: Option<&'a Value>,
    /// The request being handled (field validation mode, warnings).
    pub request: &'a mut RequestContext,
    /// The objects as they are before this write.
    pub store: &'a Store,
    /// API behaviour settings.
    pub settings: &'a ApiSettings,
    /// Create or update.
    pub op: Operation,
    /// The `status` subresource (or another one) when the write goes through it.
    pub subresource: Option<&'a str>,
}

impl AdmitContext<'_> {
    /// Whether this write is a create.
    pub fn creating(&self) -> bool {
        self.op == Operation::Create
    }

    /// Whether this write goes through the `status` subresource.
    pub fn status(&self) -> bool {
        self.subresource == Some("status")
    }
}

/// Which rule `metadata.name` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// A DNS-1123 subdomain (most kinds).
    Subdomain,
    /// A DNS-1123 label (namespaces).
    Label,
    /// Not checked (events, CRDs: their own rules apply).
    Unchecked,
}

/// Work a write leaves for the rest of the server, carried out by the API layer after the store step.
#[derive(Debug, Clone)]
pub(crate) enum Effect {
    /// Queue work for the built-in controllers.
    Gc(GcItem),
    /// Serve exactly these resources for a custom group / plural (empty: stop serving them and drop
    /// their objects).
    ServeCustom {
        /// The custom resources' group.
        group: String,
        /// Their plural name.
        plural: String,
        /// The served versions.
        infos: Vec<ResourceInfo>,
        /// The storage version, preferred in discovery.
        preferred: Option<String>,
    },
}

/// What a kind does when a delete request arrives for one of its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnDelete {
    /// The generic deletion (finalizers, grace period, propagation).
    Proceed,
    /// The kind marked the object itself (namespaces become `Terminating`): store it and stop.
    Store,
    /// Nothing changes (a namespace already terminating).
    Unchanged,
}

/// A subresource other than `status`, as discovery lists it and the HTTP layer routes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Subresource {
    /// The URL segment (`binding`).
    pub name: &'static str,
    /// The kind of the request body (`Binding`), empty when it is the parent kind.
    pub kind: &'static str,
    /// The body kind's group.
    pub group: &'static str,
    /// The body kind's version.
    pub version: &'static str,
    /// The verbs (discovery).
    pub verbs: &'static [&'static str],
    /// What serves it.
    pub op: SubresourceOp,
}

/// The subresource operations the API layer implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubresourceOp {
    /// `POST pods/<name>/binding`.
    PodBinding,
    /// `POST pods/<name>/eviction`.
    PodEviction,
    /// `PUT namespaces/<name>/finalize`.
    NamespaceFinalize,
    /// `GET|PUT|PATCH <workloads>/<name>/scale` (autoscaling/v1 `Scale`).
    Scale,
    /// `GET pods/<name>/log` (text).
    PodLog,
}

/// One column definition of a server-side Table.
pub(crate) fn column(name: &str, ty: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": ty, "format": if name == "Name" { "name" } else { "" }, "description": description, "priority": priority})
}

/// The `Name` column.
pub(crate) fn name_column() -> Value {
    column("Name", "string", 0, "Name must be unique within a namespace.")
}

/// The `Age` column.
pub(crate) fn age_column() -> Value {
    column(
        "Age",
        "string",
        0,
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    )
}

/// The storage and API facts of a kind that are data, not behaviour (upstream's `NamespaceScoped`,
/// `AllowCreateOnUpdate`-like predicates): what the generic layers read before they ask the strategy
/// anything.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    /// Objects are never stored: a create is answered with the admitted object (the access reviews), and
    /// the only verb is `create`.
    pub ephemeral: bool,
    /// Objects carry `metadata.generation` (bumped on spec changes).
    pub has_generation: bool,
    /// A create keeps the `status` a client sent although a status subresource exists (nodes,
    /// namespaces and CRDs do, as upstream).
    pub keeps_status_on_create: bool,
    /// The propagation policy of a delete request that names none.
    pub default_propagation: Propagation,
    /// Objects may be created in a terminating namespace (core events may).
    pub allowed_in_terminating_namespace: bool,
    /// Which rule `metadata.name` follows.
    pub name_rule: NameRule,
    /// The subresources other than `status`.
    pub subresources: &'static [Subresource],
    /// The `(apiVersion, kind)` objects are stored as, when it is not this resource's own.
    pub storage_type: Option<(&'static str, &'static str)>,
    /// The served form's fields differ from the stored form's (not only `apiVersion`): see
    /// [`Strategy::fields_from_storage`].
    pub converts_fields: bool,
    /// Another apiVersion a body may name (events accept `v1` on every event resource).
    pub also_accepts: Option<&'static str>,
    /// The resource is defined by a CRD (named `<plural>.<group>`).
    pub custom: bool,
}

impl Facts {
    /// A plain kind: stored, with generations, named by DNS subdomains, background propagation.
    pub const PLAIN: Facts = Facts {
        ephemeral: false,
        has_generation: true,
        keeps_status_on_create: false,
        default_propagation: Propagation::Background,
        allowed_in_terminating_namespace: false,
        name_rule: NameRule::Subdomain,
        subresources: &[],
        storage_type: None,
        converts_fields: false,
        also_accepts: None,
        custom: false,
    };

    /// A plain kind without `metadata.generation`.
    pub const NO_GENERATION: Facts = Facts {
        has_generation: false,
        ..Facts::PLAIN
    };
}

/// The typed model a strategy decodes objects through (k8s-openapi's type; in tests it also has a
/// JSON schema, for the tests that populate every field of it).
#[cfg(not(test))]
pub(crate) trait Object: serde::de::DeserializeOwned + serde::Serialize + 'static {}
#[cfg(not(test))]
impl<T: serde::de::DeserializeOwned + serde::Serialize + 'static> Object for T {}
/// The typed model a strategy decodes objects through (k8s-openapi's type; in tests it also has a
/// JSON schema, for the tests that populate every field of it).
#[cfg(test)]
pub(crate) trait Object:
    serde::de::DeserializeOwned + serde::Serialize + schemars::JsonSchema + 'static
{
}
#[cfg(test)]
impl<T: serde::de::DeserializeOwned + serde::Serialize + schemars::JsonSchema + 'static> Object for T {}

/// Everything particular to one kind (upstream's `rest.RESTCreateStrategy` / `RESTUpdateStrategy` of a
/// kind's `registry/<group>/<kind>/strategy.go`). Writes through the `status` subresource are not
/// admitted by it but by the kind's [`StatusStrategy`]. See the module docs for the admission order.
pub(crate) trait Strategy: Send + Sync + std::fmt::Debug + 'static {
    /// The typed model objects are decoded through.
    type Object: Object;

    /// The kind's storage and API facts.
    fn facts(&self) -> Facts {
        Facts::PLAIN
    }

    /// Whether a field selector on `field` is supported (beyond `metadata.name` and `metadata.namespace`,
    /// which every resource supports, and a custom resource's selectable fields).
    fn supports_field(&self, field: &str) -> bool {
        let _ = field;
        false
    }

    /// The stored form's fields in the served form (only called when [`Facts::converts_fields`]).
    fn fields_from_storage(&self, stored: &Value) -> Value {
        stored.clone()
    }

    /// The served form's fields in the stored form (only called when [`Facts::converts_fields`]).
    fn fields_to_storage(&self, obj: Value) -> Value {
        obj
    }

    /// The kind's typed schema, for the tests that populate every field of it.
    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        Some(schemars::schema_for!(Self::Object))
    }

    /// Decodes the object through [`Strategy::Object`] (type errors are a 400; unknown fields are dropped
    /// and reported per the request's field validation). Reads nothing but the object and the request: for
    /// updates it runs without the cluster lock, with an empty `cx.store`.
    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        super::decode::typed::<Self::Object>(cx.request, cx.res, obj)
    }

    /// API defaults and the fields the server owns (upstream's defaulting and `PrepareForCreate` /
    /// `PrepareForUpdate`).
    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let _ = (cx, obj);
        Ok(())
    }

    /// Mutating admission plugins (Priority, DefaultTolerationSeconds).
    fn admit(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let _ = (cx, obj);
        Ok(())
    }

    /// Validation of a new object.
    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let _ = (cx, obj);
        Ok(())
    }

    /// Validation of an update (immutable fields included).
    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let _ = (cx, old, obj);
        Ok(())
    }

    /// The grace period a delete request gets (`requested` is the request's); 0 deletes at once.
    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> i64 {
        let _ = (obj, requested);
        0
    }

    /// A kind's own step when a delete request arrives, before the generic deletion.
    fn on_delete(&self, obj: &mut Value, effects: &mut Vec<Effect>) -> OnDelete {
        let _ = (obj, effects);
        OnDelete::Proceed
    }

    /// After an object was stored (created or updated).
    fn after_write(&self, stored: &Arc<Value>, effects: &mut Vec<Effect>) {
        let _ = (stored, effects);
    }

    /// After an object was removed for good.
    fn after_remove(&self, removed: &Value, effects: &mut Vec<Effect>) {
        let _ = (removed, effects);
    }

    /// The Table columns `kubectl get` shows (custom resources' come from their CRD's
    /// `additionalPrinterColumns` instead).
    fn columns(&self) -> Vec<Value> {
        vec![name_column(), age_column()]
    }

    /// The cells of one Table row, matching [`Strategy::columns`].
    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            Value::String(crate::meta::name(obj).to_string()),
            Value::String(crate::meta::age_of(crate::meta::meta_str(obj, "creationTimestamp"))),
        ]
    }
}

/// How a write through the `status` subresource is admitted (upstream's `statusStrategy`). The generic
/// write has already reset everything but `status` to the stored object (upstream's `PrepareForUpdate`
/// resetting the spec), so a status strategy only prepares and validates the status; neither the kind's
/// [`Strategy`] defaulting, its admission plugins nor its validation run. The default is the plain one
/// (no more steps).
pub(crate) trait StatusStrategy: Send + Sync + std::fmt::Debug {
    /// The server-owned parts of a status update (upstream's `PrepareForUpdate` of the status strategy).
    fn prepare_for_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        let _ = (cx, old, obj);
        Ok(())
    }

    /// Validation of a status update.
    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let _ = (cx, old, obj);
        Ok(())
    }
}

/// The status strategy of kinds whose status writes need no more than the generic reset.
#[derive(Debug)]
pub(crate) struct PlainStatus;

impl StatusStrategy for PlainStatus {}

/// A [`Strategy`] with its object type erased, as [`ResourceInfo`] holds it for the generic layers (the
/// API operations, HTTP, discovery, Tables), which never see a kind's type. Implemented for every
/// [`Strategy`]; the facts are read through it.
pub(crate) trait DynStrategy: Send + Sync + std::fmt::Debug {
    /// [`Strategy::facts`].
    fn facts(&self) -> Facts;
    /// [`Strategy::supports_field`].
    fn supports_field_of(&self, field: &str) -> bool;
    /// [`Strategy::fields_from_storage`].
    fn fields_from_storage(&self, stored: &Value) -> Value;
    /// [`Strategy::fields_to_storage`].
    fn fields_to_storage(&self, obj: Value) -> Value;
    /// [`Strategy::json_schema`].
    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema>;
    /// [`Strategy::decode`].
    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError>;
    /// [`Strategy::prepare`].
    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError>;
    /// [`Strategy::admit`].
    fn admit(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError>;
    /// [`Strategy::validate`].
    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError>;
    /// [`Strategy::validate_update`].
    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError>;
    /// [`Strategy::grace_period`].
    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> i64;
    /// [`Strategy::on_delete`].
    fn on_delete(&self, obj: &mut Value, effects: &mut Vec<Effect>) -> OnDelete;
    /// [`Strategy::after_write`].
    fn after_write(&self, stored: &Arc<Value>, effects: &mut Vec<Effect>);
    /// [`Strategy::after_remove`].
    fn after_remove(&self, removed: &Value, effects: &mut Vec<Effect>);
    /// [`Strategy::columns`], or a custom resource's printer columns.
    fn columns(&self, res: &ResourceInfo) -> Vec<Value>;
    /// [`Strategy::cells`], or a custom resource's printer columns' cells.
    fn cells(&self, res: &ResourceInfo, obj: &Value) -> Vec<Value>;

    /// [`Facts::ephemeral`].
    fn ephemeral(&self) -> bool {
        self.facts().ephemeral
    }
    /// [`Facts::has_generation`].
    fn has_generation(&self) -> bool {
        self.facts().has_generation
    }
    /// [`Facts::keeps_status_on_create`].
    fn keeps_status_on_create(&self) -> bool {
        self.facts().keeps_status_on_create
    }
    /// [`Facts::default_propagation`].
    fn default_propagation(&self) -> Propagation {
        self.facts().default_propagation
    }
    /// [`Facts::allowed_in_terminating_namespace`].
    fn allowed_in_terminating_namespace(&self) -> bool {
        self.facts().allowed_in_terminating_namespace
    }
    /// [`Facts::name_rule`].
    fn name_rule(&self) -> NameRule {
        self.facts().name_rule
    }
    /// [`Facts::subresources`].
    fn subresources(&self) -> &'static [Subresource] {
        self.facts().subresources
    }
    /// [`Facts::storage_type`].
    fn storage_type(&self) -> Option<(&'static str, &'static str)> {
        self.facts().storage_type
    }
    /// [`Facts::converts_fields`].
    fn converts_fields(&self) -> bool {
        self.facts().converts_fields
    }
    /// Whether a body may name this other apiVersion ([`Facts::also_accepts`]).
    fn accepts_api_version(&self, api_version: &str) -> bool {
        self.facts().also_accepts == Some(api_version)
    }
    /// Whether a field selector on `field` is supported: the kind's fields and a custom resource's
    /// selectable fields.
    fn supports_field(&self, res: &ResourceInfo, field: &str) -> bool {
        res.selectable_fields.iter().any(|f| f == field) || self.supports_field_of(field)
    }
    /// The name of the CRD that defines the resource, for custom resources.
    fn defining_crd(&self, res: &ResourceInfo) -> Option<String> {
        self.facts().custom.then(|| format!("{}.{}", res.plural, res.group))
    }
}

impl<S: Strategy> DynStrategy for S {
    fn facts(&self) -> Facts {
        Strategy::facts(self)
    }
    fn supports_field_of(&self, field: &str) -> bool {
        Strategy::supports_field(self, field)
    }
    fn fields_from_storage(&self, stored: &Value) -> Value {
        Strategy::fields_from_storage(self, stored)
    }
    fn fields_to_storage(&self, obj: Value) -> Value {
        Strategy::fields_to_storage(self, obj)
    }
    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        Strategy::json_schema(self)
    }
    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        Strategy::decode(self, cx, obj)
    }
    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        Strategy::prepare(self, cx, obj)
    }
    fn admit(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        Strategy::admit(self, cx, obj)
    }
    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        Strategy::validate(self, cx, obj)
    }
    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        Strategy::validate_update(self, cx, old, obj)
    }
    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> i64 {
        Strategy::grace_period(self, obj, requested)
    }
    fn on_delete(&self, obj: &mut Value, effects: &mut Vec<Effect>) -> OnDelete {
        Strategy::on_delete(self, obj, effects)
    }
    fn after_write(&self, stored: &Arc<Value>, effects: &mut Vec<Effect>) {
        Strategy::after_write(self, stored, effects)
    }
    fn after_remove(&self, removed: &Value, effects: &mut Vec<Effect>) {
        Strategy::after_remove(self, removed, effects)
    }
    fn columns(&self, res: &ResourceInfo) -> Vec<Value> {
        if Strategy::facts(self).custom {
            res.printer_column_definitions()
        } else {
            Strategy::columns(self)
        }
    }
    fn cells(&self, res: &ResourceInfo, obj: &Value) -> Vec<Value> {
        if Strategy::facts(self).custom {
            res.printer_cells(obj)
        } else {
            Strategy::cells(self, obj)
        }
    }
}
