//! `--repeat N` against the simulator: repetition directories, combined medians with their
//! spread in every output, and `compare` telling a regression from noise. Servers that change
//! between repetitions are simulators behind a relay switched in `--repeat-pause`.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;

use common::{Tee, args, json_file, profile, round_engine, run_in, start};
use ttftbench::sim::{EngineConfig, SimConfig, SimHandle};

/// The median of three.
fn median3(mut v: [f64; 3]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[1]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeat_three_on_the_seed_ladder() {
    let _serial = SERIAL.lock().await;
    let sim = common::start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bench");
    let a = args(&[
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--backend",
        "tensorrtllm",
        "--streaming",
        "-u",
        &sim.grpc_target(),
        "--concurrency",
        "1,4,8",
        "--request-count",
        "16",
        "--synthetic-input-tokens-mean",
        "100",
        "--output-tokens-mean",
        "8",
        "--repeat",
        "3",
        "--artifact-dir",
        out.to_str().unwrap(),
    ]);
    let o = profile(&a).await.expect("runs");
    assert_eq!(o.repetitions.len(), 3);
    assert_eq!(o.levels.len(), 3);
    for k in 1..=3 {
        assert!(out.join(format!("rep{k}/summary.json")).is_file(), "rep{k}");
    }
    for l in &o.levels {
        assert_eq!(l.repetitions.len(), 3);
        let name = l.dir.file_name().unwrap().to_str().unwrap().to_string();
        let doc = json_file(&l.dir.join("profile_export_genai_perf.json"));
        // Each repetition's own file, and the combined file's medians of them.
        let reps: Vec<serde_json::Value> = (1..=3)
            .map(|k| json_file(&out.join(format!("rep{k}/{name}/profile_export_genai_perf.json"))))
            .collect();
        for (metric, stat) in [
            ("time_to_first_token", "avg"),
            ("time_to_first_token", "p50"),
            ("time_to_first_token", "p99"),
            ("inter_token_latency", "avg"),
            ("request_latency", "p90"),
            ("request_throughput", "avg"),
            ("output_token_throughput", "avg"),
        ] {
            let v = |d: &serde_json::Value| d[metric][stat].as_f64().unwrap();
            let expect = median3([v(&reps[0]), v(&reps[1]), v(&reps[2])]);
            assert_eq!(v(&doc), expect, "{name} {metric}.{stat}");
        }
        let block = &doc["repetitions"];
        assert_eq!(block["count"], 3);
        assert_eq!(block["dirs"][0], format!("../rep1/{name}"));
        let p99 = &block["spread"]["time_to_first_token.p99"];
        let vals: Vec<f64> = p99["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(p99["median"], doc["time_to_first_token"]["p99"]);
        let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(p99["min"].as_f64().unwrap(), lo);
        assert!(p99["ci95_low"].as_f64().unwrap() <= p99["ci95_high"].as_f64().unwrap());
    }
    // The sweep's files: spread per level in summary.json, one CSV row per level and number.
    let summary = json_file(&out.join("summary.json"));
    for row in summary["levels"].as_array().unwrap() {
        assert_eq!(row["repetitions"]["count"], 3, "{row}");
        assert!(row["repetitions"]["spread"]["request_throughput"]["max"].is_number());
    }
    let csv = std::fs::read_to_string(out.join("repetitions.csv")).unwrap();
    assert!(csv.starts_with("level,metric,n,median,min,max,ci95_low,ci95_high,values\n"));
    assert!(
        csv.contains("\nconcurrency8,time_to_first_token.p99,3,"),
        "{csv}"
    );
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("class=\"errbar\""),
        "error bars in report.html"
    );
    // compare reads the repetitions back: the run against itself is within every limit.
    let (code, text, err) = run_in(
        &["compare", out.to_str().unwrap(), out.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(code, 0, "{text}{err}");
    assert!(text.contains("95% interval"), "{text}");
    assert!(!text.contains("single runs on both sides"), "{text}");
}

/// A simulator whose prefill and decode take `factor` times the round engine's.
async fn sim_at(factor: f64) -> SimHandle {
    let r = round_engine();
    let scale = |us: u64| (us as f64 * factor).round() as u64;
    start(SimConfig {
        engine: EngineConfig {
            prefill_base_us: scale(r.prefill_base_us),
            prefill_us_per_token: scale(r.prefill_us_per_token),
            decode_base_us: scale(r.decode_base_us),
            ..r
        },
        ..SimConfig::default()
    })
    .await
}

/// One single-level run with `--repeat` (as many repetitions as `servers`), repetition k
/// against `servers[k-1]`: a relay in front of them is switched while the run pauses between
/// repetitions (once repetition k's level file exists).
async fn repeated_run(dir: &Path, servers: &[SocketAddr]) {
    let tee = Tee::start(servers[0]);
    let relay = tee.addr.clone();
    let (watch_dir, schedule) = (dir.to_path_buf(), servers.to_vec());
    let switcher = std::thread::spawn(move || {
        for (k, next) in schedule.iter().enumerate().skip(1) {
            let done = watch_dir.join(format!("rep{k}/profile_export_genai_perf.json"));
            let t0 = Instant::now();
            while !done.is_file() && t0.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(5));
            }
            tee.switch_to(*next);
        }
    });
    let a = args(&[
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--backend",
        "tensorrtllm",
        "--streaming",
        "-u",
        &relay,
        "--concurrency",
        "2",
        "--request-count",
        "16",
        "--synthetic-input-tokens-mean",
        "100",
        "--output-tokens-mean",
        "10",
        "--output-tokens-mean-deterministic",
        "--repeat",
        &servers.len().to_string(),
        "--repeat-pause",
        "0.5",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    profile(&a).await.expect("runs");
    switcher.join().expect("switcher");
}

fn compare(tmp: &Path, base: &Path, cur: &Path) -> (i32, String) {
    let (code, out, err) = run_in(
        &["compare", base.to_str().unwrap(), cur.to_str().unwrap()],
        tmp,
    );
    (code, format!("{out}{err}"))
}

/// The timing tests of this file, one at a time: each measures latencies the others' load would
/// disturb.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Identical servers: no regression. A server 30 % slower: regressions, each change's whole
/// interval past its limit. A server whose speed wanders from run to run: single runs flag a
/// +10 % p99 rise, the repetitions call it within noise and say the spread is wider than the
/// limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_tells_regressions_from_noise() {
    let _serial = SERIAL.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let same = sim_at(1.0).await;
    let slow = sim_at(1.3).await;
    let wander: Vec<SimHandle> = sims_at([0.85, 1.3, 1.15, 0.9, 1.35]).await;
    let addr = |s: &SimHandle| s.grpc_addr;
    repeated_run(&t.join("base"), &[addr(&same); 3]).await;
    repeated_run(&t.join("again"), &[addr(&same); 3]).await;
    repeated_run(&t.join("slower"), &[addr(&slow); 3]).await;
    // Baseline 1.0, 1.3, 0.85 of the round engine's time; current 1.15, 0.9, 1.35: the
    // medians 15 % apart, each side's runs spread wider than that.
    repeated_run(
        &t.join("noisy_base"),
        &[addr(&same), addr(&wander[1]), addr(&wander[0])],
    )
    .await;
    repeated_run(
        &t.join("noisy_cur"),
        &[addr(&wander[2]), addr(&wander[3]), addr(&wander[4])],
    )
    .await;

    let (code, text) = compare(t, &t.join("base"), &t.join("again"));
    assert_eq!(code, 0, "identical servers: {text}");
    assert!(text.contains("no regressions"), "{text}");

    let (code, text) = compare(t, &t.join("base"), &t.join("slower"));
    assert_eq!(code, 1, "30 % slower: {text}");
    // Throughput follows the engine's time most steadily (a whole level's average, where a p99
    // is one request's luck): it regresses beyond its noise.
    for metric in ["request_throughput", "output_token_throughput"] {
        assert!(
            text.lines()
                .any(|l| l.contains(metric) && l.ends_with("REGRESSED")),
            "{metric}: {text}"
        );
    }

    // Single runs (the first repetition of each side) flag the wandering server...
    let (code, text) = compare(t, &t.join("noisy_base/rep1"), &t.join("noisy_cur/rep1"));
    assert_eq!(code, 1, "single runs: {text}");
    assert!(text.contains("single runs on both sides"), "{text}");
    // ...its repetitions do not, and say why: the medians moved past a limit, the noise
    // reaches back over it.
    let (code, text) = compare(t, &t.join("noisy_base"), &t.join("noisy_cur"));
    assert_eq!(code, 0, "repetitions: {text}");
    assert!(text.lines().any(|l| l.ends_with("within noise")), "{text}");
    assert!(
        text.contains("across the baseline's repetitions, wider than its +10% limit"),
        "{text}"
    );
    // The five runs as a timeline: each run's median with its repetitions' range as a band.
    let (code, _, err) = run_in(&["report", t.to_str().unwrap(), "-o", "trend.html"], t);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(t.join("trend.html")).unwrap();
    assert!(
        html.contains("Trend across 5 runs"),
        "a timeline of the five runs"
    );
    assert!(html.contains("class=\"band\""), "bands in the trend");
    assert!(
        html.contains("across its repetitions)"),
        "the range in the hover text"
    );
}

/// Starts one simulator per speed factor.
async fn sims_at<const N: usize>(factors: [f64; N]) -> Vec<SimHandle> {
    let mut v = Vec::with_capacity(N);
    for f in factors {
        v.push(sim_at(f).await);
    }
    v
}

/// `perf --repeat 3 -f FILE`: each repetition's CSV in `rep{k}/`, the medians in FILE, the spread
/// beside it; `compare` reads the repetitions back; a later single run drops the stale spread.
#[test]
fn perf_repeat_writes_medians_and_spread() {
    let _serial = SERIAL.blocking_lock();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(common::start_round());
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let url = sim.grpc_target();
    let perf = |extra: &[&str]| {
        let mut a = vec![
            "perf",
            "-m",
            "yolov8s",
            "--concurrency-range",
            "1:2",
            "--shape",
            "images:3,640,640",
            "--input-data",
            "random",
            "-u",
            &url,
            "--measurement-interval",
            "300",
            "-f",
            "lat.csv",
        ];
        a.extend_from_slice(extra);
        run_in(&a, t)
    };
    let (code, out, err) = perf(&["--repeat", "3"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "Over 3 repetitions: median [min–max] (95 % intervals in lat.repetitions.csv)"
        ),
        "{out}"
    );
    let (_, rows) = common::read_csv(&std::fs::read_to_string(t.join("lat.csv")).unwrap());
    let reps: Vec<Vec<_>> = (1..=3)
        .map(|k| {
            let text = std::fs::read_to_string(t.join(format!("rep{k}/lat.csv"))).unwrap();
            common::read_csv(&text).1
        })
        .collect();
    assert_eq!(rows.len(), 2);
    // Rows are sorted by throughput, as perf_analyzer sorts them: match them by concurrency.
    let at = |rows: &[std::collections::HashMap<String, String>], c: &str| {
        rows.iter()
            .find(|r| r["Concurrency"] == c)
            .cloned()
            .unwrap_or_else(|| panic!("no concurrency {c}"))
    };
    for c in ["1", "2"] {
        let row = at(&rows, c);
        for col in ["Inferences/Second", "p99 latency", "p50 latency"] {
            let v = |r: &std::collections::HashMap<String, String>| common::num(r, col);
            let r: Vec<f64> = reps.iter().map(|rep| v(&at(rep, c))).collect();
            let expect = median3([r[0], r[1], r[2]]);
            // The CSV writes latencies as whole µs: the median of the rounded values.
            assert!(
                (v(&row) - expect).abs() <= 1.0,
                "concurrency {c} {col}: {} vs {expect}",
                v(&row)
            );
        }
    }
    let spread = std::fs::read_to_string(t.join("lat.repetitions.csv")).unwrap();
    assert!(
        spread.contains("\nconcurrency2,request_latency.p99,3,"),
        "{spread}"
    );
    let (code, text, err) = run_in(&["compare", "lat.csv", "lat.csv"], t);
    assert_eq!(code, 0, "{text}{err}");
    assert!(text.contains("95% interval"), "{text}");
    // A single run into the same file: its spread file would describe another run.
    let (code, out, err) = perf(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!t.join("lat.repetitions.csv").exists());
}
