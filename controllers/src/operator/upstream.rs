//! Never beside upstream's migration controllers: openshift/cluster-capi-operator's
//! `machine-api-migration` runs the same sync and migration on the same objects, and two
//! writers would fight over every one. It holds the Lease `machine-api-migration-leader`
//! in `openshift-cluster-api` while it runs (and releases it on a clean stop), so the
//! operator refuses to start while that Lease is held.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::Api;

/// Upstream's Lease, `namespace/name` (`--upstream-lease`).
pub const UPSTREAM_LEASE: &str = "openshift-cluster-api/machine-api-migration-leader";

/// The exit code of a refusal to start beside upstream.
pub const EXIT_UPSTREAM_RUNNING: u8 = 3;

/// Why the operator will not start.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// Upstream's controllers hold their Lease.
    #[error(
        "upstream's migration controllers are running: Lease {lease} is held by {holder} (renewed {renewed}, \
         valid {seconds} s); two sync controllers would fight over every Machine. Scale upstream's \
         machine-api-migration down (or disable it) and start again, or pass --upstream-lease='' if that \
         Lease is not upstream's"
    )]
    Running {
        /// `namespace/name`.
        lease: String,
        /// `spec.holderIdentity`.
        holder: String,
        /// `spec.renewTime`.
        renewed: String,
        /// `spec.leaseDurationSeconds`.
        seconds: i32,
    },
    /// The Lease could not be read.
    #[error(
        "cannot read upstream's Lease {lease} to make sure its migration controllers are not running: {error}; \
         retrying; grant get on it, or pass --upstream-lease='' to skip the check"
    )]
    Unreadable {
        /// `namespace/name`.
        lease: String,
        /// The API error.
        error: kube::Error,
    },
    /// `--upstream-lease` is not `namespace/name`.
    #[error("--upstream-lease={0:?}: expected NAMESPACE/NAME (or '' to skip the check)")]
    Malformed(String),
}

/// The holder of `lease` if it is held at `now`: a holder whose last renewal is younger
/// than the lease duration (a released Lease has no holder).
pub fn holder(lease: &Lease, now: Timestamp) -> Option<(String, Timestamp, i32)> {
    let spec = lease.spec.as_ref()?;
    let holder = spec.holder_identity.clone().filter(|h| !h.is_empty())?;
    let seconds = spec.lease_duration_seconds.unwrap_or(0);
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let until = renewed
        .checked_add(SignedDuration::from_secs(i64::from(seconds)))
        .ok()?;
    (until > now).then_some((holder, renewed, seconds))
}

/// Upstream's Lease, checked before the operator starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamLease {
    namespace: String,
    name: String,
}

impl UpstreamLease {
    /// `namespace/name` (`--upstream-lease`).
    pub fn parse(lease: &str) -> Result<Self, UpstreamError> {
        match lease.split_once('/') {
            Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(Self {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                })
            }
            _ => Err(UpstreamError::Malformed(lease.to_owned())),
        }
    }

    /// Ok when the Lease is free (missing, released or expired); [`UpstreamError::Running`]
    /// when it is held; [`UpstreamError::Unreadable`] when it cannot be read.
    pub async fn check(&self, client: &Client) -> Result<(), UpstreamError> {
        let lease = format!("{}/{}", self.namespace, self.name);
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        let found = api
            .get_opt(&self.name)
            .await
            .map_err(|error| UpstreamError::Unreadable {
                lease: lease.clone(),
                error,
            })?;
        match found.as_ref().and_then(|l| holder(l, Timestamp::now())) {
            Some((holder, renewed, seconds)) => Err(UpstreamError::Running {
                lease,
                holder,
                renewed: renewed.to_string(),
                seconds,
            }),
            None => Ok(()),
        }
    }

    /// Waits until the Lease can be read and is free (retrying an unreadable one with
    /// backoff, as an unreachable API server or a missing grant may be fixed); `Err` when
    /// it is held.
    pub async fn wait_until_clear(&self, client: &Client) -> Result<(), UpstreamError> {
        let mut delay = std::time::Duration::from_millis(500);
        loop {
            match self.check(client).await {
                Err(error @ UpstreamError::Unreadable { .. }) => {
                    tracing::warn!(retry_in = ?delay, "{error}");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(std::time::Duration::from_secs(30));
                }
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    use super::*;

    fn lease(holder: &str, renewed_ago: i64, seconds: i32) -> Lease {
        Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(seconds),
                renew_time: Some(MicroTime(
                    Timestamp::now() - SignedDuration::from_secs(renewed_ago),
                )),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        }
    }

    #[test]
    fn a_lease_renewed_within_its_duration_is_held() {
        let held = holder(&lease("capi-controllers-abc_1", 10, 137), Timestamp::now());
        assert_eq!(
            held.map(|(h, _, s)| (h, s)),
            Some(("capi-controllers-abc_1".into(), 137))
        );
    }

    #[test]
    fn the_flag_is_namespace_slash_name() {
        assert!(UpstreamLease::parse("openshift-cluster-api/machine-api-migration-leader").is_ok());
        for bad in ["name-only", "/name", "ns/", "a/b/c"] {
            assert!(
                matches!(UpstreamLease::parse(bad), Err(UpstreamError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_expired_or_released_lease_is_not_held() {
        assert_eq!(holder(&lease("old", 200, 137), Timestamp::now()), None);
        // client-go's release: no holder, a one-second duration.
        assert_eq!(holder(&lease("", 0, 1), Timestamp::now()), None);
        assert_eq!(holder(&Lease::default(), Timestamp::now()), None);
    }
}
