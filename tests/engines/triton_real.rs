//! `profile` against a real Triton Inference Server: PyTriton's bundled `tritonserver` running
//! the CPU-only models of `scripts/triton/server.py`, started by `scripts/triton/start.sh`
//! (`scripts/test.sh` starts and stops it around `cargo test`).
//!
//! The server is found through the env file start.sh writes (`TTFTBENCH_TRITON_ENV`, default
//! `target/triton.env`) or the same variables in the environment (`TTFTBENCH_TRITON_HTTP`,
//! `_GRPC`, `_METRICS`, `_TOKEN`, `_PID`, `_FIRST_TOKEN_DELAY_MS`, `_ITL_MS`). Without a server
//! every test prints `skipped: <reason>` and passes, unless `TTFTBENCH_REQUIRE_TRITON=1` (CI),
//! where it fails.
//!
//! The models stream exactly `max_tokens` one-GPT-2-token words, the first after a fixed delay
//! and the rest a fixed interval apart, so token counts are asserted exactly and timings within
//! wide margins (2-core shared machines). The tests take a lock so that only one talks to the
//! server at a time.

use std::path::Path;

use clap::Parser;
use serde_json::Value;
use ttftbench::cli::{Cli, Command};
use ttftbench::error::UsageError;
use ttftbench::load::Interrupt;
use ttftbench::metrics::Metric;
use ttftbench::profile::{Outcome, Ui};

/// One test at a time against the server: timing assertions need the 2 cores.
static SERVER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

use crate::triton_env;
use triton_env::*;

/// Runs `ttftbench profile <args> --artifact-dir <dir>` in-process.
async fn profile(args: &[String], dir: &Path) -> ttftbench::error::Result<Outcome> {
    let mut argv = strings(&["ttftbench", "profile"]);
    argv.extend(args.iter().cloned());
    argv.extend(["--artifact-dir".to_string(), dir.display().to_string()]);
    let cli = Cli::try_parse_from(&argv).map_err(|e| UsageError(e.to_string()))?;
    let Command::Profile(p) = cli.command else {
        panic!("not a profile command: {argv:?}");
    };
    let plan = p.plan(&argv)?;
    // Bounded: a stream that never ends must fail the test, not hang CI.
    match tokio::time::timeout(
        std::time::Duration::from_secs(120),
        ttftbench::profile::run(&plan, Interrupt::new(), Ui::silent()),
    )
    .await
    {
        Ok(r) => r,
        Err(_) => panic!("profile {args:?} did not finish within 120 s"),
    }
}

/// The usage error of a run that must not start.
async fn usage_error(args: &[String]) -> String {
    let dir = tempfile::tempdir().unwrap();
    match profile(args, dir.path()).await {
        Ok(o) => panic!(
            "expected a usage error, the run went ahead: {:?}",
            o.levels
                .iter()
                .map(|l| &l.summary.stats)
                .collect::<Vec<_>>()
        ),
        Err(e) if e.exit_code() == 2 => e.to_string(),
        Err(e) => panic!("expected a usage error (exit code 2), got: {e}"),
    }
}

/// Measured rows of a level's `requests.jsonl`.
fn rows(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).expect("requests.jsonl");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON row"))
        .filter(|v| v["phase"] == "measure")
        .collect()
}

/// Common flags of the LLM runs: 8 requests per level, 50 input tokens, exactly 20 output tokens.
const OSL: u64 = 20;

fn llm_args(t: &Triton, model: &str, url: &str, rest: &[&str]) -> Vec<String> {
    llm_args_with(model, url, "1,4", 8, &t.metrics, rest)
}

fn llm_args_with(
    model: &str,
    url: &str,
    concurrency: &str,
    count: u64,
    metrics: &str,
    rest: &[&str],
) -> Vec<String> {
    let mut a = strings(&[
        "-m",
        model,
        "-u",
        url,
        "--streaming",
        "--concurrency",
        concurrency,
        "--request-count",
        &count.to_string(),
        "--synthetic-input-tokens-mean",
        "50",
        "--output-tokens-mean",
        "20",
        "--output-tokens-mean-deterministic",
        "--server-metrics-url",
        metrics,
    ]);
    a.extend(strings(rest));
    a
}

