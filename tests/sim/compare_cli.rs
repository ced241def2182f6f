//! `ttftbench compare` on artifact directories written through the real encoders: exact tables,
//! Markdown for CI comments, JSON, `-o`, exit codes, and the seeds' "compare with the last run"
//! over a folder of runs.

use std::path::Path;

use crate::common;

use common::run_in;

use serde_json::json;
use ttftbench::load::Stimulus;
use ttftbench::metrics::{Metric, Stats};
use ttftbench::server_metrics::ServerDelta;
use ttftbench::stats::{LevelStats, LevelSummary};

fn stats(avg: f64, p50: f64, p99: f64) -> Stats {
    Stats {
        count: 100,
        avg,
        min: avg / 2.0,
        max: p99 * 1.1,
        p50,
        p90: p99 * 0.9,
        p99,
        ..Stats::default()
    }
}

/// A level with round numbers: TTFT (avg, p99), output tok/s, queue share.
fn level(c: u32, ttft: (f64, f64), tput: f64, queue: f64, errors: u64) -> LevelSummary {
    LevelSummary {
        server: Some(ServerDelta {
            source: "statistics",
            requests: 100,
            failures: 0,
            executions: 10,
            avg_request_ms: 100.0,
            avg_queue_ms: Some(queue * 100.0),
            avg_compute_input_ms: 0.0,
            avg_compute_infer_ms: (1.0 - queue) * 100.0,
            avg_compute_output_ms: 0.0,
            queue_share: Some(queue),
            max_pending: 0.0,
        }),
        started_unix_ns: 1_767_355_200_000_000_000,
        ended_unix_ns: 1_767_355_260_000_000_000,
        ..LevelSummary::new(
            Stimulus::Concurrency(c),
            LevelStats {
                metrics: vec![
                    (Metric::TimeToFirstToken, stats(ttft.0, ttft.0, ttft.1)),
                    (Metric::RequestLatency, stats(500.0, 500.0, 600.0)),
                    (Metric::InterTokenLatency, stats(5.0, 5.0, 6.0)),
                ],
                request_count: 100,
                error_count: errors,
                duration_s: 10.0,
                output_token_throughput: tput,
                total_token_throughput: tput * 3.0,
                request_throughput: tput / 100.0,
                ..Default::default()
            },
        )
    }
}

/// Writes a sweep the way `profile` does: level JSON files and summary.json.
fn write_sweep(dir: &Path, levels: &[LevelSummary], started: u64) {
    let cfg = json!({"target": {"streaming": true, "model": "gpt2", "api": "kserve"},
        "command_line": "ttftbench profile -m gpt2 --streaming --concurrency 1,8"});
    let mut dirs = Vec::new();
    for l in levels {
        let mut l = l.clone();
        l.started_unix_ns = started;
        let d = dir.join(format!("c{}", l.stimulus.value()));
        std::fs::create_dir_all(&d).unwrap();
        let doc = ttftbench::artifact::genai_perf::json(&l, &cfg);
        std::fs::write(
            d.join("profile_export_genai_perf.json"),
            serde_json::to_string_pretty(&doc).unwrap(),
        )
        .unwrap();
        dirs.push(d);
    }
    let verdict = ttftbench::analysis::verdict::verdict(levels);
    let knee = ttftbench::analysis::knee::analyze(levels, 0.1);
    let doc = ttftbench::artifact::summary::with_decisions(
        ttftbench::artifact::summary::json(levels, &dirs, &verdict, &cfg),
        dir,
        &dirs,
        &[],
        &knee,
    );
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();
}

/// bench/20260102_1200 (baseline) and bench/20260102_1300 (current): at concurrency 8 the
/// current run lost 10 % throughput and its TTFT p99 grew 25 %; concurrency 1 is steady.
fn fixtures(root: &Path) {
    let t0 = 1_767_355_200_000_000_000;
    write_sweep(
        &root.join("bench/20260102_1200"),
        &[
            level(1, (40.0, 50.0), 1000.0, 0.10, 0),
            level(8, (80.0, 160.0), 4000.0, 0.20, 0),
        ],
        t0,
    );
    write_sweep(
        &root.join("bench/20260102_1300"),
        &[
            level(1, (41.0, 52.0), 990.0, 0.10, 0),
            level(8, (90.0, 200.0), 3600.0, 0.45, 2),
        ],
        t0 + 3_600_000_000_000,
    );
}

