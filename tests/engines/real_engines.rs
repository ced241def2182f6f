//! `profile` against the real engines: vLLM 0.32 (CPU) and llama.cpp's `llama-server`, each
//! serving a tiny random-weight model, started by `scripts/engines/{vllm,llamacpp}/start.sh`
//! and found through the env files those write (`TTFTBENCH_VLLM_ENV`, `TTFTBENCH_LLAMACPP_ENV`;
//! default `target/vllm.env`, `target/llamacpp.env`). Without an engine a test prints
//! `skipped: <reason>` and passes, unless `TTFTBENCH_REQUIRE_ENGINES=1`, where it fails.
//!
//! What is checked: the engine view of a level against the engine's own `/metrics` read before
//! and after the run (every family the view reads is there, and the level's numbers are within
//! the engine's whole-run deltas: another client of the same engine only adds to those); vLLM's
//! request times add up (prefill + decode = inference); `--tokenizer-from-server` makes the
//! input counts agree with vLLM's usage; llama.cpp's per-response `timings` reach every record
//! and add up to its page's decode counter; its verdict says what it cannot tell.

use crate::common;

use common::{Engine, args, engine, get_text, http_client, measured, same_figure};
use ttftbench::metrics::Metric;
use ttftbench::server_metrics::ServerKind;
use ttftbench::server_metrics::engines::{EngineSample, sample_from_text};

/// The engine's sample now, from its own page.
async fn sample(e: &Engine) -> EngineSample {
    let page = get_text(&http_client(), &e.metrics_url()).await;
    sample_from_text(&page, None, Some(&e.model)).expect("the engine's families")
}

