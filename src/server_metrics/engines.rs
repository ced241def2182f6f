//! Which inference engine a metrics page comes from, and what it says about one model at one
//! instant: the engine's queue and batch, KV-cache usage, preemptions, cumulative request
//! timings, server-side time to first token and prefix-cache lookups ([`EngineSample`]).
//!
//! Families read, per engine (checked against each project's source; the simulator's
//! `serve --metrics-style` exports the same names):
//!
//! | | vLLM (`vllm/v1/metrics/loggers.py`) | SGLang (`srt/metrics/collector.py`) | TGI (`router/src/server.rs`, `backends/v3`) | TensorRT-LLM on Triton (tensorrtllm_backend README) | Triton (`docs/user_guide/metrics.md`) | llama.cpp (`tools/server/server-task.cpp`, `to_metrics`) |
//! |---|---|---|---|---|---|---|
//! | model label | `model_name` (Triton's vLLM backend: `model`) | `model_name` | none | `model` | `model` | none (one model a server) |
//! | waiting | `vllm:num_requests_waiting` | `sglang:num_queue_reqs` | `tgi_queue_size` | `nv_trt_llm_request_metrics{request_type="waiting"}` | `nv_inference_pending_request_count` | `llamacpp:requests_deferred` (tasks waiting for a free slot) |
//! | running | `vllm:num_requests_running` | `sglang:num_running_reqs` | `tgi_batch_current_size` | `…{request_type="active"}` | — | `llamacpp:requests_processing` |
//! | KV usage 0–1 | `vllm:kv_cache_usage_perc` (older `vllm:gpu_cache_usage_perc`) | `sglang:token_usage` | — | `nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}` (or used/max) | — | older versions' `llamacpp:kv_cache_usage_ratio` |
//! | preemptions | `vllm:num_preemptions_total` | `sglang:num_retracted_requests_total` | — | — | — | — |
//! | finished requests | `vllm:request_success_total` (not `abort`/`error`) | `sglang:num_requests_total` | `tgi_request_success` | Triton's | `nv_inference_request_success` | — (the client's count stands in: [`super::level::EngineLevelView::with_client_requests`]) |
//! | queue time | `vllm:request_queue_time_seconds` | `sglang:queue_time_seconds` | `tgi_request_queue_duration` | — (Triton's counter misses the executor's queue) | `nv_inference_queue_duration_us` | — |
//! | prefill / decode | `vllm:request_prefill_time_seconds`, `…decode…` | — | per batch: `tgi_batch_inference_duration{method}` | — | — | busy time of prompt batches `llamacpp:prompt_seconds_total`; Σ per-request decode `llamacpp:tokens_predicted_seconds_total` |
//! | inference | `vllm:request_inference_time_seconds` | — | `tgi_request_inference_duration` | — | `nv_inference_compute_infer_duration_us` | — |
//! | server TTFT | `vllm:time_to_first_token_seconds` | `sglang:time_to_first_token_seconds` | — | `nv_inference_first_response_histogram_ms` | same | — (per response: `timings.prompt_ms`) |
//! | prefix cache | `vllm:prefix_cache_queries_total`/`_hits_total` (tokens) | `sglang:prompt_tokens_total`/`sglang:cached_tokens_total` (tokens) | — | `…{kv_cache_block_type="reused"}` (blocks, hits only) | — | `llamacpp:prompt_tokens_cached_total` of it plus `llamacpp:prompt_tokens_total` (tokens) |
//! | speculative decoding | `vllm:spec_decode_num_drafts_total`, `…_draft_tokens_total`, `…_accepted_tokens_total` (when configured) | — | — | — | — | `llamacpp:spec_decode_num_drafts_total`, `…_draft_tokens_total`, `…_accepted_tokens_total` |
//!
//! llama.cpp (checked against the `llama-cpp-python==0.3.36` sdist's `llama-server`, and its
//! real page in `tests/fixtures/engines/llamacpp/`) labels nothing and has no histograms and no
//! finished-request counter: `llamacpp:prompt_seconds_total` is the wall time of the decode
//! batches that held prompt tokens (several requests' prompts share one batch), and
//! `llamacpp:tokens_predicted_seconds_total` adds each request's first-to-last-token time when
//! its slot is released. Per-request averages therefore divide by the requests the client
//! finished in the level, and the queue is estimated from `requests_deferred`.
//!
//! Whatever page it is, Triton's own queue counter (`nv_inference_queue_duration_us`) is read
//! into [`EngineSample::triton_queue`] when present, so a TensorRT-LLM or Triton-vLLM page
//! shows both queues. Times are in seconds; counters and histograms are cumulative (subtract two
//! samples with `super::level`).

