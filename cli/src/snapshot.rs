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
    /// replay's default.
    #[arg(long = "scheduler-name", default_values_t = [SCHEDULER_NAME.to_string()])]
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

/// Takes the snapshot and writes it.
pub async fn run(args: SnapshotArgs) -> Result<()> {
    let client = connect(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let snapshot = replay::take(&client, args.scheduler_names.clone()).await?;
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
