//! The real sync end to end: a platform's hooks on envtest as the operator's
//! ServiceAccount (any Forbidden fails the scenario: the RBAC covers that platform's
//! kinds), with the simulated providers where a scenario needs another controller's work
//! (finalizers, phases, status). One scenario per behaviour; regression scenarios name the
//! upstream bug.
//!
//! Every scenario is `async fn scenario(platform: &TestPlatform)`, run on AWS and on
//! OpenStack by [`e2e::on_each_platform!`] as `scenario::aws` and `scenario::openstack`, so a
//! failure names the platform. The simulated providers answer as the platform's do (the
//! Machine API actuator by the providerSpec's kind, CAPA or CAPO for the infrastructure
//! machines).

use std::collections::BTreeMap;

use e2e::real::{
    AWS, CLUSTER_NAME, OPENSTACK, RealSync, Size, TestPlatform, cluster_on, cluster_without_policies_on,
    create_machine, create_machine_set, create_owned_machine_set, eventually, finalizers_of, synchronized,
};
use e2e::{Cluster, TestResult};
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_core::toolkit::SYNC_FINALIZER;
use sync_core::toolkit::pause::PAUSED_ANNOTATION;

const SET_LABEL: &str = "machine.openshift.io/cluster-api-machineset";

e2e::on_each_platform!(
    machine_api_authoritative_machine_gets_a_paused_capi_mirror_and_infra_machine,
    status_is_copied_once_synchronized_and_other_conditions_keep_their_owners,
    cluster_api_authoritative_machine_without_capi_gets_an_unpaused_one_regression_288,
    capi_only_machine_of_a_mirrored_set_gets_a_cluster_api_driven_mapi_mirror,
    deleting_a_machine_api_machine_deletes_its_mirror_in_finalizer_order,
    deleting_a_cluster_api_machine_deletes_its_mapi_mirror,
    an_infra_machine_spec_change_recreates_it,
    control_plane_machines_and_conversion_errors_are_synchronized_false_without_retries,
    machine_api_machine_set_gets_a_template_and_rotates_it_on_a_spec_change_regression_295,
    cluster_api_machine_set_updates_its_mapi_mirror_and_mirror_deletion_only_releases,
    deleting_either_side_of_a_machine_set_deletes_the_other_and_the_templates,
    a_machine_set_with_owner_references_is_synchronized_false_without_retries,
    a_machine_whose_capi_machine_set_is_not_there_yet_is_mirrored_when_the_set_appears,
    a_restart_runs_no_hook_for_pairs_unchanged_since_the_last_run_verified_them,
    a_writer_that_keeps_removing_the_sync_s_conditions_is_not_fought,
    mirrors_never_carry_the_last_applied_configuration,
    a_machine_api_set_never_takes_over_a_capi_set_the_sync_did_not_create,
    a_field_a_user_adds_to_a_mirror_s_spec_is_removed_and_reported,
    the_infra_machine_conditions_are_merged_with_the_provider_s_by_type,
);

async fn synced_machine(
    cluster: &Cluster,
    name: &str,
    generation_of: impl Fn(&mapi::Machine) -> Option<i64>,
) -> TestResult<mapi::Machine> {
    let api = cluster.mapi_machines();
    eventually(&format!("MAPI Machine {name} Synchronized=True"), || {
        let api = api.clone();
        let generation_of = &generation_of;
        async move {
            let machine = api.get(name).await?;
            let done = synchronized(&machine).is_some_and(|(s, _)| s == "True")
                && machine
                    .status
                    .as_ref()
                    .and_then(|s| s.sync.synchronized_generation)
                    == generation_of(&machine);
            Ok(done.then_some(machine))
        }
    })
    .await
}

fn own_generation(machine: &mapi::Machine) -> Option<i64> {
    machine.metadata.generation
}

