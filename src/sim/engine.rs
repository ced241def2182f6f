//! The timing model: an inference engine in miniature.
//!
//! One engine per hosted model (each model is its own "GPU"), shared by the HTTP and gRPC sides.
//! Requests wait in a FIFO queue in front of `max_batch` slots. A single loop runs steps
//! back-to-back; each step
//!
//! 1. admits queued requests into free slots, in arrival order;
//! 2. lasts `decode_base_us + decode_us_per_seq × running + Σ_admitted (prefill_base_us +
//!    prefill_us_per_token × input_tokens)` — so new arrivals slow down everybody's next token,
//!    as prefill does on a real server;
//! 3. ends by giving every running sequence one token; a request admitted in this step gets its
//!    first token now, and a sequence that reached its `max_tokens` leaves its slot.
//!
//! Each step also has a KV-cache side (`super::kv`): before step 2 every running sequence gets a
//! block when its next token crosses a block boundary; when none is left the engine preempts
//! the youngest running sequence (vLLM's recompute mode: its blocks are freed, it goes back to
//! the front of the queue, and when readmitted it prefills its prompt and the tokens it already
//! produced again), and admits nothing new in that step. A queued request is admitted only when
//! its prompt's blocks fit (head of line: the queue does not overtake); a request that would run
//! alone is admitted regardless, so an oversized request cannot stall the engine. With prefix
//! caching on, admission looks up the prompt's full blocks in the cache and prefill costs only
//! the uncached tokens: `prefill_base_us + prefill_us_per_token × (input − cached)`. The default
//! pool is unlimited and prefix caching is off, which keeps the timing below exact.
//!
//! Step ends are absolute deadlines (`sleep_until`), each step starting where the previous one
//! ended, so timer lateness does not accumulate into drift. Under a closed-loop concurrency
//! ladder TTFT therefore grows slowly while requests fit in the slots (prefill interference),
//! then jumps once the queue forms, and the queue counters say why.
//!
//! When every timing is zero the engine is bypassed entirely ("instant mode"): tokens are handed
//! out as fast as the transport takes them, which is what a benchmark of the client itself needs.
//!
//! Engine and transports meet in a [`Seq`]: the engine bumps an atomic token counter and wakes
//! the transport's task through an `AtomicWaker`, so delivering a token allocates nothing and
//! several tokens produced while the transport was busy coalesce into one wake-up.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::task::AtomicWaker;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, Sleep};

use super::engine_config::EngineConfig;
use super::kv::{KvCache, SeqBlocks};
use super::metrics::{FailReason, ModelMetrics};
use super::phase::{ABORTED, CANCELLED, DONE, Phase, QUEUED, RUNNING};

/// One request inside the engine, shared by the engine loop and the transport.
#[derive(Debug, Default)]
pub(crate) struct Seq {
    input_tokens: u32,
    /// Chained hashes of the prompt's full KV blocks (empty without prefix caching).
    prefix: Arc<[u64]>,
    max_tokens: u32,
    submitted_ns: u64,
    /// First admission (a preempted sequence keeps it).
    admitted_ns: AtomicU64,
    /// Prompt tokens found in the prefix cache at the first admission.
    cached_tokens: AtomicU32,
    first_token_ns: AtomicU64,
    last_token_ns: AtomicU64,
    produced: AtomicU32,
    state: Phase,
    waker: AtomicWaker,
}

impl Seq {
    /// Tokens whose KV the sequence stores: its prompt and what it produced so far.
    fn stored_tokens(&self) -> u64 {
        u64::from(self.input_tokens) + u64::from(self.produced.load(Ordering::Relaxed))
    }
}

/// What a request asks of the engine.
#[derive(Debug, Clone)]
pub(crate) struct Work {
    /// Prompt tokens to prefill.
    pub(crate) input_tokens: u32,
    /// Chained hashes of the prompt's full KV blocks ([`super::kv::block_hashes`]); empty when
    /// the model has no prefix caching (or the prompt came as token ids).
    pub(crate) prefix: Arc<[u64]>,
    /// Tokens to generate.
    pub(crate) max_tokens: u32,
}

impl Work {
    /// A request without prefix hashes.
    pub(crate) fn new(input_tokens: u32, max_tokens: u32) -> Self {
        Work {
            input_tokens,
            prefix: Arc::from([]),
            max_tokens,
        }
    }
}

/// Why a request could not be handed to the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SubmitError {
    /// `max_queue` requests are already waiting.
    #[error("queue full")]
    QueueFull,
    /// The server is shutting down.
    #[error("server is shutting down")]
    ShuttingDown,
}

/// How a request refused by the engine (or the batcher) or ended early by its token source
/// counts: a full queue is a rejection, shutdown is `OTHER`.
impl From<SubmitError> for FailReason {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::QueueFull => FailReason::Rejected,
            SubmitError::ShuttingDown => FailReason::Other,
        }
    }
}

/// Handle to one model's engine loop.
#[derive(Debug)]
pub(crate) struct Engine {
    cfg: EngineConfig,
    tx: mpsc::UnboundedSender<Arc<Seq>>,
    epoch: Instant,
    metrics: Arc<ModelMetrics>,
}

