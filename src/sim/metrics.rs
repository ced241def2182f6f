//! What the simulator counts about itself, and the three ways it tells: Triton's statistics
//! extension (HTTP JSON and gRPC `ModelStatistics`), and Prometheus text with Triton's metric
//! names on the metrics port.
//!
//! All counters are cumulative since start and shared by HTTP and gRPC traffic; clients diff
//! snapshots. Per successful request the server-side time splits without overlap into
//!
//! * `compute_input`: request received → parsed, validated and tokenized (handed to the queue);
//! * `queue`: queued → admitted to a batch slot (includes an injected stall);
//! * `compute_infer`: admitted → the engine produced the last token;
//! * `compute_output`: last token produced → final response handed to the transport;
//!
//! and `request_duration` = received → final response handed to the transport = their sum.
//!
//! Tensor models count the way Triton's dynamic batcher does: `queue` runs from the request
//! being handed to the batcher to the start of the execution it joined; `compute_input`,
//! `compute_infer` and `compute_output` are the phases of that execution (every request of a
//! batch reports the whole batch's phases); parsing, validation and response encoding belong to
//! no phase and show as overhead (`success − queue − compute`), as on Triton.
//! `execution_count` and `batch_stats` (per execution batch size: executions and their cumulative
//! phase times) are recorded when an execution ends; `inference_count` grows by a request's
//! batch size together with its success, so in any window of statistics deltas
//! `inference_count = Σ batch` over the successful requests, as clients such as perf_analyzer
//! expect (on Triton both are reported at the end of the execution).
//!
//! Besides Triton's families the simulator exports its own measurement of time to first token,
//! `ttftbench_sim_first_response_us`: a summary (quantiles 0.5, 0.9, 0.99 from an HDR histogram
//! with 3 significant digits, plus `_sum` and `_count`) of the time from the request's arrival
//! (body fully read) to the moment its first content-bearing response is handed to the transport
//! (HTTP body chunk or gRPC message). A client's TTFT minus this is its own overhead plus the
//! network.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use strum::VariantArray as _;
use tokio::time::Instant;

use super::counters::{EngineStats, RequestTimes, get};
use crate::proto;
use crate::server_metrics::ServerKind;

/// Why a request failed, as Triton's `nv_inference_request_failure{reason=...}` labels it (its
/// name in upper case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "UPPERCASE")]
pub(crate) enum FailReason {
    /// Refused before running: queue full, server unavailable.
    Rejected,
    /// The client went away before the end.
    Canceled,
    /// The "backend" failed: injected error or cut stream.
    Backend,
    /// Anything else: invalid input, shutdown.
    Other,
}

/// A `{count, ns}` pair, as the statistics extension reports durations.
#[derive(Debug, Default)]
struct DurStat {
    count: AtomicU64,
    ns: AtomicU64,
}

