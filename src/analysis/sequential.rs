//! When a level has measured enough: a sequential stop rule the engine applies while the level
//! runs (`engine::Policy::Sequential`). `search` uses it to settle each probe's SLO decision;
//! `profile --target-moe` to stop a level once one statistic is known to a margin of error.
//!
//! # Settling an objective, and the confidence that is stated
//!
//! An objective on a percentile (`time_to_first_token.p99<=500ms`) is settled when the
//! distribution-free interval of that percentile ([`crate::stats::ci`]) lies wholly on one side
//! of its bound: below it, the objective *meets*; above it, it *fails*. An objective on
//! `error_rate` is settled the same way on the Clopper–Pearson interval of the share of failed
//! requests. Other objectives (averages, throughputs, server shares) have no distribution-free
//! interval: they are checked on their value when the level stops and carry no confidence, and
//! they never hold a level up.
//!
//! The level is judged at every window the engine closes — at each of its looks
//! ([`Looks`]: after `FIRST_LOOK` (20) successful requests, then each time the count has grown by
//! a quarter, and at its cap) and every half second between them — on exactly the requests
//! measured so far, and stops at the first judgement where every interval objective meets, or
//! one fails. Looking again and again and stopping at the first clear answer makes a wrong
//! answer likelier than one look would; the intervals are therefore not taken at the asked
//! confidence but at per-look levels calibrated for a look after *every* request from the first
//! look to the cap ([`crate::stats::boundary`]): the probability, computed exactly from the
//! binomial distribution, that an objective whose true value sits exactly at its bound ever
//! crosses to the wrong side over all those looks is at most its budget. Judging at fewer counts
//! only removes chances to err.
//!
//! The budgets: a wrong *meets* at most `α/2` and a wrong *fails* at most `α/2`, where `1 − α`
//! is the asked confidence. A level meets only when every interval objective meets at the same
//! judgement, so a level that misses some objective is reported as meeting only if *that*
//! objective crossed its meets boundary: each objective's meets budget is the whole `α/2`, with
//! no split over the objectives. A level fails as soon as any one objective fails, so the fails
//! budget is split over the `k` interval objectives, `α/(2k)` each. A verdict is wrong with
//! probability at most `α/2` either way, given independent samples and a server whose capacity
//! does not change while the level runs; an objective whose true value is farther from its
//! bound is misjudged less often. For `time_to_first_token.p99` at 95 % confidence and the
//! default cap of 1000 requests a meets needs 454 requests where Bonferroni over 20 scheduled
//! looks needed 743 (the fewest with which a single look could meet is 368).
//!
//! A level that reaches its cap (requests or time) with an objective still open is *undecided*:
//! it is reported so, never guessed from the point estimate.
//!
//! # Margin of error (`profile --target-moe`)
//!
//! The chosen statistic's interval at the asked confidence (a percentile's from order statistics,
//! an average's from the normal approximation `mean ± z·sd/√n`); the margin of error is the larger
//! distance from the estimate to an end, as a share of the estimate. The level stops at the first
//! look where it is at most the target. This rule stops on the interval's width, not on where it
//! lies, so it does not favour any answer and the interval is reported at the asked confidence.

use std::time::Duration;

use serde::Serialize;

use super::saturation::Signal;
use crate::metrics::{Metric, MetricRef, Op, PercentileMethod, Slo, Stat, SystemMetric};
use crate::stats::Aggregate;
use crate::stats::boundary::Boundary;
use crate::stats::ci;

pub use crate::load::Looks;

/// A margin of error to reach (`profile --target-moe`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MoeTarget {
    /// The statistic: a percentile or the average of a per-request metric.
    #[serde(serialize_with = "as_text")]
    pub metric: MetricRef,
    /// The largest margin of error, as a share of the estimate (0.05: 5 %).
    pub target: f64,
}

/// A value written as its text: a metric's key, an objective.
fn as_text<S: serde::Serializer>(v: &impl std::fmt::Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// The stop rule of a level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    /// Objectives to settle (a search's `--slo`); empty for `--target-moe` alone.
    pub objectives: Vec<Slo>,
    /// A margin of error to reach.
    pub moe: Option<MoeTarget>,
    /// The asked confidence (0.95).
    pub confidence: f64,
    /// When the level is looked at, and its request cap.
    pub looks: Looks,
    /// The longest a level measures (`None`: no time cap).
    #[serde(serialize_with = "opt_secs")]
    pub max_time: Option<Duration>,
    /// Each objective's calibrated boundaries (`None`: it has no interval).
    #[serde(skip)]
    pub boundaries: Vec<Option<Boundary>>,
}

