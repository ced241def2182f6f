//! When and how many: the scheduler that keeps a level's load on the server and turns every
//! exchange into a [`RequestRecord`].
//!
//! A level is a fixed pool of worker tasks. In closed loop each worker sends its next request as
//! soon as the previous one finishes, so N workers keep N requests in flight. In open loop
//! ([`pacer`]) each worker takes the next scheduled send time, sleeps until it, and sends; the
//! pool size caps requests in flight (`--max-inflight`), and a request that finds every worker busy
//! leaves late, which its record shows (intended vs actual send). Workers own their buffers
//! ([`Exchange`]), so the steady state allocates nothing per token; the shared state is an atomic
//! ticket counter (closed loop) or the schedule (open loop) and the channel to the collector.

pub mod backoff;
pub mod cancellation;
pub mod conversation;
pub mod dispatch;
pub mod pacer;
pub mod queue;
pub mod shard;
pub mod stimulus;

pub use cancellation::Cancellation;
pub use queue::{RecordSink, RecordSource, record_queue};
pub use shard::Shard;
pub use stimulus::{
    Arrival, DEFAULT_LEVEL_REQUESTS, DEFAULT_LEVEL_TIME, LOOK_TICK, LevelLength, LevelLengthRule,
    Looks, Stimulus, WindowRule,
};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_queue::ArrayQueue;
use tokio::sync::watch;

use crate::client::{Capture, Client, Exchange};
use crate::record::SessionOutcome;
use crate::record::{Clock, ErrorKind, Phase, RequestError, RequestRecord};
use crate::workload::Dataset;
use crate::workload::tokenizer::Tokenizer;

/// A finished request on its way to the collector, with its inter-chunk gaps.
#[derive(Debug)]
pub struct Completed {
    /// The record.
    pub record: RequestRecord,
    /// Gaps between consecutive content-bearing responses (ns); the buffer goes back to the pool.
    pub gaps: Vec<u64>,
    /// Every response as received, when the run writes a raw export; back to its pool after.
    pub capture: Option<Capture>,
}

/// Recycled response captures for the raw export (see [`Capture`]).
pub type CapturePool = Arc<ArrayQueue<Capture>>;

/// Creates a capture pool.
pub fn capture_pool() -> CapturePool {
    Arc::new(ArrayQueue::new(4_096))
}

/// Recycled gap buffers, so a request's gap list costs no allocation once the pool is warm.
pub type GapPool = Arc<ArrayQueue<Vec<u64>>>;

/// Creates a gap-buffer pool.
pub fn gap_pool() -> GapPool {
    Arc::new(ArrayQueue::new(16_384))
}

/// Stop and abort signals shared by every worker (Ctrl-C, SIGTERM, `--duration` limits).
#[derive(Clone, Debug)]
pub struct Interrupt {
    stop_tx: Arc<watch::Sender<bool>>,
    stop_rx: watch::Receiver<bool>,
    abort_tx: Arc<watch::Sender<bool>>,
    abort_rx: watch::Receiver<bool>,
    /// When sending stopped: a phase stopped after its deadline lost nothing it planned.
    stopped_at: Arc<std::sync::OnceLock<std::time::Instant>>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt::new()
    }
}

impl Interrupt {
    /// Neither stopped nor aborted.
    pub fn new() -> Interrupt {
        let (tx, rx) = watch::channel(false);
        let (stop_tx, stop_rx) = watch::channel(false);
        Interrupt {
            stop_tx: Arc::new(stop_tx),
            stop_rx,
            abort_tx: Arc::new(tx),
            abort_rx: rx,
            stopped_at: Arc::default(),
        }
    }

    /// Stop sending new requests; in-flight ones continue.
    pub fn stop_sending(&self) {
        self.stopped_at.get_or_init(std::time::Instant::now);
        self.stop_tx.send_replace(true);
    }

    /// Abandon in-flight requests (they are recorded as [`ErrorKind::Abandoned`]).
    pub fn abort(&self) {
        self.stop_sending();
        self.abort_tx.send_replace(true);
    }

    /// When sending stopped, once it has.
    pub fn stopped_at(&self) -> Option<std::time::Instant> {
        self.stopped_at.get().copied()
    }

