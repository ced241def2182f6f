//! HTTP/1.1 connection reuse against servers that close connections in each way real ones do
//! (`client::h1`): a connection the server closed or said it would close is never sent on; a
//! request that crosses a silent close is sent again on a fresh connection and counted; and a
//! server sending with Nagle's algorithm on is named in the verdict, with `--tcp-quickack`
//! measuring without the client's delayed ACK.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{Closing, KeepAliveServer, keepalive_server};

/// A level run against a test server: its JSON export and its requests.jsonl rows.
struct Run {
    doc: serde_json::Value,
    rows: Vec<serde_json::Value>,
}

/// Runs a streamed chat profile against `server` with `extra` flags.
async fn run(server: &KeepAliveServer, extra: &[&str]) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("level");
    let mut a = common::chat_args(&format!("http://{}", server.addr), &dir, &[]);
    a.extend(common::args(extra));
    common::profile(&a).await.expect("the run ends");
    Run {
        doc: common::json_file(&dir.join("profile_export_genai_perf.json")),
        rows: common::rows(&dir),
    }
}

fn errors(doc: &serde_json::Value) -> f64 {
    doc["error_count"]["avg"].as_f64().unwrap()
}

fn reconnects(doc: &serde_json::Value) -> f64 {
    doc["reconnect_count"]["avg"].as_f64().unwrap()
}

fn connections(s: &KeepAliveServer) -> usize {
    s.connections.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_close_and_http10_get_a_connection_each() {
    for closing in [Closing::SaysClose, Closing::Http10] {
        let s = keepalive_server(closing);
        let doc = run(&s, &["--concurrency", "2", "--request-count", "12"])
            .await
            .doc;
        assert_eq!((errors(&doc), reconnects(&doc)), (0.0, 0.0), "{closing:?}");
        assert_eq!(connections(&s), 12, "{closing:?}");
    }
}

/// `Keep-Alive: max` spent: the client opens a fresh connection instead of sending into the
/// server's close (no request is sent twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_max_is_honoured() {
    let s = keepalive_server(Closing::Max(5));
    let doc = run(&s, &["--concurrency", "1", "--request-count", "24"])
        .await
        .doc;
    assert_eq!((errors(&doc), reconnects(&doc)), (0.0, 0.0));
    assert_eq!(connections(&s), 5, "24 requests, 5 a connection");
}

/// Three requests `rate` apart, one at a time, against `s`: each goes on a fresh connection that
/// the client opened before sending (none sent twice), and nothing fails.
async fn each_on_a_fresh_connection(s: &KeepAliveServer, rate: &str) {
    let doc = run(
        s,
        &[
            "--request-rate",
            rate,
            "--request-count",
            "3",
            "--max-inflight",
            "1",
        ],
    )
    .await
    .doc;
    assert_eq!((errors(&doc), reconnects(&doc)), (0.0, 0.0));
    assert_eq!(connections(s), 3);
}

/// `Keep-Alive: timeout=1`: a connection idle for 0.9 s is not reused (the server would still
/// have answered on it here, but a real one closes then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_timeout_is_honoured() {
    let s = keepalive_server(Closing::IdleTimeout(Duration::from_millis(1500)));
    each_on_a_fresh_connection(&s, "1.1").await;
}

/// A server that closes idle connections without a word (vLLM after 5 s): the close is seen
/// before the next send, which goes on a fresh connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_idle_close_is_seen_before_sending() {
    let s = keepalive_server(Closing::SilentIdle(Duration::from_millis(300)));
    each_on_a_fresh_connection(&s, "1.5").await;
}

