//! The shutdown budget: everything from SIGTERM to exit fits in
//! `--graceful-shutdown-timeout`, so the kubelet's SIGKILL (after the pod's
//! `terminationGracePeriodSeconds`) never races the Lease release.
//!
//! As controller-runtime's `GracefulShutdownTimeout`, one budget covers every step, in
//! order: the controllers drain in-flight reconciles, the leader Lease is released, the
//! HTTP endpoints drain. Each step ends at its own deadline measured from the signal, so
//! time a step does not use goes to the next one and the sum never exceeds the budget.

use std::time::Duration;

use tokio::time::Instant;

use super::leader::LeaseSettings;

/// The longest share of the budget kept for the HTTP endpoints to drain (probe and metrics
/// responses are small).
pub const HTTP_DRAIN: Duration = Duration::from_secs(1);

/// How one budget is shared out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownBudget {
    /// Signal to exit.
    pub total: Duration,
    /// Kept for releasing the Lease: the renew deadline (one Lease write's worth of
    /// retries), at most a quarter of the budget; zero without leader election.
    pub release: Duration,
    /// Kept for the HTTP endpoints: [`HTTP_DRAIN`], at most a tenth of the budget.
    pub http: Duration,
}

impl ShutdownBudget {
    /// The budget `total`, shared for a replica with (or without) leader election.
    pub fn new(total: Duration, lease: Option<&LeaseSettings>) -> Self {
        let release = lease.map_or(Duration::ZERO, |lease| lease.renew_deadline.min(total / 4));
        Self {
            total,
            release,
            http: HTTP_DRAIN.min(total / 10),
        }
    }

    /// What the controllers get to finish in-flight reconciles.
    pub fn controllers(&self) -> Duration {
        self.total.saturating_sub(self.release + self.http)
    }

    /// The deadlines of a shutdown asked for at `start`.
    pub fn deadlines(&self, start: Instant) -> Deadlines {
        Deadlines {
            controllers: start + self.controllers(),
            release: start + self.total.saturating_sub(self.http),
            exit: start + self.total,
        }
    }
}

/// When each step of one shutdown must be over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// In-flight reconciles are abandoned.
    pub controllers: Instant,
    /// The Lease release is abandoned (the Lease then expires on its own).
    pub release: Instant,
    /// Open HTTP connections are closed and the process exits.
    pub exit: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(renew_deadline: Duration) -> LeaseSettings {
        LeaseSettings {
            namespace: "ns".into(),
            name: "lease".into(),
            identity: "me".into(),
            lease_duration: renew_deadline * 2,
            renew_deadline,
            retry_period: Duration::from_secs(2),
        }
    }

    #[test]
    fn the_steps_never_take_more_than_the_budget() {
        let renew_deadlines = [0, 1, 3, 10, 40, 600].map(Duration::from_secs);
        let totals = [0, 1, 2, 5, 20, 30, 120].map(Duration::from_secs);
        for total in totals {
            for renew in renew_deadlines {
                let budget = ShutdownBudget::new(total, Some(&lease(renew)));
                assert!(
                    budget.controllers() + budget.release + budget.http <= total,
                    "{budget:?}"
                );
                let start = Instant::now();
                let deadlines = budget.deadlines(start);
                assert!(deadlines.controllers <= deadlines.release, "{budget:?}");
                assert!(deadlines.release <= deadlines.exit, "{budget:?}");
                assert_eq!(deadlines.exit, start + total);
            }
        }
    }

    #[test]
    fn the_default_budget_leaves_the_lease_release_time_within_it() {
        // The command line's defaults: 20 s budget, 10 s renew deadline.
        let budget = ShutdownBudget::new(Duration::from_secs(20), Some(&lease(Duration::from_secs(10))));
        assert_eq!(budget.release, Duration::from_secs(5));
        assert_eq!(budget.http, Duration::from_secs(1));
        assert_eq!(budget.controllers(), Duration::from_secs(14));
        let without_lease = ShutdownBudget::new(Duration::from_secs(20), None);
        assert_eq!(without_lease.release, Duration::ZERO);
        assert_eq!(without_lease.controllers(), Duration::from_secs(19));
    }
}
