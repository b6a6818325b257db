//! The watches of one pair: the MAPI kind, the CAPI kind and the CAPI-only policy's owner
//! mirrors, each filling its cache and queueing the names its changes touch.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::task::JoinSet;

use crate::engine::SyncConfig;
use crate::engine::follow::Fanout;
use crate::engine::triggers::OwnerIndex;
use crate::hooks::context::{Caches, MalformedObjects};
use crate::hooks::decision::capi_owner_names;
use crate::pair::{CapiOnly, SyncPair};
use crate::runtime::infra::{ControllerHandle, InfraConfig};
use crate::runtime::lenient::{Lenient, Malformed};
use crate::runtime::reflect::{Listed, Touched, reflect, reflect_previewing};
use crate::runtime::store::Writer;
use crate::runtime::watch::lenient_watcher;

/// The write halves of the caches, handed to the watches when the controller runs.
pub(crate) struct Writers<P: SyncPair> {
    pub mapi: Writer<P::Mapi>,
    pub capi: Writer<P::Capi>,
    pub owner_mirrors: Option<Writer<P::OwnerMirror>>,
}

/// The running watches of one pair.
pub(crate) struct Watches {
    /// The reflector tasks, stopped with the controller.
    pub tasks: JoinSet<()>,
    listed: [Option<Listed>; 3],
}

impl Watches {
    /// Until every watch has reported its first list.
    pub async fn listed(&self) {
        futures::future::join_all(self.listed.iter().flatten().map(Listed::wait)).await;
    }
}

/// Sees every change one of a pair's watches hands its cache, in the watch's own task
/// ([`crate::SyncController::with_mapi_tap`], [`crate::SyncController::with_capi_tap`]):
/// each object of the first list as it arrives (the cache takes the list whole, at its
/// end), then each change once the cache holds it; a relist only what it changed and what
/// it found gone, once the cache holds the relist. It holds the watch up while it runs, so
/// it must be quick; a panic in it is logged and the watch goes on.
pub type WatchTap<K> = Arc<dyn Fn(&Touched<'_, K>) + Send + Sync>;

/// The taps on a pair's own watches, each called in the order added.
pub(crate) struct Taps<P: SyncPair> {
    pub mapi: Vec<WatchTap<P::Mapi>>,
    pub capi: Vec<WatchTap<P::Capi>>,
}

impl<P: SyncPair> Default for Taps<P> {
    fn default() -> Self {
        Self {
            mapi: Vec::new(),
            capi: Vec::new(),
        }
    }
}

/// What the watches feed: the queues (the controller's and its followers'), the malformed
/// objects, the owner index and the infrastructure references (`infra`: the pair's
/// registration with its tracker), and the watches' taps.
pub(crate) struct Feeds<'a, P: SyncPair> {
    pub queue: &'a Fanout,
    pub caches: &'a Caches<P>,
    pub owners: &'a OwnerIndex,
    pub infra: Option<ControllerHandle>,
    pub taps: Taps<P>,
}

