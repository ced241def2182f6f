//! Fault injection for reliability tests: errors, streams cut mid-way, stalls, malformed events,
//! and a server that refuses everything.
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
}

impl FaultConfig {
    /// Checks that every rate is a number in `[0, 1]`.
    pub fn validate(&self) -> anyhow::Result<()> {
        for (name, rate) in [
            ("error_rate", self.error_rate),
            ("cut_rate", self.cut_rate),
            ("stall_rate", self.stall_rate),
            ("malformed_rate", self.malformed_rate),
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
}

impl Faults {
    /// A decider for `cfg`, with the request counter at zero.
    pub(crate) fn new(cfg: FaultConfig) -> Self {
        Faults {
            cfg,
            counter: AtomicU64::new(0),
        }
    }

    /// True when every inference request must be refused.
    pub(crate) fn unavailable(&self) -> bool {
        self.cfg.unavailable
    }

    /// Numbers the next request and returns its faults.
    pub(crate) fn next(&self) -> FaultPlan {
        let i = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        self.plan_for(i)
    }

    /// The faults of request number `i` (1-based).
    pub(crate) fn plan_for(&self, i: u64) -> FaultPlan {
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
