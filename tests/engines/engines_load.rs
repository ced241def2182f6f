//! Load against the real engines of the tests and CI (vLLM's CPU build and llama.cpp's
//! llama-server with tiny local models, started by `scripts/test.sh`): ladders of every API
//! shape end with 0 errors (llama-server closes its connection after every stream); sessions
//! whose think time is longer than the server's keep-alive; cancellation; shared prefixes seen
//! in the engine's own prefix-cache counters; an agentic session file replayed with its
//! history's blocks found again by vLLM's prefix cache; the server's token counts. Each test skips with
//! its reason when its engine is not running, and fails then under `TTFTBENCH_REQUIRE_ENGINES=1`.

use crate::common;

use common::{Engine, avg, engine, engine_metric};

/// Runs `profile` against `e`, asking for exactly `tokens` output tokens a request, with
/// `extra` flags; returns each level's JSON (a ladder's in order).
async fn run(
    e: &Engine,
    tokens: &str,
    extra: &[&str],
) -> (tempfile::TempDir, Vec<serde_json::Value>) {
    let mut flags = vec![
        "--output-tokens-mean",
        tokens,
        "--output-tokens-mean-deterministic",
        "--extra-inputs",
        "ignore_eos:true",
    ];
    flags.extend(extra);
    let (tmp, levels) = common::profile_engine(e, &flags).await;
    (tmp, levels.into_iter().map(|(_, doc)| doc).collect())
}

