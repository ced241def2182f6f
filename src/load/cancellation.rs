//! Which requests the client gives up on, and when: `--request-cancellation-rate P
//! --request-cancellation-delay D` (AIPerf's flags and meaning).
//!
//! A chosen request is sent in full; `D` after its send the client drops the exchange, which
//! closes the HTTP/1.1 connection or resets the HTTP/2 / gRPC stream, as a user closing a tab
//! would. A response the client has read to its end before `D` is a normal request
//! ([`give_up_after`]: by the client's clock, also after a stall of its own). The choice is a
//! hash of the run seed and the request's number in the whole run, not a random draw, so reruns
//! with one `--random-seed` cancel the same requests and a test can say exactly which ones. A
//! shard's requests are numbered in the whole run ([`super::Shard::whole_seq`]: shard `I` of `N`
//! has every `N`-th number from `I`), not from 0 on each shard: shards that all numbered from 0 would
//! cancel the same local numbers in step, and the union of N shards would cancel N times one
//! shard's draw — the right share on average, but with one shard's spread and not the requests
//! one process would cancel. With whole-run numbers the union cancels what one process would
//! whenever the shards' requests are the whole run's: an open-loop schedule (the pacer gives
//! shard `I` the whole schedule's arrivals `I`, `I+N`, ... — the same numbers), and
//! `--request-count` split over N shards that all have workers. Where they are not (a
//! concurrency smaller than N leaves shards idle, a duration-bound level ends at different
//! counts) the shards' numbers are still disjoint, so the union's share is P drawn over all its
//! requests.

use std::time::Duration;

/// The cancellation part of a plan: a share of requests and the delay after their send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cancellation {
    /// Threshold on the 64-bit hash: a request is chosen when its hash is below it.
    threshold: u64,
    /// Chosen requests are dropped this long after their send.
    pub delay: Duration,
    seed: u64,
}

impl Cancellation {
    /// Cancels `share` (0.0–1.0) of the requests `delay` after their send; `None` when no request
    /// would be (share 0), so the hot path has nothing to check.
    pub fn new(share: f64, delay: Duration, seed: u64) -> Option<Cancellation> {
        if share <= 0.0 {
            return None;
        }
        // 2^64 · share, saturating: share 1.0 chooses every hash.
        let threshold = if share >= 1.0 {
            u64::MAX
        } else {
            (share * 18_446_744_073_709_551_616.0) as u64
        };
        Some(Cancellation {
            threshold,
            delay,
            seed,
        })
    }

    /// Whether request `seq` is one of those cancelled.
    #[inline]
    pub fn chosen(&self, seq: u64) -> bool {
        let h = crate::workload::salt::mix(self.seed ^ seq.wrapping_mul(0xd1b5_4a32_d192_ed03));
        self.threshold == u64::MAX || h < self.threshold
    }

    /// The delay for request `seq`, when it is one of those cancelled.
    #[inline]
    pub fn delay_for(&self, seq: u64) -> Option<Duration> {
        self.chosen(seq).then_some(self.delay)
    }
}

