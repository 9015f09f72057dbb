//! The review kinds that are never stored: authorization.k8s.io/v1 SelfSubjectAccessReview,
//! SelfSubjectRulesReview, SubjectAccessReview and LocalSubjectAccessReview, and authentication.k8s.io/v1
//! SelfSubjectReview. A create answers with the review's status, as kube-apiserver does. devcluster has
//! no authentication and no authorization: every client is the user `kwas-dev` in `system:masters`, every
//! request is allowed, so `kubectl auth can-i ...` answers `yes` and `kubectl auth whoami` names that user.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
};
use std::marker::PhantomData;

use serde_json::{Value, json};

use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::{AdmitContext, Facts, NameRule, Object, ResourceInfo, Strategy};

/// The user every client is.
pub(crate) const USER: &str = "kwas-dev";
/// Why a review allows.
const REASON: &str = "devcluster has no authorization: every request is allowed";

/// The served resources.
pub(crate) fn resources() -> Vec<ResourceInfo> {
    let authz = "authorization.k8s.io";
    vec![
        ResourceInfo::builtin(
            authz,
            "v1",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
            ReviewStrategy::<LocalSubjectAccessReview>::new(Review::LocalAccess),
        ),
        ResourceInfo::builtin(
            authz,
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
            ReviewStrategy::<SelfSubjectAccessReview>::new(Review::SelfAccess),
        ),
        ResourceInfo::builtin(
            authz,
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
            ReviewStrategy::<SelfSubjectRulesReview>::new(Review::SelfRules),
        ),
        ResourceInfo::builtin(
            authz,
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            false,
            ReviewStrategy::<SubjectAccessReview>::new(Review::Access),
        ),
        ResourceInfo::builtin(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
            ReviewStrategy::<SelfSubjectReview>::new(Review::SelfSubject),
        ),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Review {
    SelfAccess,
    SelfRules,
    Access,
    LocalAccess,
    SelfSubject,
}

/// The strategy of one review kind, decoded through `T`.
struct ReviewStrategy<T> {
    review: Review,
    object: PhantomData<fn() -> T>,
}

impl<T> ReviewStrategy<T> {
    fn new(review: Review) -> Self {
        ReviewStrategy {
            review,
            object: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for ReviewStrategy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ReviewStrategy").field(&self.review).finish()
    }
}

impl<T: Object> Strategy for ReviewStrategy<T> {
    type Object = T;

    fn facts(&self) -> Facts {
        Facts {
            ephemeral: true,
            has_generation: false,
            name_rule: NameRule::Unchecked,
            ..Facts::PLAIN
        }
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let status = match self.review {
            Review::SelfAccess | Review::Access | Review::LocalAccess => json!({"allowed": true, "reason": REASON}),
            Review::SelfRules => json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            }),
            Review::SelfSubject => json!({"userInfo": {
                "username": USER,
                "groups": ["system:masters", "system:authenticated"],
            }}),
        };
        meta::ensure_object(obj).insert("status".into(), status);
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let _ = cx;
        let mut causes = Vec::new();
        if matches!(self.review, Review::SelfAccess | Review::Access | Review::LocalAccess) {
            let resource = obj.pointer("/spec/resourceAttributes").is_some_and(|v| !v.is_null());
            let non_resource = obj.pointer("/spec/nonResourceAttributes").is_some_and(|v| !v.is_null());
            if resource == non_resource {
                causes.push(FieldCause::invalid(
                    "spec.resourceAttributes",
                    &obj.pointer("/spec/resourceAttributes").cloned().unwrap_or(Value::Null),
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                ));
            }
        }
        if matches!(self.review, Review::Access | Review::LocalAccess) {
            let user = obj.pointer("/spec/user").and_then(Value::as_str).unwrap_or("");
            let groups = meta::string_list(obj.pointer("/spec/groups"));
            let uid = obj.pointer("/spec/uid").and_then(Value::as_str).unwrap_or("");
            if user.is_empty() && groups.is_empty() && uid.is_empty() {
                causes.push(FieldCause::invalid(
                    "spec.user",
                    &json!(user),
                    "at least one of user, group or uid must be specified",
                ));
            }
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(&res.group, &res.kind, "", causes))
        }
    }
}
