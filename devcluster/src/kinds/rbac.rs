//! rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding: stored and
//! validated like kube-apiserver (rules need verbs, a binding's `roleRef` is required and immutable).
//! devcluster authorizes nothing (every request is allowed); the objects are kept so manifests and
//! `kubectl create role|rolebinding|clusterrole|clusterrolebinding` work as on a real cluster, and so the
//! RBAC a component would need can be applied and read back.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use std::marker::PhantomData;

use serde_json::{Value, json};

use super::print::{age, col, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::{AdmitContext, Facts, Object, ResourceInfo, Strategy};

const GROUP: &str = "rbac.authorization.k8s.io";

/// The served resources.
pub(crate) fn resources() -> Vec<ResourceInfo> {
    vec![
        ResourceInfo::builtin(
            GROUP,
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            RbacStrategy::<ClusterRoleBinding>::new(RbacKind::ClusterRoleBinding),
        ),
        ResourceInfo::builtin(
            GROUP,
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
            RbacStrategy::<ClusterRole>::new(RbacKind::ClusterRole),
        ),
        ResourceInfo::builtin(
            GROUP,
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
            RbacStrategy::<RoleBinding>::new(RbacKind::RoleBinding),
        ),
        ResourceInfo::builtin(
            GROUP,
            "v1",
            "Role",
            "roles",
            true,
            RbacStrategy::<Role>::new(RbacKind::Role),
        ),
    ]
}

/// Which of the four kinds a [`RbacStrategy`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    fn binding(self) -> bool {
        matches!(self, RbacKind::RoleBinding | RbacKind::ClusterRoleBinding)
    }
}

/// The strategy of one RBAC kind, decoded through `T`.
struct RbacStrategy<T> {
    kind: RbacKind,
    object: PhantomData<fn() -> T>,
}

impl<T> RbacStrategy<T> {
    fn new(kind: RbacKind) -> Self {
        RbacStrategy {
            kind,
            object: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for RbacStrategy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RbacStrategy").field(&self.kind).finish()
    }
}

fn check_rules(obj: &Value, causes: &mut Vec<FieldCause>) {
    for (i, rule) in obj
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if meta::string_list(rule.get("verbs")).is_empty() {
            causes.push(FieldCause::required(
                format!("rules[{i}].verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = meta::string_list(rule.get("nonResourceURLs"));
        let resources = meta::string_list(rule.get("resources"));
        if !urls.is_empty() && !resources.is_empty() {
            causes.push(FieldCause::invalid(
                format!("rules[{i}].nonResourceURLs"),
                &json!(urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
    }
}

fn check_binding(kind: RbacKind, obj: &Value, causes: &mut Vec<FieldCause>) {
    let role_ref = obj.get("roleRef");
    let ref_kind = role_ref
        .and_then(|r| r.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let allowed: &[&str] = if kind == RbacKind::RoleBinding {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if ref_kind.is_empty() {
        causes.push(FieldCause::required("roleRef.kind", ""));
    } else if !allowed.contains(&ref_kind) {
        causes.push(FieldCause::not_supported("roleRef.kind", &json!(ref_kind), allowed));
    }
    let group = role_ref
        .and_then(|r| r.get("apiGroup"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if group != GROUP {
        causes.push(FieldCause::not_supported("roleRef.apiGroup", &json!(group), &[GROUP]));
    }
    if role_ref
        .and_then(|r| r.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        causes.push(FieldCause::required("roleRef.name", ""));
    }
    for (i, subject) in obj
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let k = subject.get("kind").and_then(Value::as_str).unwrap_or("");
        if !["ServiceAccount", "User", "Group"].contains(&k) {
            causes.push(FieldCause::not_supported(
                format!("subjects[{i}].kind"),
                &json!(k),
                &["ServiceAccount", "User", "Group"],
            ));
        }
        if subject.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
            causes.push(FieldCause::required(format!("subjects[{i}].name"), ""));
        }
    }
}

impl<T: Object> Strategy for RbacStrategy<T> {
    type Object = T;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        if self.kind.binding() {
            check_binding(self.kind, obj, &mut causes);
        } else {
            check_rules(obj, &mut causes);
        }
        invalid(res, obj, causes)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        if self.kind.binding() && old.get("roleRef") != obj.get("roleRef") {
            return invalid(
                res,
                obj,
                vec![FieldCause::invalid(
                    "roleRef",
                    obj.get("roleRef").unwrap_or(&Value::Null),
                    "cannot change roleRef",
                )],
            );
        }
        self.validate(cx, obj)
    }

    fn columns(&self) -> Vec<Value> {
        let name = crate::resource::name_column();
        if self.kind.binding() {
            vec![
                name,
                col(
                    "Role",
                    "string",
                    0,
                    "RoleRef is the reference to the role this binding refers to.",
                ),
                crate::resource::age_column(),
                col("Users", "string", 1, "Users in the binding."),
                col("Groups", "string", 1, "Groups in the binding."),
                col("ServiceAccounts", "string", 1, "ServiceAccounts in the binding."),
            ]
        } else {
            vec![
                name,
                col("Created At", "date", 0, "Time at which this object was created."),
            ]
        }
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        if !self.kind.binding() {
            return vec![
                name(obj),
                text_cell(meta::meta_str(obj, "creationTimestamp").unwrap_or("")),
            ];
        }
        let role = format!(
            "{}/{}",
            obj.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or(""),
            obj.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or("")
        );
        let subjects = |k: &str| -> String {
            obj.get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|s| s.get("kind").and_then(Value::as_str) == Some(k))
                .map(|s| {
                    let n = s.get("name").and_then(Value::as_str).unwrap_or("");
                    match s.get("namespace").and_then(Value::as_str) {
                        Some(ns) if k == "ServiceAccount" => format!("{ns}/{n}"),
                        _ => n.to_string(),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        vec![
            name(obj),
            text_cell(role),
            age(obj),
            text_cell(subjects("User")),
            text_cell(subjects("Group")),
            text_cell(subjects("ServiceAccount")),
        ]
    }
}