    /// Whether sending has stopped.
    pub fn stopping(&self) -> bool {
        *self.stop_rx.borrow()
    }

    /// Resolves when sending stops (wakes workers sleeping until a scheduled send).
    pub async fn wait_stop(&self) {
        let mut rx = self.stop_rx.clone();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Resolves when in-flight requests are abandoned.
    pub async fn wait_abort(&self) {
        let mut rx = self.abort_rx.clone();
        let _ = rx.wait_for(|a| *a).await;
    }
}

/// What every worker of a run shares.
#[derive(Debug)]
pub struct Shared {
    /// Protocol client.
    pub client: Client,
    /// Prepared requests.
    pub dataset: Arc<Dataset>,
    /// Counts output tokens.
    pub tokenizer: Tokenizer,
    /// Time base.
    pub clock: Clock,
    /// Stop/abort signals.
    pub interrupt: Interrupt,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Requests the client cancels on purpose (`--request-cancellation-rate`); `None`: none.
    pub cancellation: Option<Cancellation>,
    /// Prefer the server's usage for output token counts.
    pub use_server_token_count: bool,
    /// Count output tokens (LLM text); tensor profiling counts responses only.
    pub count_tokens: bool,
    /// Seed of open-loop schedules (each phase derives its own).
    pub seed: u64,
    /// Which part of the plan this process runs ([`Shard::WHOLE`] alone).
    pub shard: Shard,
    /// Gap buffer pool.
    pub gaps: GapPool,
    /// Response captures, when the run writes a raw export (`None`: nothing is kept).
    pub captures: Option<CapturePool>,
    /// How requests name themselves (`RUN-SEQ`); `None`: no run id (gRPC numbers requests).
    pub request_ids: Option<Arc<crate::client::request_id::RequestIds>>,
    /// The start of a session's affinity header line (`Name: RUN-s`, the shard's index after
    /// the run id when sharded); the session's number ends it. `None`: sessions send none.
    pub session_header: Option<Box<str>>,
}

/// [`Shared::session_header`] for header `name` (`None`: none), run `run_id`, `shard`.
pub fn session_header(name: Option<&str>, run_id: Option<&str>, shard: Shard) -> Option<Box<str>> {
    let run = run_id.map(|r| format!("{r}-")).unwrap_or_default();
    let part = if shard.count > 1 {
        format!("{}-", shard.index)
    } else {
        String::new()
    };
    name.map(|n| format!("{n}: {run}{part}s").into_boxed_str())
}

/// One phase of a level (warm-up or measurement).
#[derive(Debug, Clone, Copy)]
pub struct PhaseSpec {
    /// Warm-up or measured.
    pub phase: Phase,
    /// Load shape.
    pub stimulus: Stimulus,
    /// When to stop sending.
    pub stop: LevelLength,
    /// Sequence number of the phase's first request (dataset entries continue round-robin).
    pub seq_base: u64,
    /// The phase's place in the plan (level and warm-up or measurement), the same on every
    /// shard: its open-loop schedule is seeded from it and the run seed.
    pub stream: u64,
}

/// Where session workers report each session as it ends: once per session, off the
/// per-request path. The engine collects a measured phase's (`stats::sessions`).
pub trait SessionReports: Send + Sync {
    /// Accounts one ended session.
    fn ended(&self, s: SessionOutcome);
}

/// How a phase went, as the scheduler saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseOutcome {
    /// Requests sent.
    pub sent: u64,
    /// When the phase began (ns on the run clock).
    pub start_ns: u64,
    /// When the last worker finished.
    pub end_ns: u64,
    /// Whether Ctrl-C (or another stop) cut the phase short: it came before the phase had sent
    /// its count of requests or before its window ended. A stop while the last requests were
    /// finishing cut nothing (whether those were then abandoned, the collector counts).
    pub interrupted: bool,
    /// Open loop: requests released while every worker was busy that then waited more than
    /// [`CAP_DELAY_NS`] for one (the in-flight cap delayed them).
    pub delayed_by_cap: u64,
    /// Open loop: from the phase start to the last request a worker took to send (ns), for the
    /// achieved rate.
    pub send_span_ns: u64,
    /// Open loop: from the phase start to the intended send time of the last request released
    /// (ns): the span the schedule itself gave those requests.
    pub intended_span_ns: u64,
}

