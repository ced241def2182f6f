//! Where a sequential test on a count of "bad" samples may decide, at a per-look level
//! calibrated exactly so that looking after every sample errs no more often than its budget.
//!
//! # The test
//!
//! An objective is a statement about the share `p` of samples on its wrong side:
//! `time_to_first_token.p99<=300ms` holds exactly when at most 1 % of first tokens take longer
//! than 300 ms (`p ≤ p0`, `p0 = 0.01`), `error_rate<=1%` when at most 1 % of requests fail.
//! After `n` samples of which `Y` are bad, the test *meets* when `P(Bin(n, p0) ≤ Y) ≤ γ_m` and
//! *fails* when `P(Bin(n, p0) ≥ Y) ≤ γ_f`: `Y` is too small (too large) for a share of `p0` to
//! have produced it except with probability `γ`, the per-look level. [`Boundary`] holds, for
//! every `n` from `first` to `cap`, the most bad samples with which the test meets and the
//! fewest with which it fails.
//!
//! # Why the levels keep the error within the budget
//!
//! A level looked at after every sample and stopped at the first decision may err at any of
//! those looks. But `Y` only grows as samples arrive: its path is a walk with Bernoulli(`p`)
//! steps, and the probability that it *ever* crosses the meets boundary (or the fails one)
//! before `cap` can be computed exactly by carrying the distribution of `Y` over the paths that
//! have not crossed yet, one sample at a time ([`crossing`]). A wrong *meets* needs a true
//! share above `p0`, and a larger share only makes the walk climb faster, away from the meets
//! boundary: the wrong-meets probability is largest as `p` comes down to `p0`. A wrong *fails*
//! needs `p ≤ p0`, and is likeliest at `p = p0`. So both are computed at `p0`, and each side's
//! level is the largest whose crossing probability is within that side's budget (bisection
//! between the one-look level, the budget itself, and the budget split evenly over every look,
//! Bonferroni's, which is always within it). The looks are strongly correlated — consecutive
//! ones share all but one sample — so the calibrated level is several times Bonferroni's.
//!
//! Looking at fewer counts than every one only removes chances to err, and so does stopping a
//! level for another reason (a time cap, another objective): the budget holds for any subset
//! of the looks. Past `cap` the meets boundary stays at `cap`'s (a path that meets there met at
//! `cap` already, since `Y` only grows) and the test no longer fails. States of the walk whose
//! probability falls below 1e-20 are dropped and counted as crossed, so the computed crossing
//! is an upper bound.

/// A side of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Shown to hold: few bad samples.
    Meets,
    /// Shown not to hold: many bad samples.
    Fails,
}

/// A state of the walk below this probability is dropped (and counted as crossed).
const TINY: f64 = 1e-20;

/// Halvings of the level's bracket (in log scale) when calibrating: from Bonferroni's level to
/// the budget, 12 halvings leave the level within 0.3 % of the largest that keeps the budget
/// for up to a million looks.
const HALVINGS: u32 = 12;

/// The test's boundaries for every sample count from `first` to `cap`.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundary {
    /// The share of bad samples at which the objective just holds.
    pub p0: f64,
    /// The first count at which the test may decide.
    pub first: u64,
    /// The last count the boundaries were calibrated for.
    pub cap: u64,
    /// The per-look level of a meets.
    pub meets_level: f64,
    /// The per-look level of a fails.
    pub fails_level: f64,
    /// Most bad samples with which the test meets at `first + i` (−1: none).
    meets_max: Vec<i64>,
    /// Fewest bad samples with which it fails at `first + i` (past the count: none).
    fails_min: Vec<i64>,
}

impl Boundary {
    /// The boundaries of a test whose wrong meets has probability at most `meets_budget` and
    /// wrong fails at most `fails_budget`, each over every look from `first` to `cap`.
    pub fn calibrated(
        p0: f64,
        first: u64,
        cap: u64,
        meets_budget: f64,
        fails_budget: f64,
    ) -> Boundary {
        let first = first.max(1);
        let cap = cap.max(first);
        let meets_level = calibrate(p0, first, cap, meets_budget, Side::Meets);
        let fails_level = calibrate(p0, first, cap, fails_budget, Side::Fails);
        Boundary::at_levels(p0, first, cap, meets_level, fails_level)
    }

    /// The boundaries at given per-look levels, uncalibrated (a simulation compares a rule
    /// that looks again and again at the one-look level with the calibrated one).
    pub fn at_levels(
        p0: f64,
        first: u64,
        cap: u64,
        meets_level: f64,
        fails_level: f64,
    ) -> Boundary {
        let first = first.max(1);
        let cap = cap.max(first);
        Boundary {
            p0,
            first,
            cap,
            meets_level,
            fails_level,
            meets_max: edge(p0, first, cap, meets_level, Side::Meets),
            fails_min: edge(p0, first, cap, fails_level, Side::Fails),
        }
    }

