//! The newer APIs against the simulator (issue 31), each end to end through the binary:
//! embeddings, rankings (Cohere/Jina, TEI and NIM layouts, GenAI-Perf's input files), OpenAI
//! Responses and Anthropic Messages streamed (reasoning, the key and version headers), tool
//! calls and images with chat, Responses and Messages. Each writes its CSV, JSON, raw export and
//! report.html, passes and fails an `--slo` on one of the new metrics, and `compare` shows that
//! metric across two runs. The simulator's faults and delays apply to the new routes as to the
//! others; bad input is refused with exit 2 and the flag to fix.

use crate::common;

use std::path::Path;

use common::{Tee, args, avg, json_file, run_bin, start, start_round};
use serde_json::Value;
use ttftbench::sim::{EngineConfig, FaultConfig, SimConfig};

/// `profile` flags against `url` into `dir`: `api_flags`, two levels (concurrency 1 and 2) of
/// 8 requests, short prompts, the raw export in full, then `extra`. (The raw export keeps each
/// answer as a JSON string: look for words in it, not quoted keys.)
fn sweep(url: &str, dir: &Path, api_flags: &[&str], extra: &[&str]) -> Vec<String> {
    let mut a = args(&[
        "profile",
        "-u",
        url,
        "--synthetic-input-tokens-mean",
        "20",
        "--concurrency",
        "1,2",
        "--request-count",
        "8",
        "--raw-export",
        "full",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    a.extend(args(api_flags));
    a.extend(args(extra));
    a
}

/// The level directories of a sweep, in load order.
fn level_dirs(sweep_dir: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(sweep_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("profile_export_genai_perf.json").exists())
        .collect();
    dirs.sort();
    dirs
}

/// What an end-to-end run of one API checks.
struct Case<'a> {
    /// `-m` and the API's own flags.
    flags: &'a [&'a str],
    /// A new metric the run has: its key in the CSV and JSON, an `--slo` it meets and one it
    /// cannot.
    metric: &'a str,
    slo_pass: &'a str,
    slo_fail: &'a str,
    /// Text the raw export must hold (the server's answers, kept whole).
    raw: &'a str,
    /// A column the report's level table has.
    column: &'a str,
}

/// Runs `case` twice (the second with an SLO it fails: exit 1), checks the files of every level
/// (CSV, JSON, raw export, requests.jsonl) and report.html, and compares the two runs. Returns
/// the first run's level JSONs.
async fn end_to_end(url: &str, tmp: &Path, case: &Case<'_>) -> Vec<Value> {
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    let slo = ["--slo", case.slo_pass];
    let (code, stdout, stderr) = run_bin(&sweep(url, &a, case.flags, &slo), &[]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("SLO PASS {}", case.slo_pass)),
        "{stderr}"
    );
    let mut docs = Vec::new();
    for dir in level_dirs(&a) {
        let doc = json_file(&dir.join("profile_export_genai_perf.json"));
        assert_eq!(avg(&doc, "error_count"), 0.0, "{}: {doc}", dir.display());
        assert_eq!(avg(&doc, "request_count"), 8.0, "{}", dir.display());
        assert!(avg(&doc, case.metric).is_finite(), "{}: {doc}", case.metric);
        let csv = std::fs::read_to_string(dir.join("profile_export_genai_perf.csv")).unwrap();
        assert!(
            csv.lines()
                .any(|l| l.starts_with(&format!("{},", case.metric))),
            "{csv}"
        );
        let raw = std::fs::read_to_string(dir.join("profile_export.json")).unwrap();
        assert!(
            raw.contains(case.raw),
            "{}: {}",
            case.raw,
            &raw[..raw.len().min(2000)]
        );
        assert_eq!(common::measured(&dir).len(), 8, "{}", dir.display());
        docs.push(doc);
    }
    assert_eq!(docs.len(), 2, "two levels in {}", a.display());
    let html = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(
        html.contains(case.column),
        "{} not in report.html",
        case.column
    );

    let slo = ["--slo", case.slo_fail];
    let (code, stdout, stderr) = run_bin(&sweep(url, &b, case.flags, &slo), &[]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("SLO FAIL"), "{stderr}");
    let cmp = args(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let (code, stdout, stderr) = run_bin(&cmp, &[]).await;
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    // A row per level (a busy machine may add regressions, listed again below the table).
    for level in ["concurrency1", "concurrency2"] {
        let row = |l: &&str| l.starts_with(level) && l.contains(case.metric);
        assert!(
            stdout.lines().any(|l| row(&l)),
            "{level} {}:\n{stdout}",
            case.metric
        );
    }
    docs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_end_to_end() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let flags = [
        "-m",
        "gpt2",
        "--endpoint-type",
        "embeddings",
        "--batch-size-text",
        "3",
    ];
    let docs = end_to_end(
        &sim.http_url(),
        tmp.path(),
        &Case {
            flags: &flags,
            metric: "input_throughput",
            slo_pass: "input_throughput>=1",
            slo_fail: "input_throughput>=1000000",
            raw: "embedding",
            column: "Inputs/s",
        },
    )
    .await;
    for doc in &docs {
        // Three texts a request, each answered; no tokens come back.
        assert_eq!(avg(doc, "input_count"), 24.0, "{doc}");
        assert!(avg(doc, "input_token_throughput") > avg(doc, "input_throughput"));
        assert_eq!(avg(doc, "output_token_throughput"), 0.0, "{doc}");
    }
    let rows = common::measured(&level_dirs(&tmp.path().join("a"))[0]);
    assert!(rows.iter().all(|r| r["inputs"] == 3), "{:?}", rows[0]);
    sim.shutdown().await;
}

