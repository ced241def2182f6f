//! Servers that misbehave on the wire: an event line that never ends, a body of random bytes,
//! text that is not UTF-8, one event of 64 MB. Each request ends as a counted error of a named
//! kind (or, for invalid UTF-8, is counted lossily and marked), memory stays bounded by
//! `--max-event-size`, and the event loop keeps running meanwhile.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Respond, args, measured, peak_rss, profile, raw_http_server};

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

/// Runs `profile` with `n` requests at concurrency 1 against `addr`; returns the measured rows.
async fn run(addr: &str, n: u32, extra: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let n = n.to_string();
    let mut a = vec![
        "-m",
        "m",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        addr,
        "--concurrency",
        "1",
        "--request-count",
        &n,
        "--request-timeout",
        "60",
        "--output-tokens-mean",
        "10",
        "--artifact-dir",
    ];
    let d = dir.path().to_str().unwrap().to_string();
    a.push(&d);
    a.extend_from_slice(extra);
    let out = profile(&args(&a)).await.expect("the run completes");
    measured(&out.levels[0].dir)
}

/// Writes `total` bytes of `fill` after `prefix`, in 64 KB writes (never 64 MB at once).
fn write_long(s: &mut TcpStream, prefix: &[u8], fill: u8, total: usize, suffix: &[u8]) {
    if s.write_all(prefix).is_err() {
        return;
    }
    let piece = vec![fill; 64 * 1024];
    let mut left = total;
    while left > 0 {
        let n = left.min(piece.len());
        if s.write_all(&piece[..n]).is_err() {
            return;
        }
        left -= n;
    }
    let _ = s.write_all(suffix);
}

fn kinds(rows: &[serde_json::Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["error"].as_str().unwrap_or("ok").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_line_that_never_ends_is_cut_at_the_limit() {
    // "Never" within reason: 256 MB, far past the limit, so the test ends either way.
    let respond: Respond =
        Arc::new(|s| write_long(s, &[SSE_HEAD, b"data: "].concat(), b'x', 256 << 20, b""));
    let addr = raw_http_server(respond);
    let t = Instant::now();
    let rows = run(&addr, 3, &["--max-event-size", "64KiB"]).await;
    assert_eq!(kinds(&rows), ["response_too_large"; 3]);
    assert!(
        rows[0]["error_message"]
            .as_str()
            .unwrap()
            .contains("65536 bytes")
    );
    // Reading stopped at the limit instead of draining 256 MB three times.
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_random_bytes_is_a_counted_error() {
    let respond: Respond = Arc::new(|s| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let body: Vec<u8> = (0..1 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = s.write_all(SSE_HEAD);
        let _ = s.write_all(&body);
    });
    let addr = raw_http_server(respond);
    let rows = run(&addr, 3, &[]).await;
    for k in kinds(&rows) {
        assert!(
            [
                "malformed_response",
                "no_content",
                "response_too_large",
                "malformed_sse"
            ]
            .contains(&k.as_str()),
            "unexpected kind {k}"
        );
    }
    // Random bytes with a chunked head: the framing itself is malformed.
    let respond: Respond = Arc::new(|s| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\x8f\x02zz\xff\r\n",
        );
    });
    let rows = run(&raw_http_server(respond), 2, &[]).await;
    assert_eq!(kinds(&rows), ["malformed_response"; 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_text_is_counted_lossily_and_marked() {
    let respond: Respond = Arc::new(|s| {
        let mut out = SSE_HEAD.to_vec();
        for piece in [&b" caf\xc3"[..], b"\xa9 ok", b" \xff\xfe bad", b" end"] {
            out.extend_from_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\"");
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\"}}]}\n\n");
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        let _ = s.write_all(&out);
    });
    let rows = run(&raw_http_server(respond), 2, &[]).await;
    assert_eq!(kinds(&rows), ["ok", "ok"]);
    // The é split across two events is invalid in each; every invalid sequence became U+FFFD.
    let text = " caf\u{fffd}\u{fffd} ok \u{fffd}\u{fffd} bad end";
    let expect = ttftbench::workload::tokenizer::Tokenizer::builtin_gpt2().count(text);
    for r in &rows {
        assert_eq!(r["lossy_text"], true);
        assert_eq!(r["osl"], expect as u64);
        assert_eq!(r["chunks"], 4);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_64_mb_event_keeps_memory_flat_and_the_loop_running() {
    let respond: Respond = Arc::new(|s| {
        write_long(
            s,
            &[SSE_HEAD, b"data: {\"choices\":[{\"delta\":{\"content\":\""].concat(),
            b'a',
            64 << 20,
            b"\"}}]}\n\ndata: [DONE]\n\n",
        )
    });
    let addr = raw_http_server(respond);
    // A task that should wake every millisecond: its longest gap is how long the loop stalled.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut worst = Duration::ZERO;
            let mut last = Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                worst = worst.max(last.elapsed());
                last = Instant::now();
            }
            worst
        }
    });
    let before = peak_rss();
    let rows = run(&addr, 4, &[]).await;
    let grown = peak_rss().saturating_sub(before);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let worst = ticker.await.unwrap();
    assert_eq!(kinds(&rows), ["response_too_large"; 4]);
    // The default limit is 4 MiB: the event is dropped at that, not buffered whole (which cost
    // 148 MB before). Generous for other tests running in this process.
    assert!(grown < 40 << 20, "peak RSS grew by {} MB", grown >> 20);
    assert!(
        worst < Duration::from_millis(500),
        "the event loop stalled for {worst:?}"
    );
}
