//! An in-process Kubernetes API server for tests ("envtest").
//!
//! It speaks the real HTTP API over HTTPS on loopback with bearer tokens, so the kube
//! client, kube-runtime's watcher/reflector/Controller and `kubectl` work against it
//! unchanged. Semantics follow kube-apiserver: resourceVersions, generation, finalizers,
//! status/scale subresources, selectors, pagination, watch bookmarks and 410 Expired.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sync_core::envtest::EnvtestError> {
//! use sync_core::envtest::TestEnv;
//! let env = TestEnv::builder().crd_dir("deploy/crds").namespace("test").start().await?;
//! let client = env.client();
//! let kubeconfig = env.kubeconfig_path()?; // for kubectl --kubeconfig
//! env.faults().drop_watches();
//! # let _ = (client, kubeconfig); Ok(()) }
//! ```
//!
//! The request path (see [`handler`]): authenticate (bearer token, 401) → route → resolve
//! the resource in the [`resources::Registry`] → fault injection → [`auth::authorize`]
//! (kube-apiserver's RBAC authorizer over the stored roles and bindings; `system:masters` bypasses it) → verb →
//! [`objects`] semantics under the store lock → [`admission::admit`] (the hook for schema
//! validation, defaulting and pruning) → [`store`] write and watch fan-out ([`watch`]).

pub mod admission;
pub mod apply;
pub mod auth;
pub mod bench;
pub mod cel;
pub mod encode;
pub mod errors;
pub mod faults;
pub mod handler;
pub mod harness;
pub mod kubeconfig;
pub mod objects;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod rbac;
pub mod request;
pub mod resources;
pub mod schema;
pub mod selectors;
pub mod server;
pub mod smp;
pub mod store;
pub mod table;
pub mod tls;
pub mod validation;
pub mod versions;
pub mod view;
pub mod watch;

pub use auth::User;
pub use errors::ApiError;
pub use faults::Faults;
pub use harness::{ADMIN, EnvtestError, TestEnv, TestEnvBuilder, service_account_user};
