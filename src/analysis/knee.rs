//! Where to stop adding load: the knee of the throughput-versus-latency curve.
//!
//! Levels are ordered by load. The knee is the first level *k* (not the last) such that
//!
//! * no higher level has more than `min_gain` (default [`DEFAULT_MIN_GAIN`], 10 %) more throughput
//!   than *k* — beyond it, extra load buys (almost) no throughput; and
//! * the p99 latency of some higher level exceeds *k*'s by more than the same fraction — beyond
//!   it, extra load only buys latency.
//!
//! Comparing *k* with every higher level rather than only with the next one keeps a single noisy
//! dip from being read as saturation when throughput grows again afterwards.
//!
//! Throughput is output tokens per second (requests per second when no level produced tokens).
//! Latency is TTFT p99 for streamed runs, request latency p99 otherwise. Levels without successful
//! requests are left out.

use serde::Serialize;

use crate::metrics::Metric;
use crate::metrics::{MetricRef, MetricSource, Stat, SystemMetric};
use crate::stats::LevelSummary;

/// Default `--knee-min-gain`: beyond the knee, throughput grows by less than 10 %.
pub const DEFAULT_MIN_GAIN: f64 = 0.10;

/// One level reduced to what the knee needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Load value (concurrency, request rate).
    pub load: f64,
    /// Throughput at that load.
    pub throughput: f64,
    /// p99 latency at that load (ms).
    pub p99: f64,
}

/// What [`find`] concluded about a series of points (sorted by load).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Finding {
    /// The knee is at this index.
    Knee(usize),
    /// Fewer than two points.
    TooFewLevels,
    /// Throughput still grew by more than the fraction beyond every level; `last_gain` is the
    /// growth of the last step.
    StillGrowing {
        /// Relative throughput growth of the last step.
        last_gain: f64,
    },
    /// Throughput saturated after this index, but latency did not rise.
    LatencyFlat(usize),
}

/// Finds the knee of `points` (already sorted by load).
pub fn find(points: &[Point], min_gain: f64) -> Finding {
    if points.len() < 2 {
        return Finding::TooFewLevels;
    }
    let mut flat = None;
    for (k, p) in points[..points.len() - 1].iter().enumerate() {
        let later = &points[k + 1..];
        let max_t = later.iter().map(|q| q.throughput).fold(f64::MIN, f64::max);
        let max_l = later.iter().map(|q| q.p99).fold(f64::MIN, f64::max);
        let saturated = max_t < p.throughput * (1.0 + min_gain);
        if !saturated {
            continue;
        }
        if max_l > p.p99 * (1.0 + min_gain) {
            return Finding::Knee(k);
        }
        flat.get_or_insert(k);
    }
    match flat {
        Some(k) => Finding::LatencyFlat(k),
        None => {
            let n = points.len();
            let (a, b) = (points[n - 2].throughput, points[n - 1].throughput);
            Finding::StillGrowing {
                last_gain: if a > 0.0 { b / a - 1.0 } else { f64::INFINITY },
            }
        }
    }
}

/// The knee found in a sweep, in the units of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Knee {
    /// Level name (`concurrency8`).
    pub level: String,
    /// Load value at the knee.
    pub value: f64,
    /// Throughput at the knee.
    pub throughput: f64,
    /// p99 latency at the knee (ms).
    pub p99_ms: f64,
    /// Largest throughput gain over the knee at any higher level (fraction).
    pub max_gain_beyond: f64,
    /// Largest p99 at any higher level (ms).
    pub max_p99_beyond_ms: f64,
}

/// The knee analysis of a sweep, as written to `summary.json` and the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The fraction used.
    pub min_gain: f64,
    /// Which throughput (`output_token_throughput` or `request_throughput`).
    pub throughput_metric: String,
    /// Which latency (`time_to_first_token.p99` or `request_latency.p99`).
    pub latency_metric: String,
    /// The knee, when there is one.
    pub knee: Option<Knee>,
    /// The conclusion in one sentence.
    pub recommendation: String,
}

impl Analysis {
    /// Adds what explains the knee (the server-side cause: "the vLLM queue takes the extra
    /// load ...") to the recommendation, so the knee is said in one line.
    pub fn explain(&mut self, cause: &str) {
        if self.knee.is_some() {
            self.recommendation.push_str(", as ");
            self.recommendation.push_str(cause);
        }
    }
}

