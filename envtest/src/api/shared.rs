//! The state every connection and watch shares: the store, users, fault injection, the
//! watch settings and the shutdown signal. The harness builds it; the handler and the watch
//! streams read it.

use std::sync::Arc;
use std::time::Duration;

use crate::api::faults::Faults;
use crate::auth::Authenticator;
use crate::storage::store::Store;

/// Server state shared by every connection (kept across restarts).
#[derive(Debug)]
pub struct Shared {
    /// Objects and events.
    pub store: Arc<Store>,
    /// Bearer-token users.
    pub auth: Authenticator,
    /// Fault injection.
    pub faults: Faults,
    /// Interval between BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// `host:port` advertised by `/api`.
    pub address: String,
    /// Bumped on stop: every watch ends.
    pub shutdown: tokio::sync::watch::Sender<u64>,
    /// Requests the authorizer refused.
    pub denials: crate::auth::rbac::Denials,
}