/// A MachineAPI-authoritative Machine, once Synchronized=True at its generation.
async fn machine_api_machine(
    cluster: &Cluster,
    platform: &TestPlatform,
    name: &str,
) -> TestResult<mapi::Machine> {
    create_machine(
        cluster,
        name,
        "MachineAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    synced_machine(cluster, name, own_generation).await
}

async fn machine_api_authoritative_machine_gets_a_paused_capi_mirror_and_infra_machine(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    let labels = [
        ("machine.openshift.io/cluster-api-machine-role", "worker"),
        ("machine.openshift.io/instance-type", platform.size(Size::Large)),
        ("team", "a"),
    ];
    create_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &labels,
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let mapi = synced_machine(&cluster, "w-1", own_generation).await?;
    assert!(finalizers_of(&mapi).contains(&SYNC_FINALIZER.to_owned()));

    let machine = cluster.capi_machines().get("w-1").await?;
    assert_eq!(machine.spec.cluster_name, CLUSTER_NAME);
    assert_eq!(machine.spec.failure_domain.as_deref(), Some(platform.zone));
    assert_eq!(
        machine.spec.bootstrap.data_secret_name.as_deref(),
        Some("worker-user-data")
    );
    assert_eq!(
        machine
            .spec
            .deletion
            .as_ref()
            .and_then(|d| d.node_deletion_timeout_seconds),
        Some(10)
    );
    assert_eq!(machine.spec.infrastructure_ref.kind, platform.machine_kind);
    assert_eq!(
        machine.annotations().get(PAUSED_ANNOTATION).map(String::as_str),
        Some("")
    );
    let labels: BTreeMap<&str, &str> = machine
        .labels()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(labels.get("node-role.kubernetes.io/worker"), Some(&""));
    assert_eq!(labels.get("cluster.x-k8s.io/cluster-name"), Some(&CLUSTER_NAME));
    assert_eq!(labels.get("team"), Some(&"a"));
    assert!(!labels.contains_key("machine.openshift.io/instance-type"));
    assert_eq!(
        finalizers_of(&machine),
        ["machine.cluster.x-k8s.io", SYNC_FINALIZER]
    );

    let infra = platform.machines(&cluster).get("w-1").await?;
    assert_eq!(
        infra.data["spec"][platform.size_field],
        platform.size(Size::Large)
    );
    assert_eq!(infra.data["spec"]["rootVolume"], (platform.root_volume)());
    assert_eq!(
        infra.annotations().get(PAUSED_ANNOTATION).map(String::as_str),
        Some("")
    );
    let owner = infra
        .owner_references()
        .first()
        .cloned()
        .ok_or("infrastructure machine without owner")?;
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Machine", "w-1", machine.uid().unwrap_or_default().as_str())
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(finalizers_of(&infra), [SYNC_FINALIZER]);

    // Once the status is copied too, nothing more is written: the mirrors' own watch
    // events, and a change of a field the sync does not own, cause no write.
    let capi_api = cluster.capi_machines();
    eventually("the CAPI status copied", || {
        let api = capi_api.clone();
        async move {
            let m = api.get("w-1").await?;
            Ok(
                (m.status.as_ref().and_then(|s| s.observed_generation) == m.metadata.generation)
                    .then_some(()),
            )
        }
    })
    .await?;
    let reconciles = || {
        sync.observer
            .reconciles()
            .iter()
            .filter(|r| r.name == "w-1")
            .count()
    };
    let before = reconciles();
    let touched = platform
        .machines(&cluster)
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"theirs": "x"}}})),
        )
        .await?;
    eventually("a reconcile of the touched pair", || async {
        Ok((reconciles() > before).then_some(()))
    })
    .await?;
    let capi_rv = cluster.capi_machines().get("w-1").await?.resource_version();
    let mapi_rv = cluster.mapi_machines().get("w-1").await?.resource_version();
    let before = reconciles();
    cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await?;
    platform
        .machines(&cluster)
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"theirs": "y"}}})),
        )
        .await?;
    eventually("another reconcile", || async {
        Ok((reconciles() > before).then_some(()))
    })
    .await?;
    assert_eq!(
        cluster.capi_machines().get("w-1").await?.resource_version(),
        capi_rv
    );
    assert_eq!(
        cluster.mapi_machines().get("w-1").await?.resource_version(),
        mapi_rv
    );
    let infra_now = platform.machines(&cluster).get("w-1").await?;
    assert_eq!(infra_now.labels().get("theirs").map(String::as_str), Some("y"));
    assert_ne!(infra_now.resource_version(), touched.resource_version());

    // A label edit propagates; a removed one is removed.
    cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": null, "tier": "gold"}}})),
        )
        .await?;
    let api = cluster.capi_machines();
    eventually("label change on the CAPI Machine", || {
        let api = api.clone();
        async move {
            let m = api.get("w-1").await?;
            Ok((m.labels().get("tier").map(String::as_str) == Some("gold")
                && !m.labels().contains_key("team"))
            .then_some(()))
        }
    })
    .await?;
    sync.stop().await
}

