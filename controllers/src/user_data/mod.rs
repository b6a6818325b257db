//! The user-data secrets a Cluster API Machine boots from.
//!
//! A CAPI Machine reads its bootstrap data from `spec.bootstrap.dataSecretName` in the CAPI
//! namespace; the conversion sets that name from the Machine API providerSpec's
//! `userDataSecret.name`, whose Secret lives in the MAPI namespace. So every such Secret
//! (and always `worker-user-data`, as upstream's secret-sync controller) is copied, kept
//! current, and never taken from another owner:
//!
//! | source (MAPI namespace)      | target (CAPI namespace)        | what happens                                   |
//! |------------------------------|--------------------------------|------------------------------------------------|
//! | has `userData`               | missing                        | created: `value` = userData, `format: ignition` |
//! | has `userData`               | ours, different                | updated to match                               |
//! | has `userData`               | ours, equal                    | nothing (no write)                             |
//! | has `userData`               | exists, not ours               | untouched; Warning `UserDataSecretConflict`    |
//! | missing, or no `userData`    | anything                       | untouched; Warning `UserDataSecretMissing`     |
//!
//! "Ours" is what server-side apply records: [`MANAGER`] owns the target's `data`. The
//! Warnings are published when a name's outcome changes, not on every pass, so an idle
//! cluster sees no writes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use sync_core::Namespaces;
use sync_core::events::Recorder;
use tokio_util::sync::CancellationToken;

use references::Reference;
pub use references::{References, Referrer, Tap};

mod references;

/// The Secret every worker boots from.
pub const WORKER_USER_DATA: &str = "worker-user-data";
/// The source's key (Machine API).
pub const SOURCE_KEY: &str = "userData";
/// The target's keys (Cluster API's bootstrap data secret contract).
pub const VALUE_KEY: &str = "value";
/// The target's format key, and the format OpenShift's user data has.
pub const FORMAT_KEY: &str = "format";
/// The only format OpenShift's user data has.
pub const IGNITION: &str = "ignition";
/// The field manager of the copies: a target this manager does not own is not ours.
pub const MANAGER: &str = "machine-sync-user-data";

/// What to do about one name.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// The target is as it should be.
    Nothing,
    /// Apply this target (created or updated).
    Write(Box<Secret>),
    /// A Secret of that name exists in the CAPI namespace and is not ours.
    Conflict,
    /// The source is missing or has no `userData`: why.
    MissingSource(String),
}

/// The row of the table above for one name.
pub fn decide(
    name: &str,
    namespaces: &Namespaces,
    source: Option<&Secret>,
    target: Option<&Secret>,
) -> Action {
    let Some(source) = source else {
        return Action::MissingSource(format!("Secret {}/{name} does not exist", namespaces.mapi));
    };
    let Some(user_data) = source.data.as_ref().and_then(|d| d.get(SOURCE_KEY)) else {
        return Action::MissingSource(format!(
            "Secret {}/{name} has no data.{SOURCE_KEY}",
            namespaces.mapi
        ));
    };
    let desired = desired(name, namespaces, user_data, source.type_.clone());
    match target {
        None => Action::Write(Box::new(desired)),
        Some(target) if !owned(target) => Action::Conflict,
        Some(target) if target.data == desired.data && target.type_ == desired.type_ => Action::Nothing,
        Some(_) => Action::Write(Box::new(desired)),
    }
}

/// The copy of `user_data` as Cluster API reads it.
fn desired(name: &str, namespaces: &Namespaces, user_data: &ByteString, type_: Option<String>) -> Secret {
    let data = BTreeMap::from([
        (FORMAT_KEY.to_owned(), ByteString(IGNITION.as_bytes().to_vec())),
        (VALUE_KEY.to_owned(), user_data.clone()),
    ]);
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespaces.capi.clone()),
            ..Default::default()
        },
        type_: type_.or_else(|| Some("Opaque".to_owned())),
        data: Some(data),
        ..Default::default()
    }
}

/// Whether [`MANAGER`] applied this Secret.
fn owned(secret: &Secret) -> bool {
    secret
        .managed_fields()
        .iter()
        .any(|entry| entry.manager.as_deref() == Some(MANAGER) && entry.operation.as_deref() == Some("Apply"))
}

/// A change the copier saw.
enum Seen {
    /// A MAPI Machine or MachineSet names this Secret (`None`: none), keyed by kind/name.
    Reference(Reference),
    /// A Secret changed (the stores hold it).
    Secret,
    /// A watch failed (retried with backoff).
    Failed(String),
}

/// Copies the user-data Secrets from the MAPI namespace to the CAPI namespace.
pub struct UserDataSync {
    client: Client,
    namespaces: Namespaces,
    recorder: Recorder,
}

impl UserDataSync {
    /// A copier publishing its Events through `recorder`.
    pub fn new(client: Client, namespaces: Namespaces, recorder: Recorder) -> Self {
        Self {
            client,
            namespaces,
            recorder,
        }
    }