/// Analyses a sweep's levels (any order). `min_gain` is a fraction (0.10 = 10 %).
pub fn analyze(levels: &[LevelSummary], min_gain: f64) -> Analysis {
    let mut sorted: Vec<&LevelSummary> = levels
        .iter()
        .filter(|l| l.stats.request_count > 0)
        .collect();
    sorted.sort_by(|a, b| a.stimulus.value().total_cmp(&b.stimulus.value()));
    let ttft = MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99);
    let request_latency = MetricRef::Dist(Metric::RequestLatency, Stat::P99);
    let streamed = !sorted.is_empty() && sorted.iter().all(|l| l.metric(ttft).is_some());
    let (latency, lat_name) = match streamed {
        true => (ttft, "TTFT p99"),
        false => (request_latency, "request latency p99"),
    };
    let tokens = !sorted.is_empty() && sorted.iter().all(|l| l.stats.output_token_throughput > 0.0);
    use SystemMetric::{OutputTokenThroughput, RequestThroughput};
    let (throughput, tput_label, tput_unit) = match tokens {
        true => (OutputTokenThroughput, "output throughput", "output tok/s"),
        false => (RequestThroughput, "request throughput", "req/s"),
    };
    let with: Vec<(&LevelSummary, Point)> = sorted
        .iter()
        .filter_map(|l| {
            Some((
                *l,
                Point {
                    load: l.stimulus.value(),
                    throughput: l.metric(MetricRef::System(throughput))?,
                    p99: l.metric(latency)?,
                },
            ))
        })
        .collect();
    let points: Vec<Point> = with.iter().map(|(_, p)| *p).collect();
    let kind = with
        .first()
        .map_or("load", |(l, _)| l.stimulus.kind())
        .replace('_', " ");
    let pct = format!("{:.0}%", min_gain * 100.0);
    let mut knee = None;
    // Open loop: a rate the server completes more slowly than it is sent is past the knee
    // whatever the curve looks like: its queue grows for as long as the load lasts.
    let behind = with.iter().position(|(l, _)| falls_behind(l));
    let recommendation = if let Some(j) = behind {
        let (l, _) = with[j];
        let sent = l.validity.achieved_rate.unwrap_or(0.0);
        let lag = format!(
            "at {kind} {} the server completed {:.2} requests/s of the {:.2} sent: its queue grows for as long as the load lasts",
            super::text::load_text(l.stimulus.value()),
            l.stats.request_throughput,
            sent
        );
        if j == 0 {
            format!("no sustainable {kind} in this sweep: {lag}; lower the rates")
        } else {
            let (kl, p) = with[j - 1];
            knee = Some(knee_at(kl, p, &points[j..]));
            format!(
                "knee at {kind} {load}: max sustainable {kind} ≈ {load} {}; {lag}",
                knee_point(kl, &p, lat_name, tput_unit),
                load = super::text::load_text(p.load),
            )
        }
    } else {
        match find(&points, min_gain) {
            Finding::Knee(k) => {
                let (l, p) = with[k];
                let found = knee_at(l, p, &points[k + 1..]);
                let (gain, max_l) = (found.max_gain_beyond, found.max_p99_beyond_ms);
                knee = Some(found);
                format!(
                    "knee at {kind} {load}: max sustainable {kind} ≈ {load} {}; beyond it {tput_label} grows less than {pct} (at most {:+.1}%) while {lat_name} rises to {:.1} ms",
                    knee_point(l, &p, lat_name, tput_unit),
                    gain * 100.0,
                    max_l,
                    load = super::text::load_text(p.load),
                )
            }
            Finding::TooFewLevels if levels.len() <= 1 => {
                "one level: the knee needs a sweep (e.g. --concurrency 1,2,4,8,16,32)".to_string()
            }
            Finding::TooFewLevels => {
                "fewer than two levels with successful requests: no knee".to_string()
            }
            Finding::StillGrowing { last_gain } => {
                let last = points.last().map_or(0.0, |p| p.load);
                format!(
                    "no knee up to {kind} {}: {tput_label} still grew {:+.0}% over the last step; extend the sweep to higher {kind} to find it",
                    super::text::load_text(last),
                    last_gain * 100.0
                )
            }
            Finding::LatencyFlat(k) => format!(
                "no knee: {tput_label} stopped growing after {kind} {} but {lat_name} did not rise by more than {pct}",
                super::text::load_text(points[k].load)
            ),
        }
    };
    Analysis {
        min_gain,
        throughput_metric: throughput.key().to_string(),
        latency_metric: latency.key(),
        knee,
        recommendation,
    }
}

