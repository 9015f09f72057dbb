//! Field errors as apimachinery's `field.Error`, and the name checks of
//! `k8s.io/apimachinery/pkg/util/validation` the JobSet webhook and the Job validation ([`crate::batch`])
//! use, with their messages.

use std::fmt;

/// The kind of a [`FieldError`] (apimachinery's `field.ErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    /// `Invalid value`.
    Invalid,
    /// `Required value`.
    Required,
    /// `Forbidden`.
    Forbidden,
    /// `Too long`.
    TooLong,
    /// `Unsupported value`.
    NotSupported,
    /// `Too many`.
    TooMany,
    /// `Duplicate value`.
    Duplicate,
    /// `Internal error`: upstream's plain `fmt.Errorf` errors, which its webhook wraps without a field.
    Internal,
}

/// One validation error: its field path (`spec.replicatedJobs[0].name`; empty for upstream's errors
/// without one), the offending value and the message. `Display` renders it as Go's `field.Error`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// The kind of error.
    pub kind: ErrorType,
    /// The field path, empty when upstream gives none.
    pub field: String,
    /// The offending value, when upstream reports one.
    pub bad_value: Option<serde_json::Value>,
    /// The message.
    pub detail: String,
}

impl FieldError {
    /// `field.Invalid(field, value, detail)`.
    pub fn invalid(field: impl Into<String>, value: impl serde::Serialize, detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Invalid,
            field: field.into(),
            bad_value: serde_json::to_value(value).ok(),
            detail: detail.into(),
        }
    }

    /// `field.Invalid(field, field.OmitValueType{}, detail)`: rendered without a value.
    pub fn invalid_omitted(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Invalid,
            field: field.into(),
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// `field.NotSupported(field, value, validValues)`.
    pub fn not_supported(field: impl Into<String>, value: &str, valid: &[&str]) -> Self {
        let quoted: Vec<String> = valid.iter().map(|v| format!("{v:?}")).collect();
        Self {
            kind: ErrorType::NotSupported,
            field: field.into(),
            bad_value: Some(serde_json::Value::String(value.to_string())),
            detail: format!("supported values: {}", quoted.join(", ")),
        }
    }

    /// `field.TooMany(field, actual, max)`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        Self {
            kind: ErrorType::TooMany,
            field: field.into(),
            bad_value: Some(serde_json::Value::from(actual)),
            detail: format!("must have at most {max} items"),
        }
    }

    /// `field.Duplicate(field, value)`.
    pub fn duplicate(field: impl Into<String>, value: impl serde::Serialize) -> Self {
        Self {
            kind: ErrorType::Duplicate,
            field: field.into(),
            bad_value: serde_json::to_value(value).ok(),
            detail: String::new(),
        }
    }

    /// `field.Required(field, detail)`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Required,
            field: field.into(),
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// `field.Forbidden(field, detail)`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Forbidden,
            field: field.into(),
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// `field.TooLongMaxLength(field, value, max)`.
    pub fn too_long(field: impl Into<String>, value: &str, max: usize) -> Self {
        Self {
            kind: ErrorType::TooLong,
            field: field.into(),
            bad_value: Some(serde_json::Value::String(value.to_string())),
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// An upstream `fmt.Errorf` error without a field.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self {
            kind: ErrorType::Internal,
            field: String::new(),
            bad_value: None,
            detail: detail.into(),
        }
    }
}

impl FieldError {
    /// The message without the field path (Go's `ErrorBody`): `Invalid value: 3: must be ...`.
    pub fn body(&self) -> String {
        let mut out = match self.kind {
            ErrorType::Invalid | ErrorType::NotSupported | ErrorType::TooMany | ErrorType::Duplicate => {
                let kind = match self.kind {
                    ErrorType::NotSupported => "Unsupported value",
                    ErrorType::TooMany => "Too many",
                    ErrorType::Duplicate => "Duplicate value",
                    _ => "Invalid value",
                };
                match &self.bad_value {
                    Some(v) => format!("{kind}: {v}"),
                    None => kind.to_string(),
                }
            }
            ErrorType::Required => "Required value".to_string(),
            ErrorType::Forbidden => "Forbidden".to_string(),
            ErrorType::TooLong => "Too long".to_string(),
            ErrorType::Internal => "Internal error".to_string(),
        };
        if !self.detail.is_empty() {
            out.push_str(": ");
            out.push_str(&self.detail);
        }
        out
    }

    /// The `StatusCause` reason of this error (`FieldValueInvalid`, ...).
    pub fn cause_type(&self) -> &'static str {
        match self.kind {
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Internal => "InternalError",
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.body())
    }
}

impl std::error::Error for FieldError {}

/// A DNS-1123 label or DNS-1035 label body: `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (`first` checks the first
/// character).
fn is_label(s: &str, first: impl Fn(u8) -> bool) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            first(f)
                && (l.is_ascii_lowercase() || l.is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        }
        _ => false,
    }
}

/// `validation.RegexError`, including its odd `', ` before ` or `.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// `validation.MaxLenError`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `validation.IsDNS1035Label`: the messages of what is wrong, none when valid.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !is_label(value, |c| c.is_ascii_lowercase()) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `validation.IsDNS1123Subdomain`: the messages of what is wrong, none when valid.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    let label = |l: &str| is_label(l, |c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !value.split('.').all(label) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`: the messages of what is wrong, none when valid.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    let b = value.as_bytes();
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    let ok = b.is_empty()
        || (b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')));
    if !ok {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `validation.IsDomainPrefixedPath`: a subdomain, `/`, and an HTTP path.
pub fn is_domain_prefixed_path(field: &str, value: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::required(field, "")];
    }
    let Some((host, path)) = value.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
        return vec![FieldError::invalid(
            field,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<FieldError> = is_dns1123_subdomain(host)
        .into_iter()
        .map(|e| FieldError::invalid(field, host, e))
        .collect();
    let path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !path.chars().all(path_char) {
        errs.push(FieldError::invalid(
            field,
            path,
            regex_error("Invalid path", "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+", &[]),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_dns1035_label("my-name").is_empty());
        assert_eq!(is_dns1035_label("1abc").len(), 1);
        assert_eq!(is_dns1035_label(&"a".repeat(64)), vec![max_len_error(63)]);
        assert!(is_dns1123_subdomain("acme.io").is_empty());
        assert_eq!(is_dns1123_subdomain("Acme.io").len(), 1);
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("a-1.b_c").is_empty());
        assert_eq!(is_valid_label_value("-a").len(), 1);
        assert!(is_domain_prefixed_path("f", "acme.io/foo").is_empty());
        assert_eq!(is_domain_prefixed_path("f", "acme.io").len(), 1);
        assert_eq!(is_domain_prefixed_path("f", "acme.io/a b").len(), 1);
        assert!(is_dns1035_label("A")[0].contains("(e.g. 'my-name',  or 'abc-123', regex used for validation is"));
    }

    #[test]
    fn display_as_go() {
        let e = FieldError::invalid("spec.managedBy", "x", "bad");
        assert_eq!(e.to_string(), "spec.managedBy: Invalid value: \"x\": bad");
        let e = FieldError::too_long("spec.managedBy", "x", 63);
        assert_eq!(e.to_string(), "spec.managedBy: Too long: may not be more than 63 bytes");
        assert_eq!(FieldError::internal("oops").to_string(), "Internal error: oops");
        let required = FieldError::required("spec.managedBy", "");
        assert_eq!(required.to_string(), "spec.managedBy: Required value");
    }
}
