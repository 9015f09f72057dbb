//! Pods of a Job: how the controller builds them from the template, and the view of an observed pod the
//! decision logic works on.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodSchedulingGroup};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kwas_api_types::names::{annotations, finalizers, labels};

/// The environment variable Indexed Jobs' containers get with their completion index.
pub const JOB_COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The labels that select a Job's pods (upstream's four, so kubectl and other tools find them).
pub fn job_labels(job: &Job) -> BTreeMap<String, String> {
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    BTreeMap::from([
        (labels::CONTROLLER_UID.to_string(), uid.clone()),
        (labels::JOB_NAME.to_string(), name.clone()),
        (labels::LEGACY_CONTROLLER_UID.to_string(), uid),
        (labels::LEGACY_JOB_NAME.to_string(), name),
    ])
}

/// The label selector string that lists a Job's pods.
pub fn job_pod_selector(job: &Job) -> String {
    format!(
        "{}={}",
        labels::CONTROLLER_UID,
        job.metadata.uid.as_deref().unwrap_or_default()
    )
}

/// A new pod for `job` from its template: upstream's labels and annotations, the tracking finalizer, a
/// controller reference to the Job, the completion index for Indexed Jobs (label, annotation, hostname and
/// `JOB_COMPLETION_INDEX`), and `spec.schedulingGroup.podGroupName` when the Job's pods belong to a PodGroup.
pub fn new_pod(job: &Job, index: Option<i32>, pod_group: Option<&str>) -> Pod {
    let job_name = job.metadata.name.clone().unwrap_or_default();
    let template = job.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    let mut pod_labels = template_meta.labels.unwrap_or_default();
    pod_labels.extend(job_labels(job));
    let mut pod_annotations = template_meta.annotations.unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    if let Some(i) = index {
        pod_labels.insert(labels::JOB_COMPLETION_INDEX.to_string(), i.to_string());
        pod_annotations.insert(annotations::JOB_COMPLETION_INDEX.to_string(), i.to_string());
        let hostname = format!("{job_name}-{i}");
        if spec.hostname.is_none() && hostname.len() <= 63 {
            spec.hostname = Some(hostname);
        }
        let env = EnvVar {
            name: JOB_COMPLETION_INDEX_ENV.to_string(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: format!("metadata.annotations['{}']", annotations::JOB_COMPLETION_INDEX),
                }),
                ..Default::default()
            }),
        };
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            let vars = c.env.get_or_insert_with(Vec::new);
            if !vars.iter().any(|e| e.name == JOB_COMPLETION_INDEX_ENV) {
                vars.push(env.clone());
            }
        }
    }
    if let Some(group) = pod_group {
        spec.scheduling_group = Some(PodSchedulingGroup {
            pod_group_name: Some(group.to_string()),
        });
    }
    let generate_name = match index {
        Some(i) => format!("{job_name}-{i}-"),
        None => format!("{job_name}-"),
    };
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(generate_name),
            namespace: job.metadata.namespace.clone(),
            labels: Some(pod_labels),
            annotations: (!pod_annotations.is_empty()).then_some(pod_annotations),
            finalizers: Some(vec![finalizers::JOB_TRACKING.to_string()]),
            owner_references: crate::sync::controller_ref(job).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Adds to `pod` every claim of its PodGroup it does not name yet, equal in every field (KEP-5729: a pod
/// claim equal to one of its PodGroup's resolves to the group's shared ResourceClaim). An entry the pod
/// template already has under that name is left as the user wrote it.
pub fn share_group_claims(
    pod: &mut Pod,
    group_claims: &[k8s_openapi::api::scheduling::v1alpha3::PodGroupResourceClaim],
) {
    if group_claims.is_empty() {
        return;
    }
    let Some(spec) = pod.spec.as_mut() else { return };
    let claims = spec.resource_claims.get_or_insert_with(Vec::new);
    for g in group_claims {
        if !claims.iter().any(|c| c.name == g.name) {
            claims.push(k8s_openapi::api::core::v1::PodResourceClaim {
                name: g.name.clone(),
                resource_claim_name: g.resource_claim_name.clone(),
                resource_claim_template_name: g.resource_claim_template_name.clone(),
            });
        }
    }
}

/// The phase of a pod as the Job controller sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// Not terminal and not being deleted.
    Active,
    /// Being deleted, not yet terminal.
    Terminating,
    /// Phase Succeeded.
    Succeeded,
    /// Phase Failed.
    Failed,
}

