//! `search` against the simulator, whose capacity is known from its batch slots and timing: the
//! answer within one concurrency step (±5 % of a rate) for at most 40 % of the requests a ladder
//! at 200 requests per level spends; a saturated probe stopped early and labelled; a search that
//! finds nothing exiting 1; bad input exiting 2 with the fix. Also the engine's sequential rule
//! under `profile --target-moe`, and drift over a level's timeline.

use crate::common;

use common::{chat_args, json_file};
use ttftbench::analysis::sequential::Stopped;
use ttftbench::artifact::search::{ProbeKind, ProbeVerdict, Proof};
use ttftbench::sim::{EngineConfig, SimConfig};

/// Timing tests here run one at a time: on two cores, two searches side by side would each see
/// the other's load in their latencies.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// 8 batch slots; a decode step of 5 ms + 0.25 ms per running sequence (7 ms with all 8 busy);
/// admission costs 1 ms; prompts cost nothing per token.
fn slots_engine() -> EngineConfig {
    EngineConfig {
        max_batch: 8,
        prefill_base_us: 1_000,
        prefill_us_per_token: 0,
        decode_base_us: 5_000,
        decode_us_per_seq: 250,
        ..EngineConfig::default()
    }
}

/// The same slots with a flat 5 ms step and free admission: a 40-token answer holds its slot
/// for exactly 200 ms, so 8 slots serve 40 requests/s.
fn flat_engine() -> EngineConfig {
    EngineConfig {
        prefill_base_us: 0,
        decode_us_per_seq: 0,
        ..slots_engine()
    }
}

/// Closed loop: up to 8 requests in flight nobody waits for a slot, so a request's first token
/// comes within two steps (≤ 16 ms, ~10 ms typically). From 9 on one request always waits for
/// the next slot to free: with 40±10-token answers a slot is held ~280 ms, so the wait averages
/// 280/8 ≈ 35 ms and most first tokens take longer than 25 ms. The capacity under
/// `TTFT p75 ≤ 25 ms` is 8.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finds_the_slots_within_one_step_for_a_fraction_of_a_ladder() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (out, _dir) = slots_search(&["--slo", "time_to_first_token.p75<=25ms"]).await;
    let capacity = 8.0;
    let answer = out
        .doc
        .answer
        .as_ref()
        .expect("a concurrency meets the SLO")
        .load;
    assert!(
        (answer - capacity).abs() <= 1.0,
        "answer {answer}: {:#?}",
        out.doc.probes
    );
    // A ladder 1, 2, ... 9 (up to the first load past the capacity) at 200 requests a level.
    let ladder = 9 * 200;
    assert!(
        out.doc.requests_spent * 10 <= ladder * 4,
        "{} requests spent, more than 40 % of {ladder}: {:#?}",
        out.doc.requests_spent,
        out.doc.probes
    );
    assert_eq!(out.doc.exit_code, 0);
    assert!(
        out.doc.statement.contains("at 95 % confidence"),
        "{}",
        out.doc.statement
    );
    // Without --max the search climbs with scouts cut at their first look; every proof is
    // settled, and the answer's proof covers the scouts below it.
    assert_eq!(out.doc.order, "climb");
    for p in &out.doc.probes {
        let level = json_file(&std::path::Path::new(&p.dir).join("profile_export_genai_perf.json"));
        let reason = level["sequential"]["reason"].as_str().unwrap().to_string();
        match p.kind {
            ProbeKind::Proof => assert_eq!(reason, "settled", "{}", p.level),
            _ => assert!(
                ["settled", "request_cap"].contains(&reason.as_str()),
                "{reason}"
            ),
        }
        assert_eq!(level["sequential"]["measured"], p.measured);
        if p.verdict == ProbeVerdict::Scouted && p.load <= answer {
            assert_eq!(p.proof, Proof::Covered, "{p:#?}");
        }
    }
    assert_eq!(out.doc.monotonicity.meets_up_to, Some(answer));
    let saved = ttftbench::artifact::search::read(&out.dir).expect("search.json");
    assert_eq!(saved.answer.map(|a| a.load), Some(answer));
    assert_eq!(saved.probes.len(), out.doc.probes.len());
    let pareto = std::fs::read_to_string(out.dir.join("pareto.csv")).unwrap();
    assert!(pareto.starts_with("level,stimulus,value,output_token_throughput,"));
    let page = std::fs::read_to_string(out.dir.join("report.html")).unwrap();
    assert!(page.contains("<p><strong>Search: "));
    assert!(page.contains("data-chart=\"pareto\""));
}

