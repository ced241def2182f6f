//! Which tokenizer counts tokens, and how it does so fast enough to sit on the hot path.
//!
//! Token counting runs once per completed request in the load generator (100–2000 output tokens
//! of text; on the collector's thread, see `load::queue`) and once per prompt in the simulated
//! server. The Hugging Face `tokenizers` pipeline
//! costs ~55 µs for a 100-token text and ~540 µs for 1000 tokens (release, 2-core dev machine:
//! regex pre-tokenizer through a backtracking VM, offsets, an `Encoding` with seven vectors),
//! over half of the client's CPU budget of ~100 µs per 100-token request on its own. So
//! [`Tokenizer`] has two engines behind one handle:
//!
//! * **Our byte-level BPE** (`ByteLevelBpe`, ~1.6 µs per 100 tokens, ~15 µs per 1000, no
//!   allocation; see `benches/tokenizer.rs`) for the built-in GPT-2 tokenizer and for any
//!   `tokenizer.json` whose pipeline is provably the same shape (no normalizer, GPT-2's
//!   `ByteLevel` pre-tokenizer without prefix space, a plain BPE model, added tokens without
//!   strip/word-boundary options). It is a hand-written scanner equivalent to GPT-2's split regex
//!   `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, GPT-2's
//!   byte→character map, merge ranks from the same JSON, and a bounded per-thread cache from
//!   pre-token bytes to ids, because most words repeat. With a warm cache `count()` does not
//!   allocate.
//! * **Hugging Face `tokenizers`** for every other `tokenizer.json` (SentencePiece/Llama,
//!   WordPiece, Unigram, custom split regexes, normalizers...). No word cache sits in front of it:
//!   whether a text splits into independently tokenized words depends on its normalizer and
//!   pre-tokenizer (SentencePiece-style pipelines have no word boundaries, `Metaspace` treats the
//!   first word differently), so a per-word cache is not equivalent in general. HF's BPE model
//!   already caches merged words internally.
//!
//! Both engines count like GenAI-Perf (`add_special_tokens=False`): no BOS/EOS from the
//! post-processor, but added tokens that occur literally in the text are still recognised, as HF
//! does. For GPT-2 that means the text `<|endoftext|>` counts as one token (id 50256).
//!
//! Equivalence with HF is checked by tests that load the same embedded JSON through the
//! `tokenizers` crate and compare ids over thousands of fixed and seeded random strings, and by an
//! exhaustive check of the character classes against the regex engine HF uses.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;

/// The GPT-2 tokenizer as a gzip-compressed Hugging Face `tokenizer.json`, built by
/// `scripts/make_gpt2_tokenizer.py` from OpenAI's GPT-2 vocabulary and merges (MIT licence).
static GPT2_TOKENIZER_JSON_GZ: &[u8] = include_bytes!("../../assets/gpt2-tokenizer.json.gz");

/// Counts, encodes and decodes text. Cheap to clone (shared inner state); `Send + Sync`.
#[derive(Clone)]
pub struct Tokenizer {
    backend: Backend,
    name: Arc<str>,
}

/// Which engine does the work.
#[derive(Clone)]
enum Backend {
    /// Our byte-level BPE for everything (the built-in GPT-2).
    Fast(Arc<ByteLevelBpe>),
    /// A file with a GPT-2-shaped pipeline: our BPE encodes and counts; HF decodes, because
    /// decoders vary between such files and decoding is not on the hot path.
    FastEncode {
        fast: Arc<ByteLevelBpe>,
        hf: Arc<tokenizers::Tokenizer>,
    },
    /// Hugging Face `tokenizers` for everything.
    Hf(Arc<tokenizers::Tokenizer>),
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("name", &self.name)
            .field("fast", &self.is_fast())
            .finish()
    }
}

impl Tokenizer {
    /// The built-in GPT-2 tokenizer, loaded once per process (~30 ms in release).
    pub fn builtin_gpt2() -> Tokenizer {
        static CELL: OnceLock<Tokenizer> = OnceLock::new();
        CELL.get_or_init(|| {
            // The asset is part of the binary and covered by tests, so failing here is a build
            // defect, not a user error.
            let json =
                gunzip(GPT2_TOKENIZER_JSON_GZ).expect("embedded GPT-2 tokenizer is valid gzip");
            let bpe = ByteLevelBpe::from_tokenizer_json(&json)
                .expect("embedded GPT-2 tokenizer is a valid byte-level BPE tokenizer.json");
            Tokenizer {
                backend: Backend::Fast(Arc::new(bpe)),
                name: Arc::from("gpt2 (built-in)"),
            }
        })
        .clone()
    }

    /// Loads a Hugging Face `tokenizer.json` from disk (`--tokenizer`).
    ///
    /// Truncation and padding stored in the file are switched off, as `transformers` does for a
    /// plain `tokenizer(text)` call (what GenAI-Perf counts with): a token count must not be capped
    /// at some `max_length` nor padded. If the file's pipeline is GPT-2-shaped (see the module
    /// docs), counting and encoding use the fast engine, built from HF's own parsed vocabulary and
    /// merges; otherwise HF does everything.
    pub fn from_file(path: &Path) -> Result<Tokenizer> {
        let mut tk = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow!("{e}"))
            .with_context(|| {
                format!(
                    "cannot load tokenizer {}: expected a Hugging Face tokenizer.json file",
                    path.display()
                )
            })?;
        tk.with_truncation(None).map_err(|e| anyhow!("{e}"))?;
        tk.with_padding(None);
        let hf = Arc::new(tk);
        let name: Arc<str> = Arc::from(path.display().to_string());
        let backend = match ByteLevelBpe::from_hf(&hf) {
            Ok(fast) => Backend::FastEncode {
                fast: Arc::new(fast),
                hf,
            },
            Err(why) => {
                tracing::debug!(tokenizer = %name, "using the Hugging Face pipeline: {why}");
                Backend::Hf(hf)
            }
        };
        Ok(Tokenizer { backend, name })
    }

    /// A short human-readable name, for `input_config` and logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether counting and encoding run on the built-in fast byte-level BPE (rather than the
    /// Hugging Face pipeline).
    pub fn is_fast(&self) -> bool {
        !matches!(self.backend, Backend::Hf(_))
    }

    /// Number of tokens in `text`, without special tokens (as GenAI-Perf counts). On the fast
    /// engine this does not allocate once the thread's word cache is warm.
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        match &self.backend {
            Backend::Fast(fast) | Backend::FastEncode { fast, .. } => fast.count(text),
            Backend::Hf(hf) => hf.encode_fast(text, false).map(|e| e.len()).unwrap_or(0),
        }
    }

    /// Token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match &self.backend {
            Backend::Fast(fast) | Backend::FastEncode { fast, .. } => fast.encode(text),
            Backend::Hf(hf) => hf
                .encode_fast(text, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default(),
        }
    }

    /// Text of a token id sequence. Unknown ids are skipped and byte sequences that are not valid
    /// UTF-8 become U+FFFD, as in HF's byte-level decoder. With the built-in tokenizer
    /// `decode(&encode(s)) == s` for every string.
    pub fn decode(&self, ids: &[u32]) -> String {
        match &self.backend {
            Backend::Fast(fast) => fast.decode(ids),
            Backend::FastEncode { hf, .. } | Backend::Hf(hf) => {
                hf.decode(ids, false).unwrap_or_default()
            }
        }
    }
}

fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::with_capacity(bytes.len() * 3);
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

// ------------------------------------------------------------------------------------------------
// Character classes of GPT-2's split regex.

/// The classes the split regex distinguishes: `\p{L}`, `\p{N}`, `\s`, and everything else.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Letter,
    Number,
    Space,
    Other,
}

/// Classes of the ASCII characters, so the common case is one table load.
const ASCII_CLASS: [Class; 128] = {
    let mut t = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
            b'0'..=b'9' => Class::Number,
            b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' => Class::Space,
            _ => Class::Other,
        };
        b += 1;
    }
    t
};

/// Class of one character, as the regex crate (which HF's `fancy-regex` backend delegates
/// character classes to) defines `\p{L}`, `\p{N}` and `\s`.
///
/// `char::is_whitespace` is Unicode `White_Space`, exactly the regex crate's `\s`. There is no
/// `is_letter` in std, and `char::is_alphabetic` is the wider `Alphabetic` property (it includes
/// combining marks such as Devanagari vowel signs, which are `\p{M}`, and letter numbers such as
/// Roman numerals, which are `\p{N}`), while `char::is_numeric` follows std's newer Unicode version.
/// Hence the tables below, which the tests check against the regex engine for every code point.
#[inline]
fn class_of(c: char) -> Class {
    let u = c as u32;
    if u < 128 {
        ASCII_CLASS[u as usize]
    } else if c.is_whitespace() {
        Class::Space
    } else if in_ranges(LETTER, u) {
        Class::Letter
    } else if in_ranges(NUMBER, u) {
        Class::Number
    } else {
        Class::Other
    }
}

/// Whether `u` lies in one of the inclusive ranges of `table` (flattened `start, end` pairs,
/// sorted, non-overlapping).
#[inline]
fn in_ranges(table: &[u32], u: u32) -> bool {
    let (pairs, _) = table.as_chunks::<2>();
    let i = pairs.partition_point(|p| p[1] < u);
    i < pairs.len() && pairs[i][0] <= u
}

