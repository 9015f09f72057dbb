//! Untrusted users, as a hostile one tries it with kubectl 1.37 on `kwas dev`: CEL that would stop the
//! scheduler or the API server (DRA selectors, CRD validation rules) is refused when written if its
//! estimated cost is over kube-apiserver's budget, and bounded when it runs. Every test ends by checking
//! that the API server still answers within a second and that a normal gang still binds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::common::{Dev, apply, eventually, kubectl_stdin, ok, start};

/// The API server's `host:port`, read from the kubeconfig `kwas dev` wrote.
fn server(dev: &Dev) -> String {
    let config = std::fs::read_to_string(&dev.kubeconfig).unwrap();
    let url = config
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap()
        .trim()
        .trim_matches('"');
    url.trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// How long one plain GET takes, over a connection of its own.
fn get_latency(dev: &Dev, path: &str) -> Duration {
    let t = Instant::now();
    let mut s = std::net::TcpStream::connect(server(dev)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    t.elapsed()
}

/// The API server answers within a second and a normal gang Job (`tag`) binds whole.
fn still_serving(dev: &Dev, tag: &str) {
    let latency = get_latency(dev, "/api/v1/namespaces/default");
    assert!(latency < Duration::from_secs(1), "GET took {latency:?}");
    apply(
        dev,
        &format!(
            "apiVersion: batch/v1
kind: Job
metadata:
  name: {tag}
spec:
  managedBy: kwas.dev/job-controller
  parallelism: 2
  completions: 2
  scheduling:
    schedulingPolicy:
      gang: {{}}
  template:
    spec:
      schedulerName: kwas-scheduler
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        resources:
          requests:
            cpu: '1'
"
        ),
    );
    eventually(format!("gang {tag} to bind"), || {
        let out = ok(
            dev,
            &[
                "get",
                "pods",
                "-l",
                &format!("batch.kubernetes.io/job-name={tag}"),
                "-o",
                "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}",
            ],
        );
        let bound = out.lines().filter(|l| !l.is_empty()).count();
        bound == 2
    });
}

fn claim(name: &str, expression: &str) -> String {
    format!(
        "apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.kwas.dev
        selectors:
        - cel:
            expression: {expression:?}
"
    )
}

#[test]
fn selectors_over_the_cost_limit_are_refused_when_written() {
    let dev = start(&[]);
    for (name, expression) in [
        ("trillion", "lists.range(1000000000000).size() > 0"),
        (
            "nested",
            "lists.range(100000).all(i, lists.range(100000).all(j, i + j >= 0))",
        ),
    ] {
        let (created, _, stderr) = kubectl_stdin(&dev, &["apply", "-f", "-"], Some(&claim(name, expression)));
        assert!(!created, "{name} was stored");
        assert!(
            stderr.contains(
                "spec.devices.requests[0].exactly.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"
            ),
            "{stderr}"
        );
    }
    let class = "apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: hostile
spec:
  selectors:
  - cel:
      expression: 'lists.range(1000000000000).size() > 0'
";
    let (created, _, stderr) = kubectl_stdin(&dev, &["apply", "-f", "-"], Some(class));
    assert!(!created);
    assert!(
        stderr.contains("spec.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"),
        "{stderr}"
    );
    // The refusal's cost, server side: comprehensions nested 60 deep, parsed and estimated.
    let nested = format!("{}true{}", "lists.range(100000).all(i, ".repeat(60), ")".repeat(60));
    let body = serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "big"}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.kwas.dev", "selectors": [{"cel": {"expression": nested}}]}}]}}});
    let t = Instant::now();
    let (code, answer) = request(
        &dev,
        "POST",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
        &body.to_string(),
    );
    eprintln!(
        "attack 60-deep comprehensions selector: answered {code} in {:?}",
        t.elapsed()
    );
    assert!(
        code == 422 && answer.contains("too complex, exceeds cost limit"),
        "{code}: {answer}"
    );
    still_serving(&dev, "after-refusal");
}

#[test]
fn a_costly_selector_costs_its_pod_one_budget_and_other_gangs_still_bind() {
    let dev = start(&[]);
    // Accepted (about 200,000 per device, under the 1,000,000 estimate limit), but matching no device it
    // is evaluated on every one of the cluster's 64 GPUs, 13,000,000 in all: the scheduler stops at the
    // pod's budget.
    apply(
        &dev,
        &claim(
            "costly",
            "lists.range(40000).all(i, i >= 0) && device.driver == 'none.example.com'",
        ),
    );
    apply(
        &dev,
        "apiVersion: v1
kind: Pod
metadata:
  name: costly
spec:
  schedulerName: kwas-scheduler
  resourceClaims:
  - name: gpu
    resourceClaimName: costly
  containers:
  - name: c
    image: busybox
    resources:
      claims:
      - name: gpu
",
    );
    let t = Instant::now();
    eventually("the costly pod to be rejected naming its claim", || {
        let (_, out, _) = crate::common::kubectl(
            &dev,
            &[
                "get",
                "pod",
                "costly",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
            ],
        );
        out.contains("claim default/costly: allocation exceeded the scheduler's device allocation budget for one pod")
    });
    eprintln!(
        "attack costly accepted selector: pod rejected within {:?} of its creation",
        t.elapsed()
    );
    still_serving(&dev, "after-costly");
}

fn crd(rule: &str, items: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.hostile.example.com
spec:
  group: hostile.example.com
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: {rule:?}
            properties:
              items: {items}
"
    )
}

