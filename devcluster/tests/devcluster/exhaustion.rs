//! Regression tests for "no user's object can stop, stall or starve the API server": each test performs
//! one attack against a running devcluster (half-sent bodies, history-filling writes, watchers that never
//! read, warning floods, unknown-field floods, empty list entries in JSON and protobuf), checks the
//! server's answer, and ends by checking that a normal GET is answered within one second and a normal
//! create still works. Each prints what the attack cost (time and the growth of the process' peak
//! resident memory, `VmHWM`, reset before the attack); the figures are meaningful when the test runs
//! alone, as they do (`cargo test -p kwas-devcluster --test devcluster exhaustion -- --nocapture` prints them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kwas_devcluster::DevCluster;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
/// What the normal GET after each attack reads.
const NAMESPACE: &str = "/api/v1/namespaces/default";

/// The tests of this file run one at a time: each measures the process' memory, and each checks a
/// one-second answer, which another test's attack on the same two cores must not decide.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One raw response: status, headers (lower-cased names) and body.
#[derive(Debug)]
struct Answer {
    code: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

fn addr(c: &DevCluster) -> String {
    c.base_url().trim_start_matches("http://").to_string()
}

/// Parses an HTTP/1.x response read to its end.
fn parse(raw: &[u8]) -> Option<Answer> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let code = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Answer {
        code,
        headers,
        body: raw[split + 4..].to_vec(),
    })
}

/// One HTTP/1.0 request with a complete body; the answer read to its end.
async fn send(c: &DevCluster, method: &str, path: &str, content_type: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr(c)).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        addr(c),
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut out))
        .await
        .expect("an answer within 60 s")
        .unwrap();
    parse(&out).expect("an HTTP response")
}

