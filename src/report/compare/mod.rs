//! `ttftbench compare BASELINE CURRENT`: did this run get slower than the last one?
//!
//! Levels are matched by name (`concurrency8`); two single-level directories are compared even
//! when their names differ. For each level and metric the table shows the baseline, the current
//! value and the change; limits turn changes into regressions (exit code 1):
//!
//! * `--max-throughput-drop 5%`: request, output-token and input (embeddings, rankings)
//!   throughput may fall by at most 5 %;
//! * `--max-p99-increase 10%`: every p99 latency (TTFT, ITL, request latency) may rise by at most
//!   10 %;
//! * `--threshold METRIC:LIMIT` (repeatable), with the metric grammar of [`crate::slo`]:
//!
//! ```text
//! threshold := metric ":" sign number [unit]
//! sign      := "+"   a rise larger than the number is a regression
//!            | "-"   a fall larger than the number is a regression
//! unit      := "%"   relative to the baseline (time_to_first_token.p99:+10%)
//!            | pp    percentage points, for shares (queue_share:+5pp)
//!            | ms | s | us | tok/s | req/s | (none)   absolute, in the metric's unit
//!                    (time_to_first_token.p99:+50ms, request_throughput.avg:-2)
//! ```
//!
//! Without any limit flag the seeds' rule applies: throughput down more than 5 % or p99 up more
//! than 10 %. A level present in the baseline but missing from the current run is a regression
//! (the run probably failed there); a limited metric the current run lacks is one too.

use std::fmt;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::artifact::read::{LoadedLevel, Run};
use crate::metrics::Metric;
use crate::metrics::{
    Kind, MetricError, MetricRef, MetricSource, Stat, SystemMetric, parse_value, trim_num,
};
use crate::report::console::{Align, table};
use crate::stats::LevelSummary;

pub mod noise;

/// How far a metric may move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// A change relative to the baseline (signed fraction: +0.10 = a rise of more than 10 %
    /// regresses, −0.05 = a fall of more than 5 % regresses).
    Relative(f64),
    /// An absolute change in the metric's unit (signed likewise).
    Absolute(f64),
}

/// A limit on one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    /// The metric.
    pub metric: MetricRef,
    /// The limit.
    pub limit: Limit,
}

impl Threshold {
    /// Whether a change from `base` to `cur` breaks the limit.
    pub fn breached(&self, base: f64, cur: f64) -> bool {
        match self.limit {
            Limit::Relative(f) => match relative(base, cur) {
                Some(c) if f >= 0.0 => c > f + 1e-12,
                Some(c) => c < f - 1e-12,
                // From zero, any move in the watched direction is unbounded.
                None => (f >= 0.0 && cur > base) || (f < 0.0 && cur < base),
            },
            Limit::Absolute(a) if a >= 0.0 => cur - base > a + 1e-12,
            Limit::Absolute(a) => cur - base < a - 1e-12,
        }
    }

    /// The limit as written on the command line: `+10%`, `-2`, `+5pp`, `+50ms`.
    pub fn limit_text(&self) -> String {
        let sign = |v: f64| if v < 0.0 { "-" } else { "+" };
        match self.limit {
            Limit::Relative(f) => format!("{}{}%", sign(f), trim_num(f.abs() * 100.0)),
            Limit::Absolute(a) => match self.metric.kind() {
                Kind::Fraction => format!("{}{}pp", sign(a), trim_num(a.abs() * 100.0)),
                Kind::Time => format!("{}{}ms", sign(a), trim_num(a.abs())),
                _ => format!("{}{}", sign(a), trim_num(a.abs())),
            },
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.metric, self.limit_text())
    }
}

/// A `compare` limit flag that does not parse (`--threshold`, `--max-throughput-drop`,
/// `--max-p99-increase`): the flag, its value, and what to write instead. A usage error (exit
/// code 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{flag} '{value}': {problem}")]
pub struct LimitError {
    /// The flag.
    pub flag: &'static str,
    /// Its value as given.
    pub value: String,
    /// What is wrong with it.
    pub problem: LimitProblem,
}

