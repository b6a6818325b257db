//! The hooks of step 7 on an in-process API server: the CAPI mirror written and the MAPI
//! object `Synchronized=True`.
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use machine_health_check_sync::hooks::MirrorHooks;
use machine_health_check_sync::{MachineHealthCheckSync, capi, mapi};
use serde_json::json;
use sync_core::testing::Hook;
use sync_core::testkit::PairEnv;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn the_hooks_write_the_mirror_and_report_synchronized() -> TestResult {
    // The builder installs more than the pair's CRDs when the hooks need them
    // (`.crd::<K>()` for an owner or infrastructure kind).
    let env = PairEnv::builder()
        .pair::<MachineHealthCheckSync>()
        .start()
        .await?;
    let client = env.client();
    let mapis = Api::<mapi::MachineHealthCheck>::namespaced(client.clone(), &env.namespaces().mapi);
    let capis = Api::<capi::MachineHealthCheck>::namespaced(client, &env.namespaces().capi);
    let hooks = MirrorHooks {
        cluster_name: "demo".into(),
    };
    let running = env.run(hooks).await?;

    let object = mapi::MachineHealthCheck::new("workers", mapi::MachineHealthCheckSpec::default());
    mapis.create(&PostParams::default(), &object).await?;
    let authority = json!({ "status": { "authoritativeAPI": "MachineAPI" } });
    mapis
        .patch_status("workers", &PatchParams::default(), &Patch::Merge(authority))
        .await?;
    let reconciled = running.wait_for_hook("workers", Hook::MapiToCapi, WAIT).await?;
    assert_eq!(
        reconciled.outcome,
        sync_core::Outcome::Synced {
            direction: sync_core::Direction::MapiToCapi,
            failed: false
        }
    );

    let mirror = capis.get("workers").await?;
    assert_eq!(mirror.spec.cluster_name, "demo");
    let synchronized = mapis
        .get("workers")
        .await?
        .status
        .and_then(|s| s.sync.conditions)
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Synchronized")
        .map(|c| c.status);
    assert_eq!(synchronized.as_deref(), Some("True"));

    running.stop().await?;
    Ok(())
}
