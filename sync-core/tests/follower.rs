//! A follower on envtest: a second controller of the same pair that runs on its
//! leader's caches. It lists and watches nothing itself, reconciles the names listed
//! before it started and every later change, reports under its own name, and stops
//! with its leader.
#![cfg(feature = "testkit")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Request;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::client::Body;
use serde_json::json;
use sync_core::api::mapi;
use sync_core::migration::MigrationHooks;
use sync_core::testing::{RecordingHooks, RecordingObserver};
use sync_core::testkit::PairEnv;
use sync_core::{Action, HookResult, Outcome, SkipReason, SyncContext, SyncController, SyncObjects};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);

/// The follower's name.
const FOLLOWER: &str = "follower-test-migration";

common::machines_without_infra!(Pair, "follower-test");

/// The path and query of every list or watch request.
type Reads = Arc<Mutex<Vec<String>>>;

/// `client`, recording the path and query of every GET it sends.
fn reads_of(client: Client) -> (Client, Reads) {
    let reads = Reads::default();
    let seen = reads.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        if request.method() == http::Method::GET
            && let Ok(mut seen) = seen.lock()
        {
            seen.push(request.uri().to_string());
        }
        let client = client.clone();
        async move { client.send(request).await }
    });
    (Client::new(service, "default"), reads)
}

/// How many lists of MAPI Machines were sent (a watch is a GET with `watch=true`).
fn machine_lists(reads: &Reads) -> usize {
    let reads = reads.lock().map(|r| r.clone()).unwrap_or_default();
    reads
        .iter()
        .filter(|uri| uri.contains("/machine.openshift.io/") && uri.contains("/machines"))
        .filter(|uri| !uri.contains("watch=true"))
        .count()
}

#[tokio::test]
async fn a_follower_reconciles_from_its_leaders_caches_and_stops_with_it() -> TestResult {
    let env = PairEnv::for_pair::<Pair>().await?;
    common::create_machine_api_machine(&env, "before").await?;
    let (client, reads) = reads_of(env.client());
    let observer = RecordingObserver::new();
    let leader = SyncController::<Pair>::new(client, env.config()).with_observer(Arc::new(observer.clone()));
    let follower = leader.follower(FOLLOWER);
    assert_eq!((leader.name(), follower.name()), ("follower-test", FOLLOWER));
    let mut follower_ready = follower.readiness();
    let (leader_hooks, follower_hooks) = (RecordingHooks::<Pair>::new(), RecordingHooks::<Pair>::new());
    let (stop_leader, leader_stop) = tokio::sync::oneshot::channel::<()>();
    let leader_run = tokio::spawn(leader.run(leader_hooks.clone(), async {
        let _ = leader_stop.await;
    }));
    // The follower is never told to stop: it stops with its leader.
    let follower_run = tokio::spawn(follower.run(follower_hooks.clone(), std::future::pending()));
    assert!(tokio::time::timeout(WAIT, follower_ready.wait()).await?);

    // A name listed before the follower started, and a later change, reach both.
    for hooks in [&leader_hooks, &follower_hooks] {
        hooks.wait_for(WAIT, |call| call.objects.name == "before").await?;
    }
    common::create_machine_api_machine(&env, "after").await?;
    for hooks in [&leader_hooks, &follower_hooks] {
        let call = hooks
            .wait_for(WAIT, |call| {
                call.objects.name == "after" && call.objects.mapi.as_ref().is_some_and(|m| m.status.is_some())
            })
            .await?;
        assert!(call.objects.capi.is_none());
    }
    // Each reports under its own name.
    for controller in ["follower-test", FOLLOWER] {
        observer
            .wait_for(WAIT, |r| r.controller == controller && r.name == "after")
            .await?;
    }
    // The fleet was listed once, by the leader.
    assert_eq!(machine_lists(&reads), 1, "{:?}", reads.lock().map(|r| r.clone()));

    let _ = stop_leader.send(());
    tokio::time::timeout(WAIT, leader_run).await??;
    tokio::time::timeout(WAIT, follower_run).await??;
    assert!(!follower_ready.is_ready());
    Ok(())
}

