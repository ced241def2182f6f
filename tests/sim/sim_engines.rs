//! The simulator as several inference engines, read back by the engine adapters: each
//! `metrics_style` exports its engine's families from the simulated engine's real state (queue,
//! batch, KV blocks, preemptions, prefix cache), and `server_metrics` reads them into the same
//! level view; the simulated GPU reports through Triton's families and a DCGM page; reasoning
//! models split their output.

use crate::common;

use common::{chat_level, chat_stream, get_text, http_client, start};
use serde_json::Value;
use ttftbench::server_metrics::engines::{self, CacheUnit};
use ttftbench::server_metrics::{ServerKind, gpu, prometheus};
use ttftbench::sim::{EngineConfig, SimConfig, SimHandle};

/// A small, quick engine: 4 slots, prefill 1 ms + 10 µs/token, decode steps of 2 ms + 100 µs
/// per sequence, KV blocks of 16 tokens.
fn small_engine(kv_blocks: u32, prefix_caching: bool) -> EngineConfig {
    EngineConfig {
        max_batch: 4,
        max_queue: 0,
        prefill_base_us: 1000,
        prefill_us_per_token: 10,
        decode_base_us: 2000,
        decode_us_per_seq: 100,
        kv_block_size: 16,
        kv_blocks,
        prefix_caching,
    }
}

async fn sim_with(style: ServerKind, engine: EngineConfig) -> SimHandle {
    start(SimConfig {
        engine,
        metrics_style: style,
        ..SimConfig::default()
    })
    .await
}

/// `n` prompts of about 100 tokens each, all different from the first word on.
fn distinct_prompts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "request {i}: {}",
                "the quick brown fox jumps over the lazy dog ".repeat(10)
            )
        })
        .collect()
}

/// `n` prompts sharing a ~300-token system part, each ending with its own question.
fn shared_prefix_prompts(n: usize) -> Vec<String> {
    let system: String = (0..300).map(|i| format!(" rule{i}")).collect();
    (0..n)
        .map(|i| format!("{system} question number {i} please"))
        .collect()
}

