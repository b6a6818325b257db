//! The user-data secrets on a real API server (envtest): copied from the MAPI namespace to
//! the CAPI namespace as Cluster API reads them, kept current, never taken from another
//! writer, and a missing source reported — each row of `controllers/src/user_data.rs`'s
//! table, with the Events it publishes. The copier learns which Secrets the Machines and
//! MachineSets name from the sync controllers' MAPI watches (on the stub hooks here).

mod common;

use std::collections::BTreeMap;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, wait_for};
use controllers::machine::MachineSync;
use controllers::machine_set::MachineSetSync;
use controllers::user_data::{MANAGER, Tap, UserDataSync};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Event, Secret};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use serde_json::json;
use sync_core::api::mapi;
use sync_core::events::Recorder;
use sync_core::{Namespaces, Stubs, SyncConfig, SyncController};
use tokio_util::sync::CancellationToken;

fn secret(namespace: &str, name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Secret::default()
    }
}

fn start(env: &envtest::TestEnv) -> CancellationToken {
    let stop = CancellationToken::new();
    let namespaces = Namespaces {
        mapi: MAPI_NS.into(),
        capi: CAPI_NS.into(),
    };
    let recorder = Recorder::new(
        env.client(),
        Reporter {
            controller: "machine-sync-controllers".into(),
            instance: Some("user-data-test".into()),
        },
    );
    let config = SyncConfig {
        namespaces: namespaces.clone(),
        ..SyncConfig::default()
    };
    let (tap, references) = Tap::channel();
    let machines = tap.install(SyncController::<MachineSync>::new(env.client(), config.clone()));
    let sets = tap.install(SyncController::<MachineSetSync>::new(env.client(), config));
    tokio::spawn(machines.run(Stubs, stop.clone().cancelled_owned()));
    tokio::spawn(sets.run(Stubs, stop.clone().cancelled_owned()));
    let sync = UserDataSync::new(env.client(), namespaces, recorder);
    tokio::spawn(sync.run(references, stop.clone()));
    stop
}

/// Creates the MAPI namespace's source Secret `name` holding `user_data`.
async fn create_source(env: &envtest::TestEnv, name: &str, user_data: &str) {
    let sources: Api<Secret> = Api::namespaced(env.client(), MAPI_NS);
    let created = sources
        .create(
            &PostParams::default(),
            &secret(MAPI_NS, name, &[("userData", user_data)]),
        )
        .await;
    assert!(created.is_ok(), "{created:?}");
}

fn data(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
        .collect()
}

/// Waits until the CAPI namespace's `name` has `value` = `user_data` (and `format`).
async fn copied(env: &envtest::TestEnv, name: &str, user_data: &str) -> Secret {
    let api: Api<Secret> = Api::namespaced(env.client(), CAPI_NS);
    wait_for(&format!("{name} to hold {user_data:?}"), TIMEOUT, || async {
        let secret = api.get_opt(name).await.ok().flatten()?;
        let expected = BTreeMap::from([
            ("format".to_owned(), "ignition".to_owned()),
            ("value".to_owned(), user_data.to_owned()),
        ]);
        (data(&secret) == expected).then_some(secret)
    })
    .await
}

