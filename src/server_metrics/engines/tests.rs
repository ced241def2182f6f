//! Exact readings of pages shaped like each engine's real output.

use super::*;
use crate::server_metrics::level::EngineLevel;
use crate::server_metrics::split::QueueSource;

fn ts(seconds: f64, count: f64) -> Option<TimeSum> {
    Some(TimeSum { seconds, count })
}

fn cache(queried: Option<f64>, hits: f64, unit: CacheUnit) -> Option<PrefixCache> {
    Some(PrefixCache {
        queried,
        hits,
        unit,
    })
}

const VLLM: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.8125
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.7000000005e+09
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12800.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 9600.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 27453.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="abort",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"} 60.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.8
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 20.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.25",model_name="meta-llama/Llama-3.1-8B-Instruct"} 48.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 6.4
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
vllm:request_queue_time_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
# TYPE vllm:request_prefill_time_seconds histogram
vllm:request_prefill_time_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.2
vllm:request_prefill_time_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
# TYPE vllm:request_decode_time_seconds histogram
vllm:request_decode_time_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 96.0
vllm:request_decode_time_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 64.0
vllm:num_requests_waiting{engine="0",model_name="other"} 40.0
"#;

#[test]
fn vllm_page() {
    let page = parse(VLLM);
    assert_eq!(detect(&page), Some(ServerKind::Vllm));
    let s = read_sample(
        &page,
        ServerKind::Vllm,
        Some("meta-llama/Llama-3.1-8B-Instruct"),
    )
    .unwrap();
    assert!(s.model_matched);
    assert_eq!(
        (s.waiting, s.running, s.kv_usage),
        (Some(5.0), Some(8.0), Some(0.8125))
    );
    assert_eq!(s.preemptions, Some(3.0));
    assert_eq!(s.requests, Some(64.0), "length + stop, not abort");
    assert_eq!(s.queue, ts(6.4, 64.0));
    assert_eq!(s.prefill, ts(3.2, 64.0));
    assert_eq!(s.decode, ts(96.0, 64.0));
    assert_eq!(s.inference, None);
    let ttft = s.ttft.as_ref().unwrap();
    assert_eq!(
        ttft.buckets,
        vec![
            (0.1, 20.0),
            (0.25, 48.0),
            (0.5, 64.0),
            (f64::INFINITY, 64.0)
        ]
    );
    assert_eq!(
        s.prefix_cache,
        cache(Some(12800.0), 9600.0, CacheUnit::Tokens)
    );
    assert_eq!(s.generation_tokens, Some(27453.0));
    assert_eq!(s.prompt_tokens, None);
    assert_eq!(s.triton_queue, None);
    // Another model on the same page; an unknown one falls back to every series.
    let other = read_sample(&page, ServerKind::Vllm, Some("other")).unwrap();
    assert_eq!(other.waiting, Some(40.0));
    assert_eq!(other.running, None);
    let unknown = read_sample(&page, ServerKind::Vllm, Some("nope")).unwrap();
    assert!(!unknown.model_matched);
    assert_eq!(unknown.waiting, Some(45.0));
}

#[test]
fn vllm_older_names() {
    let page = "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n\
                vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 10\n\
                vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 4\n";
    let s = sample_from_text(page, None, Some("m")).unwrap();
    assert_eq!(s.kv_usage, Some(0.5));
    assert_eq!(
        s.prefix_cache.map(|p| (p.queried, p.hits)),
        Some((Some(10.0), 4.0))
    );
}

const SGLANG: &str = r#"# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 12.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 7.0
# TYPE sglang:token_usage gauge
sglang:token_usage{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 0.28
# TYPE sglang:num_retracted_requests_total counter
sglang:num_retracted_requests_total{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 2.0
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="qwen"} 8.128902e+06
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{model_name="qwen"} 4.064451e+06
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="qwen"} 1000.0
# TYPE sglang:queue_time_seconds histogram
sglang:queue_time_seconds_sum{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 150.0
sglang:queue_time_seconds_bucket{engine_type="unified",le="0.0",model_name="qwen",pp_rank="0",tp_rank="0"} 0.0
sglang:queue_time_seconds_bucket{engine_type="unified",le="+Inf",model_name="qwen",pp_rank="0",tp_rank="0"} 1000.0
sglang:queue_time_seconds_count{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 1000.0
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{model_name="qwen"} 400.0
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="qwen"} 100.0
sglang:time_to_first_token_seconds_bucket{le="0.2",model_name="qwen"} 300.0
sglang:time_to_first_token_seconds_bucket{le="0.4",model_name="qwen"} 600.0
sglang:time_to_first_token_seconds_bucket{le="0.6",model_name="qwen"} 1000.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="qwen"} 1000.0
sglang:time_to_first_token_seconds_count{model_name="qwen"} 1000.0
"#;

