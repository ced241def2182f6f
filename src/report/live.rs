//! The live view's text: what the terminal shows about the level being measured, as pure
//! functions of a [`Snapshot`] so the exact text is tested (`engine::live` takes the snapshots
//! and draws them). Three forms: two lines redrawn in place ([`compact`]), one plain line for
//! logs ([`plain`]) and a full-screen panel ([`dashboard`]); and each level's [`final_line`],
//! the one line per level that stays.

use crate::analysis::text::count;
use crate::metrics::Metric;
use crate::stats::LevelSummary;

/// What the view says once a time window is over and the requests still in flight are
/// finishing (they count in the level; none are sent after the window).
pub const DRAINING: &str = "window over, draining requests in flight";

/// What the view says after Ctrl-C while requests in flight finish (instead of the signal
/// handler's line, which would land in the middle of a redrawn view).
pub const STOPPING: &str =
    "stopping: no new requests, waiting for those in flight (Ctrl-C again to abandon them)";

/// Width of the progress bar between its brackets.
const BAR: usize = 24;

/// How far a level has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stage {
    /// Warm-up requests (not measured).
    #[default]
    WarmingUp,
    /// The measurement runs.
    Measuring,
    /// A time window is over; requests in flight finish.
    Draining,
    /// Ctrl-C: nothing new is sent; requests in flight finish.
    Stopping,
    /// The level is over.
    Done,
}

/// What ends the level's measurement, as the view counts toward it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// This many requests (successful or failed).
    Requests(u64),
    /// A time window of this many seconds.
    Seconds(f64),
    /// perf_analyzer's stability windows, at most this many.
    Stable {
        /// `--max-trials`.
        max_windows: u32,
    },
}

/// Which level: the start of every line.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// 1-based place in the plan.
    pub number: u32,
    /// Levels in the plan (`None`: open-ended, perf's `--concurrency-range N:0`).
    pub total: Option<u32>,
    /// The level's name (`concurrency4`).
    pub name: String,
    /// What ends its measurement.
    pub goal: Goal,
}

impl Head {
    /// `level 2/6 concurrency4` (`level 5 concurrency5` when the total is open).
    pub fn label(&self) -> String {
        match self.total {
            Some(t) => format!("level {}/{t} {}", self.number, self.name),
            None => format!("level {} {}", self.number, self.name),
        }
    }
}

/// The level's numbers at one moment: measured requests only (warm-up is only counted).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Snapshot {
    /// How far the level has come.
    pub stage: Stage,
    /// Seconds since the measurement started (during warm-up: since the level started).
    pub elapsed_s: f64,
    /// Successful measured requests.
    pub done: u64,
    /// Failed measured requests.
    pub errors: u64,
    /// Measured requests cancelled on purpose (`--request-cancellation-rate`).
    pub cancelled: u64,
    /// Measured requests abandoned in flight by a second Ctrl-C.
    pub abandoned: u64,
    /// Warm-up requests finished.
    pub warmup: u64,
    /// Measured requests sent and not finished.
    pub in_flight: u64,
    /// TTFT p50 and p99 (ms), when responses stream.
    pub ttft_ms: Option<(f64, f64)>,
    /// Request latency p50 and p99 (ms): shown when there is no TTFT.
    pub latency_ms: Option<(f64, f64)>,
    /// Average inter-token latency (ms), when responses stream.
    pub itl_ms: Option<f64>,
    /// Output tokens per second of the measurement so far, when tokens are counted.
    pub tok_per_s: Option<f64>,
    /// Successful requests per second of the measurement so far.
    pub req_per_s: f64,
    /// Send lag p99 (ms), for request-rate levels.
    pub send_lag_p99_ms: Option<f64>,
    /// Stability windows closed (perf).
    pub windows: u32,
}

