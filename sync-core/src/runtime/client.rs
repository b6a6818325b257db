//! A Kubernetes client whose connections keep small read buffers.
//!
//! hyper grows a connection's read buffer up to about 400 KiB while a list page arrives,
//! and the connection keeps it for its life: a watch's, or an idle one in the pool. Over a
//! controller's lists that is megabytes held for nothing once they are read. [`client`]
//! builds the same stack as `kube::Client::try_from` (TLS, timeouts, authentication, extra
//! and impersonation headers, retries, an HTTP span per request) over a hyper client whose
//! buffer stops at [`READ_BUFFER_MAX`].

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::Builder;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};
use tower::ServiceBuilder;
use tower::retry::RetryLayer;
use tower_http::trace::TraceLayer;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How far a connection's read buffer grows: hyper reads no more into a buffer that
/// holds this much. Twice the largest TLS record, and room for any response head, which
/// must fit: the API server caps its `Warning` headers at 4 096 characters.
pub const READ_BUFFER_MAX: usize = 32 * 1024;

/// A client for `config` whose connections' read buffers stop at [`READ_BUFFER_MAX`].
///
/// With a proxy configured it is kube's own client (`kube::Client::try_from`), whose
/// buffers grow as before: the proxy connectors are features this workspace does not
/// build. Unlike kube's, the client does not carry an exec plugin's certificate expiry
/// (`Client::valid_until`), which nothing here reads.
pub fn client(config: Config) -> kube::Result<Client> {
    if config.proxy_url.is_some() {
        return Client::try_from(config);
    }
    let mut connector = HttpConnector::new();
    connector.enforce_http(false);
    let mut connector = TimeoutConnector::new(config.rustls_https_connector_with_connector(connector)?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http = Builder::new(TokioExecutor::new())
        .http1_max_buf_size(READ_BUFFER_MAX)
        .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .layer(TraceLayer::new_for_http())
        .map_err(BoxError::from)
        .service(http);
    Ok(Client::new(service, config.default_namespace))
}

/// [`from_kubeconfig`] failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] KubeconfigError),
    /// The client could not be built from the configuration.
    #[error("cannot build the Kubernetes client: {0}")]
    Build(#[from] kube::Error),
}

/// [`client`] for a kubeconfig's YAML, with its current context: the embedded operator's
/// and the bench's controllers', which are handed a server's kubeconfig rather than a file.
pub async fn from_kubeconfig(yaml: &str) -> Result<Client, Error> {
    let kubeconfig = Kubeconfig::from_yaml(yaml)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(client(config)?)
}
