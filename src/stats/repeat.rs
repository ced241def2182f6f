//! Repetitions of one level (`--repeat N`): the median of every statistic across them, its
//! spread, and the level that stands for them all.
//!
//! The TTFT guide's advice for stable numbers is three runs of the same ladder and their median;
//! the median is what the combined level reports. Its spread is given three ways: the smallest
//! and largest repetition, and a 95 % interval of the mean across repetitions (Student's t with
//! n − 1 degrees of freedom: mean ± t·s/√n, s the sample standard deviation). A distribution-free
//! interval of the median needs more repetitions than anyone runs (with 3 the widest one, from
//! the smallest to the largest value, covers only 75 %), so the t interval is the one that says
//! how far the typical value could move with more repetitions; min and max say what was seen.

use serde::Serialize;

use crate::metrics::{MetricRef, MetricSource, Stat, Stats, SystemMetric, Validity};
use crate::stats::{LevelStats, LevelSummary};

/// How one statistic varied across repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Repetitions with a value.
    pub n: usize,
    /// The median of their values (the combined result).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// Lower end of the 95 % interval of the mean (equal to the value with one repetition).
    pub ci95_low: f64,
    /// Upper end of the 95 % interval of the mean.
    pub ci95_high: f64,
}

impl Spread {
    /// The spread of `values` (non-finite ones are left out); `None` when none is finite.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let half = if n > 1 {
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t_975(n - 1) * (var / n as f64).sqrt()
        } else {
            0.0
        };
        Some(Spread {
            n,
            median: median_sorted(&v),
            min: v[0],
            max: v[n - 1],
            ci95_low: mean - half,
            ci95_high: mean + half,
        })
    }

    /// Largest minus smallest as a share of the median (0.14 = the repetitions spread over 14 %
    /// of the typical value); `None` at a zero median.
    pub fn relative_range(&self) -> Option<f64> {
        (self.median != 0.0).then(|| (self.max - self.min) / self.median.abs())
    }
}

/// One number of a level across its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpread {
    /// Which number.
    pub metric: MetricRef,
    /// Its value in each repetition, in order (NaN where a repetition has none).
    pub values: Vec<f64>,
    /// Their spread.
    pub spread: Spread,
}

/// Every number the combined level shows (each statistic of each metric it has, then the
/// level-wide ones) across `reps`, in that order; numbers no repetition has are left out.
pub fn spreads(reps: &[&LevelSummary], combined: &LevelSummary) -> Vec<MetricSpread> {
    let dist = combined
        .shown_metrics()
        .flat_map(|(m, _)| Stat::ALL.iter().map(move |&s| MetricRef::Dist(m, s)));
    let system = SystemMetric::ALL.iter().map(|&s| MetricRef::System(s));
    spreads_of(reps, dist.chain(system))
}

/// `metrics` across `reps` (any level type that answers for its numbers: a profile level, a
/// perf level); numbers no repetition has are left out.
pub fn spreads_of<T: MetricSource>(
    reps: &[&T],
    metrics: impl IntoIterator<Item = MetricRef>,
) -> Vec<MetricSpread> {
    metrics
        .into_iter()
        .filter_map(|metric| {
            let values: Vec<f64> = reps
                .iter()
                .map(|r| r.metric(metric).unwrap_or(f64::NAN))
                .collect();
            let spread = Spread::of(&values)?;
            Some(MetricSpread {
                metric,
                values,
                spread,
            })
        })
        .collect()
}

/// The median of `values` (the mean of the two middle ones for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// [`median`] of values already sorted.
pub fn median_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The 97.5th percentile of Student's t distribution with `df` degrees of freedom (the factor of
/// a two-sided 95 % interval); the normal 1.96 past 30.
pub fn t_975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        d if d <= T.len() => T[d - 1],
        _ => 1.96,
    }
}

/// The level that stands for its repetitions: every statistic of every metric, the throughputs,
/// duration and counts are the median across them. What has no meaningful median — the error
/// list, the input-length buckets, the server's, engine's and GPUs' views — comes from the
/// middle repetition (the one whose request throughput is the median; the lower of the two
/// middle ones for an even count). The combined level is trustworthy only when every repetition
/// was; each untrustworthy one's reasons are kept, prefixed with its number. `reps` must not be
/// empty.
pub fn combined(reps: &[&LevelSummary]) -> LevelSummary {
    let middle = middle_index(reps);
    let mut out = reps[middle].clone();
    out.stats = combined_stats(reps, &reps[middle].stats);
    out.interrupted = reps.iter().any(|r| r.interrupted);
    out.started_unix_ns = reps.iter().map(|r| r.started_unix_ns).min().unwrap_or(0);
    out.ended_unix_ns = reps.iter().map(|r| r.ended_unix_ns).max().unwrap_or(0);
    let all: Vec<&Validity> = reps.iter().map(|r| &r.validity).collect();
    out.validity = combined_validity(&all, &reps[middle].validity);
    out
}

