//! `kwas doctor`: what a cluster serves that kwas depends on, which features that enables, and what kwas
//! will do there. It reads discovery (`/apis`, each group version's resources) and the JobSet CRD, and
//! asks for a server-side dry run of a gang Job (whether the API server keeps a Job's `spec.scheduling`;
//! nothing is stored): it changes nothing.
//!
//! The assessment ([`assess`]) is a pure function of those facts ([`ClusterFacts`]), so every cluster
//! shape is tested without one. kwas' components speak `scheduling.k8s.io/v1beta1` or `v1alpha3` for
//! Workload and PodGroup (the most stable one served, [`kwas_api_types::served`]) and `v1alpha3` for
//! CompositePodGroup; a cluster that serves neither version of Workload and PodGroup has nothing they can
//! watch or write, and the report says so (exit status 1).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::Api;
use serde::Serialize;
use serde_json::Value;

use kwas_api_types::served::KNOWN_VERSIONS;

/// The version kwas' components use among `versions` (served ones): the most stable one kwas knows.
fn preferred(versions: &[String]) -> Option<&'static str> {
    KNOWN_VERSIONS
        .iter()
        .find(|k| versions.iter().any(|v| v == *k))
        .copied()
}

/// `kwas doctor`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// The kubeconfig (default: $KUBECONFIG, ~/.kube/config, else in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Output: a table, or the report as JSON.
    #[arg(short, long, value_enum, default_value_t = DoctorFormat::Table)]
    pub output: DoctorFormat,
}

/// `kwas doctor -o`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoctorFormat {
    /// Aligned columns and the consequences.
    Table,
    /// The report.
    Json,
}

/// What the cluster serves that kwas depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClusterFacts {
    /// Served versions of each `scheduling.k8s.io` resource kwas uses (`workloads`, `podgroups`,
    /// `compositepodgroups`).
    pub scheduling: BTreeMap<String, Vec<String>>,
    /// Whether the API server keeps a batch/v1 Job's `spec.scheduling` (`None`: the dry run could not tell).
    pub job_scheduling: Option<bool>,
    /// The served `jobset.x-k8s.io` versions (empty: no JobSet CRD).
    pub jobset_versions: Vec<String>,
    /// The JobSet CRD's conversion webhook Service, `namespace/name` (`None`: no webhook or no CRD read).
    pub jobset_conversion: Option<String>,
    /// The served `resource.k8s.io` versions.
    pub dra_versions: Vec<String>,
}

/// How one dependency stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// kwas works with it as is.
    Ok,
    /// kwas works without the feature it enables.
    Degraded,
    /// kwas' components cannot run.
    Blocked,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was looked for.
    pub api: String,
    /// What the cluster serves.
    pub served: String,
    /// How it stands.
    pub verdict: Verdict,
    /// What kwas does, given it.
    pub consequence: String,
}

/// The report: one check per dependency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The facts read.
    pub facts: ClusterFacts,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether kwas' components can run at all.
    pub fn blocked(&self) -> bool {
        self.checks.iter().any(|c| c.verdict == Verdict::Blocked)
    }
}

fn list(versions: &[String]) -> String {
    if versions.is_empty() {
        "not served".into()
    } else {
        versions.join(", ")
    }
}

