//! Service-level objectives on a finished level: `--slo "time_to_first_token.p99<=500ms"`.
//!
//! Grammar (whitespace around the operator is allowed):
//!
//! ```text
//! objective := metric OP value [unit]
//! metric    := DIST "." STAT            time_to_first_token.p99, inter_token_latency.avg, ...
//!            | SYSTEM [".avg"]          request_throughput, output_token_throughput, error_rate, queue_share, ...
//! OP        := "<=" | "<" | ">=" | ">"
//! STAT      := avg | min | max | std | p1 | p5 | p10 | p25 | p50 | p75 | p90 | p95 | p99 | p99.9
//! unit      := ms | s | us            (times; a bare number is ms)
//!            | %                      (shares: error_rate, queue_share; a bare number is a fraction 0..1)
//!            | /s | tok/s | req/s     (throughputs, optional)
//! ```
//!
//! `DIST` is any per-request metric key of [`Metric`] (also `ttft`, `itl`); `SYSTEM` is one of
//! [`SystemMetric`]. The same metric references ([`MetricRef`]) name what `compare --threshold`
//! watches. Objectives are parsed once, in `plan`, into typed values; the evaluator only needs a
//! [`MetricSource`], so the perf_analyzer mode can check its own summaries with it.
//!
//! A metric a level has no value for (a queue share without server metrics, TTFT without
//! `--streaming`) fails its objective: a release gate that cannot be checked must not pass.

use std::fmt;

use serde::Serialize;
use serde_json::{Value, json};

use crate::stats::{LevelSummary, Metric, Stats};

/// A statistic of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stat {
    /// Mean.
    Avg,
    /// Smallest value.
    Min,
    /// Largest value.
    Max,
    /// Standard deviation.
    Std,
    /// 1st percentile.
    P1,
    /// 5th percentile.
    P5,
    /// 10th percentile.
    P10,
    /// 25th percentile.
    P25,
    /// Median.
    P50,
    /// 75th percentile.
    P75,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
}

impl Stat {
    /// Every statistic, in file order.
    pub const ALL: [Stat; 14] = [
        Stat::Avg,
        Stat::Min,
        Stat::Max,
        Stat::Std,
        Stat::P1,
        Stat::P5,
        Stat::P10,
        Stat::P25,
        Stat::P50,
        Stat::P75,
        Stat::P90,
        Stat::P95,
        Stat::P99,
        Stat::P999,
    ];

    /// The key used in files and expressions (`p99`, `p99.9`).
    pub fn key(self) -> &'static str {
        match self {
            Stat::Avg => "avg",
            Stat::Min => "min",
            Stat::Max => "max",
            Stat::Std => "std",
            Stat::P1 => "p1",
            Stat::P5 => "p5",
            Stat::P10 => "p10",
            Stat::P25 => "p25",
            Stat::P50 => "p50",
            Stat::P75 => "p75",
            Stat::P90 => "p90",
            Stat::P95 => "p95",
            Stat::P99 => "p99",
            Stat::P999 => "p99.9",
        }
    }

    /// Parses a statistic name (`mean`, `median` and `p999` are accepted too).
    pub fn parse(s: &str) -> Option<Stat> {
        match s {
            "mean" => Some(Stat::Avg),
            "median" => Some(Stat::P50),
            "p999" => Some(Stat::P999),
            _ => Stat::ALL.into_iter().find(|k| k.key() == s),
        }
    }

    /// This statistic of `s`.
    pub fn of(self, s: &Stats) -> f64 {
        match self {
            Stat::Avg => s.avg,
            Stat::Min => s.min,
            Stat::Max => s.max,
            Stat::Std => s.std,
            Stat::P1 => s.p1,
            Stat::P5 => s.p5,
            Stat::P10 => s.p10,
            Stat::P25 => s.p25,
            Stat::P50 => s.p50,
            Stat::P75 => s.p75,
            Stat::P90 => s.p90,
            Stat::P95 => s.p95,
            Stat::P99 => s.p99,
            Stat::P999 => s.p999,
        }
    }
}

