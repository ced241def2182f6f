//! Prompts for trace rows ([`super::trace`]): token blocks that keep their tokens side by side.
//!
//! A row gives its prompt's length and one hash id per block of `block_size` tokens. Its prompt
//! is the concatenation of its blocks, the last one cut to the exact length. Block content is a
//! function of (hash id, seed, salt) alone — a seeded stream of words — so rows that share an id
//! share that block's tokens exactly, and a row whose last block is shorter holds the first
//! tokens of the same block.
//!
//! Why the tokens stay put: blocks are made of *units*, lowercase words with a leading space that
//! the tokenizer counts as exactly one token in every context checked (alone at the start of a
//! text, after other text, repeated). Byte-level BPE tokenizers with a GPT-2-style pre-tokenizer
//! (GPT-2, Llama 3, Qwen, cl100k-like) split text before every space-led word and never merge
//! across that split, so a run of n units is n tokens and unit k is token k: block b covers
//! tokens `b·block_size .. (b+1)·block_size` of every prompt that holds it, and cutting after r
//! units cuts after r tokens. Each prompt is counted again once built; a tokenizer that breaks the
//! rule (SentencePiece pipelines treat the first word differently) gets the prompt's length
//! corrected at its end, and a warning counts the prompts whose blocks are then approximate.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::prompts::{self, Prompt};
use super::salt::{Salt, mix};
use super::tokenizer::Tokenizer;
use super::trace::Trace;
use crate::error::UsageError;

/// Words that cost one token each, whatever stands around them.
#[derive(Debug, Clone)]
pub struct Units {
    words: Vec<String>,
}

/// Context before a unit when measuring its cost.
const CONTEXT: &str = "The";

impl Units {
    /// The one-token words of the prompt generator's word lists under `tokenizer`.
    pub fn new(tokenizer: &Tokenizer) -> Units {
        let lists = [
            prompts::DETERMINERS,
            prompts::ADJECTIVES,
            prompts::NOUNS,
            prompts::VERBS,
            prompts::PREPOSITIONS,
            prompts::ADVERBS,
            prompts::CONJUNCTIONS,
        ];
        let base = tokenizer.count(CONTEXT);
        let mut words: Vec<String> = Vec::new();
        for w in lists.iter().flat_map(|l| l.iter()) {
            let unit = format!(" {w}");
            if words.contains(&unit) {
                continue;
            }
            let one = tokenizer.count(&unit) == 1
                && tokenizer.count(&format!("{unit}{unit}")) == 2
                && tokenizer.count(&format!("{CONTEXT}{unit}")) == base + 1
                && tokenizer.count(&format!("{CONTEXT}{unit}{unit}{unit}")) == base + 3;
            if one {
                words.push(unit);
            }
        }
        Units { words }
    }

    /// Appends the first `n` units of the stream for `key` to `text`.
    fn push(&self, text: &mut String, key: u64, n: usize) {
        let mut rng = StdRng::seed_from_u64(key);
        for _ in 0..n {
            text.push_str(&self.words[rng.random_range(0..self.words.len())]);
        }
    }
}

/// Distinguishes block streams from every other seeded stream.
const BLOCK_TAG: u64 = 0x626c_6f63_6b00_0000;

/// The stream key of block `id` for a run's text seed.
fn block_key(text_seed: u64, id: u64) -> u64 {
    mix(text_seed ^ mix(id ^ BLOCK_TAG))
}

