//! Which load to probe next: double from `--min` until a load does not meet the objectives (or
//! `--max` does), then bisect between the highest load that met them and the lowest that did
//! not, until they are one concurrency step apart or, for a rate, within the resolution (the
//! geometric middle, to three significant digits, since the bracket spans a doubling). A probe
//! that is undecided or saturated counts as not meeting: the answer is only ever a load shown to
//! meet them. Pure: the front end records each verdict and asks again.

/// The search's bracket so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Bisection {
    concurrency: bool,
    min: f64,
    max: f64,
    resolution: f64,
    /// The highest load that met the objectives.
    lo: Option<f64>,
    /// The lowest load that did not.
    hi: Option<f64>,
}

impl Bisection {
    /// A search from `min` to `max`; `resolution`: the relative width at which a rate search
    /// stops (a concurrency search stops one step apart).
    pub fn new(concurrency: bool, min: f64, max: f64, resolution: f64) -> Bisection {
        Bisection {
            concurrency,
            min,
            max: max.max(min),
            resolution,
            lo: None,
            hi: None,
        }
    }

    /// The next load to probe; `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        match (self.lo, self.hi) {
            (None, None) => Some(self.min),
            (None, Some(_)) => None,
            (Some(lo), None) if lo >= self.max => None,
            (Some(lo), None) => Some((lo * 2.0).min(self.max)),
            (Some(lo), Some(hi)) => self.between(lo, hi),
        }
    }

    fn between(&self, lo: f64, hi: f64) -> Option<f64> {
        if self.concurrency {
            return (hi - lo > 1.0).then(|| ((lo + hi) / 2.0).floor());
        }
        if hi <= lo * (1.0 + self.resolution) * (1.0 + 1e-9) {
            return None;
        }
        let mid = three_digits((lo * hi).sqrt());
        Some(if mid > lo && mid < hi {
            mid
        } else {
            (lo * hi).sqrt()
        })
    }

    /// Records a probe's verdict.
    pub fn record(&mut self, load: f64, meets: bool) {
        if meets {
            self.lo = Some(self.lo.map_or(load, |l| l.max(load)));
        } else {
            self.hi = Some(self.hi.map_or(load, |h| h.min(load)));
        }
    }

    /// The highest load that met the objectives.
    pub fn answer(&self) -> Option<f64> {
        self.lo
    }

    /// The lowest load above the answer that did not.
    pub fn next_above(&self) -> Option<f64> {
        self.hi
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

    /// Runs a search against a server whose capacity is `cap`: loads up to it meet.
    fn probes(
        mut b: Bisection,
        meets: impl Fn(f64) -> bool,
    ) -> (Vec<f64>, Option<f64>, Option<f64>) {
        let mut tried = Vec::new();
        while let Some(load) = b.next() {
            tried.push(load);
            b.record(load, meets(load));
            assert!(tried.len() < 100);
        }
        (tried, b.answer(), b.next_above())
    }

    #[test]
    fn concurrency_doubles_then_bisects_to_one_step() {
        let (tried, answer, next) = probes(Bisection::new(true, 1.0, 4096.0, 1.0), |c| c <= 4.0);
        assert_eq!(tried, [1.0, 2.0, 4.0, 8.0, 6.0, 5.0]);
        assert_eq!((answer, next), (Some(4.0), Some(5.0)));
        let (tried, answer, _) = probes(Bisection::new(true, 1.0, 4096.0, 1.0), |c| c <= 11.0);
        assert_eq!(tried, [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 10.0, 11.0]);
        assert_eq!(answer, Some(11.0));
    }

    #[test]
    fn ends_at_max_or_when_min_fails() {
        let (tried, answer, next) = probes(Bisection::new(true, 2.0, 10.0, 1.0), |_| true);
        assert_eq!(tried, [2.0, 4.0, 8.0, 10.0]);
        assert_eq!((answer, next), (Some(10.0), None));
        let (tried, answer, next) = probes(Bisection::new(true, 2.0, 10.0, 1.0), |_| false);
        assert_eq!(tried, [2.0]);
        assert_eq!((answer, next), (None, Some(2.0)));
        let (tried, _, _) = probes(Bisection::new(true, 3.0, 3.0, 1.0), |_| true);
        assert_eq!(tried, [3.0]);
    }

    #[test]
    fn rates_bisect_geometrically_to_the_resolution() {
        let (tried, answer, next) = probes(Bisection::new(false, 16.0, 1e5, 0.05), |r| r <= 40.0);
        assert_eq!(tried, [16.0, 32.0, 64.0, 45.3, 38.1, 41.5, 39.8]);
        let (a, n) = (answer.unwrap(), next.unwrap());
        assert!(a <= 40.0 && n > 40.0 && n <= a * 1.05 + 1e-9, "{a} {n}");
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(three_digits(33.941_125), 33.9);
        assert_eq!(three_digits(1234.6), 1235.0);
        assert_eq!(three_digits(0.012_345), 0.0123);
        assert_eq!(format!("{:?}", three_digits(45.254_834)), "45.3");
    }
}