/// A level-wide number (not a per-request distribution).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SystemMetric {
    /// Successful requests per second.
    RequestThroughput,
    /// Output tokens per second.
    OutputTokenThroughput,
    /// Input plus output tokens per second.
    TotalTokenThroughput,
    /// Requests per second meeting every `--goodput` objective.
    RequestGoodput,
    /// Failed requests / all measured requests (0..1).
    ErrorRate,
    /// Failed measured requests.
    ErrorCount,
    /// Successful measured requests.
    RequestCount,
    /// The server's queue time as a share of its time (0..1).
    QueueShare,
    /// The server's average queue time per request (ms).
    ServerQueueTime,
    /// The server's average compute time per request (input + infer + output, ms).
    ServerComputeTime,
}

impl SystemMetric {
    /// Every system metric.
    pub const ALL: [SystemMetric; 10] = [
        SystemMetric::RequestThroughput,
        SystemMetric::OutputTokenThroughput,
        SystemMetric::TotalTokenThroughput,
        SystemMetric::RequestGoodput,
        SystemMetric::ErrorRate,
        SystemMetric::ErrorCount,
        SystemMetric::RequestCount,
        SystemMetric::QueueShare,
        SystemMetric::ServerQueueTime,
        SystemMetric::ServerComputeTime,
    ];

    /// Key in expressions and files.
    pub fn key(self) -> &'static str {
        match self {
            SystemMetric::RequestThroughput => "request_throughput",
            SystemMetric::OutputTokenThroughput => "output_token_throughput",
            SystemMetric::TotalTokenThroughput => "total_token_throughput",
            SystemMetric::RequestGoodput => "request_goodput",
            SystemMetric::ErrorRate => "error_rate",
            SystemMetric::ErrorCount => "error_count",
            SystemMetric::RequestCount => "request_count",
            SystemMetric::QueueShare => "queue_share",
            SystemMetric::ServerQueueTime => "server_queue_time",
            SystemMetric::ServerComputeTime => "server_compute_time",
        }
    }

    fn parse(s: &str) -> Option<SystemMetric> {
        match s {
            "server_queue_share" => Some(SystemMetric::QueueShare),
            _ => SystemMetric::ALL.into_iter().find(|m| m.key() == s),
        }
    }

    fn kind(self) -> Kind {
        match self {
            SystemMetric::RequestThroughput | SystemMetric::RequestGoodput => Kind::RequestRate,
            SystemMetric::OutputTokenThroughput | SystemMetric::TotalTokenThroughput => {
                Kind::TokenRate
            }
            SystemMetric::ErrorRate | SystemMetric::QueueShare => Kind::Fraction,
            SystemMetric::ErrorCount | SystemMetric::RequestCount => Kind::Count,
            SystemMetric::ServerQueueTime | SystemMetric::ServerComputeTime => Kind::Time,
        }
    }
}

/// What a number measures, which fixes its unit and how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Milliseconds.
    Time,
    /// Tokens.
    Tokens,
    /// Tokens per second per user.
    PerUserRate,
    /// Tokens per second.
    TokenRate,
    /// Requests per second.
    RequestRate,
    /// A share, stored as 0..1 and shown as a percentage.
    Fraction,
    /// A count.
    Count,
}

impl Kind {
    /// Unit label of the stored value.
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Time => "ms",
            Kind::Tokens => "tokens",
            Kind::PerUserRate => "tokens/sec/user",
            Kind::TokenRate => "tokens/sec",
            Kind::RequestRate => "requests/sec",
            Kind::Fraction => "fraction",
            Kind::Count => "count",
        }
    }

    /// A value written for people: `188.48 ms`, `72.1%`, `981.2 tokens/sec`.
    pub fn show(self, v: f64) -> String {
        match self {
            Kind::Fraction => format!("{:.1}%", v * 100.0),
            Kind::Count => format!("{v:.0}"),
            Kind::Time => format!("{v:.2} ms"),
            other => format!("{v:.2} {}", other.unit()),
        }
    }

    /// A bound written back in the expression grammar: `500ms`, `50%`, `10`.
    fn expr(self, v: f64) -> String {
        match self {
            Kind::Time => format!("{}ms", trim_num(v)),
            Kind::Fraction => format!("{}%", trim_num(v * 100.0)),
            _ => trim_num(v),
        }
    }
}

