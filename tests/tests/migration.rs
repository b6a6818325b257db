//! The migration controllers end to end on envtest, with the sync and the simulated
//! providers (as the operator's ServiceAccount: any Forbidden fails the scenario). Each
//! scenario ends by replaying every watch event of the pair in resourceVersion order
//! ([`AuthorityMonitor`]): never two driving sides.

use std::time::Duration;

use controllers::migration::MigrationConfig;
use e2e::migration::{
    AuthorityMonitor, capi_paused, is_paused, machine_set_settles, machine_settles, migration,
    request_machine, request_machine_set, wait_for_events,
};
use e2e::real::{
    RealSync, aws, aws_cluster, create_aws_machine, create_aws_machine_set, eventually, provider_spec,
};
use e2e::{TestResult, WAIT};
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use sync_core::api::{capi, mapi};
use sync_core::toolkit::SYNC_FINALIZER;
use sync_core::toolkit::condition;

fn config() -> MigrationConfig {
    MigrationConfig::default()
}

async fn mapi_paused(cluster: &e2e::Cluster, name: &str, paused: bool) -> TestResult<mapi::Machine> {
    let api = cluster.mapi_machines();
    eventually(&format!("MAPI Machine {name} Paused={paused}"), || {
        let api = api.clone();
        async move {
            let m = api.get(name).await?;
            let status = condition::find(&m, "Paused").map(|c| c.status == "True");
            Ok((status == Some(paused)).then_some(m))
        }
    })
    .await
}

#[tokio::test]
async fn machine_migrates_to_cluster_api_and_back() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start_migrating(&cluster, true, config()).await?;
    let monitor = AuthorityMonitor::start::<mapi::Machine, capi::Machine>(&cluster, Some("AWSMachine"));
    create_aws_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &[("team", "a")],
        None,
        provider_spec("m6i.large"),
    )
    .await?;
    machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    mapi_paused(&cluster, "w-1", false).await?;

    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    let machine = machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    assert_eq!(migration(&machine), Some(("True".into(), "Migrated".into())));
    let capi = cluster.capi_machines().get("w-1").await?;
    assert!(
        !is_paused(&capi),
        "the CAPI Machine drives: {:?}",
        capi.annotations()
    );
    assert!(!is_paused(&aws(&cluster, "AWSMachine").get("w-1").await?));
    assert!(capi.finalizers().contains(&SYNC_FINALIZER.to_owned()));
    assert_eq!(machine.labels().get("team").map(String::as_str), Some("a"));
    mapi_paused(&cluster, "w-1", true).await?;
    wait_for_events(
        &cluster,
        &cluster.namespaces.mapi,
        "w-1",
        &[
            "MigrationStarted",
            "WaitingForPaused",
            "Unpausing",
            "MigrationCompleted",
        ],
    )
    .await?;

    request_machine(&cluster, "w-1", "MachineAPI").await?;
    let machine = machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    assert_eq!(migration(&machine), Some(("True".into(), "Migrated".into())));
    let capi = cluster.capi_machines().get("w-1").await?;
    assert!(is_paused(&capi));
    assert!(is_paused(&aws(&cluster, "AWSMachine").get("w-1").await?));
    let paused = eventually("the CAPI Machine reports Paused", || async {
        let capi = cluster.capi_machines().get("w-1").await?;
        Ok(
            (capi_paused(capi.status.as_ref().and_then(|s| s.conditions.as_deref())) == Some(true))
                .then_some(()),
        )
    });
    paused.await?;
    mapi_paused(&cluster, "w-1", false).await?;
    wait_for_events(&cluster, &cluster.namespaces.mapi, "w-1", &["Pausing"]).await?;
    assert!(monitor.check()? > 0);
    sync.stop().await
}

#[tokio::test]
async fn machine_set_migrates_to_cluster_api_and_back() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start_migrating(&cluster, true, config()).await?;
    let monitor =
        AuthorityMonitor::start::<mapi::MachineSet, capi::MachineSet>(&cluster, Some("AWSMachineTemplate"));
    create_aws_machine_set(&cluster, "s-1", "MachineAPI", 0, provider_spec("m6i.large")).await?;
    machine_set_settles(&cluster, "s-1", "MachineAPI", WAIT).await?;

    request_machine_set(&cluster, "s-1", "ClusterAPI").await?;
    let set = machine_set_settles(&cluster, "s-1", "ClusterAPI", WAIT).await?;
    assert_eq!(migration(&set), Some(("True".into(), "Migrated".into())));
    let capi = cluster.capi_machine_sets().get("s-1").await?;
    assert!(!is_paused(&capi));
    let template = capi.spec.template.spec.infrastructure_ref.name.clone();
    assert!(!is_paused(
        &aws(&cluster, "AWSMachineTemplate").get(&template).await?
    ));

    request_machine_set(&cluster, "s-1", "MachineAPI").await?;
    let set = machine_set_settles(&cluster, "s-1", "MachineAPI", WAIT).await?;
    assert_eq!(migration(&set), Some(("True".into(), "Migrated".into())));
    assert!(is_paused(&cluster.capi_machine_sets().get("s-1").await?));
    wait_for_events(
        &cluster,
        &cluster.namespaces.mapi,
        "s-1",
        &["MigrationStarted", "Pausing", "MigrationCompleted"],
    )
    .await?;
    monitor.check()?;
    sync.stop().await
}

