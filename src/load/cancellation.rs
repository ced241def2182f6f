//! Which requests the client gives up on, and when: `--request-cancellation-rate P
//! --request-cancellation-delay D` (AIPerf's flags and meaning).
//!
//! A chosen request is sent in full; `D` after its send the client drops the exchange, which
//! closes the HTTP/1.1 connection or resets the HTTP/2 / gRPC stream, as a user closing a tab
//! would. A response that completes before `D` is a normal request. The choice is a hash of the
//! run seed and the request's number in the whole run, not a random draw, so reruns with one
//! `--random-seed` cancel the same requests and a test can say exactly which ones. A shard's
//! requests are numbered in the whole run ([`super::Shard::whole_seq`]: shard `I` of `N` has
//! every `N`-th number from `I`), not from 0 on each shard: shards that all numbered from 0 would
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

#[cfg(test)]
mod tests {
    use super::*;

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
