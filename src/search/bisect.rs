//! Which load to probe next, and how: a full proof or a short scout. Pure: the front end
//! records each outcome and asks again.
//!
//! # Paying for a proof only where it bounds the answer
//!
//! The search assumes that a load no higher than one meeting the objectives meets them too
//! (capacity does not change during the search). Then a proven "meets" at concurrency 8 covers
//! 1 to 7, and a proven "fails" at 9 covers everything above: the answer rests on those two
//! verdicts alone. Proving a load's objectives met is what costs (a p99 needs hundreds of
//! requests), and it costs most at low loads, which finish fewest requests a second; a load
//! well past the capacity fails within a few dozen. So the order avoids proving low loads:
//!
//! * **With `--max`**, the first probe is `--max`, a proof (if it meets, that is the answer).
//!   While nothing below is known to meet, the next probe is a scout at half the lowest load
//!   that did not meet (32, 16, 8 …; failing probes are short), and once one passes, the search
//!   bisects with proofs between the highest load that passed or met and the lowest that did
//!   not, until they are one concurrency step apart or, for a rate, within the resolution (the
//!   geometric middle, to three significant digits, since the bracket spans a doubling).
//! * **Without `--max`**, there is no top to start from, so the search climbs by doubling from
//!   `--min` with *scouts*: probes cut at their first look, which end the climb when they fail
//!   (a proven fail, at the same confidence as any) and otherwise say only that the load did
//!   not fail quickly. The bisection then starts between the highest scouted load and the
//!   failing one.
//!
//! Either way a scouted load is proven only when the bracket comes down to it, and the scouted
//! loads below the answer are covered by its proof and never proven.
//!
//! Every probe is a proof except those scouts. A probe that is undecided or saturated counts as
//! not meeting: the answer is only ever a load proven to meet.

/// How a probe is run (declared with the file that records it).
pub use crate::artifact::search::ProbeKind as Kind;

/// What a probe said, for the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Proven to meet the objectives.
    Meets,
    /// Not meeting them: proven to fail, saturated, or undecided at a proof's cap.
    NotMeets,
    /// A scout that did not fail.
    Passed,
}

/// The search's bracket so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    concurrency: bool,
    min: f64,
    max: f64,
    resolution: f64,
    /// Start at `max` (it was given) rather than climb with scouts.
    start_high: bool,
    /// The highest load proven to meet.
    lo: Option<f64>,
    /// The lowest load that did not meet.
    hi: Option<f64>,
    /// Loads that passed a scout.
    scouted: Vec<f64>,
}

impl Order {
    /// A search from `min` to `max`; `resolution`: the relative width at which a rate search
    /// stops (a concurrency search stops one step apart); `start_high`: `--max` was given.
    pub fn new(concurrency: bool, min: f64, max: f64, resolution: f64, start_high: bool) -> Order {
        Order {
            concurrency,
            min,
            max: max.max(min),
            resolution,
            start_high,
            lo: None,
            hi: None,
            scouted: Vec::new(),
        }
    }

    /// The next load to probe and how; `None` when the search is over.
    pub fn next(&self) -> Option<(f64, Kind)> {
        let Some(hi) = self.hi else {
            return self.upward();
        };
        let above = |l: f64| self.lo.is_none_or(|lo| l > lo);
        let scouted = self
            .scouted
            .iter()
            .copied()
            .filter(|&s| s < hi && above(s))
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
        match (scouted, self.lo) {
            (Some(s), _) if self.closed(s, hi) => Some((s, Kind::Proof)),
            (Some(s), _) => Some((self.between(s, hi), Kind::Proof)),
            (None, Some(lo)) if self.closed(lo, hi) => None,
            (None, Some(lo)) => Some((self.between(lo, hi), Kind::Proof)),
            (None, None) if hi <= self.min => None,
            (None, None) => Some((self.half(hi), Kind::Scout)),
        }
    }

    /// Before any load has failed: `--max` first, or the climb.
    fn upward(&self) -> Option<(f64, Kind)> {
        let top = self
            .scouted
            .iter()
            .copied()
            .chain(self.lo)
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
        if self.lo.is_some_and(|lo| lo >= self.max) {
            return None;
        }
        if self.start_high {
            return Some((self.max, Kind::Proof));
        }
        match top {
            None => Some((self.min, Kind::Scout)),
            Some(t) if t >= self.max => Some((self.max, Kind::Proof)),
            Some(t) => Some(((t * 2.0).min(self.max), Kind::Scout)),
        }
    }