/// GenAI-Perf's rankings input: a directory of queries and passages.
fn rankings_dir(root: &Path) -> std::path::PathBuf {
    let dir = root.join("rankings");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = |prefix: &str, n: usize| -> String {
        (0..n)
            .map(|i| format!("{{\"text\": \"{prefix} {i} about the weather in town\"}}\n"))
            .collect()
    };
    std::fs::write(dir.join("queries.jsonl"), lines("query", 4)).unwrap();
    std::fs::write(dir.join("passages.jsonl"), lines("passage", 10)).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rankings_end_to_end() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let input = rankings_dir(tmp.path());
    let input = input.to_str().unwrap();
    let flags = [
        "-m",
        "gpt2",
        "--endpoint-type",
        "rankings",
        "--batch-size-text",
        "5",
        "--input-file",
        input,
    ];
    let docs = end_to_end(
        &sim.http_url(),
        tmp.path(),
        &Case {
            flags: &flags,
            metric: "input_token_throughput",
            slo_pass: "input_token_throughput>=1",
            slo_fail: "input_token_throughput>=100000000",
            raw: "relevance_score",
            column: "Input tok/s",
        },
    )
    .await;
    for doc in &docs {
        assert_eq!(
            avg(doc, "input_count"),
            40.0,
            "five passages a request: {doc}"
        );
    }
    sim.shutdown().await;
}