async fn status_is_copied_once_synchronized_and_other_conditions_keep_their_owners(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, true).await?;
    create_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let api = cluster.capi_machines();
    // The simulated MAPI provider runs the instance; its phase and addresses reach CAPI.
    let machine = eventually("CAPI status copied from a Running MAPI Machine", || {
        let api = api.clone();
        async move {
            let m = api.get("w-1").await?;
            Ok((m.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")).then_some(m))
        }
    })
    .await?;
    let status = machine.status.clone().unwrap_or_default();
    assert!(status.addresses.is_some_and(|a| !a.is_empty()));
    assert_eq!(
        status.initialization.and_then(|i| i.infrastructure_provisioned),
        Some(true)
    );
    let mapi = synced_machine(&cluster, "w-1", own_generation).await?;
    // The MAPI provider's Paused condition is still its own (upstream #313).
    let conditions: Vec<&str> = mapi
        .status
        .as_ref()
        .and_then(|s| s.sync.conditions.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert!(conditions.contains(&"Synchronized"), "{conditions:?}");
    let sync_manager = mapi
        .managed_fields()
        .iter()
        .find(|e| e.manager.as_deref() == Some("MachineSyncController-SynchronizedCondition"))
        .and_then(|e| e.fields_v1.as_ref())
        .map(|f| {
            f.0["f:status"]["f:conditions"]
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>())
        })
        .ok_or("no condition field manager")?;
    assert_eq!(
        sync_manager,
        Some(vec!["k:{\"type\":\"Synchronized\"}".to_string()])
    );
    sync.stop().await
}

async fn cluster_api_authoritative_machine_without_capi_gets_an_unpaused_one_regression_288(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    create_machine(
        &cluster,
        "w-1",
        "ClusterAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let api = cluster.capi_machines();
    let machine = eventually("a CAPI Machine", || {
        let api = api.clone();
        async move { Ok(api.get_opt("w-1").await?) }
    })
    .await?;
    assert!(!machine.annotations().contains_key(PAUSED_ANNOTATION));
    let infra = platform.machines(&cluster);
    let infra = eventually("an infrastructure machine", || {
        let infra = infra.clone();
        async move { Ok(infra.get_opt("w-1").await?) }
    })
    .await?;
    assert!(!infra.annotations().contains_key(PAUSED_ANNOTATION));
    // From then on CAPI drives: the MAPI Machine reports the CAPI generation.
    let capi_generation = machine.metadata.generation;
    synced_machine(&cluster, "w-1", |_| capi_generation).await?;
    sync.stop().await
}

async fn capi_only_machine_of_a_mirrored_set_gets_a_cluster_api_driven_mapi_mirror(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    let set = create_machine_set(
        &cluster,
        "ws",
        "ClusterAPI",
        0,
        platform.provider_spec(Size::Large),
    )
    .await?;
    // The CAPI MachineSet (the sync creates it from the MAPI one) and a Machine of it.
    let sets = cluster.capi_machine_sets();
    let capi_set = eventually("the CAPI MachineSet", || {
        let sets = sets.clone();
        async move { Ok(sets.get_opt("ws").await?) }
    })
    .await?;
    let mut infra = kube::api::DynamicObject::new(
        "ws-abc",
        &e2e::infra_resource(platform.machine_kind, platform.version),
    );
    infra.data = json!({"spec": platform.infra_spec(Size::XLarge)});
    platform
        .machines(&cluster)
        .create(&PostParams::default(), &infra)
        .await?;
    let mut machine = capi::Machine::new(
        "ws-abc",
        e2e::capi_machine_spec((platform.machine_kind, "ws-abc")),
    );
    machine.spec.cluster_name = CLUSTER_NAME.into();
    machine.spec.failure_domain = Some(platform.other_zone.into());
    machine.metadata.labels = Some(
        [
            (SET_LABEL.to_owned(), "ws".to_owned()),
            ("cluster.x-k8s.io/set-name".to_owned(), "ws".to_owned()),
        ]
        .into(),
    );
    machine.metadata.owner_references = Some(vec![e2e::controller_owner(&capi_set)]);
    cluster
        .capi_machines()
        .create(&PostParams::default(), &machine)
        .await?;

    let capi_generation = Some(1);
    let mirror = synced_machine(&cluster, "ws-abc", |_| capi_generation).await?;
    assert_eq!(mirror.spec.authoritative_api, Some(AuthoritativeApi::ClusterApi));
    assert_eq!(
        e2e::real::authority_of(&mirror),
        Some(AuthoritativeApi::ClusterApi)
    );
    let owner = mirror.owner_references().first().cloned().ok_or("no owner")?;
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("MachineSet", set.uid().unwrap_or_default().as_str())
    );
    // The reverse conversion: the providerSpec is the infrastructure machine's.
    let provider = mirror
        .spec
        .provider_spec
        .as_ref()
        .and_then(|p| p.value.as_ref())
        .map(|v| v.to_value())
        .unwrap_or_default();
    assert_eq!(
        provider[platform.size_field],
        platform.size(Size::XLarge),
        "{provider}"
    );
    let labels = mirror.labels();
    assert_eq!(labels.get(SET_LABEL).map(String::as_str), Some("ws"));
    assert_eq!(
        labels
            .get("machine.openshift.io/instance-type")
            .map(String::as_str),
        Some(platform.size(Size::XLarge))
    );
    assert_eq!(
        labels.get("machine.openshift.io/zone").map(String::as_str),
        Some(platform.other_zone)
    );
    assert!(
        labels.keys().all(|k| !k.contains("cluster.x-k8s.io/")),
        "{labels:?}"
    );
    assert!(finalizers_of(&mirror).contains(&SYNC_FINALIZER.to_owned()));
    assert!(
        finalizers_of(&cluster.capi_machines().get("ws-abc").await?).contains(&SYNC_FINALIZER.to_owned())
    );
    assert!(
        finalizers_of(&platform.machines(&cluster).get("ws-abc").await?).contains(&SYNC_FINALIZER.to_owned())
    );
    sync.stop().await
}

/// Waits until `api` has no object `name`.
async fn gone<K>(api: &kube::Api<K>, name: &str) -> TestResult
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(&format!("{} {name} gone", K::kind(&())), || {
        let api = api.clone();
        async move { Ok(api.get_opt(name).await?.is_none().then_some(())) }
    })
    .await
}

/// The last reconcile of `name` ended without a hook error, and there were few (a write
/// on a stale cache is refused and retried): no hot retry loop.
fn no_hook_errors(sync: &RealSync, name: &str) -> TestResult {
    let outcomes: Vec<_> = sync
        .observer
        .reconciles()
        .into_iter()
        .filter(|r| r.name == name)
        .map(|r| r.outcome)
        .collect();
    let errors = outcomes.iter().filter(|o| o.result() == "error").count();
    let last_failed = outcomes.last().is_some_and(|o| o.result() == "error");
    if last_failed || errors > 3 {
        return Err(format!("hook errors for {name}: {outcomes:?}").into());
    }
    Ok(())
}

async fn deleting_a_machine_api_machine_deletes_its_mirror_in_finalizer_order(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, true).await?;
    machine_api_machine(&cluster, platform, "w-1").await?;
    // The MAPI provider holds its finalizer until it has deleted the instance.
    let mapi_api = cluster.mapi_machines();
    eventually("the MAPI provider's finalizer", || {
        let api = mapi_api.clone();
        async move {
            Ok(api
                .get("w-1")
                .await?
                .finalizers()
                .iter()
                .any(|f| f == "machine.machine.openshift.io")
                .then_some(()))
        }
    })
    .await?;
    cluster
        .mapi_machines()
        .delete("w-1", &DeleteParams::default())
        .await?;
    gone(&cluster.mapi_machines(), "w-1").await?;
    gone(&cluster.capi_machines(), "w-1").await?;
    let infra = platform.machines(&cluster);
    eventually("the infrastructure machine gone", || {
        let infra = infra.clone();
        async move { Ok(infra.get_opt("w-1").await?.is_none().then_some(())) }
    })
    .await?;
    no_hook_errors(&sync, "w-1")?;
    sync.stop().await
}

