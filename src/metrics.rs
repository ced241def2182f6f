//! The vocabulary of measurement: per-request metrics and their units, the statistics of a
//! distribution, level-wide metrics, the objectives written on them (`--slo`, `--goodput`,
//! `compare --threshold`), the source trait that SLO, knee and compare code read, and the
//! validity verdict every level carries.
//!
//! Objectives: `--slo "time_to_first_token.p99<=500ms"`.
//!
//! Grammar (whitespace around the operator is allowed):
//!
//! ```text
//! objective := metric OP value [unit]
//! metric    := DIST "." STAT            time_to_first_token.p99, inter_token_latency.avg, ...
//!            | SYSTEM [".avg"]          request_throughput, output_token_throughput, error_rate, queue_share,
//!                                     kv_cache_usage, preemptions, ...
//! OP        := "<=" | "<" | ">=" | ">"
//! STAT      := avg | min | max | std | p1 | p5 | p10 | p25 | p50 | p75 | p90 | p95 | p99 | p99.9
//! unit      := ms | s | us            (times; a bare number is ms)
//!            | %                      (shares: error_rate, queue_share, kv_cache_usage; a bare number is a fraction 0..1)
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

pub mod buckets;
pub mod gpu;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::record::RequestRecord;

/// A per-request metric with a distribution. Its key in CSV, JSON and `--goodput` / `--slo`
/// expressions is the variant's snake_case name or its `strum` name; the other names read back
/// are GenAI-Perf's legacy ones (`crate::names`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum Metric {
    /// First content-bearing response minus the actual send.
    #[strum(to_string = "time_to_first_token", serialize = "ttft")]
    TimeToFirstToken,
    /// First response with answer text (past the reasoning) minus the actual send: AIPerf's
    /// time_to_first_output_token. Only requests whose responses streamed reasoning have one, so
    /// only levels that saw reasoning list it.
    #[strum(to_string = "time_to_first_output_token", serialize = "ttfo")]
    TimeToFirstOutputToken,
    /// Second content-bearing response minus the first.
    #[strum(to_string = "time_to_second_token", serialize = "ttst")]
    TimeToSecondToken,
    /// Last content-bearing response minus the actual send.
    #[strum(
        to_string = "request_latency",
        serialize = "e2e_latency",
        serialize = "latency"
    )]
    RequestLatency,
    /// (latency − TTFT) / (OSL − 1) per request.
    #[strum(to_string = "inter_token_latency", serialize = "itl")]
    InterTokenLatency,
    /// 1 / ITL per request.
    OutputTokenThroughputPerUser,
    /// Output tokens per request, reasoning included (AIPerf's OSL); the answer alone is OSL
    /// minus [`Metric::ReasoningTokenCount`].
    OutputSequenceLength,
    /// Reasoning tokens per request (the tokenizer's count of the reasoning text), for requests
    /// whose responses streamed reasoning.
    ReasoningTokenCount,
    /// Input tokens per request.
    InputSequenceLength,
    /// First response byte minus the actual send.
    TimeToFirstByte,
    /// Every gap between consecutive content-bearing responses, pooled over requests.
    InterChunkLatency,
    /// First token minus the intended send time (coordinated-omission corrected).
    #[strum(to_string = "time_to_first_token_from_intended")]
    TimeToFirstTokenIntended,
    /// Last token minus the intended send time (coordinated-omission corrected).
    #[strum(to_string = "request_latency_from_intended")]
    RequestLatencyIntended,
    /// Actual send minus intended send.
    SendLag,
    /// The server's own prompt processing time (llama.cpp's `timings.prompt_ms`: from the
    /// request taking a slot to its first token's logits), for responses that carry timings.
    ServerPrefillTime,
    /// Client TTFT minus [`Metric::ServerPrefillTime`], per request: the transport, the HTTP
    /// layer, tokenization and the wait for a free slot.
    ClientMinusServerTtft,
    /// The server's own generation time (llama.cpp's `timings.predicted_ms`: first token to
    /// last), for responses that carry timings.
    ServerDecodeTime,
    /// Prompt tokens the server reused from its cache (llama.cpp's `timings.cache_n`), for
    /// responses that carry timings.
    CachedPromptTokens,
    /// First response carrying a tool call's argument text minus the actual send, for requests
    /// whose response called a tool.
    #[strum(to_string = "time_to_first_tool_token", serialize = "ttftt")]
    TimeToFirstToolToken,
}

