//! The newer APIs against the real engines (issue 31): embeddings and rankings against vLLM's
//! pooling servers (`scripts/engines/vllm/start.sh --variant embed|rerank`) and llama-server's
//! (`scripts/engines/llamacpp/start.sh --variant embed|rerank`), Responses and Messages streamed
//! from both, tool calls from vLLM (its generate server runs with a tool-call parser; llama-server
//! answers tools only with `--jinja` and a template that has them). Images are left out: neither
//! tiny model here has a vision encoder. Each
//! test skips with its reason when its server is not running, and fails then under
//! `TTFTBENCH_REQUIRE_ENGINES=1`.

use crate::common;

use common::{Engine, avg, engine};
use serde_json::Value;

/// Runs `profile` against `e` with `extra` flags at concurrency 1 and 4, 16 requests a level;
/// returns each level's directory and JSON.
async fn run(e: &Engine, extra: &[&str]) -> (tempfile::TempDir, Vec<(std::path::PathBuf, Value)>) {
    let mut flags = vec!["--concurrency", "1,4", "--request-count", "16"];
    flags.extend(extra);
    common::profile_engine(e, &flags).await
}

/// Every level answered all 16 requests without a client or transport error. The random-weight
/// models sometimes pick end-of-sequence as their first token, and an answer without text is
/// counted as `no_content`: the engine's outcome, allowed here (at most 2 of 16), never a
/// connection or parse error.
fn all_answered(levels: &[(std::path::PathBuf, Value)], what: &str) {
    for (dir, doc) in levels {
        let at = format!("{what} ({})", dir.display());
        let kinds = doc["errors"].as_array().cloned().unwrap_or_default();
        let empty: f64 = kinds
            .iter()
            .filter(|k| k["kind"] == "no_content")
            .filter_map(|k| k["count"].as_f64())
            .sum();
        assert_eq!(avg(doc, "error_count"), empty, "{at}: {}", doc["errors"]);
        assert!(empty <= 2.0, "{at}: {}", doc["errors"]);
        assert_eq!(avg(doc, "request_count") + empty, 16.0, "{at}");
    }
}

/// Embeddings or rankings in batches of 4: every input answered (64 a level), inputs/s and
/// input tokens/s written, the raw export holding the server's answers.
async fn batches(e: &Engine, api: &str, answer_key: &str) {
    let (_tmp, levels) = run(
        e,
        &[
            "--endpoint-type",
            api,
            "--batch-size-text",
            "4",
            "--raw-export",
            "full",
        ],
    )
    .await;
    all_answered(&levels, &format!("{} {api}", e.name));
    for (dir, doc) in &levels {
        assert_eq!(avg(doc, "input_count"), 64.0, "{}", dir.display());
        assert!(avg(doc, "input_throughput") > 0.0, "{doc}");
        assert!(avg(doc, "input_token_throughput") > 0.0, "{doc}");
        let raw = std::fs::read_to_string(dir.join("profile_export.json")).unwrap();
        assert!(
            raw.contains(answer_key),
            "{}: no {answer_key}",
            dir.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_embeddings() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("vllm-embed") {
        batches(&e, "embeddings", "embedding").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_embeddings() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("llamacpp-embed") {
        batches(&e, "embeddings", "embedding").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_rankings() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("vllm-rerank") {
        batches(&e, "rankings", "relevance_score").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_rankings() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("llamacpp-rerank") {
        batches(&e, "rankings", "relevance_score").await;
    }
}

/// A streamed generative API: no errors, TTFT and ITL measured, the server's own output token
/// count read from its usage event. ITL is checked against each request's own token times, not
/// for being above zero: on a busy 2-core host vLLM's API process falls behind its engine and
/// sends a whole answer in one write (every delta arrives in one read, `first_token_ns ==
/// last_token_ns`), and then 0 is the true gap (it failed CI that way at c=1).
async fn streamed(e: &Engine, api: &str) {
    let (_tmp, levels) = run(
        e,
        &[
            "--endpoint-type",
            api,
            "--streaming",
            "--output-tokens-mean",
            "16",
        ],
    )
    .await;
    all_answered(&levels, &format!("{} {api}", e.name));
    for (dir, doc) in &levels {
        assert!(avg(doc, "time_to_first_token") > 0.0, "{}", dir.display());
        assert!(avg(doc, "inter_token_latency") >= 0.0, "{}", dir.display());
        let rows = common::measured(dir);
        assert!(
            rows.iter()
                .all(|r| r["server_osl"].as_u64().unwrap_or(0) > 0),
            "{}: the usage event's output tokens were not read",
            dir.display()
        );
        for r in rows.iter().filter(|r| r["itl_ms"].is_number()) {
            let n = |k: &str| r[k].as_u64().unwrap_or(0);
            let span_ms = n("last_token_ns").saturating_sub(n("first_token_ns")) as f64 / 1e6;
            let expected = span_ms / (n("osl") as f64 - 1.0);
            let itl = r["itl_ms"].as_f64().unwrap_or(f64::NAN);
            assert!((itl - expected).abs() < 1e-3, "{}: {r}", dir.display());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_responses() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("vllm") {
        streamed(&e, "responses").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_messages() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("vllm") {
        streamed(&e, "messages").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_responses() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("llamacpp") {
        streamed(&e, "responses").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_messages() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    if let Some(e) = engine("llamacpp") {
        streamed(&e, "messages").await;
    }
}

/// Chat, Responses and Messages with a named `--tool-choice` against vLLM (its generate
/// server runs with a tool-call parser): its structured output makes even the random-weight
/// model call the tool, so every request called one and the first tool-call token was timed.
/// (Whether the arguments parse is the model's business: a random model's rarely do, and
/// `required` lets it answer with no call at all; both are seen, not asserted.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_tool_calls() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(e) = engine("vllm") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let tools = tmp.path().join("tools.json");
    std::fs::write(&tools, common::TOOLS_JSON).unwrap();
    for api in ["chat", "responses", "messages"] {
        let (_out, levels) = run(
            &e,
            &[
                "--endpoint-type",
                api,
                "--streaming",
                "--output-tokens-mean",
                "24",
                "--tools",
                &tools.display().to_string(),
                "--tool-choice",
                "search",
            ],
        )
        .await;
        all_answered(&levels, &format!("vllm {api} tools"));
        for (dir, doc) in &levels {
            assert_eq!(avg(doc, "tool_call_share"), 1.0, "{}", dir.display());
            assert!(avg(doc, "time_to_first_tool_token") > 0.0, "{doc}");
            assert!(avg(doc, "tool_args_valid_share").is_finite(), "{doc}");
        }
    }
}
