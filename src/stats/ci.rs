//! How sure a level's numbers are: distribution-free confidence intervals for a percentile from
//! binomial order statistics, Clopper–Pearson intervals for a share (the error rate), and the
//! normal quantile the trend tests use.
//!
//! # A percentile's interval (the method)
//!
//! Take `n` independent samples of a metric and the population's `q`-quantile ξ (the value the
//! level's `p99` estimates, `q = 0.99`). The number `B` of samples at or below ξ is
//! Binomial(`n`, `q`) whatever the metric's distribution, and the `j`-th smallest sample `X(j)`
//! is at or below ξ exactly when `B ≥ j`. So, for 1-based ranks,
//!
//! * `P(X(l) > ξ) = P(B ≤ l−1)`: the lower bound is `X(l)` with `l` the largest rank whose
//!   `P(B ≤ l−1) ≤ α_lo`;
//! * `P(X(u) < ξ) ≤ P(B ≥ u)`: the upper bound is `X(u)` with `u` the smallest rank whose
//!   `P(B ≥ u) ≤ α_hi`;
//!
//! and `[X(l), X(u)]` holds ξ with probability at least `1 − α_lo − α_hi`. Where no rank
//! qualifies the bound is open: an upper bound for p99 at 97.5 % needs `0.99^n ≤ 0.025`, that is
//! `n ≥ 368` samples (GuideLLM's table gives the same counts: ~72 for p95, ~368 for p99, ~3,688
//! for p99.9). The binomial tails are summed exactly (log-space terms from `ln Γ`) over the
//! window of ±12 standard deviations around the mean plus 20, outside which they are below
//! 1e-30. The samples at ranks `l` and `u` are read off the level's HDR histogram like its
//! percentiles: the extremes exactly, others within half a bucket (0.05 %).
//!
//! The assumption is independent samples from one distribution: a level whose server drifts
//! (a queue that grows) breaks it, which is why saturated levels are stopped and labelled
//! (`analysis::saturation`) rather than judged.
//!
//! # A share's interval
//!
//! `x` failures in `n` requests: the Clopper–Pearson interval, `p_hi` solving
//! `P(Bin(n, p_hi) ≤ x) = α_hi` and `p_lo` solving `P(Bin(n, p_lo) ≥ x) = α_lo`, found by
//! bisection on the same exact tails.

/// Both ends of an interval; `None` is an open end (too few samples for that side).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Lower end.
    pub lower: Option<f64>,
    /// Upper end.
    pub upper: Option<f64>,
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine terms: ~15 significant digits).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `ln P(B = k)` for `B ~ Binomial(n, p)`, `0 < p < 1`.
fn ln_pmf(n: u64, k: u64, p: f64) -> f64 {
    let (n, k) = (n as f64, k as f64);
    ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
        + k * p.ln()
        + (n - k) * (-p).ln_1p()
}

/// The ranks outside which a binomial's mass is negligible (below 1e-30).
fn window(n: u64, p: f64) -> (u64, u64) {
    let mean = n as f64 * p;
    let sd = (mean * (1.0 - p)).sqrt();
    let lo = (mean - 12.0 * sd - 20.0).floor().max(0.0) as u64;
    let hi = ((mean + 12.0 * sd + 20.0).ceil() as u64).min(n);
    (lo, hi)
}

/// `P(B ≤ x)` for `B ~ Binomial(n, p)`.
pub fn binomial_cdf(n: u64, p: f64, x: u64) -> f64 {
    if x >= n || p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (lo, hi) = window(n, p);
    if x < lo {
        return 0.0;
    }
    if x >= hi {
        return 1.0 - binomial_sf(n, p, x + 1);
    }
    (lo..=x)
        .map(|k| ln_pmf(n, k, p).exp())
        .sum::<f64>()
        .min(1.0)
}

/// `P(B ≥ x)` for `B ~ Binomial(n, p)`.
pub fn binomial_sf(n: u64, p: f64, x: u64) -> f64 {
    if x == 0 || p >= 1.0 {
        return if x <= n { 1.0 } else { 0.0 };
    }
    if x > n || p <= 0.0 {
        return 0.0;
    }
    let (lo, hi) = window(n, p);
    if x > hi {
        return 0.0;
    }
    if x <= lo {
        return 1.0 - binomial_cdf(n, p, x - 1);
    }
    (x..=hi)
        .map(|k| ln_pmf(n, k, p).exp())
        .sum::<f64>()
        .min(1.0)
}

/// The 1-based ranks of the order statistics bounding the `q`-quantile of `n` samples:
/// `(l, u)` with `P(X(l) > ξ) ≤ alpha_lo` and `P(X(u) < ξ) ≤ alpha_hi`; `None` where no rank
/// qualifies.
pub fn quantile_ranks(n: u64, q: f64, alpha_lo: f64, alpha_hi: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 {
        return (None, None);
    }
    let q = q.clamp(1e-12, 1.0 - 1e-12);
    // l: the largest rank with P(B ≤ l−1) ≤ alpha_lo; the cdf rises with l, so walk up.
    let (lo, hi) = window(n, q);
    let mut lower = None;
    let mut cum = if lo > 0 {
        binomial_cdf(n, q, lo - 1)
    } else {
        0.0
    };
    for k in lo..=hi {
        // Here cum = P(B ≤ k−1): rank k qualifies while it stays within alpha_lo.
        if k >= 1 && cum <= alpha_lo {
            lower = Some(k);
        }
        cum += ln_pmf(n, k, q).exp();
        if cum > alpha_lo {
            break;
        }
    }
    // u: the smallest rank with P(B ≥ u) ≤ alpha_hi; the tail falls as u rises, so walk down.
    let mut upper = None;
    let mut tail = if hi < n {
        binomial_sf(n, q, hi + 1)
    } else {
        0.0
    };
    let mut k = hi;
    loop {
        // Here tail = P(B ≥ k+1): rank k+1 qualifies while it stays within alpha_hi.
        if tail <= alpha_hi && k < n {
            upper = Some(k + 1);
        }
        tail += ln_pmf(n, k, q).exp();
        if tail > alpha_hi || k == 0 || k < lo {
            break;
        }
        k -= 1;
    }
    (lower, upper)
}

