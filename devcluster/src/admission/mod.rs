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

// ----- names -----

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(crate) const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Whether `s` is a DNS-1123 label.
pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(|p| !p.is_empty() && p.len() <= 63 && is_dns_label(p))
}

fn validate_name(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let name = meta::name(obj);
    let cause = match res.strategy.name_rule() {
        NameRule::Label if !is_dns_label(name) => Some(LABEL_MSG),
        NameRule::Subdomain if !is_dns_subdomain(name) => Some(SUBDOMAIN_MSG),
        _ => None,
    };
    if let Some(msg) = cause {
        return Err(ApiError::invalid(
            &res.group,
            &res.kind,
            name,
            vec![FieldCause::invalid("metadata.name", &json!(name), msg)],
        ));
    }
    let mut causes = Vec::new();
    validate_labels(obj, &mut causes);
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, name, causes));
    }
    Ok(())
}

fn validate_labels(obj: &Value, causes: &mut Vec<FieldCause>) {
    for (k, v) in meta::string_map(obj, "labels") {
        let (prefix, name) = match k.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, k.as_str()),
        };
        let name_ok = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && name.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
        if !name_ok || prefix.is_some_and(|p| !is_dns_subdomain(p)) {
            causes.push(FieldCause::invalid(
                "metadata.labels",
                &json!(k),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ));
        }
        let value_ok = v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && (v.is_empty()
                || (v.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
                    && v.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())));
        if !value_ok {
            causes.push(FieldCause::invalid(
                "metadata.labels",
                &json!(v),
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ));
        }
    }
}