/// Shortest decimal for a bound the user typed (`500`, `0.5`, `12.25`).
pub fn trim_num(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A number a level can be asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricRef {
    /// A statistic of a per-request metric.
    Dist(Metric, Stat),
    /// A level-wide number.
    System(SystemMetric),
}

impl MetricRef {
    /// `time_to_first_token.p99`, `request_throughput`.
    pub fn key(self) -> String {
        match self {
            MetricRef::Dist(m, s) => format!("{}.{}", m.key(), s.key()),
            MetricRef::System(m) => m.key().to_string(),
        }
    }

    /// What the value measures.
    pub fn kind(self) -> Kind {
        match self {
            MetricRef::Dist(m, _) => match m.unit() {
                crate::stats::Unit::Millis => Kind::Time,
                crate::stats::Unit::Tokens => Kind::Tokens,
                crate::stats::Unit::TokensPerSecPerUser => Kind::PerUserRate,
            },
            MetricRef::System(s) => s.kind(),
        }
    }

    /// Whether a smaller value is better (latencies, errors, queueing).
    pub fn lower_is_better(self) -> bool {
        match self {
            MetricRef::Dist(Metric::OutputTokenThroughputPerUser, _) => false,
            MetricRef::Dist(..) => true,
            MetricRef::System(s) => !matches!(
                s,
                SystemMetric::RequestThroughput
                    | SystemMetric::OutputTokenThroughput
                    | SystemMetric::TotalTokenThroughput
                    | SystemMetric::RequestGoodput
                    | SystemMetric::RequestCount
            ),
        }
    }

    /// Parses `metric.stat` or a system metric (optionally with `.avg`, as the JSON files
    /// write system metrics).
    pub fn parse(s: &str) -> Result<MetricRef, String> {
        let s = s.trim();
        let (name, stat) = match s.split_once('.') {
            Some((n, st)) => (n, Some(st)),
            None => (s, None),
        };
        if let Some(sys) = SystemMetric::parse(name) {
            return match stat {
                None | Some("avg") => Ok(MetricRef::System(sys)),
                Some(other) => Err(format!(
                    "'{name}' is a single number per level; it has no statistic '{other}' (write {name} or {name}.avg)"
                )),
            };
        }
        let Some(metric) = Metric::from_key(name) else {
            return Err(format!(
                "unknown metric '{name}'; per-request metrics (with a statistic): {}; level metrics: {}",
                Metric::ALL.map(Metric::key).join(", "),
                SystemMetric::ALL.map(SystemMetric::key).join(", ")
            ));
        };
        let Some(stat) = stat else {
            return Err(format!(
                "'{name}' is a distribution: name a statistic, e.g. {name}.p99 or {name}.avg"
            ));
        };
        let stat = Stat::parse(stat).ok_or_else(|| {
            format!(
                "unknown statistic '{stat}' for {name}; valid: {}",
                Stat::ALL.map(Stat::key).join(", ")
            )
        })?;
        Ok(MetricRef::Dist(metric, stat))
    }
}

impl fmt::Display for MetricRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// Anything that can answer "what is this metric's value": a level's summary here, a
/// perf_analyzer-mode summary later.
pub trait MetricSource {
    /// The value in the metric's [`Kind`] unit, or `None` when the level has none.
    fn metric(&self, m: MetricRef) -> Option<f64>;
}

impl MetricSource for LevelSummary {
    fn metric(&self, m: MetricRef) -> Option<f64> {
        let st = &self.stats;
        match m {
            MetricRef::Dist(metric, stat) => crate::report::shown_stat(self, metric)
                .filter(|s| s.count > 0)
                .map(|s| stat.of(s)),
            MetricRef::System(s) => match s {
                SystemMetric::RequestThroughput => Some(st.request_throughput),
                SystemMetric::OutputTokenThroughput => Some(st.output_token_throughput),
                SystemMetric::TotalTokenThroughput => Some(st.total_token_throughput),
                SystemMetric::RequestGoodput => st.request_goodput,
                SystemMetric::ErrorRate => {
                    let all = st.request_count + st.error_count;
                    (all > 0).then(|| st.error_count as f64 / all as f64)
                }
                SystemMetric::ErrorCount => Some(st.error_count as f64),
                SystemMetric::RequestCount => Some(st.request_count as f64),
                SystemMetric::QueueShare => self.server.as_ref().and_then(|d| d.queue_share),
                SystemMetric::ServerQueueTime => self.server.as_ref().and_then(|d| d.avg_queue_ms),
                SystemMetric::ServerComputeTime => self.server.as_ref().map(|d| {
                    d.avg_compute_input_ms + d.avg_compute_infer_ms + d.avg_compute_output_ms
                }),
            },
        }
    }
}

/// Comparison operator of an objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<=`
    Le,
    /// `<`
    Lt,
    /// `>=`
    Ge,
    /// `>`
    Gt,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }

    /// Whether `actual OP bound` holds.
    pub fn holds(self, actual: f64, bound: f64) -> bool {
        match self {
            Op::Le => actual <= bound,
            Op::Lt => actual < bound,
            Op::Ge => actual >= bound,
            Op::Gt => actual > bound,
        }
    }
}

