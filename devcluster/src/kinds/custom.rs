//! Custom resources, served from their CRD: pruned, defaulted and validated against the version's
//! structural schema and its `x-kubernetes-validations` rules (transition rules on update; the write path
//! evaluates them after admission, without the cluster lock), with the CRD's selectable fields and
//! additional printer columns.

use serde_json::Value;

use crate::admission::schema;
use crate::error::ApiError;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, StatusStrategy, Strategy};

/// The strategy of every custom resource (what differs between them lives on the [`ResourceInfo`]).
#[derive(Debug)]
pub(crate) struct CustomResourceStrategy;

impl Strategy for CustomResourceStrategy {
    /// Custom resources have no typed model: their schema prunes and defaults them in
    /// [`Strategy::prepare`].
    type Object = Value;

    fn facts(&self) -> Facts {
        Facts {
            custom: true,
            ..Facts::PLAIN
        }
    }

    fn decode(&self, _cx: &mut AdmitContext<'_>, _obj: &mut Value) -> Result<(), ApiError> {
        Ok(())
    }

    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        None
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        admit_custom(cx, res, obj)
    }
}

/// A custom resource's schema applied (pruning, defaulting), with what pruning dropped reported per the
/// request's `fieldValidation`: on every write, through the main resource or `status`.
fn admit_custom(cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let input = obj.clone();
    let admitted = schema::admit_custom(res, obj);
    // What pruning dropped is reported per `fieldValidation` before any validation error, as
    // kube-apiserver's decoding comes before its validation.
    let mut pruned = Vec::new();
    let more = decode::unknown_fields(&input, obj, "", &mut pruned);
    decode::report_unknown_counted(cx.request, &pruned, more)?;
    // The `x-kubernetes-validations` rules run after admission, without the cluster lock
    // (`api::write`), on the admitted object and, on update, the stored one.
    admitted
}

/// The status strategy of custom resources: their schema applies to status writes too.
#[derive(Debug)]
pub(crate) struct CustomResourceStatus;

impl StatusStrategy for CustomResourceStatus {
    fn prepare_for_update(&self, cx: &mut AdmitContext<'_>, _old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        admit_custom(cx, res, obj)
    }
}
