//! Where a level's records go: one collector thread per level receives every finished request
//! (warm-up and measured), hands it to the sinks — `requests.jsonl` (every phase), the timeline
//! (every phase: it is what the server saw), the live view's tally ([`super::live::Tally`]) — and
//! cuts the measured ones into windows. A request belongs to the window its last response falls in.
//!
//! A fixed stop has one window, closed when the load has stopped (it ends at the level's last
//! response). perf_analyzer's time windows close as time passes (each is sent to the level's
//! stability loop as it closes); count windows close at their N-th successful request. When the
//! load stops, what the open window holds is sent as a partial window, so an interrupted level
//! still reports what it measured. A sequential rule's windows ([`WindowRule::Looks`]) close at
//! each look's count of successful requests and every [`LOOK_TICK`] in between, and carry the
//! means of successive bins of their requests' TTFT by send time, for the in-level trend the
//! saturation signals read. Workers never wait on the collector: the queue is lock-free,
//! and file I/O stays off the async runtime; when the collector falls behind, the queue's bound holds
//! the workers back (`load::queue`), and the level's verdict says so.

use crate::client::request_id::RequestIds;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::artifact::lines::LineFile;
use crate::artifact::raw_export::RawExportWriter;
use crate::artifact::records::write_row;
use crate::artifact::timeline::Timeline;
use crate::load::{Completed, GapPool, LOOK_TICK, RecordSource, WindowRule};
use crate::metrics::Objective;
use crate::record::{Clock, Phase, RequestRecord};
use crate::stats::Aggregate;

/// Successful requests per trend bin of a sequential rule's windows.
pub const TREND_BIN: u32 = 5;

/// Completions reach the collector microseconds after they end; a time window closes once its end
/// is this far in the past, so late arrivals still land in the right window.
const GRACE_NS: u64 = 5_000_000;

/// Where every request is written as one JSON line (`requests.jsonl`, or perf's
/// `<stem>.requests.jsonl`), with the level it belongs to.
pub struct RecordsFile {
    /// Written in whole lines: after a crash or a failed write it ends at a complete line.
    out: LineFile,
    /// The ids the requests were sent with, to record beside each.
    ids: Option<Arc<RequestIds>>,
}

impl RecordsFile {
    /// Creates (truncates) the file; with `ids`, each row records its request's id.
    pub fn create(path: &Path, ids: Option<Arc<RequestIds>>) -> crate::error::Result<RecordsFile> {
        let out = LineFile::create(path).map_err(|e| crate::error::Error::io("write", path, e))?;
        Ok(RecordsFile { out, ids })
    }

    fn write(&mut self, level: &str, clock: &Clock, rec: &RequestRecord) {
        let id = self.ids.as_ref().map(|i| i.id(rec.seq));
        let id = id.as_ref().map(|i| i as &dyn std::fmt::Display);
        self.out.line(|b| write_row(b, level, clock, rec, id));
    }

    /// Writes what is buffered; the first error of the file's life, if any, with the file and
    /// the lines it saved.
    pub fn finish(self) -> crate::error::Result<()> {
        Ok(self.out.finish().map(|_| ())?)
    }
}

/// The outputs a level's records feed besides its aggregate. A front end owns them and lends
/// them to each level's collector: `profile` makes new ones per level, `perf` keeps one timeline
/// and one requests file across its levels.
#[derive(Default)]
pub struct Sinks {
    /// Every request, one JSON line each.
    pub records: Option<RecordsFile>,
    /// Per-interval rows.
    pub timeline: Option<Timeline>,
    /// The run's live view (`--ui`): each level draws on it while it runs and leaves its final
    /// line.
    pub live: Option<super::live::LiveView>,
    /// GenAI-Perf's / perf_analyzer's raw per-request export, with an experiment open; takes each
    /// record's response capture (and recycles it).
    pub raw_export: Option<RawExportWriter>,
    /// The raw export's first write error; it stops writing there.
    pub raw_error: Option<std::io::Error>,
}

