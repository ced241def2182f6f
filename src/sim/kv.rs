//! How much KV cache a simulated engine has, who holds it, and which prompt blocks it remembers:
//! a paged KV cache with an optional prefix cache, as vLLM and TensorRT-LLM keep one.
//!
//! The cache is `capacity` blocks of `block_size` tokens. A running sequence holds enough blocks
//! for every token it has stored (`ceil(tokens / block_size)`); the engine asks for one more
//! block each time decode crosses a block boundary. Blocks are only counted, not stored: what
//! matters to the timing model is how many are free.
//!
//! **Prefix cache** (when enabled). A full prompt block is identified by a chained hash of its
//! tokens (the hash of block `i` covers blocks `0..=i`), so two prompts share a cached block
//! exactly when they share every token up to its end. When a sequence is admitted, the longest
//! run of its leading block hashes found in the cache is *hit*: those blocks are shared (their
//! reference count grows) and that part of the prompt needs no prefill. As in vLLM, the last
//! prompt token is always recomputed, so at most `prompt − 1` tokens can hit. The sequence's
//! other full prompt blocks are registered under their hashes at admission. A cached block
//! nobody references stays cached but counts as free: it is evicted, least recently released
//! first, when a block is needed. Usage (`used_blocks / capacity`) therefore counts only
//! referenced blocks, like vLLM's `kv_cache_usage_perc`.
//!
//! **Unlimited pools** (`EngineConfig::kv_blocks == 0`, the default): allocation never fails,
//! so admission and timing are exactly those of an engine without a KV cache; `capacity` is then
//! a nominal size used to report usage and to bound how many released prompt blocks stay
//! cached (memory does not grow with the number of distinct prompts).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

/// A cached prompt block.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Sequences holding it.
    refs: u32,
    /// Position in the eviction order while `refs == 0`.
    stamp: u64,
}

/// The blocks one sequence holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SeqBlocks {
    /// Hashes of the cached (shared) prompt blocks it references, in prompt order.
    shared: Vec<u64>,
    /// Blocks of its own (partial prompt block, generated tokens, uncached duplicates).
    private: u32,
}

impl SeqBlocks {
    /// Blocks held in total.
    pub(crate) fn len(&self) -> u32 {
        self.shared.len() as u32 + self.private
    }
}

/// Cumulative prefix-cache counters (zero while the prefix cache is off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct PrefixCounters {
    /// Prompt tokens of admitted sequences (vLLM's `prefix_cache_queries`).
    pub(crate) queried_tokens: u64,
    /// Of which found cached (vLLM's `prefix_cache_hits`, SGLang's `cached_tokens`).
    pub(crate) hit_tokens: u64,
    /// Full prompt blocks found cached (TensorRT-LLM's reused blocks).
    pub(crate) hit_blocks: u64,
}

/// One engine's KV cache.
#[derive(Debug, Default)]
pub(crate) struct KvCache {
    block_size: u32,
    capacity: u32,
    limited: bool,
    prefix_caching: bool,
    /// Blocks held privately by sequences.
    private: u32,
    /// Cached entries with `refs > 0`.
    shared_in_use: u32,
    entries: HashMap<u64, Entry>,
    /// Released cached blocks by release order (oldest first): the eviction order.
    evictable: BTreeMap<u64, u64>,
    next_stamp: u64,
    counters: PrefixCounters,
}

impl KvCache {
    /// A cache of `capacity` blocks of `block_size` tokens; `limited == false` never refuses an
    /// allocation (`capacity` is then nominal).
    pub(crate) fn new(block_size: u32, capacity: u32, limited: bool, prefix_caching: bool) -> Self {
        KvCache {
            block_size: block_size.max(1),
            capacity: capacity.max(1),
            limited,
            prefix_caching,
            ..KvCache::default()
        }
    }

