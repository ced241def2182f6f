//! What the records mean: per-metric distributions in HDR histograms (bounded memory, mergeable),
//! system throughput, goodput and error counts for one load level.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::metrics::{
    Metric, MetricRef, MetricSource, Objective, PercentileMethod, Stats, SystemMetric,
    per_request_value,
};
use crate::record::{ErrorKind, RequestRecord};

pub mod apis;
pub mod boundary;
pub mod ci;
pub mod isl;
mod percentile;
pub mod repeat;
pub mod scored;
pub mod sessions;
pub mod trend;
pub mod turns;

/// Significant digits kept by every histogram (0.1 % relative precision).
pub const SIGFIG: u8 = 3;

/// A distribution's exact running sums, kept beside its histogram (which rounds each value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    /// Samples recorded.
    pub count: u64,
    /// Sum of the samples (stored unit).
    pub sum: f64,
    /// Sum of their squares.
    pub sum_sq: f64,
    /// Smallest sample (`u64::MAX` without samples, so the first one sets it).
    pub min: u64,
    /// Largest sample.
    pub max: u64,
}

impl Moments {
    /// No samples yet.
    pub const EMPTY: Moments = Moments {
        count: 0,
        sum: 0.0,
        sum_sq: 0.0,
        min: u64::MAX,
        max: 0,
    };

    #[inline]
    fn record(&mut self, v: u64) {
        // Times one is exact: the same sums as adding `v` and its square.
        self.record_n(v, 1);
    }

