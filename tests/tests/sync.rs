//! The end-to-end sync suite: the real `MachineSync`/`MachineSetSync` wiring against an
//! API server, observed through recording hooks (issue 4's scenarios, one test each).
//! The hooks are stubs, so each test stages both sides of a pair itself, which the
//! admission policies would refuse: this suite runs without them (`real_sync.rs`,
//! `migration.rs` and `guards.rs` run with them).

use std::time::Duration;

use controllers::machine::MachineSync;
use controllers::machine_set::MachineSetSync;
use e2e::{Cluster, Controllers, INFRA_GROUP, TestResult, WAIT, infra_crd, init_logging};
use kube::ResourceExt;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use sync_core::api::{GroupKind, InfraRef, MACHINESET_LABEL, mapi};
use sync_core::infra::WatchStatus;
use sync_core::observe::{Outcome, SkipReason};
use sync_core::testing::{Hook, HookCall, RecordingHooks};
use sync_core::{Direction, Namespaces, SyncPair};

const MACHINES: &str = <MachineSync as SyncPair>::NAME;
const MACHINE_SETS: &str = <MachineSetSync as SyncPair>::NAME;
const DEV: &str = "DevMachine";
const DEV_TEMPLATE: &str = "DevMachineTemplate";
const AWS: &str = "AWSMachine";
const AWS_TEMPLATE: &str = "AWSMachineTemplate";

/// A cluster with the Dev (contract label, two versions) and AWS (discovery only) kinds.
async fn cluster_with_infra_kinds() -> TestResult<Cluster> {
    init_logging();
    let cluster = Cluster::start_without_policies().await?;
    cluster
        .install_crd(&infra_crd(DEV, &["v1beta1", "v1beta2"], Some("v1beta1_v1beta2")))
        .await?;
    cluster
        .install_crd(&infra_crd(
            DEV_TEMPLATE,
            &["v1beta1", "v1beta2"],
            Some("v1beta1_v1beta2"),
        ))
        .await?;
    cluster.install_crd(&infra_crd(AWS, &["v1beta2"], None)).await?;
    cluster
        .install_crd(&infra_crd(AWS_TEMPLATE, &["v1beta2"], None))
        .await?;
    Ok(cluster)
}

/// Waits until `controller` has reconciled `name` with `outcome`.
async fn reconciled(controllers: &Controllers, controller: &str, name: &str, outcome: Outcome) -> TestResult {
    controllers
        .observer
        .wait_for(WAIT, |r| {
            r.controller == controller && r.name == name && r.outcome == outcome
        })
        .await?;
    Ok(())
}

/// A reference to the infrastructure object `name` of `kind` in the test group, version
/// left to resolve.
fn infra_ref(kind: &str, name: &str) -> InfraRef {
    InfraRef {
        group: INFRA_GROUP.into(),
        version: None,
        kind: kind.into(),
        name: name.into(),
    }
}

/// A MachineAPI-authoritative Machine pair `name` and the infrastructure object of `kind`
/// its CAPI side references, of the same name.
async fn create_pair(cluster: &Cluster, kind: &str, name: &str) -> TestResult {
    cluster.create_infra(kind, "v1beta2", name, &[]).await?;
    cluster.create_mapi_machine(name, Some("MachineAPI")).await?;
    cluster.create_capi_machine(name, (kind, name), None).await?;
    Ok(())
}

/// Whether `call` saw `infra` at its current resourceVersion.
fn saw<P: SyncPair>(call: &HookCall<P>, infra: &DynamicObject) -> bool {
    call.objects
        .infra
        .as_ref()
        .is_some_and(|i| i.resource_version() == infra.resource_version())
}

/// Changes the infrastructure object `name` of `kind` and waits for the first call of
/// `hooks` that saw the change.
async fn touch_and_wait<P: SyncPair>(
    cluster: &Cluster,
    hooks: &RecordingHooks<P>,
    kind: &str,
    name: &str,
    generation: u64,
) -> TestResult<HookCall<P>> {
    cluster.touch_infra(kind, "v1beta2", name, generation).await?;
    let changed = cluster.infra(kind, "v1beta2").get(name).await?;
    Ok(hooks.wait_for(WAIT, |c| saw(c, &changed)).await?)
}

fn skipped(reason: SkipReason) -> Outcome {
    Outcome::Skipped(reason)
}

#[tokio::test]
async fn s01_machine_api_authoritative_syncs_mapi_to_capi_with_both_cached_objects() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;

    // Without a CAPI mirror.
    cluster.create_mapi_machine("alone", Some("MachineAPI")).await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "alone" && c.hook == Hook::MapiToCapi)
        .await?;
    assert!(call.objects.capi.is_none());
    assert_eq!(
        call.objects.mapi.as_ref().map(|m| m.name_any()).as_deref(),
        Some("alone")
    );

    // With a CAPI mirror: both objects as cached.
    cluster
        .create_capi_machine("paired", (DEV, "paired"), None)
        .await?;
    let mapi = cluster.create_mapi_machine("paired", Some("MachineAPI")).await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "paired"
                && c.hook == Hook::MapiToCapi
                && c.objects.capi.is_some()
                && c.objects
                    .mapi
                    .as_ref()
                    .is_some_and(|m| m.resource_version() == mapi.resource_version())
        })
        .await?;
    let capi = call.objects.capi.as_ref().ok_or("no capi")?;
    assert_eq!(
        capi.namespace().as_deref(),
        Some(cluster.namespaces.capi.as_str())
    );
    assert_eq!(call.objects.infra_ref().map(|r| r.kind.as_str()), Some(DEV));
    assert!(
        controllers
            .machines
            .calls()
            .iter()
            .all(|c| c.hook == Hook::MapiToCapi)
    );
    controllers.stop().await
}