crate::names::serde_by_name!(Metric);

/// How a metric's raw integer samples are stored and shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Stored in ns, shown in ms.
    Millis,
    /// Stored and shown as whole tokens.
    Tokens,
    /// Stored in milli-tokens per second, shown in tokens/sec/user.
    TokensPerSecPerUser,
}

impl Unit {
    /// Label written in the `unit` column / field.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Millis => "ms",
            Unit::Tokens => "tokens",
            Unit::TokensPerSecPerUser => "tokens/sec/user",
        }
    }

    /// Factor from the stored integer to the shown value.
    pub fn scale(self) -> f64 {
        match self {
            Unit::Millis => 1e-6,
            Unit::Tokens => 1.0,
            Unit::TokensPerSecPerUser => 1e-3,
        }
    }
}

impl Metric {
    /// Every metric, in the order files list them (GenAI-Perf's order first): the order of
    /// declaration.
    pub const ALL: &'static [Metric] = <Metric as strum::VariantArray>::VARIANTS;

    /// The snake_case key used in CSV, JSON and `--goodput` / `--slo` expressions.
    pub fn key(self) -> &'static str {
        self.into()
    }

    /// Title-case label with unit, as GenAI-Perf's console shows it.
    pub fn label(self) -> &'static str {
        match self {
            Metric::TimeToFirstToken => "Time To First Token (ms)",
            Metric::TimeToFirstOutputToken => "Time To First Output Token (ms)",
            Metric::TimeToSecondToken => "Time To Second Token (ms)",
            Metric::RequestLatency => "Request Latency (ms)",
            Metric::InterTokenLatency => "Inter Token Latency (ms)",
            Metric::OutputTokenThroughputPerUser => {
                "Output Token Throughput Per User (tokens/sec/user)"
            }
            Metric::OutputSequenceLength => "Output Sequence Length (tokens)",
            Metric::ReasoningTokenCount => "Reasoning Token Count (tokens)",
            Metric::InputSequenceLength => "Input Sequence Length (tokens)",
            Metric::TimeToFirstByte => "Time To First Byte (ms)",
            Metric::InterChunkLatency => "Inter Chunk Latency (ms)",
            Metric::TimeToFirstTokenIntended => "Time To First Token From Intended Send (ms)",
            Metric::RequestLatencyIntended => "Request Latency From Intended Send (ms)",
            Metric::SendLag => "Send Lag (ms)",
            Metric::ServerPrefillTime => "Server Prefill Time (ms)",
            Metric::ClientMinusServerTtft => "Client Minus Server TTFT (ms)",
            Metric::ServerDecodeTime => "Server Decode Time (ms)",
            Metric::CachedPromptTokens => "Cached Prompt Tokens (tokens)",
            Metric::TimeToFirstToolToken => "Time To First Tool Token (ms)",
        }
    }

    /// Storage and display unit.
    pub fn unit(self) -> Unit {
        match self {
            Metric::OutputSequenceLength
            | Metric::ReasoningTokenCount
            | Metric::InputSequenceLength
            | Metric::CachedPromptTokens => Unit::Tokens,
            Metric::OutputTokenThroughputPerUser => Unit::TokensPerSecPerUser,
            _ => Unit::Millis,
        }
    }

    /// Metrics that only mean something when responses stream token by token.
    pub fn streaming_only(self) -> bool {
        matches!(
            self,
            Metric::TimeToFirstToken
                | Metric::TimeToFirstOutputToken
                | Metric::TimeToSecondToken
                | Metric::InterTokenLatency
                | Metric::OutputTokenThroughputPerUser
                | Metric::InterChunkLatency
                | Metric::TimeToFirstTokenIntended
                | Metric::ClientMinusServerTtft
                | Metric::TimeToFirstToolToken
        )
    }

    /// Metrics that only differ from their plain versions under an open-loop schedule.
    pub fn open_loop_only(self) -> bool {
        matches!(
            self,
            Metric::TimeToFirstTokenIntended | Metric::RequestLatencyIntended | Metric::SendLag
        )
    }

    /// Parses a snake_case key (also accepts GenAI-Perf's legacy names).
    pub fn from_key(key: &str) -> Option<Metric> {
        key.trim().parse().ok()
    }

    /// Position in [`Metric::ALL`], for arrays indexed by metric.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// How a percentile is computed from the samples (`stats` reads it off the histogram). Its
