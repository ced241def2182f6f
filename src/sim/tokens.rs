//! What the simulator "generates": a fixed cycle of common English words, each of which is
//! exactly one GPT-2 token including its leading space.
//!
//! Because GPT-2's pre-tokenizer splits text at every ` word` boundary, concatenating any prefix
//! of this cycle and re-tokenizing it with the built-in GPT-2 tokenizer gives back exactly the
//! number of tokens that were streamed. Clients that count output tokens by re-tokenizing the
//! text (as GenAI-Perf does) therefore see the same OSL as the server's `completion_tokens`.
//!
//! Every word is plain ASCII letters, so it needs no JSON escaping and its byte form can be
//! precomputed once per process.

use std::sync::OnceLock;

/// The output cycle. Each entry is one GPT-2 token (checked by a unit test).
pub(crate) const WORDS: [&str; 100] = [
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with",
    " be", " by", " on", " not", " he", " this", " are", " or", " his", " from", " at", " which",
    " but", " have", " an", " had", " they", " you", " were", " their", " one", " all", " we",
    " can", " her", " has", " there", " been", " if", " more", " when", " will", " would", " who",
    " so", " no", " she", " other", " its", " may", " these", " what", " them", " than", " some",
    " him", " time", " into", " only", " do", " could", " new", " about", " two", " first",
    " then", " also", " any", " like", " my", " people", " over", " such", " our", " most",
    " after", " made", " out", " world", " well", " see", " way", " even", " many", " must",
    " before", " great", " because", " very", " through", " good", " where", " much", " those",
    " how", " just", " long", " each",
];

/// Number of words in the cycle.
pub(crate) const CYCLE: usize = WORDS.len();

/// The text of output token number `i` (0-based).
#[inline]
pub(crate) fn word(i: u32) -> &'static str {
    WORDS[i as usize % CYCLE]
}

/// Appends the text of tokens `0..n` to `out`.
pub(crate) fn push_text(out: &mut String, n: u32) {
    out.reserve(n as usize * 6);
    for i in 0..n {
        out.push_str(word(i));
    }
}

/// The text of tokens `0..n`.
#[cfg(test)]
pub(crate) fn text(n: u32) -> String {
    (0..n).map(word).collect()
}

/// Byte length of the text of tokens `0..n` (used to size buffers exactly).
pub(crate) fn text_len(n: u32) -> usize {
    static PREFIX: OnceLock<(usize, Vec<usize>)> = OnceLock::new();
    // prefix[k] = total length of the first k words; a full cycle's length multiplies.
    let (cycle_len, prefix) = PREFIX.get_or_init(|| {
        let mut acc = 0;
        let ends = WORDS.iter().map(|w| {
            acc += w.len();
            acc
        });
        let prefix: Vec<usize> = std::iter::once(0).chain(ends).collect();
        (prefix[CYCLE], prefix)
    });
    let n = n as usize;
    (n / CYCLE) * cycle_len + prefix[n % CYCLE]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tokenizer::Tokenizer;

    #[test]
    fn every_word_is_one_gpt2_token() {
        let tk = Tokenizer::builtin_gpt2();
        for w in WORDS {
            assert_eq!(tk.encode(w).len(), 1, "{w:?} is not a single GPT-2 token");
            assert!(w.starts_with(' ') && w[1..].bytes().all(|b| b.is_ascii_alphabetic()));
        }
    }

    #[test]
    fn retokenizing_the_output_gives_the_streamed_count() {
        let tk = Tokenizer::builtin_gpt2();
        for n in 1..=300u32 {
            let t = text(n);
            assert_eq!(tk.count(&t), n as usize, "n = {n}");
            assert_eq!(text_len(n), t.len(), "n = {n}");
        }
    }
}