/// What is wrong with a limit flag's value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LimitProblem {
    /// No `METRIC:LIMIT`.
    #[error(
        "expected METRIC:(+|-)LIMIT, e.g. time_to_first_token.p99:+10% or request_throughput:-5%"
    )]
    Shape,
    /// The metric, or a value with a unit.
    #[error(transparent)]
    Metric(#[from] MetricError),
    /// A limit without `+` or `-`.
    #[error(
        "the limit needs a sign: '+' flags rises (latency: {0}:+10%), '-' flags falls (throughput: {0}:-5%)"
    )]
    NoSign(String),
    /// `N%` where N is not a number.
    #[error("'{0}' is not a percentage")]
    NotPercentage(String),
    /// `pp` on a metric that is not a share.
    #[error(
        "pp (percentage points) only fits shares such as queue_share or error_rate; use % for a relative change"
    )]
    PointsNotShare,
    /// `Npp` where N is not a number.
    #[error("'{0}' is not a number of points")]
    NotPoints(String),
    /// A negative or infinite change.
    #[error("give the size of the change after the sign (a non-negative number)")]
    NoSize,
    /// A percentage flag that is no percentage.
    #[error("expected a percentage such as 5%")]
    Percent,
    /// A negative percentage.
    #[error("must be zero or more")]
    BelowZero,
}

crate::error::usage_error!(LimitError);

/// Parses `--threshold METRIC:(+|-)VALUE[unit]`.
pub fn parse_threshold(raw: &str) -> Result<Threshold, LimitError> {
    let t = raw.trim();
    let fail = |problem| LimitError {
        flag: "--threshold",
        value: t.into(),
        problem,
    };
    let (m, limit) = t
        .rsplit_once(':')
        .ok_or_else(|| fail(LimitProblem::Shape))?;
    let metric = MetricRef::parse(m).map_err(|e| fail(e.into()))?;
    let limit = limit.trim();
    let (sign, rest) = match limit.chars().next() {
        Some('+') => (1.0, &limit[1..]),
        Some('-') => (-1.0, &limit[1..]),
        _ => return Err(fail(LimitProblem::NoSign(m.into()))),
    };
    let rest = rest.trim();
    let lower = rest.to_ascii_lowercase();
    // A percentage or points: the number before the unit, over 100.
    let hundredths = |p: &str, problem: fn(String) -> LimitProblem| {
        let v: Result<f64, _> = p.trim().parse();
        v.map(|v| v / 100.0).map_err(|_| fail(problem(rest.into())))
    };
    let (limit, v): (fn(f64) -> Limit, f64) = if let Some(p) = lower.strip_suffix('%') {
        (Limit::Relative, hundredths(p, LimitProblem::NotPercentage)?)
    } else if let Some(p) = lower.strip_suffix("pp") {
        if metric.kind() != Kind::Fraction {
            return Err(fail(LimitProblem::PointsNotShare));
        }
        (Limit::Absolute, hundredths(p, LimitProblem::NotPoints)?)
    } else {
        let v = parse_value(rest, metric.kind()).map_err(|e| fail(e.into()))?;
        (Limit::Absolute, v)
    };
    if !(v.is_finite() && v >= 0.0) {
        return Err(fail(LimitProblem::NoSize));
    }
    Ok(Threshold {
        metric,
        limit: limit(sign * v),
    })
}

/// Parses `5%` or `5` (percent) for `--max-throughput-drop` / `--max-p99-increase`.
pub fn parse_percent(flag: &'static str, raw: &str) -> Result<f64, LimitError> {
    let t = raw.trim();
    let fail = |problem| LimitError {
        flag,
        value: t.into(),
        problem,
    };
    let v: f64 = t
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| fail(LimitProblem::Percent))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(fail(LimitProblem::BelowZero));
    }
    Ok(v / 100.0)
}

/// All limits of one comparison.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rules {
    /// Largest allowed fall of request and output-token throughput (fraction).
    pub max_throughput_drop: Option<f64>,
    /// Largest allowed rise of any p99 latency (fraction).
    pub max_p99_increase: Option<f64>,
    /// Per-metric limits.
    pub thresholds: Vec<Threshold>,
}

impl Rules {
    /// The seeds' rule: throughput down more than 5 % or p99 up more than 10 %.
    pub fn seeds() -> Rules {
        Rules {
            max_throughput_drop: Some(0.05),
            max_p99_increase: Some(0.10),
            thresholds: vec![],
        }
    }

    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        self.max_throughput_drop.is_none()
            && self.max_p99_increase.is_none()
            && self.thresholds.is_empty()
    }

    /// The limits that apply to `m`.
    pub fn limits_for(&self, m: MetricRef) -> Vec<Threshold> {
        let mut out = Vec::new();
        if let Some(d) = self.max_throughput_drop
            && matches!(
                m,
                MetricRef::System(
                    SystemMetric::RequestThroughput
                        | SystemMetric::OutputTokenThroughput
                        | SystemMetric::InputThroughput
                )
            )
        {
            out.push(Threshold {
                metric: m,
                limit: Limit::Relative(-d),
            });
        }
        if let Some(i) = self.max_p99_increase
            && let MetricRef::Dist(_, Stat::P99) = m
            && m.kind() == Kind::Time
        {
            out.push(Threshold {
                metric: m,
                limit: Limit::Relative(i),
            });
        }
        out.extend(self.thresholds.iter().filter(|t| t.metric == m).copied());
        out
    }
}

