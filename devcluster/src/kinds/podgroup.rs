//! scheduling.k8s.io/v1alpha3 PodGroup and what it shares with CompositePodGroup: `disruptionMode`
//! defaulting to `single`, the Priority admission plugin, the PodGroupProtection finalizer, validation with
//! kube-apiserver's rules as `workloadbuilder` implements them, and the printer columns.

use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
use serde_json::{Value, json};

use super::print::{age, col, condition_status, name, s, str_at};
use crate::admission::{decode, priority};
use crate::error::ApiError;
use crate::meta;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "scheduling.k8s.io",
        "v1alpha3",
        "PodGroup",
        "podgroups",
        true,
        PodGroupStrategy,
    )
    .with_status()
}

#[derive(Debug)]
struct PodGroupStrategy;

impl Strategy for PodGroupStrategy {
    fn supports_field(&self, _res: &ResourceInfo, field: &str) -> bool {
        group_field(field)
    }

    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        Some(schemars::schema_for!(PodGroup))
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        decode::typed::<PodGroup>(cx.request, res, obj)
    }

    fn prepare(
        &self,
        cx: &mut AdmitContext<'_>,
        _res: &ResourceInfo,
        _old: Option<&Value>,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        prepare_group(cx, obj);
        Ok(())
    }

    fn admit(
        &self,
        cx: &mut AdmitContext<'_>,
        res: &ResourceInfo,
        _old: Option<&Value>,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        admit_group(cx, res, obj)
    }

    fn validate(&self, _cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
        decode::check(
            workloadbuilder::validation::validate_pod_group(&decode::parse(res, obj)?),
            res,
            obj,
        )
    }

    fn validate_update(
        &self,
        cx: &mut AdmitContext<'_>,
        res: &ResourceInfo,
        old: &Value,
        obj: &Value,
    ) -> Result<(), ApiError> {
        let (new, old) = (decode::parse(res, obj)?, decode::parse(res, old)?);
        let errors = if cx.status() {
            workloadbuilder::validation::validate_pod_group_status_update(&new, &old)
        } else {
            workloadbuilder::validation::validate_pod_group_update(&new, &old)
        };
        decode::check(errors, res, obj)
    }

    fn columns(&self, _res: &ResourceInfo) -> Vec<Value> {
        group_columns("The PodGroupInitiallyScheduled condition.")
    }

    fn cells(&self, _res: &ResourceInfo, obj: &Value) -> Vec<Value> {
        group_cells(obj, kwas_api_types::names::conditions::POD_GROUP_INITIALLY_SCHEDULED)
    }
}

/// The field selectors PodGroups and CompositePodGroups support.
pub(crate) fn group_field(field: &str) -> bool {
    matches!(
        field,
        "spec.parentCompositePodGroupName" | "spec.workloadRef.workloadName" | "spec.workloadRef.templateName"
    )
}

/// Defaults `disruptionMode` to `single` and, on create, adds the PodGroupProtection finalizer.
pub(crate) fn prepare_group(cx: &AdmitContext<'_>, obj: &mut Value) {
    if cx.subresource.is_some() {
        return;
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.entry("disruptionMode").or_insert(json!({"single": {}}));
    }
    if cx.creating() && cx.settings.podgroup_protection {
        let mut f = meta::finalizers(obj);
        let protection = kwas_api_types::names::finalizers::POD_GROUP_PROTECTION;
        if !f.iter().any(|x| x == protection) {
            f.push(protection.to_string());
            meta::set_finalizers(obj, f);
        }
    }
}

/// The Priority admission plugin on a new group.
pub(crate) fn admit_group(cx: &AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if cx.subresource.is_some() || !cx.creating() {
        return Ok(());
    }
    let name = meta::name(obj).to_string();
    match obj.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => priority::resolve_priority(cx.store, res, &name, spec, "the spec"),
        None => Ok(()),
    }
}