fn content_tokens(chunks: &[Value], field: &str) -> usize {
    chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"][field]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_style_shows_the_queue_kv_pressure_and_preemptions() {
    // 24 blocks hold three ~100-token prompts; decode growth then needs more than the pool.
    let sim = sim_with(ServerKind::Vllm, small_engine(24, false)).await;
    let (v, _, responses) = chat_level(&sim, "gpt2", distinct_prompts(12), 64).await;
    assert_eq!(v.kind, ServerKind::Vllm);
    assert!(v.model_matched);
    assert_eq!(v.requests, Some(12.0));
    assert!(v.preemptions.unwrap() >= 1.0, "KV overload preempts: {v:?}");
    let waiting = v.waiting.expect("waiting gauge");
    assert!(waiting.max >= 1.0, "requests waited: {waiting:?}");
    let running = v.running.expect("running gauge");
    assert!(running.max >= 2.0 && running.max <= 4.0, "{running:?}");
    assert!(v.kv_usage.unwrap().max >= 0.75, "the pool filled up: {v:?}");
    assert!(v.avg_queue_s.unwrap() > 0.0);
    assert!(v.avg_prefill_s.unwrap() > 0.0 && v.avg_decode_s.unwrap() > 0.0);
    let ttft = v.server_ttft.expect("server TTFT");
    assert_eq!(ttft.count, 12.0);
    assert!(ttft.avg_s > 0.0 && ttft.p50_s.is_some());
    // Preempted requests recompute their KV but do not generate their tokens twice.
    assert_eq!(v.generation_tokens, Some(12.0 * 64.0));
    for chunks in &responses {
        assert_eq!(content_tokens(chunks, "content"), 64);
    }
    // At rest the queue is empty and the blocks are free again.
    let page = get_text(&http_client(), &sim.metrics_url()).await;
    let rest = engines::sample_from_text(&page, None, Some("gpt2")).unwrap();
    assert_eq!(
        (rest.waiting, rest.running, rest.kv_usage),
        (Some(0.0), Some(0.0), Some(0.0))
    );
    assert!(
        !page.contains("nv_inference_"),
        "a vLLM server has no Triton families"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_prefixes_hit_the_prefix_cache_in_vllm_and_sglang_terms() {
    for style in [ServerKind::Vllm, ServerKind::Sglang] {
        let sim = sim_with(style, small_engine(0, true)).await;
        let (v, _, _) = chat_level(&sim, "gpt2", shared_prefix_prompts(8), 8).await;
        assert_eq!(v.kind, style);
        let p = v.prefix_cache.expect("prefix-cache counters");
        assert_eq!(p.unit, CacheUnit::Tokens);
        let rate = p.hit_rate.expect("queries and hits");
        // The first request fills the cache; the seven others find the ~300 shared tokens.
        assert!(rate > 0.6 && rate < 1.0, "{style}: {p:?}");
        sim.shutdown().await;
    }
    // The same load without prefix caching: no hits.
    let sim = sim_with(ServerKind::Vllm, small_engine(0, false)).await;
    let (v, _, _) = chat_level(&sim, "gpt2", shared_prefix_prompts(8), 8).await;
    let p = v.prefix_cache.expect("counters exist");
    assert_eq!((p.hits, p.hit_rate), (0.0, None));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trtllm_style_queue_is_in_the_engine_not_in_triton() {
    let engine = EngineConfig {
        max_batch: 2,
        ..small_engine(0, false)
    };
    let sim = sim_with(ServerKind::TrtLlm, engine.clone()).await;
    let (v, _, _) = chat_level(&sim, "gpt2", distinct_prompts(8), 24).await;
    assert_eq!(v.kind, ServerKind::TrtLlm);
    assert!(v.waiting.unwrap().max >= 1.0, "the executor's queue: {v:?}");
    assert!(v.running.unwrap().max <= 2.0);
    assert!(v.kv_usage.is_some());
    assert_eq!(v.avg_queue_s, None, "TensorRT-LLM exports no queue time");
    assert_eq!(
        v.avg_triton_queue_s,
        Some(0.0),
        "Triton hands requests over at once"
    );
    assert!(v.avg_inference_s.unwrap() > 0.0);
    // Read as plain Triton, the page shows no queue at all: the trap issue 20 describes.
    let page = get_text(&http_client(), &sim.metrics_url()).await;
    assert!(page.contains(
        "nv_trt_llm_request_metrics{model=\"gpt2\",request_type=\"waiting\",version=\"1\"}"
    ));
    assert!(page.contains("nv_gpu_utilization{gpu_uuid="));
    sim.shutdown().await;

    // The same load on a plain Triton backend: the wait is Triton's queue.
    let sim = sim_with(ServerKind::Triton, engine).await;
    let (v, _, _) = chat_level(&sim, "gpt2", distinct_prompts(8), 24).await;
    assert_eq!(v.kind, ServerKind::Triton);
    assert!(v.avg_triton_queue_s.unwrap() > 0.0 && v.avg_queue_s == v.avg_triton_queue_s);
    assert!(v.waiting.unwrap().max >= 1.0);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tgi_style_reads_queue_and_batch_split() {
    let engine = EngineConfig {
        max_batch: 2,
        ..small_engine(0, false)
    };
    let sim = sim_with(ServerKind::Tgi, engine).await;
    let (v, _, _) = chat_level(&sim, "gpt2", distinct_prompts(6), 16).await;
    assert_eq!(v.kind, ServerKind::Tgi);
    assert_eq!(v.requests, Some(6.0));
    assert!(v.waiting.unwrap().max >= 1.0);
    assert!(v.avg_queue_s.unwrap() > 0.0);
    assert!(v.avg_inference_s.unwrap() > 0.0);
    assert!(v.prefill_busy_s.unwrap() > 0.0 && v.decode_busy_s.unwrap() > 0.0);
    assert_eq!(v.generation_tokens, Some(96.0));
    assert!(v.server_ttft.is_none(), "TGI exports no TTFT histogram");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gpu_reports_through_triton_and_dcgm() {
    let sim = sim_with(ServerKind::Triton, small_engine(0, false)).await;
    let (_, gpus, _) = chat_level(&sim, "gpt2", distinct_prompts(8), 128).await;
    assert_eq!(gpus.len(), 1);
    let g = &gpus[0];
    assert_eq!(g.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert!(g.utilization.unwrap().max > 0.0, "{g:?}");
    assert!(g.power_w.unwrap().avg >= 70.0 && g.power_w.unwrap().max <= 700.0);
    assert!(g.energy_j.unwrap() > 0.0);
    assert!(g.memory_used_bytes.unwrap().max >= 16.0 * 1024.0 * 1024.0 * 1024.0);
    assert_eq!(gpu::total_energy_j(&gpus), g.energy_j);
    // Triton's own families describe the same device.
    let page = get_text(&http_client(), &sim.metrics_url()).await;
    let triton = gpu::read_gpus(&prometheus::parse(&page));
    assert_eq!(triton.len(), 1);
    assert_eq!(triton[0].uuid, g.uuid);
    assert_eq!(triton[0].memory_total_bytes, g.memory_total_bytes);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_models_stream_reasoning_before_content() {
    let sim = start(SimConfig {
        engine: EngineConfig::instant(),
        ..SimConfig::default()
    })
    .await;
    let c = http_client();
    let base = sim.http_url();
    let chunks = chat_stream(&c, &base, "reasoning_vllm", "think", 40).await;
    assert_eq!(content_tokens(&chunks, "reasoning"), 32);
    assert_eq!(content_tokens(&chunks, "content"), 8);
    assert_eq!(content_tokens(&chunks, "reasoning_content"), 0);
    let first = chunks
        .iter()
        .position(|c| c["choices"][0]["delta"]["reasoning"].is_string())
        .unwrap();
    let last_reasoning = chunks
        .iter()
        .rposition(|c| c["choices"][0]["delta"]["reasoning"].is_string())
        .unwrap();
    let first_content = chunks
        .iter()
        .position(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .unwrap();
    assert!(first < first_content && last_reasoning < first_content);
    let usage = &chunks.last().unwrap()["usage"];
    assert_eq!(usage["completion_tokens"], 40);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 32);

    // Not streamed, shorter than the reasoning: everything is reasoning, content is null.
    let r: Value = c
        .post(format!("{base}/v1/chat/completions"))
        .json(&serde_json::json!({"model": "reasoning_sglang", "messages": [{"role": "user", "content": "x"}], "max_tokens": 10}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let m = &r["choices"][0]["message"];
    assert_eq!(m["content"], Value::Null);
    assert_eq!(
        m["reasoning_content"].as_str().unwrap(),
        " the of and to in is that for it as"
    );
    assert_eq!(
        r["usage"]["completion_tokens_details"]["reasoning_tokens"],
        10
    );
    // Other models keep their usage exactly as before.
    let chunks = chat_stream(&c, &base, "gpt2", "x", 3).await;
    assert!(
        chunks.last().unwrap()["usage"]
            .get("completion_tokens_details")
            .is_none()
    );
    sim.shutdown().await;
}

/// The last chunk of a streamed response: where llama-server puts its `timings`.
fn timings_of(chunks: &[Value]) -> &Value {
    let last = chunks.last().expect("a chunk");
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c.get("timings").is_none()),
        "timings only on the last data event"
    );
    &last["timings"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_style_speaks_llama_server() {
    // 2 slots, 6 requests sharing a ~300-token prefix: some wait (deferred), most reuse it.
    let engine = EngineConfig {
        max_batch: 2,
        ..small_engine(0, true)
    };
    let sim = sim_with(ServerKind::LlamaCpp, engine).await;
    let (v, _, responses) = chat_level(&sim, "gpt2", shared_prefix_prompts(6), 16).await;
    assert_eq!(v.kind, ServerKind::LlamaCpp);
    assert!(v.model_matched);
    assert_eq!(v.requests, None, "llama.cpp counts no finished requests");
    assert!(v.waiting.unwrap().max >= 1.0, "requests deferred: {v:?}");
    assert!(v.running.unwrap().max <= 2.0);
    assert_eq!(v.generation_tokens, Some(96.0));
    assert!(v.prefill_busy_s.unwrap() > 0.0, "{v:?}");
    let p = v.prefix_cache.expect("cached and processed prompt tokens");
    assert!(p.hit_rate.unwrap() > 0.5, "{p:?}");
    // Each response's timings add up to the page's counters.
    let timings: Vec<&Value> = responses.iter().map(|c| timings_of(c)).collect();
    let sum = |k: &str| timings.iter().map(|t| t[k].as_f64().unwrap()).sum::<f64>();
    assert_eq!(
        sum("cache_n"),
        p.hits,
        "cached tokens, response by response"
    );
    assert_eq!(sum("predicted_n"), 96.0);
    let decode_s = sum("predicted_ms") / 1e3;
    let page_s = v.decode_total_s.expect("tokens_predicted_seconds_total");
    assert!(
        (decode_s - page_s).abs() < 0.005,
        "responses' decode {decode_s} s vs the page's {page_s} s"
    );
    assert!(
        timings
            .iter()
            .all(|t| t["prompt_ms"].as_f64().unwrap() > 0.0)
    );
    // What llama-server's page looks like: no labels, C++ numbers, its families in order.
    let c = http_client();
    let page = get_text(&c, &sim.metrics_url()).await;
    assert!(page.starts_with(
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens\n# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total "
    ));
    assert!(
        page.contains("\nllamacpp:tokens_predicted_total 96\n"),
        "{page}"
    );
    assert!(page.contains("\nllamacpp:requests_deferred 0\n"));
    assert!(!page.contains("nv_inference_") && !page.contains("vllm:"));
    // /slots on the server's port and beside /metrics; /tokenize in llama-server's form.
    for base in [sim.http_url(), sim.metrics_url().replace("/metrics", "")] {
        let slots: Value = serde_json::from_str(&get_text(&c, &format!("{base}/slots")).await)
            .expect("slots JSON");
        assert_eq!(slots.as_array().map(Vec::len), Some(2), "{slots}");
    }
    let tokenize = |body: Value| {
        let (c, url) = (c.clone(), format!("{}/tokenize", sim.http_url()));
        async move {
            let r = c.post(url).json(&body).send().await.unwrap();
            r.json::<Value>().await.unwrap()
        }
    };
    let t = tokenize(serde_json::json!({"content": "Hello, how are you?"})).await;
    assert_eq!(
        t["tokens"],
        serde_json::json!([15496, 11, 703, 389, 345, 30])
    );
    let t = tokenize(serde_json::json!({"model": "gpt2", "prompt": "Hello"})).await;
    assert_eq!(
        t,
        serde_json::json!({"tokens": []}),
        "as the real one answers"
    );
    sim.shutdown().await;
}
