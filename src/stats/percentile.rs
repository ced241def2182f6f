//! Which value a percentile is: the two methods other tools use, read off an HDR histogram at the
//! ranks each method names.
//!
//! * [`PercentileMethod::Linear`], numpy's default and so GenAI-Perf's, vLLM bench's and
//!   AIPerf's: for `n` sorted samples `x[0..n]` and quantile `q`, the position `h = (n−1)·q`
//!   falls between ranks `k = ⌊h⌋` and `k+1`; the percentile is `x[k] + (h−k)·(x[k+1]−x[k])`.
//! * [`PercentileMethod::NearestRank`], perf_analyzer's: the sample at rank `⌊(n−1)·q + 0.5⌋`.
//!
//! Both only ever return a sample or a point between two samples, so a percentile lies within
//! `[min, max]`. The samples themselves are not kept (memory would grow with the request count):
//! the value at a rank is read from the histogram bucket holding that rank, as the middle of the
//! bucket's range narrowed to `[min, max]` (both exact). Values below 2048 (token counts) are
//! exact; larger ones are within half a bucket, 1/2048 of the value (0.05 %).

use hdrhistogram::Histogram;

use crate::metrics::PercentileMethod;

/// The ranks (0-based, in `n` sorted samples) that make percentile `p` (0–100) by `method`, with
/// the weight of the upper one. `n` must be at least 1.
fn ranks(method: PercentileMethod, n: u64, p: f64) -> (u64, u64, f64) {
    let last = n - 1;
    let q = (p / 100.0).clamp(0.0, 1.0);
    match method {
        PercentileMethod::Linear => {
            let h = last as f64 * q;
            let k = (h.floor() as u64).min(last);
            (k, (k + 1).min(last), h - k as f64)
        }
        PercentileMethod::NearestRank => {
            // perf_analyzer: `index = (p / 100) * (n - 1) + 0.5`, truncated.
            let k = ((p / 100.0) * last as f64 + 0.5).max(0.0) as u64;
            (k.min(last), k.min(last), 0.0)
        }
    }
}

/// The percentiles `ps` (each 0–100) of the samples in `hist`, whose exact smallest and largest
/// samples are `min` and `max` (stored unit). One pass over the recorded buckets.
pub(crate) fn percentiles<const N: usize>(
    hist: &Histogram<u64>,
    min: u64,
    max: u64,
    ps: [f64; N],
    method: PercentileMethod,
) -> [f64; N] {
    let n = hist.len();
    if n == 0 {
        return [0.0; N];
    }
    let spans = ps.map(|p| ranks(method, n, p));
    let mut wanted: Vec<u64> = spans.iter().flat_map(|&(lo, hi, _)| [lo, hi]).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let values = values_at_ranks(hist, min, max, &wanted);
    let at = |rank: u64| values[wanted.binary_search(&rank).unwrap_or(0)];
    spans.map(|(lo, hi, w)| {
        let (a, b) = (at(lo), at(hi));
        // `a + (b − a)·w` with 0 ≤ w < 1 and a ≤ b stays in [a, b]; the bounds only guard the
        // last bit of rounding. max-then-min, not `clamp`: extremes read from a damaged file may
        // be out of order, and that must not panic.
        (a + (b - a) * w).max(min as f64).min(max as f64)
    })
}

/// The value at each of `ranks` (sorted, distinct, each below the sample count). The first and
/// last ranks are the exact min and max; others are read from their bucket.
pub(crate) fn values_at_ranks(
    hist: &Histogram<u64>,
    min: u64,
    max: u64,
    ranks: &[u64],
) -> Vec<f64> {
    let last = hist.len() - 1;
    let mut out = Vec::with_capacity(ranks.len());
    let mut wanted = ranks.iter().copied().peekable();
    // Samples in the buckets passed so far: ranks below it lie in a passed bucket.
    let mut seen = 0u64;
    for bucket in hist.iter_recorded() {
        seen += bucket.count_at_value();
        let top = bucket.value_iterated_to();
        while let Some(&rank) = wanted.peek()
            && rank < seen
        {
            out.push(match rank {
                0 => min as f64,
                r if r == last => max as f64,
                _ => bucket_value(hist, top, min, max),
            });
            wanted.next();
        }
        if wanted.peek().is_none() {
            break;
        }
    }
    // A histogram whose count disagrees with its buckets (never written so) ends at the max.
    out.resize(ranks.len(), max as f64);
    out
}