/// The printer columns of both group kinds (`condition`: what the Scheduled column shows).
pub(crate) fn group_columns(condition: &str) -> Vec<Value> {
    let name = crate::resource::name_column();
    let age = crate::resource::age_column();
    vec![
        name,
        col("Policy", "string", 0, "The scheduling policy."),
        col(
            "Min",
            "string",
            0,
            "The gang's minimum (minCount pods, or minGroupCount child groups).",
        ),
        col("Scheduled", "string", 0, condition),
        age,
        col("Workload", "string", 1, "The Workload this group was created from."),
        col("Template", "string", 1, "The template of the Workload it instantiates."),
        col("Parent", "string", 1, "The parent CompositePodGroup."),
    ]
}

/// The cells of both group kinds (`condition`: the type the Scheduled column shows).
pub(crate) fn group_cells(obj: &Value, condition: &str) -> Vec<Value> {
    let str_at = |p: &str| str_at(obj, p);
    vec![
        name(obj),
        s(policy(obj)),
        s(obj
            .pointer("/spec/schedulingPolicy/gang/minCount")
            .or_else(|| obj.pointer("/spec/schedulingPolicy/gang/minGroupCount"))
            .map_or_else(|| "<none>".to_string(), Value::to_string)),
        s(condition_status(obj, condition).unwrap_or("<none>")),
        age(obj),
        s(str_at("/spec/workloadRef/workloadName")),
        s(str_at("/spec/workloadRef/templateName")),
        s(str_at("/spec/parentCompositePodGroupName")),
    ]
}

fn policy(obj: &Value) -> &'static str {
    if obj.pointer("/spec/schedulingPolicy/gang").is_some() {
        "Gang"
    } else if obj.pointer("/spec/schedulingPolicy/basic").is_some() {
        "Basic"
    } else {
        "<none>"
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::State;
    use crate::request::RequestContext;

    /// KEP-5729: a PodGroup's `spec.resourceClaims` (exactly one source each, unique DNS-label names,
    /// immutable) and its `status.resourceClaimStatuses`, written through the status subresource.
    #[test]
    fn resource_claims_are_validated_immutable_and_their_statuses_writable() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("scheduling.k8s.io", "podgroups").unwrap();
        let group = |name: &str, claims: serde_json::Value| {
            json!({"metadata": {"name": name}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                "resourceClaims": claims}})
        };
        let err = state
            .create(
                &res,
                "default",
                group(
                    "bad",
                    json!([{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"},
                        {"name": "gpu", "resourceClaimName": "a"}, {"name": "none"}]),
                ),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        for want in [
            "spec.resourceClaims[0]: Invalid value",
            "spec.resourceClaims[1].name: Duplicate value: \"gpu\"",
            "spec.resourceClaims[2]: Invalid value: \"\": must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`",
        ] {
            assert!(err.message().contains(want), "{want} missing from {}", err.message());
        }
        let g = state
            .create(
                &res,
                "default",
                group("g", json!([{"name": "gpu", "resourceClaimTemplateName": "gpus"}])),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        let mut changed = (*g).clone();
        changed["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = json!("other");
        let err = state
            .update(&res, "default", "g", changed, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert!(
            err.message().contains("spec.resourceClaims: ") && err.message().contains("field is immutable"),
            "{}",
            err.message()
        );
        let mut st = (*g).clone();
        st["status"] = json!({"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "g-gpu-abcde"}]});
        let g = state
            .update(
                &res,
                "default",
                "g",
                st,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert_eq!(
            g["status"]["resourceClaimStatuses"][0]["resourceClaimName"],
            "g-gpu-abcde"
        );
        let mut st = (*g).clone();
        st["status"]["resourceClaimStatuses"][0]["name"] = json!("nope");
        let err = state
            .update(
                &res,
                "default",
                "g",
                st,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(
            err.message().contains("status.resourceClaimStatuses[0].name: Invalid value: \"nope\": must match the name of an entry in `spec.resourceClaims`"),
            "{}",
            err.message()
        );
    }
}
