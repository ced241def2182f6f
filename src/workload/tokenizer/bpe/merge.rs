//! BPE merging of one pre-token: repeatedly merge the adjacent pair of lowest rank, leftmost
//! first, with a quadratic scan for short pre-tokens and a heap for long ones.

use std::cmp::Reverse;

use super::ByteLevelBpe;
use super::cache::MergeWork;

/// No merge applies to this pair.
const NO_MERGE: u64 = u64::MAX;
/// Longest pre-token (in bytes) merged with the simple quadratic scan; longer ones use a heap so
/// that a megabyte-long run of letters stays O(n log n).
const MAX_SCAN_MERGE: usize = 128;

impl ByteLevelBpe {
    /// `(rank << 32) | merged id` for the pair, or [`NO_MERGE`].
    #[inline]
    fn merge_of(&self, left: u32, right: u32) -> u64 {
        self.merges
            .get(&((u64::from(left) << 32) | u64::from(right)))
            .copied()
            .unwrap_or(NO_MERGE)
    }

    /// BPE-merges one pre-token (at least one byte) into `out` (cleared first): repeatedly merge
    /// the adjacent pair with the lowest rank, leftmost first, as HF's `Word::merge_all` does.
    pub(super) fn merge_into(&self, piece: &[u8], work: &mut MergeWork, out: &mut Vec<u32>) {
        out.clear();
        out.extend(piece.iter().map(|&b| self.byte_ids[b as usize]));
        if out.len() <= MAX_SCAN_MERGE {
            self.merge_scan(out, &mut work.ranks);
        } else {
            self.merge_heap(out, work);
        }
    }

    /// Quadratic but branch-light merging for short pre-tokens: `ranks[i]` caches the merge of
    /// `(syms[i], syms[i+1])`, so each step scans integers and only two pairs are looked up again.
    pub(super) fn merge_scan(&self, syms: &mut Vec<u32>, ranks: &mut Vec<u64>) {
        ranks.clear();
        ranks.extend(syms.windows(2).map(|w| self.merge_of(w[0], w[1])));
        // `min_by_key` returns the first minimum: the leftmost among equal ranks.
        while let Some((i, &best)) = ranks.iter().enumerate().min_by_key(|&(_, r)| *r) {
            if best == NO_MERGE {
                break;
            }
            syms[i] = best as u32;
            syms.remove(i + 1);
            ranks.remove(i);
            if i < ranks.len() {
                ranks[i] = self.merge_of(syms[i], syms[i + 1]);
            }
            if i > 0 {
                ranks[i - 1] = self.merge_of(syms[i - 1], syms[i]);
            }
        }
    }

    /// O(n log n) merging for long pre-tokens: a min-heap of (rank, position) over a linked list
    /// of symbols; entries made stale by earlier merges are skipped when popped.
    pub(super) fn merge_heap(&self, syms: &mut Vec<u32>, work: &mut MergeWork) {
        const NONE: u32 = u32::MAX;
        let n = syms.len();
        let MergeWork {
            prev,
            next,
            alive,
            heap,
            ..
        } = work;
        prev.clear();
        prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
        next.clear();
        next.extend((1..=n as u32).map(|i| if i as usize == n { NONE } else { i }));
        alive.clear();
        alive.resize(n, true);
        heap.clear();
        for i in 0..n - 1 {
            let m = self.merge_of(syms[i], syms[i + 1]);
            if m != NO_MERGE {
                heap.push(Reverse(((m >> 32) as u32, i as u32)));
            }
        }
        while let Some(Reverse((rank, pos))) = heap.pop() {
            let p = pos as usize;
            let q = next[p];
            if !alive[p] || q == NONE {
                continue;
            }
            let m = self.merge_of(syms[p], syms[q as usize]);
            // Ranks are unique per pair, so an equal rank means the entry is still current.
            if m == NO_MERGE || (m >> 32) as u32 != rank {
                continue;
            }
            syms[p] = m as u32;
            alive[q as usize] = false;
            let after = next[q as usize];
            next[p] = after;
            if after != NONE {
                prev[after as usize] = pos;
                let m = self.merge_of(syms[p], syms[after as usize]);
                if m != NO_MERGE {
                    heap.push(Reverse(((m >> 32) as u32, pos)));
                }
            }
            let before = prev[p];
            if before != NONE {
                let m = self.merge_of(syms[before as usize], syms[p]);
                if m != NO_MERGE {
                    heap.push(Reverse(((m >> 32) as u32, before)));
                }
            }
        }
        let mut w = 0;
        let mut i = 0u32;
        while i != NONE {
            syms[w] = syms[i as usize];
            w += 1;
            i = next[i as usize];
        }
        syms.truncate(w);
    }
}
