//! The fast engine: GPT-2's byte-level BPE, equivalent to Hugging Face's pipeline for
//! `tokenizer.json` files of that shape. A hand-written scanner equivalent to GPT-2's split regex
//! `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` (`pretokenize`,
//! `unicode`), GPT-2's byte→character map and merge ranks from the same JSON (`build`, `merge`),
//! added tokens extracted first (`added`), and a bounded per-thread cache from pre-token bytes to
//! ids, because most words repeat (`cache`). With a warm cache `count()` does not allocate.
//!
//! Equivalence with HF is checked by tests that load the same embedded JSON through the
//! `tokenizers` crate and compare ids over thousands of fixed and seeded random strings, and by an
//! exhaustive check of the character classes against the regex engine HF uses.

mod added;
mod build;
mod cache;
mod merge;
mod pretokenize;
#[cfg(test)]
mod tests;
mod unicode;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use added::AddedMatcher;
pub(super) use added::AddedSpec;
pub(super) use build::BpeModelJson;
use cache::{FastMap, MAX_CACHED_PIECE, Scratch, THREAD_STATE, ThreadState, WordCache, cache_for};

use pretokenize::Pieces;

/// Hands out a distinct id per engine, which keys the per-thread word caches.
static NEXT_ENGINE_ID: AtomicU64 = AtomicU64::new(1);

/// GPT-2-style byte-level BPE: the pre-tokenizer (`pretokenize`), then merges on each pre-token's bytes.
pub(super) struct ByteLevelBpe {
    /// Identifies this engine's word caches in each thread.
    pub(super) id: u64,
    /// Id of the one-byte token for each byte value.
    pub(super) byte_ids: [u32; 256],
    /// `(left << 32) | right` → `(rank << 32) | merged id`. Lower rank merges first.
    merges: FastMap<u64, u64>,
    /// Added tokens matched on the raw text (HF: `normalized: false`), extracted first.
    added_raw: AddedMatcher,
    /// Added tokens matched after normalization (HF: `normalized: true`); with no normalizer that
    /// is the same text, but HF still extracts them in a second pass, and so do we.
    added_normalized: AddedMatcher,
    /// For decoding: `(start, len)` of each id's bytes in `decode_bytes`; `start == u32::MAX`
    /// marks an unknown id.
    decode_spans: Vec<(u32, u32)>,
    decode_bytes: Vec<u8>,
}

/// A stretch of input between added tokens, or one added token (its id).
pub(super) enum Segment<'a> {
    Text(&'a str),
    Added(u32),
}

impl ByteLevelBpe {
    /// Splits `text` at added tokens (raw ones first, then normalized ones in the gaps, as HF
    /// does) and hands each piece to `f`.
    #[inline]
    fn for_each_segment(&self, text: &str, f: &mut impl FnMut(Segment<'_>)) {
        if self.added_raw.is_empty() {
            self.added_normalized.split(text, f);
        } else {
            self.added_raw.split(text, &mut |seg| match seg {
                Segment::Text(t) => self.added_normalized.split(t, f),
                added => f(added),
            });
        }
    }

    /// Runs the whole pipeline over `text` and hands the ids of each pre-token or added token to
    /// `sink`, using (and filling) `words` when given.
    fn tokenize(
        &self,
        text: &str,
        mut words: Option<&mut WordCache>,
        scratch: &mut Scratch,
        sink: &mut impl FnMut(&[u32]),
    ) {
        self.for_each_segment(text, &mut |seg| match seg {
            Segment::Added(id) => sink(&[id]),
            Segment::Text(t) => {
                for piece in Pieces::new(t) {
                    let bytes = piece.as_bytes();
                    if bytes.len() == 1 {
                        sink(&[self.byte_ids[bytes[0] as usize]]);
                    } else if let (Some(words), true) =
                        (words.as_deref_mut(), bytes.len() <= MAX_CACHED_PIECE)
                    {
                        words.with_ids(
                            bytes,
                            &mut scratch.out,
                            |out| self.merge_into(bytes, &mut scratch.work, out),
                            &mut *sink,
                        );
                    } else {
                        self.merge_into(bytes, &mut scratch.work, &mut scratch.out);
                        sink(&scratch.out);
                    }
                }
            }
        });
    }

    /// Runs `body` with this thread's word cache for this engine and its scratch buffers, or with
    /// fresh buffers and no cache if the thread-local state is unavailable (thread teardown).
    fn with_thread_state<R>(
        self: &Arc<Self>,
        body: impl Fn(Option<&mut WordCache>, &mut Scratch) -> R,
    ) -> R {
        let cached = THREAD_STATE.try_with(|cell| {
            let mut state = cell.try_borrow_mut().ok()?;
            let ThreadState { caches, scratch } = &mut *state;
            Some(body(Some(cache_for(caches, self)), scratch))
        });
        match cached {
            Ok(Some(r)) => r,
            _ => body(None, &mut Scratch::default()),
        }
    }

    pub(super) fn count(self: &Arc<Self>, text: &str) -> usize {
        self.with_thread_state(|words, scratch| {
            let mut n = 0;
            self.tokenize(text, words, scratch, &mut |ids| n += ids.len());
            n
        })
    }

    pub(super) fn encode(self: &Arc<Self>, text: &str) -> Vec<u32> {
        self.with_thread_state(|words, scratch| {
            // A token averages ~4 bytes of English; one reallocation at most for typical text.
            let mut out = Vec::with_capacity(text.len() / 3 + 1);
            self.tokenize(text, words, scratch, &mut |ids| out.extend_from_slice(ids));
            out
        })
    }

    pub(super) fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if let Some(&(start, len)) = self.decode_spans.get(id as usize)
                && start != u32::MAX
            {
                bytes.extend_from_slice(&self.decode_bytes[start as usize..(start + len) as usize]);
            }
        }
        match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }
}