    /// Whether no load to probe lies between `lo` and `hi`.
    fn closed(&self, lo: f64, hi: f64) -> bool {
        if self.concurrency {
            hi - lo <= 1.0
        } else {
            hi <= lo * (1.0 + self.resolution) * (1.0 + 1e-9)
        }
    }

    /// The middle of `(lo, hi)`: arithmetic for concurrency, geometric for a rate.
    fn between(&self, lo: f64, hi: f64) -> f64 {
        if self.concurrency {
            return ((lo + hi) / 2.0).floor();
        }
        let mid = three_digits((lo * hi).sqrt());
        if mid > lo && mid < hi {
            mid
        } else {
            (lo * hi).sqrt()
        }
    }

    /// Half of `hi`, not below `min`.
    fn half(&self, hi: f64) -> f64 {
        let h = if self.concurrency {
            (hi / 2.0).floor()
        } else {
            three_digits(hi / 2.0)
        };
        h.max(self.min).min(hi)
    }

    /// Records a probe's outcome.
    pub fn record(&mut self, load: f64, outcome: Outcome) {
        match outcome {
            Outcome::Meets => self.lo = Some(self.lo.map_or(load, |l| l.max(load))),
            Outcome::NotMeets => self.hi = Some(self.hi.map_or(load, |h| h.min(load))),
            Outcome::Passed => self.scouted.push(load),
        }
    }

    /// The highest load proven to meet the objectives.
    pub fn answer(&self) -> Option<f64> {
        self.lo
    }

    /// The lowest load that did not.
    pub fn next_above(&self) -> Option<f64> {
        self.hi
    }

    /// At most how many more probes the search makes once it has a load that did not meet
    /// (`None` before: the climb's length is unknown).
    pub fn probes_left(&self) -> Option<u32> {
        let hi = self.hi?;
        let lo = self.lo.unwrap_or(self.min);
        let steps = if self.concurrency {
            (hi - lo + 1.0).max(1.0).log2()
        } else {
            ((hi / lo).ln() / self.resolution.ln_1p()).max(1.0).log2()
        };
        let scouted = self.scouted.iter().any(|&s| s < hi) as u32;
        Some(steps.ceil() as u32 + scouted)
    }
}

