//! Added tokens (`<|endoftext|>`): HF extracts them anywhere in the text, leftmost-longest,
//! before pre-tokenizing what lies between them.

use super::Segment;
use crate::workload::tokenizer::TokenizerError;

/// An added token as the fast engine needs it.
pub(in crate::workload::tokenizer) struct AddedSpec {
    pub(super) id: u32,
    pub(super) content: String,
    pub(super) normalized: bool,
}

impl AddedSpec {
    /// An added token, refused when it is empty or uses options (`lstrip`, `rstrip`,
    /// `single_word`) the fast engine does not reproduce.
    pub(in crate::workload::tokenizer) fn checked(
        id: u32,
        content: String,
        normalized: bool,
        options: bool,
    ) -> Result<AddedSpec, TokenizerError> {
        if options || content.is_empty() {
            return Err(TokenizerError::UnsupportedAddedToken(content));
        }
        Ok(AddedSpec {
            id,
            content,
            normalized,
        })
    }
}

/// Finds added tokens in text: leftmost match, longest at that position.
pub(super) struct AddedMatcher {
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
    pub(super) fn new(specs: Vec<AddedSpec>) -> Self {
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

    pub(super) fn is_empty(&self) -> bool {
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
    pub(super) fn split(&self, text: &str, f: &mut impl FnMut(Segment<'_>)) {
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