/// llama.cpp's server: keep-alive announced, the connection closed after every stream. The
/// request that crosses the first close is sent again on a fresh connection and counted; then
/// the client opens a fresh connection after each stream, and nothing fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_after_every_stream_costs_no_request() {
    for c in ["1", "4"] {
        let s = keepalive_server(Closing::AfterStream);
        let Run { doc, rows } = run(&s, &["--concurrency", c, "--request-count", "40"]).await;
        assert_eq!(errors(&doc), 0.0, "concurrency {c}");
        let r = reconnects(&doc);
        assert!((1.0..=4.0).contains(&r), "concurrency {c}: {r} reconnects");
        // A connection a request each: the one that crossed a close went out again on a fresh
        // one, and every later stream was followed by a fresh connection.
        assert_eq!(connections(&s), 40, "concurrency {c}");
        // The rows say which requests went twice, and every request is there once.
        assert_eq!(rows.len(), 40);
        let twice = rows.iter().filter(|r| r["reconnected"] == true).count();
        assert_eq!(twice as f64, r);
    }
}

/// A server with Nagle's algorithm on: requests on reused connections wait ~40 ms for the
/// client's delayed ACK, which the verdict names with the server-side fix; `--tcp-quickack`
/// takes the client's half out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nagle_on_the_server_is_named_and_quickack_takes_it_out() {
    let s = keepalive_server(Closing::Nagle);
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("http://{}", s.addr);
    let mut verdicts = Vec::new();
    for quickack in [false, true] {
        let dir = tmp.path().join(format!("q{quickack}"));
        let mut a = common::chat_args(&url, &dir, &["--concurrency", "1", "--request-count", "30"]);
        if quickack {
            a.push("--tcp-quickack".into());
        }
        let out = common::profile(&a).await.expect("the run ends");
        let doc = common::json_file(&dir.join("profile_export_genai_perf.json"));
        let c = &doc["connections"];
        let step =
            c["reused_ttft_p50_ms"].as_f64().unwrap() - c["fresh_ttft_p50_ms"].as_f64().unwrap();
        verdicts.push((step, out.verdict.lines.join("\n")));
    }
    let (stalled, plain) = &verdicts[0];
    assert!(
        (30.0..60.0).contains(stalled),
        "reused - fresh {stalled} ms"
    );
    assert!(
        plain.contains("Nagle") && plain.contains("TCP_NODELAY"),
        "{plain}"
    );
    let (quick, lines) = &verdicts[1];
    assert!(
        *quick < 15.0,
        "with --tcp-quickack: reused - fresh {quick} ms"
    );
    assert!(!lines.contains("Nagle"), "{lines}");
}

/// A streamed chat level of 20 requests at concurrency 2 against `url`: its JSON export and
/// its verdict's lines.
async fn whole_or_not(url: &str, dir: &std::path::Path) -> (serde_json::Value, String) {
    let a = common::chat_args(url, dir, &["--concurrency", "2", "--request-count", "20"]);
    let out = common::profile(&a).await.expect("the run ends");
    let doc = common::json_file(&dir.join("profile_export_genai_perf.json"));
    (doc, out.verdict.lines.join("\n"))
}

/// A server that writes each answer whole (all three tokens in one write, as a buffering proxy
/// does): every request's tokens arrive in one burst, counted in the export and named in the
/// verdict; the simulator, decoding a token every 10 ms, draws no such line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_that_arrive_whole_are_named() {
    let s = keepalive_server(Closing::SilentIdle(Duration::from_secs(60)));
    let tmp = tempfile::tempdir().unwrap();
    let (doc, lines) = whole_or_not(&format!("http://{}", s.addr), &tmp.path().join("w")).await;
    assert_eq!(doc["burst_count"]["avg"], 20, "{doc}");
    assert_eq!(doc["inter_token_latency"]["max"], 0.0);
    assert!(
        lines.contains("Streams arrived whole: in concurrency 2, 20 of 20 successful requests (100 %) received all their tokens in one burst"),
        "{lines}"
    );
    let sim = common::start_round().await;
    let (doc, lines) =
        whole_or_not(&format!("http://{}", sim.http_addr), &tmp.path().join("s")).await;
    assert!(doc.get("burst_count").is_none(), "{doc}");
    assert!(!lines.contains("arrived whole"), "{lines}");
}
