//! The ResourceClaim controller kube-controller-manager runs upstream (`resourceclaim`), for clusters
//! that have none (devcluster, `kwas dev`); on a real cluster kube-controller-manager already runs it,
//! so `kwas controllers` starts this one only when asked (`--resource-claim-controller`).
//!
//! Three reconcilers, each deciding with a pure function of [`plan`]:
//! - **PodGroups** with `spec.resourceClaims` templates (KEP-5729, v1.37's `DRAWorkloadResourceClaims`):
//!   one ResourceClaim per entry, generated from the template (`generateName: <group>-<entry>-`, owned
//!   by the PodGroup, annotated `resource.kubernetes.io/podgroup-claim-name`), recorded in the group's
//!   `status.resourceClaimStatuses`. A PodGroup is the only writer of its claims, so pods of a gang never
//!   race to create them.
//! - **Pods** with `spec.resourceClaims`: a template entry equal in every field to one of its PodGroup's
//!   is the group's claim; any other template entry gets the pod's own claim (`<pod>-<entry>-`, owned by
//!   the pod, annotated `resource.kubernetes.io/pod-claim-name`); the names are recorded in the pod's
//!   `status.resourceClaimStatuses`. A claim is created and recorded in the same reconcile, and a
//!   restarted controller finds what it created by owner and annotation.
//! - **ResourceClaims**: a `status.reservedFor` consumer that is gone is removed (a pod deleted,
//!   replaced, terminal, or deleted before being scheduled; a PodGroup deleted, replaced, or with no
//!   pod naming it that still needs claims); a claim whose last reservation goes is deallocated in the
//!   same write and then loses the scheduler's `resource.kubernetes.io/delete-protection` finalizer (only
//!   on that transition, as upstream: the scheduler writes the finalizer before the allocation); a claim
//!   being deleted that nothing uses is unblocked; a pod's generated claim is deleted once the pod is
//!   done or replaced. A consumer missing from the cache is looked up on the API server before its
//!   reservation is removed.
//!
//! Choice (KEP-5729 removes a PodGroup's reservation only once the PodGroup is deleted, and leaves its
//! deletion to the workload's controller, which may keep it as long as the workload): a PodGroup stops
//! consuming its claims as soon as no pod naming it needs them any more (all terminal, deleted, or
//! deleted before being scheduled), so a finished Job's devices are released when its pods finish.
//! Pods that come later (a retried gang) get the claim allocated again, maybe on other devices.

pub mod plan;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimConsumerReference, ResourceClaimTemplate};
use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;
use tracing::warn;

use crate::error::{Error, Result, is_not_found};
use crate::sync::EventSink;
use plan::{ClaimStep, Consumer, NewClaim, Owner, Step};

/// The controller's name in events and as field manager (upstream's).
pub const CONTROLLER_NAME: &str = "resourceclaim-controller";

/// Shared state of the reconciles.
#[derive(Clone)]
pub struct Context {
    client: Client,
    recorder: Recorder,
    backoff: Arc<crate::retry::Backoff>,
    pods: Option<Store<Pod>>,
    claims: Option<Store<ResourceClaim>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish()
    }
}

impl Context {
    /// A context on `client`.
    pub fn new(client: Client) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: CONTROLLER_NAME.to_string(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Self {
            client,
            recorder,
            backoff: Arc::default(),
            pods: None,
            claims: None,
        }
    }

