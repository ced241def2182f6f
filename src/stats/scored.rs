//! What a level's graded answers say: its accuracy with a Wilson interval, and the
//! determinism check — the share of prompts whose output changed from their reference output,
//! with its interval and an example of where one first differed.
//!
//! The reference of a prompt is the first measured output the run got for it ([`References`],
//! shared by the run's levels, one fingerprint per prompt: memory bounded by the dataset, not by
//! the request count). A prompt counts as compared at a level when one of its outputs there was
//! compared with the reference, and as changed when one of them differed; so at the first level
//! only prompts sent twice are compared. Counted per prompt in bit sets, which merge by union
//! (windows, shards: shards send disjoint prompts).

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::record::{ChangeExample, HEAD_TOKENS, OutputPrint, Phase, RequestRecord};
use crate::workload::tokenizer::Tokenizer;

/// Prompt indices, as bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptSet(Vec<u64>);

impl PromptSet {
    /// Adds prompt `i`.
    pub fn insert(&mut self, i: u32) {
        let (w, b) = (i as usize / 64, i % 64);
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }

    /// Whether prompt `i` is in.
    pub fn contains(&self, i: u32) -> bool {
        self.0
            .get(i as usize / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Prompts in.
    pub fn len(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Whether none is in.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The prompts in, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, bits)| {
            (0..64u32)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w as u32 * 64 + b)
        })
    }

    /// Adds every prompt of `o`.
    pub fn union(&mut self, o: &PromptSet) {
        if self.0.len() < o.0.len() {
            self.0.resize(o.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= b;
        }
    }
}

/// A level's graded answers, counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnswerTally {
    /// Successful measured requests graded.
    pub graded: u64,
    /// Of those, graded right.
    pub correct: u64,
    /// Of those, without an answer in the expected form.
    pub unparsed: u64,
    /// Prompts whose output was compared with their reference.
    pub compared: PromptSet,
    /// Prompts one of whose outputs differed from their reference.
    pub changed: PromptSet,
    /// Where a changed output first differed (the first one the level saw).
    pub example: Option<ChangeExample>,
}

impl AnswerTally {
    /// Counts a successful measured request (those without an answer are not scored).
    pub fn record(&mut self, rec: &RequestRecord) {
        let Some(a) = rec.answer.as_deref() else {
            return;
        };
        self.graded += 1;
        self.correct += u64::from(a.correct);
        self.unparsed += u64::from(a.unparsed);
        if let Some(changed) = a.changed {
            self.compared.insert(rec.prompt_index);
            if changed {
                self.changed.insert(rec.prompt_index);
            }
        }
        if self.example.is_none() {
            self.example = a.change.as_deref().cloned();
        }
    }

    /// Adds another part of the level (a window, a shard).
    pub fn merge(&mut self, o: &AnswerTally) {
        self.graded += o.graded;
        self.correct += o.correct;
        self.unparsed += o.unparsed;
        self.compared.union(&o.compared);
        self.changed.union(&o.changed);
        if self.example.is_none() {
            self.example = o.example.clone();
        }
    }

    /// The level's numbers, intervals at `confidence`; `None` when nothing was graded.
    pub fn summarize(&self, confidence: f64) -> Option<AccuracyStats> {
        if self.graded == 0 {
            return None;
        }
        let compared = self.compared.len();
        let changed = (compared > 0).then(|| {
            ChangedStats::of(
                self.changed.len(),
                compared,
                confidence,
                self.example.clone(),
            )
        });
        Some(AccuracyStats::of(
            Counts {
                graded: self.graded,
                correct: self.correct,
                unparsed: self.unparsed,
            },
            confidence,
            changed,
        ))
    }
}

/// Graded answers of a level, counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Graded.
    pub graded: u64,
    /// Right.
    pub correct: u64,
    /// Without an answer in the expected form.
    pub unparsed: u64,
}

/// A level's accuracy and the determinism check's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccuracyStats {
    /// Successful measured requests graded.
    pub graded: u64,
    /// Of those, right.
    pub correct: u64,
    /// Of those, without an answer in the expected form.
    pub unparsed: u64,
    /// `correct / graded`.
    pub accuracy: f64,
    /// Wilson interval of the accuracy at `confidence`: lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The intervals' confidence (0..1).
    pub confidence: f64,
    /// The accuracy of guessing (one over the options), when the answers are options.
    pub chance: Option<f64>,
    /// Prompts whose output changed from their reference (outputs compared: temperature 0).
    pub changed: Option<ChangedStats>,
}