async fn deleting_a_cluster_api_machine_deletes_its_mapi_mirror(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, true).await?;
    create_machine(
        &cluster,
        "w-1",
        "ClusterAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let api = cluster.capi_machines();
    eventually("the CAPI provider's finalizer", || {
        let api = api.clone();
        async move {
            Ok(api
                .get_opt("w-1")
                .await?
                .filter(|m| {
                    m.finalizers().iter().any(|f| f == "machine.cluster.x-k8s.io")
                        && finalizers_of(m).contains(&SYNC_FINALIZER.to_owned())
                })
                .map(|_| ()))
        }
    })
    .await?;
    cluster
        .capi_machines()
        .delete("w-1", &DeleteParams::default())
        .await?;
    gone(&cluster.capi_machines(), "w-1").await?;
    gone(&cluster.mapi_machines(), "w-1").await?;
    assert!(platform.machines(&cluster).get_opt("w-1").await?.is_none());
    let events = e2e::migration::events_about(&cluster, &cluster.namespaces.mapi, "w-1").await?;
    let deleted = events
        .iter()
        .find(|e| e.reason == "DeletedWithMirror")
        .ok_or_else(|| format!("no DeletedWithMirror Event: {events:?}"))?;
    assert_eq!(
        deleted.note,
        format!(
            "the Cluster API Machine {}/w-1, which is authoritative, was deleted; deleting this Machine, its mirror",
            cluster.namespaces.capi
        )
    );
    no_hook_errors(&sync, "w-1")?;
    sync.stop().await
}

async fn an_infra_machine_spec_change_recreates_it(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    machine_api_machine(&cluster, platform, "w-1").await?;
    let first = platform.machines(&cluster).get("w-1").await?;
    cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"providerSpec": {"value": platform.size_patch(Size::X2Large)}}})),
        )
        .await?;
    let infra = platform.machines(&cluster);
    let first_uid = first.uid();
    let second = eventually("a new infrastructure machine", || {
        let infra = infra.clone();
        let first_uid = first_uid.clone();
        async move { Ok(infra.get_opt("w-1").await?.filter(|m| m.uid() != first_uid)) }
    })
    .await?;
    assert_eq!(
        second.data["spec"][platform.size_field],
        platform.size(Size::X2Large)
    );
    let mapi = synced_machine(&cluster, "w-1", own_generation).await?;
    assert_eq!(mapi.metadata.generation, Some(2));
    sync.stop().await
}

async fn control_plane_machines_and_conversion_errors_are_synchronized_false_without_retries(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    // Owned by a ControlPlaneMachineSet.
    let cp: mapi::Machine = serde_json::from_value(json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": "master-0", "ownerReferences": [{"apiVersion": "machine.openshift.io/v1", "kind": "ControlPlaneMachineSet", "name": "cluster", "uid": "cpms-uid", "controller": true}]},
        "spec": {"providerSpec": {"value": platform.provider_spec(Size::XLarge)}},
    }))?;
    cluster
        .mapi_machines()
        .create(&PostParams::default(), &cp)
        .await?;
    cluster.set_machine_authority("master-0", "MachineAPI").await?;
    // A providerSpec the conversion refuses.
    let (unconvertible, fix) = platform.unconvertible();
    let mut bad = platform.provider_spec(Size::Large);
    merge(&mut bad, &unconvertible);
    create_machine(&cluster, "bad", "MachineAPI", &[], None, bad).await?;

    for (name, reason) in [
        ("master-0", "FailedToConvertMAPIMachineToCAPI"),
        ("bad", "FailedToConvertMAPIMachineToCAPI"),
    ] {
        let api = cluster.mapi_machines();
        let machine = eventually(&format!("{name} Synchronized=False"), || {
            let api = api.clone();
            async move {
                Ok(Some(api.get(name).await?).filter(|m| synchronized(m).is_some_and(|(s, _)| s == "False")))
            }
        })
        .await?;
        assert_eq!(synchronized(&machine).map(|(_, r)| r), Some(reason.to_owned()));
        assert!(cluster.capi_machines().get_opt(name).await?.is_none());
        cluster
            .wait_for_warning(&cluster.namespaces.mapi, "SynchronizationError", name)
            .await?;
        no_hook_errors(&sync, name)?;
    }
    let message = sync_core::toolkit::status::synchronized(&cluster.mapi_machines().get("master-0").await?)
        .and_then(|c| c.message.clone())
        .unwrap_or_default();
    assert!(message.contains("control plane machine set"), "{message}");

    // Fixing the input resumes the sync.
    cluster
        .mapi_machines()
        .patch(
            "bad",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"providerSpec": {"value": fix}}})),
        )
        .await?;
    synced_machine(&cluster, "bad", own_generation).await?;
    sync.stop().await
}

async fn capi_set(cluster: &Cluster, name: &str) -> TestResult<capi::MachineSet> {
    let sets = cluster.capi_machine_sets();
    eventually(&format!("CAPI MachineSet {name}"), || {
        let sets = sets.clone();
        async move { Ok(sets.get_opt(name).await?) }
    })
    .await
}

async fn synced_set(
    cluster: &Cluster,
    name: &str,
    generation: impl Fn(&mapi::MachineSet) -> Option<i64>,
) -> TestResult<mapi::MachineSet> {
    let api = cluster.mapi_machine_sets();
    eventually(&format!("MAPI MachineSet {name} Synchronized=True"), || {
        let api = api.clone();
        let generation = &generation;
        async move {
            let set = api.get(name).await?;
            let done = synchronized(&set).is_some_and(|(s, _)| s == "True")
                && set.status.as_ref().and_then(|s| s.sync.synchronized_generation) == generation(&set);
            Ok(done.then_some(set))
        }
    })
    .await
}

/// The MAPI MachineSet `name`, once `Synchronized=False`.
async fn unsynchronized_set(cluster: &Cluster, name: &str) -> TestResult<mapi::MachineSet> {
    let api = cluster.mapi_machine_sets();
    eventually(&format!("MAPI MachineSet {name} Synchronized=False"), || {
        let api = api.clone();
        async move {
            Ok(Some(api.get(name).await?).filter(|s| synchronized(s).is_some_and(|(st, _)| st == "False")))
        }
    })
    .await
}

async fn templates(cluster: &Cluster, platform: &TestPlatform, set: &str) -> TestResult<Vec<String>> {
    let list = platform
        .templates(cluster)
        .list(&kube::api::ListParams::default().labels(&format!("{SET_LABEL}={set}")))
        .await?;
    Ok(list.items.iter().map(ResourceExt::name_any).collect())
}

