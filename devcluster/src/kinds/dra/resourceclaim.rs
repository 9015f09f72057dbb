//! resource.k8s.io/v1 ResourceClaim (namespaced, with a `status` subresource), as kube-apiserver's
//! `pkg/registry/resource/resourceclaim` strategy and `ValidateResourceClaim*`:
//!
//! - create: the status a client sends is dropped; requests defaulted (`allocationMode: ExactCount`,
//!   `count: 1`); the device claim validated (requests, sub-requests, selectors whose CEL compiles,
//!   constraints and config naming existing requests, the size limits); `adminAccess` needs the
//!   namespace label `resource.kubernetes.io/admin-access: "true"`.
//! - update: the spec is immutable.
//! - status: `ValidateResourceClaimStatusUpdate` (`reservedFor` bounded, unique, only with an allocation,
//!   not growing while the claim is deleted; an allocation set once and never changed, cleared only
//!   together with `reservedFor`; devices' status only for allocated devices, dropped when they are
//!   deallocated).
//! - `kubectl get resourceclaims`: NAME, STATE (`pending`, `allocated,reserved`, `deleted`), AGE.

use k8s_openapi::api::resource::v1::ResourceClaim;
use serde_json::Value;

use super::{
    CLAIM_QUANTITIES, Causes, GROUP, admin_access, check_quantities, default_device_claim, device_claim, invalid,
};
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, name, text_cell};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, StatusStrategy, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        GROUP,
        "v1",
        "ResourceClaim",
        "resourceclaims",
        true,
        ResourceClaimStrategy,
    )
    .with_status_strategy(ClaimStatus)
}

#[derive(Debug)]
struct ResourceClaimStrategy;

impl Strategy for ResourceClaimStrategy {
    type Object = ResourceClaim;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<ResourceClaim>(cx.request, res, obj)?;
        for p in CLAIM_QUANTITIES {
            let mut full = vec!["spec", "devices"];
            full.extend_from_slice(p);
            check_quantities(res, obj, &[&full])?;
        }
        check_quantities(
            res,
            obj,
            &[&[
                "status",
                "allocation",
                "devices",
                "results",
                "*",
                "consumedCapacity",
                "*",
            ]],
        )?;
        super::precompile(cx.request, obj);
        Ok(())
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        if cx.creating()
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        if let Some(devices) = obj.pointer_mut("/spec/devices") {
            default_device_claim(devices);
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let claim: ResourceClaim = decode::parse(res, obj)?;
        let mut c = Causes::for_request(cx.request);
        admin_access(
            cx.store,
            meta::namespace(obj),
            claim.spec.as_ref().and_then(|s| s.devices.as_ref()),
            "spec.devices",
            &mut c,
        );
        device_claim(
            claim.spec.as_ref().and_then(|s| s.devices.as_ref()),
            "spec.devices",
            &mut c,
        );
        invalid(res, obj, c.finish())
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let (new, before): (ResourceClaim, ResourceClaim) = (decode::parse(res, obj)?, decode::parse(res, old)?);
        let mut c = Causes::for_request(cx.request);
        if new.spec != before.spec {
            c.push(FieldCause::immutable("spec", obj.get("spec").unwrap_or(&Value::Null)));
        }
        invalid(res, obj, c.finish())
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "State",
                "string",
                0,
                "A summary of the current state (allocated, pending, reserved, etc.).",
            ),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![name(obj), text_cell(state(obj)), age(obj)]
    }
}

/// Claims' status writes (allocation, reservation, device statuses): devices no longer allocated lose their status; the status is validated against the old one.
#[derive(Debug)]
struct ClaimStatus;