    /// `n` samples of value `v` (the moments of `n` single records, in one step).
    #[inline]
    fn record_n(&mut self, v: u64, n: u64) {
        self.count += n;
        let f = v as f64;
        let k = n as f64;
        self.sum += f * k;
        self.sum_sq += f * f * k;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn merge(&mut self, other: &Moments) {
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// One metric's distribution: an HDR histogram for percentiles plus exact running moments.
#[derive(Clone, Debug)]
pub struct Dist {
    hist: Histogram<u64>,
    m: Moments,
}

impl Default for Dist {
    fn default() -> Self {
        Dist::new()
    }
}

impl Dist {
    /// An empty distribution. The histogram resizes itself to the largest value recorded, so its
    /// memory depends on the value range, never on the number of samples.
    pub fn new() -> Dist {
        let hist = Histogram::new(SIGFIG).expect("3 significant digits is a valid HDR precision");
        Dist::from_parts(hist, Moments::EMPTY)
    }

    /// Records one sample (stored unit).
    #[inline]
    pub fn record(&mut self, v: u64) {
        // Auto-resizing histograms accept any u64; the error path is unreachable but harmless.
        let _ = self.hist.record(v);
        self.m.record(v);
    }

    /// Records a sequence of samples, each run of equal consecutive values in one histogram
    /// update. Responses that arrive in one read share a timestamp, so a stream written at once
    /// has gaps of 0 in long runs: one update instead of one per token.
    pub fn record_runs(&mut self, values: &[u64]) {
        let mut rest = values;
        while let Some((&v, tail)) = rest.split_first() {
            let same = tail.iter().take_while(|&&x| x == v).count();
            if same == 0 {
                // A lone value (a stream written token by token): the plain path, no multiplies.
                self.record(v);
            } else {
                let n = same as u64 + 1;
                let _ = self.hist.record_n(v, n);
                self.m.record_n(v, n);
            }
            rest = &tail[same..];
        }
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.m.count
    }

    /// The histogram (stored unit).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Exact running sums.
    pub fn moments(&self) -> Moments {
        self.m
    }

    /// Rebuilds a distribution from a histogram and its exact moments (artifact files, merges).
    pub fn from_parts(hist: Histogram<u64>, m: Moments) -> Dist {
        let mut hist = hist;
        hist.auto(true);
        Dist { hist, m }
    }

    /// Adds another distribution (exact: HDR addition loses nothing at the recorded precision).
    pub fn merge(&mut self, other: &Dist) {
        let _ = self.hist.add(&other.hist);
        self.m.merge(&other.m);
    }

    /// Summary in display units (`scale` converts the stored unit), percentiles by numpy's
    /// linear interpolation (GenAI-Perf's).
    pub fn stats(&self, scale: f64) -> Stats {
        self.stats_by(scale, PercentileMethod::Linear)
    }

    /// Summary in display units, percentiles by `method`.
    pub fn stats_by(&self, scale: f64, method: PercentileMethod) -> Stats {
        if self.m.count == 0 {
            return Stats::default();
        }
        let n = self.m.count as f64;
        let mean = self.m.sum / n;
        let var = (self.m.sum_sq / n - mean * mean).max(0.0);
        let [p1, p5, p10, p25, p50, p75, p90, p95, p99, p999] = percentile::percentiles(
            &self.hist,
            self.m.min,
            self.m.max,
            [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9],
            method,
        )
        .map(|v| v * scale);
        Stats {
            count: self.m.count,
            avg: mean * scale,
            min: self.m.min as f64 * scale,
            max: self.m.max as f64 * scale,
            std: var.sqrt() * scale,
            p1,
            p5,
            p10,
            p25,
            p50,
            p75,
            p90,
            p95,
            p99,
            p999,
        }
    }

    /// One percentile `p` (0–100) by `method`, in the stored unit (0 without samples).
    pub fn percentile(&self, p: f64, method: PercentileMethod) -> f64 {
        let [v] = percentile::percentiles(&self.hist, self.m.min, self.m.max, [p], method);
        v
    }

    /// The samples at 0-based `ranks` of the sorted samples (each below [`Dist::count`]), in the
    /// stored unit, read as the percentiles are (exact at the ends, else within half a bucket).
    pub fn values_at_ranks(&self, ranks: &[u64]) -> Vec<f64> {
        if self.m.count == 0 {
            return vec![0.0; ranks.len()];
        }
        let mut sorted: Vec<u64> = ranks.iter().map(|&r| r.min(self.m.count - 1)).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let values = percentile::values_at_ranks(&self.hist, self.m.min, self.m.max, &sorted);
        ranks
            .iter()
            .map(|&r| {
                let r = r.min(self.m.count - 1);
                values[sorted.binary_search(&r).unwrap_or(0)]
            })
            .collect()
    }
}

/// Failures of one kind (a field absent where it is read back reads as empty).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErrorCount {
    /// Stable key (`http_503`, `stream_cut`, ...).
    pub kind: String,
    /// How many requests failed this way.
    pub count: u64,
    /// The first message seen for this kind.
    pub example: String,
    /// What to do about it, when there is advice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Everything measured in one level, accumulated request by request. Memory does not grow with
/// the number of requests.
#[derive(Clone, Debug, Default)]
pub struct Aggregate {
    /// One distribution per metric, by [`Metric::index`].
    dists: [Dist; Metric::ALL.len()],
    /// Measured requests that completed with content.
    pub ok: u64,
    /// Measured requests that met every goodput objective.
    pub good: u64,
    /// Warm-up requests seen (not in statistics).
    pub warmup: u64,
    /// Measured requests the client cancelled on purpose (`--request-cancellation-rate`): neither
    /// successes nor errors, in no statistic.
    pub cancelled: u64,
    /// Measured requests the run abandoned in flight (a second Ctrl-C): neither successes nor
    /// failures, in no statistic.
    pub abandoned: u64,
    errors: BTreeMap<ErrorKind, (u64, String)>,
    /// Sum of output tokens over successful measured requests.
    pub sum_osl: u64,
    /// Sum of input tokens over successful measured requests.
    pub sum_isl: u64,
    /// Earliest send among successful measured requests.
    pub first_sent_ns: Option<u64>,
    /// Latest last-token time among successful measured requests.
    pub last_response_ns: Option<u64>,
    /// Successful requests whose server-reported output tokens differed from the tokenizer's.
    pub osl_mismatch: u64,
    /// Successful requests with both a server-reported and a tokenizer output count.
    pub osl_compared: u64,
    /// Successful requests whose server-reported input tokens differed from the client's count.
    pub isl_mismatch: u64,
    /// Successful requests with a server-reported input count.
    pub isl_compared: u64,
    /// Successful requests that received fewer output tokens than they asked for.
    pub short_outputs: u64,
    /// Content-bearing responses over successful requests.
    pub sum_chunks: u64,
    /// Successful requests whose two or more content-bearing responses arrived in one burst
    /// (see [`crate::record::BURST_GAP_NS`]): the server (or a proxy) sent the answer at once, ITL ~0.
    pub burst: u64,
    /// Client send time summed over requests where it was observed (ns).
    pub sum_send_ns: u64,
    /// Requests with an observed send time.
    pub send_count: u64,
    /// Client receive time (first response byte to last response) summed over successes (ns).
    pub sum_recv_ns: u64,
    /// TTFT and latency by input length (`--isl-buckets`; off when its edges are empty).
    pub isl: isl::IslDists,
    /// TTFT and input length by session turn (empty without sessions).
    pub turns: turns::TurnDists,
    /// Measured requests sent a second time on a fresh connection after the server had closed
    /// their reused one (HTTP/1.1).
    pub reconnects: u64,
    /// TTFT of successful requests by whether their connection was fresh or reused (HTTP/1.1).
    pub connections: ConnectionTtft,
    /// Inputs, images and tool calls of successful requests.
    pub apis: apis::ApiTally,
    /// Graded answers of successful requests (scored workloads).
    pub answers: scored::AnswerTally,
    /// Whole sessions, reported by the workers that ran them (the level sets them).
    pub sessions: sessions::SessionDists,
}

/// TTFT on fresh and on reused connections: a server sending with Nagle's algorithm on stalls
/// the first token of a reused connection until the client's delayed ACK (~40 ms on Linux),
/// while a fresh connection acknowledges at once (see [`crate::analysis::transport`]).
#[derive(Clone, Debug, Default)]
pub struct ConnectionTtft {
    /// Requests on a connection that served none before.
    pub fresh: Dist,
    /// Requests on a connection that had served one.
    pub reused: Dist,
}

impl ConnectionTtft {
    fn record(&mut self, rec: &RequestRecord) {
        if let (Some(reused), Some(ttft)) = (rec.connection_reused, rec.ttft_ns()) {
            match reused {
                true => self.reused.record(ttft),
                false => self.fresh.record(ttft),
            }
        }
    }

    fn merge(&mut self, other: &ConnectionTtft) {
        self.fresh.merge(&other.fresh);
        self.reused.merge(&other.reused);
    }

    /// The two sides' numbers, when both have requests.
    pub fn summarize(&self) -> Option<ConnectionStats> {
        if self.fresh.count() == 0 || self.reused.count() == 0 {
            return None;
        }
        let ms = |d: &Dist, p: f64| d.percentile(p, PercentileMethod::Linear) / 1e6;
        Some(ConnectionStats {
            fresh_count: self.fresh.count(),
            fresh_ttft_p50_ms: ms(&self.fresh, 50.0),
            reused_count: self.reused.count(),
            reused_ttft_min_ms: ms(&self.reused, 0.0),
            reused_ttft_p50_ms: ms(&self.reused, 50.0),
        })
    }
}

/// TTFT on fresh and reused HTTP/1.1 connections over a level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionStats {
    /// Successful requests that went out on a fresh connection.
    pub fresh_count: u64,
    /// Their median TTFT (ms).
    pub fresh_ttft_p50_ms: f64,
    /// Successful requests that went out on a reused connection.
    pub reused_count: u64,
    /// Their smallest TTFT (ms).
    pub reused_ttft_min_ms: f64,
    /// Their median TTFT (ms).
    pub reused_ttft_p50_ms: f64,
}

impl Aggregate {
    /// Empty.
    pub fn new() -> Aggregate {
        Aggregate::default()
    }

    /// Empty, with TTFT and latency also kept per input-length bucket cut at `edges`.
    pub fn with_isl_buckets(edges: &[u32]) -> Aggregate {
        Aggregate {
            isl: isl::IslDists::new(edges),
            ..Aggregate::new()
        }
    }

    /// Accounts one finished request; `gaps` are its inter-chunk gaps (ns).
    pub fn record(&mut self, rec: &RequestRecord, gaps: &[u64], objectives: &[Objective]) {
        if rec.phase == crate::record::Phase::Warmup {
            self.warmup += 1;
            return;
        }
        self.reconnects += u64::from(rec.reconnected);
        if rec.cancelled_on_purpose() {
            self.cancelled += 1;
            return;
        }
        if rec.abandoned() {
            self.abandoned += 1;
            return;
        }
        if let Some(err) = &rec.error {
            self.record_error(err.kind, &err.message);
            return;
        }
        self.ok += 1;
        self.sum_osl += u64::from(rec.osl);
        self.sum_isl += u64::from(rec.isl);
        self.first_sent_ns = Some(self.first_sent_ns.unwrap_or(u64::MAX).min(rec.sent_ns));
        self.last_response_ns = self.last_response_ns.max(rec.last_token_ns);
        if let (Some(server), Some(counted)) = (rec.server_osl, rec.tokenizer_osl) {
            self.osl_compared += 1;
            self.osl_mismatch += u64::from(server != counted);
        }
        if let Some(server) = rec.server_isl {
            self.isl_compared += 1;
            self.isl_mismatch += u64::from(server != rec.client_isl());
        }
        self.short_outputs += u64::from(rec.osl < rec.requested_osl);
        self.sum_chunks += u64::from(rec.chunks);
        self.burst += u64::from(rec.arrived_in_a_burst());
        if let Some(s) = rec.send_ns() {
            self.sum_send_ns += s;
            self.send_count += 1;
        }
        self.sum_recv_ns += rec.recv_ns().unwrap_or(0);
        for &m in Metric::ALL {
            if let Some(v) = per_request_value(m, rec) {
                self.dists[m.index()].record(v);
            }
        }
        self.dists[Metric::InterChunkLatency.index()].record_runs(gaps);
        self.isl.record(rec);
        self.turns.record(rec);
        self.connections.record(rec);
        self.apis.record(rec);
        self.answers.record(rec);
        self.good += u64::from(objectives.iter().all(|o| o.met_by(rec)));
    }

    /// Accounts a failed request by its kind, keeping the first message as the example.
    pub fn record_error(&mut self, kind: ErrorKind, message: &str) {
        self.add_errors(kind, 1, message);
    }

    /// One metric's distribution.
    pub fn dist(&self, m: Metric) -> &Dist {
        &self.dists[m.index()]
    }

    /// Whether every successful request got its responses in one piece: none had a second
    /// response, or each that had one got them all in one burst (a request with a second
    /// response has a time to it; one whose responses all came at once is also a burst). Such a
    /// level has no time to first response apart from its latency. False without successes.
    pub fn came_whole(&self) -> bool {
        self.ok > 0 && self.dist(Metric::TimeToSecondToken).count() <= self.burst
    }

    /// Failed measured requests.
    pub fn error_count(&self) -> u64 {
        self.errors.values().map(|(n, _)| n).sum()
    }

    /// Failures by kind, most frequent first.
    pub fn error_counts(&self) -> Vec<ErrorCount> {
        let mut v: Vec<ErrorCount> = self
            .errors
            .iter()
            .map(|(k, (n, msg))| ErrorCount {
                kind: k.key().into_owned(),
                count: *n,
                example: msg.clone(),
                hint: k.hint().map(std::borrow::Cow::into_owned),
            })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(&b.kind)));
        v
    }