/// One objective: `metric OP bound`, the bound in the metric's [`Kind`] unit (ms, fraction, /s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    /// What is checked.
    pub metric: MetricRef,
    /// How.
    pub op: Op,
    /// Against what.
    pub bound: f64,
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.metric,
            self.op.symbol(),
            self.metric.kind().expr(self.bound)
        )
    }
}

impl Serialize for Slo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// Parses a value with an optional unit into the metric's stored unit.
pub fn parse_value(raw: &str, kind: Kind) -> Result<f64, String> {
    let t = raw.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{t}' does not start with a number"))?;
    if !v.is_finite() {
        return Err(format!("'{t}' is not a finite number"));
    }
    let bad_unit = |valid: &str| {
        Err(format!(
            "unit '{unit}' does not fit a value in {}; use {valid}",
            kind.unit()
        ))
    };
    match kind {
        Kind::Time => match unit.as_str() {
            "" | "ms" => Ok(v),
            "s" | "sec" => Ok(v * 1000.0),
            "us" | "µs" => Ok(v / 1000.0),
            _ => bad_unit("ms, s or us"),
        },
        Kind::Fraction => match unit.as_str() {
            "%" => Ok(v / 100.0),
            "" if (0.0..=1.0).contains(&v) => Ok(v),
            "" => Err(format!(
                "'{t}' is a share: write it as a percentage ({v}%) or a fraction between 0 and 1"
            )),
            _ => bad_unit("% (or a bare fraction 0..1)"),
        },
        Kind::TokenRate => match unit.as_str() {
            "" | "/s" | "tok/s" | "tokens/s" | "tokens/sec" => Ok(v),
            _ => bad_unit("tok/s (or no unit)"),
        },
        Kind::RequestRate => match unit.as_str() {
            "" | "/s" | "req/s" | "requests/s" | "requests/sec" => Ok(v),
            _ => bad_unit("req/s (or no unit)"),
        },
        Kind::PerUserRate => match unit.as_str() {
            "" | "tok/s/user" | "tokens/sec/user" => Ok(v),
            _ => bad_unit("tok/s/user (or no unit)"),
        },
        Kind::Tokens => match unit.as_str() {
            "" | "tokens" | "tok" => Ok(v),
            _ => bad_unit("tokens (or no unit)"),
        },
        Kind::Count => match unit.as_str() {
            "" => Ok(v),
            _ => bad_unit("no unit"),
        },
    }
}