#[tokio::test]
async fn s02_cluster_api_authoritative_syncs_capi_to_mapi() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster
        .create_capi_machine("worker", (DEV, "worker"), None)
        .await?;
    cluster.create_mapi_machine("worker", Some("ClusterAPI")).await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "worker" && c.hook == Hook::CapiToMapi && c.objects.mapi.is_some()
        })
        .await?;
    assert!(call.objects.capi.is_some());
    assert!(
        controllers
            .machines
            .calls()
            .iter()
            .all(|c| c.hook != Hook::MapiToCapi)
    );

    // MachineSets switch the same way.
    cluster
        .create_capi_machine_set("set", (DEV_TEMPLATE, "set"))
        .await?;
    cluster.create_mapi_machine_set("set", Some("ClusterAPI")).await?;
    controllers
        .machine_sets
        .wait_for(WAIT, |c| {
            c.objects.name == "set" && c.hook == Hook::CapiToMapi && c.objects.mapi.is_some()
        })
        .await?;
    controllers.stop().await
}

#[tokio::test]
async fn s03_migrating_empty_and_unknown_authority_run_no_hook() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster
        .create_mapi_machine("migrating", Some("Migrating"))
        .await?;
    cluster.create_mapi_machine("empty", None).await?;
    // The real CRD's enum forbids unknown values: only a newer (skewed) CRD lets one in.
    cluster.skew_crd("machines.machine.openshift.io").await?;
    cluster.create_mapi_machine("unknown", Some("Kubelet")).await?;

    reconciled(
        &controllers,
        MACHINES,
        "migrating",
        skipped(SkipReason::Migrating),
    )
    .await?;
    reconciled(&controllers, MACHINES, "empty", skipped(SkipReason::NoAuthority)).await?;
    reconciled(
        &controllers,
        MACHINES,
        "unknown",
        skipped(SkipReason::UnknownAuthority),
    )
    .await?;
    let note = cluster
        .wait_for_warning(&cluster.namespaces.mapi, "UnknownAuthoritativeAPI", "unknown")
        .await?;
    assert!(note.contains("Kubelet"), "{note}");
    assert!(
        controllers.machines.calls().is_empty(),
        "{:?}",
        controllers.machines.calls()
    );
    controllers.stop().await
}

#[tokio::test]
async fn s04_capi_only_machine_set_runs_no_hook() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster
        .create_capi_machine_set("capi-only", (DEV_TEMPLATE, "capi-only"))
        .await?;
    reconciled(
        &controllers,
        MACHINE_SETS,
        "capi-only",
        skipped(SkipReason::CapiOnlyIgnored),
    )
    .await?;
    assert!(controllers.machine_sets.calls().is_empty());
    controllers.stop().await
}

#[tokio::test]
async fn s05_capi_only_machine_of_a_mirrored_machine_set_syncs_to_mapi() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_mapi_machine_set("set", Some("ClusterAPI")).await?;
    let set = cluster
        .create_capi_machine_set("set", (DEV_TEMPLATE, "set"))
        .await?;
    cluster
        .create_capi_machine("set-abc12", (DEV, "set-abc12"), Some(&set))
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "set-abc12" && c.hook == Hook::CapiToMapi
        })
        .await?;
    assert!(call.objects.mapi.is_none(), "the mirror does not exist yet");
    assert!(call.objects.capi.is_some());
    controllers.stop().await
}

#[tokio::test]
async fn s06_capi_only_machine_syncs_once_its_machine_set_gets_a_mirror() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    let set = cluster
        .create_capi_machine_set("set", (DEV_TEMPLATE, "set"))
        .await?;
    cluster
        .create_capi_machine("set-xyz", (DEV, "set-xyz"), Some(&set))
        .await?;
    reconciled(
        &controllers,
        MACHINES,
        "set-xyz",
        skipped(SkipReason::CapiOnlyOwnerNotMirrored),
    )
    .await?;
    assert!(controllers.machines.calls_for("set-xyz").is_empty());

    // Only the MAPI MachineSet appears; nothing else changes.
    cluster.create_mapi_machine_set("set", None).await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "set-xyz" && c.hook == Hook::CapiToMapi
        })
        .await?;
    assert!(call.objects.mapi.is_none());
    controllers.stop().await
}

#[tokio::test]
async fn s07_capi_only_machine_without_owner_runs_no_hook() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster
        .create_capi_machine("orphan", (DEV, "orphan"), None)
        .await?;
    reconciled(
        &controllers,
        MACHINES,
        "orphan",
        skipped(SkipReason::CapiOnlyOwnerNotMirrored),
    )
    .await?;
    assert!(controllers.machines.calls().is_empty());
    controllers.stop().await
}

