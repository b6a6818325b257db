//! Leader election on a `coordination.k8s.io/v1` Lease, following client-go's
//! `leaderelection` package step by step.
//!
//! * **Acquire**: read the Lease (create it if missing). If another identity holds it and
//!   the record has changed within its `leaseDurationSeconds` *as observed on the local
//!   monotonic clock* (never comparing the holder's timestamps with ours, so clock skew
//!   between nodes does not matter), wait. Otherwise write our record with the
//!   resourceVersion just read as precondition: of two candidates racing, one gets a 409
//!   Conflict and keeps waiting.
//! * **Renew**: every retry period the leader rewrites `renewTime`, optimistically with
//!   the resourceVersion of its last write, falling back to a fresh read. When it cannot
//!   renew for the renew deadline (shorter than the lease duration), or sees another
//!   holder, leadership is lost.
//! * **Release**: on shutdown the leader clears `holderIdentity` (again with a
//!   resourceVersion precondition), so a standby takes over at its next attempt instead
//!   of waiting for the lease to expire. On a 409 (a renewal the shutdown cut off was
//!   written after all) it reads the Lease again and clears it if it still holds it.
//!
//! The crates on crates.io were not used: `kube-lease-manager` (the one supporting kube 5)
//! acquires through server-side apply and breaks an expired lease with an unconditional
//! patch, and `kube-leader-election` / `kube-coordinate` depend on kube 4 and 2.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::Instant;

/// How a replica takes part in leader election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's holder identity (unique per process).
    pub identity: String,
    /// How long a record stays valid after it last changed.
    pub lease_duration: Duration,
    /// How long the leader retries renewing before giving up.
    pub renew_deadline: Duration,
    /// Interval between attempts.
    pub retry_period: Duration,
}

impl LeaseSettings {
    /// Checks the timing as client-go does: lease duration > renew deadline >
    /// 1.2 × retry period > 0.
    pub fn validate(&self) -> Result<(), LeaseError> {
        let invalid = |message: &str| Err(LeaseError::Settings(message.to_owned()));
        if self.retry_period.is_zero() {
            return invalid("the retry period must be positive");
        }
        if self.lease_duration < Duration::from_secs(1) {
            return invalid("the lease duration must be at least 1s");
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid("the lease duration must be longer than the renew deadline");
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER) {
            return invalid("the renew deadline must be longer than 1.2 × the retry period");
        }
        if self.identity.is_empty() {
            return invalid("the identity must not be empty");
        }
        Ok(())
    }
}

/// client-go's jitter factor for acquisition attempts.
const JITTER: f64 = 1.2;

/// Leader election failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The settings are inconsistent.
    #[error("leader election: {0}")]
    Settings(String),
    /// The API server refused or failed a request on the Lease.
    #[error("lease {namespace}/{name}: {source}")]
    Api {
        /// Namespace of the Lease.
        namespace: String,
        /// Name of the Lease.
        name: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
}

impl LeaseError {
    /// A 409 (someone else wrote the Lease first): expected when replicas race.
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Api { source: kube::Error::Api(status), .. } if status.code == 409)
    }
}

/// Why a leader stopped leading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadershipLost(pub String);

impl std::fmt::Display for LeadershipLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One replica's view of the Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    settings: LeaseSettings,
    /// The Lease as last read or written: its resourceVersion is the precondition of the
    /// next write.
    lease: Option<Lease>,
    /// The record last observed, and when it was observed (local monotonic clock).
    observed: Option<(LeaseSpec, Instant)>,
}

