//! What the server serves: one [`ResourceInfo`] per served group / version / resource, with the discovery
//! facts clients read (kind, namespaced, verbs, short names, categories, subresources), where its objects
//! are stored, and the [`Strategy`] that holds everything particular to its kind. The generic layers (the
//! API operations, watch, patch and apply, HTTP, discovery, Tables) read these and never look at a kind.

pub(crate) mod conversion;
pub(crate) mod decode;
mod registry;
mod strategy;

use std::sync::Arc;

use serde_json::Value;

pub(crate) use crate::store::GroupResource;
pub(crate) use registry::Registry;
pub(crate) use strategy::{
    AdmitContext, ApiSettings, DEFAULT_SIM_DISK_ATTACH_LIMIT, DynStrategy, Effect, Facts, NameRule, Object, OnDelete,
    Operation, PlainStatus, Propagation, StatusStrategy, Strategy, Subresource, SubresourceOp, age_column, column,
    name_column,
};

/// One additional printer column of a custom resource (`kubectl get` output).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type (`string`, `integer`, `date`, ...).
    pub type_: String,
    /// JSONPath-like path into the object (`.spec.replicas`).
    pub json_path: String,
    /// Priority: 0 columns always show, others only with `-o wide`.
    pub priority: i64,
    /// Description for the Table column definition.
    pub description: String,
}

/// Everything the server knows about one served group / version / resource.
#[derive(Clone, Debug)]
pub(crate) struct ResourceInfo {
    /// API group (`""` for core).
    pub group: String,
    /// Served version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural name (the URL segment).
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// kubectl short names.
    pub short_names: Vec<String>,
    /// Categories (`all`, ...).
    pub categories: Vec<String>,
    /// Whether a `status` subresource is served (and the main resource ignores status changes).
    pub status_subresource: bool,
    /// Where the objects are stored; events.k8s.io events share core events' storage.
    pub storage: GroupResource,
    /// For custom resources: the version's OpenAPI v3 schema (pruning, defaulting).
    pub schema: Option<Value>,
    /// For custom resources: the version's `x-kubernetes-validations` rules, compiled once when the CRD
    /// is written (and dropped with it), `None` when it declares none.
    pub rules: Option<Arc<kwas_cel::crd::CompiledSchema>>,
    /// For custom resources: additional printer columns.
    pub printer_columns: Vec<PrinterColumn>,
    /// For custom resources: extra selectable fields (`.spec.foo` paths).
    pub selectable_fields: Vec<String>,
    /// Everything particular to the kind.
    pub strategy: Arc<dyn DynStrategy>,
    /// How writes through the `status` subresource are admitted (when [`ResourceInfo::status_subresource`]).
    pub status_strategy: Arc<dyn StatusStrategy>,
    /// A custom resource's conversion webhook (its CRD's `spec.conversion.strategy: Webhook`).
    pub conversion: Option<Arc<conversion::WebhookConversion>>,
}

impl ResourceInfo {
    /// A built-in resource stored under its own group and plural; the fields kinds rarely set start
    /// empty (see the builder methods).
    pub fn builtin(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        strategy: impl Strategy,
    ) -> Self {
        ResourceInfo {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            storage: GroupResource::new(group, plural),
            schema: None,
            rules: None,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
            strategy: Arc::new(strategy),
            status_strategy: Arc::new(PlainStatus),
            conversion: None,
        }
    }

    /// With kubectl short names.
    pub fn short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// In the `all` category (`kubectl get all`).
    pub fn in_all(mut self) -> Self {
        self.categories = vec!["all".into()];
        self
    }