    /// Blocks referenced by running sequences (may exceed the capacity when unlimited, or when a
    /// lone sequence outgrew the pool).
    pub(crate) fn used(&self) -> u32 {
        self.private + self.shared_in_use
    }

    /// Cumulative prefix-cache counters.
    pub(crate) fn counters(&self) -> PrefixCounters {
        self.counters
    }

    /// Blocks needed to store `tokens` tokens.
    pub(crate) fn blocks_for(&self, tokens: u64) -> u32 {
        u32::try_from(tokens.div_ceil(u64::from(self.block_size))).unwrap_or(u32::MAX)
    }

    /// Blocks that are neither held nor cached.
    fn unoccupied(&self) -> u32 {
        let occupied = self.private + self.entries.len() as u32;
        self.capacity.saturating_sub(occupied)
    }

    /// Blocks an allocation could get now (unoccupied plus evictable cached ones).
    fn available(&self) -> u32 {
        self.unoccupied() + self.evictable.len() as u32
    }

    /// Makes room for `n` new blocks by evicting released cached blocks; true when they fit
    /// (always when unlimited, or when `overcommit` allows exceeding the pool).
    fn reserve(&mut self, n: u32, overcommit: bool) -> bool {
        if self.limited && !overcommit && self.available() < n {
            return false;
        }
        while self.unoccupied() < n && self.evict_one() {}
        true
    }

    fn evict_one(&mut self) -> bool {
        let evicted = self.evictable.pop_first();
        evicted
            .map(|(_, hash)| self.entries.remove(&hash))
            .is_some()
    }

    /// Admits a sequence whose next step stores `tokens` tokens, the first `prompt_tokens` of
    /// which are prompt tokens with full-block hashes `hashes`. Returns its blocks and its
    /// leading prompt tokens whose KV was already cached (no prefill needed), or `None` when the
    /// pool cannot hold it (`overcommit`: take the blocks anyway, for a sequence that runs
    /// alone).
    pub(crate) fn admit(
        &mut self,
        hashes: &[u64],
        prompt_tokens: u32,
        tokens: u64,
        overcommit: bool,
    ) -> Option<(SeqBlocks, u32)> {
        let need = self.blocks_for(tokens);
        let hashes = if self.prefix_caching { hashes } else { &[] };
        // At most `prompt − 1` tokens may hit: the last prompt token is always computed.
        let lookup = (prompt_tokens.saturating_sub(1) / self.block_size) as usize;
        let lookup = lookup.min(hashes.len());
        let hits = hashes[..lookup]
            .iter()
            .take_while(|h| self.entries.contains_key(h))
            .count();
        // Hits that were evictable stop being so; count them before reserving the rest.
        let revived = hashes[..hits]
            .iter()
            .filter(|h| self.entries.get(h).is_some_and(|e| e.refs == 0))
            .count() as u32;
        let fresh = need.saturating_sub(hits as u32);
        if self.limited && !overcommit && self.available() < fresh + revived {
            return None;
        }
        let mut blocks = SeqBlocks::default();
        for &h in &hashes[..hits] {
            self.acquire(h);
            blocks.shared.push(h);
        }
        self.reserve(fresh, true);
        // Register the sequence's other full prompt blocks now (a later arrival in the same step
        // may already share them); a block cached under the same hash outside the hit prefix
        // (its predecessor was evicted) stays private to this sequence.
        for &h in hashes[hits..].iter().take(fresh as usize) {
            if self.entries.contains_key(&h) {
                break;
            }
            self.entries.insert(h, Entry { refs: 1, stamp: 0 });
            self.shared_in_use += 1;
            blocks.shared.push(h);
        }
        blocks.private = need.saturating_sub(blocks.shared.len() as u32);
        self.private += blocks.private;
        let cached = hits as u32 * self.block_size;
        if self.prefix_caching {
            self.counters.queried_tokens += u64::from(prompt_tokens);
            self.counters.hit_tokens += u64::from(cached);
            self.counters.hit_blocks += hits as u64;
        }
        self.trim();
        Some((blocks, cached))
    }

