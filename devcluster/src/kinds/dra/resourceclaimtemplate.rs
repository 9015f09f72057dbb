//! resource.k8s.io/v1 ResourceClaimTemplate (namespaced): the claim spec it stamps out is defaulted and
//! validated as a ResourceClaim's (at `spec.spec.devices`, `adminAccess` needing the namespace label), its
//! `spec.metadata` as a template's metadata (labels and annotations); the whole spec is immutable.
//! `kubectl get resourceclaimtemplates`: NAME, AGE.

use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use serde_json::{Value, json};

use super::{
    CLAIM_QUANTITIES, Causes, GROUP, admin_access, check_quantities, default_device_claim, device_claim, invalid,
};
use crate::error::ApiError;
use crate::error::FieldCause;
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};
use workloadbuilder::validation::strings;

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        GROUP,
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        true,
        ResourceClaimTemplateStrategy,
    )
}

#[derive(Debug)]
struct ResourceClaimTemplateStrategy;

impl Strategy for ResourceClaimTemplateStrategy {
    type Object = ResourceClaimTemplate;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<ResourceClaimTemplate>(cx.request, res, obj)?;
        for p in CLAIM_QUANTITIES {
            let mut full = vec!["spec", "spec", "devices"];
            full.extend_from_slice(p);
            check_quantities(res, obj, &[&full])?;
        }
        super::precompile(cx.request, obj);
        Ok(())
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        if let Some(devices) = obj.pointer_mut("/spec/spec/devices") {
            default_device_claim(devices);
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let template: ResourceClaimTemplate = decode::parse(res, obj)?;
        let mut c = Causes::for_request(cx.request);
        template_metadata(obj.pointer("/spec/metadata"), &mut c);
        let devices = template
            .spec
            .as_ref()
            .and_then(|t| t.spec.as_ref())
            .and_then(|s| s.devices.as_ref());
        admin_access(cx.store, meta::namespace(obj), devices, "spec.spec.devices", &mut c);
        device_claim(devices, "spec.spec.devices", &mut c);
        invalid(res, obj, c.finish())
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut c = Causes::for_request(cx.request);
        if old.get("spec") != obj.get("spec") {
            c.push(FieldCause::immutable("spec", obj.get("spec").unwrap_or(&Value::Null)));
        }
        invalid(res, obj, c.finish())
    }
}

/// `ValidateTemplateObjectMeta`: the labels and annotations of the claims the template stamps out.
fn template_metadata(m: Option<&Value>, c: &mut Causes) {
    let Some(m) = m else { return };
    for (k, v) in m.get("labels").and_then(Value::as_object).into_iter().flatten() {
        crate::kinds::validate::label_name(k, "spec.metadata.labels", &mut c.list);
        let v = v.as_str().unwrap_or("");
        for msg in strings::is_valid_label_value(v) {
            c.push(FieldCause::invalid("spec.metadata.labels", &json!(v), &msg));
        }
    }
    for k in m
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        for msg in strings::is_qualified_name(&k.to_lowercase()) {
            c.push(FieldCause::invalid("spec.metadata.annotations", &json!(k), &msg));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::State;
    use crate::request::RequestContext;

    #[test]
    fn the_claim_spec_is_defaulted_validated_and_immutable() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("resource.k8s.io", "resourceclaimtemplates").unwrap();
        let t = state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": "gpu"}, "spec": {"metadata": {"labels": {"app": "a"}},
                    "spec": {"devices": {"requests": [{"name": "g", "firstAvailable": [{"name": "one", "deviceClassName": "gpu.kwas.dev"}]}]}}}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert_eq!(
            t["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"][0]["count"],
            1
        );
        let mut changed = (*t).clone();
        changed["spec"]["metadata"]["labels"]["app"] = json!("b");
        let err = state
            .update(&res, "default", "gpu", changed, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert!(err.message().ends_with("field is immutable"), "{}", err.message());
        let err = state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": "bad"}, "spec": {"metadata": {"labels": {"a b": "c"}},
                    "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "c",
                        "selectors": [{"cel": {"expression": "nope == 1"}}]}}]}}}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        for want in [
            "spec.metadata.labels: Invalid value: \"a b\"",
            "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: \"nope == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')",
        ] {
            assert!(err.message().contains(want), "{want} missing from {}", err.message());
        }
    }
}