/// name on the command line and in the JSON files is its kebab-case name.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
    strum::Display,
)]
#[strum(serialize_all = "kebab-case")]
pub enum PercentileMethod {
    /// numpy's default (GenAI-Perf, vLLM bench, AIPerf): the position `(n−1)·q` in the sorted
    /// samples, interpolated linearly between the two neighbouring samples.
    #[default]
    #[value(
        help = "numpy's default linear interpolation between neighbouring samples (GenAI-Perf, vLLM bench)"
    )]
    Linear,
    /// perf_analyzer's nearest rank: the sample at position `(n−1)·q` rounded half up.
    #[value(help = "The sample at rank (n-1)·p rounded half up (perf_analyzer)")]
    NearestRank,
}

crate::names::serde_by_name!(PercentileMethod);

impl PercentileMethod {
    /// The name used on the command line and in the JSON files.
    pub fn key(self) -> &'static str {
        self.into()
    }
}

/// Summary statistics of one metric, in its display unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Samples.
    pub count: u64,
    /// Mean (exact, from running sums).
    pub avg: f64,
    /// Smallest sample (exact).
    pub min: f64,
    /// Largest sample (exact).
    pub max: f64,
    /// Population standard deviation (exact, from running sums).
    pub std: f64,
    /// Percentiles by the level's [`PercentileMethod`], within [min, max] and within 0.05 % of
    /// the exact value on the samples (exact below 2048 stored units).
    pub p1: f64,
    #[allow(missing_docs)]
    pub p5: f64,
    #[allow(missing_docs)]
    pub p10: f64,
    #[allow(missing_docs)]
    pub p25: f64,
    #[allow(missing_docs)]
    pub p50: f64,
    #[allow(missing_docs)]
    pub p75: f64,
    #[allow(missing_docs)]
    pub p90: f64,
    #[allow(missing_docs)]
    pub p95: f64,
    #[allow(missing_docs)]
    pub p99: f64,
    #[allow(missing_docs)]
    pub p999: f64,
}

impl Stats {
    /// `count` samples whose every statistic is `f` of it (a reader's fields by key).
    pub fn from_fn(count: u64, f: impl Fn(Stat) -> f64) -> Stats {
        Stats {
            count,
            avg: f(Stat::Avg),
            min: f(Stat::Min),
            max: f(Stat::Max),
            std: f(Stat::Std),
            p1: f(Stat::P1),
            p5: f(Stat::P5),
            p10: f(Stat::P10),
            p25: f(Stat::P25),
            p50: f(Stat::P50),
            p75: f(Stat::P75),
            p90: f(Stat::P90),
            p95: f(Stat::P95),
            p99: f(Stat::P99),
            p999: f(Stat::P999),
        }
    }
}

/// Average and maximum of a gauge over a level's samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugeStats {
    /// Mean of the samples.
    pub avg: f64,
    /// Largest sample.
    pub max: f64,
    /// Samples taken.
    pub samples: u32,
}