fn opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

impl Rule {
    /// A rule with each interval objective's boundaries calibrated for `looks` at `confidence`.
    pub fn new(
        objectives: Vec<Slo>,
        moe: Option<MoeTarget>,
        confidence: f64,
        looks: Looks,
        max_time: Option<Duration>,
    ) -> Rule {
        let alpha = 1.0 - confidence;
        let k = objectives.iter().filter(|o| has_interval(o)).count().max(1) as f64;
        let boundaries = objectives
            .iter()
            .map(|o| {
                null_share(o).map(|p0| {
                    Boundary::calibrated(p0, looks.first, looks.cap, alpha / 2.0, alpha / (2.0 * k))
                })
            })
            .collect();
        Rule {
            objectives,
            moe,
            confidence,
            looks,
            max_time,
            boundaries,
        }
    }

    /// The same rule with another request cap (and time cap), its boundaries calibrated anew.
    pub fn with_caps(&self, cap: u64, max_time: Option<Duration>) -> Rule {
        Rule::new(
            self.objectives.clone(),
            self.moe,
            self.confidence,
            Looks::new(cap),
            max_time,
        )
    }

    /// The lowest confidence of an objective's interval at one look (its two ends' per-look
    /// levels taken together); the asked confidence when there are none.
    pub fn look_confidence(&self) -> f64 {
        self.boundaries
            .iter()
            .flatten()
            .map(|b| 1.0 - b.meets_level - b.fails_level)
            .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.min(c))))
            .unwrap_or(self.confidence)
    }

    /// The boundaries of `slo` (the first objective equal to it), when it has an interval.
    pub fn boundary(&self, slo: &Slo) -> Option<&Boundary> {
        let i = self.objectives.iter().position(|o| o == slo)?;
        self.boundaries.get(i)?.as_ref()
    }

    /// The fewest successful requests with which `slo` could be shown to meet (`None`: it
    /// never can within the cap, or it has no interval).
    pub fn fewest_to_meet(&self, slo: &Slo) -> Option<u64> {
        self.boundary(slo)?.fewest_to_meet()
    }
}

/// The share of samples on an objective's wrong side at which it just holds (`p0`): `1 − q`
/// for `metric.pq <= bound` (samples above the bound are bad), `q` for `>=` (samples below it
/// are), the bound itself for `error_rate <= bound` (failed requests are bad); `None` for an
/// objective without an interval.
pub fn null_share(slo: &Slo) -> Option<f64> {
    let upper = matches!(slo.op, Op::Le | Op::Lt);
    match slo.metric {
        MetricRef::Dist(_, stat) => stat.quantile().map(|q| if upper { 1.0 - q } else { q }),
        MetricRef::System(SystemMetric::ErrorRate) => {
            let b = slo.bound.clamp(0.0, 1.0);
            Some(if upper { b } else { 1.0 - b })
        }
        MetricRef::System(_) => None,
    }
}

/// Whether an objective has a distribution-free interval (a percentile, or the error rate).
pub fn has_interval(slo: &Slo) -> bool {
    match slo.metric {
        MetricRef::Dist(_, stat) => stat.quantile().is_some(),
        MetricRef::System(s) => s == SystemMetric::ErrorRate,
    }
}

/// Where an objective stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Decision {
    /// Its interval lies wholly on the good side of the bound.
    Meets,
    /// Its interval lies wholly on the bad side.
    Fails,
    /// Not settled (or no interval).
    Open,
}

impl Decision {
    /// `meets`, `fails`, `open`.
    pub fn word(self) -> &'static str {
        self.into()
    }
}

/// One objective at one look.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The objective.
    #[serde(serialize_with = "as_text")]
    pub objective: Slo,
    /// Its point estimate (the metric's unit), when measured.
    pub estimate: Option<f64>,
    /// Lower end of its interval.
    pub lower: Option<f64>,
    /// Upper end of its interval.
    pub upper: Option<f64>,
    /// Where it stands.
    pub decision: Decision,
    /// Whether it has an interval (else it is checked on its value when the level stops).
    pub interval: bool,
}