/// TEI's `/rerank` (`texts`, a bare list of scores) and NIM's `/v1/ranking` (`query.text`,
/// `passages`, `rankings[].logit`), and a file of rows with their own passages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rankings_layouts_and_row_files() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let rows = tmp.path().join("rows.jsonl");
    std::fs::write(
        &rows,
        "{\"query\": \"q one\", \"passages\": [\"a\", \"b\", \"c\"]}\n{\"query\": \"q two\", \"documents\": [\"d\", \"e\"]}\n",
    )
    .unwrap();
    for (layout, input, want_inputs, needle) in [
        ("tei", None, 8.0, "score"),
        ("nim", None, 8.0, "logit"),
        ("rerank", Some(&rows), 10.0, "relevance_score"),
    ] {
        let dir = tmp.path().join(layout);
        let mut a = args(&[
            "-m",
            "gpt2",
            "-u",
            &sim.http_url(),
            "--endpoint-type",
            "rankings",
            "--rankings-api",
            layout,
            "--batch-size-text",
            "2",
            "--request-count",
            "4",
            "--raw-export",
            "full",
            "--artifact-dir",
            dir.to_str().unwrap(),
        ]);
        if let Some(f) = input {
            a.extend(args(&["--input-file", f.to_str().unwrap()]));
        }
        let out = common::profile(&a).await.expect(layout);
        let doc = json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
        assert_eq!(avg(&doc, "error_count"), 0.0, "{layout}: {doc}");
        // Rows files send each row's own passages: 3 + 2, twice.
        assert_eq!(avg(&doc, "input_count"), want_inputs, "{layout}: {doc}");
        let raw = std::fs::read_to_string(out.levels[0].dir.join("profile_export.json")).unwrap();
        assert!(raw.contains(needle), "{layout}: {needle}");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_end_to_end_with_tools() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let tools = tmp.path().join("tools.json");
    std::fs::write(&tools, common::TOOLS_JSON).unwrap();
    let tools = tools.to_str().unwrap();
    let flags = [
        "-m",
        "gpt2",
        "--endpoint-type",
        "responses",
        "--streaming",
        "--output-tokens-mean",
        "8",
        "--tools",
        tools,
        "--tool-choice",
        "required",
    ];
    let docs = end_to_end(
        &sim.http_url(),
        tmp.path(),
        &Case {
            flags: &flags,
            metric: "tool_call_share",
            slo_pass: "tool_call_share>=99%",
            slo_fail: "tool_call_share<=1%",
            raw: "response.function_call_arguments.delta",
            column: "Tool calls",
        },
    )
    .await;
    for doc in &docs {
        assert_eq!(avg(doc, "tool_call_share"), 1.0, "{doc}");
        assert_eq!(avg(doc, "tool_args_valid_share"), 1.0, "{doc}");
        // The call's arguments are the output: the first tool token is the first token.
        assert_eq!(
            avg(doc, "time_to_first_tool_token"),
            avg(doc, "time_to_first_token"),
            "{doc}"
        );
    }
    sim.shutdown().await;
}

/// Anthropic Messages with the key from `ANTHROPIC_API_KEY`: sent as `x-api-key` with
/// `anthropic-version` to the target (which requires both), never to the metrics port, and in no
/// file. Tool calls are timed from their first `input_json_delta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_end_to_end_with_key_and_tools() {
    const KEY: &str = "sk-ant-sim-31-secret";
    let sim = start(SimConfig {
        engine: common::round_engine(),
        api_key: Some(KEY.to_string()),
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let tools = tmp.path().join("tools.json");
    std::fs::write(&tools, common::TOOLS_JSON).unwrap();
    let tools = tools.to_str().unwrap();
    let out = tmp.path().join("runs");
    std::fs::create_dir_all(&out).unwrap();
    let flags = [
        "-m",
        "gpt2",
        "--endpoint-type",
        "messages",
        "--streaming",
        "--output-tokens-mean",
        "8",
        "--tools",
        tools,
        "--tool-choice",
        "search",
    ];
    // run_bin has no environment of its own: the key goes in through the process's.
    let key_env = [("ANTHROPIC_API_KEY", Path::new(KEY))];
    let (a, b) = (out.join("a"), out.join("b"));
    // The first run through relays, to see what went to the target and to the metrics port.
    let (target, metrics) = (Tee::start(sim.http_addr), Tee::start(sim.metrics_addr));
    let metrics_url = format!("http://{}/metrics", metrics.addr);
    let sla = [
        "--slo",
        "time_to_first_tool_token.p99<=30s",
        "--server-metrics-url",
        &metrics_url,
    ];
    let (code, o, e) = run_bin(&sweep(&target.addr, &a, &flags, &sla), &key_env).await;
    assert_eq!(code, 0, "{o}{e}");
    let to_target = target.all_sent().to_ascii_lowercase();
    assert!(
        to_target.contains(&format!("x-api-key: {KEY}")),
        "no x-api-key"
    );
    assert!(
        to_target.contains("anthropic-version: 2023-06-01"),
        "no version"
    );
    let to_metrics = metrics.all_sent();
    assert!(to_metrics.contains("GET /metrics"), "{to_metrics}");
    assert!(
        !to_metrics.contains(KEY),
        "the key went to the metrics port"
    );
    let slb = ["--slo", "time_to_first_tool_token.p99<=0.001ms"];
    let (code, o, e) = run_bin(&sweep(&sim.http_url(), &b, &flags, &slb), &key_env).await;
    assert_eq!(code, 1, "{o}{e}");
    for dir in level_dirs(&a) {
        let doc = json_file(&dir.join("profile_export_genai_perf.json"));
        assert_eq!(avg(&doc, "error_count"), 0.0, "{doc}");
        assert_eq!(avg(&doc, "tool_call_share"), 1.0, "{doc}");
        assert!(avg(&doc, "time_to_first_tool_token") > 0.0, "{doc}");
        let raw = std::fs::read_to_string(dir.join("profile_export.json")).unwrap();
        assert!(raw.contains("input_json_delta"), "{}", dir.display());
    }
    assert!(
        std::fs::read_to_string(a.join("report.html"))
            .unwrap()
            .contains("Tool calls")
    );
    let cmp = args(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let (_, stdout, _) = run_bin(&cmp, &[]).await;
    assert!(stdout.contains("time_to_first_tool_token.p99"), "{stdout}");
    assert!(
        !common::all_text(&out).contains(KEY),
        "the key reached a file"
    );

    // Without the key, or without the version header, the simulator refuses as Anthropic does.
    let c = common::http_client();
    let body = r#"{"model":"gpt2","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}"#;
    let url = format!("{}/v1/messages", sim.http_url());
    let no_version = c.post(&url).header("x-api-key", KEY).body(body).send();
    let r = no_version.await.unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("\"type\":\"error\"") && text.contains("anthropic-version"),
        "{text}"
    );
    let no_key = c
        .post(&url)
        .header("anthropic-version", "2023-06-01")
        .body(body);
    let r = no_key.send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.text().await.unwrap().contains("authentication_error"));
    sim.shutdown().await;
}