impl Engine {
    /// Starts the engine loop on the current tokio runtime. The loop ends when `shutdown` turns
    /// true (or its sender is dropped), aborting whatever is queued or running, or when the
    /// engine handle is dropped and the last sequence finished.
    pub(crate) fn spawn(
        cfg: EngineConfig,
        metrics: Arc<ModelMetrics>,
        shutdown: watch::Receiver<bool>,
    ) -> (Arc<Engine>, tokio::task::JoinHandle<()>) {
        let (engine, lp) = Engine::parts(cfg, metrics);
        (engine, tokio::spawn(lp.run(shutdown)))
    }

    /// The handle and the (not yet running) loop.
    fn parts(cfg: EngineConfig, metrics: Arc<ModelMetrics>) -> (Arc<Engine>, EngineLoop) {
        let (tx, rx) = mpsc::unbounded_channel();
        let epoch = Instant::now();
        let engine = Arc::new(Engine {
            cfg: cfg.clone(),
            tx,
            epoch,
            metrics: metrics.clone(),
        });
        metrics.engine.configure(&cfg);
        let lp = EngineLoop {
            kv: KvCache::new(
                cfg.kv_block_size,
                cfg.kv_capacity(),
                cfg.kv_blocks > 0,
                cfg.prefix_caching,
            ),
            cfg,
            rx,
            epoch,
            metrics,
            queue: VecDeque::new(),
            running: Vec::new(),
            admitted_tokens: Vec::new(),
        };
        (engine, lp)
    }

    /// Queues a request. Fails at once when the queue is full, so the protocol layer can refuse
    /// it before sending any header.
    pub(crate) fn submit(self: &Arc<Self>, work: &Work) -> Result<Arc<Seq>, SubmitError> {
        self.submit_at(work, Instant::now())
    }

    fn submit_at(self: &Arc<Self>, work: &Work, now: Instant) -> Result<Arc<Seq>, SubmitError> {
        // Reserve the queue place first: counting and checking in one atomic step keeps
        // concurrent submitters from overshooting `max_queue`.
        let before = self.metrics.pending.fetch_add(1, Ordering::AcqRel);
        if self.cfg.max_queue > 0 && before >= self.cfg.max_queue as i64 {
            self.metrics.pending.fetch_sub(1, Ordering::AcqRel);
            return Err(SubmitError::QueueFull);
        }
        let seq = Arc::new(Seq {
            input_tokens: work.input_tokens,
            prefix: work.prefix.clone(),
            max_tokens: work.max_tokens.max(1),
            submitted_ns: self.ns(now),
            ..Seq::default()
        });
        if self.tx.send(seq.clone()).is_err() {
            self.metrics.pending.fetch_sub(1, Ordering::AcqRel);
            return Err(SubmitError::ShuttingDown);
        }
        Ok(seq)
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    fn at(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }

    /// The transport gave up on `seq` (client disconnected).
    fn cancel(&self, seq: &Seq) {
        if seq.state.transition(QUEUED, CANCELLED) {
            self.metrics.pending.fetch_sub(1, Ordering::AcqRel);
        } else {
            seq.state.transition(RUNNING, CANCELLED);
        }
    }
}

/// If the loop wakes up later than this after a deadline (overloaded machine), the next step
/// starts from "now" instead of catching up with a burst of short steps.
pub(crate) const MAX_CATCH_UP: Duration = Duration::from_millis(10);

/// Start and end of one engine step.
#[derive(Debug, Clone, Copy)]
struct Step {
    start: Instant,
    deadline: Instant,
}

/// A sequence holding a batch slot, with the KV blocks it holds.
struct Active {
    seq: Arc<Seq>,
    blocks: SeqBlocks,
}

struct EngineLoop {
    cfg: EngineConfig,
    rx: mpsc::UnboundedReceiver<Arc<Seq>>,
    epoch: Instant,
    metrics: Arc<ModelMetrics>,
    queue: VecDeque<Arc<Seq>>,
    /// Running sequences in admission order (the youngest last: preempted first).
    running: Vec<Active>,
    kv: KvCache,
    /// Scratch: tokens to prefill for each request admitted in the current step.
    admitted_tokens: Vec<u32>,
}

impl EngineLoop {
    async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut prev_deadline: Option<Instant> = None;
        let mut inbox_open = true;
        loop {
            if *shutdown.borrow() {
                break;
            }
            inbox_open &= self.drain_inbox();
            let Some(step) = self.begin_step(Instant::now(), prev_deadline) else {
                // Idle: nothing runs and nothing live is queued. The next step starts when the
                // next request arrives, not at a stale deadline.
                prev_deadline = None;
                if !inbox_open {
                    return;
                }
                tokio::select! {
                    biased;
                    _ = signalled(&mut shutdown) => break,
                    msg = self.rx.recv() => match msg {
                        Some(seq) => self.queue.push_back(seq),
                        None => inbox_open = false,
                    },
                }
                continue;
            };
            if step.deadline == step.start {
                // Zero-length steps (partial zero timings) must still let other tasks run.
                tokio::task::yield_now().await;
            } else {
                tokio::select! {
                    biased;
                    _ = signalled(&mut shutdown) => break,
                    _ = tokio::time::sleep_until(step.deadline) => {}
                }
            }
            self.emit_tokens(step.deadline);
            prev_deadline = Some(step.deadline);
        }
        self.abort_all();
    }