/// `v` to three significant digits (whole numbers from 100 up), as the nearest float to its
/// short decimal (so a level's name reads `request_rate33.9`).
pub fn three_digits(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return v;
    }
    let decimals = (2 - v.log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}").parse().unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a server that meets the objectives up to a capacity: `meets`
    /// tells a load's truth; a scout passes exactly where a proof would meet.
    fn probes(
        mut o: Order,
        meets: impl Fn(f64) -> bool,
    ) -> (Vec<(f64, Kind)>, Option<f64>, Option<f64>) {
        let mut tried = Vec::new();
        while let Some((load, kind)) = o.next() {
            tried.push((load, kind));
            let outcome = match (meets(load), kind) {
                (true, Kind::Proof) => Outcome::Meets,
                (true, Kind::Scout) => Outcome::Passed,
                (false, _) => Outcome::NotMeets,
            };
            o.record(load, outcome);
            assert!(tried.len() < 100);
        }
        (tried, o.answer(), o.next_above())
    }

    fn loads(tried: &[(f64, Kind)]) -> Vec<f64> {
        tried.iter().map(|t| t.0).collect()
    }

    /// Each probe's kind, in order, as a letter: `P` a proof, `S` a scout.
    fn kinds(tried: &[(f64, Kind)]) -> String {
        let letter = |k: Kind| if k == Kind::Proof { 'P' } else { 'S' };
        tried.iter().map(|t| letter(t.1)).collect()
    }

    #[test]
    fn from_max_scouts_down_then_bisects_with_one_meets_proof() {
        let (tried, answer, next) = probes(Order::new(true, 1.0, 64.0, 1.0, true), |c| c <= 8.0);
        assert_eq!(loads(&tried), [64.0, 32.0, 16.0, 8.0, 12.0, 10.0, 9.0, 8.0]);
        assert_eq!(kinds(&tried), "PSSSPPPP");
        assert_eq!((answer, next), (Some(8.0), Some(9.0)));
        // The scout at 32 is covered by the proof at 40: one meets proof in all.
        let (tried, answer, _) = probes(Order::new(true, 1.0, 64.0, 1.0, true), |c| c <= 40.0);
        assert_eq!(loads(&tried), [64.0, 32.0, 48.0, 40.0, 44.0, 42.0, 41.0]);
        assert_eq!(kinds(&tried), "PSPPPPP");
        assert_eq!(answer, Some(40.0));
    }

    #[test]
    fn climbs_with_scouts_and_proves_only_the_answer() {
        let (tried, answer, next) = probes(Order::new(true, 1.0, 4096.0, 1.0, false), |c| c <= 8.0);
        assert_eq!(
            loads(&tried),
            [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 10.0, 9.0, 8.0]
        );
        assert_eq!(kinds(&tried), "SSSSSPPPP");
        assert_eq!((answer, next), (Some(8.0), Some(9.0)));
        let (tried, answer, _) = probes(Order::new(true, 1.0, 4096.0, 1.0, false), |c| c <= 11.0);
        assert_eq!(loads(&tried), [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 10.0, 11.0]);
        assert_eq!(answer, Some(11.0));
    }

    #[test]
    fn a_scout_whose_proof_fails_moves_the_bracket_down() {
        // Scouts pass up to 8, but only 5 proves to meet.
        let mut o = Order::new(true, 1.0, 4096.0, 1.0, false);
        let mut tried = Vec::new();
        while let Some((load, kind)) = o.next() {
            tried.push(load);
            let outcome = match kind {
                Kind::Scout if load <= 8.0 => Outcome::Passed,
                Kind::Proof if load <= 5.0 => Outcome::Meets,
                _ => Outcome::NotMeets,
            };
            o.record(load, outcome);
        }
        assert_eq!(
            tried,
            [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 10.0, 9.0, 8.0, 6.0, 5.0]
        );
        assert_eq!((o.answer(), o.next_above()), (Some(5.0), Some(6.0)));
    }

    #[test]
    fn ends_at_max_or_when_min_fails() {
        let (tried, answer, next) = probes(Order::new(true, 2.0, 10.0, 1.0, true), |_| true);
        assert_eq!(loads(&tried), [10.0]);
        assert_eq!((answer, next), (Some(10.0), None));
        let (tried, answer, next) = probes(Order::new(true, 2.0, 10.0, 1.0, false), |_| true);
        assert_eq!(loads(&tried), [2.0, 4.0, 8.0, 10.0, 10.0]);
        assert_eq!((answer, next), (Some(10.0), None));
        let (tried, answer, next) = probes(Order::new(true, 2.0, 10.0, 1.0, true), |_| false);
        assert_eq!(loads(&tried), [10.0, 5.0, 2.0]);
        assert_eq!(tried[1].1, Kind::Scout);
        assert_eq!((answer, next), (None, Some(2.0)));
        let (tried, _, next) = probes(Order::new(true, 2.0, 10.0, 1.0, false), |_| false);
        assert_eq!(loads(&tried), [2.0]);
        assert_eq!(next, Some(2.0));
        let (tried, _, _) = probes(Order::new(true, 3.0, 3.0, 1.0, true), |_| true);
        assert_eq!(loads(&tried), [3.0]);
    }

    #[test]
    fn rates_bisect_geometrically_to_the_resolution() {
        let (tried, answer, next) =
            probes(Order::new(false, 16.0, 1e5, 0.05, false), |r| r <= 40.0);
        assert_eq!(loads(&tried), [16.0, 32.0, 64.0, 45.3, 38.1, 41.5, 39.8]);
        let (a, n) = (answer.unwrap(), next.unwrap());
        assert!(a <= 40.0 && n > 40.0 && n <= a * 1.05 + 1e-9, "{a} {n}");
        let (tried, answer, next) = probes(Order::new(false, 1.0, 64.0, 0.05, true), |r| r <= 40.0);
        assert_eq!(tried[0], (64.0, Kind::Proof));
        let (a, n) = (answer.unwrap(), next.unwrap());
        assert!(a <= 40.0 && n > 40.0 && n <= a * 1.05 + 1e-9, "{a} {n}");
    }

    #[test]
    fn probes_left_bounds_the_bisection() {
        let mut o = Order::new(true, 1.0, 64.0, 1.0, true);
        assert_eq!(o.probes_left(), None);
        o.record(64.0, Outcome::NotMeets);
        // 64 candidates (1 to 64 exclusive of 64, and none): at most 6 more probes.
        assert_eq!(o.probes_left(), Some(6));
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(three_digits(33.941_125), 33.9);
        assert_eq!(three_digits(1234.6), 1235.0);
        assert_eq!(three_digits(0.012_345), 0.0123);
        assert_eq!(format!("{:?}", three_digits(45.254_834)), "45.3");
    }
}
