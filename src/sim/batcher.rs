//! Triton's dynamic batcher and model instances in miniature, for tensor models.
//!
//! One batcher per tensor model. Requests (each carrying `b` batch elements) wait in a FIFO
//! queue; whenever a model instance is free the scheduler looks at the queue head and decides,
//! as Triton's `DynamicBatchScheduler` does:
//!
//! * without dynamic batching, the head request runs alone;
//! * with it, it accumulates requests in order while their elements fit in `max_batch_size`.
//!   It sends at once when the batch reached the largest preferred size (or `max_batch_size`
//!   when none is preferred), or when the next request does not fit; otherwise it sends the
//!   longest prefix whose size is a preferred size, if any; otherwise it sends everything
//!   accumulated once the oldest request has waited `max_queue_delay_us` (at once when that is 0)
//!   and waits for more until then.
//!
//! While every instance is busy requests keep queueing, so batches grow with load exactly as
//! they do on Triton (a request that waits for an instance waits in the queue phase). An
//! execution of `B` elements lasts [`TensorTiming::phases_us`] (`compute_input`,
//! `compute_infer`, `compute_output`); every request in it reports those same phases.
//!
//! Like the LLM engine, the scheduler keeps an absolute schedule: an execution starts when its
//! instance became free or its batch became ready (whichever is later), not when the loop
//! happened to wake, unless the loop is more than [`MAX_CATCH_UP`] late. The decision logic
//! ([`BatchLoop::advance`]) takes the time as an argument, so unit tests drive it on a virtual
//! clock.
//!
//! The loop runs on a thread of its own (tokio's blocking pool), waiting with
//! `recv_timeout`: tokio's timers tick in whole milliseconds, which would add up to a
//! millisecond to every execution of models whose executions last one or two; an OS timed wait
//! wakes within tens of microseconds. Completions reach the transports through wakers, so the
//! async side never blocks.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::task::AtomicWaker;
use std::sync::mpsc;

use tokio::sync::watch;
use tokio::time::Instant;

use super::engine::{MAX_CATCH_UP, SubmitError};
use super::engine_config::EngineConfig;
use super::metrics::ModelMetrics;
use super::models::{DynamicBatching, ModelSpec, TensorTiming};
use super::phase::{ABORTED, CANCELLED, DONE, Phase, QUEUED, RUNNING};

/// How one tensor model's batcher behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatcherConfig {
    /// Most elements one execution may hold (1 for models without a batch dimension).
    pub(crate) max_batch: u32,
    /// Dynamic batching; `None` runs every request alone.
    pub(crate) dynamic: Option<DynamicBatching>,
    /// Execution timing and instance count.
    pub(crate) timing: TensorTiming,
    /// Most requests waiting; 0 = unbounded.
    pub(crate) max_queue: usize,
}

impl BatcherConfig {
    /// The batcher of `spec`, with the queue limit of its effective engine configuration.
    pub(crate) fn for_model(spec: &ModelSpec, engine: &EngineConfig) -> Self {
        BatcherConfig {
            max_batch: spec.max_batch(),
            dynamic: spec.dynamic_batching.clone(),
            timing: spec.timing(),
            max_queue: engine.max_queue,
        }
    }
}

/// When the execution a request joined ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExecTimes {
    /// The phase boundaries, as [`super::metrics::Tracker::succeed_tensor`] takes them:
    /// execution start (end of the request's queue phase), end of compute_input, end of
    /// compute_infer, end of compute_output (the outputs are ready).
    pub(crate) phases: [Instant; 4],
    /// Elements in the whole execution (this request's and its batch mates').
    pub(crate) batch: u32,
}

impl ExecTimes {
    /// A zero-length execution at `now` (instant mode).
    pub(crate) fn instant(now: Instant, batch: u32) -> Self {
        ExecTimes {
            phases: [now; 4],
            batch,
        }
    }
}

