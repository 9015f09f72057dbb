//! policy/v1 PodDisruptionBudget: kube-apiserver's validation (`minAvailable` and `maxUnavailable` are each
//! a non-negative integer or a percentage of at most 100 and cannot both be set, a valid selector, an
//! `unhealthyPodEvictionPolicy` of `IfHealthyBudget` or `AlwaysAllow`; a status update keeps its counters
//! non-negative and its conditions valid), `generation` and a zeroed status on create, and `kubectl get
//! pdb`'s columns. The disruption controller (`controllers::disruption`) keeps the status; the eviction
//! subresource (`api::subresources::evict`) reads and spends it.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::print::{age, col, name, text_cell};
use super::validate::{int_or_percent, label_selector};
use crate::error::{ApiError, FieldCause};
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, ResourceInfo, StatusStrategy, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        PodDisruptionBudgetStrategy,
    )
    .short_names(&["pdb"])
    .with_status_strategy(BudgetStatus)
}

/// The unhealthy pod eviction policies.
const POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];

#[derive(Debug)]
struct PodDisruptionBudgetStrategy;

impl Strategy for PodDisruptionBudgetStrategy {
    type Object = PodDisruptionBudget;

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        if cx.creating() {
            // The counters have no `omitempty`: a new budget shows them as zero until the controller's
            // first pass.
            meta::ensure_object(obj).insert(
                "status".into(),
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
            );
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_spec(obj, &mut causes);
        invalid(res, obj, causes)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, _old: &Value, obj: &Value) -> Result<(), ApiError> {
        self.validate(cx, obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "Min Available",
                "string",
                0,
                "The minimum number of pods that must be available.",
            ),
            col(
                "Max Unavailable",
                "string",
                0,
                "The maximum number of pods that may be unavailable.",
            ),
            col(
                "Allowed Disruptions",
                "integer",
                0,
                "Calculated number of pods that may be disrupted at this time.",
            ),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let int_or_string = |p: &str| match obj.pointer(p) {
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(v)) => v.clone(),
            _ => "N/A".to_string(),
        };
        vec![
            name(obj),
            text_cell(int_or_string("/spec/minAvailable")),
            text_cell(int_or_string("/spec/maxUnavailable")),
            json!(
                obj.pointer("/status/disruptionsAllowed")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            ),
            age(obj),
        ]
    }
}

/// Budgets' status writes (the disruption controller's, evictions'): the status is validated.
#[derive(Debug)]
struct BudgetStatus;

impl StatusStrategy for BudgetStatus {
    fn validate_update(&self, cx: &mut AdmitContext<'_>, _old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_status(res, obj, &mut causes)?;
        invalid(res, obj, causes)
    }
}

/// `ValidatePodDisruptionBudgetSpec`.
fn validate_spec(obj: &Value, causes: &mut Vec<FieldCause>) {
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let min = spec.get("minAvailable").filter(|v| !v.is_null());
    let max = spec.get("maxUnavailable").filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        causes.push(FieldCause::invalid(
            "spec",
            &spec,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    if let Some(v) = min {
        int_or_percent(v, "spec.minAvailable", causes);
    }
    if let Some(v) = max {
        int_or_percent(v, "spec.maxUnavailable", causes);
    }
    label_selector(spec.get("selector"), "spec.selector", causes);
    if let Some(p) = spec.get("unhealthyPodEvictionPolicy").filter(|v| !v.is_null())
        && !p.as_str().is_some_and(|p| POLICIES.contains(&p))
    {
        causes.push(FieldCause::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            p,
            POLICIES,
        ));
    }
}

/// `ValidatePodDisruptionBudgetStatusUpdate` (policy/v1): valid conditions, non-negative counters.
fn validate_status(res: &ResourceInfo, obj: &Value, causes: &mut Vec<FieldCause>) -> Result<(), ApiError> {
    let typed: PodDisruptionBudget = decode::parse(res, obj)?;
    let conditions = typed.status.and_then(|s| s.conditions).unwrap_or_default();
    let path = workloadbuilder::FieldPath::new("status").child("conditions");
    for e in workloadbuilder::validation::meta::validate_conditions(&conditions, &path).iter() {
        causes.push(FieldCause::from(e));
    }
    for f in ["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"] {
        if let Some(n) = obj.pointer(&format!("/status/{f}")).and_then(Value::as_i64)
            && n < 0
        {
            causes.push(FieldCause::invalid(
                format!("status.{f}"),
                &json!(n),
                "must be greater than or equal to 0",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::State;
    use crate::request::RequestContext;

    fn create(state: &mut State, spec: serde_json::Value) -> Result<std::sync::Arc<serde_json::Value>, String> {
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        state
            .create(
                &res,
                "default",
                json!({"metadata": {"generateName": "b-"}, "spec": spec}),
                &mut RequestContext::manager("t"),
            )
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn budgets_are_validated_like_kube_apiserver() {
        let mut state = State::new(100, Default::default());
        let created = create(
            &mut state,
            json!({"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}}),
        )
        .unwrap();
        assert_eq!(created["metadata"]["generation"], 1);
        assert_eq!(created["status"]["disruptionsAllowed"], 0);
        let both = create(&mut state, json!({"minAvailable": 1, "maxUnavailable": 1})).unwrap_err();
        assert!(
            both.contains("spec: Invalid value") && both.contains("minAvailable and maxUnavailable cannot be both set"),
            "{both}"
        );
        let negative = create(&mut state, json!({"maxUnavailable": -2})).unwrap_err();
        assert!(
            negative.contains("spec.maxUnavailable: Invalid value: -2: must be greater than or equal to 0"),
            "{negative}"
        );
        let over = create(&mut state, json!({"minAvailable": "150%"})).unwrap_err();
        assert!(over.contains("must not be greater than 100%"), "{over}");
        let policy = create(
            &mut state,
            json!({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"}),
        )
        .unwrap_err();
        assert!(
            policy.contains("supported values: \"AlwaysAllow\", \"IfHealthyBudget\""),
            "{policy}"
        );
        let selector = create(
            &mut state,
            json!({"minAvailable": 1, "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
        )
        .unwrap_err();
        assert!(
            selector.contains("spec.selector.matchExpressions[0].values: Required value"),
            "{selector}"
        );
    }

    #[test]
    fn status_counters_stay_non_negative() {
        let mut state = State::new(100, Default::default());
        let created = create(&mut state, json!({"minAvailable": 1})).unwrap();
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        let mut bad = (*created).clone();
        bad["status"]["disruptionsAllowed"] = json!(-1);
        let err = state
            .update(
                &res,
                "default",
                crate::meta::name(&created),
                bad,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(err.message().contains("status.disruptionsAllowed"), "{}", err.message());
    }

    #[test]
    fn table_cells_show_the_budget() {
        let mut state = State::new(100, Default::default());
        let created = create(&mut state, json!({"maxUnavailable": "25%"})).unwrap();
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        let cells = res.strategy.cells(&res, &created);
        assert_eq!(cells[1], "N/A");
        assert_eq!(cells[2], "25%");
        assert_eq!(cells[3], 0);
    }
}