const TABLE: &str = "\
baseline: 20260102_1200 (bench/20260102_1200)
current:  20260102_1300 (bench/20260102_1300)
limits:   throughput may fall by at most 5%; p99 latency may rise by at most 10%
note: single runs on both sides: the verdict cannot account for run-to-run noise; run both with --repeat 3 to tell a regression from noise

Level         Metric                       Baseline       Current   Change  Limit  Status
------------  -----------------------  ------------  ------------  -------  -----  ---------
concurrency1  time_to_first_token.avg      40.00 ms      41.00 ms    +2.5%
concurrency1  time_to_first_token.p50      40.00 ms      41.00 ms    +2.5%
concurrency1  time_to_first_token.p99      50.00 ms      52.00 ms    +4.0%   +10%  ok
concurrency1  inter_token_latency.avg       5.00 ms       5.00 ms    +0.0%
concurrency1  inter_token_latency.p99       6.00 ms       6.00 ms    +0.0%   +10%  ok
concurrency1  request_latency.avg         500.00 ms     500.00 ms    +0.0%
concurrency1  request_latency.p99         600.00 ms     600.00 ms    +0.0%   +10%  ok
concurrency1  output_token_throughput  1000.0 tok/s   990.0 tok/s    -1.0%    -5%  ok
concurrency1  request_throughput        10.00 req/s    9.90 req/s    -1.0%    -5%  ok
concurrency1  error_rate                       0.0%          0.0%
concurrency1  queue_share                     10.0%         10.0%
concurrency8  time_to_first_token.avg      80.00 ms      90.00 ms   +12.5%
concurrency8  time_to_first_token.p50      80.00 ms      90.00 ms   +12.5%
concurrency8  time_to_first_token.p99     160.00 ms     200.00 ms   +25.0%   +10%  REGRESSED
concurrency8  inter_token_latency.avg       5.00 ms       5.00 ms    +0.0%
concurrency8  inter_token_latency.p99       6.00 ms       6.00 ms    +0.0%   +10%  ok
concurrency8  request_latency.avg         500.00 ms     500.00 ms    +0.0%
concurrency8  request_latency.p99         600.00 ms     600.00 ms    +0.0%   +10%  ok
concurrency8  output_token_throughput  4000.0 tok/s  3600.0 tok/s   -10.0%    -5%  REGRESSED
concurrency8  request_throughput        40.00 req/s   36.00 req/s   -10.0%    -5%  REGRESSED
concurrency8  error_rate                       0.0%          2.0%   +2.0pp
concurrency8  queue_share                     20.0%         45.0%  +25.0pp

3 regressions
Level         Metric                       Baseline       Current  Change  Limit  Status
------------  -----------------------  ------------  ------------  ------  -----  ---------
concurrency8  time_to_first_token.p99     160.00 ms     200.00 ms  +25.0%   +10%  REGRESSED
concurrency8  output_token_throughput  4000.0 tok/s  3600.0 tok/s  -10.0%    -5%  REGRESSED
concurrency8  request_throughput        40.00 req/s   36.00 req/s  -10.0%    -5%  REGRESSED
";

#[test]
fn seeds_rule_table_exact_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    fixtures(tmp.path());
    let (code, out, err) = run_in(
        &[
            "compare",
            "bench/20260102_1200",
            "bench/20260102_1300",
            "--max-throughput-drop",
            "5%",
            "--max-p99-increase",
            "10%",
        ],
        tmp.path(),
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, TABLE);
    // The same without flags: the seeds' rule is the default.
    let (code, out2, _) = run_in(
        &["compare", "bench/20260102_1200", "bench/20260102_1300"],
        tmp.path(),
    );
    assert_eq!((code, out2.as_str()), (1, TABLE));
    // A folder of runs alone: its two newest runs.
    let (code, out3, _) = common::run_in(&["compare", "bench"], tmp.path());
    assert_eq!((code, out3.as_str()), (1, TABLE));
}