/// A service-level objective on one per-request metric, used for goodput: a request is good when
/// it meets every objective.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Objective {
    /// Which metric.
    pub metric: Metric,
    /// Bound in the metric's display unit (ms for times, tokens/sec/user for per-user throughput).
    pub bound: f64,
}

impl Objective {
    /// Whether a request meets the objective. Time metrics must be at most the bound, throughput
    /// at least; a metric the request does not have (ITL of a one-token answer) cannot be missed.
    pub fn met_by(&self, rec: &RequestRecord) -> bool {
        per_request_value(self.metric, rec).is_none_or(|v| {
            let shown = v as f64 * self.metric.unit().scale();
            if self.metric == Metric::OutputTokenThroughputPerUser {
                shown >= self.bound
            } else {
                shown <= self.bound
            }
        })
    }
}

/// The stored-unit value of a per-request metric, when the request has one.
pub fn per_request_value(metric: Metric, rec: &RequestRecord) -> Option<u64> {
    match metric {
        Metric::TimeToFirstToken => rec.ttft_ns(),
        Metric::TimeToFirstOutputToken => rec.ttfo_ns(),
        Metric::TimeToSecondToken => rec.ttst_ns(),
        Metric::RequestLatency => rec.latency_ns(),
        Metric::InterTokenLatency => rec.itl_ns(),
        Metric::OutputTokenThroughputPerUser => rec
            .tokens_per_sec_per_user()
            .map(|v| (v * 1e3).round() as u64),
        // A batch request (embeddings, rankings) generates no tokens: it has no OSL at all.
        Metric::OutputSequenceLength => (!rec.batch()).then_some(u64::from(rec.osl)),
        Metric::ReasoningTokenCount => rec.reasoning_tokens.map(u64::from),
        Metric::InputSequenceLength => Some(u64::from(rec.isl)),
        Metric::TimeToFirstByte => rec.ttfb_ns(),
        Metric::InterChunkLatency => None,
        Metric::TimeToFirstTokenIntended => rec.ttft_intended_ns(),
        Metric::RequestLatencyIntended => rec.latency_intended_ns(),
        Metric::SendLag => Some(rec.send_lag_ns()),
        Metric::ServerPrefillTime => rec
            .server_timings
            .map(|t| t.prefill_us.saturating_mul(1000)),
        Metric::ClientMinusServerTtft => rec.ttft_outside_prefill_ns(),
        Metric::ServerDecodeTime => rec.server_timings.map(|t| t.decode_us.saturating_mul(1000)),
        Metric::CachedPromptTokens => rec.server_timings.map(|t| u64::from(t.cached_tokens)),
        Metric::TimeToFirstToolToken => rec.ttft_tool_ns(),
    }
}

/// A statistic of a distribution; its key in files and expressions is its lower-case name
/// (`p99.9` for [`Stat::P999`]), `mean`, `median` and `p999` read back too.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum Stat {
    /// Mean.
    #[strum(to_string = "avg", serialize = "mean")]
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
    #[strum(to_string = "p50", serialize = "median")]
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
    #[strum(to_string = "p99.9", serialize = "p999")]
    P999,
}

impl Stat {
    /// Every statistic, in file order: the order of declaration.
    pub const ALL: &'static [Stat] = <Stat as strum::VariantArray>::VARIANTS;

