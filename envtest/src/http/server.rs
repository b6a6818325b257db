//! The HTTPS listener: TLS accept, HTTP/1.1 connections, stop and restart.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::api::Shared;
use crate::http::handler::handle;

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
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let acceptor = TlsAcceptor::from(tls);
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    accepted = listener.accept() => {
                        let Ok((tcp, _)) = accepted else { continue };
                        let _ = tcp.set_nodelay(true);
                        let acceptor = acceptor.clone();
                        let shared = shared.clone();
                        connections.spawn(async move {
                            let Ok(tls) = acceptor.accept(tcp).await else { return };
                            let service = service_fn(move |request| {
                                let shared = shared.clone();
                                async move { Ok::<_, std::convert::Infallible>(handle(shared, request).await) }
                            });
                            let _ = hyper::server::conn::http1::Builder::new()
                                .keep_alive(true)
                                .serve_connection(TokioIo::new(tls), service)
                                .await;
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
