//! One plan run as several processes (`--shard I/N`, `--start-at`) and added up by `merge`:
//! random partitions of a recorded run merge into exactly the whole's histograms; shard
//! processes of the binary started at different moments begin together at the agreed time and
//! merge into the counts and percentiles of all their requests; merge refuses mixed plans,
//! missing or repeated shards and directories that are not shard output, with exit 2.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;
use ttftbench::artifact::histograms;
use ttftbench::artifact::records::read_row;
use ttftbench::metrics::PercentileMethod;
use ttftbench::record::RequestRecord;
use ttftbench::stats::Aggregate;

const BIN: &str = env!("CARGO_BIN_EXE_ttftbench");

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn records(dir: &Path) -> Vec<RequestRecord> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .expect("requests.jsonl")
        .lines()
        .map(|l| read_row(l).expect("a row").record)
        .collect()
}

/// The aggregate of `recs`, written to `histograms.json` text and read back, as a shard's is.
fn through_file(recs: &[&RequestRecord]) -> Aggregate {
    let mut agg = Aggregate::new();
    for r in recs {
        agg.record(r, &[], &[]);
    }
    let text = serde_json::to_string(&histograms::encode(&agg, 0)).unwrap();
    let mut back = Aggregate::new();
    let (_, counters) =
        histograms::decode(&serde_json::from_str(&text).unwrap(), &mut back).unwrap();
    assert!(counters);
    back
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_partitions_of_a_run_merge_into_the_whole() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("whole");
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--synthetic-input-tokens-mean",
        "50",
        "--output-tokens-mean",
        "4",
        "--concurrency",
        "8",
        "--request-count",
        "240",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]))
    .await
    .unwrap();
    sim.shutdown().await;
    assert_eq!(out.levels[0].summary.stats.request_count, 240);
    let all = records(&dir);
    let whole = through_file(&all.iter().collect::<Vec<_>>());
    let whole_doc = histograms::encode(&whole, 0);
    // The run's own histograms.json holds the same TTFT histogram as its rows give.
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("histograms.json")).unwrap())
            .unwrap();
    for k in ["count", "min", "max", "sum"] {
        let p = format!("/metrics/time_to_first_token/{k}");
        assert_eq!(recorded.pointer(&p), whole_doc.pointer(&p), "{k}");
    }
    // The same counts (the run's histogram was sized as it grew, so its bytes may differ).
    let mut run_agg = Aggregate::new();
    histograms::decode(&recorded, &mut run_agg).unwrap();
    let m = ttftbench::metrics::Metric::TimeToFirstToken;
    assert_eq!(buckets(run_agg.dist(m)), buckets(whole.dist(m)));
    for p in [1.0, 50.0, 90.0, 99.0, 100.0] {
        assert_eq!(
            run_agg.dist(m).percentile(p, PercentileMethod::Linear),
            whole.dist(m).percentile(p, PercentileMethod::Linear)
        );
    }
    let mut rng = StdRng::seed_from_u64(10);
    for _ in 0..20 {
        let parts = rng.random_range(2..=6usize);
        let mut groups: Vec<Vec<&RequestRecord>> = vec![Vec::new(); parts];
        for r in &all {
            groups[rng.random_range(0..parts)].push(r);
        }
        let mut merged = Aggregate::new();
        for g in &groups {
            merged.merge(&through_file(g));
        }
        same_as_whole(&merged, &whole_doc, &whole, parts);
    }
}