/// The server answers a normal GET (the `default` namespace) within one second, and a normal create works.
async fn still_serves(c: &DevCluster, tag: &str) {
    let started = Instant::now();
    let got = tokio::time::timeout(
        Duration::from_secs(1),
        send(c, "GET", NAMESPACE, "application/json", b""),
    )
    .await
    .expect("a GET answered within one second");
    assert_eq!(got.code, 200, "{}", String::from_utf8_lossy(&got.body));
    eprintln!("[{tag}] GET answered in {:?}", started.elapsed());
    let name = format!("after-{}", tag.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    let body = json!({"metadata": {"name": name}, "data": {"a": "b"}}).to_string();
    let created = send(c, "POST", CONFIGMAPS, "application/json", body.as_bytes()).await;
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
}

/// The process' peak resident memory, reset to the current one: what an attack adds to it is
/// [`Peak::grown_mib`] afterwards.
struct Peak {
    rss_kib: u64,
    started: Instant,
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

impl Peak {
    fn start() -> Peak {
        // Writing 5 to clear_refs resets VmHWM to the current resident size (Linux >= 4.0).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        Peak {
            rss_kib: status_kib("VmRSS:"),
            started: Instant::now(),
        }
    }

    fn report(&self, tag: &str) {
        let grown = status_kib("VmHWM:").saturating_sub(self.rss_kib);
        eprintln!(
            "[{tag}] attack took {:?}; peak resident memory grew by {:.1} MiB",
            self.started.elapsed(),
            grown as f64 / 1024.0
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_bodies_hold_one_slot_each_until_the_request_timeout_and_never_lock_out_reads() {
    let _serial = SERIAL.lock().await;
    let timeout = Duration::from_secs(3);
    let c = crate::common::cluster_with(|cfg| cfg.server.request_timeout = timeout).await;
    let peak = Peak::start();
    // 1,024 clients declare a 1 MiB body and send 12 bytes of it.
    let settled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..1024 {
        let a = addr(&c);
        let settled = settled.clone();
        clients.push(tokio::spawn(async move {
            let started = Instant::now();
            let mut s = TcpStream::connect(&a).await.ok()?;
            let head = format!(
                "POST {CONFIGMAPS} HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{{\"metadata\":"
            );
            s.write_all(head.as_bytes()).await.ok()?;
            // When the answer starts, and whether the server then closes the connection.
            let mut out = Vec::new();
            let mut first = None;
            let mut buf = [0u8; 4096];
            let closed = loop {
                let read = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf)).await;
                if first.is_none() {
                    settled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    first = Some(started.elapsed());
                }
                match read {
                    Ok(Ok(0)) | Ok(Err(_)) => break true,
                    Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
                    Err(_) => break false,
                }
            };
            Some((parse(&out)?, first?, closed))
        }));
    }
    // Once all but the 200 holding a write slot are answered (or refused), reads are answered at once
    // while those 200 wait for their timeout, and writes get 429.
    crate::common::eventually_within(Duration::from_secs(20), "all but 200 answered", || async {
        (settled.load(std::sync::atomic::Ordering::Relaxed) >= 1024 - 200).then_some(())
    })
    .await;
    still_reads(&c).await;
    let refused = send(&c, "POST", CONFIGMAPS, "application/json", b"{}").await;
    assert_eq!(refused.code, 429);
    let mut too_many = 0;
    let mut timed_out = 0;
    for client in clients {
        let Some((answer, took, closed)) = client.await.unwrap() else {
            continue;
        };
        assert!(closed, "the connection of a refused or timed-out body is closed");
        match answer.code {
            429 => {
                assert!(took < timeout, "a 429 is answered at once, not after {took:?}");
                assert_eq!(answer.header_values("retry-after"), ["1"]);
                assert_eq!(answer.json()["message"], "Too many requests, please try again later.");
                too_many += 1;
            }
            504 => {
                assert!(took >= timeout, "{took:?}");
                let status = answer.json();
                assert_eq!(status["reason"], "Timeout");
                assert_eq!(
                    status["message"],
                    "Timeout: request did not complete within the allotted timeout"
                );
                timed_out += 1;
            }
            other => panic!("unexpected {other}: {}", String::from_utf8_lossy(&answer.body)),
        }
    }
    peak.report("half-sent bodies");
    // kube-apiserver's --max-mutating-requests-inflight: 200 held their slot until the timeout.
    assert_eq!(timed_out, 200);
    assert!(too_many >= 800, "{too_many} answered 429");
    // A declared body over the limit is refused before any of it is read.
    let mut s = TcpStream::connect(addr(&c)).await.unwrap();
    let head = format!(
        "POST {CONFIGMAPS} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 3145729\r\n\r\n",
        addr(&c)
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = parse(&out).unwrap();
    assert_eq!(answer.code, 413);
    assert_eq!(answer.json()["message"], "Request entity too large: limit is 3145728");
    still_serves(&c, "half-sent bodies").await;
    c.shutdown().await;
}

/// A GET is answered within one second (while writes may still be held up).
async fn still_reads(c: &DevCluster) {
    let got = tokio::time::timeout(
        Duration::from_secs(1),
        send(c, "GET", NAMESPACE, "application/json", b""),
    )
    .await
    .expect("a GET answered within one second");
    assert_eq!(got.code, 200);
}

/// A ConfigMap of about `size` bytes.
fn configmap(name: &str, size: usize) -> Vec<u8> {
    json!({"metadata": {"name": name}, "data": {"a": "x".repeat(size)}})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn big_objects_written_in_a_loop_keep_only_the_byte_budget_of_history() {
    let _serial = SERIAL.lock().await;
    let budget = 8 * 1024 * 1024;
    let c = crate::common::cluster_with(|cfg| cfg.server.watch_history_bytes = budget).await;
    let peak = Peak::start();
    let mut rvs = Vec::new();
    for i in 0..40 {
        let answer = send(
            &c,
            "POST",
            CONFIGMAPS,
            "application/json",
            &configmap(&format!("big-{i}"), 1000 * 1024),
        )
        .await;
        assert_eq!(answer.code, 201);
        rvs.push(
            answer.json()["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    peak.report("40 MB of writes into an 8 MiB history");
    let first_rv = &rvs[0];
    // The first writes fell out of the 8 MiB window: a watch from before them is told so.
    let from_first = send(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?watch=true&resourceVersion={first_rv}&timeoutSeconds=1"),
        "application/json",
        b"",
    )
    .await;
    let line: Value = serde_json::from_slice(from_first.body.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(line["type"], "ERROR");
    assert_eq!(line["object"]["code"], 410);
    assert!(
        line["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("too old resource version: {first_rv} ("))
    );
    // The last few are still there.
    let recent = &rvs[36];
    let from_recent = send(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?watch=true&resourceVersion={recent}&timeoutSeconds=1"),
        "application/json",
        b"",
    )
    .await;
    let events: Vec<Value> = from_recent
        .body
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(
        events.len(),
        3,
        "{:?}",
        events.iter().map(|e| &e["type"]).collect::<Vec<_>>()
    );
    assert!(events.iter().all(|e| e["type"] == "ADDED"));
    still_serves(&c, "history").await;
    c.shutdown().await;
}

/// Opens a watch over HTTP/1.0 (JSON, or protobuf when `accept` says so) with a small receive buffer and
/// returns the connection unread.
async fn open_watch(c: &DevCluster, rv: &str, recv_buffer: u32, accept: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(recv_buffer).unwrap();
    let mut s = socket.connect(addr(c).parse().unwrap()).await.unwrap();
    let head = format!(
        "GET {CONFIGMAPS}?watch=true&resourceVersion={rv} HTTP/1.0\r\nHost: {}\r\nAccept: {accept}\r\n\r\n",
        addr(c)
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

#[tokio::test]
async fn watchers_that_never_read_are_closed_and_hold_up_neither_writers_nor_other_watchers() {
    let _serial = SERIAL.lock().await;
    let stall = Duration::from_secs(2);
    let c = crate::common::cluster_with(|cfg| {
        cfg.server.watch_stall_timeout = stall;
        cfg.server.watch_buffer_bytes = 256 * 1024;
    })
    .await;
    let rv = send(&c, "GET", CONFIGMAPS, "application/json", b"").await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    // 50 watchers that never read (as protobuf, so every one encodes its own frames), and one that does.
    let mut stuck = Vec::new();
    for _ in 0..50 {
        stuck.push(open_watch(&c, &rv, 4096, PROTOBUF).await);
    }
    let mut healthy = open_watch(&c, &rv, 4096, "application/json").await;
    let objects = 100;
    let reader = tokio::spawn(async move {
        let mut line = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut added = 0;
        while added < objects {
            let n = healthy.read(&mut buf).await.unwrap();
            assert!(n > 0, "the healthy watch ended early");
            for &b in &buf[..n] {
                if b == b'\n' {
                    added += usize::from(line.starts_with(b"{\"type\":\"ADDED\""));
                    line.clear();
                } else if line.len() < 64 {
                    line.push(b);
                }
            }
            // A client that is busy between reads.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        added
    });
    let peak = Peak::start();
    let mut slowest = Duration::ZERO;
    for i in 0..objects {
        let started = Instant::now();
        let answer = send(
            &c,
            "POST",
            CONFIGMAPS,
            "application/json",
            &configmap(&format!("w-{i}"), 64 * 1024),
        )
        .await;
        assert_eq!(answer.code, 201);
        slowest = slowest.max(started.elapsed());
    }
    assert!(slowest < Duration::from_secs(1), "a write took {slowest:?}");
    let added = tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("the healthy watcher keeps up")
        .unwrap();
    assert_eq!(added, objects);
    // The stuck watchers' connections are closed once they took nothing for the stall timeout: what the
    // kernel buffered reads out, then the stream ends short of the 6.4 MB written.
    let deadline = Instant::now() + stall * 10;
    for mut s in stuck {
        let mut total = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, s.read(&mut buf))
                .await
                .expect("the stuck watch is closed")
            {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
        assert!(
            total < objects * 64 * 1024,
            "a stuck watcher got everything ({total} bytes)"
        );
    }
    peak.report("50 stuck watchers, 6.4 MB of events");
    still_serves(&c, "stuck watchers").await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_flood_of_warnings_is_cut_like_kube_apiservers_warning_recorder() {
    let _serial = SERIAL.lock().await;
    let c = crate::common::cluster().await;
    let peak = Peak::start();
    // 2,000 unknown fields with 1,000-character names (2 MB), fieldValidation=Warn (the default).
    let mut body = serde_json::Map::new();
    body.insert("metadata".into(), json!({"name": "warned"}));
    for i in 0..2000 {
        body.insert(format!("{i:04}{}", "u".repeat(996)), json!(1));
    }
    let answer = send(
        &c,
        "POST",
        CONFIGMAPS,
        "application/json",
        Value::Object(body).to_string().as_bytes(),
    )
    .await;
    peak.report("2,000 long unknown fields (Warn)");
    assert_eq!(answer.code, 201, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.json()["metadata"]["name"], "warned");
    let warnings = answer.header_values("warning");
    // Four whole warnings fit in 4,096 characters; the fifth switches to truncation: every warning is cut
    // to 256 characters, until 4,096 are written.
    assert_eq!(warnings.len(), 16, "{warnings:?}");
    for w in &warnings {
        let text = w.strip_prefix("299 - \"").and_then(|t| t.strip_suffix('"')).unwrap();
        let text = text.replace("\\\"", "\"");
        assert_eq!(text.chars().count(), 256, "{text}");
        assert!(text.starts_with("unknown field \""), "{text}");
    }
    still_serves(&c, "warnings").await;
    c.shutdown().await;
}

/// A CRD whose schema nests `properties` `depth` levels deep under keys of `key_len` characters, with
/// `unknown` unknown fields at the bottom.
fn deep_crd(name: &str, depth: usize, key_len: usize, unknown: usize) -> Vec<u8> {
    let mut leaf = serde_json::Map::new();
    leaf.insert("type".into(), json!("object"));
    for i in 0..unknown {
        leaf.insert(format!("x{i}"), json!(0));
    }
    let mut schema = Value::Object(leaf);
    for level in 0..depth {
        let key = format!("{level:03}{}", "k".repeat(key_len));
        schema = json!({"type": "object", "properties": {key: schema}});
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{name}s.example.com")},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Deep", "plural": format!("{name}s"), "singular": name, "listKind": "DeepList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}],
        },
    })
    .to_string()
    .into_bytes()
}

/// A protobuf envelope of `kind` in v1 around `raw`.
fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    field_bytes(&mut type_meta, 1, b"v1");
    field_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = b"k8s\0".to_vec();
    field_bytes(&mut out, 1, &type_meta);
    field_bytes(&mut out, 2, raw);
    out
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field_bytes(out: &mut Vec<u8>, number: u64, data: &[u8]) {
    varint(out, (number << 3) | 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

#[tokio::test]
async fn deep_bodies_full_of_unknown_fields_report_only_the_first_100() {
    let _serial = SERIAL.lock().await;
    let c = crate::common::cluster().await;
    // 40 levels of 10,000-character keys (400 KB of path) over 60,000 unknown fields: one full path per
    // field would be 24 GB.
    let body = deep_crd("deep", 40, 10_000, 60_000);
    let peak = Peak::start();
    let strict = send(
        &c,
        "POST",
        &format!("{CRDS}?fieldValidation=Strict"),
        "application/json",
        &body,
    )
    .await;
    peak.report("deep CRD with 60,000 unknown fields (Strict)");
    assert_eq!(strict.code, 400);
    let message = strict.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(
            "strict decoding error: unknown field \"spec.versions[0].schema.openAPIV3Schema.properties.039k"
        ),
        "{}",
        &message[..200]
    );
    assert!(
        message.ends_with(", and 59900 more unknown fields"),
        "{}",
        &message[message.len() - 200..]
    );
    assert_eq!(message.matches("unknown field \"").count(), 100);
    assert!(message.len() < 120 * 1024, "{} bytes", message.len());

    let peak = Peak::start();
    let warned = send(&c, "POST", CRDS, "application/json", &body).await;
    peak.report("deep CRD with 60,000 unknown fields (Warn)");
    assert_eq!(warned.code, 201, "{}", String::from_utf8_lossy(&warned.body));
    let warnings = warned.header_values("warning");
    assert!(!warnings.is_empty() && warnings.len() <= 100, "{}", warnings.len());
    let total: usize = warnings.iter().map(|w| w.chars().count()).sum();
    assert!(total < 100 * 270, "{total}");

    // Protobuf: 500,000 unknown field numbers in a ConfigMap (1.5 MB).
    let mut raw = Vec::new();
    let mut meta = Vec::new();
    field_bytes(&mut meta, 1, b"numbers");
    field_bytes(&mut raw, 1, &meta);
    for _ in 0..500_000 {
        varint(&mut raw, 99 << 3);
        varint(&mut raw, 1);
    }
    let body = envelope("ConfigMap", &raw);
    let peak = Peak::start();
    let strict = send(
        &c,
        "POST",
        &format!("{CONFIGMAPS}?fieldValidation=Strict"),
        PROTOBUF,
        &body,
    )
    .await;
    peak.report("protobuf ConfigMap with 500,000 unknown fields (Strict)");
    assert_eq!(strict.code, 400);
    let message = strict.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.ends_with("unknown field number 99 of k8s.io.api.core.v1.ConfigMap, and 499900 more unknown fields"),
        "{message}"
    );
    let warned = send(&c, "POST", CONFIGMAPS, PROTOBUF, &body).await;
    assert_eq!(warned.code, 201);
    // The 100 reported are one text: one warning.
    assert_eq!(warned.header_values("warning").len(), 1);
    still_serves(&c, "unknown fields").await;
    c.shutdown().await;
}

#[tokio::test]
async fn empty_list_entries_past_the_limit_are_refused_before_typed_decoding() {
    let _serial = SERIAL.lock().await;
    let c = crate::common::cluster().await;
    let pods = "/api/v1/namespaces/default/pods";
    // JSON: a million empty containers in 3 MB, 2.3 KB each once typed.
    let body = format!(
        "{{\"metadata\":{{\"name\":\"wide\"}},\"spec\":{{\"containers\":[{}]}}}}",
        vec!["{}"; 1_000_000].join(",")
    );
    let peak = Peak::start();
    let answer = send(&c, "POST", pods, "application/json", body.as_bytes()).await;
    peak.report("1,000,000 empty containers (JSON)");
    assert_eq!(answer.code, 413);
    let status = answer.json();
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_eq!(
        status["message"],
        "Request entity too large: the allowed maximum list entries in a Pod is 10000, got 1000000"
    );
    // Volumes are the largest entries (3.3 KB typed): 10,001 of them.
    let volumes: Vec<Value> = (0..10_001).map(|_| json!({})).collect();
    let body = json!({"metadata": {"name": "vols"}, "spec": {"containers": [], "volumes": volumes}}).to_string();
    let answer = send(&c, "POST", pods, "application/json", body.as_bytes()).await;
    assert_eq!(answer.code, 413);

    // Protobuf: 1.5 million empty containers in 3 MB, two bytes each.
    let mut spec = Vec::with_capacity(3_000_000);
    for _ in 0..1_500_000 {
        field_bytes(&mut spec, 2, b"");
    }
    let mut raw = Vec::new();
    let mut meta = Vec::new();
    field_bytes(&mut meta, 1, b"wide");
    field_bytes(&mut raw, 1, &meta);
    field_bytes(&mut raw, 2, &spec);
    let body = envelope("Pod", &raw);
    let peak = Peak::start();
    let answer = send(&c, "POST", pods, PROTOBUF, &body).await;
    peak.report("1,500,000 empty containers (protobuf)");
    assert_eq!(answer.code, 413, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(
        answer.json()["message"],
        "Request entity too large: spec.containers: the allowed maximum list entries in an object is 10000, got more"
    );
    still_serves(&c, "list entries").await;
    c.shutdown().await;
}
