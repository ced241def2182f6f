//! Releases open-loop requests at their scheduled times. A dedicated thread walks the schedule
//! ([`super::pacer::Pacer`]) with fine-grained sleeps (timer slack lowered to the minimum on
//! Linux, so wake-ups land within tens of microseconds rather than the async runtime's 1 ms
//! timer), and hands each due request to the worker pool through a lock-free queue. A request
//! released while every worker is busy waits in the queue; that wait is counted, because it is
//! exactly the delay an in-flight cap adds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam_queue::SegQueue;
use tokio::sync::Notify;

use super::pacer::Pacer;
use super::{Halt, Interrupt};
use crate::load::LevelLength;
use crate::record::Clock;

/// A request that is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// Sequence number within the phase.
    pub seq: u64,
    /// When the schedule wanted it sent (run clock, ns).
    pub intended_ns: u64,
    /// When the pacer released it to the pool.
    pub released_ns: u64,
    /// Every worker was busy when it was released: a wait for pickup is the in-flight cap's
    /// doing (otherwise it is only the runtime waking an idle worker, already in the send lag).
    pub all_busy: bool,
}

/// Due requests waiting for a worker.
#[derive(Debug, Default)]
pub struct Tickets {
    queue: SegQueue<Ticket>,
    notify: Notify,
    done: AtomicBool,
    /// Latest time a worker took a request to send it (ns), for the achieved rate: a release
    /// only queues the request, and a queue nobody drains must not look like a rate kept.
    pub last_send_ns: AtomicU64,
    /// Latest intended send time released (ns): what the schedule itself asked for over the
    /// same requests, so a random schedule's own variation is not blamed on the generator.
    pub last_intended_ns: AtomicU64,
    /// Workers serving this queue (the in-flight cap); 0 = unknown, never counted as full.
    pub workers: AtomicUsize,
    /// Workers executing a request now.
    pub busy: AtomicUsize,
}

/// Releases earlier than this before the intended time do not sleep: the thread would wake up
/// later than that anyway.
const EARLY_NS: u64 = 20_000;

/// The longest single sleep, so a stop is noticed promptly even between distant sends.
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// Due requests that may wait for a worker before the pacer waits too. Past it the server is
/// not absorbing the rate (every worker of the in-flight cap busy for this many releases):
/// further requests are released late instead of queueing without bound, keep their intended
/// times (so their latencies still count the wait), and the send lag and the in-flight-cap
/// count in the verdict say so. 32 bytes a request: 2 MB.
const MAX_BACKLOG: usize = 65_536;

/// How often a pacer held by a full backlog looks again.
const BACKLOG_NAP: Duration = Duration::from_micros(500);

impl Tickets {
    /// The next due request; `None` once the schedule is exhausted (or stopped) and the queue
    /// is empty. Waits while the schedule has nothing due.
    pub async fn next(&self, halt: &Halt, interrupt: &Interrupt) -> Option<Ticket> {
        // Fast path: a due request is waiting, no need to register as a waiter.
        if let Some(t) = self.queue.pop() {
            return Some(t);
        }
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before looking, so a release between the look and the wait is not missed.
            notified.as_mut().enable();
            if let Some(t) = self.queue.pop() {
                return Some(t);
            }
            if self.done.load(Ordering::Acquire) {
                return None;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = halt.wait() => return None,
                _ = interrupt.wait_stop() => return None,
            }
        }
    }

    fn release(&self, mut t: Ticket) {
        let workers = self.workers.load(Ordering::Relaxed);
        t.all_busy = workers > 0 && self.busy.load(Ordering::Relaxed) >= workers;
        self.last_intended_ns
            .fetch_max(t.intended_ns, Ordering::Relaxed);
        self.queue.push(t);
        // The worker that went idle last takes it: its connection is the warmest, and a pool
        // larger than the load then opens connections only as the load needs them (the oldest
        // waiter would be a worker that never sent, with a connection still to open).
        self.notify.notify_last();
    }

    fn finish(&self) {
        self.done.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Requests released but not yet picked up.
    pub fn backlog(&self) -> usize {
        self.queue.len()
    }
}

/// What the pacer thread needs.
#[derive(Debug)]
pub struct PacerRun {
    /// The schedule.
    pub pacer: Pacer,
    /// Phase start on the run clock.
    pub start_ns: u64,
    /// Time base.
    pub clock: Clock,
    /// Request budget or time window.
    pub stop: LevelLength,
    /// End of the time window, if any.
    pub deadline: Option<u64>,
    /// Run-wide stop.
    pub interrupt: Interrupt,
    /// Phase stop.
    pub halt: Halt,
}

/// Starts the pacer thread.
pub fn spawn(run: PacerRun, tickets: Arc<Tickets>) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("pacer".into())
        .spawn(move || pace(run, &tickets))
}