use serde::Serialize;

use super::kind::ServerKind;
use super::prometheus::{Exposition, Histogram, Sample, parse};

/// A cumulative duration: total seconds over `count` requests (or batches).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct TimeSum {
    /// Total seconds.
    pub seconds: f64,
    /// Requests (or batches) they add up over.
    pub count: f64,
}

/// What prefix-cache counters count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheUnit {
    /// Prompt tokens (vLLM, SGLang).
    Tokens,
    /// KV blocks (TensorRT-LLM).
    Blocks,
}

/// Cumulative prefix-cache lookups.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PrefixCache {
    /// Looked up; `None` when the engine exports hits only.
    pub queried: Option<f64>,
    /// Found cached.
    pub hits: f64,
    /// What both count.
    pub unit: CacheUnit,
}

/// Cumulative speculative-decoding counters.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct SpecDecode {
    /// Draft proposals verified by the target model.
    pub drafts: f64,
    /// Draft tokens proposed.
    pub draft_tokens: f64,
    /// Draft tokens the target model accepted.
    pub accepted_tokens: f64,
}

/// One model's state on one engine's metrics page at one instant. Gauges (`waiting`,
/// `running`, `kv_usage`) are instantaneous; everything else is cumulative since the server
/// started. `None` = the engine does not export it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EngineSample {
    /// Which engine's families were read.
    pub kind: ServerKind,
    /// False when no series carried the requested model name and the page's only model (or
    /// every series) was read instead.
    pub model_matched: bool,
    /// Requests waiting in the engine's queue.
    pub waiting: Option<f64>,
    /// Requests in the running batch.
    pub running: Option<f64>,
    /// KV-cache usage, 0–1.
    pub kv_usage: Option<f64>,
    /// Requests preempted (evicted from the batch for KV space and recomputed later).
    pub preemptions: Option<f64>,
    /// Requests finished successfully.
    pub requests: Option<f64>,
    /// Time requests waited in the engine before being scheduled.
    pub queue: Option<TimeSum>,
    /// Time requests waited in Triton's own queue (Triton servers, any backend).
    pub triton_queue: Option<TimeSum>,
    /// Scheduled → first token, per request.
    pub prefill: Option<TimeSum>,
    /// First → last token, per request.
    pub decode: Option<TimeSum>,
    /// Scheduled → last token (Triton: `compute_infer`, which for a decoupled LLM backend
    /// spans the whole generation, the backend's own queue included).
    pub inference: Option<TimeSum>,
    /// Arrival → response, per request.
    pub e2e: Option<TimeSum>,
    /// Busy time of prefill batches (TGI's per-batch split).
    pub prefill_batches: Option<TimeSum>,
    /// Busy time of decode batches (TGI's per-batch split).
    pub decode_batches: Option<TimeSum>,
    /// Sum of the requests' decode times without their count (llama.cpp's
    /// `tokens_predicted_seconds_total`), seconds.
    pub decode_sum_s: Option<f64>,
    /// Speculative-decoding counters, where exported.
    pub spec_decode: Option<SpecDecode>,
    /// Server-side time to first token, seconds.
    pub ttft: Option<Histogram>,
    /// Prefix-cache lookups.
    pub prefix_cache: Option<PrefixCache>,
    /// Prompt tokens processed.
    pub prompt_tokens: Option<f64>,
    /// Tokens generated.
    pub generation_tokens: Option<f64>,
}

impl EngineSample {
    fn empty(kind: ServerKind) -> Self {
        EngineSample {
            kind,
            model_matched: true,
            ..EngineSample::default()
        }
    }
}

/// Each engine's family prefix, most specific first (a Triton page with the vLLM backend's
/// `vllm:*` families is vLLM; one with `nv_trt_llm_*` is TensorRT-LLM).
const FAMILIES: [(&str, ServerKind); 6] = [
    ("vllm:", ServerKind::Vllm),
    ("sglang:", ServerKind::Sglang),
    ("tgi_", ServerKind::Tgi),
    ("nv_trt_llm_", ServerKind::TrtLlm),
    ("nv_inference_", ServerKind::Triton),
    ("llamacpp:", ServerKind::LlamaCpp),
];