#[tokio::test]
async fn s08_deleting_either_object_runs_the_deletion_hook_with_it() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    let finalizer = json!({ "metadata": { "finalizers": ["e2e.test/hold"] } });

    // The MAPI object is deleted (MAPI authoritative).
    cluster
        .create_mapi_machine("mapi-gone", Some("MachineAPI"))
        .await?;
    cluster
        .mapi_machines()
        .patch("mapi-gone", &PatchParams::default(), &Patch::Merge(&finalizer))
        .await?;
    cluster
        .mapi_machines()
        .delete("mapi-gone", &DeleteParams::default())
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "mapi-gone" && c.hook == Hook::Deletion(Direction::MapiToCapi)
        })
        .await?;
    let deleting = call.objects.mapi.as_ref().ok_or("no mapi")?;
    assert!(deleting.metadata.deletion_timestamp.is_some());

    // The CAPI object is deleted (Cluster API authoritative).
    cluster
        .create_capi_machine("capi-gone", (DEV, "capi-gone"), None)
        .await?;
    cluster
        .create_mapi_machine("capi-gone", Some("ClusterAPI"))
        .await?;
    cluster
        .capi_machines()
        .patch("capi-gone", &PatchParams::default(), &Patch::Merge(&finalizer))
        .await?;
    cluster
        .capi_machines()
        .delete("capi-gone", &DeleteParams::default())
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "capi-gone" && c.hook == Hook::Deletion(Direction::CapiToMapi)
        })
        .await?;
    let deleting = call.objects.capi.as_ref().ok_or("no capi")?;
    assert!(deleting.metadata.deletion_timestamp.is_some());
    controllers.stop().await
}

#[tokio::test]
async fn s09_same_named_objects_in_other_namespaces_trigger_nothing() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    let elsewhere = Namespaces {
        mapi: format!("{}-other", cluster.namespaces.mapi),
        capi: format!("{}-other", cluster.namespaces.capi),
    };
    cluster.create_namespace(&elsewhere.mapi).await?;
    cluster.create_namespace(&elsewhere.capi).await?;
    let other_mapi: kube::Api<mapi::Machine> = kube::Api::namespaced(cluster.client.clone(), &elsewhere.mapi);
    other_mapi
        .create(
            &PostParams::default(),
            &mapi::Machine::new("ghost", Default::default()),
        )
        .await?;
    let other_capi: kube::Api<sync_core::api::capi::Machine> =
        kube::Api::namespaced(cluster.client.clone(), &elsewhere.capi);
    let ghost = sync_core::api::capi::Machine::new("ghost-capi", e2e::capi_machine_spec((DEV, "ghost-capi")));
    other_capi.create(&PostParams::default(), &ghost).await?;

    // Sentinels written after the ghosts on the same (namespaced) watches.
    cluster
        .create_mapi_machine("sentinel", Some("MachineAPI"))
        .await?;
    cluster
        .create_capi_machine("sentinel-capi", (DEV, "sentinel-capi"), None)
        .await?;
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "sentinel")
        .await?;
    reconciled(
        &controllers,
        MACHINES,
        "sentinel-capi",
        skipped(SkipReason::CapiOnlyOwnerNotMirrored),
    )
    .await?;
    let ghosts: Vec<_> = controllers
        .observer
        .reconciles()
        .into_iter()
        .filter(|r| r.name.starts_with("ghost"))
        .collect();
    assert!(ghosts.is_empty(), "{ghosts:?}");
    controllers.stop().await
}

#[tokio::test]
async fn s10_an_update_to_the_capi_object_reconciles_the_pair() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_mapi_machine("worker", Some("MachineAPI")).await?;
    cluster
        .create_capi_machine("worker", (DEV, "worker"), None)
        .await?;
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "worker" && c.objects.capi.is_some())
        .await?;

    let patch = json!({ "spec": { "providerID": "dev://worker" } });
    let updated = cluster
        .capi_machines()
        .patch("worker", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects
                .capi
                .as_ref()
                .is_some_and(|m| m.resource_version() == updated.resource_version())
        })
        .await?;
    // Keyed in the MAPI namespace: the MAPI object came with it.
    assert_eq!(call.objects.name, "worker");
    assert!(call.objects.mapi.is_some());
    controllers.stop().await
}