    fn acquire(&mut self, hash: u64) {
        if let Some(e) = self.entries.get_mut(&hash) {
            if e.refs == 0 {
                self.evictable.remove(&e.stamp);
                self.shared_in_use += 1;
            }
            e.refs += 1;
        }
    }

    /// Grows `blocks` so that it stores `tokens` tokens. False when the pool is full (the
    /// engine then preempts); `overcommit` always succeeds.
    pub(crate) fn grow(&mut self, blocks: &mut SeqBlocks, tokens: u64, overcommit: bool) -> bool {
        let need = self.blocks_for(tokens).saturating_sub(blocks.len());
        if need == 0 {
            return true;
        }
        if !self.reserve(need, overcommit) {
            return false;
        }
        blocks.private += need;
        self.private += need;
        true
    }

    /// Returns a sequence's blocks: private ones become free, shared ones lose a reference and,
    /// once unreferenced, stay cached until evicted.
    pub(crate) fn release(&mut self, blocks: &mut SeqBlocks) {
        self.private -= blocks.private.min(self.private);
        blocks.private = 0;
        for h in blocks.shared.drain(..) {
            if let Some(e) = self.entries.get_mut(&h) {
                e.refs = e.refs.saturating_sub(1);
                if e.refs == 0 {
                    e.stamp = self.next_stamp;
                    self.next_stamp += 1;
                    self.evictable.insert(e.stamp, h);
                    self.shared_in_use -= 1;
                }
            }
        }
        self.trim();
    }

    /// An unlimited pool keeps at most `capacity` blocks occupied by released cached blocks.
    fn trim(&mut self) {
        if !self.limited {
            while self.private + self.entries.len() as u32 > self.capacity && self.evict_one() {}
        }
    }
}

