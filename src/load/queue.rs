//! Finished requests on their way to a collector thread, without waking it per request: workers
//! push onto a lock-free queue and the collector drains it in batches, napping briefly when it
//! is empty. (A blocking channel costs a futex wake-up and a context switch per request, which
//! showed up as a tenth of the client's CPU at ten thousand requests a second.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;

use super::Completed;

/// How long an idle collector naps before looking again.
const NAP: Duration = Duration::from_micros(500);

struct Inner {
    queue: SegQueue<Completed>,
    senders: AtomicUsize,
}

/// The sending side; cloned per worker. The queue closes when every sender is dropped.
pub struct RecordSink {
    inner: Arc<Inner>,
}

/// The receiving side.
pub struct RecordSource {
    inner: Arc<Inner>,
}

/// Why no record was returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Empty {
    /// Nothing arrived in time; senders remain.
    Timeout,
    /// Every sender is gone and the queue is drained.
    Closed,
}

/// A new queue.
pub fn record_queue() -> (RecordSink, RecordSource) {
    let inner = Arc::new(Inner {
        queue: SegQueue::new(),
        senders: AtomicUsize::new(1),
    });
    (
        RecordSink {
            inner: inner.clone(),
        },
        RecordSource { inner },
    )
}

impl Clone for RecordSink {
    fn clone(&self) -> Self {
        self.inner.senders.fetch_add(1, Ordering::Relaxed);
        RecordSink {
            inner: self.inner.clone(),
        }
    }
}

impl Drop for RecordSink {
    fn drop(&mut self) {
        self.inner.senders.fetch_sub(1, Ordering::Release);
    }
}

impl std::fmt::Debug for RecordSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordSink")
            .field("queued", &self.inner.queue.len())
            .finish()
    }
}

impl RecordSink {
    /// Queues a finished request (never blocks).
    pub fn send(&self, c: Completed) {
        self.inner.queue.push(c);
    }
}

impl RecordSource {
    /// The next record, waiting up to `timeout` (napping, not spinning) for one.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Completed, Empty> {
        // A busy collector finds records waiting: no clock read for those.
        if let Some(c) = self.inner.queue.pop() {
            return Ok(c);
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(c) = self.inner.queue.pop() {
                return Ok(c);
            }
            // Senders decrement after their last push, so a zero count seen here with an empty
            // queue (checked again below) means nothing more will come.
            if self.inner.senders.load(Ordering::Acquire) == 0 {
                return self.inner.queue.pop().ok_or(Empty::Closed);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Empty::Timeout);
            }
            std::thread::sleep(NAP.min(deadline - now));
        }
    }

    /// The next record, waiting as long as it takes; `None` once closed and drained.
    pub fn recv(&self) -> Option<Completed> {
        loop {
            match self.recv_timeout(Duration::from_secs(3600)) {
                Ok(c) => return Some(c),
                Err(Empty::Closed) => return None,
                Err(Empty::Timeout) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Phase, RequestRecord};

    fn completed(seq: u64) -> Completed {
        Completed {
            record: RequestRecord {
                phase: Phase::Measure,
                seq,
                prompt_index: 0,
                intended_ns: 0,
                sent_ns: 0,
                send_done_ns: None,
                first_byte_ns: None,
                first_token_ns: None,
                second_token_ns: None,
                last_token_ns: None,
                end_ns: 0,
                isl: 0,
                osl: 0,
                server_osl: None,
                requested_osl: 0,
                chunks: 0,
                responses: 0,
                lossy_text: false,
                error: None,
            },
            gaps: Vec::new(),
        }
    }

    #[test]
    fn delivers_everything_then_closes() {
        let (tx, rx) = record_queue();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        tx.send(completed(t * 1000 + i));
                    }
                })
            })
            .collect();
        drop(tx);
        let mut seen = 0;
        while rx.recv().is_some() {
            seen += 1;
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(seen, 4000);
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(1)).unwrap_err(),
            Empty::Closed
        );
    }

    #[test]
    fn times_out_while_senders_remain() {
        let (tx, rx) = record_queue();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(2)).unwrap_err(),
            Empty::Timeout
        );
        tx.send(completed(7));
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(2))
                .unwrap()
                .record
                .seq,
            7
        );
    }
}
