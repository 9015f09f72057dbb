//! Object metadata and condition rules of kube-apiserver (`ValidateObjectMeta`, `ValidateObjectMetaUpdate`,
//! `ValidateConditions`), for the objects this crate validates and for servers that emulate the apiserver.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference};

use super::strings::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_condition_reason, is_valid_label_value,
};
use crate::field::{FieldError, FieldErrors, FieldPath};

/// Total size limit of all annotations of an object, in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
const MAX_CONDITION_REASON_LEN: usize = 1024;
const MAX_CONDITION_MESSAGE_LEN: usize = 32 * 1024;

/// How an object's name is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameFormat {
    /// A DNS-1123 subdomain (most kinds, including Workload, PodGroup, CompositePodGroup).
    Subdomain,
    /// A DNS-1123 label (namespaces, services).
    Label,
}

impl NameFormat {
    fn check(self, name: &str) -> Vec<String> {
        match self {
            Self::Subdomain => is_dns1123_subdomain(name),
            Self::Label => is_dns1123_label(name),
        }
    }
}

/// `ValidateObjectMeta`: name (or generateName), namespace presence and format, labels, annotations, owner
/// references and finalizers.
pub fn validate_object_meta(
    meta: &ObjectMeta,
    namespaced: bool,
    name_format: NameFormat,
    path: &FieldPath,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if let Some(generate_name) = meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
        // A prefix may end in '-' or '.'; check it with a trailing character added, as apimachinery does.
        let candidate = format!("{}a", generate_name);
        for msg in name_format.check(&candidate) {
            errs.push(FieldError::invalid(path.child("generateName"), generate_name, msg));
        }
    }
    match meta.name.as_deref().filter(|n| !n.is_empty()) {
        None => errs.push(FieldError::required(
            path.child("name"),
            "name or generateName is required",
        )),
        Some(name) => {
            for msg in name_format.check(name) {
                errs.push(FieldError::invalid(path.child("name"), name, msg));
            }
        }
    }
    let namespace = meta.namespace.as_deref().unwrap_or("");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required(path.child("namespace"), ""));
        } else {
            for msg in is_dns1123_label(namespace) {
                errs.push(FieldError::invalid(path.child("namespace"), namespace, msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            path.child("namespace"),
            "not allowed on this type",
        ));
    }
    errs.extend(validate_labels(meta.labels.as_ref(), &path.child("labels")));
    errs.extend(validate_annotations(
        meta.annotations.as_ref(),
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        meta.owner_references.as_deref().unwrap_or_default(),
        &path.child("ownerReferences"),
    ));
    for (i, finalizer) in meta.finalizers.iter().flatten().enumerate() {
        for msg in is_qualified_name(finalizer) {
            errs.push(FieldError::invalid(path.child("finalizers").index(i), finalizer, msg));
        }
    }
    errs
}

/// Label keys are qualified names and values are label values.
pub fn validate_labels(labels: Option<&BTreeMap<String, String>>, path: &FieldPath) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (k, v) in labels.into_iter().flatten() {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(path.clone(), k, msg));
        }
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path.key(k), v, msg));
        }
    }
    errs
}

/// Annotation keys are qualified names (case-insensitively) and all annotations fit in 256 KiB.
pub fn validate_annotations(annotations: Option<&BTreeMap<String, String>>, path: &FieldPath) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut total = 0usize;
    for (k, v) in annotations.into_iter().flatten() {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path.clone(), k, msg));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path.clone(), TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// Owner references name their apiVersion, kind, name and uid; at most one is the controller.
