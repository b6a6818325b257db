//! The work queue of the hand-written controllers: what kube-runtime's `applier` does,
//! without its requirement that the name's main object be in a store.
//!
//! Names arrive on a channel (sent by the watches once their stores have the change).
//! kube-runtime's `scheduler` deduplicates them and holds a name that is being reconciled
//! until its reconcile returns; at most `concurrency` reconciles run at once. A failed
//! name is retried after an exponential backoff (5 ms doubling, at most 5 minutes).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::HookError;

/// Reconciles the names sent on `triggers` until `shutdown` resolves, then lets the
/// reconciles in flight finish.
pub(crate) async fn run<F, Fut>(
    mut triggers: mpsc::UnboundedReceiver<String>,
    concurrency: usize,
    shutdown: impl Future<Output = ()>,
    reconcile: F,
) where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<(), HookError>>,
{
    let (retry, mut retries) = mpsc::unbounded_channel::<ScheduleRequest<String>>();
    let now = futures::stream::poll_fn(move |cx| triggers.poll_recv(cx)).map(|name| ScheduleRequest {
        message: name,
        run_at: Instant::now(),
    });
    let later = futures::stream::poll_fn(move |cx| retries.poll_recv(cx));
    let queue = scheduler(futures::stream::select(now, later));
    futures::pin_mut!(queue);
    futures::pin_mut!(shutdown);
    let concurrency = concurrency.max(1);
    let mut running: HashSet<String> = HashSet::new();
    let mut failures: HashMap<String, u32> = HashMap::new();
    let mut in_flight = FuturesUnordered::new();
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some((name, result)) = in_flight.next(), if !in_flight.is_empty() => {
                if let Some(delay) = finished(&mut running, &mut failures, &name, result) {
                    let _ = retry.send(ScheduleRequest { message: name, run_at: Instant::now() + delay });
                }
            }
            Some(name) = futures::future::poll_fn(|cx| {
                queue.as_mut().hold_unless(|name: &String| !running.contains(name)).poll_next_unpin(cx)
            }), if in_flight.len() < concurrency =>
            {
                running.insert(name.clone());
                in_flight.push(reconcile(name.clone()).map(move |result| (name, result)));
            }
            else => break,
        }
    }
    while in_flight.next().await.is_some() {}
}

/// Books a finished reconcile; returns the delay before its retry if it failed.
fn finished(
    running: &mut HashSet<String>,
    failures: &mut HashMap<String, u32>,
    name: &String,
    result: Result<(), HookError>,
) -> Option<Duration> {
    running.remove(name);
    match result {
        Ok(()) => {
            failures.remove(name);
            None
        }
        Err(error) => {
            let count = failures.entry(name.clone()).or_insert(0);
            *count = count.saturating_add(1);
            let delay = backoff(*count);
            tracing::error!(name, %error, ?delay, "reconcile failed; retrying");
            Some(delay)
        }
    }
}

/// The delay before retry number `failures`.
fn backoff(failures: u32) -> Duration {
    let exponent = failures.saturating_sub(1).min(20);
    Duration::from_millis(5)
        .saturating_mul(1 << exponent)
        .min(Duration::from_secs(300))
}
