//! Scored answers: given the dataset a scored workload sends (`serve --answer-key`, read by the
//! client's own readers), the simulator recognises each question and answers it, right with a
//! set probability that can fall with load, so the accuracy verdict and the determinism check
//! have known answers in tests.
//!
//! Recognising a question: the prompt (the chat API's last user message, or the completions
//! prompt) ends with the question's block (`workload::scored::prompt`), either as the whole text
//! or after a blank line; each such suffix is looked up by its hash.
//!
//! The answer is ` {expected}` then a line break, then the usual word cycle: a choice's letter,
//! a number, a text, so every grader reads it (the right one, or a wrong one: another letter,
//! the number plus one, the text with a word added), each token of it one event.
//!
//! Right with probability `p = accuracy − drop_per_batch × max(0, load − drop_above)`, where
//! `load` is the number of scored requests in flight when this one arrived (itself included).
//! At temperature 0 the draw is a function of the prompt (the same prompt at the same load gets
//! the same answer: deterministic), otherwise of the request. With `vary_share`, a temperature-0
//! prompt among that share (chosen by its hash) gets a different word right after its answer
//! whenever the load exceeds `vary_above`: the batch-dependent output a determinism check finds.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::workload::salt::fnv1a;
use crate::workload::scored::{Expected, ScoredSet};
use crate::workload::tokenizer::Tokenizer;

/// How scored questions are answered (`serve --answer-key` and its flags).
#[derive(Debug, Clone)]
pub struct AnswerConfig {
    /// The questions recognised, with their answers.
    pub set: Arc<ScoredSet>,
    /// Probability of a right answer at light load (`--answer-accuracy`).
    pub accuracy: f64,
    /// How much that probability falls per request in flight beyond `drop_above`
    /// (`--accuracy-drop-per-batch`).
    pub drop_per_batch: f64,
    /// The load the probability starts falling above (`--accuracy-drop-above`).
    pub drop_above: u32,
    /// Share of temperature-0 prompts whose output changes under load (`--nondeterministic-share`).
    pub vary_share: f64,
    /// The load above which those outputs change (`--nondeterministic-above`).
    pub vary_above: u32,
}

impl AnswerConfig {
    /// Checks the shares and probabilities.
    pub fn validate(&self) -> anyhow::Result<()> {
        for (name, v) in [
            ("--answer-accuracy", self.accuracy),
            ("--accuracy-drop-per-batch", self.drop_per_batch),
            ("--nondeterministic-share", self.vary_share),
        ] {
            if !(0.0..=1.0).contains(&v) {
                anyhow::bail!("{name} {v}: give a share between 0 and 1");
            }
        }
        Ok(())
    }
}

/// The simulator's answer key and the scored requests in flight.
#[derive(Debug)]
pub(crate) struct Answers {
    cfg: AnswerConfig,
    /// Question blocks by hash, to their item.
    by_block: HashMap<u64, usize>,
    inflight: Arc<AtomicU32>,
    draws: AtomicU64,
    tokenizer: Tokenizer,
}

/// Holds a scored request's place in the load until dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<AtomicU32>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a recognised question is answered with: its first tokens (each one event); the word
/// cycle continues after them.
#[derive(Debug)]
pub(crate) struct Scripted {
    /// The tokens, each as its text.
    pub(crate) tokens: Vec<String>,
    /// Keeps the request counted in the load while it is answered.
    pub(crate) _inflight: InFlight,
}

impl Answers {
    /// The key of `cfg`.
    pub(crate) fn new(cfg: AnswerConfig) -> Answers {
        let by_block = cfg
            .set
            .items
            .iter()
            .enumerate()
            .map(|(i, item)| (fnv1a(item.block.as_bytes()), i))
            .collect();
        Answers {
            cfg,
            by_block,
            inflight: Arc::new(AtomicU32::new(0)),
            draws: AtomicU64::new(0),
            tokenizer: Tokenizer::builtin_gpt2(),
        }
    }

    /// The answer to `prompt` when it asks a known question; `greedy`: the request asked for
    /// temperature 0.
    pub(crate) fn answer(&self, prompt: &str, greedy: bool) -> Option<Scripted> {
        let (item, key) = self.lookup(prompt)?;
        let load = self.inflight.fetch_add(1, Ordering::AcqRel) + 1;
        let inflight = InFlight(self.inflight.clone());
        let c = &self.cfg;
        let p = c.accuracy - c.drop_per_batch * f64::from(load.saturating_sub(c.drop_above));
        let draw = if greedy {
            unit(key ^ 0x5eed_0001)
        } else {
            unit(fnv1a(&self.draws.fetch_add(1, Ordering::Relaxed).to_le_bytes()) ^ key)
        };
        let expected = &self.cfg.set.items[item].expected;
        let text = if draw < p {
            expected.text().into_owned()
        } else {
            wrong(expected, key)
        };
        let mut tokens = self.pieces(&format!(" {text}\n"));
        let varies = greedy && load > c.vary_above && unit(key ^ 0x5eed_0002) < c.vary_share;
        if varies {
            // A different word where the cycle would go on: the output differs from there.
            let at = tokens.len() as u32;
            tokens.push(super::tokens::word(at + super::tokens::CYCLE as u32 / 2).to_string());
        }
        Some(Scripted {
            tokens,
            _inflight: inflight,
        })
    }

