//! The real sync end to end: the AWS hooks on envtest as the operator's ServiceAccount
//! (any Forbidden fails the scenario), with the simulated providers where a scenario needs
//! another controller's work (finalizers, phases, status). One scenario per behaviour;
//! regression scenarios name the upstream bug.

use std::collections::BTreeMap;

use e2e::real::{
    AWS_VERSION, CLUSTER_NAME, RealSync, aws, aws_cluster, create_aws_machine, create_aws_machine_set,
    eventually, finalizers_of, provider_spec, synchronized,
};
use e2e::{Cluster, TestResult};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::json;
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_core::toolkit::SYNC_FINALIZER;
use sync_core::toolkit::pause::PAUSED_ANNOTATION;

const SET_LABEL: &str = "machine.openshift.io/cluster-api-machineset";

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
                && machine.status.as_ref().and_then(|s| s.synchronized_generation) == generation_of(&machine);
            Ok(done.then_some(machine))
        }
    })
    .await
}

fn own_generation(machine: &mapi::Machine) -> Option<i64> {
    machine.metadata.generation
}

#[tokio::test]
async fn machine_api_authoritative_machine_gets_a_paused_capi_mirror_and_infra_machine() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start(&cluster, false).await?;
    let labels = [
        ("machine.openshift.io/cluster-api-machine-role", "worker"),
        ("machine.openshift.io/instance-type", "m6i.large"),
        ("team", "a"),
    ];
    create_aws_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &labels,
        None,
        provider_spec("m6i.large"),
    )
    .await?;
    let mapi = synced_machine(&cluster, "w-1", own_generation).await?;
    assert!(finalizers_of(&mapi).contains(&SYNC_FINALIZER.to_owned()));

    let machine = cluster.capi_machines().get("w-1").await?;
    assert_eq!(machine.spec.cluster_name, CLUSTER_NAME);
    assert_eq!(machine.spec.failure_domain.as_deref(), Some("us-east-1a"));
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
    assert_eq!(machine.spec.infrastructure_ref.kind, "AWSMachine");
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

    let infra = aws(&cluster, "AWSMachine").get("w-1").await?;
    assert_eq!(infra.data["spec"]["instanceType"], "m6i.large");
    assert_eq!(
        infra.data["spec"]["rootVolume"],
        json!({"size": 120, "type": "gp3"})
    );
    assert_eq!(
        infra.annotations().get(PAUSED_ANNOTATION).map(String::as_str),
        Some("")
    );
    let owner = infra
        .owner_references()
        .first()
        .cloned()
        .ok_or("AWSMachine without owner")?;
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Machine", "w-1", machine.uid().unwrap_or_default().as_str())
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(finalizers_of(&infra), [SYNC_FINALIZER]);

    // Nothing more to write: the mirror's own watch events cause no further writes.
    let (capi_rv, infra_rv, mapi_rv) = (
        machine.resource_version(),
        infra.resource_version(),
        mapi.resource_version(),
    );
    cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await?;
    let touched = sync.observer.reconciles().len();
    eventually("another reconcile", || async {
        Ok((sync.observer.reconciles().len() > touched).then_some(()))
    })
    .await?;
    assert_eq!(
        cluster.capi_machines().get("w-1").await?.resource_version(),
        capi_rv
    );
    assert_eq!(
        aws(&cluster, "AWSMachine").get("w-1").await?.resource_version(),
        infra_rv
    );
    assert_eq!(
        cluster.mapi_machines().get("w-1").await?.resource_version(),
        mapi_rv
    );

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

#[tokio::test]
async fn status_is_copied_once_synchronized_and_other_conditions_keep_their_owners() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start(&cluster, true).await?;
    create_aws_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &[],
        None,
        provider_spec("m6i.large"),
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
        .and_then(|s| s.conditions.as_ref())
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

#[tokio::test]
async fn cluster_api_authoritative_machine_without_capi_gets_an_unpaused_one_regression_288() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start(&cluster, false).await?;
    create_aws_machine(
        &cluster,
        "w-1",
        "ClusterAPI",
        &[],
        None,
        provider_spec("m6i.large"),
    )
    .await?;
    let api = cluster.capi_machines();
    let machine = eventually("a CAPI Machine", || {
        let api = api.clone();
        async move { Ok(api.get_opt("w-1").await?) }
    })
    .await?;
    assert!(!machine.annotations().contains_key(PAUSED_ANNOTATION));
    let infra = aws(&cluster, "AWSMachine");
    let infra = eventually("an AWSMachine", || {
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

#[tokio::test]
async fn capi_only_machine_of_a_mirrored_set_gets_a_cluster_api_driven_mapi_mirror() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start(&cluster, false).await?;
    let set = create_aws_machine_set(&cluster, "ws", "ClusterAPI", 0, provider_spec("m6i.large")).await?;
    // The CAPI MachineSet (the sync creates it from the MAPI one) and a Machine of it.
    let sets = cluster.capi_machine_sets();
    let capi_set = eventually("the CAPI MachineSet", || {
        let sets = sets.clone();
        async move { Ok(sets.get_opt("ws").await?) }
    })
    .await?;
    let mut infra = kube::api::DynamicObject::new("ws-abc", &e2e::infra_resource("AWSMachine", AWS_VERSION));
    infra.data = json!({"spec": {"instanceType": "m6i.xlarge", "ami": {"id": "ami-1"}}});
    aws(&cluster, "AWSMachine")
        .create(&PostParams::default(), &infra)
        .await?;
    let mut machine = capi::Machine::new("ws-abc", e2e::capi_machine_spec(("AWSMachine", "ws-abc")));
    machine.spec.cluster_name = CLUSTER_NAME.into();
    machine.spec.failure_domain = Some("us-east-1b".into());
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
    let labels = mirror.labels();
    assert_eq!(labels.get(SET_LABEL).map(String::as_str), Some("ws"));
    assert_eq!(
        labels
            .get("machine.openshift.io/instance-type")
            .map(String::as_str),
        Some("m6i.xlarge")
    );
    assert_eq!(
        labels.get("machine.openshift.io/zone").map(String::as_str),
        Some("us-east-1b")
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
        finalizers_of(&aws(&cluster, "AWSMachine").get("ws-abc").await?).contains(&SYNC_FINALIZER.to_owned())
    );
    sync.stop().await
}
