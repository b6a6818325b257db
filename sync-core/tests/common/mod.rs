//! What several envtest suites of sync-core set up the same way.

use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use sync_core::api::{ContractVersionedObjectReference, capi, mapi};
use sync_core::testkit::PairEnv;

/// Creates the MAPI Machine `name` with `status.authoritativeAPI: MachineAPI`, as a
/// controller would have set it (status is not taken on create).
pub async fn create_machine_api_machine(env: &PairEnv, name: &str) -> Result<(), kube::Error> {
    let mapis = Api::<mapi::Machine>::namespaced(env.client(), &env.namespaces().mapi);
    mapis
        .create(
            &PostParams::default(),
            &mapi::Machine::new(name, mapi::MachineSpec::default()),
        )
        .await?;
    let authority = json!({"status": {"authoritativeAPI": "MachineAPI"}});
    mapis
        .patch_status(name, &PatchParams::default(), &Patch::Merge(authority))
        .await?;
    Ok(())
}

/// Creates the CAPI Machine `name`, with the fields its schema requires.
#[allow(dead_code, reason = "not every suite creates CAPI Machines")]
pub async fn create_capi_machine(env: &PairEnv, name: &str) -> Result<(), kube::Error> {
    let mut spec = capi::MachineSpec {
        cluster_name: "cluster".into(),
        infrastructure_ref: ContractVersionedObjectReference {
            api_group: "infrastructure.cluster.x-k8s.io".into(),
            kind: "DevMachine".into(),
            name: name.into(),
        },
        ..capi::MachineSpec::default()
    };
    spec.bootstrap.data_secret_name = Some("bootstrap".into());
    Api::<capi::Machine>::namespaced(env.client(), &env.namespaces().capi)
        .create(&PostParams::default(), &capi::Machine::new(name, spec))
        .await?;
    Ok(())
}

/// Declares `$pair`, the Machine pair without infrastructure references, named `$name`
/// (its logs, metrics and Events): what these suites run their controllers on.
macro_rules! machines_without_infra {
    ($pair:ident, $name:literal) => {
        /// Machines, without infrastructure references.
        struct $pair;
        impl ::sync_core::SyncPair for $pair {
            type Mapi = ::sync_core::api::mapi::Machine;
            type Capi = ::sync_core::api::capi::Machine;
            type OwnerMirror = ::sync_core::NoOwner;
            const NAME: &'static str = $name;
            const CAPI_ONLY: ::sync_core::CapiOnly = ::sync_core::CapiOnly::Ignore;
            const INFRA_REF: Option<&'static str> = None;
            fn infra_ref(
                _: &::sync_core::api::capi::Machine,
            ) -> Result<Option<::sync_core::api::InfraRef>, ::sync_core::api::MalformedRef> {
                Ok(None)
            }
        }
    };
}
pub(crate) use machines_without_infra;