impl DurStat {
    fn add(&self, ns: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn get(&self) -> (u64, u64) {
        (get(&self.count), get(&self.ns))
    }

    fn json(&self) -> Value {
        let (count, ns) = self.get();
        json!({"count": count, "ns": ns})
    }

    fn proto(&self) -> Option<proto::StatisticDuration> {
        let (count, ns) = self.get();
        Some(proto::StatisticDuration { count, ns })
    }
}

/// Executions of one batch size: how many, and their cumulative phase times
/// (`[count, input_ns, infer_ns, output_ns]`).
#[derive(Debug, Default)]
struct BatchStat([AtomicU64; 4]);

impl BatchStat {
    fn snapshot(&self) -> [u64; 4] {
        self.0.each_ref().map(get)
    }
}

/// Bucket bounds of `nv_inference_first_response_histogram_ms` (Triton's defaults).
const FIRST_RESPONSE_BUCKETS_MS: [u64; 4] = [100, 500, 2000, 5000];

/// Counters of one hosted model.
#[derive(Debug)]
pub(crate) struct ModelMetrics {
    name: String,
    version: String,
    /// `model="...",version="..."`, escaped once.
    labels: String,
    success: DurStat,
    fail: DurStat,
    queue: DurStat,
    compute_input: DurStat,
    compute_infer: DurStat,
    compute_output: DurStat,
    fail_reasons: [AtomicU64; 4],
    inference_count: AtomicU64,
    /// Per execution batch size `b`, at index `b − 1`; empty for models that do not record
    /// executions (LLMs).
    batch_stats: Box<[BatchStat]>,
    /// Batch executions: engine steps that admitted at least one request (instant mode: one per
    /// request).
    pub(crate) exec_count: AtomicU64,
    /// Gauge: requests queued, not yet in a slot.
    pub(crate) pending: AtomicI64,
    /// Gauge: sequences holding a slot.
    pub(crate) running: AtomicI64,
    last_inference_ms: AtomicU64,
    output_tokens: AtomicU64,
    /// Non-cumulative counts per first-response bucket; the last one is `+Inf`.
    first_buckets: [AtomicU64; 5],
    first_sum_us: AtomicU64,
    first_count: AtomicU64,
    /// First-response times in µs.
    sim_first: Mutex<Histogram<u64>>,
    /// False when Triton does not see the engine's queue (TensorRT-LLM style: requests go to
    /// the backend at once and wait inside it), so Triton's queue counter and pending gauge stay
    /// at zero and the wait shows in `compute_infer`.
    queue_visible: bool,
    /// Requests received (validated or not).
    received: AtomicU64,
    /// Engine state and counters (LLMs).
    pub(crate) engine: EngineStats,
    /// Per-request latency histograms in the metrics style's buckets.
    pub(crate) times: RequestTimes,
}

impl ModelMetrics {
    /// Zeroed counters for model `name`, version `version`, with room for batch statistics of
    /// executions up to `max_batch` elements (0 = none recorded).
    pub(crate) fn with_batch_stats(name: &str, version: &str, max_batch: u32) -> Self {
        // 1 µs .. 1 h at 3 significant digits; `saturating_record` clamps outliers. Constant
        // bounds that are valid by construction, checked once at startup.
        let hist = Histogram::new_with_bounds(1, 3_600_000_000, 3)
            .expect("constant histogram bounds are valid");
        ModelMetrics {
            name: name.to_owned(),
            version: version.to_owned(),
            labels: format!(
                "model=\"{}\",version=\"{}\"",
                escape_label(name),
                escape_label(version)
            ),
            success: DurStat::default(),
            fail: DurStat::default(),
            queue: DurStat::default(),
            compute_input: DurStat::default(),
            compute_infer: DurStat::default(),
            compute_output: DurStat::default(),
            fail_reasons: Default::default(),
            inference_count: AtomicU64::new(0),
            batch_stats: (0..max_batch).map(|_| BatchStat::default()).collect(),
            exec_count: AtomicU64::new(0),
            pending: AtomicI64::new(0),
            running: AtomicI64::new(0),
            last_inference_ms: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            first_buckets: Default::default(),
            first_sum_us: AtomicU64::new(0),
            first_count: AtomicU64::new(0),
            sim_first: Mutex::new(hist),
            queue_visible: true,
            received: AtomicU64::new(0),
            engine: EngineStats::default(),
            times: RequestTimes::for_style(ServerKind::Triton),
        }
    }

    /// The same counters as the server exports them in `style`: histograms in its buckets, and
    /// for an LLM on TensorRT-LLM the engine's queue hidden from Triton's counters.
    pub(crate) fn styled(mut self, style: ServerKind, llm: bool) -> Self {
        self.times = RequestTimes::for_style(style);
        self.queue_visible = !(llm && style == ServerKind::TrtLlm);
        self
    }

    /// Model name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Model version.
    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    /// Successful requests.
    pub(crate) fn successes(&self) -> u64 {
        self.success.get().0
    }

    /// Failed requests for `reason`.
    pub(crate) fn failures(&self, reason: FailReason) -> u64 {
        self.fail_reasons[reason as usize].load(Ordering::Relaxed)
    }

