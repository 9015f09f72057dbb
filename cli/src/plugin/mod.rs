//! `kubectl kwas` (also `kwas tree`, `kwas why`, `kwas who-preempted`): an operator's view of workloads.
//! The binary is a kubectl plugin when its file is named `kubectl-kwas` on `PATH`.
//!
//! | module | what |
//! | --- | --- |
//! | [`model`] | the [`Snapshot`] of what was listed, targets and how objects relate |
//! | [`tree`] | Job / JobSet -> Workload -> CompositePodGroups -> PodGroups -> pods |
//! | [`message`] | reading the scheduler's messages and the victims' notes |
//! | [`why`] | why a gang waits, and what would have to change |
//! | [`preempted`] | who preempted a pod or a gang |
//! | [`render`] | text (and colours) |
//!
//! Everything but this module's I/O is pure: objects in, a view model out, then text or JSON. The JSON
//! shapes (`-o json`) are the view models' serde forms: [`tree::TreeNode`] inside `{"kind": "Tree",
//! "namespace", "target", "root"}`, [`why::WhyView`] and [`preempted::PreemptedView`].

pub mod message;
pub mod model;
pub mod preempted;
pub mod render;
pub mod tree;
pub mod why;

use std::ffi::OsStr;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use clap::{Args, ValueEnum};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use kwas_api_types::jobset::JobSet;
use kwas_api_types::names::events;
use serde::Serialize;

use model::{ObjectRef, Snapshot, TREE_ORDER, UNIT_ORDER, parse_target};
use render::{Style, TreeOptions};

/// The file name that makes the binary a kubectl plugin.
pub const PLUGIN_NAME: &str = "kubectl-kwas";

/// Whether the binary was started as `kubectl-kwas` (`argv[0]`'s file name, with or without `.exe`).
pub fn invoked_as_plugin(argv0: &OsStr) -> bool {
    Path::new(argv0)
        .file_name()
        .and_then(OsStr::to_str)
        .is_some_and(|n| n == PLUGIN_NAME || n == "kubectl-kwas.exe")
}

/// Where the cluster is: kubectl's flags and resolution.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
    /// The namespace (default: the context's, else `default`).
    #[arg(short, long)]
    pub namespace: Option<String>,
}

/// Output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Text for people: colours on a terminal (unless NO_COLOR is set), plain when piped.
    #[default]
    Text,
    /// JSON for scripts (one document; with --watch one compact document per line per change).
    Json,
}

/// Pods listed per group: a number or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxPods(pub Option<usize>);

impl std::str::FromStr for MaxPods {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(MaxPods(None));
        }
        s.parse::<usize>()
            .map(|n| MaxPods(Some(n)))
            .map_err(|_| format!("{s:?} is neither a number nor `all`"))
    }
}

/// Flags of `tree`.
#[derive(Debug, Args)]
pub struct TreeArgs {
    /// job/NAME, jobset/NAME or workload/NAME; a bare NAME is looked up as a Job, a JobSet, a Workload
    /// (then a group or pod, shown in its group).
    pub target: String,
    /// The cluster and namespace.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: Output,
    /// Re-render whenever something changes, until interrupted (a live view on a terminal, a new tree
    /// per change when piped).
    #[arg(short, long)]
    pub watch: bool,
    /// How often --watch looks (a duration: 500ms, 2s).
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// Pods listed per group in text output: a number or `all`.
    #[arg(long, default_value = "20")]
    pub max_pods: MaxPods,
}

/// Flags of `why` and `who-preempted`.
#[derive(Debug, Args)]
pub struct UnitArgs {
    /// pod/NAME, podgroup/NAME, compositepodgroup/NAME, or a Job's, JobSet's or Workload's name
    /// (job/NAME, jobset/NAME, workload/NAME) for all its groups; a bare NAME is looked up as a pod, a
    /// PodGroup, a CompositePodGroup, a Job, a JobSet, a Workload.
    pub target: String,
    /// The cluster and namespace.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: Output,
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    match kwas_api_types::duration::parse_go_duration(s) {
        Some(d) if d >= Duration::from_millis(100) && d <= Duration::from_secs(3600) => Ok(d),
        Some(_) => Err("the interval must be between 100ms and 1h".to_string()),
        None => Err(format!("{s:?} is not a duration (500ms, 2s, 1m)")),
    }
}

