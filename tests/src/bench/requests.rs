//! API requests by verb, counted on the client: a tower layer on the kube client's
//! service stack classifies every request the way kube-apiserver's
//! `apiserver_request_total` labels them (`get`, `list`, `watch`, `create`, `update`,
//! `patch`, `delete`, `deletecollection`), so a scenario can say what it cost the server
//! and when its last write went out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use super::BenchError;

/// A request verb, as kube-apiserver's request metrics name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `GET` of one object, or a discovery/non-resource `GET`.
    Get,
    /// `GET` of a collection.
    List,
    /// `GET ...?watch=true`.
    Watch,
    /// `POST`.
    Create,
    /// `PUT`.
    Update,
    /// `PATCH`.
    Patch,
    /// `DELETE` of one object.
    Delete,
    /// `DELETE` of a collection.
    DeleteCollection,
}

impl Verb {
    /// Every verb, in report order.
    pub const ALL: [Self; 8] = [
        Self::Get,
        Self::List,
        Self::Watch,
        Self::Create,
        Self::Update,
        Self::Patch,
        Self::Delete,
        Self::DeleteCollection,
    ];

    /// Its label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }

    /// Whether the verb changes state on the server.
    pub fn writes(self) -> bool {
        !matches!(self, Self::Get | Self::List | Self::Watch)
    }

    /// The verb of a request (`method`, `path`, `query`), as the API server's request info
    /// resolver finds it: a resource path naming an object is a `get`/`delete`, one naming
    /// a collection a `list`/`deletecollection`, `watch=true` a `watch`.
    pub fn of(method: &http::Method, path: &str, query: Option<&str>) -> Self {
        let watch = query.is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        match *method {
            http::Method::POST => Self::Create,
            http::Method::PUT => Self::Update,
            http::Method::PATCH => Self::Patch,
            http::Method::DELETE if names_object(path) => Self::Delete,
            http::Method::DELETE => Self::DeleteCollection,
            _ if watch => Self::Watch,
            _ if is_resource(path) && !names_object(path) => Self::List,
            _ => Self::Get,
        }
    }
}

/// The segments after `/api/<version>` or `/apis/<group>/<version>`, without
/// `namespaces/<namespace>` in front of a namespaced resource; `None` for discovery and
/// non-resource paths.
fn resource_segments(path: &str) -> Option<Vec<&str>> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return None,
    };
    let rest = match rest {
        ["namespaces", _namespace, resource, more @ ..] => {
            let mut all = vec![*resource];
            all.extend_from_slice(more);
            all
        }
        other => other.to_vec(),
    };
    (!rest.is_empty()).then_some(rest)
}

fn is_resource(path: &str) -> bool {
    resource_segments(path).is_some()
}

fn names_object(path: &str) -> bool {
    resource_segments(path).is_some_and(|s| s.len() >= 2)
}

/// Requests counted by verb, and when the last write was sent.
#[derive(Debug)]
pub struct Requests {
    counts: [AtomicU64; Verb::ALL.len()],
    base: Instant,
    /// Nanoseconds after `base` of the last write (0: none yet).
    last_write: AtomicU64,
}

impl Default for Requests {
    fn default() -> Self {
        Self {
            counts: Default::default(),
            base: Instant::now(),
            last_write: AtomicU64::new(0),
        }
    }
}

/// What [`Requests`] had counted at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot([u64; Verb::ALL.len()]);

impl Snapshot {
    /// Requests of `verb`.
    pub fn of(&self, verb: Verb) -> u64 {
        self.0[verb as usize]
    }

    /// Every request.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Requests that change state.
    pub fn writes(&self) -> u64 {
        Verb::ALL.iter().filter(|v| v.writes()).map(|v| self.of(*v)).sum()
    }

