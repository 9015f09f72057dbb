//! `kwas snapshot`: the scheduling inputs of a cluster, in one file for `kwas replay`.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use clap::{Args, ValueEnum};
use kube::Client;
use kwas_api_types::names::SCHEDULER_NAME;
use kwas_scheduler::replay;

/// The file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FileFormat {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

/// Flags of `kwas snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Where to write the snapshot (`-`: standard output).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// The file format (default: JSON for a `.json` file, else YAML).
    #[arg(long, value_enum)]
    pub format: Option<FileFormat>,
    /// Kubeconfig to use (default: KUBECONFIG, ~/.kube/config, or the in-cluster service account).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// A `spec.schedulerName` the cluster's kwas scheduler answers for (repeatable), recorded as the
    /// replay's default. Without it, the names the running scheduler serves, read from its
    /// leader-election Lease (`kwas.dev/scheduler-names`), else `kwas-scheduler`.
    #[arg(long = "scheduler-name")]
    pub scheduler_names: Vec<String>,
}

/// A client as kubectl resolves one ([`crate::kube_client::config`]). A snapshot only lists, so kube's
/// resend of failed requests stays on (a list sent twice changes nothing).
pub async fn connect(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Client> {
    Ok(Client::try_from(
        crate::kube_client::config(kubeconfig, context).await?,
    )?)
}

impl SnapshotArgs {
    fn format(&self) -> FileFormat {
        self.format.unwrap_or_else(|| {
            if self.output.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
                FileFormat::Json
            } else {
                FileFormat::Yaml
            }
        })
    }
}

/// The scheduler names kwas' running schedulers serve, from the `kwas.dev/scheduler-names` annotation of
/// their leader-election Leases (every namespace; a Lease that has not been renewed for a minute is a
/// scheduler gone and does not count); `kwas-scheduler` when none is found or the Leases cannot be read.
pub async fn served_scheduler_names(client: &Client) -> Vec<String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases = match kube::Api::<Lease>::all(client.clone()).list(&Default::default()).await {
        Ok(list) => list.items,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list Leases to find the scheduler names kwas serves");
            Vec::new()
        }
    };
    let now = k8s_openapi::jiff::Timestamp::now();
    names_from_leases(&leases, now)
}

/// [`served_scheduler_names`] on `leases` at `now`.
pub fn names_from_leases(
    leases: &[k8s_openapi::api::coordination::v1::Lease],
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<String> {
    let key = kwas_api_types::names::annotations::SCHEDULER_NAMES;
    let mut names: Vec<String> = Vec::new();
    for lease in leases {
        let Some(value) = lease.metadata.annotations.as_ref().and_then(|a| a.get(key)) else {
            continue;
        };
        let fresh = lease
            .spec
            .as_ref()
            .and_then(|s| s.renew_time.as_ref())
            .is_some_and(|t| now.duration_since(t.0).as_secs() < 60);
        if !fresh {
            continue;
        }
        for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    if names.is_empty() {
        names.push(SCHEDULER_NAME.to_string());
    }
    names
}

/// Takes the snapshot and writes it.
pub async fn run(args: SnapshotArgs) -> Result<()> {
    let client = connect(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    // Workloads and PodGroups in whichever version the cluster serves (v1beta1 where it does).
    let (client, _) = kwas_api_types::versioned::negotiated(client).await;
    let names = if args.scheduler_names.is_empty() {
        served_scheduler_names(&client).await
    } else {
        args.scheduler_names.clone()
    };
    let snapshot = replay::take(&client, names).await?;
    let text = match args.format() {
        FileFormat::Yaml => snapshot.to_yaml()?,
        FileFormat::Json => snapshot.to_json()? + "\n",
    };
    let summary = snapshot
        .counts()
        .iter()
        .map(|(k, n)| format!("{n} {}", k.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    if args.output.as_os_str() == "-" {
        std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes())
            .map_err(|e| anyhow!("writing the snapshot: {e}"))?;
    } else {
        std::fs::write(&args.output, text).map_err(|e| anyhow!("writing {}: {e}", args.output.display()))?;
        eprintln!("wrote {}: {summary}", args.output.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
    use k8s_openapi::jiff::{Timestamp, ToSpan};

    fn lease(names: Option<&str>, renewed: Timestamp) -> Lease {
        Lease {
            metadata: ObjectMeta {
                annotations: names.map(|n| {
                    [(
                        kwas_api_types::names::annotations::SCHEDULER_NAMES.to_string(),
                        n.to_string(),
                    )]
                    .into()
                }),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                renew_time: Some(MicroTime(renewed)),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn the_names_come_from_live_scheduler_leases_else_the_default() {
        let now = Timestamp::UNIX_EPOCH + 3600.seconds();
        let fresh = now - 5.seconds();
        assert_eq!(
            names_from_leases(
                &[
                    lease(Some("kwas-scheduler,default-scheduler"), fresh),
                    lease(Some(" gpu-scheduler ,, kwas-scheduler"), fresh),
                    lease(None, fresh),
                    lease(Some("gone-scheduler"), now - 120.seconds()),
                ],
                now
            ),
            ["kwas-scheduler", "default-scheduler", "gpu-scheduler"]
        );
        assert_eq!(names_from_leases(&[], now), ["kwas-scheduler"]);
        assert_eq!(names_from_leases(&[lease(Some(""), fresh)], now), ["kwas-scheduler"]);
    }
}
