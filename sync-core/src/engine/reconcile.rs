//! One reconcile of one name: the dual fetch, the decision table, the hook it picks, and
//! what the engine reports about the objects on the way (malformed sides, skips, another
//! writer undoing the sync's writes).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use kube::Resource;
use tracing::Instrument;

use crate::engine::observe::{Outcome, SkipReason};
use crate::hooks::SyncHooks;
use crate::hooks::context::{MalformedObjects, SyncContext};
use crate::hooks::decision::{Decision, Skip, decide};
use crate::hooks::objects::{Direction, SyncObjects};
use crate::hooks::outcome::{Action, HookResult};
use crate::pair::SyncPair;

/// How one reconcile ended.
pub(crate) struct Reconciled<P: SyncPair> {
    /// What it did, for the observer.
    pub outcome: Outcome,
    /// What the hook returned (`await_change` when no hook ran).
    pub result: HookResult,
    /// The objects a sync hook was given (`None` when no sync hook ran).
    pub synced: Option<SyncObjects<P>>,
}

impl<P: SyncPair> Reconciled<P> {
    fn without_hook(outcome: Outcome) -> Self {
        Self {
            outcome,
            result: Ok(Action::await_change()),
            synced: None,
        }
    }
}

/// Reconciles one name: fetches the pair from the caches, decides, calls the hook.
///
/// A hook that panics is reported as a failure (and retried), never a dead worker.
pub(crate) async fn reconcile<P: SyncPair, H: SyncHooks<P>>(
    hooks: &H,
    ctx: &SyncContext<P>,
    name: &str,
) -> Reconciled<P> {
    // The object's name is `object`, not `name`: JSON log formatters (tracing-subscriber's
    // among them) write the span's own name under `name`, and a second `name` key would
    // hide one of the two from every JSON reader.
    let span = tracing::info_span!(
        "reconcile",
        controller = ctx.controller,
        object = name,
        direction = tracing::field::Empty
    );
    async {
        if let Some(skip) = report_malformed(ctx, name).await {
            return Reconciled::without_hook(skip);
        }
        let objects = fetch(ctx, name);
        let decision = decide::<P>(objects.mapi.as_deref(), objects.capi.as_deref(), |owner| {
            ctx.caches.owner_mirrored(&ctx.namespaces, owner)
        });
        tracing::debug!(
            ?decision,
            mapi = objects.mapi.is_some(),
            capi = objects.capi.is_some(),
            "decided"
        );
        let (deletion, direction) = match decision {
            Decision::NothingToDo => {
                return Reconciled::without_hook(Outcome::Skipped(SkipReason::NothingToDo));
            }
            Decision::Skip(skip) => {
                report_skip(ctx, &objects, &skip).await;
                return Reconciled::without_hook(Outcome::Skipped((&skip).into()));
            }
            Decision::Sync(direction) => (false, direction),
            Decision::Deletion(direction) => (true, direction),
        };
        tracing::Span::current().record("direction", direction.as_str());
        let result = call_hook(hooks, ctx, &objects, deletion, direction).await;
        let result = hold_off_contest(ctx, &objects, result).await;
        let failed = result.is_err();
        let outcome = if deletion {
            Outcome::Deletion { direction, failed }
        } else {
            Outcome::Synced { direction, failed }
        };
        Reconciled {
            outcome,
            result,
            synced: (!deletion).then_some(objects),
        }
    }
    .instrument(span)
    .await
}

/// Calls the hook the decision picked; a panic is an error.
async fn call_hook<P: SyncPair, H: SyncHooks<P>>(
    hooks: &H,
    ctx: &SyncContext<P>,
    objects: &SyncObjects<P>,
    deletion: bool,
    direction: Direction,
) -> HookResult {
    let call = async {
        match (deletion, direction) {
            (true, direction) => hooks.reconcile_deletion(direction, objects, ctx).await,
            (false, Direction::MapiToCapi) => hooks.reconcile_mapi_to_capi(objects, ctx).await,
            (false, Direction::CapiToMapi) => hooks.reconcile_capi_to_mapi(objects, ctx).await,
        }
    };
    caught(call).await
}

/// `hook`'s result, a panic turned into an error.
pub(crate) async fn caught(hook: impl Future<Output = HookResult>) -> HookResult {
    AssertUnwindSafe(hook)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Err("hook panicked".into()))
}

