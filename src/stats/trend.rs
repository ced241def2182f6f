//! Whether a series drifts: the Theil–Sen slope with Sen's rank-based interval, over a bounded
//! series, and a level's drift over its timeline (TTFT and latency p99, output throughput).
//!
//! # The method, and why
//!
//! A soak's per-interval p99 is noisy and has spikes (a GC pause, a retried request), so the
//! trend is estimated by Theil–Sen: the median of the slopes between every pair of points. It
//! ignores up to 29 % of wild points, needs no normal residuals (OLS's t interval does), and its
//! interval is rank-based (Sen 1968): with `N` pairwise slopes sorted and Kendall's
//! `Var(S) = n(n−1)(2n+5)/18` for `n` points, `C = z_{(1+c)/2}·√Var(S)`, the interval runs from
//! the `(N−C)/2`-th to the `(N+C)/2 + 1`-th smallest slope. What it assumes: independent
//! residuals. Intervals of a long run are correlated (a slow hour is followed by a slow hour),
//! which makes the interval too narrow; hence a drift is also required to be large — the fitted
//! change over the run at least [`DRIFT_MIN_CHANGE`] of the series' median — before it is called
//! one.
//!
//! Memory stays flat: a [`Series`] keeps at most [`SERIES_POINTS`] points, merging neighbours
//! pairwise (weighted means) when full, so a 24-hour soak at one row a second is judged on 512
//! points of ~170 s each; the test costs `N = n(n−1)/2` slopes, ~130,000 at most.

use serde::{Deserialize, Serialize};
use strum::{EnumString, IntoStaticStr, VariantArray, VariantNames};

use super::ci::normal_quantile;
use super::repeat::{median, median_sorted};

/// Points a [`Series`] keeps before merging neighbours.
pub const SERIES_POINTS: usize = 512;
/// Fewest timeline intervals for a drift verdict (a short level's slope per hour extrapolates noise).
pub const DRIFT_MIN_POINTS: usize = 30;
/// The change over the run (slope × span) must reach this share of the median to be a drift.
pub const DRIFT_MIN_CHANGE: f64 = 0.10;
/// Confidence of the drift interval.
pub const DRIFT_CONFIDENCE: f64 = 0.95;

/// A Theil–Sen slope with its interval, in value units per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slope {
    /// The median pairwise slope.
    pub per_s: f64,
    /// Lower end of the interval.
    pub lower: f64,
    /// Upper end of the interval.
    pub upper: f64,
}

impl Slope {
    /// Whether the interval lies wholly above zero.
    pub fn rising(&self) -> bool {
        self.lower > 0.0
    }

    /// Whether the interval lies wholly below zero.
    pub fn falling(&self) -> bool {
        self.upper < 0.0
    }
}

/// The Theil–Sen slope of `(t, v)` points (any order) with Sen's interval at `confidence`;
/// `None` with fewer than three points at distinct times.
pub fn theil_sen(points: &[(f64, f64)], confidence: f64) -> Option<Slope> {
    let mut slopes = Vec::with_capacity(points.len() * points.len().saturating_sub(1) / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            let dt = b.0 - a.0;
            if dt != 0.0 {
                slopes.push((b.1 - a.1) / dt);
            }
        }
    }
    let n = points.len() as f64;
    if points.len() < 3 || slopes.len() < 3 {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let big_n = slopes.len();
    let var_s = n * (n - 1.0) * (2.0 * n + 5.0) / 18.0;
    let c = normal_quantile((1.0 + confidence) / 2.0) * var_s.sqrt();
    // 1-based ranks (N − C)/2 and (N + C)/2 + 1, clamped to the slopes there are.
    let rank = |r: f64| (r.round().max(1.0) as usize).min(big_n) - 1;
    let lower = slopes[rank((big_n as f64 - c) / 2.0)];
    let upper = slopes[rank((big_n as f64 + c) / 2.0 + 1.0)];
    Some(Slope {
        per_s: median_sorted(&slopes),
        lower,
        upper,
    })
}