async fn machine_api_machine_set_gets_a_template_and_rotates_it_on_a_spec_change_regression_295(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    create_machine_set(
        &cluster,
        "ws",
        "MachineAPI",
        2,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let set = synced_set(&cluster, "ws", |s| s.metadata.generation).await?;
    assert!(finalizers_of(&set).contains(&SYNC_FINALIZER.to_owned()));
    let capi = capi_set(&cluster, "ws").await?;
    assert_eq!(capi.spec.replicas, Some(2));
    assert_eq!(
        capi.annotations().get(PAUSED_ANNOTATION).map(String::as_str),
        Some("")
    );
    assert!(finalizers_of(&capi).contains(&SYNC_FINALIZER.to_owned()));
    let first = capi.spec.template.spec.infrastructure_ref.name.clone();
    assert!(
        first.starts_with("ws-") && first.len() == "ws-".len() + 8,
        "{first}"
    );
    assert_eq!(
        templates(&cluster, platform, "ws").await?,
        std::slice::from_ref(&first)
    );
    let template = platform.templates(&cluster).get(&first).await?;
    assert_eq!(
        template.data["spec"]["template"]["spec"][platform.size_field],
        platform.size(Size::Large)
    );

    cluster
        .mapi_machine_sets()
        .patch(
            "ws",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"providerSpec": {"value": platform.size_patch(Size::X4Large)}}}}})),
        )
        .await?;
    let sets = cluster.capi_machine_sets();
    let rotated = eventually("the CAPI MachineSet on a new template", || {
        let sets = sets.clone();
        let first = first.clone();
        async move {
            Ok(Some(sets.get("ws").await?).filter(|s| s.spec.template.spec.infrastructure_ref.name != first))
        }
    })
    .await?;
    let second = rotated.spec.template.spec.infrastructure_ref.name.clone();
    let c = &cluster;
    eventually("only the new template left", || {
        let second = second.clone();
        async move { Ok((templates(c, platform, "ws").await? == [second]).then_some(())) }
    })
    .await?;
    let template = platform.templates(&cluster).get(&second).await?;
    assert_eq!(
        template.data["spec"]["template"]["spec"][platform.size_field],
        platform.size(Size::X4Large)
    );
    synced_set(&cluster, "ws", |s| s.metadata.generation).await?;
    sync.stop().await
}

async fn cluster_api_machine_set_updates_its_mapi_mirror_and_mirror_deletion_only_releases(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    create_machine_set(
        &cluster,
        "ws",
        "ClusterAPI",
        1,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let capi = capi_set(&cluster, "ws").await?;
    assert!(!capi.annotations().contains_key(PAUSED_ANNOTATION));
    // CAPI drives: a replica change there reaches the MAPI set, selector and authority kept.
    cluster
        .capi_machine_sets()
        .patch(
            "ws",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await?;
    let api = cluster.mapi_machine_sets();
    let mirror = eventually("MAPI replicas 3", || {
        let api = api.clone();
        async move { Ok(Some(api.get("ws").await?).filter(|s| s.spec.replicas == Some(3))) }
    })
    .await?;
    assert_eq!(mirror.spec.authoritative_api, Some(AuthoritativeApi::ClusterApi));
    assert_eq!(
        mirror
            .spec
            .selector
            .match_labels
            .as_ref()
            .and_then(|l| l.get(SET_LABEL))
            .map(String::as_str),
        Some("ws")
    );
    let capi_generation = cluster.capi_machine_sets().get("ws").await?.metadata.generation;
    synced_set(&cluster, "ws", |_| capi_generation).await?;

    // Deleting the MAPI mirror of a Cluster API set only releases it.
    cluster
        .mapi_machine_sets()
        .delete("ws", &DeleteParams::default())
        .await?;
    gone(&cluster.mapi_machine_sets(), "ws").await?;
    let capi = cluster.capi_machine_sets().get("ws").await?;
    assert!(capi.metadata.deletion_timestamp.is_none());

    // Upstream #626: the CAPI set, its MAPI set gone, is released when deleted.
    cluster
        .capi_machine_sets()
        .delete("ws", &DeleteParams::default())
        .await?;
    gone(&cluster.capi_machine_sets(), "ws").await?;
    no_hook_errors(&sync, "ws")?;
    sync.stop().await
}

async fn deleting_either_side_of_a_machine_set_deletes_the_other_and_the_templates(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    // MAPI drives: deleting the MAPI set deletes the CAPI set and its templates.
    create_machine_set(
        &cluster,
        "wm",
        "MachineAPI",
        0,
        platform.provider_spec(Size::Large),
    )
    .await?;
    synced_set(&cluster, "wm", |s| s.metadata.generation).await?;
    assert_eq!(templates(&cluster, platform, "wm").await?.len(), 1);
    cluster
        .mapi_machine_sets()
        .delete("wm", &DeleteParams::default())
        .await?;
    gone(&cluster.mapi_machine_sets(), "wm").await?;
    gone(&cluster.capi_machine_sets(), "wm").await?;
    let c = &cluster;
    eventually("the templates of wm gone", || async move {
        Ok(templates(c, platform, "wm").await?.is_empty().then_some(()))
    })
    .await?;

    // CAPI drives: deleting the CAPI set deletes its MAPI mirror.
    create_machine_set(
        &cluster,
        "wc",
        "ClusterAPI",
        0,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let capi_generation = capi_set(&cluster, "wc").await?.metadata.generation;
    synced_set(&cluster, "wc", |_| capi_generation).await?;
    cluster
        .capi_machine_sets()
        .delete("wc", &DeleteParams::default())
        .await?;
    gone(&cluster.capi_machine_sets(), "wc").await?;
    gone(&cluster.mapi_machine_sets(), "wc").await?;
    no_hook_errors(&sync, "wm")?;
    no_hook_errors(&sync, "wc")?;
    sync.stop().await
}

async fn a_machine_set_with_owner_references_is_synchronized_false_without_retries(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    // A live owner (an owner that does not exist would have the garbage collector delete
    // the set, as kube-controller-manager's does).
    let owners = kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        cluster.client.clone(),
        &cluster.namespaces.mapi,
    );
    let owner = owners
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}}))?,
        )
        .await?;
    let uid = owner.metadata.uid.clone().unwrap_or_default();
    create_owned_machine_set(
        &cluster,
        "owned",
        "MachineAPI",
        0,
        platform.provider_spec(Size::Large),
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": uid}]),
    )
    .await?;
    let set = unsynchronized_set(&cluster, "owned").await?;
    assert_eq!(
        synchronized(&set).map(|(_, r)| r),
        Some("FailedToConvertMAPIMachineSetToCAPI".to_owned())
    );
    assert!(cluster.capi_machine_sets().get_opt("owned").await?.is_none());
    // The regression: upstream returned an error here, retried with backoff forever.
    no_hook_errors(&sync, "owned")?;
    sync.stop().await
}

