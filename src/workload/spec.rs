//! What to send, as resolved from the flags: the prompt source, how many prompts, the output
//! length to ask for, the tokenizer, the seed, the prompt salt and extra request fields.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::conversation::SessionPlan;
use super::trace::Trace;

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
    /// A request trace in the Mooncake form (`--input-file` whose rows carry `input_length`):
    /// prompts synthesized from its lengths and hash ids.
    Trace(TraceSource),
    /// Reranker queries and passages (`--endpoint-type rankings --input-file`).
    Rankings(super::rankings::RankingsSource),
    /// A dataset with known answers (`--accuracy-benchmark`): its questions, each response
    /// graded.
    Scored(super::scored::ScoredSource),
}

/// A trace read and checked when the plan was resolved (so bad rows are refused before
/// anything connects), with the part of it the run uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceSource {
    /// The file.
    pub path: PathBuf,
    /// Tokens per hash id (`--block-size`).
    pub block_size: u32,
    /// `--fixed-schedule-start`: rows before this timestamp (ms) are left out, and the schedule
    /// counts from it; `None`: from the first row kept.
    pub start_ms: Option<u64>,
    /// `--fixed-schedule-end`: rows after this timestamp (ms) are left out.
    pub end_ms: Option<u64>,
    /// Rows used (after the window and `--num-prompts`).
    pub requests: usize,
    /// Ask for exactly each row's `output_length` (`--output-tokens-mean-deterministic`).
    pub exact_output: bool,
    /// The rows used, in file order.
    #[serde(skip)]
    pub trace: Arc<Trace>,
}

/// `--num-prefix-prompts K --prefix-prompt-length L`: K system prompts of exactly L tokens, one
/// of which (round robin) starts every synthetic prompt. As in GenAI-Perf the prefix is
/// prepended: a prompt's input length is L plus its sampled synthetic length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PrefixPool {
    /// Distinct prefixes.
    pub count: u32,
    /// Tokens in each.
    pub length: u32,
}

/// `--prompt-salt`: what makes this run's prompt text its own, so that a server's prefix cache
/// cannot serve it from an earlier run. The salt is mixed into the seed of every text stream
/// (synthetic words, prefix prompts, trace blocks), never into lengths: input lengths, block
/// structure and sharing within the run depend on `--random-seed` alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptSalt {
    /// A fresh salt for every run (random; the same on every shard of one run started with
    /// `--start-at`).
    Auto,
    /// No salt: the same seed sends byte-identical prompts run after run.
    None,
    /// A fixed salt: runs given the same text send the same prompts (and may share a cache on
    /// purpose).
    Text(String),
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
    /// Output length; `None` leaves it to the server (Triton TensorRT-LLM gets 256), or to each
    /// trace row's `output_length`.
    pub output: Option<OutputLength>,
    /// Shared system prompts in front of synthetic prompts.
    pub prefix_prompts: Option<PrefixPool>,
    /// How prompt text is salted per run.
    pub prompt_salt: PromptSalt,
    /// `--tokenizer` as given (a `tokenizer.json`, a directory holding one, or a Hugging Face
    /// model name found in the local cache); `None` = built-in GPT-2.
    pub tokenizer: Option<String>,
    /// Seed for prompts and lengths.
    pub seed: u64,
    /// Extra request fields.
    pub extra_inputs: Vec<(String, serde_json::Value)>,
    /// Multi-turn sessions (`--num-sessions`, `--session-turns-*`, a conversation file);
    /// `None`: every request stands alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionPlan>,
    /// Texts per embeddings request, passages per rankings request (`--batch-size-text`).
    pub batch_size_text: u32,
    /// Images sent with every chat-like prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<super::images::ImagePlan>,
    /// Tool definitions sent with every chat-like request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<super::tools::ToolsPlan>,
}

impl WorkloadPlan {
    /// Whether requests ask for exactly their output length (min_tokens / ignore_eos).
    pub fn exact_output(&self) -> bool {
        match &self.prompts {
            PromptSource::Trace(t) => t.exact_output,
            _ => self.output.is_some_and(|o| o.deterministic),
        }
    }
}

impl Default for WorkloadPlan {
    /// GenAI-Perf's defaults: 100 synthetic prompts of 550 tokens, output length left to the
    /// server, seed 0; and a fresh prompt salt per run.
    fn default() -> WorkloadPlan {
        WorkloadPlan {
            prompts: PromptSource::Synthetic {
                mean: 550,
                stddev: 0,
            },
            num_prompts: 100,
            output: None,
            prefix_prompts: None,
            prompt_salt: PromptSalt::Auto,
            tokenizer: None,
            seed: 0,
            extra_inputs: Vec::new(),
            sessions: None,
            batch_size_text: 1,
            images: None,
            tools: None,
        }
    }
}