impl Snapshot {
    /// A finished level's numbers from its summary (the same ones as its files), `elapsed_s`
    /// long.
    pub fn of_level(l: &LevelSummary, elapsed_s: f64) -> Snapshot {
        let stat = |m: Metric| l.stats.get(m).filter(|s| s.count > 0);
        let streamed = |m: Metric| stat(m).filter(|_| l.streaming);
        Snapshot {
            stage: Stage::Done,
            elapsed_s,
            done: l.stats.request_count,
            errors: l.stats.error_count,
            cancelled: l.stats.cancelled_count,
            abandoned: l.stats.abandoned_count,
            warmup: l.stats.warmup_count,
            in_flight: 0,
            ttft_ms: streamed(Metric::TimeToFirstToken).map(|s| (s.p50, s.p99)),
            latency_ms: stat(Metric::RequestLatency).map(|s| (s.p50, s.p99)),
            itl_ms: streamed(Metric::InterTokenLatency).map(|s| s.avg),
            tok_per_s: Some(l.stats.output_token_throughput).filter(|t| *t > 0.0),
            req_per_s: l.stats.request_throughput,
            send_lag_p99_ms: stat(Metric::SendLag)
                .filter(|_| l.stimulus.open_loop())
                .map(|s| s.p99),
            windows: 0,
        }
    }

    /// Requests finished, successful, failed, cancelled or abandoned.
    fn finished(&self) -> u64 {
        self.done + self.errors + self.cancelled + self.abandoned
    }
}