    /// Failures by kind with their count and first message, in kind order (for files).
    pub fn error_entries(&self) -> impl Iterator<Item = (ErrorKind, u64, &str)> {
        self.errors.iter().map(|(k, (n, m))| (*k, *n, m.as_str()))
    }

    /// Accounts `count` failures of `kind` at once (read back from a file); the first message
    /// of a kind is kept.
    pub fn add_errors(&mut self, kind: ErrorKind, count: u64, message: &str) {
        let entry = self
            .errors
            .entry(kind)
            .or_insert_with(|| (0, message.to_string()));
        entry.0 += count;
    }

    /// Adds another aggregate (shards of one level).
    pub fn merge(&mut self, other: &Aggregate) {
        for (a, b) in self.dists.iter_mut().zip(&other.dists) {
            a.merge(b);
        }
        self.ok += other.ok;
        self.good += other.good;
        self.warmup += other.warmup;
        self.cancelled += other.cancelled;
        self.abandoned += other.abandoned;
        for (k, (n, msg)) in &other.errors {
            self.add_errors(*k, *n, msg);
        }
        self.sum_osl += other.sum_osl;
        self.sum_isl += other.sum_isl;
        self.first_sent_ns = (self.first_sent_ns.into_iter())
            .chain(other.first_sent_ns)
            .min();
        // `None` orders below every time, so the later of two is their max.
        self.last_response_ns = self.last_response_ns.max(other.last_response_ns);
        self.osl_mismatch += other.osl_mismatch;
        self.osl_compared += other.osl_compared;
        self.isl_mismatch += other.isl_mismatch;
        self.isl_compared += other.isl_compared;
        self.short_outputs += other.short_outputs;
        self.sum_chunks += other.sum_chunks;
        self.burst += other.burst;
        self.sum_send_ns += other.sum_send_ns;
        self.send_count += other.send_count;
        self.sum_recv_ns += other.sum_recv_ns;
        self.isl.merge(&other.isl);
        self.turns.merge(&other.turns);
        self.reconnects += other.reconnects;
        self.connections.merge(&other.connections);
        self.apis.merge(&other.apis);
        self.answers.merge(&other.answers);
        self.sessions.merge(&other.sessions);
    }

