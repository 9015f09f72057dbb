//! Validation the kinds share, with apimachinery's and kube-apiserver's rules and messages: label selectors
//! (`metav1.LabelSelector`), int-or-percent values (`ValidatePositiveIntOrPercent`,
//! `IsNotMoreThan100Percent`), node selectors (`core.NodeSelector`), topology selector terms, resource
//! quantities and the access modes and volume modes of volumes.

use serde_json::{Value, json};

use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::ResourceInfo;
use workloadbuilder::validation::strings;

/// The kind's `Invalid` error naming `obj`, when `causes` holds any (what every kind's validation ends
/// with).
pub(crate) fn invalid(res: &ResourceInfo, obj: &Value, causes: Vec<FieldCause>) -> Result<(), ApiError> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(&res.group, &res.kind, meta::name(obj), causes))
}

/// `ValidateLabelName`: a qualified name, reported at `path` with the key as the value.
pub(crate) fn label_name(key: &str, path: &str, causes: &mut Vec<FieldCause>) {
    for msg in strings::is_qualified_name(key) {
        causes.push(FieldCause::invalid(path, &json!(key), &msg));
    }
}

/// `ValidateLabelSelector`: `matchLabels` keys and values, and each `matchExpressions` requirement (an
/// operator of `In`, `NotIn`, `Exists`, `DoesNotExist` with values exactly when it needs them, a valid
/// key, valid values). `null` is valid (it selects nothing).
pub(crate) fn label_selector(sel: Option<&Value>, path: &str, causes: &mut Vec<FieldCause>) {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return;
    };
    for (k, v) in sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
        label_name(k, &format!("{path}.matchLabels"), causes);
        let v = v.as_str().unwrap_or("");
        for msg in strings::is_valid_label_value(v) {
            causes.push(FieldCause::invalid(format!("{path}.matchLabels"), &json!(v), &msg));
        }
    }
    for (i, e) in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}.matchExpressions[{i}]");
        let values: Vec<&Value> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    causes.push(FieldCause::required(
                        format!("{p}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    causes.push(FieldCause::forbidden(
                        format!("{p}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => causes.push(FieldCause::invalid(
                format!("{p}.operator"),
                &json!(other),
                "not a valid selector operator",
            )),
        }
        label_name(
            e.get("key").and_then(Value::as_str).unwrap_or(""),
            &format!("{p}.key"),
            causes,
        );
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for msg in strings::is_valid_label_value(v) {
                causes.push(FieldCause::invalid(format!("{p}.values[{j}]"), &json!(v), &msg));
            }
        }
    }
}

/// apimachinery's `IsValidPercent` message.
const PERCENT_MESSAGE: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// The percentage of a `[0-9]+%` string (saturating), or `None` when `s` is not one.
pub(crate) fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(
        digits
            .bytes()
            .fold(0i64, |n, b| n.saturating_mul(10).saturating_add(i64::from(b - b'0'))),
    )
}

/// `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`: a non-negative integer or a percentage
/// of at most 100.
pub(crate) fn int_or_percent(v: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    match v {
        Value::Number(n) => {
            if n.as_i64().is_none_or(|n| n < 0) {
                causes.push(FieldCause::invalid(path, v, "must be greater than or equal to 0"));
            }
        }
        Value::String(s) => match percent(s) {
            None => causes.push(FieldCause::invalid(path, v, PERCENT_MESSAGE)),
            Some(p) if p > 100 => causes.push(FieldCause::invalid(path, v, "must not be greater than 100%")),
            Some(_) => {}
        },
        _ => causes.push(FieldCause::invalid(
            path,
            v,
            "must be an integer or percentage (e.g '5%')",
        )),
    }
}

/// `intstr.GetScaledValueFromIntOrPercent`: an integer as is, a percentage of `total` rounded up or down;
/// `None` for anything else. Saturates on hostile values.
pub(crate) fn scaled_int_or_percent(v: &Value, total: i64, round_up: bool) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let p = percent(s)?;
            let x = i128::from(p) * i128::from(total);
            let scaled = if round_up {
                (x + 99).div_euclid(100)
            } else {
                x.div_euclid(100)
            };
            Some(i64::try_from(scaled).unwrap_or(if scaled > 0 { i64::MAX } else { i64::MIN }))
        }
        _ => None,
    }
}

