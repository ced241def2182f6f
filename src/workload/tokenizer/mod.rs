//! Which tokenizer counts tokens, where it comes from, and how it does so fast enough to sit on
//! the hot path.
//!
//! Token counting runs once per completed request in the load generator (100–2000 output tokens
//! of text; on the collector's thread, see `load::queue`) and once per prompt in the simulated
//! server. The Hugging Face `tokenizers` pipeline costs ~55 µs for a 100-token text and ~540 µs
//! for 1000 tokens (release, 2-core dev machine: regex pre-tokenizer through a backtracking VM,
//! offsets, an `Encoding` with seven vectors), over half of the client's CPU budget of ~100 µs
//! per 100-token request on its own. So [`Tokenizer`] has two engines behind one handle:
//!
//! * **Our byte-level BPE** (`bpe`, ~1.6 µs per 100 tokens, ~15 µs per 1000, no allocation; see
//!   `benches/tokenizer.rs`) for the built-in GPT-2 tokenizer and for any `tokenizer.json` whose
//!   pipeline is provably the same shape (`hf` decides which).
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
//! The parts: `builtin` (the embedded GPT-2 asset), `hub` (what `--tokenizer` names: a file, a
//! directory, or a model in the local Hugging Face cache), `hf` (loading a `tokenizer.json` and
//! choosing the engine), `bpe` (the fast engine: pre-tokenizer, merges, added tokens, word
//! cache), `error` (typed failures).

mod bpe;
mod builtin;
mod error;
mod hf;
pub mod hub;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

pub use error::TokenizerError;
pub use hub::HubEnv;

use bpe::ByteLevelBpe;

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
        builtin::gpt2()
    }

    /// Loads a Hugging Face `tokenizer.json` from disk.
    ///
    /// Truncation and padding stored in the file are switched off, as `transformers` does for a
    /// plain `tokenizer(text)` call (what GenAI-Perf counts with): a token count must not be capped
    /// at some `max_length` nor padded. If the file's pipeline is GPT-2-shaped, counting and
    /// encoding use the fast engine, built from HF's own parsed vocabulary and merges; otherwise
    /// HF does everything.
    pub fn from_file(path: &Path) -> Result<Tokenizer, TokenizerError> {
        hf::load(path, Arc::from(path.display().to_string()))
    }

    /// What `--tokenizer SPEC` names: a `tokenizer.json` file, a directory holding one, or a
    /// Hugging Face model name (`meta-llama/Meta-Llama-3-8B-Instruct`) found in the local cache
    /// that `env` describes. Offline: nothing is downloaded. The name shown in `input_config` is
    /// `SPEC` as given, with the file it resolved to.
    pub fn from_spec(spec: &str, env: &HubEnv) -> Result<Tokenizer, TokenizerError> {
        let path = hub::locate(spec, env)?;
        let name = if Path::new(spec) == path {
            spec.to_string()
        } else {
            format!("{spec} ({})", path.display())
        };
        hf::load(&path, Arc::from(name))
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

    /// [`Tokenizer::count`] as a token-count field holds it (saturating at `u32::MAX`).
    pub fn tokens(&self, text: &str) -> u32 {
        u32::try_from(self.count(text)).unwrap_or(u32::MAX)
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
