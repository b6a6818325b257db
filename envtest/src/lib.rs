//! An in-process Kubernetes API server for tests ("envtest").
//!
//! It speaks the real HTTP API over HTTPS on loopback with bearer tokens, so the kube
//! client, kube-runtime's watcher/reflector/Controller and `kubectl` work against it
//! unchanged. Semantics follow kube-apiserver: resourceVersions, generation, finalizers,
//! status/scale subresources, selectors, pagination, watch bookmarks and 410 Expired.
//!
//! ```no_run
//! # async fn demo() -> Result<(), envtest::EnvtestError> {
//! use envtest::TestEnv;
//! let env = TestEnv::builder().crd_dir("deploy/crds").namespace("test").start().await?;
//! let client = env.client();
//! let kubeconfig = env.kubeconfig_path()?; // for kubectl --kubeconfig
//! env.faults().drop_watches();
//! # let _ = (client, kubeconfig); Ok(()) }
//! ```
//!
//! # Layers
//!
//! Each folder of `src/` is one layer. A request goes down them: the handler at the top
//! calls the layers below it, and a layer may use the layers below it, never one above
//! (`tests/layers.rs` fails on a `crate::`/`super::` path that goes up). Top first:
//!
//! | layer | what it does |
//! |---|---|
//! | [`harness`] | `TestEnv` and its builder, kubeconfigs, the benchmark: what a test holds |
//! | [`controllers`] | what runs beside the server, as kube-controller-manager does: the garbage collector ([`controllers::gc`]), writing through [`objects`] |
//! | [`http`] | TLS listener and the [`http::handler`]: authenticate (bearer token, 401), route, resolve the resource, inject faults, authorize, dispatch the verb |
//! | [`api`] | what the verbs answer besides objects: watch streams, OpenAPI documents, Tables and metadata-only views, responses, fault injection, the server state ([`api::Shared`]) |
//! | [`auth`] | users and tokens, kube-apiserver's RBAC authorizer over the stored roles and bindings (`system:masters` bypasses it) |
//! | [`patch`] | merge, JSON, strategic merge patch, server-side apply with managedFields |
//! | [`objects`] | object semantics under the store lock: uid, resourceVersion, generation, finalizers, deletion and its propagation options, subresources, namespaces, CRD lifecycle; built-in kinds' decoding and defaults |
//! | [`admission`] | schema validation, defaulting and pruning of a write, by `fieldValidation` ([`admission::admit`]); ValidatingAdmissionPolicies ([`admission::policy`]) |
//! | [`storage`] | the store, its event history and snapshots, the serialized JSON of stored objects |
//! | [`resources`] | the served resources ([`resources::Registry`]), CRD versions, the kinds' OpenAPI definitions, built-in kinds' protobuf |
//! | [`schema`] | structural schemas compiled per CRD version, CEL rules, and the checks of a CRD's schemas before it is stored ([`schema::definition`]) |
//! | [`meta`] | `Status` errors, name validation, label and field selectors |
//!
//! Request bodies may be JSON, YAML or, for the built-in kinds, Kubernetes protobuf
//! ([`resources::protobuf`]: client-go's typed clients, and so `kubectl create
//! configmap|secret|…`, send nothing else); responses are JSON, which every client that
//! accepts protobuf also accepts. Stored objects keep their serialized JSON
//! ([`storage::encode`]), so a list is a concatenation and a watch event is serialized once
//! for all watchers.
//!
//! # Running the same tests against a real cluster
//!
//! Set `USE_EXISTING_CLUSTER=true` (or `1`) and point `KUBECONFIG` at the cluster: the
//! workspace's end-to-end suites (the `e2e` crate's `Cluster::start`) and this crate's
//! `tests/kubectl.rs` then connect with `kube::Client::try_default()` and plain `kubectl` instead of starting
//! a server, install the project's CRDs, and work in namespaces (and CRD groups) with a
//! random suffix that they delete afterwards, so a shared cluster is fine. Tests that are
//! about this server itself (`tests/crud.rs`, `tests/watch.rs`, `tests/errors.rs`, the
//! property test, fault injection) keep running in-process whatever the switch says; a
//! suite that needs fault injection gets `None` from `Cluster::envtest()` and skips that
//! part. `cargo run -p envtest --bin envtest-server -- --kubeconfig FILE` is a stand-in "existing cluster" to try the switch with.
//!
//! # What differs from kube-apiserver (request path, storage, lists)
//!
//! * Responses are JSON (or `Table`/`PartialObjectMetadata` views); a client that accepts
//!   only protobuf gets 406 where kube-apiserver would answer protobuf for built-in kinds.
//!   Protobuf request bodies are decoded for the built-in kinds served here only.
//! * Built-in kinds get kube-apiserver's decoding (unknown fields, types, base64) and a few
//!   defaults (`Secret.type`, `stringData`, namespace `spec.finalizers`/phase/label), not
//!   every registry strategy; the garbage collector is the only controller that runs, so
//!   new namespaces get no `kube-root-ca.crt` ConfigMap and no `default` ServiceAccount.
//! * The namespace controller's work is done within the DELETE (content removed, finalizer
//!   `kubernetes` dropped once empty); it sets no `NamespaceContentRemaining`-style
//!   conditions, and the `/finalize` subresource is not served.
//! * A custom resource is pruned when it is written (against the request version, then the
//!   storage version) and, through another version, when it is read, but a stored object is
//!   not pruned again on every read as kube-apiserver's storage decoder does: fields that a
//!   later CRD update removed from the storage version's schema stay visible until the
//!   object is written again.
//! * History is the last `history_window` events (default 100 000) and at most
//!   `history_bytes` of their objects (default 64 MiB), not etcd's time-based compaction:
//!   lists at an older resourceVersion (`continue`, `resourceVersionMatch=Exact`) are
//!   rebuilt from it and get 410 Expired beyond it, as watches do. A server restarted on a
//!   state directory keeps its objects but no history.
//!
//! # Benchmark
//!
//! `cargo bench -p envtest --bench envtest -- [--quick] [FILE]`
//! measures start to ready, 10k creates, write-to-watch latency and 10k-object lists
//! (see [`harness::bench`]).

pub mod admission;
pub mod api;
pub mod auth;
pub mod controllers;
pub mod harness;
pub mod http;
pub mod meta;
pub mod objects;
pub mod patch;
pub mod resources;
pub mod schema;
pub mod storage;

pub use api::faults::Faults;
pub use auth::User;
pub use harness::{ADMIN, EnvtestError, TestEnv, TestEnvBuilder, service_account_user};
pub use meta::errors::ApiError;