#[test]
fn a_crd_whose_rules_cost_too_much_is_refused_when_written() {
    let dev = start(&[]);
    let (created, _, stderr) = kubectl_stdin(
        &dev,
        &["apply", "-f", "-"],
        Some(&crd(
            "self.items.all(a, self.items.all(b, a + b >= 0))",
            "{type: array, items: {type: integer}}",
        )),
    );
    assert!(!created);
    assert!(
        stderr.contains(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: \
             estimated rule cost exceeds budget by factor of more than 100x"
        ),
        "{stderr}"
    );
    still_serving(&dev, "after-crd");
}

#[test]
fn a_custom_resource_past_the_runtime_limit_is_refused_while_other_clients_are_served() {
    let dev = start(&[]);
    // Estimated within budget thanks to maxItems (about 5,000,000 for 1,000 items); a full object costs
    // more than the 1,000,000 one evaluation may.
    apply(
        &dev,
        &crd(
            "self.items.all(a, self.items.all(b, a + b >= 0))",
            "{type: array, maxItems: 1000, items: {type: integer}}",
        ),
    );
    eventually("widgets to be served", || {
        crate::common::kubectl(&dev, &["get", "widgets"]).0
    });
    let items: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    let widget = format!(
        "apiVersion: hostile.example.com/v1
kind: Widget
metadata:
  name: w
spec:
  items: [{}]
",
        items.join(", ")
    );
    // Another client's GETs while the hostile writes are evaluated.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let worst = std::sync::Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let reader = {
        let (stop, worst) = (stop.clone(), worst.clone());
        let addr = server(&dev);
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                let mut s = std::net::TcpStream::connect(&addr).unwrap();
                write!(
                    s,
                    "GET /api/v1/namespaces/default HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                )
                .unwrap();
                let mut out = String::new();
                s.read_to_string(&mut out).unwrap();
                let mut w = worst.lock().unwrap();
                *w = (*w).max(t.elapsed());
            }
        })
    };
    let t = Instant::now();
    for _ in 0..3 {
        let (created, _, stderr) = kubectl_stdin(&dev, &["create", "-f", "-"], Some(&widget));
        assert!(!created);
        assert!(
            stderr.contains(
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to \
                 call cost exceeds limit for rule: self.items.all(a, self.items.all(b, a + b >= 0))"
            ),
            "{stderr}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    let worst = *worst.lock().unwrap();
    eprintln!(
        "attack custom resource past the per-call limit: 3 refused writes (kubectl) in {:?}, another client's slowest GET {worst:?}, peak RSS {} MiB",
        t.elapsed(),
        dev.peak_rss_kib() / 1024
    );
    assert!(worst < Duration::from_secs(1), "another client waited {worst:?}");
    still_serving(&dev, "after-widgets");
}

/// One HTTP request on a connection of its own: (status, body).
fn request(dev: &Dev, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(server(dev)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}

/// A random CEL expression over `root` (`device` for selectors, `self` for CRD rules): comparisons,
/// string and regex calls, ranges, nested comprehensions, deep chains.
fn expression(rng: &mut fastrand::Rng, depth: u32, root: &str) -> String {
    let n = ["0", "1", "10", "100", "1000", "100000", "1000000000000"][rng.usize(..7)];
    let leaf = |rng: &mut fastrand::Rng| match rng.usize(..9) {
        0 if root == "device" => "device.driver == 'gpu.kwas.dev'".to_string(),
        1 if root == "device" => format!("device.attributes['gpu.kwas.dev'].index < {n}"),
        2 if root == "device" => "device.attributes['gpu.kwas.dev'].model.matches('^K[0-9]+$')".to_string(),
        0..=2 => format!("self.name.startsWith('{}')", "a".repeat(rng.usize(..4))),
        3 if root == "self" => format!("self.items.all(i, i < {n})"),
        3 => format!("lists.range({n}).size() >= 0"),
        4 => format!("'abc'.replace('b', '{}').size() > {n}", "x".repeat(rng.usize(..40))),
        5 => format!("'{}'.split(',').size() > 0", ",".repeat(rng.usize(..100))),
        6 => format!(
            "[{}].filter(x, x > 0).size() >= 0",
            vec!["1"; rng.usize(..20)].join(",")
        ),
        7 => "quantity('40Gi').compareTo(quantity('1Gi')) > 0".to_string(),
        _ => "true".to_string(),
    };
    if depth == 0 {
        return leaf(rng);
    }
    let a = expression(rng, depth - 1, root);
    match rng.usize(..7) {
        0 => format!("({a} && {})", expression(rng, depth - 1, root)),
        1 => format!("({a} || {})", expression(rng, depth - 1, root)),
        2 => format!("!({a})"),
        3 => format!("lists.range({n}).all(i, {a})"),
        4 => format!("lists.range({n}).exists(j, {a} && j >= 0)"),
        5 => vec![a; rng.usize(1..40)].join(" && "),
        _ => format!("{}{a}{}", "(".repeat(rng.usize(..300)), ")".repeat(rng.usize(..300))),
    }
}

/// Random CEL against both evaluators of a running `kwas dev`: DRA selectors (devcluster's validation,
/// then the scheduler's allocator for what is accepted) and CRD rules (devcluster's CRD validation,
/// then its custom resource validation). No request is answered 5xx, the process never aborts, nothing
/// hangs past its budget (the server answers a GET within a second throughout), and the process's peak
/// resident memory stays under a bound.
#[test]
fn random_cel_never_stops_the_api_server_or_the_scheduler() {
    let mut dev = start(&[]);
    let mut rng = fastrand::Rng::with_seed(21);
    let (mut accepted, mut refused) = (0, 0);
    let t = Instant::now();
    for i in 0..150 {
        let depth = rng.u32(..4);
        // A selector, and a pod using it when it is accepted.
        let selector = expression(&mut rng, depth, "device");
        let claim = serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": format!("fuzz-{i}")},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.kwas.dev",
                "selectors": [{"cel": {"expression": selector}}]}}]}}});
        let trace = |what: &str| {
            if std::env::var_os("KWAS_TRACE_RSS").is_some() {
                eprintln!("  {i} {what}: {} MiB", dev.peak_rss_kib() / 1024);
            }
        };
        trace("start");
        let (code, body) = request(
            &dev,
            "POST",
            "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
            &claim.to_string(),
        );
        trace("claim");
        assert!(code == 201 || code == 422, "{code} for {selector}: {body}");
        if code == 201 {
            accepted += 1;
            let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("fuzz-{i}")},
                "spec": {"schedulerName": "kwas-scheduler", "resourceClaims": [{"name": "gpu", "resourceClaimName": format!("fuzz-{i}")}],
                    "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]}});
            let (code, body) = request(&dev, "POST", "/api/v1/namespaces/default/pods", &pod.to_string());
            assert_eq!(code, 201, "{body}");
            // The scheduler tried it (bound it, or said why not); then it goes, so the queue stays short.
            let pod_path = format!("/api/v1/namespaces/default/pods/fuzz-{i}");
            eventually("the scheduler to try the pod", || {
                request(&dev, "GET", &pod_path, "")
                    .1
                    .contains("\"type\":\"PodScheduled\"")
            });
            trace("scheduled");
            let (code, _) = request(&dev, "DELETE", &format!("{pod_path}?gracePeriodSeconds=0"), "");
            assert_eq!(code, 200);
            trace("deleted");
        } else {
            refused += 1;
        }
        // A CRD rule, and an object that runs it when the CRD is accepted.
        let rule = expression(&mut rng, depth, "self");
        let group = format!("fuzz{i}.example.com");
        let crd = serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("things.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object",
                        "x-kubernetes-validations": [{"rule": rule}],
                        "properties": {"name": {"type": "string", "maxLength": 63},
                            "items": {"type": "array", "maxItems": 100, "items": {"type": "integer"}}}}}}}}]}});
        let (code, body) = request(
            &dev,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd.to_string(),
        );
        assert!(code == 201 || code == 422, "{code} for {rule}: {body}");
        if code == 201 {
            let path = format!("/apis/{group}/v1/namespaces/default/things");
            eventually("the custom resource to be served", || {
                request(&dev, "GET", &path, "").0 == 200
            });
            let thing = serde_json::json!({"apiVersion": format!("{group}/v1"), "kind": "Thing",
                "metadata": {"name": "t"}, "spec": {"name": "abc", "items": (0..100).collect::<Vec<_>>()}});
            let (code, body) = request(&dev, "POST", &path, &thing.to_string());
            assert!(code == 201 || code == 422, "{code} for {rule}: {body}");
        }
        let latency = get_latency(&dev, "/api/v1/namespaces/default");
        assert!(
            latency < Duration::from_secs(1),
            "GET took {latency:?} after {selector} / {rule}"
        );
        assert!(dev.alive(), "kwas dev stopped");
        if std::env::var_os("KWAS_TRACE_RSS").is_some() {
            eprintln!(
                "{i}: {} MiB after {selector:.80} / {rule:.80}",
                dev.peak_rss_kib() / 1024
            );
        }
    }
    let peak = dev.peak_rss_kib();
    eprintln!(
        "random CEL: {accepted} selectors accepted, {refused} refused, in {:?}; kwas dev peak RSS {} MiB",
        t.elapsed(),
        peak / 1024
    );
    assert!(accepted > 5 && refused > 5, "{accepted} / {refused}");
    // devcluster, the controllers and the scheduler of an 8-node dev cluster under this load (measured:
    // about 140 MiB in a debug build).
    assert!(peak < 512 * 1024, "peak RSS {} MiB", peak / 1024);
    still_serving(&dev, "after-fuzz");
}