/// `ValidateNodeSelectorRequirement` of one `matchExpressions` entry of a node selector term.
fn node_selector_requirement(e: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    let values = e.get("values").and_then(Value::as_array).map_or(0, Vec::len);
    match e.get("operator").and_then(Value::as_str).unwrap_or("") {
        "In" | "NotIn" => {
            if values == 0 {
                causes.push(FieldCause::required(
                    format!("{path}.values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if values > 0 {
                causes.push(FieldCause::forbidden(
                    format!("{path}.values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if values != 1 {
                causes.push(FieldCause::required(
                    format!("{path}.values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        other => causes.push(FieldCause::invalid(
            format!("{path}.operator"),
            &json!(other),
            "not a valid selector operator",
        )),
    }
    label_name(
        e.get("key").and_then(Value::as_str).unwrap_or(""),
        &format!("{path}.key"),
        causes,
    );
}

/// `ValidateNodeSelector`: at least one term; each term's expressions and fields (`metadata.name` with
/// `In` / `NotIn` and one value).
pub(crate) fn node_selector(sel: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    let terms = sel.get("nodeSelectorTerms").and_then(Value::as_array);
    if terms.is_none_or(Vec::is_empty) {
        causes.push(FieldCause::required(
            format!("{path}.nodeSelectorTerms"),
            "must have at least one node selector term",
        ));
        return;
    }
    for (i, term) in terms.into_iter().flatten().enumerate() {
        let tp = format!("{path}.nodeSelectorTerms[{i}]");
        for (j, e) in term
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            node_selector_requirement(e, &format!("{tp}.matchExpressions[{j}]"), causes);
        }
        for (j, f) in term
            .get("matchFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let fp = format!("{tp}.matchFields[{j}]");
            let key = f.get("key").and_then(Value::as_str).unwrap_or("");
            if key != "metadata.name" {
                causes.push(FieldCause::invalid(
                    format!("{fp}.key"),
                    &json!(key),
                    "not a valid field selector key",
                ));
            }
            match f.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" | "NotIn" => {
                    if f.get("values").and_then(Value::as_array).map_or(0, Vec::len) != 1 {
                        causes.push(FieldCause::required(
                            format!("{fp}.values"),
                            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                        ));
                    }
                }
                other => causes.push(FieldCause::invalid(
                    format!("{fp}.operator"),
                    &json!(other),
                    "not a valid selector operator",
                )),
            }
        }
    }
}

/// `ValidateTopologySelectorTerm` of each term of `allowedTopologies`: at least one label requirement,
/// valid and unique keys, at least one value each; the same term twice is a duplicate.
pub(crate) fn topology_terms(terms: &[Value], path: &str, causes: &mut Vec<FieldCause>) {
    let mut seen: Vec<Vec<(String, Vec<String>)>> = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let tp = format!("{path}[{i}]");
        let exprs: Vec<&Value> = term
            .get("matchLabelExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        if exprs.is_empty() {
            causes.push(FieldCause::required(
                tp.clone(),
                "must have at least one label requirement",
            ));
            continue;
        }
        let mut keys: Vec<(String, Vec<String>)> = Vec::new();
        for (j, e) in exprs.iter().enumerate() {
            let ep = format!("{tp}.matchLabelExpressions[{j}]");
            let key = e.get("key").and_then(Value::as_str).unwrap_or("").to_string();
            label_name(&key, &format!("{ep}.key"), causes);
            let mut values = crate::meta::string_list(e.get("values"));
            if values.is_empty() {
                causes.push(FieldCause::required(
                    format!("{ep}.values"),
                    "must specify as least one value",
                ));
            }
            for (k, v) in values.iter().enumerate() {
                for msg in strings::is_valid_label_value(v) {
                    causes.push(FieldCause::invalid(format!("{ep}.values[{k}]"), &json!(v), &msg));
                }
            }
            if keys.iter().any(|(k, _)| *k == key) {
                causes.push(FieldCause::duplicate(format!("{ep}.key"), &json!(key)));
            }
            values.sort();
            values.dedup();
            keys.push((key, values));
        }
        keys.sort();
        if seen.contains(&keys) {
            causes.push(FieldCause::duplicate(format!("{tp}.matchLabelExpressions"), &json!("")));
        }
        seen.push(keys);
    }
}

/// The access modes a volume may have.
pub(crate) const ACCESS_MODES: &[&str] = &["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];

/// The access modes of a claim or a volume: at least one, each supported, `ReadWriteOncePod` alone.
pub(crate) fn access_modes(modes: Option<&Value>, path: &str, required_detail: &str, causes: &mut Vec<FieldCause>) {
    let modes: Vec<&Value> = modes.and_then(Value::as_array).into_iter().flatten().collect();
    if modes.is_empty() {
        causes.push(FieldCause::required(path, required_detail));
    }
    let (mut once_pod, mut other) = (false, false);
    for m in modes {
        match m.as_str() {
            Some("ReadWriteOncePod") => once_pod = true,
            Some(s) if ACCESS_MODES.contains(&s) => other = true,
            _ => causes.push(FieldCause::not_supported(path, m, ACCESS_MODES)),
        }
    }
    if once_pod && other {
        causes.push(FieldCause::forbidden(
            path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// A `volumeMode` of `Block` or `Filesystem`.
pub(crate) fn volume_mode(mode: Option<&Value>, path: &str, causes: &mut Vec<FieldCause>) {
    if let Some(m) = mode.filter(|m| !m.is_null())
        && !matches!(m.as_str(), Some("Block" | "Filesystem"))
    {
        causes.push(FieldCause::not_supported(path, m, &["Block", "Filesystem"]));
    }
}

/// A storage quantity in bytes for comparisons: hostile and oversized values count as the largest
/// amount, unparsable ones as none.
pub(crate) fn storage_bytes(q: Option<&Value>) -> Option<i64> {
    match kwas_api_types::quantity::parse_units(q?.as_str()?) {
        Ok(n) => Some(n),
        Err(kwas_api_types::quantity::QuantityError::TooLarge) => Some(i64::MAX),
        Err(_) => None,
    }
}

/// `ValidatePositiveQuantityValue` of a storage quantity: it parses and is greater than zero (values too
/// large for an `i64` are valid, as upstream's big quantities).
pub(crate) fn positive_quantity(q: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    use kwas_api_types::quantity::{QuantityError, parse_units};
    let Some(s) = q.as_str() else {
        causes.push(FieldCause::invalid(path, q, "must be a quantity"));
        return;
    };
    match parse_units(s) {
        Ok(n) if n > 0 => {}
        Ok(_) | Err(QuantityError::Negative) => {
            causes.push(FieldCause::invalid(path, q, "must be greater than zero"));
        }
        Err(QuantityError::TooLarge) => {}
        Err(e) => causes.push(FieldCause::invalid(path, q, &e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes(f: impl FnOnce(&mut Vec<FieldCause>)) -> Vec<String> {
        let mut c = Vec::new();
        f(&mut c);
        c.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn int_or_percent_values() {
        assert!(causes(|c| int_or_percent(&json!(3), "x", c)).is_empty());
        assert!(causes(|c| int_or_percent(&json!("100%"), "x", c)).is_empty());
        assert_eq!(
            causes(|c| int_or_percent(&json!(-1), "spec.minAvailable", c)),
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            causes(|c| int_or_percent(&json!("101%"), "x", c)),
            ["x: Invalid value: \"101%\": must not be greater than 100%"]
        );
        assert!(causes(|c| int_or_percent(&json!("half"), "x", c))[0].contains("a valid percent string"));
        assert_eq!(scaled_int_or_percent(&json!("25%"), 10, true), Some(3));
        assert_eq!(scaled_int_or_percent(&json!("25%"), 10, false), Some(2));
        assert_eq!(scaled_int_or_percent(&json!(4), 10, true), Some(4));
        assert_eq!(
            scaled_int_or_percent(&json!("99999999999999999999999%"), i64::MAX, true),
            Some(i64::MAX)
        );
        assert_eq!(scaled_int_or_percent(&json!(true), 10, true), None);
    }

    #[test]
    fn label_selectors() {
        let sel = json!({"matchLabels": {"app": "a"}, "matchExpressions": [
            {"key": "k", "operator": "In"}, {"key": "k", "operator": "Exists", "values": ["x"]},
            {"key": "bad key", "operator": "Near"}]});
        let got = causes(|c| label_selector(Some(&sel), "spec.selector", c));
        assert!(
            got[0].starts_with("spec.selector.matchExpressions[0].values: Required value"),
            "{got:?}"
        );
        assert!(
            got[1].starts_with("spec.selector.matchExpressions[1].values: Forbidden"),
            "{got:?}"
        );
        assert!(got[2].contains("not a valid selector operator"), "{got:?}");
        assert!(got[3].starts_with("spec.selector.matchExpressions[2].key"), "{got:?}");
        assert!(causes(|c| label_selector(None, "s", c)).is_empty());
    }

    #[test]
    fn node_selectors_and_topologies() {
        let empty = causes(|c| node_selector(&json!({}), "spec.nodeAffinity.required", c));
        assert_eq!(
            empty,
            ["spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"]
        );
        let sel = json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": []}],
            "matchFields": [{"key": "spec.x", "operator": "In", "values": ["a", "b"]}]}]});
        assert_eq!(causes(|c| node_selector(&sel, "r", c)).len(), 3);
        let terms = [
            json!({"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}),
            json!({"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}),
            json!({}),
        ];
        let got = causes(|c| topology_terms(&terms, "allowedTopologies", c));
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with("allowedTopologies[1].matchLabelExpressions: Duplicate value"));
    }

    #[test]
    fn access_modes_and_quantities() {
        assert!(causes(|c| access_modes(Some(&json!(["ReadWriteOnce"])), "m", "", c)).is_empty());
        assert_eq!(
            causes(|c| access_modes(Some(&json!(["ReadWriteOncePod", "ReadOnlyMany"])), "m", "", c)).len(),
            1
        );
        assert_eq!(causes(|c| access_modes(None, "m", "", c)), ["m: Required value"]);
        assert!(causes(|c| access_modes(Some(&json!(["Sometimes"])), "m", "", c))[0].contains("Unsupported value"));
        assert!(causes(|c| positive_quantity(&json!("1Gi"), "q", c)).is_empty());
        assert!(causes(|c| positive_quantity(&json!("1e40"), "q", c)).is_empty());
        assert_eq!(
            causes(|c| positive_quantity(&json!("0"), "q", c)),
            ["q: Invalid value: \"0\": must be greater than zero"]
        );
        assert_eq!(storage_bytes(Some(&json!("1Ki"))), Some(1024));
        assert_eq!(storage_bytes(Some(&json!("1e40"))), Some(i64::MAX));
        assert_eq!(storage_bytes(Some(&json!("x"))), None);
    }
}
