//! What the simulated engine counts for the engine-style exporters (vLLM, SGLang, TGI,
//! TensorRT-LLM), beside Triton's own counters in `metrics`: engine state (KV blocks,
//! preemptions, prefix-cache lookups, busy time, the last step's batch), and per-request latency
//! histograms with each engine's own bucket bounds.
//!
//! Histograms are fixed arrays of atomic counters chosen when the server starts (the metrics
//! style is fixed then), so recording a request costs a few atomic additions and no lock.
//! Bucket bounds are the engines' defaults, taken from their source:
//! vLLM `vllm/v1/metrics/loggers.py` (`PrometheusStatLogger`), SGLang
//! `python/sglang/srt/metrics/collector.py` (`TokenizerMetricsCollector`,
//! `SchedulerMetricsCollector.queue_time`), TGI `router/src/server.rs` (the `duration` suffix
//! matcher: 35 buckets from 0.0001 × 1.5, growing by 1.5).

use std::sync::atomic::{AtomicU64, Ordering};

use super::engine_config::EngineConfig;
use super::kv::PrefixCounters;
use crate::server_metrics::ServerKind;

/// `vllm:time_to_first_token_seconds` buckets.
pub(crate) const VLLM_TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// Buckets of vLLM's request interval histograms (queue, prefill, decode, inference, e2e).
pub(crate) const VLLM_REQUEST: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];
/// `vllm:time_per_output_token_seconds` buckets.
pub(crate) const VLLM_TPOT: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// `sglang:time_to_first_token_seconds` buckets.
pub(crate) const SGLANG_TTFT: &[f64] = &[
    0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0,
    400.0,
];
/// `sglang:e2e_request_latency_seconds` buckets.
pub(crate) const SGLANG_E2E: &[f64] = &[
    0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0,
    400.0, 600.0, 1200.0, 1800.0, 2400.0,
];
/// `sglang:queue_time_seconds` buckets.
pub(crate) const SGLANG_QUEUE: &[f64] = &[
    0.0, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0,
    80.0, 90.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0, 1200.0,
    1400.0, 1600.0, 1800.0, 2000.0, 2500.0, 3000.0,
];
/// `sglang:inter_token_latency_seconds` buckets.
pub(crate) const SGLANG_ITL: &[f64] = &[
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
    0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
];

/// TGI's bounds for every histogram whose name ends in `duration`: 0.0001 × 1.5^k, k = 1..=35,
/// computed by repeated multiplication as TGI does (so the printed bounds match its output).
const fn tgi_duration_buckets() -> [f64; 35] {
    let mut out = [0.0; 35];
    let mut v = 0.0001;
    let mut i = 0;
    while i < 35 {
        v *= 1.5;
        out[i] = v;
        i += 1;
    }
    out
}
/// TGI duration buckets.
pub(crate) const TGI_DURATION: &[f64] = &tgi_duration_buckets();

/// `max_total_tokens` the simulated TGI reports (bounds its token-count histograms).
pub(crate) const TGI_MAX_TOTAL_TOKENS: f64 = 4096.0;

/// TGI's `tgi_request_generated_tokens` bounds: `max_total_tokens / 100 × (x + 1)`, x < 100.
const fn tgi_token_buckets() -> [f64; 100] {
    let mut out = [0.0; 100];
    let mut i = 0;
    while i < 100 {
        out[i] = (TGI_MAX_TOTAL_TOKENS / 100.0) * (i + 1) as f64;
        i += 1;
    }
    out
}
/// TGI generated-token buckets.
pub(crate) const TGI_TOKENS: &[f64] = &tgi_token_buckets();

/// A Prometheus histogram: non-cumulative bucket counts (the last one is `+Inf`), the sum in
/// integer sub-units (`scale` per unit: nanoseconds for seconds) and the count.
#[derive(Debug)]
pub(crate) struct Hist {
    bounds: &'static [f64],
    buckets: Box<[AtomicU64]>,
    scale: f64,
    sum: AtomicU64,
    count: AtomicU64,
}

/// A histogram's values at one instant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistSnapshot {
    /// Upper bounds, ascending (`+Inf` not included).
    pub(crate) bounds: &'static [f64],
    /// Cumulative counts per bound, then the `+Inf` bucket (= `count`).
    pub(crate) cumulative: Vec<u64>,
    /// Sum of the observed values, in the histogram's unit.
    pub(crate) sum: f64,
    /// Observations.
    pub(crate) count: u64,
}

impl Hist {
    /// A histogram of durations in seconds.
    pub(crate) fn seconds(bounds: &'static [f64]) -> Self {
        Hist::new(bounds, 1e9)
    }

    /// A histogram of counts (tokens).
    pub(crate) fn counts(bounds: &'static [f64]) -> Self {
        Hist::new(bounds, 1.0)
    }

