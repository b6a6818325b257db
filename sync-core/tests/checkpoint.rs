//! The restart checkpoint on envtest: a controller that stops saves the pairs it verified
//! in sync; the next run skips their hooks while their objects are unchanged, and runs
//! them for everything else.
#![cfg(feature = "testkit")]

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use sync_core::api::mapi;
use sync_core::checkpoint::Checkpoint;
use sync_core::testing::{Hook, RecordingHooks};
use sync_core::testkit::{PairEnv, RunningPair};
use sync_core::{Action, HookResult, SkipReason, SyncContext, SyncController, SyncHooks, SyncObjects};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);

common::machines_without_infra!(Pair, "checkpoint-test");

/// Recording hooks that leave `requeued` and `failing` unsettled: those ask to be
/// reconciled again, and so are never verified.
#[derive(Clone, Default)]
struct Hooks(RecordingHooks<Pair>);

impl SyncHooks<Pair> for Hooks {
    async fn reconcile_mapi_to_capi(
        &self,
        objects: &SyncObjects<Pair>,
        ctx: &SyncContext<Pair>,
    ) -> HookResult {
        self.0.reconcile_mapi_to_capi(objects, ctx).await?;
        match objects.name.as_str() {
            "requeued" => Ok(Action::requeue(Duration::from_secs(3600))),
            "failing" => Err("failing on purpose".into()),
            _ => Ok(Action::await_change()),
        }
    }
}

async fn create_pair(env: &PairEnv, name: &str, with_capi: bool) -> TestResult {
    common::create_machine_api_machine(env, name).await?;
    if with_capi {
        common::create_capi_machine(env, name).await?;
    }
    Ok(())
}

async fn label(env: &PairEnv, name: &str, value: &str) -> TestResult {
    let patch = Patch::Merge(json!({"metadata": {"labels": {"touched": value}}}));
    Api::<mapi::Machine>::namespaced(env.client(), &env.namespaces().mapi)
        .patch(name, &PatchParams::default(), &patch)
        .await?;
    Ok(())
}

async fn run(env: &PairEnv, scope: &str) -> Result<(RunningPair<Pair>, Hooks), Box<dyn std::error::Error>> {
    let hooks = Hooks::default();
    let checkpoint = Checkpoint::new(&env.namespaces().capi, &scope);
    let controller = SyncController::<Pair>::new(env.client(), env.config()).with_checkpoint(checkpoint);
    Ok((env.run_with(controller, hooks.clone()).await?, hooks))
}

/// Waits until every name of `names` had a hook call.
async fn hooked(running: &RunningPair<Pair>, names: &[&str]) -> TestResult {
    for name in names {
        running.wait_for_hook(name, Hook::MapiToCapi, WAIT).await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_restart_skips_only_the_pairs_verified_unchanged() -> TestResult {
    let env = PairEnv::for_pair::<Pair>().await?;
    for (name, with_capi) in [
        ("same", true),
        ("changed", true),
        ("mapi-only", false),
        ("requeued", true),
        ("failing", true),
    ] {
        create_pair(&env, name, with_capi).await?;
    }
    let all = ["same", "changed", "mapi-only", "requeued", "failing"];

    // First run: no checkpoint, every hook runs; stopping saves the two verified pairs
    // with both sides (a MAPI-only pair is never checkpointed).
    let (running, _) = run(&env, "scope-1").await?;
    hooked(&running, &all).await?;
    running.stop().await?;
    let config_maps = Api::<ConfigMap>::namespaced(env.client(), &env.namespaces().capi);
    let saved = config_maps.get("checkpoint-test-checkpoint").await?;
    let fingerprints = saved.binary_data.as_ref().and_then(|d| d.get("fingerprints"));
    assert_eq!(fingerprints.map(|f| f.0.len()), Some(2 * 8), "{saved:?}");
    let saved_version = saved.metadata.resource_version.clone();

    // While stopped, one verified pair changes.
    label(&env, "changed", "while-stopped").await?;

    // Second run: the unchanged verified pair is skipped, everything else runs its hook.
    let (running, hooks) = run(&env, "scope-1").await?;
    hooked(&running, &["changed", "mapi-only", "requeued", "failing"]).await?;
    running
        .wait_for_skip("same", SkipReason::Checkpointed, WAIT)
        .await?;
    assert!(hooks.0.calls_for("same").is_empty(), "{:?}", hooks.0.calls());
    // Only the first reconcile is skipped: a change runs the hook again.
    label(&env, "same", "after-restart").await?;
    running.wait_for_hook("same", Hook::MapiToCapi, WAIT).await?;
    running.stop().await?;
    let resaved = config_maps.get("checkpoint-test-checkpoint").await?;
    assert_ne!(
        resaved.metadata.resource_version, saved_version,
        "the changed pairs re-saved"
    );

    // A stop with nothing changed since the load writes nothing.
    let (running, hooks) = run(&env, "scope-1").await?;
    for name in ["same", "changed"] {
        running
            .wait_for_skip(name, SkipReason::Checkpointed, WAIT)
            .await?;
    }
    hooked(&running, &["mapi-only", "requeued", "failing"]).await?;
    assert!(hooks.0.calls_for("same").is_empty() && hooks.0.calls_for("changed").is_empty());
    running.stop().await?;
    let unchanged = config_maps.get("checkpoint-test-checkpoint").await?;
    assert_eq!(
        unchanged.metadata.resource_version,
        resaved.metadata.resource_version
    );

    // Another scope (another build, cluster or namespaces) trusts nothing.
    let (running, _) = run(&env, "scope-2").await?;
    hooked(&running, &all).await?;
    running.stop().await?;
    Ok(())
}

#[tokio::test]
async fn an_unreadable_checkpoint_reconciles_everything() -> TestResult {
    let env = PairEnv::for_pair::<Pair>().await?;
    create_pair(&env, "a", true).await?;
    let config_maps = Api::<ConfigMap>::namespaced(env.client(), &env.namespaces().capi);
    let torn = serde_json::from_value::<ConfigMap>(json!({
        "metadata": {"name": "checkpoint-test-checkpoint"},
        "data": {"scope": "not a scope"},
        "binaryData": {"fingerprints": "AAE="},
    }))?;
    config_maps.create(&PostParams::default(), &torn).await?;
    let (running, _) = run(&env, "scope").await?;
    hooked(&running, &["a"]).await?;
    running.stop().await?;
    // Replaced by a good one.
    let (running, hooks) = run(&env, "scope").await?;
    running.wait_for_skip("a", SkipReason::Checkpointed, WAIT).await?;
    assert!(hooks.0.calls().is_empty());
    running.stop().await?;
    Ok(())
}