/// One request inside the batcher, shared by the scheduler and the waiting transport.
#[derive(Debug)]
pub(crate) struct Job {
    batch: u32,
    submitted_ns: u64,
    state: Phase,
    /// Execution start, input end, infer end, end (ns since the batcher's epoch); written
    /// before the state turns `DONE`.
    times_ns: [AtomicU64; 4],
    exec_batch: AtomicU32,
    waker: AtomicWaker,
    /// For the pending gauge when the job leaves the queue.
    metrics: Arc<ModelMetrics>,
}

/// The scheduler's hold on a job (in the channel, the queue, or an execution). Dropping it
/// before the job finished (shutdown, a message left in the channel when the loop ended) fails
/// the request, so no requester is left waiting forever.
#[derive(Debug)]
struct Held(Arc<Job>);

impl Drop for Held {
    fn drop(&mut self) {
        let job = &self.0;
        if job.state.transition(QUEUED, ABORTED) {
            job.metrics.pending.fetch_sub(1, Ordering::AcqRel);
            job.waker.wake();
        } else if job.state.transition(RUNNING, ABORTED) {
            job.waker.wake();
        }
    }
}

/// What the scheduler thread receives.
#[derive(Debug)]
enum Msg {
    /// A new request.
    Job(Held),
    /// Shutdown was requested.
    Stop,
}

/// Handle to one tensor model's scheduler loop.
#[derive(Debug)]
pub(crate) struct Batcher {
    cfg: BatcherConfig,
    tx: mpsc::Sender<Msg>,
    epoch: Instant,
    metrics: Arc<ModelMetrics>,
}

impl Batcher {
    /// Starts the scheduler loop on a blocking-pool thread of the current runtime. It ends when
    /// `shutdown` turns true, failing whatever is queued or executing, or once every handle is
    /// gone and it is idle.
    pub(crate) fn spawn(
        cfg: BatcherConfig,
        metrics: Arc<ModelMetrics>,
        shutdown: watch::Receiver<bool>,
    ) -> (Arc<Batcher>, tokio::task::JoinHandle<()>) {
        let (b, lp) = Batcher::parts(cfg, metrics);
        // Wakes the thread at once on shutdown (it also polls the flag, in case the runtime
        // goes away before this task runs).
        let tx = b.tx.clone();
        let mut watcher = shutdown.clone();
        tokio::spawn(async move {
            let _ = watcher.wait_for(|v| *v).await;
            let _ = tx.send(Msg::Stop);
        });
        (b, tokio::task::spawn_blocking(move || lp.run(&shutdown)))
    }

    fn parts(cfg: BatcherConfig, metrics: Arc<ModelMetrics>) -> (Arc<Batcher>, BatchLoop) {
        let (tx, rx) = mpsc::channel();
        let epoch = Instant::now();
        let instances = (0..cfg.timing.instance_count.max(1))
            .map(|_| Instance {
                free_at: epoch,
                running: None,
            })
            .collect();
        let lp = BatchLoop {
            cfg: cfg.clone(),
            rx,
            epoch,
            metrics: metrics.clone(),
            queue: VecDeque::new(),
            instances,
            spare: Vec::new(),
            stopped: false,
        };
        (
            Arc::new(Batcher {
                cfg,
                tx,
                epoch,
                metrics,
            }),
            lp,
        )
    }

    /// Queues a request of `batch` elements (already validated against `max_batch`). Fails at
    /// once when the queue is full or the batcher is gone.
    pub(crate) fn submit(self: &Arc<Self>, batch: u32) -> Result<Ticket, SubmitError> {
        self.submit_at(batch, Instant::now())
    }