    /// The key used in files and expressions (`p99`, `p99.9`).
    pub fn key(self) -> &'static str {
        self.into()
    }

    /// The quantile (0..1) a percentile statistic estimates; `None` for the others.
    pub fn quantile(self) -> Option<f64> {
        Some(match self {
            Stat::P1 => 0.01,
            Stat::P5 => 0.05,
            Stat::P10 => 0.10,
            Stat::P25 => 0.25,
            Stat::P50 => 0.50,
            Stat::P75 => 0.75,
            Stat::P90 => 0.90,
            Stat::P95 => 0.95,
            Stat::P99 => 0.99,
            Stat::P999 => 0.999,
            Stat::Avg | Stat::Min | Stat::Max | Stat::Std => return None,
        })
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

/// A level-wide number (not a per-request distribution); its key in expressions and files is
/// its snake_case name or its `strum` name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
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
    /// The server's queue time as a share of its time (0..1): the engine's own queue where it
    /// has one (vLLM, SGLang, TGI; TensorRT-LLM's estimated from its waiting requests), else
    /// Triton's.
    #[strum(to_string = "queue_share", serialize = "server_queue_share")]
    QueueShare,
    /// The server's average queue time per request (ms), from the same source.
    ServerQueueTime,
    /// The server's average time per request after its queue (ms): the engine's prefill plus
    /// decode, or Triton's compute input + infer + output.
    ServerComputeTime,
    /// The engine's KV-cache usage at its peak during the level (0..1).
    KvCacheUsage,
    /// Requests the engine preempted (evicted for KV-cache space) during the level.
    Preemptions,
    /// Inputs answered per second: texts embedded or passages ranked (embeddings, rankings).
    InputThroughput,
    /// Input tokens per second (embeddings, rankings: their whole throughput in tokens).
    InputTokenThroughput,
    /// Successful requests offered tools whose response called one, as a share of those
    /// offered tools (0..1).
    ToolCallShare,
    /// Requests that called a tool whose every call's arguments parse as JSON, as a share of
    /// those that called one (0..1).
    ToolArgsValidShare,
    /// Graded answers that were right, as a share of those graded (0..1; scored workloads).
    Accuracy,
    /// Prompts whose temperature-0 output differed from their reference output (their first
    /// in the run), as a share of those compared (0..1; scored workloads).
    AnswerChangedShare,
    /// TTFT p99's trend over the level's timeline, as a share of its median per hour (a soak's
    /// drift; see `stats::trend`); 0 when the trend is not a drift.
    #[strum(to_string = "ttft_p99_drift_per_hour")]
    TtftP99Drift,
    /// Request latency p99's trend, as a share of its median per hour.
    #[strum(to_string = "latency_p99_drift_per_hour")]
    LatencyP99Drift,
    /// Output throughput's trend, as a share of its median per hour (negative: it falls).
    #[strum(to_string = "throughput_drift_per_hour")]
    ThroughputDrift,
}

impl SystemMetric {
    /// Every system metric: the order of declaration.
    pub const ALL: &'static [SystemMetric] = <SystemMetric as strum::VariantArray>::VARIANTS;