#[test]
fn sglang_page() {
    let s = sample_from_text(SGLANG, None, Some("qwen")).unwrap();
    assert_eq!(s.kind, ServerKind::Sglang);
    assert_eq!(
        (s.waiting, s.running, s.kv_usage),
        (Some(7.0), Some(12.0), Some(0.28))
    );
    assert_eq!(s.preemptions, Some(2.0));
    assert_eq!(s.requests, Some(1000.0));
    assert_eq!(s.queue, ts(150.0, 1000.0));
    assert_eq!(
        s.prefix_cache,
        cache(Some(8_128_902.0), 4_064_451.0, CacheUnit::Tokens)
    );
    let p50 = s.ttft.as_ref().unwrap().quantile(0.5).unwrap();
    assert!((p50 - (0.2 + 0.2 * 200.0 / 300.0)).abs() < 1e-12, "{p50}");
}

const TGI: &str = r#"# TYPE tgi_queue_size gauge
tgi_queue_size 9
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 32
# TYPE tgi_request_success counter
tgi_request_success 120
# TYPE tgi_request_queue_duration histogram
tgi_request_queue_duration_bucket{le="0.00015000000000000001"} 10
tgi_request_queue_duration_bucket{le="+Inf"} 120
tgi_request_queue_duration_sum 30.5
tgi_request_queue_duration_count 120
# TYPE tgi_request_inference_duration histogram
tgi_request_inference_duration_sum 240
tgi_request_inference_duration_count 120
# TYPE tgi_batch_inference_duration histogram
tgi_batch_inference_duration_bucket{method="prefill",le="+Inf"} 40
tgi_batch_inference_duration_sum{method="prefill"} 4
tgi_batch_inference_duration_count{method="prefill"} 40
tgi_batch_inference_duration_bucket{method="decode",le="+Inf"} 5000
tgi_batch_inference_duration_sum{method="decode"} 100
tgi_batch_inference_duration_count{method="decode"} 5000
"#;

#[test]
fn tgi_page() {
    let s = sample_from_text(TGI, None, Some("whatever")).unwrap();
    assert_eq!(s.kind, ServerKind::Tgi);
    assert_eq!((s.waiting, s.running), (Some(9.0), Some(32.0)));
    assert_eq!(s.requests, Some(120.0));
    assert_eq!(s.queue, ts(30.5, 120.0));
    assert_eq!(s.inference, ts(240.0, 120.0));
    assert_eq!(s.prefill_batches, ts(4.0, 40.0));
    assert_eq!(s.decode_batches, ts(100.0, 5000.0));
    assert_eq!(
        (s.kv_usage, s.preemptions, s.ttft.is_none()),
        (None, None, true)
    );
}

const TRTLLM: &str = r#"# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="ensemble",version="1"} 50
nv_inference_request_success{model="tensorrt_llm",version="1"} 50
# TYPE nv_inference_queue_duration_us counter
nv_inference_queue_duration_us{model="ensemble",version="1"} 500
nv_inference_queue_duration_us{model="tensorrt_llm",version="1"} 250
# TYPE nv_inference_compute_infer_duration_us counter
nv_inference_compute_infer_duration_us{model="ensemble",version="1"} 40000000
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="ensemble",version="1"} 0
# HELP nv_trt_llm_request_metrics TRT LLM request metrics
# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="waiting",version="1"} 24
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="context",version="1"} 1
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="scheduled",version="1"} 8
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="max",version="1"} 8
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 8
# HELP nv_trt_llm_kv_cache_block_metrics TRT LLM KV cache block metrics
# TYPE nv_trt_llm_kv_cache_block_metrics gauge
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="tensorrt_llm",version="1"} 0.4875
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="tokens_per",model="tensorrt_llm",version="1"} 64
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used",model="tensorrt_llm",version="1"} 3042
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="free",model="tensorrt_llm",version="1"} 3197
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="tensorrt_llm",version="1"} 6239
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="reused",model="tensorrt_llm",version="1"} 1200
"#;

