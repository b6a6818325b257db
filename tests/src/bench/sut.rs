//! The two implementations under test, run the same way: the Machine and MachineSet
//! controllers with [`Probe`] hooks, on a client of their own.

use std::future::Future;
use std::time::{Duration, Instant};

use controllers::machine::MachineSync;
use controllers::machine_set::MachineSetSync;
use kube::Client;
use sync_core::infra::InfraCache;
use sync_core::{InfraConfig, InfraTracker, Namespaces, SyncConfig, SyncController};
use tokio::sync::oneshot;

use super::BenchError;
use super::probe::{HandHooks, MacroHooks, Probe};
use crate::handwritten;

/// Names each controller reconciles at once, in both implementations (sync-core's default).
pub const CONCURRENCY: usize = 4;

/// Which implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Implementation {
    /// `#[sync_controller]` declarations (`controllers::machine::MachineSync`, …) on the
    /// sync-core engine with its infrastructure tracker.
    Macro,
    /// [`crate::handwritten`], directly on kube-runtime.
    HandWritten,
}

impl Implementation {
    /// Both, macro first.
    pub const BOTH: [Self; 2] = [Self::Macro, Self::HandWritten];

    /// The name on the command line and in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Macro => "macro",
            Self::HandWritten => "hand-written",
        }
    }

    /// Parses [`Self::as_str`].
    pub fn parse(value: &str) -> Option<Self> {
        Self::BOTH.into_iter().find(|i| i.as_str() == value)
    }
}

/// The probes of the two controllers.
#[derive(Clone, Default)]
pub struct Probes {
    /// The Machine controller's hooks.
    pub machines: Probe,
    /// The MachineSet controller's hooks.
    pub machine_sets: Probe,
}

/// A client from a kubeconfig (YAML), the operator's ([`sync_core::client`]); call it on
/// the runtime that will use the client.
pub async fn client(kubeconfig: &str) -> Result<Client, BenchError> {
    sync_core::client::from_kubeconfig(kubeconfig)
        .await
        .map_err(|e| BenchError::Other(e.to_string()))
}

/// Runs both controllers of `implementation` until `shutdown` resolves.
pub async fn run(
    implementation: Implementation,
    client: Client,
    namespaces: Namespaces,
    probes: Probes,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let shutdown = futures::FutureExt::shared(Box::pin(shutdown));
    match implementation {
        Implementation::Macro => {
            let config = SyncConfig {
                namespaces: namespaces.clone(),
                concurrency: CONCURRENCY,
                ..SyncConfig::default()
            };
            // The stub hooks read no infrastructure object, and the hand-written controller
            // caches their metadata only: both keep the same.
            let mut infra = InfraConfig::new(&namespaces.capi);
            infra.cache = InfraCache::Metadata;
            let tracker = InfraTracker::new(client.clone(), infra);
            let machines = SyncController::<MachineSync>::new(client.clone(), config.clone())
                .with_infra(tracker.clone());
            let machine_sets = SyncController::<MachineSetSync>::new(client, config).with_infra(tracker);
            tokio::join!(
                machines.run(MacroHooks(probes.machines), shutdown.clone()),
                machine_sets.run(MacroHooks(probes.machine_sets), shutdown),
            );
        }
        Implementation::HandWritten => {
            let namespaces = handwritten::Namespaces {
                mapi: namespaces.mapi,
                capi: namespaces.capi,
            };
            tokio::join!(
                handwritten::machine::run(
                    client.clone(),
                    namespaces.clone(),
                    CONCURRENCY,
                    HandHooks(probes.machines),
                    shutdown.clone(),
                ),
                handwritten::machine_set::run(
                    client,
                    namespaces,
                    CONCURRENCY,
                    HandHooks(probes.machine_sets),
                    shutdown,
                ),
            );
        }
    }
}

/// An implementation running in this process on a tokio runtime of its own (two
/// workers, threads named [`Running::thread_name`]), apart from the envtest's runtime, so
/// that its CPU time can be told apart.
pub struct Running {
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), BenchError>>>,
    thread_name: String,
    /// When the controllers were started (just before their client was built).
    pub started: Instant,
}

impl Running {
    /// Starts `implementation` against the cluster of `kubeconfig`; `session` makes the
    /// thread names unique (so CPU time is not mixed with a previous session's threads).
    pub fn start(
        implementation: Implementation,
        kubeconfig: &str,
        namespaces: Namespaces,
        probes: Probes,
        session: usize,
    ) -> Result<Self, BenchError> {
        let kubeconfig = kubeconfig.to_owned();
        Self::spawn(&format!("sut-{session}"), move |stopped| async move {
            let client = client(&kubeconfig).await?;
            run(implementation, client, namespaces, probes, async move {
                let _ = stopped.await;
            })
            .await;
            Ok(())
        })
    }

    /// Runs `controllers` on a runtime of its own whose threads are named `thread_name`
    /// (unique per session, so CPU time is not mixed with a previous session's threads);
    /// `controllers` is handed the signal to stop.
    pub fn spawn<F>(
        thread_name: &str,
        controllers: impl FnOnce(oneshot::Receiver<()>) -> F,
    ) -> Result<Self, BenchError>
    where
        F: Future<Output = Result<(), BenchError>> + Send + 'static,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(thread_name)
            .enable_all()
            .build()
            .map_err(|e| BenchError::Other(format!("runtime: {e}")))?;
        let (stop, stopped) = oneshot::channel::<()>();
        let started = Instant::now();
        let task = runtime.spawn(controllers(stopped));
        Ok(Self {
            runtime: Some(runtime),
            stop: Some(stop),
            task: Some(task),
            thread_name: thread_name.to_owned(),
            started,
        })
    }

    /// The name of the implementation's threads.
    pub fn thread_name(&self) -> &str {
        &self.thread_name
    }

    /// CPU time of the implementation's threads so far.
    pub fn cpu(&self) -> Duration {
        super::procfs::cpu(std::process::id(), Some(&self.thread_name))
    }

    /// Stops the controllers and waits (up to a minute) for them to finish.
    pub async fn stop(mut self) -> Result<(), BenchError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = match self.task.take() {
            Some(task) => match tokio::time::timeout(Duration::from_secs(60), task).await {
                Ok(Ok(result)) => result,
                Ok(Err(join)) => Err(BenchError::Other(format!("controllers task: {join}"))),
                Err(_) => Err(BenchError::Other(
                    "the controllers did not stop within a minute".into(),
                )),
            },
            None => Ok(()),
        };
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        result
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