impl Sinks {
    /// Sinks writing the requests file at `records` and the timeline at `timeline` (its path
    /// and interval), each when given; the rest is the caller's to add.
    pub fn files(
        shared: &crate::load::Shared,
        records: Option<&Path>,
        timeline: Option<(&Path, Duration)>,
        streaming: bool,
    ) -> crate::error::Result<Sinks> {
        let timeline = timeline
            .map(|(path, every)| {
                Timeline::create(path, every, shared.clock, streaming)
                    .map_err(|e| crate::error::Error::io("write", path, e))
            })
            .transpose()?;
        let records = records
            .map(|path| RecordsFile::create(path, shared.request_ids.clone()))
            .transpose()?;
        Ok(Sinks {
            records,
            timeline,
            ..Sinks::default()
        })
    }

    /// Closes the timeline (its last interval, still open, ends now) and the requests file,
    /// then reports the raw export's first error, naming it `what`.
    pub fn finish_files(&mut self, what: &str) -> crate::error::Result<()> {
        if let Some(t) = self.timeline.take() {
            t.finish()?;
        }
        if let Some(r) = self.records.take() {
            r.finish()?;
        }
        match self.raw_error.take() {
            Some(e) => Err(crate::error::Error::failed(format!("writing {what}: {e}"))),
            None => Ok(()),
        }
    }
}

/// One closed window of measured requests.
#[derive(Debug)]
pub struct Window {
    /// Start (ns on the run clock).
    pub start_ns: u64,
    /// End (ns on the run clock).
    pub end_ns: u64,
    /// The requests whose last response fell in it.
    pub agg: Aggregate,
    /// Whether the load stopped before the window's rule closed it.
    pub partial: bool,
    /// Whether a look of a sequential rule closed it (its count was reached).
    pub look: bool,
    /// Sequential rule: `(send time s since the measurement started, ms)` means of the bins of
    /// [`TREND_BIN`] successful requests completed in it (TTFT, or latency without one).
    pub bins: Vec<(f64, f64)>,
}

impl Window {
    /// An open window from `start_ns` to `end_ns`.
    fn open(start_ns: u64, end_ns: u64, isl_edges: &[u32]) -> Window {
        Window {
            start_ns,
            end_ns,
            agg: Aggregate::with_isl_buckets(isl_edges),
            partial: false,
            look: false,
            bins: Vec::new(),
        }
    }

    /// Length in seconds.
    pub fn secs(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }
}

/// A trend bin being filled: sums of send time (s) and value (ms), and the count.
#[derive(Debug, Default, Clone, Copy)]
struct Bin {
    t: f64,
    v: f64,
    n: u32,
}

/// What the collector needs to know about its level.
pub struct Setup {
    /// The level's name as records carry it (`concurrency8`).
    pub level: String,
    /// The run's clock.
    pub clock: Clock,
    /// Goodput objectives.
    pub objectives: Vec<Objective>,
    /// Input-length bucket edges (empty: not split).
    pub isl_edges: Vec<u32>,
    /// Gap buffers go back here.
    pub pool: GapPool,
    /// How measured requests are cut into windows.
    pub rule: WindowRule,
    /// When the measurement started (ns on the run clock; 0 until it has).
    pub measure_start: Arc<AtomicU64>,
    /// The live view's running numbers, when a view is drawn.
    pub live: Option<super::live::Tally>,
    /// A scored workload's reference outputs, when temperature-0 outputs are compared.
    pub references: Option<Arc<crate::stats::scored::References>>,
}

/// What the collector hands back when the load has stopped.
pub struct Collected {
    /// The sinks, to be finished or lent to the next level.
    pub sinks: Sinks,
    /// Warm-up requests seen.
    pub warmup: u64,
    /// How long workers waited for room in the queue (the collector fell behind).
    pub held: crate::load::queue::Held,
}

/// Starts the collector thread; it ends when every sender of `rx` is gone.
pub fn spawn(
    setup: Setup,
    sinks: Sinks,
    rx: RecordSource,
    windows: UnboundedSender<Window>,
) -> std::io::Result<std::thread::JoinHandle<Collected>> {
    std::thread::Builder::new()
        .name(format!("collect-{}", setup.level))
        .spawn(move || Cutter::new(setup, sinks, windows).run(rx))
}

