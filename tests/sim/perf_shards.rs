//! `ttftbench perf --shard I/N` run as processes of the binary against the simulator's tensor
//! model over gRPC, with one `--start-at`, and added up by `merge`: the shards' first requests
//! begin together at the agreed moment, each later level on its shared slot, a shard with no
//! worker at a level says so; the merged `perf.csv` holds the union's count and percentiles
//! (those of all the shards' rows, within HDR precision); merging a perf shard with a profile
//! shard is refused with exit 2.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use serde_json::Value;
use ttftbench::sim::SimConfig;

const BIN: &str = env!("CARGO_BIN_EXE_ttftbench");

/// The two tests each start three shard processes with a deadline: one at a time on 2 cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// A start time whole seconds ahead, leaving the processes time to start on a busy machine.
fn start_time() -> (u64, String) {
    let secs = unix_now_ns() / 1_000_000_000 + 5;
    (secs * 1_000_000_000, secs.to_string())
}

/// Starts `perf <common> --shard i/3 --artifact-dir dirs[i]` for each shard, 0.4 s apart, and
/// waits for all; every shard must succeed.
async fn run_shards(common: &[&str], dirs: &[PathBuf]) -> Vec<Output> {
    let mut children = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        let mut a: Vec<String> = args(common);
        a.extend(args(&[
            "--shard",
            &format!("{i}/{}", dirs.len()),
            "--artifact-dir",
            &s(d),
        ]));
        children.push(tokio::process::Command::new(BIN).args(a).output());
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let mut out = Vec::new();
    for c in children {
        let o = c.await.unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        out.push(o);
    }
    out
}

fn merge(dirs: &[PathBuf], out: &Path) -> Output {
    let mut a = vec!["merge".to_string()];
    a.extend(dirs.iter().map(|d| s(d)));
    a.extend(["-o".into(), s(out)]);
    std::process::Command::new(BIN).args(&a).output().unwrap()
}

/// perf_analyzer's percentile of sorted values: the sample at `(p / 100) × (n − 1) + 0.5`,
/// truncated.
fn nearest_rank(v: &[f64], p: f64) -> f64 {
    v[((p / 100.0) * (v.len() - 1) as f64 + 0.5) as usize]
}