#[test]
fn thresholds_markdown_json_and_output_file() {
    let tmp = tempfile::tempdir().unwrap();
    fixtures(tmp.path());
    // Loose limits: nothing regresses, exit 0.
    let (code, out, err) = run_in(
        &[
            "compare",
            "bench/20260102_1200",
            "bench/20260102_1300",
            "--threshold",
            "time_to_first_token.p99:+30%",
            "--threshold",
            "request_throughput.avg:-15%",
            "--threshold",
            "queue_share:+30pp",
            "--format",
            "markdown",
        ],
        tmp.path(),
    );
    assert_eq!(code, 0, "{err}");
    let expected_head = "\
### ttftbench compare: `20260102_1300` vs baseline `20260102_1200`

✅ **no regressions** — limits: --threshold time_to_first_token.p99:+30%; --threshold request_throughput:-15%; --threshold queue_share:+30pp

> note: single runs on both sides: the verdict cannot account for run-to-run noise; run both with --repeat 3 to tell a regression from noise

<details><summary>All metrics</summary>

| Level | Metric | Baseline | Current | Change | Limit | Status |
|---|---|---:|---:|---:|---:|---|
| concurrency1 | time_to_first_token.avg | 40.00 ms | 41.00 ms | +2.5% |  |  |
| concurrency1 | time_to_first_token.p50 | 40.00 ms | 41.00 ms | +2.5% |  |  |
| concurrency1 | time_to_first_token.p99 | 50.00 ms | 52.00 ms | +4.0% | +30% | ok |
";
    assert!(out.starts_with(expected_head), "{out}");
    assert!(
        out.contains("| concurrency8 | queue_share | 20.0% | 45.0% | +25.0pp | +30pp | ok |\n")
    );
    assert!(out.ends_with("\n</details>\n"));
    // A tight absolute limit breaks: Markdown lists the regression first.
    let (code, out, _) = run_in(
        &[
            "compare",
            "bench/20260102_1200",
            "bench/20260102_1300",
            "--threshold",
            "time_to_first_token.p99:+20ms",
            "--format",
            "markdown",
        ],
        tmp.path(),
    );
    assert_eq!(code, 1);
    assert!(out.contains(
        "❌ **1 regression** — limits: --threshold time_to_first_token.p99:+20ms\n\n> note: single runs on both sides: the verdict cannot account for run-to-run noise; run both with --repeat 3 to tell a regression from noise\n\n| Level | Metric | Baseline | Current | Change | Limit | Status |\n|---|---|---:|---:|---:|---:|---|\n| concurrency8 | time_to_first_token.p99 | 160.00 ms | 200.00 ms | +25.0% | +20ms | REGRESSED |\n\n<details>"
    ), "{out}");
    // JSON to a file; stdout stays empty, stderr says where it went.
    let (code, out, err) = run_in(
        &[
            "compare",
            "bench/20260102_1200",
            "bench/20260102_1300",
            "--format",
            "json",
            "-o",
            "cmp.json",
        ],
        tmp.path(),
    );
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("3 regressions — written to cmp.json"), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("cmp.json")).unwrap())
            .unwrap();
    assert_eq!(v["passed"], false);
    assert_eq!(v["regressions"], 3);
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["level"] == "concurrency8" && r["metric"] == "output_token_throughput")
        .unwrap();
    assert_eq!(
        row,
        &json!({"level": "concurrency8", "metric": "output_token_throughput", "unit": "tokens/sec",
            "baseline": 4000.0, "current": 3600.0, "change_pct": -10.0, "limits": ["-5%"], "status": "regressed",
            "baseline_values": [4000.0], "current_values": [3600.0], "change_interval": null})
    );
}

