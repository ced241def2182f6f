//! The run's answer key: every prompt's expected answer and the grader. It marks a finished
//! request's output off the worker (on the collector's receiving side, where the output tokens
//! are counted): graded right or wrong, and fingerprinted ([`OutputPrint`]: a hash, the token
//! count and the first [`HEAD_TOKENS`] token ids) so outputs can be compared across levels in
//! memory that does not grow with the request count.

use super::{Expected, Grader};
use crate::record::{Answer, HEAD_TOKENS, OutputPrint};
use crate::workload::salt::fnv1a;
use crate::workload::tokenizer::Tokenizer;

/// Expected answers by dataset index, and how they are graded.
#[derive(Debug, Clone)]
pub struct AnswerKey {
    grader: Grader,
    expected: Vec<Expected>,
    greedy: bool,
}

impl AnswerKey {
    /// The key of a dataset whose entry `i` expects `expected[i]`; `greedy`: requests ask for
    /// temperature 0, so the same prompt should get the same output at every load.
    pub fn new(grader: Grader, expected: Vec<Expected>, greedy: bool) -> AnswerKey {
        AnswerKey {
            grader,
            expected,
            greedy,
        }
    }

    /// Prompts in the key.
    pub fn len(&self) -> usize {
        self.expected.len()
    }

    /// Whether the key is empty.
    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }

    /// Whether outputs are compared across levels (requests asked for temperature 0).
    pub fn greedy(&self) -> bool {
        self.greedy
    }

    /// The accuracy of guessing: the mean of one over the options, when every answer is an
    /// option graded by its letter (multiple choice, or exact match of the letter).
    pub fn chance(&self) -> Option<f64> {
        if self.grader == Grader::Numeric || self.expected.is_empty() {
            return None;
        }
        let mut sum = 0.0;
        for e in &self.expected {
            sum += e.chance()?;
        }
        Some(sum / self.expected.len() as f64)
    }

    /// The answer of prompt `prompt` whose output is `text`, graded from byte `answer_from`
    /// (the reasoning before it is not the answer); `None` for a prompt outside the key.
    pub fn mark(
        &self,
        prompt: u32,
        text: &str,
        answer_from: usize,
        tokenizer: &Tokenizer,
    ) -> Option<Box<Answer>> {
        let expected = self.expected.get(prompt as usize)?;
        let answer = text.get(answer_from..).unwrap_or(text);
        let grade = self.grader.grade(answer, expected);
        Some(Box::new(Answer {
            correct: grade.correct,
            unparsed: grade.unparsed,
            output: print(text, tokenizer),
            changed: None,
            change: None,
        }))
    }
}

/// The fingerprint of an output text.
pub fn print(text: &str, tokenizer: &Tokenizer) -> OutputPrint {
    let ids = tokenizer.encode(text);
    let mut head = [0u32; HEAD_TOKENS];
    for (h, id) in head.iter_mut().zip(&ids) {
        *h = *id;
    }
    OutputPrint {
        hash: fnv1a(text.as_bytes()),
        tokens: u32::try_from(ids.len()).unwrap_or(u32::MAX),
        head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_prints() {
        let tk = Tokenizer::builtin_gpt2();
        let key = AnswerKey::new(
            Grader::MultipleChoice,
            vec![
                Expected::Choice { index: 1, of: 4 },
                Expected::Choice { index: 0, of: 2 },
            ],
            true,
        );
        assert_eq!(key.chance(), Some((0.25 + 0.5) / 2.0));
        let a = key.mark(0, " B the of", 0, &tk).unwrap();
        assert!(a.correct && !a.unparsed);
        assert_eq!(a.output.tokens, 3);
        assert_eq!(a.output.head[..3], tk.encode(" B the of")[..]);
        assert_eq!(a.output.head[3], 0);
        // Reasoning before byte 6 is not the answer: "A" there does not count.
        let a = key.mark(1, "A? no. B", 6, &tk).unwrap();
        assert!(!a.correct);
        assert!(key.mark(2, "A", 0, &tk).is_none());
        assert_eq!(print("x", &tk), print("x", &tk));
        assert_ne!(print("x", &tk).hash, print("y", &tk).hash);
        let numeric = AnswerKey::new(Grader::Numeric, vec![Expected::Number("3".into())], false);
        assert_eq!(numeric.chance(), None);
        assert!(!numeric.greedy());
    }
}
