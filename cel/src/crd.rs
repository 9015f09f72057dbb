//! CRD validation rules (`x-kubernetes-validations`) as kube-apiserver compiles and runs them
//! (apiextensions-apiserver `pkg/apiserver/schema/cel` and `pkg/apis/apiextensions/validation`).
//!
//! **When the CRD is written** ([`compile`], [`CompiledSchema::write_errors`]): every rule and
//! `messageExpression` is compiled with `self` (and `oldSelf`) typed and sized from the schema node that
//! holds it (strings by `maxLength` x 4, lists by `maxItems`, maps by `maxProperties`, and where they are
//! unbounded by what fits in a 3 MiB request, as upstream estimates), its estimated cost multiplied by
//! how many times the node can occur in one object, and refused past
//! [`STATIC_ESTIMATED_COST_LIMIT`] per expression and [`STATIC_ESTIMATED_CRD_COST_LIMIT`] per schema,
//! with kube-apiserver's messages and field paths.
//!
//! **When an object is written** ([`CompiledSchema::validate`]): rules run on `self` (and, on update,
//! `oldSelf`: transition rules run only then, unless `optionalOldSelf`, which binds an optional) with
//! [`PER_CALL_LIMIT`] per evaluation and [`RUNTIME_CEL_COST_BUDGET`] per object; past either, validation
//! stops with upstream's error. The compiled schema is built once per CRD version and shared.
//!
//! Deviations, chosen and documented in devcluster's README: list items are correlated with their old
//! values by position (not by `x-kubernetes-list-map-keys`); ratcheting (unchanged values that fail a
//! rule pass) is not applied; rules under `allOf`/`anyOf`/`oneOf` are not run.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_cel::cel::Value;
use serde_json::{Value as Json, json};

use crate::types::{Decl, DeclKind, Ty};
use crate::value::{escape_field_name, from_json};
use crate::{Env, Program};

/// `PerCallLimit`: the most one evaluation may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// `RuntimeCELCostBudget`: the most all rules of one object may cost.
pub const RUNTIME_CEL_COST_BUDGET: u64 = 10_000_000;
/// `StaticEstimatedCostLimit`: the most one expression may be estimated to cost.
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// `StaticEstimatedCRDCostLimit`: the most the rules of one schema may be estimated to cost.
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// `MaxRequestSizeBytes`: what bounds unbounded strings, lists and maps in estimates.
pub const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;
/// `MaxEvaluatedMessageExpressionSizeBytes`.
pub const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// The type of a field error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorType {
    /// `Invalid value: <value>: <detail>` (value `None`: omitted, `Invalid value: <detail>`).
    Invalid(Option<Json>),
    /// `Forbidden: <detail>`.
    Forbidden,
    /// `Required value: <detail>`.
    Required,
    /// `Duplicate value: <value>`.
    Duplicate(Json),
    /// `Internal error: <detail>`.
    Internal,
}

/// One field error, as kube-apiserver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field path (`spec.items[2]`, `<nil>` for the object's root).
    pub field: String,
    /// Its type.
    pub kind: ErrorType,
    /// The detail.
    pub detail: String,
}

#[derive(Debug)]
struct Rule {
    rule: String,
    message: Option<String>,
    reason: Option<String>,
    field_path: Option<String>,
    optional_old_self: bool,
    uses_old_self: bool,
    program: Result<Program, String>,
    message_expression: Option<Result<Program, String>>,
    /// The estimated cost times the node's cardinality.
    cost: u64,
}

#[derive(Debug, Default)]
struct Node {
    /// The schema's `type` (the value of an `Invalid` error for a failed rule).
    ty: String,
    rules: Vec<Rule>,
    properties: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    /// Whether this node or one below holds a rule (others are not walked).
    has_rules: bool,
    /// The schema node (for binding `self` with formats).
    schema: Json,
}

/// A version's schema with its rules compiled.
#[derive(Debug)]
pub struct CompiledSchema {
    root: Node,
    errors: Vec<(String, FieldError)>,
    total: u64,
}

