//! Is the server still absorbing the load? Signals read while a level runs under the
//! sequential rule (`engine::Policy::Sequential`), each a pure function of what the engine has
//! seen so far; the first that fires ends the level, which is labelled saturated with that signal.
//!
//! * `latency_rising` — TTFT (request latency without streaming), binned by send time, trends
//!   up: the Theil–Sen slope's 99 % interval lies above zero and the fitted rise over the level
//!   is at least half of where it started. A queue that grows without bound does exactly this.
//! * `queue_growing` — the server's own queue gauge (the engine's waiting requests, or Triton's
//!   pending ones), sampled every 500 ms, trends up by the same rule and at least doubles.
//! * `in_flight_growing` — open loop: requests sent but not finished trend up by the same rule
//!   and at least double: arrivals outpace completions.
//! * `rate_not_kept` — open loop: the latest requests left [`LATE_SEND_MS`] or more after their
//!   scheduled time (median): every in-flight slot is taken, so the asked rate is not reached.
//!
//! None fires before [`MIN_SECONDS`] of measurement or with fewer than [`MIN_POINTS`] points:
//! a level's first moments (connections opening, a burst of admissions) are not a trend. The
//! engine reads the signals before it judges a look: an open-loop level above capacity meets a
//! lax objective with its first requests, before the queue has grown, and must not be settled
//! on them.

use serde::Serialize;

use crate::stats::trend::theil_sen;

/// Seconds of measurement before any signal may fire.
pub const MIN_SECONDS: f64 = 0.5;
/// Points a trend needs.
pub const MIN_POINTS: usize = 8;
/// Confidence of the trend intervals.
pub const TREND_CONFIDENCE: f64 = 0.99;
/// A latency trend must rise by at least this share of where it started.
pub const MIN_RISE: f64 = 0.5;
/// A count (queue, in flight) must at least multiply by this.
pub const MIN_GROWTH: f64 = 2.0;
/// Median send lag that means the open-loop rate is not kept (ms).
pub const LATE_SEND_MS: f64 = 250.0;

/// Which signal fired, with the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "signal")]
pub enum Signal {
    /// TTFT (or latency) trending up inside the level.
    LatencyRising {
        /// `time_to_first_token` or `request_latency`.
        metric: &'static str,
        /// Its level near the start (ms).
        from_ms: f64,
        /// The fitted value at the latest point (ms).
        to_ms: f64,
    },
    /// The server's queue gauge growing.
    QueueGrowing {
        /// Near the start.
        from: f64,
        /// Latest.
        to: f64,
    },
    /// Open loop: requests in flight growing.
    InFlightGrowing {
        /// Near the start.
        from: f64,
        /// Latest.
        to: f64,
    },
    /// Open loop: sends leave late.
    RateNotKept {
        /// Median lateness of the latest sends (ms).
        late_ms: f64,
    },
}

impl Signal {
    /// What fired, in words.
    pub fn line(&self) -> String {
        match self {
            Signal::LatencyRising {
                metric,
                from_ms,
                to_ms,
            } => format!(
                "{} trending up inside the level ({from_ms:.1} ms → {to_ms:.1} ms)",
                if *metric == "time_to_first_token" {
                    "TTFT"
                } else {
                    "request latency"
                }
            ),
            Signal::QueueGrowing { from, to } => {
                format!("the server's queue growing without bound ({from:.0} → {to:.0} waiting)")
            }
            Signal::InFlightGrowing { from, to } => format!(
                "requests in flight growing without bound ({from:.0} → {to:.0}): arrivals outpace completions"
            ),
            Signal::RateNotKept { late_ms } => format!(
                "the asked rate is not kept: sends leave {late_ms:.0} ms late (every in-flight slot is taken)"
            ),
        }
    }
}

/// What the engine has seen of a level so far.
#[derive(Debug, Clone, Default)]
pub struct Seen<'a> {
    /// Seconds since the measurement started.
    pub elapsed_s: f64,
    /// `(send time s, ms)` means of successive bins of successful requests.
    pub latency: &'a [(f64, f64)],
    /// Whether `latency` is TTFT (else request latency).
    pub ttft: bool,
    /// `(s, waiting requests)` samples of the server's queue gauge.
    pub queue: &'a [(f64, f64)],
    /// Open loop: `(s, requests in flight)` at each window.
    pub in_flight: &'a [(f64, f64)],
    /// Open loop: the median send lag of the latest window (ms).
    pub late_ms: Option<f64>,
}

