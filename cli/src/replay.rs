//! `kwas replay`: the scheduler's decisions on a snapshot, offline (no cluster, no network).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use kwas_scheduler::core::SchedulerConfig;
use kwas_scheduler::replay::{self, MAX_FILE_BYTES, ReplayOptions, SchedulingSnapshot};
use kwas_scheduler::runtime::{RuntimeConfig, SchedulerProfile};

use crate::scheduler::Algorithm;

/// The report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Readable text.
    Text,
    /// JSON (`kwas.dev/v1alpha1` `ReplayReport`).
    Json,
}

/// Flags of `kwas replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A snapshot file from `kwas snapshot` (YAML or JSON; a `kubectl get ... -o yaml` List works
    /// too); `-` reads standard input.
    pub file: PathBuf,
    /// A `spec.schedulerName` to answer for (repeatable; default: the snapshot's, else kwas-scheduler).
    #[arg(long = "scheduler-name")]
    pub scheduler_names: Vec<String>,
    /// A KubeSchedulerConfiguration file, as `kwas scheduler --config` reads it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The placement algorithm.
    #[arg(long, value_enum, default_value_t = Algorithm::Default)]
    pub algorithm: Algorithm,
    /// The report format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
    /// At most this many scheduling cycles.
    #[arg(long, default_value_t = 10_000)]
    pub max_cycles: u64,
    /// Stop waiting for timers (backoffs, delayed messages) after this many seconds of simulated time.
    #[arg(long, default_value_t = 60)]
    pub horizon_seconds: u64,
}

fn read_limited(mut reader: impl std::io::Read, what: &Path) -> Result<String> {
    let limit = u64::try_from(MAX_FILE_BYTES).unwrap_or(u64::MAX);
    let mut bytes = Vec::new();
    reader
        .by_ref()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow!("reading {}: {e}", what.display()))?;
    if bytes.len() > MAX_FILE_BYTES {
        bail!("{}: too large: more than {MAX_FILE_BYTES} bytes", what.display());
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{}: not UTF-8 text (invalid byte at offset {})",
            what.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Reads a snapshot file; errors name the file and the field.
pub fn load(file: &Path) -> Result<SchedulingSnapshot> {
    let text = if file.as_os_str() == "-" {
        read_limited(std::io::stdin().lock(), Path::new("<stdin>"))?
    } else {
        let f = std::fs::File::open(file).map_err(|e| anyhow!("reading {}: {e}", file.display()))?;
        read_limited(f, file)?
    };
    SchedulingSnapshot::parse(&text).map_err(|e| anyhow!("{}: {e}", file.display()))
}

impl ReplayArgs {
    /// The replay's options: the `--config` file's profile, then `--scheduler-name`, else the
    /// snapshot's names.
    pub fn options(&self, snapshot: &SchedulingSnapshot) -> Result<ReplayOptions> {
        let mut config = RuntimeConfig {
            core: match self.algorithm {
                Algorithm::Default => SchedulerConfig::default(),
                Algorithm::Alpha => SchedulerConfig::alpha(),
            },
            ..RuntimeConfig::default()
        };
        if !snapshot.metadata.scheduler_names.is_empty() {
            config.scheduler_names = snapshot.metadata.scheduler_names.clone();
        }
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path).map_err(|e| anyhow!("reading {}: {e}", path.display()))?;
            let profile = SchedulerProfile::from_yaml(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            for w in &profile.warnings {
                eprintln!("warning: {}: {w}", path.display());
            }
            profile.apply(&mut config);
        }
        if !self.scheduler_names.is_empty() {
            if self.scheduler_names.iter().any(String::is_empty) {
                bail!("--scheduler-name: Invalid value: \"\": must not be empty");
            }
            config.scheduler_names = self.scheduler_names.clone();
        }
        Ok(ReplayOptions {
            config,
            max_cycles: self.max_cycles,
            horizon: Duration::from_secs(self.horizon_seconds),
            clock: None,
        })
    }
}

/// Replays and prints the report.
pub fn run(args: &ReplayArgs, out: &mut impl std::io::Write) -> Result<()> {
    let snapshot = load(&args.file)?;
    let options = args.options(&snapshot)?;
    let report = replay::replay(&snapshot, &options);
    match args.output {
        ReportFormat::Text => write!(out, "{}", report.to_text())?,
        ReportFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
    }
    Ok(())
}