/// A client and the namespace to read, resolved as kubectl resolves them.
pub async fn connect(args: &ClusterArgs) -> Result<(Client, String)> {
    let config = crate::kube_client::config(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let namespace = args
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| config.default_namespace.clone());
    // The plugin only reads: kube's resend of a list answered 429, 503 or 504 is kept (unlike
    // kwas_api_types::client, which turns it off for writers).
    // It reads Workloads and PodGroups in whichever version the cluster serves.
    let (client, _) = kwas_api_types::versioned::negotiated(Client::try_from(config)?).await;
    Ok((client, namespace))
}

/// The events a command reads, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Events {
    /// None.
    None,
    /// `FailedScheduling`.
    FailedScheduling,
    /// `Preempted`.
    Preempted,
}

fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Lists `api`; a kind the server does not serve (404) is empty, one the user may not read (403) is
/// empty with a note when `optional`.
async fn list<K>(api: Api<K>, lp: &ListParams, what: String, optional: bool) -> Result<(Vec<K>, Option<String>)>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.list(lp).await {
        Ok(l) => Ok((l.items, None)),
        Err(e) if status_code(&e) == Some(404) => Ok((Vec::new(), None)),
        Err(e) if optional && status_code(&e) == Some(403) => {
            Ok((Vec::new(), Some(format!("{what} cannot be read ({e}); left out"))))
        }
        Err(e) => Err(anyhow!(e).context(format!("listing {what}"))),
    }
}

/// Lists what the commands read in `namespace` (and, for `why`, the pods of every namespace, to count
/// what the nodes hold).
pub async fn fetch(client: &Client, namespace: &str, events_of: Events) -> Result<Snapshot> {
    let lp = ListParams::default();
    let ns = |what: &str| format!("{what} in namespace {namespace}");
    let event_lp = match events_of {
        Events::None => None,
        Events::FailedScheduling => {
            Some(ListParams::default().fields(&format!("reason={}", events::FAILED_SCHEDULING)))
        }
        Events::Preempted => Some(ListParams::default().fields(&format!("reason={}", events::PREEMPTED))),
    };
    let events = async {
        match &event_lp {
            Some(elp) => {
                list(
                    Api::<Event>::namespaced(client.clone(), namespace),
                    elp,
                    ns("events"),
                    true,
                )
                .await
            }
            None => Ok((Vec::new(), None)),
        }
    };
    let all_pods = async {
        if events_of == Events::FailedScheduling {
            list(
                Api::<Pod>::all(client.clone()),
                &lp,
                "pods of all namespaces (what the nodes hold)".to_string(),
                true,
            )
            .await
            .map(|(pods, note)| (note.is_none().then_some(pods), note))
        } else {
            Ok((None, None))
        }
    };
    let (jobs, jobsets, workloads, composites, groups, pods, nodes, events, all_pods) = tokio::try_join!(
        list(
            Api::<Job>::namespaced(client.clone(), namespace),
            &lp,
            ns("jobs"),
            false
        ),
        list(
            Api::<JobSet>::namespaced(client.clone(), namespace),
            &lp,
            ns("jobsets"),
            true
        ),
        list(
            Api::<Workload>::namespaced(client.clone(), namespace),
            &lp,
            ns("workloads"),
            false
        ),
        list(
            Api::<CompositePodGroup>::namespaced(client.clone(), namespace),
            &lp,
            ns("compositepodgroups"),
            false
        ),
        list(
            Api::<PodGroup>::namespaced(client.clone(), namespace),
            &lp,
            ns("podgroups"),
            false
        ),
        list(
            Api::<Pod>::namespaced(client.clone(), namespace),
            &lp,
            ns("pods"),
            false
        ),
        list(
            Api::<Node>::all(client.clone()),
            &lp,
            "nodes (topology domains come from their labels)".to_string(),
            true
        ),
        events,
        all_pods,
    )?;
    let notes = [&jobsets.1, &nodes.1, &events.1, &all_pods.1]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    Ok(Snapshot {
        namespace: namespace.to_string(),
        jobs: jobs.0,
        jobsets: jobsets.0,
        workloads: workloads.0,
        composites: composites.0,
        groups: groups.0,
        pods: pods.0,
        nodes: nodes.0,
        events: events.0,
        all_pods: all_pods.0,
        notes,
    })
}