#[test]
fn trtllm_page_reads_the_backend_for_the_ensemble() {
    let page = parse(TRTLLM);
    assert_eq!(detect(&page), Some(ServerKind::TrtLlm));
    // The client talks to `ensemble`; the backend's families say `tensorrt_llm`.
    let s = read_sample(&page, ServerKind::TrtLlm, Some("ensemble")).unwrap();
    assert_eq!(
        (s.waiting, s.running, s.kv_usage),
        (Some(24.0), Some(8.0), Some(0.4875))
    );
    assert!(!s.model_matched, "backend series read by fallback");
    assert_eq!(s.queue, None, "the executor's queue time is not exported");
    assert_eq!(s.triton_queue, ts(0.0005, 50.0));
    assert_eq!(s.inference, ts(40.0, 50.0));
    assert_eq!(s.requests, Some(50.0));
    assert_eq!(s.prefix_cache, cache(None, 1200.0, CacheUnit::Blocks));
    // Forced to plain Triton, the same page reads Triton's pending gauge as the queue.
    let t = read_sample(&page, ServerKind::Triton, Some("ensemble")).unwrap();
    assert_eq!(
        (t.kind, t.waiting, t.model_matched),
        (ServerKind::Triton, Some(0.0), true)
    );
    assert_eq!(t.queue, t.triton_queue);
}

#[test]
fn triton_core_and_nothing_known() {
    let page = "nv_inference_request_success{model=\"gpt2\",version=\"1\"} 10\n\
        nv_inference_queue_duration_us{model=\"gpt2\",version=\"1\"} 2000000\n\
        nv_inference_pending_request_count{model=\"gpt2\",version=\"1\"} 3\n\
        nv_inference_first_response_histogram_ms_bucket{model=\"gpt2\",version=\"1\",le=\"100\"} 4\n\
        nv_inference_first_response_histogram_ms_bucket{model=\"gpt2\",version=\"1\",le=\"+Inf\"} 10\n\
        nv_inference_first_response_histogram_ms_sum{model=\"gpt2\",version=\"1\"} 1500\n\
        nv_inference_first_response_histogram_ms_count{model=\"gpt2\",version=\"1\"} 10\n";
    let s = sample_from_text(page, None, Some("gpt2")).unwrap();
    assert_eq!(s.kind, ServerKind::Triton);
    assert_eq!(s.waiting, Some(3.0));
    assert_eq!(s.queue, ts(2.0, 10.0));
    let ttft = s.ttft.unwrap();
    assert_eq!(ttft.buckets[0], (0.1, 4.0), "ms bounds become seconds");
    assert!((ttft.sum - 1.5).abs() < 1e-12);
    assert!(sample_from_text("go_goroutines 12\n", None, None).is_none());
    assert!(
        sample_from_text(TGI, Some(ServerKind::Vllm), None).is_none(),
        "forced kind absent"
    );
}

/// A real page captured from a running engine (`tests/fixtures/engines/`), read as `kind`.
fn real(engine: &str, name: &str, kind: ServerKind, model: Option<&str>) -> EngineSample {
    let page = parse(&crate::test_fixtures::body(engine, name));
    assert_eq!(detect(&page), Some(kind), "{engine}/{name}");
    read_sample(&page, kind, model).unwrap()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-12 * b.abs().max(1.0))
}

