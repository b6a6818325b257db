//! The HTTPS listener: TLS accept, HTTP/1.1 connections, stop and restart.
//!
//! Hardened as kube-apiserver's Go server is: a failing `accept` (out of file
//! descriptors) backs off from 5 ms to 1 s instead of spinning; at most
//! [`Limits::max_connections`] connections are open at once (the rest wait in the
//! kernel's backlog); the TLS handshake and each request's head must arrive within
//! [`Limits::header_timeout`] (kube-apiserver's `ReadHeaderTimeout`, which also bounds
//! Go's handshake), so idle and slowloris connections cannot hold descriptors; and a
//! plain-HTTP request to the HTTPS port gets Go's `400 Bad Request`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::api::Shared;
use crate::http::handler::handle;

/// What Go's `net/http` answers a plain-HTTP request sent to a TLS port.
pub const PLAIN_HTTP_RESPONSE: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The listener's resource limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Time for the TLS handshake, and for each request's head (also how long a
    /// kept-alive connection may stay idle).
    pub header_timeout: Duration,
}

impl Default for Limits {
    /// kube-apiserver's 32 s `ReadHeaderTimeout`; 1 024 connections.
    fn default() -> Self {
        Self {
            max_connections: 1024,
            header_timeout: Duration::from_secs(32),
        }
    }
}

/// A running listener.
#[derive(Debug)]
pub struct Listener {
    /// The bound address.
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// Serves `shared` on `listener` until stopped.
    pub fn spawn(
        shared: Arc<Shared>,
        listener: TcpListener,
        tls: Arc<rustls::ServerConfig>,
        limits: Limits,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let acceptor = TlsAcceptor::from(tls);
        let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            let mut backoff = AcceptBackoff::default();
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    accepted = accept(&listener, &slots) => {
                        let (tcp, slot) = match accepted {
                            Ok(accepted) => {
                                backoff.reset();
                                accepted
                            }
                            Err(error) => {
                                if let Some(pause) = backoff.next(&error) {
                                    tracing::debug!(%error, ?pause, "envtest: accept failed");
                                    tokio::select! {
                                        _ = stopped.changed() => break,
                                        () = tokio::time::sleep(pause) => {}
                                    }
                                }
                                continue;
                            }
                        };
                        let _ = tcp.set_nodelay(true);
                        let acceptor = acceptor.clone();
                        let shared = shared.clone();
                        connections.spawn(async move {
                            serve_connection(shared, acceptor, tcp, limits.header_timeout).await;
                            drop(slot);
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
            connections.shutdown().await;
        });
        Ok(Self { addr, stop, task })
    }

    /// Stops accepting, closes every connection and waits for the listener to be released.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

impl Listener {
    /// Stops without waiting (used on drop).
    pub fn abort(self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

/// Waits for a free connection slot, then for a connection.
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> std::io::Result<(TcpStream, OwnedSemaphorePermit)> {
    let slot = slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|closed| std::io::Error::other(closed.to_string()))?;
    let (tcp, _) = listener.accept().await?;
    Ok((tcp, slot))
}

/// One connection: plain HTTP refused, TLS within the header timeout, then HTTP/1.1.
async fn serve_connection(
    shared: Arc<Shared>,
    acceptor: TlsAcceptor,
    mut tcp: TcpStream,
    header_timeout: Duration,
) {
    let handshake = async {
        if is_plain_http(&tcp).await? {
            let _ = tcp.write_all(PLAIN_HTTP_RESPONSE).await;
            let _ = tcp.shutdown().await;
            return Ok(None);
        }
        acceptor.accept(tcp).await.map(Some)
    };
    let tls = match tokio::time::timeout(header_timeout, handshake).await {
        Ok(Ok(Some(tls))) => tls,
        Ok(Ok(None) | Err(_)) | Err(_) => return,
    };
    let service = service_fn(move |request| {
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(shared, request).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(tls), service)
        .await;
}

/// Whether the client's first byte starts an HTTP request rather than a TLS record (a
/// TLS record starts with a content type byte, 0x14–0x17; an HTTP method with a letter).
async fn is_plain_http(tcp: &TcpStream) -> std::io::Result<bool> {
    let mut first = [0u8; 1];
    match tcp.peek(&mut first).await? {
        0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
        _ => Ok(first[0].is_ascii_uppercase()),
    }
}

/// The pause after a failed `accept`, as Go's `net/http` server: errors about one
/// connection (reset or aborted before it was accepted) are retried at once; anything
/// else (`EMFILE`, `ENFILE`, `ENOBUFS`, …) waits 5 ms, doubling up to 1 s, until an
/// accept succeeds.
#[derive(Debug, Default)]
struct AcceptBackoff {
    pause: Option<Duration>,
}

impl AcceptBackoff {
    const MIN: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);

    fn next(&mut self, error: &std::io::Error) -> Option<Duration> {
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

    fn reset(&mut self) {
        self.pause = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_back_off_up_to_a_second_and_reset_on_success() {
        let mut backoff = AcceptBackoff::default();
        let emfile = std::io::Error::from_raw_os_error(24);
        let pauses: Vec<_> = (0..10).filter_map(|_| backoff.next(&emfile)).collect();
        assert_eq!(pauses.first(), Some(&AcceptBackoff::MIN));
        assert_eq!(pauses.last(), Some(&AcceptBackoff::MAX));
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]));
        backoff.reset();
        assert_eq!(backoff.next(&emfile), Some(AcceptBackoff::MIN));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(backoff.next(&reset), None);
    }
}
