//! The test harness: `TestEnv::builder()...start()` gives a running server and an admin
//! client; [`kubeconfig`] renders kubeconfigs, and [`bench`] is the benchmark built on it.

pub mod bench;
pub mod control;
pub mod kubeconfig;
pub mod state_dir;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube::CustomResourceExt;
use serde_json::Value;
use tokio::net::TcpListener;

use crate::api::Shared;
use crate::api::faults::Faults;
use crate::auth::{Authenticator, User};
use crate::http::server::{Limits, Listener};
use crate::http::tls::{self, Certs};
use crate::meta::errors::ApiError;
use crate::objects;
use crate::storage::store::Store;

/// Errors starting or driving a test environment.
#[derive(Debug, thiserror::Error)]
pub enum EnvtestError {
    /// Socket or file I/O.
    #[error("envtest I/O: {0}")]
    Io(#[from] std::io::Error),
    /// Certificate generation.
    #[error("envtest TLS: {0}")]
    Tls(String),
    /// A CRD file could not be read or parsed.
    #[error("envtest CRD {path}: {message}")]
    Crd {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// An initial object was rejected by the server.
    #[error("envtest initial object: {0}")]
    Object(#[from] ApiError),
    /// Building the kube client failed.
    #[error("envtest client: {0}")]
    Client(String),
    /// No such user.
    #[error("envtest: no user named {0}")]
    NoUser(String),
}

/// The user name of ServiceAccount `namespace/name`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The name of the admin user (in group `system:masters`).
pub const ADMIN: &str = "envtest-admin";

/// Namespaces every server starts with, as a real cluster.
pub const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Builder of a [`TestEnv`].
#[derive(Debug, Clone)]
pub struct TestEnvBuilder {
    crd_dirs: Vec<PathBuf>,
    crds: Vec<Value>,
    namespaces: Vec<String>,
    objects: Vec<Value>,
    history: usize,
    history_bytes: usize,
    users: Vec<User>,
    bookmark_interval: Duration,
    port: u16,
    limits: Limits,
    state_dir: Option<PathBuf>,
    garbage_collection: bool,
    event_ttl: Duration,
    deferred_error: Option<String>,
}

impl Default for TestEnvBuilder {
    fn default() -> Self {
        Self {
            crd_dirs: Vec::new(),
            crds: Vec::new(),
            namespaces: Vec::new(),
            objects: Vec::new(),
            history: 100_000,
            history_bytes: crate::storage::store::DEFAULT_HISTORY_BYTES,
            users: Vec::new(),
            bookmark_interval: Duration::from_secs(60),
            port: 0,
            limits: Limits::default(),
            state_dir: None,
            garbage_collection: true,
            event_ttl: crate::controllers::event_ttl::DEFAULT_TTL,
            deferred_error: None,
        }
    }
}

impl TestEnvBuilder {
    /// Installs every CRD found in the `*.yaml`/`*.yml`/`*.json` files of `dir`
    /// (multi-document YAML allowed, non-CRD documents ignored).
    pub fn crd_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.crd_dirs.push(dir.into());
        self
    }

    /// Installs the CRD of a Rust type (`kube::CustomResourceExt::crd()`).
    pub fn crd<K: CustomResourceExt>(self) -> Self {
        self.crd_object(K::crd())
    }

    /// Installs a CRD object.
    pub fn crd_object(
        mut self,
        crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    ) -> Self {
        match serde_json::to_value(crd) {
            Ok(value) => self.crds.push(value),
            Err(e) => self.deferred_error = Some(e.to_string()),
        }
        self
    }

    /// Creates a namespace at start (besides `default`, `kube-system`, `kube-public`,
    /// `kube-node-lease`).
    pub fn namespace(mut self, name: impl Into<String>) -> Self {
        self.namespaces.push(name.into());
        self
    }

    /// Creates an object at start (after CRDs and namespaces); namespaced objects without
    /// a namespace go to `default`.
    pub fn object(mut self, object: impl serde::Serialize) -> Self {
        match serde_json::to_value(object) {
            Ok(value) => self.objects.push(value),
            Err(e) => self.deferred_error = Some(e.to_string()),
        }
        self
    }

    /// How many events the server retains for watches to resume from (default 100 000);
    /// a watch from an older resourceVersion gets a 410 Expired ERROR event.
    pub fn history_window(mut self, events: usize) -> Self {
        self.history = events;
        self
    }

    /// How many bytes of objects the event history retains at most (default 64 MiB; the
    /// objects' approximate JSON size): with large objects the oldest events go sooner.
    pub fn history_bytes(mut self, bytes: usize) -> Self {
        self.history_bytes = bytes;
        self
    }

    /// Adds a user with a random bearer token (see [`TestEnv::client_as`]).
    pub fn user(mut self, name: impl Into<String>, groups: &[&str]) -> Self {
        self.users.push(User::new(name, groups));
        self
    }

    /// Adds the user of ServiceAccount `namespace/name`
    /// (`system:serviceaccount:<namespace>:<name>`, in `system:serviceaccounts` and
    /// `system:serviceaccounts:<namespace>`), as kube-apiserver authenticates its tokens.
    pub fn service_account(self, namespace: &str, name: &str) -> Self {
        let groups = [
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{namespace}"),
        ];
        let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
        self.user(service_account_user(namespace, name), &groups)
    }

    /// Interval of BOOKMARK events on watches with `allowWatchBookmarks` (default 60 s).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// Listens on this port instead of a random one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How many connections the server keeps open at once (default 1 024); more wait in
    /// the kernel's backlog.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.max_connections = connections;
        self
    }

    /// How long a client may take for the TLS handshake and for each request's head, and
    /// how long a kept-alive connection may stay idle (default 32 s, kube-apiserver's).
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout;
        self
    }