/// The knee level's latency and throughput, `at TTFT p99 ≤ 185.4 ms (676.3 output tok/s)`. A
/// level with too few requests for a p99 has none to state (its table cell says `-`): the
/// curve still places the knee, and the line says how many requests the level had.
fn knee_point(l: &LevelSummary, p: &Point, lat_name: &str, tput_unit: &str) -> String {
    let n = l.stats.request_count;
    if crate::metrics::supports_percentile(n, 99) {
        format!(
            "at {lat_name} ≤ {:.1} ms ({:.1} {tput_unit})",
            p.p99, p.throughput
        )
    } else {
        format!(
            "({:.1} {tput_unit}; its {n} requests are too few for a {lat_name})",
            p.throughput
        )
    }
}

/// The knee at level `l` (point `p`), compared with the levels beyond it.
fn knee_at(l: &LevelSummary, p: Point, later: &[Point]) -> Knee {
    let max_t = later.iter().map(|q| q.throughput).fold(f64::MIN, f64::max);
    Knee {
        level: l.stimulus.name(),
        value: p.load,
        throughput: p.throughput,
        p99_ms: p.p99,
        max_gain_beyond: if p.throughput > 0.0 {
            max_t / p.throughput - 1.0
        } else {
            0.0
        },
        max_p99_beyond_ms: later.iter().map(|q| q.p99).fold(f64::MIN, f64::max),
    }
}