    /// The distributions with their metrics (for serialising histograms).
    pub fn dists(&self) -> impl Iterator<Item = (Metric, &Dist)> {
        Metric::ALL
            .iter()
            .map(move |&m| (m, &self.dists[m.index()]))
    }

    /// Replaces one metric's distribution (rebuilding from files).
    pub fn set_dist(&mut self, m: Metric, d: Dist) {
        self.dists[m.index()] = d;
    }

    /// Final numbers for the level, percentiles by `method`.
    pub fn summarize(&self, goodput_asked: bool, method: PercentileMethod) -> LevelStats {
        let duration_ns = match (self.first_sent_ns, self.last_response_ns) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => 0,
        };
        let secs = duration_ns as f64 / 1e9;
        let per_sec = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let metrics = Metric::ALL
            .iter()
            .filter(|m| self.dists[m.index()].count() > 0)
            .map(|&m| (m, self.dists[m.index()].stats_by(m.unit().scale(), method)))
            .collect();
        LevelStats {
            metrics,
            request_count: self.ok,
            error_count: self.error_count(),
            errors: self.error_counts(),
            cancelled_count: self.cancelled,
            abandoned_count: self.abandoned,
            reconnect_count: self.reconnects,
            burst_count: self.burst,
            connections: self.connections.summarize(),
            warmup_count: self.warmup,
            duration_s: secs,
            output_token_throughput: per_sec(self.sum_osl as f64),
            total_token_throughput: per_sec((self.sum_osl + self.sum_isl) as f64),
            request_throughput: per_sec(self.ok as f64),
            request_goodput: goodput_asked.then(|| per_sec(self.good as f64)),
            osl_mismatch: self.osl_mismatch,
            osl_compared: self.osl_compared,
            isl_mismatch: self.isl_mismatch,
            isl_compared: self.isl_compared,
            short_outputs: self.short_outputs,
            percentile_method: Some(method),
            isl_buckets: self.isl.summarize(method),
            turns: self.turns.summarize(method),
            apis: self.apis.summarize(secs, self.sum_isl),
            // At 95 % here; the run sets its own confidence and the chance rate
            // (`AccuracyStats::at`).
            accuracy: self.answers.summarize(0.95),
            sessions: self.sessions.summarize(method),
        }
    }
}

/// The final numbers of one level. `Default` is an empty level (no requests, no metrics).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LevelStats {
    /// Metrics that have samples, in [`Metric::ALL`] order.
    pub metrics: Vec<(Metric, Stats)>,
    /// Successful measured requests.
    pub request_count: u64,
    /// Failed measured requests.
    pub error_count: u64,
    /// Measured requests the client cancelled on purpose (`--request-cancellation-rate`).
    pub cancelled_count: u64,
    /// Measured requests the run abandoned in flight (a second Ctrl-C): in no statistic.
    pub abandoned_count: u64,
    /// Measured requests sent again on a fresh connection after the server had closed their
    /// reused one (HTTP/1.1).
    pub reconnect_count: u64,
    /// Successful requests whose two or more content-bearing responses arrived in one burst
    /// (a buffered stream: ITL ~0, TTFT the whole answer's time).
    pub burst_count: u64,
    /// TTFT on fresh and reused HTTP/1.1 connections (when the level had both).
    pub connections: Option<ConnectionStats>,
    /// Failures by kind.
    pub errors: Vec<ErrorCount>,
    /// Warm-up requests sent.
    pub warmup_count: u64,
    /// First send to last response over successful requests (GenAI-Perf's benchmark duration).
    pub duration_s: f64,
    /// Σ OSL / duration.
    pub output_token_throughput: f64,
    /// Σ (ISL + OSL) / duration.
    pub total_token_throughput: f64,
    /// Successful requests / duration.
    pub request_throughput: f64,
    /// Requests meeting every `--goodput` objective / duration (only when objectives were given).
    pub request_goodput: Option<f64>,
    /// Requests whose server-reported output token count differed from the tokenizer's.
    pub osl_mismatch: u64,
    /// Requests with both counts (the denominator of the mismatch share).
    pub osl_compared: u64,
    /// Requests whose server-reported input token count differed from the client's.
    pub isl_mismatch: u64,
    /// Requests with a server-reported input count (the denominator of its mismatch share).
    pub isl_compared: u64,
    /// Requests that received fewer tokens than they asked for.
    pub short_outputs: u64,
    /// How the percentiles were computed (`None`: read from a file that does not say).
    pub percentile_method: Option<PercentileMethod>,
    /// TTFT and latency per input-length bucket (`--isl-buckets`; empty when not asked for).
    pub isl_buckets: Vec<isl::IslBucket>,
    /// TTFT and input length by session turn (empty without sessions).
    pub turns: Vec<turns::TurnStats>,
    /// Inputs per second, images, tool calls (each `None` when the level had none).
    pub apis: apis::ApiStats,
    /// Accuracy and the determinism check (scored workloads only).
    pub accuracy: Option<scored::AccuracyStats>,
    /// Whole sessions: time to task completion, turns, tool round trips (`None` without
    /// sessions).
    pub sessions: Option<sessions::SessionStats>,
}