    /// Keeps the server's state in `dir`, so that a server started again with the same
    /// directory (after a stop, a crash or `kill -9`) has the same objects and
    /// resourceVersions, the same port (unless [`TestEnvBuilder::port`] says otherwise),
    /// CA and serving certificate, and the same users with the same tokens: clients
    /// reconnect with the kubeconfigs they have. CRDs, namespaces and objects of the
    /// builder are created on the first start only; users added since are added.
    /// Watches from before a restart get 410 Expired and relist (no history is kept).
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Runs the garbage collector (the default), as kube-controller-manager does beside
    /// kube-apiserver; `false` for a test that wants owner references left alone (DELETE
    /// then ignores `propagationPolicy`, as kube-apiserver without garbage collection).
    pub fn garbage_collection(mut self, enabled: bool) -> Self {
        self.garbage_collection = enabled;
        self
    }

    /// How long an Event lives after its last write (kube-apiserver's `--event-ttl`,
    /// 1 h by default).
    pub fn event_ttl(mut self, ttl: Duration) -> Self {
        self.event_ttl = ttl;
        self
    }

    /// Starts the server and connects an admin client.
    pub async fn start(self) -> Result<TestEnv, EnvtestError> {
        if let Some(error) = self.deferred_error {
            return Err(EnvtestError::Client(error));
        }
        let saved = match &self.state_dir {
            Some(dir) => state_dir::load(dir).map_err(EnvtestError::Tls)?,
            None => None,
        };
        let (certs, port, mut users) = match saved {
            Some(saved) => {
                let port = if self.port == 0 { saved.port } else { self.port };
                (saved.certs, port, saved.users)
            }
            None => {
                let admin = User::new(ADMIN, &["system:masters", "system:authenticated"]);
                (
                    tls::generate().map_err(EnvtestError::Tls)?,
                    self.port,
                    vec![admin],
                )
            }
        };
        for mut user in self.users.iter().cloned() {
            if !user.groups.iter().any(|g| g == "system:authenticated") {
                user.groups.push("system:authenticated".into());
            }
            match users.iter_mut().find(|u| u.name == user.name) {
                Some(known) => known.groups = user.groups,
                None => users.push(user),
            }
        }
        let admin = users
            .iter()
            .find(|u| u.name == ADMIN)
            .cloned()
            .ok_or_else(|| EnvtestError::NoUser(ADMIN.to_owned()))?;
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let (store, restored) = match &self.state_dir {
            Some(dir) => {
                let store = Store::persistent(dir, self.history, self.history_bytes)?;
                let restored = store.write(|state| {
                    let restored = !state.collections.is_empty();
                    if restored {
                        objects::rebuild_registry(state);
                    }
                    restored
                });
                state_dir::save(
                    dir,
                    &state_dir::Identity {
                        port: addr.port(),
                        certs: certs.clone(),
                        users: users.clone(),
                    },
                )?;
                (store, restored)
            }
            None => (Store::with_history(self.history, self.history_bytes), false),
        };
        let store = Arc::new(store);
        let shared = Arc::new(Shared {
            faults: Faults::new(&store),
            store,
            auth: Authenticator::new(&users),
            bookmark_interval: self.bookmark_interval,
            address: addr.to_string(),
            shutdown: tokio::sync::watch::Sender::new(0),
            denials: Default::default(),
        });
        shared
            .store
            .write(|state| state.garbage_collection = self.garbage_collection);
        if !restored {
            let mut crds = Vec::new();
            for dir in &self.crd_dirs {
                crds.extend(read_crd_dir(dir)?);
            }
            crds.extend(self.crds);
            seed(&shared.store, &crds, &self.namespaces, self.objects)?;
        }
        let mut controllers = vec![crate::controllers::event_ttl::spawn(
            shared.store.clone(),
            self.event_ttl,
        )];
        if self.garbage_collection {
            controllers.push(crate::controllers::gc::spawn(shared.store.clone()));
        }
        let server = Listener::spawn(shared.clone(), listener, certs.server_config.clone(), self.limits)?;
        let url = format!("https://{addr}");
        let client = client_for(&url, &certs.ca_pem, &admin).await?;
        Ok(TestEnv {
            shared,
            certs,
            addr,
            url,
            users,
            client,
            listener: Some(server),
            limits: self.limits,
            controllers,
            kubeconfig_file: OnceLock::new(),
        })
    }
}