/// What kwas will do on a cluster with `facts`.
pub fn assess(facts: ClusterFacts) -> Report {
    let mut checks = Vec::new();
    let served = |r: &str| facts.scheduling.get(r).cloned().unwrap_or_default();
    for (resource, kind) in [("workloads", "Workload"), ("podgroups", "PodGroup")] {
        let versions = served(resource);
        let speaks = preferred(&versions);
        checks.push(Check {
            api: format!("scheduling.k8s.io {kind}"),
            served: list(&versions),
            verdict: if speaks.is_some() { Verdict::Ok } else { Verdict::Blocked },
            consequence: match speaks {
                Some(v) => format!("the controllers write and the scheduler reads {kind}s as {v}"),
                None if versions.is_empty() => format!(
                    "no {kind} API: enable scheduling.k8s.io/v1beta1 (or v1alpha3 with the GenericWorkload gate) with --runtime-config"
                ),
                None => format!(
                    "kwas speaks {} only: enable one of them next to {}",
                    KNOWN_VERSIONS.join(" and "),
                    versions.join(", ")
                ),
            },
        });
    }
    let composite = served("compositepodgroups");
    let has_composite = preferred(&composite);
    checks.push(Check {
        api: "scheduling.k8s.io CompositePodGroup".into(),
        served: list(&composite),
        verdict: if has_composite.is_some() { Verdict::Ok } else { Verdict::Degraded },
        consequence: match has_composite {
            Some(v) => format!("multi-level gangs: a JobSet is a gang of gangs ({v})"),
            None => "no multi-level gangs: JobSets compile flat, a gang per Job and none across them (their FlatScheduling condition says so; kwas compile --flat shows the form)".into(),
        },
    });
    let (served_job, verdict, consequence) = match facts.job_scheduling {
        Some(true) => (
            "yes",
            Verdict::Ok,
            "a Job's spec.scheduling reaches the Job controller (gang Jobs, Option A JobSets)",
        ),
        Some(false) => (
            "no",
            Verdict::Degraded,
            "the API server prunes a Job's spec.scheduling: Jobs get the controller's defaults (enable the WorkloadWithJob gate)",
        ),
        None => (
            "unknown",
            Verdict::Degraded,
            "a dry-run Job in namespace default could not tell (permission to create Jobs there is needed)",
        ),
    };
    checks.push(Check {
        api: "batch/v1 Job spec.scheduling".into(),
        served: served_job.into(),
        verdict,
        consequence: consequence.into(),
    });
    let kwas_webhook = {
        let (ns, name, _, _) = kwas_api_types::jobset::CONVERSION_WEBHOOK;
        format!("{ns}/{name}")
    };
    let (verdict, consequence) = if facts.jobset_versions.is_empty() {
        (
            Verdict::Degraded,
            "no JobSet CRD: install crds/jobset.x-k8s.io_jobsets.yaml (standalone) to run JobSets".to_string(),
        )
    } else if facts.jobset_conversion.as_deref() == Some(kwas_webhook.as_str()) {
        (
            Verdict::Ok,
            "kwas' JobSet CRD (standalone install): the controllers reconcile JobSets and convert v1alpha2 <-> v1"
                .into(),
        )
    } else if !facts.jobset_versions.iter().any(|v| v == "v1alpha2") {
        (
            Verdict::Degraded,
            "the JobSet CRD does not serve v1alpha2, which kwas' controller reads".into(),
        )
    } else {
        (
            Verdict::Ok,
            "another JobSet CRD (the JobSet project's): run the controllers with --jobset-install=alongside; they reconcile spec.managedBy: kwas.dev/jobset-controller only".into(),
        )
    };
    checks.push(Check {
        api: "jobset.x-k8s.io JobSet".into(),
        served: list(&facts.jobset_versions),
        verdict,
        consequence,
    });
    let dra = facts.dra_versions.iter().any(|v| v == "v1");
    checks.push(Check {
        api: "resource.k8s.io (DRA)".into(),
        served: list(&facts.dra_versions),
        verdict: if dra { Verdict::Ok } else { Verdict::Degraded },
        consequence: if dra {
            "ResourceClaims are allocated in the gang cycle".into()
        } else {
            "no resource.k8s.io/v1: pods with ResourceClaims cannot be scheduled".into()
        },
    });
    Report { facts, checks }
}

