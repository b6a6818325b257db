//! What several envtest suites of sync-core set up the same way.

use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use sync_core::api::mapi;
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