impl LeaderElector {
    /// An elector for `settings` (call [`LeaseSettings::validate`] first).
    pub fn new(client: Client, settings: LeaseSettings) -> Self {
        Self {
            api: Api::namespaced(client, &settings.namespace),
            settings,
            lease: None,
            observed: None,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &LeaseSettings {
        &self.settings
    }

    /// Whether the last observed record names this replica.
    pub fn is_leader(&self) -> bool {
        self.holder() == Some(self.settings.identity.as_str())
    }

    /// The holder of the last observed record, if any.
    pub fn holder(&self) -> Option<&str> {
        self.observed
            .as_ref()
            .and_then(|(record, _)| record.holder_identity.as_deref())
            .filter(|holder| !holder.is_empty())
    }

    /// Waits until this replica holds the Lease (retrying forever, with jitter).
    pub async fn acquire(&mut self) {
        tracing::info!(
            lease = %self.describe(),
            identity = %self.settings.identity,
            "attempting to acquire the leader lease"
        );
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(lease = %self.describe(), identity = %self.settings.identity, "acquired the leader lease");
                    return;
                }
                Ok(false) => tracing::debug!(
                    lease = %self.describe(),
                    holder = self.holder().unwrap_or_default(),
                    "the lease is held by another replica"
                ),
                Err(error) if error.is_conflict() => {
                    tracing::debug!(%error, "another replica wrote the lease first")
                }
                Err(error) => tracing::warn!(%error, "cannot acquire the leader lease; retrying"),
            }
            tokio::time::sleep(jittered(self.settings.retry_period)).await;
        }
    }

    /// Keeps renewing the Lease; returns when leadership is lost.
    pub async fn hold(&mut self) -> LeadershipLost {
        loop {
            tokio::time::sleep(self.settings.retry_period).await;
            if let Err(lost) = self.renew().await {
                return lost;
            }
        }
    }

    /// One renewal: retries every retry period until the renew deadline.
    async fn renew(&mut self) -> Result<(), LeadershipLost> {
        let deadline = Instant::now() + self.settings.renew_deadline;
        loop {
            let error = match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => return Ok(()),
                Ok(Ok(false)) => {
                    return Err(LeadershipLost(format!(
                        "lease {} is now held by {}",
                        self.describe(),
                        self.holder().unwrap_or("another replica")
                    )));
                }
                Ok(Err(error)) => error.to_string(),
                Err(_) => "the request timed out".to_owned(),
            };
            if Instant::now() + self.settings.retry_period >= deadline {
                return Err(LeadershipLost(format!(
                    "could not renew lease {} within {:?}: {error}",
                    self.describe(),
                    self.settings.renew_deadline
                )));
            }
            tracing::warn!(lease = %self.describe(), %error, "failed to renew the leader lease; retrying");
            tokio::time::sleep(self.settings.retry_period).await;
        }
    }

    /// Gives the Lease up so that a standby takes over at once. `Ok(false)`: this replica
    /// was not the leader.
    ///
    /// A shutdown drops [`Self::hold`] wherever it is, so a renewal may have reached the
    /// API server without its answer being read: the write then meets a 409 on the
    /// resourceVersion of our previous write. The Lease is read again and released if it
    /// is still ours.
    pub async fn release(&mut self) -> Result<bool, LeaseError> {
        if !self.is_leader() {
            return Ok(false);
        }
        match self.clear_holder().await {
            Err(error) if error.is_conflict() => {}
            other => return other.map(|()| true),
        }
        let current = self
            .api
            .get_opt(&self.settings.name)
            .await
            .map_err(|e| self.error(e))?;
        let ours = current
            .as_ref()
            .and_then(|lease| lease.spec.as_ref())
            .and_then(|spec| spec.holder_identity.as_deref())
            == Some(self.settings.identity.as_str());
        if !ours {
            return Ok(false);
        }
        self.lease = current;
        self.clear_holder().await.map(|()| true)
    }

    /// Writes a record without a holder over the last Lease read or written.
    async fn clear_holder(&mut self) -> Result<(), LeaseError> {
        let now = now();
        let record = LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: self.observed_record().lease_transitions,
            ..LeaseSpec::default()
        };
        self.update(record).await?;
        tracing::info!(lease = %self.describe(), "released the leader lease");
        Ok(())
    }

    /// client-go's `tryAcquireOrRenew`: `Ok(true)` when this replica holds the Lease
    /// afterwards, `Ok(false)` when another replica validly holds it.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, LeaseError> {
        let now = now();
        let mut record = LeaseSpec {
            holder_identity: Some(self.settings.identity.clone()),
            lease_duration_seconds: Some(lease_seconds(self.settings.lease_duration)),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            ..LeaseSpec::default()
        };

        // 1. The leader's fast path: update what it wrote last, assuming nobody else did.
        if self.is_leader() && self.is_lease_valid() && self.lease.is_some() {
            let old = self.observed_record();
            record.acquire_time = old.acquire_time;
            record.lease_transitions = old.lease_transitions;
            match self.update(record.clone()).await {
                Ok(()) => return Ok(true),
                Err(error) => tracing::debug!(%error, "optimistic renewal failed; re-reading the lease"),
            }
        }

        // 2. Read the Lease, or create it.
        let Some(current) = self
            .api
            .get_opt(&self.settings.name)
            .await
            .map_err(|e| self.error(e))?
        else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.settings.name.clone()),
                    namespace: Some(self.settings.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(record.clone()),
            };
            let created = self
                .api
                .create(&PostParams::default(), &lease)
                .await
                .map_err(|e| self.error(e))?;
            self.lease = Some(created);
            self.observe(record);
            return Ok(true);
        };

        // 3. A record that changed restarts the validity clock.
        let old = current.spec.clone().unwrap_or_default();
        self.lease = Some(current);
        if self.observed.as_ref().map(|(observed, _)| observed) != Some(&old) {
            self.observe(old.clone());
        }
        if self.holder().is_some() && self.is_lease_valid() && !self.is_leader() {
            return Ok(false);
        }

        // 4. Free, expired, or ours: write our record (the read's resourceVersion is the
        // precondition).
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.lease_transitions = old.lease_transitions;
        } else {
            record.lease_transitions = Some(old.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        self.update(record).await?;
        Ok(true)
    }

    /// Replaces the Lease's spec, with the resourceVersion last seen as precondition.
    async fn update(&mut self, record: LeaseSpec) -> Result<(), LeaseError> {
        let Some(mut lease) = self.lease.clone() else {
            return Ok(());
        };
        lease.spec = Some(record.clone());
        let updated = self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
            .map_err(|e| self.error(e))?;
        self.lease = Some(updated);
        self.observe(record);
        Ok(())
    }

    fn observe(&mut self, record: LeaseSpec) {
        self.observed = Some((record, Instant::now()));
    }

    fn observed_record(&self) -> LeaseSpec {
        self.observed
            .as_ref()
            .map(|(record, _)| record.clone())
            .unwrap_or_default()
    }

    /// Whether the observed record is still within its lease duration, measured from when
    /// it was observed.
    fn is_lease_valid(&self) -> bool {
        let Some((record, at)) = &self.observed else {
            return false;
        };
        let seconds = record
            .lease_duration_seconds
            .map_or(self.settings.lease_duration.as_secs(), |s| {
                u64::try_from(s).unwrap_or(0)
            });
        *at + Duration::from_secs(seconds) > Instant::now()
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.settings.namespace, self.settings.name)
    }

    fn error(&self, source: kube::Error) -> LeaseError {
        LeaseError::Api {
            namespace: self.settings.namespace.clone(),
            name: self.settings.name.clone(),
            source,
        }
    }
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

