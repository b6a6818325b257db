//! A pair declared with `infra_ref` watches the infrastructure kinds its CAPI objects
//! reference with no extra wiring: run without `with_infra`, its hooks still get the
//! infrastructure object, and the object's changes still reconcile the pair.

use std::path::Path;
use std::time::Duration;

use controllers::machine::MachineSync;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use sync_core::api::{ContractVersionedObjectReference, capi, mapi};
use sync_core::testing::Hook;
use sync_core::testkit::PairEnv;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn infrastructure_watches_follow_from_the_declaration() -> TestResult {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let env = PairEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .start()
        .await?;
    let namespaces = env.namespaces().clone();
    let client = env.client();
    let (running, hooks) = env.run_recording::<MachineSync>().await?;

    let dev_machine = ApiResource {
        group: "infrastructure.cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "infrastructure.cluster.x-k8s.io/v1beta2".into(),
        kind: "DevMachine".into(),
        plural: "devmachines".into(),
    };
    let infra = Api::<DynamicObject>::namespaced_with(client.clone(), &namespaces.capi, &dev_machine);
    let object = DynamicObject::new("worker", &dev_machine).data(json!({ "spec": {} }));
    infra.create(&PostParams::default(), &object).await?;

    let mut spec = capi::MachineSpec {
        cluster_name: "cluster".into(),
        infrastructure_ref: ContractVersionedObjectReference {
            api_group: "infrastructure.cluster.x-k8s.io".into(),
            kind: "DevMachine".into(),
            name: "worker".into(),
        },
        ..capi::MachineSpec::default()
    };
    spec.bootstrap.data_secret_name = Some("bootstrap".into());
    Api::<capi::Machine>::namespaced(client.clone(), &namespaces.capi)
        .create(&PostParams::default(), &capi::Machine::new("worker", spec))
        .await?;
    let mapis = Api::<mapi::Machine>::namespaced(client.clone(), &namespaces.mapi);
    mapis
        .create(
            &PostParams::default(),
            &mapi::Machine::new("worker", mapi::MachineSpec::default()),
        )
        .await?;
    let status = json!({ "status": { "authoritativeAPI": "MachineAPI" } });
    mapis
        .patch_status("worker", &PatchParams::default(), &Patch::Merge(status))
        .await?;

    // The hook gets the infrastructure object: the controller watches DevMachines.
    let with_infra = |c: &sync_core::testing::HookCall<MachineSync>| {
        c.objects.name == "worker" && c.hook == Hook::MapiToCapi && c.objects.infra.is_some()
    };
    hooks.wait_for(WAIT, with_infra).await?;

    // A change to the DevMachine alone reconciles the pair, with the change in the cache.
    let labelled = json!({ "metadata": { "labels": { "touched": "yes" } } });
    infra
        .patch("worker", &PatchParams::default(), &Patch::Merge(&labelled))
        .await?;
    let call = hooks
        .wait_for(WAIT, |c| {
            with_infra(c)
                && c.objects.infra.as_ref().is_some_and(|infra| {
                    infra
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("touched"))
                        .map(String::as_str)
                        == Some("yes")
                })
        })
        .await?;
    assert_eq!(
        call.objects.infra_ref().map(|r| r.kind.as_str()),
        Some("DevMachine")
    );
    running.stop().await?;
    Ok(())
}
