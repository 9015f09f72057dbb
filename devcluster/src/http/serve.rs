//! The listener: accepts connections and serves HTTP/1.1 on each, with the limits that keep a flood of
//! clients from exhausting the process. At most [`Limits::max_connections`] connections are open at once
//! (further ones are closed as soon as they are accepted; clients retry), a client must send a request's
//! headers within [`Limits::header_read_timeout`] (slow or idle connections are closed), and shutdown waits
//! a bounded time for open connections. A handler may close its request's connection ([`Connection`]).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::cluster::{Shared, stopped};

/// Connection limits.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Open connections at once.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers (also how long an idle keep-alive
    /// connection stays open).
    pub header_read_timeout: Duration,
    /// How long shutdown waits for open connections.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(30),
            drain: Duration::from_secs(5),
        }
    }
}

/// The connection a request came on, in the request's extensions: a handler can close it (a watch whose
/// client stopped reading, so the bytes waiting for that client are freed with its socket).
#[derive(Debug, Clone)]
pub(crate) struct Connection(Arc<tokio::sync::Notify>);

impl Connection {
    /// Closes the connection now: whatever it was sending is dropped.
    pub(crate) fn close(&self) {
        self.0.notify_one();
    }
}

/// Serves `app` on `listener` until the cluster shuts down.
pub(crate) async fn serve(listener: TcpListener, app: Router, shared: Arc<Shared>, limits: Limits) {
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = shared.shutdown_signal();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped(&mut stop) => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::warn!(
                limit = limits.max_connections,
                "too many open connections; closing a new one"
            );
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let close = Arc::new(tokio::sync::Notify::new());
        let connection = Connection(close.clone());
        let service = TowerToHyperService::new(app.clone().map_request(move |req: hyper::Request<Incoming>| {
            let mut req = req.map(Body::new);
            req.extensions_mut().insert(connection.clone());
            req
        }));
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            tokio::select! {
                ended = conn => {
                    if let Err(e) = ended {
                        tracing::trace!(error = %e, "connection ended");
                    }
                }
                _ = close.notified() => tracing::debug!("connection closed by its handler"),
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain, graceful.shutdown()).await.is_err() {
        tracing::debug!("connections still open at shutdown");
    }
}
