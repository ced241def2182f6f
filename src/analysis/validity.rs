//! Can a level's numbers be trusted? The load generator checks itself while it measures: its own
//! CPU use, how late it sent scheduled requests, whether the in-flight cap held requests back,
//! whether the achieved rate matched the requested one, and whether its async runtime stalled.
//! Any failed check makes the level "not trustworthy", said in words on the console and as a
//! machine-readable field in `profile_export_genai_perf.json` (`validity`, which also carries the
//! level's `interrupted` flag and token-count warnings); `--strict` turns it into exit code 1.
//! Too few requests for a tail percentile is not a failed check: that percentile is shown as
//! `-` and named in `validity.unsupported_percentiles` (see
//! [`crate::metrics::unsupported_percentiles`]); the level's other numbers stand.

use std::time::{Duration, Instant};

pub use crate::metrics::Validity;

/// Process CPU above this share of all cores means the generator itself was saturated.
pub const MAX_CPU_SHARE: f64 = 0.90;
/// Open loop: achieved below this share of the requested rate means the schedule was not kept.
pub const MIN_RATE_SHARE: f64 = 0.95;
/// Open loop: more than this share of requests held back by the in-flight cap.
pub const MAX_CAPPED_SHARE: f64 = 0.01;
/// The async runtime falling this far behind a 10 ms tick is a stall.
pub const MAX_STALL_MS: f64 = 50.0;
/// Default bound on the 99th percentile of send lag (open loop), in ms.
pub const DEFAULT_MAX_SEND_LAG_MS: f64 = 2.0;

/// What was observed during a level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// CPU seconds the process used during the measurement.
    pub cpu_seconds: f64,
    /// Wall seconds of the measurement.
    pub wall_seconds: f64,
    /// Cores available.
    pub cores: usize,
    /// Send-lag p99 (ms), open loop.
    pub send_lag_p99_ms: Option<f64>,
    /// Requested rate, open loop.
    pub requested_rate: Option<f64>,
    /// Requests sent.
    pub sent: u64,
    /// From the phase start to the last actual send (s), open loop.
    pub send_span_s: f64,
    /// From the phase start to the last released request's intended send time (s), open loop.
    pub intended_span_s: f64,
    /// Requests held back by the cap.
    pub delayed_by_cap: u64,
    /// Longest runtime stall (ms).
    pub max_stall_ms: Option<f64>,
    /// How long workers waited to hand records to a collector that fell behind.
    pub held: crate::load::queue::Held,
    /// Interrupted.
    pub interrupted: bool,
    /// Measured requests that succeeded (the samples behind the latency percentiles).
    pub measured: u64,
}

/// Judges a level. `max_send_lag_ms` bounds the send-lag p99.
pub fn assess(o: &Observed, max_send_lag_ms: f64) -> Validity {
    let mut v = Validity {
        cores: o.cores,
        send_lag_p99_ms: o.send_lag_p99_ms,
        requested_rate: o.requested_rate,
        delayed_by_cap: o.delayed_by_cap,
        max_stall_ms: o.max_stall_ms,
        held_back_ms: (o.held.sends > 0).then(|| o.held.total_ns as f64 / 1e6),
        held_back_sends: o.held.sends,
        ..Validity::default()
    };
    if o.wall_seconds > 0.0 && o.cores > 0 {
        let share = o.cpu_seconds / (o.wall_seconds * o.cores as f64);
        v.cpu_share = Some(share);
        if share > MAX_CPU_SHARE {
            v.reasons.push(format!(
                "the load generator used {:.0}% of {} cores: it was saturated, so its own queueing is in the latencies (use fewer streams per process, or run shards on more machines)",
                share * 100.0,
                o.cores
            ));
        }
    }
    if let Some(lag) = o.send_lag_p99_ms
        && lag > max_send_lag_ms
    {
        v.reasons.push(format!(
            "send lag p99 {lag:.2} ms exceeds {max_send_lag_ms} ms: requests left later than scheduled (latencies from the intended send time include that delay)"
        ));
    }
    if let Some(rate) = o.requested_rate
        && o.sent > 1
        && o.send_span_s > 0.0
    {
        let achieved = (o.sent - 1) as f64 / o.send_span_s;
        v.achieved_rate = Some(achieved);
        // A Poisson or gamma schedule sends fewer or more than `rate` in a finite window by
        // design; what the generator owes is the rate its own schedule asked for.
        let scheduled = if o.intended_span_s > 0.0 {
            (o.sent - 1) as f64 / o.intended_span_s
        } else {
            rate
        };
        if achieved < scheduled * MIN_RATE_SHARE {
            v.reasons.push(format!(
                "achieved {achieved:.1} requests/s where the schedule asked for {scheduled:.1} (--request-rate {rate}): the generator could not keep the rate"
            ));
        }
    }
    if o.sent > 0 && o.delayed_by_cap as f64 / o.sent as f64 > MAX_CAPPED_SHARE {
        v.reasons.push(format!(
            "{} of {} waited for a free slot (the in-flight cap): raise --max-inflight, or the server cannot absorb this rate",
            o.delayed_by_cap,
            crate::analysis::text::count(o.sent, "request")
        ));
    }
    if let Some(stall) = o.max_stall_ms
        && stall > MAX_STALL_MS
    {
        v.reasons.push(format!(
            "the generator's event loop stalled for {stall:.0} ms: timestamps taken during the stall are late (CPU starved?)"
        ));
    }
    v.reasons.extend(held_back(&o.held, o.sent));
    if o.interrupted {
        v.reasons
            .push("the level was interrupted: it measured fewer requests than planned".into());
    }
    v.unsupported_percentiles = crate::metrics::unsupported_percentiles(o.measured);
    v.trustworthy = v.reasons.is_empty();
    v
}

