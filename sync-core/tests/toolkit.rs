//! The sync toolkit against the envtest server: the mirror apply writes only changes,
//! the Synchronized condition keeps to its own field manager, finalizers are added and
//! removed exactly once, and a failed sync is reported without an error to retry.

use std::collections::BTreeMap;

use envtest::TestEnv;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use kube::{Client, ResourceExt};
use serde_json::json;
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_core::events::Recorder;
use sync_core::toolkit::apply::CONVERSION_DATA_ANNOTATION;
use sync_core::toolkit::status::{self, Synchronized};
use sync_core::toolkit::{Applied, Part, Release, SYNC_FINALIZER, apply, apply_over, finalizers, report};
use sync_core::{SyncContext, SyncController, SyncObjects};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "toolkit";
const MANAGER: &str = "MachineSyncController";

async fn env() -> Result<TestEnv, Box<dyn std::error::Error + Send + Sync>> {
    Ok(TestEnv::builder()
        .crd_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/crds"))
        .namespace(NS)
        .start()
        .await?)
}

fn capi_machine(name: &str, labels: &[(&str, &str)]) -> capi::Machine {
    let mut machine = capi::Machine::new(
        name,
        capi::MachineSpec {
            cluster_name: "c".into(),
            bootstrap: capi::Bootstrap {
                data_secret_name: Some("user-data".into()),
                ..Default::default()
            },
            infrastructure_ref: sync_core::api::ContractVersionedObjectReference {
                api_group: "infrastructure.cluster.x-k8s.io".into(),
                kind: "AWSMachine".into(),
                name: name.into(),
            },
            ..Default::default()
        },
    );
    machine.metadata.namespace = Some(NS.into());
    machine.metadata.labels = Some(labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect());
    machine
}

/// The live object as the caches hold it (managedFields kept: apply entries are cached).
async fn live<K>(api: &Api<K>, name: &str) -> Result<K, kube::Error>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get(name).await
}

#[tokio::test]
async fn a_mirror_is_written_only_when_it_would_change() -> TestResult {
    let env = env().await?;
    let api: Api<capi::Machine> = Api::namespaced(env.client(), NS);
    let desired = capi_machine("m", &[("a", "1"), ("b", "2")]);

    let created = apply(&api, MANAGER, None, &desired, Part::Object).await?;
    assert!(created.written());
    let first = live(&api, "m").await?;
    assert_eq!(first.labels().get("b").map(String::as_str), Some("2"));

    // The same desired object against the live one: nothing is sent.
    let rv = first.resource_version();
    assert!(matches!(
        apply(&api, MANAGER, Some(&first), &desired, Part::Object).await?,
        Applied::Unchanged
    ));
    assert_eq!(live(&api, "m").await?.resource_version(), rv);

    // What others write (a label of theirs, the conversion-data annotation) is not ours
    // to compare: still nothing to send.
    api.patch(
        "m",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"theirs": "x"}, "annotations": {CONVERSION_DATA_ANNOTATION: "{}"}}})),
    )
    .await?;
    let touched = live(&api, "m").await?;
    assert!(matches!(
        apply(&api, MANAGER, Some(&touched), &desired, Part::Object).await?,
        Applied::Unchanged
    ));

    // A label we stop sending is removed; theirs stays.
    let fewer = capi_machine("m", &[("a", "1")]);
    assert!(
        apply(&api, MANAGER, Some(&touched), &fewer, Part::Object)
            .await?
            .written()
    );
    let after = live(&api, "m").await?;
    let labels: Vec<&str> = after.labels().keys().map(String::as_str).collect();
    assert_eq!(labels, ["a", "theirs"]);
    assert!(matches!(
        apply(&api, MANAGER, Some(&after), &fewer, Part::Object).await?,
        Applied::Unchanged
    ));

    // Status goes through the subresource, compared the same way, conditions'
    // lastTransitionTime aside.
    let mut with_status = fewer.clone();
    with_status.status = Some(capi::MachineStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![condition("Ready", "True", "2026-01-01T00:00:00Z")]),
        ..Default::default()
    });
    assert!(
        apply(&api, MANAGER, Some(&after), &with_status, Part::Status)
            .await?
            .written()
    );
    let with = live(&api, "m").await?;
    assert_eq!(
        with.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Running")
    );
    with_status
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .into_iter()
        .flatten()
        .for_each(|c| {
            c.last_transition_time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-02-02T00:00:00Z".parse().unwrap_or_default(),
            );
        });
    assert!(matches!(
        apply(&api, MANAGER, Some(&with), &with_status, Part::Status).await?,
        Applied::Unchanged
    ));
    Ok(())
}