impl Check {
    /// `time_to_first_token.p90 7.21 ms [6.10, 7.90]: meets 15 ms`.
    pub fn line(&self) -> String {
        let kind = self.objective.metric.kind();
        let show = |v: Option<f64>| v.map_or("open".to_string(), |v| show_bare(kind, v));
        let value = self
            .estimate
            .map_or("no value".to_string(), |v| kind.show(v));
        let interval = if self.interval {
            format!(" [{}, {}]", show(self.lower), show(self.upper))
        } else {
            String::new()
        };
        format!(
            "{} {value}{interval}: {}",
            self.objective.metric,
            match (self.decision, self.interval) {
                (Decision::Open, true) => format!("open against {}", self.objective),
                (Decision::Open, false) => "checked on its value at the end".to_string(),
                (d, _) => format!("{} {}", d.word(), self.objective),
            }
        )
    }
}

/// A value without its unit (`7.21`, `3.6%`).
fn show_bare(kind: crate::metrics::Kind, v: f64) -> String {
    match kind {
        crate::metrics::Kind::Fraction => format!("{:.2}%", v * 100.0),
        crate::metrics::Kind::Count => format!("{v:.0}"),
        _ => format!("{v:.2}"),
    }
}

/// Checks one objective against the level so far at its calibrated `boundary` (`None`: an
/// objective without an interval, checked on its value when the level stops).
pub fn check(
    slo: &Slo,
    agg: &Aggregate,
    boundary: Option<&Boundary>,
    method: PercentileMethod,
) -> Check {
    let open = Check {
        objective: *slo,
        estimate: None,
        lower: None,
        upper: None,
        decision: Decision::Open,
        interval: false,
    };
    let Some(b) = boundary else {
        return open;
    };
    let upper_bound = matches!(slo.op, Op::Le | Op::Lt);
    match slo.metric {
        MetricRef::Dist(m, stat) if stat.quantile().is_some() => {
            let d = agg.dist(m);
            let n = d.count();
            // A meets with at most `a` bad samples of `n` is the order statistic at rank
            // `n − a` (for `<=`) or `a + 1` (for `>=`) on the good side of the bound; a fails
            // with at least `r` is the one at rank `n − r + 1` (or `r`) on the bad side.
            let meets = b.meets_at_most(n);
            let fails = b.fails_from(n);
            let (lower_rank, upper_rank) = if upper_bound {
                (fails.map(|r| n - r + 1), meets.map(|a| n - a))
            } else {
                (meets.map(|a| a + 1), fails)
            };
            let (estimate, bounds) = ranked_view(d, m, stat, (lower_rank, upper_rank), method);
            Check {
                objective: *slo,
                estimate,
                lower: bounds.lower,
                upper: bounds.upper,
                decision: decide(slo, bounds),
                interval: true,
            }
        }
        MetricRef::System(SystemMetric::ErrorRate) => {
            let x = agg.error_count();
            let n = agg.ok + x;
            let bad = if upper_bound { x } else { agg.ok };
            // Shown: the Clopper–Pearson interval at the same per-look levels, the meets end
            // at the meets level.
            let (lo, hi) = if upper_bound {
                (b.fails_level, b.meets_level)
            } else {
                (b.meets_level, b.fails_level)
            };
            let shown = ci::share_bounds(x, n, lo, hi);
            Check {
                objective: *slo,
                estimate: (n > 0).then(|| x as f64 / n as f64),
                lower: shown.lower,
                upper: shown.upper,
                decision: match b.decide(n, bad) {
                    Some(true) => Decision::Meets,
                    Some(false) => Decision::Fails,
                    None => Decision::Open,
                },
                interval: true,
            }
        }
        _ => open,
    }
}

