//! What to send, as resolved from the flags: the prompt source, how many prompts, the output
//! length to ask for, the tokenizer, the seed and extra request fields.

use std::path::PathBuf;

use serde::Serialize;

/// Where prompts come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptSource {
    /// Synthetic prompts with exactly sampled token counts.
    Synthetic {
        /// Mean input tokens.
        mean: u32,
        /// Standard deviation.
        stddev: u32,
    },
    /// JSONL file of `{"text": ...}` rows.
    File(PathBuf),
}

/// Output length to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OutputLength {
    /// Mean output tokens.
    pub mean: u32,
    /// Standard deviation.
    pub stddev: u32,
    /// Ask for exactly this many (min_tokens / ignore_eos).
    pub deterministic: bool,
}

/// What to send.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadPlan {
    /// Prompt source.
    pub prompts: PromptSource,
    /// Unique dataset entries (synthetic prompts generated; file rows used up to this many).
    pub num_prompts: u32,
    /// Output length; `None` leaves it to the server (Triton TensorRT-LLM gets 256).
    pub output: Option<OutputLength>,
    /// `--tokenizer` as given (a `tokenizer.json`, a directory holding one, or a Hugging Face
    /// model name found in the local cache); `None` = built-in GPT-2.
    pub tokenizer: Option<String>,
    /// Seed for prompts and lengths.
    pub seed: u64,
    /// Extra request fields.
    pub extra_inputs: Vec<(String, serde_json::Value)>,
}

impl Default for WorkloadPlan {
    /// GenAI-Perf's defaults: 100 synthetic prompts of 550 tokens, output length left to the
    /// server, seed 0.
    fn default() -> WorkloadPlan {
        WorkloadPlan {
            prompts: PromptSource::Synthetic {
                mean: 550,
                stddev: 0,
            },
            num_prompts: 100,
            output: None,
            tokenizer: None,
            seed: 0,
            extra_inputs: Vec::new(),
        }
    }
}