/// The best single value for a sample known to lie in the bucket whose highest value is `top`:
/// the middle of the bucket's range, narrowed to the exact `[min, max]`.
fn bucket_value(hist: &Histogram<u64>, top: u64, min: u64, max: u64) -> f64 {
    let lo = hist.lowest_equivalent(top).max(min);
    let hi = top.min(max).max(lo);
    (lo as f64 + hi as f64) / 2.0
}

#[cfg(test)]
#[rustfmt::skip]
mod numpy_cases;

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(samples: &[u64]) -> (Histogram<u64>, u64, u64) {
        let mut h = Histogram::new(crate::stats::SIGFIG).unwrap();
        h.auto(true);
        for &s in samples {
            h.record(s).unwrap();
        }
        let min = samples.iter().copied().min().unwrap_or(0);
        let max = samples.iter().copied().max().unwrap_or(0);
        (h, min, max)
    }

    /// The exact percentile on sorted samples, for comparing with the histogram's.
    fn exact(sorted: &[u64], p: f64, method: PercentileMethod) -> f64 {
        let (lo, hi, w) = ranks(method, sorted.len() as u64, p);
        let (a, b) = (sorted[lo as usize] as f64, sorted[hi as usize] as f64);
        a + (b - a) * w
    }

    #[test]
    fn ranks_by_method() {
        use PercentileMethod::*;
        // n = 18, p90: h = 15.3 → x[15] + 0.3·(x[16] − x[15]); perf_analyzer: x[⌊15.8⌋] = x[15].
        let (k, k1, w) = ranks(Linear, 18, 90.0);
        assert_eq!((k, k1), (15, 16));
        assert!((w - 0.3).abs() < 1e-9);
        assert_eq!(ranks(NearestRank, 18, 90.0), (15, 15, 0.0));
        assert_eq!(ranks(NearestRank, 18, 99.0), (17, 17, 0.0));
        assert_eq!(ranks(NearestRank, 10, 50.0), (5, 5, 0.0));
        // One sample: every percentile is it.
        assert_eq!(ranks(Linear, 1, 99.0), (0, 0, 0.0));
        assert_eq!(ranks(Linear, 5, 100.0), (4, 4, 0.0));
        assert_eq!(ranks(Linear, 5, 0.0), (0, 1, 0.0));
    }

    #[test]
    fn small_values_are_exact() {
        // Token counts: below 2048 every bucket is one value wide.
        let samples = [3u64, 7, 7, 9, 100, 1500, 2000];
        let (h, min, max) = hist(&samples);
        for method in [PercentileMethod::Linear, PercentileMethod::NearestRank] {
            let got = percentiles(&h, min, max, [1.0, 25.0, 50.0, 90.0, 99.0, 99.9], method);
            for (p, g) in [1.0, 25.0, 50.0, 90.0, 99.0, 99.9].iter().zip(got) {
                assert_eq!(g, exact(&samples, *p, method), "{method} p{p}");
            }
        }
    }

    /// The README's row: p99 read as the top of the max's bucket was 28.93 ms > max 28.92 ms.
    #[test]
    fn never_above_max_or_below_min() {
        let samples = [27_100_000u64, 28_050_000, 28_921_337];
        let (h, min, max) = hist(&samples);
        let got = percentiles(
            &h,
            min,
            max,
            [0.0, 1.0, 99.0, 99.9, 100.0],
            Default::default(),
        );
        assert_eq!(got[0], min as f64);
        assert_eq!(got[4], max as f64);
        assert!(
            got.iter().all(|v| *v >= min as f64 && *v <= max as f64),
            "{got:?}"
        );
        // The old reading (HDR's value at quantile) was the top of the bucket.
        assert!(h.value_at_quantile(0.99) > max);
    }

    /// splitmix64: the generator `scripts/percentiles/numpy_cases.py` uses, integers only.
    fn splitmix(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// The script's sample kinds (same ids, same formulas).
    fn generated(kind: u64, n: usize) -> Vec<u64> {
        let mut d = splitmix(kind * 1_000_003 + n as u64);
        (0..n)
            .map(|_| match kind {
                0 => {
                    let m = 1 + d() % 9999;
                    m * 10u64.pow((d() % 6) as u32)
                }
                1 => 1_000_000 * (1 + d() % 5),
                2 => 20_000_000 + d() % 50_000_000,
                3 => 30_000_000 + (d() % 1000).pow(3) * 3,
                _ => 1 + d() % 300,
            })
            .collect()
    }

    /// Ours against numpy (linear) and perf_analyzer's rule (nearest rank): within half a
    /// histogram bucket, exact below 2048, and exact at the ends.
    fn check_case(name: &str, samples: &[u64], linear: [f64; 10], nearest: [f64; 10]) {
        let (h, min, max) = hist(samples);
        for (method, want) in [
            (PercentileMethod::Linear, linear),
            (PercentileMethod::NearestRank, nearest),
        ] {
            let got = percentiles(&h, min, max, numpy_cases::PERCENTS, method);
            for ((p, g), w) in numpy_cases::PERCENTS.iter().zip(got).zip(want) {
                let tol = if max < 2048 { 1e-9 } else { w / 2048.0 };
                assert!(
                    (g - w).abs() <= tol,
                    "{name} (n = {}) {method} p{p}: ttftbench {g}, reference {w}",
                    samples.len()
                );
            }
        }
    }

    #[test]
    fn generated_samples_match_numpy() {
        for &(kind, name, n, linear, nearest) in numpy_cases::GENERATED {
            check_case(name, &generated(kind, n), linear, nearest);
        }
    }

    #[test]
    fn recorded_samples_match_numpy() {
        for &(name, samples, linear, nearest) in numpy_cases::RECORDED {
            check_case(name, samples, linear, nearest);
        }
        // The old reading (HDR's value at quantile 0.99: the top of the bucket of the
        // ⌈0.99·n⌉-th sample) was above the maximum on these samples.
        let (_, samples, _, _) = numpy_cases::RECORDED[0];
        let (h, _, max) = hist(samples);
        assert!(h.value_at_quantile(0.99) > max);
    }

    /// Property: over many random sample sets, of every size and spread, no percentile of either
    /// method leaves [min, max], percentiles do not decrease with p, and each is within half a
    /// bucket (1/2048) of the exact value on the sorted samples.
    #[test]
    fn random_samples_stay_in_range_and_near_exact() {
        let mut next = splitmix(0x5eed);
        let ps = [
            0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0,
        ];
        for case in 0..400 {
            let n = 1 + (next() % if case % 4 == 0 { 2000 } else { 40 }) as usize;
            let decades = next() % 10;
            let mut samples: Vec<u64> = (0..n)
                .map(|_| (1 + next() % 9999) * 10u64.pow((next() % (decades + 1)) as u32))
                .collect();
            let (h, min, max) = hist(&samples);
            samples.sort_unstable();
            for method in [PercentileMethod::Linear, PercentileMethod::NearestRank] {
                let got = percentiles(&h, min, max, ps, method);
                for (i, (&p, &g)) in ps.iter().zip(&got).enumerate() {
                    assert!(
                        g >= min as f64 && g <= max as f64,
                        "case {case} {method} p{p}: {g} outside [{min}, {max}]"
                    );
                    assert!(
                        i == 0 || g >= got[i - 1],
                        "case {case} {method}: not monotone"
                    );
                    let want = exact(&samples, p, method);
                    assert!(
                        (g - want).abs() <= want / 2048.0 + 0.5,
                        "case {case} {method} p{p}: {g} vs exact {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn empty_histogram_gives_zeros() {
        let (h, _, _) = hist(&[]);
        assert_eq!(
            percentiles(&h, 0, 0, [50.0, 99.0], Default::default()),
            [0.0, 0.0]
        );
    }

    #[test]
    fn method_names_round_trip() {
        for m in [PercentileMethod::Linear, PercentileMethod::NearestRank] {
            let v = serde_json::to_value(m).unwrap();
            assert_eq!(v, m.key());
            assert_eq!(serde_json::from_value::<PercentileMethod>(v).unwrap(), m);
        }
    }
}
