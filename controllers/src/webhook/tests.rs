#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::*;

/// A self-signed certificate for `localhost` / 127.0.0.1 written as `tls.crt` / `tls.key` into `dir`;
/// returns its DER.
fn write_cert(dir: &Path) -> Vec<u8> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), cert.key_pair.serialize_pem()).unwrap();
    cert.cert.der().to_vec()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kwas-webhook-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A kube client (hyper-rustls, as kube-apiserver's own HTTPS client would verify) trusting `ca`.
fn client(addr: SocketAddr, ca: Vec<u8>) -> kube::Client {
    let mut config = kube::Config::new(format!("https://{addr}").parse().unwrap());
    config.root_cert = Some(vec![ca]);
    kube::Client::try_from(config).unwrap()
}

async fn post(client: &kube::Client, body: Vec<u8>) -> Result<String, kube::Error> {
    let req = axum::http::Request::post("/convert")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    client.request_text(req).await
}

fn review_request() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "0000-1111",
            "desiredAPIVersion": "jobset.x-k8s.io/v1",
            "objects": [{
                "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "js", "namespace": "default"},
                "spec": {"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": []}
            }]
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn converts_over_https_and_follows_a_rotated_certificate() {
    let dir = temp_dir("rotate");
    let first = write_cert(&dir);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let addr = serve(
        &WebhookConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            cert_dir: dir.clone(),
        },
        async move {
            let _ = stopped.await;
        },
    )
    .await
    .unwrap();

    let answer: Value =
        serde_json::from_str(&post(&client(addr, first.clone()), review_request()).await.unwrap()).unwrap();
    assert_eq!(answer["kind"], "ConversionReview");
    assert_eq!(answer["response"]["uid"], "0000-1111");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let converted = &answer["response"]["convertedObjects"][0];
    assert_eq!(converted["apiVersion"], "jobset.x-k8s.io/v1");
    assert_eq!(
        converted["metadata"]["annotations"]["jobset.sigs.k8s.io/startup-policy"],
        "eyJzdGFydHVwUG9saWN5T3JkZXIiOiJJbk9yZGVyIn0="
    );

    // A malformed body is a 400 with the decoding error.
    let e = post(&client(addr, first.clone()), b"{not json".to_vec())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("could not decode the ConversionReview"), "{e}");

    // cert-manager rotates the Secret: the next handshake serves the new certificate.
    let second = write_cert(&dir);
    let answer = post(&client(addr, second), review_request()).await.unwrap();
    assert!(answer.contains("\"Success\""), "{answer}");
    // A client trusting only the old certificate is refused.
    assert!(post(&client(addr, first), review_request()).await.is_err());
    let _ = stop.send(());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn missing_or_bad_certificates_fail_at_start() {
    let dir = temp_dir("missing");
    let config = WebhookConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        cert_dir: dir.clone(),
    };
    let e = serve(&config, std::future::pending()).await.unwrap_err();
    assert!(e.to_string().contains("tls.crt"), "{e}");
    std::fs::write(dir.join("tls.crt"), "not a pem").unwrap();
    std::fs::write(dir.join("tls.key"), "not a pem").unwrap();
    let e = serve(&config, std::future::pending()).await.unwrap_err();
    assert!(e.to_string().contains("tls.crt"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
