//! The built-in kinds: one file per kind holds everything particular to it (its served resource, typed
//! decoding, defaults, admission, validation, deletion behaviour, hooks and `kubectl get` columns) as a
//! [`Strategy`](crate::resource::Strategy). Adding a kind is one new file here plus one line in
//! [`builtin_resources`].

mod apps;
mod compositepodgroup;
mod configmap;
mod cronjob;
pub(crate) mod custom;
pub(crate) mod customresourcedefinition;
pub(crate) mod dra;
pub(crate) mod endpointslice;
mod event;
mod job;
mod lease;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod pod;
mod poddisruptionbudget;
mod podgroup;
pub(crate) mod print;
mod priorityclass;
mod rbac;
mod resourcequota;
mod review;
mod secret;
mod service;
mod serviceaccount;
pub(crate) mod storage;
pub(crate) mod validate;
mod workload;

use crate::resource::ResourceInfo;

/// The built-in resources, in discovery order.
pub(crate) fn builtin_resources() -> Vec<ResourceInfo> {
    let mut all = vec![
        namespace::resource(),
        node::resource(),
        pod::resource(),
        event::core_resource(),
        configmap::resource(),
        secret::resource(),
        serviceaccount::resource(),
        service::resource(),
        resourcequota::resource(),
        storage::persistentvolume::resource(),
        storage::persistentvolumeclaim::resource(),
        apps::deployment::resource(),
        apps::replicaset::resource(),
        apps::statefulset::resource(),
        apps::daemonset::resource(),
        event::v1_resource(),
        lease::resource(),
        endpointslice::resource(),
        job::resource(),
        cronjob::resource(),
        poddisruptionbudget::resource(),
        priorityclass::resource(),
        // v1beta1 first: clients that pick a kind's version in discovery order take the beta, as from
        // kube-apiserver (beta before alpha).
        workload::beta_resource(),
        podgroup::beta_resource(),
        workload::resource(),
        podgroup::resource(),
        compositepodgroup::resource(),
        storage::storageclass::resource(),
        storage::csidriver::resource(),
        storage::csinode::resource(),
        dra::deviceclass::resource(),
        dra::resourceclaim::resource(),
        dra::resourceclaimtemplate::resource(),
        dra::resourceslice::resource(),
        customresourcedefinition::resource(),
    ];
    all.extend(rbac::resources());
    all.extend(review::resources());
    all
}

/// The built-in resources left after kube-apiserver's `--runtime-config` switches `switches` (key, on):
/// a key is `<group>/<version>` (`v1` or `api/v1` for the core group) or `<group>/<version>/<resource>`;
/// `false` stops serving what it names, `true` keeps it (devcluster cannot serve more than it has). A key
/// naming nothing devcluster serves is an error, so a typo does not pass for a cluster shape.
pub(crate) fn served_resources(switches: &[(String, bool)]) -> Result<Vec<ResourceInfo>, String> {
    let mut all = builtin_resources();
    for (key, on) in switches {
        let parts: Vec<&str> = key.trim_start_matches("api/").split('/').collect();
        let (group, version, resource) = match parts.as_slice() {
            [v] => ("", *v, None),
            [g, v] => (*g, *v, None),
            [g, v, r] => (*g, *v, Some(*r)),
            _ => {
                return Err(format!(
                    "--runtime-config: {key:?}: expected <group>/<version>[/<resource>]"
                ));
            }
        };
        // `v1/pods` reads as the core group's resource; `apps/v1` as a group version.
        let (group, version, resource) = match (group, version, resource) {
            ("v1", r, None) if !r.starts_with('v') => ("", "v1", Some(r)),
            other => other,
        };
        let matches =
            |r: &ResourceInfo| r.group == group && r.version == version && resource.is_none_or(|res| r.plural == res);
        if !all.iter().any(matches) {
            return Err(format!("--runtime-config: {key}: not served by devcluster"));
        }
        if !on {
            all.retain(|r| !matches(r));
        }
    }
    Ok(all)
}

#[cfg(test)]
mod runtime_config_tests {
    use super::served_resources;

    fn served(switches: &[(&str, bool)]) -> Result<Vec<String>, String> {
        let switches: Vec<(String, bool)> = switches.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Ok(served_resources(&switches)?
            .iter()
            .filter(|r| r.group == "scheduling.k8s.io" || r.plural == "pods")
            .map(|r| format!("{}/{}/{}", r.group, r.version, r.plural))
            .collect())
    }

    #[test]
    fn switches_turn_off_group_versions_and_resources() {
        let all = served(&[]).unwrap();
        assert!(
            all.contains(&"scheduling.k8s.io/v1alpha3/compositepodgroups".to_string()),
            "{all:?}"
        );
        let no_cpg = served(&[("scheduling.k8s.io/v1alpha3/compositepodgroups", false)]).unwrap();
        assert!(!no_cpg.iter().any(|r| r.ends_with("compositepodgroups")));
        assert!(no_cpg.contains(&"scheduling.k8s.io/v1alpha3/workloads".to_string()));
        let no_alpha = served(&[("scheduling.k8s.io/v1alpha3", false)]).unwrap();
        assert!(!no_alpha.iter().any(|r| r.contains("v1alpha3")), "{no_alpha:?}");
        assert!(no_alpha.contains(&"scheduling.k8s.io/v1/priorityclasses".to_string()));
        assert_eq!(served(&[("scheduling.k8s.io/v1alpha3", true)]).unwrap(), all);
        assert!(
            served(&[("api/v1/pods", false)])
                .unwrap()
                .iter()
                .all(|r| !r.ends_with("/pods"))
        );
        assert!(
            served(&[("v1/pods", false)])
                .unwrap()
                .iter()
                .all(|r| !r.ends_with("/pods"))
        );
        assert!(no_alpha.contains(&"scheduling.k8s.io/v1beta1/workloads".to_string()));
        assert!(no_alpha.contains(&"scheduling.k8s.io/v1beta1/podgroups".to_string()));
        let no_beta = served(&[("scheduling.k8s.io/v1beta1", false)]).unwrap();
        assert!(no_beta.contains(&"scheduling.k8s.io/v1alpha3/workloads".to_string()));
        assert_eq!(
            served(&[("scheduling.k8s.io/v1beta2", true)]).unwrap_err(),
            "--runtime-config: scheduling.k8s.io/v1beta2: not served by devcluster"
        );
        assert!(served(&[("a/b/c/d", false)]).is_err());
    }
}