    /// Requests received.
    pub(crate) fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Requests queued now (a gauge below zero, a decrement racing its increment, reads 0).
    pub(crate) fn pending_now(&self) -> u64 {
        self.pending.load(Ordering::Relaxed).max(0) as u64
    }

    /// Sequences holding a slot now (0 when the gauge dips below zero).
    pub(crate) fn running_now(&self) -> u64 {
        self.running.load(Ordering::Relaxed).max(0) as u64
    }

    /// Requests waiting for the engine, as Triton's pending gauge shows them.
    fn triton_pending(&self) -> u64 {
        if self.queue_visible {
            self.pending_now()
        } else {
            0
        }
    }

    /// Records a failed request that took `ns` from arrival.
    pub(crate) fn record_failure(&self, reason: FailReason, ns: u64) {
        self.fail.add(ns);
        self.fail_reasons[reason as usize].fetch_add(1, Ordering::Relaxed);
        self.touch();
    }

    /// Records one execution of `batch` elements with its phase durations: `execution_count`
    /// +1 and the batch statistics of that size (`inference_count` grows with each request's
    /// success).
    pub(crate) fn record_execution(
        &self,
        batch: u32,
        input_ns: u64,
        infer_ns: u64,
        output_ns: u64,
    ) {
        self.exec_count.fetch_add(1, Ordering::Relaxed);
        let slot = (batch as usize)
            .checked_sub(1)
            .and_then(|i| self.batch_stats.get(i));
        if let Some(b) = slot {
            for (a, v) in b.0.iter().zip([1, input_ns, infer_ns, output_ns]) {
                a.fetch_add(v, Ordering::Relaxed);
            }
        }
    }

    /// Batch sizes that ran at least once, with `[count, input_ns, infer_ns, output_ns]`,
    /// ascending.
    fn batch_snapshot(&self) -> impl Iterator<Item = (u64, [u64; 4])> + '_ {
        self.batch_stats
            .iter()
            .enumerate()
            .map(|(i, b)| (i as u64 + 1, b.snapshot()))
            .filter(|(_, s)| s[0] > 0)
    }

    fn record_first_response(&self, us: u64) {
        self.times.ttft.observe_ns(us.saturating_mul(1000));
        // Prometheus buckets are inclusive upper bounds (`le`).
        let idx = FIRST_RESPONSE_BUCKETS_MS
            .iter()
            .position(|&b| us <= b * 1000);
        self.first_buckets[idx.unwrap_or(FIRST_RESPONSE_BUCKETS_MS.len())]
            .fetch_add(1, Ordering::Relaxed);
        self.first_sum_us.fetch_add(us, Ordering::Relaxed);
        self.first_count.fetch_add(1, Ordering::Relaxed);
        let mut h = self.sim_first.lock().unwrap_or_else(|p| p.into_inner());
        h.saturating_record(us.max(1));
    }

    fn touch(&self) {
        let ms = super::unix_now().as_millis() as u64;
        self.last_inference_ms.store(ms, Ordering::Relaxed);
    }