impl StatusStrategy for ClaimStatus {
    fn prepare_for_update(&self, _cx: &mut AdmitContext<'_>, old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        drop_deallocated_devices(old, obj);
        Ok(())
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let (new, before): (ResourceClaim, ResourceClaim) = (decode::parse(res, obj)?, decode::parse(res, old)?);
        let mut c = Causes::for_request(cx.request);
        let names = super::request_names(new.spec.as_ref().and_then(|s| s.devices.as_ref()));
        super::status_update(
            &new.status.clone().unwrap_or_default(),
            &before.status.clone().unwrap_or_default(),
            meta::is_deleting(obj),
            &names,
            &mut c,
        );
        invalid(res, obj, c.finish())
    }
}

/// `dropDeallocatedStatusDevices`: a status update that takes devices out of the allocation drops their
/// entries from `status.devices`.
fn drop_deallocated_devices(old: &Value, obj: &mut Value) {
    let ids = |c: &Value| -> Vec<(Value, Value, Value)> {
        c.pointer("/status/allocation/devices/results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| {
                let f = |k: &str| r.get(k).cloned().unwrap_or(Value::Null);
                (f("driver"), f("pool"), f("device"))
            })
            .collect()
    };
    let kept = ids(obj);
    let gone: Vec<_> = ids(old).into_iter().filter(|d| !kept.contains(d)).collect();
    if gone.is_empty() {
        return;
    }
    if let Some(devices) = obj.pointer_mut("/status/devices").and_then(Value::as_array_mut) {
        devices.retain(|d| {
            let f = |k: &str| d.get(k).cloned().unwrap_or(Value::Null);
            !gone.contains(&(f("driver"), f("pool"), f("device")))
        });
        if devices.is_empty()
            && let Some(st) = obj.get_mut("status").and_then(Value::as_object_mut)
        {
            st.remove("devices");
        }
    }
}