/// A Machine of a MachineSet the sync cannot mirror yet waits for the CAPI MachineSet
/// (`WaitingForCAPIMachineSet`, no CAPI Machine); once the set converts, the MachineSet
/// sync's watch reports its mirror and the Machine is mirrored under it, on that event:
/// well within half the Machine's 60 s backstop requeue.
async fn a_machine_whose_capi_machine_set_is_not_there_yet_is_mirrored_when_the_set_appears(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    let (unconvertible, fix) = platform.unconvertible();
    let mut bad = platform.provider_spec(Size::Large);
    merge(&mut bad, &unconvertible);
    let set = create_machine_set(&cluster, "later", "MachineAPI", 0, bad).await?;
    unsynchronized_set(&cluster, "later").await?;
    let labels = [(SET_LABEL, "later")];
    let provider = platform.provider_spec(Size::Large);
    create_machine(&cluster, "later-a", "MachineAPI", &labels, Some(&set), provider).await?;
    let machines = cluster.mapi_machines();
    eventually("Machine later-a WaitingForCAPIMachineSet", || {
        let machines = machines.clone();
        async move {
            let machine = machines.get("later-a").await?;
            let waiting =
                synchronized(&machine).is_some_and(|(_, reason)| reason == "WaitingForCAPIMachineSet");
            Ok(waiting.then_some(()))
        }
    })
    .await?;
    assert!(cluster.capi_machines().get_opt("later-a").await?.is_none());
    // A Machine deleted while it waits waits no more.
    let provider = platform.provider_spec(Size::Large);
    create_machine(
        &cluster,
        "later-gone",
        "MachineAPI",
        &labels,
        Some(&set),
        provider,
    )
    .await?;
    parked(&sync, 2).await?;
    machines.delete("later-gone", &DeleteParams::default()).await?;
    parked(&sync, 1).await?;

    let fixed = json!({"spec": {"template": {"spec": {"providerSpec": {"value": fix}}}}});
    cluster
        .mapi_machine_sets()
        .patch("later", &PatchParams::default(), &Patch::Merge(fixed))
        .await?;
    let capi_set = capi_set(&cluster, "later").await?;
    let capi_machines = cluster.capi_machines();
    let mirror =
        e2e::real::eventually_within(std::time::Duration::from_secs(30), "CAPI Machine later-a", || {
            let capi_machines = capi_machines.clone();
            async move { Ok(capi_machines.get_opt("later-a").await?) }
        })
        .await?;
    let owner = mirror.owner_references().first().cloned().ok_or("no owner")?;
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        (
            "MachineSet",
            capi_set.uid().unwrap_or_default().as_str(),
            Some(true)
        )
    );
    synced_machine(&cluster, "later-a", own_generation).await?;
    no_hook_errors(&sync, "later-a")?;
    sync.stop().await
}

/// Waits until `count` Machines wait for a CAPI MachineSet.
async fn parked(sync: &RealSync, count: usize) -> TestResult {
    eventually(&format!("{count} Machines waiting for a CAPI MachineSet"), || {
        let waiting = sync.waiting_machines.parked();
        async move { Ok((waiting == count).then_some(())) }
    })
    .await
}

/// `patch` merged into `value` (JSON merge patch: `null` removes).
fn merge(value: &mut serde_json::Value, patch: &serde_json::Value) {
    match (value.as_object_mut(), patch.as_object()) {
        (Some(object), Some(patch)) => {
            for (key, change) in patch {
                if change.is_null() {
                    object.remove(key);
                } else {
                    merge(
                        object.entry(key.clone()).or_insert(serde_json::Value::Null),
                        change,
                    );
                }
            }
        }
        _ => *value = patch.clone(),
    }
}

/// The first reconcile of `name` by `controller` in this run.
async fn first_outcome(sync: &RealSync, controller: &str, name: &str) -> TestResult<sync_core::Outcome> {
    let first = sync
        .observer
        .wait_for(e2e::WAIT, |r| r.controller == controller && r.name == name)
        .await?;
    Ok(first.outcome)
}

