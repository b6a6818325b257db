//! The workers: each takes a name from the queue, dispatches it, and hands the result
//! back to the queue (forget, requeue after a delay, or retry with backoff).

use std::sync::Arc;
use std::time::Instant;

use tokio::task::JoinSet;

use crate::engine::dispatch::Dispatch;
use crate::engine::observe::Observer;
use crate::hooks::context::SyncContext;
use crate::hooks::outcome::{ErrorKind, HookResult};
use crate::pair::SyncPair;
use crate::runtime::queue::WorkQueue;

/// Runs `concurrency` workers until the queue is shut down and drained of in-flight names.
pub(crate) async fn run<P: SyncPair, D: Dispatch<P>>(
    controller: &'static str,
    concurrency: usize,
    queue: &WorkQueue,
    ctx: &Arc<SyncContext<P>>,
    dispatch: &Arc<D>,
    observer: Option<&Arc<dyn crate::engine::observe::Observer>>,
) {
    let mut workers = JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (queue, ctx, dispatch, observer) =
            (queue.clone(), ctx.clone(), dispatch.clone(), observer.cloned());
        workers.spawn(
            async move { work(controller, &queue, &ctx, dispatch.as_ref(), observer.as_deref()).await },
        );
    }
    while workers.join_next().await.is_some() {}
}

/// One worker's loop.
async fn work<P: SyncPair, D: Dispatch<P>>(
    controller: &'static str,
    queue: &WorkQueue,
    ctx: &SyncContext<P>,
    dispatch: &D,
    observer: Option<&dyn Observer>,
) {
    while let Some(name) = queue.get().await {
        let started = Instant::now();
        let (outcome, result) = dispatch.dispatch(ctx, &name).await;
        let elapsed = started.elapsed();
        requeue(controller, queue, &name, result);
        if let Some(observer) = observer {
            observer.reconciled(controller, &name, &outcome, elapsed);
        }
        queue.done(&name);
    }
}

/// What the queue does with `name` after its reconcile returned `result`.
fn requeue(controller: &str, queue: &WorkQueue, name: &str, result: HookResult) {
    let error = match result {
        Ok(action) => {
            queue.forget(name);
            if let Some(delay) = action.requeue_after() {
                queue.add_after(name.to_owned(), delay);
            }
            return;
        }
        Err(error) => error,
    };
    match ErrorKind::of(error.as_ref()) {
        ErrorKind::Terminal => {
            queue.forget(name);
            tracing::error!(
                controller, name, error = %error,
                "reconcile failed; not retrying until the objects change"
            );
        }
        ErrorKind::RetryAfter(delay) => {
            queue.forget(name);
            queue.add_after(name.to_owned(), delay);
            tracing::warn!(controller, name, error = %error, "reconcile failed; retrying");
        }
        ErrorKind::StaleRead => {
            let retry_in = queue.add_rate_limited(name);
            tracing::debug!(
                controller, name, error = %error, ?retry_in,
                "read stale data; retrying with backoff"
            );
        }
        ErrorKind::Failure => {
            let retry_in = queue.add_rate_limited(name);
            tracing::error!(
                controller, name, error = %error, ?retry_in,
                "reconcile failed; retrying with backoff"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::hooks::outcome::{Action, HookError, RetryAfter, Terminal};
    use crate::runtime::queue::Backoff;

    fn queue() -> WorkQueue {
        WorkQueue::new(Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(60),
        })
    }

    /// The name handed out by the queue within `within` (paused time), if any.
    async fn next_within(queue: &WorkQueue, within: Duration) -> Option<String> {
        tokio::time::timeout(within, queue.get()).await.ok().flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn a_terminal_error_is_forgotten_and_not_retried() {
        let queue = queue();
        queue.add_rate_limited("a");
        assert_eq!(
            next_within(&queue, Duration::from_secs(2)).await.as_deref(),
            Some("a")
        );
        requeue(
            "machine-sync",
            &queue,
            "a",
            Err(Terminal::error("the spec cannot be converted")),
        );
        queue.done("a");
        assert_eq!(queue.failures("a"), 0, "its backoff is reset");
        assert_eq!(
            next_within(&queue, Duration::from_secs(3600)).await,
            None,
            "nothing retries it"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_comes_back_after_its_delay_not_the_backoff() {
        let queue = queue();
        for _ in 0..5 {
            queue.add_rate_limited("a");
        }
        assert_eq!(
            next_within(&queue, Duration::from_secs(60)).await.as_deref(),
            Some("a")
        );
        queue.done("a");
        let error = RetryAfter::error(Duration::from_secs(30), "the bootstrap secret is not there yet");
        requeue("machine-sync", &queue, "a", Err(error));
        assert_eq!(queue.failures("a"), 0);
        assert_eq!(next_within(&queue, Duration::from_secs(29)).await, None);
        assert_eq!(
            next_within(&queue, Duration::from_secs(2)).await.as_deref(),
            Some("a")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_plain_error_backs_off_and_success_forgets_it() {
        let queue = queue();
        let failure: HookError = "boom".into();
        requeue("machine-sync", &queue, "a", Err(failure));
        assert_eq!(queue.failures("a"), 1);
        assert_eq!(
            next_within(&queue, Duration::from_secs(2)).await.as_deref(),
            Some("a")
        );
        queue.done("a");
        requeue(
            "machine-sync",
            &queue,
            "a",
            Ok(Action::requeue(Duration::from_secs(10))),
        );
        assert_eq!(queue.failures("a"), 0);
        assert_eq!(
            next_within(&queue, Duration::from_secs(11)).await.as_deref(),
            Some("a")
        );
    }
}