#[test]
fn a_folder_of_fixed_concurrency_runs_compares_its_two_newest() {
    // The perf guide's habit: the same concurrency after every change, each run in its own
    // timestamped directory holding the level's files directly.
    let tmp = tempfile::tempdir().unwrap();
    let t0 = 1_767_355_200_000_000_000u64;
    let cfg = json!({"target": {"streaming": true}});
    for (i, (name, tput)) in [
        ("20260101_0900", 1000.0),
        ("20260102_0900", 990.0),
        ("20260103_0900", 900.0),
    ]
    .iter()
    .enumerate()
    {
        let mut l = level(8, (80.0, 160.0), *tput, 0.2, 0);
        l.started_unix_ns = t0 + i as u64 * 86_400_000_000_000;
        let d = tmp.path().join("ci").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("profile_export_genai_perf.json"),
            ttftbench::artifact::genai_perf::json(&l, &cfg).to_string(),
        )
        .unwrap();
    }
    let (code, out, err) = common::run_in(&["compare", "ci"], tmp.path());
    assert_eq!(code, 1, "{err}");
    assert!(out.starts_with("baseline: 20260102_0900 (ci/20260102_0900)\ncurrent:  20260103_0900 (ci/20260103_0900)\n"), "{out}");
    assert!(out.contains("\n2 regressions\n"), "{out}");
    // And the report draws them as a timeline of three runs.
    let (code, out, _) = common::run_in(&["report", "ci"], tmp.path());
    assert_eq!(code, 0);
    assert!(out.contains("(3 runs, 3 levels)"), "{out}");
}

#[test]
fn perf_analyzer_csv_files_compare() {
    // The perf guide's CI habit: the same fixed-concurrency run, compared with the last CSV.
    let tmp = tempfile::tempdir().unwrap();
    let head = "Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";
    std::fs::write(
        tmp.path().join("last.csv"),
        format!("{head}\n8,8556.2,128,40,921,1152,1284,1623\n"),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("ci_result.csv"),
        format!("{head}\n8,7900,130,41,1010,1300,1500,1900\n"),
    )
    .unwrap();
    let (code, out, err) = common::run_in(&["compare", "last.csv", "ci_result.csv"], tmp.path());
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out,
        "\
baseline: last (last.csv)
current:  ci_result (ci_result.csv)
limits:   throughput may fall by at most 5%; p99 latency may rise by at most 10%
note: single runs on both sides: the verdict cannot account for run-to-run noise; run both with --repeat 3 to tell a regression from noise

Level         Metric                    Baseline        Current  Change  Limit  Status
------------  -------------------  -------------  -------------  ------  -----  ---------
concurrency8  request_latency.p99        1.62 ms        1.90 ms  +17.1%   +10%  REGRESSED
concurrency8  request_throughput   8556.20 req/s  7900.00 req/s   -7.7%    -5%  REGRESSED
concurrency8  error_rate                    0.0%           0.0%

2 regressions
Level         Metric                    Baseline        Current  Change  Limit  Status
------------  -------------------  -------------  -------------  ------  -----  ---------
concurrency8  request_latency.p99        1.62 ms        1.90 ms  +17.1%   +10%  REGRESSED
concurrency8  request_throughput   8556.20 req/s  7900.00 req/s   -7.7%    -5%  REGRESSED
"
    );
    // Not a perf_analyzer CSV: a usage error naming what was expected.
    std::fs::write(tmp.path().join("other.csv"), "a,b\n1,2\n").unwrap();
    let (code, _, err) = common::run_in(&["compare", "other.csv", "last.csv"], tmp.path());
    assert_eq!(code, 2);
    assert!(err.contains("not a perf_analyzer CSV"), "{err}");
}

