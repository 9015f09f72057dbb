//! resource.k8s.io/v1 DeviceClass (cluster-scoped): `ValidateDeviceClass` and `ValidateDeviceClassUpdate`
//! (at most 32 selectors whose CEL expressions compile, recompiled on update only when the selectors
//! changed; at most 32 opaque configurations; an extended resource name), `generation` bumped on spec
//! changes, and `kubectl get deviceclasses`' columns (NAME, AGE). devcluster creates the class of its
//! simulated driver, `gpu.kwas.dev`, at start (`sim::dra`).

use k8s_openapi::api::resource::v1::{DeviceClass, DeviceClassSpec};
use serde_json::{Value, json};

use super::{Causes, GROUP, MAX_CONFIG, invalid, opaque, selectors, within};
use crate::error::{ApiError, FieldCause};
use crate::resource::decode;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};
use workloadbuilder::validation::strings;

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(GROUP, "v1", "DeviceClass", "deviceclasses", false, DeviceClassStrategy)
}

#[derive(Debug)]
struct DeviceClassStrategy;

impl Strategy for DeviceClassStrategy {
    type Object = DeviceClass;

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::typed::<DeviceClass>(cx.request, res, obj)?;
        super::precompile(cx.request, obj);
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let class: DeviceClass = decode::parse(res, obj)?;
        let mut c = Causes::for_request(cx.request);
        spec(&class.spec.unwrap_or_default(), None, &mut c);
        invalid(res, obj, c.finish())
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let (new, old): (DeviceClass, DeviceClass) = (decode::parse(res, obj)?, decode::parse(res, old)?);
        let mut c = Causes::for_request(cx.request);
        spec(
            &new.spec.unwrap_or_default(),
            Some(&old.spec.unwrap_or_default()),
            &mut c,
        );
        invalid(res, obj, c.finish())
    }
}

/// `validateDeviceClassSpec`: selectors and configurations unchanged since `old` count as stored (their
/// expressions are not compiled again).
fn spec(spec: &DeviceClassSpec, old: Option<&DeviceClassSpec>, c: &mut Causes) {
    if old.is_none_or(|o| o.selectors != spec.selectors) {
        selectors(spec.selectors.as_deref(), "spec.selectors", c);
    } else {
        within(
            spec.selectors.as_ref().map_or(0, Vec::len),
            super::MAX_SELECTORS,
            "spec.selectors",
            c,
        );
    }
    let config = spec.config.as_deref().unwrap_or_default();
    if within(config.len(), MAX_CONFIG, "spec.config", c) && old.is_none_or(|o| o.config != spec.config) {
        for (i, k) in config.iter().enumerate() {
            opaque(k.opaque.as_ref(), &format!("spec.config[{i}]"), c);
        }
    }
    if let Some(name) = &spec.extended_resource_name
        && !is_extended_resource_name(name)
    {
        c.push(FieldCause::invalid(
            "spec.extendedResourceName",
            &json!(name),
            "must be a valid extended resource name",
        ));
    }
}

/// `IsExtendedResourceName`: a qualified name outside `kubernetes.io/`, not `requests.`-prefixed, that
/// stays a qualified name behind `requests.`.
pub(crate) fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.") && strings::is_qualified_name(&format!("requests.{name}")).is_empty()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::State;
    use crate::request::RequestContext;

    fn create(
        state: &mut State,
        name: &str,
        spec: serde_json::Value,
    ) -> Result<std::sync::Arc<serde_json::Value>, String> {
        let res = state.builtin("resource.k8s.io", "deviceclasses").unwrap();
        state
            .create(
                &res,
                "",
                json!({"metadata": {"name": name}, "spec": spec}),
                &mut RequestContext::manager("t"),
            )
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn selectors_must_compile_and_configs_be_opaque_objects() {
        let mut state = State::new(100, Default::default());
        let class = create(
            &mut state,
            "c",
            json!({"selectors": [{"cel": {"expression": "device.driver == \"gpu.kwas.dev\""}}]}),
        )
        .unwrap();
        assert_eq!(class["metadata"]["generation"], 1);
        let err = create(
            &mut state,
            "bad",
            json!({"selectors": [{"cel": {"expression": "device.driver =="}}, {}],
                "config": [{"opaque": {"driver": "x.example.com", "parameters": [1]}}, {}],
                "extendedResourceName": "cpu"}),
        )
        .unwrap_err();
        for want in [
            "DeviceClass.resource.k8s.io \"bad\" is invalid",
            "spec.selectors[1].cel: Required value",
            "spec.config[0].opaque.parameters: Invalid value: \"<value omitted>\": must be a valid JSON object",
            "spec.config[1].opaque: Required value",
            "spec.extendedResourceName: Invalid value: \"cpu\": must be a valid extended resource name",
            "spec.selectors[0].cel.expression: Invalid value: \"device.driver ==\": compilation failed: ERROR: <input>:1:",
        ] {
            assert!(err.contains(want), "{want} missing from {err}");
        }
        let many: Vec<_> = (0..33).map(|_| json!({"cel": {"expression": "true"}})).collect();
        let err = create(&mut state, "many", json!({"selectors": many})).unwrap_err();
        assert!(
            err.contains("spec.selectors: Too many: 33: must have at most 32 items"),
            "{err}"
        );
        assert!(super::is_extended_resource_name("example.com/gpu"));
        assert!(!super::is_extended_resource_name("kubernetes.io/gpu"));
    }
}
