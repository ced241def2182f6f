//! Building the engine's tables from a `tokenizer.json`: the 256 byte symbols, merge ranks, and
//! the id → bytes table decoding uses.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use serde::Deserialize;

use super::added::{AddedMatcher, AddedSpec};
use super::cache::FastMap;
use super::{ByteLevelBpe, NEXT_ENGINE_ID};
use crate::workload::tokenizer::TokenizerError;

/// The parts of a `tokenizer.json` the embedded GPT-2 file needs.
#[derive(Deserialize)]
struct TokenizerJson {
    #[serde(default)]
    added_tokens: Vec<AddedTokenJson>,
    model: BpeModelJson,
}

/// One entry of `added_tokens`.
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

/// A BPE model's vocabulary and merges, as written in `tokenizer.json` (and as HF serializes
/// its own parsed model).
#[derive(Deserialize)]
pub(in crate::workload::tokenizer) struct BpeModelJson {
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

impl ByteLevelBpe {
    /// Builds the engine from a `tokenizer.json` known to be GPT-2-shaped (the embedded one).
    pub(in crate::workload::tokenizer) fn from_tokenizer_json(
        json: &[u8],
    ) -> Result<Self, TokenizerError> {
        let doc: TokenizerJson = serde_json::from_slice(json)?;
        let added = doc
            .added_tokens
            .into_iter()
            .map(|t| {
                let options = t.single_word || t.lstrip || t.rstrip;
                AddedSpec::checked(t.id, t.content, t.normalized, options)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(&doc.model, added)
    }

    /// Builds the engine from a model's vocabulary and merges and its added tokens.
    pub(in crate::workload::tokenizer) fn new(
        model: &BpeModelJson,
        added: Vec<AddedSpec>,
    ) -> Result<Self, TokenizerError> {
        let byte_chars = byte_chars();
        let byte_ids = byte_ids(&model.vocab, &byte_chars)?;
        let merges = merge_ranks(model)?;
        let (decode_spans, decode_bytes) = decode_table(&model.vocab, &added, &byte_chars);
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
}

/// The id of each byte's one-character symbol.
fn byte_ids(
    vocab: &HashMap<String, u32>,
    byte_chars: &[char; 256],
) -> Result<[u32; 256], TokenizerError> {
    let mut byte_ids = [0u32; 256];
    let mut buf = [0u8; 4];
    for (b, id) in byte_ids.iter_mut().enumerate() {
        let sym: &str = byte_chars[b].encode_utf8(&mut buf);
        *id = *vocab
            .get(sym)
            .ok_or_else(|| TokenizerError::MissingByteSymbol(sym.to_string()))?;
    }
    Ok(byte_ids)
}

/// `(left << 32) | right` → `(rank << 32) | merged id`, rank being the merge's position.
fn merge_ranks(model: &BpeModelJson) -> Result<FastMap<u64, u64>, TokenizerError> {
    let vocab = &model.vocab;
    let id_of = |t: &str| {
        vocab
            .get(t)
            .copied()
            .ok_or_else(|| TokenizerError::UnknownMergeToken(t.to_string()))
    };
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
                    _ => return Err(TokenizerError::BadMerge(s.clone())),
                }
            }
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
    Ok(merges)
}

/// Each id's token text, byte-mapped back: `(start, len)` per id into one byte buffer, with
/// `start == u32::MAX` for ids without a token. HF's ByteLevel decoder keeps a token's raw UTF-8
/// when one of its characters is not a byte symbol; added tokens win over the model's vocabulary
/// for the same id, as in HF.
fn decode_table(
    vocab: &HashMap<String, u32>,
    added: &[AddedSpec],
    byte_chars: &[char; 256],
) -> (Vec<(u32, u32)>, Vec<u8>) {
    let mut char_bytes = [u16::MAX; 0x144];
    for (b, c) in byte_chars.iter().enumerate() {
        char_bytes[*c as usize] = b as u16;
    }
    let mut tokens: HashMap<u32, &str> = vocab.iter().map(|(t, id)| (*id, t.as_str())).collect();
    for a in added {
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
    (decode_spans, decode_bytes)
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