#[tokio::test]
async fn s11_infrastructure_changes_reconcile_the_right_pairs() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    // Two kinds of InfraMachine, each referenced by its own Machine.
    cluster.create_infra(DEV, "v1beta2", "dev-infra", &[]).await?;
    cluster.create_infra(AWS, "v1beta2", "aws-infra", &[]).await?;
    cluster
        .create_mapi_machine("dev-machine", Some("MachineAPI"))
        .await?;
    cluster
        .create_mapi_machine("aws-machine", Some("MachineAPI"))
        .await?;
    cluster
        .create_capi_machine("dev-machine", (DEV, "dev-infra"), None)
        .await?;
    cluster
        .create_capi_machine("aws-machine", (AWS, "aws-infra"), None)
        .await?;
    // An InfraMachineTemplate, labelled for its MachineSet.
    cluster
        .create_infra(
            AWS_TEMPLATE,
            "v1beta2",
            "aws-template",
            &[(MACHINESET_LABEL, "set")],
        )
        .await?;
    cluster.create_mapi_machine_set("set", Some("MachineAPI")).await?;
    cluster
        .create_capi_machine_set("set", (AWS_TEMPLATE, "aws-template"))
        .await?;
    wait_watching(&controllers, &[DEV, AWS, AWS_TEMPLATE]).await?;
    controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "aws-machine" && c.objects.infra.is_some()
        })
        .await?;
    controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "dev-machine" && c.objects.infra.is_some()
        })
        .await?;
    controllers
        .machine_sets
        .wait_for(WAIT, |c| c.objects.name == "set" && c.objects.infra.is_some())
        .await?;

    for (kind, name, machine) in [
        (DEV, "dev-infra", "dev-machine"),
        (AWS, "aws-infra", "aws-machine"),
    ] {
        let before = controllers.machines.calls().len();
        let call = touch_and_wait(&cluster, &controllers.machines, kind, name, 1).await?;
        assert_eq!(call.objects.name, machine);
        let after: Vec<_> = controllers.machines.calls().into_iter().skip(before).collect();
        assert!(after.iter().all(|c| c.objects.name == machine), "{after:?}");
    }

    let call = touch_and_wait(
        &cluster,
        &controllers.machine_sets,
        AWS_TEMPLATE,
        "aws-template",
        1,
    )
    .await?;
    assert_eq!(call.objects.name, "set");

    // The whole object is one call away.
    let ctx_object = controllers
        .tracker
        .fetch(call.objects.infra_ref().ok_or("no ref")?)
        .await?;
    assert_eq!(
        ctx_object.map(|o| o.data["spec"]["generation"].clone()),
        Some(json!(1))
    );
    controllers.stop().await
}

#[tokio::test]
async fn s12_an_infrastructure_crd_installed_later_is_watched_without_a_restart() -> TestResult {
    init_logging();
    let cluster = Cluster::start_without_policies().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_mapi_machine("late", Some("MachineAPI")).await?;
    cluster
        .create_capi_machine("late", ("LateMachine", "late-infra"), None)
        .await?;
    let late = GroupKind {
        group: INFRA_GROUP.into(),
        kind: "LateMachine".into(),
    };
    wait_status(&controllers, &late, |s| matches!(s, Some(WatchStatus::Failed(_)))).await?;

    cluster
        .install_crd(&infra_crd("LateMachine", &["v1beta2"], Some("v1beta2")))
        .await?;
    wait_status(&controllers, &late, |s| {
        matches!(s, Some(WatchStatus::Watching { .. }))
    })
    .await?;
    cluster
        .create_infra("LateMachine", "v1beta2", "late-infra", &[])
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "late" && c.objects.infra.is_some())
        .await?;
    assert_eq!(call.hook, Hook::MapiToCapi);
    controllers.stop().await
}

#[tokio::test]
async fn s13_a_reference_to_a_missing_kind_warns_and_the_rest_keeps_working() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_mapi_machine("broken", Some("MachineAPI")).await?;
    cluster
        .create_capi_machine("broken", ("NoSuchMachine", "x"), None)
        .await?;
    let note = cluster
        .wait_for_warning(
            &cluster.namespaces.capi,
            "InfrastructureKindUnavailable",
            "broken",
        )
        .await?;
    assert!(note.contains("NoSuchMachine"), "{note}");
    // The pair itself still reconciles, and so does every other pair.
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "broken")
        .await?;
    cluster.create_mapi_machine("healthy", Some("MachineAPI")).await?;
    cluster
        .create_capi_machine("healthy", (DEV, "healthy"), None)
        .await?;
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "healthy" && c.objects.capi.is_some())
        .await?;

    controllers.stop().await
}

#[tokio::test]
async fn s14_the_watch_stops_when_the_last_reference_goes_away() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_capi_machine("a", (AWS, "a"), None).await?;
    cluster.create_capi_machine("b", (AWS, "b"), None).await?;
    let aws = GroupKind {
        group: INFRA_GROUP.into(),
        kind: AWS.into(),
    };
    wait_status(&controllers, &aws, |s| {
        matches!(s, Some(WatchStatus::Watching { .. }))
    })
    .await?;

    cluster
        .capi_machines()
        .delete("a", &DeleteParams::default())
        .await?;
    // One reference is left ("a" is gone from the caches once it reconciled as absent):
    // the watch stays.
    reconciled(&controllers, MACHINES, "a", skipped(SkipReason::NothingToDo)).await?;
    assert!(matches!(
        controllers.tracker.watches().get(&aws),
        Some(WatchStatus::Watching { .. })
    ));

    // Re-pointing "b" elsewhere removes the last reference.
    let patch = json!({ "spec": { "infrastructureRef": { "kind": DEV, "name": "b" } } });
    cluster
        .capi_machines()
        .patch("b", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_status(&controllers, &aws, |s| s.is_none()).await?;

    // A reference coming back starts it again.
    cluster.create_capi_machine("c", (AWS, "c"), None).await?;
    wait_status(&controllers, &aws, |s| {
        matches!(s, Some(WatchStatus::Watching { .. }))
    })
    .await?;
    controllers.stop().await
}

