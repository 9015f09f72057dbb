//! Object names, identical to upstream's so that our controllers and upstream ones agree on the names of the
//! objects they create.
//!
//! Both functions hash with 32-bit FNV-1a, print the hash in decimal and map each digit byte `b` to
//! `"bcdfghjklmnpqrstvwxz2456789"[b % 27]` (apimachinery's `rand.SafeEncodeString`). FNV-1a is five lines;
//! it is written out here rather than pulled from a crate (the `fnv` crate is 64-bit).
//!
//! Their inputs are named ([`OwnerKey`], [`TemplateKey`]) and a runtime group's name is a [`GroupName`], so
//! a workload name and a template name cannot be passed in each other's place:
//!
//! ```
//! use workloadbuilder::{generate_pod_group_name, generate_workload_name, OwnerKey, TemplateKey};
//! assert_eq!(generate_workload_name(OwnerKey { name: "job", uid: "uid-1" }), "job-647cf7d9");
//! let name = generate_pod_group_name(TemplateKey { workload: "", template: "template" });
//! assert_eq!(name, "template-5cbb944dc9");
//! ```

use std::fmt;
use std::ops::Deref;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// The object a Workload is created for: its name and uid (the inputs of [`generate_workload_name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerKey<'a> {
    /// The owner's name.
    pub name: &'a str,
    /// The owner's uid.
    pub uid: &'a str,
}

impl<'a> From<&'a OwnerReference> for OwnerKey<'a> {
    fn from(owner: &'a OwnerReference) -> Self {
        Self {
            name: &owner.name,
            uid: &owner.uid,
        }
    }
}

/// One template of one Workload: the inputs of [`generate_pod_group_name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TemplateKey<'a> {
    /// The Workload's name.
    pub workload: &'a str,
    /// The template's name.
    pub template: &'a str,
}

/// The name of a runtime PodGroup or CompositePodGroup.
///
/// The instantiate functions take the group's name as a `GroupName` and its template as a `&str`, so the
/// two cannot be swapped. Names of related groups follow one rule, [`GroupName::child`]: `<parent>-<key>`.
///
/// ```
/// use workloadbuilder::GroupName;
/// let set = GroupName::new("serve");
/// let replica = set.child(0);
/// assert_eq!(replica, "serve-0");
/// assert_eq!(replica.child("leader").as_str(), "serve-0-leader");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupName(String);

