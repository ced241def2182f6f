//! One load level, measured the same way in every mode: connections warmed, warm-up requests
//! sent (and recorded as such), the measurement run under its policy — a fixed stop,
//! perf_analyzer's stability windows, or the sequential rule that stops once the level's
//! decision is settled ([`super::sequential`]) — while the server's counters, the generator's
//! own CPU and the async runtime's stalls are watched; then the level's summary, validity
//! verdict and drift over its timeline.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::Session;
use super::collector::{self, Setup, Sinks, Window};
use super::live::{LevelLive, LevelView, LiveView, Shape, Times};
use crate::analysis::sequential::{Rule, Settled, StopReason};
use crate::analysis::validity::{self, Observed, StallMonitor};
use crate::error::{Error, Result};
use crate::load::{Halt, LevelLength, PhaseOutcome, Stimulus, WindowRule, run_phase};
use crate::metrics::{Metric, Objective, PercentileMethod};
use crate::record::Phase;
use crate::report::live::{Goal, Head};
use crate::server_metrics::gpu::GpuView;
use crate::server_metrics::level::EngineLevelView;
use crate::server_metrics::{ProbeSnapshot, Sampler, ServerDelta, ServerProbe, StatsSnapshot};
use crate::stats::sessions::SessionDists;
use crate::stats::trend::DriftMetric;
use crate::stats::{Aggregate, LevelSummary};

/// When a level's measurement ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Policy {
    /// After a count or a time window: one window, the whole measurement.
    Fixed(LevelLength),
    /// perf_analyzer's rule: windows until the last three agree.
    Stable(Stability),
    /// Until the level's objectives are settled at a confidence, or its margin of error is
    /// reached, or it saturates, or a cap is reached (`search`, `profile --target-moe`).
    Sequential(std::sync::Arc<Rule>),
}

/// perf_analyzer's stability rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stability {
    /// How windows are cut (time or count windows).
    pub rule: WindowRule,
    /// Largest max/min ratio minus one, for throughput and latency over the last three windows.
    pub tolerance: f64,
    /// Most windows per level.
    pub max_trials: u32,
    /// Judge latency by this percentile instead of the average.
    pub percentile: Option<u32>,
    /// How that percentile is read.
    pub method: PercentileMethod,
    /// Measure all `max_trials` windows even once the last three agree: a shard of a run of
    /// several processes cannot know when the others' windows agree, so every shard's level
    /// lasts the same time; `stable` then says whether the reported three agreed.
    pub every_trial: bool,
}

impl Policy {
    /// The window rule the collector cuts by.
    fn rule(&self) -> WindowRule {
        match self {
            Policy::Fixed(LevelLength::Requests(n)) => WindowRule::Requests(*n),
            Policy::Fixed(LevelLength::Window(d) | LevelLength::RequestsOrTime { time: d, .. }) => {
                WindowRule::Once(*d)
            }
            Policy::Stable(s) => s.rule,
            Policy::Sequential(r) => WindowRule::Looks(r.looks),
        }
    }

    /// When the load itself stops sending (a stability loop halts it instead).
    fn stop(&self) -> LevelLength {
        match self {
            Policy::Fixed(stop) => *stop,
            Policy::Stable(_) => LevelLength::Requests(u64::MAX),
            Policy::Sequential(r) => LevelLength::Requests(r.looks.cap),
        }
    }
}

/// One measured window, as the stability loop saw it (for perf's `-v` pass lines).
#[derive(Debug, Clone, Copy)]
pub struct Pass {
    /// 1-based window number.
    pub index: u32,
    /// Successful requests in it.
    pub ok: u64,
    /// Its length (s).
    pub secs: f64,
    /// Its latency (ns): the average, or the stability percentile.
    pub latency_ns: f64,
}

