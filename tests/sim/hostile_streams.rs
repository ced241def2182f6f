//! Servers that misbehave on the wire: an event line that never ends, a body of random bytes,
//! text that is not UTF-8. Each request ends as a counted error of a named kind (or, for invalid
//! UTF-8, is counted lossily and marked). One event of 64 MB, where the process's memory is
//! measured, is in `tests/memory/hostile_event.rs`.

use crate::common;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Respond, SSE_HEAD, error_kinds, raw_http_server, stream_rows, write_long};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_line_that_never_ends_is_cut_at_the_limit() {
    // "Never" within reason: 256 MB, far past the limit, so the test ends either way.
    let respond: Respond =
        Arc::new(|s| write_long(s, &[SSE_HEAD, b"data: "].concat(), b'x', 256 << 20, b""));
    let addr = raw_http_server(respond);
    let t = Instant::now();
    let rows = stream_rows(&addr, 3, &["--max-event-size", "64KiB"]).await;
    assert_eq!(error_kinds(&rows), ["response_too_large"; 3]);
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
    let rows = stream_rows(&addr, 3, &[]).await;
    for k in error_kinds(&rows) {
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
    let rows = stream_rows(&raw_http_server(respond), 2, &[]).await;
    assert_eq!(error_kinds(&rows), ["malformed_response"; 2]);
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
    let rows = stream_rows(&raw_http_server(respond), 2, &[]).await;
    assert_eq!(error_kinds(&rows), ["ok", "ok"]);
    // The é split across two events is invalid in each; every invalid sequence became U+FFFD.
    let text = " caf\u{fffd}\u{fffd} ok \u{fffd}\u{fffd} bad end";
    let expect = ttftbench::workload::tokenizer::Tokenizer::builtin_gpt2().count(text);
    for r in &rows {
        assert_eq!(r["lossy_text"], true);
        assert_eq!(r["osl"], expect as u64);
        assert_eq!(r["chunks"], 4);
    }
}