/// A time in ms: two decimals under 10, one under 100, none above.
pub fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// A rate: one decimal under 100, none above.
fn per_s(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Seconds as `4.1 s`, or `2m05s` from a minute.
pub fn secs(v: f64) -> String {
    if v < 60.0 {
        format!("{v:.1} s")
    } else {
        let whole = v as u64;
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// The numbers of a snapshot, in the order every form shows them. `running` adds the requests
/// in flight (a finished level has none).
fn numbers(s: &Snapshot, running: bool) -> Vec<String> {
    let mut out = Vec::new();
    if running {
        out.push(format!("{} in flight", s.in_flight));
    }
    out.push(count(s.errors, "error"));
    out.extend(set_aside(s));
    let p99 = |v: f64| p99_text(s, v);
    if let Some((p50, v)) = s.ttft_ms {
        out.push(format!("TTFT p50 {} p99 {} ms", ms(p50), p99(v)));
    } else if let Some((p50, v)) = s.latency_ms {
        out.push(format!("latency p50 {} p99 {} ms", ms(p50), p99(v)));
    }
    if let Some(itl) = s.itl_ms {
        out.push(format!("ITL {} ms", ms(itl)));
    }
    if let Some(t) = s.tok_per_s {
        out.push(format!("{} tok/s", per_s(t)));
    }
    out.push(format!("{} req/s", per_s(s.req_per_s)));
    if let Some(lag) = s.send_lag_p99_ms {
        out.push(format!("send lag p99 {} ms", ms(lag)));
    }
    out
}

/// The requests cancelled on purpose and those abandoned in flight, where there are any.
fn set_aside(s: &Snapshot) -> impl Iterator<Item = String> {
    [(s.cancelled, "cancelled"), (s.abandoned, "abandoned")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
}

/// A p99 as shown: like the tables, no view shows one its successful requests cannot support
/// (a running line with a p99 of 4 requests read as a contradiction of the final line's '-').
fn p99_text(s: &Snapshot, v: f64) -> String {
    if crate::metrics::supports_percentile(s.done, 99) {
        ms(v)
    } else {
        "-".to_string()
    }
}

/// How far toward the goal: `120/200 requests`, `12.0 of 30.0 s`, `window 3 of at most 10`,
/// or the warm-up's count.
pub fn progress(h: &Head, s: &Snapshot) -> String {
    if s.stage == Stage::WarmingUp {
        return format!("warming up: {} done", count(s.warmup, "request"));
    }
    match h.goal {
        Goal::Requests(n) => format!("{}/{n} requests", s.finished()),
        Goal::Seconds(d) => format!("{:.1} of {d:.1} s", s.elapsed_s.min(d)),
        Goal::Stable { max_windows } => format!(
            "window {} of at most {max_windows}, {}",
            (s.windows + 1).min(max_windows),
            count(s.finished(), "request")
        ),
    }
}

/// What is left, when the goal says: `80 requests, ~2.7 s` or `17.7 s`.
pub fn remaining(h: &Head, s: &Snapshot) -> Option<String> {
    if s.stage != Stage::Measuring {
        return None;
    }
    match h.goal {
        Goal::Requests(n) => {
            let left = n.saturating_sub(s.finished());
            let rate = s.finished() as f64 / s.elapsed_s.max(1e-9);
            Some(if s.finished() > 0 {
                format!("{left} requests, ~{}", secs(left as f64 / rate))
            } else {
                format!("{left} requests")
            })
        }
        Goal::Seconds(d) => Some(secs((d - s.elapsed_s).max(0.0))),
        Goal::Stable { .. } => None,
    }
}

/// The share of the goal reached (0–1), when it is a count or a window.
fn share(h: &Head, s: &Snapshot) -> Option<f64> {
    let f = match h.goal {
        Goal::Requests(n) => s.finished() as f64 / n.max(1) as f64,
        Goal::Seconds(d) => s.elapsed_s / d.max(1e-9),
        Goal::Stable { .. } => return None,
    };
    Some(f.clamp(0.0, 1.0))
}

/// The bar of how far the level has come, once past warm-up and when the goal says.
fn progress_bar(h: &Head, s: &Snapshot) -> Option<String> {
    (s.stage != Stage::WarmingUp)
        .then(|| share(h, s))
        .flatten()
        .map(bar)
}

/// `[=========>              ]`: `share` of [`BAR`] cells.
fn bar(share: f64) -> String {
    let full = ((share * BAR as f64) as usize).min(BAR);
    let mut b = String::with_capacity(BAR + 2);
    b.push('[');
    b.push_str(&"=".repeat(full));
    if full < BAR {
        b.push('>');
        b.push_str(&" ".repeat(BAR - full - 1));
    }
    b.push(']');
    b
}

/// The stage's own words, when it has any.
fn stage_note(s: &Snapshot) -> Option<&'static str> {
    match s.stage {
        Stage::Draining => Some(DRAINING),
        Stage::Stopping => Some(STOPPING),
        _ => None,
    }
}

/// The first compact line: level, bar, progress, elapsed and what is left.
fn compact_head(h: &Head, s: &Snapshot) -> String {
    let mut line = h.label();
    if let Some(b) = progress_bar(h, s) {
        line.push(' ');
        line.push_str(&b);
    }
    line.push(' ');
    line.push_str(&progress(h, s));
    line.push_str(&format!(", {} elapsed", secs(s.elapsed_s)));
    if let Some(r) = remaining(h, s) {
        line.push_str(&format!(", {r} left"));
    }
    line
}

/// The compact view: two lines redrawn in place, and a third while draining or stopping.
///
/// ```text
/// level 2/6 concurrency4 [============>           ] 100/200 requests, 4.0 s elapsed, 100 requests, ~4.0 s left
///   4 in flight, 0 errors, TTFT p50 25.1 p99 30.2 ms, ITL 10.0 ms, 812 tok/s, 25.0 req/s
/// ```
pub fn compact(h: &Head, s: &Snapshot) -> Vec<String> {
    let second = if s.stage == Stage::WarmingUp {
        format!("  {} in flight", s.in_flight)
    } else {
        format!("  {}", numbers(s, true).join(", "))
    };
    let mut lines = vec![compact_head(h, s), second];
    lines.extend(stage_note(s).map(|n| format!("  {n}")));
    lines
}

/// One plain line for logs (stderr not a terminal): `level 2/6 concurrency4 at 5.0 s: 120/200
/// requests, 4 in flight, 0 errors, TTFT p50 25.1 p99 30.2 ms, ...`.
pub fn plain(h: &Head, s: &Snapshot) -> String {
    let mut line = format!("{} at {}: {}", h.label(), secs(s.elapsed_s), progress(h, s));
    if s.stage != Stage::WarmingUp {
        line.push_str(", ");
        line.push_str(&numbers(s, true).join(", "));
    }
    if let Some(n) = stage_note(s) {
        line.push_str(&format!("; {n}"));
    }
    line
}

/// The line a level leaves behind: `level 2/6 concurrency4 done in 6.3 s: 200 requests, 0
/// errors, TTFT p50 25.1 p99 30.2 ms, ITL 10.0 ms, 812 tok/s, 31.7 req/s`.
pub fn final_line(h: &Head, s: &Snapshot, interrupted: bool) -> String {
    let how = if interrupted {
        "interrupted after"
    } else {
        "done in"
    };
    let mut parts = vec![count(s.done, "request")];
    parts.extend(numbers(s, false));
    format!(
        "{} {how} {}: {}",
        h.label(),
        secs(s.elapsed_s),
        parts.join(", ")
    )
}

/// The full-screen panel, `width` × `height` cells at most: the level's numbers one per row,
/// then the ladder so far (one final line per finished level; the latest that fit).
pub fn dashboard(
    h: &Head,
    s: &Snapshot,
    ladder: &[String],
    (width, height): (usize, usize),
) -> Vec<String> {
    let row = |k: &str, v: String| format!("  {k:<12}{v}");
    let mut rows = vec![format!("ttftbench live view: {}", h.label()), String::new()];
    let mut prog = progress(h, s);
    if let Some(b) = progress_bar(h, s) {
        prog = format!("{b} {prog}");
    }
    rows.push(row("progress", prog));
    let mut time = secs(s.elapsed_s);
    if let Some(r) = remaining(h, s) {
        time.push_str(&format!(" elapsed, {r} left"));
    }
    rows.push(row("time", time));
    if let Some(n) = stage_note(s) {
        rows.push(row("stage", n.to_string()));
    }
    let mut requests = vec![
        format!("{} done", s.done),
        format!("{} in flight", s.in_flight),
        count(s.errors, "error"),
    ];
    requests.extend(set_aside(s));
    rows.push(row("requests", requests.join(", ")));
    for (name, v) in [("TTFT", s.ttft_ms), ("latency", s.latency_ms)] {
        if let Some((p50, p99)) = v {
            let text = format!("p50 {} ms, p99 {} ms", ms(p50), p99_text(s, p99));
            rows.push(row(name, text));
        }
    }
    if let Some(itl) = s.itl_ms {
        rows.push(row("ITL", format!("avg {} ms", ms(itl))));
    }
    let mut tput = format!("{} req/s", per_s(s.req_per_s));
    if let Some(t) = s.tok_per_s {
        tput = format!("{} tok/s, {tput}", per_s(t));
    }
    rows.push(row("throughput", tput));
    if let Some(lag) = s.send_lag_p99_ms {
        rows.push(row("send lag", format!("p99 {} ms", ms(lag))));
    }
    rows.push(String::new());
    rows.push(format!(
        "ladder so far ({})",
        count(ladder.len() as u64, "level")
    ));
    // The latest finished levels that fit below, one row each.
    let room = height.saturating_sub(rows.len()).max(1);
    let skip = ladder.len().saturating_sub(room);
    rows.extend(ladder[skip..].iter().map(|l| format!("  {l}")));
    rows.truncate(height.max(1));
    rows.iter().map(|r| fit(r, width)).collect()
}

/// `line` cut to `width` characters (a longer line would wrap and move every row below it).
pub fn fit(line: &str, width: usize) -> String {
    match line.char_indices().nth(width) {
        Some((i, _)) => line[..i].to_string(),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(goal: Goal) -> Head {
        Head {
            number: 2,
            total: Some(6),
            name: "concurrency4".into(),
            goal,
        }
    }

    fn running() -> Snapshot {
        Snapshot {
            stage: Stage::Measuring,
            elapsed_s: 4.0,
            done: 99,
            errors: 1,
            cancelled: 0,
            abandoned: 0,
            warmup: 8,
            in_flight: 4,
            ttft_ms: Some((25.13, 30.24)),
            latency_ms: Some((1020.0, 1100.0)),
            itl_ms: Some(9.996),
            tok_per_s: Some(812.44),
            req_per_s: 24.75,
            send_lag_p99_ms: None,
            windows: 0,
        }
    }

    #[test]
    fn compact_view_is_two_lines() {
        let lines = compact(&head(Goal::Requests(200)), &running());
        let [a, b] = lines.as_slice() else {
            panic!("{lines:?}")
        };
        assert_eq!(
            a,
            "level 2/6 concurrency4 [============>           ] 100/200 requests, 4.0 s elapsed, 100 requests, ~4.0 s left"
        );
        // 99 successful requests support no p99, running or not.
        assert_eq!(
            b,
            "  4 in flight, 1 error, TTFT p50 25.1 p99 - ms, ITL 10.00 ms, 812 tok/s, 24.8 req/s"
        );
        let more = Snapshot {
            done: 150,
            ..running()
        };
        let b = &compact(&head(Goal::Requests(200)), &more)[1];
        assert!(b.contains("TTFT p50 25.1 p99 30.2 ms"), "{b}");
    }

    #[test]
    fn cancelled_requests_count_as_finished_and_are_named() {
        // (done, cancelled, abandoned, the numbers' line): requests a second Ctrl-C abandoned
        // are finished too, and named apart.
        for (done, cancelled, abandoned, numbers) in [
            (70, 30, 0, "1 error, 30 cancelled, TTFT"),
            (60, 30, 10, "1 error, 30 cancelled, 10 abandoned, TTFT"),
        ] {
            let s = Snapshot {
                done,
                cancelled,
                abandoned,
                ..running()
            };
            let lines = compact(&head(Goal::Requests(200)), &s);
            assert!(lines[0].contains("101/200 requests"), "{lines:?}");
            assert!(lines[1].contains(numbers), "{lines:?}");
        }
    }

    #[test]
    fn time_windows_count_down_and_say_when_draining() {
        let h = head(Goal::Seconds(30.0));
        assert_eq!(
            compact(&h, &running())[0],
            "level 2/6 concurrency4 [===>                    ] 4.0 of 30.0 s, 4.0 s elapsed, 26.0 s left"
        );
        let s = Snapshot {
            stage: Stage::Draining,
            elapsed_s: 31.5,
            ..running()
        };
        let lines = compact(&h, &s);
        assert_eq!(
            lines[0],
            "level 2/6 concurrency4 [========================] 30.0 of 30.0 s, 31.5 s elapsed"
        );
        assert_eq!(lines[2], "  window over, draining requests in flight");
        assert_eq!(
            plain(&h, &s),
            "level 2/6 concurrency4 at 31.5 s: 30.0 of 30.0 s, 4 in flight, 1 error, TTFT p50 25.1 p99 - ms, ITL 10.00 ms, 812 tok/s, 24.8 req/s; window over, draining requests in flight"
        );
    }

    #[test]
    fn warm_up_shows_its_count_only() {
        let s = Snapshot {
            stage: Stage::WarmingUp,
            elapsed_s: 0.5,
            in_flight: 3,
            ..Snapshot::default()
        };
        let h = head(Goal::Requests(200));
        assert_eq!(
            compact(&h, &s),
            [
                "level 2/6 concurrency4 warming up: 0 requests done, 0.5 s elapsed".to_string(),
                "  3 in flight".to_string()
            ]
        );
        assert_eq!(
            plain(&h, &s),
            "level 2/6 concurrency4 at 0.5 s: warming up: 0 requests done"
        );
    }

    #[test]
    fn plain_line_for_logs() {
        let s = Snapshot {
            send_lag_p99_ms: Some(0.123),
            ttft_ms: None,
            itl_ms: None,
            tok_per_s: None,
            ..running()
        };
        assert_eq!(
            plain(&head(Goal::Requests(200)), &s),
            "level 2/6 concurrency4 at 4.0 s: 100/200 requests, 4 in flight, 1 error, latency p50 1020 p99 - ms, 24.8 req/s, send lag p99 0.12 ms"
        );
    }

    #[test]
    fn stability_windows_and_open_totals() {
        let h = Head {
            total: None,
            ..head(Goal::Stable { max_windows: 10 })
        };
        let s = Snapshot {
            windows: 2,
            stage: Stage::Stopping,
            ..running()
        };
        let lines = compact(&h, &s);
        assert_eq!(
            lines[0],
            "level 2 concurrency4 window 3 of at most 10, 100 requests, 4.0 s elapsed"
        );
        assert_eq!(
            lines[2],
            "  stopping: no new requests, waiting for those in flight (Ctrl-C again to abandon them)"
        );
    }

    #[test]
    fn final_line_from_the_level_summary() {
        use crate::metrics::Stats;
        use crate::stats::LevelStats;
        let st = |p50: f64, p99: f64, avg: f64| Stats {
            count: 200,
            avg,
            p50,
            p99,
            ..Stats::default()
        };
        let stats = LevelStats {
            metrics: vec![
                (Metric::TimeToFirstToken, st(25.13, 30.24, 26.0)),
                (Metric::InterTokenLatency, st(10.0, 11.0, 10.04)),
                (Metric::RequestLatency, st(1020.0, 1100.0, 1030.0)),
            ],
            request_count: 200,
            error_count: 0,
            output_token_throughput: 1234.56,
            request_throughput: 31.66,
            ..LevelStats::default()
        };
        let l = LevelSummary::new(crate::load::Stimulus::Concurrency(4), stats);
        let s = Snapshot::of_level(&l, 6.31);
        assert_eq!(
            final_line(&head(Goal::Requests(200)), &s, false),
            "level 2/6 concurrency4 done in 6.3 s: 200 requests, 0 errors, TTFT p50 25.1 p99 30.2 ms, ITL 10.0 ms, 1235 tok/s, 31.7 req/s"
        );
        let not_streamed = LevelSummary {
            streaming: false,
            ..l
        };
        let s = Snapshot::of_level(&not_streamed, 75.0);
        assert_eq!(
            final_line(&head(Goal::Requests(200)), &s, true),
            "level 2/6 concurrency4 interrupted after 1m15s: 200 requests, 0 errors, latency p50 1020 p99 1100 ms, 1235 tok/s, 31.7 req/s"
        );
        // 99 requests support no p99: the final line says '-' as the table does; 100 do.
        for (n, p99) in [(99, "-"), (100, "1100")] {
            let mut s = Snapshot::of_level(&not_streamed, 6.31);
            s.done = n;
            assert!(
                final_line(&head(Goal::Requests(200)), &s, false)
                    .contains(&format!("latency p50 1020 p99 {p99} ms")),
                "{n}"
            );
        }
    }

    #[test]
    fn dashboard_fits_the_screen_and_keeps_the_latest_levels() {
        let ladder: Vec<String> = (1..=5).map(|i| format!("level {i}/6 done")).collect();
        let rows = dashboard(&head(Goal::Requests(200)), &running(), &ladder, (40, 14));
        assert_eq!(rows.len(), 14);
        assert_eq!(rows[0], "ttftbench live view: level 2/6 concurren");
        assert_eq!(rows[2], "  progress    [============>           ]");
        assert_eq!(rows[4], "  requests    99 done, 4 in flight, 1 er");
        assert_eq!(rows[10], "ladder so far (5 levels)");
        assert_eq!(
            &rows[11..],
            ["  level 3/6 done", "  level 4/6 done", "  level 5/6 done"]
        );
        assert!(rows.iter().all(|r| r.chars().count() <= 40));
    }

    #[test]
    fn numbers_read_at_a_glance() {
        assert_eq!(
            [ms(0.1234), ms(25.13), ms(1719.9)],
            ["0.12", "25.1", "1720"]
        );
        assert_eq!([secs(4.04), secs(125.0)], ["4.0 s", "2m05s"]);
        assert_eq!(fit("héllo", 2), "hé");
        assert_eq!(bar(0.0), format!("[>{}]", " ".repeat(BAR - 1)));
    }
}