/// Parses one `--slo` expression.
pub fn parse(raw: &str) -> Result<Slo, String> {
    let t = raw.trim();
    let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
    let (at, op_str, op) = ops
        .iter()
        .filter_map(|(s, op)| t.find(s).map(|i| (i, *s, *op)))
        .min_by_key(|(i, s, _)| (*i, std::cmp::Reverse(s.len())))
        .ok_or_else(|| {
            format!(
                "--slo '{t}': expected METRIC OP VALUE with OP one of <= < >= >, e.g. \"time_to_first_token.p99<=500ms\" or \"queue_share<=50%\""
            )
        })?;
    let metric = MetricRef::parse(&t[..at]).map_err(|e| format!("--slo '{t}': {e}"))?;
    let value = &t[at + op_str.len()..];
    if value.trim().is_empty() {
        return Err(format!("--slo '{t}': no value after '{op_str}'"));
    }
    let bound = parse_value(value, metric.kind()).map_err(|e| format!("--slo '{t}': {e}"))?;
    Ok(Slo { metric, op, bound })
}

/// The outcome of one objective on one level.
#[derive(Debug, Clone, PartialEq)]
pub struct SloResult {
    /// The objective.
    pub slo: Slo,
    /// The level's value, when it has one.
    pub actual: Option<f64>,
    /// Whether the objective holds (a missing value does not).
    pub passed: bool,
}

impl SloResult {
    /// `PASS time_to_first_token.p99<=500ms: 188.48 ms` and, for a missing value, why.
    pub fn line(&self) -> String {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        let kind = self.slo.metric.kind();
        match self.actual {
            Some(v) => format!("{verdict} {}: {}", self.slo, kind.show(v)),
            None => format!(
                "{verdict} {}: no value ({})",
                self.slo,
                missing_reason(self.slo.metric)
            ),
        }
    }
}

/// Why a level may have no value for a metric, and what to do.
pub fn missing_reason(m: MetricRef) -> &'static str {
    match m {
        MetricRef::System(
            SystemMetric::QueueShare
            | SystemMetric::ServerQueueTime
            | SystemMetric::ServerComputeTime,
        ) => {
            "the server's queue/compute counters were not read: give --server-metrics-url or -H 'triton-access-token: ...' for the statistics API"
        }
        MetricRef::System(SystemMetric::RequestGoodput) => "give --goodput objectives",
        MetricRef::System(SystemMetric::ErrorRate) => "no request was measured",
        MetricRef::Dist(m, _) if m.streaming_only() => {
            "no streamed tokens: profile with --streaming"
        }
        _ => "the level has no samples of this metric",
    }
}

/// Checks every objective against one level.
pub fn evaluate(slos: &[Slo], src: &impl MetricSource) -> Vec<SloResult> {
    slos.iter()
        .map(|slo| {
            let actual = src.metric(slo.metric).filter(|v| v.is_finite());
            SloResult {
                slo: *slo,
                actual,
                passed: actual.is_some_and(|v| slo.op.holds(v, slo.bound)),
            }
        })
        .collect()
}

/// The `slo` array of a level's JSON: one object per objective, numbers in the metric's unit.
pub fn json(results: &[SloResult]) -> Value {
    Value::Array(
        results
            .iter()
            .map(|r| {
                json!({
                    "objective": r.slo.to_string(),
                    "metric": r.slo.metric.key(),
                    "op": r.slo.op.symbol(),
                    "bound": r.slo.bound,
                    "unit": r.slo.metric.kind().unit(),
                    "actual": r.actual,
                    "passed": r.passed,
                })
            })
            .collect(),
    )
}