/// The collector thread's state.
struct Cutter {
    setup: Setup,
    sinks: Sinks,
    tx: UnboundedSender<Window>,
    /// The open window, once the measurement has started.
    cur: Option<Window>,
    /// Time windows' length (a sequential rule's tick).
    len_ns: Option<u64>,
    warmup: u64,
    /// A sequential rule's look counts, and the next one's index.
    looks: Vec<u64>,
    next_look: usize,
    /// Successful requests in the windows already sent.
    closed_ok: u64,
    /// The trend bin being filled.
    bin: Bin,
    /// Whether a changed output of this level carries the example already.
    example_given: bool,
}

impl Cutter {
    fn new(setup: Setup, sinks: Sinks, tx: UnboundedSender<Window>) -> Cutter {
        let (len_ns, looks) = match setup.rule {
            WindowRule::Time(d) => (Some(d.as_nanos() as u64), Vec::new()),
            WindowRule::Looks(l) => (Some(LOOK_TICK.as_nanos() as u64), l.schedule()),
            _ => (None, Vec::new()),
        };
        Cutter {
            setup,
            sinks,
            tx,
            cur: None,
            len_ns,
            warmup: 0,
            looks,
            next_look: 0,
            closed_ok: 0,
            bin: Bin::default(),
            example_given: false,
        }
    }

    fn run(mut self, rx: RecordSource) -> Collected {
        loop {
            let msg = rx.recv_timeout(Duration::from_millis(2));
            let closed = matches!(msg, Err(crate::load::queue::Empty::Closed));
            if let Ok(Completed {
                mut record,
                mut gaps,
                capture,
            }) = msg
            {
                self.compare(&mut record);
                self.take(&record, &gaps);
                self.raw(&record, capture);
                gaps.clear();
                let _ = self.setup.pool.push(gaps);
            }
            let now = self.setup.clock.now_ns();
            if let Some(t) = self.sinks.timeline.as_mut() {
                t.advance(now);
            }
            if let Some(t) = self.setup.live.as_mut() {
                t.tick(now, self.setup.measure_start.load(Ordering::Acquire));
            }
            self.open_if_started();
            if let Some(len) = self.len_ns {
                while self
                    .cur
                    .as_ref()
                    .is_some_and(|c| now >= c.end_ns + GRACE_NS)
                {
                    self.close(len);
                }
            }
            if closed {
                break;
            }
        }
        self.finish(rx.held())
    }

    /// Hands a request and its response capture to the raw export, which writes measured,
    /// successful requests and recycles the capture.
    fn raw(&mut self, record: &RequestRecord, capture: Option<crate::client::Capture>) {
        if let Some(w) = self.sinks.raw_export.as_mut()
            && self.sinks.raw_error.is_none()
            && let Err(e) = w.record(record, capture)
        {
            self.sinks.raw_error = Some(e);
        }
    }

    /// The determinism check's part of a scored request: its output against its prompt's
    /// reference (becoming the reference when it is the first), and for the level's first
    /// changed output, where it first differs.
    fn compare(&mut self, record: &mut RequestRecord) {
        let Some(refs) = self.setup.references.as_ref() else {
            return;
        };
        if !crate::stats::scored::comparable(record) {
            return;
        }
        let prompt = record.prompt_index;
        let Some(a) = record.answer.as_mut() else {
            return;
        };
        use crate::stats::scored::Against;
        a.changed = match refs.compare(prompt, &a.output) {
            Against::Reference => None,
            Against::Same => Some(false),
            Against::Changed(at) => {
                if !self.example_given {
                    self.example_given = true;
                    a.change = Some(Box::new(refs.example(prompt, &a.output, at)));
                }
                Some(true)
            }
        };
    }

