//! Loading a Hugging Face `tokenizer.json`, and deciding whether its pipeline is one the fast
//! engine reproduces exactly: no normalizer, GPT-2's `ByteLevel` pre-tokenizer without prefix
//! space, a plain BPE model, added tokens without strip/word-boundary options.

use std::path::Path;
use std::sync::Arc;

use super::bpe::{AddedSpec, BpeModelJson, ByteLevelBpe};
use super::error::{NotFast, TokenizerError};
use super::{Backend, Tokenizer};

/// Loads `path` (truncation and padding off) on the fast engine when it is equivalent, else on
/// HF's pipeline.
pub(super) fn load(path: &Path, name: Arc<str>) -> Result<Tokenizer, TokenizerError> {
    let load_error = |source| TokenizerError::Load {
        path: path.to_path_buf(),
        source,
    };
    let mut tk = tokenizers::Tokenizer::from_file(path).map_err(load_error)?;
    tk.with_truncation(None).map_err(load_error)?;
    tk.with_padding(None);
    let hf = Arc::new(tk);
    let backend = match fast_engine_for(&hf) {
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

/// The fast engine for a tokenizer HF has loaded, if its pipeline is one the engine reproduces
/// exactly; otherwise why not.
fn fast_engine_for(hf: &tokenizers::Tokenizer) -> Result<ByteLevelBpe, NotFast> {
    use tokenizers::models::ModelWrapper;
    use tokenizers::pre_tokenizers::PreTokenizerWrapper;

    if hf.get_normalizer().is_some() {
        return Err(NotFast::Normalizer);
    }
    match hf.get_pre_tokenizer() {
        Some(PreTokenizerWrapper::ByteLevel(bl)) if bl.use_regex && !bl.add_prefix_space => {}
        _ => return Err(NotFast::PreTokenizer),
    }
    let ModelWrapper::BPE(bpe) = hf.get_model() else {
        return Err(NotFast::NotBpe);
    };
    // `unk_token`, `byte_fallback` and `fuse_unk` only matter for characters missing from the
    // vocabulary, which cannot happen once all 256 byte symbols are present (checked when the
    // engine is built).
    let affixes = [&bpe.continuing_subword_prefix, &bpe.end_of_word_suffix];
    let affixed = affixes
        .iter()
        .any(|a| a.as_deref().is_some_and(|s| !s.is_empty()));
    if bpe.dropout.is_some_and(|d| d > 0.0) || affixed || bpe.ignore_merges {
        return Err(NotFast::BpeOptions);
    }
    if hf.get_encode_special_tokens() {
        return Err(NotFast::EncodesSpecialTokens);
    }
    let added = hf
        .get_added_tokens_decoder()
        .into_iter()
        .map(|(id, t)| {
            AddedSpec::checked(
                id,
                t.content,
                t.normalized,
                t.single_word || t.lstrip || t.rstrip,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    // HF's own view of vocabulary and merges (ranks in order), not our reading of the file.
    let model: BpeModelJson = serde_json::to_value(bpe)
        .and_then(serde_json::from_value)
        .map_err(TokenizerError::from)?;
    Ok(ByteLevelBpe::new(&model, added)?)
}

#[cfg(test)]
mod tests {
    use super::super::builtin::{GPT2_TOKENIZER_JSON_GZ, gunzip};
    use super::super::tests::{fixed_corpus, hf_ids, random_string};
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

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
        let Backend::Hf(hf) = &tk.backend else {
            panic!("a normalizer keeps the file on HF")
        };
        assert!(matches!(fast_engine_for(hf), Err(NotFast::Normalizer)));

        let missing = Tokenizer::from_file(&dir.path().join("nope.json")).unwrap_err();
        assert!(matches!(missing, TokenizerError::Load { .. }));
        assert!(missing.to_string().contains("nope.json"), "{missing}");
    }
}