/// The point estimate of a percentile of `m` and the samples at the given 1-based ranks, in
/// its display unit.
fn ranked_view(
    d: &crate::stats::Dist,
    m: Metric,
    stat: Stat,
    (lower, upper): (Option<u64>, Option<u64>),
    method: PercentileMethod,
) -> (Option<f64>, ci::Bounds) {
    let q = stat.quantile().unwrap_or(0.5);
    let scale = m.unit().scale();
    let est = (d.count() > 0).then(|| d.percentile(q * 100.0, method) * scale);
    let ranks: Vec<u64> = [lower, upper].iter().flatten().map(|r| r - 1).collect();
    let mut values = d.values_at_ranks(&ranks).into_iter();
    let lower = lower.and_then(|_| values.next()).map(|v| v * scale);
    let upper = upper.and_then(|_| values.next()).map(|v| v * scale);
    (est, ci::Bounds { lower, upper })
}

/// The point estimate and interval of a percentile of `m`, in its display unit.
fn quantile_view(
    agg: &Aggregate,
    m: Metric,
    stat: Stat,
    (lo, hi): (f64, f64),
    method: PercentileMethod,
) -> (Option<f64>, ci::Bounds) {
    let d = agg.dist(m);
    let q = stat.quantile().unwrap_or(0.5);
    let (l, u) = ci::quantile_ranks(d.count(), q, lo, hi);
    ranked_view(d, m, stat, (l, u), method)
}

/// Meets when the interval's worst end holds, fails when its best end does not.
fn decide(slo: &Slo, b: ci::Bounds) -> Decision {
    let (worst, best) = match slo.op {
        Op::Le | Op::Lt => (b.upper, b.lower),
        Op::Ge | Op::Gt => (b.lower, b.upper),
    };
    if worst.is_some_and(|v| slo.op.holds(v, slo.bound)) {
        Decision::Meets
    } else if best.is_some_and(|v| !slo.op.holds(v, slo.bound)) {
        Decision::Fails
    } else {
        Decision::Open
    }
}

/// The level's decision from its checks: fails when one interval objective fails, meets when
/// every one meets (and there is at least one), open otherwise.
pub fn verdict(checks: &[Check]) -> Decision {
    let intervals: Vec<&Check> = checks.iter().filter(|c| c.interval).collect();
    if intervals.iter().any(|c| c.decision == Decision::Fails) {
        Decision::Fails
    } else if !intervals.is_empty() && intervals.iter().all(|c| c.decision == Decision::Meets) {
        Decision::Meets
    } else {
        Decision::Open
    }
}

/// A statistic's estimate with its interval and margin of error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Moe {
    /// The estimate (the metric's display unit).
    pub estimate: f64,
    /// Lower end.
    pub lower: Option<f64>,
    /// Upper end.
    pub upper: Option<f64>,
    /// The larger distance from the estimate to an end, as a share of the estimate (`None`
    /// while an end is open).
    pub relative: Option<f64>,
}

/// The margin of error of `t`'s statistic over the level so far, at `confidence`.
pub fn moe(
    t: &MoeTarget,
    agg: &Aggregate,
    confidence: f64,
    method: PercentileMethod,
) -> Option<Moe> {
    let MetricRef::Dist(m, stat) = t.metric else {
        return None;
    };
    let a = (1.0 - confidence) / 2.0;
    let (estimate, b) = if stat == Stat::Avg {
        let d = agg.dist(m);
        let n = d.count();
        if n < 2 {
            return None;
        }
        let st = d.stats(m.unit().scale());
        let half = ci::normal_quantile(1.0 - a) * st.std / (n as f64).sqrt();
        let b = ci::Bounds {
            lower: Some(st.avg - half),
            upper: Some(st.avg + half),
        };
        (Some(st.avg), b)
    } else {
        quantile_view(agg, m, stat, (a, a), method)
    };
    let estimate = estimate?;
    let relative = match (b.lower, b.upper) {
        (Some(lo), Some(hi)) if estimate.abs() > 0.0 => {
            Some((estimate - lo).max(hi - estimate) / estimate.abs())
        }
        _ => None,
    };
    Some(Moe {
        estimate,
        lower: b.lower,
        upper: b.upper,
        relative,
    })
}

