//! Feeds a watcher into a reflector store and reports which objects each event touched.
//!
//! Unlike `touched_objects()`:
//! * a relist reports its objects only once the store holds the relisted state (the first
//!   list, which nothing reads before it completes, as they arrive), and also
//!   the objects it found gone: after a dropped watch or a 410
//!   Expired the watcher lists again, and an object deleted during the gap disappears from
//!   the store without a Delete event. Reporting it keeps "no reconcile is missed" true
//!   across watch restarts. An object the relist finds at the resourceVersion the store
//!   already held is not reported again: it did not change, and a relist (every watch
//!   expires now and then) would otherwise reconcile the whole fleet;
//! * objects come as [`Lenient`] (`runtime::watch` decodes them one by one once one does
//!   not fit): a malformed one is reported and kept out of the store (a stale valid
//!   version is dropped), and never stops the others;
//! * `metadata.managedFields` is dropped before an object is cached, but for server-side
//!   apply entries (what `toolkit::apply` compares with), whose field sets are kept as
//!   their JSON text;
//! * the store is the compact one ([`crate::runtime::store`]), and an event is reported from its
//!   own object, never read back from the store.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::runtime::field_sets;
use crate::runtime::hash::Map;
use crate::runtime::lenient::{Lenient, Malformed};
use crate::runtime::store::{Packed, Store, Writer};

