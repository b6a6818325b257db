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
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::cli::Listener;
use super::health::Health;
use super::metrics::{Format, Metrics};

/// How long open connections get to finish when the server stops.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Connections served at once per listener (kubelet probes and a few scrapers need far
/// fewer); further clients wait in the kernel's accept backlog.
pub const MAX_CONNECTIONS: usize = 64;

/// How long a client may take to send a request's head, and how long a kept-alive
/// connection may stay idle (kubelet's probes time out after 1 s by default).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// What one listener serves.
#[derive(Clone)]
pub struct Routes {
    /// `/metrics`, when set.
    pub metrics: Option<Arc<Metrics>>,
    /// `/healthz` and `/readyz`, when set.
    pub health: Option<Health>,
}

/// A listener could not be opened. The message names the address, the flag (and its
/// environment variable) that sets it and what to do; the OS error is part of it once
/// (no `source`, so a chain printer does not repeat it).
#[derive(Debug)]
pub struct BindError {
    /// The address.
    pub address: SocketAddr,
    /// What it was for, and the flags that set it.
    pub listener: Listener,
    /// The error.
    pub error: std::io::Error,
}

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            address,
            listener,
            error,
        } = self;
        let what = listener.what();
        let how = listener.how_to_change();
        if error.kind() == std::io::ErrorKind::AddrInUse {
            write!(
                f,
                "cannot serve {what} on {address}: the port is in use by another process; {how}"
            )
        } else {
            write!(f, "cannot serve {what} on {address}: {error}; {how}")
        }
    }
}

impl std::error::Error for BindError {}

/// Binds `address` (port 0 picks a free port; see [`TcpListener::local_addr`]).
pub async fn bind(address: SocketAddr, listener: Listener) -> Result<TcpListener, BindError> {
    TcpListener::bind(address).await.map_err(|error| BindError {
        address,
        listener,
        error,
    })
}

/// [`bind`], but when `may_move` and the port is busy, a free port on the same host
/// instead (`--embedded`'s default ports: a second one on the same machine still starts).
pub async fn bind_or_move(
    address: SocketAddr,
    listener: Listener,
    may_move: bool,
) -> Result<TcpListener, BindError> {
    match bind(address, listener).await {
        Err(busy)
            if may_move && address.port() != 0 && busy.error.kind() == std::io::ErrorKind::AddrInUse =>
        {
            let free = SocketAddr::new(address.ip(), 0);
            let bound = bind(free, listener).await?;
            tracing::info!(
                busy = %address,
                address = %bound.local_addr().unwrap_or(free),
                "port {} is in use; serving {} on a free port instead",
                address.port(),
                listener.what()
            );
            Ok(bound)
        }
        other => other,
    }
}

/// Serves `routes` on `listener` until `stop` is cancelled, then lets open connections
/// finish (for at most a few seconds).
///
/// Hardened as Go's `net/http` server and hyper's own tools do: at most
/// [`MAX_CONNECTIONS`] at once (further clients wait in the kernel's backlog), a request's
/// head must arrive within [`HEADER_READ_TIMEOUT`] (idle and slowloris connections are
/// closed, so they cannot hold the fds a probe needs), and a failing `accept` (out of file
/// descriptors) backs off instead of spinning and flooding the log.
pub fn serve(listener: TcpListener, routes: Routes, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let mut backoff = AcceptBackoff::default();
        loop {
            let accepted = tokio::select! {
                () = stop.cancelled() => break,
                accepted = accept(&listener, &slots) => accepted,
            };
            let (stream, slot) = match accepted {
                Ok(accepted) => {
                    backoff.reset();
                    accepted
                }
                Err(error) => {
                    if let Some(pause) = backoff.next(&error) {
                        tracing::warn!(%error, retry_in = ?pause, "accepting an HTTP connection failed");
                        tokio::select! {
                            () = stop.cancelled() => break,
                            () = tokio::time::sleep(pause) => {}
                        }
                    }
                    continue;
                }
            };
            let routes = routes.clone();
            let service = service_fn(move |request| {
                let routes = routes.clone();
                async move { Ok::<_, Infallible>(handle(&routes, &request)) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "HTTP connection ended with an error");
                }
                drop(slot);
            });
        }
        drop(listener);
        if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
            tracing::debug!("HTTP connections still open after {DRAIN:?}; closing");
        }
    })
}

/// Waits for a free connection slot, then for a connection.
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> std::io::Result<(TcpStream, OwnedSemaphorePermit)> {
    // The semaphore is never closed, so this cannot fail; stay total anyway.
    let slot = slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|closed| std::io::Error::other(closed.to_string()))?;
    let (stream, _) = listener.accept().await?;
    Ok((stream, slot))
}

/// The pause after a failed `accept`, as Go's `net/http` server: errors about one
/// connection (reset or aborted before it was accepted) are retried at once; anything
/// else (`EMFILE`, `ENFILE`, `ENOBUFS`, …) waits 5 ms, doubling up to 1 s, until an
/// accept succeeds.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    pause: Option<Duration>,
}

impl AcceptBackoff {
    /// The first pause.
    pub const MIN: Duration = Duration::from_millis(5);
    /// The longest pause.
    pub const MAX: Duration = Duration::from_secs(1);

    /// How long to wait after `error` (`None`: retry at once).
    pub fn next(&mut self, error: &std::io::Error) -> Option<Duration> {
        use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset, Interrupted};
        if matches!(
            error.kind(),
            ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted
        ) {
            return None;
        }
        let pause = self.pause.map_or(Self::MIN, |p| (p * 2).min(Self::MAX));
        self.pause = Some(pause);
        Some(pause)
    }

    /// An accept succeeded.
    pub fn reset(&mut self) {
        self.pause = None;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_back_off_exponentially_up_to_a_second_and_reset_on_success() {
        let mut backoff = AcceptBackoff::default();
        let emfile = std::io::Error::from_raw_os_error(24);
        let pauses: Vec<_> = (0..10).filter_map(|_| backoff.next(&emfile)).collect();
        assert_eq!(pauses.len(), 10);
        assert_eq!(pauses[0], AcceptBackoff::MIN);
        assert_eq!(pauses[1], AcceptBackoff::MIN * 2);
        assert_eq!(pauses[9], AcceptBackoff::MAX);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]));
        backoff.reset();
        assert_eq!(backoff.next(&emfile), Some(AcceptBackoff::MIN));
    }

    #[test]
    fn a_connection_aborted_before_accept_is_retried_at_once() {
        let mut backoff = AcceptBackoff::default();
        let aborted = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
        assert_eq!(backoff.next(&aborted), None);
    }
}
