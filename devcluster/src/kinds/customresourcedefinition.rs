//! apiextensions.k8s.io/v1 CustomResourceDefinition: validated and established on write; its after-write
//! hook serves the resources it defines (every served version, status subresource, printer columns,
//! selectable fields) and its removal stops serving them. Deleting a CRD first deletes its custom resources
//! (the `customresourcecleanup.apiextensions.k8s.io` finalizer).

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::custom::{CustomResourceStatus, CustomResourceStrategy};
use super::print::{col, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::conversion::{WebhookAddress, WebhookConversion};
use crate::resource::{
    AdmitContext, Effect, Facts, GroupResource, NameRule, OnDelete, Operation, PrinterColumn, ResourceInfo,
    StatusStrategy, Strategy,
};
use crate::work::GcItem;

/// The annotation a CRD in a protected group (`*.k8s.io`, `*.kubernetes.io`) must carry.
const API_APPROVED: &str = "api-approved.kubernetes.io";

/// The CRD finalizer removed once all custom resources are gone.
pub(crate) const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        CrdStrategy,
    )
    .short_names(&["crd", "crds"])
    .with_status_strategy(DefinitionStatus)
}

#[derive(Debug)]
struct CrdStrategy;

impl Strategy for CrdStrategy {
    type Object = CustomResourceDefinition;

    fn facts(&self) -> Facts {
        Facts {
            keeps_status_on_create: true,
            name_rule: NameRule::Unchecked,
            ..Facts::PLAIN
        }
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let old = cx.old;
        fill_status(cx.op, old, obj);
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        check(res, None, obj)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        check(res, Some(old), obj)
    }

    fn on_delete(&self, obj: &mut Value, effects: &mut Vec<Effect>) -> OnDelete {
        if !meta::is_deleting(obj) {
            let mut f = meta::finalizers(obj);
            if !f.iter().any(|x| x == CRD_CLEANUP_FINALIZER) {
                f.push(CRD_CLEANUP_FINALIZER.to_string());
            }
            meta::set_finalizers(obj, f);
        }
        effects.push(Effect::Gc(GcItem::CrdCleanup(meta::name(obj).to_string())));
        OnDelete::Proceed
    }

    fn after_write(&self, stored: &Arc<Value>, effects: &mut Vec<Effect>) {
        effects.push(serve(stored));
    }

    fn after_remove(&self, removed: &Value, effects: &mut Vec<Effect>) {
        let at = |p: &str| removed.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
        effects.push(Effect::ServeCustom {
            group: at("/spec/group"),
            plural: at("/spec/names/plural"),
            infos: Vec::new(),
            preferred: None,
        });
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Created At", "date", 0, "The time the CRD was created."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            text_cell(meta::meta_str(obj, "creationTimestamp").unwrap_or("")),
        ]
    }
}

/// CRDs' status writes: the server-owned conditions and accepted names are kept, and the definition is checked as on any update.
#[derive(Debug)]
struct DefinitionStatus;

impl StatusStrategy for DefinitionStatus {
    fn prepare_for_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        fill_status(cx.op, Some(old), obj);
        Ok(())
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        check(res, Some(old), obj)
    }
}