/// `resourceClaimState`: `deleted` while being deleted, then `pending` (not allocated, not deleted) or
/// `allocated` and `reserved`, comma-separated.
pub(crate) fn state(obj: &Value) -> String {
    let mut states = Vec::new();
    let deleting = meta::is_deleting(obj);
    if deleting {
        states.push("deleted");
    }
    if obj.pointer("/status/allocation").is_none_or(Value::is_null) {
        if !deleting {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if obj
            .pointer("/status/reservedFor")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty())
        {
            states.push("reserved");
        }
    }
    states.join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::api::State;
    use crate::request::RequestContext;

    fn claim(requests: Value) -> Value {
        named("gpu", requests)
    }

    fn named(name: &str, requests: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {"requests": requests}}})
    }

    fn ctx() -> RequestContext {
        RequestContext::manager("t")
    }

    #[test]
    fn requests_are_defaulted_and_validated_with_upstream_paths() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("resource.k8s.io", "resourceclaims").unwrap();
        let mut with_status = claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu.kwas.dev"}}]));
        with_status["status"] = json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]});
        let c = state.create(&res, "default", with_status, &mut ctx()).unwrap();
        assert_eq!(
            c["spec"]["devices"]["requests"][0]["exactly"],
            json!({"deviceClassName": "gpu.kwas.dev", "allocationMode": "ExactCount", "count": 1})
        );
        assert!(c.get("status").is_none_or(|s| s.get("reservedFor").is_none()), "{c}");
        assert_eq!(res.strategy.cells(&res, &c)[1], "pending");

        let bad = named(
            "bad",
            json!([
                {"name": "a", "exactly": {"deviceClassName": "gpu.kwas.dev", "count": -2}},
                {"name": "a", "exactly": {"deviceClassName": "Not_A_Class", "allocationMode": "All", "count": 3,
                    "selectors": [{"cel": {"expression": "device.attributes[\"gpu.kwas.dev\"].model =="}}]}},
                {"name": "b"},
                {"name": "c", "exactly": {"deviceClassName": "x"}, "firstAvailable": [{"name": "s", "deviceClassName": "x"}]},
                {"name": "d", "firstAvailable": [{"name": "s", "deviceClassName": "x", "allocationMode": "Some"}]},
            ]),
        );
        let mut bad = bad;
        bad["spec"]["devices"]["constraints"] =
            json!([{"matchAttribute": "model", "requests": ["a", "zz", "d/s", "d/t"]}, {"requests": ["a"]}]);
        bad["spec"]["devices"]["config"] =
            json!([{"requests": ["nope"], "opaque": {"driver": "gpu.kwas.dev", "parameters": {"a": 1}}}]);
        let err = state.create(&res, "default", bad, &mut ctx()).unwrap_err();
        assert_eq!(err.code(), 422);
        let msg = err.message();
        for want in [
            "spec.devices.requests[0].exactly.count: Invalid value: -2: must be greater than zero",
            "spec.devices.requests[1]: Duplicate value: \"a\"",
            "spec.devices.requests[1].exactly.deviceClassName: Invalid value: \"Not_A_Class\"",
            "spec.devices.requests[1].exactly.count: Invalid value: 3: must not be specified when allocationMode is 'All'",
            "spec.devices.requests[1].exactly.selectors[0].cel.expression: Invalid value: \"device.attributes[\\\"gpu.kwas.dev\\\"].model ==\": compilation failed: ERROR: <input>:1:",
            "spec.devices.requests[2]: Required value: exactly one of `exactly` or `firstAvailable` is required",
            "spec.devices.requests[3]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            "spec.devices.requests[4].firstAvailable[0].allocationMode: Unsupported value: \"Some\": supported values: \"All\", \"ExactCount\"",
            "spec.devices.constraints[0].matchAttribute: Invalid value: \"model\": a fully qualified name must be a domain and a name separated by a slash",
            "spec.devices.constraints[0].requests[1]: Invalid value: \"zz\": must be the name of a request in the claim",
            "spec.devices.constraints[0].requests[3]: Invalid value: \"d/t\"",
            "spec.devices.constraints[1]: Required value",
            "spec.devices.config[0].requests[0]: Invalid value: \"nope\"",
        ] {
            assert!(msg.contains(want), "{want}\nmissing from\n{msg}");
        }
        assert!(!msg.contains("requests[2]: Invalid value: \"d/s\""), "{msg}");
        let too_many: Vec<Value> = (0..33)
            .map(|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "c"}}))
            .collect();
        let err = state
            .create(&res, "default", named("many", json!(too_many)), &mut ctx())
            .unwrap_err();
        assert!(
            err.message()
                .contains("spec.devices.requests: Too many: 33: must have at most 32 items"),
            "{}",
            err.message()
        );
        let admin = named(
            "admin",
            json!([{"name": "a", "exactly": {"deviceClassName": "c", "adminAccess": true}}]),
        );
        let err = state.create(&res, "default", admin, &mut ctx()).unwrap_err();
        assert!(err.message().contains("spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"), "{}", err.message());
    }

    #[test]
    fn spec_is_immutable_and_status_follows_the_allocation_rules() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("resource.k8s.io", "resourceclaims").unwrap();
        let c = state
            .create(
                &res,
                "default",
                claim(json!([{"name": "g", "exactly": {"deviceClassName": "gpu.kwas.dev"}}])),
                &mut ctx(),
            )
            .unwrap();
        let mut changed = (*c).clone();
        changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
        let err = state
            .update(&res, "default", "gpu", changed, None, &mut ctx())
            .unwrap_err();
        assert!(err.message().contains("spec: Invalid value: "), "{}", err.message());
        assert!(err.message().ends_with("field is immutable"), "{}", err.message());

        let status = |c: &Value, st: Value| {
            let mut c = c.clone();
            c["status"] = st;
            c
        };
        let pod = json!({"resource": "pods", "name": "p", "uid": "u1"});
        let alloc = json!({"devices": {"results": [{"request": "g", "driver": "gpu.kwas.dev", "pool": "n1", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}});
        let reserve_only = status(&c, json!({"reservedFor": [pod]}));
        let err = state
            .update(&res, "default", "gpu", reserve_only, Some("status"), &mut ctx())
            .unwrap_err();
        assert!(
            err.message()
                .contains("status.reservedFor: Forbidden: may not be specified when `allocated` is not set"),
            "{}",
            err.message()
        );
        let bad_alloc = status(
            &c,
            json!({"allocation": {"devices": {"results": [{"request": "h", "driver": "gpu.kwas.dev", "pool": "n1", "device": "GPU_0"}]}}}),
        );
        let err = state
            .update(&res, "default", "gpu", bad_alloc, Some("status"), &mut ctx())
            .unwrap_err();
        for want in [
            "status.allocation.devices.results[0].request: Invalid value: \"h\"",
            "status.allocation.devices.results[0].device: Invalid value: \"GPU_0\"",
        ] {
            assert!(err.message().contains(want), "{want} missing from {}", err.message());
        }
        let ok = status(
            &c,
            json!({"allocation": alloc, "reservedFor": [pod.clone(), pod.clone()]}),
        );
        let err = state
            .update(&res, "default", "gpu", ok, Some("status"), &mut ctx())
            .unwrap_err();
        assert!(
            err.message().contains("status.reservedFor[1]: Duplicate value: \"u1\""),
            "{}",
            err.message()
        );
        let ok = status(&c, json!({"allocation": alloc, "reservedFor": [pod]}));
        let c = state
            .update(&res, "default", "gpu", ok, Some("status"), &mut ctx())
            .unwrap();
        assert_eq!(res.strategy.cells(&res, &c)[1], "allocated,reserved");
        let mut moved = (*c).clone();
        moved["status"]["allocation"]["devices"]["results"][0]["device"] = json!("gpu-1");
        let err = state
            .update(&res, "default", "gpu", moved, Some("status"), &mut ctx())
            .unwrap_err();
        assert!(
            err.message().contains("status.allocation: Invalid value: "),
            "{}",
            err.message()
        );
        // A driver reports a device's status; a status for a device not allocated is refused.
        let mut reported = (*c).clone();
        reported["status"]["devices"] = json!([{"driver": "gpu.kwas.dev", "pool": "n1", "device": "gpu-0",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Prepared", "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}]);
        let c = state
            .update(&res, "default", "gpu", reported.clone(), Some("status"), &mut ctx())
            .unwrap();
        reported["status"]["devices"][0]["device"] = json!("gpu-7");
        reported["metadata"]["resourceVersion"] = c["metadata"]["resourceVersion"].clone();
        let err = state
            .update(&res, "default", "gpu", reported, Some("status"), &mut ctx())
            .unwrap_err();
        assert!(
            err.message().contains(
                "status.devices[0]: Invalid value: \"gpu.kwas.dev/n1/gpu-7\": must be an allocated device in the claim"
            ),
            "{}",
            err.message()
        );
        // Clearing the allocation while reserved is refused; clearing both is allowed (and drops the
        // deallocated devices' status).
        let mut cleared = (*c).clone();
        cleared["status"]["allocation"] = Value::Null;
        assert!(
            state
                .update(&res, "default", "gpu", cleared.clone(), Some("status"), &mut ctx())
                .is_err()
        );
        cleared["status"]["reservedFor"] = Value::Null;
        let c = state
            .update(&res, "default", "gpu", cleared, Some("status"), &mut ctx())
            .unwrap();
        assert_eq!(res.strategy.cells(&res, &c)[1], "pending");
        assert!(c["status"].get("devices").is_none(), "{c}");
        let too_many: Vec<Value> = (0..257)
            .map(|i| json!({"resource": "pods", "name": format!("p{i}"), "uid": format!("u{i}")}))
            .collect();
        let full = status(&c, json!({"allocation": alloc, "reservedFor": too_many}));
        let err = state
            .update(&res, "default", "gpu", full, Some("status"), &mut ctx())
            .unwrap_err();
        assert!(
            err.message()
                .contains("status.reservedFor: Too many: 257: must have at most 256 items"),
            "{}",
            err.message()
        );
    }
}
