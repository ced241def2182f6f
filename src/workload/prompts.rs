//! Prompts: synthetic ones with exact token counts, or read from a JSONL file.
//!
//! Synthetic prompts are English-looking sentences (templates over embedded word lists) whose
//! length is *exactly* the sampled number of tokens under the tokenizer in use, whatever that
//! tokenizer is, because ISL is a reported metric and servers' prefill time depends on it. Each
//! prompt draws its own words from its own seeded stream, so prompts differ from their first
//! tokens on and a server's prefix cache cannot make them trivially cheap.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::UsageError;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::lengths::LengthSampler;
use super::salt::Salt;
use super::spec::PrefixPool;
use super::tokenizer::Tokenizer;

/// One prompt to send.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prompt {
    /// The prompt text.
    pub text: String,
    /// Its length in tokens under the tokenizer in use (the ISL).
    pub tokens: u32,
}

// ------------------------------------------------------------------------------------------------
// Synthetic prompts.

/// `count` synthetic prompts whose lengths follow normal(`mean`, `stddev`) tokens (rounded, at
/// least 1), each with exactly that many tokens under `tokenizer`: [`synthetic_with`] without a
/// salt or prefix prompts.
pub fn synthetic(
    tokenizer: &Tokenizer,
    count: usize,
    mean: u32,
    stddev: u32,
    seed: u64,
) -> Vec<Prompt> {
    synthetic_with(
        tokenizer,
        &SyntheticSpec {
            count,
            mean,
            stddev,
            seed,
            salt: Salt::NONE,
            prefixes: None,
        },
    )
}

/// What synthetic prompts to make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticSpec {
    /// How many.
    pub count: usize,
    /// Mean length in tokens (without the prefix prompt).
    pub mean: u32,
    /// Standard deviation of the length.
    pub stddev: u32,
    /// `--random-seed`: lengths, and the text when unsalted.
    pub seed: u64,
    /// The run's salt, mixed into the text streams' seed only.
    pub salt: Salt,
    /// Shared system prompts, one in front of each prompt (round robin).
    pub prefixes: Option<PrefixPool>,
}

/// Synthetic prompts as `spec` says.
///
/// Deterministic for a given seed, salt and tokenizer: lengths come from
/// `StdRng::seed_from_u64(seed)` (the same sequence as [`LengthSampler::seeded`]), and prompt
/// `i`'s words from a stream derived from `(seed, salt, i)`, so the first prompts do not change
/// when `count` grows. (rand_distr's normal sampler uses `ln`/`exp` in its rare tail and wedge
/// steps; a platform libm differing in the last bit could only change a length whose sample lies
/// within ~1e-16 of a rounding boundary.)
///
/// With prefix prompts, prefix `k` is `length` tokens of its own stream `(seed, salt, k)`, and
/// prompt `i` is prefix `i mod count` followed by its sampled length of words: its input length
/// is the prefix's plus the sampled one, as GenAI-Perf prepends its prefix prompts. The words
/// after a prefix start with a space, so the prefix keeps its tokens in every prompt (for
/// GPT-2-style pre-tokenizers, which split before every space-led word).
///
/// Exactness: words are added while their memoised token cost fits, the remainder is filled with
/// words that cost one token, and the whole text is then counted and corrected (bounded rounds),
/// falling back to filler words alone. If even that misses (in practice only for a tokenizer with
/// no one-token filler word, such as a character-level one), the prompt keeps its closest text,
/// its `tokens` field holds the true count, and a warning is logged.
pub fn synthetic_with(tokenizer: &Tokenizer, spec: &SyntheticSpec) -> Vec<Prompt> {
    let sampler = LengthSampler::new(spec.mean, spec.stddev);
    let mut lengths = StdRng::seed_from_u64(spec.seed);
    let text_seed = spec.salt.text_seed(spec.seed);
    let mut builder = PromptBuilder::new(tokenizer);
    let mut inexact = 0usize;
    let pool: Vec<Prompt> = spec.prefixes.map_or(Vec::new(), |p| {
        (0..p.count as usize)
            .map(|k| {
                let mut rng = StdRng::seed_from_u64(prefix_seed(text_seed, k));
                let prefix = builder.build(p.length, &mut rng);
                inexact += usize::from(prefix.tokens != p.length);
                prefix
            })
            .collect()
    });
    let prompts: Vec<Prompt> = (0..spec.count)
        .map(|i| {
            let target = sampler.sample(&mut lengths);
            let mut rng = StdRng::seed_from_u64(prompt_seed(text_seed, i));
            let head = pool.get(i % pool.len().max(1));
            let prompt = match head {
                Some(h) => builder.build_on(h, h.tokens + target, &mut rng),
                None => builder.build(target, &mut rng),
            };
            inexact += usize::from(prompt.tokens != head.map_or(0, |h| h.tokens) + target);
            prompt
        })
        .collect();
    if inexact > 0 {
        tracing::warn!(
            tokenizer = tokenizer.name(),
            "{inexact} synthetic prompts or prefixes could not be given their exact target length; \
             their true token counts are used"
        );
    }
    prompts
}