/// Every vLLM 0.32 family the engine view reads, from its real page before and after the
/// capture's 10 generative requests (194 prompt tokens, 80 generated, no prefix hit: each
/// prompt is shorter than one 128-token block).
#[test]
// The page's own digits, as vLLM printed them.
#[allow(clippy::excessive_precision)]
fn vllm_032_real_pages() {
    let model = Some("tiny-llama");
    let before = real("vllm", "metrics_before", ServerKind::Vllm, model);
    let after = real("vllm", "metrics_after", ServerKind::Vllm, model);
    assert!(before.model_matched && after.model_matched);
    assert_eq!(
        (
            after.waiting,
            after.running,
            after.kv_usage,
            after.preemptions
        ),
        (Some(0.0), Some(0.0), Some(0.0), Some(0.0))
    );
    assert_eq!(before.requests, Some(0.0));
    assert_eq!(after.requests, Some(10.0), "length, not abort or error");
    assert_eq!(
        after.prefix_cache,
        cache(Some(194.0), 0.0, CacheUnit::Tokens)
    );
    assert_eq!(after.spec_decode, None, "not configured: no series");
    let v = EngineLevel::new(before).finish(&after);
    assert_eq!(v.requests, Some(10.0));
    // Each `_sum` over its `_count` (10).
    assert!(close(v.avg_queue_s, 0.00038033400051062927 / 10.0), "{v:?}");
    assert!(close(v.avg_prefill_s, 0.1562468869994973 / 10.0), "{v:?}");
    assert!(close(v.avg_decode_s, 0.6794968970000355 / 10.0), "{v:?}");
    assert!(close(v.avg_inference_s, 0.8357437839995328 / 10.0), "{v:?}");
    assert!(close(v.avg_e2e_s, 1.1026084423065186 / 10.0), "{v:?}");
    let t = v.server_ttft.unwrap();
    assert_eq!(t.count, 10.0);
    assert!(close(Some(t.avg_s), 0.3742196559906006 / 10.0));
    // 7 of 10 first tokens under 40 ms: the median interpolates inside (20, 40] ms.
    assert!(close(t.p50_s, 0.02 + 0.02 * 5.0 / 7.0), "{t:?}");
    let p = v.prefix_cache.unwrap();
    assert_eq!(
        (p.queried, p.hits, p.hit_rate),
        (Some(194.0), 0.0, Some(0.0))
    );
    assert_eq!(
        (v.prompt_tokens, v.generation_tokens),
        (Some(194.0), Some(80.0))
    );
    let s = v.split().unwrap();
    assert_eq!(s.queue_source, QueueSource::Engine);
    assert!(close(s.prefill_ms, 156.2468869994973 / 10.0));
}

/// llama.cpp's real page (`llama-server` of the llama-cpp-python 0.3.36 sdist) before and
/// after its capture: 32 requests of 8 tokens, most prompts' tokens reused from the slots'
/// caches.
#[test]
fn llamacpp_real_pages() {
    let before = real("llamacpp", "metrics_before", ServerKind::LlamaCpp, None);
    let after = real(
        "llamacpp",
        "metrics_after",
        ServerKind::LlamaCpp,
        Some("tiny-gpt2"),
    );
    assert!(after.model_matched, "one model a server: no label to miss");
    assert_eq!((after.waiting, after.running), (Some(0.0), Some(0.0)));
    assert_eq!(
        (after.kv_usage, after.requests, after.queue),
        (None, None, None)
    );
    assert_eq!(after.prefill_batches, ts(0.130939, 0.0));
    assert_eq!(after.decode_sum_s, Some(0.700008));
    assert_eq!(
        after.prefix_cache,
        cache(Some(642.0), 586.0, CacheUnit::Tokens)
    );
    assert_eq!(
        (after.prompt_tokens, after.generation_tokens),
        (Some(642.0), Some(256.0))
    );
    assert_eq!(after.spec_decode, Some(SpecDecode::default()));
    let v = EngineLevel::new(before).finish_over(&after, 4.0);
    assert_eq!(v.requests, None, "llama.cpp counts no requests");
    assert_eq!(v.prefill_busy_s, Some(0.130939));
    assert_eq!(v.decode_total_s, Some(0.700008));
    let p = v.prefix_cache.unwrap();
    assert!(close(p.hit_rate, 586.0 / 642.0), "{p:?}");
    assert_eq!(v.split(), None, "no requests to divide by yet");
    // The client finished the 32 requests; their responses' prompt times averaged 12.5 ms.
    let v = v.with_client_requests(32, Some(0.0125));
    assert!(v.requests_from_client);
    assert!(close(v.avg_decode_s, 0.700008 / 32.0));
    let s = v.split().unwrap();
    assert_eq!(s.queue_source, QueueSource::WaitingGauge);
    assert_eq!(s.queue_ms, 0.0, "nothing deferred");
    assert!(close(s.prefill_ms, 12.5));
    assert!(close(Some(s.generation_ms), 12.5 + 700.008 / 32.0));
}

#[test]
fn llamacpp_slots_page() {
    use crate::server_metrics::probe::{slot_count, slots_url};
    let body = crate::test_fixtures::body("llamacpp", "slots_after");
    assert_eq!(slot_count(&body), Some(4));
    assert_eq!(slot_count("{\"error\":\"not enabled\"}"), None);
    assert_eq!(slot_count("[]"), None);
    assert_eq!(
        slots_url("http://127.0.0.1:60747/metrics").as_deref(),
        Some("http://127.0.0.1:60747/slots")
    );
    assert_eq!(slots_url("not a url"), None);
}