/// What to measure at one level.
pub struct LevelSpec<'a> {
    /// The level's place in the plan (0-based), the same on every shard: open-loop schedules
    /// are seeded from it.
    pub index: u32,
    /// The load (a shard's part of the plan's level).
    pub stimulus: Stimulus,
    /// Wait until this wall-clock time (Unix ns) before the first request (`--start-at` and
    /// the level slots after it); connections are opened before the wait.
    pub start_at: Option<u64>,
    /// When the measurement ends.
    pub policy: Policy,
    /// Warm-up before the measurement (recorded with `phase: warmup`, excluded from statistics).
    pub warmup: Option<LevelLength>,
    /// Goodput objectives.
    pub objectives: &'a [Objective],
    /// Input-length bucket edges for TTFT and latency (empty: not split).
    pub isl_edges: &'a [u32],
    /// Send-lag p99 (ms) above which an open-loop level is not trustworthy.
    pub max_send_lag_ms: f64,
    /// Whether responses stream.
    pub streaming: bool,
    /// How percentiles are computed.
    pub percentile_method: PercentileMethod,
    /// Called as each stability window closes.
    pub on_pass: Option<&'a (dyn Fn(&Pass) + Sync)>,
    /// The mode says each level in a line of its own (profile's, with the level's directory),
    /// so the live view leaves none behind: a level said twice read as two results.
    pub own_line: bool,
}

/// How the windows of a level went.
#[derive(Debug, Clone, Default)]
pub struct Windows {
    /// Windows measured (1 for a fixed stop).
    pub measured: u32,
    /// Whether the stability rule was met (always for a fixed stop).
    pub stable: bool,
    /// Seconds the reported windows cover.
    pub secs: f64,
    /// The statistics extension's counters at the start and end of the reported windows.
    pub stats: Option<(StatsSnapshot, StatsSnapshot)>,
}

/// A measured level: the common result every encoder reads.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Numbers, server view and validity.
    pub summary: LevelSummary,
    /// The reported requests, aggregated (histograms for the artifact files).
    pub agg: Aggregate,
    /// How the windows went.
    pub windows: Windows,
    /// The level's start against its planned moment, when it had one.
    pub start: Option<super::start::LevelStart>,
    /// Under the sequential rule: how the level ended and its decision.
    pub settled: Option<Settled>,
    /// Requests the level sent, warm-up included.
    pub sent: u64,
    /// Lines about the level's server view for the console (a metrics page found not to be the
    /// target's), each said once a run.
    pub notes: Vec<String>,
}