    /// A copy of the first-response histogram (µs).
    pub(crate) fn first_response_histogram(&self) -> Histogram<u64> {
        self.sim_first
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The statistics-extension JSON object of this model.
    pub(crate) fn stats_json(&self) -> Value {
        json!({
            "name": self.name,
            "version": self.version,
            "last_inference": self.last_inference_ms.load(Ordering::Relaxed),
            "inference_count": self.inference_count.load(Ordering::Relaxed),
            "execution_count": self.exec_count.load(Ordering::Relaxed),
            "inference_stats": {
                "success": self.success.json(),
                "fail": self.fail.json(),
                "queue": self.queue.json(),
                "compute_input": self.compute_input.json(),
                "compute_infer": self.compute_infer.json(),
                "compute_output": self.compute_output.json(),
                "cache_hit": {"count": 0, "ns": 0},
                "cache_miss": {"count": 0, "ns": 0},
            },
            "response_stats": {},
            "batch_stats": self.batch_snapshot().map(|(size, [count, input, infer, output])| json!({
                "batch_size": size,
                "compute_input": {"count": count, "ns": input},
                "compute_infer": {"count": count, "ns": infer},
                "compute_output": {"count": count, "ns": output},
            })).collect::<Vec<_>>(),
            "memory_usage": [],
        })
    }

    /// The same statistics as a gRPC message.
    pub(crate) fn stats_proto(&self) -> proto::ModelStatistics {
        let zero = Some(proto::StatisticDuration { count: 0, ns: 0 });
        proto::ModelStatistics {
            name: self.name.clone(),
            version: self.version.clone(),
            last_inference: self.last_inference_ms.load(Ordering::Relaxed),
            inference_count: self.inference_count.load(Ordering::Relaxed),
            execution_count: self.exec_count.load(Ordering::Relaxed),
            inference_stats: Some(proto::InferStatistics {
                success: self.success.proto(),
                fail: self.fail.proto(),
                queue: self.queue.proto(),
                compute_input: self.compute_input.proto(),
                compute_infer: self.compute_infer.proto(),
                compute_output: self.compute_output.proto(),
                cache_hit: zero,
                cache_miss: zero,
            }),
            batch_stats: self
                .batch_snapshot()
                .map(
                    |(batch_size, [count, input, infer, output])| proto::InferBatchStatistics {
                        batch_size,
                        compute_input: Some(proto::StatisticDuration { count, ns: input }),
                        compute_infer: Some(proto::StatisticDuration { count, ns: infer }),
                        compute_output: Some(proto::StatisticDuration { count, ns: output }),
                    },
                )
                .collect(),
            memory_usage: Vec::new(),
            response_stats: Default::default(),
        }
    }
}

/// When the engine admitted a request and produced its first and last tokens (each `None` when
/// unknown: instant mode, or the phase never happened).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EngineTimes {
    /// First admitted to a batch slot.
    pub(crate) admitted: Option<Instant>,
    /// First token produced.
    pub(crate) first_token: Option<Instant>,
    /// Last token produced.
    pub(crate) last_token: Option<Instant>,
}

/// Follows one request from arrival to its end and records it exactly once. Dropping it
/// without an outcome (the client went away and the transport dropped the response) records a
/// `CANCELED` failure.
#[derive(Debug)]
pub(crate) struct Tracker {
    metrics: Arc<ModelMetrics>,
    arrival: Instant,
    submitted: Instant,
    first_done: bool,
    finished: bool,
}

impl Tracker {
    /// Starts tracking a request that arrived at `arrival`.
    pub(crate) fn new(metrics: Arc<ModelMetrics>, arrival: Instant) -> Self {
        metrics.received.fetch_add(1, Ordering::Relaxed);
        Tracker {
            metrics,
            arrival,
            submitted: arrival,
            first_done: false,
            finished: false,
        }
    }

    /// The request was parsed and handed to the queue.
    pub(crate) fn mark_submitted(&mut self) {
        self.submitted = Instant::now();
    }

    /// The first content-bearing response was handed to the transport (recorded once).
    pub(crate) fn first_response(&mut self) {
        self.first_response_at(Instant::now());
    }

    fn first_response_at(&mut self, now: Instant) {
        if !self.first_done {
            self.first_done = true;
            let us = now.saturating_duration_since(self.arrival).as_micros() as u64;
            self.metrics.record_first_response(us);
        }
    }

    /// The final response was handed to the transport. `admitted`, `first_token` and
    /// `last_token` come from the token source (missing ones collapse the corresponding phase to
    /// zero). A request whose only response this is gets its first response recorded now too.
    pub(crate) fn succeed(&mut self, engine: EngineTimes, tokens: u32) {
        self.succeed_at(engine, tokens, Instant::now());
    }

