//! `apiVersion` parsing as apimachinery's `schema.ParseGroupVersion` does it.

/// An `apiVersion` split into its group (empty for the core group) and version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupVersion<'a> {
    /// The API group; empty for the core group.
    pub group: &'a str,
    /// The version.
    pub version: &'a str,
}

/// Why an `apiVersion` is not a `group/version`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroupVersionError {
    /// More than one `/` (apimachinery's `ParseGroupVersion` error, verbatim).
    #[error("unexpected GroupVersion string: {0}")]
    TooManySlashes(String),
    /// `/v1`, `/`: nothing before the `/` (the core group is written without one, as `v1`).
    #[error("unexpected GroupVersion string: {0}: the group before \"/\" is empty (write the core group as \"v1\")")]
    EmptyGroup(String),
    /// `batch/`: nothing after the `/`.
    #[error("unexpected GroupVersion string: {0}: the version after \"/\" is empty")]
    EmptyVersion(String),
}

/// Parse an `apiVersion` the way apimachinery's `schema.ParseGroupVersion` does: no `/` is a version of
/// the core group (`v1`; the empty string is the empty group-version), exactly one `/` separates group and
/// version (`batch/v1`), more is an error (`unexpected GroupVersion string: batch/v1/extra`).
///
/// Stricter than Go where Go accepts what no object can carry: `/`, `/v1` and `batch/` (an empty group or
/// version around the `/`) are errors here.
///
/// ```
/// use workloadbuilder::validation::{parse_group_version, GroupVersion, GroupVersionError};
/// assert_eq!(parse_group_version("batch/v1"), Ok(GroupVersion { group: "batch", version: "v1" }));
/// assert_eq!(parse_group_version("v1"), Ok(GroupVersion { group: "", version: "v1" }));
/// assert_eq!(
///     parse_group_version("batch/v1/extra").unwrap_err().to_string(),
///     "unexpected GroupVersion string: batch/v1/extra"
/// );
/// assert!(matches!(parse_group_version("/v1"), Err(GroupVersionError::EmptyGroup(_))));
/// assert!(matches!(parse_group_version("batch/"), Err(GroupVersionError::EmptyVersion(_))));
/// ```
pub fn parse_group_version(api_version: &str) -> Result<GroupVersion<'_>, GroupVersionError> {
    let mut parts = api_version.split('/');
    let first = parts.next().unwrap_or_default();
    match (parts.next(), parts.next()) {
        (None, _) => Ok(GroupVersion {
            group: "",
            version: first,
        }),
        (Some(_), Some(_)) => Err(GroupVersionError::TooManySlashes(api_version.to_string())),
        (Some(_), None) if first.is_empty() => Err(GroupVersionError::EmptyGroup(api_version.to_string())),
        (Some(""), None) => Err(GroupVersionError::EmptyVersion(api_version.to_string())),
        (Some(version), None) => Ok(GroupVersion { group: first, version }),
    }
}

/// The API group of an `apiVersion` (`batch` for `batch/v1`, empty for `v1`), or why it is malformed
/// ([`parse_group_version`]).
pub fn api_group(api_version: &str) -> Result<&str, GroupVersionError> {
    parse_group_version(api_version).map(|gv| gv.group)
}