/// The engine whose families the page carries, the most specific first ([`FAMILIES`]).
pub fn detect(page: &Exposition) -> Option<ServerKind> {
    FAMILIES
        .into_iter()
        .find(|(prefix, _)| page.has_prefix(prefix))
        .map(|(_, k)| k)
}

/// Parses `text`, picks the engine (`forced`, or [`detect`]) and reads `model`'s sample.
pub fn sample_from_text(
    text: &str,
    forced: Option<ServerKind>,
    model: Option<&str>,
) -> Option<EngineSample> {
    let page = parse(text);
    let kind = forced.or_else(|| detect(&page))?;
    read_sample(&page, kind, model)
}

/// `model`'s sample from a page of engine `kind`; `None` when the page has none of that
/// engine's families. Without `model` (or when no series carries it) every series counts.
pub fn read_sample(
    page: &Exposition,
    kind: ServerKind,
    model: Option<&str>,
) -> Option<EngineSample> {
    let (prefix, _) = FAMILIES.into_iter().find(|&(_, k)| k == kind)?;
    if !page.has_prefix(prefix) {
        return None;
    }
    let mut s = match kind {
        ServerKind::Vllm => read_vllm(page, model),
        ServerKind::Sglang => read_sglang(page, model),
        ServerKind::Tgi => read_tgi(page),
        ServerKind::TrtLlm => read_trtllm(page, model),
        ServerKind::Triton => read_triton_core(page, model, ServerKind::Triton)?,
        ServerKind::LlamaCpp => read_llamacpp(page),
    };
    if s.triton_queue.is_none()
        && let Some(t) = read_triton_core(page, model, kind)
    {
        s.triton_queue = t.triton_queue;
    }
    Some(s)
}

/// Which series belong to the model: those whose `key` label is `value` (`None`: all).
#[derive(Debug, Clone)]
struct Selector {
    key: &'static str,
    value: Option<String>,
    matched: bool,
}

impl Selector {
    /// Every series: engines that label nothing (TGI, llama.cpp).
    fn all() -> Self {
        Selector {
            key: "",
            value: None,
            matched: true,
        }
    }

