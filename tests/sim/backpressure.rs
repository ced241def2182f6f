//! A collector slower than the load (`load::queue`): the level's `requests.jsonl` is a pipe that
//! nobody reads until the load has stalled, as a stuck disk would, while the run sends more
//! requests than the queue between the workers and the collector holds. The load is held back
//! instead of the queue growing; nothing is lost from any export; the verdict says how long the
//! load was held and calls the level not trustworthy.

use crate::common;

use std::io::Read;
use std::time::Duration;

use ttftbench::load::queue::CAPACITY;
use ttftbench::sim::{EngineConfig, SimConfig};

/// Opens `path` (a pipe) and reads nothing until `served()` (the requests the server has
/// answered) stops growing; then reads it to the end. Returns how many had been answered when
/// the load stalled, and the lines read.
fn stuck_reader(
    path: std::path::PathBuf,
    served: impl Fn() -> u64 + Send + 'static,
) -> std::thread::JoinHandle<(u64, Vec<String>)> {
    std::thread::spawn(move || {
        let mut f = std::fs::File::open(&path).expect("the pipe opens");
        let stalled_at = loop {
            let before = served();
            std::thread::sleep(Duration::from_millis(500));
            let after = served();
            if after == before && after > 0 {
                break after;
            }
        };
        let mut text = Vec::new();
        f.read_to_end(&mut text).expect("reading the pipe");
        let lines = String::from_utf8(text)
            .expect("UTF-8 lines")
            .lines()
            .map(str::to_string)
            .collect();
        (stalled_at, lines)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_records_file_holds_the_load_back_and_loses_nothing() {
    let sim = std::sync::Arc::new(
        common::start(SimConfig {
            engine: EngineConfig::instant(),
            ..SimConfig::default()
        })
        .await,
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("level");
    std::fs::create_dir_all(&dir).unwrap();
    let pipe = dir.join("requests.jsonl");
    let c_path = std::ffi::CString::new(pipe.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let counted = sim.clone();
    let reader = stuck_reader(pipe, move || {
        counted
            .first_response_histogram("gpt2")
            .map_or(0, |h| h.len())
    });

    let count = CAPACITY + 1000;
    let out = common::profile(&common::chat_args(
        &sim.http_url(),
        &dir,
        &[
            "--concurrency",
            "32",
            "--request-count",
            &count.to_string(),
            "--warmup-request-count",
            "10",
            "--output-tokens-mean",
            "4",
            "--raw-export",
            "full",
        ],
    ))
    .await
    .expect("the run ends");
    let (stalled_at, lines) = reader.join().expect("the reader ends");
    // The load stopped short of the run's requests while nothing was written: held back.
    assert!(stalled_at < count as u64 + 10, "stalled at {stalled_at}");

    // Every request, warm-up included, is a whole line of requests.jsonl.
    assert_eq!(lines.len(), count + 10);
    let measured = lines
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("whole JSON"))
        .filter(|r| r["phase"] == "measure")
        .count();
    assert_eq!(measured, count);
    // And every measured request is in the raw export and the statistics.
    let export = common::json_file(&dir.join("profile_export.json"));
    let requests = export["experiments"][0]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), count);
    let doc = common::json_file(&dir.join("profile_export_genai_perf.json"));
    assert_eq!(doc["request_count"]["avg"].as_f64(), Some(count as f64));
    assert_eq!(out.levels[0].summary.stats.request_count, count as u64);

    // The hold is measured and named in the verdict.
    let v = &doc["validity"];
    assert_eq!(v["trustworthy"], false, "{v}");
    assert!(v["held_back_sends"].as_u64().unwrap() > 0, "{v}");
    assert!(v["held_back_ms"].as_f64().unwrap() > 0.0, "{v}");
    let reasons = v["reasons"].to_string();
    assert!(reasons.contains("waited for the collector"), "{reasons}");
}

/// The same run with a file that keeps up: no hold, and a verdict that says nothing of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_keeps_up_never_holds_the_load() {
    let sim = common::start(SimConfig {
        engine: EngineConfig::instant(),
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("level");
    let count = CAPACITY * 2;
    common::profile(&common::chat_args(
        &sim.http_url(),
        &dir,
        &[
            "--concurrency",
            "8",
            "--request-count",
            &count.to_string(),
            "--output-tokens-mean",
            "4",
        ],
    ))
    .await
    .expect("the run ends");
    let doc = common::json_file(&dir.join("profile_export_genai_perf.json"));
    let v = &doc["validity"];
    assert_eq!(v["held_back_sends"], 0, "{v}");
    assert!(v["held_back_ms"].is_null(), "{v}");
    assert_eq!(common::rows(&dir).len(), count);
}
