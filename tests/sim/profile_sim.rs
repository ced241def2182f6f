//! `profile` end to end against the simulator on real sockets: every endpoint type, exact token
//! counts, TTFT against the simulator's configured timing, artifacts, and failures as data.
//! Timing tolerances are wide on purpose (2-core shared machines); exactness is asserted where
//! the simulator makes it exact (token counts, error counts).

use crate::common;

use common::*;
use ttftbench::metrics::Metric;
use ttftbench::sim::{EngineConfig, FaultConfig, SimConfig};

/// At concurrency 1 with [`round_engine`] and 100 input tokens: first token after 25 ms, then
/// one token per 10 ms step.
const TTFT_MS: f64 = 25.0;
const ITL_MS: f64 = 10.0;

fn check_level(outcome: &ttftbench::profile::Outcome, requests: u64, osl: u32) {
    let level = &outcome.levels[0];
    let s = &level.summary;
    assert_eq!(s.stats.error_count, 0, "errors: {:?}", s.stats.errors);
    assert_eq!(s.stats.request_count, requests);
    let ttft = s
        .stats
        .get(Metric::TimeToFirstToken)
        .expect("TTFT measured");
    assert!(
        ttft.p50 >= TTFT_MS - 1.0 && ttft.p50 <= TTFT_MS + 20.0,
        "TTFT p50 {} ms, expected ≈ {TTFT_MS}",
        ttft.p50
    );
    let itl = s
        .stats
        .get(Metric::InterTokenLatency)
        .expect("ITL measured");
    assert!(
        itl.avg >= ITL_MS - 1.0 && itl.avg <= ITL_MS + 5.0,
        "ITL avg {} ms, expected ≈ {ITL_MS}",
        itl.avg
    );
    for row in measured(&level.dir) {
        assert_eq!(
            row["osl"], osl,
            "every request gets exactly the tokens it asked for: {row}"
        );
        assert_eq!(row["requested_osl"], osl);
        assert_eq!(row["isl"], 100);
        assert!(row["error"].is_null());
    }
    // The seeds' own readers find the TTFT row.
    let (avg, p99) = csv_row(&level.dir, "time_to_first_token").expect("TTFT row in the CSV");
    assert!((avg - ttft.avg).abs() < 0.01 && p99 >= avg);
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(level.dir.join("profile_export_genai_perf.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["request_count"]["avg"], requests);
    assert_eq!(json["output_sequence_length"]["avg"], f64::from(osl));
    assert_eq!(json["input_config"]["target"]["streaming"], true);
}

fn base(endpoint: &[&str], url: String, dir: &std::path::Path) -> Vec<String> {
    let mut a = args(&[
        "--streaming",
        "--synthetic-input-tokens-mean",
        "100",
        "--output-tokens-mean",
        "12",
        "--output-tokens-mean-deterministic",
        "--num-prompts",
        "4",
        "--request-count",
        "6",
        "--concurrency",
        "1",
    ]);
    a.extend(args(endpoint));
    a.extend([
        "-u".to_string(),
        url,
        "--artifact-dir".to_string(),
        dir.display().to_string(),
    ]);
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_stream() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&base(
        &["-m", "gpt2", "--endpoint-type", "chat"],
        sim.http_url(),
        tmp.path(),
    ))
    .await
    .unwrap();
    check_level(&out, 6, 12);
    // Usage is always asked for: both counts per request, and their agreement per level.
    for row in measured(&out.levels[0].dir) {
        assert_eq!(row["server_osl"], 12, "usage chunk read: {row}");
        assert_eq!(row["tokenizer_osl"], 12, "{row}");
        assert_eq!(row["server_isl"], 100, "{row}");
    }
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.levels[0].dir.join("profile_export_genai_perf.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["validity"]["osl_compared_count"], 6);
    assert_eq!(json["validity"]["osl_mismatch_count"], 0);
    assert_eq!(json["validity"]["osl_mismatch_share"], 0.0);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_stream_with_server_token_count() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = base(
        &[
            "-m",
            "gpt2",
            "--endpoint-type",
            "completions",
            "--use-server-token-count",
        ],
        sim.http_url(),
        tmp.path(),
    );
    a.extend(args(&["--service-kind", "openai"]));
    let out = profile(&a).await.unwrap();
    check_level(&out, 6, 12);
    for row in measured(&out.levels[0].dir) {
        assert_eq!(row["server_osl"], 12, "usage chunk read: {row}");
        assert_eq!(row["tokenizer_osl"], 12, "also counted: {row}");
    }
    sim.shutdown().await;
}

/// On Triton the server's count comes from the model's count outputs; a model without any
/// (the simulator's gpt2 returns only `text_output`) refuses the flag before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_token_count_refused_where_the_model_returns_no_count() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    for (api, url) in [("generate", sim.http_url()), ("kserve", sim.grpc_target())] {
        let e = profile(&base(
            &[
                "-m",
                "gpt2",
                "--endpoint-type",
                api,
                "--use-server-token-count",
            ],
            url,
            tmp.path(),
        ))
        .await
        .unwrap_err();
        assert!(
            e.contains("model 'gpt2' returns no token count (its outputs: text_output)")
                && e.contains("--tokenizer"),
            "{api}: {e}"
        );
    }
    let stats = common::get_text(
        &common::http_client(),
        &format!("{}/v2/models/gpt2/stats", sim.http_url()),
    )
    .await;
    assert!(
        stats.contains("\"inference_count\":0"),
        "nothing was sent: {stats}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triton_generate_stream_over_http() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&base(
        &["-m", "gpt2", "--endpoint-type", "generate"],
        sim.http_url(),
        tmp.path(),
    ))
    .await
    .unwrap();
    check_level(&out, 6, 12);
    let server = out.levels[0]
        .summary
        .server
        .as_ref()
        .expect("statistics read from /v2/models/gpt2/stats");
    assert_eq!(server.source, "statistics");
    assert_eq!(server.requests, 6);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kserve_grpc_tensorrtllm_and_vllm_layouts() {
    let sim = start_round().await;
    for (model, backend) in [("gpt2", "tensorrtllm"), ("vllm_model", "vllm")] {
        let tmp = tempfile::tempdir().unwrap();
        let a = base(
            &[
                "-m",
                model,
                "--service-kind",
                "triton",
                "--backend",
                backend,
            ],
            sim.grpc_target(),
            tmp.path(),
        );
        let out = profile(&a).await.unwrap_or_else(|e| panic!("{model}: {e}"));
        check_level(&out, 6, 12);
        let server = out.levels[0]
            .summary
            .server
            .as_ref()
            .expect("ModelStatistics over gRPC");
        assert_eq!(server.source, "statistics");
        assert_eq!(server.requests, 6, "{model}");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_measures_latency_only() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = base(
        &["-m", "gpt2", "--endpoint-type", "chat"],
        sim.http_url(),
        tmp.path(),
    );
    for x in a.iter_mut().filter(|x| *x == "--streaming") {
        *x = "--no-streaming".into();
    }
    let out = profile(&a).await.unwrap();
    let s = &out.levels[0].summary;
    assert!(!s.streaming);
    assert_eq!(s.stats.request_count, 6);
    let lat = s.stats.get(Metric::RequestLatency).unwrap();
    // One step with prefill, then 11 more steps.
    assert!(lat.p50 >= 25.0 + 11.0 * 10.0 - 2.0, "latency {}", lat.p50);
    assert!(
        csv_row(&out.levels[0].dir, "time_to_first_token").is_none(),
        "no TTFT row without --streaming"
    );
    assert!(csv_row(&out.levels[0].dir, "request_latency").is_some());
    sim.shutdown().await;
}

/// Neither --streaming nor --no-streaming: the run streams where the target can (an OpenAI
/// endpoint; a decoupled Triton model, from its config) and times whole responses where it
/// cannot (a model that is not decoupled is still profiled, not refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_is_the_default_where_the_target_can() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let run = |api: &str, url: String, model: &str, dir: &str| {
        let mut a = base(
            &["-m", model, "--endpoint-type", api],
            url,
            &tmp.path().join(dir),
        );
        a.retain(|x| x != "--streaming");
        a
    };
    for (api, url, model, streams) in [
        ("chat", sim.http_url(), "gpt2", true),
        ("completions", sim.http_url(), "gpt2", true),
        ("kserve", sim.grpc_target(), "gpt2", true),
        ("generate", sim.http_url(), "gpt2", true),
        ("kserve", sim.grpc_target(), "gpt2_nostream", false),
        ("generate", sim.http_url(), "gpt2_nostream", false),
    ] {
        let a = run(api, url, model, &format!("{api}-{model}"));
        let plan = common::plan(&a).unwrap();
        assert!(plan.target.streaming_by_default);
        let out = profile(&a).await.unwrap();
        let s = &out.levels[0].summary;
        assert_eq!(s.streaming, streams, "{api} {model}");
        assert_eq!(s.stats.error_count, 0, "{api} {model}");
        let ttft = csv_row(&out.levels[0].dir, "time_to_first_token");
        assert_eq!(ttft.is_some(), streams, "{api} {model}");
        let input = common::json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
        assert_eq!(input["input_config"]["target"]["streaming"], streams);
    }
    // An objective on a streamed metric cannot hold for a model that answers whole.
    let mut a = run("kserve", sim.grpc_target(), "gpt2_nostream", "slo");
    a.extend(common::args(&["--slo", "time_to_first_token.p99<=1s"]));
    let err = profile(&a).await.unwrap_err();
    assert!(
        err.starts_with(
            "--slo time_to_first_token.p99<=1000ms: model 'gpt2_nostream' is not decoupled"
        ),
        "{err}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_writes_levels_and_summary_and_queue_grows() {
    let sim = start(SimConfig {
        engine: EngineConfig {
            max_batch: 2,
            ..round_engine()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--streaming",
        "-u",
        &sim.grpc_target(),
        "--synthetic-input-tokens-mean",
        "50",
        "--output-tokens-mean",
        "5",
        "--concurrency",
        "1:4",
        "--request-count",
        "12",
        "--server-metrics-url",
        &sim.metrics_url(),
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    assert_eq!(out.levels.len(), 3);
    for (l, c) in out.levels.iter().zip([1, 2, 4]) {
        assert_eq!(
            l.dir,
            tmp.path()
                .join(format!("gpt2-triton-tensorrtllm-concurrency{c}"))
        );
        assert!(l.dir.join("profile_export_genai_perf.csv").exists());
        assert!(l.dir.join("histograms.json").exists());
        assert_eq!(measured(&l.dir).len(), 12);
    }
    let summary = std::fs::read_to_string(tmp.path().join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 4, "{summary}");
    // The throughput/interactivity trade-off beside it: one row per level, in load order, no
    // objectives so no feasibility.
    let pareto = std::fs::read_to_string(tmp.path().join("pareto.csv")).unwrap();
    let rows: Vec<&str> = pareto.lines().collect();
    assert_eq!(rows.len(), 4, "{pareto}");
    for (row, c) in rows[1..].iter().zip([1, 2, 4]) {
        assert!(
            row.starts_with(&format!("concurrency{c},concurrency,{c},")),
            "{pareto}"
        );
        assert_eq!(row.split(',').nth(5), Some(""), "{pareto}");
    }
    // Two batch slots: at concurrency 4 half the requests wait for a slot.
    let queue = |i: usize| {
        out.levels[i]
            .summary
            .server
            .as_ref()
            .and_then(|d| d.avg_queue_ms)
            .unwrap()
    };
    assert!(
        queue(2) > queue(0) + 10.0,
        "queue wait grows past the slot count: {} vs {}",
        queue(0),
        queue(2)
    );
    let ttft = |i: usize| {
        out.levels[i]
            .summary
            .stats
            .get(Metric::TimeToFirstToken)
            .unwrap()
            .avg
    };
    assert!(
        ttft(2) > ttft(0) * 1.5,
        "TTFT rises with queueing: {} vs {}",
        ttft(0),
        ttft(2)
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measurement_interval_bounds_the_level_in_time() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = profile(&chat_args(
        &sim.http_url(),
        tmp.path(),
        &[
            "--synthetic-input-tokens-mean",
            "20",
            "--output-tokens-mean",
            "3",
            "--num-prompts",
            "200",
            "--measurement-interval",
            "600",
            "--concurrency",
            "2",
            "--warmup-request-count",
            "2",
        ],
    ))
    .await
    .unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    let s = &out.levels[0].summary;
    // Each request takes about 3 steps (≈ 30 ms): roughly 40 requests in 600 ms with 2 workers.
    assert!(
        s.stats.request_count >= 10 && s.stats.request_count < 200,
        "{} requests",
        s.stats.request_count
    );
    assert!(
        elapsed < 5.0,
        "the window, not --num-prompts, bounds the level ({elapsed:.1}s)"
    );
    assert_eq!(s.stats.warmup_count, 2);
    let rows = rows(&out.levels[0].dir);
    assert_eq!(rows.iter().filter(|r| r["phase"] == "warmup").count(), 2);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_counted_by_kind_and_artifacts_stay_consistent() {
    for (faults, kind) in [
        (
            FaultConfig {
                error_rate: 0.25,
                ..FaultConfig::default()
            },
            "http_500",
        ),
        (
            FaultConfig {
                cut_rate: 0.25,
                ..FaultConfig::default()
            },
            "stream_cut",
        ),
        (
            FaultConfig {
                malformed_rate: 0.25,
                ..FaultConfig::default()
            },
            "malformed_response",
        ),
    ] {
        let sim = start(SimConfig {
            engine: EngineConfig::instant(),
            faults,
            ..SimConfig::default()
        })
        .await;
        let tmp = tempfile::tempdir().unwrap();
        let out = profile(&args(&[
            "-m",
            "gpt2",
            "--endpoint-type",
            "chat",
            "--streaming",
            "-u",
            &sim.http_url(),
            "--synthetic-input-tokens-mean",
            "20",
            "--output-tokens-mean",
            "10",
            "--request-count",
            "8",
            "--concurrency",
            "2",
            "--artifact-dir",
            &tmp.path().display().to_string(),
        ]))
        .await
        .unwrap();
        let s = &out.levels[0].summary;
        assert_eq!(s.stats.error_count, 2, "{kind}: {:?}", s.stats.errors);
        assert_eq!(s.stats.request_count, 6, "{kind}");
        assert_eq!(s.stats.errors[0].kind, kind);
        let rows = measured(&out.levels[0].dir);
        assert_eq!(rows.len(), 8);
        assert_eq!(rows.iter().filter(|r| r["error"] == kind).count(), 2);
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.levels[0].dir.join("profile_export_genai_perf.json"))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(json["error_count"]["avg"], 2);
        assert_eq!(json["request_count"]["avg"], 6);
        sim.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_faults_cut_and_unavailable() {
    let sim = start(SimConfig {
        engine: EngineConfig::instant(),
        faults: FaultConfig {
            cut_rate: 0.5,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--streaming",
        "-u",
        &sim.grpc_target(),
        "--synthetic-input-tokens-mean",
        "20",
        "--output-tokens-mean",
        "10",
        "--request-count",
        "6",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    let s = &out.levels[0].summary;
    assert_eq!(s.stats.error_count, 3, "{:?}", s.stats.errors);
    assert_eq!(s.stats.errors[0].kind, "stream_cut");
    sim.shutdown().await;

    let sim = start(SimConfig {
        engine: EngineConfig::instant(),
        faults: FaultConfig {
            unavailable: true,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--streaming",
        "-u",
        &sim.grpc_target(),
        "--output-tokens-mean",
        "10",
        "--request-count",
        "4",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    assert!(out.all_failed());
    assert_eq!(
        out.levels[0].summary.stats.errors[0].kind,
        "grpc_unavailable"
    );
    assert_eq!(
        measured(&out.levels[0].dir).len(),
        4,
        "failed requests are written too"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_model_lists_the_models() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    for (endpoint, url) in [
        ("chat", sim.http_url()),
        ("generate", sim.http_url()),
        ("kserve", sim.grpc_target()),
    ] {
        let e = profile(&args(&[
            "-m",
            "llama",
            "--endpoint-type",
            endpoint,
            "-u",
            &url,
            "--artifact-dir",
            &tmp.path().display().to_string(),
        ]))
        .await
        .unwrap_err();
        assert!(
            e.contains("'llama'") && e.contains("gpt2") && e.contains("vllm_model"),
            "{endpoint}: {e}"
        );
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_backend_names_the_inputs() {
    let sim = start_round().await;
    let e = profile(&args(&[
        "-m",
        "vllm_model",
        "--backend",
        "tensorrtllm",
        "--streaming",
        "-u",
        &sim.grpc_target(),
    ]))
    .await
    .unwrap_err();
    assert!(
        e.contains("sampling_parameters") && e.contains("--backend vllm"),
        "{e}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_hint_and_never_written() {
    let sim = start(SimConfig {
        engine: EngineConfig::instant(),
        api_key: Some("sk-test-secret-123".into()),
        access_token: Some("tok-secret-456".into()),
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let e = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--artifact-dir",
        &dir,
    ]))
    .await
    .unwrap_err();
    assert!(e.contains("401") && e.contains("--api-key"), "{e}");
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--api-key",
        "sk-test-secret-123",
        "--output-tokens-mean",
        "4",
        "--request-count",
        "3",
        "--artifact-dir",
        &dir,
    ]))
    .await
    .unwrap();
    assert_eq!(out.levels[0].summary.stats.request_count, 3);
    // The statistics API is behind an access token: with the header, the server view is there.
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--streaming",
        "-u",
        &sim.grpc_target(),
        "-H",
        "triton-access-token: tok-secret-456",
        "--output-tokens-mean",
        "4",
        "--request-count",
        "3",
        "--artifact-dir",
        &dir,
    ]))
    .await
    .unwrap();
    let server = out.levels[0]
        .summary
        .server
        .as_ref()
        .expect("stats readable with the token");
    assert_eq!(server.requests, 3);
    let text = all_text(tmp.path());
    assert!(
        !text.contains("sk-test-secret-123") && !text.contains("tok-secret-456"),
        "a secret reached the artifacts"
    );
    assert!(text.contains("triton-access-token: <redacted>"));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_asked_but_server_sends_one_body() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    // The non-streaming generate route answers with one JSON body.
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "generate",
        "--endpoint",
        "v2/models/gpt2/generate",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--output-tokens-mean",
        "4",
        "--request-count",
        "2",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    let s = &out.levels[0].summary;
    assert_eq!(s.stats.error_count, 2);
    assert_eq!(s.stats.errors[0].kind, "not_streaming");
    assert!(
        s.stats.errors[0]
            .hint
            .as_deref()
            .unwrap_or("")
            .contains("--streaming")
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_a_clear_failure() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for endpoint in ["chat", "kserve"] {
        let e = profile(&args(&[
            "-m",
            "gpt2",
            "--endpoint-type",
            endpoint,
            "-u",
            &format!("127.0.0.1:{port}"),
        ]))
        .await
        .unwrap_err();
        assert!(
            e.contains("127.0.0.1") && (e.contains("refused") || e.contains("connect")),
            "{endpoint}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenizer_file_and_input_file() {
    use std::io::{Read, Write};
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    // A tokenizer.json on disk: the built-in one, unpacked.
    let gz = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/gpt2-tokenizer.json.gz"
    ))
    .unwrap();
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut json)
        .unwrap();
    let tk_path = tmp.path().join("tokenizer.json");
    std::fs::write(&tk_path, &json).unwrap();
    // Two prompts from a JSONL file; the second has 9 tokens (" the" × 9 under GPT-2).
    let prompts = tmp.path().join("prompts.jsonl");
    let mut f = std::fs::File::create(&prompts).unwrap();
    writeln!(f, "{{\"text\": \"Hello world\"}}").unwrap();
    writeln!(f).unwrap();
    writeln!(f, "{{\"text\": \"{}\"}}", " the".repeat(9)).unwrap();
    drop(f);
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--tokenizer",
        tk_path.to_str().unwrap(),
        "--input-file",
        prompts.to_str().unwrap(),
        "--output-tokens-mean",
        "3",
        "--request-count",
        "4",
        "--artifact-dir",
        &tmp.path().join("out").display().to_string(),
    ]))
    .await
    .unwrap();
    let rows = measured(&out.levels[0].dir);
    let isl: Vec<u64> = rows.iter().map(|r| r["isl"].as_u64().unwrap()).collect();
    assert_eq!(
        isl,
        [2, 9, 2, 9],
        "prompts cycle in file order, counted by the given tokenizer"
    );
    assert!(rows.iter().all(|r| r["osl"] == 3));
    // Bad files are usage errors with a reason.
    std::fs::write(&prompts, "{\"prompt_text\": 1}\n").unwrap();
    let e = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "-u",
        &sim.http_url(),
        "--input-file",
        prompts.to_str().unwrap(),
    ]))
    .await
    .unwrap_err();
    assert!(e.contains("line 1"), "{e}");
    let e = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "-u",
        &sim.http_url(),
        "--tokenizer",
        "/nonexistent/tokenizer.json",
    ]))
    .await
    .unwrap_err();
    assert!(e.contains("tokenizer"), "{e}");
    sim.shutdown().await;
}