    fn succeed_at(&mut self, engine: EngineTimes, tokens: u32, now: Instant) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.first_response_at(now);
        let admitted = engine
            .admitted
            .unwrap_or(self.submitted)
            .clamp(self.submitted, now);
        let last = engine.last_token.unwrap_or(now).clamp(admitted, now);
        let first = engine.first_token.unwrap_or(last).clamp(admitted, last);
        let ns = |a: Instant, b: Instant| b.saturating_duration_since(a).as_nanos() as u64;
        let m = &self.metrics;
        m.success.add(ns(self.arrival, now));
        m.compute_input.add(ns(self.arrival, self.submitted));
        if m.queue_visible {
            m.queue.add(ns(self.submitted, admitted));
            m.compute_infer.add(ns(admitted, last));
        } else {
            m.queue.add(0);
            m.compute_infer.add(ns(self.submitted, last));
        }
        m.compute_output.add(ns(last, now));
        m.inference_count.fetch_add(1, Ordering::Relaxed);
        m.output_tokens
            .fetch_add(u64::from(tokens), Ordering::Relaxed);
        let t = &m.times;
        t.queue.observe_ns(ns(self.submitted, admitted));
        t.prefill.observe_ns(ns(admitted, first));
        t.decode.observe_ns(ns(first, last));
        t.inference.observe_ns(ns(admitted, last));
        t.e2e.observe_ns(ns(self.arrival, now));
        if tokens > 1 {
            t.tpot.observe_ns(ns(first, last) / u64::from(tokens - 1));
        }
        t.generated.observe(f64::from(tokens));
        m.touch();
    }

    /// A tensor request of `batch` elements had its response handed to the transport.
    /// `start`, `input_end`, `infer_end` and `end` delimit the phases of the execution it
    /// joined; the queue phase runs from [`Tracker::mark_submitted`] to `start`.
    /// `inference_count` grows by `batch`; the batcher counted the execution itself.
    pub(crate) fn succeed_tensor(&mut self, phases: [Instant; 4], batch: u32) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let now = Instant::now();
        self.first_response_at(now);
        let [start, input_end, infer_end, end] = phases;
        let ns = |a: Instant, b: Instant| b.saturating_duration_since(a).as_nanos() as u64;
        let m = &self.metrics;
        m.success.add(ns(self.arrival, now));
        m.queue.add(ns(self.submitted, start));
        m.compute_input.add(ns(start, input_end));
        m.compute_infer.add(ns(input_end, infer_end));
        m.compute_output.add(ns(infer_end, end));
        m.inference_count
            .fetch_add(u64::from(batch), Ordering::Relaxed);
        m.touch();
    }

    /// The request failed for `reason`.
    pub(crate) fn fail(&mut self, reason: FailReason) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.metrics
            .record_failure(reason, elapsed_ns(self.arrival));
    }
}

/// Nanoseconds from `since` to now (0 if `since` is in the future).
pub(crate) fn elapsed_ns(since: Instant) -> u64 {
    Instant::now().saturating_duration_since(since).as_nanos() as u64
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.fail(FailReason::Canceled);
    }
}

/// A label value with Prometheus' escapes (`\\`, `\"`, `\n`).
pub(crate) fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Triton's cumulative duration counters (µs), in the order its page lists them: family, help,
/// and the phase each one sums.
type DurationFamily = (&'static str, &'static str, fn(&ModelMetrics) -> &DurStat);

#[rustfmt::skip]
const TRITON_DURATIONS: [DurationFamily; 5] = [
    ("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds (includes cached requests)", |m| &m.success),
    ("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds (includes cached requests)", |m| &m.queue),
    ("nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds (does not include cached requests)", |m| &m.compute_input),
    ("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds (does not include cached requests)", |m| &m.compute_infer),
    ("nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds (does not include cached requests)", |m| &m.compute_output),
];