    /// Selects `model` by the first of `keys` that the `families` carry; falls back to the
    /// page's only model, or to every series, when `model` is absent or not found.
    fn new(page: &Exposition, families: &str, keys: &[&'static str], model: Option<&str>) -> Self {
        let in_family = |s: &&Sample| s.name.starts_with(families);
        for &key in keys {
            let mut values: Vec<&str> = page
                .samples
                .iter()
                .filter(in_family)
                .filter_map(|s| s.label(key))
                .collect();
            if values.is_empty() {
                continue;
            }
            if let Some(m) = model
                && values.contains(&m)
            {
                return Selector {
                    key,
                    value: Some(m.to_string()),
                    matched: true,
                };
            }
            values.sort_unstable();
            values.dedup();
            let only = (values.len() == 1).then(|| values[0].to_string());
            return Selector {
                key,
                value: only,
                matched: model.is_none(),
            };
        }
        Selector::all()
    }

    fn keeps(&self, s: &Sample) -> bool {
        self.value
            .as_deref()
            .is_none_or(|v| s.label(self.key) == Some(v))
    }
}

/// Sum of `name` over the selected series.
fn sum(page: &Exposition, sel: &Selector, name: &str) -> Option<f64> {
    page.sum(name, |s| sel.keeps(s))
}

/// A counter by its exposition name (`name_total`) or its bare name (older exporters).
fn counter(page: &Exposition, sel: &Selector, name: &str) -> Option<f64> {
    sum(page, sel, &format!("{name}_total")).or_else(|| sum(page, sel, name))
}

/// Mean of a gauge over the selected series (several engines of one model).
fn mean(page: &Exposition, sel: &Selector, name: &str) -> Option<f64> {
    let v: Vec<f64> = page
        .series(name)
        .filter(|s| sel.keeps(s))
        .map(|s| s.value)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn hist(page: &Exposition, sel: &Selector, family: &str) -> Option<Histogram> {
    page.histogram(family, |s| sel.keeps(s))
}

fn time_sum(h: Option<Histogram>) -> Option<TimeSum> {
    h.map(|h| TimeSum {
        seconds: h.sum,
        count: h.count,
    })
}

fn read_vllm(page: &Exposition, model: Option<&str>) -> EngineSample {
    let sel = Selector::new(page, "vllm:", &["model_name", "model"], model);
    let t = |f: &str| time_sum(hist(page, &sel, f));
    let queries = counter(page, &sel, "vllm:prefix_cache_queries")
        .or_else(|| counter(page, &sel, "vllm:gpu_prefix_cache_queries"));
    let hits = counter(page, &sel, "vllm:prefix_cache_hits")
        .or_else(|| counter(page, &sel, "vllm:gpu_prefix_cache_hits"));
    // Aborted and failed requests are finished, not served.
    let success = page.sum("vllm:request_success_total", |s| {
        sel.keeps(s) && !matches!(s.label("finished_reason"), Some("abort" | "error"))
    });
    EngineSample {
        model_matched: sel.matched,
        waiting: sum(page, &sel, "vllm:num_requests_waiting"),
        running: sum(page, &sel, "vllm:num_requests_running"),
        kv_usage: mean(page, &sel, "vllm:kv_cache_usage_perc")
            .or_else(|| mean(page, &sel, "vllm:gpu_cache_usage_perc")),
        preemptions: counter(page, &sel, "vllm:num_preemptions"),
        requests: success,
        queue: t("vllm:request_queue_time_seconds"),
        prefill: t("vllm:request_prefill_time_seconds"),
        decode: t("vllm:request_decode_time_seconds"),
        inference: t("vllm:request_inference_time_seconds"),
        e2e: t("vllm:e2e_request_latency_seconds"),
        ttft: hist(page, &sel, "vllm:time_to_first_token_seconds"),
        prefix_cache: hits.map(|hits| PrefixCache {
            queried: queries,
            hits,
            unit: CacheUnit::Tokens,
        }),
        prompt_tokens: counter(page, &sel, "vllm:prompt_tokens"),
        generation_tokens: counter(page, &sel, "vllm:generation_tokens"),
        spec_decode: spec_decode(page, &sel, "vllm:spec_decode_num_"),
        ..EngineSample::empty(ServerKind::Vllm)
    }
}

/// The three speculative-decoding counters under `prefix` (`drafts`, `draft_tokens`,
/// `accepted_tokens`); `None` unless the draft-token counter is there.
fn spec_decode(page: &Exposition, sel: &Selector, prefix: &str) -> Option<SpecDecode> {
    let c = |name: &str| counter(page, sel, &format!("{prefix}{name}"));
    Some(SpecDecode {
        draft_tokens: c("draft_tokens")?,
        drafts: c("drafts").unwrap_or(0.0),
        accepted_tokens: c("accepted_tokens").unwrap_or(0.0),
    })
}

fn read_llamacpp(page: &Exposition) -> EngineSample {
    let all = Selector::all();
    let c = |name: &str| counter(page, &all, name);
    // `prompt_tokens_total` excludes the tokens reused from the cache: together they are the
    // prompt tokens looked up.
    let processed = c("llamacpp:prompt_tokens");
    let cached = c("llamacpp:prompt_tokens_cached");
    EngineSample {
        waiting: sum(page, &all, "llamacpp:requests_deferred"),
        running: sum(page, &all, "llamacpp:requests_processing"),
        kv_usage: sum(page, &all, "llamacpp:kv_cache_usage_ratio"),
        prefill_batches: c("llamacpp:prompt_seconds").map(|seconds| TimeSum {
            seconds,
            count: 0.0,
        }),
        decode_sum_s: c("llamacpp:tokens_predicted_seconds"),
        prefix_cache: cached.map(|hits| PrefixCache {
            queried: processed.map(|p| p + hits),
            hits,
            unit: CacheUnit::Tokens,
        }),
        prompt_tokens: processed.map(|p| p + cached.unwrap_or(0.0)),
        generation_tokens: c("llamacpp:tokens_predicted"),
        spec_decode: spec_decode(page, &all, "llamacpp:spec_decode_num_"),
        ..EngineSample::empty(ServerKind::LlamaCpp)
    }
}

fn read_sglang(page: &Exposition, model: Option<&str>) -> EngineSample {
    let sel = Selector::new(page, "sglang:", &["model_name"], model);
    let prompt = counter(page, &sel, "sglang:prompt_tokens");
    let cached = counter(page, &sel, "sglang:cached_tokens");
    EngineSample {
        model_matched: sel.matched,
        waiting: sum(page, &sel, "sglang:num_queue_reqs"),
        running: sum(page, &sel, "sglang:num_running_reqs"),
        kv_usage: mean(page, &sel, "sglang:token_usage"),
        preemptions: counter(page, &sel, "sglang:num_retracted_requests"),
        requests: counter(page, &sel, "sglang:num_requests"),
        queue: time_sum(hist(page, &sel, "sglang:queue_time_seconds")),
        e2e: time_sum(hist(page, &sel, "sglang:e2e_request_latency_seconds")),
        ttft: hist(page, &sel, "sglang:time_to_first_token_seconds"),
        prefix_cache: cached.map(|hits| PrefixCache {
            queried: prompt,
            hits,
            unit: CacheUnit::Tokens,
        }),
        prompt_tokens: prompt,
        generation_tokens: counter(page, &sel, "sglang:generation_tokens"),
        ..EngineSample::empty(ServerKind::Sglang)
    }
}

fn read_tgi(page: &Exposition) -> EngineSample {
    let all = Selector::all();
    let t = |f: &str| time_sum(hist(page, &all, f));
    let batch = |method: &'static str| {
        time_sum(page.histogram("tgi_batch_inference_duration", |s| {
            s.label("method") == Some(method)
        }))
    };
    EngineSample {
        waiting: sum(page, &all, "tgi_queue_size"),
        running: sum(page, &all, "tgi_batch_current_size"),
        requests: counter(page, &all, "tgi_request_success"),
        queue: t("tgi_request_queue_duration"),
        inference: t("tgi_request_inference_duration"),
        e2e: t("tgi_request_duration"),
        prefill_batches: batch("prefill"),
        decode_batches: batch("decode"),
        generation_tokens: hist(page, &all, "tgi_request_generated_tokens").map(|h| h.sum),
        ..EngineSample::empty(ServerKind::Tgi)
    }
}

fn read_trtllm(page: &Exposition, model: Option<&str>) -> EngineSample {
    // The backend's families carry the TensorRT-LLM model's name (often `tensorrt_llm`), not
    // the ensemble's a client addresses: fall back to the page's only one.
    let sel = Selector::new(page, "nv_trt_llm_", &["model"], model);
    let of = |family: &str, key: &str, value: &str| {
        page.sum(family, |s| sel.keeps(s) && s.label(key) == Some(value))
    };
    let req = |t: &str| of("nv_trt_llm_request_metrics", "request_type", t);
    let kv = |t: &str| {
        of(
            "nv_trt_llm_kv_cache_block_metrics",
            "kv_cache_block_type",
            t,
        )
    };
    let fraction = kv("fraction").or_else(|| {
        let (used, max) = kv("used").zip(kv("max")).filter(|&(_, m)| m > 0.0)?;
        Some(used / max)
    });
    let core = read_triton_core(page, model, ServerKind::TrtLlm);
    EngineSample {
        model_matched: sel.matched,
        waiting: req("waiting"),
        running: req("active"),
        kv_usage: fraction,
        prefix_cache: kv("reused").map(|hits| PrefixCache {
            queried: None,
            hits,
            unit: CacheUnit::Blocks,
        }),
        // The executor's queue time is not exported; Triton's counter misses it.
        queue: None,
        ..core.unwrap_or_else(|| EngineSample::empty(ServerKind::TrtLlm))
    }
}

/// Triton's core families of `model` (`kind` is what the sample says it is).
fn read_triton_core(
    page: &Exposition,
    model: Option<&str>,
    kind: ServerKind,
) -> Option<EngineSample> {
    if !page.has_prefix("nv_inference_") {
        return None;
    }
    let sel = Selector::new(page, "nv_inference_", &["model"], model);
    let success = sum(page, &sel, "nv_inference_request_success");
    let us = |name: &str| {
        let total = sum(page, &sel, name)?;
        Some(TimeSum {
            seconds: total / 1e6,
            count: success.unwrap_or(0.0),
        })
    };
    let triton_queue = us("nv_inference_queue_duration_us");
    Some(EngineSample {
        model_matched: sel.matched,
        waiting: sum(page, &sel, "nv_inference_pending_request_count"),
        requests: success,
        queue: triton_queue,
        triton_queue,
        inference: us("nv_inference_compute_infer_duration_us"),
        e2e: us("nv_inference_request_duration_us"),
        ttft: hist(page, &sel, "nv_inference_first_response_histogram_ms").map(|h| h.scaled(1e-3)),
        ..EngineSample::empty(kind)
    })
}

#[cfg(test)]
mod tests;
