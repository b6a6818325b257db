//! A work queue of names with client-go's semantics.
//!
//! * a name queued many times before a worker takes it is reconciled once (dirty set);
//! * a name is never reconciled by two workers at once: queued while in flight, it is
//!   reconciled again right after (processing set);
//! * delayed adds (requeue, backoff) go through kube-runtime's scheduler, which keeps the
//!   earliest time per name;
//! * failures back off exponentially per name until the name succeeds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::runtime::hash::{Map, Set};

/// Per-name exponential backoff after failed reconciles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Delay after the first failure; doubled after each further one.
    pub base: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Default for Backoff {
    /// client-go's controller default starts at 5 ms; we cap at five minutes so a name
    /// whose cause was fixed is retried within a reasonable time.
    fn default() -> Self {
        Self {
            base: Duration::from_millis(5),
            max: Duration::from_secs(300),
        }
    }
}

impl Backoff {
    /// The delay before retry number `failures` (1 for the first failure).
    pub fn delay(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1).min(32);
        self.base
            .saturating_mul(2u32.saturating_pow(exponent))
            .min(self.max)
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<String>,
    dirty: Set<String>,
    processing: Set<String>,
    failures: Map<String, u32>,
    shut_down: bool,
}

struct Shared {
    state: Mutex<State>,
    ready: Notify,
}