pub fn validate_owner_references(refs: &[OwnerReference], path: &FieldPath) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut controllers = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let p = path.index(i);
        if r.api_version.is_empty() {
            errs.push(FieldError::invalid(
                p.child("apiVersion"),
                r.api_version.as_str(),
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            errs.push(FieldError::invalid(
                p.child("kind"),
                r.kind.as_str(),
                "kind must not be empty",
            ));
        }
        if r.name.is_empty() {
            errs.push(FieldError::invalid(
                p.child("name"),
                r.name.as_str(),
                "name must not be empty",
            ));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::invalid(
                p.child("uid"),
                r.uid.as_str(),
                "uid must not be empty",
            ));
        }
        if r.controller == Some(true) {
            controllers.push(format!("{}/{}", r.kind, r.name));
        }
    }
    if controllers.len() > 1 {
        errs.push(FieldError::invalid(
            path.clone(),
            crate::field::BadValue::Omitted,
            format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
    errs
}

/// `ValidateObjectMetaUpdate`: the new metadata is valid and name, namespace, uid and creationTimestamp did not
/// change.
pub fn validate_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    namespaced: bool,
    name_format: NameFormat,
    path: &FieldPath,
) -> FieldErrors {
    let mut errs = validate_object_meta(new, namespaced, name_format, path);
    let immutable = |errs: &mut FieldErrors, field: &str, new: Option<&str>, old: Option<&str>| {
        if new.unwrap_or("") != old.unwrap_or("") {
            errs.push(FieldError::invalid(
                path.child(field),
                new.unwrap_or(""),
                "field is immutable",
            ));
        }
    };
    immutable(&mut errs, "name", new.name.as_deref(), old.name.as_deref());
    immutable(
        &mut errs,
        "namespace",
        new.namespace.as_deref(),
        old.namespace.as_deref(),
    );
    if old.uid.is_some() {
        immutable(&mut errs, "uid", new.uid.as_deref(), old.uid.as_deref());
    }
    if old.creation_timestamp.is_some() && new.creation_timestamp != old.creation_timestamp {
        errs.push(FieldError::invalid(
            path.child("creationTimestamp"),
            crate::field::BadValue::Omitted,
            "field is immutable",
        ));
    }
    errs
}

/// `ValidateConditions`: unique types, valid type names, status True/False/Unknown, a reason in the right
/// format, bounded message.
pub fn validate_conditions(conditions: &[Condition], path: &FieldPath) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let mut seen = BTreeSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = path.index(i);
        if !seen.insert(c.type_.as_str()) {
            errs.push(FieldError::duplicate(p.child("type"), c.type_.as_str()));
        }
        for msg in is_qualified_name(&c.type_) {
            errs.push(FieldError::invalid(p.child("type"), c.type_.as_str(), msg));
        }
        if !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
            errs.push(FieldError::not_supported(
                p.child("status"),
                c.status.as_str(),
                &["False", "True", "Unknown"],
            ));
        }
        if let Some(g) = c.observed_generation.filter(|g| *g < 0) {
            errs.push(FieldError::invalid(
                p.child("observedGeneration"),
                g,
                "must be greater than or equal to zero",
            ));
        }
        if c.reason.is_empty() {
            errs.push(FieldError::required(p.child("reason"), "must be set"));
        } else {
            for msg in is_valid_condition_reason(&c.reason) {
                errs.push(FieldError::invalid(p.child("reason"), c.reason.as_str(), msg));
            }
            if c.reason.len() > MAX_CONDITION_REASON_LEN {
                errs.push(FieldError::too_long(p.child("reason"), MAX_CONDITION_REASON_LEN));
            }
        }
        if c.message.len() > MAX_CONDITION_MESSAGE_LEN {
            errs.push(FieldError::too_long(p.child("message"), MAX_CONDITION_MESSAGE_LEN));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldErrorType;

    fn meta(name: &str, ns: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: ns.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn names_and_namespaces() {
        let p = FieldPath::new("metadata");
        assert!(validate_object_meta(&meta("w-1.a", Some("ns")), true, NameFormat::Subdomain, &p).is_empty());
        let errs = validate_object_meta(&meta("", Some("ns")), true, NameFormat::Subdomain, &p);
        assert_eq!(
            errs.to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        let errs = validate_object_meta(&meta(".w", None), true, NameFormat::Subdomain, &p);
        assert!(errs.contains(FieldErrorType::Invalid, "metadata.name"));
        assert!(errs.contains(FieldErrorType::Required, "metadata.namespace"));
        let errs = validate_object_meta(&meta("n", Some("ns")), false, NameFormat::Label, &p);
        assert!(errs.contains(FieldErrorType::Forbidden, "metadata.namespace"));
    }

    #[test]
    fn labels_owners_and_updates() {
        let p = FieldPath::new("metadata");
        let mut m = meta("a", Some("ns"));
        m.labels = Some([("ok/key".to_string(), "-bad".to_string())].into());
        let owner = |name: &str| OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: name.into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: None,
        };
        m.owner_references = Some(vec![owner("a"), owner("b")]);
        let errs = validate_object_meta(&m, true, NameFormat::Subdomain, &p);
        assert!(
            errs.contains(FieldErrorType::Invalid, "metadata.labels[ok/key]"),
            "{errs}"
        );
        assert!(
            errs.contains(FieldErrorType::Invalid, "metadata.ownerReferences"),
            "{errs}"
        );

        let old = meta("a", Some("ns"));
        let errs = validate_object_meta_update(&meta("b", Some("ns")), &old, true, NameFormat::Subdomain, &p);
        assert_eq!(
            errs.to_string(),
            "metadata.name: Invalid value: \"b\": field is immutable"
        );
    }

    #[test]
    fn conditions() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let c = |t: &str, s: &str, r: &str| Condition {
            type_: t.into(),
            status: s.into(),
            reason: r.into(),
            message: String::new(),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            observed_generation: None,
        };
        let p = FieldPath::new("status").child("conditions");
        assert!(validate_conditions(&[c("PodGroupInitiallyScheduled", "True", "Scheduled")], &p).is_empty());
        let errs = validate_conditions(&[c("A", "True", "R"), c("A", "Maybe", "")], &p);
        assert!(errs.contains(FieldErrorType::Duplicate, "status.conditions[1].type"));
        assert!(errs.contains(FieldErrorType::NotSupported, "status.conditions[1].status"));
        assert!(errs.contains(FieldErrorType::Required, "status.conditions[1].reason"));
    }
}
