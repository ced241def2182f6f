//! What the connection did to the numbers, in words: requests sent again because the server
//! closed a kept-alive connection without saying so, the delayed-ACK stall, and streams that
//! arrived all at once.
//!
//! A buffered stream: when every token of a streamed answer reaches the client in one burst (one
//! read, or a few microseconds apart: [`crate::record::BURST_GAP_NS`]), the server (or a proxy in
//! front of it: nginx buffers proxied responses unless told not to) held the answer back and sent
//! it whole. Those requests' ITL is ~0 and their TTFT is the time to the whole answer: true of
//! what the client saw, but not the engine's decode speed. vLLM's API
//! process does this under load when its host has no spare CPU (its output handler merges the
//! deltas its stream writer has not yet taken).
//!
//! The stall: a server that sends with Nagle's algorithm on (cpp-httplib's default, for one)
//! holds a small write while an earlier one is unacknowledged. After a response's head goes out,
//! the first token's chunk waits for the client's ACK of the head, and a client delays that ACK
//! (Linux: 40 ms at least) unless it is in quick-ACK mode, as it is at the start of a connection.
//! So the first request on a fresh connection sees the server's TTFT, and every later one on the
//! same connection ~40 ms more, whatever the load. The signature is the step between the two: the
//! *fastest* request on a reused connection is slower than the typical fresh one by tens of
//! milliseconds (queueing raises a reused request's median, not the fastest one's, by a fixed
//! step). The fix is the server's (`TCP_NODELAY`); `--tcp-quickack` measures without the
//! client's half.

use crate::stats::{ConnectionStats, LevelSummary};

/// Steps between these (ms) are the delayed-ACK timer: Linux's minimum is 40 ms, its maximum
/// 200 ms; a few ms either way for the server's and the reads' own timing.
const STEP_MS: (f64, f64) = (25.0, 250.0);

/// Fewest reused requests for the fastest of them to mean anything.
const MIN_REUSED: u64 = 10;

/// A level's share of successful requests answered in one burst from which the verdict says so:
/// one in ten is no accident of timing (a stream written token by token, a token a few ms apart,
/// almost never lands whole), and well below the all-or-most a buffering proxy gives.
const MIN_BURST_SHARE: f64 = 0.10;

/// The share of a level's successful requests whose tokens all arrived in one burst, when it is
/// high enough to say so.
fn burst_share(l: &LevelSummary) -> Option<f64> {
    let (n, of) = (l.stats.burst_count, l.stats.request_count);
    let share = n as f64 / of.max(1) as f64;
    (n >= 2 && share >= MIN_BURST_SHARE).then_some(share)
}

/// The stall seen in a level: how much slower the fastest reused-connection request was than
/// the typical fresh one (ms), when that step looks like a delayed ACK.
pub fn delayed_ack_ms(c: &ConnectionStats) -> Option<f64> {
    if c.fresh_count == 0 || c.reused_count < MIN_REUSED {
        return None;
    }
    let step = c.reused_ttft_min_ms - c.fresh_ttft_p50_ms;
    let median_step = c.reused_ttft_p50_ms - c.fresh_ttft_p50_ms;
    (step >= STEP_MS.0 && step <= STEP_MS.1 && median_step >= STEP_MS.0).then_some(step)
}

/// The verdict's lines about the transport, across levels.
pub fn lines(levels: &[LevelSummary]) -> Vec<String> {
    let mut out = Vec::new();
    let stalled: Vec<(&LevelSummary, &ConnectionStats, f64)> = levels
        .iter()
        // Embeddings and rankings answers take hundreds of ms over a whole batch: a step of tens
        // between fresh and reused connections there is their spread, not an ACK timer.
        .filter(|l| l.stats.apis.input_throughput.is_none())
        .filter_map(|l| {
            let c = l.stats.connections.as_ref()?;
            Some((l, c, delayed_ack_ms(c)?))
        })
        .collect();
    if let Some((l, c, step)) = stalled.first() {
        out.push(format!(
            "TTFT on reused connections is {step:.0} ms above fresh ones ({} {}: fastest reused {:.1} ms, median fresh {:.1} ms; {} of {} levels): the signature of the server sending with Nagle's algorithm on, its first token held until the client's delayed ACK (~40 ms). Fix it on the server (set TCP_NODELAY on accepted sockets; cpp-httplib: CPPHTTPLIB_TCP_NODELAY=1); measure without the client's half with --tcp-quickack",
            l.stimulus.kind(),
            super::text::load_text(l.stimulus.value()),
            c.reused_ttft_min_ms,
            c.fresh_ttft_p50_ms,
            stalled.len(),
            levels.len()
        ));
    }
    out.extend(buffered(levels));
    let reconnects: u64 = levels.iter().map(|l| l.stats.reconnect_count).sum();
    if reconnects > 0 {
        out.push(format!(
            "{} sent again on a fresh connection: the server closed a kept-alive connection without saying so before the request reached it (llama.cpp's server does after every stream); each was timed from its second send, and afterwards the client opened a fresh connection after such responses, outside the measured time",
            match reconnects {
                1 => "1 request was".to_string(),
                n => format!("{n} requests were"),
            },
        ));
    }
    out
}