/// An open-loop level whose server completed under 90 % of the requests per second actually
/// sent (not the nominal rate: a Poisson schedule sends more or fewer by chance).
fn falls_behind(l: &LevelSummary) -> bool {
    matches!(l.stimulus, crate::load::Stimulus::RequestRate { .. })
        && l.validity
            .achieved_rate
            .is_some_and(|sent| sent > 0.0 && l.stats.request_throughput < 0.9 * sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::metrics::Stats;
    use crate::stats::LevelStats;

    fn pts(t: &[f64], l: &[f64]) -> Vec<Point> {
        t.iter()
            .zip(l)
            .enumerate()
            .map(|(i, (&throughput, &p99))| Point {
                load: (1u32 << i) as f64,
                throughput,
                p99,
            })
            .collect()
    }

    #[test]
    fn find_table() {
        let cases: &[(&str, &[f64], &[f64], Finding)] = &[
            (
                "the README demo: saturates at 8 batch slots",
                &[223.1, 400.3, 671.2, 981.2, 983.2, 1003.2],
                &[33.0, 60.0, 102.0, 178.0, 993.0, 2617.0],
                Finding::Knee(3),
            ),
            (
                "flat throughput, rising latency: knee at the first level",
                &[100.0, 100.0, 100.0, 100.0],
                &[10.0, 20.0, 40.0, 80.0],
                Finding::Knee(0),
            ),
            (
                "flat throughput and flat latency: no knee",
                &[100.0, 101.0, 99.0, 100.0],
                &[10.0, 10.2, 9.9, 10.1],
                Finding::LatencyFlat(0),
            ),
            (
                "monotone growth: still growing",
                &[100.0, 200.0, 400.0, 800.0],
                &[10.0, 10.0, 11.0, 12.0],
                Finding::StillGrowing { last_gain: 1.0 },
            ),
            (
                "a noisy dip is not the knee when throughput grows again",
                &[100.0, 190.0, 185.0, 350.0, 360.0, 358.0],
                &[10.0, 11.0, 12.0, 13.0, 40.0, 90.0],
                Finding::Knee(3),
            ),
            (
                "overload collapse after the peak",
                &[100.0, 200.0, 300.0, 250.0, 200.0],
                &[10.0, 11.0, 14.0, 80.0, 300.0],
                Finding::Knee(2),
            ),
            (
                "small steady gains add up past the fraction",
                &[1000.0, 1050.0, 1080.0, 1110.0],
                &[10.0, 20.0, 40.0, 80.0],
                Finding::Knee(1),
            ),
            ("single level", &[100.0], &[10.0], Finding::TooFewLevels),
            ("no levels", &[], &[], Finding::TooFewLevels),
        ];
        for (name, t, l, want) in cases {
            assert_eq!(find(&pts(t, l), DEFAULT_MIN_GAIN), *want, "{name}");
        }
        // A looser fraction moves the knee earlier.
        assert_eq!(
            find(
                &pts(&[100.0, 180.0, 250.0, 260.0], &[10.0, 11.0, 20.0, 40.0]),
                0.5
            ),
            Finding::Knee(1)
        );
    }

    fn level(c: u32, tput: f64, ttft_p99: Option<f64>, ok: u64) -> LevelSummary {
        let p99 = |p99| Stats {
            count: 10,
            p99,
            ..Stats::default()
        };
        let mut metrics = vec![(Metric::RequestLatency, p99(1000.0 + f64::from(c)))];
        metrics.extend(ttft_p99.map(|p| (Metric::TimeToFirstToken, p99(p))));
        LevelSummary {
            streaming: ttft_p99.is_some(),
            ..LevelSummary::new(
                Stimulus::Concurrency(c),
                LevelStats {
                    metrics,
                    request_count: ok,
                    duration_s: 1.0,
                    output_token_throughput: tput,
                    total_token_throughput: tput,
                    request_throughput: tput / 100.0,
                    ..Default::default()
                },
            )
        }
    }

    #[test]
    fn analysis_sentences() {
        let levels = [
            level(16, 983.2, Some(993.53), 100),
            level(1, 223.1, Some(33.18), 100),
            level(8, 981.2, Some(178.52), 100),
            level(32, 1003.2, Some(2617.25), 100),
            level(4, 671.2, Some(102.5), 100),
        ];
        let a = analyze(&levels, DEFAULT_MIN_GAIN);
        assert_eq!(a.latency_metric, "time_to_first_token.p99");
        assert_eq!(a.throughput_metric, "output_token_throughput");
        assert_eq!(a.knee.as_ref().unwrap().level, "concurrency8");
        assert_eq!(
            a.recommendation,
            "knee at concurrency 8: max sustainable concurrency ≈ 8 at TTFT p99 ≤ 178.5 ms (981.2 output tok/s); beyond it output throughput grows less than 10% (at most +2.2%) while TTFT p99 rises to 2617.2 ms"
        );
        // A knee level with too few requests for a p99 states none (its table cell says '-').
        let mut short = levels.clone();
        short[2].stats.request_count = 98;
        assert_eq!(
            analyze(&short, DEFAULT_MIN_GAIN).recommendation,
            "knee at concurrency 8: max sustainable concurrency ≈ 8 (981.2 output tok/s; its 98 requests are too few for a TTFT p99); beyond it output throughput grows less than 10% (at most +2.2%) while TTFT p99 rises to 2617.2 ms"
        );
        let a = analyze(&levels[1..2], DEFAULT_MIN_GAIN);
        assert_eq!(
            a.recommendation,
            "one level: the knee needs a sweep (e.g. --concurrency 1,2,4,8,16,32)"
        );
        assert!(a.knee.is_none());
        // Without streaming: request latency; a level with no successful request is left out.
        let a = analyze(
            &[
                level(1, 100.0, None, 10),
                level(2, 200.0, None, 10),
                level(4, 0.0, None, 0),
            ],
            DEFAULT_MIN_GAIN,
        );
        assert_eq!(a.latency_metric, "request_latency.p99");
        assert_eq!(
            a.recommendation,
            "no knee up to concurrency 2: output throughput still grew +100% over the last step; extend the sweep to higher concurrency to find it"
        );
        let a = analyze(
            &[
                level(1, 100.0, Some(10.0), 10),
                level(2, 100.0, Some(10.0), 10),
            ],
            DEFAULT_MIN_GAIN,
        );
        assert_eq!(
            a.recommendation,
            "no knee: output throughput stopped growing after concurrency 1 but TTFT p99 did not rise by more than 10%"
        );
    }

    /// Open loop: the knee is the last rate the server completes as fast as it was sent, even
    /// where output throughput still grew past it (the README's Poisson sweep).
    #[test]
    fn open_loop_knee_is_the_last_rate_kept_up_with() {
        let rate = |r: f64, sent: f64, done: f64, p99: f64| {
            let mut l = level(1, done * 50.0, Some(p99), 100);
            l.stimulus = Stimulus::RequestRate {
                rate: r,
                arrival: crate::load::Arrival::Poisson,
                max_inflight: 1024,
            };
            l.stats.request_throughput = done;
            l.validity.achieved_rate = Some(sent);
            l
        };
        let a = analyze(
            &[
                rate(4.0, 3.46, 3.46, 176.7),
                rate(12.0, 14.09, 10.39, 3353.4),
                rate(24.0, 26.16, 10.55, 14554.2),
            ],
            DEFAULT_MIN_GAIN,
        );
        assert_eq!(a.knee.as_ref().unwrap().level, "request_rate4.0");
        assert_eq!(
            a.recommendation,
            "knee at request rate 4: max sustainable request rate ≈ 4 at TTFT p99 ≤ 176.7 ms (173.0 output tok/s); at request rate 12 the server completed 10.39 requests/s of the 14.09 sent: its queue grows for as long as the load lasts"
        );
        let a = analyze(&[rate(12.0, 14.09, 10.39, 3353.4)], DEFAULT_MIN_GAIN);
        assert!(a.knee.is_none());
        assert!(
            a.recommendation
                .starts_with("no sustainable request rate in this sweep: at request rate 12"),
            "{}",
            a.recommendation
        );
    }
}