/// The first signal that fires, if any.
pub fn check(s: &Seen<'_>) -> Option<Signal> {
    if s.elapsed_s < MIN_SECONDS {
        return None;
    }
    if let Some(late_ms) = s.late_ms.filter(|&l| l >= LATE_SEND_MS) {
        return Some(Signal::RateNotKept { late_ms });
    }
    if let Some((from_ms, to_ms)) = rising(s.latency, MIN_RISE + 1.0, 0.0) {
        return Some(Signal::LatencyRising {
            metric: if s.ttft {
                "time_to_first_token"
            } else {
                "request_latency"
            },
            from_ms,
            to_ms,
        });
    }
    if let Some((from, to)) = rising(s.queue, MIN_GROWTH, 1.0) {
        return Some(Signal::QueueGrowing { from, to });
    }
    if let Some((from, to)) = rising(s.in_flight, MIN_GROWTH, 1.0) {
        return Some(Signal::InFlightGrowing { from, to });
    }
    None
}

/// `(start, fitted end)` when `points` trend up significantly and the fitted end is at least
/// `factor` times the start (the median of the first quarter, at least `floor`).
fn rising(points: &[(f64, f64)], factor: f64, floor: f64) -> Option<(f64, f64)> {
    if points.len() < MIN_POINTS {
        return None;
    }
    let slope = theil_sen(points, TREND_CONFIDENCE)?;
    if !slope.rising() {
        return None;
    }
    let quarter = (points.len() / 4).max(2);
    let mut head: Vec<f64> = points[..quarter].iter().map(|p| p.1).collect();
    head.sort_by(f64::total_cmp);
    let start = head[head.len() / 2].max(floor);
    let t0 = points[..quarter].iter().map(|p| p.0).sum::<f64>() / quarter as f64;
    let t1 = points.last().map_or(t0, |p| p.0);
    let end = start + slope.per_s * (t1 - t0);
    (end >= factor * start && end > start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (0..n)
            .map(|i| (i as f64 * 0.5, f(i as f64 * 0.5)))
            .collect()
    }

    #[test]
    fn a_growing_queue_fires_a_steady_one_does_not() {
        let steady = line(20, |t| 10.0 + (t * 7.0).sin());
        let growing = line(20, |t| 10.0 + 8.0 * t);
        let seen = |latency, elapsed_s| Seen {
            elapsed_s,
            latency,
            ttft: true,
            ..Seen::default()
        };
        assert_eq!(check(&seen(&steady, 10.0)), None);
        let fired = check(&seen(&growing, 10.0)).unwrap();
        assert_eq!(
            fired.line(),
            "TTFT trending up inside the level (18.0 ms → 86.0 ms)"
        );
        // Too early, or too few points: nothing yet.
        assert_eq!(check(&seen(&growing, 0.4)), None);
        assert_eq!(check(&seen(&growing[..6], 10.0)), None);
        // A small significant rise is not saturation.
        let creeping = line(40, |t| 100.0 + t);
        assert_eq!(check(&seen(&creeping, 30.0)), None);
    }

    #[test]
    fn open_loop_signals() {
        let inflight = line(12, |t| 2.0 + 3.0 * t);
        let s = Seen {
            elapsed_s: 6.0,
            in_flight: &inflight,
            ..Seen::default()
        };
        assert!(matches!(check(&s), Some(Signal::InFlightGrowing { .. })));
        let late = Seen {
            elapsed_s: 3.0,
            late_ms: Some(400.0),
            ..Seen::default()
        };
        assert_eq!(
            check(&late).unwrap().line(),
            "the asked rate is not kept: sends leave 400 ms late (every in-flight slot is taken)"
        );
        let queue = line(10, |t| 4.0 * t);
        let q = Seen {
            elapsed_s: 5.0,
            queue: &queue,
            ..Seen::default()
        };
        assert!(matches!(check(&q), Some(Signal::QueueGrowing { .. })));
    }
}