#[tokio::test]
async fn s15_dropped_and_expired_watches_lose_no_reconcile() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let Some(env) = cluster.envtest() else {
        eprintln!("fault injection needs the in-process server; skipped on an existing cluster");
        return Ok(());
    };
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_infra(DEV, "v1beta2", "infra", &[]).await?;
    // Authority is handed over through Migrating (the CRD forbids a direct flip).
    cluster.create_mapi_machine("flipped", Some("Migrating")).await?;
    cluster
        .create_capi_machine("flipped", (DEV, "flipped"), None)
        .await?;
    for name in ["kept", "capi-deleted"] {
        cluster.create_mapi_machine(name, Some("MachineAPI")).await?;
        cluster
            .create_capi_machine(name, (DEV, if name == "kept" { "infra" } else { name }), None)
            .await?;
    }
    reconciled(&controllers, MACHINES, "flipped", skipped(SkipReason::Migrating)).await?;
    for name in ["kept", "capi-deleted"] {
        controllers
            .machines
            .wait_for(WAIT, |c| c.objects.name == name && c.objects.capi.is_some())
            .await?;
    }
    wait_watching(&controllers, &[DEV]).await?;

    // Every watch is cut and every resourceVersion expires; changes land meanwhile.
    env.faults().expire_watches();
    env.faults().drop_watches();
    cluster
        .capi_machines()
        .delete("capi-deleted", &DeleteParams::default())
        .await?;
    cluster.set_machine_authority("flipped", "ClusterAPI").await?;
    cluster.touch_infra(DEV, "v1beta2", "infra", 7).await?;
    cluster.create_mapi_machine("new", Some("MachineAPI")).await?;

    controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "capi-deleted" && c.objects.capi.is_none() && c.objects.mapi.is_some()
        })
        .await?;
    controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "flipped" && c.hook == Hook::CapiToMapi
        })
        .await?;
    let touched = cluster.infra(DEV, "v1beta2").get("infra").await?;
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "kept" && saw(c, &touched))
        .await?;
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "new")
        .await?;
    controllers.stop().await
}

async fn wait_watching(controllers: &Controllers, kinds: &[&str]) -> TestResult {
    for kind in kinds {
        let gk = GroupKind {
            group: INFRA_GROUP.into(),
            kind: (*kind).into(),
        };
        wait_status(controllers, &gk, |s| {
            matches!(s, Some(WatchStatus::Watching { .. }))
        })
        .await?;
    }
    Ok(())
}

async fn wait_status(
    controllers: &Controllers,
    group_kind: &GroupKind,
    done: impl Fn(Option<&WatchStatus>) -> bool,
) -> TestResult {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let watches = controllers.tracker.watches();
        if done(watches.get(group_kind)) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("{group_kind}: {:?}", watches.get(group_kind)).into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn s16_malformed_objects_are_reported_and_everything_else_keeps_syncing() -> TestResult {
    use kube::api::DynamicObject;

    let cluster = cluster_with_infra_kinds().await?;
    // A cluster whose CAPI Machine CRD is skewed from our types: it accepts anything.
    cluster.skew_crd("machines.cluster.x-k8s.io").await?;
    let resource = kube::api::ApiResource::erase::<sync_core::api::capi::Machine>(&());
    let raw = cluster.raw_capi::<sync_core::api::capi::Machine>();
    let malformed = |name: &str| {
        DynamicObject::new(name, &resource).data(json!({ "spec": { "clusterName": 5, "bootstrap": {} } }))
    };
    // One malformed object is in the initial list...
    raw.create(&PostParams::default(), &malformed("listed-bad"))
        .await?;
    cluster
        .create_mapi_machine("listed-bad", Some("MachineAPI"))
        .await?;
    cluster.create_mapi_machine("good", Some("MachineAPI")).await?;
    cluster.create_capi_machine("good", (DEV, "good"), None).await?;

    let controllers = Controllers::start(&cluster).await?;
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "good" && c.objects.capi.is_some())
        .await?;
    reconciled(
        &controllers,
        MACHINES,
        "listed-bad",
        skipped(SkipReason::Malformed),
    )
    .await?;
    let note = cluster
        .wait_for_warning(&cluster.namespaces.capi, "MalformedObject", "listed-bad")
        .await?;
    assert!(note.contains("spec.clusterName"), "{note}");

    // ...one arrives by watch, and the rest keeps syncing.
    raw.create(&PostParams::default(), &malformed("watched-bad"))
        .await?;
    reconciled(
        &controllers,
        MACHINES,
        "watched-bad",
        skipped(SkipReason::Malformed),
    )
    .await?;
    cluster.create_mapi_machine("after", Some("MachineAPI")).await?;
    controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "after")
        .await?;
    assert!(controllers.machines.calls_for("listed-bad").is_empty());

    // A decodable object with a malformed infrastructure reference is reported too.
    let mut bad_ref = sync_core::api::capi::Machine::new("bad-ref", e2e::capi_machine_spec((DEV, "m")));
    bad_ref.spec.infrastructure_ref.kind = String::new();
    cluster
        .capi_machines()
        .create(&PostParams::default(), &bad_ref)
        .await?;
    let note = cluster
        .wait_for_warning(
            &cluster.namespaces.capi,
            "InvalidInfrastructureReference",
            "bad-ref",
        )
        .await?;
    assert!(note.contains("empty kind"), "{note}");

    // Fixed: the pair syncs.
    let fix = json!({ "spec": { "clusterName": "cluster", "bootstrap": {}, "infrastructureRef": {
        "apiGroup": INFRA_GROUP, "kind": DEV, "name": "listed-bad" } } });
    raw.patch("listed-bad", &PatchParams::default(), &Patch::Merge(&fix))
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "listed-bad" && c.objects.capi.is_some()
        })
        .await?;
    assert_eq!(call.hook, Hook::MapiToCapi);
    controllers.stop().await
}

