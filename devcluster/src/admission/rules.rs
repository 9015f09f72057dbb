//! `x-kubernetes-validations`: a custom resource's CEL rules, as kube-apiserver compiles and evaluates
//! them, through [`kwas_cel::crd`]: compiled (and cost-estimated) once per served CRD version when the
//! CRD is written ([`crd_errors`] refuses rules that do not compile or are over budget, with
//! kube-apiserver's messages), then evaluated on every create and update with `self` the value at the
//! rule's node and, on update, `oldSelf` the stored value there (transition rules, those naming
//! `oldSelf`, run on update only unless `optionalOldSelf`), each evaluation limited to 1,000,000 and
//! all of one object's to 10,000,000 cost units. A failed rule is reported at the rule's node (or its
//! `fieldPath`) with its `message` (or `messageExpression`, or `failed rule: <rule>`) and its `reason`,
//! in kube-apiserver's words: `spec: Invalid value: <message>` (objects and lists omit their value).
//!
//! Two differences from kube-apiserver, chosen and documented: list items are correlated with their old
//! values by position, not by `x-kubernetes-list-map-keys` (write transition rules about keyed lists on
//! the list's parent, as kwas's own CRDs do); and CRD validation ratcheting (unchanged values that fail
//! a rule pass) is not applied, so every rule holds for every write.

use serde_json::Value;

use crate::error::FieldCause;
use kwas_cel::crd::{CompiledSchema, ErrorType, FieldError};

/// The causes of the rules `obj` (updating `old`) fails, in kube-apiserver's form.
pub(crate) fn evaluate(rules: &CompiledSchema, obj: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    rules.validate(obj, old).iter().map(to_cause).collect()
}

/// The write-time errors of a CRD's rules (per served version schema), with upstream's paths:
/// `spec.validation.openAPIV3Schema...` when every version has the same schema (kube-apiserver moves a
/// shared schema there before validating), else `spec.versions[i].schema.openAPIV3Schema...`.
pub(crate) fn crd_errors(spec: &Value) -> Vec<FieldCause> {
    let versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let schemas: Vec<Option<&Value>> = versions.iter().map(|v| v.pointer("/schema/openAPIV3Schema")).collect();
    let shared = schemas.windows(2).all(|w| w[0] == w[1]);
    let mut out = Vec::new();
    for (i, schema) in schemas.iter().enumerate() {
        let Some(schema) = schema else { continue };
        if shared && i > 0 {
            break;
        }
        let base = if shared {
            "spec.validation.openAPIV3Schema".to_string()
        } else {
            format!("spec.versions[{i}].schema.openAPIV3Schema")
        };
        let compiled = kwas_cel::crd::compile(schema);
        out.extend(compiled.write_errors(&base).iter().map(to_cause));
    }
    out
}

fn to_cause(e: &FieldError) -> FieldCause {
    match &e.kind {
        ErrorType::Invalid(Some(v)) => FieldCause::invalid(e.field.clone(), v, &e.detail),
        ErrorType::Invalid(None) => FieldCause::invalid_omitted(e.field.clone(), &e.detail),
        ErrorType::Forbidden => FieldCause::forbidden(e.field.clone(), &e.detail),
        ErrorType::Required => FieldCause::required(e.field.clone(), &e.detail),
        ErrorType::Duplicate(v) => FieldCause::duplicate(e.field.clone(), v),
        ErrorType::Internal => FieldCause::internal(e.field.clone(), &e.detail),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.size == oldSelf.size", "message": "size is immutable"},
                    {"rule": "self.size <= self.max", "messageExpression": "'size ' + string(self.size) + ' exceeds max'"},
                    {"rule": "!has(self.secret)", "reason": "FieldValueForbidden", "message": "no secrets", "fieldPath": ".secret"},
                    {"rule": "self.size != 7", "message": "not seven", "fieldPath": ".size"}
                ],
                "properties": {
                    "size": {"type": "integer"},
                    "max": {"type": "integer", "default": 10},
                    "secret": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "object",
                        "x-kubernetes-validations": [{"rule": "self.name != 'bad'"}],
                        "properties": {"name": {"type": "string"}}}}}}}})
    }

    fn rendered(causes: &[FieldCause]) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn rules_hold_and_fail_in_kube_apiservers_words() {
        let rules = kwas_cel::crd::compile(&schema());
        let ok = json!({"spec": {"size": 3, "max": 10}});
        assert!(evaluate(&rules, &ok, None).is_empty());
        // A transition rule does not run on create.
        assert!(evaluate(&rules, &json!({"spec": {"size": 4, "max": 10}}), None).is_empty());
        let grown = json!({"spec": {"size": 4, "max": 10}});
        assert_eq!(
            rendered(&evaluate(&rules, &grown, Some(&ok))),
            vec!["spec: Invalid value: size is immutable"]
        );
        let big = json!({"spec": {"size": 30, "max": 10, "secret": "x", "items": [{"name": "bad"}]}});
        assert_eq!(
            rendered(&evaluate(&rules, &big, None)),
            vec![
                "spec: Invalid value: size 30 exceeds max",
                "spec.secret: Forbidden: no secrets",
                "spec.items[0]: Invalid value: failed rule: self.name != 'bad'",
            ]
        );
        let seven = json!({"spec": {"size": 7, "max": 10}});
        assert_eq!(
            rendered(&evaluate(&rules, &seven, None)),
            vec!["spec.size: Invalid value: not seven"]
        );
    }

    #[test]
    fn crd_rules_that_do_not_compile_or_cost_too_much_are_write_time_errors() {
        let deep = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
        let version = |rules: Value| {
            json!({"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-validations": rules,
                    "properties": {"names": {"type": "array", "items": {"type": "string"}}}}}}}})
        };
        let spec =
            json!({"versions": [version(json!([{"rule": deep}, {"rule": "self.names.all(n, n.contains('x'))"}]))]});
        let causes = rendered(&crd_errors(&spec));
        assert!(
            causes[0].starts_with(
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
            ),
            "{causes:#?}"
        );
        assert!(
            causes[0].contains("expression recursion limit exceeded: 250"),
            "{causes:#?}"
        );
        assert!(
            causes[1].starts_with(
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule: Forbidden: \
                 estimated rule cost exceeds budget by factor of"
            ),
            "{causes:#?}"
        );
        let two = json!({"versions": [version(json!([{"rule": "true"}])), {"name": "v2", "served": true,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-validations": [{"rule": "1"}]}}}]});
        let causes = rendered(&crd_errors(&two));
        assert_eq!(causes.len(), 1, "{causes:#?}");
        assert!(
            causes[0].starts_with(
                "spec.versions[1].schema.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value:"
            ),
            "{causes:#?}"
        );
    }
}
