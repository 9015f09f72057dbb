//! Which ResourceClaim a pod's `spec.resourceClaims` entry stands for: the one rule the scheduler, the
//! ResourceClaim controller and the kubelet all follow (upstream's `resourceclaim.Name`, with KEP-5729's
//! claims shared by a PodGroup).
//!
//! An entry names its claim directly (`resourceClaimName`), or names a template
//! (`resourceClaimTemplateName`) whose claim was generated for the pod and recorded in the pod's
//! `status.resourceClaimStatuses` (a status entry without a claim name means no claim was needed). An entry
//! equal in all three fields to one of its PodGroup's `spec.resourceClaims` is the group's: one claim for
//! all the group's pods, generated for the PodGroup and recorded in the PodGroup's status.

/// What a pod's claim entry resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimName {
    /// This claim, named directly or generated for the pod (or its PodGroup).
    Named {
        /// The ResourceClaim's name.
        name: String,
        /// Whether it was generated from a template (so it must be owned by the pod or the PodGroup).
        generated: bool,
    },
    /// The template needed no claim (its status entry has no name).
    NotNeeded,
    /// A template's claim was not generated yet.
    NotCreatedYet,
    /// Neither `resourceClaimName` nor `resourceClaimTemplateName` is set.
    Unset,
}

/// One `spec.resourceClaims` entry of a pod or a PodGroup: `(name, resourceClaimName,
/// resourceClaimTemplateName)`.
pub type ClaimEntry<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// One `status.resourceClaimStatuses` entry: `(name, resourceClaimName)`.
pub type ClaimStatus<'a> = (&'a str, Option<&'a str>);

/// Whether `entry` is one of the PodGroup's claims (equal in every field to one of `group_claims`).
pub fn shared_with_group(entry: ClaimEntry<'_>, group_claims: &[ClaimEntry<'_>]) -> bool {
    group_claims.contains(&entry)
}

/// The claim a pod's `entry` stands for, given the pod's `status.resourceClaimStatuses` and, when the
/// entry is shared with its PodGroup, the PodGroup's.
pub fn claim_name(
    entry: ClaimEntry<'_>,
    pod_statuses: &[ClaimStatus<'_>],
    group_statuses: Option<&[ClaimStatus<'_>]>,
) -> ClaimName {
    let (name, direct, template) = entry;
    match (direct, template) {
        (Some(d), _) => ClaimName::Named {
            name: d.to_string(),
            generated: false,
        },
        (None, Some(_)) => {
            let find = |statuses: &[ClaimStatus<'_>]| {
                statuses
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, c)| c.map(str::to_string))
            };
            match find(pod_statuses).or_else(|| group_statuses.and_then(find)) {
                Some(Some(c)) => ClaimName::Named {
                    name: c,
                    generated: true,
                },
                Some(None) => ClaimName::NotNeeded,
                None => ClaimName::NotCreatedYet,
            }
        }
        (None, None) => ClaimName::Unset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_resolve_by_name_then_the_pods_status_then_the_groups() {
        assert_eq!(
            claim_name(("gpu", Some("mine"), None), &[], None),
            ClaimName::Named {
                name: "mine".into(),
                generated: false
            }
        );
        let pod = [("gpu", Some("p-gpu-x1")), ("none", None)];
        assert_eq!(
            claim_name(("gpu", None, Some("t")), &pod, None),
            ClaimName::Named {
                name: "p-gpu-x1".into(),
                generated: true
            }
        );
        assert_eq!(claim_name(("none", None, Some("t")), &pod, None), ClaimName::NotNeeded);
        assert_eq!(
            claim_name(("other", None, Some("t")), &pod, None),
            ClaimName::NotCreatedYet
        );
        let group = [("other", Some("g-other-y2"))];
        assert_eq!(
            claim_name(("other", None, Some("t")), &pod, Some(&group)),
            ClaimName::Named {
                name: "g-other-y2".into(),
                generated: true
            }
        );
        assert_eq!(claim_name(("x", None, None), &pod, None), ClaimName::Unset);
        assert!(shared_with_group(("c", None, Some("t")), &[("c", None, Some("t"))]));
        assert!(!shared_with_group(("c", None, Some("t")), &[("c", Some("n"), None)]));
    }
}