/// The report as aligned columns, then the verdict.
pub fn render(report: &Report) -> String {
    let rows: Vec<[String; 4]> = report
        .checks
        .iter()
        .map(|c| {
            [
                c.api.clone(),
                c.served.clone(),
                format!("{:?}", c.verdict).to_lowercase(),
                c.consequence.clone(),
            ]
        })
        .collect();
    let header = [
        "API".to_string(),
        "SERVED".into(),
        "STATUS".into(),
        "WHAT KWAS DOES".into(),
    ];
    let mut widths = [0usize; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let _ = writeln!(
            out,
            "{:<w0$}   {:<w1$}   {:<w2$}   {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    }
    out.push('\n');
    out.push_str(if report.blocked() {
        "kwas' components cannot run on this cluster as it is: see the blocked lines.\n"
    } else {
        "kwas' components can run on this cluster.\n"
    });
    out
}

/// Reads the facts from the cluster.
pub async fn read_facts(client: &Client) -> Result<ClusterFacts> {
    let mut facts = ClusterFacts::default();
    let groups = client.list_api_groups().await?;
    let versions_of = |group: &str| -> Vec<String> {
        groups
            .groups
            .iter()
            .find(|g| g.name == group)
            .map(|g| g.versions.iter().map(|v| v.version.clone()).collect())
            .unwrap_or_default()
    };
    for version in versions_of("scheduling.k8s.io") {
        let Ok(resources) = client
            .list_api_group_resources(&format!("scheduling.k8s.io/{version}"))
            .await
        else {
            continue;
        };
        for r in resources.resources {
            if matches!(r.name.as_str(), "workloads" | "podgroups" | "compositepodgroups") {
                facts.scheduling.entry(r.name).or_default().push(version.clone());
            }
        }
    }
    facts.job_scheduling = job_has_scheduling(client).await;
    facts.jobset_versions = versions_of("jobset.x-k8s.io");
    if !facts.jobset_versions.is_empty() {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        if let Ok(Some(crd)) = crds.get_opt("jobsets.jobset.x-k8s.io").await {
            facts.jobset_conversion = crd
                .spec
                .conversion
                .and_then(|c| c.webhook)
                .and_then(|w| w.client_config)
                .and_then(|c| c.service)
                .map(|s| format!("{}/{}", s.namespace, s.name));
        }
    }
    facts.dra_versions = versions_of("resource.k8s.io");
    Ok(facts)
}

/// Whether the API server keeps a Job's `spec.scheduling`: a server-side dry run (nothing is stored) of a
/// gang Job in `default` with strict field validation. The field comes back: yes; refused as unknown, or
/// dropped (a disabled feature gate drops it silently): no; refused by validation of `spec.scheduling`:
/// yes (the server knows it). `None` when the dry run cannot tell (no permission, no `default`).
async fn job_has_scheduling(client: &Client) -> Option<bool> {
    let job = serde_json::json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"generateName": "kwas-doctor-"},
        "spec": {
            "parallelism": 1, "completions": 1,
            "scheduling": {"schedulingPolicy": {"gang": {}}},
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
        }
    });
    let req = http::Request::post(
        "/apis/batch/v1/namespaces/default/jobs?dryRun=All&fieldValidation=Strict&fieldManager=kwas-doctor",
    )
    .header("content-type", "application/json")
    .body(serde_json::to_vec(&job).ok()?)
    .ok()?;
    match client.request::<Value>(req).await {
        Ok(created) => Some(created.pointer("/spec/scheduling").is_some()),
        Err(kube::Error::Api(status)) if status.code == 400 && status.message.contains("spec.scheduling") => {
            Some(false)
        }
        Err(kube::Error::Api(status)) if status.code == 422 && status.message.contains("spec.scheduling") => Some(true),
        Err(_) => None,
    }
}

