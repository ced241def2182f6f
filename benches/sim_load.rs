//! Load measurements of the simulated server: the instant engine's request rate over HTTP and
//! gRPC, the default engine's concurrency ladder, and 10 000 concurrent streams. They print
//! tables rather than assert speed (speed targets live here, never in timed tests). Run:
//!
//! ```text
//! cargo bench --bench sim_load              # all three
//! cargo bench --bench sim_load -- ladder    # the ones whose name contains "ladder"
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use ttftbench::proto;
use ttftbench::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use ttftbench::sim::{self, EngineConfig, SimConfig};

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if wanted("instant_mode_throughput") {
        rt.block_on(instant_mode_throughput());
    }
    if wanted("default_engine_concurrency_ladder") {
        rt.block_on(default_engine_concurrency_ladder());
    }
    if wanted("ten_thousand_concurrent_streams") {
        rt.block_on(ten_thousand_concurrent_streams());
    }
}

fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(1024)
        .build()
        .expect("client")
}

fn prompt(words: usize) -> String {
    (0..words)
        .map(|i| if i % 2 == 0 { " alpha" } else { " beta" })
        .collect()
}

fn trt_request(id: u64, prompt: &str, max_tokens: i32) -> proto::ModelInferRequest {
    let input = |name: &str, dt: &str| proto::model_infer_request::InferInputTensor {
        name: name.into(),
        datatype: dt.into(),
        shape: vec![1, 1],
        ..Default::default()
    };
    let mut el = (prompt.len() as u32).to_le_bytes().to_vec();
    el.extend_from_slice(prompt.as_bytes());
    proto::ModelInferRequest {
        model_name: "gpt2".into(),
        id: id.to_string(),
        inputs: vec![
            input("text_input", "BYTES"),
            input("max_tokens", "INT32"),
            input("stream", "BOOL"),
        ],
        raw_input_contents: vec![el, max_tokens.to_le_bytes().to_vec(), vec![1]],
        ..Default::default()
    }
}

