//! The JobSet CRD's conversion webhook (`jobset.x-k8s.io` v1alpha2 <-> v1): `POST /convert` over HTTPS,
//! answering kube-apiserver's `ConversionReview` with [`kwas_api_types::jobset::v1::review`], as the JobSet
//! project's manager registers `conversion.Webhook` at `/convert`.
//!
//! - **Certificates** come from a directory holding `tls.crt` and `tls.key` (PEM; a mounted
//!   `kubernetes.io/tls` Secret, as controller-runtime's `CertDir`), and are used again when either file's
//!   content changes (cert-manager rotates the Secret in place), checked at each TLS handshake (two small
//!   reads; kube-apiserver keeps its connections). The CRD's
//!   `caBundle` must trust them: `deploy/controllers/webhook.yaml` has cert-manager issue the certificate
//!   and inject its CA into the CRD.
//! - Every replica serves it, leader or not (kube-apiserver calls whichever the Service picks), from the
//!   start, before leader election.
//! - Requests are bounded: bodies up to [`MAX_BODY_BYTES`] (kube-apiserver sends a list's objects in one
//!   review), a malformed body gets `400` with the decoding error, as controller-runtime answers.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use kube::core::conversion::ConversionReview;
use parking_lot::Mutex;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};
use tracing::{debug, info, warn};

/// The largest `ConversionReview` body served.
pub const MAX_BODY_BYTES: usize = 64 << 20;

/// The webhook server's settings.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Where to listen (HTTPS).
    pub addr: SocketAddr,
    /// The directory with `tls.crt` and `tls.key`.
    pub cert_dir: PathBuf,
}

/// Why the webhook server could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The certificate or key could not be read or used.
    #[error("{path}: {message}")]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The TLS settings were refused.
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

/// The webhook's routes (plain HTTP; [`serve`] puts them behind TLS).
pub fn router() -> Router {
    Router::new()
        .route("/convert", post(convert))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

async fn convert(body: Bytes) -> Response {
    let review: ConversionReview = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            debug!(error = %e, "malformed ConversionReview");
            return (
                StatusCode::BAD_REQUEST,
                format!("could not decode the ConversionReview: {e}"),
            )
                .into_response();
        }
    };
    let answer = tokio::task::spawn_blocking(move || kwas_api_types::jobset::v1::review(review)).await;
    match answer.ok().and_then(|a| serde_json::to_vec(&a).ok()) {
        Some(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        None => (StatusCode::INTERNAL_SERVER_ERROR, "conversion failed").into_response(),
    }
}

/// Binds `config.addr` and serves [`router`] over TLS until `shutdown` resolves; returns once listening,
/// with the bound address.
pub async fn serve(
    config: &WebhookConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr, WebhookError> {
    let resolver = Arc::new(CertFiles::load(&config.cert_dir)?);
    let tls = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    let mut tls = tls;
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| WebhookError::Bind {
            addr: config.addr,
            source,
        })?;
    let local = listener.local_addr().map_err(|source| WebhookError::Bind {
        addr: config.addr,
        source,
    })?;
    info!(addr = %local, "serving the conversion webhook (/convert)");
    let app = router();
    tokio::spawn(async move {
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = &mut shutdown => break,
            };
            let (stream, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    warn!(error = %e, "accepting a webhook connection");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                let handshake = tokio::time::timeout(std::time::Duration::from_secs(10), acceptor.accept(stream)).await;
                let tls = match handshake {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
                let service = TowerToHyperService::new(app);
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
                if let Err(e) = conn {
                    debug!(%peer, error = %e, "webhook connection ended with an error");
                }
            });
        }
    });
    Ok(local)
}

/// `tls.crt` / `tls.key` of a directory, used again when either changes.
#[derive(Debug)]
struct CertFiles {
    cert: PathBuf,
    key: PathBuf,
    current: Mutex<(Vec<u8>, Vec<u8>, Arc<CertifiedKey>)>,
}

impl CertFiles {
    fn load(dir: &Path) -> Result<Self, WebhookError> {
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        let (cert_pem, key_pem) = (read(&cert)?, read(&key)?);
        let loaded = parse_pair(&cert, &cert_pem, &key, &key_pem)?;
        Ok(CertFiles {
            current: Mutex::new((cert_pem, key_pem, Arc::new(loaded))),
            cert,
            key,
        })
    }
}

fn read(path: &Path) -> Result<Vec<u8>, WebhookError> {
    std::fs::read(path).map_err(|e| WebhookError::Certificate {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn parse_pair(cert: &Path, cert_pem: &[u8], key: &Path, key_pem: &[u8]) -> Result<CertifiedKey, WebhookError> {
    let bad = |path: &Path, message: String| WebhookError::Certificate {
        path: path.to_path_buf(),
        message,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| bad(cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(bad(cert, "no certificate in the file".into()));
    }
    let der = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad(key, e.to_string()))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&der).map_err(|e| bad(key, e.to_string()))?;
    Ok(CertifiedKey::new(certs, signing))
}

impl ResolvesServerCert for CertFiles {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut current = self.current.lock();
        let (Ok(cert_pem), Ok(key_pem)) = (std::fs::read(&self.cert), std::fs::read(&self.key)) else {
            return Some(current.2.clone());
        };
        if (cert_pem.as_slice(), key_pem.as_slice()) != (current.0.as_slice(), current.1.as_slice()) {
            // Rotated: use the new pair once it parses; keep serving the previous one if not.
            match parse_pair(&self.cert, &cert_pem, &self.key, &key_pem) {
                Ok(loaded) => {
                    info!(cert = %self.cert.display(), "webhook certificate reloaded");
                    *current = (cert_pem, key_pem, Arc::new(loaded));
                }
                Err(e) => {
                    warn!(error = %e, "webhook certificate changed but cannot be loaded; serving the previous one")
                }
            }
        }
        Some(current.2.clone())
    }
}

#[cfg(test)]
mod tests;