/// What the decision logic needs to know about one observed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodView {
    /// The pod's name.
    pub name: String,
    /// The pod's uid.
    pub uid: String,
    /// Active, terminating, succeeded or failed.
    pub state: PodState,
    /// The pod carries the tracking finalizer (not yet accounted for).
    pub tracked: bool,
    /// The pod's Ready condition is True.
    pub ready: bool,
    /// The completion index (Indexed Jobs), if valid.
    pub index: Option<i32>,
    /// Creation time.
    pub created: Option<Timestamp>,
    /// When the pod finished (latest container termination, else the Ready/Scheduled transition), if known.
    pub finished: Option<Timestamp>,
    /// The PodGroup the pod belongs to.
    pub pod_group: Option<String>,
    /// The pod has been bound to a node.
    pub scheduled: bool,
}

/// Whether `pod` carries the Job's tracking finalizer (`batch.kubernetes.io/job-tracking`).
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizers::JOB_TRACKING)
}

impl PodView {
    /// The view of `pod`.
    pub fn of(pod: &Pod) -> Self {
        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
        let deleting = pod.metadata.deletion_timestamp.is_some();
        let state = match phase {
            "Succeeded" => PodState::Succeeded,
            "Failed" => PodState::Failed,
            _ if deleting => PodState::Terminating,
            _ => PodState::Active,
        };
        let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
        let ready = conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True");
        let finished = status
            .and_then(|s| s.container_statuses.as_deref())
            .into_iter()
            .flatten()
            .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref().map(|t| t.0))
            .max()
            .or_else(|| {
                conditions
                    .iter()
                    .filter(|c| c.type_ == "Ready")
                    .filter_map(|c| c.last_transition_time.as_ref().map(|t| t.0))
                    .max()
            });
        let index = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::JOB_COMPLETION_INDEX))
            .or_else(|| {
                pod.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(labels::JOB_COMPLETION_INDEX))
            })
            .and_then(|v| v.parse::<i32>().ok())
            .filter(|i| *i >= 0);
        Self {
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            state,
            tracked: has_tracking_finalizer(pod),
            ready,
            index,
            created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            finished,
            pod_group: pod
                .spec
                .as_ref()
                .and_then(|s| s.scheduling_group.as_ref())
                .and_then(|g| g.pod_group_name.clone()),
            scheduled: pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some(),
        }
    }

    /// Terminal (Succeeded or Failed).
    pub fn is_terminal(&self) -> bool {
        matches!(self.state, PodState::Succeeded | PodState::Failed)
    }
}

/// The annotation holding how many counted failures the pod's index had before it (upstream's
/// `batch.kubernetes.io/job-index-failure-count`, on pods of Jobs with `backoffLimitPerIndex`).
pub const JOB_INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// The annotation holding how many failures of the pod's index were ignored by the pod failure policy
/// (upstream's `batch.kubernetes.io/job-index-ignored-failure-count`), set only when not zero.
pub const JOB_INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";

/// A terminated container of an observed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerExit {
    /// The container's name.
    pub name: String,
    /// Its exit code.
    pub exit_code: i32,
}

/// What the pod failure policy and `backoffLimitPerIndex` read of an observed pod, beyond its
/// [`PodView`]: exit codes, conditions and the index failure counts. Kept apart from [`PodView`] (and
/// keyed by pod uid in [`PodOutcomes`]) so that a view stays a plain value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodOutcome {
    /// The pod's namespace (upstream's FailJob messages name `namespace/name`).
    pub namespace: String,
    /// The terminated containers of `status.containerStatuses`, in order.
    pub containers: Vec<ContainerExit>,
    /// The terminated containers of `status.initContainerStatuses`, in order.
    pub init_containers: Vec<ContainerExit>,
    /// The pod's conditions as (type, status).
    pub conditions: Vec<(String, String)>,
    /// [`JOB_INDEX_FAILURE_COUNT`], 0 when missing or not a number in `[0, i32::MAX]` (as upstream).
    pub index_failure_count: i32,
    /// [`JOB_INDEX_IGNORED_FAILURE_COUNT`], likewise.
    pub index_ignored_failure_count: i32,
    /// The restarts of its containers and init containers (`restartCount`, summed), which count against
    /// `backoffLimit` under `restartPolicy: OnFailure`.
    pub restarts: i64,
}

/// The outcomes of a Job's pods, by pod uid.
pub type PodOutcomes = std::collections::HashMap<String, PodOutcome>;

fn exits(statuses: Option<&Vec<k8s_openapi::api::core::v1::ContainerStatus>>) -> Vec<ContainerExit> {
    statuses
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            Some(ContainerExit {
                name: c.name.clone(),
                exit_code: t.exit_code,
            })
        })
        .collect()
}

/// Upstream's `parseInt32`: a count annotation that is missing, not a number or out of `[0, i32::MAX]`
/// reads as 0.
fn count_annotation(pod: &Pod, key: &str) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|v| i32::try_from(v).ok())
        .filter(|v| *v >= 0)
        .unwrap_or(0)
}