async fn a_restart_runs_no_hook_for_pairs_unchanged_since_the_last_run_verified_them(
    platform: &TestPlatform,
) -> TestResult {
    use sync_core::{Outcome, SkipReason, SyncPair};
    let machines = controllers::machine::MachineSync::NAME;
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    for name in ["w-1", "w-2"] {
        create_machine(
            &cluster,
            name,
            "MachineAPI",
            &[],
            None,
            platform.provider_spec(Size::Large),
        )
        .await?;
        synced_machine(&cluster, name, own_generation).await?;
    }
    sync.stop().await?;

    // A stop may come between a pair's last write and the reconcile that sees it written:
    // that pair is verified by the next run, and skipped by the one after. So restart until
    // a run skips both (bounded).
    let mut skipped = false;
    for _ in 0..3 {
        let sync = RealSync::start_on(&cluster, platform, false).await?;
        let mut outcomes = Vec::new();
        for name in ["w-1", "w-2"] {
            outcomes.push(first_outcome(&sync, machines, name).await?);
        }
        skipped = outcomes
            .iter()
            .all(|o| *o == Outcome::Skipped(SkipReason::Checkpointed));
        sync.stop().await?;
        if skipped {
            break;
        }
    }
    assert!(skipped, "no restart skipped the synchronized pairs");

    // Changed while stopped: that pair runs its hook at the restart, the other does not.
    let label = Patch::Merge(json!({"metadata": {"labels": {"team": "while-stopped"}}}));
    cluster
        .mapi_machines()
        .patch("w-2", &PatchParams::default(), &label)
        .await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    assert_eq!(
        first_outcome(&sync, machines, "w-1").await?,
        Outcome::Skipped(SkipReason::Checkpointed)
    );
    assert!(matches!(
        first_outcome(&sync, machines, "w-2").await?,
        Outcome::Synced { failed: false, .. }
    ));
    let capi = cluster.capi_machines();
    eventually("the label on the CAPI mirror", || {
        let capi = capi.clone();
        async move {
            let machine = capi.get("w-2").await?;
            Ok((machine.labels().get("team").map(String::as_str) == Some("while-stopped")).then_some(()))
        }
    })
    .await?;
    no_hook_errors(&sync, "w-2")?;
    sync.stop().await
}

/// The infrastructure machine's conditions (an atomic list in CAPA's CRD) are shared with
/// the provider: the sync keeps the provider's `Paused` and sets its own by type.
fn condition_types(infra: &kube::api::DynamicObject) -> Vec<String> {
    infra.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str().map(str::to_owned))
        .collect()
}

async fn the_infra_machine_conditions_are_merged_with_the_provider_s_by_type(
    platform: &TestPlatform,
) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, true).await?;
    machine_api_machine(&cluster, platform, "w-1").await?;
    let infra = platform.machines(&cluster);
    let merged = eventually("the provider's Paused beside the sync's conditions", || {
        let infra = infra.clone();
        async move {
            let object = infra.get("w-1").await?;
            let types = condition_types(&object);
            Ok((["Paused", "Ready", "InstanceReady"]
                .iter()
                .all(|t| types.iter().any(|have| have == t)))
            .then_some(object))
        }
    })
    .await?;
    let paused = merged.data["status"]["conditions"]
        .as_array()
        .and_then(|list| list.iter().find(|c| c["type"] == "Paused").cloned())
        .ok_or("no Paused condition")?;
    assert_eq!(paused["status"], "True", "{paused}");
    no_hook_errors(&sync, "w-1")?;
    sync.stop().await
}