    /// Key in expressions and files.
    pub fn key(self) -> &'static str {
        self.into()
    }

    fn kind(self) -> Kind {
        match self {
            SystemMetric::RequestThroughput | SystemMetric::RequestGoodput => Kind::RequestRate,
            SystemMetric::OutputTokenThroughput
            | SystemMetric::TotalTokenThroughput
            | SystemMetric::InputTokenThroughput => Kind::TokenRate,
            SystemMetric::InputThroughput => Kind::InputRate,
            SystemMetric::ErrorRate
            | SystemMetric::QueueShare
            | SystemMetric::KvCacheUsage
            | SystemMetric::ToolCallShare
            | SystemMetric::ToolArgsValidShare
            | SystemMetric::Accuracy
            | SystemMetric::AnswerChangedShare
            | SystemMetric::TtftP99Drift
            | SystemMetric::LatencyP99Drift
            | SystemMetric::ThroughputDrift => Kind::Fraction,
            SystemMetric::ErrorCount | SystemMetric::RequestCount | SystemMetric::Preemptions => {
                Kind::Count
            }
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
    /// Inputs (texts, passages) per second.
    InputRate,
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
            Kind::InputRate => "inputs/sec",
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
                crate::metrics::Unit::Millis => Kind::Time,
                crate::metrics::Unit::Tokens => Kind::Tokens,
                crate::metrics::Unit::TokensPerSecPerUser => Kind::PerUserRate,
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
                    | SystemMetric::InputThroughput
                    | SystemMetric::InputTokenThroughput
                    | SystemMetric::ToolCallShare
                    | SystemMetric::ToolArgsValidShare
                    | SystemMetric::Accuracy
                    | SystemMetric::ThroughputDrift
            ),
        }
    }

    /// Parses `metric.stat` or a system metric (optionally with `.avg`, as the JSON files
    /// write system metrics).
    pub fn parse(s: &str) -> Result<MetricRef, MetricError> {
        let s = s.trim();
        let (name, stat) = s.split_once('.').map_or((s, None), |(n, st)| (n, Some(st)));
        if let Ok(sys) = name.parse::<SystemMetric>() {
            return match stat {
                None | Some("avg") => Ok(MetricRef::System(sys)),
                Some(other) => Err(MetricError::SingleNumber {
                    name: name.into(),
                    stat: other.into(),
                }),
            };
        }
        let metric =
            Metric::from_key(name).ok_or_else(|| MetricError::UnknownMetric(name.into()))?;
        let stat = stat.ok_or_else(|| MetricError::NoStat(name.into()))?;
        let stat = stat.parse::<Stat>().map_err(|_| MetricError::UnknownStat {
            stat: stat.into(),
            name: name.into(),
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

/// The names of `variants`, comma-separated, for messages that list what is valid.
fn names<T: Copy>(variants: &[T]) -> String
where
    &'static str: From<T>,
{
    let names: Vec<&str> = variants.iter().map(|&v| v.into()).collect();
    names.join(", ")
}

/// Why a metric reference (`time_to_first_token.p99`) or a value with its unit (`500ms`) does
/// not parse: the metric, statistic or unit, and what is valid. Flags put their name and value
/// in front ([`SloError`], `compare`'s limits).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricError {
    /// A statistic on a level metric.
    #[error(
        "'{name}' is a single number per level; it has no statistic '{stat}' (write {name} or {name}.avg)"
    )]
    SingleNumber {
        /// The level metric.
        name: String,
        /// The statistic given.
        stat: String,
    },
    /// A name that is no metric.
    #[error(
        "unknown metric '{name}'; per-request metrics (with a statistic): {per_request}; level metrics: {level}",
        name = .0,
        per_request = names(Metric::ALL),
        level = names(SystemMetric::ALL)
    )]
    UnknownMetric(String),
    /// A distribution without a statistic.
    #[error("'{0}' is a distribution: name a statistic, e.g. {0}.p99 or {0}.avg")]
    NoStat(String),
    /// A statistic that is none.
    #[error("unknown statistic '{stat}' for {name}; valid: {}", names(Stat::ALL))]
    UnknownStat {
        /// The statistic given.
        stat: String,
        /// The metric.
        name: String,
    },
    /// A value that does not start with a number.
    #[error("'{0}' does not start with a number")]
    NotNumber(String),
    /// A value that is infinite or NaN.
    #[error("'{0}' is not a finite number")]
    NotFinite(String),
    /// A unit that does not fit the metric.
    #[error("unit '{unit}' does not fit a value in {}; use {valid}", .kind.unit())]
    Unit {
        /// The unit given.
        unit: String,
        /// What the metric measures.
        kind: Kind,
        /// The units that fit.
        valid: &'static str,
    },
    /// A share above 1 without `%`.
    #[error(
        "'{text}' is a share: write it as a percentage ({value}%) or a fraction between 0 and 1"
    )]
    BareShare {
        /// The value as written.
        text: String,
        /// Its number.
        value: f64,
    },
}