/// deploy/'s RBAC without `get` on infrastructure kinds: a read that reaches the API
/// server is refused, one the cache answers is not. (Without the admission policies, as
/// every scenario of this file: the stub hooks leave the test to stage both sides.)
async fn cluster_without_infra_get() -> TestResult<Cluster> {
    let policies = false;
    e2e::Cluster::start_with(
        |rbac| {
            for rule in rbac
                .iter_mut()
                .flat_map(|doc| doc["rules"].as_array_mut().into_iter().flatten())
            {
                if rule["apiGroups"][0] == INFRA_GROUP
                    && let Some(verbs) = rule["verbs"].as_array_mut()
                {
                    verbs.retain(|v| v != "get");
                }
            }
        },
        policies,
    )
    .await
}

#[tokio::test]
async fn s17_reading_a_whole_infrastructure_object_needs_get() -> TestResult {
    if e2e::use_existing_cluster() {
        return Ok(()); // RBAC is applied only on envtest
    }
    let cluster = cluster_without_infra_get().await?;
    cluster
        .install_crd(&infra_crd(DEV, &["v1beta1", "v1beta2"], Some("v1beta1_v1beta2")))
        .await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_infra(DEV, "v1beta2", "infra", &[]).await?;
    cluster.create_mapi_machine("worker", Some("MachineAPI")).await?;
    cluster
        .create_capi_machine("worker", (DEV, "infra"), None)
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "worker" && c.objects.infra.is_some())
        .await?;
    // Watching works (list/watch), reading the whole object is refused.
    let fetched = controllers
        .tracker
        .fetch(call.objects.infra_ref().ok_or("no ref")?)
        .await;
    let message = format!("{:?}", fetched.err());
    assert!(
        message.contains("cannot get resource \\\"devmachines\\\""),
        "{message}"
    );
    // stop() fails on the Forbidden it met: that is the point here.
    assert!(controllers.stop().await.is_err());
    Ok(())
}

/// Issue 16's cold start: pairs that exist before the controllers start are each
/// reconciled once, and that first call already has the infrastructure object — the
/// workers wait for the referenced kinds' first lists (two kinds, one found by its
/// contract label, one by discovery), instead of reconciling without them and again when
/// the lists arrive.
#[tokio::test]
async fn s18_a_cold_start_reconciles_each_pair_once_with_its_infrastructure_object() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    const PAIRS: usize = 12;
    let name = |i: usize| format!("cold-{i:02}");
    for i in 0..PAIRS {
        let kind = [DEV, AWS][i % 2];
        create_pair(&cluster, kind, &name(i)).await?;
    }
    cluster
        .create_infra(
            AWS_TEMPLATE,
            "v1beta2",
            "cold-set",
            &[(MACHINESET_LABEL, "cold-set")],
        )
        .await?;
    cluster
        .create_mapi_machine_set("cold-set", Some("MachineAPI"))
        .await?;
    cluster
        .create_capi_machine_set("cold-set", (AWS_TEMPLATE, "cold-set"))
        .await?;

    let controllers = Controllers::start(&cluster).await?;
    for i in 0..PAIRS {
        controllers
            .machines
            .wait_for(WAIT, |c| c.objects.name == name(i))
            .await?;
    }
    controllers
        .machine_sets
        .wait_for(WAIT, |c| c.objects.name == "cold-set")
        .await?;
    // A later change goes through the same trigger path as the lists' events (the
    // tracker's channel, then the queue): once its call came, nothing from the start is
    // still on its way.
    create_pair(&cluster, DEV, "sentinel").await?;
    controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "sentinel" && c.objects.infra.is_some()
        })
        .await?;

    for i in 0..PAIRS {
        let calls = controllers.machines.calls_for(&name(i));
        assert_eq!(calls.len(), 1, "{}: {} hook calls", name(i), calls.len());
        assert_eq!(calls[0].hook, Hook::MapiToCapi);
        let infra = calls[0].objects.infra.as_ref().map(|i| i.name_any());
        assert_eq!(
            infra,
            Some(name(i)),
            "{}: called without its infrastructure object",
            name(i)
        );
    }
    let set_calls = controllers.machine_sets.calls_for("cold-set");
    assert_eq!(set_calls.len(), 1, "{set_calls:?}");
    assert!(set_calls[0].objects.infra.is_some());
    let pair_reconciles = controllers
        .observer
        .reconciles()
        .iter()
        .filter(|r| r.controller == MACHINES && r.name.starts_with("cold-"))
        .count();
    assert_eq!(pair_reconciles, PAIRS);
    controllers.stop().await
}

