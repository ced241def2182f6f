//! A server that dies and comes back, rate-limits, resets streams or sends GOAWAY: every request
//! is accounted for, workers back off instead of spinning, rate limits are waited out as told,
//! and requests after the server returns succeed. Against the simulator's fault modes.

use crate::common;

use std::collections::BTreeMap;
use std::time::Instant;

use common::{args, measured, profile, start};
use serde_json::Value;
use ttftbench::sim::{EngineConfig, FaultConfig, SimConfig};

/// Short, steady requests: a 10-token answer in about 25 ms.
fn quick_engine() -> EngineConfig {
    EngineConfig {
        max_batch: 8,
        max_queue: 0,
        prefill_base_us: 1_000,
        prefill_us_per_token: 10,
        decode_base_us: 2_000,
        decode_us_per_seq: 0,
        ..EngineConfig::default()
    }
}

fn run_args(url: &str, dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut a = args(&[
        "-m",
        "gpt2",
        "--streaming",
        "--synthetic-input-tokens-mean",
        "20",
        "--output-tokens-mean",
        "10",
        "--output-tokens-mean-deterministic",
        "--num-prompts",
        "4",
        "-u",
        url,
        "--artifact-dir",
        &dir.display().to_string(),
    ]);
    a.extend(args(extra));
    a
}

/// Error kind → count over measured rows.
fn kinds(rows: &[Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in rows {
        if let Some(k) = r["error"].as_str() {
            *m.entry(k.to_string()).or_default() += 1;
        }
    }
    m
}

fn ns(r: &Value, k: &str) -> u64 {
    r[k].as_u64().unwrap_or(0)
}

/// Rows in send order.
fn by_send(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|r| ns(r, "sent_ns"));
    rows
}