/// Colours when stdout is a terminal and `NO_COLOR` is unset or empty.
pub fn style_for_stdout() -> Style {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    Style {
        color: !no_color && std::io::stdout().is_terminal(),
    }
}

/// Writes `text` to stdout; a closed pipe (`| head`) ends quietly.
fn emit(text: &str) -> Result<bool> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn notes_text(snap: &Snapshot) -> String {
    snap.notes.iter().map(|n| format!("note: {n}\n")).collect()
}

fn to_json<T: Serialize>(v: &T, pretty: bool) -> Result<String> {
    Ok(if pretty {
        serde_json::to_string_pretty(v)? + "\n"
    } else {
        serde_json::to_string(v)? + "\n"
    })
}

/// The `-o json` document of `tree`.
#[derive(Debug, Serialize)]
pub struct TreeDocument<'a> {
    /// `Tree`.
    pub kind: &'static str,
    /// The namespace.
    pub namespace: &'a str,
    /// What was asked about.
    pub target: &'a ObjectRef,
    /// The tree.
    pub root: &'a tree::TreeNode,
}

/// `tree`'s output for one snapshot: the text or JSON, or why there is none.
pub fn render_tree(
    snap: &Snapshot,
    target: &str,
    output: Output,
    style: Style,
    opts: TreeOptions,
    pretty: bool,
) -> Result<String> {
    let t = parse_target(target).map_err(|e| anyhow!(e))?;
    let r = snap.resolve(&t, &TREE_ORDER).map_err(|e| anyhow!(e))?;
    let root = tree::tree(snap, &r);
    match output {
        Output::Json => to_json(
            &TreeDocument {
                kind: "Tree",
                namespace: &snap.namespace,
                target: &r,
                root: &root,
            },
            pretty,
        ),
        Output::Text => Ok(render::tree(style, &root, &snap.namespace, opts) + &notes_text(snap)),
    }
}

/// `kwas tree`.
pub async fn run_tree(args: TreeArgs) -> Result<()> {
    tree_command(args).await.map_err(|e| anyhow!("{e:#}"))
}

async fn tree_command(args: TreeArgs) -> Result<()> {
    parse_target(&args.target).map_err(|e| anyhow!(e))?;
    let (client, namespace) = connect(&args.cluster).await?;
    let style = style_for_stdout();
    let opts = TreeOptions {
        max_pods: args.max_pods.0,
        ..TreeOptions::default()
    };
    if !args.watch {
        let snap = fetch(&client, &namespace, Events::None).await?;
        emit(&render_tree(&snap, &args.target, args.output, style, opts, true)?)?;
        return Ok(());
    }
    let live = args.output == Output::Text && std::io::stdout().is_terminal();
    let mut last: Option<String> = None;
    loop {
        // While watching, a failure (the object not created yet, the server away) is shown, not fatal.
        let text = match fetch(&client, &namespace, Events::None).await {
            Ok(snap) => render_tree(&snap, &args.target, args.output, style, opts, false),
            Err(e) => Err(e),
        }
        .unwrap_or_else(|e| match args.output {
            Output::Json => serde_json::json!({"kind": "Error", "message": format!("{e:#}")}).to_string() + "\n",
            Output::Text => format!("{e:#}\n"),
        });
        if last.as_deref() != Some(text.as_str()) {
            let now = k8s_openapi::jiff::Timestamp::now()
                .round(k8s_openapi::jiff::Unit::Second)
                .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now());
            let frame = if live {
                format!(
                    "\x1b[H\x1b[2J{}\n\n{text}",
                    style_header(
                        style,
                        &format!(
                            "kwas tree {} -n {namespace}   every {:?}   {now}   (Ctrl-C ends)",
                            args.target, args.interval
                        )
                    )
                )
            } else if args.output == Output::Text {
                format!("--- {now}\n{text}\n")
            } else {
                text.clone()
            };
            if !emit(&frame)? {
                return Ok(());
            }
            last = Some(text);
        }
        tokio::select! {
            () = tokio::time::sleep(args.interval) => {}
            r = tokio::signal::ctrl_c() => {
                r.context("waiting for Ctrl-C")?;
                return Ok(());
            }
        }
    }
}