    fn submit_at(self: &Arc<Self>, batch: u32, now: Instant) -> Result<Ticket, SubmitError> {
        // Reserve the queue place first, so concurrent submitters cannot overshoot the limit.
        let before = self.metrics.pending.fetch_add(1, Ordering::AcqRel);
        if self.cfg.max_queue > 0 && before >= self.cfg.max_queue as i64 {
            self.metrics.pending.fetch_sub(1, Ordering::AcqRel);
            return Err(SubmitError::QueueFull);
        }
        let job = Arc::new(Job {
            batch: batch.clamp(1, self.cfg.max_batch),
            submitted_ns: now.saturating_duration_since(self.epoch).as_nanos() as u64,
            state: Phase::default(),
            times_ns: Default::default(),
            exec_batch: AtomicU32::new(0),
            waker: AtomicWaker::new(),
            metrics: self.metrics.clone(),
        });
        if let Err(mpsc::SendError(msg)) = self.tx.send(Msg::Job(Held(job.clone()))) {
            // The loop is gone; dropping the hold returns the queue place.
            drop(msg);
            return Err(SubmitError::ShuttingDown);
        }
        Ok(Ticket {
            batcher: self.clone(),
            job,
        })
    }

    fn at(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }
}

/// The transport's wait for one request's execution. Resolves with the execution's times, or
/// with `ShuttingDown`. Dropping it while the request is queued takes it out of the queue (an
/// execution already under way completes, as on Triton).
#[derive(Debug)]
pub(crate) struct Ticket {
    batcher: Arc<Batcher>,
    job: Arc<Job>,
}

impl Future for Ticket {
    type Output = Result<ExecTimes, SubmitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        for attempt in 0..2 {
            match this.job.state.get() {
                DONE => {
                    let times = this.job.times_ns.each_ref();
                    let phases = times.map(|t| this.batcher.at(t.load(Ordering::Acquire)));
                    let batch = this.job.exec_batch.load(Ordering::Acquire);
                    return Poll::Ready(Ok(ExecTimes { phases, batch }));
                }
                ABORTED | CANCELLED => return Poll::Ready(Err(SubmitError::ShuttingDown)),
                _ if attempt == 0 => {
                    // Register, then look again, so a completion in between is not missed.
                    this.job.waker.register(cx.waker());
                }
                _ => {}
            }
        }
        Poll::Pending
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.job.state.transition(QUEUED, CANCELLED) {
            self.batcher.metrics.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// An execution under way on one instance.
#[derive(Debug)]
struct Running {
    end: Instant,
    jobs: Vec<Held>,
    /// Elements in the execution.
    batch: u32,
    /// compute_input, compute_infer, compute_output.
    phases_ns: [u64; 3],
}

#[derive(Debug)]
struct Instance {
    /// When the instance last became free (the end of its previous execution).
    free_at: Instant,
    running: Option<Running>,
}

/// What the scheduler does with the queue head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// Nothing queued.
    Empty,
    /// Run the first `.0` queued requests; the batch became ready at `.1`.
    Send(usize, Instant),
    /// Hold the queue until `t` (the oldest request's queue delay) unless more arrive.
    WaitUntil(Instant),
}

struct BatchLoop {
    cfg: BatcherConfig,
    rx: mpsc::Receiver<Msg>,
    epoch: Instant,
    metrics: Arc<ModelMetrics>,
    queue: VecDeque<Held>,
    instances: Vec<Instance>,
    /// Emptied job vectors of finished executions, reused for the next ones.
    spare: Vec<Vec<Held>>,
    /// A `LevelLength` message arrived.
    stopped: bool,
}

/// Longest the loop waits without looking at the shutdown flag.
const SHUTDOWN_POLL: Duration = Duration::from_millis(50);

impl BatchLoop {
    /// The scheduler thread: advance, then wait for the next decision time or arrival.
    fn run(mut self, shutdown: &watch::Receiver<bool>) {
        let mut inbox_open = true;
        loop {
            inbox_open &= self.drain_inbox();
            if self.stopped || *shutdown.borrow() {
                break;
            }
            let next = self.advance(Instant::now());
            if next.is_none() && !inbox_open {
                return; // idle, and nobody can submit any more
            }
            let wait = next
                .map_or(SHUTDOWN_POLL, |t| {
                    t.saturating_duration_since(Instant::now())
                })
                .min(SHUTDOWN_POLL);
            if wait.is_zero() {
                continue;
            }
            if !inbox_open || (next.is_some() && self.all_busy()) {
                // With every instance busy, arrivals cannot change the next decision: let them
                // pile up in the channel instead of waking the thread once per request.
                std::thread::sleep(wait);
                continue;
            }
            match self.rx.recv_timeout(wait) {
                Ok(Msg::Job(job)) => self.queue.push_back(job),
                Ok(Msg::Stop) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => inbox_open = false,
            }
        }
        self.abort_all();
    }