/// The console's SLO block after the results table: one line per objective across the levels
/// (`(load label, results)` pairs, in level order), then the tally.
pub fn console_lines(levels: &[(String, Vec<SloResult>)]) -> Vec<String> {
    let Some((_, first)) = levels.iter().find(|(_, r)| !r.is_empty()) else {
        return vec![];
    };
    let mut out = Vec::new();
    for (i, slo) in first.iter().map(|r| r.slo).enumerate() {
        let cells: Vec<String> = levels
            .iter()
            .filter_map(|(name, rs)| {
                let r = rs.get(i)?;
                Some(format!(
                    "{name} {} {}",
                    if r.passed { "PASS" } else { "FAIL" },
                    r.actual
                        .map_or_else(|| "no value".to_string(), |v| slo.metric.kind().show(v))
                ))
            })
            .collect();
        out.push(format!("SLO {slo}: {}", cells.join(" · ")));
    }
    let total: usize = levels.iter().map(|(_, r)| r.len()).sum();
    let failed: usize = levels
        .iter()
        .map(|(_, r)| r.iter().filter(|x| !x.passed).count())
        .sum();
    out.push(if failed == 0 {
        format!("SLO: all {total} checks passed")
    } else {
        format!("SLO: {failed} of {total} checks failed (exit code 1)")
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Stimulus;
    use crate::server_metrics::ServerDelta;
    use crate::stats::LevelStats;

    #[test]
    fn parse_table() {
        let cases: &[(&str, &str, Op, f64)] = &[
            (
                "time_to_first_token.p99<=500ms",
                "time_to_first_token.p99",
                Op::Le,
                500.0,
            ),
            ("ttft.p99 <= 0.5s", "time_to_first_token.p99", Op::Le, 500.0),
            (
                "inter_token_latency.avg<2000us",
                "inter_token_latency.avg",
                Op::Lt,
                2.0,
            ),
            (
                "request_latency.p99.9<=3000",
                "request_latency.p99.9",
                Op::Le,
                3000.0,
            ),
            ("queue_share<=50%", "queue_share", Op::Le, 0.5),
            ("error_rate<0.01", "error_rate", Op::Lt, 0.01),
            (
                "request_throughput.avg>=8000",
                "request_throughput",
                Op::Ge,
                8000.0,
            ),
            (
                "output_token_throughput>900tok/s",
                "output_token_throughput",
                Op::Gt,
                900.0,
            ),
            (
                "output_token_throughput_per_user.p50>=20",
                "output_token_throughput_per_user.p50",
                Op::Ge,
                20.0,
            ),
        ];
        for (text, key, op, bound) in cases {
            let s = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(s.metric.key(), *key, "{text}");
            assert_eq!(s.op, *op, "{text}");
            assert!((s.bound - bound).abs() < 1e-12, "{text}: {}", s.bound);
        }
    }

    #[test]
    fn parse_errors_say_what_to_write() {
        let cases: &[(&str, &str)] = &[
            ("time_to_first_token<=500", "name a statistic"),
            ("time_to_first_token.p42<=500", "unknown statistic 'p42'"),
            ("ttfx.p99<=500", "unknown metric 'ttfx'"),
            ("queue_share<=50", "write it as a percentage (50%)"),
            ("time_to_first_token.p99<=500%", "unit '%' does not fit"),
            ("time_to_first_token.p99=500", "expected METRIC OP VALUE"),
            ("time_to_first_token.p99<=", "no value after '<='"),
            (
                "time_to_first_token.p99<=fast",
                "does not start with a number",
            ),
            ("request_throughput.p99>=1", "has no statistic 'p99'"),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "time_to_first_token.p99<=500ms",
            "queue_share<=50%",
            "request_throughput>=8000",
            "error_rate<0.5%",
            "request_latency.p99.9>12.5ms",
        ] {
            let s = parse(text).unwrap();
            assert_eq!(s.to_string(), text);
            assert_eq!(parse(&s.to_string()).unwrap(), s);
        }
    }

    fn level(ttft_p99: f64, queue_share: Option<f64>, errors: u64) -> LevelSummary {
        LevelSummary {
            stimulus: Stimulus::Concurrency(8),
            stats: LevelStats {
                metrics: vec![(
                    Metric::TimeToFirstToken,
                    Stats {
                        count: 10,
                        avg: ttft_p99 / 2.0,
                        p99: ttft_p99,
                        ..Stats::default()
                    },
                )],
                request_count: 90,
                error_count: errors,
                errors: vec![],
                warmup_count: 0,
                duration_s: 1.0,
                output_token_throughput: 1000.0,
                total_token_throughput: 3000.0,
                request_throughput: 9.0,
                request_goodput: None,
                osl_mismatch: 0,
                short_outputs: 0,
            },
            server: queue_share.map(|q| ServerDelta {
                source: "statistics",
                requests: 90,
                failures: 0,
                executions: 9,
                avg_request_ms: 100.0,
                avg_queue_ms: Some(q * 100.0),
                avg_compute_input_ms: 0.0,
                avg_compute_infer_ms: (1.0 - q) * 100.0,
                avg_compute_output_ms: 0.0,
                queue_share: Some(q),
                max_pending: 0.0,
            }),
            streaming: true,
            interrupted: false,
            started_unix_ns: 0,
            validity: Default::default(),
        }
    }

    #[test]
    fn evaluate_table() {
        let slos: Vec<Slo> = [
            "time_to_first_token.p99<=500ms",
            "queue_share<=50%",
            "error_rate<=5%",
            "request_throughput>=10",
        ]
        .iter()
        .map(|s| parse(s).unwrap())
        .collect();
        // (ttft p99, queue share, errors) → pass/fail per objective
        let cases: &[(f64, Option<f64>, u64, [bool; 4])] = &[
            (188.0, Some(0.2), 0, [true, true, true, false]),
            (500.0, Some(0.5), 10, [true, true, false, false]),
            (612.0, Some(0.72), 0, [false, false, true, false]),
            (100.0, None, 0, [true, false, true, false]),
        ];
        for (ttft, q, errors, want) in cases {
            let r = evaluate(&slos, &level(*ttft, *q, *errors));
            let got: Vec<bool> = r.iter().map(|x| x.passed).collect();
            assert_eq!(got, want, "ttft {ttft} queue {q:?} errors {errors}");
        }
        let r = evaluate(&slos, &level(612.0, None, 0));
        assert_eq!(
            r[0].line(),
            "FAIL time_to_first_token.p99<=500ms: 612.00 ms"
        );
        assert!(r[1].line().starts_with(
            "FAIL queue_share<=50%: no value (the server's queue/compute counters were not read"
        ));
        let mut no_stream = level(100.0, None, 0);
        no_stream.streaming = false;
        let r = evaluate(&slos[..1], &no_stream);
        assert!(!r[0].passed);
        assert!(r[0].line().contains("profile with --streaming"));
    }

    #[test]
    fn console_lines_exact() {
        let slos = [
            parse("time_to_first_token.p99<=500ms").unwrap(),
            parse("queue_share<=50%").unwrap(),
        ];
        let levels: Vec<(String, Vec<SloResult>)> = [
            ("concurrency 1", level(30.0, Some(0.1), 0)),
            ("8", level(612.0, None, 0)),
        ]
        .into_iter()
        .map(|(n, l)| (n.to_string(), evaluate(&slos, &l)))
        .collect();
        assert_eq!(
            console_lines(&levels),
            [
                "SLO time_to_first_token.p99<=500ms: concurrency 1 PASS 30.00 ms · 8 FAIL 612.00 ms",
                "SLO queue_share<=50%: concurrency 1 PASS 10.0% · 8 FAIL no value",
                "SLO: 2 of 4 checks failed (exit code 1)",
            ]
        );
        assert!(console_lines(&[("1".into(), vec![])]).is_empty());
    }

    #[test]
    fn json_exact() {
        let slos = [parse("queue_share<=50%").unwrap()];
        let r = evaluate(&slos, &level(1.0, Some(0.25), 0));
        assert_eq!(
            json(&r).to_string(),
            r#"[{"objective":"queue_share<=50%","metric":"queue_share","op":"<=","bound":0.5,"unit":"fraction","actual":0.25,"passed":true}]"#
        );
    }
}