/// Measures one level. `sinks` are lent to the level's collector and handed back.
pub async fn measure_level(
    session: &mut Session,
    spec: &LevelSpec<'_>,
    sinks: &mut Sinks,
) -> Result<Measured> {
    let shared = session.shared.clone();
    let start = match spec.start_at {
        Some(at) => Some(
            super::start::wait_until(at, &shared.interrupt)
                .await
                .ok_or(Error::Interrupted)?,
        ),
        None => None,
    };
    let started_unix_ns = shared.clock.unix_ns(shared.clock.now_ns());
    if let (Some(_), Some(t)) = (spec.start_at, sinks.timeline.as_mut()) {
        t.restart_if_idle(shared.clock.now_ns());
    }
    let measure_start = Arc::new(AtomicU64::new(0));
    let mut live = start_live(sinks, spec, &shared, &measure_start);
    let (win_tx, win_rx) = unbounded_channel::<Window>();
    let (rec_tx, rec_rx) = crate::load::record_queue();
    let setup = Setup {
        level: spec.stimulus.name(),
        clock: shared.clock,
        objectives: spec.objectives.to_vec(),
        isl_edges: spec.isl_edges.to_vec(),
        pool: shared.gaps.clone(),
        rule: spec.policy.rule(),
        measure_start: measure_start.clone(),
        live: live.tally.take(),
        references: session.scoring.as_ref().and_then(|s| s.references.clone()),
    };
    let thread = collector::spawn(setup, std::mem::take(sinks), rec_rx, win_tx)
        .map_err(|e| Error::failed(format!("cannot start the collector thread: {e}")))?;
    let mut warmup_sent = 0;
    if let Some(stop) = spec.warmup {
        let out = run_phase(
            shared.clone(),
            session.phase(Phase::Warmup, spec.index, spec.stimulus, stop),
            rec_tx.clone(),
            Halt::new(),
            live.warmup_sent.clone(),
            None,
        )
        .await;
        session.seq += out.sent;
        warmup_sent = out.sent;
    }
    let watch = Watch::start(&session.probe, &spec.policy).await;
    measure_start.store(shared.clock.now_ns().max(1), Ordering::Release);
    let halt = Halt::new();
    let sessions = Arc::new(std::sync::Mutex::new(SessionDists::default()));
    let phase = tokio::spawn(run_phase(
        shared.clone(),
        session.phase(
            Phase::Measure,
            spec.index,
            spec.stimulus,
            spec.policy.stop(),
        ),
        rec_tx,
        halt.clone(),
        live.sent.clone(),
        Some(sessions.clone() as Arc<dyn crate::load::SessionReports>),
    ));
    let mut loop_ = WindowLoop::new(win_rx, watch.stats_before);
    let mut settled = None;
    if let Policy::Sequential(rule) = &spec.policy {
        let ctx = super::sequential::Context {
            rule,
            method: spec.percentile_method,
            interrupt: &shared.interrupt,
            sent: &live.sent,
            clock: shared.clock,
            measure_start_ns: measure_start.load(Ordering::Acquire),
            open_loop: spec.stimulus.open_loop(),
            queue: watch.sampler.as_ref().map(|s| s.queue.clone()),
        };
        let (s, merged) = super::sequential::settle(&mut loop_.rx, &ctx).await;
        loop_.adopt(merged, s.looks);
        settled = Some(s);
        halt.halt();
    }
    if let Policy::Stable(s) = spec.policy {
        let hooks = PassHooks {
            on_pass: spec.on_pass,
            live: live.view.as_ref(),
        };
        loop_
            .until_stable(&s, &session.probe, &shared.interrupt, hooks)
            .await;
        halt.halt();
    }
    let out = phase
        .await
        .map_err(|e| Error::failed(format!("the load task failed: {e}")))?;
    session.seq += out.sent;
    loop_.drain(&session.probe, &spec.policy).await;
    let collected = thread
        .join()
        .map_err(|_| Error::failed("the collector thread panicked"))?;
    *sinks = collected.sinks;
    let observed = watch.finish(&session.probe).await;
    let cut = match &spec.policy {
        Policy::Fixed(_) => out.interrupted,
        Policy::Stable(_) => loop_.cut,
        Policy::Sequential(_) => settled
            .as_ref()
            .is_some_and(|s| s.stopped == StopReason::Interrupted),
    };
    // Stopped before its first request was measured, the level has nothing to report.
    let (windows, mut agg) = loop_
        .report(spec)
        .map_err(|e| if cut { Error::Interrupted } else { e })?;
    agg.warmup = collected.warmup;
    // Interrupted: planned requests were not measured, because sending stopped early or
    // requests in flight were abandoned.
    let out = PhaseOutcome {
        interrupted: cut || agg.abandoned > 0,
        ..out
    };
    let ran = Ran {
        out: &out,
        held: collected.held,
        started_unix_ns,
        ended_unix_ns: shared.clock.unix_ns(shared.clock.now_ns()),
    };
    agg.sessions = std::mem::take(&mut *sessions.lock().unwrap_or_else(|e| e.into_inner()));
    let mut summary = summarize(spec, &agg, &windows, &observed, &ran);
    // Responses that came whole have no time to first token apart from their latency, and no
    // drift of it apart from the latency's.
    let came_whole = spec.streaming && agg.came_whole();
    let ttft_drift = spec.streaming && !came_whole;
    if let (Some(sc), Some(a)) = (&session.scoring, summary.stats.accuracy.as_mut()) {
        *a = a.at(sc.confidence, sc.chance);
    }
    summary.drift = sinks
        .timeline
        .as_ref()
        .and_then(crate::artifact::timeline::Timeline::drift)
        .and_then(|d| {
            if ttft_drift {
                Some(d)
            } else {
                d.without(DriftMetric::TtftP99)
            }
        });
    let notes = attribute_page(&mut session.probe, &mut summary);
    live.finish(&summary, came_whole, spec.own_line);
    Ok(Measured {
        summary,
        agg,
        windows,
        start,
        settled,
        sent: warmup_sent + out.sent,
        notes,
    })
}

