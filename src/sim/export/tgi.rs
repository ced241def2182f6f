//! The TGI page, from `router/src/server.rs` (request metrics and their descriptions),
//! `backends/v3/src/{backend,queue}.rs` (queue and batch metrics) and
//! `docs/source/reference/metrics.md`.
//!
//! TGI serves one model and labels no series with it; printed by Rust's
//! `metrics-exporter-prometheus` (no `_total` suffix, `le` last, numbers by `Display`). The
//! simulator adds up its LLM models into one server.
//!
//! * gauges `tgi_queue_size`, `tgi_batch_current_size`;
//! * counters `tgi_request_count`, `tgi_request_success`, `tgi_request_failure{err}`,
//!   `tgi_batch_inference_count{method}`, `tgi_batch_inference_success{method}`
//!   (`method` = `prefill`|`decode`);
//! * histograms (seconds) `tgi_request_duration`, `tgi_request_queue_duration`,
//!   `tgi_request_inference_duration`, `tgi_request_mean_time_per_token_duration`,
//!   `tgi_batch_inference_duration{method}`, `tgi_batch_forward_duration{method}`; and
//!   `tgi_request_generated_tokens` (tokens).
//!
//! TGI has no per-request prefill or decode time and no time-to-first-token histogram: its
//! prefill/decode split is per batch (`method`). A simulated step that admitted requests counts
//! one prefill batch (its prefill part) and one decode batch (the rest); other steps one decode
//! batch.

use super::{Dialect, HistFamily, family, histogram, labels, merged, sample};
use crate::sim::counters::{Hist, HistSnapshot};
use crate::sim::metrics::{FailReason, ModelMetrics};

/// The `tgi_*` families of the server (all LLM models added up).
pub(super) fn render(out: &mut String, models: &[&ModelMetrics]) {
    let sum = |f: &dyn Fn(&ModelMetrics) -> u64| models.iter().map(|m| f(m)).sum::<u64>();
    #[rustfmt::skip]
    let plain: [(&str, &str, &str, u64); 4] = [
        ("gauge", "tgi_queue_size", "Current queue size", sum(&|m| m.pending_now())),
        ("gauge", "tgi_batch_current_size", "Current batch size", sum(&|m| m.running_now())),
        ("counter", "tgi_request_count", "Total number of requests", sum(&|m| m.received())),
        ("counter", "tgi_request_success", "Number of successful requests", sum(&|m| m.successes())),
    ];
    for (kind, name, help, v) in plain {
        family(out, name, help, kind);
        sample(out, name, "", &v.to_string());
    }
    let name = "tgi_request_failure";
    family(out, name, "Number of failed requests", "counter");
    for (err, reason) in [
        ("overloaded", FailReason::Rejected),
        ("dropped", FailReason::Canceled),
        ("generation", FailReason::Backend),
        ("validation", FailReason::Other),
    ] {
        let n = sum(&|m| m.failures(reason));
        sample(out, name, &labels(&[("err", err)]), &n.to_string());
    }
    batches(out, models);
    requests(out, models);
}

fn merge(models: &[&ModelMetrics], f: fn(&ModelMetrics) -> &Hist) -> Option<HistSnapshot> {
    merged(models.iter().map(|m| f(m).snapshot()))
}

fn batches(out: &mut String, models: &[&ModelMetrics]) {
    let prefill = merge(models, |m| &m.engine.batch_prefill);
    let decode = merge(models, |m| &m.engine.batch_decode);
    let methods = [("prefill", &prefill), ("decode", &decode)];
    for (name, help) in [
        (
            "tgi_batch_inference_count",
            "Inference calls per method (prefill or decode)",
        ),
        (
            "tgi_batch_inference_success",
            "Number of successful inference calls per method (prefill or decode)",
        ),
    ] {
        family(out, name, help, "counter");
        for (method, h) in methods {
            let n = h.as_ref().map_or(0, |h| h.count);
            sample(out, name, &labels(&[("method", method)]), &n.to_string());
        }
    }
    for (name, help) in [
        ("tgi_batch_inference_duration", "Batch inference duration"),
        (
            "tgi_batch_forward_duration",
            "Batch forward duration per method (prefill or decode)",
        ),
    ] {
        family(out, name, help, "histogram");
        for (method, h) in methods {
            if let Some(h) = h {
                histogram(out, Dialect::Rust, name, &[("method", method)], h);
            }
        }
    }
}

fn requests(out: &mut String, models: &[&ModelMetrics]) {
    #[rustfmt::skip]
    let families: [HistFamily; 5] = [
        ("tgi_request_duration", "Total time spent processing the request", |m| &m.times.e2e),
        ("tgi_request_queue_duration", "Time spent in the queue per request", |m| &m.times.queue),
        ("tgi_request_inference_duration", "Request inference duration", |m| &m.times.inference),
        ("tgi_request_mean_time_per_token_duration", "Mean time per token per request", |m| &m.times.tpot),
        ("tgi_request_generated_tokens", "Generated tokens per request", |m| &m.times.generated),
    ];
    for (name, help, f) in families {
        family(out, name, help, "histogram");
        if let Some(h) = merge(models, f) {
            histogram(out, Dialect::Rust, name, &[], &h);
        }
    }
}
