//! Admission, as kube-apiserver runs it for every create and update: the kind's storage conversion, name
//! and label validation, then the kind's [`Strategy`](crate::resource::Strategy) steps in order: typed
//! decoding, defaulting and server-owned fields, mutating admission plugins, validation. The helpers kinds
//! share live here: typed decoding with unknown-field reporting ([`decode`]), the Priority admission plugin
//! ([`priority`]) and structural schemas of custom resources ([`schema`]).

pub(crate) mod decode;
pub(crate) mod priority;
pub(crate) mod schema;

use serde_json::{Value, json};

use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::{AdmitContext, NameRule, Operation, ResourceInfo};
use workloadbuilder::validation::strings;

/// Admits an object: converts it to its storage form, then decodes, defaults, mutates and validates it
/// in place.
pub(crate) fn admit(
    cx: &mut AdmitContext<'_>,
    res: &ResourceInfo,
    old: Option<&Value>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    *obj = res.to_storage(std::mem::take(obj));
    validate_name(res, obj)?;
    let strategy = res.strategy.clone();
    strategy.decode(cx, res, obj)?;
    strategy.prepare(cx, res, old, obj)?;
    strategy.admit(cx, res, old, obj)?;
    match (cx.op, old) {
        (Operation::Update, Some(old)) => strategy.validate_update(cx, res, old, obj),
        _ => strategy.validate(cx, res, obj),
    }
}

// ----- names and labels -----

/// `metadata.name` per the kind's rule, then the labels, with apimachinery's messages (one cause per
/// problem, as kube-apiserver reports them).
fn validate_name(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let name = meta::name(obj);
    let problems = match res.strategy.name_rule() {
        NameRule::Label => strings::is_dns1123_label(name),
        NameRule::Subdomain => strings::is_dns1123_subdomain(name),
        NameRule::Unchecked => Vec::new(),
    };
    let mut causes: Vec<FieldCause> = problems
        .iter()
        .map(|msg| FieldCause::invalid("metadata.name", &json!(name), msg))
        .collect();
    if causes.is_empty() {
        validate_labels(obj, &mut causes);
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&res.group, &res.kind, name, causes))
    }
}

/// kube-apiserver's limit on the total size of an object's annotations (keys and values).
const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

fn validate_labels(obj: &Value, causes: &mut Vec<FieldCause>) {
    let annotations = meta::string_map(obj, "annotations");
    let total = annotations
        .iter()
        .fold(0usize, |n, (k, v)| n.saturating_add(k.len()).saturating_add(v.len()));
    if total > MAX_ANNOTATION_BYTES {
        causes.push(FieldCause::too_long("metadata.annotations", MAX_ANNOTATION_BYTES));
    }
    for (k, v) in meta::string_map(obj, "labels") {
        for msg in strings::is_qualified_name(&k) {
            causes.push(FieldCause::invalid("metadata.labels", &json!(k), &msg));
        }
        for msg in strings::is_valid_label_value(&v) {
            causes.push(FieldCause::invalid("metadata.labels", &json!(v), &msg));
        }
    }
}
