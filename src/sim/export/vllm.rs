//! The vLLM page: what vLLM's OpenAI-compatible server exports (V1 engine), from
//! `vllm/v1/metrics/loggers.py` (`PrometheusStatLogger`) and `docs/design/metrics.md`.
//!
//! Every series is labelled `engine="0"` and `model_name` (the served model name), printed by
//! Python's `prometheus_client`: labels sorted, counters with `_total` and a `_created` gauge,
//! floats as Python prints them.
//!
//! * gauges `vllm:num_requests_running`, `vllm:num_requests_waiting`,
//!   `vllm:kv_cache_usage_perc` (0–1; "perc" is a misnomer kept by vLLM) and its pre-0.10 name
//!   `vllm:gpu_cache_usage_perc`, and the info gauge `vllm:cache_config_info` (`block_size`,
//!   `num_gpu_blocks`, `enable_prefix_caching`);
//! * counters `vllm:num_preemptions_total`, `vllm:prefix_cache_queries_total` and
//!   `vllm:prefix_cache_hits_total` (in tokens), `vllm:prompt_tokens_total`,
//!   `vllm:generation_tokens_total`, `vllm:request_success_total{finished_reason}`;
//! * histograms (seconds) `vllm:time_to_first_token_seconds`,
//!   `vllm:time_per_output_token_seconds`, `vllm:e2e_request_latency_seconds`,
//!   `vllm:request_queue_time_seconds`, `vllm:request_inference_time_seconds`,
//!   `vllm:request_prefill_time_seconds`, `vllm:request_decode_time_seconds`.

use super::{Family, HistFamily, family, labels, py_float, python_histograms, sample};
use crate::sim::counters::get;
use crate::sim::metrics::{FailReason, ModelMetrics};

/// The `vllm:*` families of every LLM model.
pub(super) fn render(out: &mut String, models: &[&ModelMetrics], started_unix: u64) {
    let base = |m: &ModelMetrics| labels(&[("engine", "0"), ("model_name", m.name())]);
    #[rustfmt::skip]
    let gauges: [Family<f64>; 4] = [
        ("vllm:num_requests_running", "Number of requests in model execution batches.", |m| m.running_now() as f64),
        ("vllm:num_requests_waiting", "Number of requests waiting to be processed.", |m| m.pending_now() as f64),
        ("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.", |m| m.engine.kv_usage()),
        ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", |m| m.engine.kv_usage()),
    ];
    for (name, help, f) in gauges {
        family(out, name, help, "gauge");
        for m in models {
            sample(out, name, &base(m), &py_float(f(m)));
        }
    }
    cache_config_info(out, models);
    counters(out, models, started_unix);
    histograms(out, models);
}

fn cache_config_info(out: &mut String, models: &[&ModelMetrics]) {
    let name = "vllm:cache_config_info";
    let help = "Information of the LLMEngine CacheConfig";
    family(out, name, help, "gauge");
    for m in models {
        let e = &m.engine;
        let bs = get(&e.block_size).to_string();
        let blocks = get(&e.kv_capacity).to_string();
        let on = get(&e.prefix_caching) == 1;
        let prefix = if on { "True" } else { "False" };
        let l = labels(&[
            ("block_size", &bs),
            ("cache_dtype", "auto"),
            ("enable_prefix_caching", prefix),
            ("engine", "0"),
            ("gpu_memory_utilization", "0.9"),
            ("num_gpu_blocks", &blocks),
        ]);
        sample(out, name, &l, "1.0");
    }
}

/// A counter family (`name` without `_total`): `_total` samples, then the `_created` gauge.
fn counter(
    out: &mut String,
    models: &[&ModelMetrics],
    started: f64,
    name: &str,
    help: &str,
    f: &dyn Fn(&ModelMetrics) -> u64,
) {
    let (total, created) = (format!("{name}_total"), format!("{name}_created"));
    let base = |m: &ModelMetrics| labels(&[("engine", "0"), ("model_name", m.name())]);
    family(out, &total, help, "counter");
    for m in models {
        sample(out, &total, &base(m), &py_float(f(m) as f64));
    }
    family(out, &created, help, "gauge");
    for m in models {
        sample(out, &created, &base(m), &py_float(started));
    }
}

fn counters(out: &mut String, models: &[&ModelMetrics], started_unix: u64) {
    let started = started_unix as f64;
    #[rustfmt::skip]
    let families: [Family<u64>; 5] = [
        ("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", |m| get(&m.engine.prefix_queried_tokens)),
        ("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", |m| get(&m.engine.prefix_hit_tokens)),
        ("vllm:num_preemptions", "Cumulative number of preemption from the engine.", |m| get(&m.engine.preemptions)),
        ("vllm:prompt_tokens", "Number of prefill tokens processed.", |m| get(&m.engine.prompt_tokens)),
        ("vllm:generation_tokens", "Number of generation tokens processed.", |m| get(&m.engine.generation_tokens)),
    ];
    for (name, help, f) in families {
        counter(out, models, started, name, help, &f);
    }
    let name = "vllm:request_success_total";
    let help = "Count of successfully processed requests.";
    family(out, name, help, "counter");
    for m in models {
        // The simulator always generates exactly max_tokens: every success ends on length.
        for (reason, n) in [
            ("abort", m.failures(FailReason::Canceled)),
            ("length", m.successes()),
            ("stop", 0),
        ] {
            let l = labels(&[
                ("engine", "0"),
                ("finished_reason", reason),
                ("model_name", m.name()),
            ]);
            sample(out, name, &l, &py_float(n as f64));
        }
    }
}

fn histograms(out: &mut String, models: &[&ModelMetrics]) {
    #[rustfmt::skip]
    let families: [HistFamily; 7] = [
        ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", |m| &m.times.ttft),
        ("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", |m| &m.times.tpot),
        ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", |m| &m.times.e2e),
        ("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", |m| &m.times.queue),
        ("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", |m| &m.times.inference),
        ("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", |m| &m.times.prefill),
        ("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", |m| &m.times.decode),
    ];
    python_histograms(out, models, &families, &[("engine", "0")]);
}