    fn claims_in(&self, namespace: &str) -> Vec<ResourceClaim> {
        self.claims
            .as_ref()
            .map(|s| {
                s.state()
                    .into_iter()
                    .filter(|c| c.namespace().as_deref() == Some(namespace))
                    .map(|c| (*c).clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Runs the three reconcilers until `shutdown` resolves.
pub async fn run(ctx: Context, shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static) {
    let client = ctx.client.clone();
    let pods: Api<Pod> = Api::all(client.clone());
    let groups: Api<PodGroup> = Api::all(client.clone());
    let claims: Api<ResourceClaim> = Api::all(client.clone());
    let cfg = watcher::Config::default();

    let pod_ctl = Controller::new(pods.clone(), cfg.clone());
    let claim_ctl = Controller::new(claims.clone(), cfg.clone());
    let group_ctl = Controller::new(groups.clone(), cfg.clone());
    let mut ctx = ctx;
    ctx.pods = Some(pod_ctl.store());
    ctx.claims = Some(claim_ctl.store());
    let ctx = Arc::new(ctx);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };

    let pod_store = ctx.pods.clone();
    let pods_of_group = move |g: PodGroup| {
        let (ns, name) = (g.namespace(), g.name_any());
        pod_store
            .as_ref()
            .map(|s| {
                s.state()
                    .into_iter()
                    // Only pods with claims have anything to reconcile (`reconcile_pod`); testing that
                    // first keeps this scan cheap when no pod has any (every PodGroup event runs it).
                    .filter(|p| has_claims(p))
                    .filter(|p| p.namespace() == ns && group_of(p).as_deref() == Some(name.as_str()))
                    .map(|p| ObjectRef::from_obj(&*p))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let pod_run = pod_ctl
        .watches(groups.clone(), cfg.clone(), pods_of_group)
        .graceful_shutdown_on(stopped())
        .run(reconcile_pod, error_policy, ctx.clone())
        .for_each(|r| async move {
            report(r.map(drop), "resource claim pod reconcile failed");
        });
    let group_run = group_ctl
        .owns(claims.clone(), cfg.clone())
        .graceful_shutdown_on(stopped())
        .run(reconcile_group, error_policy, ctx.clone())
        .for_each(|r| async move {
            report(r.map(drop), "resource claim group reconcile failed");
        });
    let claims_of_pod = |p: Pod| {
        claim_refs_of(
            p.namespace(),
            p.status
                .and_then(|s| s.resource_claim_statuses)
                .map(|v| v.into_iter().filter_map(|s| s.resource_claim_name).collect())
                .unwrap_or_default(),
            p.spec
                .and_then(|s| s.resource_claims)
                .map(|v| v.into_iter().filter_map(|c| c.resource_claim_name).collect())
                .unwrap_or_default(),
        )
    };
    let claims_of_group = |g: PodGroup| {
        claim_refs_of(
            g.namespace(),
            g.status
                .and_then(|s| s.resource_claim_statuses)
                .map(|v| v.into_iter().filter_map(|s| s.resource_claim_name).collect())
                .unwrap_or_default(),
            g.spec
                .resource_claims
                .map(|v| v.into_iter().filter_map(|c| c.resource_claim_name).collect())
                .unwrap_or_default(),
        )
    };
    let claim_run = claim_ctl
        .watches(pods, cfg.clone(), claims_of_pod)
        .watches(groups, cfg, claims_of_group)
        .graceful_shutdown_on(stopped())
        .run(reconcile_claim, error_policy, ctx)
        .for_each(|r| async move {
            report(r.map(drop), "resource claim reconcile failed");
        });
    futures::join!(pod_run, group_run, claim_run);
}

/// Logs a reconcile's failure: conflicts (a newer version is on its way) and objects already gone at
/// debug level, the rest as warnings.
fn report(
    r: std::result::Result<(), kube::runtime::controller::Error<Error, kube::runtime::watcher::Error>>,
    what: &str,
) {
    use kube::runtime::controller::Error as E;
    match r {
        Ok(()) => {}
        Err(E::ObjectNotFound(o)) => tracing::debug!(object = %o, "{what}: gone meanwhile"),
        Err(E::ReconcilerFailed(Error::Kube(e), o)) if crate::error::is_conflict(&e) => {
            tracing::debug!(object = %o, error = %e, "{what}: conflict, retried");
        }
        Err(e) => warn!(error = %e, "{what}"),
    }
}

fn claim_refs_of(namespace: Option<String>, a: Vec<String>, b: Vec<String>) -> Vec<ObjectRef<ResourceClaim>> {
    let ns = namespace.unwrap_or_default();
    a.into_iter().chain(b).map(|n| ObjectRef::new(&n).within(&ns)).collect()
}

fn group_of(p: &Pod) -> Option<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.scheduling_group.as_ref())
        .and_then(|g| g.pod_group_name.clone())
}

fn error_policy<K: kube::Resource>(obj: Arc<K>, error: &Error, ctx: Arc<Context>) -> Action {
    crate::retry::action(&ctx.backoff, crate::retry::key(&*obj), error)
}

fn params() -> PatchParams {
    PatchParams::apply(CONTROLLER_NAME)
}

/// Whether the pod lists resource claims (a pod without any is nothing to this controller).
fn has_claims(p: &Pod) -> bool {
    p.spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|c| !c.is_empty())
}

async fn reconcile_pod(pod: Arc<Pod>, ctx: Arc<Context>) -> Result<Action> {
    crate::retry::contain(async {
        if !has_claims(&pod) {
            return Ok(Action::await_change());
        }
        let ns = pod.namespace().unwrap_or_default();
        let group = match group_of(&pod) {
            Some(g) => crate::sync::get_opt::<PodGroup>(&ctx.client, &ns, &g).await?,
            None => None,
        };
        let claims = ctx.claims_in(&ns);
        match plan::plan_pod(&pod, group.as_ref(), &claims) {
            Step::Create(new) => {
                let events = EventSink::new(ctx.recorder.clone(), &*pod);
                let Some(name) = create_claim(&ctx, &ns, &new, &events).await? else {
                    return Ok(Action::requeue(Duration::from_secs(10)));
                };
                // Recorded in the same reconcile: a retry never creates a second claim.
                let mut entries: Vec<(String, Option<String>)> = recorded_pod(&pod);
                entries.retain(|(n, _)| *n != new.entry);
                entries.push((new.entry.clone(), Some(name)));
                record_pod(&ctx, &pod, entries).await?;
                Ok(Action::await_change())
            }
            Step::Record(entries) => {
                record_pod(&ctx, &pod, entries).await?;
                Ok(Action::await_change())
            }
            Step::Wait(_) | Step::Nothing => Ok(Action::await_change()),
        }
    })
    .await
}

async fn reconcile_group(group: Arc<PodGroup>, ctx: Arc<Context>) -> Result<Action> {
    crate::retry::contain(async {
        if group.spec.resource_claims.as_ref().is_none_or(Vec::is_empty) {
            return Ok(Action::await_change());
        }
        let ns = group.namespace().unwrap_or_default();
        let claims = ctx.claims_in(&ns);
        match plan::plan_group(&group, &claims) {
            Step::Create(new) => {
                let events = EventSink::new(ctx.recorder.clone(), &*group);
                let Some(name) = create_claim(&ctx, &ns, &new, &events).await? else {
                    return Ok(Action::requeue(Duration::from_secs(10)));
                };
                let mut entries: Vec<(String, Option<String>)> = group
                    .status
                    .as_ref()
                    .and_then(|s| s.resource_claim_statuses.as_ref())
                    .into_iter()
                    .flatten()
                    .filter(|s| s.name != new.entry)
                    .map(|s| (s.name.clone(), s.resource_claim_name.clone()))
                    .collect();
                entries.push((new.entry.clone(), Some(name)));
                record_group(&ctx, &group, entries).await?;
                // More entries may follow.
                Ok(Action::requeue(Duration::ZERO))
            }
            Step::Record(entries) => {
                record_group(&ctx, &group, entries).await?;
                Ok(Action::await_change())
            }
            Step::Wait(_) | Step::Nothing => Ok(Action::await_change()),
        }
    })
    .await
}

/// Creates `new` from its template; `None` (with a Warning event) when the template does not exist.
async fn create_claim(ctx: &Context, ns: &str, new: &NewClaim, events: &EventSink) -> Result<Option<String>> {
    let templates: Api<ResourceClaimTemplate> = Api::namespaced(ctx.client.clone(), ns);
    let Some(template) = templates.get_opt(&new.template).await? else {
        events
            .warning(
                "FailedResourceClaimCreation",
                format!("resource claim template \"{}\" not found", new.template),
            )
            .await;
        return Ok(None);
    };
    let (owner, annotation) = match &new.owner {
        Owner::Pod { name, uid } => (
            OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: name.clone(),
                uid: uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
            plan::POD_CLAIM_ANNOTATION,
        ),
        Owner::PodGroup { name, uid } => (
            OwnerReference {
                api_version: "scheduling.k8s.io/v1alpha3".into(),
                kind: "PodGroup".into(),
                name: name.clone(),
                uid: uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
            plan::PODGROUP_CLAIM_ANNOTATION,
        ),
    };
    let tspec = template.spec.clone().unwrap_or_default();
    let tmeta = tspec.metadata.clone().unwrap_or_default();
    let mut annotations = tmeta.annotations.unwrap_or_default();
    annotations.insert(annotation.to_string(), new.entry.clone());
    let claim = ResourceClaim {
        metadata: ObjectMeta {
            generate_name: Some(new.generate_name.clone()),
            namespace: Some(ns.to_string()),
            labels: tmeta.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: tspec.spec,
        status: None,
    };
    let api: Api<ResourceClaim> = Api::namespaced(ctx.client.clone(), ns);
    let pp = PostParams {
        field_manager: Some(CONTROLLER_NAME.into()),
        ..Default::default()
    };
    let created = api.create(&pp, &claim).await?;
    Ok(created.metadata.name)
}

fn recorded_pod(pod: &Pod) -> Vec<(String, Option<String>)> {
    pod.status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|s| (s.name.clone(), s.resource_claim_name.clone()))
        .collect()
}

fn statuses_json(entries: &[(String, Option<String>)]) -> serde_json::Value {
    json!(
        entries
            .iter()
            .map(|(n, c)| json!({"name": n, "resourceClaimName": c}))
            .collect::<Vec<_>>()
    )
}

async fn record_pod(ctx: &Context, pod: &Pod, entries: Vec<(String, Option<String>)>) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
    let patch = json!({"apiVersion": "v1", "kind": "Pod",
        "status": {"resourceClaimStatuses": statuses_json(&entries)}});
    api.patch_status(&pod.name_any(), &params().force(), &Patch::Apply(&patch))
        .await?;
    Ok(())
}

async fn record_group(ctx: &Context, group: &PodGroup, entries: Vec<(String, Option<String>)>) -> Result<()> {
    let api: Api<PodGroup> = Api::namespaced(ctx.client.clone(), &group.namespace().unwrap_or_default());
    let patch = json!({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
        "status": {"resourceClaimStatuses": statuses_json(&entries)}});
    api.patch_status(&group.name_any(), &params().force(), &Patch::Apply(&patch))
        .await?;
    Ok(())
}

async fn reconcile_claim(claim: Arc<ResourceClaim>, ctx: Arc<Context>) -> Result<Action> {
    crate::retry::contain(async {
        let ns = claim.namespace().unwrap_or_default();
        let mut states = Vec::new();
        for r in claim.status.iter().flat_map(|s| s.reserved_for.iter().flatten()) {
            states.push((r.uid.clone(), consumer_state(&ctx, &ns, r).await?));
        }
        let owner_pod_done = owner_pod_done(&ctx, &ns, &claim).await?;
        let step = plan::plan_claim(
            &claim,
            |r| {
                states
                    .iter()
                    .find(|(u, _)| *u == r.uid)
                    .map(|(_, s)| *s)
                    .unwrap_or(Consumer::Active)
            },
            owner_pod_done,
        );
        let api: Api<ResourceClaim> = Api::namespaced(ctx.client.clone(), &ns);
        let name = claim.name_any();
        let pp = PostParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..Default::default()
        };
        let drop_finalizer = |mut c: ResourceClaim| {
            let api = api.clone();
            let (name, pp) = (name.clone(), pp.clone());
            async move {
                if let Some(f) = c.metadata.finalizers.as_mut() {
                    f.retain(|x| x != plan::DELETE_PROTECTION);
                }
                api.replace(&name, &pp, &c).await.map(drop)
            }
        };
        match step {
            ClaimStep::Status {
                reserved_for,
                deallocate,
                drop_finalizer: then_drop,
            } => {
                let mut c = (*claim).clone();
                let status = c.status.get_or_insert_default();
                status.reserved_for = (!reserved_for.is_empty()).then_some(reserved_for);
                if deallocate {
                    status.allocation = None;
                    status.devices = None;
                }
                // Conditional on the version read: a conflict re-reads through the watch.
                let updated = api.replace_status(&name, &pp, &c).await?;
                if then_drop && updated.status.as_ref().is_none_or(|s| s.allocation.is_none()) {
                    drop_finalizer(updated).await?;
                }
            }
            ClaimStep::Unblock { deallocate } => {
                let mut c = (*claim).clone();
                if deallocate {
                    let status = c.status.get_or_insert_default();
                    status.allocation = None;
                    status.devices = None;
                    c = api.replace_status(&name, &pp, &c).await?;
                }
                drop_finalizer(c).await?;
            }
            ClaimStep::Delete => {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: claim.metadata.uid.clone(),
                        resource_version: claim.metadata.resource_version.clone(),
                    }),
                    ..Default::default()
                };
                match api.delete(&name, &dp).await {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            ClaimStep::Nothing => {}
        }
        Ok(Action::await_change())
    })
    .await
}

/// Whether a reservation's consumer still uses the claim; one missing from the cache is read from the
/// API server first.
async fn consumer_state(ctx: &Context, ns: &str, r: &ResourceClaimConsumerReference) -> Result<Consumer> {
    match (r.api_group.as_deref().unwrap_or(""), r.resource.as_str()) {
        ("", "pods") => {
            let cached = ctx
                .pods
                .as_ref()
                .and_then(|s| s.get(&ObjectRef::new(&r.name).within(ns)));
            let pod = match cached {
                Some(p) => Some((*p).clone()),
                None => crate::sync::get_opt::<Pod>(&ctx.client, ns, &r.name).await?,
            };
            Ok(match pod {
                Some(p) if p.metadata.uid.as_deref() == Some(r.uid.as_str()) && plan::pod_needs_claims(&p) => {
                    Consumer::Active
                }
                _ => Consumer::Gone,
            })
        }
        ("scheduling.k8s.io", "podgroups") => {
            let Some(g) = crate::sync::get_opt::<PodGroup>(&ctx.client, ns, &r.name).await? else {
                return Ok(Consumer::Gone);
            };
            if g.metadata.uid.as_deref() != Some(r.uid.as_str()) {
                return Ok(Consumer::Gone);
            }
            // Consumed while a pod naming the group still needs claims; the cache answers "yes" cheaply,
            // a "no" is confirmed on the API server (a pod just created may not be cached yet).
            let cached_busy = ctx.pods.as_ref().is_some_and(|s| {
                s.state().iter().any(|p| {
                    p.namespace().as_deref() == Some(ns)
                        && group_of(p).as_deref() == Some(r.name.as_str())
                        && plan::pod_needs_claims(p)
                })
            });
            if cached_busy {
                return Ok(Consumer::Active);
            }
            let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
            let live = pods.list(&kube::api::ListParams::default()).await?;
            let busy = live
                .items
                .iter()
                .any(|p| group_of(p).as_deref() == Some(r.name.as_str()) && plan::pod_needs_claims(p));
            Ok(if busy { Consumer::Active } else { Consumer::Gone })
        }
        // Consumers of other kinds are not ours to judge.
        _ => Ok(Consumer::Active),
    }
}

/// For a claim generated for a pod: whether that pod was found done or replaced (one not found is left
/// to the garbage collector, as upstream).
async fn owner_pod_done(ctx: &Context, ns: &str, claim: &ResourceClaim) -> Result<bool> {
    let Some(owner) = claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == "Pod")
    else {
        return Ok(false);
    };
    let pod = crate::sync::get_opt::<Pod>(&ctx.client, ns, &owner.name).await?;
    Ok(match pod {
        Some(p) if p.metadata.uid.as_deref() == Some(owner.uid.as_str()) => !plan::pod_needs_claims(&p),
        Some(_) => true,
        None => false,
    })
}