impl LevelStats {
    /// The statistics of one metric, when it has samples.
    pub fn get(&self, m: Metric) -> Option<&Stats> {
        self.metrics.iter().find(|(k, _)| *k == m).map(|(_, s)| s)
    }

    /// The share of requests with both counts whose server and tokenizer output counts differ
    /// (`None` when the server reported no counts).
    pub fn osl_mismatch_share(&self) -> Option<f64> {
        (self.osl_compared > 0).then(|| self.osl_mismatch as f64 / self.osl_compared as f64)
    }

    /// The share of requests with a server input count whose count differs from the client's
    /// (`None` when the server reported no counts).
    pub fn isl_mismatch_share(&self) -> Option<f64> {
        (self.isl_compared > 0).then(|| self.isl_mismatch as f64 / self.isl_compared as f64)
    }
}

/// Everything known about one finished level: what the encoders and reports read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelSummary {
    /// The load level.
    pub stimulus: crate::load::Stimulus,
    /// Client-side numbers.
    pub stats: LevelStats,
    /// The server's own counters over the level, when they could be read.
    pub server: Option<crate::server_metrics::ServerDelta>,
    /// The engine's own view (its queue, batch, KV cache, server-side TTFT, prefix cache), when
    /// its metrics page was read.
    pub engine: Option<crate::server_metrics::level::EngineLevelView>,
    /// The GPUs over the level (utilization, memory, power, energy), when reported.
    pub gpu: Option<crate::metrics::gpu::GpuView>,
    /// Whether responses streamed (TTFT, TTST and ITL are only meaningful then).
    pub streaming: bool,
    /// Whether the level was cut short (Ctrl-C).
    pub interrupted: bool,
    /// Wall-clock start of the level (Unix ns).
    pub started_unix_ns: u64,
    /// Wall-clock end of the level (Unix ns): when its last request finished or was abandoned
    /// (0 when not recorded: older files).
    pub ended_unix_ns: u64,
    /// Whether the measurement can be trusted, and why not.
    pub validity: crate::metrics::Validity,
    /// The trend of TTFT and latency p99 and of throughput over the level's timeline intervals,
    /// when it had enough of them (a soak).
    pub drift: Option<trend::Drift>,
}

impl LevelSummary {
    /// A streamed level with these client-side numbers and nothing else known yet: no server or
    /// GPU view, not interrupted, trusted, started at 0. Readers and tests set what they know.
    pub fn new(stimulus: crate::load::Stimulus, stats: LevelStats) -> LevelSummary {
        LevelSummary {
            stimulus,
            stats,
            server: None,
            engine: None,
            gpu: None,
            streaming: true,
            interrupted: false,
            started_unix_ns: 0,
            ended_unix_ns: 0,
            validity: Default::default(),
            drift: None,
        }
    }

    /// Metrics worth showing for this level, in file order: streaming-only metrics need
    /// `--streaming`, open-loop metrics need a request-rate level.
    pub fn shown_metrics(&self) -> impl Iterator<Item = (Metric, &Stats)> {
        let streaming = self.streaming;
        let open_loop = self.stimulus.open_loop();
        self.stats
            .metrics
            .iter()
            .filter(move |(m, _)| {
                (streaming || !m.streaming_only()) && (open_loop || !m.open_loop_only())
            })
            .map(|(m, s)| (*m, s))
    }

    /// The statistics of `m` a level shows: none for a streaming-only metric (TTFT, ITL) of a level
    /// run without `--streaming`. Unlike [`crate::metrics::MetricSource::metric`] it does not drop
    /// statistics that count no samples; callers that relied on that keep their own filter.
    pub fn shown_stat(&self, m: Metric) -> Option<&Stats> {
        self.stats
            .get(m)
            .filter(|_| self.streaming || !m.streaming_only())
    }

    /// The engine's own split of its time (queue, prefill, decode), for engines other than
    /// plain Triton (whose statistics, in [`LevelSummary::server`], are the better source).
    pub fn engine_split(&self) -> Option<crate::server_metrics::split::EngineSplit> {
        self.engine
            .as_ref()
            .filter(|e| e.kind != crate::server_metrics::ServerKind::Triton)?
            .split()
    }

