//! A small HTTP/1 server for `/metrics`, `/healthz` and `/readyz` (hyper, already in the
//! dependency tree for envtest), stopped gracefully with the operator.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::health::Health;
use super::metrics::{Format, Metrics};

/// How long open connections get to finish when the server stops.
const DRAIN: Duration = Duration::from_secs(5);

/// What one listener serves.
#[derive(Clone)]
pub struct Routes {
    /// `/metrics`, when set.
    pub metrics: Option<Arc<Metrics>>,
    /// `/healthz` and `/readyz`, when set.
    pub health: Option<Health>,
}

/// A listener could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {address} for {what}: {source}")]
pub struct BindError {
    /// The address.
    pub address: SocketAddr,
    /// What it was for (`metrics`, `probes`).
    pub what: &'static str,
    /// The error.
    #[source]
    pub source: std::io::Error,
}

/// Binds `address` (port 0 picks a free port; see [`TcpListener::local_addr`]).
pub async fn bind(address: SocketAddr, what: &'static str) -> Result<TcpListener, BindError> {
    TcpListener::bind(address).await.map_err(|source| BindError {
        address,
        what,
        source,
    })
}

/// Serves `routes` on `listener` until `stop` is cancelled, then lets open connections
/// finish (for at most a few seconds).
pub fn serve(listener: TcpListener, routes: Routes, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        loop {
            let (stream, _) = tokio::select! {
                () = stop.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accepting an HTTP connection failed");
                        continue;
                    }
                },
            };
            let routes = routes.clone();
            let service = service_fn(move |request| {
                let routes = routes.clone();
                async move { Ok::<_, Infallible>(handle(&routes, &request)) }
            });
            let connection =
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "HTTP connection ended with an error");
                }
            });
        }
        drop(listener);
        if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
            tracing::debug!("HTTP connections still open after {DRAIN:?}; closing");
        }
    })
}

/// Answers one request.
pub fn handle(routes: &Routes, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    let known = match path {
        "/metrics" => routes.metrics.is_some(),
        "/healthz" | "/livez" | "/readyz" => routes.health.is_some(),
        _ => false,
    };
    if !known {
        return text(StatusCode::NOT_FOUND, "404 page not found\n".into());
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n".into());
    }
    match (path, &routes.metrics, &routes.health) {
        ("/metrics", Some(metrics), _) => {
            let accept = request.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
            let format = Format::negotiate(accept);
            match metrics.encode(format) {
                Ok(body) => with_type(StatusCode::OK, body, format.content_type()),
                Err(error) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("encoding metrics: {error}\n"),
                ),
            }
        }
        ("/healthz" | "/livez", _, Some(_)) => text(StatusCode::OK, "ok\n".into()),
        ("/readyz", _, Some(health)) => {
            let report = health.readiness();
            let status = if report.ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            text(status, report.body)
        }
        _ => text(StatusCode::NOT_FOUND, "404 page not found\n".into()),
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    with_type(status, body, "text/plain; charset=utf-8")
}

fn with_type(status: StatusCode, body: String, content_type: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