/// One object an event touched.
#[derive(Debug)]
pub enum Touched<'a, K: Resource> {
    /// Created, changed, or listed.
    Present(&'a K),
    /// Deleted (a Delete event, or missing from a relist): its last known state.
    Gone(&'a K),
    /// Created or changed, but it does not decode as `K`.
    Malformed(&'a Malformed),
    /// A malformed object was deleted.
    MalformedGone(&'a Malformed),
}

impl<K: Resource> Touched<'_, K> {
    /// The touched object's name.
    pub fn name(&self) -> &str {
        let meta = match self {
            Self::Present(object) | Self::Gone(object) => object.meta(),
            Self::Malformed(malformed) | Self::MalformedGone(malformed) => &malformed.metadata,
        };
        meta.name.as_deref().unwrap_or_default()
    }
}

/// Says when a watch's first list has been *reported* (every listed object handed to
/// `on_touch`), which is later than its store being ready: a controller that starts its
/// workers at store readiness would reconcile names whose list events are still on their
/// way to the queue, and reconcile them again when they arrive.
#[derive(Clone, Debug)]
pub struct Listed(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Listed {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Listed {
    /// Waits until the first list has been reported.
    pub async fn wait(&self) {
        let mut listed = self.0.subscribe();
        // The sender lives in `self`: the wait ends only by listing.
        let _ = listed.wait_for(|listed| *listed).await;
    }

    fn set(&self) {
        self.0.send_if_modified(|listed| !std::mem::replace(listed, true));
    }
}

/// An object a relist delivered, reported once the relist is complete.
enum Relisted<K> {
    Valid(K),
    Malformed(Box<Malformed>),
}

/// Wraps events of objects that always decode (already decoded ones) as [`Lenient`].
pub fn always_valid<K>(event: watcher::Event<K>) -> watcher::Event<Lenient<K>> {
    map_event(event, Lenient::Valid)
}

/// The same event about `f` of its object.
pub fn map_event<A, B>(event: watcher::Event<A>, f: impl FnOnce(A) -> B) -> watcher::Event<B> {
    match event {
        watcher::Event::Apply(o) => watcher::Event::Apply(f(o)),
        watcher::Event::Delete(o) => watcher::Event::Delete(f(o)),
        watcher::Event::InitApply(o) => watcher::Event::InitApply(f(o)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// Runs until the watch stream ends: applies every event to `writer` and calls `on_touch`
/// for every object it touched; sets `listed` once the first list has been reported.
/// Watch errors are logged and retried by the stream's own backoff.
pub async fn reflect<K>(
    what: &str,
    stream: impl Stream<Item = Result<watcher::Event<Lenient<K>>, watcher::Error>>,
    writer: Writer<K>,
    listed: Listed,
    on_touch: impl FnMut(Touched<'_, K>),
) where
    K: Resource + Serialize + DeserializeOwned,
{
    reflect_previewing(what, stream, writer, listed, |_| {}, on_touch).await;
}

/// [`reflect`], also handing `preview` each valid object of a list as it arrives, before
/// `on_touch` reports it (a relist's, once the relist completes). For work that only gets ready and must
/// not wait for a large list's last page: the engine starts the infrastructure watches a
/// CAPI list references from its first page, so that they list alongside it. Nothing may
/// be reconciled from a preview (the store does not hold the object yet).
pub async fn reflect_previewing<K>(
    what: &str,
    stream: impl Stream<Item = Result<watcher::Event<Lenient<K>>, watcher::Error>>,
    writer: Writer<K>,
    listed: Listed,
    mut preview: impl FnMut(&K),
    mut on_touch: impl FnMut(Touched<'_, K>),
) where
    K: Resource + Serialize + DeserializeOwned,
{
    let mut reflector = Reflector::new(writer);
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(watch = what, %error, "watch failed; retrying with backoff");
                continue;
            }
        };
        let event = map_event(event, |mut object| {
            field_sets::trim(object.meta_mut());
            object
        });
        match event {
            watcher::Event::Init => reflector.relist_started(),
            watcher::Event::InitApply(Lenient::Valid(object)) => {
                preview(&object);
                reflector.listed_valid(object, &mut on_touch);
            }
            watcher::Event::InitApply(Lenient::Malformed(malformed)) => {
                reflector.listed_malformed(malformed, &mut on_touch);
            }
            watcher::Event::InitDone => {
                reflector.list_done(&mut on_touch);
                listed.set();
            }
            watcher::Event::Apply(object) => reflector.applied(object, &mut on_touch),
            watcher::Event::Delete(object) => reflector.deleted(object, &mut on_touch),
        }
    }
}

/// The state of one reflected watch between its events: the cache, and during a relist
/// the objects it held before and the relisted ones not reported yet.
///
/// The writer keeps a relist's objects aside and swaps them in at InitDone: until then
/// the store still shows the state before the relist, so the relisted objects are reported
/// only once it holds them (a reconcile triggered earlier would read the old state, and
/// the change would never be seen); they are kept until then, as reading them back would
/// decode them again. The first list's objects are reported as they arrive: until it
/// completes nothing reads the store (the engine starts its workers once every first list
/// is reported, and an infrastructure lookup answers "unknown" until its cache is ready).
struct Reflector<K: Resource> {
    writer: Writer<K>,
    reader: Store<K>,
    before_relist: Map<(String, String), Packed>,
    relisted: Vec<Relisted<K>>,
}

impl<K> Reflector<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    fn new(writer: Writer<K>) -> Self {
        Self {
            reader: writer.as_reader(),
            writer,
            before_relist: Map::default(),
            relisted: Vec::new(),
        }
    }

    /// A (re)list begins: what the cache holds now is what a relist may find gone.
    fn relist_started(&mut self) {
        self.before_relist = self.reader.snapshot();
        self.writer.apply_watcher_event(&watcher::Event::Init);
    }

    /// A valid object of a list: reported now on the first list, at the end of a relist
    /// when it changed.
    fn listed_valid(&mut self, object: K, on_touch: &mut impl FnMut(Touched<'_, K>)) {
        let unchanged = self
            .before_relist
            .remove(&key(object.meta()))
            .is_some_and(|before| {
                before.resource_version().is_some()
                    && before.resource_version() == object.meta().resource_version.as_deref()
            });
        let event = watcher::Event::InitApply(object);
        self.writer.apply_watcher_event(&event);
        if let watcher::Event::InitApply(object) = event {
            if !self.reader.is_ready() {
                on_touch(Touched::Present(&object));
            } else if !unchanged {
                self.relisted.push(Relisted::Valid(object));
            }
        }
    }

    /// A malformed object of a list: left out of the store, reported instead of gone.
    fn listed_malformed(&mut self, malformed: Box<Malformed>, on_touch: &mut impl FnMut(Touched<'_, K>)) {
        self.before_relist.remove(&key(&malformed.metadata));
        if self.reader.is_ready() {
            self.relisted.push(Relisted::Malformed(malformed));
        } else {
            on_touch(Touched::Malformed(&malformed));
        }
    }

    /// The list is complete: the store swaps it in, then the relisted objects and those
    /// the relist no longer has are reported.
    fn list_done(&mut self, on_touch: &mut impl FnMut(Touched<'_, K>)) {
        self.writer.apply_watcher_event(&watcher::Event::InitDone);
        for entry in std::mem::take(&mut self.relisted) {
            match entry {
                Relisted::Valid(object) => on_touch(Touched::Present(&object)),
                Relisted::Malformed(malformed) => on_touch(Touched::Malformed(&malformed)),
            }
        }
        for gone in std::mem::take(&mut self.before_relist).into_values() {
            if let Some(gone) = self.reader.unpack(&gone) {
                on_touch(Touched::Gone(&gone));
            }
        }
    }

    /// A watched change; a malformed version drops the object's stale valid one.
    fn applied(&mut self, object: Lenient<K>, on_touch: &mut impl FnMut(Touched<'_, K>)) {
        match object {
            Lenient::Valid(object) => {
                let object = Arc::new(object);
                self.writer.apply_decoded(object.clone());
                on_touch(Touched::Present(&object));
            }
            Lenient::Malformed(malformed) => {
                self.remove(&malformed);
                on_touch(Touched::Malformed(&malformed));
            }
        }
    }

    /// A watched deletion.
    fn deleted(&mut self, object: Lenient<K>, on_touch: &mut impl FnMut(Touched<'_, K>)) {
        match object {
            Lenient::Valid(object) => {
                let event = watcher::Event::Delete(object);
                self.writer.apply_watcher_event(&event);
                if let watcher::Event::Delete(object) = &event {
                    on_touch(Touched::Gone(object));
                }
            }
            Lenient::Malformed(malformed) => {
                self.remove(&malformed);
                on_touch(Touched::MalformedGone(&malformed));
            }
        }
    }

    fn remove(&mut self, malformed: &Malformed) {
        let meta = &malformed.metadata;
        self.writer.remove(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        );
    }
}

/// An object's cache key: (namespace, name).
fn key(meta: &ObjectMeta) -> (String, String) {
    let namespace = meta.namespace.clone().unwrap_or_default();
    (namespace, meta.name.clone().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::reflector::ObjectRef;

    use futures::FutureExt;

    use super::*;

    fn configmap(name: &str, version: &str) -> Lenient<ConfigMap> {
        Lenient::Valid(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    /// What the store held for each touched object at the moment it was reported.
    async fn touches(events: Vec<watcher::Event<Lenient<ConfigMap>>>) -> Vec<(String, Option<String>)> {
        let writer = Writer::<ConfigMap>::default();
        let reader = writer.as_reader();
        let mut seen = Vec::new();
        let stream = futures::stream::iter(events.into_iter().map(Ok));
        reflect("test", stream, writer, Listed::default(), |touched| {
            let name = touched.name().to_owned();
            let stored = reader
                .get(&ObjectRef::new(&name).within("ns"))
                .and_then(|o| o.metadata.resource_version.clone());
            seen.push((name, stored));
        })
        .await;
        seen
    }

    #[tokio::test]
    async fn a_relist_is_reported_once_the_store_holds_it() {
        use watcher::Event::{Apply, Init, InitApply, InitDone};
        let seen = touches(vec![
            Init,
            InitApply(configmap("a", "1")),
            InitApply(configmap("b", "1")),
            InitApply(configmap("c", "1")),
            InitDone,
            // The watch restarts: "a" changed and "b" was deleted meanwhile; "c" did not
            // change and is not reported again.
            Init,
            InitApply(configmap("a", "5")),
            InitApply(configmap("c", "1")),
            InitDone,
            Apply(configmap("a", "6")),
        ])
        .await;
        assert_eq!(
            seen,
            [
                // The first list, as it arrives: nothing reads the store before it is done.
                ("a".to_owned(), None),
                ("b".to_owned(), None),
                ("c".to_owned(), None),
                // Reported after the swap: the store already shows version 5, not 1.
                ("a".to_owned(), Some("5".to_owned())),
                // Gone meanwhile: reported, and no longer stored.
                ("b".to_owned(), None),
                ("a".to_owned(), Some("6".to_owned())),
            ]
        );
    }

    /// A first list of "a" and "b", then a change to "a".
    fn a_list_then_a_change() -> impl Stream<Item = Result<watcher::Event<Lenient<ConfigMap>>, watcher::Error>>
    {
        use watcher::Event::{Apply, Init, InitApply, InitDone};
        let events = vec![
            Init,
            InitApply(configmap("a", "1")),
            InitApply(configmap("b", "1")),
            InitDone,
            Apply(configmap("a", "2")),
        ];
        futures::stream::iter(events.into_iter().map(Ok))
    }

    /// The first list counts as listed only once every listed object was reported (a
    /// controller starts its workers then), and its objects are reported as they arrive,
    /// before the store is ready.
    #[tokio::test]
    async fn listed_is_set_after_the_first_list_was_reported() {
        let writer = Writer::<ConfigMap>::default();
        let reader = writer.as_reader();
        let listed = Listed::default();
        let mut seen = Vec::new();
        let stream = a_list_then_a_change();
        reflect("test", stream, writer, listed.clone(), |touched| {
            let ready = reader.wait_until_ready().now_or_never().is_some();
            let reported = listed.wait().now_or_never().is_some();
            seen.push((touched.name().to_owned(), ready, reported));
        })
        .await;
        let expected = [("a", false, false), ("b", false, false), ("a", true, true)];
        assert_eq!(seen, expected.map(|(n, r, l)| (n.to_owned(), r, l)));
    }

    /// A relist's objects are previewed as they arrive, before any is reported, and only a
    /// list's (a watch event is reported at once; the first list's objects are reported
    /// as they arrive, each after its preview).
    #[tokio::test]
    async fn a_list_is_previewed_before_it_is_reported() {
        use watcher::Event::{Init, InitApply, InitDone};
        let log = std::cell::RefCell::new(Vec::new());
        let relist = [
            Init,
            InitApply(configmap("a", "3")),
            InitApply(configmap("b", "3")),
            InitDone,
        ];
        let stream = a_list_then_a_change().chain(futures::stream::iter(relist.into_iter().map(Ok)));
        let writer = Writer::<ConfigMap>::default();
        reflect_previewing(
            "test",
            stream,
            writer,
            Listed::default(),
            |object| {
                log.borrow_mut().push(format!(
                    "preview {}",
                    object.metadata.name.as_deref().unwrap_or_default()
                ))
            },
            |touched| log.borrow_mut().push(format!("touch {}", touched.name())),
        )
        .await;
        assert_eq!(
            log.into_inner(),
            [
                "preview a",
                "touch a",
                "preview b",
                "touch b",
                "touch a",
                "preview a",
                "preview b",
                "touch a",
                "touch b"
            ]
        );
    }
}