/// Asks the probe whether the metrics page read over the level counted the target's requests
/// (see [`ServerProbe::attribute`]); what a page found to be another server's said of the level
/// is dropped from its summary. The counter judged is the page's own: Triton's (when the
/// server's view came from the page, not from the target's statistics API), else the engine's
/// finished requests (not llama.cpp's, which are the client's count).
fn attribute_page(probe: &mut ServerProbe, summary: &mut LevelSummary) -> Vec<String> {
    let from_page = summary.server.as_ref().filter(|s| s.source == "prometheus");
    let counted = summary
        .engine
        .as_ref()
        .filter(|e| !e.requests_from_client)
        .and_then(|e| e.requests)
        .or(from_page.map(|s| (s.requests + s.failures) as f64));
    let st = &summary.stats;
    let client = st.request_count + st.error_count;
    match probe.attribute(&summary.stimulus.name(), counted, client) {
        crate::server_metrics::Attribution::Target => Vec::new(),
        crate::server_metrics::Attribution::Doubtful(line) => vec![line],
        crate::server_metrics::Attribution::Foreign { line, with_gpus } => {
            if from_page.is_some() {
                summary.server = None;
            }
            summary.engine = None;
            if with_gpus {
                summary.gpu = None;
            }
            vec![line]
        }
    }
}

/// Starts the level's live view on the run's, when the sinks carry one: numbered by the
/// level's place in the plan, counting toward what ends its measurement.
fn start_live(
    sinks: &Sinks,
    spec: &LevelSpec<'_>,
    shared: &crate::load::Shared,
    measure_start: &Arc<AtomicU64>,
) -> LevelLive {
    let view = sinks.live.as_ref();
    let head = Head {
        number: spec.index + 1,
        total: view.and_then(LiveView::total),
        name: spec.stimulus.name(),
        goal: match &spec.policy {
            Policy::Fixed(
                LevelLength::Requests(n) | LevelLength::RequestsOrTime { requests: n, .. },
            ) => Goal::Requests(*n),
            Policy::Fixed(LevelLength::Window(d)) => Goal::Seconds(d.as_secs_f64()),
            Policy::Stable(s) => Goal::Stable {
                max_windows: s.max_trials,
            },
            Policy::Sequential(r) => Goal::Requests(r.looks.cap),
        },
    };
    let times = Times {
        clock: shared.clock,
        level_start_ns: shared.clock.now_ns(),
        measure_start: measure_start.clone(),
        interrupt: shared.interrupt.clone(),
    };
    let shape = Shape {
        streaming: spec.streaming,
        open_loop: spec.stimulus.open_loop(),
        max_in_flight: spec.stimulus.workers() as u64,
    };
    LevelLive::start(view, head, shape, times)
}

/// Who hears of each stability window: the caller's `on_pass`, with the live view off the
/// screen while it writes.
#[derive(Clone, Copy)]
struct PassHooks<'a> {
    on_pass: Option<&'a (dyn Fn(&Pass) + Sync)>,
    live: Option<&'a LevelView>,
}

impl PassHooks<'_> {
    fn pass(&self, p: &Pass) {
        match (self.on_pass, self.live) {
            (Some(f), Some(v)) => v.suspend(|| f(p)),
            (Some(f), None) => f(p),
            (None, _) => {}
        }
    }
}