/// The metrics every comparison shows (a row only where a side has the number: inputs/s for
/// embeddings and rankings, the tool metrics for runs that offered tools, accuracy and the
/// changed-answer share for scored runs).
pub const DEFAULT_METRICS: [MetricRef; 18] = [
    MetricRef::Dist(Metric::TimeToFirstToken, Stat::Avg),
    MetricRef::Dist(Metric::TimeToFirstToken, Stat::P50),
    MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99),
    MetricRef::Dist(Metric::InterTokenLatency, Stat::Avg),
    MetricRef::Dist(Metric::InterTokenLatency, Stat::P99),
    MetricRef::Dist(Metric::RequestLatency, Stat::Avg),
    MetricRef::Dist(Metric::RequestLatency, Stat::P99),
    MetricRef::System(SystemMetric::OutputTokenThroughput),
    MetricRef::System(SystemMetric::RequestThroughput),
    MetricRef::System(SystemMetric::InputThroughput),
    MetricRef::System(SystemMetric::InputTokenThroughput),
    MetricRef::Dist(Metric::TimeToFirstToolToken, Stat::P99),
    MetricRef::System(SystemMetric::ToolCallShare),
    MetricRef::System(SystemMetric::ToolArgsValidShare),
    MetricRef::System(SystemMetric::Accuracy),
    MetricRef::System(SystemMetric::AnswerChangedShare),
    MetricRef::System(SystemMetric::ErrorRate),
    MetricRef::System(SystemMetric::QueueShare),
];

/// Change of `cur` against `base` as a fraction; `None` from a zero baseline (unless both are 0).
pub fn relative(base: f64, cur: f64) -> Option<f64> {
    if base != 0.0 {
        Some((cur - base) / base.abs())
    } else if cur == 0.0 {
        Some(0.0)
    } else {
        None
    }
}

/// What happened to one metric of one level; its `strum` name is the JSON's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Status {
    /// No limit applies.
    Unchecked,
    /// Within every limit.
    Ok,
    /// A limit was broken.
    Regressed,
    /// A limited metric the current run has no value for.
    Missing,
    /// The median moved past a limit, but the 95 % interval of the change over the two sides'
    /// repetitions reaches back over it: not a regression.
    WithinNoise,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Unchecked => "",
            Status::Ok => "ok",
            Status::Regressed => "REGRESSED",
            Status::Missing => "MISSING",
            Status::WithinNoise => "within noise",
        }
    }
}

/// One row of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Level name.
    pub level: String,
    /// Metric.
    pub metric: MetricRef,
    /// Baseline value.
    pub baseline: Option<f64>,
    /// Current value.
    pub current: Option<f64>,
    /// Limits that applied.
    pub limits: Vec<Threshold>,
    /// Verdict.
    pub status: Status,
    /// The baseline's value in each of its repetitions (one value for a single run).
    pub base_values: Vec<f64>,
    /// The current run's value in each of its repetitions.
    pub cur_values: Vec<f64>,
    /// The 95 % interval of the change when either side has repetitions, in the change
    /// column's terms: relative (a fraction) for values, absolute for shares; computed once
    /// (a bootstrap) when the row is made.
    pub interval: Option<(f64, f64)>,
}

impl Row {
    /// Relative change, when both values exist.
    pub fn change(&self) -> Option<f64> {
        relative(self.baseline?, self.current?)
    }

    fn is_regression(&self) -> bool {
        matches!(self.status, Status::Regressed | Status::Missing)
    }

    fn sides(&self) -> noise::Sides<'_> {
        noise::Sides {
            base: &self.base_values,
            cur: &self.cur_values,
        }
    }

    /// [`Row::interval`] as the table shows it (`+2.1%..+18.0%`, `-1.0..+3.5pp`); empty for
    /// single runs.
    pub fn interval_text(&self) -> String {
        match self.interval {
            Some(iv) => noise::interval_text(self.metric.kind(), iv),
            None if self.sides().repeated() => "–".into(),
            None => String::new(),
        }
    }
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Baseline run name and directory.
    pub baseline: (String, String),
    /// Current run name and directory.
    pub current: (String, String),
    /// Limits in words, for the header.
    pub rules: Vec<String>,
    /// Rows, level by level.
    pub rows: Vec<Row>,
    /// Levels only the baseline has (each a regression).
    pub only_in_baseline: Vec<String>,
    /// Levels only the current run has.
    pub only_in_current: Vec<String>,
    /// Remarks (levels paired despite different names, noise).
    pub notes: Vec<String>,
    /// Whether either run has repetitions (`--repeat`): the tables then show the interval of
    /// each change.
    pub repeated: bool,
}