/// A hook that stopped because another writer keeps undoing its writes
/// ([`crate::hooks::toolkit::contest`]) is not a failure to retry with backoff: it is
/// logged, a Warning Event names the other manager, and the name comes back after the
/// hold-off.
async fn hold_off_contest<P: SyncPair>(
    ctx: &SyncContext<P>,
    objects: &SyncObjects<P>,
    result: HookResult,
) -> HookResult {
    let contest = match &result {
        Err(error) => crate::hooks::toolkit::apply::find_contest(error.as_ref()).cloned(),
        Ok(_) => None,
    };
    let Some(contest) = contest else { return result };
    tracing::warn!(error = %contest, "another writer keeps undoing the sync's writes; holding off");
    if let Some(on) = objects.event_target() {
        ctx.warn(&on, crate::hooks::toolkit::contest::REASON, contest.to_string())
            .await;
    }
    Ok(Action::requeue(contest.retry_in))
}

/// The dual fetch: both objects from the caches, and the CAPI object's infra reference.
pub(crate) fn fetch<P: SyncPair>(ctx: &SyncContext<P>, name: &str) -> SyncObjects<P> {
    fetch_beside(ctx, name, ctx.caches.mapi(&ctx.namespaces, name))
}

/// [`fetch`] for a MAPI object already read from its cache.
pub(crate) fn fetch_beside<P: SyncPair>(
    ctx: &SyncContext<P>,
    name: &str,
    mapi: Option<Arc<P::Mapi>>,
) -> SyncObjects<P> {
    let capi = ctx.caches.capi(&ctx.namespaces, name);
    let infra_ref = capi.as_deref().and_then(|capi| P::infra_ref(capi).transpose());
    let infra = match (&ctx.infra, &infra_ref) {
        (Some(tracker), Some(Ok(reference))) => tracker.cached(reference),
        _ => None,
    };
    SyncObjects {
        name: name.to_owned(),
        mapi,
        capi,
        infra_ref,
        infra,
    }
}

/// Whether either side of `name` is cached as malformed (looked up, not reported).
pub(crate) fn is_malformed<P: SyncPair>(ctx: &SyncContext<P>, name: &str) -> bool {
    MalformedObjects::get(&ctx.caches.malformed.mapi, name).is_some()
        || MalformedObjects::get(&ctx.caches.malformed.capi, name).is_some()
}

/// A name with a side that does not decode is not synced until it is fixed: the hooks
/// would otherwise act on a half-known pair. Reported as a Warning Event on the object.
pub(crate) async fn report_malformed<P: SyncPair>(ctx: &SyncContext<P>, name: &str) -> Option<Outcome> {
    let sides = [
        (
            MalformedObjects::get(&ctx.caches.malformed.mapi, name),
            P::Mapi::kind(&()),
            P::Mapi::api_version(&()),
        ),
        (
            MalformedObjects::get(&ctx.caches.malformed.capi, name),
            P::Capi::kind(&()),
            P::Capi::api_version(&()),
        ),
    ];
    let mut found = false;
    for (malformed, kind, api_version) in sides {
        let Some(malformed) = malformed else { continue };
        found = true;
        tracing::warn!(object = %malformed, "object does not decode; not syncing until it is fixed");
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some(api_version.into_owned()),
            kind: Some(kind.into_owned()),
            name: malformed.metadata.name.clone(),
            namespace: malformed.metadata.namespace.clone(),
            uid: malformed.metadata.uid.clone(),
            resource_version: malformed.metadata.resource_version.clone(),
            ..Default::default()
        };
        ctx.warn(
            &reference,
            "MalformedObject",
            format!("{malformed}; not syncing until it is fixed"),
        )
        .await;
    }
    found.then_some(Outcome::Skipped(SkipReason::Malformed))
}