/// Starts the pair's watches.
pub(crate) fn start<P: SyncPair>(
    client: &Client,
    config: &SyncConfig,
    writers: Writers<P>,
    feeds: Feeds<'_, P>,
) -> Watches {
    let mut tasks = JoinSet::new();
    let listed = [Listed::default(), Listed::default()];
    let namespaces = &config.namespaces;
    macro_rules! watch {
        ($kind:ty, $namespace:expr) => {
            lenient_watcher::<$kind>(client.clone(), $namespace, config.watcher.clone()).default_backoff()
        };
    }
    let queue = feeds.queue.clone();
    let malformed = feeds.caches.malformed.clone();
    let taps = feeds.taps.mapi.clone();
    tasks.spawn(reflect(
        "mapi",
        watch!(P::Mapi, &namespaces.mapi),
        writers.mapi,
        listed[0].clone(),
        move |touched| {
            MalformedObjects::set(&malformed.mapi, touched.name(), malformed_of(&touched));
            tap_safely(&taps, &touched);
            queue.add(touched.name());
        },
    ));
    spawn_capi(
        &mut tasks,
        watch!(P::Capi, &namespaces.capi),
        writers.capi,
        listed[1].clone(),
        &feeds,
    );
    let owners_listed = writers.owner_mirrors.map(|writer| {
        let listed = Listed::default();
        let (queue, owners) = (feeds.queue.clone(), feeds.owners.clone());
        tasks.spawn(reflect(
            "owner-mirror",
            watch!(P::OwnerMirror, &namespaces.mapi),
            writer,
            listed.clone(),
            move |touched| {
                for owned in owners.owned_by(touched.name()) {
                    queue.add(&owned);
                }
            },
        ));
        listed
    });
    let [mapi, capi] = listed;
    Watches {
        tasks,
        listed: [Some(mapi), Some(capi), owners_listed],
    }
}

/// The CAPI watch: it also keeps the owner index and the infrastructure references.
fn spawn_capi<P: SyncPair>(
    tasks: &mut JoinSet<()>,
    events: impl futures::Stream<Item = watcher::Result<watcher::Event<Lenient<P::Capi>>>> + Send + 'static,
    writer: Writer<P::Capi>,
    listed: Listed,
    feeds: &Feeds<'_, P>,
) {
    let previewing = feeds.infra.clone();
    let (queue, owners, infra) = (feeds.queue.clone(), feeds.owners.clone(), feeds.infra.clone());
    let malformed = feeds.caches.malformed.clone();
    let taps = feeds.taps.capi.clone();
    // The kinds a list references start their watches from its first page, and so list
    // alongside it rather than after it; the list's report tracks the same references
    // again, which changes nothing.
    let preview = move |object: &P::Capi| {
        if let Some(infra) = &previewing {
            let name = object.meta().name.as_deref().unwrap_or_default();
            infra.track(name, Some(P::infra_ref(object)));
        }
    };
    let report = move |touched: Touched<'_, P::Capi>| {
        let name = touched.name();
        MalformedObjects::set(&malformed.capi, name, malformed_of(&touched));
        let present = match &touched {
            Touched::Present(object) => Some(*object),
            _ => None,
        };
        if P::CAPI_ONLY == CapiOnly::MirrorIfOwnerMirrored {
            owners.set(name, present.into_iter().flat_map(capi_owner_names::<P>));
        }
        if let Some(infra) = &infra {
            infra.track(name, present.map(P::infra_ref));
        }
        tap_safely(&taps, &touched);
        queue.add(name);
    };
    tasks.spawn(reflect_previewing(
        "capi", events, writer, listed, preview, report,
    ));
}

/// The configuration of a controller's own infrastructure tracker: the CAPI namespace and
/// the controller's watcher settings and Event instance.
pub(crate) fn own_infra_config(config: &SyncConfig) -> InfraConfig {
    let mut infra = InfraConfig::new(config.namespaces.capi.clone());
    infra.watcher = config.watcher.clone();
    infra.instance = config.instance.clone();
    infra
}

/// Hands `touched` to each of `taps`; a panic in one is logged, and the others and the
/// watch go on.
fn tap_safely<K: Resource<DynamicType: Default>>(taps: &[WatchTap<K>], touched: &Touched<'_, K>) {
    for tap in taps {
        if std::panic::catch_unwind(AssertUnwindSafe(|| tap(touched))).is_ok() {
            continue;
        }
        tracing::error!(
            object = touched.name(),
            kind = K::kind(&K::DynamicType::default()).as_ref(),
            "a watch's tap panicked on this object; the watch goes on without it"
        );
    }
}

fn malformed_of<'a, K: Resource>(touched: &Touched<'a, K>) -> Option<&'a Malformed> {
    match touched {
        Touched::Malformed(malformed) => Some(malformed),
        _ => None,
    }
}