/// A short streaming chat level against `e`, with its page read as the server view.
async fn run(
    e: &Engine,
    concurrency: &str,
    requests: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> Result<ttftbench::profile::Outcome, String> {
    let (url, metrics, dir) = (e.base_url(), e.metrics_url(), dir.display().to_string());
    let mut a = vec![
        "--endpoint-type",
        "chat",
        "-m",
        &e.model,
        "-u",
        &url,
        "--streaming",
        "--concurrency",
        concurrency,
        "--request-count",
        requests,
        "--num-prompts",
        requests,
        "--synthetic-input-tokens-mean",
        "64",
        "--output-tokens-mean",
        "16",
        "--output-tokens-mean-deterministic",
        "--server-metrics-url",
        &metrics,
        "--artifact-dir",
        &dir,
    ];
    a.extend(extra);
    let argv = args(&a);
    let run = common::profile(&argv);
    match tokio::time::timeout(std::time::Duration::from_secs(300), run).await {
        Ok(r) => r,
        Err(_) => panic!("{} did not finish within 300 s", e.name),
    }
}

fn sum(rows: &[serde_json::Value], key: &str) -> f64 {
    rows.iter().map(|r| r[key].as_f64().unwrap_or(0.0)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_engine_view_against_its_own_metrics() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(engine) = engine("vllm") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let before = sample(&engine).await;
    let out = run(&engine, "2", "8", tmp.path(), &["--tokenizer-from-server"])
        .await
        .expect("profile runs");
    let after = sample(&engine).await;
    let l = &out.levels[0].summary;
    let e = l.engine.as_ref().expect("vLLM's view");
    eprintln!("vLLM level view: {e:#?}");
    assert_eq!(e.kind, ServerKind::Vllm);
    assert!(e.model_matched);
    // Within what the engine itself counted over the whole run.
    let whole = |f: fn(&EngineSample) -> Option<f64>| f(&after).unwrap() - f(&before).unwrap();
    let requests = e.requests.expect("request_success");
    assert!(
        requests >= 8.0 && requests <= whole(|s| s.requests),
        "{requests}"
    );
    let rows = measured(&out.levels[0].dir);
    let (isl, osl) = (sum(&rows, "server_isl"), sum(&rows, "server_osl"));
    assert_eq!(osl, 8.0 * 16.0);
    let prompt = e.prompt_tokens.unwrap();
    assert!(
        prompt >= isl && prompt <= whole(|s| s.prompt_tokens),
        "{prompt} vs {isl}"
    );
    let generated = e.generation_tokens.unwrap();
    assert!(generated >= osl && generated <= whole(|s| s.generation_tokens));
    // Every family the view reads is on the real page.
    assert!(e.waiting.is_some() && e.running.is_some() && e.kv_usage.is_some());
    assert!(e.preemptions.is_some());
    let p = e.prefix_cache.expect("prefix_cache_queries/hits");
    assert!(p.queried.unwrap() >= isl, "{p:?}");
    let ttft = e.server_ttft.expect("time_to_first_token_seconds");
    assert!(ttft.count >= 8.0);
    let (q, pf, d, inf, e2e) = (
        e.avg_queue_s.unwrap(),
        e.avg_prefill_s.unwrap(),
        e.avg_decode_s.unwrap(),
        e.avg_inference_s.unwrap(),
        e.avg_e2e_s.unwrap(),
    );
    // vLLM's own intervals: prefill and decode make up inference, queue and inference e2e.
    assert!((pf + d - inf).abs() < 0.002, "{pf} + {d} vs {inf}");
    assert!(q + inf <= e2e + 0.002, "{q} + {inf} vs {e2e}");
    let split = e.split().expect("a split");
    assert_eq!(
        split.queue_source,
        ttftbench::server_metrics::split::QueueSource::Engine
    );
    // The server's clock inside the client's.
    let net = l.network_and_client_ttft_ms().unwrap();
    assert!(net > -5.0, "client TTFT minus vLLM's: {net} ms");
    // vLLM's /tokenize counts as its usage does.
    assert_eq!((l.stats.isl_compared, l.stats.isl_mismatch), (8, 0));
    assert!(
        l.stats.get(Metric::ServerPrefillTime).is_none(),
        "no timings"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_engine_view_and_timings_against_its_own_metrics() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(engine) = engine("llamacpp") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let before = sample(&engine).await;
    // More clients than slots: some wait for one.
    let out = run(&engine, "6", "12", tmp.path(), &[])
        .await
        .expect("profile runs");
    let after = sample(&engine).await;
    let l = &out.levels[0].summary;
    let e = l.engine.as_ref().expect("llama.cpp's view");
    eprintln!("llama.cpp level view: {e:#?}");
    assert_eq!(e.kind, ServerKind::LlamaCpp);
    assert!(e.requests_from_client && e.requests == Some(12.0), "{e:?}");
    let parallel = engine
        .vars
        .get("TTFTBENCH_LLAMACPP_ARGS")
        .and_then(|a| a.split("--parallel ").nth(1))
        .and_then(|n| n.split_whitespace().next()?.parse().ok());
    if parallel.is_some() {
        assert_eq!(e.slots, parallel, "/slots lists one object a slot");
    }
    assert!(e.waiting.is_some() && e.running.is_some());
    // Every response carried its timings, and they add up to the page's counters.
    let rows = measured(&out.levels[0].dir);
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r["server_prefill_ms"].is_f64()));
    let decode_s = sum(&rows, "server_decode_ms") / 1e3;
    let page_decode = e.decode_total_s.expect("tokens_predicted_seconds_total");
    let whole_decode = after.decode_sum_s.unwrap() - before.decode_sum_s.unwrap();
    assert!(
        page_decode >= decode_s - 0.001 && page_decode <= whole_decode + 1e-9,
        "responses' {decode_s} s, level's {page_decode} s, run's {whole_decode} s"
    );
    let prompt = sum(&rows, "server_prompt_tokens") + sum(&rows, "server_cached_tokens");
    assert!(e.prompt_tokens.unwrap() >= prompt, "{e:?}");
    let cache = e.prefix_cache.expect("cached vs processed prompt tokens");
    assert!(
        cache.hits >= sum(&rows, "server_cached_tokens"),
        "{cache:?}"
    );
    // Per request the client's TTFT holds the server's prompt time.
    for r in &rows {
        let (ttft, prefill) = (
            r["ttft_ms"].as_f64().unwrap(),
            r["server_prefill_ms"].as_f64().unwrap(),
        );
        assert!(
            ttft >= prefill - 1.0,
            "TTFT {ttft} ms < prompt_ms {prefill}"
        );
    }
    let prefill = l.stats.get(Metric::ServerPrefillTime).unwrap();
    let page_prefill = e.avg_prefill_s.map(|s| s * 1e3);
    assert!(
        same_figure(page_prefill, Some(prefill.avg)),
        "{page_prefill:?} vs {}",
        prefill.avg
    );
    assert!(e.split().is_some());
    let text = out.verdict.lines.join("\n");
    assert!(
        text.contains(ttftbench::analysis::verdict::LLAMACPP_NOTE),
        "{text}"
    );
    // llama.cpp's /tokenize is not vLLM's: the flag is refused before any load.
    let Err(err) = run(&engine, "1", "2", tmp.path(), &["--tokenizer-from-server"]).await else {
        panic!("--tokenizer-from-server against llama.cpp went ahead");
    };
    assert!(
        err.contains("--tokenizer-from-server") && err.contains("not vLLM's /tokenize"),
        "{err}"
    );
}

#[test]
fn env_files_read_as_the_start_scripts_write_them() {
    let _one = crate::ONE_AT_A_TIME.blocking_lock();
    let vars = common::read_env_file(
        "# written by scripts/engines/llamacpp/start.sh\nexport TTFTBENCH_LLAMACPP_URL=127.0.0.1:60747\nexport TTFTBENCH_LLAMACPP_ARGS='--alias tiny-gpt2 --parallel 4'\nexport TTFTBENCH_LLAMACPP_VERSION=\"0.5.0-dev\"\n",
    );
    assert_eq!(vars["TTFTBENCH_LLAMACPP_URL"], "127.0.0.1:60747");
    assert_eq!(
        vars["TTFTBENCH_LLAMACPP_ARGS"],
        "--alias tiny-gpt2 --parallel 4"
    );
    assert_eq!(vars["TTFTBENCH_LLAMACPP_VERSION"], "0.5.0-dev");
    assert_eq!(vars.len(), 3);
}