/// A due request that waits longer than this for a free worker counts as delayed by the cap.
pub const CAP_DELAY_NS: u64 = 1_000_000;

/// Stops a phase from outside (perf_analyzer's stability loop ends a level when its windows are
/// stable). Workers finish the request they are on.
#[derive(Clone, Debug)]
pub struct Halt {
    tx: Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
}

impl Default for Halt {
    fn default() -> Self {
        Halt::new()
    }
}

impl Halt {
    /// Not halted.
    pub fn new() -> Halt {
        let (tx, rx) = watch::channel(false);
        Halt {
            tx: Arc::new(tx),
            rx,
        }
    }

    /// Stop sending.
    pub fn halt(&self) {
        self.tx.send_replace(true);
    }

    /// Whether the phase was halted.
    pub fn halted(&self) -> bool {
        *self.rx.borrow()
    }

    pub(crate) async fn wait(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|h| *h).await;
    }
}

/// Runs one phase to completion and returns when every worker has finished. Records go to
/// `sink` as requests complete; `halt` ends the phase early. `sent` counts requests as workers
/// send them (a fresh counter per phase, which others may read meanwhile: the live view's
/// requests in flight). `sessions` collects the sessions that end, when the phase has any.
pub async fn run_phase(
    shared: Arc<Shared>,
    spec: PhaseSpec,
    sink: RecordSink,
    halt: Halt,
    sent: Arc<AtomicU64>,
    sessions: Option<Arc<dyn SessionReports>>,
) -> PhaseOutcome {
    let start_ns = shared.clock.now_ns();
    let deadline = spec.stop.time().map(|d| start_ns + d.as_nanos() as u64);
    let delayed = Arc::new(AtomicU64::new(0));
    let mut pacer_thread = None;
    let mut schedule: Option<Arc<dispatch::Tickets>> = None;
    let mut set = tokio::task::JoinSet::new();
    let ctx = |sink: &RecordSink| WorkerCtx {
        shared: shared.clone(),
        spec,
        deadline,
        sink: sink.clone(),
        halt: halt.clone(),
        sent: sent.clone(),
        sessions: sessions.clone(),
    };
    match spec.stimulus {
        Stimulus::Concurrency(n) => {
            let tickets = Arc::new(AtomicU64::new(0));
            let in_sessions = shared.dataset.conversations().is_some();
            for w in 0..n {
                let (ctx, tickets) = (ctx(&sink), tickets.clone());
                if in_sessions {
                    set.spawn(async move {
                        conversation::worker(ctx, tickets, u64::from(w)).await;
                    });
                } else {
                    set.spawn(async move { closed_loop_worker(ctx, tickets, u64::from(w)).await });
                }
            }
        }
        Stimulus::RequestRate { max_inflight, .. }
        | Stimulus::FixedSchedule { max_inflight, .. } => {
            let run = dispatch::PacerRun {
                pacer: schedule_of(&shared, &spec),
                start_ns,
                clock: shared.clock,
                stop: spec.stop,
                deadline,
                interrupt: shared.interrupt.clone(),
                halt: halt.clone(),
            };
            let tickets = Arc::new(dispatch::Tickets::default());
            tickets
                .workers
                .store(max_inflight.max(1) as usize, Ordering::Relaxed);
            match dispatch::spawn(run, tickets.clone()) {
                Ok(h) => pacer_thread = Some(h),
                Err(_) => {
                    return PhaseOutcome {
                        start_ns,
                        end_ns: start_ns,
                        ..PhaseOutcome::default()
                    };
                }
            }
            for w in 0..max_inflight.max(1) {
                let (ctx, tickets, delayed) = (ctx(&sink), tickets.clone(), delayed.clone());
                set.spawn(
                    async move { open_loop_worker(ctx, tickets, delayed, u64::from(w)).await },
                );
            }
            schedule = Some(tickets);
        }
    }
    drop(sink);
    while set.join_next().await.is_some() {}
    if let Some(h) = pacer_thread {
        // The workers stop only once the pacer is done (or the phase was stopped, which ends it).
        let _ = tokio::task::spawn_blocking(move || h.join()).await;
    }
    let span = |last: Option<&AtomicU64>| {
        last.map_or(0, |a| a.load(Ordering::Relaxed).saturating_sub(start_ns))
    };
    let send_span_ns = span(schedule.as_ref().map(|t| &t.last_send_ns));
    let intended_span_ns = span(schedule.as_ref().map(|t| &t.last_intended_ns));
    let sent = sent.load(Ordering::SeqCst);
    PhaseOutcome {
        sent,
        start_ns,
        end_ns: shared.clock.now_ns(),
        interrupted: cut_short(&shared, spec.stop, (sent, deadline)),
        delayed_by_cap: delayed.load(Ordering::Relaxed),
        send_span_ns,
        intended_span_ns,
    }
}