/// Issue 16: once a kind has listed, hooks read whole infrastructure objects from the
/// tracker's cache (no GET: the RBAC here has none) and a miss is a missing object; a kind
/// that is not watched (or not listed yet) is read from the API server, never taken as
/// empty.
#[tokio::test]
async fn s19_infrastructure_objects_are_read_from_the_cache_once_listed() -> TestResult {
    if e2e::use_existing_cluster() {
        return Ok(()); // RBAC is applied only on envtest
    }
    let cluster = cluster_without_infra_get().await?;
    cluster
        .install_crd(&infra_crd(DEV, &["v1beta1", "v1beta2"], Some("v1beta1_v1beta2")))
        .await?;
    cluster.install_crd(&infra_crd(AWS, &["v1beta2"], None)).await?;
    let controllers = Controllers::start(&cluster).await?;
    cluster.create_infra(DEV, "v1beta2", "infra", &[]).await?;
    cluster.create_infra(AWS, "v1beta2", "unwatched", &[]).await?;
    cluster.create_mapi_machine("worker", Some("MachineAPI")).await?;
    cluster
        .create_capi_machine("worker", (DEV, "infra"), None)
        .await?;
    let call = controllers
        .machines
        .wait_for(WAIT, |c| c.objects.name == "worker" && c.objects.infra.is_some())
        .await?;
    // The pair's own fetch carried the whole object, not its metadata only.
    let fetched = call.objects.infra.as_ref().ok_or("no infrastructure object")?;
    assert_eq!(fetched.to_dynamic().data["spec"], json!({ "generation": 0 }));

    let cached = controllers
        .tracker
        .get(&infra_ref(DEV, "infra"))
        .await?
        .ok_or("the cached object is missing")?;
    assert_eq!(cached.name_any(), "infra");
    assert_eq!(cached.data["spec"], json!({ "generation": 0 }));
    assert!(
        controllers
            .tracker
            .get(&infra_ref(DEV, "never-created"))
            .await?
            .is_none()
    );

    // No CAPI object references AWSMachines: no cache can tell, so the read goes to
    // the API server (refused here) instead of answering "absent".
    let unwatched = controllers.tracker.get(&infra_ref(AWS, "unwatched")).await;
    let message = format!("{:?}", unwatched.err());
    assert!(
        message.contains("cannot get resource \\\"awsmachines\\\""),
        "{message}"
    );
    // The only Forbidden met is that read: the cached ones never reached the server.
    let denials = format!("{:?}", controllers.stop().await.err());
    assert!(denials.contains("awsmachines"), "{denials}");
    assert!(!denials.contains("devmachines"), "{denials}");
    Ok(())
}

/// Issue 16's idle relist: a watch that expires lists again, and the objects it finds at
/// the resourceVersion already cached changed nothing, so they reconcile nothing (a relist
/// used to reconcile the whole fleet). What changed meanwhile still reconciles (s15).
#[tokio::test]
async fn s20_a_relist_of_unchanged_objects_reconciles_nothing() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let Some(env) = cluster.envtest() else {
        eprintln!("fault injection needs the in-process server; skipped on an existing cluster");
        return Ok(());
    };
    const PAIRS: usize = 8;
    let name = |i: usize| format!("still-{i}");
    for i in 0..PAIRS {
        create_pair(&cluster, DEV, &name(i)).await?;
    }
    let controllers = Controllers::start(&cluster).await?;
    for i in 0..PAIRS {
        controllers
            .machines
            .wait_for(WAIT, |c| c.objects.name == name(i) && c.objects.infra.is_some())
            .await?;
    }
    let settled = controllers.observer.reconciles().len();

    // Every watch expires (410: each lists again); then a new pair appears. Its call
    // with all three objects cached means every cache has swapped its relist in.
    env.faults().expire_watches();
    create_pair(&cluster, DEV, "zz-sentinel").await?;
    controllers
        .machines
        .wait_for(WAIT, |c| {
            c.objects.name == "zz-sentinel"
                && c.objects.mapi.is_some()
                && c.objects.capi.is_some()
                && c.objects.infra.is_some()
        })
        .await?;
    // One more change through the queue: whatever the relists queued before it has been
    // taken by a worker once its call came.
    let call = touch_and_wait(&cluster, &controllers.machines, DEV, "zz-sentinel", 3).await?;
    assert_eq!(call.objects.name, "zz-sentinel");

    let after: Vec<String> = controllers.observer.reconciles()[settled..]
        .iter()
        .filter(|r| r.name.starts_with("still-"))
        .map(|r| format!("{} {}", r.controller, r.name))
        .collect();
    assert!(
        after.is_empty(),
        "unchanged objects reconciled after the relist: {after:?}"
    );
    for i in 0..PAIRS {
        assert_eq!(controllers.machines.calls_for(&name(i)).len(), 1, "{}", name(i));
    }
    controllers.stop().await
}