/// Index of the repetition whose request throughput is the median.
fn middle_index(reps: &[&LevelSummary]) -> usize {
    let t: Vec<f64> = reps.iter().map(|r| r.stats.request_throughput).collect();
    median_index(&t)
}

/// Index of the median of `values` (the lower middle one for an even count); 0 when empty.
pub fn median_index(values: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    order
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

fn combined_stats(reps: &[&LevelSummary], middle: &LevelStats) -> LevelStats {
    let med = |f: &dyn Fn(&LevelStats) -> f64| {
        median(&reps.iter().map(|r| f(&r.stats)).collect::<Vec<_>>())
    };
    let med_u64 = |f: &dyn Fn(&LevelStats) -> u64| med(&|s| f(s) as f64).round() as u64;
    let metrics = middle
        .metrics
        .iter()
        .map(|(m, _)| {
            let all: Vec<&Stats> = reps.iter().filter_map(|r| r.stats.get(*m)).collect();
            (*m, median_stats(&all))
        })
        .collect();
    let goodput: Vec<f64> = reps
        .iter()
        .filter_map(|r| r.stats.request_goodput)
        .collect();
    LevelStats {
        metrics,
        request_count: med_u64(&|s| s.request_count),
        error_count: med_u64(&|s| s.error_count),
        warmup_count: med_u64(&|s| s.warmup_count),
        duration_s: med(&|s| s.duration_s),
        output_token_throughput: med(&|s| s.output_token_throughput),
        total_token_throughput: med(&|s| s.total_token_throughput),
        request_throughput: med(&|s| s.request_throughput),
        request_goodput: (!goodput.is_empty()).then(|| median(&goodput)),
        osl_mismatch: med_u64(&|s| s.osl_mismatch),
        osl_compared: med_u64(&|s| s.osl_compared),
        isl_mismatch: med_u64(&|s| s.isl_mismatch),
        isl_compared: med_u64(&|s| s.isl_compared),
        short_outputs: med_u64(&|s| s.short_outputs),
        burst_count: med_u64(&|s| s.burst_count),
        ..middle.clone()
    }
}

/// Field by field, the median of several statistics of one metric.
pub fn median_stats(all: &[&Stats]) -> Stats {
    let count = median(&all.iter().map(|s| s.count as f64).collect::<Vec<_>>());
    Stats::from_fn(count.round() as u64, |stat| {
        median(&all.iter().map(|s| stat.of(s)).collect::<Vec<_>>())
    })
}

/// The validity of a combined level: the middle repetition's figures, trustworthy only when
/// every repetition was, and every repetition's reasons, each said once with the repetitions
/// that gave it.
pub fn combined_validity(reps: &[&Validity], middle: &Validity) -> Validity {
    let mut v = middle.clone();
    v.trustworthy = reps.iter().all(|r| r.trustworthy);
    // The same reason in several repetitions is said once, naming them all.
    let mut grouped: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, r) in reps.iter().enumerate() {
        for why in &r.reasons {
            match grouped.iter_mut().find(|(w, _)| *w == why.as_str()) {
                Some((_, reps)) => reps.push(i + 1),
                None => grouped.push((why, vec![i + 1])),
            }
        }
    }
    v.reasons = grouped
        .into_iter()
        .map(|(why, which)| match which.as_slice() {
            [one] => format!("repetition {one}: {why}"),
            all if all.len() == reps.len() => format!("every repetition: {why}"),
            some => {
                let n: Vec<String> = some.iter().map(usize::to_string).collect();
                format!("repetitions {}: {why}", n.join(", "))
            }
        })
        .collect();
    v
}

/// Resamples drawn by [`change_interval`]: enough for a stable 2.5th/97.5th percentile.
const BOOTSTRAP_RESAMPLES: usize = 4000;