/// What is watched while a level's measurement runs: the server's counters before (and after),
/// the generator's CPU, the runtime's stalls, and the server's gauges (Triton's pending
/// requests, the engine's queue, batch and KV cache, the GPUs) sampled in between.
struct Watch {
    /// Fixed stops read Triton's counters before and after; stability windows read its
    /// statistics at their own boundaries.
    full: bool,
    before: ProbeSnapshot,
    stats_before: Option<StatsSnapshot>,
    sampler: Option<Sampler>,
    cpu0: std::time::Duration,
    wall0: std::time::Instant,
    stalls: StallMonitor,
}

/// The watch's readings at the end of a level.
struct Watched {
    server: Option<ServerDelta>,
    engine: Option<EngineLevelView>,
    gpu: Option<GpuView>,
    cpu_seconds: f64,
    wall_seconds: f64,
    max_stall_ms: f64,
}

impl Watch {
    async fn start(probe: &ServerProbe, policy: &Policy) -> Watch {
        // Stability windows read the statistics extension at their boundaries: the first read
        // comes first, the metrics pages after it.
        let before = match policy {
            Policy::Fixed(_) | Policy::Sequential(_) => probe.snapshot().await,
            Policy::Stable(_) => probe.snapshot_stats_first().await,
        };
        Watch {
            full: !matches!(policy, Policy::Stable(_)),
            stats_before: before.stats,
            sampler: probe.start_sampler(&before),
            before,
            cpu0: validity::process_cpu(),
            wall0: std::time::Instant::now(),
            stalls: StallMonitor::start(),
        }
    }

    async fn finish(self, probe: &ServerProbe) -> Watched {
        let max_stall_ms = self.stalls.finish().await;
        let cpu_seconds = validity::process_cpu()
            .saturating_sub(self.cpu0)
            .as_secs_f64();
        let wall_seconds = self.wall0.elapsed().as_secs_f64();
        let sampled = match self.sampler {
            Some(s) => s.finish().await,
            None => None,
        };
        let after = probe.snapshot().await;
        let max_pending = sampled.as_ref().map_or(0.0, |s| s.max_pending);
        let server = ServerProbe::delta(&self.before, &after, max_pending).filter(|_| self.full);
        let (engine, gpu) = sampled
            .map(|s| s.finish(&after, self.wall0.elapsed().as_secs_f64()))
            .unwrap_or_default();
        Watched {
            server,
            engine,
            gpu,
            cpu_seconds,
            wall_seconds,
            max_stall_ms,
        }
    }
}

/// The server's statistics once the load has ended. Triton counts a request after sending its
/// response, so a read right after the last answer can miss it: the read is repeated, for half a
/// second at most, until the successes since `opened` cover the `ok` requests the client saw. A
/// server that counted none of them (another API's requests) is not waited for.
async fn settled_read(
    probe: &ServerProbe,
    opened: Option<StatsSnapshot>,
    ok: u64,
) -> Option<StatsSnapshot> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        let read = probe.read_stats().await.ok().flatten();
        let counted = |r: &StatsSnapshot, o: &StatsSnapshot| {
            let n = r.success.count.saturating_sub(o.success.count);
            n == 0 || n >= ok
        };
        match (&read, &opened) {
            (Some(r), Some(o)) if !counted(r, o) && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            _ => return read,
        }
    }
}

/// The windows of a level as they arrive, with the statistics counters read at each boundary.
struct WindowLoop {
    rx: UnboundedReceiver<Window>,
    /// The last (up to three) complete windows.
    windows: Vec<Window>,
    /// `snapshots[i]` was read when `windows[i]` opened; one more at the end.
    snapshots: Vec<Option<StatsSnapshot>>,
    measured: u32,
    stable: bool,
    /// A window the load's end cut short.
    partial: Option<Window>,
    /// The run's stop ended the stability loop before its rule did.
    cut: bool,
}