/// A reasoning model behind Responses and Messages: its leading tokens arrive as reasoning
/// (`response.reasoning_text.delta`, `thinking_delta`), timed apart from the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_streams_are_timed_as_reasoning() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    for api in ["responses", "messages"] {
        let dir = tmp.path().join(api);
        let a = args(&[
            "-m",
            "reasoning_vllm",
            "-u",
            &sim.http_url(),
            "--endpoint-type",
            api,
            "--streaming",
            "--output-tokens-mean",
            "40",
            "--request-count",
            "4",
            "--artifact-dir",
            dir.to_str().unwrap(),
        ]);
        let out = common::profile(&a).await.expect(api);
        let doc = json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
        assert_eq!(avg(&doc, "error_count"), 0.0, "{api}: {doc}");
        assert!(avg(&doc, "reasoning_token_count") > 0.0, "{api}: {doc}");
        assert!(
            avg(&doc, "time_to_first_output_token") > avg(&doc, "time_to_first_token"),
            "{api}: the answer comes after the reasoning: {doc}"
        );
        // The usage event's output tokens were read.
        let rows = common::measured(&out.levels[0].dir);
        assert!(
            rows.iter().all(|r| r["server_osl"] == 40),
            "{api}: {:?}",
            rows[0]
        );
    }
    sim.shutdown().await;
}

/// Tools with chat: `required` makes every request call one (arguments that parse, streamed as
/// `tool_calls` deltas), `none` makes none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_tool_calls() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let tools = tmp.path().join("tools.json");
    std::fs::write(&tools, common::TOOLS_JSON).unwrap();
    for (choice, share) in [("required", 1.0), ("none", 0.0)] {
        let dir = tmp.path().join(choice);
        let a = common::chat_args(
            &sim.http_url(),
            &dir,
            &[
                "--tools",
                tools.to_str().unwrap(),
                "--tool-choice",
                choice,
                "--output-tokens-mean",
                "6",
                "--request-count",
                "6",
            ],
        );
        let out = common::profile(&a).await.expect(choice);
        let doc = json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
        assert_eq!(avg(&doc, "error_count"), 0.0, "{choice}: {doc}");
        assert_eq!(avg(&doc, "tool_call_share"), share, "{choice}: {doc}");
        let rows = common::measured(&out.levels[0].dir);
        let called = rows.iter().filter(|r| r["tool_calls"] == 1).count();
        assert_eq!(called as f64, share * 6.0, "{choice}: {:?}", rows[0]);
    }
    sim.shutdown().await;
}

