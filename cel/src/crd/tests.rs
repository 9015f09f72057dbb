use serde_json::json;

use super::*;

fn estimate(rule: &str, schema: &Json) -> u64 {
    let d = decl(schema, false, 0);
    let env = Env::new().with_var("self", d.clone()).with_var("oldSelf", d);
    Program::compile(rule, &env)
        .unwrap_or_else(|e| panic!("{rule}: {e}"))
        .max_cost()
}

/// Upstream `compilation_test.go` (`TestCostEstimation`) and `celcoststability_test.go`
/// (`TestCelEstimatedCostStability`): estimates of rules on unbounded and bounded schemas.
#[test]
fn test_cost_estimation_matches_upstream() {
    let array = |items: Json| json!({"type": "array", "items": items});
    let map = |values: Json| json!({"type": "object", "additionalProperties": values});
    let string = json!({"type": "string"});
    let cases: Vec<(&str, Json, u64)> = vec![
        ("self.all(x, true)", array(json!({"type": "number"})), 4_718_591),
        (
            "self.all(x, true)",
            json!({"type": "array", "maxItems": 10, "items": {"type": "number"}}),
            32,
        ),
        ("self.all(x, true)", array(json!({"type": "boolean"})), 1_887_437),
        (
            "self.all(x, true)",
            array(json!({"type": "string", "format": "date-time"})),
            428_963,
        ),
        ("self.all(x, true)", map(json!({"type": "number"})), 1_348_169),
        ("self.contains('test')", string.clone(), 314_574),
        ("self.contains('test')", json!({"type": "string", "maxLength": 10}), 5),
        ("self.startsWith('test')", string.clone(), 2),
        ("self == \"x\"", string.clone(), 2),
        ("self == \"x\"", json!({"type": "string", "maxLength": 0}), 1),
        ("self[1] == 0.0", array(json!({"type": "number"})), 2),
        ("self[0] == 5", array(json!({"x-kubernetes-int-or-string": true})), 3),
        (
            "self[\"a\"] == self[\"b\"]",
            map(json!({"type": "string", "format": "date-time"})),
            8,
        ),
        (
            "self.val1 == self.val6",
            json!({"type": "object", "properties": {"val1": {"type": "integer"}, "val6": {"type": "integer"}}}),
            4,
        ),
        (
            "2 in self.array",
            json!({"type": "object", "properties": {"array": array(json!({"type": "integer"}))}}),
            1_572_865,
        ),
        (
            "self.array.all(e, e > 0)",
            json!({"type": "object", "properties": {"array": array(json!({"type": "integer"}))}}),
            7_864_318,
        ),
        (
            "self.val.all(k, self.val[k] > 0)",
            json!({"type": "object", "properties": {"val": map(json!({"type": "integer"}))}}),
            3_595_115,
        ),
        (
            "has(self.val.b)",
            json!({"type": "object", "properties": {"val": {"type": "object", "properties": {"b": {"type": "string"}}}}}),
            2,
        ),
    ];
    for (rule, schema, want) in cases {
        assert_eq!(estimate(rule, &schema), want, "{rule} on {schema}");
    }
}

fn crd_schema(spec_rules: Json, spec_props: Json) -> Json {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": spec_rules, "properties": spec_props}}})
}

fn rendered(errors: &[FieldError]) -> Vec<String> {
    errors
        .iter()
        .map(|e| {
            let body = match &e.kind {
                ErrorType::Invalid(Some(v)) => format!("Invalid value: {v}: {}", e.detail),
                ErrorType::Invalid(None) => format!("Invalid value: {}", e.detail),
                ErrorType::Forbidden => format!("Forbidden: {}", e.detail),
                ErrorType::Required => format!("Required value: {}", e.detail),
                ErrorType::Duplicate(v) => format!("Duplicate value: {v}"),
                ErrorType::Internal => format!("Internal error: {}", e.detail),
            };
            format!("{}: {body}", e.field)
        })
        .collect()
}

#[test]
fn rules_over_the_per_expression_budget_are_refused_when_the_crd_is_written() {
    let schema = crd_schema(
        json!([{"rule": "self.names.all(n, n.contains('x'))"}, {"rule": "self.names.size() < 10"}]),
        json!({"names": {"type": "array", "items": {"type": "string"}}}),
    );
    let c = compile(&schema);
    let errors = rendered(&c.write_errors("spec.validation.openAPIV3Schema"));
    assert_eq!(
        errors,
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: \
             estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding \
             maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: \
             contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for \
             entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or \
             adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
        ]
    );
    // Bounds make it affordable.
    let bounded = crd_schema(
        json!([{"rule": "self.names.all(n, n.contains('x'))"}]),
        json!({"names": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 63}}}),
    );
    assert!(compile(&bounded).write_errors("").is_empty());
}

#[test]
fn rules_that_do_not_compile_are_refused_with_the_rule_as_the_value() {
    let schema = crd_schema(
        json!([{"rule": "self.nope > 1"}, {"rule": "self.size", "message": "m"}, {"rule": ""},
               {"rule": "self.size > 0", "messageExpression": "1"}]),
        json!({"size": {"type": "integer"}}),
    );
    let errors = rendered(&compile(&schema).write_errors("spec.validation.openAPIV3Schema"));
    let base = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(
        errors[0].starts_with(&format!("{base}[0].rule: Invalid value: {{\"FieldPath\":\"\"")),
        "{}",
        errors[0]
    );
    assert!(errors[0].contains("undefined field 'nope'"), "{}", errors[0]);
    assert!(
        errors[1].ends_with("cel expression must evaluate to a bool"),
        "{}",
        errors[1]
    );
    assert_eq!(
        errors[2],
        format!("{base}[2].rule: Required value: rule is not specified")
    );
    assert!(
        errors[3].starts_with(&format!("{base}[3].messageExpression: Invalid value:")),
        "{}",
        errors[3]
    );
    assert!(
        errors[3].ends_with("messageExpression must evaluate to a string"),
        "{}",
        errors[3]
    );
}