/// Coordinated omission: a server that stalls every 4th request for 300 ms, driven open-loop at
/// 20 requests/s with room for one request in flight. Requests scheduled during a stall leave
/// late; their TTFT from the intended send time shows the wait, their TTFT from the actual send
/// does not, and the level says it is not trustworthy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_omission_is_corrected_and_flagged() {
    let sim = start_stalling(0.25, 300).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--synthetic-input-tokens-mean",
        "10",
        "--output-tokens-mean",
        "4",
        "--request-rate",
        "20",
        "--max-inflight",
        "1",
        "--request-count",
        "24",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    let s = &out.levels[0].summary;
    assert_eq!(s.stats.request_count, 24);
    let lag = s.stats.get(Metric::SendLag).unwrap();
    let ttft = s.stats.get(Metric::TimeToFirstToken).unwrap();
    let corrected = s.stats.get(Metric::TimeToFirstTokenIntended).unwrap();
    assert!(
        lag.max >= 200.0,
        "requests behind a stall leave late: max lag {} ms",
        lag.max
    );
    assert!(
        corrected.p99 >= 200.0,
        "corrected TTFT shows the wait: p99 {} ms",
        corrected.p99
    );
    assert!(
        ttft.p50 < 100.0,
        "uncorrected TTFT hides it: p50 {} ms",
        ttft.p50
    );
    assert!(corrected.avg > ttft.avg + 50.0);
    assert!(!s.validity.trustworthy);
    assert!(
        s.validity
            .reasons
            .iter()
            .any(|r| r.contains("--max-inflight")),
        "{:?}",
        s.validity.reasons
    );
    // The corrected metrics are in the files of an open-loop level.
    assert!(csv_row(&out.levels[0].dir, "time_to_first_token_from_intended").is_some());
    assert!(csv_row(&out.levels[0].dir, "send_lag").is_some());
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.levels[0].dir.join("profile_export_genai_perf.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["validity"]["trustworthy"], false);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_timeout_counts_and_finishes() {
    let sim = start_stalling(0.5, 3_000).await;
    let tmp = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--output-tokens-mean",
        "4",
        "--request-count",
        "6",
        "--concurrency",
        "2",
        "--request-timeout",
        "0.4",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    assert!(
        started.elapsed().as_secs_f64() < 2.5,
        "stalled requests never hold the run"
    );
    let s = &out.levels[0].summary;
    assert_eq!(s.stats.error_count, 3, "{:?}", s.stats.errors);
    assert_eq!(s.stats.errors[0].kind, "timeout");
    assert_eq!(
        measured(&out.levels[0].dir)
            .iter()
            .filter(|r| r["error"] == "timeout")
            .count(),
        3
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeline_rows_are_written_per_level() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--output-tokens-mean",
        "3",
        "--duration",
        "1",
        "--timeline-interval",
        "0.25",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    let text = std::fs::read_to_string(out.levels[0].dir.join("timeline.csv")).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(rows.len() >= 4, "{text}");
    let total: u64 = rows
        .iter()
        .map(|r| r.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(total >= out.levels[0].summary.stats.request_count, "{text}");
    sim.shutdown().await;
}

/// Issue 15.12: when a time window ends with requests still in flight, the level's live view
/// says it is draining them (instead of a clock running past the window); issue 14.2: the view
/// is fed by the engine itself and leaves one final line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_view_says_draining_after_the_window() {
    use ttftbench::engine::live::{Display, LiveView};
    use ttftbench::engine::{LevelSpec, Policy, Sinks, measure_level};
    use ttftbench::load::{Interrupt, LevelLength};
    use ttftbench::report::live::DRAINING;
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    // 100 tokens at 10 ms a step: each request takes about a second, the window 300 ms.
    let mut a = base(
        &["-m", "gpt2", "--endpoint-type", "chat"],
        sim.http_url(),
        tmp.path(),
    );
    let i = a.iter().position(|x| x == "--output-tokens-mean").unwrap();
    a[i + 1] = "100".into();
    let plan = plan(&a).unwrap();
    let mut session = ttftbench::engine::session::prepare_llm(&plan, Interrupt::new(), None)
        .await
        .unwrap();
    let out = SharedBuf::default();
    let every = std::time::Duration::from_millis(100);
    let view = LiveView::to_writer(Display::Plain, Some(1), Box::new(out.clone()), every);
    let mut sinks = Sinks {
        live: Some(view),
        ..Sinks::default()
    };
    let spec = LevelSpec {
        isl_edges: &[],
        stimulus: ttftbench::load::Stimulus::Concurrency(2),
        policy: Policy::Fixed(LevelLength::Window(std::time::Duration::from_millis(300))),
        warmup: None,
        objectives: &[],
        max_send_lag_ms: 2.0,
        streaming: true,
        percentile_method: plan.percentile_method,
        on_pass: None,
        index: 0,
        start_at: None,
        own_line: false,
    };
    let m = measure_level(&mut session, &spec, &mut sinks)
        .await
        .unwrap();
    assert!(
        m.summary.stats.request_count >= 2,
        "the in-flight requests finished"
    );
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("level 1/1 concurrency2 at ")
                && l.contains(" in flight, ")
                && l.ends_with(DRAINING)),
        "{text}"
    );
    let last = lines.last().unwrap();
    let done = format!(
        "{} requests, 0 errors, TTFT p50 ",
        m.summary.stats.request_count
    );
    assert!(
        last.starts_with("level 1/1 concurrency2 done in ") && last.contains(&done),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "plain lines carry no escapes: {text:?}"
    );
    sim.shutdown().await;
}