impl Comparison {
    /// Rows that regressed.
    pub fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.is_regression())
    }

    /// Regressed rows plus missing levels.
    pub fn regression_count(&self) -> usize {
        self.regressions().count() + self.only_in_baseline.len()
    }
}

fn rules_text(r: &Rules) -> Vec<String> {
    let mut v: Vec<String> = [
        ("throughput may fall", r.max_throughput_drop),
        ("p99 latency may rise", r.max_p99_increase),
    ]
    .into_iter()
    .filter_map(|(what, f)| f.map(|f| format!("{what} by at most {}%", trim_num(f * 100.0))))
    .collect();
    v.extend(r.thresholds.iter().map(|t| format!("--threshold {t}")));
    v
}

/// Whether `base` and `cur` measured the same workload: `Ok` with notes to print (a run without
/// a recorded fingerprint is compared unchecked), or `Err` naming each field that differs
/// (`output: 200±0 tokens → 10±0 tokens`).
pub fn comparable(base: &Run, cur: &Run) -> Result<Vec<String>, Vec<String>> {
    let print = |r: &Run| r.levels.iter().find_map(|l| l.fingerprint.clone());
    match (print(base), print(cur)) {
        (Some(b), Some(c)) => {
            let d = b.differences(&c);
            if d.is_empty() { Ok(Vec::new()) } else { Err(d) }
        }
        (b, c) => Ok([("BASELINE", base, b.is_none()), ("CURRENT", cur, c.is_none())]
            .into_iter()
            .filter(|(_, _, missing)| *missing)
            .map(|(what, r, _)| {
                format!(
                    "note: {what} {} records no workload fingerprint (written by GenAI-Perf or an older ttftbench): check by hand that both runs sent the same workload",
                    r.dir.display()
                )
            })
            .collect()),
    }
}

/// "server changed: triton 2.50.0 → triton 2.51.0" when both runs recorded the server's
/// identity (ttftbench 2 files) and it differs: the numbers may move for that reason alone.
pub fn server_change(base: &Run, cur: &Run) -> Option<String> {
    let server = |r: &Run| {
        r.levels
            .iter()
            .find_map(|l| l.context.as_ref())
            .map(|c| c.server.clone())
    };
    let (b, c) = (server(base)?, server(cur)?);
    if b.name == c.name && b.version == c.version {
        return None;
    }
    let what = if b.name == c.name {
        "server version changed"
    } else {
        "server changed"
    };
    Some(format!("{what}: {} → {}", b.describe(), c.describe()))
}

/// Compares two runs level by level. Levels of `--repeat` runs bring their repetitions: each
/// number is then compared by its median, and a change past a limit regresses only when it is
/// past the noise too (see [`noise`]).
pub fn compare(base: &Run, cur: &Run, rules: &Rules) -> Comparison {
    let mut metrics: Vec<MetricRef> = DEFAULT_METRICS.to_vec();
    for t in &rules.thresholds {
        if !metrics.contains(&t.metric) {
            metrics.push(t.metric);
        }
    }
    let mut notes: Vec<String> = server_change(base, cur).into_iter().collect();
    let (pairs, only_in_baseline, only_in_current) = pair_levels(base, cur, &mut notes);
    notes.extend(method_note(base, cur));
    let rows: Vec<Row> = pairs
        .iter()
        .flat_map(|(name, b, c)| {
            let row = move |&m| compare_metric(name, (*b, *c), m, rules);
            metrics.iter().filter_map(row)
        })
        .collect();
    notes.extend(noise_notes(base, cur, &rows));
    Comparison {
        repeated: base.repeated() || cur.repeated(),
        baseline: (base.label.clone(), base.dir.display().to_string()),
        current: (cur.label.clone(), cur.dir.display().to_string()),
        rules: rules_text(rules),
        rows,
        only_in_baseline,
        only_in_current,
        notes,
    }
}

/// Levels paired by name (two single levels even when their names differ), and the names only
/// one side has.
type Paired<'a> = (
    Vec<(String, &'a LoadedLevel, &'a LoadedLevel)>,
    Vec<String>,
    Vec<String>,
);

