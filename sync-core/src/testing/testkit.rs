//! A test kit for synced pairs, usable from any crate (feature `testkit`).
//!
//! It does for one pair what the workspace's end-to-end suites do for Machines: start the
//! in-process API server (the `envtest` crate) with the pair's CRDs and both namespaces, run
//! the pair's [`SyncController`] with its own hooks or [`RecordingHooks`], wait with a
//! timeout for "hook X ran for name N" or "N was skipped because R", and stop the
//! controller cleanly.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use sync_core::api::{capi, mapi};
//! use sync_core::testing::Hook;
//! use sync_core::testkit::PairEnv;
//! use sync_core::{SkipReason, SyncPair};
//! # struct MachineSetSync;
//! # impl SyncPair for MachineSetSync {
//! #     type Mapi = mapi::MachineSet; type Capi = capi::MachineSet; type OwnerMirror = sync_core::NoOwner;
//! #     const NAME: &'static str = "s"; const CAPI_ONLY: sync_core::CapiOnly = sync_core::CapiOnly::Ignore;
//! #     const INFRA_REF: Option<&'static str> = None;
//! #     fn infra_ref(_: &capi::MachineSet) -> Result<Option<sync_core::api::InfraRef>, sync_core::api::MalformedRef> { Ok(None) }
//! # }
//! let env = PairEnv::for_pair::<MachineSetSync>().await?;
//! let (running, hooks) = env.run_recording::<MachineSetSync>().await?;
//! // … create objects through env.client() in env.namespaces() …
//! running.wait_for_hook("worker", Hook::MapiToCapi, Duration::from_secs(10)).await?;
//! running.wait_for_skip("other", SkipReason::Migrating, Duration::from_secs(10)).await?;
//! assert_eq!(hooks.calls_for("worker").len(), 1);
//! running.stop().await?;
//! # Ok(()) }
//! ```

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use kube::{Client, CustomResourceExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::engine::observe::{Outcome, SkipReason};
use crate::engine::{SyncConfig, SyncController};
use crate::hooks::SyncHooks;
use crate::hooks::context::Namespaces;
use crate::pair::SyncPair;
use crate::testing::{Hook, Reconciled, RecordingHooks, RecordingObserver, TimedOut};
use envtest::{EnvtestError, TestEnv, TestEnvBuilder};

/// How long [`RunningPair::stop`] and the start of a controller may take before the kit
/// reports an error instead of hanging the test.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// What can go wrong in the kit.
#[derive(Debug, thiserror::Error)]
pub enum TestKitError {
    /// The API server did not start.
    #[error("envtest: {0}")]
    Envtest(#[from] EnvtestError),
    /// The controller stopped, or did not sync its caches within [`CONTROL_TIMEOUT`]
    /// (a CRD missing from the environment is the usual cause).
    #[error("controller {0} did not sync its caches: are the CRDs of both kinds installed?")]
    NotReady(&'static str),
    /// A wait timed out.
    #[error(transparent)]
    TimedOut(#[from] TimedOut),
    /// The controller's task did not end within [`CONTROL_TIMEOUT`] of the stop, or panicked.
    #[error("controller {0} did not stop cleanly: {1}")]
    Stop(&'static str, String),
}

/// Builds a [`PairEnv`]: the CRDs to install and the namespaces to use.
pub struct PairEnvBuilder {
    env: TestEnvBuilder,
    namespaces: Namespaces,
}

impl PairEnvBuilder {
    /// Installs the CRDs of pair `P`'s MAPI and CAPI kinds.
    pub fn pair<P: SyncPair>(self) -> Self
    where
        P::Mapi: CustomResourceExt,
        P::Capi: CustomResourceExt,
    {
        self.crd::<P::Mapi>().crd::<P::Capi>()
    }

    /// Installs the CRD of `K` (an owner-mirror kind, an infrastructure kind, …).
    pub fn crd<K: CustomResourceExt>(mut self) -> Self {
        self.env = self.env.crd::<K>();
        self
    }

    /// Installs every CRD in a directory of YAML files.
    pub fn crd_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.env = self.env.crd_dir(dir);
        self
    }

    /// The MAPI and CAPI namespaces (default: `openshift-machine-api`,
    /// `openshift-cluster-api`; each environment is its own server, so the defaults never
    /// collide).
    pub fn namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Anything else envtest's builder offers (objects, users, faults, history).
    pub fn configure(mut self, configure: impl FnOnce(TestEnvBuilder) -> TestEnvBuilder) -> Self {
        self.env = configure(self.env);
        self
    }

    /// Starts the API server with the CRDs and both namespaces.
    pub async fn start(self) -> Result<PairEnv, TestKitError> {
        let env = self
            .env
            .namespace(self.namespaces.mapi.clone())
            .namespace(self.namespaces.capi.clone())
            .start()
            .await?;
        Ok(PairEnv {
            env,
            namespaces: self.namespaces,
        })
    }
}

/// An API server ready for one pair's controller.
pub struct PairEnv {
    env: TestEnv,
    namespaces: Namespaces,
}

impl PairEnv {
    /// A builder with no CRDs and the default namespaces.
    pub fn builder() -> PairEnvBuilder {
        PairEnvBuilder {
            env: TestEnv::builder(),
            namespaces: Namespaces::default(),
        }
    }

    /// An API server with `P`'s two CRDs and the default namespaces.
    pub async fn for_pair<P: SyncPair>() -> Result<Self, TestKitError>
    where
        P::Mapi: CustomResourceExt,
        P::Capi: CustomResourceExt,
    {
        Self::builder().pair::<P>().start().await
    }

    /// An admin client.
    pub fn client(&self) -> Client {
        self.env.client()
    }

    /// The MAPI and CAPI namespaces.
    pub fn namespaces(&self) -> &Namespaces {
        &self.namespaces
    }

    /// The API server itself (kubeconfig, faults, other users).
    pub fn env(&self) -> &TestEnv {
        &self.env
    }

    /// The controller configuration the kit runs with: the environment's namespaces.
    pub fn config(&self) -> SyncConfig {
        SyncConfig {
            namespaces: self.namespaces.clone(),
            ..SyncConfig::default()
        }
    }

    /// Runs `P`'s controller with `hooks` (the pair itself for its real logic) and waits
    /// until its caches synced.
    pub async fn run<P: SyncPair, H: SyncHooks<P>>(&self, hooks: H) -> Result<RunningPair<P>, TestKitError> {
        self.run_with(SyncController::new(self.client(), self.config()), hooks)
            .await
    }

    /// Runs `P`'s controller with [`RecordingHooks`], returned to read every call's objects.
    pub async fn run_recording<P: SyncPair>(
        &self,
    ) -> Result<(RunningPair<P>, RecordingHooks<P>), TestKitError> {
        let hooks = RecordingHooks::new();
        let running = self.run(hooks.clone()).await?;
        Ok((running, hooks))
    }

    /// Runs a controller built by the caller (another client, config or a shared
    /// infrastructure tracker) with `hooks`, and waits until its caches synced.
    pub async fn run_with<P: SyncPair, H: SyncHooks<P>>(
        &self,
        controller: SyncController<P>,
        hooks: H,
    ) -> Result<RunningPair<P>, TestKitError> {
        let observer = RecordingObserver::new();
        let controller = controller.with_observer(Arc::new(observer.clone()));
        let mut readiness = controller.readiness();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(controller.run(hooks, async move {
            let _ = stopped.await;
        }));
        let running = RunningPair {
            observer,
            stop: Some(stop),
            task: Some(task),
            pair: PhantomData,
        };
        match tokio::time::timeout(CONTROL_TIMEOUT, readiness.wait()).await {
            Ok(true) => Ok(running),
            _ => {
                // Best effort: the error below is what the test must see.
                let _ = running.stop().await;
                Err(TestKitError::NotReady(P::NAME))
            }
        }
    }
}

/// A running controller of pair `P`; every reconcile it makes is recorded.
pub struct RunningPair<P: SyncPair> {
    observer: RecordingObserver,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    pair: PhantomData<fn() -> P>,
}

impl<P: SyncPair> RunningPair<P> {
    /// Every reconcile so far, in order.
    pub fn reconciles(&self) -> Vec<Reconciled> {
        self.observer.reconciles()
    }

    /// Waits until a reconcile of `name` ran `hook` (successfully or not); one already
    /// made counts.
    pub async fn wait_for_hook(
        &self,
        name: &str,
        hook: Hook,
        timeout: Duration,
    ) -> Result<Reconciled, TimedOut> {
        self.observer
            .wait_for(timeout, |r| r.name == name && ran(&r.outcome) == Some(hook))
            .await
    }

    /// Waits until a reconcile of `name` ran no hook because of `reason`; one already made
    /// counts.
    pub async fn wait_for_skip(
        &self,
        name: &str,
        reason: SkipReason,
        timeout: Duration,
    ) -> Result<Reconciled, TimedOut> {
        self.observer
            .wait_for(timeout, |r| {
                r.name == name && r.outcome == Outcome::Skipped(reason)
            })
            .await
    }

    /// Waits until a reconcile of `name` ended with `outcome`; one already made counts.
    pub async fn wait_for_outcome(
        &self,
        name: &str,
        outcome: Outcome,
        timeout: Duration,
    ) -> Result<Reconciled, TimedOut> {
        self.observer
            .wait_for(timeout, |r| r.name == name && r.outcome == outcome)
            .await
    }

    /// Stops the controller: in-flight reconciles finish, then its watches end.
    pub async fn stop(mut self) -> Result<(), TestKitError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match tokio::time::timeout(CONTROL_TIMEOUT, task).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(TestKitError::Stop(P::NAME, error.to_string())),
            Err(_) => Err(TestKitError::Stop(P::NAME, "still running".into())),
        }
    }
}

impl<P: SyncPair> Drop for RunningPair<P> {
    /// A test that fails before [`RunningPair::stop`] must not leave the controller running.
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The hook a reconcile ran, if any.
fn ran(outcome: &Outcome) -> Option<Hook> {
    match outcome {
        Outcome::Synced { direction, .. } => Some(match direction {
            crate::hooks::Direction::MapiToCapi => Hook::MapiToCapi,
            crate::hooks::Direction::CapiToMapi => Hook::CapiToMapi,
        }),
        Outcome::Deletion { direction, .. } => Some(Hook::Deletion(*direction)),
        Outcome::Skipped(_) | Outcome::Migration { .. } => None,
    }
}