fn pace(mut run: PacerRun, tickets: &Tickets) {
    lower_timer_slack();
    'schedule: loop {
        if run.interrupt.stopping() || run.halt.halted() {
            break;
        }
        let Some((seq, offset)) = run.pacer.next_send() else {
            break;
        };
        if let Some(n) = run.stop.requests()
            && seq >= n
        {
            break;
        }
        let intended = run.start_ns + offset;
        if run.deadline.is_some_and(|d| intended >= d) {
            break;
        }
        while tickets.backlog() >= MAX_BACKLOG {
            if run.interrupt.stopping() || run.halt.halted() {
                break 'schedule;
            }
            std::thread::sleep(BACKLOG_NAP);
        }
        loop {
            let now = run.clock.now_ns();
            if now + EARLY_NS >= intended {
                tickets.release(Ticket {
                    seq,
                    intended_ns: intended,
                    released_ns: now.max(intended),
                    all_busy: false,
                });
                break;
            }
            std::thread::sleep(Duration::from_nanos(intended - now - EARLY_NS).min(MAX_SLEEP));
            if run.interrupt.stopping() || run.halt.halted() {
                break 'schedule;
            }
        }
    }
    tickets.finish();
}

/// Asks Linux for the finest timer slack on this thread (default 50 µs), so short sleeps end on
/// time; elsewhere this does nothing and sleeps are as precise as the platform makes them.
fn lower_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Arrival;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn releases_on_schedule_and_finishes() {
        let clock = Clock::start();
        let tickets = Arc::new(Tickets::default());
        let start = clock.now_ns() + 5_000_000;
        let run = PacerRun {
            pacer: Pacer::new(1000.0, Arrival::Constant, 0),
            start_ns: start,
            clock,
            stop: LevelLength::Requests(50),
            deadline: None,
            interrupt: Interrupt::new(),
            halt: Halt::new(),
        };
        let h = spawn(run, tickets.clone()).unwrap();
        let (halt, interrupt) = (Halt::new(), Interrupt::new());
        let mut got = Vec::new();
        while let Some(t) = tickets.next(&halt, &interrupt).await {
            got.push((t, clock.now_ns()));
        }
        h.join().unwrap();
        assert_eq!(got.len(), 50);
        for (i, (t, picked)) in got.iter().enumerate() {
            assert_eq!(t.seq, i as u64);
            assert_eq!(t.intended_ns, start + i as u64 * 1_000_000);
            assert!(
                t.released_ns + 1 >= t.intended_ns,
                "never released early by more than {EARLY_NS} ns"
            );
            assert!(*picked >= t.intended_ns.saturating_sub(EARLY_NS));
        }
        // Generous: a loaded 2-core machine can delay a thread, but the median stays tight.
        let mut lags: Vec<u64> = got
            .iter()
            .map(|(t, p)| p.saturating_sub(t.intended_ns))
            .collect();
        lags.sort_unstable();
        assert!(
            lags[lags.len() / 2] < 2_000_000,
            "median release lag {} ns",
            lags[lags.len() / 2]
        );
    }

    /// Nobody takes the released requests: the backlog stops at its bound instead of growing
    /// with the schedule, and the pacer still stops when told.
    #[test]
    fn the_backlog_is_bounded() {
        let clock = Clock::start();
        let tickets = Arc::new(Tickets::default());
        let interrupt = Interrupt::new();
        let run = PacerRun {
            pacer: Pacer::new(2e6, Arrival::Constant, 0),
            start_ns: clock.now_ns(),
            clock,
            stop: LevelLength::Requests(u64::MAX),
            deadline: None,
            interrupt: interrupt.clone(),
            halt: Halt::new(),
        };
        let h = spawn(run, tickets.clone()).unwrap();
        // 2 M/s for 0.3 s would be 600 000 tickets.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(tickets.backlog(), MAX_BACKLOG);
        interrupt.stop_sending();
        h.join().unwrap();
        assert_eq!(tickets.backlog(), MAX_BACKLOG);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stop_ends_a_long_schedule_promptly() {
        let clock = Clock::start();
        let tickets = Arc::new(Tickets::default());
        let interrupt = Interrupt::new();
        let run = PacerRun {
            pacer: Pacer::new(0.5, Arrival::Constant, 0),
            start_ns: clock.now_ns(),
            clock,
            stop: LevelLength::Requests(u64::MAX),
            deadline: None,
            interrupt: interrupt.clone(),
            halt: Halt::new(),
        };
        let h = spawn(run, tickets.clone()).unwrap();
        let first = tickets.next(&Halt::new(), &interrupt).await;
        assert_eq!(first.map(|t| t.seq), Some(0));
        let t0 = std::time::Instant::now();
        interrupt.stop_sending();
        assert_eq!(tickets.next(&Halt::new(), &interrupt).await, None);
        h.join().unwrap();
        assert!(
            t0.elapsed() < Duration::from_millis(500),
            "the 2 s gap was cut short"
        );
    }
}
