//! Fault injection for reliability tests: errors, streams cut mid-way, stalls, malformed events,
//! a server that refuses everything, and the server-level faults of [`super::disruption`]
//! (outages, rate limits with `Retry-After`, gRPC stream resets and GOAWAY).
//!
//! Faults are deterministic, not random, so a test can predict exactly which request fails:
//! request number `i` (1-based, counting every inference request that passed validation, on any
//! protocol) is hit by a fault of rate `r` when `floor(i·r) > floor((i−1)·r)`. A rate of 0.25
//! therefore faults requests 4, 8, 12, ...; a rate of 1 faults every request.
//!
//! All fault kinds share the request number. When several apply to one request, an injected error
//! wins (nothing is streamed); otherwise a stall, a malformed event and a cut can combine (the
//! stall delays the first token, the malformed event sits in the middle of what is sent, the cut
//! ends the stream after half of the tokens).
//!
//! Admission faults (rate limited, unavailable, reset) number inference requests on their own
//! counter, as they arrive and before validation, with the same rule; a rate-limited request wins
//! over an unavailable one, which wins over a reset.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which faults to inject, and how often. The default injects nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultConfig {
    /// Share of requests answered with an error before any token (HTTP 500, gRPC stream
    /// `error_message` / `INTERNAL`).
    pub error_rate: f64,
    /// Share of streams cut after half of their tokens, without a final response (HTTP: the
    /// chunked body is aborted; gRPC: the whole call ends with status `ABORTED`).
    pub cut_rate: f64,
    /// Share of requests delayed by `stall_ms` before they reach the engine (so before their
    /// first token).
    pub stall_rate: f64,
    /// Length of a stall in milliseconds.
    pub stall_ms: u64,
    /// Share of streams that carry one malformed event in the middle (SSE: an event whose JSON is
    /// truncated; gRPC: a response whose BYTES length prefix overruns its buffer).
    pub malformed_rate: f64,
    /// Refuse every inference request (HTTP 503, gRPC `UNAVAILABLE`), as a server that is up but
    /// not serving does. Health and metadata keep answering.
    pub unavailable: bool,
    /// When the outage begins, in milliseconds after the server started.
    pub outage_after_ms: u64,
    /// Length of the outage in milliseconds (0 = none): the HTTP and gRPC listeners are closed
    /// (connections are refused) and every open connection on them is reset; then both listen
    /// again on the same ports. Metrics keep answering.
    pub outage_ms: u64,
    /// Share of inference requests refused as rate-limited: HTTP 429 with `Retry-After`, gRPC
    /// `RESOURCE_EXHAUSTED` with `grpc-retry-pushback-ms`.
    pub rate_limit_rate: f64,
    /// Share of inference requests refused as unavailable: HTTP 503 with `Retry-After`, gRPC
    /// `UNAVAILABLE` with `grpc-retry-pushback-ms`.
    pub unavailable_rate: f64,
    /// The wait the two above ask for, in whole seconds (`Retry-After` has no finer unit).
    pub retry_after_s: u64,
    /// Share of gRPC calls reset (HTTP/2 `RST_STREAM`) after their first response message.
    /// HTTP/1.1 has no stream to reset: `cut_rate` is its equivalent.
    pub reset_rate: f64,
    /// Age in milliseconds after which the gRPC server sends `GOAWAY` on each connection and
    /// closes it once its calls are done (0 = never).
    pub goaway_ms: u64,
}

/// What admission does with one inference request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Served normally.
    Pass,
    /// Refused as rate-limited (429 / `RESOURCE_EXHAUSTED`).
    RateLimited,
    /// Refused as unavailable (503 / `UNAVAILABLE`).
    Unavailable,
    /// Served, but its gRPC stream is reset after the first message.
    Reset,
}

impl FaultConfig {
    /// Checks that every rate is a number in `[0, 1]`.
    pub fn validate(&self) -> anyhow::Result<()> {
        for (name, rate) in [
            ("error_rate", self.error_rate),
            ("cut_rate", self.cut_rate),
            ("stall_rate", self.stall_rate),
            ("malformed_rate", self.malformed_rate),
            ("rate_limit_rate", self.rate_limit_rate),
            ("unavailable_rate", self.unavailable_rate),
            ("reset_rate", self.reset_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                anyhow::bail!("fault {name} must be between 0 and 1, got {rate}");
            }
        }
        Ok(())
    }
}

