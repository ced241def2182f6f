//! How long a worker waits before its next request after a failure: capped, jittered
//! exponential backoff while the server cannot be reached, and what the server asked for when it
//! rate-limits. Without it a dead server turns every worker into a tight loop that burns the
//! request budget in errors.
//!
//! The rule, per worker: after the `n`-th failure in a row that says the server cannot be reached
//! (connection refused or reset, other connect failures, GOAWAY, HTTP 502/503/504, gRPC
//! `UNAVAILABLE`), wait `d/2 + U(0, d/2)` with `d = min(CAP, BASE·2^(n−1))` ("equal jitter": never
//! less than half the step, so workers spread out but still slow down). A rate-limited answer
//! waits what its `Retry-After` / gRPC pushback said (bounded by the request timeout), or the
//! backoff step when it said nothing. Any other outcome — success, or a failure the server
//! answered (500, malformed event, stream cut) — resets the count and waits nothing.
//!
//! The wait happens between requests, never inside one: a request's send time is taken when it
//! is actually sent, and an open-loop request delayed by it leaves late against its intended
//! time, which its record shows.

use std::time::Duration;

use crate::record::ErrorKind;

/// First backoff step.
pub const BASE: Duration = Duration::from_millis(50);

/// Largest backoff step: also the longest a worker may lag behind a server that came back.
pub const CAP: Duration = Duration::from_secs(1);

/// One worker's backoff state.
#[derive(Debug, Clone)]
pub struct Backoff {
    failures: u32,
    rng: u64,
    /// Longest server-requested wait honoured.
    max_wait: Duration,
}

/// Whether a failure says the server cannot be reached right now.
pub fn unreachable(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ConnectRefused
            | ErrorKind::Connect
            | ErrorKind::ConnectionReset
            | ErrorKind::GoAway
            | ErrorKind::HttpStatus(502..=504)
            | ErrorKind::GrpcStatus(14)
    )
}

impl Backoff {
    /// A worker's backoff; `seed` decorrelates the jitter of workers, `max_wait` bounds a wait
    /// the server asks for.
    pub fn new(seed: u64, max_wait: Duration) -> Backoff {
        Backoff {
            failures: 0,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            max_wait,
        }
    }

    /// The wait before the next request, given how the last one ended (`None` = success) and
    /// the wait the server asked for, if any.
    pub fn after(&mut self, error: Option<ErrorKind>, asked: Option<Duration>) -> Option<Duration> {
        match error {
            Some(ErrorKind::RateLimited) => match asked {
                Some(d) => {
                    self.failures = 0;
                    Some(d.min(self.max_wait))
                }
                None => Some(self.step()),
            },
            Some(k) if unreachable(k) => {
                // A 503 that says when to come back is rate limiting, already handled above.
                Some(self.step())
            }
            _ => {
                self.failures = 0;
                None
            }
        }
    }

    fn step(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let shift = (self.failures - 1).min(16);
        let d = BASE.saturating_mul(1 << shift).min(CAP);
        let half = d / 2;
        half + half.mul_f64(self.unit())
    }

    /// A uniform number in `[0, 1)` (splitmix64: jitter needs no more).
    fn unit(&mut self) -> f64 {
        // `mix` adds the step itself: the same sequence as stepping first, then finalising.
        let z = crate::workload::salt::mix(self.rng);
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_double_up_to_the_cap_with_equal_jitter() {
        let mut b = Backoff::new(1, Duration::from_secs(60));
        let mut full = BASE;
        for _ in 0..10 {
            let w = b.after(Some(ErrorKind::ConnectRefused), None).unwrap();
            assert!(
                w >= full / 2 && w <= full,
                "{w:?} outside [{:?}, {full:?}]",
                full / 2
            );
            full = (full * 2).min(CAP);
        }
        // Success resets the count.
        assert_eq!(b.after(None, None), None);
        let w = b.after(Some(ErrorKind::ConnectionReset), None).unwrap();
        assert!(w <= BASE);
    }

    #[test]
    fn server_errors_do_not_back_off_and_rate_limits_wait_as_told() {
        let mut b = Backoff::new(2, Duration::from_secs(5));
        assert_eq!(b.after(Some(ErrorKind::HttpStatus(500)), None), None);
        assert_eq!(b.after(Some(ErrorKind::StreamCut), None), None);
        assert_eq!(
            b.after(Some(ErrorKind::RateLimited), Some(Duration::from_secs(2))),
            Some(Duration::from_secs(2))
        );
        // Bounded by the longest wait honoured.
        assert_eq!(
            b.after(Some(ErrorKind::RateLimited), Some(Duration::from_secs(90))),
            Some(Duration::from_secs(5))
        );
        // Rate limited without a wait: the backoff step.
        let w = b.after(Some(ErrorKind::RateLimited), None).unwrap();
        assert!(w >= BASE / 2 && w <= BASE);
        assert!(b.after(Some(ErrorKind::GrpcStatus(14)), None).is_some());
    }
}
