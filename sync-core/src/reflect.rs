//! Feeds a watcher into a reflector store and reports which objects each event touched.
//!
//! Unlike `touched_objects()`, a relist also reports the objects it found gone: after a
//! dropped watch or a 410 Expired the watcher lists again, and an object deleted during
//! the gap disappears from the store without a Delete event. Reporting it keeps "no
//! reconcile is missed" true across watch restarts.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;

/// One object an event touched.
#[derive(Debug)]
pub enum Touched<'a, K: Resource> {
    /// Created, changed, or listed.
    Present(&'a K),
    /// Deleted (a Delete event, or missing from a relist): its last known state.
    Gone(&'a K),
}

/// Runs until the watch stream ends: applies every event to `writer` and calls `on_touch`
/// for every object it touched. Watch errors are logged and retried by the stream's own
/// backoff.
pub async fn reflect<K>(
    what: &str,
    stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    mut writer: Writer<K>,
    mut on_touch: impl FnMut(Touched<'_, K>),
) where
    K: Resource + Clone + Debug + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    let reader: Store<K> = writer.as_reader();
    // Keyed by (namespace, name): the dynamic types of infrastructure kinds have no
    // default, so `ObjectRef` cannot be built from an object alone.
    let mut before_relist: HashMap<(Option<String>, String), Arc<K>> = HashMap::new();
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(watch = what, %error, "watch failed; retrying with backoff");
                continue;
            }
        };
        match &event {
            watcher::Event::Init => {
                before_relist = reader.state().into_iter().map(|o| (key(o.as_ref()), o)).collect();
            }
            watcher::Event::InitApply(object) => {
                before_relist.remove(&key(object));
            }
            _ => {}
        }
        writer.apply_watcher_event(&event);
        match event {
            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                on_touch(Touched::Present(&object));
            }
            watcher::Event::Delete(object) => on_touch(Touched::Gone(&object)),
            watcher::Event::InitDone => {
                for gone in std::mem::take(&mut before_relist).into_values() {
                    on_touch(Touched::Gone(&gone));
                }
            }
            watcher::Event::Init => {}
        }
    }
}

fn key<K: Resource>(object: &K) -> (Option<String>, String) {
    (
        object.meta().namespace.clone(),
        object.meta().name.clone().unwrap_or_default(),
    )
}
