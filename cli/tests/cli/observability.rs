//! The monitoring kit in `deploy/monitoring/` against what kwas serves. `kwas scheduler` and `kwas
//! controllers` run as processes (leader election on) against devcluster, with a gang that schedules and
//! one that cannot, and their `/metrics` are scraped. A labelled family shows on `/metrics` only once it
//! has a series, so the families a short run leaves empty come from the registries the processes serve,
//! built by the same code with a value recorded through every method (and every family the processes
//! serve must be among them). Every metric the Grafana dashboard and the PrometheusRule query must be
//! served, with the labels they match on, and every metric served must be on the dashboard. The PromQL
//! is read by a small tokenizer (metric names and their label matchers; not a full parser). The
//! ServiceMonitor, Services and Deployments must agree on labels, ports and paths, and the
//! ServiceMonitor and PrometheusRule must fit the Prometheus Operator's schema (the test CRDs in
//! `tests/fixtures/`, checked here as well as by the server dry run in `packaging.rs`, because devcluster
//! does not enforce `pattern`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use kwas_devcluster::{Capacity, DevCluster, DevClusterConfig, Topology};
use serde_json::{Value, json};

fn read(path: &str) -> String {
    std::fs::read_to_string(kwas_test_tools::run::repo_root().join(path)).unwrap()
}

// ---------------------------------------------------------------------------------------------------
// PromQL: metric selectors.

/// A metric selector in a PromQL expression: the metric's name and the label names it matches on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Selector {
    metric: String,
    labels: Vec<String>,
}

/// PromQL words that are not metric names where they appear without a following `(`.
const KEYWORDS: [&str; 26] = [
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "atan2",
    "inf",
    "nan",
];

/// Words followed by a parenthesised list of label names.
const LABEL_LISTS: [&str; 6] = ["by", "without", "on", "ignoring", "group_left", "group_right"];

