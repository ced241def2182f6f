//! Finished requests on their way to a collector thread, without waking it per request: workers
//! push onto a lock-free queue and the collector drains it in batches, napping briefly when it
//! is empty. (A blocking channel costs a futex wake-up and a context switch per request, which
//! showed up as a tenth of the client's CPU at ten thousand requests a second.)
//!
//! The queue is bounded ([`CAPACITY`] records). A collector that falls behind (a slow disk under
//! `requests.jsonl` or the raw export, a starved thread) fills it, and then the next worker to
//! finish a request waits for room before it sends another: the load is held back instead of
//! memory growing with the request count, and nothing is dropped. Each wait is counted
//! ([`Held`]); the level's verdict says how long the load was held and calls it not trustworthy,
//! since the server then saw less load than asked.
//!
//! Output tokens are counted here too, on the receiving thread: a worker hands over the
//! request's text ([`RecordSink::send_counting`]) and goes on to its next request, and the
//! record comes out of [`RecordSource::recv`] with its `osl` set, counted once over the whole
//! text exactly as the worker would have. The text buffers come back to the workers through a
//! pool, so this costs no allocation once warm.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use tokio::sync::Notify;

use super::Completed;
use crate::workload::scored::AnswerKey;
use crate::workload::tokenizer::Tokenizer;

/// How long an idle collector naps before looking again: records wait at most this long
/// (their times were taken by the workers), and each nap is a context switch.
const NAP: Duration = Duration::from_millis(2);

/// Records the queue holds before senders wait. At 50 000 requests a second this is 80 ms of
/// the collector's work, far more than a healthy collector ever lags (it drains every
/// [`NAP`]); each waiting record holds its gap list and text (and, with the raw export, its
/// response capture), so this also bounds that memory.
pub const CAPACITY: usize = 4096;

/// A waiting sender looks again at least this often, should a wake-up be missed.
const RECHECK: Duration = Duration::from_millis(1);

struct Inner {
    queue: ArrayQueue<Item>,
    senders: AtomicUsize,
    /// Text buffers on their way back to the workers.
    texts: ArrayQueue<String>,
    /// Counts the text sent with records (set by the first such record).
    tokenizer: OnceLock<Tokenizer>,
    /// Grades the text of scored requests (set by the first record sent with one).
    answers: OnceLock<Arc<AnswerKey>>,
    /// Senders waiting for room; the receiver wakes them after taking records.
    waiting: AtomicUsize,
    room: Notify,
    /// Sends that had to wait, their total and longest wait (ns).
    held_sends: AtomicU64,
    held_ns: AtomicU64,
    longest_hold_ns: AtomicU64,
}

/// A finished request, with its output text when its tokens are still to be counted.
struct Item {
    done: Completed,
    text: Option<String>,
    /// Where the reasoning ends in `text` (0: none; see [`crate::client::Exchange::reasoning_end`]).
    reasoning_end: usize,
    /// `osl` holds the server's count (`--use-server-token-count`): the text's count is recorded
    /// next to it, not instead.
    keep_server: bool,
}

/// Text buffers kept for reuse (one per worker in flight is enough; more are dropped).
const TEXT_POOL: usize = 4096;

/// Records waiting beyond which senders count their own tokens.
const BEHIND: usize = 1024;

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

/// How long senders waited for room in the queue: the collector could not keep up and the load
/// was held back by that long.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Sends that waited.
    pub sends: u64,
    /// Their waits added up (ns).
    pub total_ns: u64,
    /// The longest single wait (ns).
    pub longest_ns: u64,
}