    /// Plans the next step at time `now`: drops sequences whose client left, gives running
    /// sequences the KV blocks their next token needs (preempting when the pool is full),
    /// admits from the queue, and returns when the step starts and ends; `None` when there is
    /// nothing to run. A step that follows another starts at the previous deadline (absolute
    /// schedule, no drift) unless the loop is more than [`MAX_CATCH_UP`] late.
    fn begin_step(&mut self, now: Instant, prev_deadline: Option<Instant>) -> Option<Step> {
        self.reap();
        let start = match prev_deadline {
            Some(d) if now.saturating_duration_since(d) <= MAX_CATCH_UP => d,
            _ => now,
        };
        let preempted = self.grow_running();
        self.admitted_tokens.clear();
        if !preempted {
            self.admit(start);
        }
        self.publish_gauges();
        if self.running.is_empty() {
            return None;
        }
        if !self.admitted_tokens.is_empty() {
            self.metrics.exec_count.fetch_add(1, Ordering::Relaxed);
        }
        let step = self.cfg.step_us(self.running.len(), &self.admitted_tokens);
        let prefill = step - self.cfg.step_us(self.running.len(), &[]);
        self.metrics
            .engine
            .record_step(step, prefill, &self.admitted_tokens, self.running.len());
        Some(Step {
            start,
            deadline: start + Duration::from_micros(step),
        })
    }

    /// Frees the slots and blocks of sequences that finished or whose client left.
    fn reap(&mut self) {
        let kv = &mut self.kv;
        self.running.retain_mut(|a| {
            let keep = a.seq.state.get() == RUNNING;
            if !keep {
                kv.release(&mut a.blocks);
            }
            keep
        });
    }

    /// Every running sequence, oldest first, gets the blocks its next token needs; when the
    /// pool is full the youngest running sequence is preempted until it fits (a sequence alone
    /// may overcommit). Returns whether anything was preempted.
    fn grow_running(&mut self) -> bool {
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() {
            let tokens = self.running[i].seq.stored_tokens() + 1;
            let alone = self.running.len() == 1;
            if self.kv.grow(&mut self.running[i].blocks, tokens, alone) {
                i += 1;
                continue;
            }
            preempted = true;
            let last = self.running.len() - 1;
            self.preempt(last);
            // If it was sequence `i` itself, the loop ends; otherwise retry `i`.
        }
        preempted
    }

    /// Sends running sequence `i` back to the front of the queue, its blocks freed.
    fn preempt(&mut self, i: usize) {
        let mut a = self.running.remove(i);
        self.kv.release(&mut a.blocks);
        self.metrics
            .engine
            .preemptions
            .fetch_add(1, Ordering::Relaxed);
        if a.seq.state.transition(RUNNING, QUEUED) {
            self.metrics.pending.fetch_add(1, Ordering::AcqRel);
            self.queue.push_front(a.seq);
        }
    }