/// Prometheus text exposition (format 0.0.4) of every model's counters with Triton's names,
/// then the simulator's own families ([`render_sim_own`]).
pub(crate) fn render_prometheus(models: &[&ModelMetrics]) -> String {
    let mut out = String::with_capacity(4096 + models.len() * 3072);
    let counter = |out: &mut String, name: &str, help: &str, f: &dyn Fn(&ModelMetrics) -> u64| {
        triton_family(out, models, (name, "counter", help), f)
    };
    let us = |d: &DurStat| d.get().1 / 1000;

    counter(
        &mut out,
        "nv_inference_request_success",
        "Number of successful inference requests, all batch sizes",
        &|m| m.success.get().0,
    );
    let name = "nv_inference_request_failure";
    let _ = writeln!(
        out,
        "# HELP {name} Number of failed inference requests, all batch sizes\n# TYPE {name} counter"
    );
    for m in models {
        for &r in FailReason::VARIANTS {
            let v = get(&m.fail_reasons[r as usize]);
            let _ = writeln!(
                out,
                "{name}{{model=\"{}\",reason=\"{}\",version=\"{}\"}} {v}",
                escape_label(&m.name),
                <&str>::from(r),
                escape_label(&m.version)
            );
        }
    }
    // Gauges below zero (a decrement racing its increment) show as 0.
    #[rustfmt::skip]
    let families: [SeriesFamily; 3] = [
        ("nv_inference_count", "counter", "Number of inferences performed (does not include cached requests)", |m| m.inference_count.load(Ordering::Relaxed)),
        ("nv_inference_exec_count", "counter", "Number of model executions performed (does not include cached requests)", |m| m.exec_count.load(Ordering::Relaxed)),
        ("nv_inference_pending_request_count", "gauge", "Instantaneous number of pending requests awaiting execution per-model.", ModelMetrics::triton_pending),
    ];
    for (name, kind, help, f) in families {
        triton_family(&mut out, models, (name, kind, help), &f);
    }
    for (name, help, phase) in TRITON_DURATIONS {
        counter(&mut out, name, help, &|m| us(phase(m)));
    }

    let name = "nv_inference_first_response_histogram_ms";
    let _ = writeln!(
        out,
        "# HELP {name} Duration from request to first response in milliseconds\n# TYPE {name} histogram"
    );
    for m in models {
        let count = get(&m.first_count);
        let _ = writeln!(out, "{name}_count{{{}}} {count}", m.labels);
        let sum_ms = get(&m.first_sum_us) as f64 / 1000.0;
        let _ = writeln!(out, "{name}_sum{{{}}} {sum_ms}", m.labels);
        let mut cum = 0;
        for (i, le) in FIRST_RESPONSE_BUCKETS_MS.iter().enumerate() {
            cum += get(&m.first_buckets[i]);
            let _ = writeln!(out, "{name}_bucket{{{},le=\"{le}\"}} {cum}", m.labels);
        }
        cum += get(&m.first_buckets[FIRST_RESPONSE_BUCKETS_MS.len()]);
        let _ = writeln!(out, "{name}_bucket{{{},le=\"+Inf\"}} {cum}", m.labels);
    }

    render_sim_own(&mut out, models);
    out
}

/// A family of one series a model: name, Prometheus type, help text, and each model's value.
type SeriesFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ModelMetrics) -> u64,
);

/// A family labelled `model`/`version`, one line per model; `kind` is its Prometheus type.
fn triton_family(
    out: &mut String,
    models: &[&ModelMetrics],
    (name, kind, help): (&str, &str, &str),
    f: &dyn Fn(&ModelMetrics) -> u64,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for m in models {
        let _ = writeln!(out, "{name}{{{}}} {}", m.labels, f(m));
    }
}

