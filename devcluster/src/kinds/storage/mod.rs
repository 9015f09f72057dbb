//! Storage: core/v1 PersistentVolume and PersistentVolumeClaim, storage.k8s.io/v1 StorageClass, CSIDriver
//! and CSINode. What they share lives here: the annotations and finalizers kube-apiserver's admission
//! plugins and kube-controller-manager's volume controllers use, the class of a claim or a volume as
//! upstream's helpers read it (the beta annotation first), the default StorageClass, access modes as
//! kubectl prints them, and CSI driver names. The controllers that bind, provision and protect volumes run
//! in `controllers::volume` and `sim::csi`.

pub(crate) mod csidriver;
pub(crate) mod csinode;
pub(crate) mod persistentvolume;
pub(crate) mod persistentvolumeclaim;
pub(crate) mod storageclass;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::FieldCause;
use crate::meta;
use crate::store::{GroupResource, Store};

/// The finalizer the StorageObjectInUseProtection admission plugin puts on claims.
pub(crate) const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer the StorageObjectInUseProtection admission plugin puts on volumes.
pub(crate) const PV_PROTECTION: &str = "kubernetes.io/pv-protection";
/// The deprecated class annotation, read before `storageClassName` by upstream's helpers.
pub(crate) const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The annotation that makes a StorageClass the default.
pub(crate) const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// Its beta form, still honoured.
pub(crate) const BETA_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";
/// The node a scheduler chose for a `WaitForFirstConsumer` claim.
pub(crate) const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// Set on a claim once the PV controller finished binding it.
pub(crate) const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Set on a claim or volume whose binding the PV controller made (not the user).
pub(crate) const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The provisioner of a dynamically provisioned volume.
pub(crate) const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// The provisioner the PV controller hands a claim to.
pub(crate) const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// Its beta form, still written by the PV controller.
pub(crate) const BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";

/// `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`, else `""`.
pub(crate) fn claim_class(pvc: &Value) -> String {
    if let Some(c) = meta::annotation(pvc, BETA_STORAGE_CLASS) {
        return c.to_string();
    }
    pvc.pointer("/spec/storageClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// `GetPersistentVolumeClass`: the beta annotation, else `spec.storageClassName`, else `""`.
pub(crate) fn volume_class(pv: &Value) -> String {
    claim_class(pv)
}

/// Whether a claim names a class at all (`PersistentVolumeClaimHasClass`): the beta annotation or a
/// `storageClassName`, even an empty one (which asks for no class).
pub(crate) fn claim_has_class(pvc: &Value) -> bool {
    meta::annotation(pvc, BETA_STORAGE_CLASS).is_some()
        || pvc.pointer("/spec/storageClassName").is_some_and(|v| !v.is_null())
}

/// `IsDefaultAnnotation`: either default-class annotation is `"true"`.
pub(crate) fn is_default_class(sc: &Value) -> bool {
    meta::annotation(sc, DEFAULT_CLASS) == Some("true") || meta::annotation(sc, BETA_DEFAULT_CLASS) == Some("true")
}

/// The default StorageClass (`GetDefaultClass`): of the classes marked default, the newest, ties broken by
/// name.
pub(crate) fn default_class(store: &Store) -> Option<Arc<Value>> {
    let mut defaults: Vec<Arc<Value>> = store
        .list(&GroupResource::new("storage.k8s.io", "storageclasses"), None)
        .into_iter()
        .filter(|sc| is_default_class(sc))
        .collect();
    defaults.sort_by(|a, b| {
        let created = |o: &Value| meta::meta_str(o, "creationTimestamp").and_then(meta::parse_time);
        created(b)
            .cmp(&created(a))
            .then_with(|| meta::name(a).cmp(meta::name(b)))
    });
    defaults.into_iter().next()
}

/// `GetAccessModesAsString`: `RWO,ROX,RWX,RWOP`, in that order, without duplicates.
pub(crate) fn access_modes_string(modes: Option<&Value>) -> String {
    let modes = meta::string_list(modes);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| modes.iter().any(|x| x == m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// `ValidateCSIDriverName`: required, at most 63 characters, a DNS-1123 subdomain (case-insensitive).
pub(crate) fn validate_driver_name(name: &str, path: &str, causes: &mut Vec<FieldCause>) {
    if name.is_empty() {
        causes.push(FieldCause::required(path, ""));
        return;
    }
    if name.len() > 63 {
        causes.push(FieldCause::too_long(path, 63));
    }
    for msg in workloadbuilder::validation::strings::is_dns1123_subdomain(&name.to_lowercase()) {
        causes.push(FieldCause::invalid(path, &json!(name), &msg));
    }
}

/// The `<unset>` kubectl prints for an optional string field.
pub(crate) fn or_unset(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("<unset>").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_modes_read_like_upstream_helpers() {
        let pvc =
            json!({"metadata": {"annotations": {BETA_STORAGE_CLASS: "old"}}, "spec": {"storageClassName": "new"}});
        assert_eq!(claim_class(&pvc), "old");
        assert!(claim_has_class(&json!({"spec": {"storageClassName": ""}})));
        assert!(!claim_has_class(&json!({"spec": {"storageClassName": null}})));
        assert_eq!(
            access_modes_string(Some(&json!([
                "ReadWriteOncePod",
                "ReadOnlyMany",
                "ReadWriteOnce",
                "ReadWriteOnce"
            ]))),
            "RWO,ROX,RWOP"
        );
        let mut c = Vec::new();
        validate_driver_name("kwas.dev/sim-disk", "spec.csi.driver", &mut c);
        assert!(!c.is_empty(), "a slash is not allowed in a CSI driver name");
        c.clear();
        validate_driver_name("sim-disk.kwas.dev", "spec.csi.driver", &mut c);
        assert!(c.is_empty());
    }
}