impl GroupName {
    /// A name as given.
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The name of a group derived from this one: `<self>-<key>` (a replica index, a role, ...).
    pub fn child(&self, key: impl fmt::Display) -> Self {
        Self(format!("{}-{key}", self.0))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for GroupName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for GroupName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GroupName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<GroupName> for String {
    fn from(name: GroupName) -> Self {
        name.0
    }
}

impl PartialEq<str> for GroupName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for GroupName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for GroupName {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

/// The maximum length of an object name (a DNS-1123 subdomain).
pub const MAX_NAME_LENGTH: usize = 253;

const ALPHANUMS: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

fn fnv32a(parts: &[&[u8]]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for part in parts {
        for &b in *part {
            hash ^= u32::from(b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    hash
}

fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

fn hash_string(parts: &[&[u8]]) -> String {
    safe_encode(&fnv32a(parts).to_string())
}

/// The 32-bit FNV-1a hash of `parts`, printed in decimal and safe-encoded, as apimachinery's controllers
/// write hashes into names and labels (`pod-template-hash`, `controller-revision-hash`).
///
/// ```
/// assert_eq!(workloadbuilder::safe_hash(&[b"(types.UID)uid-1"]), "647cf7d9");
/// ```
pub fn safe_hash(parts: &[&[u8]]) -> String {
    hash_string(parts)
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The name of the Workload a controller creates for its object `owner` (name and uid; an
/// `&OwnerReference` converts): `<name>-<hash(uid)>`, the owner name truncated so the result fits in 253
/// characters; just the hash when the owner name is empty.
pub fn generate_workload_name<'a>(owner: impl Into<OwnerKey<'a>>) -> String {
    let OwnerKey { name, uid } = owner.into();
    let hash = hash_string(&[b"(types.UID)", uid.as_bytes()]);
    if name.is_empty() {
        return hash;
    }
    format!("{}-{}", truncate(name, MAX_NAME_LENGTH - hash.len() - 1), hash)
}

/// The name of the runtime PodGroup (or CompositePodGroup) instantiated from `template` of `workload`:
/// `<workload>-<template>-<hash(workload + template)>`, with the parts truncated so the result fits in 253
/// characters (the shorter part keeps its full length if it fits in half the budget; when neither does, the workload
/// name keeps the larger half).
pub fn generate_pod_group_name(key: TemplateKey<'_>) -> GroupName {
    let TemplateKey { workload, template } = key;
    let hash = hash_string(&[workload.as_bytes(), template.as_bytes()]);
    GroupName(compose_pod_group_name(workload, template, &hash))
}

/// The name of the runtime PodGroup a Job (or another controller object with uid `owner_uid`) instantiates
/// from `template` of `workload`: KEP-5547's `GeneratePodGroupName(workloadName, templateName, job.UID)`,
/// `<workload>-<template>-<hash(workload + template + uid)>`, truncated as [`generate_pod_group_name`].
/// Sibling Jobs that select the same template (the replicas of a replicated job) get one PodGroup each, and a
/// Job recreated under the same name never finds its predecessor's group.
///
/// ```
/// use workloadbuilder::{generate_pod_group_name_for_owner, TemplateKey};
/// let key = TemplateKey { workload: "train-647cf7d9", template: "workers" };
/// let a = generate_pod_group_name_for_owner(key, "uid-a");
/// let b = generate_pod_group_name_for_owner(key, "uid-b");
/// assert!(a.starts_with("train-647cf7d9-workers-"));
/// assert_ne!(a, b);
/// ```
pub fn generate_pod_group_name_for_owner(key: TemplateKey<'_>, owner_uid: &str) -> GroupName {
    let TemplateKey { workload, template } = key;
    let hash = hash_string(&[workload.as_bytes(), template.as_bytes(), owner_uid.as_bytes()]);
    GroupName(compose_pod_group_name(workload, template, &hash))
}

fn compose_pod_group_name(workload: &str, template: &str, hash: &str) -> String {
    let hash = hash.to_string();
    match (workload.is_empty(), template.is_empty()) {
        (true, true) => hash,
        (false, true) => format!("{}-{}", truncate(workload, MAX_NAME_LENGTH - hash.len() - 1), hash),
        (true, false) => format!("{}-{}", truncate(template, MAX_NAME_LENGTH - hash.len() - 1), hash),
        (false, false) => {
            let budget = MAX_NAME_LENGTH - hash.len() - 2;
            let (mut w, mut t) = (workload, template);
            if w.len() + t.len() > budget {
                let half = budget / 2;
                if w.len() <= half {
                    t = truncate(t, budget - w.len());
                } else if t.len() <= half {
                    w = truncate(w, budget - t.len());
                } else {
                    w = truncate(w, budget - half);
                    t = truncate(t, half);
                }
            }
            format!("{w}-{t}-{hash}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_vectors() {
        assert_eq!(
            generate_workload_name(OwnerKey {
                name: "job",
                uid: "uid-1"
            }),
            "job-647cf7d9"
        );
        assert_eq!(
            generate_pod_group_name(TemplateKey {
                workload: "",
                template: ""
            }),
            "65bb57b6b5"
        );
        assert_eq!(
            generate_pod_group_name(TemplateKey {
                workload: "",
                template: "template"
            }),
            "template-5cbb944dc9"
        );
        assert_eq!(
            generate_pod_group_name(TemplateKey {
                workload: "workload",
                template: ""
            }),
            "workload-c5546b9dd"
        );
    }

    #[test]
    fn empty_owner_is_just_the_hash() {
        let name = generate_workload_name(OwnerKey { name: "", uid: "uid-1" });
        assert_eq!(
            format!("job-{name}"),
            generate_workload_name(OwnerKey {
                name: "job",
                uid: "uid-1"
            })
        );
    }

    #[test]
    fn long_names_fit() {
        let long = "a".repeat(300);
        let w = generate_workload_name(OwnerKey {
            name: &long,
            uid: "uid",
        });
        assert_eq!(w.len(), MAX_NAME_LENGTH);
        for (wl, tpl) in [
            (long.as_str(), "t"),
            ("w", long.as_str()),
            (long.as_str(), long.as_str()),
        ] {
            let n = generate_pod_group_name(TemplateKey {
                workload: wl,
                template: tpl,
            });
            assert!(n.len() <= MAX_NAME_LENGTH, "{}", n.len());
            assert!(crate::validation::strings::is_dns1123_subdomain(&n).is_empty());
        }
        // The shorter part keeps its full length.
        let n = generate_pod_group_name(TemplateKey {
            workload: "short",
            template: &long,
        });
        assert!(n.starts_with("short-aaa"));
        let n = generate_pod_group_name(TemplateKey {
            workload: &long,
            template: "tpl",
        });
        assert!(n.contains("-tpl-"));
        // Both parts too long: the workload keeps `budget - half`, the template `half` (upstream's split). Pick
        // inputs whose hash has 10 digits so the budget is odd and the two halves differ.
        let (n, hash) = (0..20)
            .map(|k| {
                generate_pod_group_name(TemplateKey {
                    workload: &"a".repeat(300 + k),
                    template: &"b".repeat(300),
                })
            })
            .map(|n| {
                let hash = n.rsplit('-').next().unwrap().to_string();
                (n, hash)
            })
            .find(|(_, hash)| hash.len() == 10)
            .unwrap();
        let budget = MAX_NAME_LENGTH - hash.len() - 2;
        assert_eq!(budget % 2, 1);
        let (w, rest) = n.split_once('-').unwrap();
        assert_eq!(w.len(), budget - budget / 2);
        assert_eq!(rest.len() - hash.len() - 1, budget / 2);
    }

    #[test]
    fn deterministic_and_distinct() {
        assert_eq!(
            generate_pod_group_name(TemplateKey {
                workload: "w",
                template: "a"
            }),
            generate_pod_group_name(TemplateKey {
                workload: "w",
                template: "a"
            })
        );
        assert_ne!(
            generate_pod_group_name(TemplateKey {
                workload: "w",
                template: "a"
            }),
            generate_pod_group_name(TemplateKey {
                workload: "w",
                template: "b"
            })
        );
        assert_ne!(
            generate_workload_name(OwnerKey { name: "j", uid: "u1" }),
            generate_workload_name(OwnerKey { name: "j", uid: "u2" })
        );
        let owner = |uid: &str| {
            generate_pod_group_name_for_owner(
                TemplateKey {
                    workload: "w",
                    template: "a",
                },
                uid,
            )
        };
        assert_eq!(owner("u1"), owner("u1"));
        assert_ne!(owner("u1"), owner("u2"));
        // No uid adds nothing to the hash: the two-argument name.
        assert_eq!(
            owner(""),
            generate_pod_group_name(TemplateKey {
                workload: "w",
                template: "a"
            })
        );
    }

    #[test]
    fn owner_names_fit() {
        let long = "a".repeat(300);
        for (wl, tpl) in [
            (long.as_str(), "t"),
            ("w", long.as_str()),
            (long.as_str(), long.as_str()),
        ] {
            let n = generate_pod_group_name_for_owner(
                TemplateKey {
                    workload: wl,
                    template: tpl,
                },
                &long,
            );
            assert!(n.len() <= MAX_NAME_LENGTH, "{}", n.len());
            assert!(crate::validation::strings::is_dns1123_subdomain(&n).is_empty());
        }
    }
}