async fn report_skip<P: SyncPair>(ctx: &SyncContext<P>, objects: &SyncObjects<P>, skip: &Skip) {
    match skip {
        Skip::UnknownAuthority(value) => {
            tracing::warn!(value = %value, "unknown status.authoritativeAPI; not syncing");
            if let Some(mapi) = &objects.mapi {
                let note = format!(
                    "{}/{}: status.authoritativeAPI {value:?} is not MachineAPI, ClusterAPI or Migrating; not syncing",
                    ctx.namespaces.mapi, objects.name
                );
                ctx.warn(&mapi.object_ref(&()), "UnknownAuthoritativeAPI", note)
                    .await;
            }
        }
        Skip::Migrating => tracing::info!("authoritativeAPI is Migrating; not syncing"),
        Skip::NoAuthority => tracing::debug!("status.authoritativeAPI is not set yet; not syncing"),
        Skip::CapiOnlyIgnored | Skip::CapiOnlyOwnerNotMirrored => {
            tracing::debug!(reason = %SkipReason::from(skip), "CAPI-only object; not syncing")
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Mutex;

    use http::{Request, Response};
    use kube::client::Body;
    use kube::runtime::watcher::Event;

    use std::sync::Arc;

    use kube::runtime::events::Reporter;
    use kube::{Client, Resource};

    use super::*;
    use crate::api::{capi, mapi};
    use crate::engine::observe::{Outcome, SkipReason};
    use crate::hooks::context::{Caches, MalformedObjects, Namespaces};
    use crate::runtime::events::Recorder;
    use crate::runtime::lenient::Malformed;
    use crate::runtime::store::Store;
    use crate::runtime::store::Writer;
    use crate::testing::fixtures::{
        CAPI_NS, MAPI_NS, MachinePair, capi_machine, mapi_machine, mapi_machine_set,
    };
    use crate::testing::{Hook, RecordingHooks};

    /// (path, body) of every request a test client sent.
    pub(crate) type Requests = Arc<Mutex<Vec<(String, String)>>>;

    /// A client whose every request is recorded and answered `201 {}`.
    pub(crate) fn recording_client() -> (Client, Requests) {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let seen = seen.clone();
            async move {
                let path = request.uri().path().to_owned();
                let body = request.into_body().collect_bytes().await.unwrap_or_default();
                if let Ok(mut seen) = seen.lock() {
                    seen.push((path, String::from_utf8_lossy(&body).into_owned()));
                }
                Response::builder().status(201).body(Body::from(b"{}".to_vec()))
            }
        });
        (Client::new(service, "default"), requests)
    }

    fn store_of<K: Resource + serde::Serialize>(objects: Vec<K>) -> Store<K> {
        let mut writer = Writer::<K>::default();
        for object in objects {
            writer.apply_watcher_event(&Event::Apply(object));
        }
        writer.as_reader()
    }

    fn context(
        mapi: Vec<mapi::Machine>,
        capi: Vec<capi::Machine>,
        owners: Vec<mapi::MachineSet>,
    ) -> (SyncContext<MachinePair>, Requests) {
        let (client, requests) = recording_client();
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "machine-sync".into(),
                instance: None,
            },
        );
        let ctx = SyncContext {
            controller: "machine-sync",
            client,
            namespaces: Namespaces {
                mapi: MAPI_NS.into(),
                capi: CAPI_NS.into(),
            },
            recorder,
            caches: Caches {
                mapi: store_of(mapi),
                capi: store_of(capi),
                owner_mirrors: Some(store_of(owners)),
                malformed: MalformedObjects::default(),
            },
            infra: None,
            infra_refs: None,
        };
        (ctx, requests)
    }

    async fn run(ctx: &SyncContext<MachinePair>, name: &str) -> (RecordingHooks<MachinePair>, Outcome) {
        let hooks = RecordingHooks::new();
        let Reconciled { outcome, result, .. } = reconcile(&hooks, ctx, name).await;
        assert!(result.is_ok(), "{result:?}");
        (hooks, outcome)
    }

    #[tokio::test]
    async fn mapi_authoritative_calls_mapi_to_capi_with_both_cached_objects() {
        let mapi = mapi_machine("worker-a", Some("MachineAPI"), false);
        let capi = capi_machine("worker-a", None, false);
        let (ctx, _) = context(vec![mapi.clone()], vec![capi.clone()], vec![]);
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::MapiToCapi);
        assert_eq!(calls[0].objects.mapi.as_deref(), Some(&mapi));
        assert_eq!(calls[0].objects.capi.as_deref(), Some(&capi));
        assert_eq!(
            calls[0].objects.infra_ref().map(|r| r.kind.as_str()),
            Some("DevMachine")
        );
        assert_eq!(
            outcome,
            Outcome::Synced {
                direction: Direction::MapiToCapi,
                failed: false
            }
        );
    }

    #[tokio::test]
    async fn cluster_api_authoritative_calls_capi_to_mapi() {
        let (ctx, _) = context(
            vec![mapi_machine("worker-a", Some("ClusterAPI"), false)],
            vec![],
            vec![],
        );
        let (hooks, _) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::CapiToMapi);
        assert!(calls[0].objects.capi.is_none());
    }

    #[tokio::test]
    async fn capi_only_machine_of_a_mirrored_set_calls_capi_to_mapi_without_a_mapi_object() {
        let capi = capi_machine("worker-a", Some(("cluster.x-k8s.io/v1beta2", "set-a")), false);
        let (ctx, _) = context(vec![], vec![capi.clone()], vec![mapi_machine_set("set-a")]);
        let (hooks, _) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::CapiToMapi);
        assert!(calls[0].objects.mapi.is_none());
        assert_eq!(calls[0].objects.capi.as_deref(), Some(&capi));
    }

    #[tokio::test]
    async fn capi_only_machine_of_an_unmirrored_set_calls_nothing() {
        let capi = capi_machine("worker-a", Some(("cluster.x-k8s.io/v1beta2", "set-a")), false);
        let (ctx, _) = context(vec![], vec![capi], vec![mapi_machine_set("set-b")]);
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        assert!(hooks.calls().is_empty());
        assert_eq!(outcome, Outcome::Skipped(SkipReason::CapiOnlyOwnerNotMirrored));
    }

    #[tokio::test]
    async fn deletion_calls_the_deletion_hook_with_the_deleting_object() {
        let mapi = mapi_machine("worker-a", Some("MachineAPI"), true);
        let (ctx, _) = context(
            vec![mapi.clone()],
            vec![capi_machine("worker-a", None, false)],
            vec![],
        );
        let (hooks, _) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::Deletion(Direction::MapiToCapi));
        assert!(matches!(calls[0].objects.deleting(), Some(crate::hooks::Deleting::Mapi(m)) if *m == mapi));
    }

    #[tokio::test]
    async fn migrating_empty_and_absent_call_nothing() {
        let (ctx, _) = context(
            vec![
                mapi_machine("migrating", Some("Migrating"), false),
                mapi_machine("empty", None, false),
            ],
            vec![],
            vec![],
        );
        for (name, skipped) in [
            ("migrating", SkipReason::Migrating),
            ("empty", SkipReason::NoAuthority),
            ("absent", SkipReason::NothingToDo),
        ] {
            let (hooks, outcome) = run(&ctx, name).await;
            assert!(hooks.calls().is_empty(), "{name}");
            assert_eq!(outcome, Outcome::Skipped(skipped));
        }
    }

    #[tokio::test]
    async fn unknown_authority_calls_nothing_and_publishes_a_warning_event() {
        let (ctx, requests) = context(
            vec![mapi_machine("worker-a", Some("Kubelet"), false)],
            vec![],
            vec![],
        );
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        assert!(hooks.calls().is_empty());
        assert_eq!(outcome, Outcome::Skipped(SkipReason::UnknownAuthority));
        let requests = requests.lock().map(|r| r.clone()).unwrap_or_default();
        let event = requests.iter().find(|(path, _)| path.ends_with("/events"));
        let Some((path, body)) = event else {
            panic!("no event published: {requests:?}")
        };
        assert!(path.contains(MAPI_NS), "{path}");
        assert!(body.contains("\"type\":\"Warning\""), "{body}");
        assert!(body.contains("UnknownAuthoritativeAPI"), "{body}");
        assert!(body.contains("Kubelet"), "{body}");
    }

    #[tokio::test]
    async fn a_panicking_hook_is_a_failure_not_a_dead_worker() {
        struct Panics;
        impl SyncHooks<MachinePair> for Panics {
            async fn reconcile_mapi_to_capi(
                &self,
                _: &SyncObjects<MachinePair>,
                _: &SyncContext<MachinePair>,
            ) -> crate::HookResult {
                panic!("boom")
            }
        }
        let (ctx, _) = context(
            vec![mapi_machine("worker-a", Some("MachineAPI"), false)],
            vec![],
            vec![],
        );
        let Reconciled { outcome, result, .. } = reconcile(&Panics, &ctx, "worker-a").await;
        assert!(result.is_err());
        assert_eq!(
            outcome,
            Outcome::Synced {
                direction: Direction::MapiToCapi,
                failed: true
            }
        );
    }

    #[tokio::test]
    async fn a_malformed_side_is_reported_and_not_synced() {
        let (ctx, requests) = context(
            vec![mapi_machine("worker-a", Some("MachineAPI"), false)],
            vec![],
            vec![],
        );
        let malformed = Malformed {
            metadata: crate::testing::fixtures::meta("worker-a", CAPI_NS, false),
            error: "spec.clusterName: invalid type: integer `5`, expected a string".into(),
        };
        MalformedObjects::set(&ctx.caches.malformed.capi, "worker-a", Some(&malformed));
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        assert!(hooks.calls().is_empty());
        assert_eq!(outcome, Outcome::Skipped(SkipReason::Malformed));
        let requests = requests.lock().map(|r| r.clone()).unwrap_or_default();
        let Some((path, body)) = requests.iter().find(|(path, _)| path.ends_with("/events")) else {
            panic!("no event: {requests:?}")
        };
        assert!(path.contains(CAPI_NS), "{path}");
        assert!(
            body.contains("MalformedObject") && body.contains("spec.clusterName"),
            "{body}"
        );

        // Fixed: synced again.
        MalformedObjects::set(&ctx.caches.malformed.capi, "worker-a", None);
        let (hooks, _) = run(&ctx, "worker-a").await;
        assert_eq!(hooks.calls().len(), 1);
    }
}