    /// Moves everything submitted so far into the queue. Returns false once every engine handle
    /// is gone (no more submissions can come).
    fn drain_inbox(&mut self) -> bool {
        loop {
            match self.rx.try_recv() {
                Ok(seq) => self.queue.push_back(seq),
                Err(mpsc::error::TryRecvError::Empty) => return true,
                Err(mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// Fills free slots from the queue head while the head's blocks fit, skipping requests
    /// whose client went away.
    fn admit(&mut self, start: Instant) {
        let start_ns = start.saturating_duration_since(self.epoch).as_nanos() as u64;
        while self.running.len() < self.cfg.max_batch {
            let Some(seq) = self.queue.front() else {
                break;
            };
            if seq.state.get() != QUEUED {
                self.queue.pop_front(); // cancelled while queued; its pending count was returned
                continue;
            }
            let produced = u64::from(seq.produced.load(Ordering::Relaxed));
            let stored = seq.stored_tokens();
            let alone = self.running.is_empty();
            let Some((blocks, cached)) =
                self.kv
                    .admit(&seq.prefix, seq.input_tokens, stored + 1, alone)
            else {
                break; // head of line waits for blocks
            };
            let seq = self.queue.pop_front().expect("front exists");
            if !seq.state.transition(QUEUED, RUNNING) {
                let mut blocks = blocks;
                self.kv.release(&mut blocks);
                continue;
            }
            self.metrics.pending.fetch_sub(1, Ordering::AcqRel);
            if produced == 0 {
                // A request that arrived after the (logical) step start is admitted at its
                // arrival; a preempted one keeps its first admission.
                seq.admitted_ns
                    .store(start_ns.max(seq.submitted_ns), Ordering::Release);
                seq.cached_tokens.store(cached, Ordering::Release);
            }
            let prefill = stored.saturating_sub(u64::from(cached));
            self.admitted_tokens
                .push(u32::try_from(prefill).unwrap_or(u32::MAX));
            self.running.push(Active { seq, blocks });
        }
    }

    /// Running count, KV usage and prefix-cache counters for the exporters.
    fn publish_gauges(&self) {
        let e = &self.metrics.engine;
        self.metrics
            .running
            .store(self.running.len() as i64, Ordering::Relaxed);
        e.kv_used
            .store(u64::from(self.kv.used()), Ordering::Relaxed);
        e.publish_prefix(self.kv.counters());
    }

    /// End of a step: one token for every running sequence.
    fn emit_tokens(&mut self, deadline: Instant) {
        let end_ns = deadline.saturating_duration_since(self.epoch).as_nanos() as u64;
        for Active { seq, .. } in &self.running {
            // Only this loop writes `produced`, so load + store is race-free; timestamps are
            // stored before the count is published so a reader that sees a token also sees
            // when it was made.
            let n = seq.produced.load(Ordering::Relaxed) + 1;
            if n == 1 {
                seq.first_token_ns.store(end_ns, Ordering::Release);
                self.metrics.engine.first_token(seq.input_tokens);
            }
            if n >= seq.max_tokens {
                seq.last_token_ns.store(end_ns, Ordering::Release);
                self.metrics.engine.sequence_done(seq.stored_tokens() + 1);
            }
            seq.produced.store(n, Ordering::Release);
            if n >= seq.max_tokens {
                seq.state.transition(RUNNING, DONE);
            }
            seq.waker.wake();
        }
        self.metrics
            .engine
            .generation_tokens
            .fetch_add(self.running.len() as u64, Ordering::Relaxed);
        self.reap();
        self.publish_gauges();
    }

    /// Shutdown: nothing more is accepted; everything queued or running ends with an error.
    fn abort_all(&mut self) {
        self.rx.close();
        self.drain_inbox();
        let running: Vec<Arc<Seq>> = std::mem::take(&mut self.running)
            .into_iter()
            .map(|mut a| {
                self.kv.release(&mut a.blocks);
                a.seq
            })
            .collect();
        for seq in self.queue.drain(..).chain(running) {
            if seq.state.transition(QUEUED, ABORTED) {
                self.metrics.pending.fetch_sub(1, Ordering::AcqRel);
            } else {
                seq.state.transition(RUNNING, ABORTED);
            }
            seq.waker.wake();
        }
        self.publish_gauges();
    }
}

/// Resolves when shutdown is requested or the shutdown sender is gone.
pub(crate) async fn signalled(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

/// Why a token source ended early: a submission after a stall found the queue full, or the
/// engine shut down. The same two cases as a refused submission, so the same type.
pub(crate) type SourceError = SubmitError;

#[derive(Debug)]
enum SourceKind {
    /// Instant mode: every token is ready at once.
    Instant,
    /// Tokens come from an engine step by step.
    Engine { engine: Arc<Engine>, seq: Arc<Seq> },
    /// A stall fault: wait, then submit (to `engine`, or instant mode when `None`).
    Stalled {
        sleep: Pin<Box<Sleep>>,
        engine: Option<Arc<Engine>>,
        work: Work,
    },
    /// Ended with an error.
    Failed,
}

/// The transport's view of one request's tokens: yields token indices `0..max_tokens` in order,
/// waiting for the engine when it has to. Dropping it before the end cancels the request in the
/// engine (its slot is freed at the next step).
#[derive(Debug)]
pub(crate) struct TokenSource {
    kind: SourceKind,
    next: u32,
    max: u32,
    /// When the request got a slot (instant mode: when it was submitted or its stall ended).
    admitted: Option<Instant>,
    /// Instant mode has no engine to abort it: it watches the server's shutdown flag itself.
    shutdown: Option<watch::Receiver<bool>>,
}

impl TokenSource {
    /// Starts generating `work.max_tokens` tokens: through `engine` when there is one,
    /// instantly otherwise; after `stall` when a stall fault applies (submission then happens
    /// after the stall, so a full queue is only discovered then).
    pub(crate) fn start(
        engine: Option<&Arc<Engine>>,
        mut work: Work,
        stall: Option<Duration>,
    ) -> Result<TokenSource, SubmitError> {
        let max = work.max_tokens.max(1);
        work.max_tokens = max;
        let kind = match (stall, engine) {
            (Some(d), engine) => SourceKind::Stalled {
                sleep: Box::pin(tokio::time::sleep(d)),
                engine: engine.cloned(),
                work,
            },
            (None, Some(engine)) => {
                let seq = engine.submit(&work)?;
                SourceKind::Engine {
                    engine: engine.clone(),
                    seq,
                }
            }
            (None, None) => SourceKind::Instant,
        };
        let admitted = matches!(kind, SourceKind::Instant).then(Instant::now);
        Ok(TokenSource {
            kind,
            next: 0,
            max,
            admitted,
            shutdown: None,
        })
    }

    /// Makes an instant-mode source end with [`SubmitError::ShuttingDown`] once `shutdown`
    /// turns true (engine-mode sources are aborted by their engine instead).
    pub(crate) fn with_shutdown(mut self, shutdown: watch::Receiver<bool>) -> Self {
        self.shutdown = Some(shutdown);
        self
    }

    /// Number of tokens this source yields in total.
    pub(crate) fn max_tokens(&self) -> u32 {
        self.max
    }

    /// Number of tokens handed out so far.
    pub(crate) fn emitted(&self) -> u32 {
        self.next
    }

    /// Next token index; `None` after the last one.
    pub(crate) fn poll_token(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<u32, SourceError>>> {
        loop {
            if self.next >= self.max {
                return Poll::Ready(None);
            }
            let error = match &mut self.kind {
                SourceKind::Instant => {
                    // The flag only ever goes from false to true, so "changed" (or "sender
                    // gone") means shutdown; checking costs one atomic load.
                    let flag = self.shutdown.as_ref();
                    if !flag.is_some_and(|rx| !matches!(rx.has_changed(), Ok(false))) {
                        break;
                    }
                    SourceError::ShuttingDown
                }
                SourceKind::Engine { seq, .. } => {
                    if self.next < seq.produced.load(Ordering::Acquire) {
                        break;
                    }
                    // Register, then re-check, so a token produced in between is not missed.
                    seq.waker.register(cx.waker());
                    if self.next < seq.produced.load(Ordering::Acquire) {
                        break;
                    }
                    if seq.state.get() != ABORTED {
                        return Poll::Pending;
                    }
                    SourceError::ShuttingDown
                }
                SourceKind::Stalled {
                    sleep,
                    engine,
                    work,
                } => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    let Some(engine) = engine.take() else {
                        self.admitted = Some(Instant::now());
                        self.kind = SourceKind::Instant;
                        continue;
                    };
                    match engine.submit(work) {
                        Ok(seq) => {
                            self.kind = SourceKind::Engine { engine, seq };
                            continue;
                        }
                        Err(e) => e,
                    }
                }
                SourceKind::Failed => return Poll::Ready(None),
            };
            self.kind = SourceKind::Failed;
            return Poll::Ready(Some(Err(error)));
        }
        self.next += 1;
        Poll::Ready(Some(Ok(self.next - 1)))
    }

    /// Async form of [`TokenSource::poll_token`].
    pub(crate) async fn next_token(&mut self) -> Option<Result<u32, SourceError>> {
        std::future::poll_fn(|cx| self.poll_token(cx)).await
    }

    /// When the request got its slot, once known.
    pub(crate) fn admitted_at(&self) -> Option<Instant> {
        match &self.kind {
            SourceKind::Engine { engine, seq } => {
                let ns = seq.admitted_ns.load(Ordering::Acquire);
                (seq.state.get() != QUEUED).then(|| engine.at(ns))
            }
            _ => self.admitted,
        }
    }

    /// Prompt tokens the engine found in its prefix cache (engine mode, once admitted; 0
    /// otherwise).
    pub(crate) fn cached_tokens(&self) -> u32 {
        match &self.kind {
            SourceKind::Engine { seq, .. } if seq.state.get() != QUEUED => {
                seq.cached_tokens.load(Ordering::Acquire)
            }
            _ => 0,
        }
    }

    /// When the engine produced the first token (engine mode, once it did).
    pub(crate) fn first_token_at(&self) -> Option<Instant> {
        match &self.kind {
            SourceKind::Engine { engine, seq } if seq.produced.load(Ordering::Acquire) > 0 => {
                Some(engine.at(seq.first_token_ns.load(Ordering::Acquire)))
            }
            _ => None,
        }
    }

    /// When the engine produced the last token (engine mode, after the last token only).
    pub(crate) fn last_token_at(&self) -> Option<Instant> {
        match &self.kind {
            SourceKind::Engine { engine, seq } if seq.state.get() == DONE => {
                Some(engine.at(seq.last_token_ns.load(Ordering::Acquire)))
            }
            _ => None,
        }
    }
}

impl Drop for TokenSource {
    fn drop(&mut self) {
        if let SourceKind::Engine { engine, seq } = &self.kind {
            engine.cancel(seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::task::noop_waker_ref;

    /// Drives an engine loop on a virtual clock: no sleeping, exact times.
    struct Virtual {
        engine: Arc<Engine>,
        lp: EngineLoop,
        metrics: Arc<ModelMetrics>,
        t0: Instant,
        now: Instant,
        prev: Option<Instant>,
    }

    impl Virtual {
        fn new(cfg: EngineConfig) -> Self {
            let metrics = Arc::new(ModelMetrics::with_batch_stats("m", "1", 0));
            let (engine, lp) = Engine::parts(cfg, metrics.clone());
            let t0 = Instant::now();
            Virtual {
                engine,
                lp,
                metrics,
                t0,
                now: t0,
                prev: None,
            }
        }

        fn at(&self, us: u64) -> Instant {
            self.t0 + Duration::from_micros(us)
        }

        fn submit(&self, input: u32, max: u32, at_us: u64) -> Result<TokenSource, SubmitError> {
            self.submit_work(&Work::new(input, max), at_us)
        }

        fn submit_work(&self, work: &Work, at_us: u64) -> Result<TokenSource, SubmitError> {
            let (max, seq) = (
                work.max_tokens,
                self.engine.submit_at(work, self.at(at_us))?,
            );
            Ok(TokenSource {
                kind: SourceKind::Engine {
                    engine: self.engine.clone(),
                    seq,
                },
                next: 0,
                max,
                admitted: None,
                shutdown: None,
            })
        }

        /// Runs one step; returns its end (µs after t0), or `None` when idle.
        fn step(&mut self) -> Option<u64> {
            self.lp.drain_inbox();
            let step = self.lp.begin_step(self.now, self.prev)?;
            self.lp.emit_tokens(step.deadline);
            self.now = step.deadline;
            self.prev = Some(step.deadline);
            Some(step.deadline.duration_since(self.t0).as_micros() as u64)
        }

        /// Runs to idle, recording when each source's tokens became available.
        fn run(&mut self, sources: &mut [TokenSource]) -> Vec<Vec<u64>> {
            let mut times = vec![Vec::new(); sources.len()];
            while let Some(end) = self.step() {
                collect(sources, &mut times, end);
            }
            times
        }
    }

    fn collect(sources: &mut [TokenSource], times: &mut [Vec<u64>], end: u64) {
        let mut cx = Context::from_waker(noop_waker_ref());
        for (src, t) in sources.iter_mut().zip(times.iter_mut()) {
            while let Poll::Ready(Some(Ok(_))) = src.poll_token(&mut cx) {
                t.push(end);
            }
        }
    }

    #[test]
    fn ttft_at_batch_one_is_one_step_with_prefill() {
        let mut v = Virtual::new(EngineConfig::default());
        let mut srcs = vec![v.submit(100, 3, 0).expect("submit")];
        let times = v.run(&mut srcs);
        // prefill 2000 + 100×100, decode 4000 + 250×1; then decode-only steps of 4250.
        let first = 2000 + 100 * 100 + 4000 + 250;
        assert_eq!(times[0], vec![first, first + 4250, first + 8500]);
        assert_eq!(v.metrics.exec_count.load(Ordering::Relaxed), 1);
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 0);
        assert_eq!(srcs[0].admitted_at(), Some(v.t0));
        assert_eq!(srcs[0].last_token_at(), Some(v.at(first + 8500)));
    }

    #[test]
    fn queueing_when_concurrency_exceeds_slots() {
        let mut v = Virtual::new(EngineConfig {
            max_batch: 2,
            ..EngineConfig::default()
        });
        let mut srcs: Vec<_> = (0..4)
            .map(|_| v.submit(10, 2, 0).expect("submit"))
            .collect();
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 4);
        // Step 1 admits A,B: 4000 + 2×250 + 2×(2000 + 1000) = 10 500. Step 2 decodes: 4500.
        assert_eq!(v.step(), Some(10_500));
        assert_eq!(
            v.metrics.pending.load(Ordering::Relaxed),
            2,
            "C and D wait for a slot"
        );
        assert_eq!(v.metrics.running.load(Ordering::Relaxed), 2);
        let mut times = vec![vec![10_500], vec![10_500], vec![], vec![]];
        let mut cx = Context::from_waker(noop_waker_ref());
        for s in &mut srcs[..2] {
            assert!(matches!(s.poll_token(&mut cx), Poll::Ready(Some(Ok(0)))));
        }
        while let Some(end) = v.step() {
            collect(&mut srcs, &mut times, end);
        }
        // Steps 3 and 4 repeat the pattern for C and D, which queued for 15 ms.
        assert_eq!(
            times,
            vec![
                vec![10_500, 15_000],
                vec![10_500, 15_000],
                vec![25_500, 30_000],
                vec![25_500, 30_000]
            ]
        );
        assert_eq!(v.metrics.exec_count.load(Ordering::Relaxed), 2);
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 0);
        assert_eq!(srcs[2].admitted_at(), Some(v.at(15_000)));
    }

    #[test]
    fn late_arrival_joins_the_running_batch_at_the_next_step() {
        let mut v = Virtual::new(EngineConfig::default());
        let mut srcs = vec![v.submit(0, 3, 0).expect("a")];
        assert_eq!(v.step(), Some(6250)); // A alone: 2000 + 4000 + 250
        let mut times = vec![vec![6250], vec![]];
        let mut cx = Context::from_waker(noop_waker_ref());
        assert!(matches!(
            srcs[0].poll_token(&mut cx),
            Poll::Ready(Some(Ok(0)))
        ));
        // B arrived during A's first step (t = 1 ms): admitted when the next step starts.
        srcs.push(v.submit(0, 1, 1000).expect("b"));
        while let Some(end) = v.step() {
            collect(&mut srcs, &mut times, end);
        }
        // Step 2 (B's prefill slows A too): 2000 + 4000 + 2×250 = 6500; step 3: A alone, 4250.
        assert_eq!(times, vec![vec![6250, 12_750, 17_000], vec![12_750]]);
        assert_eq!(srcs[1].admitted_at(), Some(v.at(6250)));
    }

    #[test]
    fn ttft_rises_slowly_then_knees_past_the_slot_count() {
        // Closed loop is approximated by a burst of c requests; mean TTFT per concurrency.
        let mean_ttft = |c: usize| {
            let mut v = Virtual::new(EngineConfig::default());
            let mut srcs: Vec<_> = (0..c).map(|_| v.submit(100, 32, 0).expect("s")).collect();
            let times = v.run(&mut srcs);
            times.iter().map(|t| t[0]).sum::<u64>() / c as u64
        };
        let t: Vec<u64> = [1, 2, 4, 8, 16, 32].iter().map(|&c| mean_ttft(c)).collect();
        assert!(
            t.windows(2).all(|w| w[1] > w[0]),
            "TTFT must grow with load: {t:?}"
        );
        // Up to 8 (the slot count) growth is prefill interference; beyond, queueing dominates.
        assert!(t[3] < 8 * t[0], "{t:?}");
        assert!(t[4] - t[3] > t[3] - t[2], "knee after 8 slots: {t:?}");
        assert!(t[5] > 2 * t[4] - t[3], "queue wait keeps growing: {t:?}");
    }

    #[test]
    fn queue_limit_and_cancellation() {
        let mut v = Virtual::new(EngineConfig {
            max_batch: 1,
            max_queue: 2,
            ..EngineConfig::default()
        });
        let a = v.submit(0, 1, 0).expect("a");
        let b = v.submit(0, 1, 0).expect("b");
        assert_eq!(v.submit(0, 1, 0).err(), Some(SubmitError::QueueFull));
        // Cancelling a queued request frees its queue place at once.
        drop(b);
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 1);
        let c = v.submit(0, 1, 0).expect("c");
        let mut srcs = vec![a, c];
        assert_eq!(v.run(&mut srcs), vec![vec![6250], vec![12_500]]);
    }

    #[test]
    fn cancelled_running_sequence_frees_its_slot() {
        let mut v = Virtual::new(EngineConfig {
            max_batch: 1,
            ..EngineConfig::default()
        });
        let a = v.submit(0, 100, 0).expect("a");
        let b = v.submit(0, 1, 0).expect("b");
        assert_eq!(v.step(), Some(6250));
        drop(a); // client went away while running
        let mut srcs = vec![b];
        assert_eq!(v.run(&mut srcs), vec![vec![12_500]]);
    }

    #[test]
    fn instant_detection_and_step_formula() {
        assert!(EngineConfig::instant().is_instant());
        assert!(!EngineConfig::default().is_instant());
        assert_eq!(EngineConfig::default().step_us(1, &[100]), 16_250);
        assert_eq!(EngineConfig::default().step_us(8, &[]), 6000);
    }

    /// Round timing for KV tests: prefill 100 µs per token, decode steps of 1000 µs.
    fn kv_engine(blocks: u32, prefix_caching: bool) -> EngineConfig {
        EngineConfig {
            max_batch: 4,
            max_queue: 0,
            prefill_base_us: 0,
            prefill_us_per_token: 100,
            decode_base_us: 1000,
            decode_us_per_seq: 0,
            kv_block_size: 4,
            kv_blocks: blocks,
            prefix_caching,
        }
    }

    #[test]
    fn kv_exhaustion_preempts_the_youngest_which_recomputes_later() {
        let mut v = Virtual::new(kv_engine(6, false));
        let mut srcs = vec![
            v.submit(4, 12, 0).expect("a"),
            v.submit(4, 12, 0).expect("b"),
        ];
        let times = v.run(&mut srcs);
        // Both admitted with 2 blocks (prompt + first token), 3 each after 8 tokens: the pool
        // of 6 is full, so when A needs its 4th block B is preempted (A runs on alone) and
        // readmitted once A is done, prefilling its 4 prompt and 8 generated tokens again.
        let steps: Vec<u64> = (0..8).map(|k| 1800 + 1000 * k).collect();
        let mut a = steps.clone();
        a.extend([9800, 10_800, 11_800, 12_800]);
        let mut b = steps;
        b.extend([12_800 + 1200 + 1000, 16_000, 17_000, 18_000]);
        assert_eq!(times, vec![a, b]);
        let e = &v.metrics.engine;
        assert_eq!(e.preemptions.load(Ordering::Relaxed), 1);
        assert_eq!(e.kv_used.load(Ordering::Relaxed), 0);
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 0);
        assert_eq!(e.generation_tokens.load(Ordering::Relaxed), 24);
        assert_eq!(
            e.prompt_tokens.load(Ordering::Relaxed),
            8,
            "counted at the first token"
        );
        // B's admission and first token stay those of its first run.
        assert_eq!(srcs[1].admitted_at(), Some(v.t0));
        assert_eq!(srcs[1].first_token_at(), Some(v.at(1800)));
    }

    #[test]
    fn kv_blocks_gate_admission_at_the_head_of_the_queue() {
        let mut v = Virtual::new(kv_engine(4, false));
        // A takes 3 of 4 blocks; B (2 blocks) waits although a slot is free, and so does C
        // (1 block, would fit): the queue does not overtake.
        let mut srcs = vec![
            v.submit(8, 2, 0).expect("a"),
            v.submit(4, 1, 0).expect("b"),
            v.submit(0, 1, 0).expect("c"),
        ];
        assert_eq!(v.step(), Some(1800));
        assert_eq!(v.metrics.running.load(Ordering::Relaxed), 1);
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 2);
        let mut times = vec![vec![], vec![], vec![]];
        collect(&mut srcs, &mut times, 1800);
        while let Some(end) = v.step() {
            collect(&mut srcs, &mut times, end);
        }
        assert_eq!(times, vec![vec![1800, 2800], vec![4200], vec![4200]]);
    }

    #[test]
    fn a_request_larger_than_the_pool_runs_alone() {
        let mut v = Virtual::new(kv_engine(2, false));
        let mut srcs = vec![v.submit(100, 2, 0).expect("a")];
        assert_eq!(v.run(&mut srcs), vec![vec![11_000, 12_000]]);
        assert_eq!(v.metrics.engine.preemptions.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn prefix_cache_hits_skip_prefill() {
        let mut v = Virtual::new(kv_engine(0, true));
        let toks: Vec<u32> = (0..10).collect();
        let work = Work {
            input_tokens: 10,
            prefix: super::super::kv::block_hashes(&toks, 4).into(),
            max_tokens: 1,
        };
        let mut srcs = vec![v.submit_work(&work, 0).expect("a")];
        assert_eq!(v.run(&mut srcs), vec![vec![2000]], "10 tokens to prefill");
        // The same prompt later: 8 of its 10 tokens are cached (the last block is partial).
        v.now = v.at(5000);
        v.prev = None;
        let mut srcs = vec![v.submit_work(&work, 5000).expect("b")];
        assert_eq!(v.run(&mut srcs), vec![vec![5000 + 200 + 1000]]);
        let e = &v.metrics.engine;
        assert_eq!(e.prefix_queried_tokens.load(Ordering::Relaxed), 20);
        assert_eq!(e.prefix_hit_tokens.load(Ordering::Relaxed), 8);
        assert_eq!(e.prefix_hit_blocks.load(Ordering::Relaxed), 2);
    }

    // The async loop itself, on the real clock (tolerant bounds: shared 2-core machines).

    #[tokio::test]
    async fn real_clock_first_token_and_spacing() {
        let metrics = Arc::new(ModelMetrics::with_batch_stats("m", "1", 0));
        let (_tx, rx) = watch::channel(false);
        let (e, _task) = Engine::spawn(EngineConfig::default(), metrics, rx);
        let t0 = Instant::now();
        let mut src = TokenSource::start(Some(&e), Work::new(100, 3), None).expect("submit");
        let mut times = Vec::new();
        while let Some(r) = src.next_token().await {
            r.expect("token");
            times.push(t0.elapsed().as_micros() as u64);
        }
        // Sleeps never end early and deadlines are absolute, so these lower bounds are exact;
        // the upper bound only guards against a stuck loop on a loaded machine.
        assert!(times[0] >= 16_250, "{times:?}");
        assert!(times[2] >= 16_250 + 8_500, "{times:?}");
        assert!(times[2] < 500_000, "{times:?}");
    }

    #[tokio::test]
    async fn shutdown_aborts_waiting_sequences() {
        let metrics = Arc::new(ModelMetrics::with_batch_stats("m", "1", 0));
        let (stop, rx) = watch::channel(false);
        let (e, task) = Engine::spawn(
            EngineConfig {
                max_batch: 1,
                ..EngineConfig::default()
            },
            metrics.clone(),
            rx,
        );
        let mut a = TokenSource::start(Some(&e), Work::new(0, 100), None).expect("a");
        let mut b = TokenSource::start(Some(&e), Work::new(0, 100), None).expect("b");
        assert!(matches!(a.next_token().await, Some(Ok(0))));
        stop.send(true).expect("send");
        // Tokens made before the loop saw the stop may still come (a busy machine delays it).
        let mut next = a.next_token().await;
        while let Some(Ok(_)) = next {
            next = a.next_token().await;
        }
        assert_eq!(next, Some(Err(SourceError::ShuttingDown)));
        assert_eq!(b.next_token().await, Some(Err(SourceError::ShuttingDown)));
        task.await.expect("engine loop ends");
        assert_eq!(metrics.pending.load(Ordering::Relaxed), 0);
        assert_eq!(
            TokenSource::start(Some(&e), Work::new(0, 1), None).err(),
            Some(SubmitError::ShuttingDown)
        );
    }

    #[tokio::test]
    async fn instant_source_stops_on_shutdown() {
        let (stop, rx) = watch::channel(false);
        let mut src = TokenSource::start(None, Work::new(0, 1000), None)
            .expect("s")
            .with_shutdown(rx);
        assert_eq!(src.next_token().await, Some(Ok(0)));
        stop.send(true).expect("send");
        assert_eq!(src.next_token().await, Some(Err(SourceError::ShuttingDown)));
        assert_eq!(src.next_token().await, None);
    }

    #[tokio::test]
    async fn stall_delays_submission() {
        let metrics = Arc::new(ModelMetrics::with_batch_stats("m", "1", 0));
        let (_tx, rx) = watch::channel(false);
        let (e, _task) = Engine::spawn(EngineConfig::default(), metrics, rx);
        let t0 = Instant::now();
        let mut src =
            TokenSource::start(Some(&e), Work::new(0, 1), Some(Duration::from_millis(50)))
                .expect("s");
        assert!(matches!(src.next_token().await, Some(Ok(0))));
        let ttft = t0.elapsed();
        assert!(
            ttft >= Duration::from_micros(56_250) && ttft < Duration::from_millis(500),
            "{ttft:?}"
        );
        // Instant mode: the stall alone.
        let t1 = Instant::now();
        let mut src =
            TokenSource::start(None, Work::new(0, 3), Some(Duration::from_millis(20))).expect("s");
        let mut n = 0;
        while let Some(r) = src.next_token().await {
            r.expect("token");
            n += 1;
        }
        assert_eq!(n, 3);
        assert!(t1.elapsed() >= Duration::from_millis(20));
    }
}
