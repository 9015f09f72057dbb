//! A fuzz-style run against every endpoint: thousands of requests built from a seeded generator (hostile
//! bodies, patches of every type, query strings with extreme and malformed values, forged tokens, wrong
//! methods) to every served resource and subresource. Afterwards the server must still serve, no
//! background task may have died, nothing may have answered with a 5xx (a 500 is a bug: handler panics
//! are turned into 500s), and what is stored must still be valid: every object decodes through its type and
//! every list is consistent with its items' resourceVersions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use kwas_devcluster::DevCluster;
use serde_json::{Value, json};

/// Requests per seed; each seed is an independent cluster.
const REQUESTS: usize = 4000;
const SEEDS: [u64; 3] = [1, 2, 3];

/// The kind-specific part of a valid object.
fn valid(kind: &str, name: &str) -> Value {
    let gang = json!({"schedulingPolicy": {"gang": {"minCount": 1}}});
    match kind {
        "Pod" => json!({"spec": {"containers": [{"name": "c", "image": "i"}], "schedulerName": "kwas-scheduler"}}),
        "ConfigMap" => json!({"data": {"a": "b"}}),
        "Secret" => json!({"data": {"a": "Yg=="}}),
        "Node" => json!({"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}}}),
        "Event" => json!({"involvedObject": {"kind": "Pod", "name": "a", "namespace": "default"}, "reason": "R"}),
        "Lease" => json!({"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
        "Job" => {
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}}})
        }
        "PriorityClass" => json!({"value": 100}),
        "Workload" => json!({"spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
            "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 1}}}]}}),
        "PodGroup" => json!({"spec": gang}),
        "CompositePodGroup" => json!({"spec": {"schedulingPolicy": {"gang": {"minGroupCount": 1}},
            "workloadRef": {"name": "w"}}}),
        "Service" => json!({"spec": {"ports": [{"port": 80}], "selector": {"app": "a"}}}),
        "EndpointSlice" => json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.1.0.1"],
            "conditions": {"ready": true}}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
        "ResourceQuota" => json!({"spec": {"hard": {"pods": "5", "requests.cpu": "2"}}}),
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => json!({"spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        "CronJob" => json!({"spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}}}}}),
        "Role" | "ClusterRole" => json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
        "RoleBinding" | "ClusterRoleBinding" => json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole", "name": "r"}, "subjects": [{"kind": "User", "name": "u"}]}),
        "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview" => json!({"spec": {
            "resourceAttributes": {"verb": "get", "resource": "pods"}, "user": "u"}}),
        "PersistentVolume" => json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"}}}),
        "PersistentVolumeClaim" => json!({"spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
        "StorageClass" => json!({"provisioner": "sim-disk.kwas.dev", "volumeBindingMode": "Immediate"}),
        "CSIDriver" => json!({"spec": {"attachRequired": false}}),
        "CSINode" => json!({"spec": {"drivers": [{"name": "fuzz.example.com", "nodeID": name}]}}),
        "DeviceClass" => {
            json!({"spec": {"selectors": [{"cel": {"expression": "device.driver == \"fuzz.example.com\""}}]}})
        }
        "ResourceClaim" => {
            json!({"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.kwas.dev",
            "selectors": [{"cel": {"expression": "device.attributes[\"gpu.kwas.dev\"].index < 4"}}]}}]}}})
        }
        "ResourceClaimTemplate" => json!({"spec": {"spec": {"devices": {"requests": [{"name": "r",
            "firstAvailable": [{"name": "s", "deviceClassName": "gpu.kwas.dev", "count": 2}]}]}}}}),
        // Another driver's slices: the simulated driver keeps its own and leaves these alone.
        "ResourceSlice" => json!({"spec": {"driver": "fuzz.example.com", "allNodes": true,
            "pool": {"name": name, "generation": 0, "resourceSliceCount": 1},
            "devices": [{"name": "d", "attributes": {"model": {"string": "x"}}, "capacity": {"memory": {"value": "1Gi"}}}]}}),
        // Each budget selects its own label, which no generated pod has: two budgets over one pod make an
        // eviction a 500, as upstream answers it, and this run checks that nothing else does.
        "PodDisruptionBudget" => {
            json!({"spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"fuzz-pdb": name}}}})
        }
        "CustomResourceDefinition" => json!({"spec": {"group": "fuzz.example.com", "scope": "Namespaced",
            "names": {"plural": name, "kind": "Fuzz"}, "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        _ => json!({}),
    }
}

/// A served resource, from discovery.
#[derive(Debug, Clone)]
struct Served {
    base: String,
    plural: String,
    namespaced: bool,
    kind: String,
    api_version: String,
    verbs: Vec<String>,
    /// Whether the kind has a protobuf form (built-in).
    protobuf: bool,
}

async fn discover(c: &DevCluster) -> Vec<Served> {
    let mut out = Vec::new();
    let mut versions = vec![("/api/v1".to_string(), "v1".to_string())];
    let (_, apis) = crate::common::raw(c, "GET", "/apis", &[], b"").await.unwrap();
    let apis: Value = serde_json::from_str(&apis).unwrap();
    for g in apis["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            let gv = v["groupVersion"].as_str().unwrap().to_string();
            versions.push((format!("/apis/{gv}"), gv));
        }
    }
    for (base, api_version) in versions {
        let (_, list) = crate::common::raw(c, "GET", &base, &[], b"").await.unwrap();
        let list: Value = serde_json::from_str(&list).unwrap();
        for r in list["resources"].as_array().unwrap() {
            let name = r["name"].as_str().unwrap();
            if name.contains('/') {
                continue;
            }
            out.push(Served {
                base: base.clone(),
                plural: name.to_string(),
                namespaced: r["namespaced"].as_bool().unwrap(),
                kind: r["kind"].as_str().unwrap().to_string(),
                api_version: api_version.clone(),
                verbs: r["verbs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect(),
                protobuf: !api_version.contains("example.com"),
            });
        }
    }
    out
}

struct Gen {
    rng: fastrand::Rng,
    /// Real protobuf encodings fetched from the server, to mutate.
    protobuf_samples: Vec<Vec<u8>>,
}

/// A protobuf field with a length-delimited value.
fn proto_field(out: &mut Vec<u8>, number: u8, data: &[u8]) {
    out.push((number << 3) | 2);
    let mut len = data.len();
    loop {
        let b = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
    out.extend_from_slice(data);
}

impl Gen {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.usize(..items.len())]
    }

    fn extreme_number(&mut self) -> Value {
        self.pick(&[
            json!(i64::MAX),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(i32::MAX),
            json!(i32::MIN),
            json!(0),
            json!(-1),
            json!(1e308),
            json!(-1e-308),
            json!(0.5),
        ])
        .clone()
    }

    fn scalar(&mut self) -> Value {
        match self.rng.u8(..8) {
            0 => self.extreme_number(),
            1 => json!(self.rng.bool()),
            2 => Value::Null,
            3 => json!("x".repeat(self.rng.usize(..300))),
            4 => json!(self.pick(&[
                "",
                "-",
                "Node",
                "Pod",
                "v1",
                "Gang",
                "9223372036854775807s",
                "\u{0}",
                "ǝ",
                "../.."
            ])),
            5 => json!(format!("{}", self.rng.u64(..))),
            6 => json!([]),
            _ => json!({}),
        }
    }

    /// A random JSON value up to `depth` levels deep.
    fn value(&mut self, depth: u32) -> Value {
        if depth == 0 || self.rng.u8(..3) == 0 {
            return self.scalar();
        }
        let keys = [
            "metadata",
            "spec",
            "status",
            "name",
            "namespace",
            "labels",
            "annotations",
            "finalizers",
            "ownerReferences",
            "uid",
            "resourceVersion",
            "generation",
            "deletionTimestamp",
            "containers",
            "image",
            "nodeName",
            "schedulingPolicy",
            "gang",
            "minCount",
            "minGroupCount",
            "basic",
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "value",
            "data",
            "target",
            "kind",
            "apiVersion",
            "versions",
            "schema",
            "template",
            "priority",
            "priorityClassName",
            "replicas",
            "x-unknown",
        ];
        if self.rng.bool() {
            let n = self.rng.usize(..5);
            Value::Array((0..n).map(|_| self.value(depth - 1)).collect())
        } else {
            let n = self.rng.usize(..6);
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                let k = self.pick(&keys).to_string();
                m.insert(k, self.value(depth - 1));
            }
            Value::Object(m)
        }
    }

    /// A plausible object of `r`'s kind with random parts replaced (half of them left valid).
    fn object(&mut self, r: &Served, name: &str) -> Value {
        let mut obj = json!({"apiVersion": r.api_version, "kind": r.kind, "metadata": {"name": name}});
        if self.rng.bool()
            && let (Value::Object(o), Value::Object(t)) = (&mut obj, valid(&r.kind, name))
        {
            o.extend(t);
            if self.rng.bool() {
                return obj;
            }
        }
        let templates = [
            json!({"spec": {"containers": [{"name": "c", "image": "i"}]}}),
            json!({"data": {"a": "b"}}),
            json!({"value": 5}),
            json!({"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}}}),
            json!({"target": {"kind": "Node", "name": "node-b0-r0-n0"}}),
        ];
        if let (Value::Object(o), Value::Object(t)) = (&mut obj, self.pick(&templates).clone()) {
            o.extend(t);
        }
        for _ in 0..self.rng.usize(..4) {
            let v = self.value(4);
            let path = ["spec", "metadata", "status", "data"];
            let at = *self.pick(&path);
            let key = self
                .pick(&[
                    "containers",
                    "labels",
                    "x",
                    "finalizers",
                    "minCount",
                    "nodeName",
                    "value",
                ])
                .to_string();
            match obj.get_mut(at) {
                Some(Value::Object(m)) => {
                    m.insert(key, v);
                }
                _ => obj[at] = v,
            }
        }
        obj
    }

    fn body(&mut self, r: &Served, name: &str) -> Vec<u8> {
        match self.rng.u8(..10) {
            0 => {
                let mut b = serde_json::to_vec(&self.object(r, name)).unwrap();
                let cut = self.rng.usize(..b.len().max(1));
                b.truncate(cut);
                b
            }
            1 => vec![0xff, 0xfe, b'{', 0x80],
            2 => format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(),
            3 => serde_json::to_vec(&self.value(6)).unwrap(),
            4 => b"a: [unclosed\n  - {".to_vec(),
            _ => serde_json::to_vec(&self.object(r, name)).unwrap(),
        }
    }

    /// A protobuf body: a real encoding mutated or cut, or an envelope naming the resource's kind around
    /// random or empty bytes.
    fn protobuf_body(&mut self, r: &Served) -> Vec<u8> {
        if !self.protobuf_samples.is_empty() && self.rng.bool() {
            let mut b = self.pick(&self.protobuf_samples.clone()).clone();
            match self.rng.u8(..3) {
                0 => {
                    let cut = self.rng.usize(..b.len().max(1));
                    b.truncate(cut);
                }
                _ => {
                    for _ in 0..self.rng.usize(1..8) {
                        let i = self.rng.usize(..b.len().max(1));
                        if let Some(x) = b.get_mut(i) {
                            *x = self.rng.u8(..);
                        }
                    }
                }
            }
            return b;
        }
        let mut type_meta = Vec::new();
        proto_field(&mut type_meta, 1, r.api_version.as_bytes());
        proto_field(&mut type_meta, 2, r.kind.as_bytes());
        let raw: Vec<u8> = (0..self.rng.usize(..64)).map(|_| self.rng.u8(..)).collect();
        let mut b = b"k8s\0".to_vec();
        proto_field(&mut b, 1, &type_meta);
        proto_field(&mut b, 2, &raw);
        b
    }

    fn patch(&mut self) -> (&'static str, Vec<u8>) {
        let types = [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ];
        let ct = *self.pick(&types);
        let body = if ct == "application/json-patch+json" && self.rng.bool() {
            let ops: Vec<Value> = (0..self.rng.usize(..4))
                .map(|_| {
                    json!({"op": self.pick(&["add", "remove", "replace", "move", "copy", "test", "bogus"]),
                        "path": self.pick(&["/metadata/labels/a", "/spec", "/", "", "/metadata/name", "/status/x/y/z", "/~1/~0"]),
                        "from": "/metadata", "value": self.value(3)})
                })
                .collect();
            serde_json::to_vec(&ops).unwrap()
        } else {
            serde_json::to_vec(&self.value(5)).unwrap()
        };
        (ct, body)
    }

    fn query(&mut self) -> String {
        let long = "z".repeat(300);
        let params = [
            ("limit", vec!["1", "0", "-1", "18446744073709551616", "x"]),
            ("continue", vec!["1-1", "0-18446744073709551615", "garbage", "%00", ""]),
            ("labelSelector", vec!["a=b", "a in (b", "!!", "a,b", "x notin ()"]),
            (
                "fieldSelector",
                vec!["metadata.name=a", "spec.nodeName=", "bogus=1", "a==b==c"],
            ),
            ("resourceVersion", vec!["0", "1", "18446744073709551615", "-5", "abc"]),
            ("resourceVersionMatch", vec!["Exact", "NotOlderThan", "Nope"]),
            ("timeoutSeconds", vec!["0", "1", "18446744073709551615", "-1"]),
            (
                "gracePeriodSeconds",
                vec!["0", "9223372036854775807", "-9223372036854775808", "x"],
            ),
            (
                "propagationPolicy",
                vec!["Foreground", "Orphan", "Background", "Sideways"],
            ),
            ("dryRun", vec!["All", "Nope"]),
            ("fieldManager", vec!["m", "", long.as_str()]),
            ("fieldValidation", vec!["Strict", "Warn", "Ignore", "Maybe"]),
            ("force", vec!["true", "false"]),
            ("allowWatchBookmarks", vec!["true"]),
            ("sendInitialEvents", vec!["true", "false"]),
        ];
        let mut parts = Vec::new();
        let n = if self.rng.bool() { 0 } else { self.rng.usize(1..4) };
        for _ in 0..n {
            let (k, vs) = self.pick(&params);
            let v = self.pick(vs).to_string();
            parts.push(format!(
                "{k}={}",
                v.replace(' ', "%20")
                    .replace('(', "%28")
                    .replace(')', "%29")
                    .replace('!', "%21")
            ));
        }
        parts.join("&")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_survives_hostile_requests() {
    let mut tried = 0usize;
    let mut codes: BTreeMap<u16, usize> = BTreeMap::new();
    for seed in SEEDS {
        let c = crate::common::cluster().await;
        let served = discover(&c).await;
        assert!(served.len() >= 15, "{served:?}");
        let mut samples = Vec::new();
        for path in [
            "/api/v1/namespaces/default",
            "/api/v1/nodes/node-b0-r0-n0",
            "/api/v1/namespaces/default/pods",
        ] {
            let accept = [("Accept", "application/vnd.kubernetes.protobuf")];
            let (code, body) = crate::common::raw_bytes(&c, "GET", path, &accept, b"").await.unwrap();
            assert_eq!(code, 200, "{path}");
            assert!(body.starts_with(b"k8s\0"), "{path} answered without protobuf");
            samples.push(body);
        }
        let mut g = Gen {
            rng: fastrand::Rng::with_seed(seed),
            protobuf_samples: samples,
        };
        for i in 0..REQUESTS {
            let r = g.pick(&served).clone();
            let name = g
                .pick(&["a", "b", "node-b0-r0-n0", "default", "Bad_Name", "kube-system"])
                .to_string();
            let ns = g.pick(&["default", "default", "kube-system", "missing"]).to_string();
            let collection = if r.namespaced {
                format!("{}/namespaces/{ns}/{}", r.base, r.plural)
            } else {
                format!("{}/{}", r.base, r.plural)
            };
            let item = format!("{collection}/{name}");
            let sub = g
                .pick(&[
                    "",
                    "",
                    "",
                    "/status",
                    "/binding",
                    "/eviction",
                    "/finalize",
                    "/scale",
                    "/log",
                    "/bogus",
                ])
                .to_string();
            let query = g.query();
            let with_query = |p: &str| {
                if query.is_empty() {
                    p.to_string()
                } else {
                    format!("{p}?{query}")
                }
            };
            let json = ("Content-Type", "application/json");
            let protobuf = ("Content-Type", "application/vnd.kubernetes.protobuf");
            let accept_protobuf = ("Accept", "application/vnd.kubernetes.protobuf, application/json");
            let (method, path, headers, body): (&str, String, Vec<(&str, &str)>, Vec<u8>) = match g.rng.u8(..11) {
                9 if r.protobuf => (
                    "POST",
                    with_query(&collection),
                    vec![protobuf, accept_protobuf],
                    g.protobuf_body(&r),
                ),
                10 => (
                    "GET",
                    with_query(&format!("{item}{sub}")),
                    vec![accept_protobuf],
                    vec![],
                ),
                0 => ("GET", with_query(&collection), vec![], vec![]),
                1 => ("GET", with_query(&format!("{item}{sub}")), vec![], vec![]),
                2 => ("POST", with_query(&collection), vec![json], g.body(&r, &name)),
                3 => (
                    "POST",
                    with_query(&format!("{item}{sub}")),
                    vec![json],
                    g.body(&r, &name),
                ),
                4 => (
                    "PUT",
                    with_query(&format!("{item}{sub}")),
                    vec![json],
                    g.body(&r, &name),
                ),
                5 => {
                    let (ct, body) = g.patch();
                    (
                        "PATCH",
                        with_query(&format!("{item}{sub}")),
                        vec![("Content-Type", ct)],
                        body,
                    )
                }
                6 => ("DELETE", with_query(&item), vec![json], g.body(&r, &name)),
                // Deleting every namespace at once would leave little to exercise afterwards.
                7 if r.plural != "namespaces" => ("DELETE", with_query(&collection), vec![], vec![]),
                7 => ("GET", with_query(&collection), vec![], vec![]),
                _ => {
                    // A short watch: only its status line is read.
                    let p = format!("{collection}?watch=true&timeoutSeconds=1&{query}");
                    let code = crate::common::raw_status(&c, &p)
                        .await
                        .expect("the watch got an answer");
                    tried += 1;
                    *codes.entry(code).or_default() += 1;
                    assert!(code < 500, "seed {seed} request {i}: GET {p} answered {code}");
                    continue;
                }
            };
            let answer = crate::common::raw(&c, method, &path, &headers, &body).await;
            let (code, text) = answer.unwrap_or_else(|| panic!("seed {seed} request {i}: {method} {path}: no answer"));
            tried += 1;
            *codes.entry(code).or_default() += 1;
            assert!(
                code < 500,
                "seed {seed} request {i}: {method} {path} answered {code}: {text}\nbody: {}",
                String::from_utf8_lossy(&body).chars().take(500).collect::<String>()
            );
        }
        assert!(
            c.task_failures().is_empty(),
            "background tasks died: {:?}",
            c.task_failures()
        );
        check_invariants(&c, &served).await;
        c.shutdown().await;
    }
    eprintln!("{tried} requests, answers by code: {codes:?}");
}

/// Everything stored decodes through its type, and every list agrees with its items' resourceVersions.
async fn check_invariants(c: &DevCluster, served: &[Served]) {
    use k8s_openapi::api;
    let client = c.client();
    macro_rules! decodes {
        ($t:ty) => {{
            let all: kube::Api<$t> = kube::Api::all(client.clone());
            let list = all.list(&Default::default()).await.expect(stringify!($t));
            let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
            for o in &list.items {
                let rv: u64 = kube::ResourceExt::resource_version(o).unwrap().parse().unwrap();
                assert!(rv <= list_rv, "{} newer than its list", stringify!($t));
            }
        }};
    }
    decodes!(api::core::v1::Namespace);
    decodes!(api::core::v1::Node);
    decodes!(api::core::v1::Pod);
    decodes!(api::core::v1::Event);
    decodes!(api::core::v1::ConfigMap);
    decodes!(api::core::v1::Secret);
    decodes!(api::core::v1::ServiceAccount);
    decodes!(api::events::v1::Event);
    decodes!(api::coordination::v1::Lease);
    decodes!(api::batch::v1::Job);
    decodes!(api::scheduling::v1::PriorityClass);
    decodes!(api::scheduling::v1alpha3::Workload);
    decodes!(api::scheduling::v1alpha3::PodGroup);
    decodes!(api::scheduling::v1alpha3::CompositePodGroup);
    decodes!(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition);
    decodes!(api::core::v1::Service);
    decodes!(api::discovery::v1::EndpointSlice);
    decodes!(api::core::v1::ResourceQuota);
    decodes!(api::apps::v1::Deployment);
    decodes!(api::apps::v1::ReplicaSet);
    decodes!(api::apps::v1::StatefulSet);
    decodes!(api::apps::v1::DaemonSet);
    decodes!(api::batch::v1::CronJob);
    decodes!(api::rbac::v1::Role);
    decodes!(api::rbac::v1::RoleBinding);
    decodes!(api::rbac::v1::ClusterRole);
    decodes!(api::rbac::v1::ClusterRoleBinding);
    decodes!(api::core::v1::PersistentVolume);
    decodes!(api::core::v1::PersistentVolumeClaim);
    decodes!(api::storage::v1::StorageClass);
    decodes!(api::storage::v1::CSIDriver);
    decodes!(api::storage::v1::CSINode);
    decodes!(api::policy::v1::PodDisruptionBudget);
    decodes!(api::resource::v1::DeviceClass);
    decodes!(api::resource::v1::ResourceClaim);
    decodes!(api::resource::v1::ResourceClaimTemplate);
    decodes!(api::resource::v1::ResourceSlice);
    // Every served resource still lists.
    for r in served.iter().filter(|r| r.verbs.iter().any(|v| v == "list")) {
        let (code, text) = crate::common::raw(c, "GET", &format!("{}/{}", r.base, r.plural), &[], b"")
            .await
            .unwrap();
        assert_eq!(code, 200, "{}: {text}", r.plural);
    }
    // The default namespaces survive or are being recreated only by their owner: kube-system and default
    // may be deleted by a request, like upstream, but the server itself still answers.
    let (code, _) = crate::common::raw(c, "GET", "/version", &[], b"").await.unwrap();
    assert_eq!(code, 200);
}