/// The simulator's own families, in every metrics style: `ttftbench_sim_first_response_us`
/// (summary, µs), `ttftbench_sim_running_sequences` (gauge), `ttftbench_sim_output_tokens`
/// (counter).
pub(crate) fn render_sim_own(out: &mut String, models: &[&ModelMetrics]) {
    let name = "ttftbench_sim_first_response_us";
    let _ = writeln!(
        out,
        "# HELP {name} Simulator-side time to first token: request arrival to first content chunk handed to the transport, microseconds\n# TYPE {name} summary"
    );
    for m in models {
        let h = m.first_response_histogram();
        for q in [0.5, 0.9, 0.99] {
            let v = if h.is_empty() {
                0
            } else {
                h.value_at_quantile(q)
            };
            let _ = writeln!(out, "{name}{{{},quantile=\"{q}\"}} {v}", m.labels);
        }
        let _ = writeln!(out, "{name}_sum{{{}}} {}", m.labels, get(&m.first_sum_us));
        let _ = writeln!(out, "{name}_count{{{}}} {}", m.labels, get(&m.first_count));
    }

    #[rustfmt::skip]
    let families: [SeriesFamily; 2] = [
        ("ttftbench_sim_running_sequences", "gauge", "Sequences holding a batch slot in the simulated engine", ModelMetrics::running_now),
        ("ttftbench_sim_output_tokens", "counter", "Output tokens of successful requests", |m| m.output_tokens.load(Ordering::Relaxed)),
    ];
    for (name, kind, help, f) in families {
        triton_family(out, models, (name, kind, help), &f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracker_splits_time_without_overlap() {
        let m = Arc::new(ModelMetrics::with_batch_stats("gpt2", "1", 0));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + std::time::Duration::from_millis(ms);
        let mut t = Tracker::new(m.clone(), t0);
        t.submitted = at(1);
        t.first_response_at(at(111));
        let engine = EngineTimes {
            admitted: Some(at(11)),
            first_token: Some(at(61)),
            last_token: Some(at(161)),
        };
        t.succeed_at(engine, 5, at(163));
        drop(t);
        let s = m.stats_json();
        let st = &s["inference_stats"];
        assert_eq!(st["success"]["count"], 1);
        assert_eq!(st["success"]["ns"], 163_000_000u64);
        assert_eq!(st["compute_input"]["ns"], 1_000_000u64);
        assert_eq!(st["queue"]["ns"], 10_000_000u64);
        assert_eq!(st["compute_infer"]["ns"], 150_000_000u64);
        assert_eq!(st["compute_output"]["ns"], 2_000_000u64);
        assert_eq!(st["fail"]["count"], 0);
        assert_eq!(s["inference_count"], 1);
        let text = render_prometheus(&[&*m]);
        for line in [
            "nv_inference_request_success{model=\"gpt2\",version=\"1\"} 1\n",
            "nv_inference_queue_duration_us{model=\"gpt2\",version=\"1\"} 10000\n",
            "nv_inference_request_duration_us{model=\"gpt2\",version=\"1\"} 163000\n",
            "nv_inference_first_response_histogram_ms_bucket{model=\"gpt2\",version=\"1\",le=\"100\"} 0\n",
            "nv_inference_first_response_histogram_ms_bucket{model=\"gpt2\",version=\"1\",le=\"500\"} 1\n",
            "nv_inference_first_response_histogram_ms_bucket{model=\"gpt2\",version=\"1\",le=\"+Inf\"} 1\n",
            "nv_inference_first_response_histogram_ms_sum{model=\"gpt2\",version=\"1\"} 111\n",
            "ttftbench_sim_first_response_us_count{model=\"gpt2\",version=\"1\"} 1\n",
            "ttftbench_sim_first_response_us_sum{model=\"gpt2\",version=\"1\"} 111000\n",
            "ttftbench_sim_first_response_us{model=\"gpt2\",version=\"1\",quantile=\"0.5\"} 111",
            "# TYPE nv_inference_pending_request_count gauge\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn dropped_tracker_counts_as_canceled() {
        let m = Arc::new(ModelMetrics::with_batch_stats("m", "1", 0));
        drop(Tracker::new(m.clone(), Instant::now()));
        let text = render_prometheus(&[&*m]);
        assert!(text.contains(
            "nv_inference_request_failure{model=\"m\",reason=\"CANCELED\",version=\"1\"} 1"
        ));
        assert_eq!(
            m.stats_proto()
                .inference_stats
                .and_then(|s| s.fail)
                .map(|d| d.count),
            Some(1)
        );
    }
}
