//! Admission, as kube-apiserver runs it for every create and update: the kind's storage conversion, name
//! and label validation, then the kind's [`Strategy`](crate::resource::Strategy) steps in order: typed
//! decoding, defaulting and server-owned fields, mutating admission plugins, validation (or, through the
//! `status` subresource, the kind's status strategy). The helpers kinds share live here: the Priority
//! admission plugin ([`priority`]), structural schemas of custom resources ([`schema`]); typed decoding is
//! [`crate::resource::decode`].
//!
//! Two steps are not in [`admit`], because the write path runs them elsewhere (see `api::write`): the
//! `x-kubernetes-validations` CEL rules of custom resources ([`schema::check_rules`], which a request body
//! can make expensive) run after it without the cluster lock, and, for creates, the ResourceQuota plugin
//! ([`quota`]) runs when the object is committed.

pub(crate) mod priority;
pub(crate) mod quota;
pub(crate) mod rules;
pub(crate) mod schema;

use serde_json::{Value, json};

use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::{AdmitContext, NameRule, Operation, ResourceInfo};
use workloadbuilder::validation::strings;

/// Admits an object (`cx.res`, replacing `cx.old`): converts it to its storage form, then decodes,
/// defaults, mutates and validates it in place (without the CEL rules and ResourceQuota: see the module
/// docs).
pub(crate) fn admit(cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
    decode(cx, obj)?;
    admit_decoded(cx, obj)
}

/// The first steps of [`admit`], which read nothing but the object (not `cx.store`): the storage form,
/// the name and labels, typed decoding. The write path runs them for updates without the cluster lock.
pub(crate) fn decode(cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let res = cx.res;
    *obj = res.to_storage(std::mem::take(obj))?;
    validate_name(res, obj)?;
    res.strategy.decode(cx, obj)
}

/// Typed decoding alone (the storage form, then the kind's [`Strategy::decode`](crate::resource::Strategy)),
/// which reads nothing but the object: the write path runs it for creates without the cluster lock,
/// before the server picks a generated name, and [`admit_typed`] does the rest under the lock.
pub(crate) fn decode_typed(cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let res = cx.res;
    *obj = res.to_storage(std::mem::take(obj))?;
    res.strategy.decode(cx, obj)
}

/// [`admit`] after [`decode_typed`]: the name and labels, then [`admit_decoded`].
pub(crate) fn admit_typed(cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
    validate_name(cx.res, obj)?;
    admit_decoded(cx, obj)
}

/// The rest of [`admit`] after [`decode`]: defaults and server-owned fields, mutating plugins, validation
/// (steps that may read other objects). A write through the `status` subresource is the resource's
/// [`StatusStrategy`](crate::resource::StatusStrategy)'s instead.
pub(crate) fn admit_decoded(cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let res = cx.res;
    if cx.status() {
        // Status writes are always updates of a stored object.
        let Some(old) = cx.old else { return Ok(()) };
        res.status_strategy.prepare_for_update(cx, old, obj)?;
        return res.status_strategy.validate_update(cx, old, obj);
    }
    res.strategy.prepare(cx, obj)?;
    res.strategy.admit(cx, obj)?;
    match (cx.op, cx.old) {
        (Operation::Update, Some(old)) => res.strategy.validate_update(cx, old, obj),
        _ => res.strategy.validate(cx, obj),
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

#[cfg(test)]
mod tests {
    //! Property tests of every kind's decoding and admission: arbitrary objects, with numbers at their
    //! types' limits, far-future and malformed timestamps and wrong types anywhere, are admitted or refused
    //! with a client error; nothing panics and nothing answers 5xx.

    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use crate::api::State;
    use crate::request::RequestContext;

    fn extreme() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!(i64::MAX)),
            Just(json!(i64::MIN)),
            Just(json!(u64::MAX)),
            Just(json!(i32::MAX)),
            Just(json!(i32::MIN)),
            Just(json!(-1)),
            Just(json!(0)),
            Just(json!(1e308)),
            Just(json!("9999-12-31T23:59:59Z")),
            Just(json!("0001-01-01T00:00:00Z")),
            Just(json!("not a time")),
            Just(json!("100000000000000000000s")),
            Just(json!("")),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-zA-Z0-9./_-]{0,20}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let keys = prop_oneof![
            Just("metadata"),
            Just("spec"),
            Just("status"),
            Just("name"),
            Just("labels"),
            Just("annotations"),
            Just("containers"),
            Just("image"),
            Just("resources"),
            Just("requests"),
            Just("cpu"),
            Just("nodeName"),
            Just("schedulingPolicy"),
            Just("gang"),
            Just("minCount"),
            Just("minGroupCount"),
            Just("basic"),
            Just("parallelism"),
            Just("completions"),
            Just("activeDeadlineSeconds"),
            Just("backoffLimit"),
            Just("value"),
            Just("data"),
            Just("priority"),
            Just("priorityClassName"),
            Just("template"),
            Just("terminationGracePeriodSeconds"),
            Just("creationTimestamp"),
            Just("deletionTimestamp"),
            Just("podGroupTemplates"),
            Just("versions"),
            Just("group"),
            Just("names"),
            Just("scheduling"),
            Just("disruptionMode"),
            Just("topology"),
            Just("key"),
            Just("finalizers"),
            Just("ownerReferences"),
        ];
        extreme().prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>()
                )),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn every_kind_admits_or_refuses_arbitrary_objects(spec in value(), top in value(), update in value()) {
            let mut state = State::new(1000, Default::default());
            for res in state.registry.stored_resources() {
                let mut obj = json!({"metadata": {"name": "x"}, "spec": spec.clone()});
                if let (Value::Object(o), Value::Object(t)) = (&mut obj, &top) {
                    for (k, v) in t {
                        if k != "metadata" {
                            o.insert(k.clone(), v.clone());
                        }
                    }
                }
                let ns = if res.namespaced { "default" } else { "" };
                let created = state.create(&res, ns, obj, &mut RequestContext::manager("test"));
                match created {
                    Ok(stored) => {
                        let mut changed = (*stored).clone();
                        changed["spec"] = update.clone();
                        if let Err(e) = state.update(&res, ns, "x", changed, None, &mut RequestContext::manager("test")) {
                            prop_assert!(e.code() < 500, "{}: {}", res.plural, e.message());
                        }
                        let _ = state.delete(&res, ns, "x", &Default::default());
                    }
                    Err(e) => prop_assert!(e.code() < 500, "{}: {}", res.plural, e.message()),
                }
            }
        }
    }
}
