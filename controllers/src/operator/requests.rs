//! While the feature gate keeps the controllers off, the MAPI objects that nonetheless ask
//! for Cluster API (`spec.authoritativeAPI: ClusterAPI`) are counted, so that an alert can
//! say a migration was requested that nothing will carry out.

use std::collections::BTreeSet;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use sync_core::api::{AuthoritativeApi, Partial, mapi};
use sync_core::migration::Authority;
use tokio_util::sync::CancellationToken;

use super::metrics::Metrics;

/// Counts Machines and MachineSets requesting ClusterAPI in `namespace` into `metrics`
/// (`sync_gated_requests`) until `stop`, then removes the series.
pub async fn count(
    client: Client,
    namespace: String,
    metrics: std::sync::Arc<Metrics>,
    stop: CancellationToken,
) {
    let machines = follow::<mapi::Machine>(&client, &namespace, &metrics, "Machine");
    let sets = follow::<mapi::MachineSet>(&client, &namespace, &metrics, "MachineSet");
    tokio::select! {
        _ = futures::future::join(machines, sets) => {}
        () = stop.cancelled() => {}
    }
    metrics.clear_gated_requests();
}

/// Follows one kind (decoded only as far as its `spec.authoritativeAPI`, [`Authority`]), keeping the names that request
/// ClusterAPI.
async fn follow<K>(client: &Client, namespace: &str, metrics: &Metrics, kind: &'static str)
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope> + 'static,
{
    let api: Api<Partial<K, Authority>> = Api::namespaced(client.clone(), namespace);
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
    let mut requesting = BTreeSet::new();
    let mut listing: Option<BTreeSet<String>> = None;
    while let Some(event) = events.next().await {
        let asks = |o: &Partial<K, Authority>| o.spec.authoritative_api == Some(AuthoritativeApi::ClusterApi);
        match event {
            Ok(watcher::Event::Init) => listing = Some(BTreeSet::new()),
            Ok(watcher::Event::InitApply(o)) => {
                if let Some(listing) = listing.as_mut().filter(|_| asks(&o)) {
                    listing.insert(o.name_any());
                }
                continue;
            }
            Ok(watcher::Event::InitDone) => requesting = listing.take().unwrap_or_default(),
            Ok(watcher::Event::Apply(o)) => {
                if asks(&o) {
                    requesting.insert(o.name_any());
                } else {
                    requesting.remove(&o.name_any());
                }
            }
            Ok(watcher::Event::Delete(o)) => {
                requesting.remove(&o.name_any());
            }
            Err(error) => {
                tracing::debug!(kind, %error, "counting requests while gated: the watch failed; retrying");
                continue;
            }
        }
        metrics.set_gated_requests(kind, requesting.len());
    }
}