// Non-ASCII code points of `\p{L}` and `\p{N}` (Unicode 16.0, the version of regex-syntax 0.8,
// which std's Unicode 17 tables no longer match), as inclusive ranges. Generated from the regex
// engine itself: `TTFTBENCH_PRINT_UNICODE_TABLES=1 cargo test --lib unicode_tables -- --nocapture`
// prints them again after a dependency update, and the test fails if they drift.
/// `\p{L}` above ASCII: inclusive `start, end` pairs.
#[rustfmt::skip]
const LETTER: &[u32] = &[
    0xaa, 0xaa, 0xb5, 0xb5, 0xba, 0xba, 0xc0, 0xd6, 0xd8, 0xf6, 0xf8, 0x2c1,
    0x2c6, 0x2d1, 0x2e0, 0x2e4, 0x2ec, 0x2ec, 0x2ee, 0x2ee, 0x370, 0x374, 0x376, 0x377,
    0x37a, 0x37d, 0x37f, 0x37f, 0x386, 0x386, 0x388, 0x38a, 0x38c, 0x38c, 0x38e, 0x3a1,
    0x3a3, 0x3f5, 0x3f7, 0x481, 0x48a, 0x52f, 0x531, 0x556, 0x559, 0x559, 0x560, 0x588,
    0x5d0, 0x5ea, 0x5ef, 0x5f2, 0x620, 0x64a, 0x66e, 0x66f, 0x671, 0x6d3, 0x6d5, 0x6d5,
    0x6e5, 0x6e6, 0x6ee, 0x6ef, 0x6fa, 0x6fc, 0x6ff, 0x6ff, 0x710, 0x710, 0x712, 0x72f,
    0x74d, 0x7a5, 0x7b1, 0x7b1, 0x7ca, 0x7ea, 0x7f4, 0x7f5, 0x7fa, 0x7fa, 0x800, 0x815,
    0x81a, 0x81a, 0x824, 0x824, 0x828, 0x828, 0x840, 0x858, 0x860, 0x86a, 0x870, 0x887,
    0x889, 0x88e, 0x8a0, 0x8c9, 0x904, 0x939, 0x93d, 0x93d, 0x950, 0x950, 0x958, 0x961,
    0x971, 0x980, 0x985, 0x98c, 0x98f, 0x990, 0x993, 0x9a8, 0x9aa, 0x9b0, 0x9b2, 0x9b2,
    0x9b6, 0x9b9, 0x9bd, 0x9bd, 0x9ce, 0x9ce, 0x9dc, 0x9dd, 0x9df, 0x9e1, 0x9f0, 0x9f1,
    0x9fc, 0x9fc, 0xa05, 0xa0a, 0xa0f, 0xa10, 0xa13, 0xa28, 0xa2a, 0xa30, 0xa32, 0xa33,
    0xa35, 0xa36, 0xa38, 0xa39, 0xa59, 0xa5c, 0xa5e, 0xa5e, 0xa72, 0xa74, 0xa85, 0xa8d,
    0xa8f, 0xa91, 0xa93, 0xaa8, 0xaaa, 0xab0, 0xab2, 0xab3, 0xab5, 0xab9, 0xabd, 0xabd,
    0xad0, 0xad0, 0xae0, 0xae1, 0xaf9, 0xaf9, 0xb05, 0xb0c, 0xb0f, 0xb10, 0xb13, 0xb28,
    0xb2a, 0xb30, 0xb32, 0xb33, 0xb35, 0xb39, 0xb3d, 0xb3d, 0xb5c, 0xb5d, 0xb5f, 0xb61,
    0xb71, 0xb71, 0xb83, 0xb83, 0xb85, 0xb8a, 0xb8e, 0xb90, 0xb92, 0xb95, 0xb99, 0xb9a,
    0xb9c, 0xb9c, 0xb9e, 0xb9f, 0xba3, 0xba4, 0xba8, 0xbaa, 0xbae, 0xbb9, 0xbd0, 0xbd0,
    0xc05, 0xc0c, 0xc0e, 0xc10, 0xc12, 0xc28, 0xc2a, 0xc39, 0xc3d, 0xc3d, 0xc58, 0xc5a,
    0xc5d, 0xc5d, 0xc60, 0xc61, 0xc80, 0xc80, 0xc85, 0xc8c, 0xc8e, 0xc90, 0xc92, 0xca8,
    0xcaa, 0xcb3, 0xcb5, 0xcb9, 0xcbd, 0xcbd, 0xcdd, 0xcde, 0xce0, 0xce1, 0xcf1, 0xcf2,
    0xd04, 0xd0c, 0xd0e, 0xd10, 0xd12, 0xd3a, 0xd3d, 0xd3d, 0xd4e, 0xd4e, 0xd54, 0xd56,
    0xd5f, 0xd61, 0xd7a, 0xd7f, 0xd85, 0xd96, 0xd9a, 0xdb1, 0xdb3, 0xdbb, 0xdbd, 0xdbd,
    0xdc0, 0xdc6, 0xe01, 0xe30, 0xe32, 0xe33, 0xe40, 0xe46, 0xe81, 0xe82, 0xe84, 0xe84,
    0xe86, 0xe8a, 0xe8c, 0xea3, 0xea5, 0xea5, 0xea7, 0xeb0, 0xeb2, 0xeb3, 0xebd, 0xebd,
    0xec0, 0xec4, 0xec6, 0xec6, 0xedc, 0xedf, 0xf00, 0xf00, 0xf40, 0xf47, 0xf49, 0xf6c,
    0xf88, 0xf8c, 0x1000, 0x102a, 0x103f, 0x103f, 0x1050, 0x1055, 0x105a, 0x105d, 0x1061, 0x1061,
    0x1065, 0x1066, 0x106e, 0x1070, 0x1075, 0x1081, 0x108e, 0x108e, 0x10a0, 0x10c5, 0x10c7, 0x10c7,
    0x10cd, 0x10cd, 0x10d0, 0x10fa, 0x10fc, 0x1248, 0x124a, 0x124d, 0x1250, 0x1256, 0x1258, 0x1258,
    0x125a, 0x125d, 0x1260, 0x1288, 0x128a, 0x128d, 0x1290, 0x12b0, 0x12b2, 0x12b5, 0x12b8, 0x12be,
    0x12c0, 0x12c0, 0x12c2, 0x12c5, 0x12c8, 0x12d6, 0x12d8, 0x1310, 0x1312, 0x1315, 0x1318, 0x135a,
    0x1380, 0x138f, 0x13a0, 0x13f5, 0x13f8, 0x13fd, 0x1401, 0x166c, 0x166f, 0x167f, 0x1681, 0x169a,
    0x16a0, 0x16ea, 0x16f1, 0x16f8, 0x1700, 0x1711, 0x171f, 0x1731, 0x1740, 0x1751, 0x1760, 0x176c,
    0x176e, 0x1770, 0x1780, 0x17b3, 0x17d7, 0x17d7, 0x17dc, 0x17dc, 0x1820, 0x1878, 0x1880, 0x1884,
    0x1887, 0x18a8, 0x18aa, 0x18aa, 0x18b0, 0x18f5, 0x1900, 0x191e, 0x1950, 0x196d, 0x1970, 0x1974,
    0x1980, 0x19ab, 0x19b0, 0x19c9, 0x1a00, 0x1a16, 0x1a20, 0x1a54, 0x1aa7, 0x1aa7, 0x1b05, 0x1b33,
    0x1b45, 0x1b4c, 0x1b83, 0x1ba0, 0x1bae, 0x1baf, 0x1bba, 0x1be5, 0x1c00, 0x1c23, 0x1c4d, 0x1c4f,
    0x1c5a, 0x1c7d, 0x1c80, 0x1c8a, 0x1c90, 0x1cba, 0x1cbd, 0x1cbf, 0x1ce9, 0x1cec, 0x1cee, 0x1cf3,
    0x1cf5, 0x1cf6, 0x1cfa, 0x1cfa, 0x1d00, 0x1dbf, 0x1e00, 0x1f15, 0x1f18, 0x1f1d, 0x1f20, 0x1f45,
    0x1f48, 0x1f4d, 0x1f50, 0x1f57, 0x1f59, 0x1f59, 0x1f5b, 0x1f5b, 0x1f5d, 0x1f5d, 0x1f5f, 0x1f7d,
    0x1f80, 0x1fb4, 0x1fb6, 0x1fbc, 0x1fbe, 0x1fbe, 0x1fc2, 0x1fc4, 0x1fc6, 0x1fcc, 0x1fd0, 0x1fd3,
    0x1fd6, 0x1fdb, 0x1fe0, 0x1fec, 0x1ff2, 0x1ff4, 0x1ff6, 0x1ffc, 0x2071, 0x2071, 0x207f, 0x207f,
    0x2090, 0x209c, 0x2102, 0x2102, 0x2107, 0x2107, 0x210a, 0x2113, 0x2115, 0x2115, 0x2119, 0x211d,
    0x2124, 0x2124, 0x2126, 0x2126, 0x2128, 0x2128, 0x212a, 0x212d, 0x212f, 0x2139, 0x213c, 0x213f,
    0x2145, 0x2149, 0x214e, 0x214e, 0x2183, 0x2184, 0x2c00, 0x2ce4, 0x2ceb, 0x2cee, 0x2cf2, 0x2cf3,
    0x2d00, 0x2d25, 0x2d27, 0x2d27, 0x2d2d, 0x2d2d, 0x2d30, 0x2d67, 0x2d6f, 0x2d6f, 0x2d80, 0x2d96,
    0x2da0, 0x2da6, 0x2da8, 0x2dae, 0x2db0, 0x2db6, 0x2db8, 0x2dbe, 0x2dc0, 0x2dc6, 0x2dc8, 0x2dce,
    0x2dd0, 0x2dd6, 0x2dd8, 0x2dde, 0x2e2f, 0x2e2f, 0x3005, 0x3006, 0x3031, 0x3035, 0x303b, 0x303c,
    0x3041, 0x3096, 0x309d, 0x309f, 0x30a1, 0x30fa, 0x30fc, 0x30ff, 0x3105, 0x312f, 0x3131, 0x318e,
    0x31a0, 0x31bf, 0x31f0, 0x31ff, 0x3400, 0x4dbf, 0x4e00, 0xa48c, 0xa4d0, 0xa4fd, 0xa500, 0xa60c,
    0xa610, 0xa61f, 0xa62a, 0xa62b, 0xa640, 0xa66e, 0xa67f, 0xa69d, 0xa6a0, 0xa6e5, 0xa717, 0xa71f,
    0xa722, 0xa788, 0xa78b, 0xa7cd, 0xa7d0, 0xa7d1, 0xa7d3, 0xa7d3, 0xa7d5, 0xa7dc, 0xa7f2, 0xa801,
    0xa803, 0xa805, 0xa807, 0xa80a, 0xa80c, 0xa822, 0xa840, 0xa873, 0xa882, 0xa8b3, 0xa8f2, 0xa8f7,
    0xa8fb, 0xa8fb, 0xa8fd, 0xa8fe, 0xa90a, 0xa925, 0xa930, 0xa946, 0xa960, 0xa97c, 0xa984, 0xa9b2,
    0xa9cf, 0xa9cf, 0xa9e0, 0xa9e4, 0xa9e6, 0xa9ef, 0xa9fa, 0xa9fe, 0xaa00, 0xaa28, 0xaa40, 0xaa42,
    0xaa44, 0xaa4b, 0xaa60, 0xaa76, 0xaa7a, 0xaa7a, 0xaa7e, 0xaaaf, 0xaab1, 0xaab1, 0xaab5, 0xaab6,
    0xaab9, 0xaabd, 0xaac0, 0xaac0, 0xaac2, 0xaac2, 0xaadb, 0xaadd, 0xaae0, 0xaaea, 0xaaf2, 0xaaf4,
    0xab01, 0xab06, 0xab09, 0xab0e, 0xab11, 0xab16, 0xab20, 0xab26, 0xab28, 0xab2e, 0xab30, 0xab5a,
    0xab5c, 0xab69, 0xab70, 0xabe2, 0xac00, 0xd7a3, 0xd7b0, 0xd7c6, 0xd7cb, 0xd7fb, 0xf900, 0xfa6d,
    0xfa70, 0xfad9, 0xfb00, 0xfb06, 0xfb13, 0xfb17, 0xfb1d, 0xfb1d, 0xfb1f, 0xfb28, 0xfb2a, 0xfb36,
    0xfb38, 0xfb3c, 0xfb3e, 0xfb3e, 0xfb40, 0xfb41, 0xfb43, 0xfb44, 0xfb46, 0xfbb1, 0xfbd3, 0xfd3d,
    0xfd50, 0xfd8f, 0xfd92, 0xfdc7, 0xfdf0, 0xfdfb, 0xfe70, 0xfe74, 0xfe76, 0xfefc, 0xff21, 0xff3a,
    0xff41, 0xff5a, 0xff66, 0xffbe, 0xffc2, 0xffc7, 0xffca, 0xffcf, 0xffd2, 0xffd7, 0xffda, 0xffdc,
    0x10000, 0x1000b, 0x1000d, 0x10026, 0x10028, 0x1003a, 0x1003c, 0x1003d, 0x1003f, 0x1004d, 0x10050, 0x1005d,
    0x10080, 0x100fa, 0x10280, 0x1029c, 0x102a0, 0x102d0, 0x10300, 0x1031f, 0x1032d, 0x10340, 0x10342, 0x10349,
    0x10350, 0x10375, 0x10380, 0x1039d, 0x103a0, 0x103c3, 0x103c8, 0x103cf, 0x10400, 0x1049d, 0x104b0, 0x104d3,
    0x104d8, 0x104fb, 0x10500, 0x10527, 0x10530, 0x10563, 0x10570, 0x1057a, 0x1057c, 0x1058a, 0x1058c, 0x10592,
    0x10594, 0x10595, 0x10597, 0x105a1, 0x105a3, 0x105b1, 0x105b3, 0x105b9, 0x105bb, 0x105bc, 0x105c0, 0x105f3,
    0x10600, 0x10736, 0x10740, 0x10755, 0x10760, 0x10767, 0x10780, 0x10785, 0x10787, 0x107b0, 0x107b2, 0x107ba,
    0x10800, 0x10805, 0x10808, 0x10808, 0x1080a, 0x10835, 0x10837, 0x10838, 0x1083c, 0x1083c, 0x1083f, 0x10855,
    0x10860, 0x10876, 0x10880, 0x1089e, 0x108e0, 0x108f2, 0x108f4, 0x108f5, 0x10900, 0x10915, 0x10920, 0x10939,
    0x10980, 0x109b7, 0x109be, 0x109bf, 0x10a00, 0x10a00, 0x10a10, 0x10a13, 0x10a15, 0x10a17, 0x10a19, 0x10a35,
    0x10a60, 0x10a7c, 0x10a80, 0x10a9c, 0x10ac0, 0x10ac7, 0x10ac9, 0x10ae4, 0x10b00, 0x10b35, 0x10b40, 0x10b55,
    0x10b60, 0x10b72, 0x10b80, 0x10b91, 0x10c00, 0x10c48, 0x10c80, 0x10cb2, 0x10cc0, 0x10cf2, 0x10d00, 0x10d23,
    0x10d4a, 0x10d65, 0x10d6f, 0x10d85, 0x10e80, 0x10ea9, 0x10eb0, 0x10eb1, 0x10ec2, 0x10ec4, 0x10f00, 0x10f1c,
    0x10f27, 0x10f27, 0x10f30, 0x10f45, 0x10f70, 0x10f81, 0x10fb0, 0x10fc4, 0x10fe0, 0x10ff6, 0x11003, 0x11037,
    0x11071, 0x11072, 0x11075, 0x11075, 0x11083, 0x110af, 0x110d0, 0x110e8, 0x11103, 0x11126, 0x11144, 0x11144,
    0x11147, 0x11147, 0x11150, 0x11172, 0x11176, 0x11176, 0x11183, 0x111b2, 0x111c1, 0x111c4, 0x111da, 0x111da,
    0x111dc, 0x111dc, 0x11200, 0x11211, 0x11213, 0x1122b, 0x1123f, 0x11240, 0x11280, 0x11286, 0x11288, 0x11288,
    0x1128a, 0x1128d, 0x1128f, 0x1129d, 0x1129f, 0x112a8, 0x112b0, 0x112de, 0x11305, 0x1130c, 0x1130f, 0x11310,
    0x11313, 0x11328, 0x1132a, 0x11330, 0x11332, 0x11333, 0x11335, 0x11339, 0x1133d, 0x1133d, 0x11350, 0x11350,
    0x1135d, 0x11361, 0x11380, 0x11389, 0x1138b, 0x1138b, 0x1138e, 0x1138e, 0x11390, 0x113b5, 0x113b7, 0x113b7,
    0x113d1, 0x113d1, 0x113d3, 0x113d3, 0x11400, 0x11434, 0x11447, 0x1144a, 0x1145f, 0x11461, 0x11480, 0x114af,
    0x114c4, 0x114c5, 0x114c7, 0x114c7, 0x11580, 0x115ae, 0x115d8, 0x115db, 0x11600, 0x1162f, 0x11644, 0x11644,
    0x11680, 0x116aa, 0x116b8, 0x116b8, 0x11700, 0x1171a, 0x11740, 0x11746, 0x11800, 0x1182b, 0x118a0, 0x118df,
    0x118ff, 0x11906, 0x11909, 0x11909, 0x1190c, 0x11913, 0x11915, 0x11916, 0x11918, 0x1192f, 0x1193f, 0x1193f,
    0x11941, 0x11941, 0x119a0, 0x119a7, 0x119aa, 0x119d0, 0x119e1, 0x119e1, 0x119e3, 0x119e3, 0x11a00, 0x11a00,
    0x11a0b, 0x11a32, 0x11a3a, 0x11a3a, 0x11a50, 0x11a50, 0x11a5c, 0x11a89, 0x11a9d, 0x11a9d, 0x11ab0, 0x11af8,
    0x11bc0, 0x11be0, 0x11c00, 0x11c08, 0x11c0a, 0x11c2e, 0x11c40, 0x11c40, 0x11c72, 0x11c8f, 0x11d00, 0x11d06,
    0x11d08, 0x11d09, 0x11d0b, 0x11d30, 0x11d46, 0x11d46, 0x11d60, 0x11d65, 0x11d67, 0x11d68, 0x11d6a, 0x11d89,
    0x11d98, 0x11d98, 0x11ee0, 0x11ef2, 0x11f02, 0x11f02, 0x11f04, 0x11f10, 0x11f12, 0x11f33, 0x11fb0, 0x11fb0,
    0x12000, 0x12399, 0x12480, 0x12543, 0x12f90, 0x12ff0, 0x13000, 0x1342f, 0x13441, 0x13446, 0x13460, 0x143fa,
    0x14400, 0x14646, 0x16100, 0x1611d, 0x16800, 0x16a38, 0x16a40, 0x16a5e, 0x16a70, 0x16abe, 0x16ad0, 0x16aed,
    0x16b00, 0x16b2f, 0x16b40, 0x16b43, 0x16b63, 0x16b77, 0x16b7d, 0x16b8f, 0x16d40, 0x16d6c, 0x16e40, 0x16e7f,
    0x16f00, 0x16f4a, 0x16f50, 0x16f50, 0x16f93, 0x16f9f, 0x16fe0, 0x16fe1, 0x16fe3, 0x16fe3, 0x17000, 0x187f7,
    0x18800, 0x18cd5, 0x18cff, 0x18d08, 0x1aff0, 0x1aff3, 0x1aff5, 0x1affb, 0x1affd, 0x1affe, 0x1b000, 0x1b122,
    0x1b132, 0x1b132, 0x1b150, 0x1b152, 0x1b155, 0x1b155, 0x1b164, 0x1b167, 0x1b170, 0x1b2fb, 0x1bc00, 0x1bc6a,
    0x1bc70, 0x1bc7c, 0x1bc80, 0x1bc88, 0x1bc90, 0x1bc99, 0x1d400, 0x1d454, 0x1d456, 0x1d49c, 0x1d49e, 0x1d49f,
    0x1d4a2, 0x1d4a2, 0x1d4a5, 0x1d4a6, 0x1d4a9, 0x1d4ac, 0x1d4ae, 0x1d4b9, 0x1d4bb, 0x1d4bb, 0x1d4bd, 0x1d4c3,
    0x1d4c5, 0x1d505, 0x1d507, 0x1d50a, 0x1d50d, 0x1d514, 0x1d516, 0x1d51c, 0x1d51e, 0x1d539, 0x1d53b, 0x1d53e,
    0x1d540, 0x1d544, 0x1d546, 0x1d546, 0x1d54a, 0x1d550, 0x1d552, 0x1d6a5, 0x1d6a8, 0x1d6c0, 0x1d6c2, 0x1d6da,
    0x1d6dc, 0x1d6fa, 0x1d6fc, 0x1d714, 0x1d716, 0x1d734, 0x1d736, 0x1d74e, 0x1d750, 0x1d76e, 0x1d770, 0x1d788,
    0x1d78a, 0x1d7a8, 0x1d7aa, 0x1d7c2, 0x1d7c4, 0x1d7cb, 0x1df00, 0x1df1e, 0x1df25, 0x1df2a, 0x1e030, 0x1e06d,
    0x1e100, 0x1e12c, 0x1e137, 0x1e13d, 0x1e14e, 0x1e14e, 0x1e290, 0x1e2ad, 0x1e2c0, 0x1e2eb, 0x1e4d0, 0x1e4eb,
    0x1e5d0, 0x1e5ed, 0x1e5f0, 0x1e5f0, 0x1e7e0, 0x1e7e6, 0x1e7e8, 0x1e7eb, 0x1e7ed, 0x1e7ee, 0x1e7f0, 0x1e7fe,
    0x1e800, 0x1e8c4, 0x1e900, 0x1e943, 0x1e94b, 0x1e94b, 0x1ee00, 0x1ee03, 0x1ee05, 0x1ee1f, 0x1ee21, 0x1ee22,
    0x1ee24, 0x1ee24, 0x1ee27, 0x1ee27, 0x1ee29, 0x1ee32, 0x1ee34, 0x1ee37, 0x1ee39, 0x1ee39, 0x1ee3b, 0x1ee3b,
    0x1ee42, 0x1ee42, 0x1ee47, 0x1ee47, 0x1ee49, 0x1ee49, 0x1ee4b, 0x1ee4b, 0x1ee4d, 0x1ee4f, 0x1ee51, 0x1ee52,
    0x1ee54, 0x1ee54, 0x1ee57, 0x1ee57, 0x1ee59, 0x1ee59, 0x1ee5b, 0x1ee5b, 0x1ee5d, 0x1ee5d, 0x1ee5f, 0x1ee5f,
    0x1ee61, 0x1ee62, 0x1ee64, 0x1ee64, 0x1ee67, 0x1ee6a, 0x1ee6c, 0x1ee72, 0x1ee74, 0x1ee77, 0x1ee79, 0x1ee7c,
    0x1ee7e, 0x1ee7e, 0x1ee80, 0x1ee89, 0x1ee8b, 0x1ee9b, 0x1eea1, 0x1eea3, 0x1eea5, 0x1eea9, 0x1eeab, 0x1eebb,
    0x20000, 0x2a6df, 0x2a700, 0x2b739, 0x2b740, 0x2b81d, 0x2b820, 0x2cea1, 0x2ceb0, 0x2ebe0, 0x2ebf0, 0x2ee5d,
    0x2f800, 0x2fa1d, 0x30000, 0x3134a, 0x31350, 0x323af,
];
/// `\p{N}` above ASCII: inclusive `start, end` pairs.
#[rustfmt::skip]
const NUMBER: &[u32] = &[
    0xb2, 0xb3, 0xb9, 0xb9, 0xbc, 0xbe, 0x660, 0x669, 0x6f0, 0x6f9, 0x7c0, 0x7c9,
    0x966, 0x96f, 0x9e6, 0x9ef, 0x9f4, 0x9f9, 0xa66, 0xa6f, 0xae6, 0xaef, 0xb66, 0xb6f,
    0xb72, 0xb77, 0xbe6, 0xbf2, 0xc66, 0xc6f, 0xc78, 0xc7e, 0xce6, 0xcef, 0xd58, 0xd5e,
    0xd66, 0xd78, 0xde6, 0xdef, 0xe50, 0xe59, 0xed0, 0xed9, 0xf20, 0xf33, 0x1040, 0x1049,
    0x1090, 0x1099, 0x1369, 0x137c, 0x16ee, 0x16f0, 0x17e0, 0x17e9, 0x17f0, 0x17f9, 0x1810, 0x1819,
    0x1946, 0x194f, 0x19d0, 0x19da, 0x1a80, 0x1a89, 0x1a90, 0x1a99, 0x1b50, 0x1b59, 0x1bb0, 0x1bb9,
    0x1c40, 0x1c49, 0x1c50, 0x1c59, 0x2070, 0x2070, 0x2074, 0x2079, 0x2080, 0x2089, 0x2150, 0x2182,
    0x2185, 0x2189, 0x2460, 0x249b, 0x24ea, 0x24ff, 0x2776, 0x2793, 0x2cfd, 0x2cfd, 0x3007, 0x3007,
    0x3021, 0x3029, 0x3038, 0x303a, 0x3192, 0x3195, 0x3220, 0x3229, 0x3248, 0x324f, 0x3251, 0x325f,
    0x3280, 0x3289, 0x32b1, 0x32bf, 0xa620, 0xa629, 0xa6e6, 0xa6ef, 0xa830, 0xa835, 0xa8d0, 0xa8d9,
    0xa900, 0xa909, 0xa9d0, 0xa9d9, 0xa9f0, 0xa9f9, 0xaa50, 0xaa59, 0xabf0, 0xabf9, 0xff10, 0xff19,
    0x10107, 0x10133, 0x10140, 0x10178, 0x1018a, 0x1018b, 0x102e1, 0x102fb, 0x10320, 0x10323, 0x10341, 0x10341,
    0x1034a, 0x1034a, 0x103d1, 0x103d5, 0x104a0, 0x104a9, 0x10858, 0x1085f, 0x10879, 0x1087f, 0x108a7, 0x108af,
    0x108fb, 0x108ff, 0x10916, 0x1091b, 0x109bc, 0x109bd, 0x109c0, 0x109cf, 0x109d2, 0x109ff, 0x10a40, 0x10a48,
    0x10a7d, 0x10a7e, 0x10a9d, 0x10a9f, 0x10aeb, 0x10aef, 0x10b58, 0x10b5f, 0x10b78, 0x10b7f, 0x10ba9, 0x10baf,
    0x10cfa, 0x10cff, 0x10d30, 0x10d39, 0x10d40, 0x10d49, 0x10e60, 0x10e7e, 0x10f1d, 0x10f26, 0x10f51, 0x10f54,
    0x10fc5, 0x10fcb, 0x11052, 0x1106f, 0x110f0, 0x110f9, 0x11136, 0x1113f, 0x111d0, 0x111d9, 0x111e1, 0x111f4,
    0x112f0, 0x112f9, 0x11450, 0x11459, 0x114d0, 0x114d9, 0x11650, 0x11659, 0x116c0, 0x116c9, 0x116d0, 0x116e3,
    0x11730, 0x1173b, 0x118e0, 0x118f2, 0x11950, 0x11959, 0x11bf0, 0x11bf9, 0x11c50, 0x11c6c, 0x11d50, 0x11d59,
    0x11da0, 0x11da9, 0x11f50, 0x11f59, 0x11fc0, 0x11fd4, 0x12400, 0x1246e, 0x16130, 0x16139, 0x16a60, 0x16a69,
    0x16ac0, 0x16ac9, 0x16b50, 0x16b59, 0x16b5b, 0x16b61, 0x16d70, 0x16d79, 0x16e80, 0x16e96, 0x1ccf0, 0x1ccf9,
    0x1d2c0, 0x1d2d3, 0x1d2e0, 0x1d2f3, 0x1d360, 0x1d378, 0x1d7ce, 0x1d7ff, 0x1e140, 0x1e149, 0x1e2f0, 0x1e2f9,
    0x1e4f0, 0x1e4f9, 0x1e5f1, 0x1e5fa, 0x1e8c7, 0x1e8cf, 0x1e950, 0x1e959, 0x1ec71, 0x1ecab, 0x1ecad, 0x1ecaf,
    0x1ecb1, 0x1ecb4, 0x1ed01, 0x1ed2d, 0x1ed2f, 0x1ed3d, 0x1f100, 0x1f10c, 0x1fbf0, 0x1fbf9,
];