/// What to do to one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FaultPlan {
    /// Answer with an injected error instead of generating.
    pub error: bool,
    /// Cut the stream after half of the tokens.
    pub cut: bool,
    /// Delay before the request enters the engine.
    pub stall: Option<Duration>,
    /// Insert one malformed event in the middle of the stream.
    pub malformed: bool,
}

/// The shared fault decider: one request counter for the whole server.
#[derive(Debug)]
pub(crate) struct Faults {
    cfg: FaultConfig,
    counter: AtomicU64,
    admitted: AtomicU64,
}

impl Faults {
    /// A decider for `cfg`, with the request counter at zero.
    pub(crate) fn new(cfg: FaultConfig) -> Self {
        Faults {
            cfg,
            counter: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// Numbers the next arriving inference request and says whether it is admitted.
    pub(crate) fn admit(&self) -> Admission {
        let c = &self.cfg;
        if c.rate_limit_rate <= 0.0 && c.unavailable_rate <= 0.0 && c.reset_rate <= 0.0 {
            return Admission::Pass;
        }
        let i = self.admitted.fetch_add(1, Ordering::Relaxed) + 1;
        if hits(c.rate_limit_rate, i) {
            Admission::RateLimited
        } else if hits(c.unavailable_rate, i) {
            Admission::Unavailable
        } else if hits(c.reset_rate, i) {
            Admission::Reset
        } else {
            Admission::Pass
        }
    }

    /// True when every inference request must be refused.
    pub(crate) fn unavailable(&self) -> bool {
        self.cfg.unavailable
    }

    /// Numbers the next request and returns its faults.
    pub(crate) fn next(&self) -> FaultPlan {
        let i = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let c = &self.cfg;
        FaultPlan {
            error: hits(c.error_rate, i),
            cut: hits(c.cut_rate, i),
            stall: hits(c.stall_rate, i).then(|| Duration::from_millis(c.stall_ms)),
            malformed: hits(c.malformed_rate, i),
        }
    }
}

/// `floor(i·rate) > floor((i−1)·rate)`. The small epsilon keeps products that are integers in
/// exact arithmetic (0.29 × 100) from landing just below the integer in floating point.
fn hits(rate: f64, i: u64) -> bool {
    if rate <= 0.0 || i == 0 {
        return false;
    }
    const EPS: f64 = 1e-9;
    let now = (i as f64 * rate + EPS).floor();
    let before = ((i - 1) as f64 * rate + EPS).floor();
    now > before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarter_rate_hits_every_fourth_request() {
        let hit: Vec<u64> = (1..=20).filter(|&i| hits(0.25, i)).collect();
        assert_eq!(hit, vec![4, 8, 12, 16, 20]);
    }

    #[test]
    fn rates_give_exact_counts() {
        for (rate, n, expected) in [
            (0.1, 100, 10),
            (0.29, 100, 29),
            (1.0, 7, 7),
            (0.0, 50, 0),
            (0.5, 9, 4),
        ] {
            let count = (1..=n).filter(|&i| hits(rate, i)).count();
            assert_eq!(count, expected, "rate {rate}");
        }
    }

    #[test]
    fn admission_faults_share_one_counter() {
        let f = Faults::new(FaultConfig {
            rate_limit_rate: 0.25,
            unavailable_rate: 0.5,
            reset_rate: 1.0,
            ..FaultConfig::default()
        });
        let got: Vec<Admission> = (0..4).map(|_| f.admit()).collect();
        use Admission::*;
        assert_eq!(got, vec![Reset, Unavailable, Reset, RateLimited]);
        assert_eq!(Faults::new(FaultConfig::default()).admit(), Pass);
    }

    #[test]
    fn plan_combines_kinds() {
        let f = Faults::new(FaultConfig {
            error_rate: 0.5,
            stall_rate: 1.0,
            stall_ms: 7,
            ..FaultConfig::default()
        });
        let p1 = f.next();
        let p2 = f.next();
        assert!(!p1.error && p2.error);
        assert_eq!(p1.stall, Some(Duration::from_millis(7)));
        assert!(
            FaultConfig {
                cut_rate: 1.5,
                ..FaultConfig::default()
            }
            .validate()
            .is_err()
        );
    }
}