/// 600 requests at concurrency 4 with a 2 s outage in the middle.
async fn restart(grpc: bool) {
    let sim = start(SimConfig {
        engine: quick_engine(),
        faults: FaultConfig {
            outage_after_ms: 1_500,
            outage_ms: 2_000,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let (url, endpoint) = if grpc {
        (sim.grpc_target(), vec![])
    } else {
        (sim.http_url(), vec!["--endpoint-type", "chat"])
    };
    let mut extra = vec!["--concurrency", "4", "--request-count", "600"];
    extra.extend(endpoint);
    let t0 = Instant::now();
    let out = profile(&run_args(&url, tmp.path(), &extra)).await.unwrap();
    let took = t0.elapsed();
    let s = &out.levels[0].summary.stats;
    let rows = by_send(measured(&out.levels[0].dir));
    let errors = kinds(&rows);
    eprintln!(
        "{}: {} ok, {} errors {:?} in {:.1} s",
        if grpc { "gRPC" } else { "HTTP" },
        s.request_count,
        s.error_count,
        errors,
        took.as_secs_f64()
    );
    assert_eq!(rows.len(), 600, "every request is accounted for");
    assert_eq!(s.request_count + s.error_count, 600);
    assert!(s.error_count >= 1, "the outage was seen");
    // Backoff: 2 s of downtime at concurrency 4 costs tens of errors, not hundreds.
    assert!(s.error_count <= 80, "{} errors: {errors:?}", s.error_count);
    for k in errors.keys() {
        assert!(
            [
                "connect_refused",
                "connection_reset",
                "stream_cut",
                "connect",
                "grpc_unavailable",
                "goaway"
            ]
            .contains(&k.as_str()),
            "unexpected kind {k}"
        );
    }
    // Requests after the server came back succeed: the last error is followed by successes
    // only, and there are plenty of them.
    let last_err = rows.iter().rposition(|r| !r["error"].is_null()).unwrap();
    assert!(rows[last_err + 1..].iter().all(|r| r["error"].is_null()));
    assert!(
        rows.len() - last_err > 100,
        "{} after the outage",
        rows.len() - last_err
    );
    // Bounded: 600 × ~25 ms / 4 + 2 s outage + backoff, with a generous margin for a busy box.
    assert!(took.as_secs() < 60, "{took:?}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_restart_costs_tens_of_errors() {
    restart(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_restart_costs_tens_of_errors() {
    restart(true).await;
}

/// One worker, every fourth request refused with a 1 s wait: the refused requests are counted
/// as rate-limited and the next request leaves no sooner than the server asked.
async fn rate_limited(grpc: bool, faults: FaultConfig) {
    let sim = start(SimConfig {
        engine: quick_engine(),
        faults,
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let url = if grpc {
        sim.grpc_target()
    } else {
        sim.http_url()
    };
    let mut extra = vec!["--concurrency", "1", "--request-count", "8"];
    if !grpc {
        extra.extend(["--endpoint-type", "chat"]);
    }
    let out = profile(&run_args(&url, tmp.path(), &extra)).await.unwrap();
    let rows = by_send(measured(&out.levels[0].dir));
    assert_eq!(rows.len(), 8);
    let errors = kinds(&rows);
    assert_eq!(errors.get("rate_limited"), Some(&2), "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let mut waits = Vec::new();
    for pair in rows.windows(2) {
        if pair[0]["error"] == "rate_limited" {
            let wait_ms = (ns(&pair[1], "sent_ns") - ns(&pair[0], "end_ns")) / 1_000_000;
            waits.push(wait_ms);
            assert!(wait_ms >= 990, "waited {wait_ms} ms, asked 1000");
            // The wait is not in the next request's own latency.
            assert!(pair[1]["error"].is_null());
            assert!(
                pair[1]["latency_ms"].as_f64().unwrap() < 900.0,
                "{}",
                pair[1]
            );
        }
    }
    eprintln!(
        "rate limited ({}): waits {waits:?} ms",
        if grpc { "gRPC" } else { "HTTP" }
    );
    assert_eq!(waits.len(), 1, "the second refusal is the last request");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_429_with_retry_after_is_waited_out() {
    rate_limited(
        false,
        FaultConfig {
            rate_limit_rate: 0.25,
            retry_after_s: 1,
            ..FaultConfig::default()
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_503_with_retry_after_is_rate_limited() {
    rate_limited(
        false,
        FaultConfig {
            unavailable_rate: 0.25,
            retry_after_s: 1,
            ..FaultConfig::default()
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_resource_exhausted_with_pushback_is_waited_out() {
    rate_limited(
        true,
        FaultConfig {
            rate_limit_rate: 0.25,
            retry_after_s: 1,
            ..FaultConfig::default()
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_503_without_retry_after_backs_off() {
    let sim = start(SimConfig {
        engine: quick_engine(),
        faults: FaultConfig {
            unavailable: true,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let extra = ["--concurrency", "1", "--request-count", "6"];
    let mut a = run_args(&sim.http_url(), tmp.path(), &extra);
    a.extend(args(&["--endpoint-type", "chat"]));
    let out = profile(&a).await.unwrap();
    let rows = by_send(measured(&out.levels[0].dir));
    assert_eq!(kinds(&rows).get("http_503"), Some(&6));
    // Growing gaps: 25–50, 50–100, 100–200, 200–400, 400–800 ms.
    let gaps: Vec<u64> = rows
        .windows(2)
        .map(|p| (ns(&p[1], "sent_ns") - ns(&p[0], "end_ns")) / 1_000_000)
        .collect();
    eprintln!("503 backoff gaps: {gaps:?} ms");
    assert!(gaps[0] >= 25 && gaps[4] >= 400, "{gaps:?}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_rst_stream_mid_stream_is_counted() {
    let sim = start(SimConfig {
        engine: quick_engine(),
        faults: FaultConfig {
            reset_rate: 0.5,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let extra = ["--concurrency", "1", "--request-count", "8"];
    let out = profile(&run_args(&sim.grpc_target(), tmp.path(), &extra))
        .await
        .unwrap();
    let rows = by_send(measured(&out.levels[0].dir));
    let errors = kinds(&rows);
    eprintln!("RST_STREAM: {errors:?}");
    assert_eq!(errors.get("stream_reset"), Some(&4), "{errors:?}");
    assert_eq!(errors.len(), 1);
    for r in rows.iter().filter(|r| r["error"] == "stream_reset") {
        assert!(
            r["responses"].as_u64().unwrap() >= 1,
            "reset mid-stream: {r}"
        );
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_goaway_is_survived() {
    let sim = start(SimConfig {
        engine: quick_engine(),
        faults: FaultConfig {
            goaway_ms: 300,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let extra = ["--concurrency", "4", "--request-count", "200"];
    let t0 = Instant::now();
    let out = profile(&run_args(&sim.grpc_target(), tmp.path(), &extra))
        .await
        .unwrap();
    let rows = by_send(measured(&out.levels[0].dir));
    let s = &out.levels[0].summary.stats;
    let errors = kinds(&rows);
    eprintln!(
        "GOAWAY every 300 ms: {} ok, {errors:?} in {:.1} s",
        s.request_count,
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(rows.len(), 200);
    for k in errors.keys() {
        assert!(
            [
                "goaway",
                "grpc_unavailable",
                "connection_reset",
                "stream_cut"
            ]
            .contains(&k.as_str()),
            "unexpected kind {k}"
        );
    }
    // Connections are replaced as they age out: most requests succeed.
    assert!(s.request_count >= 180, "{} ok, {errors:?}", s.request_count);
    assert!(rows.last().unwrap()["error"].is_null());
    sim.shutdown().await;
}
