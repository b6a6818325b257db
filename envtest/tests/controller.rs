//! kube-runtime's `Controller` against the envtest server: reconciles on create and
//! update, reconciles the owner when an owned object changes, requeues, and shuts down
//! gracefully — with both initial-list strategies of its watchers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use envtest::TestEnv;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tokio::sync::{oneshot, watch};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Every reconcile, as (name, resourceVersion of the ConfigMap it saw).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String)>>>, Arc<watch::Sender<usize>>);

impl Seen {
    fn push(&self, name: String, rv: String) {
        let len = {
            let mut seen = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            seen.push((name, rv));
            seen.len()
        };
        self.1.send_replace(len);
    }

    async fn wait_for(&self, what: impl Fn(&(String, String)) -> bool) -> Result<(), String> {
        self.wait_until(|seen| seen.iter().any(&what)).await
    }

    fn count(&self, name: &str) -> usize {
        let seen = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.iter().filter(|(n, _)| n == name).count()
    }

    /// Waits until `done` holds for the whole log (one already written counts).
    async fn wait_until(&self, done: impl Fn(&[(String, String)]) -> bool) -> Result<(), String> {
        let mut changed = self.1.subscribe();
        let found = async {
            loop {
                if done(&self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)) {
                    return;
                }
                if changed.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), found)
            .await
            .map_err(|_| {
                format!(
                    "timed out; seen {:?}",
                    self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
                )
            })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

async fn run_controller(config: watcher::Config) -> TestResult {
    let env = TestEnv::builder().namespace("ns").start().await?;
    let client = env.client();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "ns");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "ns");
    let pp = PostParams::default();
    let meta = |name: &str| ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    // One object exists before the controller starts: the initial list reconciles it.
    configmaps
        .create(
            &pp,
            &ConfigMap {
                metadata: meta("before"),
                ..ConfigMap::default()
            },
        )
        .await?;

    let seen = Seen::default();
    let (stop, stopped) = oneshot::channel::<()>();
    let controller = Controller::new(configmaps.clone(), config.clone())
        .owns(secrets.clone(), config)
        .graceful_shutdown_on(async move {
            let _ = stopped.await;
        })
        .run(
            |object: Arc<ConfigMap>, seen: Arc<Seen>| async move {
                seen.push(object.name_any(), object.resource_version().unwrap_or_default());
                Ok::<_, Never>(Action::await_change())
            },
            |_, _: &Never, _| Action::requeue(Duration::from_secs(1)),
            Arc::new(seen.clone()),
        )
        .for_each(|_| async {});
    let running = tokio::spawn(controller);

    seen.wait_for(|(name, _)| name == "before").await?;
    let created = configmaps
        .create(
            &pp,
            &ConfigMap {
                metadata: meta("after"),
                ..ConfigMap::default()
            },
        )
        .await?;
    seen.wait_for(|(name, rv)| name == "after" && Some(rv) == created.resource_version().as_ref())
        .await?;

    // An update reconciles it again, with the new object.
    let patch = Patch::Merge(serde_json::json!({"data": {"k": "v"}}));
    let updated = configmaps.patch("after", &PatchParams::default(), &patch).await?;
    seen.wait_for(|(name, rv)| name == "after" && Some(rv) == updated.resource_version().as_ref())
        .await?;

    // A change to an owned Secret reconciles its owner.
    let before = seen.count("before");
    let owner = configmaps.get("before").await?;
    let mut secret = Secret {
        metadata: meta("owned"),
        ..Secret::default()
    };
    secret.metadata.owner_references = Some(vec![OwnerReference {
        api_version: ConfigMap::api_version(&()).into_owned(),
        kind: "ConfigMap".into(),
        name: "before".into(),
        uid: owner.uid().unwrap_or_default(),
        controller: Some(true),
        ..OwnerReference::default()
    }]);
    secrets.create(&pp, &secret).await?;
    seen.wait_until(|seen| seen.iter().filter(|(n, _)| n == "before").count() > before)
        .await?;

    // Graceful shutdown: the controller's stream ends.
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(20), running).await??;
    Ok(())
}

#[tokio::test]
async fn controller_with_list_then_watch() -> TestResult {
    run_controller(watcher::Config::default()).await
}

#[tokio::test]
async fn controller_with_streaming_lists() -> TestResult {
    run_controller(watcher::Config::default().streaming_lists()).await
}