/// Chat and completions, streamed and not, at concurrency 1, 4, 16 and 64: nothing fails.
async fn ladders(e: &Engine) {
    for api in ["chat", "completions"] {
        for streaming in [true, false] {
            let mut flags = vec!["--endpoint-type", api, "--concurrency", "1,4,16,64"];
            flags.extend(["--request-count", "64"]);
            if streaming {
                flags.push("--streaming");
            }
            let (_tmp, docs) = run(e, "12", &flags).await;
            for (doc, c) in docs.iter().zip([1, 4, 16, 64]) {
                let what = format!("{} {api} streaming={streaming} c={c}", e.name);
                assert_eq!(avg(doc, "error_count"), 0.0, "{what}: {}", doc["errors"]);
                assert_eq!(avg(doc, "request_count"), 64.0, "{what}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_ladders_end_without_errors() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("vllm") {
        ladders(&e).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_ladders_end_without_errors() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("llamacpp") {
        ladders(&e).await;
    }
}

/// Sessions whose think time (6 s) outlasts both servers' keep-alive (5 s): the idle connection
/// is closed under them, and no turn fails.
async fn sessions(e: &Engine) {
    let (_tmp, docs) = run(
        e,
        "12",
        &[
            "--endpoint-type",
            "chat",
            "--streaming",
            "--concurrency",
            "2",
            "--num-sessions",
            "2",
            "--session-turns-mean",
            "3",
            "--session-turn-delay-mean",
            "6000",
        ],
    )
    .await;
    assert_eq!(
        avg(&docs[0], "error_count"),
        0.0,
        "{}: {}",
        e.name,
        docs[0]["errors"]
    );
    assert_eq!(avg(&docs[0], "request_count"), 6.0, "{}", e.name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_outlast_the_keep_alive() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    for name in ["vllm", "llamacpp"] {
        if let Some(e) = engine(name) {
            sessions(&e).await;
        }
    }
}

/// A third of the requests cancelled 30 ms in: counted apart, none an error, and the server's
/// running requests back to none afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_frees_the_engines() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    for (name, running) in [
        ("vllm", "vllm:num_requests_running"),
        ("llamacpp", "llamacpp:requests_processing"),
    ] {
        let Some(e) = engine(name) else { continue };
        let (tmp, docs) = run(
            &e,
            "100",
            &[
                "--endpoint-type",
                "chat",
                "--streaming",
                "--concurrency",
                "4",
                "--request-count",
                "24",
                "--request-cancellation-rate",
                "33",
                "--request-cancellation-delay",
                "30ms",
            ],
        )
        .await;
        let doc = &docs[0];
        assert_eq!(avg(doc, "error_count"), 0.0, "{name}: {}", doc["errors"]);
        // The requests seed 0 chooses (9 of the 24) are cancelled, or were read to their end
        // within the 30 ms by the client's clock; no other request is. A client held up past the
        // deadline (this 2-core VM pauses processes for up to 1.7 s beside vLLM) still gives up:
        // before, the response waiting in the socket was read first and all 9 went through.
        let chooser = common::plan(&common::args(&[
            "-m",
            &e.model,
            "--request-cancellation-rate",
            "33",
            "--request-cancellation-delay",
            "30ms",
        ]))
        .unwrap()
        .cancellation()
        .expect("cancellation on");
        let rows = common::rows(&tmp.path().join("c4"));
        assert_eq!(rows.len(), 24, "{name}");
        let mut cancelled = 0;
        for r in &rows {
            let seq = r["seq"].as_u64().unwrap();
            let gave_up = r["error"] == "request_cancelled";
            if gave_up {
                assert!(chooser.chosen(seq), "{name}: {r}");
            } else if chooser.chosen(seq) {
                assert!(r["latency_ms"].as_f64().unwrap() <= 30.0, "{name}: {r}");
            }
            cancelled += u64::from(gave_up);
        }
        assert!(
            cancelled >= 1,
            "{name}: none of the chosen requests took 30 ms"
        );
        assert_eq!(avg(doc, "cancelled_count"), cancelled as f64, "{name}");
        assert_eq!(avg(doc, "request_count"), (24 - cancelled) as f64, "{name}");
        let mut left = f64::NAN;
        for _ in 0..50 {
            left = engine_metric(&e, running).await;
            if left == 0.0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(left, 0.0, "{name}: {running} after the run");
    }
}

/// One shared 600-token system prompt in front of every request: the engine's own counters see
/// prefix-cache hits (vLLM caches whole 128-token blocks on CPU; llama.cpp reuses a slot's
/// cached prompt).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_prefixes_hit_the_engines_caches() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    for (name, hits) in [
        ("vllm", "vllm:prefix_cache_hits_total"),
        ("llamacpp", "llamacpp:prompt_tokens_cached_total"),
    ] {
        let Some(e) = engine(name) else { continue };
        let before = engine_metric(&e, hits).await;
        let (_tmp, docs) = run(
            &e,
            "12",
            &[
                "--endpoint-type",
                "chat",
                "--streaming",
                "--concurrency",
                "2",
                "--request-count",
                "16",
                "--num-prefix-prompts",
                "1",
                "--prefix-prompt-length",
                "600",
            ],
        )
        .await;
        assert_eq!(avg(&docs[0], "error_count"), 0.0, "{name}");
        let gained = engine_metric(&e, hits).await - before;
        assert!(gained >= 600.0, "{name}: {hits} grew by {gained}");
    }
}

/// An agentic session file against vLLM: a planner whose 220-word system prompt every turn
/// sends again spawns two sub-agents, joins them after a tool's result and forks a reviewer
/// (the task of docs/sessions.md). All 7 requests succeed with the live answers in their
/// histories, the task completes, and vLLM's prefix cache finds the history's blocks again
/// between the session's turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentic_sessions_replay_with_prefix_hits() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(e) = engine("vllm") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let system = "You are a careful coding agent that plans before it edits. ".repeat(20);
    let file = tmp.path().join("agent.jsonl");
    let lines = [
        serde_json::json!({"agent": "planner", "system": system, "turns": [
            {"user": "The test parse_dates fails. Plan the fix.", "spawn": ["reader", "runner"]},
            {"tool": "grep", "result": "src/dates.rs:41: let day = parts[0].parse()?;", "tool_ms": 40},
            {"user": "Write the patch.", "think_ms": 100, "fork": "reviewer"}]}),
        serde_json::json!({"agent": "reader", "turns": [{"user": "Read src/dates.rs."},
            {"tool": "read_file", "result": "fn parse_dates(s: &str) -> Result<Date>", "tool_ms": 25}]}),
        serde_json::json!({"agent": "runner", "turns": [{"user": "Run the failing test.",
            "tool": "cargo_test", "result": "test parse_dates ... FAILED", "tool_ms": 200}]}),
        serde_json::json!({"agent": "reviewer", "turns": [{"user": "Review the patch."}]}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let hits = "vllm:prefix_cache_hits_total";
    let before = engine_metric(&e, hits).await;
    let out = common::profile(&common::args(&[
        "-m",
        &e.model,
        "-u",
        &e.url,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--input-file",
        file.to_str().unwrap(),
        "--output-tokens-mean",
        "12",
        "--output-tokens-mean-deterministic",
        "--extra-inputs",
        "ignore_eos:true",
        "--artifact-dir",
        tmp.path().join("out").to_str().unwrap(),
    ]))
    .await
    .unwrap();
    let doc = common::json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
    assert_eq!(avg(&doc, "error_count"), 0.0, "{}", doc["errors"]);
    assert_eq!(avg(&doc, "request_count"), 7.0);
    let s = &doc["sessions"];
    assert_eq!(
        (&s["completed"], &s["tool_round_trips_avg"]),
        (&1.into(), &3.0.into())
    );
    // The turns before a tool's result offered it by name: vLLM called it, and took the
    // histories answering those calls (0 errors above).
    let rows = common::measured(&out.levels[0].dir);
    let called = rows.iter().filter(|r| r["tool_calls"] == 1).count();
    assert!(called >= 2, "{called} of the offers were called");
    // The planner's 3 turns and the reviewer's fork resend its ~300-token history.
    let gained = engine_metric(&e, hits).await - before;
    assert!(gained >= 256.0, "{hits} grew by {gained}");
}

/// `--use-server-token-count`: the output counts are the servers' own (`usage`), 12 a request
/// as asked for with ignore_eos.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_token_counts() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    for name in ["vllm", "llamacpp"] {
        let Some(e) = engine(name) else { continue };
        let (_tmp, docs) = run(
            &e,
            "12",
            &[
                "--endpoint-type",
                "chat",
                "--streaming",
                "--concurrency",
                "2",
                "--request-count",
                "8",
                "--use-server-token-count",
            ],
        )
        .await;
        let osl = &docs[0]["output_sequence_length"];
        assert_eq!(avg(&docs[0], "error_count"), 0.0, "{name}");
        assert_eq!(
            (osl["min"].as_f64(), osl["max"].as_f64()),
            (Some(12.0), Some(12.0)),
            "{name}: {osl}"
        );
    }
}