/// A search against a simulator with `engine`, 32-token prompts, answers of 40 tokens and
/// `flags`; the directory holding its files comes back with it.
async fn search_with(
    engine: EngineConfig,
    flags: &[&str],
) -> (ttftbench::search::SearchOutcome, tempfile::TempDir) {
    let sim = common::start(SimConfig {
        engine,
        ..SimConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![
        "--synthetic-input-tokens-mean",
        "32",
        "--output-tokens-mean",
        "40",
    ];
    all.extend(flags);
    let out = common::search(&chat_args(&sim.http_url(), dir.path(), &all))
        .await
        .unwrap();
    (out, dir)
}

/// Closed loop against [`slots_engine`] with 40±10-token answers and `extra` flags.
async fn slots_search(extra: &[&str]) -> (ttftbench::search::SearchOutcome, tempfile::TempDir) {
    let mut flags = vec![
        "--output-tokens-stddev",
        "10",
        "--output-tokens-mean-deterministic",
    ];
    flags.extend(extra);
    search_with(slots_engine(), &flags).await
}

/// A request-rate search against the flat-step simulator ([`flat_engine`]: 40 requests/s) with
/// answers of exactly 40 tokens and `extra` flags.
async fn flat_rate_search(extra: &[&str]) -> ttftbench::search::SearchOutcome {
    let mut flags = vec![
        "--output-tokens-mean-deterministic",
        "--over",
        "request-rate",
    ];
    flags.extend(extra);
    search_with(flat_engine(), &flags).await.0
}

/// Open loop with a flat 5 ms step: a slot holds a 40-token answer for exactly 40 steps,
/// 200 ms, so 8 slots serve 40 requests/s. Below it constant arrivals never wait; above it the
/// queue grows without bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finds_the_rate_within_five_percent() {
    let _one = ONE_AT_A_TIME.lock().await;
    let out = flat_rate_search(&["--min", "12", "--slo", "ttft.p75<=25ms"]).await;
    let capacity = 40.0;
    let answer = out.doc.answer.as_ref().expect("a rate meets the SLO").load;
    assert!(
        (answer - capacity).abs() <= capacity * 0.05,
        "answer {answer}: {:#?}",
        out.doc.probes
    );
    // The ladder with the same 5 % resolution from 12 up to the capacity: 26 levels.
    let ladder =
        ttftbench::artifact::search::ladder_loads(false, 12.0, capacity, 0.05).len() as u64 * 200;
    assert!(
        out.doc.requests_spent * 10 <= ladder * 4,
        "{} of {ladder}",
        out.doc.requests_spent
    );
}

/// Five times the capacity (40 requests/s) with an objective it could meet for a while: the queue grows, the
/// probe stops as saturated (not after its 1000 requests), says which signal fired, and the
/// search exits 1 as no load met the objective.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_saturated_probe_stops_early_and_says_why() {
    let _one = ONE_AT_A_TIME.lock().await;
    let out = flat_rate_search(&["--min", "200", "--max", "200", "--slo", "ttft.p90<=10s"]).await;
    let [p] = out.doc.probes.as_slice() else {
        panic!("{:#?}", out.doc.probes);
    };
    assert_eq!(p.verdict, ProbeVerdict::Saturated, "{p:#?}");
    assert_eq!(p.stopped, Stopped::Saturated);
    assert!(p.why.starts_with("saturated: "), "{}", p.why);
    assert!(p.measured < 1000, "{}", p.measured);
    assert_eq!((out.doc.exit_code, out.doc.answer.is_none()), (1, true));
    assert!(
        out.doc.statement.starts_with("no load meets"),
        "{}",
        out.doc.statement
    );
}

/// A server that fails a fifth of its requests meets a TTFT objective on the survivors, but a
/// probe past `--max-error-rate` (5 % by default) does not meet the objectives: no load does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_with_too_many_errors_does_not_meet() {
    let _one = ONE_AT_A_TIME.lock().await;
    let sim = common::start(SimConfig {
        engine: slots_engine(),
        faults: ttftbench::sim::FaultConfig {
            error_rate: 0.2,
            ..Default::default()
        },
        ..SimConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let a = chat_args(
        &sim.http_url(),
        dir.path(),
        &[
            "--output-tokens-mean",
            "8",
            "--max",
            "2",
            "--slo",
            "ttft.p50<=1s",
        ],
    );
    let out = common::search(&a).await.unwrap();
    // From --max 2 down to a scout at --min 1: both fail on their errors, whatever their
    // objective says (the proof at 2 meets it; the scout's twenty requests may leave it open).
    assert_eq!(out.doc.probes.len(), 2, "{:#?}", out.doc.probes);
    assert_eq!(out.doc.probes[0].objectives[0].decision, "meets");
    for p in &out.doc.probes {
        assert_eq!(p.verdict, ProbeVerdict::Fails, "{p:#?}");
        assert!(
            p.why
                .contains("of its requests failed, over --max-error-rate 5 %"),
            "{}",
            p.why
        );
    }
    assert_eq!((out.doc.exit_code, out.doc.answer.is_none()), (1, true));
}

/// From `--max 9` the first probe fails at once and the next ones meet in a few dozen
/// requests; `--max-time 4s` ends the search before the bisection is over, and the answer is
/// the highest load proven by then, with its confidence, never the load under way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_time_returns_the_highest_load_proven_so_far() {
    let _one = ONE_AT_A_TIME.lock().await;
    let started = std::time::Instant::now();
    let (out, _dir) = slots_search(&[
        "--max",
        "9",
        "--max-time",
        "4s",
        "--slo",
        "time_to_first_token.p75<=25ms",
    ])
    .await;
    // The probe under way when time ran out stops with it (plus its requests in flight).
    assert!(
        started.elapsed().as_secs_f64() < 12.0,
        "{:?}",
        started.elapsed()
    );
    assert!(out.doc.timed_out, "{:#?}", out.doc.probes);
    assert_eq!(out.doc.max_time_s, Some(4.0));
    assert!(
        out.doc.statement.contains("--max-time"),
        "{}",
        out.doc.statement
    );
    match &out.doc.answer {
        Some(a) => {
            let proof = out.doc.probes.iter().find(|p| p.load == a.load).unwrap();
            assert_eq!(
                (proof.verdict, proof.proof),
                (ProbeVerdict::Meets, Proof::Proven)
            );
            assert!(out.doc.statement.contains("at 95 % confidence"));
            assert_eq!(out.doc.exit_code, 0);
        }
        None => assert_eq!(out.doc.exit_code, 1),
    }
}