/// Seed of prefix prompt `k`'s word stream: apart from every prompt's stream.
fn prefix_seed(seed: u64, k: usize) -> u64 {
    super::salt::mix(seed ^ 0x7072_6566_6978_0000 ^ k as u64)
}

/// Seed of prompt `i`'s word stream: distinct per index (an odd multiplier is a bijection), and
/// `seed_from_u64` expands it into an unrelated ChaCha key.
fn prompt_seed(seed: u64, i: usize) -> u64 {
    seed ^ (i as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Rounds of count-and-correct before falling back to filler-only text.
const MAX_CORRECTIONS: usize = 16;
/// Context before a unit when measuring its marginal token cost.
const COST_CONTEXT: &str = "The";

/// Builds exact-length prompts for one tokenizer, memoising what it learns about it.
struct PromptBuilder<'t> {
    tokenizer: &'t Tokenizer,
    /// Marginal token cost of each unit text (a word with its leading space, or punctuation); for
    /// prompt-initial words (no leading space), the cost of the word alone.
    costs: HashMap<String, u32>,
    /// Units costing exactly one token after other text, also when repeated (` the`, ` and`...).
    fillers: Vec<&'static str>,
    /// Prompt-initial words costing exactly one token, compatible with `fillers`.
    initial_fillers: Vec<&'static str>,
}

/// Where a prompt's text has reached: unit boundaries and their estimated costs.
struct Draft {
    text: String,
    /// (end offset, estimated cost) of each unit, in order.
    units: Vec<(usize, u32)>,
    estimate: u32,
}

impl<'t> PromptBuilder<'t> {
    fn new(tokenizer: &'t Tokenizer) -> Self {
        let mut b = PromptBuilder {
            tokenizer,
            costs: HashMap::new(),
            fillers: Vec::new(),
            initial_fillers: Vec::new(),
        };
        let base = tokenizer.count(COST_CONTEXT);
        for &w in FILLER_CANDIDATES {
            // One token after text, and still one each when repeated (no merging across them).
            let once = tokenizer.count(&format!("{COST_CONTEXT}{w}"));
            let thrice = tokenizer.count(&format!("{COST_CONTEXT}{w}{w}{w}"));
            if once == base + 1 && thrice == base + 3 {
                b.fillers.push(w);
            }
        }
        if let Some(&f) = b.fillers.first() {
            for &w in INITIAL_FILLER_CANDIDATES {
                if tokenizer.count(w) == 1 && tokenizer.count(&format!("{w}{f}{f}")) == 3 {
                    b.initial_fillers.push(w);
                }
            }
        }
        b
    }

    /// Marginal cost of the unit just appended at `text[start..]`.
    fn cost(&mut self, text: &str, start: usize) -> u32 {
        let unit = &text[start..];
        if let Some(&c) = self.costs.get(unit) {
            return c;
        }
        let c = if start == 0 {
            self.tokenizer.count(unit)
        } else {
            let with = self.tokenizer.count(&format!("{COST_CONTEXT}{unit}"));
            with.saturating_sub(self.tokenizer.count(COST_CONTEXT))
        };
        let c = u32::try_from(c).unwrap_or(u32::MAX);
        self.costs.insert(unit.to_owned(), c);
        c
    }

    /// Appends one filler unit (one token) to the draft; false if this tokenizer has none.
    fn push_filler(&self, d: &mut Draft, rng: &mut StdRng) -> bool {
        let pool = if d.text.is_empty() {
            &self.initial_fillers
        } else {
            &self.fillers
        };
        if pool.is_empty() {
            return false;
        }
        d.text.push_str(pool[rng.random_range(0..pool.len())]);
        d.units.push((d.text.len(), 1));
        d.estimate += 1;
        true
    }

    /// A prompt of exactly `target` tokens if at all possible (see [`synthetic_with`]).
    fn build(&mut self, target: u32, rng: &mut StdRng) -> Prompt {
        self.build_on(&Prompt::default(), target, rng)
    }

    /// `head` followed by words, `target` tokens in all if at all possible: only the words
    /// after `head` are added, corrected and dropped.
    fn build_on(&mut self, head: &Prompt, target: u32, rng: &mut StdRng) -> Prompt {
        let mut d = Draft {
            text: head.text.clone(),
            units: Vec::new(),
            estimate: head.tokens,
        };
        let floor = head.text.len();
        // 1. Sentences while the next unit's memoised cost fits. A unit costing nothing would not
        // advance the estimate, so the number of units is bounded too.
        let mut words = Sentences::default();
        let max_units = (target as usize).saturating_mul(4).saturating_add(64);
        while d.estimate < target && d.units.len() < max_units {
            let start = d.text.len();
            words.push_next(&mut d.text, rng);
            let cost = self.cost(&d.text, start);
            if d.estimate.saturating_add(cost) > target {
                d.text.truncate(start);
                break;
            }
            d.estimate += cost;
            d.units.push((d.text.len(), cost));
        }
        // 2. One-token fillers for the remainder.
        while d.estimate < target && self.push_filler(&mut d, rng) {}
        // 3. Count the whole text and correct it.
        if let Some(p) = self.correct(&mut d, floor, target, rng) {
            return p;
        }
        // 4. Fallback: fillers only, which were checked not to merge with each other.
        if let Some(p) = self.fillers_only(head, target) {
            return p;
        }
        let tokens = self.tokenizer.tokens(&d.text);
        Prompt {
            text: d.text,
            tokens,
        }
    }

    /// Step 3: counts the whole text and corrects it (bounded rounds), never cutting into the
    /// first `floor` bytes: estimates are exact for GPT-2-style pre-tokenizers but only close
    /// for others (context effects at word boundaries). `None` when it stays off.
    fn correct(
        &mut self,
        d: &mut Draft,
        floor: usize,
        target: u32,
        rng: &mut StdRng,
    ) -> Option<Prompt> {
        let mut actual = self.tokenizer.tokens(&d.text);
        for _ in 0..MAX_CORRECTIONS {
            if actual == target {
                break;
            }
            if actual < target {
                if !self.push_filler(d, rng) {
                    // Nothing to add with: more rounds would count the same text again.
                    return None;
                }
                for _ in actual + 1..target {
                    self.push_filler(d, rng);
                }
            } else {
                // Drop trailing units worth at least the excess (at least one unit).
                let excess = actual - target;
                let mut removed = 0;
                while removed < excess.max(1) {
                    let Some((_, cost)) = d.units.pop() else {
                        break;
                    };
                    removed += cost.max(1);
                    d.estimate = d.estimate.saturating_sub(cost);
                }
                d.text.truncate(d.units.last().map_or(floor, |u| u.0));
            }
            actual = self.tokenizer.tokens(&d.text);
        }
        (actual == target).then(|| Prompt {
            text: std::mem::take(&mut d.text),
            tokens: actual,
        })
    }

    /// `head` and one-token fillers up to `target`, if that is exact.
    fn fillers_only(&self, head: &Prompt, target: u32) -> Option<Prompt> {
        if self.fillers.is_empty() {
            return None;
        }
        let mut text = head.text.clone();
        let mut from = head.tokens as usize;
        if text.is_empty() {
            text.push_str(self.initial_fillers.first()?);
            from += 1;
        }
        for i in from..target as usize {
            text.push_str(self.fillers[i % self.fillers.len()]);
        }
        let n = self.tokenizer.tokens(&text);
        (n == target).then_some(Prompt { text, tokens: n })
    }
}

/// Words that usually cost one token after other text, with their leading space.
const FILLER_CANDIDATES: &[&str] = &[
    " the", " and", " of", " to", " in", " a", " is", " it", " on", " for", " as", " with", " was",
    " that", " at", " by", " from", " or", " an", " be", " this", " not", " but", " all", " one",
    ",", ".", " x", " 0",
];

/// Prompt-initial words that usually cost one token.
const INITIAL_FILLER_CANDIDATES: &[&str] = &[
    "The", "And", "In", "It", "A", "This", "We", "He", "She", "They", "the", "a", "x", "0",
];

/// A stream of sentence units (words with their leading space, and punctuation) from simple
/// English templates: `Det [Adj] Noun Verb Det [Adj] Noun [Prep Det Noun] [Adv]`, sometimes two
/// clauses joined by a conjunction.
#[derive(Default)]
struct Sentences {
    /// Units of the current sentence still to emit (indices into the word lists, resolved when
    /// emitted); refilled when empty.
    pending: Vec<Unit>,
}

#[derive(Clone, Copy)]
enum Unit {
    Word(&'static str),
    /// A comma, or the mark that ends a sentence.
    Mark(&'static str),
}

impl Sentences {
    /// Appends the next unit to `text`: a space and a word (no space at the very start), or a
    /// punctuation mark; sentence-initial words are capitalised.
    fn push_next(&mut self, text: &mut String, rng: &mut StdRng) {
        if self.pending.is_empty() {
            self.plan_sentence(rng);
        }
        // Planned in reverse so that `pop` yields them in order.
        let Some(unit) = self.pending.pop() else {
            return;
        };
        match unit {
            Unit::Word(w) => {
                let sentence_start = text.is_empty() || text.ends_with(['.', '?', '!']);
                if !text.is_empty() {
                    text.push(' ');
                }
                if sentence_start {
                    let mut chars = w.chars();
                    if let Some(c) = chars.next() {
                        text.extend(c.to_uppercase());
                        text.push_str(chars.as_str());
                    }
                } else {
                    text.push_str(w);
                }
            }
            Unit::Mark(p) => text.push_str(p),
        }
    }

    fn plan_sentence(&mut self, rng: &mut StdRng) {
        let mut s = Vec::with_capacity(24);
        Self::clause(&mut s, rng);
        if rng.random_bool(0.35) {
            s.push(Unit::Mark(","));
            s.push(Unit::Word(pick(CONJUNCTIONS, rng)));
            Self::clause(&mut s, rng);
        }
        let end = match rng.random_range(0..20) {
            0 => "?",
            1 => "!",
            _ => ".",
        };
        s.push(Unit::Mark(end));
        s.reverse();
        self.pending = s;
    }

    fn clause(s: &mut Vec<Unit>, rng: &mut StdRng) {
        Self::noun_phrase(s, rng);
        s.push(Unit::Word(pick(VERBS, rng)));
        Self::noun_phrase(s, rng);
        if rng.random_bool(0.5) {
            s.push(Unit::Word(pick(PREPOSITIONS, rng)));
            Self::noun_phrase(s, rng);
        }
        if rng.random_bool(0.3) {
            s.push(Unit::Word(pick(ADVERBS, rng)));
        }
    }

    fn noun_phrase(s: &mut Vec<Unit>, rng: &mut StdRng) {
        s.push(Unit::Word(pick(DETERMINERS, rng)));
        if rng.random_bool(0.6) {
            s.push(Unit::Word(pick(ADJECTIVES, rng)));
        }
        s.push(Unit::Word(pick(NOUNS, rng)));
    }
}

fn pick(list: &'static [&'static str], rng: &mut StdRng) -> &'static str {
    list[rng.random_range(0..list.len())]
}

// Word lists for the sentence templates (written for this project). Common words, so that a
// GPT-2-like tokenizer spends about one token per word and the per-thread word cache stays warm.

#[rustfmt::skip]
pub(super) const DETERMINERS: &[&str] = &[
    "the", "the", "the", "a", "a", "every", "this", "that", "one", "each", "our", "their", "some",
    "another", "her", "his", "its", "my", "your", "no",
];

#[rustfmt::skip]
pub(super) const ADJECTIVES: &[&str] = &[
    "quiet", "bright", "old", "new", "small", "large", "distant", "careful", "sudden", "gentle",
    "heavy", "narrow", "broad", "ancient", "modern", "silent", "warm", "cold", "green", "golden",
    "hidden", "simple", "strange", "familiar", "steady", "restless", "patient", "curious",
    "clever", "tired", "eager", "bitter", "sweet", "pale", "dark", "early", "late", "rough",
    "smooth", "empty", "crowded", "wooden", "northern", "southern", "honest", "quick", "slow",
    "loud", "faint", "rare", "common", "sharp", "soft", "wild", "calm", "brave", "humble", "proud",
    "thin", "deep", "shallow", "hollow", "fragile", "sturdy", "secret", "public", "final",
];

#[rustfmt::skip]
pub(super) const NOUNS: &[&str] = &[
    "river", "mountain", "village", "garden", "window", "letter", "engine", "bridge", "harbor",
    "forest", "teacher", "farmer", "doctor", "captain", "student", "traveler", "merchant", "child",
    "stranger", "neighbor", "machine", "server", "signal", "message", "report", "question",
    "answer", "story", "song", "map", "lantern", "candle", "road", "path", "field", "meadow",
    "valley", "island", "ocean", "storm", "cloud", "winter", "summer", "morning", "evening",
    "market", "library", "kitchen", "table", "chair", "door", "wall", "tower", "castle", "station",
    "train", "ship", "boat", "horse", "dog", "cat", "bird", "fox", "wolf", "tree", "flower",
    "stone", "coin", "book", "page", "pencil", "clock", "mirror", "painting", "picture", "city",
    "street", "crowd", "council", "system", "network", "model", "number", "pattern", "problem",
    "idea", "plan", "journey", "memory", "promise", "secret", "voice", "silence", "light",
    "shadow", "fire", "water", "bread", "apple", "basket", "blanket", "ladder", "rope", "wheel",
    "hammer", "needle", "thread", "letterbox", "compass", "telescope", "notebook", "orchard",
    "balcony",
];

#[rustfmt::skip]
pub(super) const VERBS: &[&str] = &[
    "found", "carried", "followed", "watched", "opened", "closed", "painted", "repaired", "built",
    "crossed", "visited", "remembered", "forgot", "noticed", "answered", "questioned", "described",
    "measured", "counted", "collected", "delivered", "sent", "received", "borrowed", "returned",
    "lifted", "pushed", "pulled", "admired", "ignored", "studied", "explored", "guarded", "warned",
    "greeted", "invited", "praised", "trusted", "doubted", "shared", "kept", "lost", "offered",
    "prepared", "cleaned", "covered", "discovered", "imagined", "joined", "left", "met", "moved",
    "passed", "planned", "reached", "showed", "taught", "touched", "wrote", "read", "heard", "saw",
];

#[rustfmt::skip]
pub(super) const PREPOSITIONS: &[&str] = &[
    "across", "after", "against", "along", "around", "before", "behind", "beneath", "beside",
    "between", "beyond", "during", "inside", "near", "over", "through", "toward", "under",
    "within", "without", "past", "above", "below",
];

#[rustfmt::skip]
pub(super) const ADVERBS: &[&str] = &[
    "quietly", "slowly", "quickly", "carefully", "again", "together", "today", "yesterday",
    "eventually", "gently", "suddenly", "twice", "once", "often", "rarely", "early", "late",
    "silently", "happily", "patiently", "boldly", "softly", "anyway", "instead",
];

#[rustfmt::skip]
pub(super) const CONJUNCTIONS: &[&str] = &[
    "and", "but", "while", "because", "although", "so", "until", "when", "after", "before",
];

// ------------------------------------------------------------------------------------------------
// Prompt files.

/// Reads a GenAI-Perf `--input-file` JSONL: one object per line with the prompt in `"text"`
/// (also accepted: `"text_input"`, `"prompt"`, in that order). Blank lines are skipped; errors
/// name the file and line.
pub fn from_jsonl(path: &Path, tokenizer: &Tokenizer) -> Result<Vec<Prompt>, UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("cannot open prompt file {}: {e}", path.display())))?;
    from_jsonl_reader(BufReader::new(file), path, tokenizer)
}