    /// Most bad samples among `n` with which the test meets (`None`: it cannot meet at `n`).
    pub fn meets_at_most(&self, n: u64) -> Option<u64> {
        if n < self.first {
            return None;
        }
        let i = (n.min(self.cap) - self.first) as usize;
        u64::try_from(self.meets_max[i]).ok()
    }

    /// Fewest bad samples among `n` with which the test fails (`None`: it cannot fail at `n`).
    pub fn fails_from(&self, n: u64) -> Option<u64> {
        if n < self.first || n > self.cap {
            return None;
        }
        let r = self.fails_min[(n - self.first) as usize];
        u64::try_from(r).ok().filter(|&r| r <= n)
    }

    /// `Some(true)`: meets with `bad` of `n`; `Some(false)`: fails; `None`: open.
    pub fn decide(&self, n: u64, bad: u64) -> Option<bool> {
        if self.meets_at_most(n).is_some_and(|a| bad <= a) {
            Some(true)
        } else if self.fails_from(n).is_some_and(|r| bad >= r) {
            Some(false)
        } else {
            None
        }
    }

    /// The fewest samples with which the test can meet (none of them bad); `None` within `cap`.
    pub fn fewest_to_meet(&self) -> Option<u64> {
        self.meets_max
            .iter()
            .position(|&a| a >= 0)
            .map(|i| self.first + i as u64)
    }
}