/// A 95 % interval of the change of the median from `base` to `cur` (two sets of repetitions):
/// relative (a fraction of the baseline's median) when `relative`, else absolute. A percentile
/// bootstrap: each side is resampled with replacement, the change of the resamples' medians taken
/// [`BOOTSTRAP_RESAMPLES`] times, and the middle 95 % of those changes kept. With three runs a
/// side it is close to the range from "best current against worst baseline" to the opposite, so
/// it widens with the noise of either side. A side with one run contributes no noise. The seed is
/// fixed: the same files give the same interval. `None` when a side has no finite value (or a
/// relative change from a zero median).
pub fn change_interval(base: &[f64], cur: &[f64], relative: bool) -> Option<(f64, f64)> {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    let finite = |v: &[f64]| -> Vec<f64> { v.iter().copied().filter(|x| x.is_finite()).collect() };
    let (b, c) = (finite(base), finite(cur));
    if b.is_empty() || c.is_empty() {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(0x7474_6674);
    let mut pick = |v: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        buf.extend((0..v.len()).map(|_| v[rng.random_range(0..v.len())]));
        buf.sort_by(f64::total_cmp);
        median_sorted(buf)
    };
    let (mut bb, mut cb) = (Vec::new(), Vec::new());
    let mut changes = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let (mb, mc) = (pick(&b, &mut bb), pick(&c, &mut cb));
        let d = if relative {
            if mb == 0.0 {
                return None;
            }
            (mc - mb) / mb.abs()
        } else {
            mc - mb
        };
        changes.push(d);
    }
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| changes[((changes.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::metrics::Metric;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn spread_of_three() {
        let s = Spread::of(&[12.0, 10.0, 11.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (3, 11.0, 10.0, 12.0));
        // mean 11, s = 1, t(2) = 4.303: 11 ± 4.303/√3.
        let half = 4.303 / 3f64.sqrt();
        assert!(close(s.ci95_low, 11.0 - half) && close(s.ci95_high, 11.0 + half));
        assert!(close(s.relative_range().unwrap(), 2.0 / 11.0));
    }

    #[test]
    fn spread_edge_cases() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[f64::NAN]), None);
        let one = Spread::of(&[5.0, f64::NAN]).unwrap();
        assert_eq!((one.n, one.ci95_low, one.ci95_high), (1, 5.0, 5.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(Spread::of(&[0.0, 0.0]).unwrap().relative_range(), None);
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(2), 4.303);
        assert_eq!(t_975(30), 2.042);
        assert_eq!(t_975(31), 1.96);
        assert!(t_975(0).is_nan());
    }

    #[test]
    fn change_interval_widens_with_noise() {
        // Quiet sides 30 % apart: the whole interval is near +30 %.
        let (lo, hi) =
            change_interval(&[100.0, 101.0, 99.0], &[130.0, 131.0, 129.0], true).unwrap();
        assert!(lo > 0.25 && hi < 0.35, "{lo}..{hi}");
        // Noisy sides: the interval reaches from worst to best pairing.
        let (lo, hi) = change_interval(&[100.0, 85.0, 118.0], &[112.0, 95.0, 125.0], true).unwrap();
        assert!(close(lo, 95.0 / 118.0 - 1.0), "{lo}");
        assert!(close(hi, 125.0 / 85.0 - 1.0), "{hi}");
        // One run a side: no noise to resample, the interval is the point change.
        let (lo, hi) = change_interval(&[10.0], &[12.0], false).unwrap();
        assert_eq!((lo, hi), (2.0, 2.0));
        assert_eq!(change_interval(&[], &[1.0], true), None);
        assert_eq!(change_interval(&[0.0], &[1.0], true), None);
        // Deterministic.
        let a = change_interval(&[1.0, 2.0, 3.0, 4.0], &[2.0, 3.0, 5.0], true);
        assert_eq!(
            a,
            change_interval(&[1.0, 2.0, 3.0, 4.0], &[2.0, 3.0, 5.0], true)
        );
    }

    fn level(ttft: f64, rps: f64, trusted: bool) -> LevelSummary {
        let mut l = crate::stats::test_level(Stimulus::Concurrency(4), ttft);
        l.stats.request_throughput = rps;
        l.validity.trustworthy = trusted;
        if !trusted {
            l.validity.reasons = vec!["send lag".into()];
        }
        l
    }

    #[test]
    fn combined_level_takes_medians_and_every_repetitions_validity() {
        let reps = [
            level(100.0, 9.0, true),
            level(130.0, 10.0, false),
            level(90.0, 8.0, true),
        ];
        let refs: Vec<&LevelSummary> = reps.iter().collect();
        let c = combined(&refs);
        let ttft = c.stats.get(Metric::TimeToFirstToken).unwrap();
        assert_eq!((ttft.avg, ttft.p99), (100.0, 100.0));
        assert_eq!(c.stats.request_throughput, 9.0);
        assert!(!c.validity.trustworthy);
        assert_eq!(
            c.validity.reasons,
            vec!["repetition 2: send lag".to_string()]
        );
        assert_eq!(middle_index(&refs), 0);
        let reps = [
            level(100.0, 9.0, false),
            level(130.0, 10.0, false),
            level(90.0, 8.0, true),
        ];
        let refs: Vec<&LevelSummary> = reps.iter().collect();
        let c = combined(&refs);
        assert_eq!(
            c.validity.reasons,
            vec!["repetitions 1, 2: send lag".to_string()]
        );
        let all: Vec<&LevelSummary> = refs[..2].to_vec();
        assert_eq!(
            combined(&all).validity.reasons,
            vec!["every repetition: send lag".to_string()]
        );
    }
}
