//! The watches' taps on envtest: other components follow the MAPI objects through the
//! controller's own watch — each listed object, each change, each deletion — each tap
//! added sees them all, and a tap that panics costs it that one object, not the watch; a CAPI tap wakes a name parked
//! under a CAPI object, which the controller then reconciles (`reconcile_on`).
#![cfg(feature = "testkit")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use sync_core::api::{capi, mapi};
use sync_core::testing::{HookCall, RecordingHooks};
use sync_core::testkit::PairEnv;
use sync_core::wakeups::Wakeups;
use sync_core::{SyncController, Touched, WatchTap};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);

common::machines_without_infra!(Pair, "tap-test");

/// What a tap saw, one line per object: `present <name> <label a>` or `gone <name>`.
type Seen = Arc<Mutex<Vec<String>>>;

/// A tap on a watch of `K` that records what it sees, and panics on `panicky`.
fn recording_tap<K: Resource>() -> (WatchTap<K>, Seen) {
    let seen = Seen::default();
    let record = seen.clone();
    let tap: WatchTap<K> = Arc::new(move |touched: &Touched<'_, K>| {
        assert_ne!(touched.name(), "panicky", "a tap that panics");
        let line = match touched {
            Touched::Present(object) => {
                let label = object.meta().labels.as_ref().and_then(|l| l.get("a"));
                format!("present {} {}", touched.name(), label.map_or("-", String::as_str))
            }
            Touched::Gone(_) => format!("gone {}", touched.name()),
            Touched::Malformed(_) | Touched::MalformedGone(_) => format!("malformed {}", touched.name()),
        };
        if let Ok(mut seen) = record.lock() {
            seen.push(line);
        }
    });
    (tap, seen)
}

fn lines(seen: &Seen) -> Vec<String> {
    seen.lock().map(|s| s.clone()).unwrap_or_default()
}

/// Waits until the tap has seen `line`.
async fn saw(seen: &Seen, line: &str) -> TestResult {
    tokio::time::timeout(WAIT, async {
        while !lines(seen).iter().any(|l| l == line) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| format!("the tap never saw {line:?}; it saw {:?}", lines(seen)).into())
}

#[tokio::test]
async fn a_tap_sees_every_listed_changed_and_deleted_mapi_object_and_survives_its_own_panic() -> TestResult {
    let env = PairEnv::for_pair::<Pair>().await?;
    common::create_machine_api_machine(&env, "listed").await?;
    let (tap, seen) = recording_tap::<mapi::Machine>();
    let (second_tap, second_seen) = recording_tap::<mapi::Machine>();
    let (follower_tap, follower_seen) = recording_tap::<mapi::Machine>();
    let leader = SyncController::<Pair>::new(env.client(), env.config())
        .with_mapi_tap(tap)
        .with_mapi_tap(second_tap);
    let follower = leader.follower("tap-test-follower").with_mapi_tap(follower_tap);
    let hooks = RecordingHooks::<Pair>::new();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async {
        let _ = stopped.await;
    };
    let leader_run = tokio::spawn(leader.run(hooks.clone(), shutdown));
    let follower_run = tokio::spawn(follower.run(RecordingHooks::<Pair>::new(), std::future::pending()));

    // The first list, then a tap that panics on one object: that object is still
    // reconciled, and the watch goes on to the next change.
    saw(&seen, "present listed -").await?;
    common::create_machine_api_machine(&env, "panicky").await?;
    hooks
        .wait_for(WAIT, |call| call.objects.name == "panicky")
        .await?;
    let machines = Api::<mapi::Machine>::namespaced(env.client(), &env.namespaces().mapi);
    let label = json!({"metadata": {"labels": {"a": "b"}}});
    machines
        .patch("listed", &PatchParams::default(), &Patch::Merge(label))
        .await?;
    saw(&seen, "present listed b").await?;
    machines.delete("listed", &DeleteParams::default()).await?;
    saw(&seen, "gone listed").await?;
    assert!(
        !lines(&seen).iter().any(|line| line.contains("panicky")),
        "{:?}",
        lines(&seen)
    );

    let _ = stop.send(());
    tokio::time::timeout(WAIT, leader_run).await??;
    tokio::time::timeout(WAIT, follower_run).await??;
    // Taps add up: the second saw everything the first did, the panicky object's panic
    // in the first one costing it nothing.
    assert_eq!(lines(&second_seen), lines(&seen));
    // A follower watches nothing: its tap saw nothing.
    assert_eq!(lines(&follower_seen), Vec::<String>::new());
    Ok(())
}

/// The CAPI watch's tap wakes a name parked under a CAPI object, and the controller
/// reconciles the woken name though none of its own objects changed: a hook's wait for
/// another object ends on that object's event ([`Wakeups`], `reconcile_on`).
#[tokio::test]
async fn a_capi_tap_wakes_a_parked_name_and_the_controller_reconciles_it_on_that() -> TestResult {
    let env = PairEnv::for_pair::<Pair>().await?;
    common::create_machine_api_machine(&env, "waiting").await?;
    let (waiting, woken) = Wakeups::new();
    let (seen_tap, seen) = recording_tap::<capi::Machine>();
    let wake = waiting.clone();
    let tap: WatchTap<capi::Machine> = Arc::new(move |touched: &Touched<'_, capi::Machine>| {
        seen_tap(touched);
        if let Touched::Present(_) = touched {
            wake.wake(touched.name());
        }
    });
    let controller = SyncController::<Pair>::new(env.client(), env.config())
        .with_capi_tap(tap)
        .reconcile_on(woken);
    let hooks = RecordingHooks::<Pair>::new();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(controller.run(hooks.clone(), async {
        let _ = stopped.await;
    }));

    let first = hooks
        .wait_for(WAIT, |call| call.objects.name == "waiting")
        .await?;
    waiting.park("awaited", "waiting");
    common::create_capi_machine(&env, "awaited").await?;
    saw(&seen, "present awaited -").await?;
    tokio::time::timeout(WAIT, async {
        while hooks.calls_for("waiting").len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| "the woken name was never reconciled again")?;
    let calls = hooks.calls_for("waiting");
    let version = |call: &HookCall<Pair>| call.objects.mapi.as_ref()?.metadata.resource_version.clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        version(&calls[1]),
        version(&first),
        "the second reconcile came from the wake, not from a change of its own"
    );
    assert_eq!(waiting.parked(), 0);

    Api::<capi::Machine>::namespaced(env.client(), &env.namespaces().capi)
        .delete("awaited", &DeleteParams::default())
        .await?;
    saw(&seen, "gone awaited").await?;
    let _ = stop.send(());
    tokio::time::timeout(WAIT, run).await??;
    Ok(())
}