/// One prompt per trace row, in order, each with exactly the row's `input_length` tokens when
/// the tokenizer keeps units apart (see the module doc); otherwise with its true count and a
/// warning.
pub fn trace_prompts(
    tokenizer: &Tokenizer,
    trace: &Trace,
    block_size: u32,
    seed: u64,
    salt: Salt,
) -> Result<Vec<Prompt>, UsageError> {
    let units = Units::new(tokenizer);
    if units.words.is_empty() {
        return Err(UsageError(format!(
            "--input-file trace: tokenizer {} has no one-token words to build the trace's blocks from; use the built-in tokenizer (drop --tokenizer) or a byte-level BPE one",
            tokenizer.name()
        )));
    }
    let text_seed = salt.text_seed(seed);
    let block = block_size.max(1) as usize;
    let mut inexact = 0usize;
    let prompts: Vec<Prompt> = trace
        .requests
        .iter()
        .map(|r| {
            let target = r.input_length as usize;
            let mut text = String::with_capacity(target * 8);
            for (b, &id) in r.hash_ids.iter().enumerate() {
                let n = block.min(target.saturating_sub(b * block));
                if n == 0 {
                    break;
                }
                units.push(&mut text, block_key(text_seed, id), n);
            }
            let tokens = exact(tokenizer, &units, text, r.input_length, text_seed);
            inexact += usize::from(tokens.tokens != r.input_length);
            tokens
        })
        .collect();
    if inexact > 0 {
        tracing::warn!(
            tokenizer = tokenizer.name(),
            "{inexact} of {} trace prompts did not come out at their exact input_length under this tokenizer; their true token counts are used",
            prompts.len()
        );
    }
    Ok(prompts)
}

/// Rounds of count-and-correct for a tokenizer that does not keep units apart.
const MAX_CORRECTIONS: usize = 8;

/// `text` counted, and when it is not `target` tokens, corrected at its end (bounded rounds):
/// whole units dropped, or units of a continuation stream added.
fn exact(tokenizer: &Tokenizer, units: &Units, mut text: String, target: u32, key: u64) -> Prompt {
    let mut tokens = tokenizer.tokens(&text);
    for round in 0..MAX_CORRECTIONS {
        if tokens == target {
            break;
        }
        if tokens > target {
            for _ in 0..(tokens - target) {
                text.truncate(text.rfind(' ').unwrap_or(0));
            }
        } else {
            let more = (target - tokens) as usize;
            units.push(&mut text, mix(key ^ round as u64), more);
        }
        tokens = tokenizer.tokens(&text);
    }
    Prompt { text, tokens }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::trace::TraceRequest;

    fn row(input_length: u32, hash_ids: &[u64]) -> TraceRequest {
        TraceRequest {
            line: 1,
            timestamp_ms: None,
            input_length,
            output_length: 1,
            hash_ids: hash_ids.to_vec(),
        }
    }

    #[test]
    fn shared_ids_share_exact_blocks() {
        let tk = Tokenizer::builtin_gpt2();
        let words = Units::new(&tk).words.len();
        assert!(words > 200, "{words}");
        let trace = Trace {
            requests: vec![
                row(40, &[1, 2, 3]),
                row(37, &[1, 2, 4]),
                row(20, &[1, 2]),
                row(32, &[9, 2]),
                row(33, &[5, 6, 7]),
            ],
        };
        let p = trace_prompts(&tk, &trace, 16, 3, Salt::NONE).unwrap();
        let toks: Vec<Vec<u32>> = p.iter().map(|p| tk.encode(&p.text)).collect();
        for (r, (p, t)) in trace.requests.iter().zip(p.iter().zip(&toks)) {
            assert_eq!(p.tokens, r.input_length);
            assert_eq!(t.len(), r.input_length as usize);
        }
        assert_eq!(toks[0][..32], toks[1][..32], "two shared blocks");
        assert_ne!(toks[0][32..37], toks[1][32..37], "then apart");
        assert_eq!(
            toks[2][..],
            toks[0][..20],
            "a cut block is the block's start"
        );
        assert_eq!(
            toks[3][16..],
            toks[0][16..32],
            "an id is its block after any other"
        );
        assert_ne!(toks[3][..16], toks[0][..16]);
        assert_ne!(toks[4][..16], toks[0][..16]);
        // The same seed and salt give the same text; another salt other text of the same shape.
        let again = trace_prompts(&tk, &trace, 16, 3, Salt::NONE).unwrap();
        assert_eq!(again, p);
        let salted = Salt::resolve(&crate::workload::PromptSalt::Text("x".into()), None);
        let other = trace_prompts(&tk, &trace, 16, 3, salted).unwrap();
        for (a, b) in p.iter().zip(&other) {
            assert_eq!(a.tokens, b.tokens);
            assert_ne!(a.text, b.text);
        }
    }
}
