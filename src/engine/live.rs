//! The live view while a level runs (`--ui`), for every mode alike: it hangs off the level's
//! sinks like the records file.
//!
//! Three parties, and the hot path is none of them. The workers only count the requests they
//! send, one relaxed increment per request that the scheduler made anyway ([`Feed::sent`]).
//! The collector thread, which already receives every record, tallies what the view shows
//! ([`Tally`]: two small histograms, sums and counts) and a few times a second publishes a
//! [`Snapshot`] into the [`Feed`], holding its lock only to copy it. A drawing thread of the
//! view's own wakes every [`REDRAW`] (every [`PLAIN_EVERY`] for plain lines), copies the latest
//! snapshot and draws it; a slow terminal blocks that thread and nothing else.
//!
//! The view goes to stderr, where progress and the per-level lines have always gone: stdout
//! carries results (the sweep table, perf_analyzer's report, `--output json`), which a pipe or
//! a file must get without escape codes. So whether to redraw is decided by stderr alone:
//! redraws only reach a terminal (`ttftbench ... > results.txt` on a terminal still gets them,
//! and results.txt stays clean), while CI logs, `2>&1 | tee` and `TERM=dumb` get plain lines
//! (at most one every [`PLAIN_EVERY`], and each level's final line).

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::load::Interrupt;
use crate::metrics::{Metric, PercentileMethod};
use crate::plan::outputs::UiMode;
use crate::record::{Clock, Phase, RequestRecord};
use crate::report::live::{self, Goal, Head, Snapshot, Stage};
use crate::stats::{Dist, LevelSummary};

/// Between two frames of the compact view or the dashboard: four a second reads as live and
/// costs nothing.
pub const REDRAW: Duration = Duration::from_millis(250);

/// Between two plain lines (stderr not a terminal): a CI log gets a few lines per level.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Between two snapshots the collector publishes.
const PUBLISH_NS: u64 = 200_000_000;

/// The terminal's size when it cannot be read (and for views drawn into a buffer).
const FALLBACK_SIZE: (usize, usize) = (120, 40);

/// Level views redrawing the terminal now (compact or dashboard).
static REDRAWING: AtomicUsize = AtomicUsize::new(0);

/// Whether a view is redrawing the terminal: a line written to it now would land inside the
/// view and be drawn over (the Ctrl-C handler lets the view say it instead).
pub fn redrawing() -> bool {
    REDRAWING.load(Ordering::Relaxed) > 0
}

/// How the live view draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    /// Two lines redrawn in place.
    Compact,
    /// A full-screen panel on the terminal's alternate screen.
    Dashboard,
    /// A plain line every [`PLAIN_EVERY`]: not a terminal.
    Plain,
}

impl Display {
    /// The display `--ui` asks for on this process's stderr (see the module's notes on why
    /// stderr); `None` for `--ui none`.
    pub fn for_stderr(mode: UiMode) -> Option<Display> {
        use std::io::IsTerminal;
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Display::choose(mode, std::io::stderr().is_terminal() && !dumb)
    }

    /// The display of `mode` on a terminal or not: anything but a terminal gets plain lines.
    pub fn choose(mode: UiMode, terminal: bool) -> Option<Display> {
        match (mode, terminal) {
            (UiMode::None, _) => None,
            (_, false) => Some(Display::Plain),
            (UiMode::Compact, true) => Some(Display::Compact),
            (UiMode::Dashboard, true) => Some(Display::Dashboard),
        }
    }
}

/// What is on the screen, shared by the drawing thread and the level's end.
struct Screen {
    out: Box<dyn Write + Send>,
    /// Lines of the compact view drawn (the cursor is at the end of the last).
    drawn: usize,
    /// Whether the dashboard's alternate screen is on.
    alt: bool,
}

impl Screen {
    fn write(&mut self, s: &str) {
        // A closed or broken stderr is not worth failing a measured run for.
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
    }