impl WindowLoop {
    fn new(rx: UnboundedReceiver<Window>, before: Option<StatsSnapshot>) -> WindowLoop {
        WindowLoop {
            rx,
            windows: Vec::new(),
            snapshots: vec![before],
            measured: 0,
            stable: false,
            partial: None,
            cut: false,
        }
    }

    /// perf_analyzer's loop: windows until the last three agree, `max_trials` are spent, or the
    /// run is stopped.
    async fn until_stable(
        &mut self,
        s: &Stability,
        probe: &ServerProbe,
        interrupt: &crate::load::Interrupt,
        hooks: PassHooks<'_>,
    ) {
        loop {
            let w = tokio::select! {
                w = self.rx.recv() => w,
                _ = interrupt.wait_stop() => None,
            };
            let Some(w) = w else {
                self.cut = interrupt.stopping();
                return;
            };
            // The load ends only when stopped while this loop runs: its last window is partial.
            if w.partial {
                self.partial = Some(w);
                self.cut = true;
                return;
            }
            self.push(w, probe).await;
            if let Some(last) = self.windows.last() {
                hooks.pass(&Pass {
                    index: self.measured,
                    ok: last.agg.ok,
                    secs: last.secs(),
                    latency_ns: window_latency(&last.agg, s.percentile, s.method),
                });
            }
            if self.windows.len() == 3 {
                self.stable = is_stable(&self.windows, s);
                if self.stable && !s.every_trial {
                    return;
                }
            }
            if self.measured >= s.max_trials {
                return;
            }
            if interrupt.stopping() {
                self.cut = true;
                return;
            }
        }
    }

    /// The sequential rule's merged window becomes the level's one reported window.
    fn adopt(&mut self, merged: Option<Window>, looks: u32) {
        if let Some(w) = merged {
            self.windows = vec![w];
        }
        self.measured = looks;
    }

    async fn push(&mut self, w: Window, probe: &ServerProbe) {
        self.snapshots.push(probe.read_stats().await.ok().flatten());
        self.measured += 1;
        self.windows.push(w);
        if self.windows.len() > 3 {
            self.windows.remove(0);
            self.snapshots.remove(0);
        }
    }

    /// After the load stopped: a fixed stop's single window (or what the collector sent since
    /// the loop ended, kept only when nothing complete was measured).
    async fn drain(&mut self, probe: &ServerProbe, policy: &Policy) {
        while let Some(w) = self.rx.recv().await {
            match policy {
                Policy::Fixed(_) if self.windows.is_empty() => {
                    let opened = self.snapshots.last().copied().flatten();
                    self.snapshots
                        .push(settled_read(probe, opened, w.agg.ok).await);
                    self.measured += 1;
                    self.windows.push(w);
                    self.stable = true;
                }
                _ if w.partial => self.partial = Some(w),
                _ => {}
            }
        }
    }

    /// The reported windows merged. A level stopped before any window completed reports its
    /// partial window (marked interrupted by the caller's validity).
    fn report(&mut self, spec: &LevelSpec<'_>) -> Result<(Windows, Aggregate)> {
        if self.windows.is_empty() {
            match self.partial.take() {
                Some(w) => {
                    self.snapshots.truncate(1);
                    self.snapshots.push(None);
                    self.windows.push(w);
                }
                None => {
                    return Err(Error::failed(format!(
                        "no request of {} was measured",
                        spec.stimulus.name()
                    )));
                }
            }
        }
        let mut agg = Aggregate::new();
        let mut secs = 0.0;
        for w in &self.windows {
            agg.merge(&w.agg);
            secs += w.secs();
        }
        let stats = match (self.snapshots.first(), self.snapshots.last()) {
            (Some(Some(a)), Some(Some(b))) if self.snapshots.len() > 1 => Some((*a, *b)),
            _ => None,
        };
        let windows = Windows {
            measured: self.measured.max(1),
            stable: self.stable || !matches!(spec.policy, Policy::Stable(_)),
            secs,
            stats,
        };
        Ok((windows, agg))
    }
}