/// The synchronized check comes before `Migrating`: a pair whose mirror is not in sync
/// waits (and says so), and migrates once the sync catches up.
#[tokio::test]
async fn a_request_waits_for_the_sync_before_migrating() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start_migrating(&cluster, true, config()).await?;
    let mut bad = provider_spec("m6i.large");
    bad["networkInterfaceType"] = json!("Unsupported");
    bad["deviceIndex"] = json!(2);
    create_aws_machine(&cluster, "w-1", "MachineAPI", &[], None, bad).await?;
    eventually("Synchronized=False", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((e2e::real::synchronized(&m).is_some_and(|(s, _)| s == "False")).then_some(()))
    })
    .await?;
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    let waiting = eventually("Migration=Unknown WaitingForSynchronization", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((migration(&m) == Some(("Unknown".into(), "WaitingForSynchronization".into()))).then_some(m))
    })
    .await?;
    assert_eq!(
        e2e::real::authority_of(&waiting)
            .map(|a| a.to_string())
            .as_deref(),
        Some("MachineAPI")
    );
    // Fixed: the sync catches up, the migration goes on by itself.
    cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"providerSpec": {"value": provider_spec("m6i.large")}}})),
        )
        .await?;
    let json_patch = json!([{"op": "remove", "path": "/spec/providerSpec/value/deviceIndex"}]);
    let _ = cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(json_patch)?),
        )
        .await;
    let _ = cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(
                json!([{"op": "remove", "path": "/spec/providerSpec/value/networkInterfaceType"}]),
            )?),
        )
        .await;
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    sync.stop().await
}

/// Without providers nothing reports Paused: after the stall timeout the migration says
/// why (condition and Warning Event); changing the request back cancels it.
#[tokio::test]
async fn a_pause_that_never_comes_is_reported_and_can_be_cancelled() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start_migrating(
        &cluster,
        false,
        MigrationConfig {
            stall_timeout: Duration::from_secs(1),
        },
    )
    .await?;
    let monitor = AuthorityMonitor::start::<mapi::Machine, capi::Machine>(&cluster, Some("AWSMachine"));
    create_aws_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &[],
        None,
        provider_spec("m6i.large"),
    )
    .await?;
    machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    let stalled = eventually("Migration=False PauseTimedOut", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((migration(&m) == Some(("False".into(), "PauseTimedOut".into()))).then_some(m))
    })
    .await?;
    assert_eq!(
        stalled
            .status
            .as_ref()
            .and_then(|s| s.sync.authoritative_api.as_ref())
            .map(|a| a.as_str()),
        Some("Migrating")
    );
    let note = cluster
        .wait_for_warning(&cluster.namespaces.mapi, "MigrationStalled", "w-1")
        .await?;
    assert!(note.contains("MachineAPI to report Paused=True"), "{note}");
    // The CAPI side was never unpaused.
    assert!(is_paused(&cluster.capi_machines().get("w-1").await?));

    request_machine(&cluster, "w-1", "MachineAPI").await?;
    // Rolling back waits for the CAPI side to report Paused too; with no providers the
    // test is the CAPI Machine controller.
    eventually("the rollback waiting for ClusterAPI to pause", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        let c = condition::find(&m, "Migration").cloned();
        Ok(c.filter(|c| {
            c.message
                .as_deref()
                .is_some_and(|m| m.contains("ClusterAPI to report Paused"))
        })
        .map(|_| ()))
    })
    .await?;
    let paused = json!({"status": {"conditions": [{
        "type": "Paused", "status": "True", "reason": "Paused", "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    cluster
        .capi_machines()
        .patch_status("w-1", &PatchParams::default(), &Patch::Merge(&paused))
        .await?;
    let machine = machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    assert_eq!(migration(&machine), Some(("True".into(), "RolledBack".into())));
    assert!(is_paused(&cluster.capi_machines().get("w-1").await?));
    wait_for_events(
        &cluster,
        &cluster.namespaces.mapi,
        "w-1",
        &["MigrationRolledBack"],
    )
    .await?;
    monitor.check()?;
    sync.stop().await
}
