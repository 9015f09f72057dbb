//! Packaging an operator deploys: `scripts/build-image.sh` turns the kwas binary into an OCI image archive
//! (checked here blob by blob, digest by digest, against the OCI image layout and Containerfile), the
//! image runs from its own filesystem as user 65532, the manifests in `deploy/` name that image, and
//! every kustomization in `deploy/` passes a server-side dry run on `kwas dev` driven by kubectl 1.37.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::Path;
use std::process::Command;

use crate::common::{kubectl, kubectl_stdin, ok, repo};
use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_kwas");
const EPOCH: u64 = 1_700_000_000;

fn sha256(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The OCI architecture of this machine.
fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Runs `scripts/build-image.sh` on the test's kwas binary; its stdout.
fn build_image(output: &Path, ca_bundle: &Path) -> String {
    let out = Command::new("bash")
        .arg(repo().join("scripts/build-image.sh"))
        .args(["--binary", BINARY, "--output"])
        .arg(output)
        .arg("--ca-certificates")
        .arg(ca_bundle)
        .args(["--compression-level", "1"])
        .env("SOURCE_DATE_EPOCH", EPOCH.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build-image.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every entry of a tar stream: path -> (header, content).
fn entries(reader: impl std::io::Read) -> BTreeMap<String, (tar::Header, Vec<u8>)> {
    let mut archive = tar::Archive::new(reader);
    let mut out = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let header = entry.header().clone();
        let mut content = Vec::new();
        entry.read_to_end(&mut content).unwrap();
        assert!(out.insert(path.clone(), (header, content)).is_none(), "{path} twice");
    }
    out
}

/// The blob a descriptor points at, after checking its digest and size.
fn blob<'a>(archive: &'a BTreeMap<String, (tar::Header, Vec<u8>)>, descriptor: &Value) -> &'a [u8] {
    let digest = descriptor["digest"].as_str().unwrap();
    let hex = digest.strip_prefix("sha256:").unwrap();
    let (_, content) = archive
        .get(&format!("blobs/sha256/{hex}"))
        .unwrap_or_else(|| panic!("no blob {digest}"));
    assert_eq!(sha256(content), digest, "blob content does not match its digest");
    assert_eq!(descriptor["size"], json!(content.len()), "{digest}: size");
    content
}

/// Containerfile's final stage: `FROM`, `ARG` defaults, labels (with `${ARG}` substituted), `USER`,
/// `ENTRYPOINT`.
struct FinalStage {
    from: String,
    args: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    user: String,
    entrypoint: Value,
}

fn containerfile() -> FinalStage {
    let text = std::fs::read_to_string(repo().join("Containerfile")).unwrap();
    let joined = text.replace("\\\n", " ");
    let lines: Vec<&str> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let start = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
    let mut stage = FinalStage {
        from: lines[start]["FROM ".len()..].trim().to_string(),
        args: BTreeMap::new(),
        labels: BTreeMap::new(),
        user: String::new(),
        entrypoint: Value::Null,
    };
    for line in &lines[start + 1..] {
        let (keyword, rest) = line.split_once(' ').unwrap();
        match keyword {
            "ARG" => {
                let (name, default) = rest.split_once('=').unwrap();
                stage.args.insert(name.into(), default.into());
            }
            "LABEL" => {
                // key="value" pairs.
                let mut rest = rest.trim();
                while let Some((key, tail)) = rest.split_once("=\"") {
                    let (value, tail) = tail.split_once('"').unwrap();
                    let mut value = value.to_string();
                    for (name, default) in &stage.args {
                        value = value.replace(&format!("${{{name}}}"), default);
                    }
                    stage.labels.insert(key.trim().into(), value);
                    rest = tail.trim();
                }
            }
            "USER" => stage.user = rest.trim().into(),
            "ENTRYPOINT" => stage.entrypoint = serde_json::from_str(rest).unwrap(),
            _ => {}
        }
    }
    stage
}

/// The ELF program interpreter of `path`, if it is dynamically linked (64-bit little-endian ELF).
fn interpreter(path: &str) -> Option<String> {
    let elf = std::fs::read(path).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| usize::try_from(u64::from_le_bytes(elf[o..o + 8].try_into().unwrap())).unwrap();
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54), u16_at(56));
    (0..phnum).find_map(|i| {
        let ph = phoff + i * phentsize;
        (u32::from_le_bytes(elf[ph..ph + 4].try_into().unwrap()) == 3).then(|| {
            let (offset, size) = (u64_at(ph + 8), u64_at(ph + 32));
            String::from_utf8(elf[offset..offset + size].to_vec())
                .unwrap()
                .trim_end_matches('\0')
                .to_string()
        })
    })
}

