//! What `/healthz` and `/readyz` answer.
//!
//! * Liveness: the process serves HTTP.
//! * Readiness: the controllers' caches have synced. A standby replica (waiting for the
//!   leader Lease) has not started its caches; it reports ready with the check
//!   `standby`, so that a rolling update of a Deployment with a leader and standbys
//!   progresses (as controller-runtime managers, whose standbys are ready too).

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use sync_core::Readiness;

/// Where the replica is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not running the controllers yet (connecting).
    Starting,
    /// Waiting for the leader Lease.
    Standby,
    /// Running the controllers.
    Leading,
    /// Shutting down or lost the Lease.
    Stopping,
}

/// The readiness state shared by the run loop and the probe server.
#[derive(Clone)]
pub struct Health {
    inner: Arc<Inner>,
}

struct Inner {
    phase: Mutex<Phase>,
    controllers: Vec<(&'static str, Readiness)>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("phase", &self.phase())
            .finish_non_exhaustive()
    }
}

/// A readiness verdict with a kube-apiserver style report (`[+]check ok`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Whether every check passed.
    pub ready: bool,
    /// One line per check, then the verdict.
    pub body: String,
}

impl Health {
    /// Health of a replica running these controllers.
    pub fn new(controllers: Vec<(&'static str, Readiness)>) -> Self {
        Self {
            inner: Arc::new(Inner {
                phase: Mutex::new(Phase::Starting),
                controllers,
            }),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        *self
            .inner
            .phase
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Moves to `phase`.
    pub fn set_phase(&self, phase: Phase) {
        *self
            .inner
            .phase
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = phase;
    }

    /// The `/readyz` verdict.
    pub fn readiness(&self) -> Report {
        let mut checks: Vec<(String, bool)> = Vec::new();
        match self.phase() {
            Phase::Starting => checks.push(("starting".into(), false)),
            Phase::Standby => checks.push(("standby: waiting for the leader lease".into(), true)),
            Phase::Stopping => checks.push(("shutting down".into(), false)),
            Phase::Leading => {
                for (name, readiness) in &self.inner.controllers {
                    checks.push((format!("{name} caches synced"), readiness.is_ready()));
                }
            }
        }
        let ready = checks.iter().all(|(_, ok)| *ok);
        let mut body = String::new();
        for (check, ok) in &checks {
            let (mark, verdict) = if *ok { ('+', "ok") } else { ('-', "failed") };
            let _ = writeln!(body, "[{mark}]{check} {verdict}");
        }
        body.push_str(if ready {
            "readyz check passed\n"
        } else {
            "readyz check failed\n"
        });
        Report { ready, body }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_standby_or_a_synced_leader_is_ready() {
        let health = Health::new(Vec::new());
        assert!(!health.readiness().ready);
        health.set_phase(Phase::Standby);
        assert!(health.readiness().ready);
        assert!(health.readiness().body.contains("[+]standby"));
        health.set_phase(Phase::Leading);
        assert!(health.readiness().ready);
        health.set_phase(Phase::Stopping);
        assert!(!health.readiness().ready);
        assert!(health.readiness().body.ends_with("readyz check failed\n"));
    }
}