// ------------------------------------------------------------------------------------------------
// Pre-tokenizer: GPT-2's split regex as a hand-written scanner.

/// Decodes the character starting at byte `i` of valid UTF-8 `b`: (char, length in bytes).
#[inline]
fn char_at(b: &[u8], i: usize) -> (char, usize) {
    let x = b[i];
    if x < 0x80 {
        return (x as char, 1);
    }
    let (len, mut u) = if x < 0xE0 {
        (2, u32::from(x & 0x1F))
    } else if x < 0xF0 {
        (3, u32::from(x & 0x0F))
    } else {
        (4, u32::from(x & 0x07))
    };
    for &cont in &b[i + 1..i + len] {
        u = (u << 6) | u32::from(cont & 0x3F);
    }
    // Always valid: `b` comes from a `&str`.
    (
        char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER),
        len,
    )
}

/// End of the run of characters of class `class` starting at byte `j`.
#[inline]
fn run_end(b: &[u8], mut j: usize, class: Class) -> usize {
    while j < b.len() {
        let x = b[j];
        if x < 0x80 {
            if ASCII_CLASS[x as usize] != class {
                break;
            }
            j += 1;
        } else {
            let (c, len) = char_at(b, j);
            if class_of(c) != class {
                break;
            }
            j += len;
        }
    }
    j
}

