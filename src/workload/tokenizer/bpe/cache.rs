//! The per-thread word cache (pre-token bytes → ids) and the hasher its tables use.
//!
//! Hashing: std's SipHash is DoS-resistant but several times slower on short keys than needed;
//! the keys here (our own vocabulary pairs and pre-tokens) make collision attacks pointless.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Weak};

use super::ByteLevelBpe;

/// A small multiplicative hasher for short byte strings and integer pairs.
#[derive(Default, Clone, Copy)]
pub(super) struct FastHasher(u64);

const HASH_K: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let (chunks, rest) = bytes.as_chunks::<8>();
        for c in chunks {
            h = (h ^ u64::from_le_bytes(*c))
                .wrapping_mul(HASH_K)
                .rotate_left(23);
        }
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            h = (h ^ u64::from_le_bytes(buf))
                .wrapping_mul(HASH_K)
                .rotate_left(23);
        }
        self.0 = h;
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(HASH_K);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The table indexes buckets with the low bits, and a multiply mixes upwards: fold.
        self.0 ^ (self.0 >> 29)
    }
}

/// A hash map with [`FastHasher`].
pub(super) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

// Per-thread word cache.
//
// Each thread keeps its own cache per engine, so the hot path takes no lock and touches no shared
// cache line (a shared sharded cache would still bounce its lock words between cores on every
// word). Memory is bounded: two generations of at most `CACHE_GENERATION` entries each; when the
// young one fills, the old one is dropped and the young one ages. Entries used while old are
// promoted, so frequent words survive. About 1 MB per tokenizing thread at most (the direct-mapped
// front of short words adds 32 KB).

/// Entries per generation (two generations live at once).
pub(super) const CACHE_GENERATION: usize = 4096;
/// Longer pre-tokens are rare and not worth a cache slot; they are merged on each use.
pub(super) const MAX_CACHED_PIECE: usize = 32;
/// At most this many engines keep caches in one thread (normally one or two).
const MAX_ENGINES_PER_THREAD: usize = 8;

/// Ids of one cached pre-token; short ones inline, so a cache entry is one small allocation (key).
#[derive(Clone)]
enum CachedIds {
    Inline { len: u8, ids: [u32; 5] },
    Boxed(Box<[u32]>),
}

impl CachedIds {
    fn from_slice(ids: &[u32]) -> Self {
        if ids.len() <= 5 {
            let mut inline = [0u32; 5];
            inline[..ids.len()].copy_from_slice(ids);
            CachedIds::Inline {
                len: ids.len() as u8,
                ids: inline,
            }
        } else {
            CachedIds::Boxed(ids.into())
        }
    }

    #[inline]
    fn as_slice(&self) -> &[u32] {
        match self {
            CachedIds::Inline { len, ids } => &ids[..*len as usize],
            CachedIds::Boxed(ids) => ids,
        }
    }
}

/// Slots of the direct-mapped front of a [`WordCache`] (a power of two).
const FRONT_SLOTS: usize = 1024;

/// One slot of the front: a pre-token of at most 16 bytes, zero-padded into one integer, with
/// its ids when it has at most three (nearly every English word has one or two).
#[derive(Clone, Copy, Default)]
struct FrontSlot {
    key: u128,
    /// The pre-token's length; 0 marks an empty slot (pre-tokens are never empty).
    len: u8,
    n: u8,
    ids: [u32; 3],
}

/// `piece` as the front's key and slot index, if it is short enough for the front.
#[inline]
fn front_key(piece: &[u8]) -> Option<(u128, usize)> {
    if piece.len() > 16 {
        return None;
    }
    let key = padded_le(piece);
    let h = ((key as u64) ^ ((key >> 64) as u64).rotate_left(29) ^ piece.len() as u64)
        .wrapping_mul(HASH_K);
    Some((key, (h >> 54) as usize & (FRONT_SLOTS - 1)))
}

