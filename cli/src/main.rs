//! The `kwas` command line.

use kwas_cli::{Management, compile, controllers, demo, dev, doctor, plugin, replay, scheduler, snapshot};

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

/// kwas: workload-aware scheduling for Kubernetes (KEP-6089). Named `kubectl-kwas` on PATH, it is the
/// kubectl plugin `kubectl kwas` (tree, why, who-preempted).
#[derive(Debug, Parser)]
#[command(name = "kwas", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the Job and JobSet controllers against a cluster (kubeconfig or in-cluster).
    Controllers(controllers::ControllersArgs),
    /// Run the scheduler against a cluster (kubeconfig or in-cluster).
    Scheduler(scheduler::SchedulerArgs),
    /// Run devcluster with the controllers and the scheduler, apply the bundled examples, show their trees
    /// live, a placement tree per workload, then a preemption scene (examples/preemption/).
    Demo {
        /// Override the examples' simulated pod run time (a duration such as 2s).
        #[arg(long)]
        pod_duration: Option<String>,
    },
    /// Run devcluster with the controllers and the scheduler until interrupted, and say how to use kubectl.
    Dev(dev::DevArgs),
    /// Compile Job and JobSet manifests into the Workload and runtime groups their controllers create, offline.
    Compile {
        /// Manifest file (YAML, several documents allowed); `-` reads standard input.
        file: PathBuf,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Yaml)]
        output: Format,
        /// PodGroup management of JobSets that do not choose one.
        #[arg(long, value_enum, default_value_t = Management::Centralized)]
        jobset_management: Management,
        /// Namespace of manifests that name none.
        #[arg(short, long, default_value = "default")]
        namespace: String,
        /// Print each manifest's resolved WorkloadItem tree instead of the objects: per item the controller's
        /// default, the user's values, the result after the controller's callbacks and where each field came
        /// from.
        #[arg(long)]
        resolved: bool,
        /// Compile for a cluster without CompositePodGroups: Workloads with only podGroupTemplates (one per
        /// replicated job) and PodGroups without a parent; a JobSet's root must then be Basic.
        #[arg(long, conflicts_with = "resolved")]
        flat: bool,
    },
    /// Rewrite kwas' retired `kwas.dev/v1alpha1` JobSets as `jobset.x-k8s.io/v1alpha2` JobSets (other
    /// documents pass through), printed as YAML.
    Convert {
        /// Manifest file (YAML, several documents allowed); `-` reads standard input.
        file: PathBuf,
    },
    /// A Job's, JobSet's or Workload's groups and pods: policy, minimum, topology domain, node, state.
    Tree(plugin::TreeArgs),
    /// Why a pod or a gang waits, in the scheduler's words, what would have to change, and preemption.
    Why(plugin::UnitArgs),
    /// Who preempted a pod or a gang: the preemptor, both priorities, when.
    WhoPreempted(plugin::UnitArgs),
    /// Write the scheduling inputs of a cluster (what the scheduler's informers read) to one file.
    Snapshot(snapshot::SnapshotArgs),
    /// What a cluster serves that kwas depends on, the features that enables, and what kwas will do there;
    /// fails when kwas' components cannot run.
    Doctor(doctor::DoctorArgs),
    /// Replay the scheduler on a snapshot offline: the bindings, conditions and preemptions it would decide.
    Replay(replay::ReplayArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Yaml,
    Json,
}

/// The manifest file `file` (`-`: standard input).
fn read_input(file: &PathBuf) -> anyhow::Result<String> {
    if file.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        Ok(s)
    } else {
        std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))
    }
}

fn run_convert(file: &PathBuf) -> anyhow::Result<()> {
    let input = read_input(file)?;
    let (out, converted) = kwas_cli::convert::convert(&input)?;
    eprintln!("# converted {converted} kwas.dev/v1alpha1 JobSet(s) to jobset.x-k8s.io/v1alpha2");
    print!("{out}");
    Ok(())
}