/// A bounded time series: at most [`SERIES_POINTS`] points, neighbours merged pairwise when full.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// `(t, value, weight)`: weighted means of the points merged into each.
    points: Vec<(f64, f64, f64)>,
    /// Points pushed, before any merging.
    pushed: usize,
}

impl Series {
    /// Adds a point (time in seconds).
    pub fn push(&mut self, t: f64, v: f64) {
        if !(t.is_finite() && v.is_finite()) {
            return;
        }
        self.pushed += 1;
        self.points.push((t, v, 1.0));
        if self.points.len() > SERIES_POINTS {
            self.halve();
        }
    }

    fn halve(&mut self) {
        let merged: Vec<(f64, f64, f64)> = self
            .points
            .chunks(2)
            .map(|c| {
                let w: f64 = c.iter().map(|p| p.2).sum();
                let t = c.iter().map(|p| p.0 * p.2).sum::<f64>() / w;
                let v = c.iter().map(|p| p.1 * p.2).sum::<f64>() / w;
                (t, v, w)
            })
            .collect();
        self.points = merged;
    }

    /// The kept `(t, value)` points.
    pub fn points(&self) -> Vec<(f64, f64)> {
        self.points.iter().map(|p| (p.0, p.1)).collect()
    }

    /// Points pushed (before merging).
    pub fn len(&self) -> usize {
        self.pushed
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// From the first kept point to the last (s).
    pub fn span_s(&self) -> f64 {
        match (self.points.first(), self.points.last()) {
            (Some(a), Some(b)) => b.0 - a.0,
            _ => 0.0,
        }
    }

    /// The median of the kept values.
    pub fn median(&self) -> f64 {
        if self.points.is_empty() {
            return 0.0;
        }
        median(&self.points.iter().map(|p| p.1).collect::<Vec<_>>())
    }
}

/// What a drift line measures; its key in files is its `strum` name, the `--slo` name of the
/// same number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr, EnumString, VariantArray, VariantNames,
)]
pub enum DriftMetric {
    /// Each interval's TTFT p99 (ms).
    #[strum(to_string = "time_to_first_token.p99")]
    TtftP99,
    /// Each interval's request latency p99 (ms).
    #[strum(to_string = "request_latency.p99")]
    LatencyP99,
    /// Each interval's output tokens per second.
    #[strum(to_string = "output_token_throughput")]
    OutputThroughput,
}

crate::names::serde_by_name!(DriftMetric);

impl DriftMetric {
    /// Every drift metric, in report order: the order of declaration.
    pub const ALL: &'static [DriftMetric] = <DriftMetric as strum::VariantArray>::VARIANTS;

    /// The key in files (`time_to_first_token.p99`).
    pub fn key(self) -> &'static str {
        self.into()
    }

    /// Short name for the console (`TTFT p99`).
    pub fn label(self) -> &'static str {
        match self {
            DriftMetric::TtftP99 => "TTFT p99",
            DriftMetric::LatencyP99 => "latency p99",
            DriftMetric::OutputThroughput => "output tok/s",
        }
    }

    /// The unit of its values.
    pub fn unit(self) -> &'static str {
        match self {
            DriftMetric::TtftP99 | DriftMetric::LatencyP99 => "ms",
            DriftMetric::OutputThroughput => "tokens/sec",
        }
    }
}

/// One metric's trend over a level's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DriftLine {
    /// Which series.
    pub metric: DriftMetric,
    /// Intervals with a value.
    pub points: usize,
    /// The series' median (its unit).
    pub median: f64,
    /// Theil–Sen slope, units per hour.
    pub per_hour: f64,
    /// Lower end of its interval, per hour.
    pub lower_per_hour: f64,
    /// Upper end of its interval, per hour.
    pub upper_per_hour: f64,
    /// The slope as a share of the median, per hour (0.05: 5 % of the median each hour).
    pub relative_per_hour: f64,
    /// Whether it drifts: the interval excludes zero and the change over the run reaches
    /// [`DRIFT_MIN_CHANGE`] of the median.
    pub drifts: bool,
}