/// A window's latency for the stability rule (ns): the average, or the asked percentile.
pub fn window_latency(agg: &Aggregate, percentile: Option<u32>, method: PercentileMethod) -> f64 {
    let d = agg.dist(Metric::RequestLatency);
    match percentile {
        Some(p) => d.percentile(f64::from(p), method),
        None => d.stats(1.0).avg,
    }
}

/// perf_analyzer's rule over the last three windows: none without throughput, and throughput
/// and latency each within `tolerance` (max/min − 1).
fn is_stable(w: &[Window], s: &Stability) -> bool {
    let tput: Vec<f64> = w
        .iter()
        .map(|x| x.agg.ok as f64 / x.secs().max(1e-9))
        .collect();
    let lat: Vec<f64> = w
        .iter()
        .map(|x| window_latency(&x.agg, s.percentile, s.method))
        .collect();
    let within = |v: &[f64]| {
        let (mn, mx) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        mn > 0.0 && mx / mn <= 1.0 + s.tolerance
    };
    within(&tput) && within(&lat)
}

/// How the level's load ran, as its summary and validity verdict read it.
struct Ran<'a> {
    /// What the measurement phase sent, and whether it was cut short.
    out: &'a PhaseOutcome,
    /// How long the workers waited for room in the collector's queue.
    held: crate::load::queue::Held,
    /// When the level started (Unix ns), warm-up included.
    started_unix_ns: u64,
    /// When it ended (Unix ns).
    ended_unix_ns: u64,
}

/// The level's summary: statistics of the reported windows, the server's view (statistics over
/// the reported windows when there are several, else before/after the level), and the verdict.
fn summarize(
    spec: &LevelSpec<'_>,
    agg: &Aggregate,
    windows: &Windows,
    watched: &Watched,
    ran: &Ran<'_>,
) -> LevelSummary {
    let out = ran.out;
    let stats = agg.summarize(!spec.objectives.is_empty(), spec.percentile_method);
    let open_loop = spec.stimulus.open_loop();
    let observed = Observed {
        cpu_seconds: watched.cpu_seconds,
        wall_seconds: watched.wall_seconds,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        send_lag_p99_ms: stats
            .get(Metric::SendLag)
            .filter(|_| open_loop)
            .map(|s| s.p99),
        requested_rate: match spec.stimulus {
            Stimulus::RequestRate { rate, .. } => Some(rate),
            // A trace's own rate varies; its send lag says whether it was kept.
            Stimulus::Concurrency(_) | Stimulus::FixedSchedule { .. } => None,
        },
        sent: out.sent,
        send_span_s: out.send_span_ns as f64 / 1e9,
        intended_span_s: out.intended_span_ns as f64 / 1e9,
        delayed_by_cap: out.delayed_by_cap,
        max_stall_ms: Some(watched.max_stall_ms),
        held: ran.held,
        interrupted: out.interrupted,
        measured: stats.request_count,
    };
    let server = match (&spec.policy, &windows.stats) {
        (Policy::Stable(_), Some((a, b))) => Some(ServerDelta::from_stats(a, b, 0.0)),
        _ => watched.server.clone(),
    };
    let gpu = watched
        .gpu
        .clone()
        .map(|g| g.with_output_rate(stats.output_token_throughput));
    // llama.cpp counts no finished requests, and its prefill is in its responses.
    let prefill_s = stats.get(Metric::ServerPrefillTime).map(|p| p.avg / 1e3);
    let engine = watched
        .engine
        .clone()
        .map(|e| e.with_client_requests(stats.request_count, prefill_s));
    LevelSummary {
        stimulus: spec.stimulus,
        stats,
        server,
        engine,
        gpu,
        streaming: spec.streaming,
        interrupted: out.interrupted,
        started_unix_ns: ran.started_unix_ns,
        ended_unix_ns: ran.ended_unix_ns,
        validity: validity::assess(&observed, spec.max_send_lag_ms),
        drift: None,
    }
}