/// End of the whitespace piece starting at `i`: `\s+(?!\S)|\s+`. A run that reaches the end of
/// the text is taken whole; a run followed by a non-space gives back its last character (which
/// then prefixes the next word if it is U+0020, or stands alone), unless it is one character long.
#[inline]
fn whitespace_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    let mut last = i;
    while j < b.len() {
        let (c, len) = char_at(b, j);
        if class_of(c) != Class::Space {
            break;
        }
        last = j;
        j += len;
    }
    if j == b.len() || last == i { j } else { last }
}

/// End of the pre-token starting at byte `i < b.len()`: the leftmost-first match of GPT-2's
/// regex, whose alternatives are tried in order: contractions, ` ?` + a run of one class, then
/// whitespace.
#[inline]
fn piece_end(b: &[u8], i: usize) -> usize {
    let x = b[i];
    if x == b'\'' {
        match (b.get(i + 1), b.get(i + 2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => return i + 2,
            (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => return i + 3,
            _ => {}
        }
    }
    // ` ?X+`: an optional U+0020 then a run of letters, numbers or other symbols.
    let start = if x == b' ' && i + 1 < b.len() {
        i + 1
    } else {
        i
    };
    let (c, _) = char_at(b, start);
    match class_of(c) {
        Class::Space => whitespace_end(b, i),
        class => run_end(b, start, class),
    }
}

/// The pre-tokens of a text, in order; together they cover the text exactly.
struct Pieces<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Pieces<'a> {
    fn new(text: &'a str) -> Self {
        Pieces { text, pos: 0 }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        if self.pos >= self.text.len() {
            return None;
        }
        let end = piece_end(self.text.as_bytes(), self.pos);
        // Piece ends are character boundaries by construction.
        let piece = &self.text[self.pos..end];
        self.pos = end;
        Some(piece)
    }
}

// ------------------------------------------------------------------------------------------------
// Hashing: std's SipHash is DoS-resistant but several times slower on short keys than needed;
// the keys here (our own vocabulary pairs and pre-tokens) make collision attacks pointless.

/// A small multiplicative hasher for short byte strings and integer pairs.
#[derive(Default, Clone, Copy)]
struct FastHasher(u64);

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

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

// ------------------------------------------------------------------------------------------------
// The byte-level BPE engine.

/// Hands out a distinct id per engine, which keys the per-thread word caches.
static NEXT_ENGINE_ID: AtomicU64 = AtomicU64::new(1);

/// GPT-2-style byte-level BPE: the pre-tokenizer above, then merges on each pre-token's bytes.
struct ByteLevelBpe {
    /// Identifies this engine's word caches in each thread.
    id: u64,
    /// Id of the one-byte token for each byte value.
    byte_ids: [u32; 256],
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
enum Segment<'a> {
    Text(&'a str),
    Added(u32),
}

/// No merge applies to this pair.
const NO_MERGE: u64 = u64::MAX;
/// Longest pre-token (in bytes) merged with the simple quadratic scan; longer ones use a heap so
/// that a megabyte-long run of letters stays O(n log n).
const MAX_SCAN_MERGE: usize = 128;

#[derive(Deserialize)]
struct TokenizerJson {
    #[serde(default)]
    added_tokens: Vec<AddedTokenJson>,
    model: BpeModelJson,
}

#[derive(Deserialize)]
struct AddedTokenJson {
    id: u32,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
struct BpeModelJson {
    vocab: HashMap<String, u32>,
    merges: Vec<MergeJson>,
}

/// Merges are written either as `"a b"` (older files) or as `["a", "b"]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum MergeJson {
    Joined(String),
    Pair(String, String),
}

/// An added token as the fast engine needs it.
struct AddedSpec {
    id: u32,
    content: String,
    normalized: bool,
}

impl ByteLevelBpe {
    /// Builds the engine from a `tokenizer.json` known to be GPT-2-shaped (the embedded one).
    fn from_tokenizer_json(json: &[u8]) -> Result<Self> {
        let doc: TokenizerJson = serde_json::from_slice(json).context("invalid tokenizer.json")?;
        let mut added = Vec::with_capacity(doc.added_tokens.len());
        for t in doc.added_tokens {
            if t.single_word || t.lstrip || t.rstrip || t.content.is_empty() {
                bail!(
                    "added token {:?} uses options the fast tokenizer does not handle",
                    t.content
                );
            }
            added.push(AddedSpec {
                id: t.id,
                content: t.content,
                normalized: t.normalized,
            });
        }
        Self::new(&doc.model, added)
    }

    /// Builds the engine from a tokenizer HF has loaded, if its pipeline is one this engine
    /// reproduces exactly; otherwise says why not.
    fn from_hf(hf: &tokenizers::Tokenizer) -> std::result::Result<Self, String> {
        use tokenizers::models::ModelWrapper;
        use tokenizers::pre_tokenizers::PreTokenizerWrapper;

        if hf.get_normalizer().is_some() {
            return Err("it has a normalizer".into());
        }
        match hf.get_pre_tokenizer() {
            Some(PreTokenizerWrapper::ByteLevel(bl)) if bl.use_regex && !bl.add_prefix_space => {}
            _ => {
                return Err(
                    "its pre-tokenizer is not GPT-2's ByteLevel (regex, no prefix space)".into(),
                );
            }
        }
        let ModelWrapper::BPE(bpe) = hf.get_model() else {
            return Err("its model is not BPE".into());
        };
        // `unk_token`, `byte_fallback` and `fuse_unk` only matter for characters missing from the
        // vocabulary, which cannot happen once all 256 byte symbols are present (checked in `new`).
        if bpe.dropout.is_some_and(|d| d > 0.0)
            || bpe
                .continuing_subword_prefix
                .as_deref()
                .is_some_and(|p| !p.is_empty())
            || bpe
                .end_of_word_suffix
                .as_deref()
                .is_some_and(|s| !s.is_empty())
            || bpe.ignore_merges
        {
            return Err("its BPE model uses dropout, subword affixes or ignore_merges".into());
        }
        if hf.get_encode_special_tokens() {
            return Err("it encodes special tokens as text".into());
        }
        let mut added = Vec::new();
        for (id, t) in hf.get_added_tokens_decoder() {
            if t.single_word || t.lstrip || t.rstrip || t.content.is_empty() {
                return Err(format!(
                    "added token {:?} uses lstrip/rstrip/single_word",
                    t.content
                ));
            }
            added.push(AddedSpec {
                id,
                content: t.content,
                normalized: t.normalized,
            });
        }
        // HF's own view of vocabulary and merges (ranks in order), not our reading of the file.
        let model: BpeModelJson = serde_json::to_value(bpe)
            .and_then(serde_json::from_value)
            .map_err(|e| format!("cannot read its BPE model: {e}"))?;
        Self::new(&model, added).map_err(|e| format!("{e:#}"))
    }

    fn new(model: &BpeModelJson, added: Vec<AddedSpec>) -> Result<Self> {
        let byte_chars = byte_chars();
        let vocab = &model.vocab;

        let mut byte_ids = [0u32; 256];
        let mut buf = [0u8; 4];
        for (b, id) in byte_ids.iter_mut().enumerate() {
            let sym: &str = byte_chars[b].encode_utf8(&mut buf);
            *id = *vocab
                .get(sym)
                .ok_or_else(|| anyhow!("vocabulary lacks the byte symbol {sym:?}"))?;
        }

        let mut merges: FastMap<u64, u64> = FastMap::default();
        merges.reserve(model.merges.len());
        let mut joined = String::new();
        for (rank, m) in model.merges.iter().enumerate() {
            let (a, b) = match m {
                MergeJson::Pair(a, b) => (a.as_str(), b.as_str()),
                MergeJson::Joined(s) => {
                    let mut it = s.split(' ');
                    match (it.next(), it.next(), it.next()) {
                        (Some(a), Some(b), None) => (a, b),
                        _ => bail!("merge {s:?} is not two tokens separated by one space"),
                    }
                }
            };
            let id_of = |t: &str| {
                vocab
                    .get(t)
                    .copied()
                    .ok_or_else(|| anyhow!("merge token {t:?} is not in the vocabulary"))
            };
            joined.clear();
            joined.push_str(a);
            joined.push_str(b);
            let (ia, ib, ij) = (id_of(a)?, id_of(b)?, id_of(&joined)?);
            // A later duplicate overwrites an earlier one, as in HF's merge map.
            merges.insert(
                (u64::from(ia) << 32) | u64::from(ib),
                ((rank as u64) << 32) | u64::from(ij),
            );
        }

        // Decoding: each id's token text, byte-mapped back (HF's ByteLevel decoder keeps a token's
        // raw UTF-8 when one of its characters is not a byte symbol). Added tokens win over the
        // model's vocabulary for the same id, as in HF.
        let mut char_bytes = [u16::MAX; 0x144];
        for (b, c) in byte_chars.iter().enumerate() {
            char_bytes[*c as usize] = b as u16;
        }
        let mut tokens: HashMap<u32, &str> =
            vocab.iter().map(|(t, id)| (*id, t.as_str())).collect();
        for a in &added {
            tokens.insert(a.id, a.content.as_str());
        }
        let max_id = tokens.keys().copied().max().unwrap_or(0) as usize;
        let mut decode_spans = vec![(u32::MAX, 0); max_id + 1];
        let mut decode_bytes = Vec::new();
        for (id, tok) in &tokens {
            let start = decode_bytes.len();
            let mapped: Option<Vec<u8>> = tok
                .chars()
                .map(|c| {
                    char_bytes
                        .get(c as usize)
                        .copied()
                        .filter(|&b| b != u16::MAX)
                        .map(|b| b as u8)
                })
                .collect();
            match mapped {
                Some(bytes) => decode_bytes.extend_from_slice(&bytes),
                None => decode_bytes.extend_from_slice(tok.as_bytes()),
            }
            decode_spans[*id as usize] = (start as u32, (decode_bytes.len() - start) as u32);
        }

        let (norm, raw): (Vec<_>, Vec<_>) = added.into_iter().partition(|a| a.normalized);
        Ok(ByteLevelBpe {
            id: NEXT_ENGINE_ID.fetch_add(1, Ordering::Relaxed),
            byte_ids,
            merges,
            added_raw: AddedMatcher::new(raw),
            added_normalized: AddedMatcher::new(norm),
            decode_spans,
            decode_bytes,
        })
    }

    /// `(rank << 32) | merged id` for the pair, or [`NO_MERGE`].
    #[inline]
    fn merge_of(&self, left: u32, right: u32) -> u64 {
        self.merges
            .get(&((u64::from(left) << 32) | u64::from(right)))
            .copied()
            .unwrap_or(NO_MERGE)
    }

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

    fn count(self: &Arc<Self>, text: &str) -> usize {
        self.with_thread_state(|words, scratch| {
            let mut n = 0;
            self.tokenize(text, words, scratch, &mut |ids| n += ids.len());
            n
        })
    }

    fn encode(self: &Arc<Self>, text: &str) -> Vec<u32> {
        self.with_thread_state(|words, scratch| {
            // A token averages ~4 bytes of English; one reallocation at most for typical text.
            let mut out = Vec::with_capacity(text.len() / 3 + 1);
            self.tokenize(text, words, scratch, &mut |ids| out.extend_from_slice(ids));
            out
        })
    }

    fn decode(&self, ids: &[u32]) -> String {
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

    /// BPE-merges one pre-token (at least one byte) into `out` (cleared first): repeatedly merge
    /// the adjacent pair with the lowest rank, leftmost first, as HF's `Word::merge_all` does.
    fn merge_into(&self, piece: &[u8], work: &mut MergeWork, out: &mut Vec<u32>) {
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
    fn merge_scan(&self, syms: &mut Vec<u32>, ranks: &mut Vec<u64>) {
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
    fn merge_heap(&self, syms: &mut Vec<u32>, work: &mut MergeWork) {
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

/// GPT-2's byte → printable character map: printable Latin-1 bytes stand for themselves, the
/// others (controls, space, soft hyphen...) are moved to U+0100 onwards in byte order, so every
/// token is printable text in the vocabulary file.
fn byte_chars() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut shifted = 0u32;
    for (b, slot) in table.iter_mut().enumerate() {
        let printable = matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
        let code = if printable {
            b as u32
        } else {
            shifted += 1;
            255 + shifted
        };
        *slot = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
    }
    table
}

// ------------------------------------------------------------------------------------------------
// Added tokens (`<|endoftext|>`): HF extracts them anywhere in the text, leftmost-longest.

/// Finds added tokens in text: leftmost match, longest at that position.
struct AddedMatcher {
    /// (content, id), grouped by first byte through `by_first`.
    patterns: Vec<(Box<[u8]>, u32)>,
    /// Indices into `patterns` for each possible first byte.
    by_first: Vec<Vec<usize>>,
    /// Whether any pattern starts with this byte: the scan's fast skip.
    starts: Vec<bool>,
    /// The distinct first bytes of the patterns.
    first_bytes: Vec<u8>,
}

impl AddedMatcher {
    fn new(specs: Vec<AddedSpec>) -> Self {
        let mut by_first = vec![Vec::new(); 256];
        let patterns: Vec<(Box<[u8]>, u32)> = specs
            .into_iter()
            .map(|s| (s.content.into_bytes().into_boxed_slice(), s.id))
            .collect();
        let mut starts = vec![false; 256];
        for (i, (p, _)) in patterns.iter().enumerate() {
            by_first[p[0] as usize].push(i);
            starts[p[0] as usize] = true;
        }
        let first_bytes = (0..=255u8).filter(|b| starts[*b as usize]).collect();
        AddedMatcher {
            patterns,
            by_first,
            starts,
            first_bytes,
        }
    }

    fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The next match at or after byte `from`: (start, end, id).
    #[inline]
    fn find(&self, hay: &[u8], from: usize) -> Option<(usize, usize, u32)> {
        let mut i = from;
        while i < hay.len() {
            // Usually one added token (`<|endoftext|>`), so one first byte: a vector search.
            let k = match self.first_bytes.as_slice() {
                [b] => memchr::memchr(*b, &hay[i..])?,
                [a, b] => memchr::memchr2(*a, *b, &hay[i..])?,
                _ => hay[i..].iter().position(|&b| self.starts[b as usize])?,
            };
            i += k;
            let mut best: Option<(usize, u32)> = None;
            for &p in &self.by_first[hay[i] as usize] {
                let (pat, id) = &self.patterns[p];
                if hay[i..].starts_with(pat) && best.is_none_or(|(len, _)| pat.len() > len) {
                    best = Some((pat.len(), *id));
                }
            }
            if let Some((len, id)) = best {
                return Some((i, i + len, id));
            }
            i += 1;
        }
        None
    }

    /// Hands `text` to `f` as alternating text gaps (non-empty) and added tokens.
    #[inline]
    fn split(&self, text: &str, f: &mut impl FnMut(Segment<'_>)) {
        if self.is_empty() {
            f(Segment::Text(text));
            return;
        }
        let hay = text.as_bytes();
        let mut pos = 0;
        while let Some((start, end, id)) = self.find(hay, pos) {
            // Patterns are valid UTF-8, so matches start and end on character boundaries.
            if start > pos {
                f(Segment::Text(&text[pos..start]));
            }
            f(Segment::Added(id));
            pos = end;
        }
        if pos < text.len() {
            f(Segment::Text(&text[pos..]));
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Per-thread word cache.
//
// Each thread keeps its own cache per engine, so the hot path takes no lock and touches no shared
// cache line (a shared sharded cache would still bounce its lock words between cores on every
// word). Memory is bounded: two generations of at most `CACHE_GENERATION` entries each; when the
// young one fills, the old one is dropped and the young one ages. Entries used while old are
// promoted, so frequent words survive. About 1 MB per tokenizing thread at most.

/// Entries per generation (two generations live at once).
const CACHE_GENERATION: usize = 4096;
/// Longer pre-tokens are rare and not worth a cache slot; they are merged on each use.
const MAX_CACHED_PIECE: usize = 32;
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

/// Pre-token bytes → ids, bounded (see the section comment).
struct WordCache {
    young: FastMap<Box<[u8]>, CachedIds>,
    old: FastMap<Box<[u8]>, CachedIds>,
}

impl WordCache {
    fn new() -> Self {
        // Tables grow on demand (a thread that counts a few prompts stays small) up to one
        // generation's size, and `clear` keeps that allocation from then on.
        WordCache {
            young: FastMap::default(),
            old: FastMap::default(),
        }
    }

    /// Hands the ids of `piece` to `sink`, computing them with `compute` (into `tmp`) on a miss.
    #[inline]
    fn with_ids(
        &mut self,
        piece: &[u8],
        tmp: &mut Vec<u32>,
        compute: impl FnOnce(&mut Vec<u32>),
        sink: &mut impl FnMut(&[u32]),
    ) {
        if let Some(ids) = self.young.get(piece) {
            sink(ids.as_slice());
            return;
        }
        if let Some((key, ids)) = self.old.remove_entry(piece) {
            sink(ids.as_slice());
            self.insert(key, ids);
            return;
        }
        compute(tmp);
        sink(tmp);
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
    fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

/// Reusable buffers for merging, so cache misses do not allocate either once warm.
#[derive(Default)]
struct MergeWork {
    ranks: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    alive: Vec<bool>,
    heap: BinaryHeap<Reverse<(u32, u32)>>,
}

#[derive(Default)]
struct Scratch {
    work: MergeWork,
    /// Ids of the pre-token being merged.
    out: Vec<u32>,
}

struct EngineCache {
    id: u64,
    engine: Weak<ByteLevelBpe>,
    words: WordCache,
}

#[derive(Default)]
struct ThreadState {
    caches: Vec<EngineCache>,
    scratch: Scratch,
}

thread_local! {
    static THREAD_STATE: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// This thread's cache for `engine`, created on first use; caches of dropped engines are freed
/// then, and the oldest is evicted past [`MAX_ENGINES_PER_THREAD`].
fn cache_for<'a>(
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
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    /// GPT-2's split regex exactly as HF's ByteLevel pre-tokenizer compiles it.
    const GPT2_SPLIT: &str =
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

    /// The embedded JSON loaded through the `tokenizers` crate: the reference.
    fn hf_reference() -> &'static tokenizers::Tokenizer {
        static HF: OnceLock<tokenizers::Tokenizer> = OnceLock::new();
        HF.get_or_init(|| {
            let json = gunzip(GPT2_TOKENIZER_JSON_GZ).unwrap();
            tokenizers::Tokenizer::from_bytes(json).unwrap()
        })
    }

    fn hf_ids(text: &str) -> Vec<u32> {
        hf_reference()
            .encode_fast(text, false)
            .unwrap()
            .get_ids()
            .to_vec()
    }

    fn regex_pieces(re: &tokenizers::utils::SysRegex, text: &str) -> Vec<(usize, usize)> {
        re.find_iter(text).collect()
    }

    fn our_pieces(text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut pos = 0;
        for p in Pieces::new(text) {
            out.push((pos, pos + p.len()));
            pos += p.len();
        }
        out
    }

    #[test]
    fn builtin_gpt2_matches_known_ids() {
        let tk = Tokenizer::builtin_gpt2();
        assert!(tk.is_fast());
        assert_eq!(tk.encode("Hello world"), vec![15496, 995]);
        assert_eq!(tk.count(" the quick brown fox"), 4);
        assert_eq!(tk.decode(&[15496, 995]), "Hello world");
        assert_eq!(tk.count(""), 0);
        assert_eq!(tk.encode(""), Vec::<u32>::new());
    }

    /// HF extracts `<|endoftext|>` wherever it occurs, even with `add_special_tokens=false`.
    #[test]
    fn endoftext_is_one_token_like_hf() {
        let tk = Tokenizer::builtin_gpt2();
        for text in [
            "<|endoftext|>",
            "a<|endoftext|>b",
            " <|endoftext|> ",
            "<|endoftext|><|endoftext|>x",
        ] {
            assert_eq!(tk.encode(text), hf_ids(text), "{text:?}");
        }
        assert_eq!(tk.encode("<|endoftext|>"), vec![50256]);
        assert_eq!(tk.count("x<|endoftext|>y"), 3);
        assert_eq!(tk.decode(&[50256]), "<|endoftext|>");
    }

    /// Every code point's class agrees with `\p{L}`, `\p{N}` and `\s` as compiled by the regex
    /// engine HF uses (fancy-regex delegating to the regex crate). With
    /// `TTFTBENCH_PRINT_UNICODE_TABLES=1` it prints the tables for this file.
    #[test]
    fn unicode_tables_match_regex_engine() {
        let all: String = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
        for (pattern, class, name) in [
            (r"\p{L}+", Class::Letter, "LETTER"),
            (r"\p{N}+", Class::Number, "NUMBER"),
            (r"\s+", Class::Space, "SPACE"),
        ] {
            let re = tokenizers::utils::SysRegex::new(pattern).unwrap();
            let expected: Vec<(u32, u32)> = re
                .find_iter(&all)
                .map(|(a, b)| {
                    let first = all[a..].chars().next().unwrap() as u32;
                    let last = all[..b].chars().next_back().unwrap() as u32;
                    (first, last)
                })
                .collect();
            let mut ours: Vec<(u32, u32)> = Vec::new();
            let mut prev_in = false;
            for c in all.chars() {
                let is = class_of(c) == class;
                match (is, prev_in) {
                    (true, true) => ours.last_mut().unwrap().1 = c as u32,
                    (true, false) => ours.push((c as u32, c as u32)),
                    _ => {}
                }
                prev_in = is;
            }
            if std::env::var_os("TTFTBENCH_PRINT_UNICODE_TABLES").is_some() {
                let flat: Vec<String> = expected
                    .iter()
                    .filter(|r| r.1 >= 128)
                    .map(|&(a, b)| format!("{:#x}, {b:#x},", a.max(128)))
                    .collect();
                println!("const {name}: &[u32] = &[\n    {}\n];", flat.join(" "));
            }
            assert_eq!(
                ours, expected,
                "class {name} differs from the regex engine's {pattern}"
            );
        }
    }

    /// Every code point, between letters, digits, symbols, spaces and apostrophes: our scanner
    /// splits exactly where GPT-2's regex does.
    #[test]
    fn pre_tokenizer_matches_regex_for_every_code_point() {
        let re = tokenizers::utils::SysRegex::new(GPT2_SPLIT).unwrap();
        let chars: Vec<char> = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
        // Release builds check every code point; unoptimized test builds every 7th (plus all of
        // ASCII and Latin-1), which still visits every Unicode block.
        let step = if cfg!(debug_assertions) { 7 } else { 1 };
        let picked: Vec<char> = chars
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < 256 || i % step == 0)
            .map(|(_, c)| *c)
            .collect();
        for chunk in picked.chunks(4096) {
            let mut s = String::new();
            for &c in chunk {
                for ctx in ["a", "1", "!", " ", "'"] {
                    s.push_str(ctx);
                    s.push(c);
                    s.push_str(ctx);
                }
                s.push(c);
                s.push(' ');
            }
            let expected = regex_pieces(&re, &s);
            let ours = our_pieces(&s);
            if expected != ours {
                let i = expected
                    .iter()
                    .zip(&ours)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                panic!(
                    "split differs at piece {i}: regex {:?} vs ours {:?}",
                    expected.get(i).map(|&(a, b)| &s[a..b]),
                    ours.get(i).map(|&(a, b)| &s[a..b])
                );
            }
        }
    }

    /// Fixed strings covering the regex's corner cases and the scripts named in the design.
    fn fixed_corpus() -> Vec<String> {
        let v: &[&str] = &[
            "Hello world",
            "Hello, world!",
            "The quick brown fox jumps over the lazy dog.",
            "I'm sure you'll see they've said we'd go, isn't it? It's John's.",
            "'s 't 're 've 'm 'll 'd",
            "'S 'T 'RE 'VE 'M 'LL 'D",
            "''s '''t x's x''s '",
            "don't'll",
            " 's",
            "  's",
            "\t's",
            "'",
            "''",
            "'x",
            "'r",
            "'re",
            "'rex",
            "'l",
            "'lll",
            "a  b",
            "a   b",
            "a \tb",
            "a\t b",
            "a\n\nb",
            "a \n b",
            "a\r\nb",
            "a\r\n\r\nb",
            "line\r\n",
            " ",
            "  ",
            "\n",
            "\t",
            "\r\n",
            " a",
            "  a",
            "a ",
            "a  ",
            "\u{a0}a",
            " \u{a0}a",
            "a\u{a0}",
            "\u{3000}日本",
            "x\u{2028}y",
            "x\u{85}y",
            "x\u{200b}y",
            "\u{feff}BOM",
            "\u{b}\u{c}",
            "1234567890",
            "3.14159",
            "-42",
            "1,000,000",
            "12:30pm",
            "v1.2.3",
            "0x1F",
            "1e-9",
            "٠١٢٣٤٥٦٧٨٩",
            "۰۱۲۳",
            "०१२३४५६७८९",
            "１２３",
            "x²+y³",
            "½ ¾",
            "Ⅻ Ⅳ",
            "① ②",
            "Ⓐ Ⓑ",
            "mañana über café naïve Ångström straße œuvre",
            "e\u{301}",
            "a\u{300}\u{301}\u{302}",
            " \u{301}",
            "\u{301}a",
            "नमस्ते दुनिया",
            "क्षि",
            "مرحبا بالعالم",
            "שלום",
            "สวัสดี",
            "你好，世界！",
            "日本語のテキスト",
            "한국어 텍스트",
            "Привет, мир!",
            "Γειά σου",
            "😀😃😄",
            "👍🏽",
            "👨‍👩‍👧‍👦",
            "❤️",
            "🇺🇸🇯🇵",
            "a😀b",
            " 😀",
            "😀 😀",
            "fn main() {\n    println!(\"hi\");\n}\n",
            "if (a && b) { return x->y; }",
            "def f(x):\n\treturn x ** 2  # square\n",
            "<div class=\"a\">&amp;</div>",
            "SELECT * FROM t WHERE id = 1;",
            "$ cargo test --lib -- --nocapture",
            "a=>b!=c::d",
            "!!!???...",
            "....",
            "---",
            "***",
            "~~~~",
            "@user #tag",
            "http://example.com/a?b=c&d=e",
            "<|endoftext|>",
            "<|endoftext|>Hello",
            "Hi<|endoftext|>",
            "<|endoftext",
            "<|",
            "|>",
            "<|endoftext|><|endoftext|>",
            " <|endoftext|>",
            "<|endoftext|> ",
            "<<|endoftext|>>",
            "<|endoftext|>'s",
            "endoftext",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "\u{10ffff}\u{e000}\u{fffd}",
            "\u{0}\u{1}\u{7f}",
            "\u{ad}soft\u{ad}hyphen",
        ];
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Random text from atoms of every kind above, seeded.
    fn random_string(rng: &mut StdRng) -> String {
        const WORDS: &[&str] = &[
            "the",
            "of",
            "and",
            "model",
            "server",
            "token",
            "latency",
            "The",
            "Triton",
            "GPU",
            "inference",
            "throughput",
            "request",
            "naïve",
            "résumé",
            "über",
            "日本",
            "東京",
        ];
        const PUNCT: &[u8] = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
        const SPACES: &[&str] = &[
            " ", " ", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n", "\u{a0}", "\u{3000}",
            "\u{2028}", "\u{85}", "\u{200b}", "\u{feff}", "\u{b}",
        ];
        const CONTRACTIONS: &[&str] = &[
            "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'", "''", "n't", "'r", "'l",
        ];
        const SPECIAL: &[&str] = &["<|endoftext|>", "<|endoftext", "<|", "|>", "endoftext"];
        const CLUSTERS: &[&str] = &[
            "👍🏽",
            "👨‍👩‍👧",
            "❤️",
            "🇺🇸",
            "e\u{301}",
            "क्षि",
            "नमस्ते",
            "مرحبا",
            "Ⅻ",
            "①",
            "Ⓐ",
            "½",
            "²",
        ];
        let ranges: &[(u32, u32)] = &[
            (0x4E00, 0x9FFF),
            (0x3040, 0x30FF),
            (0xAC00, 0xD7A3),
            (0x1F300, 0x1FAFF),
            (0x0300, 0x036F),
            (0x0600, 0x06FF),
            (0x0900, 0x097F),
            (0x0660, 0x0669),
            (0x0966, 0x096F),
            (0xFF10, 0xFF5A),
            (0x00C0, 0x024F),
            (0x0370, 0x03FF),
            (0x0400, 0x04FF),
            (0x0E00, 0x0E7F),
            (0x2000, 0x206F),
            (0x0, 0x10FFFF),
        ];
        let atoms = rng.random_range(1..40);
        let mut s = String::new();
        for _ in 0..atoms {
            match rng.random_range(0..12) {
                0 | 1 => {
                    let n = rng.random_range(1..10);
                    for _ in 0..n {
                        let base = if rng.random_bool(0.1) { b'A' } else { b'a' };
                        s.push((base + rng.random_range(0..26u8)) as char);
                    }
                }
                2 => s.push_str(WORDS[rng.random_range(0..WORDS.len())]),
                3 => {
                    for _ in 0..rng.random_range(1..7) {
                        s.push((b'0' + rng.random_range(0..10u8)) as char);
                    }
                }
                4 => {
                    for _ in 0..rng.random_range(1..4) {
                        s.push(PUNCT[rng.random_range(0..PUNCT.len())] as char);
                    }
                }
                5 | 6 => s.push_str(SPACES[rng.random_range(0..SPACES.len())]),
                7 => s.push_str(CONTRACTIONS[rng.random_range(0..CONTRACTIONS.len())]),
                8 => s.push_str(SPECIAL[rng.random_range(0..SPECIAL.len())]),
                9 => s.push_str(CLUSTERS[rng.random_range(0..CLUSTERS.len())]),
                _ => {
                    let (lo, hi) = ranges[rng.random_range(0..ranges.len())];
                    for _ in 0..rng.random_range(1..5) {
                        if let Some(c) = char::from_u32(rng.random_range(lo..=hi)) {
                            s.push(c);
                        }
                    }
                }
            }
        }
        s
    }

    /// Long pre-tokens exercise the heap merge (more than `MAX_SCAN_MERGE` bytes).
    fn long_strings(rng: &mut StdRng) -> Vec<String> {
        let mut v = Vec::new();
        for len in [129, 200, 500, 2000] {
            v.push("a".repeat(len));
            v.push(" ".repeat(len) + "x");
            v.push("7".repeat(len));
            v.push("!?".repeat(len / 2));
            let word: String = (0..len)
                .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
                .collect();
            v.push(format!("The {word} and {}", word.to_uppercase()));
            let cjk: String = (0..len / 3)
                .filter_map(|_| char::from_u32(rng.random_range(0x4E00..0x9FFF)))
                .collect();
            v.push(cjk);
        }
        v
    }

    fn corpus() -> Vec<String> {
        let mut rng = StdRng::seed_from_u64(0x7474_6674);
        let mut v = fixed_corpus();
        // `TTFTBENCH_EQUIV_STRINGS=N` runs a bigger random corpus (e.g. in release).
        let n = std::env::var("TTFTBENCH_EQUIV_STRINGS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4000);
        v.extend((0..n).map(|_| random_string(&mut rng)));
        v.extend(long_strings(&mut rng));
        v
    }

    /// The fast path and HF agree on ids for every string of the corpus; counts match the ids,
    /// and decoding returns the text and agrees with HF's decoder.
    #[test]
    fn fast_path_matches_hf_on_corpus() {
        let tk = Tokenizer::builtin_gpt2();
        let hf = hf_reference();
        let re = tokenizers::utils::SysRegex::new(GPT2_SPLIT).unwrap();
        let corpus = corpus();
        assert!(corpus.len() >= 4000);
        for text in &corpus {
            if !text.contains("<|endoftext|>") {
                assert_eq!(
                    our_pieces(text),
                    regex_pieces(&re, text),
                    "pre-tokens of {text:?}"
                );
            }
            let expected = hf_ids(text);
            let ids = tk.encode(text);
            assert_eq!(ids, expected, "ids of {text:?}");
            assert_eq!(tk.count(text), expected.len(), "count of {text:?}");
            // Twice: the second pass is served from the word cache.
            assert_eq!(tk.encode(text), expected, "cached ids of {text:?}");
            assert_eq!(tk.decode(&ids), *text, "round trip of {text:?}");
            assert_eq!(
                tk.decode(&ids),
                hf.decode(&ids, false).unwrap(),
                "decode of {text:?}"
            );
        }
    }

    /// Decoding odd id sequences (split multi-byte characters, unknown ids) matches HF's decoder.
    #[test]
    fn decode_matches_hf_on_odd_ids() {
        let tk = Tokenizer::builtin_gpt2();
        let hf = hf_reference();
        let emoji = tk.encode("😀 日本");
        let cases: Vec<Vec<u32>> = vec![
            emoji[..1].to_vec(),
            emoji[1..].to_vec(),
            vec![50256, 50257, 99999, u32::MAX, 0],
            vec![],
            (0..300).collect(),
            (50000..50257).collect(),
        ];
        for ids in cases {
            assert_eq!(tk.decode(&ids), hf.decode(&ids, false).unwrap(), "{ids:?}");
        }
    }

    /// Both merge strategies give the same ids on random words of all lengths.
    #[test]
    fn scan_and_heap_merges_agree() {
        let tk = Tokenizer::builtin_gpt2();
        let Backend::Fast(bpe) = &tk.backend else {
            panic!("built-in is fast")
        };
        let mut rng = StdRng::seed_from_u64(7);
        let mut work = MergeWork::default();
        for _ in 0..2000 {
            let len = rng.random_range(2..200);
            let alphabet: &[u8] = if rng.random_bool(0.5) {
                b"etaoinshr"
            } else {
                b"abcdefghijklmnopqrstuvwxyz"
            };
            let mut piece: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            if rng.random_bool(0.3) {
                piece.insert(0, b' ');
            }
            let init: Vec<u32> = piece.iter().map(|&b| bpe.byte_ids[b as usize]).collect();
            let mut a = init.clone();
            bpe.merge_scan(&mut a, &mut work.ranks);
            let mut b = init;
            bpe.merge_heap(&mut b, &mut work);
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(&piece));
        }
    }

    /// The word cache never holds more than two generations, however many distinct words pass.
    #[test]
    fn word_cache_is_bounded() {
        let tk = Tokenizer::builtin_gpt2();
        let Backend::Fast(bpe) = &tk.backend else {
            panic!("built-in is fast")
        };
        let mut text = String::new();
        for i in 0..(CACHE_GENERATION * 5) {
            text.push_str(&format!(" w{i:x}q"));
        }
        assert_eq!(tk.count(&text), hf_ids(&text).len());
        let size = THREAD_STATE.with(|s| {
            let mut s = s.borrow_mut();
            cache_for(&mut s.caches, bpe).len()
        });
        assert!(size <= 2 * CACHE_GENERATION, "cache holds {size} entries");
        assert!(size >= CACHE_GENERATION, "cache holds only {size} entries");
    }

    /// Counting from several threads at once gives the same answers (each thread its own cache).
    #[test]
    fn counts_agree_across_threads() {
        let tk = Tokenizer::builtin_gpt2();
        let corpus: Vec<String> = fixed_corpus();
        let expected: Vec<usize> = corpus.iter().map(|t| tk.count(t)).collect();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..3 {
                        let got: Vec<usize> = corpus.iter().map(|t| tk.count(t)).collect();
                        assert_eq!(got, expected);
                    }
                });
            }
        });
    }

    /// A GPT-2-shaped `tokenizer.json` given with `--tokenizer` gets the fast path and the same
    /// ids; a file with a normalizer stays on HF.
    #[test]
    fn from_file_uses_fast_path_only_when_equivalent() {
        let dir = tempfile::tempdir().unwrap();
        let json = gunzip(GPT2_TOKENIZER_JSON_GZ).unwrap();
        let plain = dir.path().join("gpt2.json");
        std::fs::write(&plain, &json).unwrap();
        let tk = Tokenizer::from_file(&plain).unwrap();
        assert!(tk.is_fast());
        let mut rng = StdRng::seed_from_u64(99);
        let mut texts = fixed_corpus();
        texts.extend((0..300).map(|_| random_string(&mut rng)));
        for text in &texts {
            assert_eq!(tk.encode(text), hf_ids(text), "{text:?}");
            assert_eq!(tk.count(text), hf_ids(text).len(), "{text:?}");
            assert_eq!(tk.decode(&tk.encode(text)), *text);
        }

        let mut doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
        doc["normalizer"] = serde_json::json!({"type": "Lowercase"});
        let lower = dir.path().join("lower.json");
        std::fs::write(&lower, serde_json::to_vec(&doc).unwrap()).unwrap();
        let tk = Tokenizer::from_file(&lower).unwrap();
        assert!(!tk.is_fast());
        assert_eq!(tk.encode("Hello World"), hf_ids("hello world"));
        assert_eq!(tk.count("Hello World"), 2);

        let missing = Tokenizer::from_file(&dir.path().join("nope.json")).unwrap_err();
        assert!(format!("{missing:#}").contains("nope.json"), "{missing:#}");
    }
}