/// Reads the CRDs of a directory, sorted by file name.
pub fn read_crd_dir(dir: &Path) -> Result<Vec<Value>, EnvtestError> {
    let crd_error = |message: String| EnvtestError::Crd {
        path: dir.to_path_buf(),
        message,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| crd_error(e.to_string()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| EnvtestError::Crd {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let docs: Vec<Value> = if path.extension().and_then(|e| e.to_str()) == Some("json") {
            serde_json::from_str::<Value>(&text)
                .map(|v| vec![v])
                .map_err(|e| e.to_string())
        } else {
            serde_saphyr::from_multiple::<Value>(&text).map_err(|e| e.to_string())
        }
        .map_err(|message| EnvtestError::Crd {
            path: path.clone(),
            message,
        })?;
        crds.extend(
            docs.into_iter()
                .filter(|d| d["kind"] == "CustomResourceDefinition"),
        );
    }
    Ok(crds)
}

fn seed(
    store: &Store,
    crds: &[Value],
    namespaces: &[String],
    objects: Vec<Value>,
) -> Result<(), EnvtestError> {
    store.write(|state| -> Result<(), EnvtestError> {
        let registry = state.registry.clone();
        let info = |group: &str, plural: &str| {
            registry
                .get(group, "v1", plural)
                .ok_or_else(|| EnvtestError::Client(format!("built-in {plural} missing")))
        };
        let ns_info = info("", "namespaces")?;
        for name in DEFAULT_NAMESPACES
            .iter()
            .map(|s| s.to_string())
            .chain(namespaces.iter().cloned())
        {
            if state.get(objects::NAMESPACE_KEY, "", &name).is_some() {
                continue;
            }
            let object =
                serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            objects::create(state, &ns_info, "", object, false)?;
        }
        for policy in crate::auth::rbac::bootstrap_policy() {
            let plural = if policy["kind"] == "ClusterRole" {
                "clusterroles"
            } else {
                "clusterrolebindings"
            };
            let info = registry
                .get("rbac.authorization.k8s.io", "v1", plural)
                .ok_or_else(|| EnvtestError::Client(format!("built-in {plural} missing")))?;
            objects::create(state, &info, "", policy, false)?;
        }
        let crd_info = info("apiextensions.k8s.io", "customresourcedefinitions")?;
        for crd in crds {
            let mut crd = crd.clone();
            if let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
                meta.remove("creationTimestamp");
            }
            if let Some(map) = crd.as_object_mut() {
                map.remove("status");
            }
            objects::create(state, &crd_info, "", crd, false)?;
        }
        for mut object in objects {
            let api_version = object["apiVersion"].as_str().unwrap_or_default().to_string();
            let kind = object["kind"].as_str().unwrap_or_default().to_string();
            let info = state.registry.by_kind(&api_version, &kind).ok_or_else(|| {
                ApiError::bad_request(format!("no resource serves {kind} in {api_version}"))
            })?;
            let namespace = if info.namespaced {
                object["metadata"]["namespace"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .unwrap_or("default")
                    .to_string()
            } else {
                String::new()
            };
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
            }
            objects::create(state, &info, &namespace, object, false)?;
        }
        Ok(())
    })
}

async fn client_for(url: &str, ca_pem: &str, user: &User) -> Result<kube::Client, EnvtestError> {
    let yaml = crate::harness::kubeconfig::render(url, ca_pem, &user.name, &user.token);
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&yaml).map_err(|e| EnvtestError::Client(e.to_string()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| EnvtestError::Client(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| EnvtestError::Client(e.to_string()))
}

/// A running in-process API server.
///
/// Dropping it stops the server; [`TestEnv::stop`] does so and waits for the port to be
/// released.
pub struct TestEnv {
    shared: Arc<Shared>,
    certs: Certs,
    addr: SocketAddr,
    url: String,
    users: Vec<User>,
    client: kube::Client,
    listener: Option<Listener>,
    limits: Limits,
    /// The garbage collector and the Event expiry, aborted on drop.
    controllers: Vec<tokio::task::JoinHandle<()>>,
    kubeconfig_file: OnceLock<(PathBuf, PathBuf)>,
}

impl std::fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestEnv")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl TestEnv {
    /// A builder.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// Starts a server with no CRDs.
    pub async fn start() -> Result<Self, EnvtestError> {
        Self::builder().start().await
    }

    /// The admin client (user `envtest-admin`, group `system:masters`).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A client authenticated as a user added with [`TestEnvBuilder::user`].
    pub async fn client_as(&self, user: &str) -> Result<kube::Client, EnvtestError> {
        let user = self
            .users
            .iter()
            .find(|u| u.name == user)
            .ok_or_else(|| EnvtestError::NoUser(user.to_string()))?;
        client_for(&self.url, &self.certs.ca_pem, user).await
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The CA certificate (PEM) that signed the serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.certs.ca_pem
    }

    /// The bearer token of a user (the admin is [`ADMIN`]).
    pub fn token(&self, user: &str) -> Option<&str> {
        self.users
            .iter()
            .find(|u| u.name == user)
            .map(|u| u.token.as_str())
    }

    /// The admin kubeconfig as YAML.
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig_for(ADMIN).unwrap_or_default()
    }

    /// The kubeconfig YAML of a user.
    pub fn kubeconfig_for(&self, user: &str) -> Option<String> {
        let token = self.token(user)?;
        Some(crate::harness::kubeconfig::render(
            &self.url,
            &self.certs.ca_pem,
            user,
            token,
        ))
    }

    /// Writes the admin kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// The path of an admin kubeconfig file in a private temporary directory, written on
    /// first call and removed when the env is dropped (for `kubectl --kubeconfig`).
    pub fn kubeconfig_path(&self) -> std::io::Result<PathBuf> {
        if let Some((_, file)) = self.kubeconfig_file.get() {
            return Ok(file.clone());
        }
        let dir = std::env::temp_dir().join(format!(
            "envtest-{}-{}-{}",
            std::process::id(),
            self.addr.port(),
            crate::auth::random_token().chars().take(8).collect::<String>()
        ));
        std::fs::create_dir_all(&dir)?;
        let file = dir.join("kubeconfig");
        self.write_kubeconfig(&file)?;
        let _ = self.kubeconfig_file.set((dir, file.clone()));
        Ok(file)
    }

    /// Every request the RBAC authorizer refused so far (user and Forbidden message).
    pub fn denials(&self) -> Vec<crate::auth::rbac::Denial> {
        self.shared.denials.all()
    }

    /// The server state, to drive [`crate::http::handler::handle`] in-process without a
    /// connection (property tests, benchmarks).
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Fault injection.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// Every CEL rule (`x-kubernetes-validations`) of the served CRDs that is not evaluated
    /// because this server cannot compile or evaluate it (each is logged once). Suites assert
    /// it is empty, so a rule is never silently passed.
    pub fn skipped_cel_rules(&self) -> Vec<crate::schema::cel::SkippedRule> {
        let registry = self.shared.store.read().registry.clone();
        let mut out: Vec<crate::schema::cel::SkippedRule> = Vec::new();
        for info in registry.all() {
            for rule in crate::admission::skipped_rules(info) {
                if !out.contains(&rule) {
                    out.push(rule);
                }
            }
        }
        out
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store.read().rv
    }

    /// Stops serving: closes the listener, every connection and every watch.
    pub async fn stop(mut self) {
        self.shutdown().await;
    }

    async fn shutdown(&mut self) {
        self.shared.shutdown.send_modify(|n| *n += 1);
        if let Some(listener) = self.listener.take() {
            listener.stop().await;
        }
    }

    /// Restarts the server on the same port with its state intact: every connection and
    /// watch is closed, clients reconnect (watchers resume from their resourceVersion).
    pub async fn restart(&mut self) -> Result<(), EnvtestError> {
        self.restart_after(Duration::ZERO).await
    }

    /// Like [`TestEnv::restart`], staying down for `downtime` (connections are refused).
    pub async fn restart_after(&mut self, downtime: Duration) -> Result<(), EnvtestError> {
        self.shutdown().await;
        if !downtime.is_zero() {
            tokio::time::sleep(downtime).await;
        }
        let mut attempt = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(listener) => break listener,
                Err(e) if attempt < 50 => {
                    attempt += 1;
                    tracing::debug!("envtest: rebinding {}: {e}", self.addr);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(e.into()),
            }
        };
        self.listener = Some(Listener::spawn(
            self.shared.clone(),
            listener,
            self.certs.server_config.clone(),
            self.limits,
        )?);
        Ok(())
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        self.shared.shutdown.send_modify(|n| *n += 1);
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        for controller in self.controllers.drain(..) {
            controller.abort();
        }
        if let Some((dir, _)) = self.kubeconfig_file.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
