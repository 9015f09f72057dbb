//! `x-kubernetes-validations`: a custom resource's CEL rules, evaluated on create and update as
//! kube-apiserver evaluates them, with `self` the value at the rule's node and, on update, `oldSelf` the
//! stored value there (transition rules, those naming `oldSelf`, run on update only unless
//! `optionalOldSelf`). A failed rule is reported at the rule's node (or its `fieldPath`) with its
//! `message` (or `messageExpression`, or `failed rule: <rule>`) and its `reason`, in kube-apiserver's words:
//! `spec: Invalid value: "object": <message>`.
//!
//! Evaluation is kube-cel's. Two differences from kube-apiserver, chosen and documented: list items are
//! correlated with their old values by position, not by `x-kubernetes-list-map-keys` (write transition
//! rules about keyed lists on the list's parent, as kwas's own CRDs do); and CRD validation ratcheting
//! (unchanged values that fail a rule pass) is not applied, so every rule holds for every write.

use serde_json::{Value, json};

use crate::error::FieldCause;

/// The stacks tried, largest first, for the thread rules are evaluated on: the CEL parser and
/// evaluator recurse per operator and per level of the value, far more than a request handler's stack
/// allows for hostile rules or deep objects. The stack is reserved, not committed, up front.
const EVAL_STACKS: [usize; 2] = [256 * 1024 * 1024, 64 * 1024 * 1024];

/// Whether a schema holds any rule (most do not, and those skip evaluation altogether).
pub(crate) fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            m.get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty())
                || m.values().any(has_rules)
        }
        Value::Array(a) => a.iter().any(has_rules),
        _ => false,
    }
}

/// The causes of the rules `obj` (updating `old`) fails, in kube-apiserver's form.
pub(crate) fn evaluate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    if !has_rules(schema) {
        return Vec::new();
    }
    let failed = |why: &str| {
        vec![FieldCause {
            field: "<nil>".into(),
            reason: "InternalError",
            message: format!("Internal error: validation rules could not be evaluated: {why}"),
        }]
    };
    for stack in EVAL_STACKS {
        let (schema, obj, old) = (schema.clone(), obj.clone(), old.cloned());
        let spawned = std::thread::Builder::new()
            .name("cel-rules".into())
            .stack_size(stack)
            .spawn(move || {
                let errors = match kube_cel::validate(&schema, &obj, old.as_ref()) {
                    Ok(()) => Vec::new(),
                    Err(errors) => errors.into_vec(),
                };
                errors.into_iter().map(|e| to_cause(&schema, &e)).collect::<Vec<_>>()
            });
        match spawned {
            Ok(handle) => return handle.join().unwrap_or_else(|_| failed("the evaluator stopped")),
            Err(e) => tracing::warn!(stack, error = %e, "no thread to evaluate CEL rules on"),
        }
    }
    failed("no evaluator thread")
}

/// One failed rule as kube-apiserver reports it: `Invalid value: "<type>"` (or `Forbidden`,
/// `Required value`, `Duplicate value` per the rule's `reason`) with the message.
fn to_cause(schema: &Value, e: &kube_cel::ValidationError) -> FieldCause {
    let field = if e.field_path.is_empty() {
        "<nil>".to_string()
    } else {
        e.field_path.clone()
    };
    let ty = rule_node_type(schema, &e.field_path, &e.rule);
    match e.reason.as_deref() {
        Some("FieldValueForbidden") => FieldCause::forbidden(field, &e.message),
        Some("FieldValueRequired") => FieldCause::required(field, &e.message),
        Some("FieldValueDuplicate") => FieldCause::duplicate(field, &json!(ty)),
        _ => FieldCause::invalid(field, &json!(ty), &e.message),
    }
}

/// The type of the schema node holding `rule` on the way to `path` (kube-apiserver reports a failed
/// rule's value as its node's type, whatever `fieldPath` the error points to); `object` when not found.
fn rule_node_type(schema: &Value, path: &str, rule: &str) -> String {
    let holds = |node: &Value| {
        node.get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .is_some_and(|rules| {
                rules
                    .iter()
                    .any(|r| r.get("rule").and_then(Value::as_str) == Some(rule))
            })
    };
    let mut found = holds(schema).then(|| type_at(schema, ""));
    let mut prefix = String::new();
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(segment);
        if let Some(node) = node_at(schema, &prefix)
            && holds(node)
        {
            found = Some(type_at(schema, &prefix));
        }
    }
    found.unwrap_or_else(|| "object".into())
}

/// The schema type at a field path (`spec.items[2].name`), `object` when the path leaves the schema.
fn type_at(schema: &Value, path: &str) -> String {
    node_at(schema, path)
        .and_then(|n| n.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_string()
}

/// The schema node at a field path, `None` when the path leaves the schema.
fn node_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    let mut node = schema;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (name, indexed) = match segment.find('[') {
            Some(i) => (&segment[..i], true),
            None => (segment, false),
        };
        let next = node
            .get("properties")
            .and_then(|p| p.get(name))
            .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()));
        node = next?;
        if indexed {
            for _ in segment.matches('[') {
                node = node.get("items")?;
            }
        }
    }
    Some(node)
}

#[cfg(test)]
mod tests {
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
        let s = schema();
        assert!(has_rules(&s));
        assert!(!has_rules(&json!({"type": "object"})));
        let ok = json!({"spec": {"size": 3, "max": 10}});
        assert!(evaluate(&s, &ok, None).is_empty());
        // A transition rule does not run on create.
        assert!(evaluate(&s, &json!({"spec": {"size": 4, "max": 10}}), None).is_empty());
        let grown = json!({"spec": {"size": 4, "max": 10}});
        assert_eq!(
            rendered(&evaluate(&s, &grown, Some(&ok))),
            vec!["spec: Invalid value: \"object\": size is immutable"]
        );
        let big = json!({"spec": {"size": 30, "max": 10, "secret": "x", "items": [{"name": "bad"}]}});
        assert_eq!(
            rendered(&evaluate(&s, &big, None)),
            vec![
                "spec: Invalid value: \"object\": size 30 exceeds max",
                "spec.secret: Forbidden: no secrets",
                "spec.items[0]: Invalid value: \"object\": failed rule: self.name != 'bad'",
            ]
        );
    }

    #[test]
    fn a_field_path_keeps_the_type_of_the_rules_node() {
        let seven = json!({"spec": {"size": 7, "max": 10}});
        assert_eq!(
            rendered(&evaluate(&schema(), &seven, None)),
            vec!["spec.size: Invalid value: \"object\": not seven"]
        );
    }

    #[test]
    fn types_are_found_along_the_path() {
        let s = schema();
        assert_eq!(type_at(&s, "spec.size"), "integer");
        assert_eq!(type_at(&s, "spec.items[3].name"), "string");
        assert_eq!(type_at(&s, "spec.nowhere"), "object");
        assert_eq!(type_at(&s, ""), "object");
    }

    #[test]
    fn a_hostile_rule_is_an_error_not_a_crash() {
        let deep = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
        let s = json!({"type": "object", "x-kubernetes-validations": [{"rule": deep}]});
        let causes = evaluate(&s, &json!({}), None);
        assert!(!causes.is_empty());
    }
}