/// `spec.conversion` as kube-apiserver validates it (`ValidateCustomResourceConversion`).
fn check_conversion(spec: &Value, causes: &mut Vec<FieldCause>) {
    let Some(conversion) = spec.get("conversion").filter(|c| !c.is_null()) else {
        return;
    };
    let strategy = conversion.get("strategy").and_then(Value::as_str).unwrap_or("");
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    match strategy {
        "None" => {
            if webhook.is_some() {
                causes.push(FieldCause::forbidden(
                    "spec.conversion.webhook",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        "Webhook" => {
            let config = webhook.and_then(|w| w.get("clientConfig")).filter(|c| !c.is_null());
            match config {
                None => causes.push(FieldCause::required(
                    "spec.conversion.webhook.clientConfig",
                    "required when strategy is set to Webhook",
                )),
                Some(c) => {
                    let has = |k: &str| c.get(k).is_some_and(|v| !v.is_null());
                    if has("url") == has("service") {
                        causes.push(FieldCause::required(
                            "spec.conversion.webhook.clientConfig",
                            "exactly one of url or service is required",
                        ));
                    }
                }
            }
            let versions = meta::string_list(webhook.and_then(|w| w.get("conversionReviewVersions")));
            if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
                causes.push(FieldCause::invalid(
                    "spec.conversion.webhook.conversionReviewVersions",
                    &json!(versions),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
        other => causes.push(FieldCause::not_supported(
            "spec.conversion.strategy",
            &json!(other),
            &["None", "Webhook"],
        )),
    }
}

/// The CRD's validation (with `old` on updates: immutable group and plural).
fn check(res: &ResourceInfo, old: Option<&Value>, obj: &Value) -> Result<(), ApiError> {
    let name = meta::name(obj).to_string();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let plural = spec.pointer("/names/plural").and_then(Value::as_str).unwrap_or("");
    let kind = spec.pointer("/names/kind").and_then(Value::as_str).unwrap_or("");
    let scope = spec.get("scope").and_then(Value::as_str).unwrap_or("");
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut causes = Vec::new();
    if name != format!("{plural}.{group}") {
        causes.push(FieldCause::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|p| group == *p || group.ends_with(&format!(".{p}")));
    if protected && meta::annotation(obj, API_APPROVED).is_none_or(str::is_empty) {
        causes.push(FieldCause::required(
            format!("metadata.annotations[{API_APPROVED}]"),
            &format!(
                "protected groups must have approval annotation {API_APPROVED:?}, see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        ));
    }
    // A CRD never shadows or replaces what the server itself serves (its removal would stop serving it).
    if super::builtin_resources()
        .iter()
        .any(|b| b.group == group && (b.plural == plural || b.storage.resource == plural))
    {
        causes.push(FieldCause::invalid(
            "spec.names.plural",
            &json!(plural),
            &format!("{plural}.{group} is a built-in resource of this server"),
        ));
    }
    if !group.contains('.') {
        causes.push(FieldCause::invalid(
            "spec.group",
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        causes.push(FieldCause::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        causes.push(FieldCause::required("spec.names.kind", ""));
    }
    if !matches!(scope, "Namespaced" | "Cluster") {
        causes.push(FieldCause::not_supported(
            "spec.scope",
            &json!(scope),
            &["Cluster", "Namespaced"],
        ));
    }
    if versions.is_empty() {
        causes.push(FieldCause::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let storage: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .collect();
    if !versions.is_empty() && storage.len() != 1 {
        causes.push(FieldCause::invalid(
            "spec.versions",
            &json!(versions.len()),
            "must have exactly one version marked as storage version",
        ));
    }
    check_conversion(&spec, &mut causes);
    // CEL rules compile and fit their cost budgets (checked again only when a schema changed).
    let schemas = |crd: &Value| {
        crd.pointer("/spec/versions").and_then(Value::as_array).map(|vs| {
            vs.iter()
                .map(|v| v.pointer("/schema/openAPIV3Schema").cloned())
                .collect::<Vec<_>>()
        })
    };
    if old.is_none_or(|o| schemas(o) != schemas(obj)) {
        causes.extend(crate::admission::rules::crd_errors(&spec));
    }
    if let Some(old) = old {
        for f in ["group"] {
            if old["spec"].get(f) != spec.get(f) {
                causes.push(FieldCause::immutable(
                    format!("spec.{f}"),
                    spec.get(f).unwrap_or(&Value::Null),
                ));
            }
        }
        if old.pointer("/spec/names/plural") != spec.pointer("/names/plural") {
            causes.push(FieldCause::immutable(
                "spec.names.plural",
                spec.pointer("/names/plural").unwrap_or(&Value::Null),
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, &name, causes));
    }
    Ok(())
}

/// Fills the names' defaults and the status (names accepted, established, stored versions).
fn fill_status(op: Operation, old: Option<&Value>, obj: &mut Value) {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let kind = spec.pointer("/names/kind").and_then(Value::as_str).unwrap_or("");
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .collect();
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut)
    {
        names.entry("singular").or_insert(json!(kind.to_lowercase()));
        names.entry("listKind").or_insert(json!(format!("{kind}List")));
    }
    let storage_version = storage
        .first()
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let now = meta::now_rfc3339();
    let mut stored = old
        .and_then(|o| o.pointer("/status/storedVersions"))
        .map(|v| meta::string_list(Some(v)))
        .unwrap_or_default();
    if !stored.contains(&storage_version) {
        stored.push(storage_version);
    }
    let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let transition = if op == Operation::Create {
        now.clone()
    } else {
        old.and_then(|o| o.pointer("/status/conditions/0/lastTransitionTime"))
            .and_then(Value::as_str)
            .unwrap_or(&now)
            .to_string()
    };
    obj["status"] = json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": transition},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": transition},
        ],
        "storedVersions": stored,
    });
}

/// The order of two versions by kube-aware priority, highest first (`version.CompareKubeAwareVersionStrings`):
/// GA before beta before alpha, higher major then higher minor first; versions not of the form
/// `v<major>[(alpha|beta)<minor>]` last, alphabetically.
pub(crate) fn kube_aware_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok().filter(|m| *m > 0)?;
        let tail = &rest[digits..];
        let (level, minor) = if tail.is_empty() {
            return Some((2, major, 0));
        } else if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (0, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        Some((level, major, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((la, ma, na)), Some((lb, mb, nb))) => (lb, mb, nb).cmp(&(la, ma, na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Serves the resources a stored CRD defines.
fn serve(crd: &Value) -> Effect {
    let spec = &crd["spec"];
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("").to_string();
    let names = &spec["names"];
    let plural = names.get("plural").and_then(Value::as_str).unwrap_or("").to_string();
    let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map_or_else(|| kind.to_lowercase(), str::to_string);
    let namespaced = spec.get("scope").and_then(Value::as_str) == Some("Namespaced");
    let mut infos = Vec::new();
    let storage_version = spec
        .get("versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string);
    let conversion = (spec.pointer("/conversion/strategy").and_then(Value::as_str) == Some("Webhook"))
        .then(|| spec.pointer("/conversion/webhook/clientConfig"))
        .flatten()
        .and_then(WebhookAddress::of_client_config)
        .map(|address| {
            Arc::new(WebhookConversion {
                address,
                handler: None,
                storage_api_version: format!("{group}/{}", storage_version.as_deref().unwrap_or("")),
            })
        });
    for v in spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        let version = v.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: c.get("name").and_then(Value::as_str).unwrap_or("").into(),
                        type_: c.get("type").and_then(Value::as_str).unwrap_or("string").into(),
                        json_path: c.get("jsonPath").and_then(Value::as_str).unwrap_or("").into(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        description: c.get("description").and_then(Value::as_str).unwrap_or("").into(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selectable_fields = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(|x| x.get("jsonPath").and_then(Value::as_str))
                    .map(|p| p.trim_start_matches('.').to_string())
                    .collect()
            })
            .unwrap_or_default();
        infos.push(ResourceInfo {
            group: group.clone(),
            version,
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced,
            short_names: meta::string_list(names.get("shortNames")),
            categories: meta::string_list(names.get("categories")),
            status_subresource: v.pointer("/subresources/status").is_some(),
            storage: GroupResource::new(&group, &plural),
            rules: v
                .pointer("/schema/openAPIV3Schema")
                .map(kwas_cel::crd::compile)
                .filter(|r| r.has_rules()),
            schema: Some(
                v.pointer("/schema/openAPIV3Schema")
                    .cloned()
                    .unwrap_or(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
            ),
            printer_columns,
            selectable_fields,
            strategy: Arc::new(CustomResourceStrategy),
            status_strategy: Arc::new(CustomResourceStatus),
            conversion: conversion.clone(),
        });
    }
    // Discovery lists the versions by kube-aware priority and prefers the first (kube-apiserver's
    // `sortGroupDiscoveryByKubeAwareVersion`), whatever the storage version.
    infos.sort_by(|a, b| kube_aware_order(&a.version, &b.version));
    let preferred = infos.first().map(|i| i.version.clone());
    Effect::ServeCustom {
        group,
        plural,
        infos,
        preferred,
    }
}

#[cfg(test)]
mod version_order_tests {
    use super::kube_aware_order;

    /// `TestKubeAwareVersionStrings` (k8s.io/apimachinery/pkg/version/helpers_test.go): sorted highest
    /// priority first.
    #[test]
    fn kube_aware_version_order() {
        let mut versions = vec![
            "foo10",
            "v1alpha1",
            "v2",
            "foo1",
            "v10beta3",
            "v11alpha2",
            "v1",
            "v3beta1",
            "v12alpha1",
            "v10",
            "v11beta2",
        ];
        versions.sort_by(|a, b| kube_aware_order(a, b));
        assert_eq!(
            versions,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }
}
