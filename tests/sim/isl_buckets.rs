//! TTFT by prompt length (`--isl-buckets`, issue 18.2): against the simulator, whose prefill
//! grows with the prompt (0.1 ms a token), prompts spread over 100–2,000 tokens give a TTFT
//! that rises bucket by bucket, in the level JSON, the CSV's third section, histograms.json,
//! report.html, and through `merge` of two shards (the console table's exact text is tested
//! in `report::console`).

use crate::common;

use std::path::Path;

use common::{args, bin, chat_args, json_file, profile, start_round};
use serde_json::Value;

/// The flags of a streamed chat run whose prompts spread over about 100–2,000 tokens.
fn spread(url: &str, dir: &Path, buckets: &str) -> Vec<String> {
    chat_args(
        url,
        dir,
        &[
            "--synthetic-input-tokens-mean",
            "1050",
            "--synthetic-input-tokens-stddev",
            "500",
            "--output-tokens-mean",
            "2",
            "--num-prompts",
            "60",
            "--request-count",
            "60",
            "--isl-buckets",
            buckets,
        ],
    )
}

/// The buckets' (label, count, TTFT avg) from a level document.
fn buckets(doc: &Value) -> Vec<(u64, Option<u64>, u64, Option<f64>)> {
    doc["isl_buckets"]
        .as_array()
        .expect("isl_buckets in the level JSON")
        .iter()
        .map(|b| {
            (
                b["min_isl"].as_u64().unwrap(),
                b["max_isl"].as_u64(),
                b["count"].as_u64().unwrap(),
                b["time_to_first_token"]["avg"].as_f64(),
            )
        })
        .collect()
}

/// TTFT averages of the non-empty buckets rise with the bucket, by at least the prefill of
/// the lengths between them (0.1 ms a token, less the spread within a bucket).
fn assert_rising(b: &[(u64, Option<u64>, u64, Option<f64>)]) {
    let avgs: Vec<f64> = b.iter().filter_map(|x| x.3).collect();
    assert!(avgs.len() >= 3, "{b:?}");
    for w in avgs.windows(2) {
        assert!(w[1] > w[0] + 5.0, "TTFT rises with the prompt: {b:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_rises_with_the_prompt_length_bucket() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = spread(&sim.http_url(), tmp.path(), "500,1000,1500");
    a.extend(args(&["--concurrency", "1,2"]));
    let out = profile(&a).await.unwrap();
    let dir = &out.levels[0].dir;
    let doc = json_file(&dir.join("profile_export_genai_perf.json"));
    let b = buckets(&doc);
    assert_eq!(
        b.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [
            (0, Some(500)),
            (500, Some(1000)),
            (1000, Some(1500)),
            (1500, None)
        ]
    );
    assert_eq!(
        b.iter().map(|x| x.2).sum::<u64>(),
        60,
        "every request in one bucket"
    );
    assert_rising(&b);
    // Each request's bucket is the one its input length says (from requests.jsonl).
    let rows = common::measured(dir);
    let long = rows
        .iter()
        .filter(|r| r["isl"].as_u64().unwrap() >= 1500)
        .count();
    assert_eq!(b[3].2, long as u64);

    let csv = std::fs::read_to_string(dir.join("profile_export_genai_perf.csv")).unwrap();
    let section = csv.split("\n\n").nth(2).expect("a third CSV section");
    let lines: Vec<&str> = section.lines().collect();
    assert_eq!(lines[0], ttftbench::artifact::genai_perf::CSV_ISL_HEADER);
    assert!(lines[1].starts_with("<500,0,500,"), "{section}");
    assert!(lines[4].starts_with(">=1500,1500,,"), "{section}");
    assert!(lines[4].ends_with(",ms"), "{section}");

    let hist = json_file(&dir.join("histograms.json"));
    assert_eq!(
        hist["isl_buckets"]["edges"],
        serde_json::json!([500, 1000, 1500])
    );
    let html = std::fs::read_to_string(out.sweep_dir.unwrap().join("report.html")).unwrap();
    assert!(html.contains("TTFT p50 by input length"), "report chart");
    assert!(html.contains("1000-1499 input tokens"), "bucket tooltips");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_buckets_hold_a_quarter_each_and_survive_a_shard_merge() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..2).map(|i| tmp.path().join(format!("s{i}"))).collect();
    for (i, d) in dirs.iter().enumerate() {
        let mut a = spread(&sim.http_url(), d, "auto");
        a.extend(args(&["--concurrency", "2", "--shard", &format!("{i}/2")]));
        profile(&a).await.unwrap();
    }
    let merged = tmp.path().join("merged");
    let mut cmd = bin();
    cmd.arg("merge").args(&dirs).arg("-o").arg(&merged);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let level = |d: &Path| json_file(&d.join("profile_export_genai_perf.json"));
    let parts: Vec<Value> = dirs.iter().map(|d| level(d)).collect();
    let whole = level(&merged);
    let b = buckets(&whole);
    assert_eq!(b.len(), 4, "quartiles: {b:?}");
    assert_eq!(
        buckets(&parts[0]).iter().map(|x| x.0).collect::<Vec<_>>(),
        buckets(&parts[1]).iter().map(|x| x.0).collect::<Vec<_>>(),
        "both shards cut at the whole dataset's quartiles"
    );
    for (i, x) in b.iter().enumerate() {
        let sum: u64 = parts.iter().map(|p| buckets(p)[i].2).sum();
        assert_eq!(x.2, sum, "bucket {i} adds the shards' requests");
        assert!((10..=20).contains(&x.2), "about a quarter of 60: {b:?}");
    }
    assert_rising(&b);
}

#[test]
fn bad_edges_are_refused_before_anything_is_sent() {
    let (code, _, err) = common::run_in(
        &["profile", "-m", "m", "--isl-buckets", "512,128"],
        Path::new("."),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the edges must rise"), "{err}");
    let (code, _, err) = common::run_in(
        &["profile", "-m", "m", "--isl-buckets", "x"],
        Path::new("."),
    );
    assert_eq!(code, 2);
    assert!(err.contains("e.g. 128,512,2048, or auto"), "{err}");
}