/// The version an infrastructure kind is read and written at: an object's own apiVersion
/// first (a body is written at its version), else the version pinned in the tracker's
/// config (the one the hooks' conversion speaks), else the contract label's newest.
#[tokio::test]
async fn s21_a_pinned_version_wins_over_the_contract_label_and_an_object_s_own_over_both() -> TestResult {
    let cluster = cluster_with_infra_kinds().await?;
    let dev = GroupKind {
        group: INFRA_GROUP.into(),
        kind: DEV.into(),
    };
    let tracker = |pins: &[(&GroupKind, &str)]| {
        let mut config = sync_core::InfraConfig::new(&cluster.namespaces.capi);
        config.versions = pins
            .iter()
            .map(|(k, v)| ((*k).clone(), (*v).to_owned()))
            .collect();
        sync_core::InfraTracker::new(cluster.controller_client.clone(), config)
    };
    let version = |tracker: sync_core::InfraTracker, hint: Option<&'static str>| {
        let dev = dev.clone();
        async move {
            tracker
                .api(&dev, hint)
                .await
                .map(|(_, resource)| resource.version)
        }
    };
    assert_eq!(
        version(tracker(&[]), None).await?,
        "v1beta2",
        "the contract label's newest"
    );
    assert_eq!(
        version(tracker(&[(&dev, "v1beta1")]), None).await?,
        "v1beta1",
        "pinned"
    );
    assert_eq!(
        version(tracker(&[(&dev, "v1beta1")]), Some("v1beta2")).await?,
        "v1beta2",
        "the object's own"
    );
    Ok(())
}

/// A watched kind asked for at another version it serves needs no discovery: the watch's
/// resolution kept every served version (the OpenStack sync, pinned at v1beta1 on a
/// tracker watching v1beta2, ran discovery's three GETs on every write). An object asked
/// for at a version other than the cache's is read from the API server at that version,
/// never handed over from the cache as if it were of that version.
#[tokio::test]
async fn s22_a_watched_kind_serves_its_other_versions_without_discovery() -> TestResult {
    if e2e::use_existing_cluster() {
        return Ok(()); // the requests are counted on envtest's client
    }
    let cluster = cluster_with_infra_kinds().await?;
    let env = cluster.env.as_ref().ok_or("no envtest")?;
    let requests = e2e::bench::requests::Requests::new();
    let client = e2e::bench::requests::counted_client(&env.kubeconfig(), requests.clone()).await?;
    // Not pinned: DevMachines are watched at the contract label's newest, v1beta2.
    let tracker = sync_core::InfraTracker::new(client, sync_core::InfraConfig::new(&cluster.namespaces.capi));
    let registration = tracker.register::<MachineSync>("test");
    cluster.create_infra(DEV, "v1beta2", "infra", &[]).await?;
    registration
        .tracker()
        .track("worker", Some(Ok(Some(infra_ref(DEV, "infra")))));
    let dev = infra_ref(DEV, "infra").group_kind();
    let pending = tracker.listed(&[dev.clone()].into()).await;
    assert!(pending.is_empty(), "not listed: {pending:?}");
    assert_eq!(
        tracker.watches().get(&dev),
        Some(&WatchStatus::Watching {
            version: "v1beta2".into()
        })
    );

    let before = requests.snapshot();
    for _ in 0..3 {
        let (_, resource) = tracker.api(&dev, Some("v1beta1")).await?;
        assert_eq!(resource.version, "v1beta1");
        assert_eq!(resource.plural, "devmachines");
    }
    let (_, resource) = tracker.api(&dev, None).await?;
    assert_eq!(resource.version, "v1beta2");
    assert_eq!(
        requests.snapshot().since(&before).total(),
        0,
        "no request for a known version"
    );

    // A version nobody serves is resolved afresh, and the error names the served ones.
    let unserved = tracker
        .api(&dev, Some("v1alpha9"))
        .await
        .err()
        .ok_or("v1alpha9 resolved")?;
    assert!(
        unserved
            .to_string()
            .contains("not served in version \"v1alpha9\""),
        "{unserved}"
    );

    // From the cache at its own version; from the server at another.
    let api_version = |object: &DynamicObject| object.types.as_ref().map(|t| t.api_version.clone());
    let before = requests.snapshot();
    let sent = || requests.snapshot().since(&before).total();
    let cached = tracker.get(&infra_ref(DEV, "infra")).await?.ok_or("not cached")?;
    assert_eq!(api_version(&cached), Some(format!("{INFRA_GROUP}/v1beta2")));
    assert_eq!(sent(), 0, "read from the cache");
    let mut at_v1beta1 = infra_ref(DEV, "infra");
    at_v1beta1.version = Some("v1beta1".into());
    let read = tracker.get(&at_v1beta1).await?.ok_or("not read")?;
    assert_eq!(read.name_any(), "infra");
    assert_eq!(api_version(&read), Some(format!("{INFRA_GROUP}/v1beta1")));
    assert_eq!(sent(), 1, "one GET, no discovery");
    Ok(())
}