    /// Runs until `stop`, learning which Secrets the MAPI objects name from `references`
    /// (the sync controllers' MAPI watches, tapped: [`Tap::channel`]).
    pub async fn run(self, references: References, stop: CancellationToken) {
        let (sources, source_writer) = reflector::store::<Secret>();
        let (targets, target_writer) = reflector::store::<Secret>();
        let secrets = |namespace: &str, writer| {
            let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
            reflector(writer, watcher(api, watcher::Config::default()))
                .default_backoff()
                .map(|event| match event {
                    Ok(_) => Seen::Secret,
                    Err(error) => Seen::Failed(error.to_string()),
                })
                .boxed()
        };
        let mut events = futures::stream::select_all([
            secrets(&self.namespaces.mapi, source_writer),
            secrets(&self.namespaces.capi, target_writer),
            references.0.map(Seen::Reference).boxed(),
        ]);
        let mut named: BTreeMap<String, String> = BTreeMap::new();
        let mut reported: BTreeMap<String, Action> = BTreeMap::new();
        let mut retry: Option<tokio::time::Instant> = None;
        let mut backoff = Duration::from_millis(500);
        loop {
            let seen = tokio::select! {
                seen = events.next() => seen,
                () = sleep_until(retry) => None,
                () = stop.cancelled() => return,
            };
            let mut next = seen;
            // Everything already queued, then one pass.
            loop {
                match next {
                    // `worker-user-data` is always wanted: an object naming it needs no
                    // entry (most do; 10 000 entries would hold 0.9 MiB).
                    Some(Seen::Reference(Reference {
                        key,
                        secret: Some(name),
                    })) if name != WORKER_USER_DATA => {
                        named.insert(key, name);
                    }
                    Some(Seen::Reference(Reference { key, .. })) => {
                        named.remove(&key);
                    }
                    Some(Seen::Failed(error)) => {
                        tracing::warn!(%error, "user-data secrets: a watch failed; retrying with backoff")
                    }
                    Some(Seen::Secret) | None => {}
                }
                match events.next().now_or_never() {
                    Some(Some(seen)) => next = Some(seen),
                    _ => break,
                }
            }
            if !(listed(&sources) && listed(&targets)) {
                continue;
            }
            retry = None;
            let wanted: BTreeSet<&str> = named
                .values()
                .map(String::as_str)
                .chain([WORKER_USER_DATA])
                .collect();
            let failed = self.pass(&wanted, &sources, &targets, &mut reported).await;
            if failed {
                retry = Some(tokio::time::Instant::now() + backoff);
                backoff = (backoff * 2).min(Duration::from_secs(60));
            } else {
                backoff = Duration::from_millis(500);
            }
        }
    }

    /// Brings every wanted name to its row of the table; true when a write failed (the
    /// pass is retried with backoff).
    async fn pass(
        &self,
        wanted: &BTreeSet<&str>,
        sources: &Store<Secret>,
        targets: &Store<Secret>,
        reported: &mut BTreeMap<String, Action>,
    ) -> bool {
        let mut failed = false;
        for &name in wanted {
            let source = sources.get(&ObjectRef::new(name).within(&self.namespaces.mapi));
            let target = targets.get(&ObjectRef::new(name).within(&self.namespaces.capi));
            let action = decide(name, &self.namespaces, source.as_deref(), target.as_deref());
            match &action {
                Action::Nothing => {}
                Action::Write(secret) => {
                    if let Err(error) = self.write(secret).await {
                        tracing::warn!(
                            secret = format!("{}/{name}", self.namespaces.capi),
                            %error,
                            "cannot copy the user-data secret; retrying with backoff"
                        );
                        failed = true;
                        continue;
                    }
                    tracing::info!(
                        from = format!("{}/{name}", self.namespaces.mapi),
                        to = format!("{}/{name}", self.namespaces.capi),
                        "copied the user-data secret"
                    );
                }
                Action::Conflict | Action::MissingSource(_) => {
                    if reported.get(name) != Some(&action) {
                        self.warn(name, &action).await;
                    }
                }
            }
            reported.insert(name.to_owned(), action);
        }
        failed
    }

