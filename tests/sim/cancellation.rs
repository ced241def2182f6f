//! `--request-cancellation-rate P --request-cancellation-delay D` against the simulator: the
//! seeded share of requests is dropped D after its send, counted apart from requests and errors,
//! left out of the statistics; the simulator frees the slots of streams the client left; a
//! cancelled gRPC call keeps its worker's connection, a timed-out one gives it up; rate 0
//! changes nothing; bad values are usage errors.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;
use ttftbench::metrics::Metric;
use ttftbench::sim::{EngineConfig, SimConfig};

/// A chat stream of `osl` tokens per request (one per 10 ms step after a 25 ms first token).
fn chat(url: String, dir: &Path, osl: &str, more: &[&str]) -> Vec<String> {
    let stream = [
        "--synthetic-input-tokens-mean",
        "100",
        "--output-tokens-mean",
        osl,
        "--output-tokens-mean-deterministic",
        "--num-prompts",
        "8",
    ];
    chat_args(&url, dir, &[&stream, more].concat())
}

fn genai_json(dir: &Path) -> Value {
    json_file(&dir.join("profile_export_genai_perf.json"))
}

/// Requests the simulator counted as cancelled by their client (Triton's failure counter).
async fn sim_cancelled(metrics_url: &str) -> u64 {
    let text = get_text(&http_client(), metrics_url).await;
    text.lines()
        .filter(|l| l.starts_with("nv_inference_request_failure{") && l.contains("CANCELED"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// [`sim_cancelled`], polled for up to a second until it reaches `expected` (the server counts
/// a reset stream when it notices it).
async fn sim_cancelled_reaching(metrics_url: &str, expected: u64) -> u64 {
    let mut seen = 0;
    for _ in 0..50 {
        seen = sim_cancelled(metrics_url).await;
        if seen >= expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeded_share_is_cancelled_counted_apart_and_out_of_the_statistics() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    // 30 tokens take ≈ 315 ms; the delay cuts chosen requests after their first token.
    let a = chat(
        sim.http_url(),
        tmp.path(),
        "30",
        &[
            "--concurrency",
            "4",
            "--request-count",
            "40",
            "--request-cancellation-rate",
            "30",
            "--request-cancellation-delay",
            "80ms",
        ],
    );
    let chooser = plan(&a).unwrap().cancellation().expect("cancellation on");
    let out = profile(&a).await.unwrap();
    let level = &out.levels[0];
    let st = &level.summary.stats;
    let rows = measured(&level.dir);
    assert_eq!(rows.len(), 40);
    let mut chosen = 0;
    for r in &rows {
        let seq = r["seq"].as_u64().unwrap();
        let cancelled = r["error"] == "request_cancelled";
        assert_eq!(cancelled, chooser.chosen(seq), "{r}");
        chosen += u64::from(cancelled);
        if cancelled {
            // Dropped at the delay, after the first token and long before the last.
            let ms = (r["end_ns"].as_u64().unwrap() - r["sent_ns"].as_u64().unwrap()) as f64 / 1e6;
            assert!((75.0..250.0).contains(&ms), "cancelled after {ms} ms: {r}");
        } else {
            assert!(r["error"].is_null(), "{r}");
            assert_eq!(r["osl"], 30, "{r}");
        }
    }
    assert!((4..=20).contains(&chosen), "about 30 % of 40: {chosen}");
    assert_eq!(st.cancelled_count, chosen);
    assert_eq!(st.error_count, 0, "{:?}", st.errors);
    assert_eq!(st.request_count, 40 - chosen);
    // Latency comes from the completed requests only: none of them is under 300 ms.
    let latency = st.get(Metric::RequestLatency).unwrap();
    assert!(latency.min >= 290.0, "latency min {} ms", latency.min);
    assert_eq!(
        st.get(Metric::OutputSequenceLength).unwrap().min,
        30.0,
        "no cut-short output in the statistics"
    );
    let json = genai_json(&level.dir);
    assert_eq!(json["cancelled_count"]["avg"], chosen);
    assert_eq!(json["error_count"]["avg"], 0);
    assert_eq!(json["input_config"]["request_cancellation_rate"], 30.0);
    let csv = std::fs::read_to_string(level.dir.join("profile_export_genai_perf.csv")).unwrap();
    assert!(
        csv.contains(&format!("\ncancelled_count,{chosen},count\n")),
        "{csv}"
    );
    // The simulator saw each cancelled stream go (its slot freed; Triton's CANCELED counter).
    let seen = sim_cancelled_reaching(&sim.metrics_url(), chosen).await;
    assert_eq!(seen, chosen);
    // A rerun with the same seed cancels the same requests.
    let again = chooser;
    let tmp2 = tempfile::tempdir().unwrap();
    let b = chat(
        sim.http_url(),
        tmp2.path(),
        "30",
        &[
            "--concurrency",
            "4",
            "--request-count",
            "40",
            "--request-cancellation-rate",
            "30%",
            "--request-cancellation-delay",
            "0.08",
        ],
    );
    assert_eq!(plan(&b).unwrap().cancellation(), Some(again));
    sim.shutdown().await;
}

/// A streamed gRPC run of 30-token requests against `target`, with `more` flags.
fn grpc_run(target: &str, dir: &Path, more: &[&str]) -> Vec<String> {
    let dir = dir.display().to_string();
    let base = [
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--backend",
        "tensorrtllm",
        "--streaming",
        "--synthetic-input-tokens-mean",
        "100",
        "--output-tokens-mean",
        "30",
        "--output-tokens-mean-deterministic",
        "-u",
        target,
        "--artifact-dir",
        &dir,
    ];
    args(&[&base, more].concat())
}

/// 24 requests at concurrency 4, `rate` % of them cancelled 80 ms after their send.
fn cancelling(rate: &str) -> [&str; 8] {
    [
        "--concurrency",
        "4",
        "--request-count",
        "24",
        "--request-cancellation-rate",
        rate,
        "--request-cancellation-delay",
        "80ms",
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_streams_are_reset_and_the_server_sees_them_go() {
    let sim = start_round().await;
    let addr = sim.grpc_target().parse().unwrap();
    // The connections a run opens when nothing is cancelled: the workers' and discovery's.
    let plain = Tee::start(addr);
    let tmp = tempfile::tempdir().unwrap();
    profile(&grpc_run(&plain.addr, tmp.path(), &cancelling("0")))
        .await
        .unwrap();
    let tee = Tee::start(addr);
    let tmp = tempfile::tempdir().unwrap();
    let a = grpc_run(&tee.addr, tmp.path(), &cancelling("40"));
    let chooser = plan(&a).unwrap().cancellation().unwrap();
    let out = profile(&a).await.unwrap();
    let st = &out.levels[0].summary.stats;
    let rows = measured(&out.levels[0].dir);
    let chosen = rows
        .iter()
        .filter(|r| chooser.chosen(r["seq"].as_u64().unwrap()))
        .count() as u64;
    assert!(chosen > 0);
    assert_eq!(st.cancelled_count, chosen);
    assert_eq!(st.error_count, 0, "{:?}", st.errors);
    assert_eq!(st.request_count, 24 - chosen);
    let seen = sim_cancelled_reaching(&sim.metrics_url(), chosen).await;
    assert_eq!(
        seen, chosen,
        "the server counted each reset stream as cancelled"
    );
    // A cancelled call resets its stream and its worker goes on on the same connection.
    assert_eq!(
        tee.connections(),
        plain.connections(),
        "{chosen} cancelled calls changed how many connections were opened"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_grpc_call_gives_up_its_connection() {
    let one_by_one = ["--concurrency", "1", "--request-count", "4"];
    let healthy = start_round().await;
    let plain = Tee::start(healthy.grpc_target().parse().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    profile(&grpc_run(&plain.addr, tmp.path(), &one_by_one))
        .await
        .unwrap();
    // Half the requests stall for 3 s before they reach the engine; the client waits 0.4 s.
    let stalling = start_stalling(0.5, 3_000).await;
    let tee = Tee::start(stalling.grpc_target().parse().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    let timeout = ["--request-timeout", "0.4"];
    let out = profile(&grpc_run(
        &tee.addr,
        tmp.path(),
        &[&one_by_one[..], &timeout].concat(),
    ))
    .await
    .unwrap();
    let mut rows = measured(&out.levels[0].dir);
    rows.sort_by_key(|r| r["seq"].as_u64());
    let timed_out: Vec<bool> = rows.iter().map(|r| r["error"] == "timeout").collect();
    assert!(timed_out.contains(&true), "{rows:?}");
    // Each timed-out call but the last request's is followed by a request on a new connection.
    let reconnects = timed_out[..timed_out.len() - 1]
        .iter()
        .filter(|t| **t)
        .count();
    assert_eq!(
        tee.connections(),
        plain.connections() + reconnects,
        "timeouts {timed_out:?}"
    );
    healthy.shutdown().await;
    stalling.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_streams_free_their_slots() {
    // Two slots, two workers, long generations: a cancelled stream that kept its slot would
    // make the worker's next request queue behind it for ≈ 400 ms.
    let sim = start(SimConfig {
        engine: EngineConfig {
            max_batch: 2,
            ..round_engine()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let a = chat(
        sim.http_url(),
        tmp.path(),
        "40",
        &[
            "--concurrency",
            "2",
            "--request-count",
            "16",
            "--request-cancellation-rate",
            "50",
            "--request-cancellation-delay",
            "40ms",
        ],
    );
    let out = profile(&a).await.unwrap();
    let st = &out.levels[0].summary.stats;
    assert!(st.cancelled_count >= 3, "{}", st.cancelled_count);
    assert_eq!(st.error_count, 0, "{:?}", st.errors);
    let ttft = st.get(Metric::TimeToFirstToken).unwrap();
    assert!(
        ttft.max < 200.0,
        "TTFT max {} ms: a slot stayed held",
        ttft.max
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_zero_changes_nothing_and_a_fast_response_is_not_cancelled() {
    let sim = start_round().await;
    for more in [
        &["--request-cancellation-rate", "0"][..],
        // Every request chosen, but each completes (≈ 35 ms) well before 5 s.
        &[
            "--request-cancellation-rate",
            "100",
            "--request-cancellation-delay",
            "5",
        ][..],
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut m = vec!["--concurrency", "2", "--request-count", "6"];
        m.extend_from_slice(more);
        let out = profile(&chat(sim.http_url(), tmp.path(), "2", &m))
            .await
            .unwrap();
        let st = &out.levels[0].summary.stats;
        assert_eq!(
            (st.request_count, st.cancelled_count, st.error_count),
            (6, 0, 0)
        );
        let dir = &out.levels[0].dir;
        assert_eq!(genai_json(dir)["cancelled_count"]["avg"], 0);
        let csv = std::fs::read_to_string(dir.join("profile_export_genai_perf.csv")).unwrap();
        assert!(!csv.contains("cancelled_count"), "{csv}");
    }
    sim.shutdown().await;
}

#[test]
fn bad_values_are_usage_errors() {
    let base = ["-m", "m", "-u", "localhost:1"];
    for (flag, value) in [
        ("--request-cancellation-rate", "150"),
        ("--request-cancellation-rate", "-5"),
        ("--request-cancellation-rate", "ten"),
        ("--request-cancellation-delay", "-1"),
        ("--request-cancellation-delay", "soon"),
    ] {
        let mut a = args(&base);
        a.extend(args(&[flag, value]));
        let e = plan(&a).unwrap_err();
        assert!(e.contains(flag) || e.contains(value), "{flag} {value}: {e}");
        // perf takes the same flag group: the same values are refused the same way.
        let e = perf_plan(&a).unwrap_err();
        assert!(
            e.contains(flag) || e.contains(value),
            "perf {flag} {value}: {e}"
        );
    }
    assert_eq!(perf_plan(&args(&base)).unwrap().cancellation(), None);
    let p = plan(&args(&base)).unwrap();
    assert_eq!(p.cancellation(), None);
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = run_in(
        &["profile", "-m", "m", "--request-cancellation-rate", "101%"],
        tmp.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--request-cancellation-rate"), "{err}");
    assert!(err.contains("0 to 100"), "{err}");
}

/// `perf` (perf_analyzer's front end) takes the same flags: against a decoupled streaming model
/// over gRPC, the seeded share of its requests is reset, counted apart in its level, its JSON
/// line, its console block and a last column of its `-f` CSV (the same text `perf -f` writes),
/// and the simulator counted exactly
/// those streams as cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perf_cancels_the_seeded_share_of_grpc_streams() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("prompts.json");
    // 30 tokens take ≈ 315 ms; an 80 ms delay cuts chosen streams after their first token.
    std::fs::write(
        &data,
        r#"{"data": [{"text_input": ["Hello there"], "max_tokens": [30], "stream": [true]}]}"#,
    )
    .unwrap();
    let dir = tmp.path().join("levels");
    let a = args(&[
        "-m",
        "gpt2",
        "--input-data",
        data.to_str().unwrap(),
        "--streaming",
        "--concurrency-range",
        "4",
        "-u",
        &sim.grpc_target(),
        "--request-count",
        "24",
        "--request-cancellation-rate",
        "40",
        "--request-cancellation-delay",
        "80ms",
        "--random-seed",
        "7",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    let p = perf_plan(&a).unwrap();
    let chooser = p.cancellation().expect("cancellation on");
    assert_eq!(
        Some(chooser),
        ttftbench::load::Cancellation::new(0.4, std::time::Duration::from_millis(80), 7),
        "the same choice profile makes from the same flags and seed"
    );
    let out = perf_ok(&a).await;
    let l = &out.levels[0];
    let rows = measured(&dir.join("concurrency4"));
    let mut chosen = 0;
    for r in &rows {
        let cancelled = r["error"] == "request_cancelled";
        assert_eq!(cancelled, chooser.chosen(r["seq"].as_u64().unwrap()), "{r}");
        chosen += u64::from(cancelled);
    }
    assert!(chosen > 0 && chosen < 24, "{chosen}");
    assert_eq!(l.cancelled_count, chosen);
    assert_eq!(l.error_count, 0, "{:?}", l.errors);
    assert_eq!(l.request_count + chosen, rows.len() as u64);
    // Latency comes from the completed streams only: none of them is under 300 ms.
    assert!(l.latency.min >= 290e6, "latency min {} ns", l.latency.min);
    let json = ttftbench::perf::report::json(l);
    assert_eq!(json["cancelled_count"], chosen);
    let console = ttftbench::perf::report::level(l, "gRPC", None);
    assert!(
        console.contains(&format!("Cancelled requests: {chosen} ")),
        "{console}"
    );
    let text = ttftbench::perf::report::csv(
        &out.levels,
        ttftbench::perf::report::CsvOptions {
            percentile: None,
            verbose: false,
        },
    );
    let (head, csv_rows) = read_csv(&text);
    assert_eq!(head.last().map(String::as_str), Some("Cancelled Requests"));
    assert_eq!(num(&csv_rows[0], "Cancelled Requests"), chosen as f64);
    let seen = sim_cancelled_reaching(&sim.metrics_url(), chosen).await;
    assert_eq!(
        seen, chosen,
        "the server counted each reset stream as cancelled"
    );
    sim.shutdown().await;
}

/// `--shard I/N` with cancellation: each shard numbers its requests in the whole run (shard `I`
/// of 2 has `2·local + I`), so the two shards together cancel exactly the requests one process
/// would, not twice one shard's draw over its own numbers from 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_together_cancel_what_one_process_would() {
    let c = |seed: u64| {
        ttftbench::load::Cancellation::new(0.3, std::time::Duration::from_millis(80), seed).unwrap()
    };
    let whole = |seed: u64| (0..40).filter(|&s| c(seed).chosen(s)).count() as u64;
    // A seed under which shards numbering from 0 would cancel another count than one process:
    // with it, this test tells the two numberings apart.
    let seed = (0..100)
        .find(|&seed| whole(seed) != 2 * (0..20).filter(|&s| c(seed).chosen(s)).count() as u64)
        .expect("such a seed");
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut total = 0;
    for index in 0..2u64 {
        let dir = tmp.path().join(format!("s{index}"));
        let a = chat(
            sim.http_url(),
            &dir,
            "30",
            &[
                "--concurrency",
                "4",
                "--request-count",
                "40",
                "--request-cancellation-rate",
                "30",
                "--request-cancellation-delay",
                "80ms",
                "--random-seed",
                &seed.to_string(),
                "--shard",
                &format!("{index}/2"),
            ],
        );
        let out = profile(&a).await.unwrap();
        let rows = measured(&out.levels[0].dir);
        assert_eq!(rows.len(), 20);
        for r in &rows {
            let n = 2 * r["seq"].as_u64().unwrap() + index;
            assert_eq!(r["error"] == "request_cancelled", c(seed).chosen(n), "{r}");
        }
        total += out.levels[0].summary.stats.cancelled_count;
    }
    assert_eq!(total, whole(seed));
    sim.shutdown().await;
}
