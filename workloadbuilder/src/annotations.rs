//! Downward-mapping annotations (KEP-6089 "Downward Template and Parent Mapping via Well-Known Annotations").
//!
//! A composite controller that delegates PodGroup management sets two annotations on each child object it
//! creates (for example on the Jobs of a JobSet):
//! - [`GROUP_TEMPLATE_NAME`]: the template in the parent's Workload that the child's pods map to;
//! - [`PARENT_COMPOSITE_POD_GROUP`]: the parent CompositePodGroup instance the child's group attaches to.
//!
//! The parent key has two spellings: KEP-6089's `scheduling.k8s.io/parent-composite-podgroup` and
//! `scheduling.k8s.io/parent-compositepodgroup`, the one kube-apiserver's constants, KEP-5547 and
//! LeaderWorkerSet use. [`DownwardMapping`] writes both (so a child reconciled by the in-tree Job controller
//! or by kwas's keeps its parent link) and reads either; two spellings naming different parents are an
//! error, as the child's parent would be ambiguous.
//!
//! ```
//! use std::collections::BTreeMap;
//! use workloadbuilder::DownwardMapping;
//!
//! let mapping = DownwardMapping::new("workers").with_parent("trainer-root-x7k2");
//! let mut annotations = BTreeMap::new();
//! mapping.write(&mut annotations);
//! assert_eq!(DownwardMapping::read(&annotations).unwrap(), Some(mapping));
//! ```

use std::collections::BTreeMap;

pub use kwas_api_types::names::annotations::{
    GROUP_TEMPLATE_NAME, PARENT_COMPOSITE_POD_GROUP, PARENT_COMPOSITE_POD_GROUP_ALT,
};

use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::validation::strings::{is_dns1123_label, is_dns1123_subdomain};

/// The two downward-mapping annotations, typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DownwardMapping {
    /// The template in the parent's Workload the child's pods map to.
    pub group_template_name: String,
    /// The parent CompositePodGroup instance; `None` when the template is a top-level one.
    pub parent_composite_pod_group: Option<String>,
}

impl DownwardMapping {
    /// A mapping to a template, with no parent instance yet.
    pub fn new(group_template_name: impl Into<String>) -> Self {
        Self {
            group_template_name: group_template_name.into(),
            parent_composite_pod_group: None,
        }
    }

    /// This mapping attached to the parent CompositePodGroup `parent`.
    pub fn with_parent(mut self, parent: impl Into<String>) -> Self {
        self.parent_composite_pod_group = Some(parent.into());
        self
    }

    /// Set the annotations on `annotations`: the template, and the parent under both spellings (both are
    /// removed when there is no parent).
    pub fn write(&self, annotations: &mut BTreeMap<String, String>) {
        annotations.insert(GROUP_TEMPLATE_NAME.to_string(), self.group_template_name.clone());
        for key in [PARENT_COMPOSITE_POD_GROUP, PARENT_COMPOSITE_POD_GROUP_ALT] {
            match &self.parent_composite_pod_group {
                Some(parent) => {
                    annotations.insert(key.to_string(), parent.clone());
                }
                None => {
                    annotations.remove(key);
                }
            }
        }
    }

    /// The parent CompositePodGroup named by either spelling of the parent key, `None` when neither is set
    /// (for callers that need only the parent; [`DownwardMapping::read`] also validates).
    pub fn read_parent(annotations: &BTreeMap<String, String>) -> Option<&str> {
        annotations
            .get(PARENT_COMPOSITE_POD_GROUP)
            .or_else(|| annotations.get(PARENT_COMPOSITE_POD_GROUP_ALT))
            .map(String::as_str)
    }