#[test]
fn a_schema_whose_rules_together_exceed_the_crd_budget_is_refused() {
    // Each rule costs ~7.8M on an unbounded list: under the per-expression limit, over the total.
    let rules: Vec<Json> = (0..14)
        .map(|i| json!({"rule": format!("self.items.all(e, e > {i})")}))
        .collect();
    let schema = crd_schema(
        json!(rules),
        json!({"items": {"type": "array", "items": {"type": "integer"}}}),
    );
    let errors = rendered(&compile(&schema).write_errors("spec.validation.openAPIV3Schema"));
    assert_eq!(errors.len(), 5, "{errors:#?}");
    assert!(errors[..4].iter().all(|e| e.ends_with(
        "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
    )));
    assert!(errors[4].starts_with(
        "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for \
         entire OpenAPIv3 schema exceeds budget by factor of"
    ));
}

fn runtime_schema() -> Json {
    json!({"type": "object", "properties": {
        "spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.size == oldSelf.size", "message": "size is immutable"},
                {"rule": "self.size <= self.max", "messageExpression": "'size ' + string(self.size) + ' exceeds max'"},
                {"rule": "!has(self.secret)", "reason": "FieldValueForbidden", "message": "no secrets", "fieldPath": ".secret"},
                {"rule": "self.size != 7", "message": "not seven", "fieldPath": ".size"}
            ],
            "properties": {
                "size": {"type": "integer", "x-kubernetes-validations": [{"rule": "self != 8"}]},
                "max": {"type": "integer", "default": 10},
                "secret": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object",
                    "x-kubernetes-validations": [{"rule": "self.name != 'bad'"}],
                    "properties": {"name": {"type": "string"}}}}}}}})
}

#[test]
fn rules_hold_and_fail_in_kube_apiservers_words() {
    let c = compile(&runtime_schema());
    assert!(c.write_errors("").is_empty(), "{:?}", c.write_errors(""));
    let ok = json!({"spec": {"size": 3, "max": 10}});
    assert!(c.validate(&ok, None).is_empty());
    // A transition rule does not run on create.
    assert!(c.validate(&json!({"spec": {"size": 4, "max": 10}}), None).is_empty());
    assert_eq!(
        rendered(&c.validate(&json!({"spec": {"size": 4, "max": 10}}), Some(&ok))),
        vec!["spec: Invalid value: size is immutable"]
    );
    assert_eq!(
        rendered(&c.validate(
            &json!({"spec": {"size": 30, "max": 10, "secret": "x", "items": [{"name": "bad"}]}}),
            None
        )),
        vec![
            "spec: Invalid value: size 30 exceeds max",
            "spec.secret: Forbidden: no secrets",
            "spec.items[0]: Invalid value: failed rule: self.name != 'bad'",
        ]
    );
    assert_eq!(
        rendered(&c.validate(&json!({"spec": {"size": 7, "max": 10}}), None)),
        vec!["spec.size: Invalid value: not seven"]
    );
    // A scalar node's value is shown.
    assert_eq!(
        rendered(&c.validate(&json!({"spec": {"size": 8, "max": 10}}), None)),
        vec!["spec.size: Invalid value: 8: failed rule: self != 8"]
    );
}

#[test]
fn an_expensive_rule_stops_validation_at_the_per_call_limit() {
    let schema = crd_schema(
        json!([{"rule": "self.items.all(a, self.items.all(b, a + b >= 0))"}, {"rule": "self.items.size() > 0"}]),
        json!({"items": {"type": "array", "maxItems": 1, "items": {"type": "integer"}}}),
    );
    let c = compile(&schema);
    assert!(c.write_errors("").is_empty());
    // maxItems is not enforced here (the schema walk does that); the rule meets 5000 items.
    let obj = json!({"spec": {"items": (0..5000).collect::<Vec<_>>()}});
    let t = std::time::Instant::now();
    let errors = rendered(&c.validate(&obj, None));
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(
        errors,
        vec![
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation \
             rules will be run due to call cost exceeds limit for rule: self.items.all(a, self.items.all(b, a + b >= 0))"
        ]
    );
}

#[test]
fn the_per_object_budget_stops_validation_across_nodes() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 100, "items": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.values.all(v, v >= 0)"}],
            "properties": {"values": {"type": "array", "maxItems": 10, "items": {"type": "integer"}}}}}}}}});
    let c = compile(&schema);
    // 750,003 per item: 13 items pass, the 14th runs out of the 10,000,000 budget.
    let item = json!({"values": (0..150_000).collect::<Vec<_>>()});
    let obj = json!({"spec": {"items": vec![item; 20]}});
    let errors = rendered(&c.validate(&obj, None));
    assert_eq!(
        errors.last().map(String::as_str),
        Some(
            "spec.items[13]: Invalid value: \"object\": validation failed due to running out of cost budget, no further \
             validation rules will be run"
        ),
        "{errors:#?}"
    );
}
