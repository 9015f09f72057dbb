//! Validation the kinds share, with apimachinery's and kube-apiserver's rules and messages: label selectors
//! (`metav1.LabelSelector`) and int-or-percent values (`ValidatePositiveIntOrPercent`,
//! `IsNotMoreThan100Percent`).

use serde_json::{Value, json};

use crate::error::FieldCause;
use workloadbuilder::validation::strings;

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
}