/// Waits for a Warning Event of `reason` about Secret `namespace/name`; its note.
async fn warning(env: &envtest::TestEnv, namespace: &str, name: &str, reason: &str) -> String {
    let api: Api<Event> = Api::namespaced(env.client(), namespace);
    wait_for(
        &format!("a {reason} Event about {namespace}/{name}"),
        TIMEOUT,
        || async {
            let events = api.list(&ListParams::default()).await.ok()?;
            events.items.into_iter().find_map(|event| {
                let about = event.involved_object.name.as_deref() == Some(name)
                    && event.involved_object.kind.as_deref() == Some("Secret");
                (about
                    && event.reason.as_deref() == Some(reason)
                    && event.type_.as_deref() == Some("Warning"))
                .then(|| event.message.unwrap_or_default())
            })
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_user_data_is_copied_as_value_and_format_and_kept_current() {
    let env = common::env().await;
    let sources: Api<Secret> = Api::namespaced(env.client(), MAPI_NS);
    create_source(&env, "worker-user-data", "v1").await;
    let stop = start(&env);

    let target = copied(&env, "worker-user-data", "v1").await;
    assert_eq!(target.type_.as_deref(), Some("Opaque"));
    let managers: Vec<_> = target
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| Some((m.manager.clone()?, m.operation.clone()?)))
        .collect();
    assert_eq!(managers, [(MANAGER.to_owned(), "Apply".to_owned())]);

    // The source changes: the copy follows.
    let patch = json!({"data": {"userData": "djI="}});
    let patched = sources
        .patch("worker-user-data", &PatchParams::default(), &Patch::Merge(&patch))
        .await;
    assert!(patched.is_ok(), "{patched:?}");
    let updated = copied(&env, "worker-user-data", "v2").await;
    assert_ne!(
        updated.metadata.resource_version,
        target.metadata.resource_version
    );

    // Someone edits the copy: it is put back.
    let targets: Api<Secret> = Api::namespaced(env.client(), CAPI_NS);
    let edit = json!({"data": {"value": "ZWRpdGVk"}});
    let edited = targets
        .patch("worker-user-data", &PatchParams::default(), &Patch::Merge(&edit))
        .await;
    assert!(edited.is_ok(), "{edited:?}");
    copied(&env, "worker-user-data", "v2").await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_another_writer_made_is_never_overwritten() {
    let env = common::env().await;
    let sources: Api<Secret> = Api::namespaced(env.client(), MAPI_NS);
    let targets: Api<Secret> = Api::namespaced(env.client(), CAPI_NS);
    for (api, namespace, data) in [
        (&sources, MAPI_NS, ("userData", "ours")),
        (&targets, CAPI_NS, ("value", "theirs")),
    ] {
        let created = api
            .create(
                &PostParams::default(),
                &secret(namespace, "worker-user-data", &[data]),
            )
            .await;
        assert!(created.is_ok(), "{created:?}");
    }
    let before = targets.get("worker-user-data").await.ok();
    let stop = start(&env);

    let note = warning(&env, CAPI_NS, "worker-user-data", "UserDataSecretConflict").await;
    assert!(
        note.contains("Secret openshift-cluster-api/worker-user-data exists and was not created by machine-sync-user-data"),
        "{note}"
    );
    let after = targets.get("worker-user-data").await.ok();
    assert_eq!(
        after.as_ref().map(|s| (&s.metadata.resource_version, data(s))),
        before.as_ref().map(|s| (&s.metadata.resource_version, data(s))),
        "the other writer's secret is untouched"
    );

    // Once it is deleted, the copy is made.
    let deleted = targets.delete("worker-user-data", &DeleteParams::default()).await;
    assert!(deleted.is_ok(), "{deleted:?}");
    copied(&env, "worker-user-data", "ours").await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secrets_machine_sets_and_machines_name_are_copied_and_a_missing_one_reported() {
    let env = common::env().await;
    // A MachineSet whose providerSpec names `infra-user-data`, which does not exist yet.
    let sets: Api<mapi::MachineSet> = Api::namespaced(env.client(), MAPI_NS);
    let set: mapi::MachineSet = match serde_json::from_value(json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "infra", "namespace": MAPI_NS},
        "spec": {
            "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machineset": "infra"}},
            "template": {
                "metadata": {"labels": {"machine.openshift.io/cluster-api-machineset": "infra"}},
                "spec": {"providerSpec": {"value": {"userDataSecret": {"name": "infra-user-data"}}}}
            }
        }
    })) {
        Ok(set) => set,
        Err(error) => panic!("{error}"),
    };
    let created = sets.create(&PostParams::default(), &set).await;
    assert!(created.is_ok(), "{created:?}");
    let stop = start(&env);

    // Neither source exists: both are reported, nothing is written.
    for name in ["worker-user-data", "infra-user-data"] {
        let note = warning(&env, MAPI_NS, name, "UserDataSecretMissing").await;
        assert!(
            note.starts_with(&format!("Secret openshift-machine-api/{name} does not exist")),
            "{note}"
        );
    }
    let targets: Api<Secret> = Api::namespaced(env.client(), CAPI_NS);
    let listed = targets.list(&ListParams::default()).await.map(|l| l.items.len());
    assert_eq!(listed.ok(), Some(0));

    // The source appears: it is copied.
    create_source(&env, "infra-user-data", "infra").await;
    copied(&env, "infra-user-data", "infra").await;

    // A Machine created now (seen by the Machine sync's watch) names another Secret.
    create_source(&env, "machine-user-data", "machine").await;
    let machines: Api<mapi::Machine> = Api::namespaced(env.client(), MAPI_NS);
    let machine: mapi::Machine = match serde_json::from_value(json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": "infra-a", "namespace": MAPI_NS},
        "spec": {"providerSpec": {"value": {"userDataSecret": {"name": "machine-user-data"}}}}
    })) {
        Ok(machine) => machine,
        Err(error) => panic!("{error}"),
    };
    let created = machines.create(&PostParams::default(), &machine).await;
    assert!(created.is_ok(), "{created:?}");
    copied(&env, "machine-user-data", "machine").await;
    stop.cancel();
}