/// Parses a value with an optional unit into the metric's stored unit.
pub fn parse_value(raw: &str, kind: Kind) -> Result<f64, MetricError> {
    let t = raw.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let v: f64 = num.parse().map_err(|_| MetricError::NotNumber(t.into()))?;
    if !v.is_finite() {
        return Err(MetricError::NotFinite(t.into()));
    }
    match (kind, unit.as_str()) {
        (Kind::Time, "" | "ms") => Ok(v),
        (Kind::Time, "s" | "sec") => Ok(v * 1000.0),
        (Kind::Time, "us" | "µs") => Ok(v / 1000.0),
        (Kind::Fraction, "%") => Ok(v / 100.0),
        (Kind::Fraction, "") if (0.0..=1.0).contains(&v) => Ok(v),
        (Kind::Fraction, "") => Err(MetricError::BareShare {
            text: t.into(),
            value: v,
        }),
        (Kind::TokenRate, "" | "/s" | "tok/s" | "tokens/s" | "tokens/sec")
        | (Kind::RequestRate, "" | "/s" | "req/s" | "requests/s" | "requests/sec")
        | (Kind::InputRate, "" | "/s" | "inputs/s" | "inputs/sec")
        | (Kind::PerUserRate, "" | "tok/s/user" | "tokens/sec/user")
        | (Kind::Tokens, "" | "tokens" | "tok")
        | (Kind::Count, "") => Ok(v),
        _ => Err(MetricError::Unit {
            valid: match kind {
                Kind::Time => "ms, s or us",
                Kind::Fraction => "% (or a bare fraction 0..1)",
                Kind::TokenRate => "tok/s (or no unit)",
                Kind::RequestRate => "req/s (or no unit)",
                Kind::InputRate => "inputs/s (or no unit)",
                Kind::PerUserRate => "tok/s/user (or no unit)",
                Kind::Tokens => "tokens (or no unit)",
                Kind::Count => "no unit",
            },
            unit,
            kind,
        }),
    }
}

/// A `--slo` expression that does not parse: the expression and what is wrong with it. A usage
/// error (exit code 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--slo '{text}': {problem}")]
pub struct SloError {
    /// The expression as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: SloProblem,
}

/// What is wrong with a `--slo` expression.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloProblem {
    /// No comparison.
    #[error(
        "expected METRIC OP VALUE with OP one of <= < >= >, e.g. \"time_to_first_token.p99<=500ms\" or \"queue_share<=50%\""
    )]
    NoOperator,
    /// Nothing after the comparison.
    #[error("no value after '{0}'")]
    NoValue(&'static str),
    /// The metric or the value.
    #[error(transparent)]
    Metric(#[from] MetricError),
}

crate::error::usage_error!(SloError);

/// Parses one `--slo` expression.
pub fn parse(raw: &str) -> Result<Slo, SloError> {
    let t = raw.trim();
    let fail = |problem| SloError {
        text: t.into(),
        problem,
    };
    let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
    let (at, op_str, op) = ops
        .iter()
        .filter_map(|(s, op)| t.find(s).map(|i| (i, *s, *op)))
        .min_by_key(|(i, s, _)| (*i, std::cmp::Reverse(s.len())))
        .ok_or_else(|| fail(SloProblem::NoOperator))?;
    let metric = MetricRef::parse(&t[..at]).map_err(|e| fail(e.into()))?;
    let value = &t[at + op_str.len()..];
    if value.trim().is_empty() {
        return Err(fail(SloProblem::NoValue(op_str)));
    }
    let bound = parse_value(value, metric.kind()).map_err(|e| fail(e.into()))?;
    Ok(Slo { metric, op, bound })
}

/// The verdict on one level, with the measurements behind it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Validity {
    /// Whether every check passed.
    pub trustworthy: bool,
    /// Why not, in words (empty when trustworthy).
    pub reasons: Vec<String>,
    /// The generator process's CPU use over the measurement, as a share of all cores (0–1).
    pub cpu_share: Option<f64>,
    /// Cores available to the process.
    pub cores: usize,
    /// Open loop: 99th percentile of send lag (actual minus intended send), ms.
    pub send_lag_p99_ms: Option<f64>,
    /// Open loop: requests per second asked for.
    pub requested_rate: Option<f64>,
    /// Open loop: requests per second actually released.
    pub achieved_rate: Option<f64>,
    /// Open loop: requests that waited for a free worker (the in-flight cap).
    pub delayed_by_cap: u64,
    /// Longest the async runtime fell behind its 10 ms tick, ms.
    pub max_stall_ms: Option<f64>,
    /// How long workers waited, added up over the workers, to hand finished requests to a
    /// collector that fell behind (the load was held back), ms; `None` when none waited.
    pub held_back_ms: Option<f64>,
    /// How many hand-overs waited.
    pub held_back_sends: u64,
    /// The shown percentiles too few successful requests were measured to describe (`p99`
    /// below 100 requests; see [`unsupported_percentiles`]): the tables show `-` for them. Not a
    /// reason to distrust the level's other numbers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unsupported_percentiles: Vec<String>,
}