impl PodOutcome {
    /// The outcome of `pod`.
    pub fn of(pod: &Pod) -> Self {
        let status = pod.status.as_ref();
        Self {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            containers: exits(status.and_then(|s| s.container_statuses.as_ref())),
            init_containers: exits(status.and_then(|s| s.init_container_statuses.as_ref())),
            conditions: status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .map(|c| (c.type_.clone(), c.status.clone()))
                .collect(),
            index_failure_count: count_annotation(pod, JOB_INDEX_FAILURE_COUNT),
            index_ignored_failure_count: count_annotation(pod, JOB_INDEX_IGNORED_FAILURE_COUNT),
            restarts: status
                .into_iter()
                .flat_map(|s| {
                    s.container_statuses
                        .iter()
                        .flatten()
                        .chain(s.init_container_statuses.iter().flatten())
                })
                .map(|c| i64::from(c.restart_count))
                .sum(),
        }
    }

    /// The outcomes of `pods`, by uid.
    pub fn all(pods: &[Pod]) -> PodOutcomes {
        pods.iter()
            .map(|p| (p.metadata.uid.clone().unwrap_or_default(), Self::of(p)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobSpec;
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};

    fn job() -> Job {
        let mut job = Job::default();
        job.metadata.name = Some("train".into());
        job.metadata.namespace = Some("ml".into());
        job.metadata.uid = Some("uid-1".into());
        job.spec = Some(JobSpec {
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("app".to_string(), "train".to_string())].into()),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "main".into(),
                        image: Some("busybox".into()),
                        ..Default::default()
                    }],
                    restart_policy: Some("Never".into()),
                    ..Default::default()
                }),
            },
            ..Default::default()
        });
        job
    }

    #[test]
    fn non_indexed_pod() {
        let pod = new_pod(&job(), None, Some("train-pg"));
        let meta = &pod.metadata;
        assert_eq!(meta.generate_name.as_deref(), Some("train-"));
        let l = meta.labels.as_ref().unwrap();
        assert_eq!(l["app"], "train");
        assert_eq!(l["batch.kubernetes.io/job-name"], "train");
        assert_eq!(l["controller-uid"], "uid-1");
        assert_eq!(
            meta.finalizers.as_deref(),
            Some(&["batch.kubernetes.io/job-tracking".to_string()][..])
        );
        assert_eq!(meta.owner_references.as_ref().unwrap()[0].controller, Some(true));
        let spec = pod.spec.unwrap();
        assert_eq!(
            spec.scheduling_group.unwrap().pod_group_name.as_deref(),
            Some("train-pg")
        );
        assert!(spec.hostname.is_none());
    }

    #[test]
    fn outcome_of_a_disrupted_pod() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ml", "uid": "u", "annotations": {
                "batch.kubernetes.io/job-index-failure-count": "2147483647",
                "batch.kubernetes.io/job-index-ignored-failure-count": "-1"
            }},
            "status": {
                "phase": "Failed",
                "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
                "initContainerStatuses": [{"name": "init", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0}}}],
                "containerStatuses": [
                    {"name": "main", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                        "state": {"terminated": {"exitCode": 137, "reason": "Error"}}},
                    {"name": "side", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                        "state": {"running": {}}}
                ]
            }
        }))
        .unwrap();
        let o = PodOutcome::of(&pod);
        assert_eq!(o.namespace, "ml");
        assert_eq!(
            o.containers,
            vec![ContainerExit {
                name: "main".into(),
                exit_code: 137
            }]
        );
        assert_eq!(o.init_containers.len(), 1);
        assert_eq!(o.conditions, vec![("DisruptionTarget".to_string(), "True".to_string())]);
        // Upstream's parseInt32: out of range or negative reads as 0.
        assert_eq!(o.index_failure_count, i32::MAX);
        assert_eq!(o.index_ignored_failure_count, 0);
        let mut hostile = pod.clone();
        hostile.metadata.annotations = Some([(JOB_INDEX_FAILURE_COUNT.to_string(), "99999999999".to_string())].into());
        assert_eq!(PodOutcome::of(&hostile).index_failure_count, 0);
        assert_eq!(PodOutcome::all(&[pod])["u"], o);
    }

    #[test]
    fn indexed_pod() {
        let pod = new_pod(&job(), Some(3), None);
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("train-3-"));
        assert_eq!(
            pod.metadata.annotations.as_ref().unwrap()["batch.kubernetes.io/job-completion-index"],
            "3"
        );
        assert_eq!(
            pod.metadata.labels.as_ref().unwrap()["batch.kubernetes.io/job-completion-index"],
            "3"
        );
        let spec = pod.spec.unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("train-3"));
        let env = spec.containers[0].env.as_ref().unwrap();
        assert_eq!(env[0].name, "JOB_COMPLETION_INDEX");
        assert!(spec.scheduling_group.is_none());
        let view = PodView::of(&new_pod(&job(), Some(3), None));
        assert_eq!(view.index, Some(3));
        assert_eq!(view.state, PodState::Active);
        assert!(view.tracked);
    }
}
