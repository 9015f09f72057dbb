//! The Priority admission plugin: `priorityClassName` resolved into `priority` and `preemptionPolicy` for
//! pods and for PodGroups and CompositePodGroups.

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::meta;
use crate::resource::ResourceInfo;
use crate::store::{GroupResource, Store};

/// Resolves `priorityClassName` into `priority` and `preemptionPolicy` on a pod spec or group spec, like
/// the Priority admission plugin: unknown classes are forbidden, a set integer priority must match, and
/// with no class the global default class (the lowest-valued one when several claim it) applies.
pub(crate) fn resolve_priority(
    store: &Store,
    res: &ResourceInfo,
    name: &str,
    spec: &mut Map<String, Value>,
    where_: &str,
) -> Result<(), ApiError> {
    let pcs = GroupResource::new("scheduling.k8s.io", "priorityclasses");
    let class_name = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let (class_name, value, policy) = if class_name.is_empty() {
        let default = store
            .list(&pcs, None)
            .into_iter()
            .filter(|pc| pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(|pc| pc.get("value").and_then(Value::as_i64).unwrap_or(0));
        match default {
            Some(pc) => (
                Some(meta::name(&pc).to_string()),
                pc.get("value").and_then(Value::as_i64).unwrap_or(0),
                pc.get("preemptionPolicy").and_then(Value::as_str).map(str::to_string),
            ),
            None => (None, 0, None),
        }
    } else {
        match store.get(&pcs, "", &class_name) {
            Some(pc) => (
                Some(class_name.clone()),
                pc.get("value").and_then(Value::as_i64).unwrap_or(0),
                pc.get("preemptionPolicy").and_then(Value::as_str).map(str::to_string),
            ),
            None => {
                return Err(ApiError::forbidden(
                    &res.group,
                    &res.plural,
                    name,
                    &format!("no PriorityClass with name {class_name} was found"),
                ));
            }
        }
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(ApiError::forbidden(
            &res.group,
            &res.plural,
            name,
            &format!(
                "the integer value of priority ({given}) must not be provided in {where_}; priority admission controller computed {value} from the given PriorityClass name"
            ),
        ));
    }
    let policy = policy.unwrap_or_else(|| "PreemptLowerPriority".to_string());
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && given != policy
    {
        return Err(ApiError::forbidden(
            &res.group,
            &res.plural,
            name,
            &format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in {where_}; priority admission controller computed {policy} from the given PriorityClass name"
            ),
        ));
    }
    if let Some(c) = class_name {
        spec.insert("priorityClassName".into(), Value::String(c));
    }
    spec.insert("priority".into(), json!(value));
    spec.insert("preemptionPolicy".into(), Value::String(policy));
    Ok(())
}