impl AccuracyStats {
    /// The numbers of `counts`, the interval at `confidence`.
    pub fn of(counts: Counts, confidence: f64, changed: Option<ChangedStats>) -> AccuracyStats {
        let (low, high) = wilson(counts.correct, counts.graded, confidence);
        AccuracyStats {
            graded: counts.graded,
            correct: counts.correct,
            unparsed: counts.unparsed,
            accuracy: share(counts.correct, counts.graded),
            low,
            high,
            confidence,
            chance: None,
            changed,
        }
    }

    /// The same counts with intervals at `confidence` and the chance rate `chance`.
    pub fn at(&self, confidence: f64, chance: Option<f64>) -> AccuracyStats {
        let counts = Counts {
            graded: self.graded,
            correct: self.correct,
            unparsed: self.unparsed,
        };
        let changed = self
            .changed
            .as_ref()
            .map(|c| ChangedStats::of(c.changed, c.compared, confidence, c.example.clone()));
        AccuracyStats {
            chance,
            ..AccuracyStats::of(counts, confidence, changed)
        }
    }

    /// Whether the accuracy cannot be told from guessing: the chance rate lies in its interval.
    pub fn at_chance(&self) -> bool {
        self.chance.is_some_and(|c| self.low <= c && c <= self.high)
    }
}

/// The determinism check at one level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangedStats {
    /// Prompts compared with their reference.
    pub compared: u64,
    /// Of those, prompts whose output differed.
    pub changed: u64,
    /// `changed / compared`.
    pub share: f64,
    /// Wilson interval of the share: lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Where a changed output first differed.
    pub example: Option<ChangeExample>,
}

impl ChangedStats {
    /// `changed` of `compared`, the interval at `confidence`.
    pub fn of(
        changed: u64,
        compared: u64,
        confidence: f64,
        example: Option<ChangeExample>,
    ) -> ChangedStats {
        let (low, high) = wilson(changed, compared, confidence);
        ChangedStats {
            compared,
            changed,
            share: share(changed, compared),
            low,
            high,
            example,
        }
    }
}

fn share(x: u64, n: u64) -> f64 {
    if n == 0 { 0.0 } else { x as f64 / n as f64 }
}

/// The Wilson score interval of `x` successes in `n` trials, two-sided at `confidence`:
/// `(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)`. `(0, 1)` without trials.
pub fn wilson(x: u64, n: u64, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = super::ci::normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let (n, p) = (n as f64, x as f64 / n as f64);
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// Every prompt's reference output: the first measured output the run got for it.
#[derive(Debug)]
pub struct References {
    prints: Mutex<Vec<Option<OutputPrint>>>,
    tokenizer: Tokenizer,
}

/// An output against its prompt's reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// It is the reference (the prompt's first output).
    Reference,
    /// The same text.
    Same,
    /// A different text, first differing at this token (0-based; [`HEAD_TOKENS`] when the
    /// kept tokens agree).
    Changed(u32),
}

impl References {
    /// Room for `prompts` prompts; `tokenizer` names tokens in examples.
    pub fn new(prompts: usize, tokenizer: Tokenizer) -> References {
        References {
            prints: Mutex::new(vec![None; prompts]),
            tokenizer,
        }
    }

    /// Compares `print` with `prompt`'s reference, making it the reference when there is none.
    pub fn compare(&self, prompt: u32, print: &OutputPrint) -> Against {
        let mut prints = self.prints.lock().unwrap_or_else(|p| p.into_inner());
        let Some(slot) = prints.get_mut(prompt as usize) else {
            return Against::Reference;
        };
        let Some(r) = slot else {
            *slot = Some(*print);
            return Against::Reference;
        };
        if r.hash == print.hash && r.tokens == print.tokens {
            return Against::Same;
        }
        let kept = (r.tokens.max(print.tokens) as usize).min(HEAD_TOKENS);
        let at = (0..kept)
            .find(|&i| token(r, i) != token(print, i))
            .unwrap_or(HEAD_TOKENS);
        Against::Changed(at as u32)
    }

