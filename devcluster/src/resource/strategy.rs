//! The [`Strategy`] of a kind (kube-apiserver's `registry/generic` + `strategy.go`): everything particular
//! to one kind, which the generic store, API operations, HTTP layer, discovery and Table printing ask for
//! and never decide themselves. Each built-in kind implements it in its own file under `kinds/`; every
//! method has the behaviour of a plain kind as its default, so a kind overrides only what makes it
//! different.
//!
//! Admission runs, for every create and update: the kind's storage conversion, generic name and label
//! validation, [`Strategy::decode`] (typed decoding), [`Strategy::prepare`] (API defaults and the fields the
//! server owns), [`Strategy::admit`] (mutating admission plugins such as Priority), then
//! [`Strategy::validate`] or [`Strategy::validate_update`].

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
    /// The simulated CSI driver's `allocatable.count` on every CSINode.
    pub sim_disk_attach_limit: u32,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            podgroup_protection: true,
            job_scheduling_validation: true,
            sim_disk_attach_limit: DEFAULT_SIM_DISK_ATTACH_LIMIT,
        }
    }
}

/// What admission may read and where it reports: the request, the store (read-only: priority classes,
/// other objects), the settings, and which write this is.
#[derive(Debug)]
pub(crate) struct AdmitContext<'a> {
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

/// Everything particular to one kind. See the module docs for the admission order.
pub(crate) trait Strategy: Send + Sync + std::fmt::Debug {
    // ----- storage facts -----

    /// Whether objects are never stored: a create is answered with the admitted object (the access
    /// reviews), and the only verb is `create`.
    fn ephemeral(&self) -> bool {
        false
    }

    /// Whether objects carry `metadata.generation` (bumped on spec changes).
    fn has_generation(&self) -> bool {
        true
    }

    /// Whether a create keeps the `status` a client sent although a status subresource exists (nodes,
    /// namespaces and CRDs do, as upstream).
    fn keeps_status_on_create(&self) -> bool {
        false
    }

    /// The propagation policy of a delete request that names none.
    fn default_propagation(&self) -> Propagation {
        Propagation::Background
    }

    /// Whether objects may be created in a terminating namespace (events may).
    fn allowed_in_terminating_namespace(&self) -> bool {
        false
    }

    /// Which rule `metadata.name` follows.
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// Whether a field selector on `field` is supported (beyond `metadata.name` and `metadata.namespace`,
    /// which every resource supports).
    fn supports_field(&self, res: &ResourceInfo, field: &str) -> bool {
        let _ = (res, field);
        false
    }

    /// The subresources other than `status`.
    fn subresources(&self) -> &'static [Subresource] {
        &[]
    }

    /// The name of the CRD that defines the resource, for custom resources.
    fn defining_crd(&self, res: &ResourceInfo) -> Option<String> {
        let _ = res;
        None
    }

    // ----- versions -----

    /// Whether the served form's fields differ from the stored form's (not only `apiVersion`).
    fn converts_fields(&self) -> bool {
        false
    }

    /// The stored form's fields in the served form (only called when [`Strategy::converts_fields`]).
    fn fields_from_storage(&self, stored: &Value) -> Value {
        stored.clone()
    }

    /// The served form's fields in the stored form (only called when [`Strategy::converts_fields`]).
    fn fields_to_storage(&self, obj: Value) -> Value {
        obj
    }

    /// The `(apiVersion, kind)` objects are stored as, when it is not this resource's own.
    fn storage_type(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// Whether a body may name this other apiVersion (events accept `v1` on every event resource).
    fn accepts_api_version(&self, api_version: &str) -> bool {
        let _ = api_version;
        false
    }

    /// The kind's typed schema (k8s-openapi's), for the tests that populate every field of it.
    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        None
    }

    // ----- admission -----

    /// Decodes the object through its typed model (type errors are a 400; unknown fields are dropped and
    /// reported per the request's field validation). Reads nothing but the object and the request: for
    /// updates it runs without the cluster lock, with an empty `cx.store`.
    fn decode(&self, cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        let _ = (cx, res, obj);
        Ok(())
    }

    /// API defaults and the fields the server owns (upstream's defaulting and `PrepareForCreate` /
    /// `PrepareForUpdate`).
    fn prepare(
        &self,
        cx: &mut AdmitContext<'_>,
        res: &ResourceInfo,
        old: Option<&Value>,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        let _ = (cx, res, old, obj);
        Ok(())
    }

    /// Mutating admission plugins (Priority, DefaultTolerationSeconds).
    fn admit(
        &self,
        cx: &mut AdmitContext<'_>,
        res: &ResourceInfo,
        old: Option<&Value>,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        let _ = (cx, res, old, obj);
        Ok(())
    }

    /// Validation of a new object.
    fn validate(&self, cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
        let _ = (cx, res, obj);
        Ok(())
    }

    /// Validation of an update (immutable fields included).
    fn validate_update(
        &self,
        cx: &mut AdmitContext<'_>,
        res: &ResourceInfo,
        old: &Value,
        obj: &Value,
    ) -> Result<(), ApiError> {
        let _ = (cx, res, old, obj);
        Ok(())
    }

    // ----- deletion and hooks -----

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

    // ----- printing -----

    /// The Table columns `kubectl get` shows.
    fn columns(&self, res: &ResourceInfo) -> Vec<Value> {
        let _ = res;
        vec![name_column(), age_column()]
    }

    /// The cells of one Table row, matching [`Strategy::columns`].
    fn cells(&self, res: &ResourceInfo, obj: &Value) -> Vec<Value> {
        let _ = res;
        vec![
            Value::String(crate::meta::name(obj).to_string()),
            Value::String(crate::meta::age_of(crate::meta::meta_str(obj, "creationTimestamp"))),
        ]
    }
}