/// A reasoning model over the chat endpoint, streamed, in both servers' field names: TTFO (the
/// first answer token) comes after TTFT (the first reasoning token), the reasoning tokens are the
/// simulator's (its usage says how many), OSL counts them too, and the files and the console
/// carry the new metrics. The plain model of the same run shape has none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_models_split_ttfo_and_reasoning_tokens() {
    let sim = start_round().await;
    for model in ["reasoning_vllm", "reasoning_sglang"] {
        let tmp = tempfile::tempdir().unwrap();
        let mut a = base(
            &["-m", model, "--endpoint-type", "chat"],
            sim.http_url(),
            tmp.path(),
        );
        // 40 tokens asked for: the simulator's default 32 reasoning tokens, then 8 of answer.
        let at = a.iter().position(|x| x == "12").unwrap();
        a[at] = "40".into();
        let at = a.iter().position(|x| x == "6").unwrap();
        a[at] = "3".into();
        let out = profile(&a).await.unwrap();
        let level = &out.levels[0];
        let s = &level.summary.stats;
        assert_eq!(s.error_count, 0, "{model}: {:?}", s.errors);
        let ttft = s.get(Metric::TimeToFirstToken).unwrap();
        let ttfo = s
            .get(Metric::TimeToFirstOutputToken)
            .expect("TTFO measured");
        // 32 reasoning tokens at one per 10 ms step stand between them (medians: one first
        // token late on a busy machine must not decide it).
        assert!(
            ttfo.p50 > ttft.p50 + 32.0 * ITL_MS * 0.8,
            "{model}: TTFO {ttfo:?} vs TTFT {ttft:?}"
        );
        let reasoning = s
            .get(Metric::ReasoningTokenCount)
            .expect("reasoning counted");
        assert_eq!(
            (reasoning.min, reasoning.max, reasoning.count),
            (32.0, 32.0, 3)
        );
        assert_eq!(s.get(Metric::OutputSequenceLength).unwrap().avg, 40.0);
        for row in measured(&level.dir) {
            assert_eq!(row["reasoning_tokens"], 32, "{row}");
            assert_eq!(row["server_reasoning_tokens"], 32, "usage's details: {row}");
            assert_eq!(row["osl"], 40, "OSL includes the reasoning: {row}");
            assert_eq!(row["server_osl"], 40, "{row}");
            let (ft, fo) = (
                row["ttft_ms"].as_f64().unwrap(),
                row["ttfo_ms"].as_f64().unwrap(),
            );
            assert!(fo > ft, "{row}");
            assert!(row["first_output_token_ns"].as_u64() > row["first_token_ns"].as_u64());
        }
        let (avg, _) = csv_row(&level.dir, "time_to_first_output_token").expect("TTFO row");
        assert!((avg - ttfo.avg).abs() < 0.01);
        let (avg, _) = csv_row(&level.dir, "reasoning_token_count").expect("reasoning row");
        assert_eq!(avg, 32.0);
        let json = json_file(&level.dir.join("profile_export_genai_perf.json"));
        assert_eq!(json["reasoning_token_count"]["avg"], 32.0);
        assert_eq!(json["reasoning_token_count"]["unit"], "tokens");
        assert_eq!(json["time_to_first_output_token"]["unit"], "ms");
        let table = ttftbench::report::console::sweep_table(std::slice::from_ref(&level.summary));
        assert!(
            table.contains("TTFO avg (ms)") && table.contains("32.0"),
            "{table}"
        );
    }
    // A model without reasoning: no new rows, keys or columns.
    let tmp = tempfile::tempdir().unwrap();
    let mut a = base(
        &["-m", "gpt2", "--endpoint-type", "chat"],
        sim.http_url(),
        tmp.path(),
    );
    let at = a.iter().position(|x| x == "6").unwrap();
    a[at] = "2".into();
    let out = profile(&a).await.unwrap();
    let level = &out.levels[0];
    assert!(
        level
            .summary
            .stats
            .get(Metric::TimeToFirstOutputToken)
            .is_none()
    );
    assert!(
        level
            .summary
            .stats
            .get(Metric::ReasoningTokenCount)
            .is_none()
    );
    for row in measured(&level.dir) {
        let o = row.as_object().unwrap();
        assert!(
            !o.contains_key("ttfo_ms") && !o.contains_key("reasoning_tokens"),
            "{row}"
        );
        assert!(!o.contains_key("first_output_token_ns"), "{row}");
        assert!(!o.contains_key("server_reasoning_tokens"), "{row}");
    }
    let csv = std::fs::read_to_string(level.dir.join("profile_export_genai_perf.csv")).unwrap();
    assert!(
        !csv.contains("output_token,") && !csv.contains("reasoning"),
        "{csv}"
    );
    let json = json_file(&level.dir.join("profile_export_genai_perf.json"));
    assert!(json.get("time_to_first_output_token").is_none());
    let table = ttftbench::report::console::sweep_table(std::slice::from_ref(&level.summary));
    assert!(!table.contains("TTFO"), "{table}");
    sim.shutdown().await;
}