    fn new(bounds: &'static [f64], scale: f64) -> Self {
        Hist {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            scale,
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Records `v` (in the histogram's unit). Buckets are inclusive upper bounds (`le`).
    pub(crate) fn observe(&self, v: f64) {
        let idx = self.bounds.partition_point(|&b| b < v);
        self.buckets[idx].fetch_add(1, Ordering::Relaxed);
        self.sum
            .fetch_add((v.max(0.0) * self.scale) as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a duration of `ns` nanoseconds (histograms in seconds).
    pub(crate) fn observe_ns(&self, ns: u64) {
        self.observe(ns as f64 / 1e9);
    }

    /// The current values.
    pub(crate) fn snapshot(&self) -> HistSnapshot {
        let mut cum = 0;
        let cumulative = self
            .buckets
            .iter()
            .map(|b| {
                cum += b.load(Ordering::Relaxed);
                cum
            })
            .collect();
        HistSnapshot {
            bounds: self.bounds,
            cumulative,
            sum: self.sum.load(Ordering::Relaxed) as f64 / self.scale,
            count: cum,
        }
    }
}

/// A histogram of seconds in TGI's duration buckets: the engine's batch histograms
/// ([`EngineStats::batch_prefill`], [`EngineStats::batch_decode`]), which only TGI exports.
impl Default for Hist {
    fn default() -> Self {
        Hist::seconds(TGI_DURATION)
    }
}

/// Per-request latency histograms, with the bounds of the server's metrics style.
#[derive(Debug)]
pub(crate) struct RequestTimes {
    /// Arrival → first content handed to the transport.
    pub(crate) ttft: Hist,
    /// Handed to the engine → first admitted to a batch slot.
    pub(crate) queue: Hist,
    /// Admitted → first token produced.
    pub(crate) prefill: Hist,
    /// First token → last token produced.
    pub(crate) decode: Hist,
    /// Admitted → last token produced.
    pub(crate) inference: Hist,
    /// Arrival → final response handed to the transport.
    pub(crate) e2e: Hist,
    /// Decode time per output token after the first.
    pub(crate) tpot: Hist,
    /// Output tokens per request.
    pub(crate) generated: Hist,
}

impl RequestTimes {
    /// Histograms bucketed as `style` exports them (Triton styles export none: no buckets).
    pub(crate) fn for_style(style: ServerKind) -> Self {
        let none: &'static [f64] = &[];
        let [ttft, queue, request, tpot, tokens] = match style {
            // llama.cpp exports no histograms; the sums of its per-request times are read from
            // these histograms' `_sum` (`tokens_predicted_seconds_total`).
            ServerKind::Triton | ServerKind::TrtLlm | ServerKind::LlamaCpp => [none; 5],
            ServerKind::Vllm => [VLLM_TTFT, VLLM_REQUEST, VLLM_REQUEST, VLLM_TPOT, none],
            ServerKind::Sglang => [SGLANG_TTFT, SGLANG_QUEUE, SGLANG_E2E, SGLANG_ITL, none],
            ServerKind::Tgi => {
                let d = TGI_DURATION;
                [d, d, d, d, TGI_TOKENS]
            }
        };
        RequestTimes {
            ttft: Hist::seconds(ttft),
            queue: Hist::seconds(queue),
            prefill: Hist::seconds(request),
            decode: Hist::seconds(request),
            inference: Hist::seconds(request),
            e2e: Hist::seconds(request),
            tpot: Hist::seconds(tpot),
            generated: Hist::counts(tokens),
        }
    }
}

/// Engine-level state and counters of one LLM model.
#[derive(Debug, Default)]
pub(crate) struct EngineStats {
    /// Batch slots.
    pub(crate) max_batch: AtomicU64,
    /// Tokens per KV block.
    pub(crate) block_size: AtomicU64,
    /// KV blocks in the pool (nominal when unlimited).
    pub(crate) kv_capacity: AtomicU64,
    /// 1 when prefix caching is on.
    pub(crate) prefix_caching: AtomicU64,
    /// Gauge: KV blocks referenced by running sequences.
    pub(crate) kv_used: AtomicU64,
    /// Sequences preempted (vLLM preemptions, SGLang retractions).
    pub(crate) preemptions: AtomicU64,
    /// Prompt tokens looked up in the prefix cache.
    pub(crate) prefix_queried_tokens: AtomicU64,
    /// Of which cached.
    pub(crate) prefix_hit_tokens: AtomicU64,
    /// Full prompt blocks found cached (reused).
    pub(crate) prefix_hit_blocks: AtomicU64,
    /// Prompt tokens of requests whose first token was produced.
    pub(crate) prompt_tokens: AtomicU64,
    /// Tokens produced by the engine.
    pub(crate) generation_tokens: AtomicU64,
    /// Nanoseconds of engine steps (busy time, for the simulated GPU).
    pub(crate) busy_ns: AtomicU64,
    /// Engine steps.
    pub(crate) iterations: AtomicU64,
    /// Sequences in the last step.
    pub(crate) last_scheduled: AtomicU64,
    /// Sequences admitted (prefilled) in the last step.
    pub(crate) last_context: AtomicU64,
    /// Prompt tokens prefilled (cached ones excluded; a preempted sequence's again).
    pub(crate) prefilled_tokens: AtomicU64,
    /// Nanoseconds of the steps that prefilled (llama.cpp's `prompt_seconds_total`: the wall
    /// time of the batches that held prompt tokens).
    pub(crate) prefill_steps_ns: AtomicU64,
    /// Running sequences summed over steps (llama.cpp's busy slots per decode call).
    pub(crate) busy_slot_steps: AtomicU64,
    /// Longest sequence finished, prompt plus generated tokens (llama.cpp's `n_tokens_max`).
    pub(crate) max_sequence: AtomicU64,
    /// Tokens prefilled in the last step.
    pub(crate) last_context_tokens: AtomicU64,
    /// Prefill part of the steps that admitted requests (TGI's `method="prefill"`).
    pub(crate) batch_prefill: Hist,
    /// Decode part of every step (TGI's `method="decode"`).
    pub(crate) batch_decode: Hist,
}

impl EngineStats {
    /// Records the engine's capacity (constant while it runs).
    pub(crate) fn configure(&self, cfg: &EngineConfig) {
        let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        set(&self.max_batch, cfg.max_batch as u64);
        set(&self.block_size, u64::from(cfg.kv_block_size));
        set(&self.kv_capacity, u64::from(cfg.kv_capacity()));
        set(&self.prefix_caching, u64::from(cfg.prefix_caching));
    }

    /// One engine step of `step_us`, of which `prefill_us` prefilled the `admitted` requests
    /// (`admitted[i]` tokens each), with `running` sequences in the batch.
    pub(crate) fn record_step(
        &self,
        step_us: u64,
        prefill_us: u64,
        admitted: &[u32],
        running: usize,
    ) {
        let add = |a: &AtomicU64, v: u64| a.fetch_add(v, Ordering::Relaxed);
        let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        add(&self.busy_ns, step_us.saturating_mul(1000));
        add(&self.iterations, 1);
        add(&self.busy_slot_steps, running as u64);
        let tokens = admitted.iter().map(|&t| u64::from(t)).sum();
        add(&self.prefilled_tokens, tokens);
        set(&self.last_scheduled, running as u64);
        set(&self.last_context, admitted.len() as u64);
        set(&self.last_context_tokens, tokens);
        if !admitted.is_empty() {
            self.batch_prefill.observe(prefill_us as f64 / 1e6);
            add(&self.prefill_steps_ns, step_us.saturating_mul(1000));
        }
        self.batch_decode
            .observe(step_us.saturating_sub(prefill_us) as f64 / 1e6);
    }

    /// A request produced its first token.
    pub(crate) fn first_token(&self, input_tokens: u32) {
        self.prompt_tokens
            .fetch_add(u64::from(input_tokens), Ordering::Relaxed);
    }

    /// A sequence of `tokens` (prompt and output) finished.
    pub(crate) fn sequence_done(&self, tokens: u64) {
        self.max_sequence.fetch_max(tokens, Ordering::Relaxed);
    }

    /// Publishes the KV cache's cumulative prefix counters.
    pub(crate) fn publish_prefix(&self, c: PrefixCounters) {
        let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        set(&self.prefix_queried_tokens, c.queried_tokens);
        set(&self.prefix_hit_tokens, c.hit_tokens);
        set(&self.prefix_hit_blocks, c.hit_blocks);
    }

    /// KV usage share (0–1): referenced blocks over the pool.
    pub(crate) fn kv_usage(&self) -> f64 {
        let cap = self.kv_capacity.load(Ordering::Relaxed);
        if cap == 0 {
            return 0.0;
        }
        (self.kv_used.load(Ordering::Relaxed) as f64 / cap as f64).min(1.0)
    }
}

/// Reads a counter.
pub(crate) fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_inclusive_and_cumulative() {
        static B: &[f64] = &[0.1, 0.5, 1.0];
        let h = Hist::seconds(B);
        for ns in [50_000_000, 100_000_000, 100_000_001, 2_000_000_000] {
            h.observe_ns(ns);
        }
        let s = h.snapshot();
        assert_eq!(s.cumulative, vec![2, 3, 3, 4]);
        assert_eq!(s.count, 4);
        assert!((s.sum - 2.250000001).abs() < 1e-9, "{}", s.sum);
    }

    #[test]
    fn tgi_bounds_match_the_router() {
        assert_eq!(TGI_DURATION.len(), 35);
        assert!((TGI_DURATION[0] - 0.00015).abs() < 1e-12);
        assert!((TGI_DURATION[34] - 0.0001 * 1.5f64.powi(35)).abs() < 1e-6);
        assert_eq!(TGI_TOKENS[0], 40.96);
        assert_eq!(TGI_TOKENS[99], 4096.0);
    }
}
