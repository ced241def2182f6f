//! The built-in GPT-2 tokenizer: an embedded `tokenizer.json`, loaded once per process.

use std::sync::{Arc, OnceLock};

use super::bpe::ByteLevelBpe;
use super::{Backend, Tokenizer};

/// The GPT-2 tokenizer as a gzip-compressed Hugging Face `tokenizer.json`, built by
/// `scripts/make_gpt2_tokenizer.py` from OpenAI's GPT-2 vocabulary and merges (MIT licence).
pub(super) static GPT2_TOKENIZER_JSON_GZ: &[u8] =
    include_bytes!("../../../assets/gpt2-tokenizer.json.gz");

/// The built-in tokenizer (shared by every caller).
pub(super) fn gpt2() -> Tokenizer {
    static CELL: OnceLock<Tokenizer> = OnceLock::new();
    CELL.get_or_init(|| {
        // The asset is part of the binary and covered by tests, so failing here is a build
        // defect, not a user error.
        let json = gunzip(GPT2_TOKENIZER_JSON_GZ).expect("embedded GPT-2 tokenizer is valid gzip");
        let bpe = ByteLevelBpe::from_tokenizer_json(&json)
            .expect("embedded GPT-2 tokenizer is a valid byte-level BPE tokenizer.json");
        Tokenizer {
            backend: Backend::Fast(Arc::new(bpe)),
            name: Arc::from("gpt2 (built-in)"),
        }
    })
    .clone()
}

/// The embedded JSON, decompressed.
pub(super) fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::with_capacity(bytes.len() * 3);
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}
