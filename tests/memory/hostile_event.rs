//! A server that sends one SSE event of 64 MB: each request ends as `response_too_large` once the
//! event passes `--max-event-size` (4 MiB by default), the process's peak memory stays flat, and
//! the event loop keeps running meanwhile. The other misbehaving servers are in
//! `tests/sim/hostile_streams.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;
use common::{Respond, SSE_HEAD, error_kinds, peak_rss, raw_http_server, stream_rows, write_long};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_64_mb_event_keeps_memory_flat_and_the_loop_running() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
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
    let rows = stream_rows(&addr, 4, &[]).await;
    let grown = peak_rss().saturating_sub(before);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let worst = ticker.await.unwrap();
    assert_eq!(error_kinds(&rows), ["response_too_large"; 4]);
    // The default limit is 4 MiB: the event is dropped at that, not buffered whole (which cost
    // 148 MB before). Other tests in this binary wait (`ONE_AT_A_TIME`).
    assert!(grown < 40 << 20, "peak RSS grew by {} MB", grown >> 20);
    assert!(
        worst < Duration::from_millis(500),
        "the event loop stalled for {worst:?}"
    );
}