/// The Clopper–Pearson interval of a share with `x` hits in `n` trials (both ends closed).
pub fn share_bounds(x: u64, n: u64, alpha_lo: f64, alpha_hi: f64) -> Bounds {
    if n == 0 {
        return Bounds {
            lower: None,
            upper: None,
        };
    }
    // P(B ≤ x) falls as p rises: p_hi is where it reaches alpha_hi.
    let upper = if x >= n {
        1.0
    } else {
        bisect(|p| binomial_cdf(n, p, x) > alpha_hi)
    };
    // P(B ≥ x) rises with p: p_lo is where it reaches alpha_lo.
    let lower = if x == 0 {
        0.0
    } else {
        bisect(|p| binomial_sf(n, p, x) < alpha_lo)
    };
    Bounds {
        lower: Some(lower),
        upper: Some(upper),
    }
}

/// The point in (0, 1) where `below` turns from true to false (60 halvings: exact to 1e-18).
fn bisect(below: impl Fn(f64) -> bool) -> f64 {
    let (mut a, mut b) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let m = (a + b) / 2.0;
        if below(m) {
            a = m;
        } else {
            b = m;
        }
    }
    (a + b) / 2.0
}

/// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut f = 1.0f64;
        for n in 1..30u32 {
            f *= f64::from(n);
            let got = ln_gamma(f64::from(n) + 1.0);
            assert!((got - f.ln()).abs() < 1e-9 * f.ln().max(1.0), "{n}: {got}");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn binomial_tails_match_direct_sums() {
        // n = 10, p = 0.3: P(B ≤ 2) = 0.3827827864, P(B ≥ 8) = 0.0015903864.
        assert!((binomial_cdf(10, 0.3, 2) - 0.382_782_786_4).abs() < 1e-9);
        assert!((binomial_sf(10, 0.3, 8) - 0.001_590_386_4).abs() < 1e-9);
        assert_eq!(binomial_cdf(10, 0.3, 10), 1.0);
        assert_eq!(binomial_sf(10, 0.3, 0), 1.0);
        // Large n stays finite and complementary.
        let (a, b) = (
            binomial_cdf(1_000_000, 0.99, 989_900),
            binomial_sf(1_000_000, 0.99, 989_901),
        );
        assert!((a + b - 1.0).abs() < 1e-9, "{a} {b}");
    }

    /// The samples needed before a percentile has an upper bound at 97.5 % one-sided: GuideLLM's
    /// table (target-MOE stopping guide: ~72 for p95, ~368 for p99, ~3,688 for p99.9).
    #[test]
    fn fewest_samples_for_an_upper_bound() {
        let needed =
            |q: f64| (1..100_000u64).find(|&n| quantile_ranks(n, q, 0.025, 0.025).1.is_some());
        assert_eq!(needed(0.95), Some(72));
        assert_eq!(needed(0.99), Some(368));
        assert_eq!(needed(0.999), Some(3_688));
        // With exactly that many, the bound is the largest sample.
        assert_eq!(quantile_ranks(368, 0.99, 0.025, 0.025).1, Some(368));
    }

    /// The median of 100 samples at 95 %: the textbook ranks 40 and 61.
    #[test]
    fn median_ranks_of_a_hundred() {
        assert_eq!(quantile_ranks(100, 0.5, 0.025, 0.025), (Some(40), Some(61)));
        // Each tail is within 2.5 %, and one rank narrower on either side would not be.
        assert!(binomial_cdf(100, 0.5, 39) <= 0.025 && binomial_cdf(100, 0.5, 40) > 0.025);
        assert!(binomial_sf(100, 0.5, 61) <= 0.025 && binomial_sf(100, 0.5, 60) > 0.025);
    }

    /// Clopper–Pearson: 0 of 100 gives [0, 3.62 %] at 95 % (the "rule of three" is 3 %); 5 of 100
    /// gives [1.64 %, 11.28 %] (R's binom.test).
    #[test]
    fn clopper_pearson_reference_values() {
        let b = share_bounds(0, 100, 0.025, 0.025);
        assert_eq!(b.lower, Some(0.0));
        assert!((b.upper.unwrap() - 0.036_217).abs() < 1e-5, "{b:?}");
        let b = share_bounds(5, 100, 0.025, 0.025);
        assert!((b.lower.unwrap() - 0.016_431).abs() < 1e-5, "{b:?}");
        assert!((b.upper.unwrap() - 0.112_838).abs() < 1e-5, "{b:?}");
        assert_eq!(share_bounds(3, 3, 0.025, 0.025).upper, Some(1.0));
    }

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
        assert!((normal_quantile(0.005) + 2.575_829).abs() < 1e-6);
    }
}