/// `kwas doctor`: prints the report; fails when kwas' components cannot run.
pub async fn run(args: DoctorArgs, out: &mut impl std::io::Write) -> Result<()> {
    let client = crate::snapshot::connect(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let report = assess(read_facts(&client).await?);
    match args.output {
        DoctorFormat::Table => write!(out, "{}", render(&report))?,
        DoctorFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
    }
    if report.blocked() {
        anyhow::bail!("kwas' components cannot run on this cluster as it is");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(
        workloads: &[&str],
        composite: &[&str],
        job: Option<bool>,
        jobset: &[&str],
        webhook: Option<&str>,
    ) -> ClusterFacts {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut scheduling = BTreeMap::new();
        if !workloads.is_empty() {
            scheduling.insert("workloads".to_string(), v(workloads));
            scheduling.insert("podgroups".to_string(), v(workloads));
        }
        if !composite.is_empty() {
            scheduling.insert("compositepodgroups".to_string(), v(composite));
        }
        ClusterFacts {
            scheduling,
            job_scheduling: job,
            jobset_versions: v(jobset),
            jobset_conversion: webhook.map(str::to_string),
            dra_versions: v(&["v1"]),
        }
    }

    fn verdicts(r: &Report) -> Vec<Verdict> {
        r.checks.iter().map(|c| c.verdict).collect()
    }

    #[test]
    fn a_cluster_configured_as_kwas_dev_is_ok_throughout() {
        let r = assess(facts(
            &["v1alpha3"],
            &["v1alpha3"],
            Some(true),
            &["v1", "v1alpha2"],
            Some("kwas-system/kwas-controllers-webhook"),
        ));
        assert_eq!(verdicts(&r), [Verdict::Ok; 6]);
        assert!(!r.blocked());
        assert!(render(&r).ends_with("kwas' components can run on this cluster.\n"));
    }

    #[test]
    fn stock_1_37_serving_beta_only_runs_flat_gangs_through_the_beta() {
        let r = assess(facts(&["v1beta1"], &[], Some(false), &[], None));
        assert_eq!(
            verdicts(&r),
            [
                Verdict::Ok,
                Verdict::Ok,
                Verdict::Degraded,
                Verdict::Degraded,
                Verdict::Degraded,
                Verdict::Ok
            ]
        );
        assert!(!r.blocked());
        assert_eq!(r.checks[0].served, "v1beta1");
        assert!(
            r.checks[0].consequence.ends_with("reads Workloads as v1beta1"),
            "{:?}",
            r.checks[0]
        );
        assert!(
            r.checks[2]
                .consequence
                .starts_with("no multi-level gangs: JobSets compile flat")
        );
        assert!(r.checks[3].consequence.contains("WorkloadWithJob"));
        assert!(render(&r).ends_with("kwas' components can run on this cluster.\n"));
    }

    #[test]
    fn with_both_versions_the_beta_is_used_and_without_either_kwas_is_blocked() {
        let both = assess(facts(&["v1alpha3", "v1beta1"], &["v1alpha3"], Some(true), &[], None));
        assert!(both.checks[1].consequence.ends_with("reads PodGroups as v1beta1"));
        assert!(both.checks[2].consequence.ends_with("(v1alpha3)"));
        let unknown = assess(facts(&["v1"], &[], None, &[], None));
        assert_eq!(unknown.checks[0].verdict, Verdict::Blocked);
        assert_eq!(
            unknown.checks[0].consequence,
            "kwas speaks v1beta1 and v1alpha3 only: enable one of them next to v1"
        );
        let none = assess(facts(&[], &[], None, &[], None));
        assert!(none.blocked());
        assert!(none.checks[0].consequence.starts_with("no Workload API"));
        let table = render(&none);
        assert!(table.contains("blocked"), "{table}");
        assert!(table.ends_with("see the blocked lines.\n"));
    }

    #[test]
    fn the_jobset_projects_crd_means_the_alongside_install() {
        let r = assess(facts(
            &["v1alpha3"],
            &["v1alpha3"],
            Some(true),
            &["v1alpha2"],
            Some("jobset-system/jobset-webhook-service"),
        ));
        assert_eq!(r.checks[4].verdict, Verdict::Ok);
        assert!(r.checks[4].consequence.contains("--jobset-install=alongside"));
        let v1_only = assess(facts(&["v1alpha3"], &["v1alpha3"], Some(true), &["v1"], None));
        assert_eq!(v1_only.checks[4].verdict, Verdict::Degraded);
    }
}
