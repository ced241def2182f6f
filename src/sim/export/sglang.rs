//! The SGLang page, from `python/sglang/srt/metrics/collector.py`
//! (`SchedulerMetricsCollector`, `TokenizerMetricsCollector`) and SGLang's production-metrics
//! documentation.
//!
//! SGLang runs `prometheus_client` in multiprocess mode (no `_created` samples). Scheduler
//! series are labelled `engine_type="unified"`, `model_name`, `pp_rank="0"`, `tp_rank="0"`;
//! tokenizer series `model_name` only.
//!
//! * scheduler gauges `sglang:num_running_reqs`, `sglang:num_queue_reqs`,
//!   `sglang:num_used_tokens`, `sglang:token_usage` (used tokens / `max_total_num_tokens`),
//!   `sglang:max_total_num_tokens`, `sglang:cache_hit_rate` (prefix cache, cumulative here);
//!   counter `sglang:num_retracted_requests_total` (retractions are SGLang's preemptions);
//!   histogram `sglang:queue_time_seconds`;
//! * tokenizer counters `sglang:prompt_tokens_total`, `sglang:generation_tokens_total`,
//!   `sglang:cached_tokens_total`, `sglang:num_requests_total`,
//!   `sglang:num_aborted_requests_total`; histograms `sglang:time_to_first_token_seconds`,
//!   `sglang:inter_token_latency_seconds`, `sglang:e2e_request_latency_seconds`.

use super::{
    Dialect, Family, HistFamily, family, histogram, labels, py_float, python_histograms, sample,
};
use crate::sim::counters::get;
use crate::sim::metrics::{FailReason, ModelMetrics};

fn scheduler_labels(m: &ModelMetrics) -> [(&str, &str); 4] {
    [
        ("engine_type", "unified"),
        ("model_name", m.name()),
        ("pp_rank", "0"),
        ("tp_rank", "0"),
    ]
}

/// KV tokens per block, to count the KV pool in tokens.
fn tokens_per_block(m: &ModelMetrics) -> f64 {
    get(&m.engine.block_size) as f64
}

/// Prefix-cache hits over lookups, in tokens (0 before the first lookup).
fn cache_hit_rate(m: &ModelMetrics) -> f64 {
    let q = get(&m.engine.prefix_queried_tokens);
    if q == 0 {
        0.0
    } else {
        get(&m.engine.prefix_hit_tokens) as f64 / q as f64
    }
}

/// The `sglang:*` families of every LLM model.
pub(super) fn render(out: &mut String, models: &[&ModelMetrics]) {
    scheduler(out, models);
    tokenizer(out, models);
}

fn scheduler(out: &mut String, models: &[&ModelMetrics]) {
    #[rustfmt::skip]
    let series: [(&str, Family<f64>); 7] = [
        ("gauge", ("sglang:num_running_reqs", "The number of running requests.", |m| m.running_now() as f64)),
        ("gauge", ("sglang:num_used_tokens", "The number of used tokens.", |m| get(&m.engine.kv_used) as f64 * tokens_per_block(m))),
        ("gauge", ("sglang:token_usage", "The token usage.", |m| m.engine.kv_usage())),
        ("gauge", ("sglang:num_queue_reqs", "The number of requests in the waiting queue.", |m| m.pending_now() as f64)),
        ("gauge", ("sglang:cache_hit_rate", "The prefix cache hit rate.", cache_hit_rate)),
        ("gauge", ("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", |m| get(&m.engine.kv_capacity) as f64 * tokens_per_block(m))),
        ("counter", ("sglang:num_retracted_requests_total", "Total number of retracted requests.", |m| get(&m.engine.preemptions) as f64)),
    ];
    for (kind, (name, help, f)) in series {
        family(out, name, help, kind);
        for m in models {
            sample(out, name, &labels(&scheduler_labels(m)), &py_float(f(m)));
        }
    }
    let name = "sglang:queue_time_seconds";
    let help = "Histogram of queueing time in seconds.";
    family(out, name, help, "histogram");
    for m in models {
        let queue = m.times.queue.snapshot();
        histogram(out, Dialect::Python, name, &scheduler_labels(m), &queue);
    }
}

fn tokenizer(out: &mut String, models: &[&ModelMetrics]) {
    #[rustfmt::skip]
    let counters: [Family<u64>; 5] = [
        ("sglang:prompt_tokens_total", "Number of prefill tokens processed.", |m| get(&m.engine.prompt_tokens)),
        ("sglang:generation_tokens_total", "Number of generation tokens processed.", |m| get(&m.engine.generation_tokens)),
        ("sglang:cached_tokens_total", "Number of cached prompt tokens.", |m| get(&m.engine.prefix_hit_tokens)),
        ("sglang:num_requests_total", "Number of requests processed.", |m| m.successes()),
        ("sglang:num_aborted_requests_total", "Number of requests aborted.", |m| m.failures(FailReason::Canceled)),
    ];
    for (name, help, f) in counters {
        family(out, name, help, "counter");
        for m in models {
            let l = labels(&[("model_name", m.name())]);
            sample(out, name, &l, &py_float(f(m) as f64));
        }
    }
    #[rustfmt::skip]
    let families: [HistFamily; 3] = [
        ("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", |m| &m.times.ttft),
        ("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", |m| &m.times.tpot),
        ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", |m| &m.times.e2e),
    ];
    python_histograms(out, models, &families, &[]);
}