impl DriftLine {
    /// `TTFT p99 +3.10 ms/h [+2.50, +3.80] (+1.2 %/h): drifts`.
    pub fn line(&self) -> String {
        format!(
            "{} {:+.2} {}/h [{:+.2}, {:+.2}] ({:+.1} %/h): {}",
            self.metric.label(),
            self.per_hour,
            self.metric.unit(),
            self.lower_per_hour,
            self.upper_per_hour,
            self.relative_per_hour * 100.0,
            if self.drifts { "drifts" } else { "steady" }
        )
    }
}

/// A level's drift over its timeline intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Seconds from the first interval's middle to the last's.
    pub span_s: f64,
    /// Confidence of the intervals.
    pub confidence: f64,
    /// Each metric with enough intervals.
    pub metrics: Vec<DriftLine>,
}

impl Drift {
    /// The drift without `m`'s line; `None` when no other metric has one.
    pub fn without(mut self, m: DriftMetric) -> Option<Drift> {
        self.metrics.retain(|l| l.metric != m);
        (!self.metrics.is_empty()).then_some(self)
    }

    /// The line of one metric.
    pub fn get(&self, m: DriftMetric) -> Option<&DriftLine> {
        self.metrics.iter().find(|l| l.metric == m)
    }
}

/// The per-interval series of a level's timeline, one per drift metric.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriftSeries {
    series: [Series; 3],
}

impl DriftSeries {
    /// Adds one interval's values (`None`: the interval had no sample of that metric), the
    /// interval's middle at `t` seconds.
    pub fn push(&mut self, t: f64, values: [Option<f64>; 3]) {
        for (s, v) in self.series.iter_mut().zip(values) {
            if let Some(v) = v {
                s.push(t, v);
            }
        }
    }

    /// The drift verdict, once a metric has [`DRIFT_MIN_POINTS`] intervals.
    pub fn drift(&self) -> Option<Drift> {
        let metrics: Vec<DriftLine> = DriftMetric::ALL
            .iter()
            .zip(&self.series)
            .filter(|(_, s)| s.len() >= DRIFT_MIN_POINTS)
            .filter_map(|(m, s)| line(*m, s))
            .collect();
        let span_s = self.series.iter().map(Series::span_s).fold(0.0, f64::max);
        (!metrics.is_empty()).then_some(Drift {
            span_s,
            confidence: DRIFT_CONFIDENCE,
            metrics,
        })
    }
}