/// Whole seconds, rounded up, at least 1 (the Lease field's unit).
fn lease_seconds(duration: Duration) -> i32 {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    i32::try_from(seconds.max(1)).unwrap_or(i32::MAX)
}

/// `period` × (1 + 1.2 × a random fraction), as client-go's `wait.Jitter`.
fn jittered(period: Duration) -> Duration {
    let fraction = f64::from(getrandom::u32().unwrap_or(0)) / f64::from(u32::MAX);
    period.mul_f64(1.0 + JITTER * fraction)
}

/// A holder identity unique to this process: `<name>_<random>`, as controller-runtime's
/// `<hostname>_<uuid>`.
pub fn identity(name: &str) -> String {
    let suffix = getrandom::u64().unwrap_or_else(|_| u64::from(std::process::id()));
    format!("{name}_{suffix:016x}")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use envtest::TestEnv;

    use super::*;

    const NS: &str = "leases";

    fn settings(identity: &str, lease_duration: Duration) -> LeaseSettings {
        LeaseSettings {
            namespace: NS.into(),
            name: "test-lease".into(),
            identity: identity.into(),
            lease_duration,
            renew_deadline: lease_duration.mul_f64(0.6),
            retry_period: Duration::from_millis(100),
        }
    }

    async fn env() -> TestEnv {
        match TestEnv::builder().namespace(NS).start().await {
            Ok(env) => env,
            Err(error) => panic!("envtest: {error}"),
        }
    }

    async fn lease(env: &TestEnv) -> LeaseSpec {
        let api: Api<Lease> = Api::namespaced(env.client(), NS);
        match api.get("test-lease").await {
            Ok(lease) => lease.spec.unwrap_or_default(),
            Err(error) => panic!("reading the lease: {error}"),
        }
    }

    #[test]
    fn settings_are_checked_as_client_go_does() {
        let good = settings("a", Duration::from_secs(15));
        assert!(good.validate().is_ok());
        let mut bad = good.clone();
        bad.renew_deadline = Duration::from_secs(15);
        assert!(bad.validate().is_err());
        let mut bad = good.clone();
        bad.retry_period = Duration::from_secs(9);
        assert!(bad.validate().is_err());
        let mut bad = good;
        bad.identity.clear();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn identities_are_unique_per_process_and_keep_the_name() {
        let (a, b) = (identity("pod-1"), identity("pod-1"));
        assert!(a.starts_with("pod-1_"), "{a}");
        assert_ne!(a, b);
        assert_eq!(lease_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(lease_seconds(Duration::from_millis(10)), 1);
    }

    #[tokio::test]
    async fn the_first_candidate_creates_the_lease_and_the_second_waits() -> Result<(), LeaseError> {
        let env = env().await;
        let mut a = LeaderElector::new(env.client(), settings("a", Duration::from_secs(30)));
        let mut b = LeaderElector::new(env.client(), settings("b", Duration::from_secs(30)));
        assert!(a.try_acquire_or_renew().await?);
        assert!(!b.try_acquire_or_renew().await?);
        assert_eq!(b.holder(), Some("a"));
        let record = lease(&env).await;
        assert_eq!(record.holder_identity.as_deref(), Some("a"));
        assert_eq!(record.lease_duration_seconds, Some(30));
        // Renewing keeps the acquire time and the transitions.
        assert!(a.try_acquire_or_renew().await?);
        let renewed = lease(&env).await;
        assert_eq!(renewed.acquire_time, record.acquire_time);
        assert_eq!(renewed.lease_transitions, record.lease_transitions);
        Ok(())
    }

    #[tokio::test]
    async fn a_released_lease_is_taken_over_at_once() -> Result<(), LeaseError> {
        let env = env().await;
        let mut a = LeaderElector::new(env.client(), settings("a", Duration::from_secs(30)));
        let mut b = LeaderElector::new(env.client(), settings("b", Duration::from_secs(30)));
        assert!(a.try_acquire_or_renew().await?);
        assert!(!b.try_acquire_or_renew().await?);
        assert!(a.release().await?);
        assert_eq!(lease(&env).await.holder_identity, None);
        assert!(b.try_acquire_or_renew().await?);
        let record = lease(&env).await;
        assert_eq!(record.holder_identity.as_deref(), Some("b"));
        assert_eq!(record.lease_transitions, Some(1));
        // Releasing a lease one does not hold does nothing.
        assert!(!a.release().await?);
        assert_eq!(lease(&env).await.holder_identity.as_deref(), Some("b"));
        Ok(())
    }

    /// A renewal whose answer was never read (a shutdown dropped it) moved the Lease's
    /// resourceVersion on: the release still clears the holder.
    #[tokio::test]
    async fn a_lease_renewed_behind_the_electors_back_is_still_released() -> Result<(), LeaseError> {
        let env = env().await;
        let mut a = LeaderElector::new(env.client(), settings("a", Duration::from_secs(30)));
        assert!(a.try_acquire_or_renew().await?);
        // The dropped renewal: the same record, written by `a`'s identity elsewhere.
        let mut behind = LeaderElector::new(env.client(), settings("a", Duration::from_secs(30)));
        assert!(behind.try_acquire_or_renew().await?);
        assert!(a.release().await?);
        assert_eq!(lease(&env).await.holder_identity, None);
        // Released elsewhere and taken by `b` meanwhile: `a`'s release leaves it to `b`.
        assert!(a.try_acquire_or_renew().await?);
        let mut behind = LeaderElector::new(env.client(), settings("a", Duration::from_secs(30)));
        assert!(behind.try_acquire_or_renew().await?);
        assert!(behind.release().await?);
        let mut b = LeaderElector::new(env.client(), settings("b", Duration::from_secs(30)));
        assert!(b.try_acquire_or_renew().await?);
        assert!(!a.release().await?);
        assert_eq!(lease(&env).await.holder_identity.as_deref(), Some("b"));
        Ok(())
    }

    #[tokio::test]
    async fn an_expired_lease_is_taken_over() -> Result<(), LeaseError> {
        let env = env().await;
        let short = Duration::from_secs(1);
        let mut a = LeaderElector::new(env.client(), settings("a", short));
        let mut b = LeaderElector::new(env.client(), settings("b", short));
        assert!(a.try_acquire_or_renew().await?);
        // `a` stops renewing; `b` gets the lease once the record it observed is a lease
        // duration old.
        let acquired = tokio::time::timeout(Duration::from_secs(10), b.acquire()).await;
        assert!(acquired.is_ok(), "b never acquired the expired lease");
        assert_eq!(lease(&env).await.holder_identity.as_deref(), Some("b"));
        // `a` notices on its next renewal and stops leading.
        let lost = tokio::time::timeout(Duration::from_secs(10), a.hold()).await;
        assert!(lost.is_ok(), "a never noticed it lost the lease");
        assert!(!a.is_leader());
        Ok(())
    }

    #[tokio::test]
    async fn a_stale_write_is_refused_by_the_resource_version_precondition() -> Result<(), LeaseError> {
        let env = env().await;
        let mut a = LeaderElector::new(env.client(), settings("a", Duration::from_secs(30)));
        assert!(a.try_acquire_or_renew().await?);
        // Someone else takes the lease behind a's back.
        let api: Api<Lease> = Api::namespaced(env.client(), NS);
        let mut taken = api.get("test-lease").await.map_err(|e| a.error(e))?;
        if let Some(spec) = taken.spec.as_mut() {
            spec.holder_identity = Some("intruder".into());
            spec.renew_time = Some(now());
        }
        api.replace("test-lease", &PostParams::default(), &taken)
            .await
            .map_err(|e| a.error(e))?;
        // a's optimistic renewal (based on its own last write) conflicts; it re-reads, sees
        // a valid lease held by another, and does not overwrite it.
        assert!(!a.try_acquire_or_renew().await?);
        assert!(!a.is_leader());
        assert_eq!(lease(&env).await.holder_identity.as_deref(), Some("intruder"));
        Ok(())
    }

    #[tokio::test]
    async fn a_leader_that_cannot_renew_loses_leadership_within_the_renew_deadline() -> Result<(), LeaseError>
    {
        let env = env().await;
        let mut a = LeaderElector::new(env.client(), settings("a", Duration::from_secs(2)));
        assert!(a.try_acquire_or_renew().await?);
        env.faults().fail(None, Some("leases"), 500, None);
        let lost = tokio::time::timeout(Duration::from_secs(10), a.hold()).await;
        match lost {
            Ok(LeadershipLost(reason)) => assert!(reason.contains("could not renew"), "{reason}"),
            Err(_) => panic!("a kept leading without renewing"),
        }
        Ok(())
    }
}