/// Whether the run's stop came while the phase still had requests to send: before its count was
/// sent, or before its window's deadline (both, for a count within a time).
fn cut_short(shared: &Shared, stop: LevelLength, (sent, deadline): (u64, Option<u64>)) -> bool {
    let Some(at) = shared.interrupt.stopped_at() else {
        return false;
    };
    match (stop, deadline) {
        (LevelLength::Window(_), Some(d)) => shared.clock.offset_of(at) < d,
        (LevelLength::Requests(n), _) => sent < n,
        (LevelLength::Window(_), None) => true,
        // Neither its count sent nor its time over.
        (LevelLength::RequestsOrTime { requests, .. }, Some(d)) => {
            sent < requests && shared.clock.offset_of(at) < d
        }
        (LevelLength::RequestsOrTime { requests, .. }, None) => sent < requests,
    }
}

/// An open-loop phase's schedule: the trace's own times from the dataset entry the phase starts
/// at, or a random one. Each random phase gets its own stream, so warm-up and measurement do not
/// replay each other; every shard derives the same one and keeps its part of it.
fn schedule_of(shared: &Shared, spec: &PhaseSpec) -> pacer::Pacer {
    match spec.stimulus {
        Stimulus::FixedSchedule { speedup, .. } => {
            // Phases of a trace start at entry 0 (`engine::Session::phase`); one that did not
            // would play the rest of the trace from where it starts.
            let times = shared.dataset.schedule().unwrap_or(&[]);
            let from = (spec.seq_base % times.len().max(1) as u64) as usize;
            match times.get(from) {
                Some(&base) if from > 0 => {
                    let rest: Vec<u64> = times[from..].iter().map(|t| t - base).collect();
                    pacer::Pacer::fixed(&rest, speedup)
                }
                _ => pacer::Pacer::fixed(times, speedup),
            }
        }
        Stimulus::RequestRate { rate, arrival, .. } => {
            let seed = shared.seed ^ (spec.stream + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let whole_rate = rate * f64::from(shared.shard.count.max(1));
            pacer::Pacer::new(whole_rate, arrival, seed).for_shard(shared.shard)
        }
        // Closed loop has no schedule; an empty one ends at once.
        Stimulus::Concurrency(_) => pacer::Pacer::fixed(&[], 1.0),
    }
}

/// What one worker needs.
pub(crate) struct WorkerCtx {
    shared: Arc<Shared>,
    spec: PhaseSpec,
    deadline: Option<u64>,
    sink: RecordSink,
    halt: Halt,
    sent: Arc<AtomicU64>,
    /// Where session workers report each session as it ends (`None`: not collected, as in a
    /// warm-up).
    sessions: Option<Arc<dyn SessionReports>>,
}

impl WorkerCtx {
    /// Reports a session that ended, where the phase collects them.
    fn session_ended(&self, s: SessionOutcome) {
        if let Some(r) = &self.sessions {
            r.ended(s);
        }
    }

    /// Whether sending has stopped (the run, or this phase).
    fn done(&self) -> bool {
        self.shared.interrupt.stopping() || self.halt.halted()
    }

    /// A worker's backoff, its jitter seeded by the run seed, the shard and the worker's number
    /// (so shards' workers do not retry in step).
    fn backoff(&self, worker: u64) -> backoff::Backoff {
        let who = (u64::from(self.shared.shard.index) << 32) ^ worker;
        backoff::Backoff::new(
            self.shared.seed ^ who.wrapping_mul(0x2545_f491_4f6c_dd1d),
            self.shared.timeout,
        )
    }

    /// Hands a finished request to the collector, then waits as long as its outcome calls for
    /// ([`backoff`]). Returns `false` when the phase ended during the wait.
    async fn finish(
        &self,
        completed: (Completed, bool),
        ex: &mut Exchange,
        b: &mut backoff::Backoff,
    ) -> bool {
        let kind = completed.0.record.error.as_ref().map(|e| e.kind);
        let wait = b.after(kind, ex.retry_after);
        hand_over(self, completed, ex).await;
        let Some(mut wait) = wait else {
            return true;
        };
        if let Some(d) = self.deadline {
            wait = wait.min(Duration::from_nanos(
                d.saturating_sub(self.shared.clock.now_ns()),
            ));
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => !self.done(),
            _ = self.shared.interrupt.wait_stop() => false,
            _ = self.halt.wait() => false,
        }
    }
}

async fn closed_loop_worker(ctx: WorkerCtx, tickets: Arc<AtomicU64>, worker: u64) {
    let mut ex = Exchange::new();
    let mut backoff = ctx.backoff(worker);
    loop {
        if ctx.done() {
            return;
        }
        let intended = ctx.shared.clock.now_ns();
        if ctx.deadline.is_some_and(|d| intended >= d) {
            return;
        }
        let seq = tickets.fetch_add(1, Ordering::Relaxed);
        if let Some(n) = ctx.spec.stop.requests()
            && seq >= n
        {
            return;
        }
        ctx.sent.fetch_add(1, Ordering::Relaxed);
        let completed = execute_one(
            &ctx.shared,
            &ctx.spec,
            ctx.spec.seq_base + seq,
            intended,
            &mut ex,
        )
        .await;
        if !ctx.finish(completed, &mut ex, &mut backoff).await {
            return;
        }
    }
}

/// Sends a finished request to the collector; when its output tokens are still to be counted,
/// its text goes along and is counted there, off the worker (see [`queue`]). Waits while the
/// collector's queue is full: that wait holds the load back, and is counted.
async fn hand_over(ctx: &WorkerCtx, (completed, count): (Completed, bool), ex: &mut Exchange) {
    if count {
        let text = std::mem::replace(&mut ex.text, ctx.sink.text_buffer());
        let counting = queue::Counting {
            tokenizer: &ctx.shared.tokenizer,
            keep_server: ctx.shared.use_server_token_count && completed.record.server_osl.is_some(),
            answers: ctx.shared.dataset.answers(),
        };
        ctx.sink
            .send_counting(completed, (text, ex.reasoning_end), &counting)
            .await;
    } else {
        ctx.sink.send(completed).await;
    }
}

async fn open_loop_worker(
    ctx: WorkerCtx,
    tickets: Arc<dispatch::Tickets>,
    delayed: Arc<AtomicU64>,
    worker: u64,
) {
    let mut ex = Exchange::new();
    let mut backoff = ctx.backoff(worker);
    while let Some(t) = tickets.next(&ctx.halt, &ctx.shared.interrupt).await {
        if t.all_busy && ctx.shared.clock.now_ns().saturating_sub(t.released_ns) > CAP_DELAY_NS {
            delayed.fetch_add(1, Ordering::Relaxed);
        }
        tickets.busy.fetch_add(1, Ordering::Relaxed);
        tickets
            .last_send_ns
            .fetch_max(ctx.shared.clock.now_ns(), Ordering::Relaxed);
        ctx.sent.fetch_add(1, Ordering::Relaxed);
        let completed = execute_one(
            &ctx.shared,
            &ctx.spec,
            ctx.spec.seq_base + t.seq,
            t.intended_ns,
            &mut ex,
        )
        .await;
        tickets.busy.fetch_sub(1, Ordering::Relaxed);
        // A worker backing off is not busy: tickets due meanwhile go to other workers, or wait
        // and leave late against their intended time.
        if !ctx.finish(completed, &mut ex, &mut backoff).await {
            return;
        }
    }
}

/// Sends one request and reads its response within the request timeout; with `cancel_after`
/// (a request `--request-cancellation-rate` chose), drops the exchange that long after the
/// send instead, which closes the connection or resets the stream. Other requests pay nothing
/// for the feature: no timer is armed for them.
async fn exchange(
    shared: &Shared,
    payload: &crate::workload::Payload,
    ex: &mut Exchange,
    cancel_after: Option<Duration>,
) -> Result<(), RequestError> {
    let timed = tokio::time::timeout(
        shared.timeout,
        shared.client.execute(payload, ex, &shared.clock),
    );
    let timed = match cancel_after {
        None => timed.await,
        Some(delay) => match cancellation::give_up_after(delay, timed).await {
            Some(r) => r,
            None => {
                // The HTTP/1.1 connection was taken out of `ex` for the exchange and goes back
                // only after a complete response, so dropping the exchange closed it; the next
                // request opens a fresh one rather than reading the rest of this response. The
                // gRPC connection stays: the dropped call queued its stream's reset on it.
                return Err(RequestError::new(
                    ErrorKind::RequestCancelled,
                    format!(
                        "cancelled by the client {:.3} s after the send (--request-cancellation-delay)",
                        delay.as_secs_f64()
                    ),
                ));
            }
        },
    };
    timed.unwrap_or_else(|_| {
        ex.drop_connections();
        Err(RequestError::new(
            ErrorKind::Timeout,
            format!(
                "no complete response within {:.1} s",
                shared.timeout.as_secs_f64()
            ),
        ))
    })
}

/// Sends dataset entry `seq mod N` (a shard's entries are its part of the prompts; the record
/// carries the prompt's index in the whole dataset): [`execute`] of that entry.
async fn execute_one(
    shared: &Shared,
    spec: &PhaseSpec,
    seq: u64,
    intended_ns: u64,
    ex: &mut Exchange,
) -> (Completed, bool) {
    let index = (seq % shared.dataset.len() as u64) as usize;
    let entry = shared.dataset.entry(index);
    let ask = Ask {
        payload: &entry.payload,
        isl: entry.isl,
        max_tokens: entry.max_tokens,
        prompt_index: shared.dataset.prompt_index(index),
        conversation: None,
        sent: entry.sent,
    };
    execute(shared, spec, (seq, intended_ns), &ask, ex).await
}

/// What the response did with the tools its request offered: its calls, whether their
/// arguments parse as JSON, when the first argument text came (once per request, off the
/// per-token path).
fn tool_use(offered: bool, ex: &Exchange) -> crate::record::ToolUse {
    let spans = ex.events.tools();
    if !offered && spans.is_empty() {
        return crate::record::ToolUse::default();
    }
    let (calls, args_valid) = spans.summarize(&ex.text);
    crate::record::ToolUse {
        calls,
        args_valid,
        first_token_ns: ex.first_tool_token_ns,
    }
}

/// What one request sends, and what its record says about it.
pub(crate) struct Ask<'a> {
    /// The body.
    pub payload: &'a crate::workload::Payload,
    /// Input tokens.
    pub isl: u32,
    /// Output tokens asked for (0: left to the server).
    pub max_tokens: u32,
    /// The dataset entry (or session script) it came from.
    pub prompt_index: u32,
    /// Its place in a multi-turn session.
    pub conversation: Option<crate::record::Turn>,
    /// What it carries besides its prompt (batch inputs, images, tools).
    pub sent: crate::record::Sent,
}