    /// Takes the view off the screen: the compact lines erased, the alternate screen left (and
    /// the cursor shown again), so what is written next lands in the scrollback.
    fn clear(&mut self) {
        let mut s = String::new();
        if self.drawn > 0 {
            s.push_str(&back_to_top(self.drawn));
            s.push_str("\x1b[J");
            self.drawn = 0;
        }
        if self.alt {
            s.push_str("\x1b[?25h\x1b[?1049l");
            self.alt = false;
        }
        if !s.is_empty() {
            self.write(&s);
        }
    }
}

/// The run's live view: how it draws, where, and the levels finished so far. Cloned into each
/// level's sinks.
#[derive(Clone)]
pub struct LiveView {
    inner: Arc<Inner>,
}

struct Inner {
    display: Display,
    /// Levels in the plan (`None`: open-ended).
    total: Option<u32>,
    screen: Mutex<Screen>,
    /// Each finished level's final line, for the dashboard.
    ladder: Mutex<Vec<String>>,
    /// Between two draws.
    every: Duration,
    /// Whether the size is the terminal's (stderr) or [`FALLBACK_SIZE`].
    terminal_size: bool,
}

/// A lock that a panicking holder left is still the screen.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LiveView {
    /// A view on stderr for a run of `total` levels (`None`: open-ended).
    pub fn stderr(display: Display, total: Option<u32>) -> LiveView {
        let every = match display {
            Display::Plain => PLAIN_EVERY,
            _ => REDRAW,
        };
        LiveView::build(display, total, Box::new(std::io::stderr()), every, true)
    }

    /// A view drawn into `out` every `every` (tests, and embedding ttftbench).
    pub fn to_writer(
        display: Display,
        total: Option<u32>,
        out: Box<dyn Write + Send>,
        every: Duration,
    ) -> LiveView {
        LiveView::build(display, total, out, every, false)
    }

    fn build(
        display: Display,
        total: Option<u32>,
        out: Box<dyn Write + Send>,
        every: Duration,
        terminal_size: bool,
    ) -> LiveView {
        LiveView {
            inner: Arc::new(Inner {
                display,
                total,
                screen: Mutex::new(Screen {
                    out,
                    drawn: 0,
                    alt: false,
                }),
                ladder: Mutex::new(Vec::new()),
                every,
                terminal_size,
            }),
        }
    }

    /// Levels in the plan.
    pub fn total(&self) -> Option<u32> {
        self.inner.total
    }

    /// Starts drawing a level on a thread of its own: `feed` is what its collector publishes,
    /// `times` where its clock and start are. `None` when no thread can be started (the level
    /// runs without a view).
    pub fn start_level(&self, head: Head, feed: Arc<Feed>, times: Times) -> Option<LevelView> {
        let (stop, rx) = mpsc::channel::<()>();
        let drawer = Drawer {
            view: self.clone(),
            head: head.clone(),
            feed,
            times: times.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("live-view".into())
            .spawn(move || drawer.run(rx))
            .ok()?;
        if self.inner.display != Display::Plain {
            REDRAWING.fetch_add(1, Ordering::Relaxed);
        }
        Some(LevelView {
            view: self.clone(),
            head,
            times,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    fn size(&self) -> (usize, usize) {
        if self.inner.terminal_size {
            stderr_size().unwrap_or(FALLBACK_SIZE)
        } else {
            FALLBACK_SIZE
        }
    }

    /// Draws one frame of `s`.
    fn draw(&self, head: &Head, s: &Snapshot) {
        let (width, height) = self.size();
        let mut screen = lock(&self.inner.screen);
        match self.inner.display {
            Display::Plain => screen.write(&format!("{}\n", live::plain(head, s))),
            Display::Compact => {
                // One column spare: a line as wide as the terminal wraps on some terminals.
                let lines: Vec<String> = live::compact(head, s)
                    .iter()
                    .map(|l| live::fit(l, width.saturating_sub(1)))
                    .collect();
                let frame = compact_frame(screen.drawn, &lines);
                screen.write(&frame);
                screen.drawn = lines.len();
            }
            Display::Dashboard => {
                let ladder = lock(&self.inner.ladder).clone();
                let rows = live::dashboard(head, s, &ladder, (width, height));
                let enter = !screen.alt;
                screen.write(&dashboard_frame(enter, &rows));
                screen.alt = true;
            }
        }
    }
}

/// The cursor from the end of the last of `drawn` lines to the start of the first.
fn back_to_top(drawn: usize) -> String {
    match drawn {
        0 | 1 => "\r".to_string(),
        n => format!("\r\x1b[{}A", n - 1),
    }
}

/// One frame of the compact view over the `drawn` lines already there: each line rewritten and
/// its old tail erased, in one write, so the terminal never shows a blank view (no flicker).
fn compact_frame(drawn: usize, lines: &[String]) -> String {
    // Anything below (a longer frame before) goes too.
    format!("{}{}\x1b[J", back_to_top(drawn), tails_erased(lines, "\n"))
}

/// The lines joined by `sep`, each followed by erasing the rest of its screen line.
fn tails_erased(lines: &[String], sep: &str) -> String {
    let erased: Vec<String> = lines.iter().map(|l| format!("{l}\x1b[K")).collect();
    erased.join(sep)
}

/// One frame of the dashboard: home, each row over the old one, the rest erased; `enter`
/// switches to the alternate screen and hides the cursor first.
fn dashboard_frame(enter: bool, rows: &[String]) -> String {
    let enter = if enter { "\x1b[?1049h\x1b[?25l" } else { "" };
    format!("{enter}\x1b[H{}\x1b[J", tails_erased(rows, "\r\n"))
}

/// stderr's terminal size (columns, rows), when it is a terminal.
fn stderr_size() -> Option<(usize, usize)> {
    // SAFETY: TIOCGWINSZ writes only the struct passed, which lives for the call.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0 && ws.ws_row > 0).then_some((ws.ws_col as usize, ws.ws_row as usize))
}

/// Where a level's times come from: the run's clock, when the level and its measurement started.
#[derive(Clone)]
pub struct Times {
    /// The run's clock.
    pub clock: Clock,
    /// When the level started (ns on the clock): warm-up times count from it.
    pub level_start_ns: u64,
    /// When the measurement started (ns on the clock; 0 until it has).
    pub measure_start: Arc<AtomicU64>,
    /// Ctrl-C: the view says it is stopping.
    pub interrupt: Interrupt,
}

impl Times {
    /// The level's stage now, and seconds since its measurement started (warm-up: since the
    /// level started).
    fn now(&self, goal: Goal) -> (Stage, f64) {
        let now = self.clock.now_ns();
        let start = self.measure_start.load(Ordering::Acquire);
        let since = |t: u64| now.saturating_sub(t) as f64 / 1e9;
        if start == 0 {
            return (Stage::WarmingUp, since(self.level_start_ns));
        }
        let elapsed = since(start);
        let stage = match goal {
            _ if self.interrupt.stopping() => Stage::Stopping,
            Goal::Seconds(d) if elapsed >= d => Stage::Draining,
            _ => Stage::Measuring,
        };
        (stage, elapsed)
    }
}

/// The drawing thread's state.
struct Drawer {
    view: LiveView,
    head: Head,
    feed: Arc<Feed>,
    times: Times,
}

impl Drawer {
    /// Draws every `every` until the level's end drops (or signals) `stop`.
    fn run(self, stop: mpsc::Receiver<()>) {
        loop {
            match stop.recv_timeout(self.view.inner.every) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            let mut s = self.feed.latest();
            (s.stage, s.elapsed_s) = self.times.now(self.head.goal);
            self.view.draw(&self.head, &s);
        }
    }
}

/// A level being drawn. [`LevelView::finish`] leaves its final line; dropped without it (an
/// error ends the level), it still takes the view off the screen.
pub struct LevelView {
    view: LiveView,
    head: Head,
    times: Times,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LevelView {
    /// Stops drawing and takes the view off the screen.
    fn close(&mut self) -> MutexGuard<'_, Screen> {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            if self.view.inner.display != Display::Plain {
                REDRAWING.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let mut screen = lock(&self.view.inner.screen);
        screen.clear();
        screen
    }

    /// The level is over: the view gives way to its one final line, from the level's summary
    /// (the numbers of its files), which stays in the scrollback (unless `own_line`: the mode
    /// says the level itself) and joins the ladder. A level asked to stream whose responses
    /// `came_whole` shows its latency: a time to first token there would be the latency again
    /// under another name.
    pub fn finish(mut self, summary: &LevelSummary, came_whole: bool, own_line: bool) {
        let (_, elapsed) = self.times.now(self.head.goal);
        let mut s = Snapshot::of_level(summary, elapsed);
        if came_whole {
            s.ttft_ms = None;
            s.itl_ms = None;
        }
        let line = live::final_line(&self.head, &s, summary.interrupted);
        let view = self.view.clone();
        let mut screen = self.close();
        if !own_line {
            screen.write(&format!("{line}\n"));
        }
        drop(screen);
        lock(&view.inner.ladder).push(line);
    }

    /// Runs `f`, which writes lines of its own (perf's `-v` window lines), with the view off the
    /// screen; the next frame draws it again below them.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let mut screen = lock(&self.view.inner.screen);
        screen.clear();
        f()
    }
}

impl Drop for LevelView {
    fn drop(&mut self) {
        if self.thread.is_some() {
            drop(self.close());
        }
    }
}

/// What a level's collector publishes for the view, and the workers' count of requests sent.
#[derive(Default)]
pub struct Feed {
    latest: Mutex<Snapshot>,
    /// Warm-up requests sent (the warm-up phase's own count).
    pub warmup_sent: Arc<AtomicU64>,
    /// Measured requests sent (the measurement phase's own count).
    pub sent: Arc<AtomicU64>,
}

impl Feed {
    /// The latest snapshot (stage and elapsed time are the drawer's to fill in).
    fn latest(&self) -> Snapshot {
        *lock(&self.latest)
    }
}

/// A level's share of the live view: the counters the workers bump, the tally its collector
/// keeps and the drawing. Without a view only the counters, which nobody else reads.
#[derive(Default)]
pub struct LevelLive {
    /// For the collector's [`super::collector::Setup`].
    pub tally: Option<Tally>,
    /// For the warm-up phase's workers.
    pub warmup_sent: Arc<AtomicU64>,
    /// For the measurement phase's workers.
    pub sent: Arc<AtomicU64>,
    /// The drawing, ended by [`LevelLive::finish`].
    pub view: Option<LevelView>,
}

impl LevelLive {
    /// Starts drawing level `head`, a load of `shape`, on `view` when there is one.
    pub fn start(view: Option<&LiveView>, head: Head, shape: Shape, times: Times) -> LevelLive {
        let Some(view) = view else {
            return LevelLive::default();
        };
        let feed = Arc::new(Feed::default());
        LevelLive {
            tally: Some(Tally::new(feed.clone(), shape)),
            warmup_sent: feed.warmup_sent.clone(),
            sent: feed.sent.clone(),
            view: view.start_level(head, feed, times),
        }
    }

    /// The level is over: its final line replaces the view (`came_whole`, `own_line`: see
    /// [`LevelView::finish`]).
    pub fn finish(self, summary: &LevelSummary, came_whole: bool, own_line: bool) {
        if let Some(v) = self.view {
            v.finish(summary, came_whole, own_line);
        }
    }
}

/// What the level's load is, for what its tally keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    /// Responses stream: TTFT and ITL mean something.
    pub streaming: bool,
    /// A request-rate level: send lag means something.
    pub open_loop: bool,
    /// The most requests in flight (workers): a request that ended but is not collected yet
    /// is not counted twice.
    pub max_in_flight: u64,
}

/// The collector's running numbers for the view: measured requests only, warm-up counted.
#[derive(Default)]
pub struct Tally {
    feed: Arc<Feed>,
    shape: Shape,
    ttft: Dist,
    latency: Dist,
    lag: Dist,
    itl_sum_ns: f64,
    itl_count: u64,
    done: u64,
    errors: u64,
    /// Cancelled on purpose (`--request-cancellation-rate`): finished, but neither done nor
    /// failed.
    cancelled: u64,
    /// Abandoned in flight by a second Ctrl-C: finished, but neither done nor failed.
    abandoned: u64,
    warmup: u64,
    osl: u64,
    windows: u32,
    next_publish_ns: u64,
}

impl Tally {
    /// A tally publishing into `feed`.
    pub fn new(feed: Arc<Feed>, shape: Shape) -> Tally {
        Tally {
            feed,
            shape,
            ..Tally::default()
        }
    }

    /// Accounts one finished request.
    pub fn record(&mut self, r: &RequestRecord) {
        if r.phase == Phase::Warmup {
            self.warmup += 1;
            return;
        }
        if r.cancelled_on_purpose() {
            self.cancelled += 1;
            return;
        }
        if r.abandoned() {
            self.abandoned += 1;
            return;
        }
        if r.error.is_some() {
            self.errors += 1;
            return;
        }
        self.done += 1;
        self.osl += u64::from(r.osl);
        if let Some(v) = r.latency_ns() {
            self.latency.record(v);
        }
        if self.shape.streaming {
            if let Some(v) = r.ttft_ns() {
                self.ttft.record(v);
            }
            if let Some(v) = r.itl_ns() {
                self.itl_sum_ns += v as f64;
                self.itl_count += 1;
            }
        }
        if self.shape.open_loop {
            self.lag.record(r.send_lag_ns());
        }
    }

    /// A stability window closed.
    pub fn window_closed(&mut self) {
        self.windows += 1;
    }

    /// Publishes a snapshot when the last one is [`PUBLISH_NS`] old (`now_ns` on the run's
    /// clock; `measure_start_ns` 0 until the measurement starts).
    pub fn tick(&mut self, now_ns: u64, measure_start_ns: u64) {
        if now_ns < self.next_publish_ns {
            return;
        }
        self.next_publish_ns = now_ns + PUBLISH_NS;
        let s = self.snapshot(now_ns, measure_start_ns);
        *lock(&self.feed.latest) = s;
    }

    /// The numbers now. Percentiles are read off the histograms here, on the collector's
    /// thread, a few times a second (numpy's method, as the level's files by default).
    fn snapshot(&self, now_ns: u64, measure_start_ns: u64) -> Snapshot {
        let scale = Metric::TimeToFirstToken.unit().scale();
        let p = |d: &Dist| {
            (d.count() > 0).then(|| {
                let at = |q: f64| d.percentile(q, PercentileMethod::Linear) * scale;
                (at(50.0), at(99.0))
            })
        };
        let secs = if measure_start_ns > 0 {
            now_ns.saturating_sub(measure_start_ns) as f64 / 1e9
        } else {
            0.0
        };
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let (sent, finished) = if measure_start_ns > 0 {
            (
                self.feed.sent.load(Ordering::Relaxed),
                self.done + self.errors + self.cancelled + self.abandoned,
            )
        } else {
            (self.feed.warmup_sent.load(Ordering::Relaxed), self.warmup)
        };
        Snapshot {
            stage: Stage::Measuring,
            elapsed_s: secs,
            done: self.done,
            errors: self.errors,
            cancelled: self.cancelled,
            abandoned: self.abandoned,
            warmup: self.warmup,
            in_flight: sent.saturating_sub(finished).min(self.shape.max_in_flight),
            ttft_ms: p(&self.ttft),
            latency_ms: p(&self.latency),
            itl_ms: (self.itl_count > 0).then(|| self.itl_sum_ns / self.itl_count as f64 * scale),
            tok_per_s: (self.osl > 0).then(|| per_s(self.osl)),
            req_per_s: per_s(self.done),
            send_lag_p99_ms: p(&self.lag).map(|(_, p99)| p99),
            windows: self.windows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_terminal_gets_redraws() {
        for (ui, terminal, want) in [
            (UiMode::None, true, None),
            (UiMode::None, false, None),
            (UiMode::Compact, true, Some(Display::Compact)),
            (UiMode::Dashboard, true, Some(Display::Dashboard)),
            (UiMode::Dashboard, false, Some(Display::Plain)),
            (UiMode::Compact, false, Some(Display::Plain)),
        ] {
            assert_eq!(Display::choose(ui, terminal), want);
        }
    }

    #[test]
    fn compact_frames_rewrite_their_lines_in_one_write() {
        let lines = ["a".to_string(), "b".to_string()];
        assert_eq!(compact_frame(0, &lines), "\ra\x1b[K\nb\x1b[K\x1b[J");
        assert_eq!(compact_frame(2, &lines), "\r\x1b[1Aa\x1b[K\nb\x1b[K\x1b[J");
        assert_eq!(compact_frame(3, &lines), "\r\x1b[2Aa\x1b[K\nb\x1b[K\x1b[J");
        assert_eq!(
            dashboard_frame(true, &lines),
            "\x1b[?1049h\x1b[?25l\x1b[Ha\x1b[K\r\nb\x1b[K\x1b[J"
        );
        assert_eq!(
            dashboard_frame(false, &lines),
            "\x1b[Ha\x1b[K\r\nb\x1b[K\x1b[J"
        );
    }

    #[test]
    fn the_screen_is_left_as_found() {
        let mut s = Screen {
            out: Box::new(std::io::sink()),
            drawn: 2,
            alt: true,
        };
        s.clear();
        assert_eq!((s.drawn, s.alt), (0, false));
    }

    /// A 10-token request sent at 1 ms, first token `ttft_ms` later, done 90 ms after that.
    fn rec(phase: Phase, ttft_ms: u64, error: bool) -> RequestRecord {
        let ms = 1_000_000;
        RequestRecord {
            sent: Default::default(),
            tools: Default::default(),
            phase,
            sent_ns: ms,
            first_byte_ns: None,
            first_token_ns: Some(ms + ttft_ms * ms),
            second_token_ns: None,
            last_token_ns: Some(ms + (ttft_ms + 90) * ms),
            end_ns: ms + (ttft_ms + 90) * ms,
            isl: 10,
            error: error.then(|| {
                crate::record::RequestError::new(crate::record::ErrorKind::Timeout, "slow")
            }),
            ..crate::stats::test_record(0, 0, 10)
        }
    }

    /// A tally of this shape and the feed it publishes to.
    fn tally(streaming: bool, open_loop: bool, max_in_flight: u64) -> (Arc<Feed>, Tally) {
        let feed = Arc::new(Feed::default());
        let shape = Shape {
            streaming,
            open_loop,
            max_in_flight,
        };
        (feed.clone(), Tally::new(feed, shape))
    }

    #[test]
    fn the_tally_counts_measured_requests_and_in_flight_ones() {
        let (feed, mut t) = tally(true, true, 8);
        t.record(&rec(Phase::Warmup, 5, false));
        for ms in 1..=100 {
            t.record(&rec(Phase::Measure, ms, false));
        }
        t.record(&rec(Phase::Measure, 5, true));
        feed.sent.store(104, Ordering::Relaxed);
        t.tick(3_000_000_000, 1_000_000_000);
        let s = feed.latest();
        assert_eq!((s.done, s.errors, s.warmup, s.in_flight), (100, 1, 1, 3));
        let (p50, p99) = s.ttft_ms.unwrap();
        assert!(
            (p50 - 50.5).abs() < 0.1 && (p99 - 99.0).abs() < 0.1,
            "{p50} {p99}"
        );
        assert_eq!(s.itl_ms, Some(10.0));
        assert_eq!((s.tok_per_s, s.req_per_s), (Some(500.0), 50.0));
        assert_eq!(s.send_lag_p99_ms, Some(1.0));
        // Not again before the next publication is due.
        t.record(&rec(Phase::Measure, 5, false));
        t.tick(3_100_000_000, 1_000_000_000);
        assert_eq!(feed.latest().done, 100);
        t.tick(3_200_000_000, 1_000_000_000);
        assert_eq!(feed.latest().done, 101);
        // Sent while the last ones wait to be collected: never more than the workers.
        feed.sent.store(120, Ordering::Relaxed);
        t.tick(3_400_000_000, 1_000_000_000);
        assert_eq!(feed.latest().in_flight, 8);
    }

    #[test]
    fn unstreamed_responses_have_no_ttft() {
        let (feed, mut t) = tally(false, false, 1);
        t.record(&rec(Phase::Measure, 5, false));
        t.tick(2_000_000_000, 1_000_000_000);
        let s = feed.latest();
        assert_eq!((s.ttft_ms, s.itl_ms, s.send_lag_p99_ms), (None, None, None));
        assert_eq!(s.latency_ms, Some((95.0, 95.0)));
    }
}
