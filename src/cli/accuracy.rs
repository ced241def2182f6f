//! The flags of a scored workload (`--accuracy-*`, AIPerf's names): a dataset with known
//! answers as the workload of any level, ladder or search, each response graded.

use clap::{Args, ValueEnum};

use crate::plan::scored::AccuracySpec;
use crate::workload::scored::{Benchmark, Grader};

/// `--accuracy-benchmark`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchmarkArg {
    /// MMLU: `question`, `choices`, `answer` (index), `subject`; graded by letter.
    Mmlu,
    /// GSM8K: `question`, `answer` (solution ending in `#### N`); graded by the final number.
    Gsm8k,
    /// HellaSwag: `ctx`, `endings`, `label`; graded by exact match of the letter.
    Hellaswag,
}

/// `--accuracy-grader`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraderArg {
    /// The letter of the chosen option (`answer is (B)`, `B.`, a lone `B`).
    #[value(name = "multiple_choice")]
    MultipleChoice,
    /// The answer's first line equals the expected text.
    #[value(name = "exact_match")]
    ExactMatch,
    /// The answer's final number equals the expected number.
    Numeric,
}

/// A dataset with known answers as the workload.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Accuracy")]
pub struct AccuracyArgs {
    /// Send a benchmark's questions as the workload and grade every answer; each level reports
    /// its accuracy, and temperature-0 answers are compared across levels. Levels send every
    /// question once unless --request-count or a time says otherwise.
    #[arg(long = "accuracy-benchmark", value_enum, value_name = "BENCHMARK")]
    pub benchmark: Option<BenchmarkArg>,

    /// Where the questions are: a .jsonl, .parquet or .arrow file, a directory of them (a
    /// Hugging Face snapshot, the `datasets` Arrow cache), or a dataset name found in this
    /// machine's Hugging Face caches (default: cais/mmlu, openai/gsm8k, Rowan/hellaswag).
    #[arg(long = "accuracy-dataset", value_name = "FILE|DIR|NAME")]
    pub dataset: Option<String>,

    /// The dataset's configuration (subset) directory (default: all for MMLU, main for GSM8K).
    #[arg(long = "accuracy-config", value_name = "NAME")]
    pub config: Option<String>,

    /// The split graded (default: test; validation for HellaSwag, whose test split is unlabelled).
    #[arg(long = "accuracy-split", value_name = "NAME")]
    pub split: Option<String>,

    /// Worked examples before each question (0 to 32, default 0): from the few-shot split
    /// (MMLU's dev, GSM8K's and HellaSwag's train) when the dataset has it, else its first rows,
    /// which are then not graded.
    #[arg(long = "accuracy-n-shots", value_name = "K")]
    pub n_shots: Option<u32>,

    /// Subjects graded (MMLU's `subject`, HellaSwag's `activity_label`), comma-separated or
    /// repeated (default: all).
    #[arg(
        long = "accuracy-tasks",
        value_delimiter = ',',
        value_name = "SUBJECTS"
    )]
    pub tasks: Vec<String>,

    /// How answers are graded (default: multiple_choice for MMLU, numeric for GSM8K,
    /// exact_match for HellaSwag).
    #[arg(long = "accuracy-grader", value_enum, value_name = "GRADER")]
    pub grader: Option<GraderArg>,

    /// A system prompt sent before every question.
    #[arg(long = "accuracy-system-prompt", value_name = "TEXT")]
    pub system_prompt: Option<String>,
}

impl AccuracyArgs {
    /// The flags as the plan reads them; `confidence`: `--confidence` (0..1).
    pub fn spec(&self, confidence: f64) -> AccuracySpec {
        AccuracySpec {
            benchmark: self.benchmark.map(|b| match b {
                BenchmarkArg::Mmlu => Benchmark::Mmlu,
                BenchmarkArg::Gsm8k => Benchmark::Gsm8k,
                BenchmarkArg::Hellaswag => Benchmark::Hellaswag,
            }),
            dataset: self.dataset.clone(),
            config: self.config.clone(),
            split: self.split.clone(),
            n_shots: self.n_shots,
            tasks: self.tasks.clone(),
            grader: self.grader.map(|g| match g {
                GraderArg::MultipleChoice => Grader::MultipleChoice,
                GraderArg::ExactMatch => Grader::ExactMatch,
                GraderArg::Numeric => Grader::Numeric,
            }),
            system_prompt: self.system_prompt.clone(),
            confidence,
        }
    }
}