/// Every level: all requests succeed with exactly the tokens asked for, one content response per
/// token (`responses_per_request` counts the empty final too, on gRPC), TTFT p50 just above the
/// model's first-token delay and ITL near the model's interval.
fn check_streamed(t: &Triton, o: &Outcome, responses_per_request: u64) {
    assert_eq!(o.levels.len(), 2, "levels concurrency 1 and 4");
    for level in &o.levels {
        let s = &level.summary;
        let name = s.stimulus.name();
        assert_eq!(
            s.stats.error_count, 0,
            "{name}: errors {:?}",
            s.stats.errors
        );
        assert_eq!(s.stats.request_count, 8, "{name}");
        let rows = rows(&level.dir);
        assert_eq!(rows.len(), 8, "{name}: one row per request");
        for r in &rows {
            assert!(r["error"].is_null(), "{name}: {r}");
            assert_eq!(
                r["osl"], r["requested_osl"],
                "{name}: osl == requested_osl: {r}"
            );
            assert_eq!(r["osl"], OSL, "{name}: {r}");
            assert_eq!(r["isl"], 50, "{name}: {r}");
            assert_eq!(r["chunks"], OSL, "{name}: one response per token: {r}");
            assert_eq!(r["responses"], responses_per_request, "{name}: {r}");
        }
        let ttft = s.stats.get(Metric::TimeToFirstToken).expect("TTFT");
        let (lo, hi) = (t.first_token_ms - 1.0, t.first_token_ms + TTFT_MARGIN_MS);
        assert!(
            ttft.p50 >= lo && ttft.p50 <= hi,
            "{name}: TTFT p50 {:.2} ms, expected in [{lo}, {hi}] (model delay {} ms)",
            ttft.p50,
            t.first_token_ms
        );
        let itl = s.stats.get(Metric::InterTokenLatency).expect("ITL");
        let (lo, hi) = (t.itl_ms * 0.5, t.itl_ms * 2.0 + 5.0);
        assert!(
            itl.avg >= lo && itl.avg <= hi,
            "{name}: ITL avg {:.2} ms, expected in [{lo}, {hi}] (model interval {} ms)",
            itl.avg,
            t.itl_ms
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_tensorrtllm_layout_streams_exact_tokens() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    let _g = SERVER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let args = llm_args(
        &t,
        "trtllm_stream",
        &t.grpc,
        &["--service-kind", "triton", "--backend", "tensorrtllm"],
    );
    let o = profile(&args, dir.path()).await.expect("profile runs");
    // 20 token responses + the empty final one Triton sends because the request asks for it
    // (PyTriton ends a decoupled request with a flags-only FINAL).
    check_streamed(&t, &o, OSL + 1);
    assert!(
        o.levels[0]
            .dir
            .ends_with("trtllm_stream-triton-tensorrtllm-concurrency1")
    );
    check_context(&o, "gRPC ServerMetadata");
}

/// The real server's identity and the model's config, as the level's JSON records them.
fn check_context(o: &Outcome, source: &str) {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(o.levels[0].dir.join("profile_export_genai_perf.json")).unwrap(),
    )
    .unwrap();
    let c = &doc["context"];
    assert_eq!(c["server"]["name"], "triton", "{c}");
    assert_eq!(c["server"]["source"], source, "{c}");
    assert!(
        c["server"]["version"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{c}"
    );
    if let Ok(v) = std::env::var("TTFTBENCH_TRITON_SERVER_VERSION") {
        assert_eq!(c["server"]["version"], v.as_str(), "{c}");
    }
    assert_eq!(c["model"]["name"], "trtllm_stream", "{c}");
    assert_eq!(c["model"]["decoupled"], true, "{c}");
    assert_eq!(doc["schema_version"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_vllm_layout_streams_exact_tokens() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    let _g = SERVER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let args = llm_args(
        &t,
        "vllm_stream",
        &t.grpc,
        &["--service-kind", "triton", "--backend", "vllm"],
    );
    let o = profile(&args, dir.path()).await.expect("profile runs");
    check_streamed(&t, &o, OSL + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_generate_stream_exact_tokens() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    let _g = SERVER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let args = llm_args(
        &t,
        "trtllm_stream",
        &t.http,
        &["--endpoint-type", "generate"],
    );
    let o = profile(&args, dir.path()).await.expect("profile runs");
    // generate_stream sends no event for the flags-only FINAL: the body just ends.
    check_streamed(&t, &o, OSL);
    check_context(&o, "GET /v2");
}

/// A decoupled model asked without `--streaming` (stream=false) answers with one response holding
/// the whole text, then a flags-only FINAL: the request must still complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_decoupled_model_without_streaming() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    let _g = SERVER.lock().await;
    for (model, backend) in [("trtllm_stream", "tensorrtllm"), ("vllm_stream", "vllm")] {
        let dir = tempfile::tempdir().unwrap();
        let args = strings(&[
            "-m",
            model,
            "-u",
            &t.grpc,
            "--service-kind",
            "triton",
            "--backend",
            backend,
            "--no-streaming",
            "--concurrency",
            "2",
            "--request-count",
            "6",
            // PyTriton answers the first requests of a new client connection 60-170 ms late (the
            // built-in simulator does not, so it is the server's); with 2 of 4 requests cold the
            // p50 blended the two and CI saw 129 ms. Warm-up requests keep them out.
            "--warmup-request-count",
            "2",
            "--synthetic-input-tokens-mean",
            "50",
            "--output-tokens-mean",
            "20",
            "--output-tokens-mean-deterministic",
            "--server-metrics-url",
            &t.metrics,
        ]);
        let o = profile(&args, dir.path()).await.expect("profile runs");
        let s = &o.levels[0].summary;
        assert_eq!(s.stats.error_count, 0, "{model}: {:?}", s.stats.errors);
        assert_eq!(s.stats.request_count, 6, "{model}");
        for r in rows(&o.levels[0].dir) {
            assert_eq!(r["osl"], OSL, "{model}: {r}");
            assert_eq!(
                r["chunks"], 1,
                "{model}: the whole text in one response: {r}"
            );
        }
        // The whole text arrives after the first-token delay and 19 intervals.
        let lat = s.stats.get(Metric::RequestLatency).expect("latency");
        let expected = t.first_token_ms;
        assert!(
            lat.p50 >= expected - 1.0 && lat.p50 <= expected + TTFT_MARGIN_MS,
            "{model}: latency p50 {:.2} ms, expected just above {expected} ms",
            lat.p50
        );
    }
}

/// PyTriton restricts the statistics API (and model-repository, shared-memory, trace, logging)
/// to requests carrying its access token: header `triton-access-token` over HTTP, metadata
/// `triton-grpc-protocol-triton-access-token` over gRPC. With `-H 'triton-access-token: T'` the
/// level's server view comes from the statistics API, over both protocols.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_with_access_token() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    if t.token.is_empty() {
        println!("skipped: the server runs without an access token (server.py --unrestricted)");
        return;
    }
    let _g = SERVER.lock().await;
    let header = format!("triton-access-token: {}", t.token);
    let prefixed = format!("triton-grpc-protocol-triton-access-token: {}", t.token);
    let cases: [(&str, Vec<&str>); 3] = [
        (
            t.grpc.as_str(),
            vec![
                "--service-kind",
                "triton",
                "--backend",
                "tensorrtllm",
                "-H",
                &header,
            ],
        ),
        (
            t.grpc.as_str(),
            vec![
                "--service-kind",
                "triton",
                "--backend",
                "tensorrtllm",
                "-H",
                &prefixed,
            ],
        ),
        (
            t.http.as_str(),
            vec!["--endpoint-type", "generate", "-H", &header],
        ),
    ];
    for (url, extra) in cases {
        let dir = tempfile::tempdir().unwrap();
        // One level is enough here.
        let args = llm_args_with("trtllm_stream", url, "2", 8, &t.metrics, &extra);
        let o = profile(&args, dir.path()).await.expect("profile runs");
        let s = &o.levels[0].summary;
        assert_eq!(s.stats.error_count, 0, "{extra:?}: {:?}", s.stats.errors);
        let server = s
            .server
            .as_ref()
            .unwrap_or_else(|| panic!("{url} {extra:?}: no server view"));
        assert_eq!(server.source, "statistics", "{url} {extra:?}: {server:?}");
        assert_eq!(server.requests, 8, "{url} {extra:?}: {server:?}");
        assert_eq!(server.failures, 0, "{url} {extra:?}: {server:?}");
        // The model has no dynamic batcher: one execution per request.
        assert_eq!(server.executions, 8, "{url} {extra:?}: {server:?}");
        // The token never reaches the artifacts.
        let json = std::fs::read_to_string(o.levels[0].dir.join("profile_export_genai_perf.json"))
            .unwrap();
        assert!(
            !json.contains(&t.token),
            "the access token leaked into the JSON"
        );
        assert!(json.contains("\"source\": \"statistics\""), "{json}");
    }
}

/// Without the token the statistics API answers "restricted": the run still succeeds and the
/// server view falls back to Prometheus `/metrics` (not restricted), or is absent without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_without_token() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    let _g = SERVER.lock().await;
    for (url, extra) in [
        (
            t.grpc.as_str(),
            vec!["--service-kind", "triton", "--backend", "tensorrtllm"],
        ),
        (t.http.as_str(), vec!["--endpoint-type", "generate"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let args = llm_args_with("trtllm_stream", url, "2", 8, &t.metrics, &extra);
        let o = profile(&args, dir.path()).await.expect("profile runs");
        let s = &o.levels[0].summary;
        assert_eq!(s.stats.error_count, 0, "{extra:?}: {:?}", s.stats.errors);
        assert_eq!(s.stats.request_count, 8);
        let server = s.server.as_ref().expect("Prometheus server view");
        if t.token.is_empty() {
            assert_eq!(server.source, "statistics", "{server:?}");
        } else {
            assert_eq!(server.source, "prometheus", "{url} {extra:?}: {server:?}");
        }
        assert_eq!(server.requests, 8, "{url} {extra:?}: {server:?}");

        // Metrics pointed at a closed port: a named page that does not answer is refused
        // before any load (exit 2, the flag named).
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/metrics", l.local_addr().unwrap())
        };
        let dir = tempfile::tempdir().unwrap();
        let args = llm_args_with("trtllm_stream", url, "1", 2, &closed, &extra);
        match profile(&args, dir.path()).await {
            Err(e) => {
                assert_eq!(e.exit_code(), 2, "{e}");
                assert!(e.to_string().contains("--server-metrics-url"), "{e}");
            }
            Ok(_) => panic!("{url}: a metrics URL that does not answer must stop the run"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_model_lists_the_models() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    let _g = SERVER.lock().await;
    let header = format!("triton-access-token: {}", t.token);
    let base = |model: &str| {
        strings(&[
            "-m",
            model,
            "-u",
            &t.grpc,
            "--service-kind",
            "triton",
            "--backend",
            "tensorrtllm",
            "--streaming",
            "--request-count",
            "1",
        ])
    };
    // PyTriton's repository index is empty (it loads models with inline configs), and both it
    // and the statistics API are restricted: with the token the names come from the statistics.
    let mut args = base("no_such_model");
    if !t.token.is_empty() {
        args.extend(["-H".to_string(), header.clone()]);
    }
    let e = usage_error(&args).await;
    assert!(e.contains("'no_such_model' is not found"), "{e}");
    for m in [
        "trtllm_stream",
        "trtllm_unary",
        "vllm_stream",
        "images",
        "text_classifier",
    ] {
        assert!(e.contains(m), "the message lists {m}: {e}");
    }
    // Without the token the names cannot be read: the message still names the model and says
    // how to list them.
    if !t.token.is_empty() {
        let e = usage_error(&base("no_such_model")).await;
        assert!(e.contains("'no_such_model' is not found"), "{e}");
        assert!(!e.contains("no models loaded"), "{e}");
    }
    // Over HTTP the model is checked with GET /v2/models/{m} (404) and listed from
    // POST /v2/repository/index, which PyTriton answers with [] even with the token (its
    // models are loaded with inline configs, not from the repository directory): the message
    // names the model; its list is not asserted (src/client/discovery.rs has no statistics
    // fallback yet and says "the server reports no models loaded").
    let mut args = strings(&[
        "-m",
        "no_such_model",
        "-u",
        &t.http,
        "--endpoint-type",
        "generate",
        "--streaming",
        "--request-count",
        "1",
    ]);
    if !t.token.is_empty() {
        args.extend(["-H".to_string(), header]);
    }
    let e = usage_error(&args).await;
    assert!(e.contains("'no_such_model' is not found"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_layout_and_not_decoupled_are_usage_errors() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(t) = triton() else { return };
    let _g = SERVER.lock().await;
    let grpc = |model: &str, backend: &str| {
        strings(&[
            "-m",
            model,
            "-u",
            &t.grpc,
            "--service-kind",
            "triton",
            "--backend",
            backend,
            "--streaming",
            "--request-count",
            "1",
        ])
    };
    let e = usage_error(&grpc("vllm_stream", "tensorrtllm")).await;
    assert!(
        e.contains("does not have the tensorrtllm input layout"),
        "{e}"
    );
    assert!(e.contains("lacks max_tokens"), "{e}");
    for input in [
        "text_input",
        "stream",
        "sampling_parameters",
        "exclude_input_in_output",
    ] {
        assert!(e.contains(input), "names input {input}: {e}");
    }
    assert!(e.contains("--backend vllm"), "{e}");

    // The vLLM layout only needs text_input; asking for an output length needs its
    // sampling_parameters, which the TensorRT-LLM layout lacks. (Without --output-tokens-mean the
    // request goes through: Triton only checks the number of inputs against the required ones,
    // not that the required max_tokens is among them.)
    let mut args = grpc("trtllm_stream", "vllm");
    args.extend(strings(&["--output-tokens-mean", "20"]));
    let e = usage_error(&args).await;
    assert!(e.contains("needs the sampling_parameters input"), "{e}");
    assert!(
        e.contains("max_tokens (INT32 [1])"),
        "names the inputs: {e}"
    );

    // A TensorRT-LLM-layout model that is not decoupled cannot stream.
    let e = usage_error(&grpc("trtllm_unary", "tensorrtllm")).await;
    assert!(e.contains("is not decoupled"), "{e}");
    assert!(e.contains("drop --streaming"), "{e}");

    // `images` takes tensors: with or without --streaming, the tool that measures it is named,
    // with its inputs.
    for streaming in [true, false] {
        let mut args = grpc("images", "tensorrtllm");
        if !streaming {
            args.retain(|a| a != "--streaming");
        }
        let e = usage_error(&args).await;
        assert!(
            e.contains("takes tensors") && e.contains("ttftbench perf -m images"),
            "{e}"
        );
        assert!(e.contains("images (FP32 [3,640,640])"), "{e}");
    }
}

#[test]
fn env_file_parsing_and_liveness() {
    let _one = crate::ONE_AT_A_TIME.blocking_lock();
    assert!(running(&std::process::id().to_string()));
    assert!(!running("0"));
    let v = parse_env_file(
        "# comment\nexport TTFTBENCH_TRITON_HTTP=127.0.0.1:1\nTTFTBENCH_TRITON_TOKEN=\"a=b\"\n\n",
    );
    assert_eq!(v["TTFTBENCH_TRITON_HTTP"], "127.0.0.1:1");
    assert_eq!(v["TTFTBENCH_TRITON_TOKEN"], "a=b");
}
