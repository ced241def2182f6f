//! Telling a regression from run-to-run noise when either side of a comparison has repetitions
//! (`--repeat N`).
//!
//! A limited number regresses when its median moved past the limit AND the 95 % interval of the
//! change ([`crate::stats::repeat::change_interval`], a bootstrap over both sides' repetitions)
//! lies wholly past it: a change whose interval still reaches back over the limit is "within
//! noise". With one run a side there is no noise to measure, the verdict is the point change's,
//! and the comparison says so.

use super::{Limit, Threshold};
use crate::metrics::Kind;
use crate::stats::repeat::{Spread, change_interval};

/// The values of one number on each side: a run's repetitions, or its one value.
#[derive(Debug, Clone, Copy)]
pub struct Sides<'a> {
    /// The baseline's values.
    pub base: &'a [f64],
    /// The current run's values.
    pub cur: &'a [f64],
}

impl Sides<'_> {
    /// Whether either side has more than one value: only then is there noise to measure.
    pub fn repeated(&self) -> bool {
        self.base.len() > 1 || self.cur.len() > 1
    }
}

/// The 95 % interval of the change in `t`'s terms: relative (a fraction) for a relative limit,
/// absolute (the metric's unit) for an absolute one.
pub fn interval(t: &Threshold, sides: Sides<'_>) -> Option<(f64, f64)> {
    let relative = matches!(t.limit, Limit::Relative(_));
    change_interval(sides.base, sides.cur, relative)
}

/// Whether every change in `(lo, hi)` breaks `t` (rises past a rising limit, falls past a
/// falling one).
pub fn wholly_past(t: &Threshold, (lo, hi): (f64, f64)) -> bool {
    let (Limit::Relative(l) | Limit::Absolute(l)) = t.limit;
    if l >= 0.0 {
        lo > l + 1e-12
    } else {
        hi < l - 1e-12
    }
}

/// The 95 % interval of the change as the change column states it: relative for values,
/// absolute (a difference of shares) for shares.
pub fn interval_of(kind: Kind, sides: Sides<'_>) -> Option<(f64, f64)> {
    change_interval(sides.base, sides.cur, kind != Kind::Fraction)
}

/// An interval from [`interval_of`] as the table shows it: `+2.1%..+18.0%`, or in percentage
/// points for shares.
pub fn interval_text(kind: Kind, (lo, hi): (f64, f64)) -> String {
    if kind == Kind::Fraction {
        format!("{:+.1}..{:+.1}pp", lo * 100.0, hi * 100.0)
    } else {
        format!("{:+.1}%..{:+.1}%", lo * 100.0, hi * 100.0)
    }
}

/// When one side's repetitions spread wider than a relative limit, the limit cannot be judged
/// reliably: `time_to_first_token.p99 at concurrency8 varies 14% across the baseline's
/// repetitions, wider than its +10% limit; ...`.
pub fn wide_spread_note(level: &str, t: &Threshold, side: &str, values: &[f64]) -> Option<String> {
    let Limit::Relative(l) = t.limit else {
        return None;
    };
    let range = Spread::of(values).filter(|s| s.n > 1)?.relative_range()?;
    (range > l.abs()).then(|| {
        format!(
            "{} at {level} varies {:.0}% across the {side}'s repetitions, wider than its {} limit: add repetitions (--repeat) or measure longer (--measurement-interval, --request-count)",
            t.metric,
            range * 100.0,
            t.limit_text()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metric, MetricRef, Stat};

    fn p99(limit: Limit) -> Threshold {
        Threshold {
            metric: MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99),
            limit,
        }
    }

    #[test]
    fn whole_interval_must_pass_the_limit() {
        let rise = p99(Limit::Relative(0.10));
        assert!(wholly_past(&rise, (0.11, 0.30)));
        assert!(!wholly_past(&rise, (0.05, 0.30)));
        let fall = p99(Limit::Relative(-0.05));
        assert!(wholly_past(&fall, (-0.30, -0.06)));
        assert!(!wholly_past(&fall, (-0.30, 0.01)));
        let abs = p99(Limit::Absolute(50.0));
        assert!(wholly_past(&abs, (51.0, 90.0)));
    }

    #[test]
    fn intervals_and_notes() {
        let sides = Sides {
            base: &[100.0, 85.0, 118.0],
            cur: &[112.0, 95.0, 125.0],
        };
        assert!(sides.repeated());
        let t = p99(Limit::Relative(0.10));
        let (lo, hi) = interval(&t, sides).unwrap();
        assert!(lo < 0.0 && hi > 0.4 && !wholly_past(&t, (lo, hi)));
        let iv = interval_of(Kind::Time, sides).unwrap();
        assert_eq!(interval_text(Kind::Time, iv), "-19.5%..+47.1%");
        assert_eq!(
            interval_text(Kind::Fraction, (-0.01, 0.035)),
            "-1.0..+3.5pp"
        );
        let note = wide_spread_note("concurrency8", &t, "baseline", sides.base).unwrap();
        assert!(
            note.starts_with(
                "time_to_first_token.p99 at concurrency8 varies 33% across the baseline's repetitions, wider than its +10% limit"
            ),
            "{note}"
        );
        assert_eq!(wide_spread_note("c", &t, "baseline", &[100.0, 104.0]), None);
        assert_eq!(wide_spread_note("c", &t, "baseline", &[100.0]), None);
        let single = Sides {
            base: &[1.0],
            cur: &[2.0],
        };
        assert!(!single.repeated());
    }
}
