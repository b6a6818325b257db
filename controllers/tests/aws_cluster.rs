//! The operator reads the cluster's AWSCluster and follows it: without one, a Cluster API
//! authoritative Machine cannot be mirrored to the Machine API and its Synchronized
//! condition says so; once the AWSCluster is created, the next retry mirrors it, without
//! a restart.

mod common;

use std::net::SocketAddr;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, wait_for};
use controllers::feature_gate::GateSource;
use controllers::operator::{Exit, Operator, Settings};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;
use sync_core::Namespaces;
use tokio_util::sync::CancellationToken;

fn settings() -> Settings {
    Settings {
        namespaces: Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        },
        concurrency: 2,
        replica: "aws-cluster-test".into(),
        leader_election: None,
        metrics_address: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        probe_address: None,
        shutdown_grace: std::time::Duration::from_secs(10),
        migration: controllers::migration::MigrationConfig::default(),
        checkpoint_namespace: None,
        gate: GateSource::Enabled,
        release_version: None,
        upstream_lease: None,
        platforms: controllers::operator::run::default_platforms(),
    }
}

fn api(
    env: &envtest::TestEnv,
    group: &str,
    version: &str,
    kind: &str,
    namespace: &str,
) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(env.client(), namespace, &resource)
}

/// worker-b-2's (ClusterAPI-authoritative) Synchronized condition: (status, message).
async fn synchronized(machines: &Api<DynamicObject>) -> Option<(String, String)> {
    let machine = serde_json::to_value(machines.get("worker-b-2").await.ok()?).ok()?;
    let conditions = machine["status"]["conditions"].as_array()?.clone();
    let condition = conditions.iter().find(|c| c["type"] == "Synchronized")?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    Some((text(&condition["status"]), text(&condition["message"])))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_aws_cluster_is_reported_and_its_creation_picked_up_without_a_restart() {
    let env = common::env_with_samples().await;
    let clusters = api(
        &env,
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        "AWSCluster",
        CAPI_NS,
    );
    let sample = match clusters.get("sample").await {
        Ok(sample) => sample,
        Err(error) => panic!("the sample AWSCluster: {error}"),
    };
    let deleted = clusters.delete("sample", &DeleteParams::default()).await;
    assert!(deleted.is_ok(), "{deleted:?}");

    let operator = match Operator::start(env.client(), settings(), CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    let machines = api(&env, "machine.openshift.io", "v1beta1", "Machine", MAPI_NS);
    let message = wait_for("worker-b-2 to say the AWSCluster is missing", TIMEOUT, || async {
        synchronized(&machines)
            .await
            .filter(|(status, message)| status == "False" && message.contains("AWSCluster"))
            .map(|(_, message)| message)
    })
    .await;
    assert!(
        message.starts_with(
            "AWSCluster openshift-cluster-api/sample: Required value: the cluster has no AWSCluster"
        ) && message.contains("create it"),
        "{message}"
    );

    let mut again = sample.clone();
    again.metadata.resource_version = None;
    again.metadata.uid = None;
    again.metadata.creation_timestamp = None;
    again.metadata.managed_fields = None;
    let created = clusters.create(&PostParams::default(), &again).await;
    assert!(created.is_ok(), "{created:?}");
    wait_for(
        "worker-b-2 to be synchronized once the AWSCluster exists",
        TIMEOUT,
        || async {
            synchronized(&machines)
                .await
                .filter(|(status, _)| status == "True")
                .map(|_| ())
        },
    )
    .await;

    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
}
