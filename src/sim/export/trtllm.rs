//! The TensorRT-LLM backend's families on Triton's page, from tensorrtllm_backend's README
//! ("Triton Metrics") and its `custom_metrics_reporter` (`kv_cache_labels_`: max, free, used,
//! tokens_per, reused, fraction).
//!
//! Gauges labelled `model`, `version` and one kind label, printed by prometheus-cpp (labels
//! sorted):
//!
//! * `nv_trt_llm_request_metrics{request_type}`: `waiting` (queued in the executor), `context`
//!   (prefilled in the last iteration), `scheduled` (in the last iteration), `max` (batch
//!   slots), `active` (holding a slot);
//! * `nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type}`: `max`, `free`, `used`,
//!   `tokens_per`, `reused` (cumulative blocks served from the prefix cache, reported as a
//!   gauge), `fraction` (used / max);
//! * `nv_trt_llm_inflight_batcher_metrics{inflight_batcher_specific_metric}`:
//!   `total_context_tokens`, `generation_requests`, `micro_batch_id`, `paused_requests`;
//! * `nv_trt_llm_general_metrics{general_type}`: `iteration_counter`, `timestamp` (µs).
//!
//! The executor's queue is where requests wait: Triton hands them over at once, so for these
//! models `nv_inference_queue_duration_us` and `nv_inference_pending_request_count` stay at zero
//! and the wait is part of `nv_inference_compute_infer_duration_us`, as on a real deployment.

use super::{family, labels, sample};
use crate::sim::counters::get;
use crate::sim::metrics::ModelMetrics;

/// The `nv_trt_llm_*` families of every LLM model.
pub(super) fn render(out: &mut String, models: &[&ModelMetrics]) {
    type Series = (&'static str, fn(&ModelMetrics) -> String);
    #[rustfmt::skip]
    let groups: [(&str, &str, &str, &[Series]); 4] = [
        ("nv_trt_llm_request_metrics", "TRT LLM request metrics", "request_type", &[
            ("waiting", |m| int(m.pending_now())),
            ("context", |m| int(get(&m.engine.last_context))),
            ("scheduled", |m| int(get(&m.engine.last_scheduled))),
            ("max", |m| int(get(&m.engine.max_batch))),
            ("active", |m| int(m.running_now())),
        ]),
        ("nv_trt_llm_kv_cache_block_metrics", "TRT LLM KV cache block metrics", "kv_cache_block_type", &[
            ("max", |m| int(get(&m.engine.kv_capacity))),
            ("free", |m| int(get(&m.engine.kv_capacity).saturating_sub(get(&m.engine.kv_used)))),
            ("used", |m| int(get(&m.engine.kv_used))),
            ("tokens_per", |m| int(get(&m.engine.block_size))),
            ("reused", |m| int(get(&m.engine.prefix_hit_blocks))),
            ("fraction", |m| m.engine.kv_usage().to_string()),
        ]),
        ("nv_trt_llm_inflight_batcher_metrics", "TRT LLM inflight_batcher-specific metrics", "inflight_batcher_specific_metric", &[
            ("micro_batch_id", |_| "0".into()),
            ("generation_requests", |m| int(get(&m.engine.last_scheduled).saturating_sub(get(&m.engine.last_context)))),
            ("total_context_tokens", |m| int(get(&m.engine.last_context_tokens))),
            ("paused_requests", |_| "0".into()),
        ]),
        ("nv_trt_llm_general_metrics", "General TRT LLM metrics", "general_type", &[
            ("iteration_counter", |m| int(get(&m.engine.iterations))),
            ("timestamp", |_| int(crate::sim::unix_now().as_micros() as u64)),
        ]),
    ];
    for (name, help, key, series) in groups {
        family(out, name, help, "gauge");
        for m in models {
            for (kind, value) in series {
                let l = labels(&sorted(key, kind, m));
                sample(out, name, &l, &value(m));
            }
        }
    }
}

fn int(v: u64) -> String {
    v.to_string()
}

/// `model`, `version` and the kind label, sorted by name as prometheus-cpp prints them.
fn sorted<'a>(key: &'a str, kind: &'a str, m: &'a ModelMetrics) -> Vec<(&'a str, &'a str)> {
    let mut pairs = vec![(key, kind), ("model", m.name()), ("version", m.version())];
    pairs.sort_by(|a, b| a.0.cmp(b.0));
    pairs
}
