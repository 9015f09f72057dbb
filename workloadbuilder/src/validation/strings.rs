//! String format checks with apimachinery's exact messages (`k8s.io/apimachinery/pkg/util/validation`).
//!
//! Each function returns the list of problems (empty when the value is valid), so callers can turn each one
//! into a [`FieldError`](crate::FieldError) at the right path.

/// Maximum length of a DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum length of the name part of a qualified name (label keys).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Maximum length of a label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
    '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
    validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
    characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used \
    for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
    with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
    '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', \
    '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
    regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const CONDITION_REASON_ERR: &str = "a condition reason must start with alphabetic character, optionally followed by \
    a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. \
    'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for \
    validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";

fn max_len_msg(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_label_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && alnum(b[0]) && alnum(b[b.len() - 1]) && b.iter().all(|&c| alnum(c) || c == b'-')
}

/// `IsDNS1123Label`: lowercase alphanumerics and `-`, at most 63 characters.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_msg(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_label_shaped(value) {
        errs.push(DNS1123_LABEL_ERR.to_string());
    }
    errs
}

/// `IsDNS1123Subdomain`: dot-separated DNS labels, at most 253 characters.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_msg(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if value.is_empty() || !value.split('.').all(is_label_shaped) {
        errs.push(DNS1123_SUBDOMAIN_ERR.to_string());
    }
    errs
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter().all(|&c| alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

/// `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters
/// (label keys, annotation keys, finalizers, condition types).
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut parts = value.splitn(3, '/');
    let name = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => name,
        (Some(prefix), Some(name), None) => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {QUALIFIED_NAME_ERR} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')"
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_msg(QUALIFIED_NAME_MAX_LENGTH)));
    }
    if !name.is_empty() && !is_qualified_name_part(name) {
        errs.push(format!("name part {QUALIFIED_NAME_ERR}"));
    }
    errs
}

/// `IsValidLabelValue`: empty, or a qualified-name part of at most 63 characters.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_msg(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(LABEL_VALUE_ERR.to_string());
    }
    errs
}

/// A metav1 condition reason: `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`.
pub fn is_valid_condition_reason(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_alphabetic()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        && (b.len() == 1 || b[b.len() - 1].is_ascii_alphanumeric() || b[b.len() - 1] == b'_');
    if ok {
        Vec::new()
    } else {
        vec![CONDITION_REASON_ERR.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        assert!(is_dns1123_label("a").is_empty());
        assert!(is_dns1123_label("job-0-pgt-0").is_empty());
        assert!(is_dns1123_label(&"a".repeat(63)).is_empty());
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        for bad in ["", "-a", "a-", "A", "a.b", "a_b"] {
            assert_eq!(is_dns1123_label(bad).len(), 1, "{bad}");
        }
        assert!(
            is_dns1123_label("Bad")
                .first()
                .unwrap()
                .starts_with("a lowercase RFC 1123 label")
        );
    }

    #[test]
    fn dns_subdomains() {
        assert!(is_dns1123_subdomain("example.com").is_empty());
        assert!(is_dns1123_subdomain("a").is_empty());
        for bad in ["", ".a", "a.", "a..b", "A.b", "a_b"] {
            assert_eq!(is_dns1123_subdomain(bad).len(), 1, "{bad}");
        }
        assert_eq!(is_dns1123_subdomain(&"a".repeat(254)).len(), 1);
    }

    #[test]
    fn qualified_names() {
        for good in [
            "topology.kubernetes.io/zone",
            "kwas.dev/rack",
            "MyName",
            "my.name",
            "a_b",
            "x/y",
        ] {
            assert!(
                is_qualified_name(good).is_empty(),
                "{good}: {:?}",
                is_qualified_name(good)
            );
        }
        assert_eq!(is_qualified_name("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(is_qualified_name("a/"), vec!["name part must be non-empty"]);
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(is_qualified_name("Bad_Prefix/x")[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
        assert!(is_qualified_name("-x")[0].starts_with("name part must consist"));
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
    }

    #[test]
    fn label_values_and_reasons() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("rack-1").is_empty());
        assert_eq!(is_valid_label_value("-x").len(), 1);
        assert!(is_valid_condition_reason("Scheduled").is_empty());
        assert!(is_valid_condition_reason("A").is_empty());
        assert!(is_valid_condition_reason("Reason_A:B,C").is_empty());
        assert_eq!(is_valid_condition_reason("1Reason").len(), 1);
        assert_eq!(is_valid_condition_reason("Reason:").len(), 1);
        assert_eq!(is_valid_condition_reason("").len(), 1);
    }
}
