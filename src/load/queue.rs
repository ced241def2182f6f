//! Finished requests on their way to a collector thread, without waking it per request: workers
//! push onto a lock-free queue and the collector drains it in batches, napping briefly when it
//! is empty. (A blocking channel costs a futex wake-up and a context switch per request, which
//! showed up as a tenth of the client's CPU at ten thousand requests a second.)
//!
//! Output tokens are counted here too, on the receiving thread: a worker hands over the
//! request's text ([`RecordSink::send_counting`]) and goes on to its next request, and the
//! record comes out of [`RecordSource::recv`] with its `osl` set, counted once over the whole
//! text exactly as the worker would have. The text buffers come back to the workers through a
//! pool, so this costs no allocation once warm.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_queue::{ArrayQueue, SegQueue};

use super::Completed;
use crate::workload::tokenizer::Tokenizer;

/// How long an idle collector naps before looking again: records wait at most this long
/// (their times were taken by the workers), and each nap is a context switch.
const NAP: Duration = Duration::from_millis(2);

struct Inner {
    queue: SegQueue<Item>,
    senders: AtomicUsize,
    /// Text buffers on their way back to the workers.
    texts: ArrayQueue<String>,
    /// Counts the text sent with records (set by the first such record).
    tokenizer: OnceLock<Tokenizer>,
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

/// A new queue.
pub fn record_queue() -> (RecordSink, RecordSource) {
    let inner = Arc::new(Inner {
        queue: SegQueue::new(),
        senders: AtomicUsize::new(1),
        texts: ArrayQueue::new(TEXT_POOL),
        tokenizer: OnceLock::new(),
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
        self.inner.queue.push(Item {
            done: c,
            text: None,
            reasoning_end: 0,
            keep_server: false,
        });
    }

    /// Queues a finished request whose output tokens are to be counted: the receiver sets its
    /// `tokenizer_osl` (and its `osl`, unless `keep_server`) to `tokenizer`'s count of `text`
    /// (every sender of a queue uses one tokenizer), and its `reasoning_tokens` to the count of
    /// `text[..reasoning_end]` when `reasoning_end > 0`.
    /// When the receiver is far behind (a starved collector thread), the sender counts instead,
    /// so the backlog, and the memory it holds, does not grow because of counting.
    pub fn send_counting(
        &self,
        mut c: Completed,
        (mut text, reasoning_end): (String, usize),
        tokenizer: &Tokenizer,
        keep_server: bool,
    ) {
        if self.inner.queue.len() > BEHIND {
            count_output(&mut c.record, tokenizer, &text, reasoning_end, keep_server);
            text.clear();
            let _ = self.inner.texts.push(text);
            self.send(c);
            return;
        }
        self.inner.tokenizer.get_or_init(|| tokenizer.clone());
        self.inner.queue.push(Item {
            done: c,
            text: Some(text),
            reasoning_end,
            keep_server,
        });
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
        if let Some(c) = self.inner.queue.pop() {
            return Ok(self.settle(c));
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(c) = self.inner.queue.pop() {
                return Ok(self.settle(c));
            }
            // Senders decrement after their last push, so a zero count seen here with an empty
            // queue (checked again below) means nothing more will come.
            if self.inner.senders.load(Ordering::Acquire) == 0 {
                return self
                    .inner
                    .queue
                    .pop()
                    .map(|c| self.settle(c))
                    .ok_or(Empty::Closed);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Empty::Timeout);
            }
            std::thread::sleep(NAP.min(deadline - now));
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
                first_output_token_ns: None,
                last_token_ns: None,
                end_ns: 0,
                isl: 0,
                osl: 0,
                server_osl: None,
                tokenizer_osl: None,
                server_isl: None,
                reasoning_tokens: None,
                server_reasoning_tokens: None,
                requested_osl: 0,
                chunks: 0,
                responses: 0,
                lossy_text: false,
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
            tx.send_counting(completed(i as u64), (buf, 0), &tk, false);
        }
        tx.send(completed(99));
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
            tx.send_counting(completed(i), (buf, 0), &tk, false);
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
