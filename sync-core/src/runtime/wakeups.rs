//! Names parked until an object appears: a reconcile that cannot go on before another
//! object exists (a Machine whose MachineSet is not mirrored yet) parks its name under
//! that object's name, and whatever watches that object wakes it when the object shows
//! up, so that the wait ends on the event rather than on a poll.
//!
//! The woken names come out of [`Woken`], a stream to hand the waiting controller's
//! [`crate::SyncController::reconcile_on`].

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::Stream;
use futures::channel::mpsc;

use crate::runtime::hash::Map;

/// The names waiting, by the name of the object they wait for.
type Parked = Map<Box<str>, BTreeSet<Box<str>>>;

/// Where names wait for an object, by the object's name; cloned handles share it.
#[derive(Clone)]
pub struct Wakeups {
    parked: Arc<Mutex<Parked>>,
    woken: mpsc::UnboundedSender<String>,
}

/// The names woken, each once per wake, in the order woken; ends when every
/// [`Wakeups`] handle is dropped.
pub struct Woken(mpsc::UnboundedReceiver<String>);

impl Wakeups {
    /// An empty waiting room and the stream of the names it wakes.
    pub fn new() -> (Self, Woken) {
        let (woken, receiver) = mpsc::unbounded();
        let wakeups = Self {
            parked: Arc::default(),
            woken,
        };
        (wakeups, Woken(receiver))
    }

    /// `name` waits until `object` is [woken](Self::wake); parked twice, it is woken once.
    pub fn park(&self, object: &str, name: &str) {
        self.lock().entry(object.into()).or_default().insert(name.into());
    }

    /// `object` appeared: every name parked under it goes to [`Woken`] and stops waiting.
    /// Nothing parked under it, nothing happens (the usual case: a watch wakes on every
    /// change it sees).
    pub fn wake(&self, object: &str) {
        let Some(names) = self.lock().remove(object) else {
            return;
        };
        for name in names {
            // Nobody reads the stream any more (its controller stopped): nothing to wake.
            let _ = self.woken.unbounded_send(name.into());
        }
    }

    /// `name` waits for nothing any more (it was deleted): parked under any object, it is
    /// taken out, so that names of objects gone do not pile up under an object that never
    /// comes.
    pub fn forget(&self, name: &str) {
        self.lock().retain(|_, names| {
            names.remove(name);
            !names.is_empty()
        });
    }

    /// How many names wait, for any object.
    pub fn parked(&self) -> usize {
        self.lock().values().map(BTreeSet::len).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Parked> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Stream for Woken {
    type Item = String;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<String>> {
        Pin::new(&mut self.0).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use futures::{FutureExt, StreamExt};

    use super::*;

    /// The names `woken` holds now, without waiting for more.
    fn drain(woken: &mut Woken) -> Vec<String> {
        std::iter::from_fn(|| woken.next().now_or_never().flatten()).collect()
    }

    #[test]
    fn a_wake_releases_exactly_the_names_parked_under_that_object_once() {
        let (wakeups, mut woken) = Wakeups::new();
        wakeups.park("set-a", "m2");
        wakeups.park("set-a", "m1");
        wakeups.park("set-a", "m1");
        wakeups.park("set-b", "m3");
        assert_eq!(wakeups.parked(), 3);

        wakeups.wake("set-c");
        assert!(drain(&mut woken).is_empty(), "nothing waits for set-c");
        wakeups.wake("set-a");
        assert_eq!(drain(&mut woken), ["m1", "m2"]);
        assert_eq!(wakeups.parked(), 1);
        wakeups.wake("set-a");
        assert!(drain(&mut woken).is_empty(), "woken names wait no more");
        wakeups.clone().wake("set-b");
        assert_eq!(drain(&mut woken), ["m3"]);
    }

    #[test]
    fn a_forgotten_name_is_woken_by_nothing_and_leaves_no_empty_entry() {
        let (wakeups, mut woken) = Wakeups::new();
        wakeups.park("set-a", "m1");
        wakeups.park("set-a", "m2");
        wakeups.park("set-b", "m1");
        wakeups.forget("m1");
        assert_eq!(wakeups.parked(), 1);
        wakeups.forget("m2");
        wakeups.forget("never-parked");
        assert_eq!(wakeups.parked(), 0);
        assert!(wakeups.lock().is_empty(), "no object keeps an empty entry");
        wakeups.wake("set-a");
        wakeups.wake("set-b");
        assert!(drain(&mut woken).is_empty());
    }

    #[test]
    fn the_stream_ends_with_the_last_handle_and_waking_without_a_reader_is_harmless() {
        let (wakeups, mut woken) = Wakeups::new();
        wakeups.park("set-a", "m1");
        drop(wakeups);
        assert_eq!(woken.next().now_or_never(), Some(None));

        let (wakeups, woken) = Wakeups::new();
        drop(woken);
        wakeups.park("set-a", "m1");
        wakeups.wake("set-a");
        assert_eq!(wakeups.parked(), 0);
    }
}
