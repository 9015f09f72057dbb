//! The admin server: `/healthz` (and `/livez`), `/readyz` and `/metrics`, from a [`Health`] and a metrics
//! encoder.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::task::JoinHandle;

use crate::health::Health;

/// Renders the process's metrics in the OpenMetrics text format.
pub type MetricsEncoder = Arc<dyn Fn() -> Result<String, std::fmt::Error> + Send + Sync>;

#[derive(Clone)]
struct AdminState {
    health: Arc<Health>,
    metrics: MetricsEncoder,
}

async fn healthz(State(s): State<AdminState>) -> impl IntoResponse {
    if s.health.healthy() {
        (StatusCode::OK, "ok".to_string())
    } else {
        let why = s
            .health
            .failure()
            .unwrap_or_else(|| "the main loop stalled".to_string());
        (StatusCode::SERVICE_UNAVAILABLE, why)
    }
}

async fn readyz(State(s): State<AdminState>) -> impl IntoResponse {
    if s.health.ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
}

async fn metrics(State(s): State<AdminState>) -> impl IntoResponse {
    match (s.metrics)() {
        Ok(text) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        ),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            e.to_string(),
        ),
    }
}

/// The admin routes.
pub fn router(health: Arc<Health>, metrics: MetricsEncoder) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(self::metrics))
        .with_state(AdminState { health, metrics })
}

/// Binds `addr` and serves the admin routes until `stop` resolves. Returns the bound address (port 0
/// picks a free one) and the server task.
pub async fn serve(
    addr: SocketAddr,
    health: Arc<Health>,
    metrics: MetricsEncoder,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    health.set_admin_addr(bound);
    let app = router(health, metrics);
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop).await {
            tracing::warn!(error = %e, "admin server stopped");
        }
    });
    tracing::info!(%bound, "admin server listening");
    Ok((bound, task))
}
