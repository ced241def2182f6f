//! Which tokenizer counts tokens: the GPT-2 byte-level BPE that ships inside the binary (no network,
//! no files), or any Hugging Face `tokenizer.json` given with `--tokenizer`.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};

/// The GPT-2 tokenizer as a gzip-compressed Hugging Face `tokenizer.json`, built by
/// `scripts/make_gpt2_tokenizer.py` from OpenAI's GPT-2 vocabulary and merges (MIT licence).
static GPT2_TOKENIZER_JSON_GZ: &[u8] = include_bytes!("../../assets/gpt2-tokenizer.json.gz");

/// Counts, encodes and decodes text. Cheap to clone (shared inner state).
#[derive(Clone)]
pub struct Tokenizer {
    inner: Arc<tokenizers::Tokenizer>,
    name: Arc<str>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer").field("name", &self.name).finish()
    }
}

impl Tokenizer {
    /// The built-in GPT-2 tokenizer, loaded once per process.
    pub fn builtin_gpt2() -> Tokenizer {
        static CELL: OnceLock<Tokenizer> = OnceLock::new();
        CELL.get_or_init(|| {
            let json = gunzip(GPT2_TOKENIZER_JSON_GZ).expect("embedded GPT-2 tokenizer is valid gzip");
            let tk = tokenizers::Tokenizer::from_bytes(&json)
                .expect("embedded GPT-2 tokenizer is a valid tokenizer.json");
            Tokenizer { inner: Arc::new(tk), name: Arc::from("gpt2 (built-in)") }
        })
        .clone()
    }

    /// Loads a Hugging Face `tokenizer.json` from disk.
    pub fn from_file(path: &Path) -> Result<Tokenizer> {
        let tk = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| {
                format!(
                    "cannot load tokenizer {}: expected a Hugging Face tokenizer.json file",
                    path.display()
                )
            })?;
        Ok(Tokenizer { inner: Arc::new(tk), name: Arc::from(path.display().to_string()) })
    }

    /// A short human-readable name, for `input_config` and logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of tokens in `text`, without special tokens (as GenAI-Perf counts).
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        self.inner.encode_fast(text, false).map(|e| e.len()).unwrap_or(0)
    }

    /// Token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.inner.encode_fast(text, false).map(|e| e.get_ids().to_vec()).unwrap_or_default()
    }

    /// Text of a token id sequence.
    pub fn decode(&self, ids: &[u32]) -> String {
        self.inner.decode(ids, false).unwrap_or_default()
    }
}

fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::with_capacity(bytes.len() * 3);
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_gpt2_matches_known_ids() {
        let tk = Tokenizer::builtin_gpt2();
        assert_eq!(tk.encode("Hello world"), vec![15496, 995]);
        assert_eq!(tk.count(" the quick brown fox"), 4);
        assert_eq!(tk.decode(&[15496, 995]), "Hello world");
    }
}