#[test]
fn single_levels_missing_levels_and_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    fixtures(tmp.path());
    // Single level directories match by level name.
    let (code, out, _) = run_in(
        &[
            "compare",
            "bench/20260102_1200/c1",
            "bench/20260102_1300/c1",
        ],
        tmp.path(),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("\nno regressions\n"), "{out}");
    // Different loads: compared, with a note.
    let (_, out, _) = run_in(
        &[
            "compare",
            "bench/20260102_1200/c1",
            "bench/20260102_1300/c8",
        ],
        tmp.path(),
    );
    assert!(out.contains(
        "note: single levels with different loads compared: concurrency1 (baseline) with concurrency8 (current)"
    ));
    // A level the current run lacks is a regression.
    let (code, out, _) = run_in(
        &["compare", "bench/20260102_1200", "bench/20260102_1300/c1"],
        tmp.path(),
    );
    assert_eq!(code, 1);
    assert!(out.contains(
        "concurrency8: in the baseline but missing from the current run (did the run fail there?)"
    ));
    // Usage errors: exit 2 with what to write.
    let cases: &[(&[&str], &str)] = &[
        (
            &["--threshold", "time_to_first_token.p99:10%"],
            "the limit needs a sign",
        ),
        (&["--threshold", "ttft:+10%"], "name a statistic"),
        (
            &["--max-throughput-drop", "lots"],
            "expected a percentage such as 5%",
        ),
    ];
    for (extra, want) in cases {
        let mut a = vec!["compare", "bench/20260102_1200", "bench/20260102_1300"];
        a.extend_from_slice(extra);
        let (code, _, err) = common::run_in(&a, tmp.path());
        assert_eq!(code, 2, "{extra:?}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    let (code, _, err) = common::run_in(&["compare", "bench", "bench/20260102_1300"], tmp.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("holds 2 runs; give one run directory"),
        "{err}"
    );
    let (code, _, err) = common::run_in(&["compare", "bench/20260102_1300"], tmp.path());
    assert_eq!(code, 2);
    assert!(err.contains("one run only"), "{err}");
}