/// Asserts that `dir`'s measured rows all started within 150 ms after `at_ns`; returns them.
fn punctual_rows(dir: &Path, at_ns: u64) -> Vec<Value> {
    let rows = measured(dir);
    let first = rows.iter().map(|r| r["sent_ns"].as_u64().unwrap()).min();
    let late_ms = (first.expect("rows") as f64 - at_ns as f64) / 1e6;
    assert!(
        (-1.0..150.0).contains(&late_ms),
        "{}: first request {late_ms:.1} ms after its planned start",
        dir.display()
    );
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perf_shards_start_together_and_merge_into_the_union() {
    let _one = SERIAL.lock().await;
    let sim = start(SimConfig::default()).await;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("s{i}"))).collect();
    let (t_ns, at) = start_time();
    let url = sim.grpc_target();
    let outputs = run_shards(
        &[
            "perf",
            "-m",
            "bert_classifier",
            "-u",
            &url,
            "--concurrency-range",
            "4",
            "--request-count",
            "120",
            "--start-at",
            &at,
        ],
        &dirs,
    )
    .await;
    sim.shutdown().await;
    assert!(
        stderr(&outputs[1]).contains("shard 1/3: first level starts at")
            || String::from_utf8_lossy(&outputs[1].stdout).contains("shard 1/3: first level"),
        "the schedule is said"
    );
    let mut latencies = Vec::new();
    let mut count = 0;
    for (i, d) in dirs.iter().enumerate() {
        let level = d.join("concurrency4");
        let rows = punctual_rows(&level, t_ns);
        assert_eq!(rows.len(), 40, "shard {i}: 120 requests over 3 shards");
        latencies.extend(rows.iter().map(|r| r["latency_ms"].as_f64().unwrap()));
        let rec = json_file(&level.join("shard.json"));
        assert_eq!(rec["mode"], "perf");
        assert_eq!(
            rec["part"]["concurrency"],
            [2, 1, 1][i],
            "concurrency 4 over 3 shards"
        );
        let doc = json_file(&level.join("profile_export_genai_perf.json"));
        assert_eq!(doc["perf"]["windows"], 1);
        assert_eq!(doc["schema_version"], 2);
        let c = &doc["context"];
        assert_eq!(c["server"]["name"], "ttftbench-sim", "{c}");
        assert_eq!(c["model"]["name"], "bert_classifier", "{c}");
        count += doc["request_count"]["avg"].as_u64().unwrap();
    }
    assert_eq!(count, 120);

    let merged = tmp.path().join("merged");
    let o = merge(&dirs, &merged);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&merged.join("profile_export_genai_perf.json"));
    assert_eq!(doc["request_count"]["avg"], 120);
    assert_eq!(doc["shards"]["count"], 3);
    assert_eq!(measured(&merged).len(), 120);
    let (header, rows) = read_csv(&std::fs::read_to_string(merged.join("perf.csv")).unwrap());
    assert_eq!(header[0], "Concurrency");
    assert_eq!(rows.len(), 1);
    assert_eq!(num(&rows[0], "Concurrency"), 4.0, "the plan's level");
    latencies.sort_by(f64::total_cmp);
    for p in [50, 90, 95, 99] {
        let exact_us = nearest_rank(&latencies, f64::from(p)) * 1e3;
        let got = num(&rows[0], &format!("p{p} latency"));
        // HDR keeps 3 significant digits; the CSV rounds to whole microseconds.
        assert!(
            (got - exact_us).abs() <= exact_us * 1e-3 + 1.0,
            "p{p}: merged {got} us, from the rows {exact_us} us"
        );
    }
    let tput = num(&rows[0], "Inferences/Second");
    assert!(tput > 0.0, "{rows:?}");

    // A profile shard is not a part of this run: refused, naming it.
    let other = tmp.path().join("profile-shard");
    let o = std::process::Command::new(BIN)
        .args([
            "profile",
            "-m",
            "gpt2",
            "-u",
            "http://127.0.0.1:9",
            "--concurrency",
            "2",
            "--shard",
            "2/3",
            "--artifact-dir",
            &s(&other),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "an idle shard sends nothing: {}",
        stderr(&o)
    );
    let refused = tmp.path().join("refused");
    let o = merge(&[dirs[0].clone(), dirs[1].clone(), other.clone()], &refused);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("plan") && e.contains(&s(&other)), "{e}");
    assert!(!refused.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perf_shard_levels_share_slots_and_idle_shards_say_so() {
    let _one = SERIAL.lock().await;
    let sim = start(SimConfig::default()).await;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("s{i}"))).collect();
    let (t_ns, at) = start_time();
    let url = sim.grpc_target();
    // Windows of 1.2 × 300 ms, all 3 measured on every shard: 1.08 s per level, so a slot of
    // 1.08 s + 5 s of drain allowance, in whole seconds: 7 s.
    let outputs = run_shards(
        &[
            "perf",
            "-m",
            "bert_classifier",
            "-u",
            &url,
            "--concurrency-range",
            "2:4:2",
            "-p",
            "300",
            "-r",
            "3",
            "-s",
            "90",
            "--start-at",
            &at,
        ],
        &dirs,
    )
    .await;
    sim.shutdown().await;
    let said = format!(
        "{}{}",
        stderr(&outputs[0]),
        String::from_utf8_lossy(&outputs[0].stdout)
    );
    assert!(
        said.contains("then a level every 7 s") && said.contains("all 3 windows"),
        "{said}"
    );
    let idle = json_file(&dirs[2].join("concurrency2").join("shard.json"));
    assert!(
        idle["idle"].as_str().unwrap().contains("no worker"),
        "{idle}"
    );
    assert!(!dirs[2].join("concurrency2/histograms.json").exists());
    let mut count = 0;
    for (i, d) in dirs.iter().enumerate() {
        let level = d.join("concurrency4");
        punctual_rows(&level, t_ns + 7_000_000_000);
        let doc = json_file(&level.join("profile_export_genai_perf.json"));
        assert_eq!(
            doc["perf"]["windows"], 3,
            "shard {i}: every window measured"
        );
        count += doc["request_count"]["avg"].as_u64().unwrap();
        if i < 2 {
            punctual_rows(&d.join("concurrency2"), t_ns);
        }
    }
    let merged = tmp.path().join("merged");
    let o = merge(&dirs, &merged);
    assert!(o.status.success(), "{}", stderr(&o));
    let (_, rows) = read_csv(&std::fs::read_to_string(merged.join("perf.csv")).unwrap());
    let mut levels: Vec<f64> = rows.iter().map(|r| num(r, "Concurrency")).collect();
    levels.sort_by(f64::total_cmp);
    assert_eq!(levels, [2.0, 4.0]);
    let c4 = json_file(&merged.join("concurrency4/profile_export_genai_perf.json"));
    assert_eq!(c4["request_count"]["avg"].as_u64().unwrap(), count);
    assert_eq!(c4["shards"]["shards"].as_array().unwrap().len(), 3);
    let c2 = json_file(&merged.join("concurrency2/profile_export_genai_perf.json"));
    assert_eq!(c2["shards"]["shards"][2]["requests"], 0);
    assert!(merged.join("summary.csv").is_file() && merged.join("report.html").is_file());
}
