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