/// [`from_jsonl`] over any reader; `path` only names the source in errors (the fuzz target's
/// entry point).
#[doc(hidden)]
pub fn from_jsonl_reader(
    reader: impl BufRead,
    path: &Path,
    tokenizer: &Tokenizer,
) -> Result<Vec<Prompt>, UsageError> {
    let mut prompts = Vec::new();
    // Lines as bytes, so that one bad line gets an error with its number instead of failing the
    // whole read.
    for (i, line) in reader.split(b'\n').enumerate() {
        let n = i + 1;
        let where_ = || format!("{}: line {n}", path.display());
        let line = line.map_err(|e| UsageError(format!("{}: cannot read: {e}", where_())))?;
        let Ok(line) = std::str::from_utf8(&line) else {
            return Err(UsageError(format!("{}: not valid UTF-8", where_())));
        };
        let line = if n == 1 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| UsageError(format!("{}: invalid JSON: {e}", where_())))?;
        let text = ["text", "text_input", "prompt"]
            .iter()
            .find_map(|k| value.get(k))
            .ok_or_else(|| {
                UsageError(format!(
                    "{}: expected a JSON object with a \"text\" field",
                    where_()
                ))
            })?;
        let Some(text) = text.as_str() else {
            return Err(UsageError(format!(
                "{}: the \"text\" field must be a string",
                where_()
            )));
        };
        prompts.push(Prompt {
            text: text.to_owned(),
            tokens: tokenizer.tokens(text),
        });
    }
    if prompts.is_empty() {
        return Err(UsageError(format!(
            "{}: no prompts (every line is blank)",
            path.display()
        )));
    }
    Ok(prompts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn synthetic_prompts_have_exact_lengths() {
        let tk = Tokenizer::builtin_gpt2();
        let prompts = synthetic(&tk, 300, 200, 50, 42);
        assert_eq!(prompts.len(), 300);
        let expected = LengthSampler::new(200, 50).seeded(42, 300);
        for (p, want) in prompts.iter().zip(&expected) {
            assert_eq!(p.tokens, *want);
            assert_eq!(tk.count(&p.text), *want as usize, "{:?}", p.text);
        }
        // Lengths vary, and are not all the mean.
        assert!(expected.iter().any(|&n| n < 170) && expected.iter().any(|&n| n > 230));
    }

    #[test]
    fn synthetic_is_deterministic_and_prefix_stable() {
        let tk = Tokenizer::builtin_gpt2();
        let a = synthetic(&tk, 20, 64, 10, 7);
        let b = synthetic(&tk, 20, 64, 10, 7);
        assert_eq!(a, b);
        let c = synthetic(&tk, 5, 64, 10, 7);
        assert_eq!(c[..], a[..5]);
        let d = synthetic(&tk, 20, 64, 10, 8);
        assert_ne!(a, d);
    }

    #[test]
    fn synthetic_prompts_differ_from_the_start() {
        let tk = Tokenizer::builtin_gpt2();
        let prompts = synthetic(&tk, 200, 100, 0, 1);
        // Distinct texts, and few share even their first four words.
        let texts: std::collections::HashSet<&str> =
            prompts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts.len(), prompts.len());
        let starts: std::collections::HashSet<String> = prompts
            .iter()
            .map(|p| p.text.split(' ').take(4).collect::<Vec<_>>().join(" "))
            .collect();
        assert!(
            starts.len() > 190,
            "only {} distinct openings",
            starts.len()
        );
        // Looks like English sentences.
        let first = &prompts[0].text;
        assert!(
            first.chars().next().is_some_and(char::is_uppercase),
            "{first}"
        );
        assert!(
            first.contains(". ") || first.contains("? ") || first.contains("! "),
            "{first}"
        );
    }

    /// Prefix prompts: K distinct prefixes of exactly L tokens, round robin, each followed by
    /// the prompt's own sampled length; a salt changes the words, never the lengths.
    #[test]
    fn prefix_pool_and_salt() {
        let tk = Tokenizer::builtin_gpt2();
        let spec = SyntheticSpec {
            count: 12,
            mean: 40,
            stddev: 8,
            seed: 3,
            salt: Salt::NONE,
            prefixes: Some(PrefixPool {
                count: 3,
                length: 25,
            }),
        };
        let lengths = LengthSampler::new(40, 8).seeded(3, 12);
        let check = |prompts: &[Prompt]| {
            let toks: Vec<Vec<u32>> = prompts.iter().map(|p| tk.encode(&p.text)).collect();
            for (i, (p, n)) in prompts.iter().zip(&lengths).enumerate() {
                assert_eq!(p.tokens, 25 + n, "{i}");
                assert_eq!(toks[i].len() as u32, 25 + n, "{i}: {:?}", p.text);
            }
            let heads: std::collections::HashSet<&[u32]> = toks.iter().map(|t| &t[..25]).collect();
            assert_eq!(heads.len(), 3, "three distinct prefixes");
            for i in 0..9 {
                assert_eq!(toks[i][..25], toks[i + 3][..25], "round robin");
                assert_ne!(toks[i][25..], toks[i + 3][25..], "own words after it");
            }
            toks
        };
        let plain = check(&synthetic_with(&tk, &spec));
        let salt = Salt::resolve(&crate::workload::PromptSalt::Text("run-2".into()), None);
        let salted = check(&synthetic_with(&tk, &SyntheticSpec { salt, ..spec }));
        assert!(plain.iter().zip(&salted).all(|(a, b)| a[..3] != b[..3]));
        let unpooled = SyntheticSpec {
            prefixes: None,
            ..spec
        };
        assert_eq!(
            synthetic_with(&tk, &unpooled),
            synthetic(&tk, 12, 40, 8, 3),
            "no salt, no pool: the plain generator"
        );
    }

    #[test]
    fn synthetic_handles_tiny_and_zero_lengths() {
        let tk = Tokenizer::builtin_gpt2();
        for mean in [0, 1, 2, 3, 5] {
            for p in synthetic(&tk, 30, mean, 2, mean as u64) {
                assert!(p.tokens >= 1);
                assert_eq!(tk.count(&p.text), p.tokens as usize, "{:?}", p.text);
            }
        }
        assert!(synthetic(&tk, 0, 100, 10, 0).is_empty());
    }

    /// A tokenizer loaded from a file through the HF pipeline (a normalizer keeps it off the fast
    /// path) still gets exact lengths.
    #[test]
    fn synthetic_is_exact_under_a_hf_tokenizer() {
        let dir = tempfile::tempdir().unwrap();
        let gz = include_bytes!("../../assets/gpt2-tokenizer.json.gz");
        let mut json = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut json).unwrap();
        let mut doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
        // Lowercasing changes token costs of capitalised words, and NFD splits nothing here: the
        // estimates stay close but the pipeline is HF's.
        doc["normalizer"] = serde_json::json!({"type": "Lowercase"});
        let path = dir.path().join("lower.json");
        std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
        let tk = Tokenizer::from_file(&path).unwrap();
        assert!(!tk.is_fast());
        for p in synthetic(&tk, 40, 120, 30, 3) {
            assert_eq!(tk.count(&p.text), p.tokens as usize);
        }
        let expected = LengthSampler::new(120, 30).seeded(3, 40);
        let got: Vec<u32> = synthetic(&tk, 40, 120, 30, 3)
            .iter()
            .map(|p| p.tokens)
            .collect();
        assert_eq!(got, expected);
    }

    /// Real tokenizers (Llama 2's SentencePiece BPE, Llama 3's regex + byte-level BPE...) are
    /// not shipped; list `tokenizer.json` paths in `TTFTBENCH_TEST_TOKENIZERS` (separated by
    /// `:`) to check exact lengths under them too.
    #[test]
    fn synthetic_is_exact_under_listed_tokenizers() {
        let Some(paths) = std::env::var_os("TTFTBENCH_TEST_TOKENIZERS") else {
            return;
        };
        for path in std::env::split_paths(&paths) {
            let tk = Tokenizer::from_file(&path).unwrap();
            let started = std::time::Instant::now();
            let prompts = synthetic(&tk, 200, 150, 60, 11);
            let elapsed = started.elapsed();
            let expected = LengthSampler::new(150, 60).seeded(11, 200);
            for (p, want) in prompts.iter().zip(&expected) {
                assert_eq!(p.tokens, *want, "{}: {:?}", path.display(), p.text);
                assert_eq!(tk.count(&p.text), *want as usize);
            }
            println!(
                "{}: fast={} 200 prompts in {elapsed:?}: {:?}",
                path.display(),
                tk.is_fast(),
                &prompts[0].text[..80]
            );
        }
    }

    fn write_jsonl(content: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content.as_bytes()).unwrap();
        f
    }

    #[test]
    fn jsonl_reads_all_field_names_and_skips_blank_lines() {
        let tk = Tokenizer::builtin_gpt2();
        let f = write_jsonl(
            "\u{feff}{\"text\": \"Hello world\"}\n\n   \r\n{\"text_input\": \"What is the capital of France?\"}\r\n{\"prompt\": \"\u{65e5}\u{672c}\", \"extra\": 1}\n",
        );
        let p = from_jsonl(f.path(), &tk).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].text.as_str(), p[0].tokens), ("Hello world", 2));
        assert_eq!(p[1].text, "What is the capital of France?");
        assert_eq!(p[1].tokens as usize, tk.count(&p[1].text));
        assert_eq!(p[2].text, "日本");
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let tk = Tokenizer::builtin_gpt2();
        let cases = [
            (
                "{\"text\": \"a\"}\n\n{\"input\": \"b\"}\n",
                "line 3: expected a JSON object with a \"text\" field",
            ),
            (
                "{\"text\": \"a\"}\n[1, 2]\n",
                "line 2: expected a JSON object with a \"text\" field",
            ),
            (
                "{\"text\": \"a\"}\n{\"text\": 5}\n",
                "line 2: the \"text\" field must be a string",
            ),
            (
                "{\"text\": \"a\"}\n{\"text\": \"unterminated}\n",
                "line 2: invalid JSON",
            ),
            ("\n  \n", "no prompts"),
        ];
        for (content, want) in cases {
            let f = write_jsonl(content);
            let err = format!("{}", from_jsonl(f.path(), &tk).unwrap_err());
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"{\"text\": \"ok\"}\n{\"text\": \"\xff\"}\n")
            .unwrap();
        let err = format!("{}", from_jsonl(f.path(), &tk).unwrap_err());
        assert!(err.contains("line 2: not valid UTF-8"), "{err}");
        let err = format!(
            "{:#}",
            from_jsonl(Path::new("/nonexistent/p.jsonl"), &tk).unwrap_err()
        );
        assert!(err.contains("/nonexistent/p.jsonl"), "{err}");
    }
}