/// Compiles the rules of an OpenAPI v3 schema (`openAPIV3Schema` of a CRD version).
pub fn compile(schema: &Json) -> Arc<CompiledSchema> {
    let mut errors = Vec::new();
    let mut total = 0u64;
    let mut expensive: Vec<(String, u64)> = Vec::new();
    let root = node(schema, true, Some(1), "", &mut errors, &mut total, &mut expensive, 0);
    if total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        for (path, _) in expensive.into_iter().take(4) {
            errors.push((
                path,
                FieldError {
                    field: String::new(),
                    kind: ErrorType::Forbidden,
                    detail: "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
                        .into(),
                },
            ));
        }
        errors.push((
            String::new(),
            FieldError {
                field: String::new(),
                kind: ErrorType::Forbidden,
                detail: cost_message(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    total,
                    STATIC_ESTIMATED_CRD_COST_LIMIT,
                ),
            },
        ));
    }
    Arc::new(CompiledSchema { root, errors, total })
}

/// upstream's `getCostErrorMessage`.
fn cost_message(what: &str, cost: u64, limit: u64) -> String {
    let f = cost as f64 / limit as f64;
    let factor = if f > 100.0 {
        "more than 100x".to_string()
    } else if f < 1.5 {
        format!("{f:.6}x")
    } else {
        format!("{f:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

const MAX_SCHEMA_DEPTH: usize = 64;

#[allow(clippy::too_many_arguments)]
fn node(
    schema: &Json,
    root: bool,
    cardinality: Option<u64>,
    path: &str,
    errors: &mut Vec<(String, FieldError)>,
    total: &mut u64,
    expensive: &mut Vec<(String, u64)>,
    depth: usize,
) -> Node {
    let mut n = Node {
        ty: schema
            .get("type")
            .and_then(Json::as_str)
            .unwrap_or("object")
            .to_string(),
        schema: strip_children(schema),
        ..Node::default()
    };
    if depth > MAX_SCHEMA_DEPTH {
        return n;
    }
    let factor = max_elements_factor(schema);
    let child_cardinality = match (cardinality, factor) {
        (Some(c), Some(f)) => Some(c.saturating_mul(f)),
        _ => None,
    };
    if let Some(props) = schema.get("properties").and_then(Json::as_object) {
        for (k, s) in props {
            if root && matches!(k.as_str(), "metadata" | "apiVersion" | "kind") {
                continue;
            }
            let child = node(
                s,
                false,
                child_cardinality,
                &format!("{path}.properties[{k}]"),
                errors,
                total,
                expensive,
                depth + 1,
            );
            n.has_rules |= child.has_rules;
            n.properties.insert(k.clone(), child);
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        let child = node(
            items,
            false,
            child_cardinality,
            &format!("{path}.items"),
            errors,
            total,
            expensive,
            depth + 1,
        );
        n.has_rules |= child.has_rules;
        n.items = Some(Box::new(child));
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let child = node(
            additional,
            false,
            child_cardinality,
            &format!("{path}.additionalProperties"),
            errors,
            total,
            expensive,
            depth + 1,
        );
        n.has_rules |= child.has_rules;
        n.additional = Some(Box::new(child));
    }
    let Some(rules) = schema.get("x-kubernetes-validations").and_then(Json::as_array) else {
        return n;
    };
    if rules.is_empty() {
        return n;
    }
    n.has_rules = true;
    let decl = decl(schema, root, 0);
    let card = cardinality.unwrap_or_else(|| MAX_REQUEST_SIZE_BYTES / decl.min_serialized_size.saturating_add(1));
    for (i, raw) in rules.iter().enumerate() {
        let rpath = format!("{path}.x-kubernetes-validations[{i}]");
        let r = compile_rule(raw, &decl, card, &rpath, errors);
        *total = total.saturating_add(r.cost);
        if r.cost >= STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            expensive.push((format!("{rpath}.rule"), r.cost));
        }
        if let Some(Ok(m)) = &r.message_expression {
            *total = total.saturating_add(m.max_cost());
            if m.max_cost() >= STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
                expensive.push((format!("{rpath}.messageExpression"), m.max_cost()));
            }
        }
        n.rules.push(r);
    }
    n
}

/// The schema node without its children (what binding `self` with formats needs at this node is in the
/// children too, so they stay; only the rules are dropped to keep the copy small).
fn strip_children(schema: &Json) -> Json {
    let mut s = schema.clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("x-kubernetes-validations");
        m.remove("description");
    }
    s
}

/// How many times a child of this node can occur per occurrence of the node (`None`: unbounded).
fn max_elements_factor(schema: &Json) -> Option<u64> {
    let max = |k: &str| {
        schema
            .get(k)
            .and_then(Json::as_i64)
            .map(|m| u64::try_from(m).unwrap_or(0))
    };
    match schema.get("type").and_then(Json::as_str) {
        Some("array") => max("maxItems"),
        Some("object") if schema.get("additionalProperties").is_some_and(Json::is_object) => max("maxProperties"),
        _ => Some(1),
    }
}

fn compile_rule(raw: &Json, decl: &Decl, cardinality: u64, path: &str, errors: &mut Vec<(String, FieldError)>) -> Rule {
    let text = |k: &str| raw.get(k).and_then(Json::as_str).map(str::to_string);
    let rule = text("rule").unwrap_or_default();
    let optional_old_self = raw.get("optionalOldSelf").and_then(Json::as_bool) == Some(true);
    let old_decl = if optional_old_self {
        Decl::scalar(Ty::Optional(Box::new(decl.ty())), 0)
    } else {
        decl.clone()
    };
    let env = Env::new().with_var("self", decl.clone()).with_var("oldSelf", old_decl);
    let upstream_struct = json!({
        "Rule": rule,
        "Message": text("message").unwrap_or_default(),
        "MessageExpression": text("messageExpression").unwrap_or_default(),
        "Reason": raw.get("reason").cloned().unwrap_or(Json::Null),
        "FieldPath": text("fieldPath").unwrap_or_default(),
        "OptionalOldSelf": raw.get("optionalOldSelf").cloned().unwrap_or(Json::Null),
    });
    let mut push = |suffix: &str, kind: ErrorType, detail: String| {
        errors.push((
            format!("{path}.{suffix}"),
            FieldError {
                field: String::new(),
                kind,
                detail,
            },
        ));
    };
    let mut cost = 0u64;
    let program = if rule.trim().is_empty() {
        push("rule", ErrorType::Required, "rule is not specified".into());
        Err("rule is not specified".to_string())
    } else {
        match Program::compile(&rule, &env) {
            Ok(p) if !matches!(p.result_type(), Ty::Bool | Ty::Dyn) => {
                let d = "cel expression must evaluate to a bool".to_string();
                push("rule", ErrorType::Invalid(Some(upstream_struct.clone())), d.clone());
                Err(d)
            }
            Ok(p) => {
                cost = p.max_cost().saturating_mul(cardinality);
                if cost > STATIC_ESTIMATED_COST_LIMIT {
                    push(
                        "rule",
                        ErrorType::Forbidden,
                        cost_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
                    );
                }
                Ok(p)
            }
            Err(e) => {
                push(
                    "rule",
                    ErrorType::Invalid(Some(upstream_struct.clone())),
                    e.detail().to_string(),
                );
                Err(e.detail().to_string())
            }
        }
    };
    let uses_old_self = program.as_ref().is_ok_and(|p| p.references("oldSelf"));
    if optional_old_self && program.is_ok() && !uses_old_self {
        push(
            "optionalOldSelf",
            ErrorType::Forbidden,
            "may not be set if oldSelf is not used in rule".into(),
        );
    }
    let message_expression = text("messageExpression").map(|m| {
        if m.trim().is_empty() {
            push(
                "messageExpression",
                ErrorType::Required,
                "messageExpression must be non-empty if specified".into(),
            );
            return Err("messageExpression must be non-empty if specified".to_string());
        }
        match Program::compile(&m, &env) {
            Ok(p) if !matches!(p.result_type(), Ty::String | Ty::Dyn) => {
                let d = "messageExpression must evaluate to a string".to_string();
                push(
                    "messageExpression",
                    ErrorType::Invalid(Some(upstream_struct.clone())),
                    d.clone(),
                );
                Err(d)
            }
            Ok(p) => {
                if p.max_cost() > STATIC_ESTIMATED_COST_LIMIT {
                    push(
                        "messageExpression",
                        ErrorType::Forbidden,
                        cost_message(
                            "estimated messageExpression cost",
                            p.max_cost(),
                            STATIC_ESTIMATED_COST_LIMIT,
                        ),
                    );
                }
                Ok(p)
            }
            Err(e) => {
                let d = format!("messageExpression {}", e.detail());
                push(
                    "messageExpression",
                    ErrorType::Invalid(Some(upstream_struct.clone())),
                    d.clone(),
                );
                Err(d)
            }
        }
    });
    if let Some(m) = text("message") {
        if m.trim().is_empty() {
            push(
                "message",
                ErrorType::Invalid(Some(json!(m))),
                "must be non-empty if specified".into(),
            );
        } else if m.contains(['\n', '\r']) {
            push(
                "message",
                ErrorType::Invalid(Some(json!(m))),
                "must not contain line breaks".into(),
            );
        }
    } else if rule.contains(['\n', '\r']) && text("messageExpression").is_none() {
        push(
            "message",
            ErrorType::Required,
            "message must be specified if rule contains line breaks".into(),
        );
    }
    if let Some(reason) = text("reason")
        && !matches!(
            reason.as_str(),
            "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate"
        )
    {
        push(
            "reason",
            ErrorType::Invalid(Some(json!(reason))),
            "supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                .into(),
        );
    }
    Rule {
        rule,
        message: text("message"),
        reason: text("reason"),
        field_path: text("fieldPath"),
        optional_old_self,
        uses_old_self,
        program,
        message_expression,
        cost,
    }
}

/// `self`'s declared type and sizes at a schema node (apiserver's `SchemaDeclType`).
fn decl(schema: &Json, root: bool, depth: usize) -> Decl {
    let m = MAX_REQUEST_SIZE_BYTES;
    let int = |k: &str| {
        schema
            .get(k)
            .and_then(Json::as_i64)
            .map(|v| u64::try_from(v).unwrap_or(0))
    };
    if depth > MAX_SCHEMA_DEPTH {
        return Decl::scalar(Ty::Dyn, m - 2);
    }
    if schema.get("x-kubernetes-int-or-string").and_then(Json::as_bool) == Some(true) {
        let max = int("maxLength").map_or(m - 2, |l| l.saturating_mul(4));
        return Decl {
            kind: DeclKind::Scalar(Ty::Dyn),
            max_elements: max,
            min_serialized_size: 1,
        };
    }
    match schema.get("type").and_then(Json::as_str) {
        Some("array") => {
            let items = schema
                .get("items")
                .map_or_else(|| Decl::scalar(Ty::Dyn, m - 2), |i| decl(i, false, depth + 1));
            let max = int("maxItems").unwrap_or((m - 2) / items.min_serialized_size.saturating_add(1));
            Decl::list(items, max)
        }
        Some("object") => {
            let props = schema.get("properties").and_then(Json::as_object);
            let embedded = schema.get("x-kubernetes-embedded-resource").and_then(Json::as_bool) == Some(true);
            if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object())
                && props.is_none()
            {
                let value = decl(additional, false, depth + 1);
                let max = int("maxProperties").unwrap_or((m - 2) / value.min_serialized_size.saturating_add(6));
                return Decl::map(Decl::scalar(Ty::String, 0), value, max);
            }
            // Without properties (say `x-kubernetes-preserve-unknown-fields`), an object has no fields
            // rules may read, as upstream declares it.
            let Some(props) = props else {
                if root || embedded {
                    return object_meta(BTreeMap::new(), "Object");
                }
                return Decl::object("Object", BTreeMap::new());
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Json::as_array)
                .map(|r| r.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            let mut fields = BTreeMap::new();
            let mut min = 2u64;
            for (k, s) in props {
                if (root || embedded) && matches!(k.as_str(), "metadata" | "apiVersion" | "kind") {
                    continue;
                }
                let d = decl(s, false, depth + 1);
                if required.contains(&k.as_str()) && s.get("default").is_none() {
                    min = min
                        .saturating_add(k.len() as u64)
                        .saturating_add(d.min_serialized_size)
                        .saturating_add(4);
                }
                fields.insert(escape_field_name(k), d);
            }
            let mut d = if root || embedded {
                object_meta(fields, "Object")
            } else {
                Decl::object("Object", fields)
            };
            d.min_serialized_size = min;
            d
        }
        Some("string") => match schema.get("format").and_then(Json::as_str) {
            Some("byte") => Decl {
                kind: DeclKind::Scalar(Ty::Bytes),
                max_elements: int("maxLength").unwrap_or(m - 2),
                min_serialized_size: 2,
            },
            Some("duration") => Decl {
                kind: DeclKind::Scalar(Ty::Duration),
                max_elements: 32,
                min_serialized_size: 3,
            },
            Some("date") => Decl {
                kind: DeclKind::Scalar(Ty::Timestamp),
                max_elements: 12,
                min_serialized_size: 12,
            },
            Some("date-time") => Decl {
                kind: DeclKind::Scalar(Ty::Timestamp),
                max_elements: 32,
                min_serialized_size: 21,
            },
            _ => {
                let enum_max = schema
                    .get("enum")
                    .and_then(Json::as_array)
                    .and_then(|e| e.iter().filter_map(Json::as_str).map(|s| s.len() as u64).max());
                let max = int("maxLength")
                    .map(|l| l.saturating_mul(4))
                    .or(enum_max)
                    .unwrap_or(m - 2);
                Decl {
                    kind: DeclKind::Scalar(Ty::String),
                    max_elements: max,
                    min_serialized_size: 2,
                }
            }
        },
        Some("boolean") => Decl {
            kind: DeclKind::Scalar(Ty::Bool),
            max_elements: 0,
            min_serialized_size: 4,
        },
        Some("number") => Decl {
            kind: DeclKind::Scalar(Ty::Double),
            max_elements: 0,
            min_serialized_size: 1,
        },
        Some("integer") => Decl {
            kind: DeclKind::Scalar(Ty::Int),
            max_elements: 0,
            min_serialized_size: 1,
        },
        _ => Decl::scalar(Ty::Dyn, m - 2),
    }
}

/// An object at a resource's root (or embedded): `apiVersion`, `kind` and `metadata.name` /
/// `metadata.generateName` (253 / 252 characters) besides its own fields.
fn object_meta(mut fields: BTreeMap<String, Decl>, name: &str) -> Decl {
    let m = MAX_REQUEST_SIZE_BYTES;
    fields.insert("apiVersion".into(), Decl::scalar(Ty::String, m - 2));
    fields.insert("kind".into(), Decl::scalar(Ty::String, m - 2));
    let mut meta = BTreeMap::new();
    meta.insert("name".into(), Decl::scalar(Ty::String, 253 * 4));
    meta.insert("generateName".into(), Decl::scalar(Ty::String, 252 * 4));
    fields.insert("metadata".into(), Decl::object("ObjectMeta", meta));
    Decl::object(name, fields)
}

impl CompiledSchema {
    /// Whether any rule is declared.
    pub fn has_rules(&self) -> bool {
        self.root.has_rules
    }

    /// The estimated total cost of the schema's rules.
    pub fn estimated_total(&self) -> u64 {
        self.total
    }

    /// The write-time errors of the CRD, with `base` (`spec.validation.openAPIV3Schema` or
    /// `spec.versions[i].schema.openAPIV3Schema`) before each path.
    pub fn write_errors(&self, base: &str) -> Vec<FieldError> {
        self.errors
            .iter()
            .map(|(path, e)| FieldError {
                field: format!("{base}{path}"),
                kind: e.kind.clone(),
                detail: e.detail.clone(),
            })
            .collect()
    }

    /// Runs the rules on `obj` (and on update `old`), in kube-apiserver's order, with its limits.
    pub fn validate(&self, obj: &Json, old: Option<&Json>) -> Vec<FieldError> {
        let mut run = Run {
            errors: Vec::new(),
            budget: RUNTIME_CEL_COST_BUDGET,
            stopped: false,
        };
        if self.root.has_rules {
            let root_obj = obj.clone();
            run.walk(&self.root, &root_obj, old, None, true);
        }
        run.errors
    }
}

struct Run {
    errors: Vec<FieldError>,
    budget: u64,
    stopped: bool,
}

fn child(path: Option<&str>, name: &str) -> String {
    match path {
        None | Some("") => name.to_string(),
        Some(p) => format!("{p}.{name}"),
    }
}

impl Run {
    fn walk(&mut self, n: &Node, value: &Json, old: Option<&Json>, path: Option<&str>, root: bool) {
        if self.stopped || value.is_null() {
            return;
        }
        stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || {
            if !n.rules.is_empty() {
                self.rules(n, value, old, path, root);
            }
            if self.stopped {
                return;
            }
            if let (Some(items), Some(arr)) = (&n.items, value.as_array())
                && items.has_rules
            {
                let old_arr = old.and_then(Json::as_array);
                for (i, v) in arr.iter().enumerate() {
                    let p = format!("{}[{i}]", path.unwrap_or(""));
                    self.walk(items, v, old_arr.and_then(|a| a.get(i)), Some(&p), false);
                    if self.stopped {
                        return;
                    }
                }
            }
            if let Some(obj) = value.as_object() {
                if let Some(additional) = n.additional.as_ref().filter(|a| a.has_rules) {
                    for (k, v) in obj {
                        if n.properties.contains_key(k) {
                            continue;
                        }
                        let p = format!("{}[{k}]", path.unwrap_or(""));
                        self.walk(additional, v, old.and_then(|o| o.get(k)), Some(&p), false);
                        if self.stopped {
                            return;
                        }
                    }
                }
                for (k, c) in n.properties.iter().filter(|(_, c)| c.has_rules) {
                    if let Some(v) = obj.get(k) {
                        let p = child(path, k);
                        self.walk(c, v, old.and_then(|o| o.get(k)), Some(&p), false);
                        if self.stopped {
                            return;
                        }
                    }
                }
            }
        });
    }

    fn stop(&mut self, field: &str, ty: &str, detail: String) {
        self.errors.push(FieldError {
            field: field.to_string(),
            kind: ErrorType::Invalid(Some(json!(ty))),
            detail,
        });
        self.stopped = true;
    }

    fn rules(&mut self, n: &Node, value: &Json, old: Option<&Json>, path: Option<&str>, root: bool) {
        let field = path.filter(|p| !p.is_empty()).unwrap_or("<nil>").to_string();
        let out_of_budget =
            "validation failed due to running out of cost budget, no further validation rules will be run";
        if self.budget == 0 {
            self.stop(&field, &n.ty, out_of_budget.into());
            return;
        }
        let _ = root;
        let this = from_json(value, Some(&n.schema));
        let old_value = old.map(|o| from_json(o, Some(&n.schema)));
        for r in &n.rules {
            let program = match &r.program {
                Ok(p) => p,
                Err(e) => {
                    self.errors.push(FieldError {
                        field: field.clone(),
                        kind: ErrorType::Invalid(Some(json!(n.ty))),
                        detail: format!("rule compile error: {e}"),
                    });
                    continue;
                }
            };
            let old_self = match (&old_value, r.uses_old_self, r.optional_old_self) {
                (_, false, _) => None,
                (Some(o), true, false) => Some(o.clone()),
                (None, true, false) => continue,
                (o, true, true) => Some(Value::Opaque(Arc::new(match o {
                    Some(o) => kube_cel::cel::objects::OptionalValue::of(o.clone()),
                    None => kube_cel::cel::objects::OptionalValue::none(),
                }))),
            };
            let mut vars = vec![("self", this.clone())];
            if let Some(o) = old_self {
                vars.push(("oldSelf", o));
            }
            let limit = PER_CALL_LIMIT.min(self.budget);
            let out = program.evaluate(&vars, limit);
            if out.cost > self.budget {
                self.stop(&field, &n.ty, out_of_budget.into());
                return;
            }
            self.budget -= out.cost;
            let rule_text = r.message.clone().unwrap_or_else(|| r.rule.trim().to_string());
            match out.result {
                Err(crate::EvalError::CostLimitExceeded) => {
                    self.stop(
                        &field,
                        &n.ty,
                        format!(
                            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule_text}"
                        ),
                    );
                    return;
                }
                Err(e) => {
                    let m = e.to_string();
                    let detail = if m.starts_with("no such overload") {
                        format!(
                            "'{m}': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}"
                        )
                    } else {
                        format!("{m} evaluating rule: {rule_text}")
                    };
                    self.errors.push(FieldError {
                        field: field.clone(),
                        kind: ErrorType::Invalid(Some(json!(n.ty))),
                        detail,
                    });
                }
                Ok(Value::Bool(true)) => {}
                Ok(_) => {
                    let at = match &r.field_path {
                        Some(fp) if !fp.is_empty() => {
                            let fp = fp.trim_start_matches('.');
                            if field == "<nil>" {
                                fp.to_string()
                            } else {
                                format!("{field}.{fp}")
                            }
                        }
                        _ => field.clone(),
                    };
                    let detail = match self.message(r, &vars) {
                        Ok(Some(m)) => m,
                        Ok(None) => match &r.message {
                            Some(m) if !m.trim().is_empty() => m.trim().to_string(),
                            _ => format!("failed rule: {}", r.rule.trim()),
                        },
                        Err(stop) => {
                            self.stop(&field, &n.ty, stop);
                            return;
                        }
                    };
                    let value = if matches!(n.ty.as_str(), "object" | "array") {
                        None
                    } else {
                        Some(value.clone())
                    };
                    let kind = match r.reason.as_deref() {
                        Some("FieldValueForbidden") => ErrorType::Forbidden,
                        Some("FieldValueRequired") => ErrorType::Required,
                        Some("FieldValueDuplicate") => ErrorType::Duplicate(value.clone().unwrap_or(json!(n.ty))),
                        _ => ErrorType::Invalid(value),
                    };
                    self.errors.push(FieldError {
                        field: at,
                        kind,
                        detail,
                    });
                }
            }
            if self.stopped {
                return;
            }
        }
    }

    /// The rule's `messageExpression` result (`Ok(None)`: use the message), or the error that stops
    /// validation.
    fn message(&mut self, r: &Rule, vars: &[(&str, Value)]) -> Result<Option<String>, String> {
        let Some(Ok(p)) = &r.message_expression else {
            return Ok(None);
        };
        let out = p.evaluate(vars, PER_CALL_LIMIT.min(self.budget));
        if out.cost > self.budget {
            return Err(
                "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"
                    .into(),
            );
        }
        self.budget -= out.cost;
        match out.result {
            Err(crate::EvalError::CostLimitExceeded) => Err(format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {:?}",
                p.source()
            )),
            Ok(Value::String(s)) => {
                let t = s.trim();
                if t.is_empty() || t.len() > MAX_MESSAGE_EXPRESSION_BYTES || t.contains('\n') {
                    Ok(None)
                } else {
                    Ok(Some(t.to_string()))
                }
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests;