    /// Client TTFT minus the server's own (ms): from the responses' own timings where they
    /// carry them (llama.cpp: the mean of each request's TTFT minus its `prompt_ms`, which
    /// leaves out the wait for a free slot, so that wait is in this number), else network
    /// plus client time where the engine exports its time to first token (vLLM's histogram).
    pub fn network_and_client_ttft_ms(&self) -> Option<f64> {
        if let Some(per_request) = self.shown_stat(Metric::ClientMinusServerTtft) {
            return (per_request.count > 0).then_some(per_request.avg);
        }
        let server = self.engine.as_ref()?.server_ttft?;
        let client = self.shown_stat(Metric::TimeToFirstToken)?;
        (client.count > 0 && server.count > 0.0).then_some(client.avg - server.avg_s * 1e3)
    }

    /// The server's mean time to first token (ms): the responses' own prompt processing time
    /// (llama.cpp's `timings.prompt_ms`) where they carry it, else the engine's TTFT histogram.
    pub fn server_ttft_ms(&self) -> Option<f64> {
        if let Some(prefill) = self.stats.get(Metric::ServerPrefillTime) {
            return (prefill.count > 0).then_some(prefill.avg);
        }
        let server = self.engine.as_ref()?.server_ttft?;
        (server.count > 0.0).then_some(server.avg_s * 1e3)
    }

    /// One drift line's slope as a share of its median per hour, counted only when the line
    /// drifts (its interval excludes zero and the change is large): a steady line reads 0, so
    /// an objective on drift does not fail on the noise of a short level extrapolated to an
    /// hour.
    fn drift_of(&self, m: trend::DriftMetric) -> Option<f64> {
        self.drift
            .as_ref()?
            .get(m)
            .map(|l| if l.drifts { l.relative_per_hour } else { 0.0 })
    }
}

impl MetricSource for LevelSummary {
    fn metric(&self, m: MetricRef) -> Option<f64> {
        let st = &self.stats;
        match m {
            MetricRef::Dist(metric, stat) => self
                .shown_stat(metric)
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
                SystemMetric::QueueShare => match self.engine_split() {
                    Some(s) => s.queue_share(),
                    None => self.server.as_ref().and_then(|d| d.queue_share),
                },
                SystemMetric::ServerQueueTime => match self.engine_split() {
                    Some(s) => Some(s.queue_ms),
                    None => self.server.as_ref().and_then(|d| d.avg_queue_ms),
                },
                SystemMetric::ServerComputeTime => match self.engine_split() {
                    Some(s) => Some(s.generation_ms),
                    None => self.server.as_ref().map(|d| {
                        d.avg_compute_input_ms + d.avg_compute_infer_ms + d.avg_compute_output_ms
                    }),
                },
                SystemMetric::KvCacheUsage => self.engine.as_ref()?.kv_usage.map(|g| g.max),
                SystemMetric::Preemptions => self.engine.as_ref()?.preemptions,
                SystemMetric::InputThroughput => st.apis.input_throughput,
                SystemMetric::InputTokenThroughput => st.apis.input_token_throughput,
                SystemMetric::ToolCallShare => st.apis.tool_call_share,
                SystemMetric::ToolArgsValidShare => st.apis.tool_args_valid_share,
                SystemMetric::Accuracy => st.accuracy.as_ref().map(|a| a.accuracy),
                SystemMetric::AnswerChangedShare => {
                    st.accuracy.as_ref()?.changed.as_ref().map(|c| c.share)
                }
                SystemMetric::TtftP99Drift => self.drift_of(trend::DriftMetric::TtftP99),
                SystemMetric::LatencyP99Drift => self.drift_of(trend::DriftMetric::LatencyP99),
                SystemMetric::ThroughputDrift => {
                    self.drift_of(trend::DriftMetric::OutputThroughput)
                }
            },
        }
    }
}

/// A streamed level for tests: 40 requests over 10 s, TTFT `ttft_ms` on average (and at every
/// percentile), 600 output tokens a second; no server view.
#[cfg(test)]
pub(crate) fn test_level(stimulus: crate::load::Stimulus, ttft_ms: f64) -> LevelSummary {
    let st = |v: f64| Stats {
        count: 40,
        avg: v,
        min: v,
        max: v,
        p50: v,
        p90: v,
        p99: v,
        ..Stats::default()
    };
    LevelSummary::new(
        stimulus,
        LevelStats {
            metrics: vec![
                (Metric::TimeToFirstToken, st(ttft_ms)),
                (Metric::RequestLatency, st(ttft_ms + 1000.0)),
            ],
            request_count: 40,
            duration_s: 10.0,
            output_token_throughput: 600.0,
            total_token_throughput: 1000.0,
            request_throughput: 4.0,
            ..Default::default()
        },
    )
}