    /// Moves everything submitted so far into the queue; false once no handle is left.
    fn drain_inbox(&mut self) -> bool {
        loop {
            match self.rx.try_recv() {
                Ok(Msg::Job(job)) => self.queue.push_back(job),
                Ok(Msg::Stop) => self.stopped = true,
                Err(mpsc::TryRecvError::Empty) => return true,
                Err(mpsc::TryRecvError::Disconnected) => return false,
            }
        }
    }

    fn all_busy(&self) -> bool {
        self.instances.iter().all(|i| i.running.is_some())
    }

    fn at(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// Brings the scheduler to time `now`: completes executions that ended, starts batches on
    /// free instances, and returns when it next needs to run (an execution's end or the queue
    /// delay of the oldest request); `None` when idle until the next arrival.
    fn advance(&mut self, now: Instant) -> Option<Instant> {
        for i in 0..self.instances.len() {
            let ended = matches!(&self.instances[i].running, Some(r) if r.end <= now);
            if ended && let Some(run) = self.instances[i].running.take() {
                self.instances[i].free_at = run.end;
                // Counted when it ends, as a Triton backend reports it.
                let [input, infer, output] = run.phases_ns;
                self.metrics
                    .record_execution(run.batch, input, infer, output);
                self.finish(run.jobs);
            }
        }
        // Requests whose client left are dropped from the queue here, not counted in batches.
        self.queue.retain(|j| j.0.state.get() == QUEUED);
        let mut wait = None;
        while let Some(inst) = self.free_instance() {
            match self.decide(now) {
                Decision::Empty => break,
                Decision::WaitUntil(t) => {
                    wait = Some(t);
                    break;
                }
                Decision::Send(n, ready_at) => self.start(inst, n, ready_at, now),
            }
        }
        self.instances
            .iter()
            .filter_map(|i| i.running.as_ref().map(|r| r.end))
            .chain(wait)
            .min()
    }

    /// The free instance that has been free the longest.
    fn free_instance(&self) -> Option<usize> {
        self.instances
            .iter()
            .enumerate()
            .filter(|(_, i)| i.running.is_none())
            .min_by_key(|(_, i)| i.free_at)
            .map(|(idx, _)| idx)
    }

    fn decide(&self, now: Instant) -> Decision {
        let Some(Held(head)) = self.queue.front() else {
            return Decision::Empty;
        };
        let head_at = self.at(head.submitted_ns);
        let Some(db) = &self.cfg.dynamic else {
            return Decision::Send(1, head_at);
        };
        let max = self.cfg.max_batch;
        let preferred_max = db
            .preferred_batch_size
            .iter()
            .map(|&p| p.max(1) as u32)
            .max()
            .map_or(max, |p| p.min(max));
        let (mut total, mut n, mut newest) = (0u32, 0usize, head.submitted_ns);
        let mut best: Option<(usize, u64)> = None;
        let mut blocker: Option<u64> = None;
        for Held(job) in &self.queue {
            if total + job.batch > max {
                blocker = Some(job.submitted_ns);
                break;
            }
            total += job.batch;
            n += 1;
            newest = newest.max(job.submitted_ns);
            if db
                .preferred_batch_size
                .iter()
                .any(|&p| p as i64 == i64::from(total))
            {
                best = Some((n, newest));
            }
            if total >= preferred_max {
                break;
            }
        }
        let delay = Duration::from_micros(db.max_queue_delay_us);
        let expiry = head_at + delay;
        let newest_at = self.at(newest);
        if n == 0 {
            // Cannot happen for validated requests (each fits alone); run the head anyway.
            return Decision::Send(1, head_at);
        }
        if total >= preferred_max {
            return Decision::Send(n, newest_at);
        }
        if let Some(b) = blocker {
            // Full: it became sendable when the request that does not fit arrived (or at the
            // queue delay, if that came first).
            let trigger = if delay.is_zero() {
                newest_at
            } else {
                self.at(b).min(expiry)
            };
            return Decision::Send(n, newest_at.max(trigger));
        }
        if let Some((bn, bnewest)) = best {
            return Decision::Send(bn, self.at(bnewest));
        }
        if delay.is_zero() {
            return Decision::Send(n, newest_at);
        }
        if now >= expiry {
            return Decision::Send(n, newest_at.max(expiry));
        }
        Decision::WaitUntil(expiry)
    }

    /// Starts the first `n` queued requests as one execution on instance `inst`.
    fn start(&mut self, inst: usize, n: usize, ready_at: Instant, now: Instant) {
        let mut jobs = self.spare.pop().unwrap_or_default();
        let mut batch = 0u32;
        for held in self.queue.drain(..n.min(self.queue.len())) {
            // A requester may leave between the queue check and now; it just drops out.
            if held.0.state.transition(QUEUED, RUNNING) {
                batch += held.0.batch;
                jobs.push(held);
            }
        }
        if jobs.is_empty() {
            self.spare.push(jobs);
            return;
        }
        self.metrics
            .pending
            .fetch_sub(jobs.len() as i64, Ordering::AcqRel);
        let mut start = self.instances[inst].free_at.max(ready_at);
        if now.saturating_duration_since(start) > MAX_CATCH_UP {
            start = now;
        }
        let (input_us, infer_us, output_us) = self.cfg.timing.phases_us(batch);
        // The simulated GPU is busy for the whole execution.
        let busy_us = input_us + infer_us + output_us;
        self.metrics
            .engine
            .busy_ns
            .fetch_add(busy_us.saturating_mul(1000), Ordering::Relaxed);
        let input_end = start + Duration::from_micros(input_us);
        let infer_end = input_end + Duration::from_micros(infer_us);
        let end = infer_end + Duration::from_micros(output_us);
        let times = [start, input_end, infer_end, end].map(|t| self.ns(t));
        for Held(job) in &jobs {
            for (slot, t) in job.times_ns.iter().zip(times) {
                slot.store(t, Ordering::Release);
            }
            job.exec_batch.store(batch, Ordering::Release);
        }

        self.metrics
            .running
            .fetch_add(jobs.len() as i64, Ordering::Relaxed);
        self.instances[inst].running = Some(Running {
            end,
            jobs,
            batch,
            phases_ns: [input_us * 1000, infer_us * 1000, output_us * 1000],
        });
    }

    /// An execution ended: its requests get their outputs.
    fn finish(&mut self, mut jobs: Vec<Held>) {
        self.metrics
            .running
            .fetch_sub(jobs.len() as i64, Ordering::Relaxed);
        for Held(job) in &jobs {
            if job.state.transition(RUNNING, DONE) {
                job.waker.wake();
            }
        }
        jobs.clear();
        self.spare.push(jobs);
    }

    /// Shutdown: everything queued or executing fails (dropping a [`Held`] does that).
    /// Requests submitted after this fail when the loop's end closes the channel, or when the
    /// channel drops their message.
    fn abort_all(&mut self) {
        self.drain_inbox();
        self.queue.clear();
        for inst in &mut self.instances {
            inst.running = None;
        }
        self.metrics.running.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::task::noop_waker_ref;

    /// Drives a batcher on a virtual clock: no sleeping, exact times (µs after `t0`).
    struct Virtual {
        batcher: Arc<Batcher>,
        lp: BatchLoop,
        metrics: Arc<ModelMetrics>,
        t0: Instant,
    }

    impl Virtual {
        fn new(max_batch: u32, dynamic: Option<(&[i32], u64)>, timing: TensorTiming) -> Self {
            let metrics = Arc::new(ModelMetrics::with_batch_stats("m", "1", max_batch));
            let cfg = config(max_batch, dynamic, timing);
            let (batcher, lp) = Batcher::parts(cfg, metrics.clone());
            let t0 = lp.epoch;
            Virtual {
                batcher,
                lp,
                metrics,
                t0,
            }
        }

        fn at(&self, us: u64) -> Instant {
            self.t0 + Duration::from_micros(us)
        }

        fn us(&self, t: Instant) -> u64 {
            t.duration_since(self.t0).as_micros() as u64
        }

        fn submit(&self, batch: u32, at_us: u64) -> Ticket {
            self.batcher
                .submit_at(batch, self.at(at_us))
                .expect("submit")
        }

        /// One scheduler pass at `at_us`; the next wake-up in µs.
        fn advance(&mut self, at_us: u64) -> Option<u64> {
            self.lp.drain_inbox();
            let next = self.lp.advance(self.at(at_us));
            next.map(|t| self.us(t))
        }

        /// Runs every wake-up from `from_us` until idle.
        fn run_from(&mut self, from_us: u64) {
            let mut now = from_us;
            while let Some(next) = self.advance(now) {
                now = next.max(now);
            }
        }

        fn exec_count(&self) -> u64 {
            self.metrics.exec_count.load(Ordering::Relaxed)
        }
    }

    /// An unbounded queue in front of `max_batch` elements; `dynamic` is `(preferred sizes,
    /// queue delay µs)`.
    fn config(
        max_batch: u32,
        dynamic: Option<(&[i32], u64)>,
        timing: TensorTiming,
    ) -> BatcherConfig {
        BatcherConfig {
            max_batch,
            dynamic: dynamic.map(|(p, d)| DynamicBatching {
                preferred_batch_size: p.to_vec(),
                max_queue_delay_us: d,
            }),
            timing,
            max_queue: 0,
        }
    }

    /// `(start, end, execution batch)` in µs of a finished ticket.
    fn done(v: &Virtual, t: &mut Ticket) -> (u64, u64, u32) {
        let mut cx = Context::from_waker(noop_waker_ref());
        match Pin::new(t).poll(&mut cx) {
            Poll::Ready(Ok(ExecTimes {
                phases: [start, .., end],
                batch,
            })) => (v.us(start), v.us(end), batch),
            other => panic!("ticket not done: {other:?}"),
        }
    }

    fn pending(t: &mut Ticket) -> bool {
        let mut cx = Context::from_waker(noop_waker_ref());
        Pin::new(t).poll(&mut cx).is_pending()
    }

    /// 2000 + 500 × b of compute, nothing else: easy arithmetic.
    fn simple() -> TensorTiming {
        TensorTiming::new([2000, 500, 0, 0], 1)
    }

    #[test]
    fn without_dynamic_batching_requests_run_one_by_one() {
        let mut v = Virtual::new(8, None, simple());
        let mut ts: Vec<_> = (0..3).map(|_| v.submit(1, 0)).collect();
        v.run_from(0);
        let got: Vec<_> = ts.iter_mut().map(|t| done(&v, t)).collect();
        assert_eq!(got, vec![(0, 2500, 1), (2500, 5000, 1), (5000, 7500, 1)]);
        assert_eq!(v.exec_count(), 3);
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn busy_instance_lets_the_queue_grow_into_one_batch() {
        // No preferred sizes, no delay: the first request runs alone, the 7 that arrive while it
        // runs go together, as a Triton dynamic batcher with an instance busy does.
        let mut v = Virtual::new(8, Some((&[], 0)), simple());
        let mut a = v.submit(1, 0);
        assert_eq!(v.advance(0), Some(2500));
        let mut rest: Vec<_> = (1..8).map(|i| v.submit(1, i * 100)).collect();
        assert_eq!(v.advance(700), Some(2500), "instance busy: nothing starts");
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 7);
        v.run_from(2500);
        assert_eq!(done(&v, &mut a), (0, 2500, 1));
        for t in &mut rest {
            // 2000 + 500 × 7
            assert_eq!(done(&v, t), (2500, 8000, 7));
        }
        assert_eq!(v.exec_count(), 2);
        let s = v.metrics.stats_json();
        assert_eq!(s["execution_count"], 2);
        assert_eq!(s["batch_stats"][0]["batch_size"], 1);
        assert_eq!(s["batch_stats"][1]["batch_size"], 7);
        assert_eq!(s["batch_stats"][1]["compute_infer"]["ns"], 5_500_000u64);
    }

    #[test]
    fn queue_delay_holds_a_lone_request_then_sends_what_came() {
        let mut v = Virtual::new(8, Some((&[], 1000)), simple());
        let mut a = v.submit(1, 0);
        assert_eq!(v.advance(0), Some(1000), "waits for the queue delay");
        let mut b = v.submit(1, 400);
        assert_eq!(v.advance(400), Some(1000), "still below max: keep waiting");
        v.run_from(1000);
        assert_eq!(done(&v, &mut a), (1000, 4000, 2));
        assert_eq!(done(&v, &mut b), (1000, 4000, 2));
        assert_eq!(v.exec_count(), 1);
    }

    #[test]
    fn preferred_size_goes_at_once_and_max_size_too() {
        let mut v = Virtual::new(8, Some((&[4], 10_000)), simple());
        let mut ts: Vec<_> = (0..5).map(|i| v.submit(1, i * 10)).collect();
        // 5 queued, preferred 4 is the largest preferred size: the first 4 go when the 4th
        // arrived (t = 30), without waiting the 10 ms delay; the 5th waits for its delay.
        v.advance(40);
        assert!(pending(&mut ts[4]));
        v.run_from(40);
        for t in &mut ts[..4] {
            assert_eq!(done(&v, t), (30, 30 + 4000, 4));
        }
        assert_eq!(done(&v, &mut ts[4]), (10_040, 10_040 + 2500, 1));

        // Requests of 3 elements with max 8: the third does not fit, so the first two (6) go
        // when it arrives, not at the delay.
        let mut v = Virtual::new(8, Some((&[], 10_000)), simple());
        let mut ts: Vec<_> = (0..3).map(|i| v.submit(3, i * 100)).collect();
        v.run_from(200);
        assert_eq!(done(&v, &mut ts[0]), (200, 200 + 5000, 6));
        assert_eq!(done(&v, &mut ts[2]), (10_200, 10_200 + 3500, 3));
    }

    #[test]
    fn compute_grows_with_batch_and_phases_add_up() {
        let timing = TensorTiming::new([2000, 500, 100, 10], 1);
        let mut v = Virtual::new(16, None, timing);
        let mut ts: Vec<_> = [1, 4, 16].iter().map(|&b| v.submit(b, 0)).collect();
        v.run_from(0);
        let lens: Vec<u64> = ts
            .iter_mut()
            .map(|t| done(&v, t))
            .map(|(s, e, _)| e - s)
            .collect();
        assert_eq!(lens, vec![2610, 4440, 11_760]);
        let s = v.metrics.stats_json();
        assert_eq!(s["execution_count"], 3);
        let b16 = &s["batch_stats"][2];
        assert_eq!(b16["batch_size"], 16);
        assert_eq!(b16["compute_input"]["ns"], 1_600_000u64);
        assert_eq!(b16["compute_infer"]["ns"], 10_000_000u64);
        assert_eq!(b16["compute_output"]["ns"], 160_000u64);
    }

    #[test]
    fn instances_run_in_parallel() {
        let mut v = Virtual::new(
            8,
            None,
            TensorTiming {
                instance_count: 2,
                ..simple()
            },
        );
        let mut ts: Vec<_> = (0..4).map(|_| v.submit(1, 0)).collect();
        v.run_from(0);
        let got: Vec<_> = ts.iter_mut().map(|t| done(&v, t)).collect();
        assert_eq!(
            got,
            vec![(0, 2500, 1), (0, 2500, 1), (2500, 5000, 1), (2500, 5000, 1)]
        );
    }

    #[test]
    fn cancelled_requests_leave_the_queue_and_shutdown_aborts() {
        let mut v = Virtual::new(8, None, simple());
        let mut a = v.submit(1, 0);
        let b = v.submit(1, 0);
        let mut c = v.submit(1, 0);
        v.advance(0);
        drop(b);
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 1);
        v.run_from(2500);
        assert_eq!(done(&v, &mut a), (0, 2500, 1));
        assert_eq!(done(&v, &mut c), (2500, 5000, 1));
        assert_eq!(v.exec_count(), 2);

        let mut d = v.submit(1, 6000);
        let mut e = v.submit(1, 6000);
        v.advance(6000);
        v.lp.abort_all();
        let mut cx = Context::from_waker(noop_waker_ref());
        for t in [&mut d, &mut e] {
            assert!(matches!(
                Pin::new(t).poll(&mut cx),
                Poll::Ready(Err(SubmitError::ShuttingDown))
            ));
        }
        assert_eq!(v.metrics.pending.load(Ordering::Relaxed), 0);
        // A request still in the channel when the loop goes away fails too, and later ones are
        // refused.
        let mut f = v.submit(1, 7000);
        let Virtual {
            batcher,
            lp,
            metrics,
            ..
        } = v;
        drop(lp);
        assert!(matches!(
            Pin::new(&mut f).poll(&mut cx),
            Poll::Ready(Err(SubmitError::ShuttingDown))
        ));
        assert_eq!(metrics.pending.load(Ordering::Relaxed), 0);
        assert_eq!(batcher.submit(1).err(), Some(SubmitError::ShuttingDown));
    }

    #[test]
    fn late_wakeups_keep_the_schedule() {
        // The loop wakes 700 µs after each execution ended: the next execution still starts at
        // the previous end, so throughput does not depend on timer resolution.
        let mut v = Virtual::new(8, None, simple());
        let mut ts: Vec<_> = (0..3).map(|_| v.submit(1, 0)).collect();
        let mut now = 0;
        while let Some(next) = v.advance(now) {
            now = next + 700;
        }
        let ends: Vec<u64> = ts.iter_mut().map(|t| done(&v, t).1).collect();
        assert_eq!(ends, vec![2500, 5000, 7500]);
    }

    #[test]
    fn queue_limit() {
        let metrics = Arc::new(ModelMetrics::with_batch_stats("m", "1", 8));
        let cfg = BatcherConfig {
            max_queue: 1,
            ..config(8, None, simple())
        };
        let (b, _lp) = Batcher::parts(cfg, metrics);
        let _a = b.submit(1).expect("a");
        assert_eq!(b.submit(1).err(), Some(SubmitError::QueueFull));
    }

    #[tokio::test]
    async fn real_clock_execution() {
        let metrics = Arc::new(ModelMetrics::with_batch_stats("m", "1", 8));
        let (_stop, rx) = watch::channel(false);
        let cfg = config(8, Some((&[], 0)), simple());
        let (b, _task) = Batcher::spawn(cfg, metrics.clone(), rx);
        let t0 = Instant::now();
        let tickets: Vec<_> = (0..4).map(|_| b.submit(1).expect("submit")).collect();
        let mut batches = Vec::new();
        for t in tickets {
            let e = t.await.expect("done");
            assert!(e.phases[3] - e.phases[0] >= Duration::from_micros(2500));
            batches.push(e.batch);
        }
        // Sleeps never end early, so the lower bound is exact; the upper bound only catches a
        // stuck loop on a loaded machine.
        let took = t0.elapsed();
        assert!(took >= Duration::from_micros(2500), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(batches.iter().all(|&b| (1..=4).contains(&b)), "{batches:?}");
        let s = metrics.stats_json();
        assert!(
            s["execution_count"]
                .as_u64()
                .is_some_and(|n| (1..=4).contains(&n))
        );
        assert_eq!(metrics.pending.load(Ordering::Relaxed), 0);
    }
}