/// Why a level's measurement ended. Its key in files (`search.json`'s `stopped`) is
/// [`Stopped`], derived from these variants, written and read back by the same declaration.
#[derive(Debug, Clone, PartialEq, Serialize, strum::EnumDiscriminants)]
#[serde(rename_all = "snake_case", tag = "reason")]
#[strum_discriminants(
    name(Stopped),
    doc = "Why a level's measurement ended, without its detail: the key files carry.",
    derive(
        strum::IntoStaticStr,
        strum::EnumString,
        strum::VariantArray,
        strum::VariantNames
    ),
    strum(serialize_all = "snake_case")
)]
pub enum StopReason {
    /// Every interval objective met, or one failed.
    Settled,
    /// The margin of error reached its target.
    MarginReached,
    /// The request cap came first.
    RequestCap,
    /// The time cap came first.
    TimeCap,
    /// The server could not absorb the load.
    Saturated {
        /// The signal that fired.
        signal: Signal,
    },
    /// Ctrl-C.
    Interrupted,
}

crate::names::serde_by_name!(Stopped);

impl StopReason {
    /// A short key (`settled`, `saturated`, ...).
    pub fn key(&self) -> &'static str {
        Stopped::from(self).into()
    }

    /// Why it stopped, in words.
    pub fn words(&self) -> String {
        match self {
            StopReason::Settled => "settled".into(),
            StopReason::MarginReached => "margin of error reached".into(),
            StopReason::RequestCap => "request cap reached".into(),
            StopReason::TimeCap => "time cap reached".into(),
            StopReason::Saturated { signal } => format!("saturated: {}", signal.line()),
            StopReason::Interrupted => "interrupted".into(),
        }
    }
}

/// How a level under the sequential rule ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settled {
    /// Why it stopped.
    #[serde(flatten)]
    pub stopped: StopReason,
    /// Looks made.
    pub looks: u32,
    /// Successful requests at the last look (the level's statistics are over exactly these).
    pub measured: u64,
    /// The level's decision on its interval objectives at the last look.
    pub decision: Decision,
    /// Each objective at the last look.
    pub checks: Vec<Check>,
    /// The margin of error at the last look (`--target-moe`).
    pub moe: Option<Moe>,
    /// What the margin of error was judged against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_target: Option<MoeShown>,
    /// The confidence of each objective's interval at one look (`1 − α/(kJ)`), when the level
    /// had objectives to settle.
    pub look_confidence: Option<f64>,
}

/// The statistic, target and confidence of a margin of error, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MoeShown {
    /// The statistic.
    #[serde(serialize_with = "as_text")]
    pub metric: MetricRef,
    /// The target share.
    pub target: f64,
    /// The interval's confidence.
    pub confidence: f64,
}

