//! The stack on each realistic shape of a v1.37 cluster (devcluster's profiles, the README's "Running
//! kwas on a real cluster" table): every scheduling version enabled (`alpha`), a stock cluster with the
//! beta only (`stock-1.37`), and the alpha without CompositePodGroups (`no-composite`). The components
//! negotiate the versions at start (`kwas_api_types::versioned`); JobSets compile flat where
//! CompositePodGroups are missing and say so; kubectl reads what the cluster serves.

use kwas_api_types::jobset::{PodGroupManagement, conditions};
use kwas_api_types::names::labels::{BLOCK, RACK};
use kwas_api_types::v1alpha3::{PodGroup, Workload};
use kwas_devcluster::Profile;
use kwas_test_tools::run::{json, kubectl};
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::grid;

/// A driver and two worker Jobs (gangs of two 1-cpu pods in one rack), the whole JobSet in one block
/// (a constraint only a CompositePodGroup can hold).
fn trainer(name: &str, management: PodGroupManagement) -> JobSetBuilder {
    JobSetBuilder::new(name)
        .management(management)
        .root_topology(BLOCK)
        .replicated(1, JobBuilder::new("driver").cpu("1").run_for("300ms"), Intent::Targeted)
        .replicated(
            2,
            JobBuilder::new("workers")
                .parallelism(2)
                .gang()
                .topology(RACK)
                .cpu("1")
                .run_for("300ms"),
            Intent::Targeted,
        )
}

async fn start(profile: Profile) -> E2e {
    let mut config = test_config(grid(2, 2, 2, "4"));
    config.cluster = profile.apply(config.cluster);
    E2e::start_with(config).await.unwrap()
}

/// A client that reads the versions the cluster serves, as the components do.
async fn negotiated(e2e: &E2e) -> kube::Client {
    kwas_api_types::versioned::negotiated(e2e.client()).await.0
}

/// Runs the trainer JobSet to completion and returns its PodGroups (read through `client`).
async fn run_trainer(e2e: &E2e, client: &kube::Client, management: PodGroupManagement) -> Vec<PodGroup> {
    e2e.create(&trainer("trainer", management).build().unwrap())
        .await
        .unwrap();
    let done = wait_jobset(e2e, "trainer", conditions::COMPLETED).await.unwrap();
    assert!(jobset_condition(&done, conditions::FAILED).is_none());
    // Centralized: the JobSet controller's groups; delegated: the Job controller's, of the JobSet's Workload.
    let workload = done.status.as_ref().and_then(|s| s.workload_name.clone()).unwrap();
    list::<PodGroup>(client)
        .await
        .unwrap()
        .into_iter()
        .filter(|g| {
            g.spec
                .workload_ref
                .as_ref()
                .is_some_and(|r| r.workload_name == workload)
        })
        .collect()
}

/// `kubectl get <resource> -o json` items' apiVersions (`None`: kubectl failed, with its stderr).
fn kubectl_api_versions(e2e: &E2e, resource: &str) -> Result<Vec<String>, String> {
    let out = kubectl(
        e2e.cluster().kubeconfig_path(),
        &["get", resource, "-A", "-o", "json"],
        None,
    );
    if !out.ok {
        return Err(out.stderr);
    }
    Ok(json(&out.stdout)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["apiVersion"].as_str().unwrap_or_default().to_string())
        .collect())
}

/// Every scheduling version enabled: the components use the beta for Workloads and PodGroups (the
/// preferred version) and the alpha for CompositePodGroups; the JobSet is a gang of gangs; kubectl reads
/// PodGroups as v1beta1 by default and as v1alpha3 when asked, the same objects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_version_enabled_the_components_use_the_beta_and_clients_read_either() {
    let e2e = start(Profile::Alpha).await;
    let client = negotiated(&e2e).await;
    let monitor = GangMonitor::start(&e2e.client()).await.unwrap();
    let groups = run_trainer(&e2e, &client, PodGroupManagement::Centralized).await;
    assert_eq!(groups.len(), 3, "one PodGroup per child Job");
    assert!(
        groups.iter().all(|g| g.spec.parent_composite_pod_group_name.is_some()),
        "under the JobSet's CompositePodGroup"
    );
    let js = e2e
        .api::<kwas_api_types::jobset::JobSet>()
        .get("trainer")
        .await
        .unwrap();
    assert!(jobset_condition(&js, conditions::FLAT_SCHEDULING).is_none());
    let beta = kubectl_api_versions(&e2e, "podgroups").unwrap();
    assert_eq!(beta.len(), 3);
    assert!(beta.iter().all(|v| v == "scheduling.k8s.io/v1beta1"), "{beta:?}");
    let alpha = kubectl_api_versions(&e2e, "podgroups.v1alpha3.scheduling.k8s.io").unwrap();
    assert!(alpha.iter().all(|v| v == "scheduling.k8s.io/v1alpha3"), "{alpha:?}");
    assert_eq!(alpha.len(), 3);
    let composites = kubectl_api_versions(&e2e, "compositepodgroups").unwrap();
    assert_eq!(composites, ["scheduling.k8s.io/v1alpha3"]);
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!(summary.gangs, summary.gangs_satisfied);
    e2e.shutdown().await;
}