/// Runs `exchange` until `delay` has passed on the client's clock; `None` when it gave up first.
///
/// The first poll goes to the exchange, so the request is written even with a zero delay. Every
/// later poll looks at the clock before the exchange: when the client was held up (its process not
/// scheduled, its event loop stalled) past the deadline, the end of the response may be waiting in
/// the socket by the time it runs again, and an exchange polled first would read it and count as a
/// normal request whose recorded latency is beyond the delay, the opposite of what was asked.
/// (`tokio::time::timeout` polls its future first; on a host that paused the client for a second
/// it let every chosen request through.) An exchange that ends after the deadline within one poll
/// (the client held up between its write and its read) is given up too. Checked this way, a chosen
/// request is either cancelled or read to its end within `delay` by the client's own clock.
pub async fn give_up_after<F: std::future::Future>(
    delay: Duration,
    exchange: F,
) -> Option<F::Output> {
    let deadline = tokio::time::Instant::now() + delay;
    let timer = tokio::time::sleep_until(deadline);
    let mut exchange = std::pin::pin!(exchange);
    let mut timer = std::pin::pin!(timer);
    let mut first = true;
    std::future::poll_fn(|cx| {
        if !std::mem::take(&mut first) && tokio::time::Instant::now() >= deadline {
            return std::task::Poll::Ready(None);
        }
        if let std::task::Poll::Ready(out) = exchange.as_mut().poll(cx) {
            // Held up inside this poll (after the write, before the read) the client read the
            // response's end after the deadline: given up as well, though the server finished.
            let in_time = tokio::time::Instant::now() < deadline;
            return std::task::Poll::Ready(in_time.then_some(out));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Poll, Waker};

    /// A response that is complete once `done` is set, as bytes waiting in a socket are.
    fn response(done: Arc<AtomicBool>) -> impl Future<Output = &'static str> {
        std::future::poll_fn(move |_| {
            if done.load(Ordering::SeqCst) {
                Poll::Ready("complete")
            } else {
                Poll::Pending
            }
        })
    }

    /// An exchange under `give_up_after(delay)` polled once (its request sent), its response not
    /// yet complete; the flag completes it, and the closure polls it again.
    fn sent(delay: Duration) -> (Arc<AtomicBool>, impl FnMut() -> Poll<Option<&'static str>>) {
        let done = Arc::new(AtomicBool::new(false));
        let mut fut = Box::pin(give_up_after(delay, response(done.clone())));
        let mut poll = move || fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert!(poll().is_pending());
        (done, poll)
    }

    #[tokio::test]
    async fn a_client_held_past_the_deadline_gives_up_though_the_response_is_waiting() {
        let (done, mut poll) = sent(Duration::from_millis(5));
        // The client stalls; meanwhile the whole response arrives.
        std::thread::sleep(Duration::from_millis(20));
        done.store(true, Ordering::SeqCst);
        assert_eq!(poll(), Poll::Ready(None));
    }

    #[tokio::test]
    async fn a_response_read_in_time_is_kept_and_a_zero_delay_still_writes() {
        let (done, mut poll) = sent(Duration::from_secs(60));
        done.store(true, Ordering::SeqCst);
        assert_eq!(poll(), Poll::Ready(Some("complete")));
        // The first poll is the exchange's: with a zero delay the request is still written.
        let mut wrote = false;
        let ready = give_up_after(Duration::ZERO, async { wrote = true }).await;
        assert!(wrote && ready.is_none());
        // Held up inside the poll that read the response's end: given up too.
        let late = give_up_after(Duration::from_millis(5), async {
            std::thread::sleep(Duration::from_millis(20));
        });
        assert_eq!(late.await, None);
        let never = give_up_after(Duration::from_millis(1), std::future::pending::<()>()).await;
        assert_eq!(never, None);
    }

    #[test]
    fn zero_share_is_off_and_full_share_takes_all() {
        assert_eq!(Cancellation::new(0.0, Duration::ZERO, 1), None);
        let all = Cancellation::new(1.0, Duration::ZERO, 1).unwrap();
        assert!((0..1000).all(|s| all.chosen(s)));
    }

    #[test]
    fn the_share_is_close_and_the_choice_repeats_with_the_seed() {
        let c = Cancellation::new(0.3, Duration::from_millis(5), 42).unwrap();
        let n = (0..100_000).filter(|&s| c.chosen(s)).count();
        assert!((29_000..31_000).contains(&n), "{n}");
        let again = Cancellation::new(0.3, Duration::from_millis(5), 42).unwrap();
        assert!((0..1000).all(|s| c.chosen(s) == again.chosen(s)));
        let other = Cancellation::new(0.3, Duration::from_millis(5), 43).unwrap();
        assert!((0..1000).any(|s| c.chosen(s) != other.chosen(s)));
        assert_eq!(c.delay_for(0).is_some(), c.chosen(0));
    }
}