fn pair_levels<'a>(base: &'a Run, cur: &'a Run, notes: &mut Vec<String>) -> Paired<'a> {
    let name = |l: &LoadedLevel| l.summary.stimulus.name();
    if let ([b], [c]) = (base.levels.as_slice(), cur.levels.as_slice())
        && name(b) != name(c)
    {
        notes.push(format!(
            "single levels with different loads compared: {} (baseline) with {} (current)",
            name(b),
            name(c)
        ));
        return (
            vec![(format!("{} → {}", name(b), name(c)), b, c)],
            Vec::new(),
            Vec::new(),
        );
    }
    let mut pairs = Vec::new();
    let mut only_in_baseline = Vec::new();
    for b in &base.levels {
        match cur.levels.iter().find(|c| name(c) == name(b)) {
            Some(c) => pairs.push((name(b), b, c)),
            None => only_in_baseline.push(name(b)),
        }
    }
    let only_in_current = cur
        .levels
        .iter()
        .filter(|c| !base.levels.iter().any(|b| name(b) == name(c)))
        .map(name)
        .collect();
    (pairs, only_in_baseline, only_in_current)
}

/// A number of a level in each repetition (its one value for a single run); a statistic a file
/// does not have (perf_analyzer's CSV has no average) is NaN.
fn values(l: &LoadedLevel, m: MetricRef) -> Vec<f64> {
    let of = |s: &LevelSummary| s.metric(m).unwrap_or(f64::NAN);
    if l.repetitions.is_empty() {
        vec![of(&l.summary)]
    } else {
        l.repetitions.iter().map(of).collect()
    }
}

/// The value a side shows: its one value, or its repetitions' median; `None` when missing.
fn shown(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    (!finite.is_empty()).then(|| crate::stats::repeat::median(&finite))
}

/// One row, or `None` for a number neither side has (and no limit names).
fn compare_metric(
    name: &str,
    (b, c): (&LoadedLevel, &LoadedLevel),
    m: MetricRef,
    rules: &Rules,
) -> Option<Row> {
    let (base_values, cur_values) = (values(b, m), values(c, m));
    let (bv, cv) = (shown(&base_values), shown(&cur_values));
    let limits = rules.limits_for(m);
    let named = rules.thresholds.iter().any(|t| t.metric == m);
    // No tokens on either side (a tensor model, a perf_analyzer CSV): nothing to compare.
    let no_tokens = m == MetricRef::System(SystemMetric::OutputTokenThroughput)
        && bv == Some(0.0)
        && cv == Some(0.0);
    if (bv.is_none() && cv.is_none() || no_tokens) && !named {
        return None;
    }
    let sides = noise::Sides {
        base: &base_values,
        cur: &cur_values,
    };
    let status = match (limits.is_empty(), bv, cv) {
        (true, _, _) => Status::Unchecked,
        (false, Some(_), None) => Status::Missing,
        (false, None, _) => Status::Unchecked,
        (false, Some(bv), Some(cv)) => judge(&limits, bv, cv, sides),
    };
    let interval = (sides.repeated() && bv.is_some() && cv.is_some())
        .then(|| noise::interval_of(m.kind(), sides))
        .flatten();
    Some(Row {
        level: name.to_string(),
        metric: m,
        baseline: bv,
        current: cv,
        limits,
        status,
        base_values,
        cur_values,
        interval,
    })
}

/// Ok, regressed, or past a limit but within the noise of the repetitions.
fn judge(limits: &[Threshold], bv: f64, cv: f64, sides: noise::Sides<'_>) -> Status {
    let broken: Vec<&Threshold> = limits.iter().filter(|t| t.breached(bv, cv)).collect();
    if broken.is_empty() {
        return Status::Ok;
    }
    if !sides.repeated() {
        return Status::Regressed;
    }
    let past_noise = broken
        .iter()
        .any(|t| noise::interval(t, sides).is_none_or(|iv| noise::wholly_past(t, iv)));
    if past_noise {
        Status::Regressed
    } else {
        Status::WithinNoise
    }
}

/// What the comparison can say about noise: that single runs cannot tell it from a change, or
/// where one side's repetitions spread wider than a limit (one note per metric and side).
fn noise_notes(base: &Run, cur: &Run, rows: &[Row]) -> Vec<String> {
    if !base.repeated() && !cur.repeated() {
        return vec![
            "single runs on both sides: the verdict cannot account for run-to-run noise; run both with --repeat 3 to tell a regression from noise".into(),
        ];
    }
    let mut notes: Vec<String> = Vec::new();
    let mut seen: Vec<(MetricRef, &str)> = Vec::new();
    for r in rows {
        for t in &r.limits {
            for (side, values) in [("baseline", &r.base_values), ("current run", &r.cur_values)] {
                if seen.contains(&(r.metric, side)) {
                    continue;
                }
                if let Some(n) = noise::wide_spread_note(&r.level, t, side, values) {
                    seen.push((r.metric, side));
                    notes.push(n);
                }
            }
        }
    }
    notes
}

