//! Scored workloads: a dataset with known answers (MMLU, GSM8K, HellaSwag rows, from JSONL,
//! Parquet, Arrow files or a Hugging Face cache) sent as a run's prompts, each response graded
//! against its row's answer. The questions are read and checked when the plan is resolved, so a
//! row without an answer is refused (exit 2, its file and line named) before anything connects.
//!
//! What each part answers: [`locate`] which files a `--accuracy-dataset` names; [`rows`] and
//! [`columnar`] what a row holds; [`prompt`] the text a question is sent as (few-shot examples,
//! chat or completions); [`grade`] whether an answer is right; [`key`] the run's answer key,
//! which grades each response and fingerprints its text for the determinism check.

pub mod columnar;
pub mod grade;
pub mod key;
pub mod locate;
pub mod prompt;
pub mod rows;

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

pub use grade::Grader;
pub use key::AnswerKey;

/// The benchmarks whose rows are read (their Hugging Face field names; their own declared once).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
    clap::ValueEnum,
)]
#[strum(serialize_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Benchmark {
    /// `question`, `choices` (list), `answer` (index, or letter), `subject`.
    #[value(help = "MMLU: `question`, `choices`, `answer` (index), `subject`; graded by letter")]
    Mmlu,
    /// `question`, `answer` (a worked solution ending in `#### <number>`).
    #[value(
        help = "GSM8K: `question`, `answer` (solution ending in `#### N`); graded by the final number"
    )]
    Gsm8k,
    /// `ctx` (or `ctx_a` + `ctx_b`), `endings` (list), `label` (index), `activity_label`.
    #[value(help = "HellaSwag: `ctx`, `endings`, `label`; graded by exact match of the letter")]
    Hellaswag,
}

crate::names::serde_by_name!(Benchmark);

impl Benchmark {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The Hugging Face dataset looked for in the local caches when no dataset is given.
    pub fn hub_repo(self) -> &'static str {
        match self {
            Benchmark::Mmlu => "cais/mmlu",
            Benchmark::Gsm8k => "openai/gsm8k",
            Benchmark::Hellaswag => "Rowan/hellaswag",
        }
    }

    /// The dataset configuration (subset) used from a cache when none is given.
    pub fn default_config(self) -> Option<&'static str> {
        match self {
            Benchmark::Mmlu => Some("all"),
            Benchmark::Gsm8k => Some("main"),
            Benchmark::Hellaswag => None,
        }
    }

    /// The split graded by default (HellaSwag's test split has no labels).
    pub fn graded_split(self) -> &'static str {
        match self {
            Benchmark::Mmlu | Benchmark::Gsm8k => "test",
            Benchmark::Hellaswag => "validation",
        }
    }

    /// The split few-shot examples come from when a cache has it.
    pub fn shots_split(self) -> &'static str {
        match self {
            Benchmark::Mmlu => "dev",
            Benchmark::Gsm8k | Benchmark::Hellaswag => "train",
        }
    }

    /// The grader used unless `--accuracy-grader` names another (AIPerf's choices: HellaSwag
    /// answers are compared exactly, as its letter).
    pub fn default_grader(self) -> Grader {
        match self {
            Benchmark::Mmlu => Grader::MultipleChoice,
            Benchmark::Gsm8k => Grader::Numeric,
            Benchmark::Hellaswag => Grader::ExactMatch,
        }
    }

    /// Output tokens asked for unless `--output-tokens-mean` says: room for a letter and a
    /// few words, or for a worked solution.
    pub fn default_max_tokens(self) -> u32 {
        match self {
            Benchmark::Mmlu | Benchmark::Hellaswag => 8,
            Benchmark::Gsm8k => 256,
        }
    }
}

/// A row's known answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// Option `index` (0-based) of `of` lettered options.
    Choice {
        /// The right option.
        index: u8,
        /// How many options there were.
        of: u8,
    },
    /// A number, as the dataset writes it (`1,234`).
    Number(String),
    /// A text.
    Text(String),
}

impl Expected {
    /// The answer as text: a choice's letter, the number or the text.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Expected::Choice { index, .. } => grade::letter(*index).to_string().into(),
            Expected::Number(n) | Expected::Text(n) => n.as_str().into(),
        }
    }

    /// The chance of guessing it: one over the options, for a choice.
    pub fn chance(&self) -> Option<f64> {
        match self {
            Expected::Choice { of, .. } if *of > 0 => Some(1.0 / f64::from(*of)),
            _ => None,
        }
    }
}

/// One question of a benchmark, ready to be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The subject or category (MMLU's `subject`, HellaSwag's `activity_label`), when the row
    /// has one.
    pub subject: Option<String>,
    /// The question as a prompt ends with it: the text, the lettered options and the answer
    /// cue (`Answer:`).
    pub block: String,
    /// What follows the block in a worked example (` B`, or GSM8K's solution).
    pub solution: String,
    /// The answer.
    pub expected: Expected,
    /// Where the row is (`file:line`, or `file row N` in a columnar file).
    pub at: String,
}