/// Sends one request (`seq`, intended at `intended_ns`), waits for the whole response, and
/// builds its record; says whether its output tokens are still to be counted from `ex.text`
/// (the record's `osl` is 0 until then).
pub(crate) async fn execute(
    shared: &Shared,
    spec: &PhaseSpec,
    (seq, intended_ns): (u64, u64),
    ask: &Ask<'_>,
    ex: &mut Exchange,
) -> (Completed, bool) {
    if let Some(pool) = &shared.captures
        && ex.capture.is_none()
    {
        ex.capture = Some(pool.pop().unwrap_or_default());
    }
    ex.reset();
    ex.seq = seq;
    ex.expect_inputs = ask.sent.inputs;
    if ex.ids.is_none() {
        ex.ids = shared.request_ids.clone();
    }
    let clock = &shared.clock;
    // One abort watch for both stages: each one registers with the channel shared by every
    // worker, so building it once halves that per-request cost.
    let abort = shared.interrupt.wait_abort();
    tokio::pin!(abort);
    let mut reconnected = false;
    let (sent_ns, result) = loop {
        // Connection setup happens here, before the send time is taken.
        let prepared = tokio::select! {
            biased;
            _ = &mut abort => Err(RequestError::new(ErrorKind::Abandoned, "abandoned before it was sent: the run stopped (a second Ctrl-C, or the grace after the first ran out)")),
            r = tokio::time::timeout(shared.timeout, shared.client.prepare(ex)) => r.unwrap_or_else(|_| Err(RequestError::new(ErrorKind::Connect, "connecting timed out"))),
        };
        let sent_ns = clock.now_ns();
        let result = if let Err(e) = prepared {
            Err(e)
        } else {
            tokio::select! {
                biased;
                _ = &mut abort => Err(RequestError::new(ErrorKind::Abandoned, "abandoned in flight: the run stopped (a second Ctrl-C, or the grace after the first ran out)")),
                r = exchange(shared, ask.payload, ex, shared.cancellation.and_then(|c| c.delay_for(shared.shard.whole_seq(seq)))) => r,
            }
        };
        // The server had closed the reused connection before this request reached it (no byte
        // of a response came back): it never saw it, so it goes once more on a fresh
        // connection, timed from that send.
        if result.is_err() && ex.stale_connection && !reconnected && !shared.interrupt.stopping() {
            reconnected = true;
            ex.reset();
            ex.expect_inputs = ask.sent.inputs;
            continue;
        }
        break (sent_ns, result);
    };
    let end_ns = clock.now_ns();
    let error = match result {
        Ok(()) if ex.chunks == 0 => Some(RequestError::new(
            ErrorKind::NoContent,
            format!(
                "the response ended after {} events without any output text",
                ex.responses
            ),
        )),
        Ok(()) => None,
        Err(e) => Some(e),
    };
    // The tokenizer counts every successful response, also when the server's count is the one
    // used, so both are recorded.
    let count_later = error.is_none() && shared.count_tokens;
    let osl = match (
        count_later && shared.use_server_token_count,
        ex.completion_tokens,
    ) {
        (true, Some(n)) => n,
        _ => 0,
    };
    let isl = match (shared.use_server_token_count, ex.prompt_tokens) {
        (true, Some(n)) => n,
        _ => ask.isl,
    };
    let record = RequestRecord {
        phase: spec.phase,
        seq,
        prompt_index: ask.prompt_index,
        intended_ns,
        sent_ns,
        send_done_ns: ex.send_done_ns,
        first_byte_ns: ex.first_byte_ns,
        first_token_ns: ex.first_token_ns,
        second_token_ns: ex.second_token_ns,
        // Only a response with reasoning has a first output token apart from its first token.
        first_output_token_ns: ex.first_output_token_ns.filter(|_| ex.reasoning_end > 0),
        last_token_ns: ex.last_token_ns,
        end_ns,
        isl,
        osl,
        server_osl: ex.completion_tokens,
        tokenizer_osl: None,
        server_isl: ex.prompt_tokens,
        client_isl: (isl != ask.isl).then_some(ask.isl),
        server_timings: ex.timings,
        reasoning_tokens: None,
        // Kept for responses with reasoning only: a server that reports 0 for every answer
        // leaves other models' rows as they were.
        server_reasoning_tokens: ex.reasoning_tokens.filter(|_| ex.reasoning_end > 0),
        requested_osl: ask.max_tokens,
        chunks: ex.chunks,
        responses: ex.responses,
        lossy_text: ex.lossy_text,
        reconnected,
        connection_reused: ex.connection_reused,
        answer: None,
        error,
        conversation: ask.conversation,
        sent: ask.sent,
        tools: tool_use(ask.sent.tools, ex),
    };
    let fresh = shared.gaps.pop().unwrap_or_else(|| Vec::with_capacity(256));
    let gaps = std::mem::replace(&mut ex.gaps, fresh);
    let capture = match &shared.captures {
        Some(pool) => ex.capture.replace(pool.pop().unwrap_or_default()),
        None => None,
    };
    (
        Completed {
            record,
            gaps,
            capture,
        },
        count_later,
    )
}