/// A remark when the two runs computed percentiles differently: their p50/p99 then differ by
/// method as well as by server (most where levels have few requests).
fn method_note(base: &Run, cur: &Run) -> Option<String> {
    let method = |r: &Run| {
        r.levels
            .iter()
            .find_map(|l| l.summary.stats.percentile_method)
    };
    match (method(base), method(cur)) {
        (Some(b), Some(c)) if b != c => Some(format!(
            "percentiles computed differently: baseline {b}, current {c} (--percentile-method); their changes include the method's"
        )),
        _ => None,
    }
}

/// A value compactly in its unit: `28.03 ms`, `72.1%`, `981.2 tok/s`, `10.26 req/s`.
pub fn compact(kind: Kind, v: Option<f64>) -> String {
    let Some(v) = v.filter(|x| x.is_finite()) else {
        return "–".into();
    };
    match kind {
        Kind::Time => format!("{v:.2} ms"),
        Kind::Fraction => format!("{:.1}%", v * 100.0),
        Kind::TokenRate => format!("{v:.1} tok/s"),
        Kind::RequestRate => format!("{v:.2} req/s"),
        Kind::InputRate => format!("{v:.1} inputs/s"),
        Kind::PerUserRate => format!("{v:.1} tok/s/user"),
        Kind::Tokens => format!("{v:.1} tokens"),
        Kind::Count => format!("{v:.0}"),
    }
}

/// The change column: relative for values, in percentage points for shares (a relative change
/// of two shares that both round to 0.0% is noise, e.g. "-57.7%"), blank when two shares look
/// the same.
fn change_text(r: &Row) -> String {
    let kind = r.metric.kind();
    match (r.change(), r.baseline, r.current) {
        (_, Some(b), Some(c)) if kind == Kind::Fraction => {
            // Points between the shares as shown (one decimal of a percent).
            let shown = |v: f64| (v * 1000.0).round() / 10.0;
            let pp = shown(c) - shown(b);
            if pp == 0.0 {
                String::new()
            } else {
                format!("{pp:+.1}pp")
            }
        }
        (Some(c), _, _) => format!("{:+.1}%", c * 100.0),
        (None, Some(_), Some(_)) => "new".into(),
        _ => "–".into(),
    }
}

/// A row's cells; with `interval` (a comparison of repetitions) the change's 95 % interval
/// after the change.
fn cells(r: &Row, interval: bool) -> Vec<String> {
    let kind = r.metric.kind();
    let mut v = vec![
        r.level.clone(),
        r.metric.key(),
        compact(kind, r.baseline),
        compact(kind, r.current),
        change_text(r),
    ];
    if interval {
        v.push(r.interval_text());
    }
    v.extend([
        r.limits
            .iter()
            .map(Threshold::limit_text)
            .collect::<Vec<_>>()
            .join(" "),
        r.status.word().to_string(),
    ]);
    v
}

/// The table's header and alignment, with the interval column for repetitions.
fn columns(c: &Comparison) -> (Vec<&'static str>, Vec<Align>) {
    use Align::{Left, Right};
    let mut h = vec!["Level", "Metric", "Baseline", "Current", "Change"];
    let mut a = vec![Left, Left, Right, Right, Right];
    if c.repeated {
        h.push("95% interval");
        a.push(Right);
    }
    h.extend(["Limit", "Status"]);
    a.extend([Right, Left]);
    (h, a)
}

fn verdict_line(c: &Comparison) -> String {
    match c.regression_count() {
        0 => "no regressions".to_string(),
        n => crate::analysis::text::count(n as u64, "regression"),
    }
}

/// The console table (`--format table`).
pub fn text(c: &Comparison) -> String {
    let mut out = format!(
        "baseline: {} ({})\ncurrent:  {} ({})\nlimits:   {}\n",
        c.baseline.0,
        c.baseline.1,
        c.current.0,
        c.current.1,
        if c.rules.is_empty() {
            "none".to_string()
        } else {
            c.rules.join("; ")
        }
    );
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    let (headers, aligns) = columns(c);
    let rows: Vec<Vec<String>> = c.rows.iter().map(|r| cells(r, c.repeated)).collect();
    out.push_str(&table(&headers, &aligns, &rows));
    for l in &c.only_in_current {
        let _ = writeln!(out, "{l}: only in the current run (not compared)");
    }
    out.push('\n');
    let regressed: Vec<Vec<String>> = c.regressions().map(|r| cells(r, c.repeated)).collect();
    let _ = writeln!(out, "{}", verdict_line(c));
    if !regressed.is_empty() {
        out.push_str(&table(&headers, &aligns, &regressed));
    }
    for l in &c.only_in_baseline {
        let _ = writeln!(
            out,
            "{l}: in the baseline but missing from the current run (did the run fail there?)"
        );
    }
    out
}