/// A stock v1.37 cluster with the beta enabled (no v1alpha3, no WorkloadWithJob gate): the components find
/// Workloads and PodGroups at v1beta1; a JobSet runs with flat gangs, its `FlatScheduling` condition
/// naming the root topology it could not apply; a Job's `spec.scheduling` is dropped by the API server, so
/// its pods run in a Basic PodGroup, not a gang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_stock_cluster_jobsets_run_flat_through_the_beta_and_jobs_run_basic() {
    let e2e = start(Profile::Stock137).await;
    let client = negotiated(&e2e).await;
    let monitor = GangMonitor::start(&e2e.client()).await.unwrap();
    let groups = run_trainer(&e2e, &client, PodGroupManagement::Delegated).await;
    assert_eq!(groups.len(), 3, "one PodGroup per child Job: {groups:#?}");
    assert!(
        groups.iter().all(|g| g.spec.parent_composite_pod_group_name.is_none()),
        "flat"
    );
    let workers: Vec<&PodGroup> = groups
        .iter()
        .filter(|g| g.spec.workload_ref.as_ref().map(|r| r.template_name.as_str()) == Some("workers"))
        .collect();
    assert_eq!(workers.len(), 2);
    for g in workers {
        assert_eq!(g.spec.scheduling_policy.gang.as_ref().map(|x| x.min_count), Some(2));
    }
    let js = e2e
        .api::<kwas_api_types::jobset::JobSet>()
        .get("trainer")
        .await
        .unwrap();
    let flat = jobset_condition(&js, conditions::FLAT_SCHEDULING).expect("FlatScheduling");
    assert_eq!(flat.reason, conditions::REASON_COMPOSITE_NOT_SERVED);
    assert!(
        flat.message
            .ends_with("not applied: spec.scheduling.schedulingConstraints.topology"),
        "{}",
        flat.message
    );
    assert_eq!(js.status.as_ref().unwrap().composite_pod_group_name, None);
    // kubectl: the beta is what is served.
    let beta = kubectl_api_versions(&e2e, "podgroups").unwrap();
    assert!(beta.iter().all(|v| v == "scheduling.k8s.io/v1beta1"), "{beta:?}");
    let err = kubectl_api_versions(&e2e, "podgroups.v1alpha3.scheduling.k8s.io").unwrap_err();
    assert!(err.contains("the server doesn't have a resource type"), "{err}");
    // A gang Job: the API server drops `spec.scheduling` (no WorkloadWithJob gate).
    let job = e2e
        .create(
            &JobBuilder::new("plain")
                .parallelism(2)
                .gang()
                .cpu("1")
                .run_for("200ms")
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(job.spec.as_ref().unwrap().scheduling.is_none(), "{:?}", job.spec);
    let done = wait_job(&e2e, "plain", "Complete").await.unwrap();
    assert_eq!(done.status.unwrap().succeeded, Some(2));
    // Its Workload (the Job controller gives every root Job one) is Basic: the gang was in the dropped field.
    let workloads = list::<Workload>(&client).await.unwrap();
    let of_job: Vec<&Workload> = workloads
        .iter()
        .filter(|w| {
            w.spec
                .controller_ref
                .as_ref()
                .is_some_and(|r| r.kind == "Job" && r.name == "plain")
        })
        .collect();
    assert_eq!(of_job.len(), 1, "{workloads:#?}");
    let templates = of_job[0].spec.pod_group_templates.as_deref().unwrap_or_default();
    assert!(
        templates
            .iter()
            .all(|t| t.scheduling_policy.gang.is_none() && t.scheduling_policy.basic.is_some()),
        "{templates:#?}"
    );
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!(summary.gangs, summary.gangs_satisfied);
    e2e.shutdown().await;
}

/// The alpha without CompositePodGroups: a JobSet whose root is the controller's default gang of gangs
/// runs with flat gangs (nothing of the user's is left out) and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_composite_pod_groups_a_jobset_runs_with_flat_gangs_and_says_so() {
    let e2e = start(Profile::NoComposite).await;
    let client = negotiated(&e2e).await;
    let monitor = GangMonitor::start(&e2e.client()).await.unwrap();
    e2e.create(
        &JobSetBuilder::new("trainer")
            .replicated(
                2,
                JobBuilder::new("workers")
                    .parallelism(2)
                    .gang()
                    .cpu("1")
                    .run_for("300ms"),
                Intent::Template,
            )
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let done = wait_jobset(&e2e, "trainer", conditions::COMPLETED).await.unwrap();
    let flat = jobset_condition(&done, conditions::FLAT_SCHEDULING).expect("FlatScheduling");
    assert!(!flat.message.contains("not applied"), "{}", flat.message);
    let groups = list::<PodGroup>(&client).await.unwrap();
    assert_eq!(groups.len(), 2);
    assert!(groups.iter().all(|g| g.spec.parent_composite_pod_group_name.is_none()));
    let events = kubectl(
        e2e.cluster().kubeconfig_path(),
        &[
            "get",
            "events",
            "--field-selector",
            "reason=FlatScheduling",
            "-o",
            "json",
        ],
        None,
    );
    assert!(events.ok, "{}", events.stderr);
    assert_eq!(
        json(&events.stdout)["items"].as_array().unwrap().len(),
        1,
        "one Warning event"
    );
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!((summary.gangs, summary.gangs_satisfied), (2, 2));
    e2e.shutdown().await;
}