impl State {
    /// Hands back the room a burst (a relist's every name) grew the queue to, once it has
    /// drained: a table keeps its peak capacity, ~1 MB per 10 000 names here.
    fn release_burst(&mut self) {
        const KEEP: usize = 64;
        if self.queue.is_empty() && self.queue.capacity() > KEEP {
            self.queue.shrink_to(KEEP);
            self.dirty.shrink_to(KEEP);
            self.processing.shrink_to(KEEP);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the sets inconsistent in a way that
        // matters more than stopping: recover the guard instead of propagating poison.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, name: String) {
        let mut state = self.lock();
        if state.shut_down || !state.dirty.insert(name.clone()) {
            return;
        }
        if !state.processing.contains(&name) {
            state.queue.push_back(name);
            drop(state);
            self.ready.notify_one();
        }
    }
}

/// A deduplicating, per-name exclusive work queue with delayed adds and backoff.
#[derive(Clone)]
pub struct WorkQueue {
    shared: Arc<Shared>,
    delayed: mpsc::UnboundedSender<ScheduleRequest<String>>,
    backoff: Backoff,
}

impl WorkQueue {
    /// A new queue; its delay timer runs on the current tokio runtime until the queue is
    /// shut down.
    pub fn new(backoff: Backoff) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            ready: Notify::new(),
        });
        let (delayed, requests) = mpsc::unbounded_channel();
        let timer = Arc::clone(&shared);
        tokio::spawn(async move {
            let due = scheduler(tokio_stream_from(requests));
            futures::pin_mut!(due);
            while let Some(name) = due.next().await {
                timer.add(name);
            }
        });
        Self {
            shared,
            delayed,
            backoff,
        }
    }

    /// Queues `name` now.
    pub fn add(&self, name: impl Into<String>) {
        self.shared.add(name.into());
    }

    /// Queues `name` after `delay`.
    pub fn add_after(&self, name: impl Into<String>, delay: Duration) {
        let request = ScheduleRequest {
            message: name.into(),
            run_at: Instant::now() + delay,
        };
        // The receiver lives as long as the timer task, which ends only after shutdown.
        let _ = self.delayed.send(request);
    }

    /// Queues `name` after its backoff delay, counting one more failure. Returns the delay.
    pub fn add_rate_limited(&self, name: &str) -> Duration {
        let failures = {
            let mut state = self.shared.lock();
            let failures = state.failures.entry(name.to_owned()).or_default();
            *failures = failures.saturating_add(1);
            *failures
        };
        let delay = self.backoff.delay(failures);
        self.add_after(name, delay);
        delay
    }

    /// Forgets the failures of `name` (it succeeded).
    pub fn forget(&self, name: &str) {
        self.shared.lock().failures.remove(name);
    }

    /// How many times `name` has failed in a row.
    #[cfg(test)]
    pub fn failures(&self, name: &str) -> u32 {
        self.shared.lock().failures.get(name).copied().unwrap_or(0)
    }

    /// The next name to reconcile; `None` once the queue is shut down and drained of
    /// nothing more. The caller must call [`Self::done`] with it.
    pub async fn get(&self) -> Option<String> {
        loop {
            let ready = self.shared.ready.notified();
            {
                let mut state = self.shared.lock();
                if let Some(name) = state.queue.pop_front() {
                    state.dirty.remove(&name);
                    state.processing.insert(name.clone());
                    let more = !state.queue.is_empty();
                    state.release_burst();
                    drop(state);
                    if more {
                        // Wake another worker for the rest.
                        self.shared.ready.notify_one();
                    }
                    return Some(name);
                }
                if state.shut_down {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// Marks `name` finished; if it was queued meanwhile it goes back in the queue.
    pub fn done(&self, name: &str) {
        let mut state = self.shared.lock();
        state.processing.remove(name);
        if state.dirty.contains(name) && !state.shut_down {
            state.queue.push_back(name.to_owned());
            drop(state);
            self.shared.ready.notify_one();
        }
    }

    /// Names waiting now (not counting delayed ones or those in flight).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Whether no name waits now.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether [`Self::shut_down`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.shared.lock().shut_down
    }

    /// Stops handing out names: every pending and future [`Self::get`] returns `None`.
    pub fn shut_down(&self) {
        let mut state = self.shared.lock();
        state.shut_down = true;
        state.queue.clear();
        state.dirty.clear();
        drop(state);
        self.shared.ready.notify_waiters();
    }
}

/// Adapts a tokio receiver to a `Stream` (kept local: one line does not justify a
/// dependency on tokio-stream).
fn tokio_stream_from<T>(mut receiver: mpsc::UnboundedReceiver<T>) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn next(queue: &WorkQueue) -> Option<String> {
        tokio::time::timeout(Duration::from_secs(5), queue.get())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test]
    async fn duplicates_collapse_into_one_reconcile() {
        let queue = WorkQueue::new(Backoff::default());
        queue.add("a");
        queue.add("a");
        queue.add("b");
        assert_eq!(queue.len(), 2);
        assert_eq!(next(&queue).await.as_deref(), Some("a"));
        assert_eq!(next(&queue).await.as_deref(), Some("b"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn a_name_in_flight_is_not_handed_out_twice_but_comes_back_after_done() {
        let queue = WorkQueue::new(Backoff::default());
        queue.add("a");
        let first = next(&queue).await;
        assert_eq!(first.as_deref(), Some("a"));
        queue.add("a");
        assert!(queue.is_empty(), "re-added while in flight must wait");
        queue.done("a");
        assert_eq!(next(&queue).await.as_deref(), Some("a"));
        queue.done("a");
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_add_arrives_after_the_delay() {
        let queue = WorkQueue::new(Backoff::default());
        queue.add_after("a", Duration::from_secs(10));
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(queue.is_empty());
        assert_eq!(next(&queue).await.as_deref(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_until_forgotten() {
        let queue = WorkQueue::new(Backoff {
            base: Duration::from_millis(10),
            max: Duration::from_millis(35),
        });
        assert_eq!(queue.add_rate_limited("a"), Duration::from_millis(10));
        assert_eq!(queue.add_rate_limited("a"), Duration::from_millis(20));
        assert_eq!(queue.add_rate_limited("a"), Duration::from_millis(35));
        assert_eq!(queue.failures("a"), 3);
        queue.forget("a");
        assert_eq!(queue.failures("a"), 0);
        assert_eq!(queue.add_rate_limited("a"), Duration::from_millis(10));
    }

    #[tokio::test]
    async fn shutdown_releases_waiting_workers() {
        let queue = WorkQueue::new(Backoff::default());
        let waiter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        queue.shut_down();
        let got = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        assert!(matches!(got, Ok(Ok(None))));
    }

    #[tokio::test]
    async fn a_drained_burst_gives_its_room_back() {
        let queue = WorkQueue::new(Backoff::default());
        for i in 0..10_000 {
            queue.add(format!("m-{i}"));
        }
        assert!(queue.shared.lock().dirty.capacity() >= 10_000);
        for _ in 0..10_000 {
            let Some(name) = next(&queue).await else {
                panic!("10 000 names were queued");
            };
            queue.done(&name);
        }
        let state = queue.shared.lock();
        assert!(
            state.queue.capacity() <= 64,
            "queue keeps {}",
            state.queue.capacity()
        );
        assert!(
            state.dirty.capacity() <= 64 * 2,
            "dirty keeps {}",
            state.dirty.capacity()
        );
        drop(state);
        queue.add("m-1");
        queue.add("m-1");
        assert_eq!(queue.len(), 1, "still deduplicates after shrinking");
    }

    #[test]
    fn backoff_saturates_instead_of_overflowing() {
        let backoff = Backoff::default();
        assert_eq!(backoff.delay(1), Duration::from_millis(5));
        assert_eq!(backoff.delay(u32::MAX), backoff.max);
    }
}