/// The largest per-look level whose crossing probability over every look from `first` to
/// `cap` is within `budget`.
pub fn calibrate(p0: f64, first: u64, cap: u64, budget: f64, side: Side) -> f64 {
    let looks = (cap.saturating_sub(first) + 1) as f64;
    let within =
        |level: f64| crossing(p0, first, &edge(p0, first, cap, level, side), side) <= budget;
    let (mut lo, mut hi) = (budget / looks, budget);
    if within(hi) {
        return hi;
    }
    for _ in 0..HALVINGS {
        let mid = (lo * hi).sqrt();
        if within(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// One side's boundary at `level` for every count from `first` to `cap`: for meets the most bad
/// samples (−1: none), for fails the fewest (`n + 1`: none). The tails are summed over the
/// distribution of Bin(`n`, `p0`), carried from one count to the next (probabilities below
/// 1e-30 dropped, as in [`super::ci::binomial_cdf`]).
pub fn edge(p0: f64, first: u64, cap: u64, level: f64, side: Side) -> Vec<i64> {
    let mut out = Vec::with_capacity((cap - first + 1) as usize);
    let mut pmf = vec![0.0f64; cap as usize + 2];
    pmf[0] = 1.0;
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut b: i64 = match side {
        Side::Meets => -1,
        Side::Fails => 1,
    };
    for n in 1..=cap {
        hi += 1;
        for y in (lo..=hi).rev() {
            let from_below = if y > lo { pmf[y - 1] * p0 } else { 0.0 };
            pmf[y] = pmf[y] * (1.0 - p0) + from_below;
        }
        while lo < hi && pmf[lo] < 1e-30 {
            pmf[lo] = 0.0;
            lo += 1;
        }
        while hi > lo && pmf[hi] < 1e-30 {
            pmf[hi] = 0.0;
            hi -= 1;
        }
        if n < first {
            continue;
        }
        let cdf = |x: i64| -> f64 {
            if x < lo as i64 {
                return 0.0;
            }
            pmf[lo..=(x as usize).min(hi)].iter().sum()
        };
        let sf = |x: i64| -> f64 {
            if x > hi as i64 {
                return 0.0;
            }
            pmf[(x.max(0) as usize).max(lo)..=hi].iter().sum()
        };
        match side {
            // The largest a with P(Bin(n, p0) ≤ a) ≤ level: it never falls as n grows.
            Side::Meets => {
                while b < n as i64 && cdf(b + 1) <= level {
                    b += 1;
                }
            }
            // The smallest r with P(Bin(n, p0) ≥ r) ≤ level: it never falls either.
            Side::Fails => {
                while b <= n as i64 && sf(b) > level {
                    b += 1;
                }
            }
        }
        out.push(b);
    }
    out
}

/// The probability that the count of bad samples, a walk with Bernoulli(`p0`) steps, crosses
/// the boundary `edge` (of [`edge`]'s form, starting at `first`) at some count.
pub fn crossing(p0: f64, first: u64, edge: &[i64], side: Side) -> f64 {
    let cap = first + edge.len() as u64 - 1;
    // Meets: counts above the highest meets boundary can never come back down to it.
    let ceiling = match side {
        Side::Meets => edge.last().copied().unwrap_or(-1),
        Side::Fails => cap as i64,
    };
    if ceiling < 0 {
        return 0.0;
    }
    let mut live = vec![0.0f64; ceiling as usize + 2];
    live[0] = 1.0;
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut crossed = 0.0;
    for n in 1..=cap {
        // One more sample: each live count stays or grows by one.
        // Meets: mass climbing past the ceiling can no longer cross; it leaves the walk.
        if hi < ceiling as usize {
            hi += 1;
        }
        for y in (lo..=hi).rev() {
            let from_below = if y > lo { live[y - 1] * p0 } else { 0.0 };
            live[y] = live[y] * (1.0 - p0) + from_below;
        }
        if n >= first {
            let b = edge[(n - first) as usize];
            match side {
                Side::Meets if b >= lo as i64 => {
                    let top = (b as usize).min(hi);
                    crossed += live[lo..=top].iter().sum::<f64>();
                    live[lo..=top].iter_mut().for_each(|v| *v = 0.0);
                    lo = top + 1;
                }
                Side::Fails if b <= hi as i64 => {
                    let from = (b.max(0) as usize).max(lo);
                    crossed += live[from..=hi].iter().sum::<f64>();
                    live[from..=hi].iter_mut().for_each(|v| *v = 0.0);
                    if from == 0 {
                        return crossed.min(1.0);
                    }
                    hi = from - 1;
                }
                _ => {}
            }
        }
        if lo > hi {
            break;
        }
        while lo < hi && live[lo] < TINY {
            crossed += live[lo];
            live[lo] = 0.0;
            lo += 1;
        }
        while hi > lo && live[hi] < TINY {
            crossed += live[hi];
            live[hi] = 0.0;
            hi -= 1;
        }
    }
    crossed.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crossing by brute force: every path of `n` Bernoulli steps, for small `n`.
    fn brute(p0: f64, first: u64, edge: &[i64], side: Side) -> f64 {
        let cap = first + edge.len() as u64 - 1;
        let mut total = 0.0;
        for path in 0u32..(1 << cap) {
            let mut y = 0i64;
            let mut prob = 1.0;
            let mut hit = false;
            for n in 1..=cap {
                let bad = path >> (n - 1) & 1 == 1;
                y += i64::from(bad);
                prob *= if bad { p0 } else { 1.0 - p0 };
                if n >= first && !hit {
                    let b = edge[(n - first) as usize];
                    hit = match side {
                        Side::Meets => y <= b,
                        Side::Fails => y >= b,
                    };
                }
            }
            if hit {
                total += prob;
            }
        }
        total
    }

    #[test]
    fn crossing_is_exact_on_small_walks() {
        for (p0, first, cap, level) in [(0.3, 3, 12, 0.05), (0.1, 1, 14, 0.2), (0.5, 5, 13, 0.1)] {
            for side in [Side::Meets, Side::Fails] {
                let e = edge(p0, first, cap, level, side);
                let (fast, slow) = (crossing(p0, first, &e, side), brute(p0, first, &e, side));
                assert!(
                    (fast - slow).abs() < 1e-12,
                    "{side:?} {p0}: {fast} vs {slow}"
                );
            }
        }
    }

    #[test]
    fn edges_are_the_binomial_tails() {
        let e = edge(0.01, 20, 1000, 0.01, Side::Meets);
        // No bad sample among n: 0.99^n ≤ 0.01 first at n = 459.
        let first = e.iter().position(|&a| a >= 0).unwrap() as u64 + 20;
        assert_eq!(first, 459);
        assert!(0.99f64.powi(459) <= 0.01 && 0.99f64.powi(458) > 0.01);
        let f = edge(0.01, 20, 1000, 0.01, Side::Fails);
        // 3 bad of 20: P(Bin(20, 0.01) ≥ 3) ≈ 0.001; 2 of 20: ≈ 0.017.
        assert_eq!(f[0], 3);
    }

    #[test]
    fn calibrated_levels_keep_the_budget_and_beat_bonferroni() {
        for p0 in [0.01, 0.1, 0.5] {
            let b = Boundary::calibrated(p0, 20, 1000, 0.025, 0.0125);
            for (side, level, budget) in [
                (Side::Meets, b.meets_level, 0.025),
                (Side::Fails, b.fails_level, 0.0125),
            ] {
                let e = edge(p0, 20, 1000, level, side);
                let c = crossing(p0, 20, &e, side);
                assert!(c <= budget, "{p0} {side:?}: {c}");
                // The looks share almost all their samples: far more than budget / 981.
                assert!(level > budget / 981.0 * 10.0, "{p0} {side:?}: {level}");
            }
        }
        let p99 = Boundary::calibrated(0.01, 20, 1000, 0.025, 0.025);
        // One look would need 0.99^n ≤ 0.025 (n = 368); Bonferroni over 981 looks needs 1054
        // (more than the cap); the calibrated level meets after a few hundred.
        let n = p99.fewest_to_meet().unwrap();
        assert!((368..=470).contains(&n), "{n}");
        assert_eq!(p99.decide(n, 0), Some(true));
        assert_eq!(p99.decide(n - 1, 0), None);
        assert_eq!(p99.decide(20, 20), Some(false));
        assert_eq!(p99.decide(19, 19), None);
        // Past the cap a meets keeps the cap's boundary; a fails is no longer possible.
        assert_eq!(p99.meets_at_most(5000), p99.meets_at_most(1000));
        assert_eq!(p99.fails_from(1001), None);
    }
}