/// A second writer that replaces the whole list without the sync's conditions each time
/// it sees them: the sync restores them a bounded number of times, then holds off and
/// names the other manager in a Warning Event.
async fn a_writer_that_keeps_removing_the_sync_s_conditions_is_not_fought(
    platform: &TestPlatform,
) -> TestResult {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    const HOSTILE: &str = "hostile-writer";
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    machine_api_machine(&cluster, platform, "w-1").await?;
    let infra = platform.machines(&cluster);
    let stop = tokio_util::sync::CancellationToken::new();
    let (polls, writes) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let hostile = {
        let (infra, stop, polls, writes) = (infra.clone(), stop.clone(), polls.clone(), writes.clone());
        tokio::spawn(async move {
            let params = PatchParams {
                field_manager: Some(HOSTILE.into()),
                ..PatchParams::default()
            };
            let list = json!({"status": {"conditions": [
                {"type": "HostileReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
            while !stop.is_cancelled() {
                let Ok(object) = infra.get("w-1").await else { break };
                let types = condition_types(&object);
                if types.iter().any(|t| t == "Ready" || t == "InstanceReady")
                    && infra
                        .patch_status("w-1", &params, &Patch::Merge(&list))
                        .await
                        .is_ok()
                {
                    writes.fetch_add(1, Ordering::SeqCst);
                }
                polls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    };
    let contest = eventually("a ConflictingWriter Event naming the other manager", || {
        let cluster = &cluster;
        async move {
            let events = e2e::migration::events_about(cluster, &cluster.namespaces.mapi, "w-1").await?;
            Ok(events.into_iter().find(|e| e.reason == "ConflictingWriter"))
        }
    })
    .await?;
    assert!(
        contest.note.contains(&format!("{HOSTILE:?} keeps overwriting")),
        "{}",
        contest.note
    );
    assert!(contest.note.contains(platform.machine_kind), "{}", contest.note);
    // Held off: the sync does not write again until the hold-off (a minute) is over,
    // however often the other writer looks.
    let before = infra.get("w-1").await?;
    let seen = polls.load(Ordering::SeqCst);
    eventually("25 more looks of the other writer", || {
        let polls = polls.clone();
        async move { Ok((polls.load(Ordering::SeqCst) >= seen + 25).then_some(())) }
    })
    .await?;
    let after = infra.get("w-1").await?;
    assert_eq!(condition_types(&after), ["HostileReady"]);
    assert_eq!(after.resource_version(), before.resource_version());
    stop.cancel();
    hostile.await?;
    // The sync put its conditions back at most RESTORES times after the first removal.
    let writes = writes.load(Ordering::SeqCst);
    assert!(
        writes <= sync_core::toolkit::contest::RESTORES + 1,
        "the other writer had to remove the sync's conditions {writes} times"
    );
    sync.stop().await
}

/// Mirrors never carry `kubectl apply`'s record of the other object.
async fn mirrors_never_carry_the_last_applied_configuration(platform: &TestPlatform) -> TestResult {
    const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    create_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let patch = json!({"metadata": {"annotations": {LAST_APPLIED: "{\"kind\":\"Machine\"}", "team": "a"}}});
    cluster
        .mapi_machines()
        .patch("w-1", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let api = cluster.capi_machines();
    let machine = eventually("the team annotation on the mirror", || {
        let api = api.clone();
        async move {
            let m = api.get_opt("w-1").await?;
            Ok(m.filter(|m| m.annotations().contains_key("team")))
        }
    })
    .await?;
    assert!(
        !machine.annotations().contains_key(LAST_APPLIED),
        "{:?}",
        machine.annotations()
    );
    let infra = platform.machines(&cluster).get("w-1").await?;
    assert_eq!(infra.annotations().get("team").map(String::as_str), Some("a"));
    assert!(!infra.annotations().contains_key(LAST_APPLIED));
    sync.stop().await
}

/// Without the admission policies, the sync itself never writes over a CAPI MachineSet
/// someone else created under the name of a new MachineAPI-authoritative MAPI set: the
/// pair is Synchronized=False with its own reason and a Warning Event, and the CAPI set
/// keeps its infrastructureRef, with nothing of the sync's on it.
async fn a_machine_api_set_never_takes_over_a_capi_set_the_sync_did_not_create(
    platform: &TestPlatform,
) -> TestResult {
    // Without the admission policies, which refuse this before the sync sees it.
    let cluster = cluster_without_policies_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    let hand_made: capi::MachineSet = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
        "metadata": {"name": "taken"},
        "spec": {
            "clusterName": CLUSTER_NAME,
            "selector": {"matchLabels": {"set": "taken"}},
            "template": {
                "metadata": {"labels": {"set": "taken"}},
                "spec": {
                    "clusterName": CLUSTER_NAME,
                    "bootstrap": {"dataSecretName": "mine"},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": platform.template_kind, "name": "hand-made"}
                }
            }
        }
    }))?;
    cluster
        .capi_machine_sets()
        .create(&PostParams::default(), &hand_made)
        .await?;
    create_machine_set(
        &cluster,
        "taken",
        "MachineAPI",
        0,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let api = cluster.mapi_machine_sets();
    let refused = eventually("Synchronized=False CAPIObjectNotCreatedBySync", || {
        let api = api.clone();
        async move {
            let set = api.get("taken").await?;
            let condition = set
                .status
                .as_ref()
                .and_then(|s| s.sync.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Synchronized").cloned());
            Ok(condition
                .filter(|c| c.status == "False" && c.reason.as_deref() == Some("CAPIObjectNotCreatedBySync")))
        }
    })
    .await?;
    assert!(
        refused
            .message
            .as_deref()
            .is_some_and(|m| m.contains("was not created by the sync")),
        "{refused:?}"
    );
    let events = e2e::migration::events_about(&cluster, &cluster.namespaces.mapi, "taken").await?;
    assert!(
        events
            .iter()
            .any(|e| e.reason == "SynchronizationError" && e.note.contains("CAPIObjectNotCreatedBySync")),
        "{events:?}"
    );
    let capi = cluster.capi_machine_sets().get("taken").await?;
    assert_eq!(capi.spec.template.spec.infrastructure_ref.name, "hand-made");
    assert_eq!(
        capi.spec.template.spec.bootstrap.data_secret_name.as_deref(),
        Some("mine")
    );
    assert!(finalizers_of(&capi).is_empty(), "{:?}", capi.finalizers());
    let managers: Vec<_> = capi
        .managed_fields()
        .iter()
        .filter_map(|e| e.manager.clone())
        .filter(|m| m.contains("Sync"))
        .collect();
    assert!(managers.is_empty(), "{managers:?}");
    assert!(templates(&cluster, platform, "taken").await?.is_empty());
    sync.stop().await
}

/// Without admission policies, a field a user adds to a CAPI mirror's spec is taken out
/// within one reconcile, with a Warning Event naming it, and a field the user changes is
/// put back; the MAPI source is untouched.
async fn a_field_a_user_adds_to_a_mirror_s_spec_is_removed_and_reported(
    platform: &TestPlatform,
) -> TestResult {
    // Without the admission policies, which refuse this before the sync sees it.
    let cluster = cluster_without_policies_on(platform).await?;
    let sync = RealSync::start_on(&cluster, platform, false).await?;
    create_machine_set(
        &cluster,
        "drift",
        "MachineAPI",
        1,
        platform.provider_spec(Size::Large),
    )
    .await?;
    let api = cluster.capi_machine_sets();
    eventually("the CAPI MachineSet", || {
        let api = api.clone();
        async move { Ok(api.get_opt("drift").await?) }
    })
    .await?;
    let user = PatchParams {
        field_manager: Some("kubectl-patch".into()),
        ..PatchParams::default()
    };
    let edit = json!({"spec": {"replicas": 7, "template": {"spec": {"minReadySeconds": 42}}}});
    api.patch("drift", &user, &Patch::Merge(&edit)).await?;
    let set = eventually("the user's fields reverted", || {
        let api = api.clone();
        async move {
            let set = api.get("drift").await?;
            let added = set.spec.template.spec.min_ready_seconds;
            Ok((added.is_none() && set.spec.replicas == Some(1)).then_some(set))
        }
    })
    .await?;
    assert_eq!(
        set.spec.template.spec.infrastructure_ref.kind,
        platform.template_kind
    );
    let events = e2e::migration::events_about(&cluster, &cluster.namespaces.capi, "drift").await?;
    let note = "removed spec.template.spec.minReadySeconds; restored spec.replicas on MachineSet";
    assert!(
        events.iter().any(|e| e.reason == "MirrorSpecDrift"
            && e.note.contains(note)
            && e.note.contains("change the MachineAPI MachineSet")),
        "{events:?}"
    );
    let mapi = cluster.mapi_machine_sets().get("drift").await?;
    assert_eq!(mapi.spec.replicas, Some(1));
    sync.stop().await
}