/// A benchmark's questions and the examples its few-shot prompts show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoredSet {
    /// The graded questions, in file order.
    pub items: Vec<Item>,
    /// The pool few-shot examples are taken from.
    pub shots: Vec<Item>,
}

/// A scored workload as resolved from the flags, its questions read and checked.
#[derive(Debug, Clone, Serialize)]
pub struct ScoredSource {
    /// `--accuracy-benchmark`.
    pub benchmark: Benchmark,
    /// The files the questions were read from.
    pub files: Vec<PathBuf>,
    /// The files the few-shot examples were read from (empty: the first rows of `files`).
    pub shot_files: Vec<PathBuf>,
    /// How responses are graded (`--accuracy-grader`, or the benchmark's).
    pub grader: Grader,
    /// Worked examples before each question (`--accuracy-n-shots`).
    pub n_shots: u32,
    /// Subjects kept (`--accuracy-tasks`; empty: all).
    pub tasks: Vec<String>,
    /// `--accuracy-system-prompt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The confidence of the accuracy intervals and of the correctness verdict.
    pub confidence: f64,
    /// Questions graded.
    pub items: usize,
    /// The questions and the examples.
    #[serde(skip)]
    pub set: Arc<ScoredSet>,
}

impl PartialEq for ScoredSource {
    fn eq(&self, o: &ScoredSource) -> bool {
        (
            self.benchmark,
            &self.files,
            self.grader,
            self.n_shots,
            &self.tasks,
        ) == (o.benchmark, &o.files, o.grader, o.n_shots, &o.tasks)
            && self.system_prompt == o.system_prompt
            && self.items == o.items
    }
}

/// A scored dataset that cannot be used, naming the file and row or the value at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScoredError(pub String);

impl From<ScoredError> for crate::error::UsageError {
    fn from(e: ScoredError) -> Self {
        crate::error::UsageError(e.0)
    }
}

/// Which questions of the files a run grades.
#[derive(Debug, Clone, Copy)]
pub struct Selection<'a> {
    /// The benchmark whose fields the rows have.
    pub benchmark: Benchmark,
    /// Worked examples per prompt.
    pub n_shots: usize,
    /// Subjects kept (empty: all).
    pub tasks: &'a [String],
    /// Questions graded at most (`--num-prompts`).
    pub limit: Option<usize>,
}

/// The questions and few-shot examples of the files found: every row is checked (the first
/// that cannot be graded is refused, named); without files of a few-shot split the examples
/// are the first rows, which are then not graded.
pub fn read_set(s: &Selection, found: &locate::Found) -> Result<ScoredSet, ScoredError> {
    let mut items = read_items(s.benchmark, &found.graded)?;
    let shots = if found.shots.is_empty() {
        let k = s.n_shots.min(items.len().saturating_sub(1));
        items.drain(..k).collect()
    } else if s.n_shots > 0 {
        read_items(s.benchmark, &found.shots)?
    } else {
        Vec::new()
    };
    if !s.tasks.is_empty() {
        let known: std::collections::BTreeSet<&str> =
            items.iter().filter_map(|i| i.subject.as_deref()).collect();
        let unknown: Vec<&String> = s
            .tasks
            .iter()
            .filter(|t| !known.contains(t.as_str()))
            .collect();
        if !unknown.is_empty() {
            let quoted: Vec<String> = unknown.iter().map(|t| format!("'{t}'")).collect();
            let some: Vec<&str> = known.iter().take(12).copied().collect();
            let some = match some.is_empty() {
                true => "(none: its rows have no subject)".to_string(),
                false => some.join(", "),
            };
            return Err(ScoredError(format!(
                "--accuracy-tasks: no question of subject {} in {}; its subjects include: {some}",
                quoted.join(", "),
                files_text(&found.graded),
            )));
        }
        items.retain(|i| i.subject.as_ref().is_some_and(|s2| s.tasks.contains(s2)));
    }
    if let Some(n) = s.limit {
        items.truncate(n);
    }
    if items.is_empty() {
        return Err(ScoredError(format!(
            "{}: no question left to grade (after {} few-shot examples); give a file with more rows, or a smaller --accuracy-n-shots",
            files_text(&found.graded),
            shots.len()
        )));
    }
    Ok(ScoredSet { items, shots })
}

fn files_text(files: &[PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    names.join(", ")
}

/// Every row of `files` as an item of `b`, in order.
fn read_items(b: Benchmark, files: &[PathBuf]) -> Result<Vec<Item>, ScoredError> {
    let mut items = Vec::new();
    for f in files {
        let rows = match f.extension().and_then(|e| e.to_str()) {
            Some("parquet") => columnar::read_parquet(f)?,
            Some("arrow") => columnar::read_arrow(f)?,
            _ => rows::read_jsonl(f)?,
        };
        for (row, at) in &rows {
            items.push(rows::item(b, row, at)?);
        }
    }
    Ok(items)
}