    /// With a `status` subresource whose writes need no more than the generic reset of everything but
    /// `status` ([`PlainStatus`]).
    pub fn with_status(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// With a `status` subresource admitted by `status`.
    pub fn with_status_strategy(mut self, status: impl StatusStrategy + 'static) -> Self {
        self.status_subresource = true;
        self.status_strategy = Arc::new(status);
        self
    }

    /// Stored as another resource (events.k8s.io events live with core events).
    pub fn stored_as(mut self, group: &str, plural: &str) -> Self {
        self.storage = GroupResource::new(group, plural);
        self
    }

    /// The Table columns of a custom resource: `Name`, its CRD's `additionalPrinterColumns`, and `Age`
    /// unless the CRD has its own (apiextensions-apiserver's Table convertor).
    pub fn printer_column_definitions(&self) -> Vec<Value> {
        let mut cols = vec![name_column()];
        for c in &self.printer_columns {
            cols.push(serde_json::json!({"name": c.name, "type": c.type_, "format": "", "description": c.description, "priority": c.priority}));
        }
        if !self.has_age_column() {
            cols.push(age_column());
        }
        cols
    }

    /// The cells of a custom resource's Table row, matching [`ResourceInfo::printer_column_definitions`].
    pub fn printer_cells(&self, obj: &Value) -> Vec<Value> {
        let text = |s: String| Value::String(s);
        let mut out = vec![text(crate::meta::name(obj).to_string())];
        for c in &self.printer_columns {
            let v = crate::meta::json_path(obj, &c.json_path)
                .cloned()
                .unwrap_or(Value::Null);
            let cell = if c.type_ == "date" {
                match v.as_str() {
                    Some(t) => text(crate::meta::age_of(Some(t))),
                    None => text("<unknown>".to_string()),
                }
            } else {
                v
            };
            out.push(cell);
        }
        if !self.has_age_column() {
            out.push(text(crate::meta::age_of(crate::meta::meta_str(
                obj,
                "creationTimestamp",
            ))));
        }
        out
    }

    fn has_age_column(&self) -> bool {
        self.printer_columns.iter().any(|c| c.name.eq_ignore_ascii_case("age"))
    }

    /// `group/version`, or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The group resource of this entry (its URL), which may differ from [`ResourceInfo::storage`].
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// The verbs the main resource supports.
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.strategy.ephemeral() {
            return vec!["create"];
        }
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }

    /// Whether serving the stored `obj` through this resource needs a conversion.
    pub fn needs_conversion(&self, obj: &Value) -> bool {
        self.strategy.converts_fields()
            || obj
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_none_or(|v| v != self.api_version())
            || obj.get("kind").and_then(Value::as_str).is_none_or(|k| k != self.kind)
    }

    /// The stored object as a client of this resource sees it (converted by the CRD's webhook when it
    /// was written through another version).
    pub fn present(&self, stored: &Value) -> Value {
        let mut out = if self.strategy.converts_fields() {
            self.strategy.fields_from_storage(stored)
        } else if let Some(conversion) = self.conversion.as_ref().filter(|_| self.needs_conversion(stored)) {
            match conversion.convert(stored, &self.api_version()) {
                Ok(converted) => converted,
                Err(e) => {
                    // kube-apiserver fails the read; devcluster's readers cannot fail, so they get the
                    // stored fields under this version (and the error is logged).
                    tracing::error!(error = %e, kind = %self.kind, name = %crate::meta::name(stored), "conversion failed on read");
                    stored.clone()
                }
            }
        } else {
            stored.clone()
        };
        set_type(&mut out, &self.api_version(), &self.kind);
        out
    }

    /// The object in its storage form, from what a client of this resource sent. Through a custom
    /// resource version with a conversion webhook that is not the storage version, the object must convert
    /// to the storage version (kube-apiserver stores it so; devcluster keeps it as written, see
    /// [`conversion`]).
    pub fn to_storage(&self, obj: Value) -> Result<Value, crate::error::ApiError> {
        let mut out = if self.strategy.converts_fields() {
            self.strategy.fields_to_storage(obj)
        } else {
            obj
        };
        // An object in another version of this resource (a stored object a status write or the server's
        // own controllers carry through this resource) is converted to this version first, never just
        // relabelled.
        if let Some(conversion) = &self.conversion
            && let Some(own) = out.get("apiVersion").and_then(Value::as_str)
            && own != self.api_version()
            && own.split_once('/').is_some_and(|(g, _)| g == self.group)
        {
            out = conversion
                .convert(&out, &self.api_version())
                .map_err(crate::error::ApiError::internal)?;
        }
        match self.strategy.storage_type() {
            Some((api_version, kind)) => set_type(&mut out, api_version, kind),
            None => set_type(&mut out, &self.api_version(), &self.kind),
        }
        if let Some(conversion) = &self.conversion
            && conversion.storage_api_version != self.api_version()
        {
            conversion
                .convert(&out, &conversion.storage_api_version)
                .map_err(crate::error::ApiError::internal)?;
        }
        Ok(out)
    }
}

fn set_type(obj: &mut Value, api_version: &str, kind: &str) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(api_version.to_string()));
        m.insert("kind".into(), Value::String(kind.to_string()));
    }
}

/// Splits `group/version` (or `version` for core) into its parts.
pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}