#[tokio::test]
async fn an_apply_over_a_stale_object_is_refused_and_changes_nothing() -> TestResult {
    let env = env().await?;
    let api: Api<capi::Machine> = Api::namespaced(env.client(), NS);
    apply(
        &api,
        MANAGER,
        None,
        &capi_machine("m", &[("a", "1")]),
        Part::Object,
    )
    .await?;
    let stale = live(&api, "m").await?;

    // Someone else changes the object after the controller read it.
    api.patch(
        "m",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"theirs": "x"}}})),
    )
    .await?;
    let newer = live(&api, "m").await?;

    // Applied over what it read, the controller's write is refused: 409, nothing written.
    let desired = capi_machine("m", &[("a", "2")]);
    let refused = apply_over(&api, MANAGER, &stale, &desired, Part::Object).await;
    assert!(
        matches!(&refused, Err(sync_core::toolkit::ApplyError::Api(kube::Error::Api(e))) if e.code == 409),
        "{refused:?}"
    );
    let after = live(&api, "m").await?;
    assert_eq!(after.resource_version(), newer.resource_version());
    assert_eq!(after.labels().get("a").map(String::as_str), Some("1"));

    // Over the fresh object it is written, and the other manager's label stays.
    assert!(
        apply_over(&api, MANAGER, &after, &desired, Part::Object)
            .await?
            .written()
    );
    let written = live(&api, "m").await?;
    assert_eq!(written.labels().get("a").map(String::as_str), Some("2"));
    assert_eq!(written.labels().get("theirs").map(String::as_str), Some("x"));
    // And an unchanged desired state still sends nothing.
    assert!(matches!(
        apply_over(&api, MANAGER, &written, &desired, Part::Object).await?,
        Applied::Unchanged
    ));
    Ok(())
}

fn condition(
    type_: &str,
    status: &str,
    time: &str,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: type_.into(),
        status: status.into(),
        reason: "R".into(),
        message: String::new(),
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            time.parse().unwrap_or_default(),
        ),
        observed_generation: None,
    }
}