/// The back-pressure reason: any wait for the collector changed the load the server saw (a
/// closed-loop worker paused between requests, an open-loop one left its tickets waiting).
fn held_back(h: &crate::load::queue::Held, sent: u64) -> Option<String> {
    (h.sends > 0).then(|| {
        format!(
            "{} of {} finished requests waited for the collector before the next could be sent ({:.1} ms on average, the longest {:.0} ms): it could not keep up with writing the records, so the server saw less load than asked (artifacts on a faster disk, or without --raw-export full)",
            h.sends,
            sent.max(h.sends),
            h.total_ns as f64 / 1e6 / h.sends as f64,
            h.longest_ns as f64 / 1e6
        )
    })
}

/// CPU time of this process so far (user + system).
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage writes only into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv =
        |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Watches the async runtime: a task that should wake every 10 ms records how late it woke.
pub struct StallMonitor {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<f64>,
}

impl StallMonitor {
    /// Starts watching (on the current runtime).
    pub fn start() -> StallMonitor {
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let tick = Duration::from_millis(10);
            let mut max = 0.0f64;
            let mut due = Instant::now() + tick;
            loop {
                tokio::select! {
                    _ = &mut rx => break,
                    _ = tokio::time::sleep_until(tokio::time::Instant::from_std(due)) => {
                        let late = Instant::now().saturating_duration_since(due);
                        max = max.max(late.as_secs_f64() * 1e3);
                        due = Instant::now() + tick;
                    }
                }
            }
            max
        });
        StallMonitor {
            stop: Some(tx),
            task,
        }
    }

    /// Stops watching; returns the longest stall (ms).
    pub async fn finish(mut self) -> f64 {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        (&mut self.task).await.unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Observed {
        Observed {
            cpu_seconds: 1.0,
            wall_seconds: 10.0,
            cores: 2,
            send_lag_p99_ms: Some(0.3),
            requested_rate: Some(100.0),
            sent: 1001,
            send_span_s: 10.0,
            intended_span_s: 10.0,
            delayed_by_cap: 0,
            max_stall_ms: Some(2.0),
            held: crate::load::queue::Held::default(),
            interrupted: false,
            measured: 1000,
        }
    }

    /// Workers that waited for the collector make the level not trustworthy, with the count,
    /// the average and the longest wait in words.
    #[test]
    fn a_held_back_load_is_not_trustworthy() {
        let o = Observed {
            held: crate::load::queue::Held {
                sends: 40,
                total_ns: 200_000_000,
                longest_ns: 30_000_000,
            },
            ..ok()
        };
        let v = assess(&o, DEFAULT_MAX_SEND_LAG_MS);
        assert!(!v.trustworthy);
        assert_eq!((v.held_back_sends, v.held_back_ms), (40, Some(200.0)));
        assert!(
            v.reasons[0].starts_with(
                "40 of 1001 finished requests waited for the collector before the next could be sent (5.0 ms on average, the longest 30 ms)"
            ),
            "{:?}",
            v.reasons
        );
        assert!(assess(&ok(), DEFAULT_MAX_SEND_LAG_MS).trustworthy);
    }

    /// A random schedule that happened to ask for 12% fewer requests than the nominal rate in
    /// this window, all sent on time: the generator kept its schedule.
    #[test]
    fn a_sparse_random_schedule_kept_is_trustworthy() {
        let o = Observed {
            sent: 881,
            send_span_s: 10.0,
            intended_span_s: 9.99,
            ..ok()
        };
        let v = assess(&o, DEFAULT_MAX_SEND_LAG_MS);
        assert!(v.trustworthy, "{:?}", v.reasons);
        assert_eq!(v.achieved_rate, Some(88.0));
    }

    /// Table: each row breaks one check and expects one reason mentioning `word`.
    #[test]
    fn each_check_trips_alone() {
        let v = assess(&ok(), DEFAULT_MAX_SEND_LAG_MS);
        assert!(v.trustworthy, "{:?}", v.reasons);
        assert_eq!(v.achieved_rate, Some(100.0));
        assert_eq!(v.cpu_share, Some(0.05));
        /// Breaks one check of a trustworthy level.
        type Break = fn(&mut Observed);
        let cases: [(Break, &str); 6] = [
            (|o| o.cpu_seconds = 19.0, "95% of 2 cores"),
            (|o| o.send_lag_p99_ms = Some(5.0), "send lag p99 5.00 ms"),
            (
                |o| o.send_span_s = 20.0,
                "achieved 50.0 requests/s where the schedule asked for 100.0",
            ),
            (|o| o.delayed_by_cap = 20, "--max-inflight"),
            (|o| o.max_stall_ms = Some(80.0), "stalled for 80 ms"),
            (|o| o.interrupted = true, "interrupted"),
        ];
        for (break_one, word) in cases {
            let mut o = ok();
            break_one(&mut o);
            let v = assess(&o, DEFAULT_MAX_SEND_LAG_MS);
            assert!(!v.trustworthy);
            assert_eq!(v.reasons.len(), 1, "{:?}", v.reasons);
            assert!(
                v.reasons[0].contains(word),
                "{:?} should mention {word}",
                v.reasons
            );
        }
        // Too few samples for a tail percentile: named, not distrusted.
        let few = |n: u64| {
            assess(
                &Observed {
                    measured: n,
                    ..ok()
                },
                DEFAULT_MAX_SEND_LAG_MS,
            )
        };
        let one = few(1);
        assert!(one.trustworthy, "{:?}", one.reasons);
        assert_eq!(one.unsupported_percentiles, ["p99", "p95", "p90"]);
        assert_eq!(few(10).unsupported_percentiles, ["p99", "p95"]);
        assert_eq!(few(20).unsupported_percentiles, ["p99"]);
        assert_eq!(few(99).unsupported_percentiles, ["p99"]);
        assert!(few(100).unsupported_percentiles.is_empty());
        // Closed loop: no rate or lag checks.
        let closed = Observed {
            requested_rate: None,
            send_lag_p99_ms: None,
            ..ok()
        };
        assert!(assess(&closed, 0.0).trustworthy);
    }

    #[test]
    fn old_artifacts_read_as_trustworthy() {
        let v: Validity =
            serde_json::from_str(r#"{"interrupted": false, "osl_mismatch_count": 2}"#).unwrap();
        assert!(v.trustworthy);
        assert!(v.reasons.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stall_monitor_sees_a_blocked_runtime() {
        let m = StallMonitor::start();
        tokio::time::sleep(Duration::from_millis(30)).await;
        // Block both runtime threads.
        let a = tokio::spawn(async { std::thread::sleep(Duration::from_millis(120)) });
        let b = tokio::spawn(async { std::thread::sleep(Duration::from_millis(120)) });
        let _ = (a.await, b.await);
        tokio::time::sleep(Duration::from_millis(30)).await;
        let stall = m.finish().await;
        assert!(stall >= 60.0, "stall {stall} ms");
        assert!(process_cpu() > Duration::ZERO);
    }
}
