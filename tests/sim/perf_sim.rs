//! `ttftbench perf` against the simulator's tensor and LLM models over real sockets: the second
//! article's command lines, perf_analyzer's CSV read by column name, stability windows, batch
//! sizes, both protocols, streaming, and the errors a user needs to see.

use crate::common;

use common::read_csv;
use ttftbench::perf::{PerfOutcome, report};
use ttftbench::sim::{SimConfig, SimHandle};

async fn start() -> SimHandle {
    common::start(SimConfig::default()).await
}

/// `ttftbench perf <args>` in-process (the common runner, with `&str` arguments).
async fn perf(args: &[&str]) -> Result<PerfOutcome, String> {
    common::perf(&common::args(args)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_model_concurrency_sweep_and_csv() {
    let sim = start().await;
    let url = sim.grpc_target();
    // perf_analyzer -m yolov8s --concurrency-range 1:32:2 ... -f latency_vs_concurrency.csv (shortened)
    let out = perf(&[
        "-m",
        "yolov8s",
        "--concurrency-range",
        "1:3:2",
        "--shape",
        "images:3,640,640",
        "--input-data",
        "random",
        "-u",
        &url,
        "--measurement-interval",
        "400",
        "-s",
        "50",
    ])
    .await
    .unwrap();
    assert_eq!(out.levels.len(), 2);
    let csv = report::csv(
        &out.levels,
        report::CsvOptions {
            percentile: None,
            verbose: false,
        },
    );
    let (header, rows) = read_csv(&csv);
    assert_eq!(
        header.join(","),
        "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Throughput,p99 Latency"
    );
    assert_eq!(rows.len(), 2);
    let tput: Vec<f64> = rows
        .iter()
        .map(|r| r["Inferences/Second"].parse().unwrap())
        .collect();
    assert!(tput[0] <= tput[1], "rows sorted by throughput: {tput:?}");
    for r in &rows {
        let p50: u64 = r["p50 latency"].parse().unwrap();
        let p99: u64 = r["p99 latency"].parse().unwrap();
        let infer: u64 = r["Server Compute Infer"].parse().unwrap();
        assert!(p50 > 0 && p99 >= p50, "{r:?}");
        assert!(
            infer >= 2_000,
            "the simulated image model computes for milliseconds (µs column): {r:?}"
        );
    }
    for l in &out.levels {
        // Issue 15.9: the client's send/recv are parts of the request's latency.
        assert!(
            l.avg_send_ns + l.avg_recv_ns <= l.latency.avg,
            "send {} + recv {} within latency {}",
            l.avg_send_ns,
            l.avg_recv_ns,
            l.latency.avg
        );
        let s = l.server.as_ref().expect("statistics read");
        assert_eq!(
            s.success_count, s.inference_count,
            "batch 1: one inference per request"
        );
        assert!(l.windows >= 3);
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_size_multiplies_throughput_and_inferences() {
    let sim = start().await;
    let out = perf(&[
        "-m",
        "resnet_fp16",
        "-b",
        "4",
        "--concurrency-range",
        "2",
        "--input-data",
        "random",
        "-u",
        &sim.grpc_target(),
        "-p",
        "400",
        "-s",
        "50",
    ])
    .await
    .unwrap();
    let l = &out.levels[0];
    let s = l.server.as_ref().unwrap();
    assert_eq!(
        s.inference_count,
        4 * s.success_count,
        "inference_count counts batch elements"
    );
    let e = perf(&[
        "-m",
        "resnet_fp16",
        "-b",
        "32",
        "--input-data",
        "random",
        "-u",
        &sim.grpc_target(),
        "-p",
        "300",
    ])
    .await
    .unwrap_err();
    assert!(e.contains("max_batch_size 16"), "{e}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_binary_json_and_count_windows() {
    let sim = start().await;
    for fmt in ["binary", "json"] {
        let out = perf(&[
            "-m",
            "text_classifier",
            "-i",
            "http",
            "--shape",
            "input_ids:32",
            "--concurrency-range",
            "2",
            "-u",
            &sim.http_url(),
            "--input-tensor-format",
            fmt,
            "--output-tensor-format",
            fmt,
            "--measurement-mode",
            "count_windows",
            "--measurement-request-count",
            "40",
            "-s",
            "60",
        ])
        .await
        .unwrap_or_else(|e| panic!("{fmt}: {e}"));
        let l = &out.levels[0];
        assert!(
            l.request_count >= 120,
            "{fmt}: three windows of 40: {}",
            l.request_count
        );
        assert_eq!(l.error_count, 0, "{fmt}");
        assert!(l.server.is_some(), "{fmt}: HTTP statistics");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_llm_reports_first_response_and_response_throughput() {
    let sim = start().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("prompts.json");
    std::fs::write(
        &data,
        r#"{"data": [{"text_input": ["Hello there"], "max_tokens": [8], "stream": [true]}]}"#,
    )
    .unwrap();
    let out = perf(&[
        "-m",
        "gpt2",
        "--input-data",
        data.to_str().unwrap(),
        "--streaming",
        "--concurrency-range",
        "1",
        "-u",
        &sim.grpc_target(),
        "--async",
        "--request-parameter",
        "max_tokens:256",
        "--request-count",
        "6",
    ])
    .await
    .unwrap();
    let l = &out.levels[0];
    assert_eq!(l.request_count, 6);
    assert!(l.first_response.is_some());
    assert!(!l.whole_responses);
    // 8 tokens per request: responses per second ≈ 8 × requests per second.
    assert!(
        (l.response_throughput / l.throughput - 8.0).abs() < 0.5,
        "{} vs {}",
        l.response_throughput,
        l.throughput
    );
    let csv = report::csv(
        &out.levels,
        report::CsvOptions {
            percentile: None,
            verbose: false,
        },
    );
    assert!(
        csv.starts_with("Concurrency,Inferences/Second,Response Throughput,"),
        "{csv}"
    );
    sim.shutdown().await;
}

/// Issue 39.5: the guide's llama3 command (`--streaming --async --request-parameter
/// max_tokens:256 --request-parameter temperature:0.0`, on the simulator's TensorRT-LLM-style
/// `gpt2`) with a prompts file lacking `"stream": [true]`, and with random data: the model
/// answers each request in one piece, and perf says so instead of reporting its latency as the
/// time to first response (console and JSON), in stability windows as in one window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_asked_of_whole_responses_says_so_and_reports_no_first_response() {
    let sim = start().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("prompts.json");
    std::fs::write(
        &data,
        r#"{"data": [{"text_input": ["Explain what a KV cache is."], "max_tokens": [16]}]}"#,
    )
    .unwrap();
    let url = sim.grpc_target();
    let guide = [
        "-m",
        "gpt2",
        "--streaming",
        "--concurrency-range",
        "1:3:2",
        "-u",
        &url,
        "--async",
        "--request-parameter",
        "max_tokens:256",
        "--request-parameter",
        "temperature:0.0",
    ];
    let dir = tmp.path().join("levels");
    for (input, stop) in [
        (data.to_str().unwrap(), ["--measurement-interval", "500"]),
        ("random", ["--request-count", "6"]),
    ] {
        let mut args = guide.to_vec();
        args.extend(["--input-data", input]);
        args.extend(stop);
        args.extend(["--artifact-dir", dir.to_str().unwrap()]);
        let out = perf(&args).await.unwrap();
        assert_eq!(out.levels.len(), 2, "{input}");
        for l in &out.levels {
            let name = l.stimulus.name();
            assert!(l.request_count > 0 && l.error_count == 0, "{input} {name}");
            assert!(l.streaming && l.whole_responses, "{input} {name}");
            assert_eq!(l.first_response, None, "{input} {name}");
            let text = report::level(l, "gRPC", None);
            assert!(
                text.contains("    Responses not streamed: each request's response came in one piece, so time to first response is its latency and is not reported\n"),
                "{input} {name}: {text}"
            );
            assert!(!text.contains("time to first response:"), "{text}");
            let json = report::json(l);
            assert_eq!(json["first_response_us"], serde_json::Value::Null);
            assert_eq!(json["whole_responses"], true);
            // The level's files (--artifact-dir) have no time to first token either.
            let level = dir.join(&name);
            let doc = common::json_file(&level.join("profile_export_genai_perf.json"));
            assert!(doc["request_latency"].is_object(), "{name}");
            assert_eq!(doc.get("time_to_first_token"), None, "{name}");
            let csv = std::fs::read_to_string(level.join("profile_export_genai_perf.csv")).unwrap();
            assert!(!csv.contains("Time To First Token"), "{name}: {csv}");
        }
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_rate_single_window_with_timeline() {
    let sim = start().await;
    let tmp = tempfile::tempdir().unwrap();
    let timeline = tmp.path().join("t.csv");
    // The guides' soak test (perf_analyzer -m bert_classifier --request-rate-range 100
    // --measurement-interval 86400000 --periodic-concurrency-range 1 -f stability_24h.csv),
    // shortened: no --shape, as bert_classifier's sequence length is fixed.
    let out = perf(&[
        "-m",
        "bert_classifier",
        "--request-rate-range",
        "50",
        "-u",
        &sim.grpc_target(),
        "--measurement-interval",
        "1200",
        "--periodic-concurrency-range",
        "1",
        "--timeline",
        timeline.to_str().unwrap(),
        "--timeline-interval",
        "0.3",
    ])
    .await
    .unwrap();
    let l = &out.levels[0];
    assert!(
        // A busy machine can only lower it; above the asked rate is a pacing bug.
        (25.0..=60.0).contains(&l.throughput),
        "constant 50/s: {}",
        l.throughput
    );
    assert_eq!(l.windows, 1);
    let text = std::fs::read_to_string(&timeline).unwrap();
    assert!(text.lines().count() >= 4, "{text}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstable_level_is_reported() {
    let sim = start().await;
    // A stability tolerance no real measurement meets.
    let out = perf(&[
        "-m",
        "yolov8s",
        "--shape",
        "images:3,640,640",
        "-u",
        &sim.grpc_target(),
        "-p",
        "150",
        "-s",
        "0.0001",
        "-r",
        "3",
    ])
    .await
    .unwrap();
    assert!(!out.levels[0].stable);
    assert_eq!(out.levels[0].windows, 3);
    assert!(
        report::level(&out.levels[0], "gRPC", None)
            .contains("Failed to obtain stable measurement within 3 measurement windows")
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_errors() {
    let sim = start().await;
    let g = sim.grpc_target();
    let cases: &[(&[&str], &str)] = &[
        (&["-m", "nope", "-u", &g], "yolov8s"),
        (
            &["-m", "yolov8s", "-u", &g, "--shape", "image:3,640,640"],
            "no input 'image'",
        ),
        (
            &["-m", "yolov8s", "-u", &g, "--shape", "images:3,320,320"],
            "does not fit",
        ),
        (&["-m", "text_classifier", "-u", &g], "--shape input_ids:N"),
        (&["-m", "yolov8s", "-u", &g, "--streaming"], "not decoupled"),
        // Issue 15.9: a decoupled model without --streaming is refused, as perf_analyzer does.
        (&["-m", "gpt2", "-u", &g], "is decoupled"),
        (&["-m", "gpt2", "-u", &g], "add --streaming"),
    ];
    for (args, needle) in cases {
        let mut a = args.to_vec();
        a.extend(["-p", "200"]);
        let e = perf(&a).await.unwrap_err();
        assert!(e.contains(needle), "{args:?}: expected {needle:?} in {e}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("bad.json");
    std::fs::write(
        &f,
        r#"{"data": [{"images": {"content": [1.0, 2.0], "shape": [3, 640, 640]}}]}"#,
    )
    .unwrap();
    let e = perf(&[
        "-m",
        "yolov8s",
        "-u",
        &g,
        "--input-data",
        f.to_str().unwrap(),
        "-p",
        "200",
    ])
    .await
    .unwrap_err();
    assert!(e.contains("2 values, expected 1228800"), "{e}");
    sim.shutdown().await;
}

/// perf_analyzer -m yolov8s --concurrency-range 8 --latency-report-file latency_report.csv
/// --verbose-csv, shortened: the guides read it for each request's latency, which goes to
/// latency_report.requests.jsonl (one line per measured request, streamed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_csv_writes_every_request() {
    let sim = start().await;
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("latency_report.csv");
    let out = perf(&[
        "-m",
        "yolov8s",
        "--concurrency-range",
        "2",
        "-u",
        &sim.grpc_target(),
        "--request-count",
        "12",
        "--warmup-request-count",
        "3",
        "--latency-report-file",
        report.to_str().unwrap(),
        "--verbose-csv",
    ])
    .await
    .unwrap();
    assert_eq!(out.levels[0].request_count, 12);
    let text = std::fs::read_to_string(tmp.path().join("latency_report.requests.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every request the server saw, warm-up included and marked as such (as in profile's
    // requests.jsonl), then the 12 measured ones.
    assert_eq!(rows.len(), 15, "{text}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["level"], "concurrency2");
        assert_eq!(r["phase"], if i < 3 { "warmup" } else { "measure" }, "{r}");
        assert!(r["latency_ms"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["error"].is_null(), "{r}");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_is_detected_when_not_given() {
    let sim = start().await;
    let out = perf(&[
        "-m",
        "text_classifier",
        "--shape",
        "input_ids:8",
        "-u",
        &sim.grpc_target(),
        "--request-count",
        "5",
    ])
    .await
    .unwrap();
    assert_eq!(out.protocol, ttftbench::perf::plan::Protocol::Grpc);
    let out = perf(&[
        "-m",
        "text_classifier",
        "--shape",
        "input_ids:8",
        "-u",
        &sim.http_url(),
        "--request-count",
        "5",
    ])
    .await
    .unwrap();
    assert_eq!(out.protocol, ttftbench::perf::plan::Protocol::Http);
    assert_eq!(out.levels[0].request_count, 5);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slo_gates_on_throughput_and_latency() {
    let sim = start().await;
    let out = perf(&[
        "-m",
        "text_classifier",
        "--shape",
        "input_ids:8",
        "-u",
        &sim.grpc_target(),
        "--request-count",
        "20",
        "--slo",
        "request_latency.p99<=2000ms",
        "--slo",
        "request_throughput>=1000000",
        "--slo",
        "queue_share<=100%",
    ])
    .await
    .unwrap();
    let r = &out.levels[0].slo;
    assert_eq!(r.len(), 3);
    assert!(r[0].passed, "{:?}", r[0]);
    assert!(
        !r[1].passed,
        "a million inferences per second is out of reach: {:?}",
        r[1]
    );
    assert!(r[2].passed && r[2].actual.is_some(), "{:?}", r[2]);
    sim.shutdown().await;
}

/// `perf --profile-export-file`: perf_analyzer's raw export, one experiment per level, every
/// measured request with its input tensors, response timestamps and output tensors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_export_file_holds_every_measured_request() {
    let sim = start().await;
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("profile_export.json");
    for (proto, url) in [("grpc", sim.grpc_target()), ("http", sim.http_url())] {
        let out = perf(&[
            "-m",
            "text_classifier",
            "-i",
            proto,
            "--shape",
            "input_ids:8",
            "--concurrency-range",
            "1:2",
            "--request-count",
            "12",
            "-u",
            &url,
            "--profile-export-file",
            export.to_str().unwrap(),
        ])
        .await
        .unwrap_or_else(|e| panic!("{proto}: {e}"));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
        assert_eq!(doc["service_kind"], "triton", "{proto}");
        assert_eq!(doc["endpoint"], "", "{proto}");
        let exps = doc["experiments"].as_array().unwrap();
        assert_eq!(
            exps.len(),
            out.levels.len(),
            "{proto}: one experiment per level"
        );
        for (e, level) in exps.iter().zip(&out.levels) {
            assert_eq!(e["experiment"]["mode"], "concurrency");
            let reqs = e["requests"].as_array().unwrap();
            assert_eq!(reqs.len() as u64, level.request_count, "{proto}");
            let w = e["window_boundaries"].as_array().unwrap();
            assert_eq!(w.len(), 2);
            for r in reqs {
                let t0 = r["timestamp"].as_u64().unwrap();
                assert!(w[0].as_u64().unwrap() <= t0, "{proto}: {r}");
                let ts = r["response_timestamps"].as_array().unwrap();
                assert_eq!(ts.len(), 1, "{proto}: one response per request: {r}");
                assert!(ts[0].as_u64().unwrap() > t0);
                // input_ids: 8 integers; the classifier's output: its logits, listed by name.
                let ids = r["request_inputs"]["input_ids"].as_array().unwrap();
                assert_eq!(ids.len(), 8, "{proto}: {r}");
                let out0 = &r["response_outputs"][0];
                assert!(
                    out0.as_object()
                        .unwrap()
                        .values()
                        .any(|v| v.is_array() || v.is_number()),
                    "{proto}: output tensors rendered: {out0}"
                );
            }
        }
    }
    sim.shutdown().await;
}