/// The tail percentiles the tables show, highest first.
pub const SHOWN_TAILS: [u32; 3] = [99, 95, 90];

/// Fewest successful requests for the `q`-th percentile to describe a tail: one request in
/// `100 / (100 - q)` is expected beyond it only from that many on (p99: 100, p95: 20, p90: 10);
/// with fewer it is the slowest request or a blend of the two slowest.
pub fn fewest_for_percentile(q: u32) -> u64 {
    100 / u64::from(100 - q.min(99))
}

/// Whether `n` successful requests support the `q`-th percentile.
pub fn supports_percentile(n: u64, q: u32) -> bool {
    n >= fewest_for_percentile(q)
}

/// The shown tail percentiles (`p99`, `p95`, `p90`) that `n` successful requests cannot describe.
pub fn unsupported_percentiles(n: u64) -> Vec<String> {
    SHOWN_TAILS
        .iter()
        .filter(|&&q| !supports_percentile(n, q))
        .map(|q| format!("p{q}"))
        .collect()
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            trustworthy: true,
            reasons: Vec::new(),
            cpu_share: None,
            cores: 0,
            send_lag_p99_ms: None,
            requested_rate: None,
            achieved_rate: None,
            delayed_by_cap: 0,
            max_stall_ms: None,
            held_back_ms: None,
            held_back_sends: 0,
            unsupported_percentiles: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metric, statistic, level metric and percentile method reads back from the name
    /// files and flags write; the aliases of older files and GenAI-Perf too.
    #[test]
    fn names_round_trip() {
        crate::names::assert_serde_round_trip::<Metric>();
        crate::names::assert_serde_round_trip::<PercentileMethod>();
        crate::names::assert_round_trip::<Stat>();
        crate::names::assert_round_trip::<SystemMetric>();
        for (alias, m) in [
            ("ttft", Metric::TimeToFirstToken),
            ("itl", Metric::InterTokenLatency),
            ("e2e_latency", Metric::RequestLatency),
            ("latency", Metric::RequestLatency),
            (" ttftt ", Metric::TimeToFirstToolToken),
        ] {
            assert_eq!(Metric::from_key(alias), Some(m), "{alias}");
        }
        assert_eq!(
            Metric::TimeToFirstTokenIntended.key(),
            "time_to_first_token_from_intended"
        );
        assert_eq!("median".parse::<Stat>(), Ok(Stat::P50));
        assert_eq!(Stat::P999.key(), "p99.9");
        assert_eq!(
            MetricRef::parse("server_queue_share"),
            Ok(MetricRef::System(SystemMetric::QueueShare))
        );
        assert_eq!(PercentileMethod::NearestRank.key(), "nearest-rank");
    }

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
            ("kv_cache_usage<=90%", "kv_cache_usage", Op::Le, 0.9),
            ("preemptions<=0", "preemptions", Op::Le, 0.0),
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
            let e = parse(text).unwrap_err().to_string();
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
}