/// `piece` (at most 16 bytes) zero-padded to 16 and read as a little-endian integer, from at
/// most two overlapping loads of its own bytes. (Copying it into a zeroed buffer and reading
/// that back stalls on the store-to-load forward: a third of the count's time, measured.)
#[inline]
fn padded_le(piece: &[u8]) -> u128 {
    let n = piece.len();
    let u64_at = |i: usize| u64::from_le_bytes(piece[i..i + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |i: usize| {
        u64::from(u32::from_le_bytes(
            piece[i..i + 4].try_into().unwrap_or([0; 4]),
        ))
    };
    let (lo, hi) = match n {
        // The second load ends at the last byte; shifting drops the bytes it shares with the first.
        9..=16 => (u64_at(0), u64_at(n - 8) >> (8 * (16 - n))),
        8 => (u64_at(0), 0),
        4..=7 => (u32_at(0) | (u32_at(n - 4) << (8 * (n - 4))), 0),
        _ => (
            piece
                .iter()
                .enumerate()
                .fold(0u64, |acc, (i, &b)| acc | (u64::from(b) << (8 * i))),
            0,
        ),
    };
    u128::from(lo) | (u128::from(hi) << 64)
}

/// Remembers `ids` of a pre-token of `len` bytes in its front slot, when they fit there.
#[inline]
fn to_front(front: &mut [FrontSlot], (key, slot): (u128, usize), len: usize, ids: &[u32]) {
    if ids.len() <= 3 {
        let mut inline = [0u32; 3];
        inline[..ids.len()].copy_from_slice(ids);
        front[slot] = FrontSlot {
            key,
            len: len as u8,
            n: ids.len() as u8,
            ids: inline,
        };
    }
}

/// Pre-token bytes → ids, bounded (see the section comment).
///
/// In front of the two generations sits a small direct-mapped table of short pre-tokens: a hit
/// there is one integer compare, with no hashing of a byte string, no probing and no call to
/// `memcmp` (the output text of a stream is counted pre-token by pre-token, so this is the
/// count's inner loop). A slot holds the last pre-token that mapped to it; the generations stay
/// the cache of record.
pub(super) struct WordCache {
    front: Box<[FrontSlot]>,
    young: FastMap<Box<[u8]>, CachedIds>,
    old: FastMap<Box<[u8]>, CachedIds>,
}

impl WordCache {
    fn new() -> Self {
        // Tables grow on demand (a thread that counts a few prompts stays small) up to one
        // generation's size, and `clear` keeps that allocation from then on.
        WordCache {
            front: vec![FrontSlot::default(); FRONT_SLOTS].into_boxed_slice(),
            young: FastMap::default(),
            old: FastMap::default(),
        }
    }

    /// Hands the ids of `piece` to `sink`, computing them with `compute` (into `tmp`) on a miss.
    #[inline]
    pub(super) fn with_ids(
        &mut self,
        piece: &[u8],
        tmp: &mut Vec<u32>,
        compute: impl FnOnce(&mut Vec<u32>),
        sink: &mut impl FnMut(&[u32]),
    ) {
        let front = front_key(piece);
        if let Some((key, slot)) = front {
            let f = &self.front[slot];
            if f.key == key && usize::from(f.len) == piece.len() {
                sink(&f.ids[..usize::from(f.n)]);
                return;
            }
        }
        if let Some(ids) = self.young.get(piece) {
            sink(ids.as_slice());
            if let Some(k) = front {
                to_front(&mut self.front, k, piece.len(), ids.as_slice());
            }
            return;
        }
        if let Some((key, ids)) = self.old.remove_entry(piece) {
            sink(ids.as_slice());
            if let Some(k) = front {
                to_front(&mut self.front, k, piece.len(), ids.as_slice());
            }
            self.insert(key, ids);
            return;
        }
        compute(tmp);
        sink(tmp);
        if let Some(k) = front {
            to_front(&mut self.front, k, piece.len(), tmp);
        }
        self.insert(piece.into(), CachedIds::from_slice(tmp));
    }

    fn insert(&mut self, key: Box<[u8]>, ids: CachedIds) {
        if self.young.len() >= CACHE_GENERATION {
            // Age: the old generation is dropped, the young one becomes old. `clear` keeps the
            // table's allocation, so memory stays flat.
            std::mem::swap(&mut self.young, &mut self.old);
            self.young.clear();
        }
        self.young.insert(key, ids);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

/// Reusable buffers for merging, so cache misses do not allocate either once warm.
#[derive(Default)]
pub(super) struct MergeWork {
    pub(super) ranks: Vec<u64>,
    pub(super) prev: Vec<u32>,
    pub(super) next: Vec<u32>,
    pub(super) alive: Vec<bool>,
    pub(super) heap: BinaryHeap<Reverse<(u32, u32)>>,
}

#[derive(Default)]
pub(super) struct Scratch {
    pub(super) work: MergeWork,
    /// Ids of the pre-token being merged.
    pub(super) out: Vec<u32>,
}

pub(super) struct EngineCache {
    id: u64,
    engine: Weak<ByteLevelBpe>,
    words: WordCache,
}

#[derive(Default)]
pub(super) struct ThreadState {
    pub(super) caches: Vec<EngineCache>,
    pub(super) scratch: Scratch,
}

thread_local! {
    pub(super) static THREAD_STATE: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// This thread's cache for `engine`, created on first use; caches of dropped engines are freed
/// then, and the oldest is evicted past [`MAX_ENGINES_PER_THREAD`].
pub(super) fn cache_for<'a>(
    caches: &'a mut Vec<EngineCache>,
    engine: &Arc<ByteLevelBpe>,
) -> &'a mut WordCache {
    let idx = match caches.iter().position(|c| c.id == engine.id) {
        Some(i) => i,
        None => {
            caches.retain(|c| c.engine.strong_count() > 0);
            if caches.len() >= MAX_ENGINES_PER_THREAD {
                caches.remove(0);
            }
            caches.push(EngineCache {
                id: engine.id,
                engine: Arc::downgrade(engine),
                words: WordCache::new(),
            });
            caches.len() - 1
        }
    };
    &mut caches[idx].words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_le_is_the_zero_padded_read() {
        let bytes: Vec<u8> = (0u8..16)
            .map(|i| i.wrapping_mul(37).wrapping_add(200))
            .collect();
        for n in 0..=16 {
            let mut b = [0u8; 16];
            b[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(padded_le(&bytes[..n]), u128::from_le_bytes(b), "{n} bytes");
        }
    }
}