/// A team's GenAI-Perf baseline (`tests/fixtures/genai_perf_run`, written by GenAI-Perf's own
/// exporters; see its README) compared with a ttftbench run of the same command against the
/// simulator: both levels line up, GenAI-Perf's numbers are read as the baseline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genai_perf_artifact_directory_is_a_baseline() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/genai_perf_run");
    let sim = ttftbench::sim::start(ttftbench::sim::SimConfig::default())
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ttftbench_run");
    let argv: Vec<String> = [
        "ttftbench",
        "profile",
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "--concurrency",
        "1,2",
        "--request-count",
        "8",
        "--num-prompts",
        "4",
        "--synthetic-input-tokens-mean",
        "40",
        "--synthetic-input-tokens-stddev",
        "10",
        "--output-tokens-mean",
        "8",
        "--output-tokens-stddev",
        "2",
        "-u",
        &sim.http_url(),
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cli = <ttftbench::cli::Cli as clap::Parser>::try_parse_from(&argv).unwrap();
    let ttftbench::cli::Command::Profile(p) = cli.command else {
        panic!("profile")
    };
    let plan = p.plan(&argv).unwrap();
    ttftbench::profile::run(
        &plan,
        ttftbench::load::Interrupt::new(),
        ttftbench::profile::Ui::silent(),
    )
    .await
    .unwrap();
    sim.shutdown().await;
    let (code, out, err) = run_in(
        &[
            "compare",
            fixture.to_str().unwrap(),
            dir.to_str().unwrap(),
            "--format",
            "json",
        ],
        tmp.path(),
    );
    assert!(code == 0 || code == 1, "compare ran: {err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["baseline"]["label"], "genai_perf_run");
    let baseline_json = |c: u32| -> serde_json::Value {
        let p = fixture.join(format!(
            "gpt2-openai-chat-concurrency{c}/profile_export_genai_perf.json"
        ));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    for c in [1u32, 2] {
        let gp = baseline_json(c);
        let row = |metric: &str| {
            doc["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["level"] == format!("concurrency{c}") && r["metric"] == metric)
                .unwrap_or_else(|| panic!("concurrency{c} {metric} compared: {out}"))
                .clone()
        };
        for (metric, key, stat) in [
            ("time_to_first_token.p99", "time_to_first_token", "p99"),
            ("request_latency.avg", "request_latency", "avg"),
            ("request_throughput", "request_throughput", "avg"),
            ("output_token_throughput", "output_token_throughput", "avg"),
        ] {
            let r = row(metric);
            assert_eq!(r["baseline"], gp[key][stat], "{metric}: {r}");
            assert!(r["current"].as_f64().unwrap() > 0.0, "{metric}: {r}");
            assert!(r["change_pct"].is_number(), "{metric}: {r}");
        }
    }
    // `report` reads it too.
    let (code, out, err) = run_in(
        &["report", fixture.to_str().unwrap(), "-o", "r.html"],
        tmp.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    let html = std::fs::read_to_string(tmp.path().join("r.html")).unwrap();
    assert!(
        html.contains("genai_perf_run"),
        "the run is named in the report"
    );
}

/// Adds `plan`'s workload fingerprint to every level JSON under `run`, as `profile` writes it.
fn stamp(run: &Path, plan: &ttftbench::plan::RunPlan) {
    for entry in std::fs::read_dir(run).unwrap() {
        let file = entry.unwrap().path().join("profile_export_genai_perf.json");
        if !file.is_file() {
            continue;
        }
        let mut doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        doc["workload_fingerprint"] = serde_json::to_value(plan.fingerprint()).unwrap();
        std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}

#[test]
fn mismatched_workloads_are_refused_unless_allowed() {
    use ttftbench::plan::RunPlan;
    use ttftbench::plan::resolve::{TargetSpec, target};
    let tmp = tempfile::tempdir().unwrap();
    fixtures(tmp.path());
    let (base, cur) = ("bench/20260102_1200", "bench/20260102_1300");
    // Runs without a fingerprint (older ttftbench, GenAI-Perf) compare, with a note.
    let (code, out, err) = run_in(&["compare", base, cur], tmp.path());
    assert_eq!((code, out.as_str()), (1, TABLE));
    assert!(err.contains("records no workload fingerprint"), "{err}");

    let plan = RunPlan::new(
        target(&TargetSpec {
            model: "gpt2".into(),
            ..TargetSpec::default()
        })
        .unwrap(),
    );
    let mut short = plan.clone();
    short.workload.output = Some(ttftbench::workload::OutputLength {
        mean: 10,
        stddev: 0,
        deterministic: false,
    });
    stamp(&tmp.path().join(base), &plan);
    stamp(&tmp.path().join(cur), &plan);
    let (code, out, err) = run_in(&["compare", base, cur], tmp.path());
    assert_eq!((code, out.as_str()), (1, TABLE));
    assert!(!err.contains("fingerprint"), "{err}");

    stamp(&tmp.path().join(cur), &short);
    let (code, out, err) = run_in(&["compare", base, cur], tmp.path());
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains("different workloads")
            && err.contains("output: left to the server → 10±0 tokens")
            && err.contains("--allow-mismatch"),
        "{err}"
    );
    let (code, out, err) = run_in(&["compare", base, cur, "--allow-mismatch"], tmp.path());
    assert_eq!((code, out.as_str()), (1, TABLE));
    assert!(
        err.contains("warning: comparing different workloads"),
        "{err}"
    );
}

/// Sets the recorded server identity of every level JSON under `run`, as `profile` writes it.
fn stamp_server(run: &Path, name: &str, version: &str) {
    for entry in std::fs::read_dir(run).unwrap() {
        let file = entry.unwrap().path().join("profile_export_genai_perf.json");
        if !file.is_file() {
            continue;
        }
        let mut doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        doc["context"] = serde_json::json!({"run_id": "r", "server": {"name": name, "version": version, "source": "GET /v2"}});
        std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}

#[test]
fn a_changed_server_version_is_noted() {
    let tmp = tempfile::tempdir().unwrap();
    fixtures(tmp.path());
    let (base, cur) = ("bench/20260102_1200", "bench/20260102_1300");
    stamp_server(&tmp.path().join(base), "triton", "2.50.0");
    stamp_server(&tmp.path().join(cur), "triton", "2.50.0");
    let (_, out, _) = run_in(&["compare", base, cur], tmp.path());
    assert!(!out.contains("server"), "{out}");
    stamp_server(&tmp.path().join(cur), "triton", "2.51.0");
    let (code, out, _) = run_in(&["compare", base, cur], tmp.path());
    assert_eq!(code, 1, "the regressions still decide the exit code");
    assert!(
        out.contains("server version changed: triton 2.50.0 → triton 2.51.0"),
        "{out}"
    );
    let (_, json, _) = run_in(&["compare", base, cur, "--format", "json"], tmp.path());
    assert!(json.contains("server version changed"), "{json}");
}