    /// Opens the first window once the measurement has started (called for every record: the
    /// shared start is read only while no window is open).
    fn open_if_started(&mut self) {
        if self.cur.is_some() {
            return;
        }
        let start = self.setup.measure_start.load(Ordering::Acquire);
        if start > 0 {
            let end = self.len_ns.map_or(u64::MAX, |l| start + l);
            self.cur = Some(Window::open(start, end, &self.setup.isl_edges));
            if let Some(t) = self.sinks.timeline.as_mut() {
                t.measure_from(start);
            }
        }
    }

    fn take(&mut self, record: &RequestRecord, gaps: &[u64]) {
        if let Some(r) = self.sinks.records.as_mut() {
            r.write(&self.setup.level, &self.setup.clock, record);
        }
        if let Some(t) = self.sinks.timeline.as_mut() {
            t.record(record);
        }
        if let Some(t) = self.setup.live.as_mut() {
            t.record(record);
        }
        if record.phase != Phase::Measure {
            self.warmup += 1;
            return;
        }
        self.open_if_started();
        let end = record.last_token_ns.unwrap_or(record.end_ns);
        if let Some(len) = self.len_ns {
            while self.cur.as_ref().is_some_and(|c| end >= c.end_ns) {
                self.close(len);
            }
        }
        let Some(cur) = self.cur.as_mut() else {
            return;
        };
        cur.agg.record(record, gaps, &self.setup.objectives);
        if let WindowRule::Count(n) = self.setup.rule
            && cur.agg.ok >= n
        {
            cur.end_ns = end.max(cur.start_ns + 1);
            self.close(0);
            return;
        }
        if !self.looks.is_empty() {
            self.look(record, end);
        }
    }

    /// A sequential rule's part of a measured request: its trend bin, and the look its count
    /// reaches (which closes the window).
    fn look(&mut self, record: &RequestRecord, end: u64) {
        let Some(cur) = self.cur.as_mut() else {
            return;
        };
        if record.error.is_none()
            && let Some(v) = record.ttft_ns().or_else(|| record.latency_ns())
        {
            let start = self.setup.measure_start.load(Ordering::Acquire);
            self.bin.t += record.sent_ns.saturating_sub(start) as f64 / 1e9;
            self.bin.v += v as f64 / 1e6;
            self.bin.n += 1;
            if self.bin.n >= TREND_BIN {
                let n = f64::from(self.bin.n);
                cur.bins.push((self.bin.t / n, self.bin.v / n));
                self.bin = Bin::default();
            }
        }
        let due = self.looks.get(self.next_look).copied();
        if due.is_some_and(|n| self.closed_ok + cur.agg.ok >= n) {
            self.next_look += 1;
            cur.end_ns = end.max(cur.start_ns + 1);
            cur.look = true;
            self.close(self.len_ns.unwrap_or(0));
        }
    }

    /// Sends the open window and opens the next one, `len_ns` long (0: open-ended).
    fn close(&mut self, len_ns: u64) {
        let Some(cur) = self.cur.as_mut() else {
            return;
        };
        if let Some(t) = self.setup.live.as_mut() {
            t.window_closed();
        }
        let start = cur.end_ns;
        let end = if len_ns > 0 { start + len_ns } else { u64::MAX };
        let next = Window::open(start, end, &self.setup.isl_edges);
        let done = std::mem::replace(cur, next);
        self.closed_ok += done.agg.ok;
        let _ = self.tx.send(done);
    }

    /// The load has stopped: the open window ends at its last response and goes out (partial
    /// unless the rule is a single window, which this completes).
    fn finish(mut self, held: crate::load::queue::Held) -> Collected {
        self.open_if_started();
        if let Some(mut cur) = self.cur.take() {
            let single = matches!(
                self.setup.rule,
                WindowRule::Once(_) | WindowRule::Requests(_)
            );
            cur.end_ns = cur
                .agg
                .last_response_ns
                .unwrap_or_else(|| self.setup.clock.now_ns())
                .max(cur.start_ns + 1);
            cur.partial = !single;
            if single || cur.agg.ok + cur.agg.error_count() > 0 {
                let _ = self.tx.send(cur);
            }
        }
        Collected {
            sinks: self.sinks,
            warmup: self.warmup,
            held,
        }
    }
}