/// Every non-empty bucket of a histogram: (highest value equivalent, count).
fn buckets(d: &ttftbench::stats::Dist) -> Vec<(u64, u64)> {
    d.histogram()
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Bucket-exact histograms (their serialized bytes depend on how each one grew), counts, extremes, sums and counters; the sum of squares (a float
/// added in another order) to 1e-12; every percentile of every metric equal.
fn same_as_whole(merged: &Aggregate, whole_doc: &Value, whole: &Aggregate, parts: usize) {
    let doc = histograms::encode(merged, 0);
    assert_eq!(doc["counters"], whole_doc["counters"], "{parts} parts");
    let metrics = whole_doc["metrics"].as_object().unwrap();
    assert_eq!(doc["metrics"].as_object().unwrap().len(), metrics.len());
    for (name, w) in metrics {
        let m = &doc["metrics"][name];
        for k in ["count", "min", "max", "sum"] {
            assert_eq!(m[k], w[k], "{name}.{k}, {parts} parts");
        }
        let (a, b) = (m["sum_sq"].as_f64().unwrap(), w["sum_sq"].as_f64().unwrap());
        assert!((a - b).abs() <= b.abs() * 1e-12, "{name}.sum_sq");
    }
    for ((metric, a), (_, b)) in merged.dists().zip(whole.dists()) {
        assert_eq!(buckets(a), buckets(b), "{metric:?}, {parts} parts");
        for method in [PercentileMethod::Linear, PercentileMethod::NearestRank] {
            for p in [1.0, 25.0, 50.0, 90.0, 99.0, 99.9] {
                assert_eq!(
                    a.percentile(p, method),
                    b.percentile(p, method),
                    "{metric:?} p{p}"
                );
            }
        }
    }
}

/// The merged `profile_export.json` holds every shard's requests, unchanged and on the one
/// (Unix ns) time base, its window spanning theirs; GenAI-Perf's own parser, when its venv is
/// here, recomputes the merged level's numbers from it.
fn raw_exports_merged(shards: &[PathBuf], merged: &Path) {
    let export = |d: &Path| json_file(&d.join("profile_export.json"));
    let requests = |doc: &Value| -> Vec<Value> {
        doc["experiments"][0]["requests"]
            .as_array()
            .unwrap()
            .clone()
    };
    let m = export(merged);
    assert_eq!(m["experiments"].as_array().unwrap().len(), 1);
    assert_eq!(
        m["experiments"][0]["experiment"],
        serde_json::json!({"mode": "concurrency", "value": 3}),
        "the plan's level"
    );
    let mut want: Vec<Value> = Vec::new();
    let (mut lo, mut hi) = (u64::MAX, 0);
    for d in shards {
        let doc = export(d);
        assert_eq!(doc["service_kind"], m["service_kind"]);
        assert_eq!(doc["endpoint"], m["endpoint"]);
        let w = &doc["experiments"][0]["window_boundaries"];
        lo = lo.min(w[0].as_u64().unwrap());
        hi = hi.max(w[1].as_u64().unwrap());
        want.extend(requests(&doc));
    }
    let mut got = requests(&m);
    assert_eq!(got.len(), 90, "every shard's requests");
    let key = |r: &Value| r["timestamp"].as_u64().unwrap();
    let last = |r: &Value| {
        r["response_timestamps"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_u64()
            .unwrap()
    };
    assert!(
        got.windows(2).all(|w| last(&w[0]) <= last(&w[1])),
        "in order of their last response"
    );
    got.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(got, want, "the requests as the shards wrote them");
    assert_eq!(
        m["experiments"][0]["window_boundaries"],
        serde_json::json!([lo, hi])
    );
    if let Some(python) = genai_perf_python() {
        let table = run_python(&python, "scripts/genai_perf/crosscheck.py", &[merged]);
        println!("{table}");
        assert!(table.contains(" 0 failed"), "{table}");
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The value at `q` of `v` sorted, numpy's linear interpolation.
fn linear(v: &[f64], q: f64) -> f64 {
    let pos = (v.len() - 1) as f64 * q;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Four shard processes of concurrency 3 (the fourth has no worker) with one `--start-at`.
fn shard_args(url: &str, start_at: &str, index: u32, model: &str, dir: &Path) -> Vec<String> {
    args(&[
        "profile",
        "-m",
        model,
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        url,
        "--synthetic-input-tokens-mean",
        "50",
        "--output-tokens-mean",
        "4",
        "--concurrency",
        "3",
        "--request-count",
        "90",
        "--num-prompts",
        "90",
        "--start-at",
        start_at,
        "--shard",
        &format!("{index}/4"),
        // Shards' raw exports are merged too (raw_exports_merged).
        "--raw-export",
        "full",
        "--artifact-dir",
        dir.to_str().unwrap(),
        "--quiet",
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_processes_start_together_and_merge_exactly() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..4).map(|i| tmp.path().join(format!("s{i}"))).collect();
    // Generous lead time: four processes start on a busy 2-core machine.
    let t_ns = (unix_now_ns() / 1_000_000_000 + 5) * 1_000_000_000;
    let start_at = (t_ns / 1_000_000_000).to_string();
    let url = sim.http_url();
    let mut children = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        children.push(
            tokio::process::Command::new(BIN)
                .args(shard_args(&url, &start_at, i as u32, "gpt2", d))
                .output(),
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let mut outputs = Vec::new();
    for c in children {
        outputs.push(c.await.unwrap());
    }
    sim.shutdown().await;
    for (i, o) in outputs.iter().enumerate() {
        assert!(o.status.success(), "shard {i}: {}", stderr(o));
    }
    let idle = json_file(&dirs[3].join("shard.json"));
    assert!(
        idle["idle"].as_str().unwrap().contains("no worker"),
        "{idle}"
    );
    let mut ttft = Vec::new();
    let mut prompts = Vec::new();
    for d in &dirs[..3] {
        let rows = measured(d);
        assert_eq!(rows.len(), 30, "{}", d.display());
        let first = rows.iter().map(|r| r["sent_ns"].as_u64().unwrap()).min();
        let late_ms = (first.unwrap() as f64 - t_ns as f64) / 1e6;
        assert!(
            (-1.0..150.0).contains(&late_ms),
            "{}: first request {late_ms:.1} ms after --start-at",
            d.display()
        );
        ttft.extend(rows.iter().map(|r| r["ttft_ms"].as_f64().unwrap()));
        // Prompts are partitioned: shard i sends the dataset's entries i, i + 4, ... and
        // records their index in the whole dataset.
        let index = prompts.len() as u64;
        let own: Vec<u64> = rows
            .iter()
            .map(|r| r["prompt_index"].as_u64().unwrap())
            .collect();
        assert!(own.iter().all(|p| p % 4 == index && *p < 90), "{own:?}");
        prompts.push(own);
    }

    let merged = tmp.path().join("merged");
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let mut merge_args = vec!["merge".to_string()];
    merge_args.extend(dirs.iter().map(s));
    merge_args.extend(["-o".into(), s(&merged)]);
    let o = Command::new(BIN).args(&merge_args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&merged.join("profile_export_genai_perf.json"));
    assert_eq!(doc["request_count"]["avg"], 90);
    assert_eq!(doc["shards"]["count"], 4);
    assert_eq!(doc["shards"]["shards"][3]["requests"], 0);
    assert!(doc["shards"]["start_skew_ms"].as_f64().unwrap() < 150.0);
    assert_eq!(measured(&merged).len(), 90);
    raw_exports_merged(&dirs[..3], &merged);
    ttft.sort_by(f64::total_cmp);
    for (p, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
        let exact = linear(&ttft, q);
        let got = doc["time_to_first_token"][p].as_f64().unwrap();
        // HDR keeps 3 significant digits: within 0.1 % of the exact value.
        assert!(
            (got - exact).abs() <= exact * 1e-3,
            "TTFT {p}: merged {got} ms, from the rows {exact} ms"
        );
    }

    // Refusals, each exit 2 with the directory named.
    let other = tmp.path().join("other");
    let o = run(&shard_args(&url, &start_at, 3, "llama", &other)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert!(
        o.status.success(),
        "an idle shard sends nothing: {}",
        stderr(&o)
    );
    let out = tmp.path().join("refused");
    let (d0, d1, d2, d3) = (s(&dirs[0]), s(&dirs[1]), s(&dirs[2]), s(&dirs[3]));
    let junk = tmp.path().join("junk");
    std::fs::create_dir_all(&junk).unwrap();
    std::fs::write(junk.join("notes.txt"), "not a run").unwrap();
    let cases = [
        (
            vec![d0.clone(), d1.clone(), d2.clone(), s(&other)],
            "plan",
            s(&other),
        ),
        (
            vec![d0.clone(), d1.clone(), d3.clone()],
            "shard 2 of 4 missing",
            d3.clone(),
        ),
        (
            vec![d0.clone(), d0.clone(), d1.clone(), d2.clone(), d3.clone()],
            "both shard 0/4",
            d0.clone(),
        ),
        (
            vec![d0.clone(), s(&junk)],
            "is not ttftbench output",
            s(&junk),
        ),
    ];
    for (given, says, names) in cases {
        let mut a = vec!["merge".to_string()];
        a.extend(given);
        a.extend(["-o".into(), s(&out)]);
        let o = Command::new(BIN).args(&a).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {e}");
        assert!(e.contains(says) && e.contains(&names), "{a:?}: {e}");
    }
    assert!(!out.exists(), "nothing written when refused");
}

/// Issue 41: an error kind written by the client reads back from every file that holds it.
/// Two shard processes run with too few file descriptors, so connections fail with EMFILE
/// (`too_many_open_files`); `merge` reads their `histograms.json` and `requests.jsonl` and adds
/// the kind's counts up, `report` and `compare` read the merged run and show its failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_open_files_reads_back_through_merge_report_and_compare() {
    let kind = ttftbench::record::ErrorKind::OpenFiles.key().into_owned();
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("s{i}"))).collect();
    let start_at = (unix_now_ns() / 1_000_000_000 + 3).to_string();
    let mut children = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        let profile = args(&[
            "profile",
            "-m",
            "gpt2",
            "--endpoint-type",
            "chat",
            "--streaming",
            "-u",
            &sim.http_url(),
            "--output-tokens-mean",
            "4",
            "--concurrency",
            "100",
            "--request-count",
            "200",
            "--start-at",
            &start_at,
            "--shard",
            &format!("{i}/2"),
            "--max-error-rate",
            "100%",
            "--artifact-dir",
            d.to_str().unwrap(),
            "--quiet",
        ]);
        let script = format!("ulimit -n 48 && exec {BIN} {}", profile.join(" "));
        children.push(
            tokio::process::Command::new("bash")
                .args(["-c", &script])
                .output(),
        );
    }
    for c in children {
        let o = c.await.unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    sim.shutdown().await;
    let failed = |dir: &Path| -> u64 {
        let doc = json_file(&dir.join("profile_export_genai_perf.json"));
        doc["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["kind"] == kind.as_str())
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    let per_shard: Vec<u64> = dirs.iter().map(|d| failed(d)).collect();
    assert!(per_shard.iter().all(|&n| n > 0), "{per_shard:?}");

    let merged = tmp.path().join("merged");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let o = run(&["merge", &s(&dirs[0]), &s(&dirs[1]), "-o", &s(&merged)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(failed(&merged), per_shard.iter().sum::<u64>());
    let rows = measured(&merged);
    let failed_rows = rows.iter().filter(|r| r["error"] == kind.as_str()).count();
    assert_eq!(failed_rows as u64, failed(&merged));

    let o = run(&["report", &s(&merged)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(merged.join("report.html")).unwrap();
    let badge = format!("{} failed requests", failed(&merged));
    assert!(page.contains(&badge), "the report shows no '{badge}'");

    // compare's error rate on each side is the failures over the measured requests.
    let o = run(&["compare", &s(&dirs[0]), &s(&merged), "--format", "json"]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    let rate = rows.iter().find(|r| r["metric"] == "error_rate").unwrap();
    for (side, dir) in [("baseline", &dirs[0]), ("current", &merged)] {
        let share = failed(dir) as f64 / measured(dir).len() as f64;
        let shown = rate[side].as_f64().unwrap();
        assert!(
            (shown - share).abs() < 1e-3,
            "{side}: {shown} against {share}"
        );
    }
}