    /// Read the mapping from an object's annotations: `Ok(None)` when the template annotation is absent,
    /// errors (at `metadata.annotations[<key>]`) when a value is malformed or a parent is given without a
    /// template, and when the two spellings of the parent key name different parents.
    pub fn read(annotations: &BTreeMap<String, String>) -> Result<Option<Self>, FieldErrors> {
        let path = FieldPath::new("metadata").child("annotations");
        let template = annotations.get(GROUP_TEMPLATE_NAME);
        let (parent_key, parent) = match annotations.get(PARENT_COMPOSITE_POD_GROUP) {
            Some(p) => (PARENT_COMPOSITE_POD_GROUP, Some(p)),
            None => (
                PARENT_COMPOSITE_POD_GROUP_ALT,
                annotations.get(PARENT_COMPOSITE_POD_GROUP_ALT),
            ),
        };
        let mut errs = FieldErrors::new();
        if let (Some(seed), Some(alt)) = (
            annotations.get(PARENT_COMPOSITE_POD_GROUP),
            annotations.get(PARENT_COMPOSITE_POD_GROUP_ALT),
        ) && seed != alt
        {
            errs.push(FieldError::invalid(
                path.key(PARENT_COMPOSITE_POD_GROUP_ALT),
                alt,
                format!("must equal {PARENT_COMPOSITE_POD_GROUP} ({seed:?}) when both are set"),
            ));
        }
        if let Some(t) = template {
            for msg in is_dns1123_label(t) {
                errs.push(FieldError::invalid(path.key(GROUP_TEMPLATE_NAME), t, msg));
            }
        }
        if let Some(p) = parent {
            for msg in is_dns1123_subdomain(p) {
                errs.push(FieldError::invalid(path.key(parent_key), p, msg));
            }
            if template.is_none() {
                errs.push(FieldError::required(
                    path.key(GROUP_TEMPLATE_NAME),
                    format!("must be set when {parent_key} is set"),
                ));
            }
        }
        errs.into_result(())?;
        Ok(template.map(|t| Self {
            group_template_name: t.clone(),
            parent_composite_pod_group: parent.cloned(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldErrorType;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn writes_both_spellings() {
        let mut a = map(&[(PARENT_COMPOSITE_POD_GROUP_ALT, "old"), ("other", "kept")]);
        DownwardMapping::new("workers").with_parent("root-1").write(&mut a);
        assert_eq!(
            a,
            map(&[
                (GROUP_TEMPLATE_NAME, "workers"),
                (PARENT_COMPOSITE_POD_GROUP, "root-1"),
                (PARENT_COMPOSITE_POD_GROUP_ALT, "root-1"),
                ("other", "kept")
            ])
        );
        assert_eq!(DownwardMapping::read_parent(&a), Some("root-1"));
        DownwardMapping::new("workers").write(&mut a);
        assert_eq!(a, map(&[(GROUP_TEMPLATE_NAME, "workers"), ("other", "kept")]));
        assert_eq!(DownwardMapping::read_parent(&a), None);
    }

    #[test]
    fn reads_both_spellings() {
        let alt = map(&[
            (GROUP_TEMPLATE_NAME, "workers"),
            (PARENT_COMPOSITE_POD_GROUP_ALT, "root-1"),
        ]);
        assert_eq!(
            DownwardMapping::read(&alt).unwrap(),
            Some(DownwardMapping::new("workers").with_parent("root-1"))
        );
        assert_eq!(DownwardMapping::read_parent(&alt), Some("root-1"));
        let same = map(&[
            (GROUP_TEMPLATE_NAME, "workers"),
            (PARENT_COMPOSITE_POD_GROUP_ALT, "root-1"),
            (PARENT_COMPOSITE_POD_GROUP, "root-1"),
        ]);
        assert_eq!(
            DownwardMapping::read(&same).unwrap(),
            Some(DownwardMapping::new("workers").with_parent("root-1"))
        );
        let differ = map(&[
            (GROUP_TEMPLATE_NAME, "workers"),
            (PARENT_COMPOSITE_POD_GROUP_ALT, "alt"),
            (PARENT_COMPOSITE_POD_GROUP, "seed"),
        ]);
        let errs = DownwardMapping::read(&differ).unwrap_err();
        assert!(
            errs.contains(
                FieldErrorType::Invalid,
                "metadata.annotations[scheduling.k8s.io/parent-compositepodgroup]"
            ),
            "{errs}"
        );
        assert_eq!(DownwardMapping::read(&map(&[("x", "y")])).unwrap(), None);
        assert_eq!(
            DownwardMapping::read(&map(&[(GROUP_TEMPLATE_NAME, "top")])).unwrap(),
            Some(DownwardMapping::new("top"))
        );
    }

    #[test]
    fn rejects_malformed_values() {
        let errs = DownwardMapping::read(&map(&[
            (GROUP_TEMPLATE_NAME, "Bad_Name"),
            (PARENT_COMPOSITE_POD_GROUP, "-x"),
        ]))
        .unwrap_err();
        assert!(errs.contains(
            FieldErrorType::Invalid,
            "metadata.annotations[scheduling.k8s.io/group-template-name]"
        ));
        assert!(errs.contains(
            FieldErrorType::Invalid,
            "metadata.annotations[scheduling.k8s.io/parent-composite-podgroup]"
        ));
        let errs = DownwardMapping::read(&map(&[(PARENT_COMPOSITE_POD_GROUP, "root")])).unwrap_err();
        assert!(errs.contains(
            FieldErrorType::Required,
            "metadata.annotations[scheduling.k8s.io/group-template-name]"
        ));
    }
}
