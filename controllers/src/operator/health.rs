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
    controllers: Mutex<Running>,
}

/// What the leader runs: the controllers, or nothing while a feature gate keeps them off.
enum Running {
    Controllers(Vec<(&'static str, Readiness)>),
    Gated { reason: String, known: bool },
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
                controllers: Mutex::new(Running::Controllers(controllers)),
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

    /// The leader now runs these controllers (the feature gate started them).
    pub fn set_controllers(&self, controllers: Vec<(&'static str, Readiness)>) {
        *self.running() = Running::Controllers(controllers);
    }

    /// The leader runs no controllers, for `reason` (the feature gate is off): ready, as
    /// there is nothing to wait for, once the gate is `known` (read from the cluster).
    pub fn set_gated(&self, reason: String, known: bool) {
        *self.running() = Running::Gated { reason, known };
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.inner
            .controllers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The `/readyz` verdict.
    pub fn readiness(&self) -> Report {
        let mut checks: Vec<(String, bool)> = Vec::new();
        match self.phase() {
            Phase::Starting => checks.push(("starting".into(), false)),
            Phase::Standby => checks.push(("standby: waiting for the leader lease".into(), true)),
            Phase::Stopping => checks.push(("shutting down".into(), false)),
            Phase::Leading => match &*self.running() {
                Running::Controllers(controllers) if controllers.is_empty() => {
                    checks.push(("controllers starting".into(), false))
                }
                Running::Controllers(controllers) => {
                    for (name, readiness) in controllers {
                        checks.push((format!("{name} caches synced"), readiness.is_ready()));
                    }
                }
                Running::Gated { reason, known } => {
                    checks.push((format!("controllers not running: {reason}"), *known))
                }
            },
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
        assert!(!health.readiness().ready, "no controllers yet");
        health.set_gated("gate off".into(), true);
        assert!(health.readiness().ready);
        health.set_phase(Phase::Stopping);
        assert!(!health.readiness().ready);
        assert!(health.readiness().body.ends_with("readyz check failed\n"));
    }

    #[test]
    fn a_leader_whose_feature_gate_is_off_is_ready_and_says_why() {
        let health = Health::new(Vec::new());
        health.set_phase(Phase::Leading);
        health.set_gated("MachineAPIMigration: reading".into(), false);
        assert!(!health.readiness().ready, "not ready until the gate is read");
        health.set_gated("MachineAPIMigration is disabled".into(), true);
        let report = health.readiness();
        assert!(report.ready);
        assert!(
            report
                .body
                .contains("[+]controllers not running: MachineAPIMigration is disabled ok"),
            "{}",
            report.body
        );
    }
}