/// The metric selectors of `expr` (Grafana variables such as `$job` or `[$__rate_interval]` allowed).
fn selectors(expr: &str) -> Vec<Selector> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_ws = |mut j: usize| {
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        j
    };
    let ident_start = |c: char| c.is_ascii_alphabetic() || c == '_' || c == ':';
    let ident_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(&chars, i);
        } else if c == '[' {
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
            i += 1;
        } else if c == '$' {
            // A Grafana variable: $name or ${name}.
            i += 1;
            if i < chars.len() && chars[i] == '{' {
                while i < chars.len() && chars[i] != '}' {
                    i += 1;
                }
                i += 1;
            } else {
                while i < chars.len() && ident_char(chars[i]) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() || c == '.' {
            // Numbers and durations (0.99, 5m, 1e3).
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if ident_start(c) {
            let start = i;
            while i < chars.len() && ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = skip_ws(i);
            let following = chars.get(next).copied();
            if LABEL_LISTS.contains(&word.as_str()) {
                if following == Some('(') {
                    while i < chars.len() && chars[i] != ')' {
                        i += 1;
                    }
                    i += 1;
                }
            } else if following == Some('(') || KEYWORDS.contains(&word.as_str()) {
                // A function or an aggregation, or an operator keyword.
            } else {
                let mut labels = Vec::new();
                if following == Some('{') {
                    i = matchers(&chars, next, &mut labels);
                }
                out.push(Selector { metric: word, labels });
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The index after the string literal starting at `i`.
fn skip_string(chars: &[char], mut i: usize) -> usize {
    let quote = chars[i];
    i += 1;
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' && quote != '`' {
            i += 1;
        }
        i += 1;
    }
    i + 1
}

/// Reads `{label op "value", ...}` starting at `i` (the `{`); pushes the label names; returns the index
/// after `}`.
fn matchers(chars: &[char], mut i: usize, labels: &mut Vec<String>) -> usize {
    i += 1;
    let mut name = String::new();
    while i < chars.len() && chars[i] != '}' {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(chars, i);
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            name.push(c);
        } else if matches!(c, '=' | '!') && !name.is_empty() {
            labels.push(std::mem::take(&mut name));
        } else if !name.is_empty() && !c.is_whitespace() {
            panic!("unexpected {c:?} in a label matcher after {name:?}");
        }
        i += 1;
    }
    i + 1
}

#[test]
fn the_tokenizer_finds_metric_names_and_matched_labels() {
    let expr = r#"histogram_quantile(0.99, sum by (le, result) (rate(a_bucket{job="$j", profile=~"x|y"}[$__rate_interval])))
        / on (instance) group_left () (b{q!="}"} == 1) or vector(0) unless sum without (le) (c) > bool 0.5
        and d offset 5m"#;
    assert_eq!(
        selectors(expr),
        [
            Selector {
                metric: "a_bucket".into(),
                labels: vec!["job".into(), "profile".into()]
            },
            Selector {
                metric: "b".into(),
                labels: vec!["q".into()]
            },
            Selector {
                metric: "c".into(),
                labels: vec![]
            },
            Selector {
                metric: "d".into(),
                labels: vec![]
            },
        ]
    );
}

// ---------------------------------------------------------------------------------------------------
// What the dashboard and the rules query.

fn dashboard() -> Value {
    serde_json::from_str(&read("deploy/monitoring/kwas-dashboard.json")).unwrap()
}

fn rules() -> Value {
    serde_saphyr::from_str(&read("deploy/monitoring/prometheusrule.yaml")).unwrap()
}

/// Every PromQL expression of the dashboard (panel targets, and the selectors of `label_values`
/// variables) and of the rules, with where it comes from.
fn expressions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let d = dashboard();
    for panel in d["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().into_iter().flatten() {
            out.push((
                format!("panel {:?}", panel["title"].as_str().unwrap_or_default()),
                t["expr"].as_str().unwrap().to_string(),
            ));
        }
    }
    for var in d["templating"]["list"].as_array().unwrap() {
        if let Some(q) = var["query"]["query"].as_str() {
            // label_values(<selector>, <label>)
            let inner = q.strip_prefix("label_values(").unwrap().strip_suffix(')').unwrap();
            let (selector, _label) = inner.rsplit_once(',').unwrap();
            out.push((
                format!("variable {:?}", var["name"].as_str().unwrap_or_default()),
                selector.to_string(),
            ));
        }
    }
    for group in rules()["spec"]["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            out.push((
                format!("alert {:?}", rule["alert"].as_str().unwrap_or_default()),
                rule["expr"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------
// What kwas serves.

/// One scrape: metric families by name and type, and the label names each series carries.
#[derive(Debug, Default)]
struct Exposition {
    families: BTreeMap<String, String>,
    series: BTreeMap<String, BTreeSet<String>>,
}

impl Exposition {
    fn parse(&mut self, text: &str) {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                self.families.insert(name.into(), kind.into());
            } else if !line.starts_with('#') && !line.trim().is_empty() {
                let end = line.find(['{', ' ']).unwrap();
                let labels = self.series.entry(line[..end].to_string()).or_default();
                if line[end..].starts_with('{') {
                    let chars: Vec<char> = line[end..].chars().collect();
                    let mut names = Vec::new();
                    matchers(&chars, 0, &mut names);
                    labels.extend(names);
                }
            }
        }
    }

    /// The series names a family is queried by (`x_total` for a counter `x`, and so on).
    fn series_names(&self, family: &str) -> Vec<String> {
        match self.families[family].as_str() {
            "counter" => vec![format!("{family}_total")],
            "histogram" => ["_bucket", "_sum", "_count"]
                .iter()
                .map(|s| format!("{family}{s}"))
                .collect(),
            _ => vec![family.to_string()],
        }
    }

    /// The family a queried series belongs to.
    fn family_of(&self, series: &str) -> Option<&str> {
        self.families
            .keys()
            .find(|f| self.series_names(f).iter().any(|s| s == series))
            .map(String::as_str)
    }
}

/// The scheduler's metrics (the registry `kwas scheduler` serves) with a value recorded through every
/// method, so that every family has series and shows its labels.
fn scheduler_metrics_with_every_series() -> String {
    use kwas_scheduler::runtime::{Attempt, ENTITY_TYPES, Metrics, QUEUES, QueueDepth};
    let m = Metrics::with_profile("kwas-scheduler");
    for group_type in [Some("podgroup"), None] {
        m.attempt(Attempt {
            group_type,
            result: "scheduled",
            seconds: 0.01,
            algorithm_seconds: 0.005,
            placements_evaluated: 2,
            placements_feasible: 1,
        });
    }
    for workload in [true, false] {
        m.preemption_attempt(workload, "preempt");
        m.preemption_victims(workload, 1);
    }
    m.kwas_preemption_attempt("in_progress");
    m.queue_depth(QueueDepth {
        active: 1,
        by_type: [[1; ENTITY_TYPES.len()]; QUEUES.len()],
        ..Default::default()
    });
    m.pod_scheduled();
    m.binding_failure();
    m.leader(true);
    m.api_error("bind");
    m.event_dropped();
    m.invalid_object("Pod");
    m.encode()
}

/// The controllers' metrics likewise.
fn controllers_metrics_with_every_series() -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    let m = kwas_controllers::metrics::Metrics::new(&mut registry);
    for ok in [true, false] {
        m.reconcile("job").finish(ok);
        m.scheduling_sync("job", ok);
    }
    m.skipped("job");
    m.leader(true);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

/// Labels Prometheus attaches to every target a ServiceMonitor discovers.
const TARGET_LABELS: [&str; 7] = [
    "job",
    "instance",
    "namespace",
    "pod",
    "service",
    "endpoint",
    "container",
];

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    (head.split_whitespace().nth(1) == Some("200")).then(|| body.to_string())
}

/// Scrapes `port` until the body contains every one of `needles` (failing with the process's `log`).
async fn scrape_until(port: u16, needles: &[&str], log: &Path) -> String {
    let what = format!("{needles:?} all on :{port}/metrics");
    let found = kwas_test_tools::wait::try_eventually_within(Duration::from_secs(60), what, || {
        let body = scrape(port);
        std::future::ready(match body {
            Some(b) if needles.iter().all(|n| b.contains(n)) => Ok(b),
            other => Err(format!("{other:?}")),
        })
    })
    .await;
    found.unwrap_or_else(|timeout| panic!("{timeout}\nlog:\n{}", std::fs::read_to_string(log).unwrap_or_default()))
}

/// Runs `kwas <args>` with leader election and its admin server on `port`; its log goes to `log`.
fn spawn(args: &[&str], kubeconfig: &Path, port: u16, log: &Path) -> Killed {
    Killed(
        Command::new(env!("CARGO_BIN_EXE_kwas"))
            .args(args)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--leader-elect", "--admin-addr", &format!("127.0.0.1:{port}")])
            .env("POD_NAMESPACE", "default")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    )
}

fn gang_job(name: &str, parallelism: u32, cpu: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "managedBy": "kwas.dev/job-controller",
            "scheduling": {"schedulingPolicy": {"gang": {}}},
            "template": {"spec": {
                "schedulerName": "kwas-scheduler",
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
            }},
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn the_dashboard_and_the_alerts_query_what_kwas_serves() {
    let cluster = DevCluster::start(DevClusterConfig {
        topology: Topology::grid(1, 1, 2, Capacity::default()),
        ..Default::default()
    })
    .await
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (scheduler_log, controllers_log) = (logs.path().join("scheduler.log"), logs.path().join("controllers.log"));
    let (scheduler_port, controllers_port) = (free_port(), free_port());
    let _scheduler = spawn(
        &["scheduler"],
        cluster.kubeconfig_path(),
        scheduler_port,
        &scheduler_log,
    );
    let _controllers = spawn(
        &["controllers"],
        cluster.kubeconfig_path(),
        controllers_port,
        &controllers_log,
    );
    scrape_until(scheduler_port, &["kwas_scheduler_is_leader 1"], &scheduler_log).await;
    scrape_until(controllers_port, &["kwas_controller_is_leader 1"], &controllers_log).await;

    // A gang that fits and one that never can: attempts of both results, an unschedulable queue entry.
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    jobs.create(&PostParams::default(), &gang_job("fits", 2, "100m"))
        .await
        .unwrap();
    jobs.create(&PostParams::default(), &gang_job("too-big", 2, "100000"))
        .await
        .unwrap();
    let scheduler_text = scrape_until(
        scheduler_port,
        &[
            r#"scheduler_podgroup_schedule_attempts_total{profile="kwas-scheduler",result="scheduled",type="podgroup"}"#,
            r#"scheduler_podgroup_schedule_attempts_total{profile="kwas-scheduler",result="unschedulable",type="podgroup"}"#,
            r#"scheduler_queued_entities{queue="unschedulable",type="podgroup"} 1"#,
            "kwas_scheduler_pods_scheduled_total 2",
        ],
        &scheduler_log,
    )
    .await;
    let controllers_text = scrape_until(
        controllers_port,
        &[
            r#"kwas_controller_reconciles_total{controller="job",result="success"}"#,
            r#"kwas_controller_scheduling_object_syncs_total{controller="job",result="success"}"#,
        ],
        &controllers_log,
    )
    .await;
    // A labelled family appears on /metrics once it has a series: the families this run gave none (API
    // errors, say) come from the registries the processes serve, built by the same code with a value
    // recorded through every method. The live scrapes must agree with them.
    let mut live = Exposition::default();
    live.parse(&scheduler_text);
    live.parse(&controllers_text);
    let mut served = Exposition::default();
    served.parse(&scheduler_metrics_with_every_series());
    served.parse(&controllers_metrics_with_every_series());
    let unknown: Vec<_> = live
        .families
        .iter()
        .filter(|(f, kind)| served.families.get(*f) != Some(kind))
        .collect();
    assert!(
        unknown.is_empty(),
        "served by the processes but not recorded: {unknown:?}"
    );
    for (series, labels) in live.series {
        served.series.entry(series).or_default().extend(labels);
    }

    // Every queried metric is served, with the labels the query matches on.
    let mut problems = Vec::new();
    let mut queried_families = BTreeSet::new();
    for (place, expr) in expressions() {
        let found = selectors(&expr);
        if found.is_empty() {
            problems.push(format!("{place}: no metric in {expr}"));
        }
        for s in found {
            let Some(family) = served.family_of(&s.metric) else {
                problems.push(format!("{place}: {} is not served", s.metric));
                continue;
            };
            queried_families.insert(family.to_string());
            let carried = served.series.get(&s.metric).cloned().unwrap_or_default();
            for label in &s.labels {
                if !carried.contains(label) && !TARGET_LABELS.contains(&label.as_str()) {
                    problems.push(format!(
                        "{place}: {} has no label {label} (it has {carried:?})",
                        s.metric
                    ));
                }
            }
        }
    }
    // And the dashboard shows every metric served.
    let on_dashboard: BTreeSet<String> = expressions()
        .iter()
        .filter(|(place, _)| !place.starts_with("alert"))
        .flat_map(|(_, e)| selectors(e))
        .filter_map(|s| served.family_of(&s.metric).map(String::from))
        .collect();
    for family in served.families.keys() {
        if !on_dashboard.contains(family) {
            problems.push(format!("{family} is served but not on the dashboard"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(queried_families.len() >= 25, "{queried_families:?}");
    cluster.shutdown().await;
}

// ---------------------------------------------------------------------------------------------------
// The manifests' wiring and shape.

/// `kubectl kustomize DIR` as objects.
fn kustomize(dir: &str) -> Vec<Value> {
    let out = Command::new(kwas_test_tools::kubectl().expect("kubectl 1.37"))
        .args(["kustomize", dir])
        .current_dir(kwas_test_tools::run::repo_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_saphyr::from_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn matches(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .unwrap()
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
}

#[test]
fn prometheus_reaches_the_admin_ports_through_the_services() {
    let monitoring = kustomize("deploy/monitoring");
    let monitor = find(&monitoring, "ServiceMonitor", "kwas");
    let endpoints = monitor["spec"]["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 1);
    let endpoint = &endpoints[0];
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(endpoint["scheme"], "http");
    let mut jobs = Vec::new();
    for (dir, name) in [
        ("deploy/scheduler", "kwas-scheduler"),
        ("deploy/controllers", "kwas-controllers"),
    ] {
        let deployment = find(&kustomize(dir), "Deployment", name).clone();
        let service = find(&monitoring, "Service", name);
        assert_eq!(service["metadata"]["namespace"], deployment["metadata"]["namespace"]);
        assert!(
            matches(
                &monitor["spec"]["selector"]["matchLabels"],
                &service["metadata"]["labels"]
            ),
            "the ServiceMonitor selects {name}"
        );
        let pod = &deployment["spec"]["template"];
        assert!(
            matches(&service["spec"]["selector"], &pod["metadata"]["labels"]),
            "{name} selects its pods"
        );
        let port = service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == endpoint["port"])
            .unwrap_or_else(|| panic!("{name} has no port {}", endpoint["port"]));
        let container = &pod["spec"]["containers"][0];
        let container_port = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == port["targetPort"])
            .unwrap_or_else(|| panic!("{name}'s pods have no port {}", port["targetPort"]));
        assert_eq!(port["port"], container_port["containerPort"]);
        // The process listens there on every address.
        let listen = format!("--admin-addr=0.0.0.0:{}", container_port["containerPort"]);
        assert!(
            container["args"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == listen.as_str()),
            "{name}: {listen}"
        );
        jobs.push(name);
    }
    // The rules' job label is the Service name (the Prometheus Operator's default).
    let text = read("deploy/monitoring/prometheusrule.yaml");
    let mut named = BTreeSet::new();
    for part in text.split("job=\"").skip(1) {
        named.insert(part.split('"').next().unwrap());
    }
    assert_eq!(named, jobs.into_iter().collect());
    // The dashboard's job variables default to them too.
    let d = dashboard();
    for (var, job) in [
        ("scheduler_job", "kwas-scheduler"),
        ("controllers_job", "kwas-controllers"),
    ] {
        let v = d["templating"]["list"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == var)
            .unwrap();
        assert_eq!(v["current"]["value"], job);
    }
}

#[test]
fn the_dashboard_is_provisioned_and_well_formed() {
    let monitoring = kustomize("deploy/monitoring");
    let map = find(&monitoring, "ConfigMap", "kwas-dashboard");
    assert_eq!(map["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(map["metadata"]["namespace"], "kwas-system");
    let text = map["data"]["kwas-dashboard.json"].as_str().unwrap();
    assert_eq!(
        text.trim_end(),
        read("deploy/monitoring/kwas-dashboard.json").trim_end()
    );

    let d = dashboard();
    assert_eq!(d["uid"], "kwas-overview");
    assert!(d["id"].is_null(), "a provisioned dashboard has no id");
    let mut ids = BTreeSet::new();
    let mut rows = 0;
    let mut y_of_row = 0;
    for panel in d["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap();
        assert!(ids.insert(panel["id"].as_u64().unwrap()), "{title}: id reused");
        let grid = &panel["gridPos"];
        let (x, w) = (grid["x"].as_u64().unwrap(), grid["w"].as_u64().unwrap());
        assert!(x + w <= 24, "{title}: wider than the grid");
        assert!(grid["y"].as_u64().unwrap() >= y_of_row, "{title}: above its row");
        if panel["type"] == "row" {
            rows += 1;
            y_of_row = grid["y"].as_u64().unwrap();
            continue;
        }
        assert!(!panel["description"].as_str().unwrap().is_empty(), "{title}");
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}");
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title}");
        let ref_ids: BTreeSet<&str> = targets.iter().map(|t| t["refId"].as_str().unwrap()).collect();
        assert_eq!(ref_ids.len(), targets.len(), "{title}: refIds");
        for t in targets {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
            let expr = t["expr"].as_str().unwrap();
            assert_eq!(expr.matches('(').count(), expr.matches(')').count(), "{title}: {expr}");
        }
    }
    assert_eq!(rows, 4);
    let variables: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(variables, ["datasource", "scheduler_job", "controllers_job", "profile"]);
}

/// `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`, the
/// Prometheus Operator's duration pattern.
fn is_duration(s: &str) -> bool {
    if s == "0" {
        return true;
    }
    let mut rest = s;
    let mut units = ["y", "w", "d", "h", "m", "s", "ms"].iter().peekable();
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return false;
        }
        let tail = &rest[digits..];
        // The next unit in order that the tail starts with ("ms" before "m" when both could match).
        loop {
            let Some(unit) = units.next() else { return false };
            let longer = *unit == "m" && tail.starts_with("ms");
            if tail.starts_with(unit) && !longer {
                rest = &tail[unit.len()..];
                break;
            }
        }
    }
    !s.is_empty()
}

/// Client-side validation against a CRD version's openAPIV3Schema: unknown fields, types, enums,
/// required fields, and the duration pattern (the only pattern these schemas use).
fn validate(value: &Value, schema: &Value, path: &str, problems: &mut Vec<String>) {
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        problems.push(format!("{path}: {value} not in {options:?}"));
    }
    if schema.get("pattern").is_some() && !value.as_str().is_some_and(is_duration) {
        problems.push(format!("{path}: {value} is not a duration"));
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !value.is_string() && !value.is_i64() {
            problems.push(format!("{path}: not an int or string"));
        }
        return;
    }
    match schema["type"].as_str() {
        Some("object") => {
            let Some(map) = value.as_object() else {
                return problems.push(format!("{path}: not an object"));
            };
            if schema.get("properties").is_none() && schema.get("additionalProperties").is_none() {
                // Free-form (`metadata: {type: object}`).
                return;
            }
            for required in schema["required"].as_array().into_iter().flatten() {
                if !map.contains_key(required.as_str().unwrap()) {
                    problems.push(format!("{path}.{}: required", required.as_str().unwrap()));
                }
            }
            for (k, v) in map {
                let p = format!("{path}.{k}");
                if let Some(s) = schema["properties"].get(k) {
                    validate(v, s, &p, problems);
                } else if let Some(s) = schema.get("additionalProperties") {
                    validate(v, s, &p, problems);
                } else {
                    problems.push(format!("{p}: unknown field"));
                }
            }
        }
        Some("array") => match value.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    validate(item, &schema["items"], &format!("{path}[{i}]"), problems);
                }
            }
            None => problems.push(format!("{path}: not an array")),
        },
        Some("string") if !value.is_string() => problems.push(format!("{path}: not a string")),
        Some("boolean") if !value.is_boolean() => problems.push(format!("{path}: not a boolean")),
        Some("integer") if !value.is_i64() => problems.push(format!("{path}: not an integer")),
        _ => {}
    }
}

#[test]
fn the_service_monitor_and_the_rules_fit_the_operator_schemas() {
    assert!(is_duration("30s") && is_duration("1h30m") && is_duration("500ms") && is_duration("0"));
    assert!(!is_duration("5 minutes") && !is_duration("m") && !is_duration("30s1h") && !is_duration(""));
    let crds: Vec<Value> =
        serde_saphyr::from_multiple(&read("cli/tests/fixtures/prometheus-operator-crds.yaml")).unwrap();
    let schema_of = |kind: &str| {
        let crd = crds.iter().find(|c| c["spec"]["names"]["kind"] == kind).unwrap();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
    };
    let mut problems = Vec::new();
    let mut kinds = Vec::new();
    for object in kustomize("deploy/monitoring") {
        let kind = object["kind"].as_str().unwrap();
        if matches!(kind, "ServiceMonitor" | "PrometheusRule") {
            assert_eq!(object["apiVersion"], "monitoring.coreos.com/v1");
            validate(&object, &schema_of(kind), "", &mut problems);
            kinds.push(kind.to_string());
        }
    }
    // A misspelt field and a bad duration are caught.
    let mut bad = Vec::new();
    validate(
        &json!({"spec": {"selector": {}, "endpoints": [{"port": "a", "intervall": "5 minutes", "scrapeTimeout": "5 minutes"}]}}),
        &schema_of("ServiceMonitor"),
        "",
        &mut bad,
    );
    assert_eq!(
        bad,
        [
            ".spec.endpoints[0].intervall: unknown field",
            ".spec.endpoints[0].scrapeTimeout: \"5 minutes\" is not a duration"
        ]
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    kinds.sort();
    assert_eq!(kinds, ["PrometheusRule", "ServiceMonitor"]);

    // Alerts: unique names, a severity, a summary and a description, a `for`.
    let mut names = BTreeSet::new();
    let rules = rules();
    for group in rules["spec"]["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let name = rule["alert"].as_str().unwrap();
            assert!(names.insert(name), "{name} twice");
            assert!(
                ["critical", "warning", "info"].contains(&rule["labels"]["severity"].as_str().unwrap()),
                "{name}"
            );
            for a in ["summary", "description"] {
                assert!(!rule["annotations"][a].as_str().unwrap().is_empty(), "{name}: {a}");
            }
            assert!(is_duration(rule["for"].as_str().unwrap()), "{name}");
            let expr = rule["expr"].as_str().unwrap();
            assert_eq!(expr.matches('(').count(), expr.matches(')').count(), "{name}: {expr}");
        }
    }
    for wanted in [
        "KwasSchedulerNoLeader",
        "KwasControllersNoLeader",
        "KwasGangUnschedulable",
        "KwasControllerReconcileErrors",
    ] {
        assert!(names.contains(wanted), "{wanted}");
    }
}