    /// The item whose block ends `prompt` (as the whole text, or after a blank line), and the
    /// hash of that block.
    fn lookup(&self, prompt: &str) -> Option<(usize, u64)> {
        let text = prompt.trim_end();
        let starts = std::iter::once(0).chain(text.match_indices("\n\n").map(|(i, _)| i + 2));
        let starts: Vec<usize> = starts.collect();
        starts.into_iter().rev().find_map(|s| {
            let h = fnv1a(&text.as_bytes()[s..]);
            self.by_block.get(&h).map(|&i| (i, h))
        })
    }

    /// `text` as its GPT-2 tokens' texts, so the client counts as many tokens as were sent.
    fn pieces(&self, text: &str) -> Vec<String> {
        self.tokenizer
            .encode(text)
            .into_iter()
            .map(|id| self.tokenizer.decode(&[id]))
            .collect()
    }
}

/// A number in [0, 1) from a hash.
fn unit(h: u64) -> f64 {
    let mixed = h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (h >> 31);
    (mixed >> 11) as f64 / (1u64 << 53) as f64
}

/// A wrong answer: another option, the number plus one, the text with a word more.
fn wrong(e: &Expected, key: u64) -> String {
    match e {
        Expected::Choice { index, of } => {
            let of = (*of).max(2);
            let step = 1 + (key % u64::from(of - 1)) as u8;
            crate::workload::scored::grade::letter((index + step) % of).to_string()
        }
        Expected::Number(n) => match crate::workload::scored::grade::parse_number(n) {
            Some(v) => format!("{}", v + 1.0),
            None => format!("{n}1"),
        },
        Expected::Text(t) => format!("{t} perhaps"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::scored::{Grader, Item};

    fn set() -> Arc<ScoredSet> {
        let item = |block: &str, expected| Item {
            subject: None,
            block: block.into(),
            solution: String::new(),
            expected,
            at: "t:1".into(),
        };
        Arc::new(ScoredSet {
            items: vec![
                item(
                    "Q1\nA. x\nB. y\nAnswer:",
                    Expected::Choice { index: 1, of: 2 },
                ),
                item(
                    "Question: 2+2?\n\nThink.\nAnswer:",
                    Expected::Number("4".into()),
                ),
            ],
            shots: vec![],
        })
    }

    fn cfg(accuracy: f64) -> AnswerConfig {
        AnswerConfig {
            set: set(),
            accuracy,
            drop_per_batch: 0.0,
            drop_above: 1,
            vary_share: 0.0,
            vary_above: 1,
        }
    }

    fn text(s: &Scripted) -> String {
        s.tokens.concat()
    }

    /// Whether `grader` finds the answer `s` right for `expected`.
    fn right(grader: Grader, s: &Scripted, expected: Expected) -> bool {
        grader.grade(&text(s), &expected).correct
    }

    #[test]
    fn recognises_the_question_at_the_end() {
        let a = Answers::new(cfg(1.0));
        let s = a
            .answer("header\n\nQ0\nAnswer: A\n\nQ1\nA. x\nB. y\nAnswer:", true)
            .unwrap();
        assert_eq!(text(&s), " B\n");
        assert!(right(
            Grader::MultipleChoice,
            &s,
            Expected::Choice { index: 1, of: 2 }
        ));
        // A block holding a blank line itself is still found.
        let s = a.answer("Question: 2+2?\n\nThink.\nAnswer:", true).unwrap();
        assert!(right(Grader::Numeric, &s, Expected::Number("4".into())));
        assert!(a.answer("something else", true).is_none());
        drop(s);
    }

    #[test]
    fn wrong_answers_are_wrong_for_every_grader() {
        let a = Answers::new(cfg(0.0));
        let s = a.answer("Q1\nA. x\nB. y\nAnswer:", true).unwrap();
        assert_eq!(text(&s), " A\n");
        let s = a
            .answer("Question: 2+2?\n\nThink.\nAnswer:", false)
            .unwrap();
        assert!(!right(Grader::Numeric, &s, Expected::Number("4".into())));
        assert!(!right(Grader::ExactMatch, &s, Expected::Number("4".into())));
        assert_eq!(wrong(&Expected::Text("Paris".into()), 0), "Paris perhaps");
    }

    /// The load counts requests in flight; above the threshold accuracy falls and, with a
    /// share, outputs of greedy requests change after the answer.
    #[test]
    fn load_lowers_accuracy_and_varies_outputs() {
        let a = Answers::new(AnswerConfig {
            drop_per_batch: 1.0,
            drop_above: 1,
            vary_share: 1.0,
            vary_above: 1,
            ..cfg(1.0)
        });
        let q = "Q1\nA. x\nB. y\nAnswer:";
        let alone = a.answer(q, true).unwrap();
        assert_eq!(text(&alone), " B\n", "load 1: right, unchanged");
        let second = a.answer(q, true).unwrap();
        assert_eq!(second.tokens[..2].concat(), " A\n", "load 2: p = 0");
        assert_eq!(
            second.tokens.len(),
            alone.tokens.len() + 1,
            "and a word changed after it"
        );
        drop((alone, second));
        assert_eq!(a.inflight.load(Ordering::Acquire), 0);
        assert!(
            AnswerConfig {
                accuracy: 1.5,
                ..cfg(1.0)
            }
            .validate()
            .is_err()
        );
    }
}
