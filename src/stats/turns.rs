//! TTFT and input length by turn of multi-turn sessions: a session's later turns carry its
//! history, so their input grows while a prefix cache should keep their TTFT from growing as
//! fast. Bounded memory: one TTFT histogram per turn index up to [`MAX_TURNS`], the last
//! bucket holding every later turn.

use serde::Serialize;

use super::Dist;
use crate::metrics::{Metric, PercentileMethod, Stats, per_request_value};
use crate::record::RequestRecord;

/// Turn indexes kept apart; turn `MAX_TURNS - 1` and later share the last bucket.
pub const MAX_TURNS: usize = 16;

/// One turn index's numbers for a level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnStats {
    /// The turn (0-based).
    pub turn: u32,
    /// This bucket also holds every later turn (it is the last one kept apart).
    pub and_later: bool,
    /// Measured successful requests of this turn.
    pub count: u64,
    /// Their time to first token (ms), when they had one (streamed responses).
    pub ttft: Option<Stats>,
    /// Their average input length (tokens): the history plus the new user message.
    pub isl_avg: f64,
    /// Of that, the prompt tokens the server found in its prefix cache, on average over the
    /// requests it said so for (llama.cpp's `timings.cache_n`); `None` when it never did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_avg: Option<f64>,
}

impl TurnStats {
    /// The turn as tables show it: `0`, `1`, ..., `>=15` for the last, shared bucket.
    pub fn label(&self) -> String {
        if self.and_later {
            format!(">={}", self.turn)
        } else {
            self.turn.to_string()
        }
    }
}

/// One turn index's accumulators.
#[derive(Clone, Debug, Default)]
struct Bucket {
    ttft: Dist,
    count: u64,
    sum_isl: u64,
    /// Requests with the server's cached-token count, and those counts added up.
    cached: (u64, u64),
}

/// The per-turn distributions of one aggregate; empty (and allocation-free) for runs without
/// sessions.
#[derive(Clone, Debug, Default)]
pub struct TurnDists {
    buckets: Vec<Bucket>,
}

impl TurnDists {
    /// Accounts a measured, successful request (nothing for one outside a session).
    #[inline]
    pub fn record(&mut self, rec: &RequestRecord) {
        let Some(c) = rec.conversation else {
            return;
        };
        let i = (c.turn as usize).min(MAX_TURNS - 1);
        if self.buckets.len() <= i {
            self.buckets.resize_with(i + 1, Bucket::default);
        }
        let b = &mut self.buckets[i];
        b.count += 1;
        b.sum_isl += u64::from(rec.isl);
        if let Some(v) = per_request_value(Metric::TimeToFirstToken, rec) {
            b.ttft.record(v);
        }
        if let Some(v) = per_request_value(Metric::CachedPromptTokens, rec) {
            b.cached.0 += 1;
            b.cached.1 += v;
        }
    }

    /// Adds another aggregate's turns.
    pub fn merge(&mut self, other: &TurnDists) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets
                .resize_with(other.buckets.len(), Bucket::default);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            a.ttft.merge(&b.ttft);
            a.count += b.count;
            a.sum_isl += b.sum_isl;
            a.cached.0 += b.cached.0;
            a.cached.1 += b.cached.1;
        }
    }

    /// Every turn's numbers (ms), turns without requests included so tables keep their rows.
    pub fn summarize(&self, method: PercentileMethod) -> Vec<TurnStats> {
        self.buckets
            .iter()
            .enumerate()
            .map(|(i, b)| TurnStats {
                turn: i as u32,
                and_later: i == MAX_TURNS - 1,
                count: b.count,
                ttft: (b.ttft.count() > 0).then(|| b.ttft.stats_by(1e-6, method)),
                // `sum_isl` grows only with `count`: 0 without requests.
                isl_avg: b.sum_isl as f64 / b.count.max(1) as f64,
                cached_avg: (b.cached.0 > 0).then(|| b.cached.1 as f64 / b.cached.0 as f64),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Turn;

    fn rec(turn: Option<u32>, isl: u32, ttft_ms: u64) -> RequestRecord {
        let mut r = crate::stats::test_record(ttft_ms, ttft_ms + 5, 10);
        r.isl = isl;
        r.conversation = turn.map(|turn| Turn { session: 0, turn });
        r
    }

    #[test]
    fn turns_are_kept_apart_up_to_the_cap() {
        let mut d = TurnDists::default();
        d.record(&rec(None, 5, 1));
        assert!(
            d.summarize(PercentileMethod::Linear).is_empty(),
            "no session"
        );
        for (turn, isl, ttft) in [(0, 100, 10), (0, 100, 20), (2, 300, 30), (40, 9000, 50)] {
            d.record(&rec(Some(turn), isl, ttft));
        }
        let mut other = TurnDists::default();
        other.record(&rec(Some(MAX_TURNS as u32 - 1), 1000, 70));
        d.merge(&other);
        let s = d.summarize(PercentileMethod::Linear);
        assert_eq!(s.len(), MAX_TURNS);
        let row = |t: &TurnStats| {
            (
                t.label(),
                t.count,
                t.ttft.as_ref().map(|s| s.avg),
                t.isl_avg,
            )
        };
        assert_eq!(row(&s[0]), ("0".into(), 2, Some(15.0), 100.0));
        assert_eq!(row(&s[1]), ("1".into(), 0, None, 0.0));
        assert_eq!(row(&s[2]), ("2".into(), 1, Some(30.0), 300.0));
        assert_eq!(row(&s[15]), (">=15".into(), 2, Some(60.0), 5000.0));
        assert_eq!(s[0].cached_avg, None, "no server timings, no cached count");
    }

    #[test]
    fn cached_tokens_by_turn_average_over_the_requests_that_report_them() {
        let mut d = TurnDists::default();
        for (turn, cached) in [(1, Some(96)), (1, Some(32)), (1, None), (2, None)] {
            let mut r = rec(Some(turn), 200, 10);
            r.server_timings = cached.map(|c| crate::record::ServerTimings {
                cached_tokens: c,
                ..Default::default()
            });
            d.record(&r);
        }
        let s = d.summarize(PercentileMethod::Linear);
        assert_eq!(s[1].cached_avg, Some(64.0));
        assert_eq!(s[2].cached_avg, None);
    }
}