fn line(metric: DriftMetric, s: &Series) -> Option<DriftLine> {
    let slope = theil_sen(&s.points(), DRIFT_CONFIDENCE)?;
    let median = s.median();
    let change = (slope.per_s * s.span_s()).abs();
    let relative = if median.abs() > 0.0 {
        slope.per_s * 3600.0 / median.abs()
    } else {
        0.0
    };
    Some(DriftLine {
        metric,
        points: s.len(),
        median,
        per_hour: slope.per_s * 3600.0,
        lower_per_hour: slope.lower * 3600.0,
        upper_per_hour: slope.upper * 3600.0,
        relative_per_hour: relative,
        drifts: (slope.rising() || slope.falling()) && change >= DRIFT_MIN_CHANGE * median.abs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_metrics_read_back() {
        crate::names::assert_serde_round_trip::<DriftMetric>();
        for &d in DriftMetric::ALL {
            let m = crate::metrics::MetricRef::parse(d.key()).unwrap();
            assert_eq!(
                m.key(),
                d.key(),
                "a drift metric is named as --slo names it"
            );
        }
    }

    #[test]
    fn exact_slope_and_interval_on_a_line_with_outliers() {
        // v = 2t + 1 with two wild points: Theil–Sen keeps the slope.
        let mut pts: Vec<(f64, f64)> = (0..20)
            .map(|t| (f64::from(t), 2.0 * f64::from(t) + 1.0))
            .collect();
        pts[5].1 = 500.0;
        pts[12].1 = -300.0;
        let s = theil_sen(&pts, 0.95).unwrap();
        assert_eq!(s.per_s, 2.0);
        assert!(s.lower <= 2.0 && s.upper >= 2.0 && s.rising(), "{s:?}");
        assert!(theil_sen(&pts[..2], 0.95).is_none());
    }

    /// Sen's interval on a small hand-checked case: 5 points, 10 slopes; at 95 %,
    /// C = 1.96·√(5·4·15/18) = 8.0, ranks (10−8)/2 = 1 and (10+8)/2+1 = 10: the extremes.
    #[test]
    fn sen_interval_ranks() {
        let pts = [(0.0, 0.0), (1.0, 1.0), (2.0, 4.0), (3.0, 5.0), (4.0, 9.0)];
        let s = theil_sen(&pts, 0.95).unwrap();
        // Slopes: 1, 2, 5/3, 9/4, 3, 2, 8/3, 1, 5/2, 4 → sorted 1,1,5/3,2,2,9/4,5/2,8/3,3,4.
        assert_eq!(s.per_s, (2.0 + 2.25) / 2.0);
        assert_eq!((s.lower, s.upper), (1.0, 4.0));
    }

    #[test]
    fn series_stays_bounded_and_keeps_the_trend() {
        let mut s = Series::default();
        for i in 0..10_000 {
            let t = f64::from(i);
            s.push(t, 0.5 * t + if i % 7 == 0 { 40.0 } else { 0.0 });
        }
        assert!(s.points().len() <= SERIES_POINTS);
        assert_eq!(s.len(), 10_000);
        let slope = theil_sen(&s.points(), 0.95).unwrap();
        assert!((slope.per_s - 0.5).abs() < 0.01, "{slope:?}");
    }

    #[test]
    fn drift_lines_steady_and_drifting() {
        let mut d = DriftSeries::default();
        // One hour at 60 s intervals: TTFT p99 rises 100 → 160 ms (60 %/h), latency flat with
        // noise, throughput falls slightly (2 %/h: below the 10 % change rule).
        for i in 0..60 {
            let t = f64::from(i) * 60.0 + 30.0;
            let noise = f64::from((i * 37) % 11) - 5.0;
            d.push(
                t,
                [
                    Some(100.0 + f64::from(i)),
                    Some(500.0 + noise),
                    Some(1000.0 - f64::from(i) / 3.0 + noise / 10.0),
                ],
            );
        }
        let drift = d.drift().unwrap();
        let ttft = drift.get(DriftMetric::TtftP99).unwrap();
        assert!(ttft.drifts);
        assert!((ttft.per_hour - 60.0).abs() < 1e-9, "{ttft:?}");
        assert_eq!(
            ttft.line(),
            "TTFT p99 +60.00 ms/h [+60.00, +60.00] (+46.3 %/h): drifts"
        );
        assert!(!drift.get(DriftMetric::LatencyP99).unwrap().drifts);
        let tput = drift.get(DriftMetric::OutputThroughput).unwrap();
        assert!(tput.per_hour < 0.0 && !tput.drifts, "{tput:?}");
        // Responses that came whole: no TTFT line beside the latency's; nothing left, no drift.
        let whole = drift.clone().without(DriftMetric::TtftP99).unwrap();
        assert_eq!(whole.get(DriftMetric::TtftP99), None);
        assert_eq!(whole.metrics.len(), 2);
        let ttft_only = Drift {
            metrics: vec![*ttft],
            ..drift.clone()
        };
        assert_eq!(ttft_only.without(DriftMetric::TtftP99), None);
        // Too few intervals: no verdict.
        let mut short = DriftSeries::default();
        for i in 0..29 {
            short.push(f64::from(i), [Some(1.0), None, None]);
        }
        assert_eq!(short.drift(), None);
    }
}