#[test]
fn the_image_archive_is_an_oci_image_of_the_binary_as_containerfile_describes_it() {
    let dir = tempfile::tempdir().unwrap();
    let ca_bundle = dir.path().join("ca.crt");
    std::fs::write(
        &ca_bundle,
        "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let output = dir.path().join("kwas-image.tar");
    let printed = build_image(&output, &ca_bundle);
    assert!(
        printed.starts_with(&format!(
            "image     ghcr.io/kwas-dev/kwas:latest (linux/{})",
            host_architecture()
        )),
        "{printed}"
    );
    let bytes = std::fs::read(&output).unwrap();
    let archive = entries(bytes.as_slice());
    for (path, (header, _)) in &archive {
        assert_eq!(header.mtime().unwrap(), EPOCH, "{path}: mtime");
    }

    // The layout.
    let json_of = |name: &str| -> Value { serde_json::from_slice(&archive[name].1).unwrap() };
    assert_eq!(json_of("oci-layout"), json!({"imageLayoutVersion": "1.0.0"}));
    let index = json_of("index.json");
    assert_eq!(index["schemaVersion"], 2);
    assert_eq!(index["mediaType"], "application/vnd.oci.image.index.v1+json");
    let descriptors = index["manifests"].as_array().unwrap();
    assert_eq!(descriptors.len(), 1);
    let descriptor = &descriptors[0];
    assert_eq!(descriptor["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(
        descriptor["platform"],
        json!({"architecture": host_architecture(), "os": "linux"})
    );
    // What ctr (kind load image-archive), docker load and skopeo name the image by.
    assert_eq!(
        descriptor["annotations"],
        json!({
            "io.containerd.image.name": "ghcr.io/kwas-dev/kwas:latest",
            "org.opencontainers.image.ref.name": "latest",
        })
    );

    // index -> manifest -> config and layer, every digest and size checked.
    let manifest: Value = serde_json::from_slice(blob(&archive, descriptor)).unwrap();
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(manifest["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let config: Value = serde_json::from_slice(blob(&archive, &manifest["config"])).unwrap();
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0]["mediaType"], "application/vnd.oci.image.layer.v1.tar+gzip");
    let compressed = blob(&archive, &layers[0]);
    let mut layer = Vec::new();
    flate2::read::GzDecoder::new(compressed)
        .read_to_end(&mut layer)
        .unwrap();

    // The config: Containerfile's final stage.
    let stage = containerfile();
    assert_eq!(stage.from, "scratch");
    assert_eq!(
        stage.args["VERSION"],
        env!("CARGO_PKG_VERSION"),
        "Containerfile's ARG VERSION"
    );
    assert_eq!(stage.user, "65532:65532");
    assert_eq!(stage.entrypoint, json!(["/kwas"]));
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], host_architecture());
    assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    assert_eq!(config["config"]["User"], json!(stage.user));
    assert_eq!(config["config"]["Entrypoint"], stage.entrypoint);
    let labels: BTreeMap<String, String> = serde_json::from_value(config["config"]["Labels"].clone()).unwrap();
    assert_eq!(labels, stage.labels);
    for (key, value) in [
        ("title", "kwas"),
        ("source", env!("CARGO_PKG_REPOSITORY")),
        ("licenses", env!("CARGO_PKG_LICENSE")),
        ("version", env!("CARGO_PKG_VERSION")),
    ] {
        assert_eq!(labels[&format!("org.opencontainers.image.{key}")], value, "{key}");
    }
    assert!(!labels["org.opencontainers.image.description"].is_empty());
    assert_eq!(config["rootfs"]["type"], "layers");
    assert_eq!(config["rootfs"]["diff_ids"], json!([sha256(&layer)]));

    // docker save's index, for docker load.
    let hex = |d: &Value| {
        format!(
            "blobs/sha256/{}",
            d["digest"].as_str().unwrap().strip_prefix("sha256:").unwrap()
        )
    };
    assert_eq!(
        json_of("manifest.json"),
        json!([{"Config": hex(&manifest["config"]), "RepoTags": ["ghcr.io/kwas-dev/kwas:latest"], "Layers": [hex(&layers[0])]}])
    );
    // No blob that nothing references.
    let blobs: BTreeSet<&String> = archive
        .keys()
        .filter(|p| p.starts_with("blobs/sha256/") && p.len() > 13)
        .collect();
    assert_eq!(blobs.len(), 3, "{blobs:?}");

    // The layer: /kwas as built, root-owned and executable; the nonroot user; the CA bundle; for a
    // dynamically linked binary its interpreter and libraries.
    let files = entries(layer.as_slice());
    let (kwas_header, kwas) = &files["kwas"];
    assert!(kwas_header.entry_type().is_file());
    assert_eq!(kwas_header.mode().unwrap(), 0o755);
    assert_eq!((kwas_header.uid().unwrap(), kwas_header.gid().unwrap()), (0, 0));
    assert!(*kwas == std::fs::read(BINARY).unwrap(), "/kwas is the binary");
    let passwd = String::from_utf8(files["etc/passwd"].1.clone()).unwrap();
    assert!(passwd.contains("nonroot:x:65532:65532:"), "{passwd}");
    assert_eq!(
        files["etc/ssl/certs/ca-certificates.crt"].1,
        std::fs::read(&ca_bundle).unwrap()
    );
    let mut names: Vec<&String> = files.keys().collect();
    names.sort();
    assert!(names.windows(2).all(|w| w[0] < w[1]));
    if let Some(interpreter) = interpreter(BINARY) {
        let name = interpreter.trim_start_matches('/');
        assert!(files.contains_key(name), "the interpreter {interpreter} in {names:?}");
        assert!(printed.contains("+ "), "{printed}");
        for lib in printed.lines().filter_map(|l| l.trim().strip_prefix("+ ")) {
            assert!(files.contains_key(lib.trim_start_matches('/')), "{lib} in {names:?}");
        }
    } else {
        assert!(printed.contains("(static)"), "{printed}");
        let expected = [
            "etc",
            "etc/group",
            "etc/passwd",
            "etc/ssl",
            "etc/ssl/certs",
            "etc/ssl/certs/ca-certificates.crt",
            "kwas",
        ];
        assert_eq!(names, expected);
    }

    // Deterministic: the same inputs give the same bytes.
    let again = dir.path().join("again.tar");
    build_image(&again, &ca_bundle);
    assert!(std::fs::read(&again).unwrap() == bytes, "two builds differ");

    // The image's filesystem runs the binary as 65532:65532 with nothing else around (a container
    // runtime would add /dev, /proc and the mounts). Needs root for chroot; skipped otherwise.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    if root {
        let rootfs = dir.path().join("rootfs");
        tar::Archive::new(layer.as_slice()).unpack(&rootfs).unwrap();
        let out = Command::new("chroot")
            .args(["--userspec=65532:65532"])
            .arg(&rootfs)
            .args(["/kwas", "--version"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("kwas {}", env!("CARGO_PKG_VERSION"))
        );
    } else {
        eprintln!("not root: the image's filesystem was not run in a chroot");
    }
}