    async fn write(&self, secret: &Secret) -> Result<Secret, kube::Error> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespaces.capi);
        let params = PatchParams::apply(MANAGER).force();
        api.patch(&secret.name_any(), &params, &Patch::Apply(secret))
            .await
    }

    /// The Warning Event (and log line) of a conflict or a missing source.
    async fn warn(&self, name: &str, action: &Action) {
        let (reason, note, namespace) = match action {
            Action::Conflict => (
                "UserDataSecretConflict",
                format!(
                    "Secret {capi}/{name} exists and was not created by {MANAGER}: it is left as it is, so \
                     Cluster API Machines boot from it instead of {mapi}/{name}; delete it to have it copied",
                    capi = self.namespaces.capi,
                    mapi = self.namespaces.mapi
                ),
                &self.namespaces.capi,
            ),
            Action::MissingSource(why) => (
                "UserDataSecretMissing",
                format!(
                    "{why}: Cluster API Machines booting from {capi}/{name} wait for it; create it with the \
                     Machine API user data in data.{SOURCE_KEY}",
                    capi = self.namespaces.capi
                ),
                &self.namespaces.mapi,
            ),
            Action::Nothing | Action::Write(_) => return,
        };
        tracing::warn!(secret = name, reason, "{note}");
        let event = Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(note),
            action: "CopyUserData".into(),
            secondary: None,
        };
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Secret".into()),
            namespace: Some(namespace.clone()),
            name: Some(name.to_owned()),
            ..ObjectReference::default()
        };
        if let Err(error) = self.recorder.publish(&event, &regarding).await {
            tracing::warn!(%error, reason, "failed to publish the event");
        }
    }
}

/// Whether a store has listed once.
fn listed(store: &Store<Secret>) -> bool {
    store
        .wait_until_ready()
        .now_or_never()
        .is_some_and(|ready| ready.is_ok())
}

/// Waits until `at` (forever without one).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;

    fn namespaces() -> Namespaces {
        Namespaces {
            mapi: "openshift-machine-api".into(),
            capi: "openshift-cluster-api".into(),
        }
    }

    fn secret(data: &[(&str, &str)], manager: Option<&str>) -> Secret {
        let data = data
            .iter()
            .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
            .collect();
        let managed = manager.map(|m| {
            vec![ManagedFieldsEntry {
                manager: Some(m.into()),
                operation: Some("Apply".into()),
                ..Default::default()
            }]
        });
        Secret {
            metadata: kube::api::ObjectMeta {
                managed_fields: managed,
                ..Default::default()
            },
            type_: Some("Opaque".into()),
            data: Some(data),
            ..Default::default()
        }
    }

    fn written(action: Action) -> Secret {
        match action {
            Action::Write(secret) => *secret,
            other => panic!("expected a write, got {other:?}"),
        }
    }

    #[test]
    fn a_source_without_a_target_is_copied_as_value_and_ignition_format() {
        let source = secret(&[("userData", "{\"ignition\":{}}")], None);
        let target = written(decide(WORKER_USER_DATA, &namespaces(), Some(&source), None));
        assert_eq!(
            target.metadata.namespace.as_deref(),
            Some("openshift-cluster-api")
        );
        assert_eq!(target.metadata.name.as_deref(), Some(WORKER_USER_DATA));
        let data = target.data.unwrap_or_default();
        assert_eq!(
            data.get("value").map(|v| v.0.as_slice()),
            Some(&b"{\"ignition\":{}}"[..])
        );
        assert_eq!(data.get("format").map(|v| v.0.as_slice()), Some(&b"ignition"[..]));
        assert_eq!(data.len(), 2);
    }

    #[test]
    fn our_target_with_other_data_is_updated() {
        let source = secret(&[("userData", "new")], None);
        let target = secret(&[("value", "old"), ("format", "ignition")], Some(MANAGER));
        let updated = written(decide("w", &namespaces(), Some(&source), Some(&target)));
        assert_eq!(
            updated.data.unwrap_or_default().get("value").map(|v| v.0.clone()),
            Some(b"new".to_vec())
        );
    }

    #[test]
    fn our_target_that_matches_is_left_alone() {
        let source = secret(&[("userData", "same")], None);
        let target = secret(&[("value", "same"), ("format", "ignition")], Some(MANAGER));
        assert_eq!(
            decide("w", &namespaces(), Some(&source), Some(&target)),
            Action::Nothing
        );
    }

    #[test]
    fn a_target_another_manager_wrote_is_a_conflict() {
        let source = secret(&[("userData", "new")], None);
        let target = secret(&[("value", "theirs")], Some("kubectl-client-side-apply"));
        assert_eq!(
            decide("w", &namespaces(), Some(&source), Some(&target)),
            Action::Conflict
        );
        let unmanaged = secret(&[("value", "theirs")], None);
        assert_eq!(
            decide("w", &namespaces(), Some(&source), Some(&unmanaged)),
            Action::Conflict
        );
    }

    #[test]
    fn a_missing_source_or_one_without_user_data_is_reported() {
        let target = secret(&[("value", "old")], Some(MANAGER));
        assert_eq!(
            decide("w", &namespaces(), None, Some(&target)),
            Action::MissingSource("Secret openshift-machine-api/w does not exist".into())
        );
        let empty = secret(&[("other", "x")], None);
        assert_eq!(
            decide("w", &namespaces(), Some(&empty), None),
            Action::MissingSource("Secret openshift-machine-api/w has no data.userData".into())
        );
    }
}
