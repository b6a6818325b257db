//! The MachineHealthCheck pair on an in-process API server, through every row of the
//! decision table that applies to a pair with the `ignore` CAPI-only policy.
use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, Resource};
use machine_health_check_sync::{MachineHealthCheckSync, capi, mapi};
use serde_json::json;
use sync_core::testing::Hook;
use sync_core::testkit::PairEnv;
use sync_core::{Direction, SkipReason};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);
/// A finalizer of the test's own, so that a deleted object stays, being deleted.
const HOLD: &str = "example.com/hold";

/// Creates the MAPI object `name` and, when given, sets its `status.authoritativeAPI`.
async fn create_mapi(api: &Api<mapi::MachineHealthCheck>, name: &str, authority: Option<&str>) -> TestResult {
    let mut object = mapi::MachineHealthCheck::new(name, mapi::MachineHealthCheckSpec::default());
    object.meta_mut().finalizers = Some(vec![HOLD.into()]);
    api.create(&PostParams::default(), &object).await?;
    if let Some(authority) = authority {
        let status = json!({ "status": { "authoritativeAPI": authority } });
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await?;
    }
    Ok(())
}

/// Creates the CAPI object `name`.
async fn create_capi(api: &Api<capi::MachineHealthCheck>, name: &str) -> TestResult {
    let spec = capi::MachineHealthCheckSpec {
        cluster_name: "cluster".into(),
    };
    let mut object = capi::MachineHealthCheck::new(name, spec);
    object.meta_mut().finalizers = Some(vec![HOLD.into()]);
    api.create(&PostParams::default(), &object).await?;
    Ok(())
}

#[tokio::test]
async fn every_row_of_the_decision_table() -> TestResult {
    let env = PairEnv::for_pair::<MachineHealthCheckSync>().await?;
    let client = env.client();
    let mapis = Api::<mapi::MachineHealthCheck>::namespaced(client.clone(), &env.namespaces().mapi);
    let capis = Api::<capi::MachineHealthCheck>::namespaced(client.clone(), &env.namespaces().capi);
    let (running, hooks) = env.run_recording::<MachineHealthCheckSync>().await?;

    // MachineAPI is authoritative: MAPI → CAPI, with both objects.
    create_capi(&capis, "mapi-driven").await?;
    create_mapi(&mapis, "mapi-driven", Some("MachineAPI")).await?;
    running
        .wait_for_hook("mapi-driven", Hook::MapiToCapi, WAIT)
        .await?;
    let call = hooks
        .wait_for(WAIT, |c| {
            c.objects.name == "mapi-driven" && c.hook == Hook::MapiToCapi && c.objects.capi.is_some()
        })
        .await?;
    assert_eq!(
        call.objects
            .mapi
            .as_ref()
            .and_then(|m| m.metadata.name.as_deref()),
        Some("mapi-driven")
    );

    // ClusterAPI is authoritative: CAPI → MAPI, even before the CAPI object exists.
    create_mapi(&mapis, "capi-driven", Some("ClusterAPI")).await?;
    running
        .wait_for_hook("capi-driven", Hook::CapiToMapi, WAIT)
        .await?;

    // Migrating, unset: no hook.
    create_mapi(&mapis, "migrating", Some("Migrating")).await?;
    running
        .wait_for_skip("migrating", SkipReason::Migrating, WAIT)
        .await?;
    create_mapi(&mapis, "unset", None).await?;
    running
        .wait_for_skip("unset", SkipReason::NoAuthority, WAIT)
        .await?;

    // A CAPI-only object under `ignore`: no hook while it lives…
    create_capi(&capis, "capi-only").await?;
    running
        .wait_for_skip("capi-only", SkipReason::CapiOnlyIgnored, WAIT)
        .await?;
    // …but its deletion reaches the deletion hook, with no MAPI object, so that a pair can
    // release its finalizer once the MAPI side is gone.
    capis.delete("capi-only", &DeleteParams::default()).await?;
    running
        .wait_for_hook("capi-only", Hook::Deletion(Direction::CapiToMapi), WAIT)
        .await?;
    let call = hooks
        .wait_for(WAIT, |c| {
            c.objects.name == "capi-only" && matches!(c.hook, Hook::Deletion(_))
        })
        .await?;
    assert!(call.objects.mapi.is_none());
    assert!(
        call.objects
            .capi
            .as_ref()
            .is_some_and(|c| c.metadata.deletion_timestamp.is_some())
    );

    // The deletion fork follows the authoritative API: the MAPI side being deleted…
    mapis.delete("mapi-driven", &DeleteParams::default()).await?;
    running
        .wait_for_hook("mapi-driven", Hook::Deletion(Direction::MapiToCapi), WAIT)
        .await?;
    // …or the CAPI side.
    create_capi(&capis, "capi-driven").await?;
    capis.delete("capi-driven", &DeleteParams::default()).await?;
    running
        .wait_for_hook("capi-driven", Hook::Deletion(Direction::CapiToMapi), WAIT)
        .await?;
    // While Migrating, not even a deletion runs a hook.
    mapis.delete("migrating", &DeleteParams::default()).await?;
    let deleting = |name: &'static str| {
        let mapis = mapis.clone();
        async move {
            mapis
                .get(name)
                .await
                .map(|m| m.metadata.deletion_timestamp.is_some())
        }
    };
    assert!(deleting("migrating").await?);
    assert!(
        hooks.calls_for("migrating").is_empty(),
        "{:?}",
        hooks.calls_for("migrating")
    );

    // Neither object: nothing to do.
    let released = json!({ "metadata": { "finalizers": null } });
    mapis
        .patch("unset", &PatchParams::default(), &Patch::Merge(&released))
        .await?;
    mapis.delete("unset", &DeleteParams::default()).await?;
    running
        .wait_for_skip("unset", SkipReason::NothingToDo, WAIT)
        .await?;

    // An unknown authoritativeAPI: the CRD refuses it…
    let refused = mapis
        .patch_status(
            "capi-driven",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "authoritativeAPI": "Kubelet" } })),
        )
        .await;
    assert!(
        matches!(refused, Err(kube::Error::Api(ref status)) if status.code == 422),
        "{refused:?}"
    );
    // …and where a CRD does not, the controller skips it with a Warning Event.
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let unpin = json!([
        { "op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/authoritativeAPI/enum" },
        { "op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/authoritativeAPI/x-kubernetes-validations" },
    ]);
    let crd_name = mapi::MachineHealthCheck::crd_name();
    crds.patch(
        crd_name,
        &PatchParams::default(),
        &Patch::Json::<()>(serde_json::from_value(unpin)?),
    )
    .await?;
    create_mapi(&mapis, "unknown", Some("Kubelet")).await?;
    running
        .wait_for_skip("unknown", SkipReason::UnknownAuthority, WAIT)
        .await?;
    let events = Api::<Event>::namespaced(client, &env.namespaces().mapi);
    let warned = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .any(|event| {
            event.reason.as_deref() == Some("UnknownAuthoritativeAPI")
                && event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("unknown")
                && event.type_.as_deref() == Some("Warning")
        });
    assert!(
        warned,
        "no Warning Event UnknownAuthoritativeAPI on the MAPI object"
    );
    assert!(hooks.calls_for("unknown").is_empty());
    assert!(hooks.calls_for("unset").is_empty());

    running.stop().await?;
    Ok(())
}