async fn instant_mode_throughput() {
    let h = sim::start(SimConfig {
        engine: EngineConfig::instant(),
        ..SimConfig::default()
    })
    .await
    .expect("sim");
    let c = http_client();
    let cases = [
        (
            "HTTP generate_stream",
            format!("{}/v2/models/gpt2/generate_stream", h.http_url()),
            json!({"text_input": prompt(100), "max_tokens": 16}).to_string(),
        ),
        (
            "OpenAI chat stream + usage",
            format!("{}/v1/chat/completions", h.http_url()),
            json!({"model": "gpt2", "messages": [{"role": "user", "content": prompt(100)}],
                "max_tokens": 16, "stream": true, "stream_options": {"include_usage": true}})
            .to_string(),
        ),
    ];
    for (name, url, body) in cases {
        let concurrency = 64usize;
        let done = Arc::new(AtomicU64::new(0));
        let stop = Instant::now() + Duration::from_secs(3);
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let (c, url, body, done) = (c.clone(), url.clone(), body.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                while Instant::now() < stop {
                    let r = c
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .expect("send");
                    let b = r.bytes().await.expect("body");
                    assert!(b.len() > 16 * 20);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        let t0 = Instant::now();
        for t in tasks {
            t.await.expect("join");
        }
        let n = done.load(Ordering::Relaxed);
        println!(
            "{name}: c={concurrency}: {n} requests in {:?} = {:.0} req/s ({:.0} tokens/s)",
            t0.elapsed(),
            n as f64 / t0.elapsed().as_secs_f64(),
            16.0 * n as f64 / t0.elapsed().as_secs_f64()
        );
    }

    // gRPC, perf_analyzer style: requests multiplexed on a few bidi streams, each stream keeping
    // `per_stream` requests in flight.
    let streams = 8usize;
    let per_stream = 32usize;
    let done = Arc::new(AtomicU64::new(0));
    let stop = Instant::now() + Duration::from_secs(3);
    let mut tasks = Vec::new();
    let p = prompt(100);
    for s in 0..streams {
        let (done, addr, p) = (done.clone(), h.grpc_addr, p.clone());
        tasks.push(tokio::spawn(async move {
            let mut g = GrpcInferenceServiceClient::connect(format!("http://{addr}"))
                .await
                .expect("connect");
            let (tx, rx) = tokio::sync::mpsc::channel(1024);
            let mut inbound = g
                .model_stream_infer(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
                .expect("open")
                .into_inner();
            let mut next = (s as u64) << 40;
            for _ in 0..per_stream {
                tx.send(trt_request(next, &p, 16)).await.expect("send");
                next += 1;
            }
            let mut in_flight = per_stream;
            while let Some(m) = inbound.message().await.expect("message") {
                let r = m.infer_response.expect("response");
                let last = matches!(
                    r.parameters
                        .get("triton_final_response")
                        .and_then(|p| p.parameter_choice.clone()),
                    Some(proto::infer_parameter::ParameterChoice::BoolParam(true))
                );
                if last {
                    done.fetch_add(1, Ordering::Relaxed);
                    in_flight -= 1;
                    if Instant::now() < stop {
                        tx.send(trt_request(next, &p, 16)).await.expect("send");
                        next += 1;
                        in_flight += 1;
                    } else if in_flight == 0 {
                        break;
                    }
                }
            }
        }));
    }
    let t0 = Instant::now();
    for t in tasks {
        t.await.expect("join");
    }
    let n = done.load(Ordering::Relaxed);
    println!(
        "gRPC ModelStreamInfer: {streams} streams x {per_stream} in flight: {n} requests in {:?} = {:.0} req/s ({:.0} responses/s)",
        t0.elapsed(),
        n as f64 / t0.elapsed().as_secs_f64(),
        16.0 * n as f64 / t0.elapsed().as_secs_f64()
    );
    h.shutdown().await;
}

fn stat(v: &Value, path: &str) -> u64 {
    v["model_stats"][0]
        .pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

async fn default_engine_concurrency_ladder() {
    let h = sim::start(SimConfig::default()).await.expect("sim");
    let c = http_client();
    let url = format!("{}/v2/models/gpt2/generate_stream", h.http_url());
    let stats_url = format!("{}/v2/models/gpt2/stats", h.http_url());
    let body = json!({"text_input": prompt(100), "max_tokens": 32}).to_string();
    println!("default engine (8 slots), ISL 100, OSL 32, closed loop, 3 s per level");
    println!(
        "{:>4} {:>10} {:>10} {:>10} {:>9} {:>12} {:>12}",
        "c", "TTFT avg", "TTFT p50", "TTFT p99", "req/s", "queue/req", "infer/req"
    );
    for concurrency in [1usize, 2, 4, 8, 16, 32] {
        let before: Value = c
            .get(&stats_url)
            .send()
            .await
            .expect("s")
            .json()
            .await
            .expect("j");
        let stop = Instant::now() + Duration::from_secs(3);
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let (c, url, body) = (c.clone(), url.clone(), body.clone());
            tasks.push(tokio::spawn(async move {
                let mut ttfts = Vec::new();
                while Instant::now() < stop {
                    let t = Instant::now();
                    let mut r = c
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .expect("send");
                    let mut first = None;
                    while let Some(_chunk) = r.chunk().await.expect("chunk") {
                        first.get_or_insert_with(|| t.elapsed());
                    }
                    ttfts.push(first.expect("first"));
                }
                ttfts
            }));
        }
        let t0 = Instant::now();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.expect("join"));
        }
        let wall = t0.elapsed();
        let after: Value = c
            .get(&stats_url)
            .send()
            .await
            .expect("s")
            .json()
            .await
            .expect("j");
        all.sort();
        let n = all.len();
        let avg = all.iter().sum::<Duration>() / n as u32;
        let d = |p: &str| stat(&after, p) - stat(&before, p);
        let reqs = d("/inference_stats/success/count").max(1);
        println!(
            "{concurrency:>4} {:>8.1}ms {:>8.1}ms {:>8.1}ms {:>9.1} {:>10.1}ms {:>10.1}ms",
            avg.as_secs_f64() * 1e3,
            all[n / 2].as_secs_f64() * 1e3,
            all[(n * 99 / 100).min(n - 1)].as_secs_f64() * 1e3,
            n as f64 / wall.as_secs_f64(),
            d("/inference_stats/queue/ns") as f64 / reqs as f64 / 1e6,
            d("/inference_stats/compute_infer/ns") as f64 / reqs as f64 / 1e6,
        );
    }
    h.shutdown().await;
}

async fn ten_thousand_concurrent_streams() {
    // 10 000 sequences running at once in one engine: 20 ms decode steps, 20 tokens each.
    let engine = EngineConfig {
        max_batch: 10_000,
        prefill_base_us: 0,
        prefill_us_per_token: 0,
        decode_base_us: 20_000,
        decode_us_per_seq: 0,
        max_queue: 0,
        ..EngineConfig::default()
    };
    let h = sim::start(SimConfig {
        engine,
        ..SimConfig::default()
    })
    .await
    .expect("sim");
    let streams = 100usize;
    let per_stream = 100usize;
    let tokens = 20;
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for s in 0..streams {
        let addr = h.grpc_addr;
        tasks.push(tokio::spawn(async move {
            let mut g = GrpcInferenceServiceClient::connect(format!("http://{addr}"))
                .await
                .expect("connect");
            let reqs: Vec<_> = (0..per_stream)
                .map(|i| trt_request((s * per_stream + i) as u64, " hello", tokens))
                .collect();
            let mut inbound = g
                .model_stream_infer(tokio_stream::iter(reqs))
                .await
                .expect("open")
                .into_inner();
            let mut n = 0usize;
            let mut first = None;
            while let Some(m) = inbound.message().await.expect("message") {
                assert!(m.error_message.is_empty(), "{}", m.error_message);
                first.get_or_insert_with(|| t0.elapsed());
                n += 1;
            }
            (n, first.expect("first"))
        }));
    }
    let mut total = 0;
    let mut firsts = Vec::new();
    for t in tasks {
        let (n, f) = t.await.expect("join");
        total += n;
        firsts.push(f);
    }
    let wall = t0.elapsed();
    firsts.sort();
    assert_eq!(total, streams * per_stream * tokens as usize);
    println!(
        "10 000 concurrent gRPC streams (100 bidi calls x 100 requests), 20 tokens each, 20 ms steps: {total} responses in {wall:?} (ideal 400 ms); first response per call p50 {:?}",
        firsts[firsts.len() / 2]
    );
    let stats: Value = reqwest_json(&format!("{}/v2/models/gpt2/stats", h.http_url())).await;
    println!(
        "  executions: {}, successes: {}",
        stat(&stats, "/execution_count"),
        stat(&stats, "/inference_stats/success/count")
    );
    h.shutdown().await;
}

async fn reqwest_json(url: &str) -> Value {
    http_client()
        .get(url)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}
