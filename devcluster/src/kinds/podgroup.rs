//! scheduling.k8s.io/v1alpha3 and v1beta1 PodGroup and the strategy it shares with CompositePodGroup (one generic
//! implementation over [`GroupKind`]): `disruptionMode` defaulting to `single`, the Priority admission
//! plugin, the PodGroupProtection finalizer, validation with kube-apiserver's rules as `workloadbuilder`
//! implements them (a separate status strategy for status writes), and the printer columns.

use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
use std::marker::PhantomData;

use serde_json::{Value, json};
use workloadbuilder::FieldErrors;

use super::print::{age, col, condition_status, name, str_at, text_cell};
use crate::admission::priority;
use crate::error::ApiError;
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, Object, ResourceInfo, StatusStrategy, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    group_resource::<PodGroup>()
}

/// The served `v1beta1` resource: the same objects (one storage), presented as `v1beta1`.
pub(crate) fn beta_resource() -> ResourceInfo {
    beta(group_resource::<PodGroup>(), GroupStrategy::<PodGroup>::BETA)
}

/// `alpha` (a `v1alpha3` resource of `scheduling.k8s.io`) served again as `v1beta1` with `strategy`: the
/// fields of the two versions are the same (kube-apiserver converts them through one internal type), so an
/// object is stored once, in its `v1alpha3` form, and only relabelled on the way in and out.
pub(crate) fn beta(alpha: ResourceInfo, strategy: impl Strategy) -> ResourceInfo {
    let status = alpha.status_strategy.clone();
    let mut info = ResourceInfo::builtin(
        &alpha.group,
        "v1beta1",
        &alpha.kind,
        &alpha.plural,
        alpha.namespaced,
        strategy,
    );
    info.status_subresource = alpha.status_subresource;
    info.status_strategy = status;
    info
}

/// What differs between the two group kinds (PodGroup, CompositePodGroup): the typed model, its names,
/// the condition the `Scheduled` column shows and `workloadbuilder`'s rules for it.
pub(crate) trait GroupKind: Object {
    /// The kind.
    const KIND: &'static str;
    /// Its plural.
    const PLURAL: &'static str;
    /// The condition type the `Scheduled` column shows.
    const SCHEDULED_CONDITION: &'static str;
    /// That column's description.
    const SCHEDULED_DESCRIPTION: &'static str;
    /// Validation of a new group.
    fn validate(&self) -> FieldErrors;
    /// Validation of an update of the spec and metadata.
    fn validate_update(&self, old: &Self) -> FieldErrors;
    /// Validation of a status update.
    fn validate_status_update(&self, old: &Self) -> FieldErrors;
}

impl GroupKind for PodGroup {
    const KIND: &'static str = "PodGroup";
    const PLURAL: &'static str = "podgroups";
    const SCHEDULED_CONDITION: &'static str = kwas_api_types::names::conditions::POD_GROUP_INITIALLY_SCHEDULED;
    const SCHEDULED_DESCRIPTION: &'static str = "The PodGroupInitiallyScheduled condition.";

    fn validate(&self) -> FieldErrors {
        workloadbuilder::validation::validate_pod_group(self)
    }

    fn validate_update(&self, old: &Self) -> FieldErrors {
        workloadbuilder::validation::validate_pod_group_update(self, old)
    }

    fn validate_status_update(&self, old: &Self) -> FieldErrors {
        workloadbuilder::validation::validate_pod_group_status_update(self, old)
    }
}

/// The served resource of a group kind.
pub(crate) fn group_resource<G: GroupKind>() -> ResourceInfo {
    ResourceInfo::builtin(
        "scheduling.k8s.io",
        "v1alpha3",
        G::KIND,
        G::PLURAL,
        true,
        GroupStrategy::<G>::ALPHA,
    )
    .with_status_strategy(GroupStatus::<G>(PhantomData))
}

/// The strategy both group kinds share; `beta` for the `v1beta1` resource (see [`beta`]).
struct GroupStrategy<G> {
    beta: bool,
    kind: PhantomData<fn() -> G>,
}

impl<G> GroupStrategy<G> {
    const ALPHA: Self = GroupStrategy {
        beta: false,
        kind: PhantomData,
    };
    const BETA: Self = GroupStrategy {
        beta: true,
        kind: PhantomData,
    };
}

/// The facts of a `v1beta1` resource stored in its `v1alpha3` form.
pub(crate) fn beta_facts(kind: &'static str) -> Facts {
    Facts {
        // Only `apiVersion` differs: no field conversion (a watch relabels the shared encoding).
        storage_type: Some(("scheduling.k8s.io/v1alpha3", kind)),
        ..Facts::PLAIN
    }
}

impl<G> std::fmt::Debug for GroupStrategy<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupStrategy")
    }
}

impl<G: GroupKind> Strategy for GroupStrategy<G> {
    type Object = G;

    fn facts(&self) -> Facts {
        if self.beta { beta_facts(G::KIND) } else { Facts::PLAIN }
    }

    fn supports_field(&self, field: &str) -> bool {
        matches!(
            field,
            "spec.parentCompositePodGroupName" | "spec.workloadRef.workloadName" | "spec.workloadRef.templateName"
        )
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        prepare_group(cx, obj);
        Ok(())
    }

    fn admit(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        admit_group(cx, res, obj)
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::check(decode::parse::<G>(res, obj)?.validate(), res, obj)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let (new, old) = (decode::parse::<G>(res, obj)?, decode::parse::<G>(res, old)?);
        decode::check(new.validate_update(&old), res, obj)
    }

    fn columns(&self) -> Vec<Value> {
        group_columns(G::SCHEDULED_DESCRIPTION)
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        group_cells(obj, G::SCHEDULED_CONDITION)
    }
}

/// Both group kinds' status writes: validated by `workloadbuilder`'s status rules.
struct GroupStatus<G>(PhantomData<fn() -> G>);

impl<G> std::fmt::Debug for GroupStatus<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupStatus")
    }
}

impl<G: GroupKind> StatusStrategy for GroupStatus<G> {
    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let (new, old) = (decode::parse::<G>(res, obj)?, decode::parse::<G>(res, old)?);
        decode::check(new.validate_status_update(&old), res, obj)
    }
}

/// Defaults `disruptionMode` to `single` and, on create, adds the PodGroupProtection finalizer.
fn prepare_group(cx: &AdmitContext<'_>, obj: &mut Value) {
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
fn admit_group(cx: &AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if !cx.creating() {
        return Ok(());
    }
    let name = meta::name(obj).to_string();
    match obj.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => priority::resolve_priority(cx.store, res, &name, spec, "the spec"),
        None => Ok(()),
    }
}

/// The printer columns of both group kinds (`condition`: what the Scheduled column shows).
fn group_columns(condition: &str) -> Vec<Value> {
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
fn group_cells(obj: &Value, condition: &str) -> Vec<Value> {
    let str_at = |p: &str| str_at(obj, p);
    vec![
        name(obj),
        text_cell(policy(obj)),
        text_cell(
            obj.pointer("/spec/schedulingPolicy/gang/minCount")
                .or_else(|| obj.pointer("/spec/schedulingPolicy/gang/minGroupCount"))
                .map_or_else(|| "<none>".to_string(), Value::to_string),
        ),
        text_cell(condition_status(obj, condition).unwrap_or("<none>")),
        age(obj),
        text_cell(str_at("/spec/workloadRef/workloadName")),
        text_cell(str_at("/spec/workloadRef/templateName")),
        text_cell(str_at("/spec/parentCompositePodGroupName")),
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
