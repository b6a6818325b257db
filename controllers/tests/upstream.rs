//! The binary refuses to start beside upstream's migration controllers: while their Lease
//! (`openshift-cluster-api/machine-api-migration-leader`) is held it exits with code 3 and
//! says what to do; once upstream released it, it starts.

mod common;

use common::{CAPI_NS, Operator};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

const UPSTREAM: &str = "machine-api-migration-leader";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_refuses_to_run_while_upstream_holds_its_lease() {
    let env = common::env_with_samples().await;
    let kubeconfig = common::kubeconfig(&env);
    let leases: Api<Lease> = Api::namespaced(env.client(), CAPI_NS);
    let held = Lease {
        metadata: ObjectMeta {
            name: Some(UPSTREAM.into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("capi-controllers-7d9f_0b1c".into()),
            lease_duration_seconds: Some(137),
            acquire_time: Some(MicroTime(Timestamp::now())),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    let created = leases.create(&PostParams::default(), &held).await;
    assert!(created.is_ok(), "{created:?}");

    let mut refused = Operator::against(&kubeconfig, "beside-upstream", "machine-sync", &[]);
    let status = refused.wait_exit().await;
    assert_eq!(status.code(), Some(3), "{:#?}", refused.lines());
    let lines = refused.lines();
    assert!(
        lines.iter().any(|line| line.contains(
            "upstream's migration controllers are running: Lease openshift-cluster-api/machine-api-migration-leader is held by capi-controllers-7d9f_0b1c"
        ) && line.contains("Scale upstream's machine-api-migration down")),
        "{lines:#?}"
    );

    // Released (client-go empties the holder on a clean stop): the operator starts.
    let release = json!({"spec": {"holderIdentity": null, "leaseDurationSeconds": 1}});
    let released = leases
        .patch(UPSTREAM, &PatchParams::default(), &Patch::Merge(&release))
        .await;
    assert!(released.is_ok(), "{released:?}");
    let mut started = Operator::against(&kubeconfig, "after-upstream", "machine-sync", &[]);
    started
        .wait_line("the controllers to start", |line| {
            line.contains("starting the sync and migration controllers")
                .then_some(())
        })
        .await;
    started.signal("TERM");
    assert_eq!(started.wait_exit().await.code(), Some(0));
}