#[tokio::test]
async fn a_follower_whose_leader_never_runs_stops_when_it_is_dropped() -> TestResult {
    let env = PairEnv::for_pair::<Pair>().await?;
    let leader = SyncController::<Pair>::new(env.client(), env.config());
    let follower = leader.follower(FOLLOWER);
    let hooks = RecordingHooks::<Pair>::new();
    let run = tokio::spawn(follower.run(hooks.clone(), std::future::pending()));
    drop(leader);
    tokio::time::timeout(WAIT, run).await??;
    assert!(hooks.calls().is_empty());
    Ok(())
}

/// A migration hook that says a name is settled from a glance at its MAPI object's
/// `spec.providerID` when that says so (and panics telling for `panicky`), and records
/// the names it was handed.
#[derive(Clone, Default)]
struct SettlingHooks {
    handed: Arc<Mutex<Vec<String>>>,
}

/// The one field [`SettlingHooks`] reads, decoded without the rest of the Machine.
#[derive(serde::Deserialize)]
struct ProviderId {
    spec: ProviderIdSpec,
}

#[derive(serde::Deserialize)]
struct ProviderIdSpec {
    #[serde(rename = "providerID")]
    provider_id: Option<String>,
}

impl MigrationHooks<Pair> for SettlingHooks {
    type Glance = ProviderId;

    fn settled(&self, glance: &ProviderId) -> bool {
        let id = glance.spec.provider_id.as_deref().unwrap_or_default();
        assert_ne!(id, "panicky", "a hook that panics telling");
        id.starts_with("settled")
    }

    async fn reconcile_migration(&self, objects: &SyncObjects<Pair>, _: &SyncContext<Pair>) -> HookResult {
        if let Ok(mut handed) = self.handed.lock() {
            handed.push(objects.name.clone());
        }
        Ok(Action::await_change())
    }
}

/// A migration follower skips a name its hooks call settled, without calling the hook,
/// and hands every other name (one whose `settled` panicked included) to the hook.
#[tokio::test]
async fn a_migration_follower_skips_what_its_hooks_call_settled() -> TestResult {
    let env = PairEnv::for_pair::<Pair>().await?;
    let mapis = Api::<mapi::Machine>::namespaced(env.client(), &env.namespaces().mapi);
    for name in ["settled-a", "moving-b", "panicky"] {
        common::create_machine_api_machine(&env, name).await?;
        let id = json!({"spec": {"providerID": name}});
        mapis
            .patch(name, &PatchParams::default(), &Patch::Merge(id))
            .await?;
    }
    let observer = RecordingObserver::new();
    let leader =
        SyncController::<Pair>::new(env.client(), env.config()).with_observer(Arc::new(observer.clone()));
    let follower = leader.follower(FOLLOWER);
    let hooks = SettlingHooks::default();
    let (stop_leader, leader_stop) = tokio::sync::oneshot::channel::<()>();
    let leader_run = tokio::spawn(leader.run(RecordingHooks::<Pair>::new(), async {
        let _ = leader_stop.await;
    }));
    let follower_run = tokio::spawn(follower.run_migration(hooks.clone(), std::future::pending()));

    let outcome =
        |name: &'static str| observer.wait_for(WAIT, move |r| r.controller == FOLLOWER && r.name == name);
    assert_eq!(
        outcome("settled-a").await?.outcome,
        Outcome::Skipped(SkipReason::Settled)
    );
    for name in ["moving-b", "panicky"] {
        assert_eq!(outcome(name).await?.outcome, Outcome::Migration { failed: false });
    }
    let mut handed = hooks.handed.lock().map(|h| h.clone()).unwrap_or_default();
    handed.sort();
    assert_eq!(handed, ["moving-b", "panicky"]);

    let _ = stop_leader.send(());
    tokio::time::timeout(WAIT, leader_run).await??;
    tokio::time::timeout(WAIT, follower_run).await??;
    Ok(())
}