fn run_compile(
    file: &PathBuf,
    output: Format,
    management: Management,
    namespace: &str,
    resolved: bool,
    flat: bool,
) -> anyhow::Result<()> {
    let input = read_input(file)?;
    let options = compile::CompileOptions {
        management: management.into(),
        namespace: namespace.to_string(),
        resolved,
        flat,
    };
    let mut objects = Vec::new();
    let mut trees = Vec::new();
    let mut invalid = Vec::new();
    for doc in compile::documents(&input)? {
        let out = compile::compile_document(&doc, &options)?;
        for note in out.notes {
            eprintln!("# {note}");
        }
        objects.extend(out.objects);
        trees.extend(out.resolved);
        invalid.extend(out.invalid);
    }
    match (output, resolved) {
        (Format::Yaml, false) => print!("{}", compile::to_yaml(&objects)?),
        (Format::Yaml, true) => print!("{}", compile::to_yaml(&trees)?),
        (Format::Json, false) => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        (Format::Json, true) => println!("{}", serde_json::to_string_pretty(&trees)?),
    }
    if !invalid.is_empty() {
        anyhow::bail!("{}", invalid.join("\n"));
    }
    Ok(())
}

fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
}

/// The demo prints its own progress; only warnings go to the log.
fn init_quiet_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// The command line; as `kubectl-kwas` (a kubectl plugin) the usage says `kubectl kwas`.
fn parse() -> Cli {
    let mut command = Cli::command();
    if std::env::args_os()
        .next()
        .is_some_and(|a| plugin::invoked_as_plugin(&a))
    {
        command = command.bin_name("kubectl kwas");
    }
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    let cli = parse();
    let result = match cli.command {
        Command::Controllers(args) => {
            init_logging();
            runtime().and_then(|rt| rt.block_on(controllers::run(args)))
        }
        Command::Scheduler(args) => {
            init_logging();
            runtime().and_then(|rt| rt.block_on(scheduler::run(args)))
        }
        Command::Dev(args) => {
            init_logging();
            runtime().and_then(|rt| rt.block_on(dev::run(args)))
        }
        Command::Demo { pod_duration } => {
            init_quiet_logging();
            let options = demo::DemoOptions {
                pod_duration,
                ..demo::DemoOptions::for_stdout()
            };
            runtime().and_then(|rt| rt.block_on(demo::run(options, &mut std::io::stdout())))
        }
        Command::Compile {
            file,
            output,
            jobset_management,
            namespace,
            resolved,
            flat,
        } => run_compile(&file, output, jobset_management, &namespace, resolved, flat),
        Command::Convert { file } => run_convert(&file),
        Command::Tree(args) => runtime().and_then(|rt| rt.block_on(plugin::run_tree(args))),
        Command::Why(args) => runtime().and_then(|rt| rt.block_on(plugin::run_why(args))),
        Command::WhoPreempted(args) => runtime().and_then(|rt| rt.block_on(plugin::run_who_preempted(args))),
        Command::Snapshot(args) => runtime().and_then(|rt| rt.block_on(snapshot::run(args))),
        Command::Doctor(args) => runtime().and_then(|rt| rt.block_on(doctor::run(args, &mut std::io::stdout()))),
        Command::Replay(args) => replay::run(&args, &mut std::io::stdout().lock()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment_args(component: &str) -> Vec<String> {
        let path = format!("{}/../deploy/{component}/deployment.yaml", env!("CARGO_MANIFEST_DIR"));
        let doc: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        doc["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn the_deploy_manifests_use_flags_the_binary_accepts() {
        for component in ["scheduler", "controllers"] {
            let args = deployment_args(component);
            let cli = Cli::try_parse_from(std::iter::once("kwas".to_string()).chain(args.clone()));
            assert!(cli.is_ok(), "{component}: {args:?}: {}", cli.unwrap_err());
        }
        let Command::Scheduler(args) =
            Cli::try_parse_from(["kwas".to_string()].into_iter().chain(deployment_args("scheduler")))
                .unwrap()
                .command
        else {
            panic!("scheduler")
        };
        let config = args.config();
        assert_eq!(config.scheduler_names, ["kwas-scheduler"]);
        assert_eq!(config.leader_election.unwrap().name, "kwas-scheduler");
    }
}