/// The kustomizations under `deploy/`.
fn kustomizations() -> Vec<String> {
    let mut dirs: Vec<String> = std::fs::read_dir(repo().join("deploy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("kustomization.yaml").exists())
        .map(|p| format!("deploy/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    dirs.sort();
    dirs
}

/// `kubectl kustomize DIR` as objects.
fn kustomize(dir: &str) -> Vec<Value> {
    let out = Command::new(kwas_test_tools::kubectl().expect("kubectl 1.37"))
        .args(["kustomize", dir])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_saphyr::from_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap()
}

#[test]
fn the_deploy_manifests_run_the_image_the_script_builds() {
    let script = std::fs::read_to_string(repo().join("scripts/oci-image.py")).unwrap();
    let default_tag = script
        .lines()
        .find_map(|l| l.strip_prefix("DEFAULT_TAG = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap();
    let mut images = BTreeSet::new();
    for dir in kustomizations() {
        for object in kustomize(&dir) {
            let pod = &object["spec"]["template"]["spec"];
            for container in pod["containers"].as_array().into_iter().flatten() {
                images.insert(container["image"].as_str().unwrap().to_string());
                // Containerfile's user, which the pod's securityContext must allow.
                assert_eq!(pod["securityContext"]["runAsUser"], 65532, "{dir}");
                assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true, "{dir}");
                // A loaded archive is used, not pulled again (`:latest` would default to Always).
                assert_eq!(container["imagePullPolicy"], "IfNotPresent", "{dir}");
            }
        }
    }
    assert_eq!(images, BTreeSet::from([default_tag.to_string()]));
}

#[test]
fn every_deploy_kustomization_passes_a_server_side_dry_run() {
    let dev = crate::common::start(&[]);
    // What an operator installs first: the JobSet CRD, the Prometheus Operator's and cert-manager's
    // CRDs (test stand-ins) and, since a dry run creates nothing, the namespace.
    ok(&dev, &["apply", "-f", "crds/jobset.x-k8s.io_jobsets.yaml"]);
    ok(
        &dev,
        &["apply", "-f", "cli/tests/fixtures/prometheus-operator-crds.yaml"],
    );
    ok(&dev, &["apply", "-f", "cli/tests/fixtures/cert-manager-crds.yaml"]);
    ok(
        &dev,
        &[
            "wait",
            "--for=condition=Established",
            "crd/servicemonitors.monitoring.coreos.com",
            "crd/prometheusrules.monitoring.coreos.com",
            "crd/jobsets.jobset.x-k8s.io",
            "crd/issuers.cert-manager.io",
            "crd/certificates.cert-manager.io",
        ],
    );
    ok(&dev, &["apply", "-f", "deploy/scheduler/namespace.yaml"]);

    let dirs = kustomizations();
    assert_eq!(
        dirs,
        [
            "deploy/controllers",
            "deploy/controllers-alongside",
            "deploy/monitoring",
            "deploy/scheduler"
        ]
    );
    let mut kinds = BTreeSet::new();
    for dir in &dirs {
        let (success, stdout, stderr) = kubectl(&dev, &["apply", "--dry-run=server", "-k", dir, "-o", "json"]);
        assert!(success, "kubectl apply --dry-run=server -k {dir}: {stderr}");
        assert!(!stderr.contains("Warning"), "{dir}: {stderr}");
        let list: Value = serde_json::from_str(&stdout).unwrap();
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), kustomize(dir).len(), "{dir}: every object answered");
        for item in items {
            kinds.insert(item["kind"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(
        kinds,
        BTreeSet::from(
            [
                "Certificate",
                "ClusterRole",
                "ClusterRoleBinding",
                "ConfigMap",
                "Deployment",
                "Issuer",
                "Namespace",
                "PrometheusRule",
                "Role",
                "RoleBinding",
                "Service",
                "ServiceAccount",
                "ServiceMonitor"
            ]
            .map(String::from)
        )
    );
    // A dry run persists nothing.
    let left = ok(
        &dev,
        &[
            "get",
            "deployments,services,configmaps,servicemonitors,prometheusrules",
            "-n",
            "kwas-system",
            "-o",
            "name",
        ],
    );
    assert_eq!(left.trim(), "", "{left}");

    // The dry run checks what it is given: the monitoring CRDs reject a malformed rule.
    let (success, _, stderr) = kubectl_stdin(
        &dev,
        &["apply", "--dry-run=server", "-f", "-"],
        Some(
            "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: bad, namespace: kwas-system}\n\
             spec: {groups: [{name: g, rules: [{alert: A}]}]}\n",
        ),
    );
    assert!(
        !success && stderr.contains("spec.groups[0].rules[0].expr: Required value"),
        "{stderr}"
    );
}

/// Every kustomization's Deployments pass arguments the `kwas` binary accepts (an overlay's added flag
/// included): parsed up to a trailing `--help`, which clap answers only once the rest parsed.
#[test]
fn every_deployments_arguments_parse() {
    let mut checked = 0;
    for dir in kustomizations() {
        for object in kustomize(&dir) {
            if object["kind"] != "Deployment" {
                continue;
            }
            for container in object["spec"]["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let mut args: Vec<String> = container["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_string())
                    .collect();
                args.push("--help".into());
                let out = Command::new(env!("CARGO_BIN_EXE_kwas")).args(&args).output().unwrap();
                assert!(
                    out.status.success(),
                    "{dir}: kwas {args:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 3, "the controllers (both installs) and the scheduler");
}
