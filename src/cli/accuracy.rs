//! The flags of a scored workload (`--accuracy-*`, AIPerf's names): a dataset with known
//! answers as the workload of any level, ladder or search, each response graded.

use clap::Args;

use crate::plan::scored::AccuracySpec;
use crate::workload::scored::{Benchmark, Grader};

/// A dataset with known answers as the workload.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Accuracy")]
pub struct AccuracyArgs {
    /// Send a benchmark's questions as the workload and grade every answer; each level reports
    /// its accuracy, and temperature-0 answers are compared across levels. Levels send every
    /// question once unless --request-count or a time says otherwise.
    #[arg(long, value_enum, value_name = "BENCHMARK")]
    pub accuracy_benchmark: Option<Benchmark>,

    /// Where the questions are: a .jsonl, .parquet or .arrow file, a directory of them (a
    /// Hugging Face snapshot, the `datasets` Arrow cache), or a dataset name found in this
    /// machine's Hugging Face caches (default: cais/mmlu, openai/gsm8k, Rowan/hellaswag).
    #[arg(long, value_name = "FILE|DIR|NAME")]
    pub accuracy_dataset: Option<String>,

    /// The dataset's configuration (subset) directory (default: all for MMLU, main for GSM8K).
    #[arg(long, value_name = "NAME")]
    pub accuracy_config: Option<String>,

    /// The split graded (default: test; validation for HellaSwag, whose test split is unlabelled).
    #[arg(long, value_name = "NAME")]
    pub accuracy_split: Option<String>,

    /// Worked examples before each question (0 to 32, default 0): from the few-shot split
    /// (MMLU's dev, GSM8K's and HellaSwag's train) when the dataset has it, else its first rows,
    /// which are then not graded.
    #[arg(long, value_name = "K")]
    pub accuracy_n_shots: Option<u32>,

    /// Subjects graded (MMLU's `subject`, HellaSwag's `activity_label`), comma-separated or
    /// repeated (default: all).
    #[arg(long, value_delimiter = ',', value_name = "SUBJECTS")]
    pub accuracy_tasks: Vec<String>,

    /// How answers are graded (default: multiple_choice for MMLU, numeric for GSM8K,
    /// exact_match for HellaSwag).
    #[arg(long, value_enum, value_name = "GRADER")]
    pub accuracy_grader: Option<Grader>,

    /// A system prompt sent before every question.
    #[arg(long, value_name = "TEXT")]
    pub accuracy_system_prompt: Option<String>,
}

impl AccuracyArgs {
    /// The flags as the plan reads them; `confidence`: `--confidence` (0..1).
    pub fn spec(&self, confidence: f64) -> AccuracySpec {
        AccuracySpec {
            benchmark: self.accuracy_benchmark,
            dataset: self.accuracy_dataset.clone(),
            config: self.accuracy_config.clone(),
            split: self.accuracy_split.clone(),
            n_shots: self.accuracy_n_shots,
            tasks: self.accuracy_tasks.clone(),
            grader: self.accuracy_grader,
            system_prompt: self.accuracy_system_prompt.clone(),
            confidence,
        }
    }
}

/// `serve`'s answers to a scored workload (see `sim::answers`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Scored answers")]
pub struct AnswerArgs {
    /// Answer the questions of this dataset (a file, directory or cached dataset name, as
    /// `profile --accuracy-dataset` takes it) on the OpenAI routes: a prompt ending in one of
    /// its questions gets ` {answer}` and a line break first.
    #[arg(long, value_name = "FILE|DIR|NAME", requires = "answer_key_benchmark")]
    pub answer_key: Option<String>,

    /// Whose fields the --answer-key rows have.
    #[arg(long, value_enum, value_name = "BENCHMARK", requires = "answer_key")]
    pub answer_key_benchmark: Option<Benchmark>,

    /// The split of a directory or cached dataset to read (default: the benchmark's graded split).
    #[arg(long, value_name = "NAME", requires = "answer_key")]
    pub answer_key_split: Option<String>,

    /// Probability of a right answer at light load.
    #[arg(long, default_value_t = 1.0, value_name = "P")]
    pub answer_accuracy: f64,

    /// How much that probability falls per scored request in flight beyond
    /// --accuracy-drop-above (e.g. 0.05: 40 points lower at 8 more requests).
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub accuracy_drop_per_batch: f64,

    /// Scored requests in flight (this one included) up to which accuracy holds.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub accuracy_drop_above: u32,

    /// Share of temperature-0 prompts whose output changes (a word after the answer) when more
    /// than --nondeterministic-above scored requests are in flight; 0: deterministic.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub nondeterministic_share: f64,

    /// Scored requests in flight up to which temperature-0 outputs stay the same.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub nondeterministic_above: u32,
}

impl AnswerArgs {
    /// The simulator's answers (`None` without --answer-key), the dataset read and checked.
    pub fn config(&self) -> Result<Option<crate::sim::AnswerConfig>, crate::error::UsageError> {
        let (Some(spec), Some(benchmark)) = (&self.answer_key, self.answer_key_benchmark) else {
            return Ok(None);
        };
        let caches = crate::workload::scored::locate::DatasetCaches::from_process();
        let want = crate::workload::scored::locate::Want {
            spec,
            config: benchmark.default_config(),
            split: self
                .answer_key_split
                .as_deref()
                .unwrap_or(benchmark.graded_split()),
            shots_split: benchmark.shots_split(),
        };
        let found = crate::workload::scored::locate::locate(&want, &caches)
            .map_err(|e| crate::error::UsageError(format!("--answer-key: {e}")))?;
        let set = crate::workload::scored::read_set(
            &crate::workload::scored::Selection {
                benchmark,
                n_shots: 0,
                tasks: &[],
                limit: None,
            },
            &found,
        )
        .map_err(|e| crate::error::UsageError(format!("--answer-key: {e}")))?;
        Ok(Some(crate::sim::AnswerConfig {
            set: std::sync::Arc::new(set),
            accuracy: self.answer_accuracy,
            drop_per_batch: self.accuracy_drop_per_batch,
            drop_above: self.accuracy_drop_above,
            vary_share: self.nondeterministic_share,
            vary_above: self.nondeterministic_above,
        }))
    }
}