    /// The example of `print` (of `prompt`) first differing from its reference at `at`.
    pub fn example(&self, prompt: u32, print: &OutputPrint, at: u32) -> ChangeExample {
        let prints = self.prints.lock().unwrap_or_else(|p| p.into_inner());
        let reference = prints.get(prompt as usize).copied().flatten();
        let text = |p: Option<&OutputPrint>| {
            p.and_then(|p| token(p, at as usize))
                .map_or(String::new(), |id| self.tokenizer.decode(&[id]))
        };
        ChangeExample {
            prompt,
            token: at,
            reference: text(reference.as_ref()),
            now: text(Some(print)),
        }
    }
}

/// Token `i` of a print, when it has one and kept it.
fn token(p: &OutputPrint, i: usize) -> Option<u32> {
    (i < HEAD_TOKENS && i < p.tokens as usize).then(|| p.head[i])
}

/// Whether a record is one the determinism check compares: measured, successful, scored.
pub fn comparable(rec: &RequestRecord) -> bool {
    rec.phase == Phase::Measure && rec.ok() && rec.answer.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_known_values() {
        // 8 of 10 at 95 %: (0.4902, 0.9433), the textbook value.
        let (lo, hi) = wilson(8, 10, 0.95);
        assert!(
            (lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3,
            "{lo} {hi}"
        );
        // 0 of 40: the lower end is 0, the upper 8.8 %.
        let (lo, hi) = wilson(0, 40, 0.95);
        assert!(lo == 0.0 && (hi - 0.0876).abs() < 1e-3, "{hi}");
        assert_eq!(wilson(0, 0, 0.95), (0.0, 1.0));
    }

    fn print(tk: &Tokenizer, text: &str) -> OutputPrint {
        crate::workload::scored::key::print(text, tk)
    }

    #[test]
    fn references_find_the_first_differing_token() {
        let tk = Tokenizer::builtin_gpt2();
        let r = References::new(3, tk.clone());
        let a = print(&tk, " B the of and");
        assert_eq!(r.compare(0, &a), Against::Reference);
        assert_eq!(r.compare(0, &a), Against::Same);
        let b = print(&tk, " B the to and");
        assert_eq!(r.compare(0, &b), Against::Changed(2));
        let ex = r.example(0, &b, 2);
        assert_eq!((ex.reference.as_str(), ex.now.as_str()), (" of", " to"));
        // Longer output with the same start: it differs where the shorter ended.
        let c = print(&tk, " B the of and to");
        assert_eq!(r.compare(0, &c), Against::Changed(4));
        assert_eq!(r.example(0, &c, 4).reference, "");
        // Past the kept tokens: the texts differ after them.
        let long = |last: &str| print(&tk, &format!("{}{last}", " the".repeat(20)));
        assert_eq!(r.compare(1, &long(" x")), Against::Reference);
        assert_eq!(
            r.compare(1, &long(" y")),
            Against::Changed(HEAD_TOKENS as u32)
        );
        assert_eq!(r.compare(7, &a), Against::Reference, "outside the key");
    }

    #[test]
    fn tally_counts_prompts_and_merges() {
        let mut set = PromptSet::default();
        set.insert(3);
        set.insert(130);
        set.insert(3);
        assert_eq!(set.len(), 2);
        assert_eq!(set.iter().collect::<Vec<_>>(), [3, 130]);
        assert!(set.contains(130) && !set.contains(4));
        let mut a = AnswerTally {
            graded: 10,
            correct: 7,
            ..Default::default()
        };
        a.compared.insert(1);
        a.changed.insert(1);
        let mut b = AnswerTally {
            graded: 10,
            correct: 9,
            ..Default::default()
        };
        b.compared.insert(1);
        b.compared.insert(2);
        a.merge(&b);
        let s = a.summarize(0.95).unwrap();
        assert_eq!((s.graded, s.correct, s.accuracy), (20, 16, 0.8));
        let c = s.changed.as_ref().unwrap();
        assert_eq!((c.compared, c.changed, c.share), (2, 1, 0.5));
        assert!(s.low < 0.8 && s.high > 0.8);
        let at = s.at(0.99, Some(0.25));
        assert!(at.low < s.low && at.chance == Some(0.25) && !at.at_chance());
        assert_eq!(AnswerTally::default().summarize(0.95), None);
    }
}