/// A measured, successful test request sent at 0: first token at `ttft_ms`, second 1 ms later,
/// done at `latency_ms`, 100 input tokens.
#[cfg(test)]
pub(crate) fn test_record(ttft_ms: u64, latency_ms: u64, osl: u32) -> RequestRecord {
    let ms = 1_000_000;
    RequestRecord {
        sent: Default::default(),
        tools: Default::default(),
        phase: crate::record::Phase::Measure,
        seq: 0,
        prompt_index: 0,
        intended_ns: 0,
        sent_ns: 0,
        send_done_ns: None,
        first_byte_ns: Some(ttft_ms * ms),
        first_token_ns: Some(ttft_ms * ms),
        second_token_ns: Some((ttft_ms + 1) * ms),
        first_output_token_ns: None,
        last_token_ns: Some(latency_ms * ms),
        end_ns: latency_ms * ms,
        isl: 100,
        osl,
        server_osl: None,
        tokenizer_osl: None,
        server_isl: None,
        server_timings: None,
        client_isl: None,
        reasoning_tokens: None,
        server_reasoning_tokens: None,
        requested_osl: osl,
        chunks: osl,
        responses: osl,
        lossy_text: false,
        reconnected: false,
        connection_reused: None,
        answer: None,
        conversation: None,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Phase, RequestError};

    use super::test_record as rec;

    fn objective(metric: Metric, bound: f64) -> Objective {
        Objective { metric, bound }
    }

    #[test]
    fn dist_exact_moments_and_percentiles() {
        let mut d = Dist::new();
        for v in 1..=100u64 {
            d.record(v * 1_000_000);
        }
        let s = d.stats(1e-6);
        assert_eq!(s.count, 100);
        assert!((s.avg - 50.5).abs() < 1e-9);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 100.0);
        // population std of 1..=100
        assert!((s.std - 28.866_070_047_722_12).abs() < 1e-6);
        // numpy.percentile(range(1, 101), [50, 99]) = [50.5, 99.01], within half a bucket.
        assert!((s.p50 - 50.5).abs() / 50.5 < 1.0 / 2048.0, "{}", s.p50);
        assert!((s.p99 - 99.01).abs() / 99.01 < 1.0 / 2048.0, "{}", s.p99);
        assert!(s.p999 <= s.max);
        // perf_analyzer's nearest rank: x[⌊99·0.5 + 0.5⌋] = x[50] = 51, x[⌊99·0.99 + 0.5⌋] = 99.
        let pa = d.stats_by(1e-6, PercentileMethod::NearestRank);
        assert!((pa.p50 - 51.0).abs() / 51.0 < 1.0 / 2048.0, "{}", pa.p50);
        assert!((pa.p99 - 99.0).abs() / 99.0 < 1.0 / 2048.0, "{}", pa.p99);
    }

    #[test]
    fn record_runs_equals_one_by_one() {
        // Runs of zeros (a stream read at once), a lone value, runs of equal and unequal gaps.
        let gaps = [0, 0, 0, 5_000_000, 0, 7, 7, 7, 8, 1_200_000, 1_200_000, 0];
        let (mut runs, mut single) = (Dist::new(), Dist::new());
        runs.record_runs(&gaps);
        runs.record_runs(&[]);
        for &g in &gaps {
            single.record(g);
        }
        assert_eq!(runs.moments(), single.moments());
        assert_eq!(runs.histogram(), single.histogram());
        assert_eq!(runs.stats(1e-6), single.stats(1e-6));
    }

    #[test]
    fn dist_merge_equals_single() {
        let (mut a, mut b, mut all) = (Dist::new(), Dist::new(), Dist::new());
        for v in 0..1000u64 {
            let x = v * 7919 % 100_000 + 1;
            if v % 2 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a.stats(1.0), all.stats(1.0));
    }

    /// (server count, tokenizer count) per request → compared requests and mismatches; requests
    /// without a server count are not compared.
    #[test]
    fn server_and_tokenizer_counts_compared() {
        let mut agg = Aggregate::new();
        for (server, counted) in [(Some(11), Some(11)), (Some(12), Some(11)), (None, Some(9))] {
            let mut r = rec(10, 100, 11);
            r.server_osl = server;
            r.tokenizer_osl = counted;
            agg.record(&r, &[], &[]);
        }
        let s = agg.summarize(true, PercentileMethod::Linear);
        assert_eq!((s.osl_compared, s.osl_mismatch), (2, 1));
        assert_eq!(s.osl_mismatch_share(), Some(0.5));
        let none = Aggregate::new().summarize(true, PercentileMethod::Linear);
        assert_eq!(none.osl_mismatch_share(), None);
    }

    /// A request's tokens in one burst counts as a buffered stream; one chunk, or tokens over
    /// time, does not; shards add up.
    #[test]
    fn answers_that_arrived_in_a_burst_are_counted() {
        let mut agg = Aggregate::new();
        let whole = |chunks| {
            let mut r = rec(10, 10, chunks);
            r.second_token_ns = r.first_token_ns;
            r
        };
        // 100 responses over 0.5 ms: an answer larger than one read, its reads back to back.
        let mut reads = rec(10, 10, 100);
        reads.last_token_ns = reads.first_token_ns.map(|t| t + 500_000);
        // 100 responses over 2 ms: 20 µs apart, faster than any engine but not one burst.
        let mut fast = rec(10, 10, 100);
        fast.last_token_ns = fast.first_token_ns.map(|t| t + 2_000_000);
        for r in [whole(16), whole(1), rec(10, 40, 16), reads, fast] {
            agg.record(&r, &[], &[]);
        }
        assert_eq!(agg.summarize(true, PercentileMethod::Linear).burst_count, 2);
        let mut other = Aggregate::new();
        other.record(&whole(4), &[], &[]);
        agg.merge(&other);
        assert_eq!(agg.summarize(true, PercentileMethod::Linear).burst_count, 3);
    }

    /// (server input count, client count, count used) per request: the client's count is
    /// `client_isl` when `isl` holds the server's (`--use-server-token-count`).
    #[test]
    fn server_and_client_input_counts_compared() {
        let mut agg = Aggregate::new();
        for (server, isl, client) in [
            (Some(100), 100, None),
            (Some(107), 100, None),
            (Some(107), 107, Some(100)),
            (None, 100, None),
        ] {
            let mut r = rec(10, 100, 11);
            (r.server_isl, r.isl, r.client_isl) = (server, isl, client);
            agg.record(&r, &[], &[]);
        }
        let s = agg.summarize(true, PercentileMethod::Linear);
        assert_eq!((s.isl_compared, s.isl_mismatch), (3, 2));
        assert!((s.isl_mismatch_share().unwrap() - 2.0 / 3.0).abs() < 1e-12);
        let mut other = Aggregate::new();
        other.merge(&agg);
        assert_eq!((other.isl_compared, other.isl_mismatch), (3, 2));
    }

    /// llama.cpp's per-response timings become four distributions, and the level's
    /// client-minus-server TTFT is the mean of each request's difference.
    #[test]
    fn server_timings_become_distributions() {
        let mut agg = Aggregate::new();
        for (ttft_ms, prefill_us, cached) in [(30, 10_000, 0), (50, 20_000, 64)] {
            let mut r = rec(ttft_ms, 200, 11);
            r.server_timings = Some(crate::record::ServerTimings {
                prompt_tokens: 8,
                cached_tokens: cached,
                prefill_us,
                decode_us: 150_000,
            });
            agg.record(&r, &[], &[]);
        }
        agg.record(&rec(40, 200, 11), &[], &[]);
        let s = agg.summarize(false, PercentileMethod::Linear);
        let avg = |m: Metric| s.get(m).map(|st| (st.count, st.avg));
        assert_eq!(avg(Metric::ServerPrefillTime), Some((2, 15.0)));
        assert_eq!(avg(Metric::ClientMinusServerTtft), Some((2, 25.0)));
        assert_eq!(avg(Metric::ServerDecodeTime), Some((2, 150.0)));
        assert_eq!(avg(Metric::CachedPromptTokens), Some((2, 32.0)));
        let l = LevelSummary::new(crate::load::Stimulus::Concurrency(2), s);
        assert_eq!(l.network_and_client_ttft_ms(), Some(25.0));
        assert_eq!(l.server_ttft_ms(), Some(15.0));
        let none = LevelSummary::new(
            crate::load::Stimulus::Concurrency(1),
            Aggregate::new().summarize(false, PercentileMethod::Linear),
        );
        assert_eq!(
            (none.server_ttft_ms(), none.network_and_client_ttft_ms()),
            (None, None)
        );
    }

    /// Table: (ttft ms, latency ms, osl) per request → expected aggregate numbers.
    #[test]
    fn aggregate_throughput_itl_and_goodput() {
        let objectives = [objective(Metric::TimeToFirstToken, 50.0)];
        let mut agg = Aggregate::new();
        for (ttft, lat, osl) in [(10, 110, 11), (40, 240, 21), (60, 160, 11), (20, 1000, 1)] {
            agg.record(&rec(ttft, lat, osl), &[], &objectives);
        }
        let mut failed = rec(1, 2, 3);
        failed.error = Some(RequestError::new(ErrorKind::HttpStatus(503), "busy"));
        agg.record(&failed, &[], &objectives);
        let mut warm = rec(1, 2, 3);
        warm.phase = Phase::Warmup;
        agg.record(&warm, &[], &objectives);

        let s = agg.summarize(true, PercentileMethod::Linear);
        assert_eq!(s.percentile_method, Some(PercentileMethod::Linear));
        assert_eq!(s.request_count, 4);
        assert_eq!(s.error_count, 1);
        assert_eq!(s.warmup_count, 1);
        assert_eq!(s.errors[0].kind, "http_503");
        // duration: first send 0 → last response 1000 ms
        assert!((s.duration_s - 1.0).abs() < 1e-9);
        assert!((s.output_token_throughput - 44.0).abs() < 1e-9);
        assert!((s.request_throughput - 4.0).abs() < 1e-9);
        // three requests meet TTFT <= 50 ms
        assert_eq!(s.request_goodput, Some(3.0));
        // ITL: (110-10)/10 = 10, (240-40)/20 = 10, (160-60)/10 = 10; the 1-token one has none.
        let itl = s.get(Metric::InterTokenLatency).unwrap();
        assert_eq!(itl.count, 3);
        assert!((itl.avg - 10.0).abs() < 1e-9);
        let tput = s.get(Metric::OutputTokenThroughputPerUser).unwrap();
        assert!((tput.avg - 100.0).abs() < 1e-6);
    }

    #[test]
    fn objective_direction() {
        let r = rec(100, 200, 11); // ITL 10 ms → 100 tokens/s/user
        let itl = objective(Metric::InterTokenLatency, 20.0);
        let slow = objective(Metric::InterTokenLatency, 5.0);
        let tput = objective(Metric::OutputTokenThroughputPerUser, 50.0);
        assert!(itl.met_by(&r));
        assert!(!slow.met_by(&r));
        assert!(tput.met_by(&r));
    }

    #[test]
    fn metric_keys_round_trip() {
        for &m in Metric::ALL {
            assert_eq!(Metric::from_key(m.key()), Some(m));
        }
        assert_eq!(Metric::from_key("ttft"), Some(Metric::TimeToFirstToken));
    }
}