fn md_row(cells: &[String]) -> String {
    let escaped: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |\n", escaped.join(" | "))
}

/// Markdown for a CI comment (`--format markdown`).
pub fn markdown(c: &Comparison) -> String {
    let mut out = format!(
        "### ttftbench compare: `{}` vs baseline `{}`\n\n",
        c.current.0, c.baseline.0
    );
    let n = c.regression_count();
    let _ = writeln!(
        out,
        "{} **{}**{}\n",
        if n == 0 { "✅" } else { "❌" },
        verdict_line(c),
        if c.rules.is_empty() {
            String::new()
        } else {
            format!(" — limits: {}", c.rules.join("; "))
        }
    );
    for note in &c.notes {
        let _ = writeln!(out, "> note: {note}\n");
    }
    let (headers, aligns) = columns(c);
    let head = md_row(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    let rule = format!(
        "|{}|\n",
        aligns
            .iter()
            .map(|a| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect::<Vec<_>>()
            .join("|")
    );
    if n > 0 {
        out.push_str(&head);
        out.push_str(&rule);
        for r in c.regressions() {
            out.push_str(&md_row(&cells(r, c.repeated)));
        }
        for l in &c.only_in_baseline {
            let mut row = vec![l.clone(), "(level missing from the current run)".into()];
            row.resize(headers.len() - 1, String::new());
            row.push("MISSING".into());
            out.push_str(&md_row(&row));
        }
        out.push('\n');
    }
    out.push_str("<details><summary>All metrics</summary>\n\n");
    out.push_str(&head);
    out.push_str(&rule);
    for r in &c.rows {
        out.push_str(&md_row(&cells(r, c.repeated)));
    }
    out.push_str("\n</details>\n");
    out
}

/// Machine-readable form (`--format json`).
pub fn json(c: &Comparison) -> Value {
    json!({
        "baseline": {"label": c.baseline.0, "dir": c.baseline.1},
        "current": {"label": c.current.0, "dir": c.current.1},
        "limits": c.rules,
        "passed": c.regression_count() == 0,
        "regressions": c.regression_count(),
        "rows": c.rows.iter().map(|r| json!({
            "level": r.level,
            "metric": r.metric.key(),
            "unit": r.metric.kind().unit(),
            "baseline": r.baseline,
            "current": r.current,
            "change_pct": r.change().map(|x| x * 100.0),
            "limits": r.limits.iter().map(Threshold::limit_text).collect::<Vec<_>>(),
            "status": <&str>::from(r.status),
            "baseline_values": r.base_values.iter().map(|v| v.is_finite().then_some(*v)).collect::<Vec<_>>(),
            "current_values": r.cur_values.iter().map(|v| v.is_finite().then_some(*v)).collect::<Vec<_>>(),
            "change_interval": r.interval.map(|(lo, hi)| [lo * 100.0, hi * 100.0]),
        })).collect::<Vec<_>>(),
        "only_in_baseline": c.only_in_baseline,
        "only_in_current": c.only_in_current,
        "notes": c.notes,
    })
}

/// An HTML table of the rows with limits (the report's "compared with the previous run").
pub fn html_table(c: &Comparison) -> maud::Markup {
    maud::html! {
        div.tablewrap {
            table.compare {
                thead {
                    tr {
                        @for h in ["Level", "Metric", "Previous", "Newest", "Change", "Limit", "Status"] {
                            th { (h) }
                        }
                    }
                }
                tbody {
                    @for r in c.rows.iter().filter(|r| !r.limits.is_empty()) {
                        tr {
                            @for cell in &cells(r, false)[..6] {
                                td { (cell) }
                            }
                            @if r.is_regression() {
                                td.fail { "investigate" }
                            } @else {
                                td.pass { "ok" }
                            }
                        }
                    }
                    @for l in &c.only_in_baseline {
                        tr {
                            td { (l) }
                            td colspan="5" { "missing from the newest run" }
                            td.fail { "investigate" }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_grammar() {
        let cases: &[(&str, &str, Limit)] = &[
            (
                "time_to_first_token.p99:+10%",
                "time_to_first_token.p99:+10%",
                Limit::Relative(0.10),
            ),
            (
                "request_throughput.avg:-5%",
                "request_throughput:-5%",
                Limit::Relative(-0.05),
            ),
            (
                "ttft.p99:+50ms",
                "time_to_first_token.p99:+50ms",
                Limit::Absolute(50.0),
            ),
            (
                "request_latency.avg:+0.5s",
                "request_latency.avg:+500ms",
                Limit::Absolute(500.0),
            ),
            (
                "request_throughput:-2",
                "request_throughput:-2",
                Limit::Absolute(-2.0),
            ),
            (
                "queue_share:+5pp",
                "queue_share:+5pp",
                Limit::Absolute(0.05),
            ),
            ("error_rate:+1pp", "error_rate:+1pp", Limit::Absolute(0.01)),
        ];
        for (text, shown, limit) in cases {
            let t = parse_threshold(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(t.to_string(), *shown, "{text}");
            match (t.limit, limit) {
                (Limit::Relative(a), Limit::Relative(b))
                | (Limit::Absolute(a), Limit::Absolute(b)) => {
                    assert!((a - b).abs() < 1e-12, "{text}: {a} vs {b}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let errors: &[(&str, &str)] = &[
            ("time_to_first_token.p99", "expected METRIC:(+|-)LIMIT"),
            ("time_to_first_token.p99:10%", "needs a sign"),
            ("time_to_first_token.p99:+ten%", "not a percentage"),
            ("time_to_first_token:+10%", "name a statistic"),
            ("ttft.p99:+5pp", "pp (percentage points) only fits shares"),
            ("request_throughput:-5ms", "unit 'ms' does not fit"),
            ("bogus.p99:+1%", "unknown metric 'bogus'"),
        ];
        for (text, want) in errors {
            let e = parse_threshold(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn breach_table() {
        let t = |s: &str| parse_threshold(s).unwrap();
        // (threshold, baseline, current, breached)
        let cases: &[(&str, f64, f64, bool)] = &[
            ("time_to_first_token.p99:+10%", 100.0, 110.0, false),
            ("time_to_first_token.p99:+10%", 100.0, 110.5, true),
            ("time_to_first_token.p99:+10%", 100.0, 50.0, false),
            ("request_throughput:-5%", 100.0, 95.0, false),
            ("request_throughput:-5%", 100.0, 94.9, true),
            ("request_throughput:-5%", 100.0, 200.0, false),
            ("time_to_first_token.p99:+50ms", 100.0, 150.0, false),
            ("time_to_first_token.p99:+50ms", 100.0, 150.1, true),
            ("request_throughput:-2", 10.0, 7.9, true),
            ("queue_share:+5pp", 0.40, 0.46, true),
            ("error_rate:+10%", 0.0, 0.0, false),
            ("error_rate:+10%", 0.0, 0.01, true),
        ];
        for (s, b, c, want) in cases {
            assert_eq!(t(s).breached(*b, *c), *want, "{s} {b} → {c}");
        }
    }

    #[test]
    fn percent_flags() {
        assert_eq!(parse_percent("--max-p99-increase", "10%"), Ok(0.10));
        assert_eq!(parse_percent("--max-p99-increase", "10"), Ok(0.10));
        assert!(
            parse_percent("--max-throughput-drop", "-5%")
                .unwrap_err()
                .to_string()
                .contains("zero or more")
        );
        assert!(parse_percent("--max-throughput-drop", "five").is_err());
    }

    #[test]
    fn share_changes_in_points() {
        let row = |m: MetricRef, b: f64, c: f64| Row {
            level: "concurrency1".into(),
            metric: m,
            baseline: Some(b),
            current: Some(c),
            limits: vec![],
            status: Status::Unchecked,
            base_values: vec![b],
            cur_values: vec![c],
            interval: None,
        };
        let queue = MetricRef::System(SystemMetric::QueueShare);
        // Both round to 0.0%: nothing, not "-57.7%".
        assert_eq!(change_text(&row(queue, 0.000_4, 0.000_17)), "");
        assert_eq!(change_text(&row(queue, 0.20, 0.45)), "+25.0pp");
        assert_eq!(change_text(&row(queue, 0.1004, 0.1006)), "+0.1pp");
        let errors = MetricRef::System(SystemMetric::ErrorRate);
        assert_eq!(change_text(&row(errors, 0.0, 0.02)), "+2.0pp");
        let ttft = MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99);
        assert_eq!(change_text(&row(ttft, 100.0, 110.0)), "+10.0%");
    }

    #[test]
    fn rules_apply_to_the_right_metrics() {
        let r = Rules::seeds();
        let ttft_p99 = MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99);
        assert_eq!(r.limits_for(ttft_p99)[0].limit, Limit::Relative(0.10));
        assert!(
            r.limits_for(MetricRef::Dist(Metric::TimeToFirstToken, Stat::Avg))
                .is_empty()
        );
        assert_eq!(
            r.limits_for(MetricRef::System(SystemMetric::OutputTokenThroughput))[0].limit,
            Limit::Relative(-0.05)
        );
        // p99 of a token count is not a latency.
        assert!(
            r.limits_for(MetricRef::Dist(Metric::OutputSequenceLength, Stat::P99))
                .is_empty()
        );
    }
}