/// The line about buffered streams, naming the level with the highest share.
fn buffered(levels: &[LevelSummary]) -> Option<String> {
    let hit: Vec<(&LevelSummary, f64)> = levels
        .iter()
        .filter_map(|l| Some((l, burst_share(l)?)))
        .collect();
    let (l, share) = hit.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "Streams arrived whole: in {} {}, {} of {} successful requests ({:.0} %) received all their tokens in one burst ({} of {} levels): the server, or a proxy in front of it, buffered the answer and sent it at once, so ITL there is ~0 and TTFT is the time to the whole answer, not the engine's decode speed. Behind nginx set proxy_buffering off; vLLM does this when its host has no spare CPU",
        l.stimulus.kind(),
        super::text::load_text(l.stimulus.value()),
        l.stats.burst_count,
        l.stats.request_count,
        share * 100.0,
        hit.len(),
        levels.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(fresh: f64, reused_min: f64, reused_p50: f64, reused_n: u64) -> ConnectionStats {
        ConnectionStats {
            fresh_count: 2,
            fresh_ttft_p50_ms: fresh,
            reused_count: reused_n,
            reused_ttft_min_ms: reused_min,
            reused_ttft_p50_ms: reused_p50,
        }
    }

    fn level(c: u32, ok: u64, burst: u64) -> LevelSummary {
        LevelSummary::new(
            crate::load::Stimulus::Concurrency(c),
            crate::stats::LevelStats {
                request_count: ok,
                burst_count: burst,
                ..Default::default()
            },
        )
    }

    #[test]
    fn buffered_streams_are_named_by_their_worst_level() {
        assert_eq!(burst_share(&level(1, 16, 1)), None); // one request: chance
        assert_eq!(burst_share(&level(1, 100, 9)), None); // under one in ten
        assert_eq!(burst_share(&level(1, 100, 10)), Some(0.10));
        assert_eq!(buffered(&[level(1, 16, 0), level(4, 16, 1)]), None);
        assert_eq!(
            buffered(&[level(1, 16, 3), level(4, 16, 12), level(8, 16, 0)]).as_deref(),
            Some(
                "Streams arrived whole: in concurrency 4, 12 of 16 successful requests (75 %) received all their tokens in one burst (2 of 3 levels): the server, or a proxy in front of it, buffered the answer and sent it at once, so ITL there is ~0 and TTFT is the time to the whole answer, not the engine's decode speed. Behind nginx set proxy_buffering off; vLLM does this when its host has no spare CPU"
            )
        );
    }

    #[test]
    fn the_delayed_ack_step_and_what_is_not_one() {
        assert_eq!(
            delayed_ack_ms(&c(10.5, 50.2, 51.0, 40)).map(f64::round),
            Some(40.0)
        );
        // Queueing: the median moves, the fastest reused request does not.
        assert_eq!(delayed_ack_ms(&c(10.0, 10.2, 80.0, 40)), None);
        // A reused connection faster than a fresh one (a warm prefix cache).
        assert_eq!(delayed_ack_ms(&c(30.0, 12.0, 14.0, 40)), None);
        // Too few reused requests, or a step no ACK timer makes.
        assert_eq!(delayed_ack_ms(&c(10.0, 50.0, 51.0, 5)), None);
        assert_eq!(delayed_ack_ms(&c(10.0, 900.0, 950.0, 40)), None);
    }
}