    /// The requests counted since `earlier`.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot(std::array::from_fn(|i| self.0[i].saturating_sub(earlier.0[i])))
    }

    /// `{"get": 3, ...}` (verbs with no request left out) and the totals.
    pub fn to_json(&self) -> Value {
        let mut by_verb = serde_json::Map::new();
        for verb in Verb::ALL {
            if self.of(verb) > 0 {
                by_verb.insert(verb.as_str().into(), json!(self.of(verb)));
            }
        }
        json!({"by_verb": by_verb, "total": self.total(), "writes": self.writes()})
    }

    /// `get 3, list 4, ...` (verbs with no request left out).
    pub fn summary(&self) -> String {
        let parts: Vec<String> = Verb::ALL
            .iter()
            .filter(|v| self.of(**v) > 0)
            .map(|v| format!("{} {}", v.as_str(), self.of(*v)))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

impl Requests {
    /// A counter with nothing counted.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Counts one request.
    pub fn count<B>(&self, request: &http::Request<B>) {
        let uri = request.uri();
        let verb = Verb::of(request.method(), uri.path(), uri.query());
        self.counts[verb as usize].fetch_add(1, Ordering::Relaxed);
        if verb.writes() {
            let nanos = u64::try_from(self.base.elapsed().as_nanos())
                .unwrap_or(u64::MAX)
                .max(1);
            self.last_write.fetch_max(nanos, Ordering::Relaxed);
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed)))
    }

    /// When the last write was sent, if any.
    pub fn last_write(&self) -> Option<Instant> {
        match self.last_write.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(self.base + Duration::from_nanos(nanos)),
        }
    }
}

/// A client for the cluster of `kubeconfig` (YAML) whose every request `requests` counts.
/// Call it on the runtime that will use the client.
pub async fn counted_client(kubeconfig: &str, requests: Arc<Requests>) -> Result<Client, BenchError> {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).map_err(|e| BenchError::Other(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| BenchError::Other(e.to_string()))?;
    let layer = tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
        requests.count(&request);
        request
    });
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&layer)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_classified_as_the_api_server_does() {
        let get = http::Method::GET;
        let cases = [
            (
                &get,
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/c/machines/m-1",
                None,
                Verb::Get,
            ),
            (
                &get,
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/c/machines",
                None,
                Verb::List,
            ),
            (
                &get,
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/c/machines",
                Some("watch=true&resourceVersion=5"),
                Verb::Watch,
            ),
            (&get, "/api/v1/namespaces/c", None, Verb::Get),
            (&get, "/api/v1/namespaces", None, Verb::List),
            (&get, "/apis", None, Verb::Get),
            (&get, "/apis/cluster.x-k8s.io/v1beta2", None, Verb::Get),
            (
                &http::Method::POST,
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/c/machines",
                None,
                Verb::Create,
            ),
            (
                &http::Method::PUT,
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/c/machines/m-1/status",
                None,
                Verb::Update,
            ),
            (
                &http::Method::PATCH,
                "/apis/machine.openshift.io/v1beta1/namespaces/m/machines/m-1",
                None,
                Verb::Patch,
            ),
            (
                &http::Method::DELETE,
                "/apis/machine.openshift.io/v1beta1/namespaces/m/machines/m-1",
                None,
                Verb::Delete,
            ),
            (
                &http::Method::DELETE,
                "/apis/machine.openshift.io/v1beta1/namespaces/m/machines",
                None,
                Verb::DeleteCollection,
            ),
        ];
        for (method, path, query, verb) in cases {
            assert_eq!(Verb::of(method, path, query), verb, "{method} {path}?{query:?}");
        }
    }

    #[test]
    fn a_snapshot_counts_writes_and_differences() {
        let requests = Requests::new();
        assert_eq!(requests.last_write(), None);
        for (method, path) in [
            (http::Method::GET, "/api/v1/namespaces/a/configmaps"),
            (http::Method::POST, "/api/v1/namespaces/a/configmaps"),
        ] {
            let request = http::Request::builder()
                .method(method)
                .uri(path)
                .body(())
                .unwrap_or_default();
            requests.count(&request);
        }
        let first = requests.snapshot();
        assert_eq!(
            (first.of(Verb::List), first.of(Verb::Create), first.writes()),
            (1, 1, 1)
        );
        assert!(requests.last_write().is_some());
        let request = http::Request::builder()
            .method(http::Method::PATCH)
            .uri("/api/v1/namespaces/a/configmaps/x")
            .body(())
            .unwrap_or_default();
        requests.count(&request);
        let delta = requests.snapshot().since(&first);
        assert_eq!((delta.total(), delta.of(Verb::Patch)), (1, 1));
        assert_eq!(delta.summary(), "patch 1");
    }
}