/// Runs `api` streamed against `url` with `extra` flags into `dir` (4 requests, seeded prompts
/// without a salt so two runs send the same text); returns the level's directory.
async fn image_run(url: &str, dir: &Path, api: &str, extra: &[String]) -> std::path::PathBuf {
    let mut a = args(&[
        "-m",
        "gpt2",
        "-u",
        url,
        "--endpoint-type",
        api,
        "--streaming",
        "--prompt-salt",
        "none",
        "--output-tokens-mean",
        "4",
        "--request-count",
        "4",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    a.extend(extra.iter().cloned());
    let out = common::profile(&a).await.expect(api);
    out.levels[0].dir.clone()
}

/// Each request's input tokens by the server's count, in prompt order.
fn server_isl(dir: &Path) -> Vec<u64> {
    let mut rows = common::measured(dir);
    rows.sort_by_key(|r| r["prompt_index"].as_u64());
    rows.iter()
        .map(|r| r["server_isl"].as_u64().unwrap())
        .collect()
}

/// Synthetic images (two a request) with chat, Responses and Messages: counted with their bytes
/// in the files, and each adds the simulator's vision tokens (one per 28×28 pixels: 4 for a
/// 56×56 image) to the server's input count; a directory's images are sent as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_with_chat_responses_and_messages() {
    let sim = start_round().await;
    let url = sim.http_url();
    let tmp = tempfile::tempdir().unwrap();
    let synthetic = args(&[
        "--image-width-mean",
        "56",
        "--image-height-mean",
        "56",
        "--image-format",
        "png",
        "--batch-size-image",
        "2",
    ]);
    for api in ["chat", "responses", "messages"] {
        let plain = image_run(&url, &tmp.path().join(api).join("plain"), api, &[]).await;
        let with = image_run(&url, &tmp.path().join(api).join("img"), api, &synthetic).await;
        let doc = json_file(&with.join("profile_export_genai_perf.json"));
        assert_eq!(avg(&doc, "error_count"), 0.0, "{api}: {doc}");
        assert_eq!(avg(&doc, "image_count"), 8.0, "{api}: {doc}");
        assert!(avg(&doc, "image_bytes") > 8.0 * 60.0, "{api}: {doc}");
        let (p, w) = (server_isl(&plain), server_isl(&with));
        assert!(
            p.len() == 4 && p.iter().zip(&w).all(|(p, w)| w - p == 8),
            "{api}: two 56x56 images add 8 tokens: {p:?} {w:?}"
        );
        let rows = common::measured(&with);
        assert!(
            rows.iter().all(|r| r["images"] == 2),
            "{api}: {:?}",
            rows[0]
        );
    }
    // A directory of images, sent in name order, one a request.
    let pics = tmp.path().join("pics");
    std::fs::create_dir_all(&pics).unwrap();
    for (i, side) in [28u32, 84].into_iter().enumerate() {
        let f = ttftbench::workload::images::ImageFormat::Jpeg;
        let img = ttftbench::workload::images::draw(side, side, f, i as u64);
        std::fs::write(pics.join(format!("{i}.jpg")), &img.bytes).unwrap();
    }
    let from_dir = args(&["--image-dir", pics.to_str().unwrap()]);
    let with = image_run(&url, &tmp.path().join("dir"), "chat", &from_dir).await;
    let doc = json_file(&with.join("profile_export_genai_perf.json"));
    assert_eq!(avg(&doc, "error_count"), 0.0, "{doc}");
    assert_eq!(avg(&doc, "image_count"), 4.0, "{doc}");
    sim.shutdown().await;
}

/// The simulator's error and cut faults and its stall delay hit the new routes as they hit
/// chat: failed requests are counted as errors, a stall delays the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_and_delays_on_the_new_routes() {
    let sim = start(SimConfig {
        engine: EngineConfig::instant(),
        faults: FaultConfig {
            error_rate: 0.3,
            cut_rate: 0.2,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    for api in ["embeddings", "rankings", "responses", "messages"] {
        let dir = tmp.path().join(api);
        let mut a = args(&[
            "-m",
            "gpt2",
            "-u",
            &sim.http_url(),
            "--endpoint-type",
            api,
            "--request-count",
            "40",
            "--max-error-rate",
            "100%",
            "--artifact-dir",
            dir.to_str().unwrap(),
        ]);
        if api == "responses" || api == "messages" {
            a.extend(args(&["--streaming", "--output-tokens-mean", "4"]));
        }
        let out = common::profile(&a).await.expect(api);
        let doc = json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
        let errors = avg(&doc, "error_count");
        assert!(
            (4.0..=36.0).contains(&errors),
            "{api}: {errors} of 40 failed"
        );
        assert!(avg(&doc, "request_count") > 0.0, "{api}");
    }
    sim.shutdown().await;

    let sim = common::start_stalling(1.0, 300).await;
    let dir = tmp.path().join("stalled");
    let a = args(&[
        "-m",
        "gpt2",
        "-u",
        &sim.http_url(),
        "--endpoint-type",
        "embeddings",
        "--request-count",
        "2",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    let out = common::profile(&a).await.expect("stalled");
    let doc = json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
    assert!(
        doc["request_latency"]["min"].as_f64().unwrap() >= 300.0,
        "{doc}"
    );
    sim.shutdown().await;
}

fn p(f: &Path) -> String {
    f.to_str().unwrap().to_string()
}

/// Bad input is refused before anything is sent (exit 2), naming the flag and the fix; a
/// Messages endpoint answering with OpenAI's error body fails the run (exit 1) saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_names_the_flag_and_the_fix() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let url = sim.http_url();
    let no_passages = tmp.path().join("rk");
    std::fs::create_dir_all(&no_passages).unwrap();
    std::fs::write(no_passages.join("queries.jsonl"), "{\"text\": \"q\"}\n").unwrap();
    let empty_row = tmp.path().join("rows.jsonl");
    std::fs::write(&empty_row, "{\"query\": \"q\"}\n").unwrap();
    let no_images = tmp.path().join("empty");
    std::fs::create_dir_all(&no_images).unwrap();
    std::fs::write(no_images.join("notes.txt"), "not an image").unwrap();
    let bad_tools = tmp.path().join("tools.json");
    std::fs::write(&bad_tools, r#"{"name": "search"}"#).unwrap();
    let (no_passages, empty_row) = (p(&no_passages), p(&empty_row));
    let (no_images, bad_tools) = (p(&no_images), p(&bad_tools));
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--endpoint-type", "embeddings", "--streaming"],
            vec!["--streaming", "drop --streaming"],
        ),
        (
            vec!["--endpoint-type", "rankings", "--input-file", &no_passages],
            vec!["--input-file", "passages.jsonl"],
        ),
        (
            vec!["--endpoint-type", "rankings", "--input-file", &empty_row],
            vec!["--input-file", "\"passages\""],
        ),
        (
            vec!["--endpoint-type", "chat", "--image-dir", &no_images],
            vec!["--image-dir", "--image-width-mean"],
        ),
        (
            vec!["--endpoint-type", "chat", "--tools", &bad_tools],
            vec![
                "--tools",
                "list of tool definitions",
                "\"type\": \"function\"",
            ],
        ),
    ];
    for (flags, want) in cases {
        let mut a = args(&["profile", "-m", "gpt2", "-u", &url, "--request-count", "2"]);
        a.extend(args(&flags));
        a.extend(args(&[
            "--artifact-dir",
            tmp.path().join("out").to_str().unwrap(),
        ]));
        let (code, _, stderr) = run_bin(&a, &[]).await;
        assert_eq!(code, 2, "{flags:?}: {stderr}");
        for w in want {
            assert!(stderr.contains(w), "{flags:?}: {w:?} not in {stderr}");
        }
    }
    // A Messages client pointed at an OpenAI route: the OpenAI error body is named as such.
    let mut a = args(&["profile", "-m", "gpt2", "-u", &url, "--request-count", "2"]);
    a.extend(args(&[
        "--endpoint-type",
        "messages",
        "--endpoint",
        "v1/responses",
        "--streaming",
        "--artifact-dir",
        tmp.path().join("msg").to_str().unwrap(),
    ]));
    let (code, _, stderr) = run_bin(&a, &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("OpenAI-style error body"), "{stderr}");
    assert!(stderr.contains("--endpoint-type chat"), "{stderr}");
    sim.shutdown().await;
}