async fn mapi_machine(client: &Client, name: &str) -> Result<mapi::Machine, kube::Error> {
    let api: Api<mapi::Machine> = Api::namespaced(client.clone(), NS);
    let mut machine = mapi::Machine::new(name, mapi::MachineSpec::default());
    machine.metadata.namespace = Some(NS.into());
    api.create(&PostParams::default(), &machine).await?;
    // Another controller owns another condition.
    api.patch_status(
        name,
        &PatchParams::apply("other-controller"),
        &Patch::Apply(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": name},
            "status": {"authoritativeAPI": "MachineAPI",
                       "conditions": [{"type": "Drained", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        })),
    )
    .await?;
    api.get(name).await
}

fn managers_of(machine: &mapi::Machine) -> Vec<(String, serde_json::Value)> {
    machine
        .managed_fields()
        .iter()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.fields_v1.as_ref().map(|f| f.0.clone()).unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_synchronized_condition_keeps_to_its_own_field_manager() -> TestResult {
    let env = env().await?;
    let api: Api<mapi::Machine> = Api::namespaced(env.client(), NS);
    let machine = mapi_machine(&env.client(), "m").await?;

    assert!(
        status::write(
            &api,
            MANAGER,
            &machine,
            &Synchronized::done(3, AuthoritativeApi::MachineApi)
        )
        .await?
    );
    let synced = api.get("m").await?;
    let cond = status::synchronized(&synced).cloned().ok_or("no condition")?;
    assert_eq!((cond.status.as_str(), cond.severity.as_deref()), ("True", None));
    assert_eq!(
        synced
            .status
            .as_ref()
            .and_then(|s| s.sync.synchronized_generation),
        Some(3)
    );
    // The other controller's condition and authority are untouched, and not ours.
    let conditions: Vec<&str> = synced
        .status
        .as_ref()
        .and_then(|s| s.sync.conditions.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(conditions, ["Drained", "Synchronized"]);
    assert_eq!(
        synced
            .status
            .as_ref()
            .and_then(|s| s.sync.authoritative_api.clone()),
        Some(AuthoritativeApi::MachineApi)
    );
    let ours = managers_of(&synced)
        .into_iter()
        .find(|(m, _)| m == "MachineSyncController-SynchronizedCondition")
        .ok_or("no entry of the condition's field manager")?;
    assert_eq!(
        ours.1["f:status"]["f:conditions"]
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["k:{\"type\":\"Synchronized\"}".to_string()])
    );

    // Saying the same again writes nothing.
    let rv = synced.resource_version();
    assert!(
        !status::write(
            &api,
            MANAGER,
            &synced,
            &Synchronized::done(3, AuthoritativeApi::MachineApi)
        )
        .await?
    );
    assert_eq!(api.get("m").await?.resource_version(), rv);

    // False: severity Error, a new transition time, the generation kept.
    let failed = Synchronized::failed("FailedToConvertMAPIMachineToCAPI", "spec.providerSpec: bad");
    assert!(status::write(&api, MANAGER, &synced, &failed).await?);
    let broken = api.get("m").await?;
    let cond2 = status::synchronized(&broken).cloned().ok_or("no condition")?;
    assert_eq!(
        (cond2.status.as_str(), cond2.severity.as_deref()),
        ("False", Some("Error"))
    );
    assert_eq!(cond2.reason.as_deref(), Some("FailedToConvertMAPIMachineToCAPI"));
    assert_eq!(
        broken
            .status
            .as_ref()
            .and_then(|s| s.sync.synchronized_generation),
        Some(3)
    );
    // Same status, another reason: the transition time stays.
    let other = Synchronized::failed("FailedToUpdateCAPIMachine", "boom");
    assert!(status::write(&api, MANAGER, &broken, &other).await?);
    let again = api.get("m").await?;
    let cond3 = status::synchronized(&again).cloned().ok_or("no condition")?;
    assert_eq!(cond3.last_transition_time, cond2.last_transition_time);
    // Unknown: severity Info.
    assert!(
        status::write(
            &api,
            MANAGER,
            &again,
            &Synchronized::progressing("ProgressingToCreateCAPIInfraMachine", "")
        )
        .await?
    );
    let unknown = status::synchronized(&api.get("m").await?)
        .cloned()
        .ok_or("no condition")?;
    assert_eq!(
        (unknown.status.as_str(), unknown.severity.as_deref()),
        ("Unknown", Some("Info"))
    );
    Ok(())
}

#[tokio::test]
async fn finalizers_are_added_once_removed_once_and_in_order() -> TestResult {
    let env = env().await?;
    let api: Api<capi::Machine> = Api::namespaced(env.client(), NS);
    let mut machine = capi_machine("m", &[]);
    machine.metadata.finalizers = Some(vec!["machine.cluster.x-k8s.io".into()]);
    let machine = api.create(&PostParams::default(), &machine).await?;

    assert!(finalizers::ensure(&api, &machine, SYNC_FINALIZER).await?);
    let with = api.get("m").await?;
    assert_eq!(with.finalizers(), ["machine.cluster.x-k8s.io", SYNC_FINALIZER]);
    assert!(!finalizers::ensure(&api, &with, SYNC_FINALIZER).await?);
    // A stale copy cannot add it twice: the list test fails and nothing is written. The
    // error says so (a stale read, retried quietly), not a failure.
    let stale = finalizers::ensure(&api, &machine, SYNC_FINALIZER).await;
    assert!(
        matches!(&stale, Err(finalizers::FinalizerError::Stale(_))),
        "{stale:?}"
    );
    let hook_error: sync_core::HookError = Box::new(stale.err().ok_or("no error")?);
    assert!(sync_core::is_stale_read(hook_error.as_ref()));
    assert_eq!(api.get("m").await?.finalizers().len(), 2);

    // Gated on another finalizer (on the same object here): waits, then releases.
    api.delete("m", &DeleteParams::default()).await?;
    let deleting = api.get("m").await?;
    let blocked = finalizers::release_after(&api, &deleting, SYNC_FINALIZER, Some(&deleting), |f| {
        f == "machine.cluster.x-k8s.io"
    })
    .await?;
    assert_eq!(blocked, Release::Waiting);
    assert_eq!(api.get("m").await?.finalizers().len(), 2);
    assert!(finalizers::release(&api, &deleting, "machine.cluster.x-k8s.io").await?);
    let unblocked = api.get("m").await?;
    let done = finalizers::release_after(&api, &unblocked, SYNC_FINALIZER, Some(&unblocked), |f| {
        f == "machine.cluster.x-k8s.io"
    })
    .await?;
    assert_eq!(done, Release::Released);
    // The last finalizer gone, the object is gone: releasing again is success, not an
    // error that would be retried forever (upstream #528).
    assert!(api.get_opt("m").await?.is_none());
    assert!(!finalizers::release(&api, &unblocked, SYNC_FINALIZER).await?);
    Ok(())
}

#[tokio::test]
async fn a_failed_sync_is_reported_on_the_mapi_object_or_else_on_the_capi_one() -> TestResult {
    let env = env().await?;
    let client = env.client();
    let machine = mapi_machine(&client, "m").await?;
    let capi_api: Api<capi::Machine> = Api::namespaced(client.clone(), NS);
    let capi_only = capi_api
        .create(&PostParams::default(), &capi_machine("c", &[]))
        .await?;
    let controller = SyncController::<Pair>::new(client.clone(), sync_core::SyncConfig::default());
    let ctx = SyncContext::<Pair> {
        controller: <Pair as sync_core::SyncPair>::NAME,
        client: client.clone(),
        namespaces: sync_core::Namespaces {
            mapi: NS.into(),
            capi: NS.into(),
        },
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: "machine-sync".into(),
                instance: None,
            },
        ),
        caches: controller.caches(),
        infra: None,
        infra_refs: None,
    };
    let objects = |name: &str, mapi: Option<mapi::Machine>, capi: Option<capi::Machine>| SyncObjects::<Pair> {
        name: name.into(),
        mapi: mapi.map(Into::into),
        capi: capi.map(Into::into),
        infra_ref: None,
        infra: None,
    };
    let action = report::fail(
        &ctx,
        MANAGER,
        &objects("m", Some(machine), None),
        "FailedToConvertMAPIMachineToCAPI",
        "spec.providerSpec.value.region: bad",
    )
    .await?;
    assert_eq!(
        action.requeue_after(),
        None,
        "a conversion error waits for a change, not a timer"
    );
    let cond = status::synchronized(
        &Api::<mapi::Machine>::namespaced(client.clone(), NS)
            .get("m")
            .await?,
    )
    .cloned()
    .ok_or("no condition")?;
    assert_eq!(
        (cond.status.as_str(), cond.reason.as_deref()),
        ("False", Some("FailedToConvertMAPIMachineToCAPI"))
    );

    report::fail(
        &ctx,
        MANAGER,
        &objects("c", None, Some(capi_only)),
        "FailedToConvertCAPIMachineToMAPI",
        "spec.version: unsupported",
    )
    .await?;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client, NS);
    let events = events.list(&Default::default()).await?.items;
    let on: BTreeMap<String, String> = events
        .iter()
        .filter(|e| {
            e.reason.as_deref() == Some(report::SYNCHRONIZATION_ERROR)
                && e.type_.as_deref() == Some("Warning")
        })
        .filter_map(|e| {
            Some((
                e.regarding.as_ref()?.kind.clone()?,
                e.note.clone().unwrap_or_default(),
            ))
        })
        .collect();
    assert!(
        on.get("Machine").is_some_and(|n| n.contains("FailedTo")),
        "{on:?}"
    );
    let kinds: Vec<(Option<String>, Option<String>)> = events
        .iter()
        .map(|e| {
            (
                e.regarding.as_ref().and_then(|r| r.api_version.clone()),
                e.regarding.as_ref().and_then(|r| r.name.clone()),
            )
        })
        .collect();
    assert!(
        kinds.contains(&(Some("machine.openshift.io/v1beta1".into()), Some("m".into()))),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(Some("cluster.x-k8s.io/v1beta2".into()), Some("c".into()))),
        "{kinds:?}"
    );
    Ok(())
}

/// A Machine pair for the context above.
struct Pair;

impl sync_core::SyncPair for Pair {
    type Mapi = mapi::Machine;
    type Capi = capi::Machine;
    type OwnerMirror = sync_core::NoOwner;
    const NAME: &'static str = "machine-sync";
    const CAPI_ONLY: sync_core::CapiOnly = sync_core::CapiOnly::Ignore;
    const INFRA_REF: Option<&'static str> = None;
    fn infra_ref(
        _: &capi::Machine,
    ) -> Result<Option<sync_core::api::InfraRef>, sync_core::api::MalformedRef> {
        Ok(None)
    }
}