/// `--target-moe`: the level stops once the median's interval is within 10 % of it, long
/// before the default cap, and says so in its JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_stops_a_level_at_its_margin_of_error() {
    let _one = ONE_AT_A_TIME.lock().await;
    let sim = common::start_round().await;
    let dir = tempfile::tempdir().unwrap();
    let a = chat_args(
        &sim.http_url(),
        dir.path(),
        &[
            "--concurrency",
            "4",
            "--synthetic-input-tokens-mean",
            "100",
            "--output-tokens-mean",
            "8",
            "--target-moe",
            "10%",
            "--moe-metric",
            "ttft.p50",
        ],
    );
    let out = common::profile(&a).await.unwrap();
    let level = &out.levels[0];
    let st = level.settled.as_ref().expect("the sequential rule ran");
    assert_eq!(st.stopped.key(), "margin_reached");
    let moe = st.moe.unwrap();
    assert!(moe.relative.unwrap() <= 0.10, "{moe:?}");
    assert!(level.summary.stats.request_count < 10_000);
    let doc = json_file(&level.dir.join("profile_export_genai_perf.json"));
    assert_eq!(doc["sequential"]["reason"], "margin_reached");
    assert_eq!(
        doc["input_config"]["target_moe"]["moe"]["metric"],
        "time_to_first_token.p50"
    );
}

/// A level past the capacity (40 requests/s) for 4 s at 100 ms timeline intervals: TTFT p99 climbs interval by
/// interval, the drift block says so, and an objective on it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_that_drifts_is_called_so() {
    let _one = ONE_AT_A_TIME.lock().await;
    let sim = common::start(SimConfig {
        engine: flat_engine(),
        ..SimConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let a = chat_args(
        &sim.http_url(),
        dir.path(),
        &[
            "--request-rate",
            "50",
            "--duration",
            "4s",
            "--timeline-interval",
            "100ms",
            "--synthetic-input-tokens-mean",
            "32",
            "--output-tokens-mean",
            "40",
            "--output-tokens-mean-deterministic",
            "--slo",
            "ttft_p99_drift_per_hour<=100%",
        ],
    );
    let out = common::profile(&a).await.unwrap();
    let level = &out.levels[0];
    let drift = level
        .summary
        .drift
        .as_ref()
        .expect("40 intervals: a drift verdict");
    let ttft = drift
        .get(ttftbench::stats::trend::DriftMetric::TtftP99)
        .unwrap();
    assert!(ttft.drifts && ttft.per_hour > 0.0, "{ttft:?}");
    assert!(!level.slo[0].passed);
    let doc = json_file(&level.dir.join("profile_export_genai_perf.json"));
    assert_eq!(
        doc["drift"]["metrics"][0]["metric"],
        "time_to_first_token.p99"
    );
    assert_eq!(doc["drift"]["metrics"][0]["drifts"], true);
}

/// Bad input exits 2 before anything is sent, saying what to write instead.
#[test]
fn bad_input_exits_2_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["search", "-m", "gpt2", "-u", "127.0.0.1:9", "--streaming"];
    let cases: [(&[&str], &str); 4] = [
        (
            &["--slo", "time_to_first_tokn.p99<=500ms"],
            "unknown metric 'time_to_first_tokn'",
        ),
        (
            &["--slo", "ttft.p99<=500ms", "--min", "16", "--max", "4"],
            "--min 16 is above --max 4: the search runs from --min up to --max; give --min at most --max",
        ),
        (
            &["--slo", "ttft.p99<=500ms", "--confidence", "50%"],
            "must be more than 50% and at most 99.9% (e.g. --confidence 95%)",
        ),
        (
            &["--slo", "ttft.p99<=500ms", "--confidence", "99.99%"],
            "must be more than 50% and at most 99.9%",
        ),
    ];
    for (extra, want) in cases {
        let mut argv: Vec<&str> = base.to_vec();
        argv.extend_from_slice(extra);
        let (code, _, err) = common::run_in(&argv, dir.path());
        assert_eq!(code, 2, "{argv:?}: {err}");
        assert!(err.contains(want), "{argv:?}: {err}");
    }
}