impl Settled {
    /// `stopped after 63 requests (6 looks): settled, meets` and the checks.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "stopped after {} ({}): {}{}",
            crate::analysis::text::count(self.measured, "successful request"),
            crate::analysis::text::count(u64::from(self.looks), "look"),
            self.stopped.words(),
            match self.decision {
                Decision::Open if self.checks.iter().any(|c| c.interval) => ", undecided".into(),
                Decision::Open => String::new(),
                d => format!(", {}", d.word()),
            }
        )];
        out.extend(self.checks.iter().map(|c| format!("  {}", c.line())));
        if let (Some(m), Some(t)) = (&self.moe, &self.moe_target) {
            let kind = t.metric.kind();
            let end = |v: Option<f64>| v.map_or("open".to_string(), |v| show_bare(kind, v));
            out.push(format!(
                "  {} {} [{}, {}] at {:.0} %: margin of error {} (target {:.1} %)",
                t.metric,
                kind.show(m.estimate),
                end(m.lower),
                end(m.upper),
                t.confidence * 100.0,
                m.relative
                    .map_or("open".to_string(), |r| format!("{:.1} %", r * 100.0)),
                t.target * 100.0
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::parse;
    use crate::stats::boundary::{self as stats_boundary, Side};

    fn agg(ttft_ms: impl IntoIterator<Item = u64>) -> Aggregate {
        let mut a = Aggregate::new();
        for t in ttft_ms {
            a.record(&crate::stats::test_record(t, t + 100, 10), &[], &[]);
        }
        a
    }

    #[test]
    fn look_schedule_and_count() {
        let l = Looks::new(100);
        assert_eq!(l.schedule(), vec![20, 25, 32, 40, 50, 63, 79, 99, 100]);
        assert_eq!(l.count(), 10);
        assert_eq!(l.at_or_after(41), Some(50));
        assert_eq!(l.at_or_after(101), None);
        assert_eq!(Looks::new(5).schedule(), vec![5]);
    }

    fn rule(slos: &[&str], cap: u64) -> Rule {
        Rule::new(
            slos.iter().map(|s| parse(s).unwrap()).collect(),
            None,
            0.95,
            Looks::new(cap),
            None,
        )
    }

    #[test]
    fn budgets_per_side_and_objective() {
        let r = rule(
            &["ttft.p90<=15ms", "error_rate<1%", "request_throughput>=1"],
            100,
        );
        assert_eq!(r.boundaries.iter().flatten().count(), 2, "k");
        assert!(r.boundaries[2].is_none());
        for b in r.boundaries.iter().flatten() {
            // A wrong meets within α/2 = 0.025 for each objective (a level meets only when all
            // do); a wrong fails within α/(2k) = 0.0125 for each (any one fails the level).
            let meets = stats_boundary::edge(b.p0, 20, 100, b.meets_level, Side::Meets);
            let fails = stats_boundary::edge(b.p0, 20, 100, b.fails_level, Side::Fails);
            assert!(stats_boundary::crossing(b.p0, 20, &meets, Side::Meets) <= 0.025);
            assert!(stats_boundary::crossing(b.p0, 20, &fails, Side::Fails) <= 0.0125);
            // Far less widened than Bonferroni over 10 looks and 2 objectives (0.05 / 40).
            assert!(
                b.meets_level > 0.001_25 && b.fails_level > 0.001_25,
                "{b:?}"
            );
        }
        assert!(r.look_confidence() < 0.9975 && r.look_confidence() > 0.95);
        assert_eq!(null_share(&r.objectives[0]), Some(0.09999999999999998));
        assert_eq!(null_share(&parse("ttft.p75>=2ms").unwrap()), Some(0.75));
        assert_eq!(null_share(&r.objectives[1]), Some(0.01));
    }

    #[test]
    fn decisions_on_each_side_and_open() {
        let r = rule(&["ttft.p90<=15ms", "ttft.p50>=4ms"], 1000);
        let slo = r.objectives[0];
        let b = r.boundaries[0].as_ref();
        let m = PercentileMethod::Linear;
        // 200 requests all at 5 ms: the interval is [5, 5], below 15 ms.
        let c = check(&slo, &agg(std::iter::repeat_n(5, 200)), b, m);
        assert_eq!(c.decision, Decision::Meets);
        assert_eq!((c.lower, c.upper), (Some(5.0), Some(5.0)));
        // 20 requests at 40 ms: fails at once.
        assert_eq!(
            check(&slo, &agg(std::iter::repeat_n(40, 20)), b, m).decision,
            Decision::Fails
        );
        // 20 requests at 5 ms: too few to show p90 below anything (no upper end yet).
        let c = check(&slo, &agg(std::iter::repeat_n(5, 20)), b, m);
        assert_eq!((c.decision, c.upper), (Decision::Open, None));
        assert_eq!(
            c.line(),
            "time_to_first_token.p90 5.00 ms [5.00, open]: open against time_to_first_token.p90<=15ms"
        );
        // A throughput-style objective the other way round.
        let ge = r.objectives[1];
        let c = check(
            &ge,
            &agg(std::iter::repeat_n(5, 200)),
            r.boundaries[1].as_ref(),
            m,
        );
        assert_eq!(c.decision, Decision::Meets);
        // Point objectives stay open and out of the verdict.
        let p = check(&parse("request_throughput>=1").unwrap(), &agg([1]), None, m);
        assert!(!p.interval);
        assert_eq!(verdict(std::slice::from_ref(&p)), Decision::Open);
        let meets = check(&slo, &agg(std::iter::repeat_n(5, 200)), b, m);
        assert_eq!(verdict(&[meets.clone(), p]), Decision::Meets);
    }

    /// The interval read off the histogram decides exactly as the boundary does on the count
    /// of samples beyond the bound (the simulation of `search::simulate` uses the counts).
    #[test]
    fn intervals_decide_as_the_counts() {
        use rand::{RngExt, SeedableRng};
        let r = rule(&["ttft.p90<=50ms", "ttft.p75>=20ms"], 300);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for case in 0..200 {
            let n = rng.random_range(15..=320u64);
            let (above, below) = (rng.random_range(0.0..0.3f64), rng.random_range(0.0..0.5f64));
            // Whole milliseconds away from both bounds, so no sample sits on one.
            let values: Vec<u64> = (0..n)
                .map(|_| {
                    let u: f64 = rng.random();
                    if u < above {
                        rng.random_range(51..200)
                    } else if u < above + below {
                        rng.random_range(1..20)
                    } else {
                        rng.random_range(21..50)
                    }
                })
                .collect();
            let a = agg(values.iter().copied());
            for (i, bad) in [
                values.iter().filter(|&&v| v > 50).count() as u64,
                values.iter().filter(|&&v| v < 20).count() as u64,
            ]
            .into_iter()
            .enumerate()
            {
                let b = r.boundaries[i].as_ref().unwrap();
                let want = match b.decide(n, bad) {
                    Some(true) => Decision::Meets,
                    Some(false) => Decision::Fails,
                    None => Decision::Open,
                };
                let c = check(&r.objectives[i], &a, Some(b), PercentileMethod::Linear);
                assert_eq!(c.decision, want, "case {case}: n {n}, {bad} bad: {c:?}");
            }
        }
    }

    #[test]
    fn error_rate_on_the_count_of_failures() {
        let r = rule(&["error_rate<=5%"], 1000);
        let slo = r.objectives[0];
        let b = r.boundaries[0].as_ref();
        let mut a = agg(std::iter::repeat_n(5, 400));
        let c = check(&slo, &a, b, PercentileMethod::Linear);
        assert_eq!(c.decision, Decision::Meets, "{c:?}");
        assert!(c.upper.unwrap() <= 0.05, "{c:?}");
        a.add_errors(crate::record::ErrorKind::Timeout, 100, "t");
        let c = check(&slo, &a, b, PercentileMethod::Linear);
        assert_eq!(c.decision, Decision::Fails, "{c:?}");
        assert!(c.lower.unwrap() > 0.05, "{c:?}");
        assert_eq!(c.estimate, Some(0.2));
    }

    #[test]
    fn fewest_requests_to_meet() {
        let r = rule(&["ttft.p99<=500ms", "ttft.p90<=500ms"], 1000);
        // No split over the objectives on the meets side: p99 meets with none of n beyond the
        // bound once 0.99^n is within its calibrated per-look level.
        let p99 = r.fewest_to_meet(&r.objectives[0]).unwrap();
        let level = r.boundaries[0].as_ref().unwrap().meets_level;
        assert!(0.99f64.powi(p99 as i32) <= level && 0.99f64.powi(p99 as i32 - 1) > level);
        assert!((368..=470).contains(&p99), "{p99}");
        let alone = rule(&["ttft.p99<=500ms"], 1000);
        assert_eq!(alone.fewest_to_meet(&alone.objectives[0]), Some(p99));
        assert!(r.fewest_to_meet(&r.objectives[1]).unwrap() < p99);
        let tight = rule(&["ttft.p99.9<=500ms"], 1000);
        assert_eq!(tight.fewest_to_meet(&tight.objectives[0]), None);
    }

    #[test]
    fn margin_of_error() {
        let t = MoeTarget {
            metric: MetricRef::parse("ttft.p50").unwrap(),
            target: 0.05,
        };
        let m = moe(&t, &agg(1..=100), 0.95, PercentileMethod::Linear).unwrap();
        // Ranks 40 and 61 of 1..=100 around a median of 50.5 (read off the histogram: within
        // 0.05 %): the larger side is 50.5 − 40.
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < want * 5e-4);
        assert!(near(m.lower, 40.0) && near(m.upper, 61.0), "{m:?}");
        assert!((m.relative.unwrap() - 10.5 / 50.5).abs() < 1e-3);
        let avg = MoeTarget {
            metric: MetricRef::parse("ttft.avg").unwrap(),
            target: 0.05,
        };
        let m = moe(
            &avg,
            &agg(std::iter::repeat_n(7, 50)),
            0.95,
            PercentileMethod::Linear,
        )
        .unwrap();
        assert_eq!(m.relative, Some(0.0));
    }
}
