//! storage.k8s.io/v1 CSIDriver: API defaults (`attachRequired: true`, `podInfoOnMount`,
//! `storageCapacity`, `requiresRepublish` and `seLinuxMount` false, `fsGroupPolicy:
//! ReadWriteOnceWithFSType`, `volumeLifecycleModes: [Persistent]`), a name that is a valid CSI driver name,
//! supported lifecycle modes and fsGroup policies, `attachRequired` and the lifecycle modes immutable, and
//! `kubectl get csidrivers`' columns. devcluster registers its simulated driver (`sim::csi`) at start.

use k8s_openapi::api::storage::v1::CSIDriver;
use serde_json::{Value, json};

use super::validate_driver_name;
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, name, text_cell};
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        false,
        CSIDriverStrategy,
    )
}

const MODES: &[&str] = &["Ephemeral", "Persistent"];
const FS_GROUP_POLICIES: &[&str] = &["File", "None", "ReadWriteOnceWithFSType"];

#[derive(Debug)]
struct CSIDriverStrategy;

impl Strategy for CSIDriverStrategy {
    type Object = CSIDriver;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        for (k, v) in [
            ("attachRequired", json!(true)),
            ("podInfoOnMount", json!(false)),
            ("storageCapacity", json!(false)),
            ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
            ("requiresRepublish", json!(false)),
            ("seLinuxMount", json!(false)),
        ] {
            spec.entry(k).or_insert(v);
        }
        if spec
            .get("volumeLifecycleModes")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_driver(obj, &mut causes);
        invalid(res, obj, causes)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_driver(obj, &mut causes);
        for f in ["attachRequired", "volumeLifecycleModes"] {
            let p = format!("/spec/{f}");
            if old.pointer(&p) != obj.pointer(&p) {
                causes.push(FieldCause::immutable(
                    format!("spec.{f}"),
                    obj.pointer(&p).unwrap_or(&Value::Null),
                ));
            }
        }
        invalid(res, obj, causes)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "AttachRequired",
                "boolean",
                0,
                "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting.",
            ),
            col(
                "PodInfoOnMount",
                "boolean",
                0,
                "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations.",
            ),
            col(
                "StorageCapacity",
                "boolean",
                0,
                "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.",
            ),
            col(
                "TokenRequests",
                "string",
                0,
                "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication.",
            ),
            col(
                "RequiresRepublish",
                "boolean",
                0,
                "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume.",
            ),
            col(
                "Modes",
                "string",
                0,
                "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports.",
            ),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let flag = |f: &str, d: bool| json!(obj.pointer(&format!("/spec/{f}")).and_then(Value::as_bool).unwrap_or(d));
        let modes = meta::string_list(obj.pointer("/spec/volumeLifecycleModes")).join(",");
        let tokens = match obj.pointer("/spec/tokenRequests").and_then(Value::as_array) {
            Some(t) => t
                .iter()
                .map(|t| t.get("audience").and_then(Value::as_str).unwrap_or(""))
                .collect::<Vec<_>>()
                .join(","),
            None => "<unset>".to_string(),
        };
        vec![
            name(obj),
            flag("attachRequired", true),
            flag("podInfoOnMount", false),
            flag("storageCapacity", false),
            text_cell(tokens),
            flag("requiresRepublish", false),
            text_cell(if modes.is_empty() { "<none>".to_string() } else { modes }),
            age(obj),
        ]
    }
}

/// `ValidateCSIDriver`, for the fields that matter.
fn validate_driver(obj: &Value, causes: &mut Vec<FieldCause>) {
    validate_driver_name(meta::name(obj), "metadata.name", causes);
    for (i, m) in obj
        .pointer("/spec/volumeLifecycleModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if !m.as_str().is_some_and(|m| MODES.contains(&m)) {
            causes.push(FieldCause::not_supported(
                format!("spec.volumeLifecycleModes[{i}]"),
                m,
                MODES,
            ));
        }
    }
    if let Some(p) = obj.pointer("/spec/fsGroupPolicy").filter(|v| !v.is_null())
        && !p.as_str().is_some_and(|p| FS_GROUP_POLICIES.contains(&p))
    {
        causes.push(FieldCause::not_supported("spec.fsGroupPolicy", p, FS_GROUP_POLICIES));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::State;
    use crate::request::RequestContext;

    #[test]
    fn defaults_and_immutable_attach() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("storage.k8s.io", "csidrivers").unwrap();
        let d = state
            .create(
                &res,
                "",
                json!({"metadata": {"name": "disk.example.com"}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert_eq!(d["spec"]["attachRequired"], true);
        assert_eq!(d["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
        assert_eq!(d["spec"]["fsGroupPolicy"], "ReadWriteOnceWithFSType");
        let cells = res.strategy.cells(&res, &d);
        assert_eq!(
            cells[..7],
            [
                json!("disk.example.com"),
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("Persistent")
            ]
        );
        let mut changed = (*d).clone();
        changed["spec"]["attachRequired"] = json!(false);
        let err = state
            .update(
                &res,
                "",
                "disk.example.com",
                changed,
                None,
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(
            err.message()
                .contains("spec.attachRequired: Invalid value: false: field is immutable"),
            "{}",
            err.message()
        );
        let long = format!("{}.example.com", "a".repeat(60));
        let err = state
            .create(
                &res,
                "",
                json!({"metadata": {"name": long}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(err.message().contains("metadata.name: Too long"), "{}", err.message());
    }
}