fn style_header(style: Style, s: &str) -> String {
    if style.color {
        format!("\x1b[2m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// `why`'s output for one snapshot.
pub fn render_why(
    snap: &Snapshot,
    target: &str,
    output: Output,
    style: Style,
    now: Option<k8s_openapi::jiff::Timestamp>,
) -> Result<String> {
    let t = parse_target(target).map_err(|e| anyhow!(e))?;
    let r = snap.resolve(&t, &UNIT_ORDER).map_err(|e| anyhow!(e))?;
    let v = why::why(snap, &r);
    match output {
        Output::Json => to_json(&v, true),
        Output::Text => Ok(render::why(style, &v, now) + &notes_text(snap)),
    }
}

/// `kwas why`.
pub async fn run_why(args: UnitArgs) -> Result<()> {
    unit_command(args, Events::FailedScheduling, render_why).await
}

/// The renderer of a command about one unit (`why`, `who-preempted`).
type RenderUnit = fn(&Snapshot, &str, Output, Style, Option<k8s_openapi::jiff::Timestamp>) -> Result<String>;

/// Fetches what a unit command reads (with the events of reason `events`) and prints `render`'s output.
async fn unit_command(args: UnitArgs, events: Events, render: RenderUnit) -> Result<()> {
    let run = async {
        parse_target(&args.target).map_err(|e| anyhow!(e))?;
        let (client, namespace) = connect(&args.cluster).await?;
        let snap = fetch(&client, &namespace, events).await?;
        emit(&render(
            &snap,
            &args.target,
            args.output,
            style_for_stdout(),
            Some(k8s_openapi::jiff::Timestamp::now()),
        )?)?;
        Ok::<(), anyhow::Error>(())
    };
    run.await.map_err(|e| anyhow!("{e:#}"))
}

/// `who-preempted`'s output for one snapshot.
pub fn render_preempted(
    snap: &Snapshot,
    target: &str,
    output: Output,
    style: Style,
    now: Option<k8s_openapi::jiff::Timestamp>,
) -> Result<String> {
    let t = parse_target(target).map_err(|e| anyhow!(e))?;
    let r = preempted::resolve(snap, &t).map_err(|e| anyhow!(e))?;
    let v = preempted::who_preempted(snap, &r);
    match output {
        Output::Json => to_json(&v, true),
        Output::Text => Ok(render::preempted(style, &v, now) + &notes_text(snap)),
    }
}

/// `kwas who-preempted`.
pub async fn run_who_preempted(args: UnitArgs) -> Result<()> {
    unit_command(args, Events::Preempted, render_preempted).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_name_is_recognised_on_any_path() {
        for yes in [
            "kubectl-kwas",
            "/usr/local/bin/kubectl-kwas",
            "./kubectl-kwas",
            "kubectl-kwas.exe",
        ] {
            assert!(invoked_as_plugin(OsStr::new(yes)), "{yes}");
        }
        for no in ["kwas", "/usr/bin/kwas", "kubectl", "kubectl-kwas2", ""] {
            assert!(!invoked_as_plugin(OsStr::new(no)), "{no}");
        }
    }

    #[test]
    fn flags_parse() {
        assert_eq!("all".parse::<MaxPods>(), Ok(MaxPods(None)));
        assert_eq!("3".parse::<MaxPods>(), Ok(MaxPods(Some(3))));
        assert!("-1".parse::<MaxPods>().is_err());
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_interval("1ms").is_err());
        assert!(parse_interval("soon").is_err());
    }

    #[test]
    fn missing_objects_and_bad_names_are_errors_not_panics() {
        let snap = Snapshot {
            namespace: "ns".into(),
            ..Snapshot::default()
        };
        let style = Style::default();
        let e = render_tree(&snap, "job/x", Output::Text, style, TreeOptions::default(), true).unwrap_err();
        assert_eq!(e.to_string(), "job \"x\" not found in namespace ns");
        assert!(render_why(&snap, "nope/x", Output::Json, style, None).is_err());
        assert!(render_preempted(&snap, "x", Output::Text, style, None).is_err());
    }
}