/// A new queue.
pub fn record_queue() -> (RecordSink, RecordSource) {
    let inner = Arc::new(Inner {
        queue: ArrayQueue::new(CAPACITY),
        senders: AtomicUsize::new(1),
        texts: ArrayQueue::new(TEXT_POOL),
        tokenizer: OnceLock::new(),
        answers: OnceLock::new(),
        waiting: AtomicUsize::new(0),
        room: Notify::new(),
        held_sends: AtomicU64::new(0),
        held_ns: AtomicU64::new(0),
        longest_hold_ns: AtomicU64::new(0),
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
    /// Queues a finished request; waits for room when the queue is full (see the module's
    /// notes), never drops it.
    pub async fn send(&self, c: Completed) {
        self.push(Item {
            done: c,
            text: None,
            reasoning_end: 0,
            keep_server: false,
        })
        .await;
    }

    /// Queues a finished request whose output tokens are to be counted: the receiver sets its
    /// `tokenizer_osl` (and its `osl`, unless `keep_server`) to `tokenizer`'s count of `text`
    /// (every sender of a queue uses one tokenizer), and its `reasoning_tokens` to the count of
    /// `text[..reasoning_end]` when `reasoning_end > 0`; with an answer key (a scored workload,
    /// one key a queue) it grades the text too (the record's `answer`).
    /// When the receiver is far behind (a starved collector thread), the sender counts instead,
    /// so the backlog, and the time the collector needs to clear it, does not grow because of
    /// counting.
    pub async fn send_counting(
        &self,
        mut c: Completed,
        (mut text, reasoning_end): (String, usize),
        counting: &Counting<'_>,
    ) {
        let (tokenizer, keep_server) = (counting.tokenizer, counting.keep_server);
        if self.inner.queue.len() > BEHIND {
            count_output(&mut c.record, tokenizer, &text, reasoning_end, keep_server);
            if let Some(key) = counting.answers {
                mark_answer(&mut c.record, key, tokenizer, &text, reasoning_end);
            }
            text.clear();
            let _ = self.inner.texts.push(text);
            return self.send(c).await;
        }
        self.inner.tokenizer.get_or_init(|| tokenizer.clone());
        if let Some(key) = counting.answers {
            self.inner.answers.get_or_init(|| key.clone());
        }
        self.push(Item {
            done: c,
            text: Some(text),
            reasoning_end,
            keep_server,
        })
        .await;
    }

    async fn push(&self, item: Item) {
        if let Err(item) = self.inner.queue.push(item) {
            self.wait_for_room(item).await;
        }
    }

    /// The queue is full: waits until the receiver has taken records, then queues `item`, and
    /// counts the wait.
    #[cold]
    async fn wait_for_room(&self, mut item: Item) {
        let started = Instant::now();
        let inner = &self.inner;
        inner.waiting.fetch_add(1, Ordering::SeqCst);
        loop {
            let room = inner.room.notified();
            tokio::pin!(room);
            // Registered before trying, so room made between the try and the wait is not missed.
            room.as_mut().enable();
            match inner.queue.push(item) {
                Ok(()) => break,
                Err(back) => item = back,
            }
            let _ = tokio::time::timeout(RECHECK, room).await;
        }
        inner.waiting.fetch_sub(1, Ordering::SeqCst);
        let ns = started.elapsed().as_nanos() as u64;
        inner.held_sends.fetch_add(1, Ordering::Relaxed);
        inner.held_ns.fetch_add(ns, Ordering::Relaxed);
        inner.longest_hold_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// An empty text buffer for the next request (a returned one when there is one).
    pub fn text_buffer(&self) -> String {
        self.inner.texts.pop().unwrap_or_default()
    }
}

impl RecordSource {
    /// The next record, waiting up to `timeout` (napping, not spinning) for one.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Completed, Empty> {
        // A busy collector finds records waiting: no clock read for those.
        if let Some(c) = self.pop() {
            return Ok(self.settle(c));
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(c) = self.pop() {
                return Ok(self.settle(c));
            }
            // Senders decrement after their last push, so a zero count seen here with an empty
            // queue (checked again below) means nothing more will come.
            if self.inner.senders.load(Ordering::Acquire) == 0 {
                return self.pop().map(|c| self.settle(c)).ok_or(Empty::Closed);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Empty::Timeout);
            }
            std::thread::sleep(NAP.min(deadline - now));
        }
    }

    /// Takes a record, waking the senders that wait for room.
    fn pop(&self) -> Option<Item> {
        let item = self.inner.queue.pop()?;
        // Orders the pop before the look at `waiting`, as the sender's increment is ordered
        // before its failed push: one of the two sees the other (a miss costs [`RECHECK`]).
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.inner.waiting.load(Ordering::SeqCst) > 0 {
            self.inner.room.notify_waiters();
        }
        Some(item)
    }

    /// How long senders have waited for room so far.
    pub fn held(&self) -> Held {
        let i = &self.inner;
        Held {
            sends: i.held_sends.load(Ordering::Relaxed),
            total_ns: i.held_ns.load(Ordering::Relaxed),
            longest_ns: i.longest_hold_ns.load(Ordering::Relaxed),
        }
    }

    /// Counts an item's text, if it came with one, and returns the buffer to the pool.
    fn settle(&self, item: Item) -> Completed {
        let Item {
            mut done,
            text,
            reasoning_end,
            keep_server,
        } = item;
        if let Some(mut text) = text {
            if let Some(t) = self.inner.tokenizer.get() {
                count_output(&mut done.record, t, &text, reasoning_end, keep_server);
                if let Some(key) = self.inner.answers.get() {
                    mark_answer(&mut done.record, key, t, &text, reasoning_end);
                }
            }
            text.clear();
            let _ = self.inner.texts.push(text);
        }
        done
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

/// How a finished request's text is counted and graded.
#[derive(Debug, Clone, Copy)]
pub struct Counting<'a> {
    /// Counts output tokens (every sender of a queue uses one).
    pub tokenizer: &'a Tokenizer,
    /// `osl` holds the server's count (`--use-server-token-count`): the text's count is
    /// recorded next to it, not instead.
    pub keep_server: bool,
    /// Grades the text, in a scored workload.
    pub answers: Option<&'a Arc<AnswerKey>>,
}

/// Grades a successful request's text against its prompt's answer (its `answer`); the answer
/// is what follows the reasoning.
fn mark_answer(
    record: &mut crate::record::RequestRecord,
    key: &AnswerKey,
    tokenizer: &Tokenizer,
    text: &str,
    reasoning_end: usize,
) {
    if record.ok() {
        record.answer = key.mark(record.prompt_index, text, reasoning_end, tokenizer);
    }
}

/// Counts a request's output tokens into its record: all of `text`, and its reasoning prefix
/// `text[..reasoning_end]` apart when there is one (the prefix is tokenized on its own, so the
/// answer alone is `osl − reasoning_tokens` up to a token merged across the boundary). With
/// `keep_server` (`osl` is the server's) the server's reasoning count is used too, when it gave
/// one.
fn count_output(
    record: &mut crate::record::RequestRecord,
    tokenizer: &Tokenizer,
    text: &str,
    reasoning_end: usize,
    keep_server: bool,
) {
    record.set_tokenizer_osl(tokenizer.count(text), keep_server);
    if reasoning_end > 0 {
        record.reasoning_tokens = match record.server_reasoning_tokens {
            Some(n) if keep_server => Some(n),
            _ => {
                let reasoning = text.get(..reasoning_end).unwrap_or(text);
                Some(u32::try_from(tokenizer.count(reasoning)).unwrap_or(u32::MAX))
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Phase, RequestRecord};
    use futures_util::FutureExt;

    fn counting(tk: &Tokenizer) -> Counting<'_> {
        Counting {
            tokenizer: tk,
            keep_server: false,
            answers: None,
        }
    }

    /// Sends where the queue has room (the send completes at once).
    fn send_now(tx: &RecordSink, c: Completed) {
        tx.send(c).now_or_never().expect("the queue had room");
    }

    fn completed(seq: u64) -> Completed {
        Completed {
            record: RequestRecord {
                sent: Default::default(),
                tools: Default::default(),
                phase: Phase::Measure,
                seq,
                prompt_index: 0,
                intended_ns: 0,
                sent_ns: 0,
                send_done_ns: None,
                first_byte_ns: None,
                first_token_ns: None,
                second_token_ns: None,
                first_output_token_ns: None,
                last_token_ns: None,
                end_ns: 0,
                isl: 0,
                osl: 0,
                server_osl: None,
                tokenizer_osl: None,
                server_isl: None,
                server_timings: None,
                client_isl: None,
                reasoning_tokens: None,
                server_reasoning_tokens: None,
                requested_osl: 0,
                chunks: 0,
                responses: 0,
                lossy_text: false,
                reconnected: false,
                connection_reused: None,
                answer: None,
                conversation: None,
                error: None,
            },
            gaps: Vec::new(),
            capture: None,
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
                        send_now(&tx, completed(t * 1000 + i));
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

    /// Counting on the receiving side gives the count the sender would have made, for texts
    /// of every kind, and the buffers come back empty for reuse.
    #[test]
    fn counts_text_on_the_receiving_side_exactly() {
        let tk = Tokenizer::builtin_gpt2();
        let texts = [
            " the cat sat",
            "",
            "  leading and   runs of   spaces\n\n\t tabs ",
            "é✓ 漢字 emoji 🎉🎉 mixed123numbers456",
            "don't won't they're I'm we'll you'd it's",
            "<|endoftext|> special in the middle <|endoftext|>",
            "word",
        ];
        let (tx, rx) = record_queue();
        for (i, t) in texts.iter().enumerate() {
            let mut buf = tx.text_buffer();
            // Text arrives split across events at awkward places; the buffer holds it joined.
            let cut = t.char_indices().map(|(k, _)| k).nth(i).unwrap_or(t.len());
            buf.push_str(&t[..cut]);
            buf.push_str(&t[cut..]);
            tx.send_counting(completed(i as u64), (buf, 0), &counting(&tk))
                .now_or_never()
                .expect("room");
        }
        send_now(&tx, completed(99));
        drop(tx);
        let mut got = Vec::new();
        while let Some(c) = rx.recv() {
            got.push((c.record.seq, c.record.osl));
        }
        let mut want: Vec<(u64, u32)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i as u64, tk.count(t) as u32))
            .collect();
        want.push((99, 0));
        assert_eq!(got, want);
        assert!(got[0].1 > 0 && got[3].1 > 0);
        let back = rx.inner.texts.pop().expect("a buffer came back");
        assert!(back.is_empty() && back.capacity() > 0);
        // Far behind, senders count themselves: the same numbers.
        let (tx, rx) = record_queue();
        for i in 0..BEHIND as u64 + 10 {
            let mut buf = tx.text_buffer();
            buf.push_str(texts[i as usize % texts.len()]);
            tx.send_counting(completed(i), (buf, 0), &counting(&tk))
                .now_or_never()
                .expect("room");
        }
        drop(tx);
        let mut n = 0;
        while let Some(c) = rx.recv() {
            let t = texts[c.record.seq as usize % texts.len()];
            assert_eq!(c.record.osl, tk.count(t) as u32, "{t}");
            n += 1;
        }
        assert_eq!(n, BEHIND + 10);
    }

    /// A receiver slower than its senders: they wait for room instead of queueing without
    /// bound, every record arrives exactly once, and the waits are counted.
    #[test]
    fn a_slow_receiver_holds_senders_back_and_loses_nothing() {
        let (tx, rx) = record_queue();
        let total = (CAPACITY * 3) as u64;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let senders: Vec<_> = (0..4u64)
            .map(|t| {
                let tx = tx.clone();
                rt.spawn(async move {
                    for i in (t..total).step_by(4) {
                        tx.send(completed(i)).await;
                    }
                })
            })
            .collect();
        drop(tx);
        let mut seen = vec![false; total as usize];
        let (mut max_queued, mut n) = (0, 0);
        while let Some(c) = {
            max_queued = max_queued.max(rx.inner.queue.len());
            // The collector's disk is slow: a pause every few hundred records.
            if n % 500 == 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
            rx.recv()
        } {
            assert!(!seen[c.record.seq as usize], "seq {} twice", c.record.seq);
            seen[c.record.seq as usize] = true;
            n += 1;
        }
        rt.block_on(async {
            for s in senders {
                s.await.unwrap();
            }
        });
        assert!(seen.iter().all(|s| *s), "every record arrived");
        assert!(max_queued <= CAPACITY);
        let held = rx.held();
        assert!(held.sends > 0 && held.total_ns >= held.longest_ns && held.longest_ns > 0);
    }

    #[test]
    fn times_out_while_senders_remain() {
        let (tx, rx) = record_queue();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(2)).unwrap_err(),
            Empty::Timeout
        );
        send_now(&tx, completed(7));
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(2))
                .unwrap()
                .record
                .seq,
            7
        );
    }

    /// The reasoning prefix is counted apart and inside OSL; the server's reasoning count is
    /// used only when OSL is the server's; no reasoning, no count.
    #[test]
    fn reasoning_prefix_counted_apart() {
        let tk = Tokenizer::builtin_gpt2();
        let text = " the of and to in is";
        let mut r = completed(0).record;
        count_output(&mut r, &tk, text, " the of and".len(), false);
        assert_eq!(
            (r.osl, r.tokenizer_osl, r.reasoning_tokens),
            (6, Some(6), Some(3))
        );
        r.server_reasoning_tokens = Some(2);
        count_output(&mut r, &tk, text, " the of and".len(), false);
        assert_eq!(
            r.reasoning_tokens,
            Some(3),
            "the tokenizer's unless OSL is the server's"
        );
        r.osl = 7;
        count_output(&mut r, &tk, text, " the of and".len(), true);
        assert_eq!((r.osl, r.reasoning_tokens), (7, Some(2)));
        let mut plain = completed(1).record;
        count_output(&mut plain, &tk, text, 0, false);
        assert_eq!((plain.osl, plain.reasoning_tokens), (6, None));
    }
}