/// Chained hashes of the full `block_size`-token blocks of `tokens`: entry `i` identifies
/// tokens `0..(i + 1) × block_size`. Deterministic within one process (SipHash with fixed
/// keys), which is all a simulator's cache needs.
pub(crate) fn block_hashes(tokens: &[u32], block_size: u32) -> Vec<u64> {
    let chunks = tokens.chunks_exact(block_size.max(1) as usize);
    chunks
        .scan(0u64, |prev, block| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            prev.hash(&mut h);
            block.hash(&mut h);
            *prev = h.finish();
            Some(*prev)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(prefix: &[u32], n: usize) -> Vec<u64> {
        let mut toks: Vec<u32> = prefix.to_vec();
        toks.extend((0..n as u32).map(|i| 10_000 + i));
        block_hashes(&toks, 4)
    }

    #[test]
    fn block_hashes_are_chained_and_full_blocks_only() {
        let a = block_hashes(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 4);
        let b = block_hashes(&[1, 2, 3, 4, 5, 6, 7, 0], 4);
        assert_eq!(a.len(), 2, "the partial last block has no hash");
        assert_eq!(a[0], b[0]);
        assert_ne!(a[1], b[1]);
        // The same second block after a different first block is a different block.
        let c = block_hashes(&[9, 2, 3, 4, 5, 6, 7, 8], 4);
        assert_ne!(a[1], c[1]);
    }

    #[test]
    fn limited_pool_refuses_then_grows_and_releases() {
        let mut kv = KvCache::new(4, 10, true, false);
        let (mut a, cached) = kv.admit(&[], 10, 11, false).expect("fits");
        assert_eq!((a.len(), kv.used(), cached), (3, 3, 0));
        let (mut b, _) = kv.admit(&[], 20, 21, false).expect("fits");
        assert_eq!(kv.used(), 9);
        assert!(kv.admit(&[], 8, 9, false).is_none(), "needs 3, 1 free");
        assert!(kv.grow(&mut a, 12, false), "still 3 blocks");
        assert!(kv.grow(&mut a, 13, false), "the last free block");
        assert!(!kv.grow(&mut b, 25, false), "pool full");
        assert!(kv.grow(&mut b, 25, true), "overcommit");
        assert_eq!(kv.used(), 11);
        kv.release(&mut a);
        kv.release(&mut b);
        assert_eq!(kv.used(), 0);
        assert_eq!(kv.counters(), PrefixCounters::default(), "prefix cache off");
    }

    #[test]
    fn prefix_hits_share_blocks_and_skip_tokens() {
        let mut kv = KvCache::new(4, 100, true, true);
        let sys = [1, 2, 3, 4, 5, 6, 7, 8];
        let ha = hashes(&sys, 6); // 14 tokens: 3 full blocks
        let (mut a, cached) = kv.admit(&ha, 14, 15, false).expect("a");
        assert_eq!(cached, 0);
        assert_eq!(kv.used(), 4, "3 registered + 1 private");
        // 10 tokens: the same two leading blocks, then a partial block of its own.
        let hb = block_hashes(&[1, 2, 3, 4, 5, 6, 7, 8, 77, 78], 4);
        assert_eq!(hb[..], ha[..2]);
        let (mut b, cached) = kv.admit(&hb, 10, 11, false).expect("b");
        assert_eq!(cached, 8, "two shared blocks");
        assert_eq!(b.len(), 3);
        assert_eq!(kv.used(), 5, "4 of a + 1 new private of b");
        let c = kv.counters();
        assert_eq!((c.queried_tokens, c.hit_tokens, c.hit_blocks), (24, 8, 2));
        // Released blocks stay cached: a third request hits them after everybody left.
        kv.release(&mut a);
        kv.release(&mut b);
        assert_eq!(kv.used(), 0);
        let (_, cached) = kv.admit(&ha, 14, 15, false).expect("again");
        assert_eq!(cached, 12);
    }

    #[test]
    fn the_last_prompt_token_is_always_computed() {
        let mut kv = KvCache::new(4, 100, true, true);
        let h = block_hashes(&[1, 2, 3, 4, 5, 6, 7, 8], 4);
        let (mut a, _) = kv.admit(&h, 8, 9, false).expect("a");
        kv.release(&mut a);
        let (_, cached) = kv.admit(&h, 8, 9, false).expect("b");
        assert_eq!(cached, 4, "block 2 holds the last prompt token");
    }

    #[test]
    fn eviction_is_least_recently_released_first() {
        let mut kv = KvCache::new(4, 4, true, true);
        let ha = block_hashes(&[1, 1, 1, 1, 1, 1, 1, 1, 9], 4);
        let hb = block_hashes(&[2, 2, 2, 2, 2, 2, 2, 2, 9], 4);
        let (mut a, _) = kv.admit(&ha, 9, 9, false).expect("a");
        kv.release(&mut a);
        let (mut b, _) = kv.admit(&hb, 9, 9, false).expect("b: evicts a's blocks");
        assert_eq!(kv.used(), 3);
        kv.release(&mut b);
        let (_, cached) = kv.admit(&ha, 9, 9, false).expect("a again");
        assert_eq!(cached, 0, "a's blocks were evicted");
        let (_, cached) = kv.admit(&hb, 9, 9, true).expect("b again, overcommitted");
        assert_eq!(cached, 0, "b's blocks went to a");
    }

    #[test]
    fn unlimited_pool_never_refuses_and_bounds_the_cache() {
        let mut kv = KvCache::new(4, 8, false, true);
        let held: Vec<SeqBlocks> = (0..10u32)
            .map(|i| block_hashes(&[i; 12], 4))
            .map(|h| kv.admit(&h, 12, 13, false).expect("never refused").0)
            .collect();
        assert_eq!(kv.used(), 40, "beyond the nominal capacity");
        for mut b in held {
            kv.release(&mut b);
        }
        assert!(kv.entries.len() <= 8, "released cache trimmed to capacity");
    }
}
