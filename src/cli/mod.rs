//! Command-line syntax. These types only describe flags; `plan` turns them into a validated
//! [`crate::plan::RunPlan`] once, and nothing downstream looks at strings again.

pub mod accuracy;
pub mod config;
pub mod help;
pub mod perf;
pub mod profile;
pub mod search;
pub mod tips;

pub use tips::parse;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::metrics::PercentileMethod;
use crate::perf::plan::parse_range_u32;
use crate::plan::outputs::{StdoutFormat, UiMode};
use crate::plan::values;
use crate::server_metrics::ServerKind;
use crate::target::{Api, Backend, Encoding, RankingsLayout, ServiceKind};
use crate::workload::conversation::Replies;

// `--help` groups flags under these headings, in this order of purpose.
/// Which server and model, and how to talk to it.
const TARGET: &str = "Target";
/// How much load: concurrency or request rate.
const LOAD: &str = "Load";
/// What is sent: prompts, tensors, lengths.
const WORKLOAD: &str = "Workload";
/// When and how a level is measured.
const MEASUREMENT: &str = "Measurement";
/// Files and console output.
const OUTPUT: &str = "Output";
/// What passes and what fails the run.
const DECISIONS: &str = "Decisions";
/// Help heading of the search's own flags.
const SEARCH: &str = "Search";

/// Load generator for LLM and tensor inference servers: TTFT, inter-token latency, throughput,
/// knees and regressions.
#[derive(Debug, Parser)]
#[command(name = "ttftbench", version = crate::VERSION_LINE, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// GenAI-Perf-style LLM profiling: streaming TTFT / ITL / throughput over a load sweep.
    #[command(
        after_help = PROFILE_SHORT_EXAMPLES,
        after_long_help = PROFILE_EXAMPLES,
        mut_args(tips::negative_numbers_reach_the_flag),
        mut_args(help::profile)
    )]
    Profile(Box<ProfileArgs>),
    /// The highest concurrency or request rate that meets the SLOs, found with few requests and
    /// a stated confidence: each probe measured only until its decision is settled.
    #[command(
        after_help = SEARCH_SHORT_EXAMPLES,
        after_long_help = SEARCH_EXAMPLES,
        mut_args(tips::negative_numbers_reach_the_flag),
        mut_args(help::search),
    )]
    Search(Box<SearchArgs>),
    /// perf_analyzer-style profiling of any KServe v2 model: tensors, batch sizes, stability
    /// windows, perf_analyzer's console report and `-f` CSV.
    #[command(
        after_help = PERF_SHORT_EXAMPLES,
        after_long_help = PERF_EXAMPLES,
        mut_args(tips::negative_numbers_reach_the_flag),
        mut_args(help::perf)
    )]
    Perf(Box<PerfArgs>),
    /// Built-in simulated inference server (Triton KServe v2 HTTP + gRPC, OpenAI, /metrics).
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(Box<ServeArgs>),
    /// A concurrency sweep against an in-process simulated server: the zero-setup tour.
    #[command(after_help = DEMO_EXAMPLES, mut_args(tips::negative_numbers_reach_the_flag))]
    Demo(DemoArgs),
    /// Render report.html (charts, knee, trend across runs) for existing artifact directories.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Compare a run with a baseline, level by level; exit code 1 on regression.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Step-by-step connectivity check: TCP, health, metadata, model, metrics, one streamed request.
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor(Box<DoctorArgs>),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) to stdout.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout.
    #[command(after_help = MAN_EXAMPLES)]
    Man,
    /// Add up the artifact directories of the shards of one run (`--shard I/N`) into the files
    /// one process would have written: exact percentiles, throughput over the union.
    #[command(after_help = MERGE_EXAMPLES)]
    Merge(MergeArgs),
}

/// Flags of `ttftbench completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

// Each subcommand's help ends with a few commands that run as written (against `ttftbench
// serve`, which listens on Triton's ports 8000/8001/8002, or a real Triton). `-h` shows the
// first two of the long subcommands' examples and where the rest are.
const PROFILE_SHORT_EXAMPLES: &str = "\
Examples:
  ttftbench profile -m gpt2 -u localhost:8001 --streaming --concurrency 1,2,4,8,16,32 \\
      --artifact-dir './bench/{timestamp}/c{concurrency}'
  ttftbench profile -m gpt2 --endpoint-type chat -u localhost:8000 --streaming \\
      --request-rate 5,10,20 --duration 10s";

const SEARCH_SHORT_EXAMPLES: &str = "\
Examples:
  ttftbench search -m gpt2 -u localhost:8001 --streaming \\
      --slo 'time_to_first_token.p99<=500ms' --slo 'inter_token_latency.p99<=50ms'";

const PERF_SHORT_EXAMPLES: &str = "\
Examples:
  ttftbench perf -m yolov8s -u localhost:8001 --concurrency-range 1:8:2 \\
      --shape images:3,640,640 --input-data random
  ttftbench perf -m bert_classifier -u localhost:8000 -i http -b 4 --concurrency-range 4 \\
      -f result.csv";

const PROFILE_EXAMPLES: &str = "\
Examples:
  ttftbench profile -m gpt2 -u localhost:8001 --streaming --concurrency 1
  ttftbench profile -m gpt2 -u localhost:8001 --streaming --concurrency 1,2,4,8,16,32 \\
      --artifact-dir './bench/{timestamp}/c{concurrency}'
  ttftbench profile -m gpt2 --endpoint-type chat -u localhost:8000 --streaming \\
      --request-rate 5,10,20 --duration 10s
  ttftbench profile -m gpt2 -u localhost:8001 --streaming --concurrency 8 \\
      --slo 'time_to_first_token.p99<=500ms' --slo 'queue_share<=50%'
  ttftbench profile -m gpt2 -u localhost:8001 --streaming --concurrency 1,8,32 --repeat 3 \\
      --artifact-dir './bench/{timestamp}'    (then: ttftbench compare bench/)";

const SEARCH_EXAMPLES: &str = "\
Examples:
  ttftbench search -m gpt2 -u localhost:8001 --streaming --max 64 --max-time 10m \\
      --slo 'time_to_first_token.p99<=500ms' --slo 'inter_token_latency.p99<=50ms'
  ttftbench search -m gpt2 --endpoint-type chat -u localhost:8000 --streaming \\
      --over request-rate --min 1 --max 64 --slo 'time_to_first_token.p90<=300ms' --confidence 90%
  ttftbench search -m gpt2 -u localhost:8001 --streaming --slo 'ttft.p95<=200ms' \\
      --slo 'error_rate<1%' --max-probe-requests 2000 --max-probe-time 2m";

const PERF_EXAMPLES: &str = "\
Examples:
  ttftbench perf -m yolov8s -u localhost:8001 --concurrency-range 1:8:2 \\
      --shape images:3,640,640 --input-data random
  ttftbench perf -m bert_classifier -u localhost:8000 -i http -b 4 --concurrency-range 4 -f result.csv
  ttftbench perf -m bert_classifier -u localhost:8001 --request-rate-range 100:400:100 -p 2000
  ttftbench perf -m gpt2 -u localhost:8001 --streaming --concurrency-range 1:4 \\
      --request-parameter max_tokens:64:int";

const SERVE_EXAMPLES: &str = "\
Examples:
  ttftbench serve
  ttftbench serve --http-port 0 --grpc-port 0 --metrics-port 0
  ttftbench serve --max-batch 4 --fault-error-rate 0.02
  ttftbench serve --instant --address 0.0.0.0";

const DEMO_EXAMPLES: &str = "\
Examples:
  ttftbench demo
  ttftbench demo --concurrency 1,4,16 --artifact-dir /tmp/demo
  ttftbench demo --quiet";

const REPORT_EXAMPLES: &str = "\
Examples:
  ttftbench report bench/
  ttftbench report artifacts/demo -o demo_report.html
  ttftbench report latency_vs_concurrency.csv -o pa_report.html";

const COMPARE_EXAMPLES: &str = "\
Examples:
  ttftbench compare bench/
  ttftbench compare baseline/ current/ --max-throughput-drop 5% --max-p99-increase 10%
  ttftbench compare last.csv ci_result.csv \\
      --threshold request_throughput:-5% --threshold request_latency.p99:+10%";

const DOCTOR_EXAMPLES: &str = "\
Examples:
  ttftbench doctor -u localhost:8001 -m gpt2
  ttftbench doctor -u localhost:8000 -m gpt2 --endpoint-type generate
  ttftbench doctor -u localhost:8000 -m gpt2 --endpoint-type chat";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  source <(ttftbench completions bash)
  ttftbench completions zsh > ~/.zfunc/_ttftbench
  ttftbench completions fish > ~/.config/fish/completions/ttftbench.fish
  ttftbench completions powershell >> $PROFILE";

const MERGE_EXAMPLES: &str = "\
Examples:
  ttftbench merge results/shard0 results/shard1 results/shard2 results/shard3 -o results/merged
  ttftbench merge results/shard0 results/shard1 results/shard2 -o results/merged --quiet";

const MAN_EXAMPLES: &str = "\
Examples:
  ttftbench man | man -l -
  ttftbench man > ~/.local/share/man/man1/ttftbench.1";

/// What the newer APIs add to a request: batches of texts, images, tool definitions.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = WORKLOAD)]
pub struct ApiInputArgs {
    /// Texts per embeddings request, or passages per rankings request (GenAI-Perf's name;
    /// default 1). Other endpoint types send one prompt per request.
    #[arg(long, visible_alias = "batch-size", short = 'b')]
    pub batch_size_text: Option<u32>,

    /// Images per request when images are sent (--image-width-mean or --image-dir; default 1).
    #[arg(long)]
    pub batch_size_image: Option<u32>,

    /// Mean width in pixels of synthetic images sent with each chat, responses or messages
    /// prompt (0 or absent: no synthetic images).
    #[arg(long, value_name = "PX")]
    pub image_width_mean: Option<u32>,

    /// Standard deviation of the synthetic images' width (pixels).
    #[arg(long, value_name = "PX")]
    pub image_width_stddev: Option<u32>,

    /// Mean height in pixels of synthetic images (default: the width's mean).
    #[arg(long, value_name = "PX")]
    pub image_height_mean: Option<u32>,

    /// Standard deviation of the synthetic images' height (pixels).
    #[arg(long, value_name = "PX")]
    pub image_height_stddev: Option<u32>,

    /// Encoding of synthetic images (default: each image's drawn from the seed, as GenAI-Perf).
    #[arg(long, value_enum)]
    pub image_format: Option<crate::workload::images::ImageFormat>,

    /// Send images from this directory (its .png, .jpg and .jpeg files, in name order, round
    /// robin) instead of synthetic ones.
    #[arg(long, value_name = "DIR")]
    pub image_dir: Option<PathBuf>,

    /// OpenAI tool definitions sent with every chat, responses or messages request: a JSON file
    /// holding a list of `{"type": "function", "function": {"name", "description",
    /// "parameters"}}` (converted to each API's form).
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,

    /// Whether the model must call a tool: `auto` (it decides; the default), `none`, `required`
    /// (some tool), or the name of one tool in --tools.
    #[arg(long, value_name = "auto|none|required|NAME")]
    pub tool_choice: Option<String>,
}

/// `--raw-export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RawExportArg {
    /// No raw export (the default: the statistics files and requests.jsonl only).
    None,
    /// `profile_export.json` and `inputs.json` in every level directory, as GenAI-Perf writes them.
    Full,
}

/// `--request-distribution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DistributionArg {
    /// Evenly spaced sends.
    Constant,
    /// Exponential gaps (Poisson arrivals).
    Poisson,
    /// Gamma gaps with shape `--burstiness`.
    Gamma,
}

/// Flags of `ttftbench profile` (GenAI-Perf's names and aliases): the groups `search` takes too,
/// then those that fix the levels and their length, which the search chooses itself.
#[derive(Debug, Args, Clone)]
pub struct ProfileArgs {
    /// Target, workload, measurement, decisions, files: shared with `search`.
    #[command(flatten)]
    pub run: RunArgs,

    /// `--concurrency` / `--request-rate`.
    #[command(flatten)]
    pub levels: LevelArgs,

    /// A trace's own send times.
    #[command(flatten)]
    pub fixed_schedule: FixedScheduleArgs,

    /// How long each level lasts.
    #[command(flatten)]
    pub stop: StopArgs,

    /// Levels that stop at a margin of error.
    #[command(flatten)]
    pub moe: MoeArgs,

    /// Where this process takes part in a run of several.
    #[command(flatten)]
    pub shard: ShardArgs,

    /// Repetitions of the whole plan.
    #[command(flatten)]
    pub repeat: RepeatArgs,

    /// GenAI-Perf passes arguments after `--` to perf_analyzer: `--measurement-interval`/`-p`
    /// and `-v` are read, anything else is named in a note and ignored.
    #[arg(
        help_heading = None::<&str>,
        last = true,
        allow_hyphen_values = true,
        value_name = "PERF_ANALYZER_ARGS"
    )]
    pub perf_analyzer_args: Vec<String>,
}

/// The flags of a run that `profile` and `search` share: everything but the levels and their
/// length. In `--help` order of headings: target, workload, load, measurement, decisions, output.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Which server and model, and how to talk to it.
    #[command(flatten)]
    pub target: TargetArgs,

    /// What is sent.
    #[command(flatten)]
    pub workload: WorkloadArgs,

    /// How open-loop requests arrive.
    #[command(flatten)]
    pub arrival: ArrivalArgs,

    /// How a level is measured.
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// What passes and what fails.
    #[command(flatten)]
    pub decisions: DecisionArgs,

    /// Files and console output.
    #[command(flatten)]
    pub artifacts: ArtifactArgs,

    /// A dataset with known answers as the workload.
    #[command(flatten)]
    pub accuracy: accuracy::AccuracyArgs,
}

/// Which server and model, and how to talk to it (`profile`, `search`).
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// Model name as the server knows it.
    #[arg(help_heading = TARGET, short = 'm', long)]
    pub model: String,

    /// Legacy GenAI-Perf service kind; `openai` implies `--endpoint-type chat` unless one is given.
    #[arg(help_heading = TARGET, long, value_enum)]
    pub service_kind: Option<ServiceKind>,

    /// Which API to drive (default: kserve; chat with --service-kind openai).
    #[arg(help_heading = TARGET, long, value_enum, value_name = "TYPE")]
    pub endpoint_type: Option<Api>,

    /// Custom endpoint path (e.g. `v1/chat/completions`), overriding the endpoint type's default.
    #[arg(help_heading = TARGET, long)]
    pub endpoint: Option<String>,

    /// Input layout of a Triton LLM model (default: tensorrtllm).
    #[arg(help_heading = TARGET, long, value_enum)]
    pub backend: Option<Backend>,

    /// Server address (default localhost:8001 for kserve, localhost:8000 otherwise).
    ///
    /// With or without a scheme: `host:port`, `http://host:port`, `https://host` (TLS).
    #[arg(help_heading = TARGET, short = 'u', long)]
    pub url: Option<String>,

    /// Stream responses, for TTFT, TTST and ITL (default: where the target can).
    ///
    /// On by default where the target can stream: an OpenAI-style chat, completions, responses
    /// or messages endpoint, or a decoupled Triton model (read from its config); the run's first
    /// line says which and why.
    #[arg(help_heading = TARGET, long, conflicts_with = "no_streaming")]
    pub streaming: bool,

    /// Ask for whole responses (request latency only: no TTFT or ITL).
    #[arg(help_heading = TARGET, long)]
    pub no_streaming: bool,

    /// Extra HTTP header `Name: value` (repeatable).
    ///
    /// Sent to the inference server (discovery included); to metrics and statistics only when
    /// --metrics-header names it.
    #[arg(help_heading = TARGET, short = 'H', long)]
    pub header: Vec<String>,

    /// How reranker requests are laid out (--endpoint-type rankings): `rerank` (Cohere/Jina
    /// `/v1/rerank`, default), `tei` (`/rerank`), `nim` (`/v1/ranking`, GenAI-Perf's default).
    #[arg(help_heading = TARGET, long, value_enum)]
    pub rankings_api: Option<RankingsLayout>,

    /// API key of the target (default: OPENAI_API_KEY; ANTHROPIC_API_KEY for messages).
    ///
    /// Sent as `Authorization: Bearer` (`x-api-key` for messages) to the target's own address
    /// only (never to metrics, never written to artifacts or logs). When this is not given,
    /// OpenAI-style endpoint types read `OPENAI_API_KEY` and messages reads
    /// `ANTHROPIC_API_KEY`; Triton targets read neither.
    #[arg(help_heading = TARGET, long, value_name = "KEY")]
    pub api_key: Option<String>,

    /// TLS.
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// What is sent: prompts, their lengths, files, sessions (`profile`, `search`).
#[derive(Debug, Args, Clone)]
pub struct WorkloadArgs {
    /// Number of unique prompts in the dataset (reused round-robin; default 100). Alone, also the
    /// number of requests measured per level.
    #[arg(help_heading = WORKLOAD, long, alias = "num-dataset-entries")]
    pub num_prompts: Option<u32>,

    /// Mean input (prompt) length in tokens (default 550).
    #[arg(help_heading = WORKLOAD, long, alias = "isl", value_name = "TOKENS")]
    pub synthetic_input_tokens_mean: Option<u32>,

    /// Standard deviation of the input length in tokens.
    #[arg(help_heading = WORKLOAD, long, default_value_t = 0)]
    pub synthetic_input_tokens_stddev: u32,

    /// Mean output length in tokens (default: none asked for, the server decides).
    ///
    /// Sent as the API's max-tokens field.
    #[arg(help_heading = WORKLOAD, long, alias = "osl", value_name = "TOKENS")]
    pub output_tokens_mean: Option<u32>,

    /// Standard deviation of the output length in tokens.
    #[arg(help_heading = WORKLOAD, long, default_value_t = 0)]
    pub output_tokens_stddev: u32,

    /// Ask the server to produce exactly the sampled output length (min_tokens / ignore_eos).
    #[arg(help_heading = WORKLOAD, long)]
    pub output_tokens_mean_deterministic: bool,

    /// Tokenizer to count tokens with: a Hugging Face `tokenizer.json`, a directory holding one,
    /// or a model name (`meta-llama/Meta-Llama-3-8B-Instruct`) already in the local Hugging Face
    /// cache (HF_HOME / HF_HUB_CACHE; nothing is downloaded). Default: built-in GPT-2.
    #[arg(help_heading = WORKLOAD, long)]
    pub tokenizer: Option<String>,

    /// Seed for prompts and output lengths.
    #[arg(help_heading = WORKLOAD, long, default_value_t = 0)]
    pub random_seed: u64,

    /// Extra request field `name:value` (value parsed as JSON when it is JSON) or a JSON object.
    #[arg(help_heading = WORKLOAD, long)]
    pub extra_inputs: Vec<String>,

    /// Batches of texts, images and tools.
    #[command(flatten)]
    pub api_inputs: ApiInputArgs,

    /// JSONL prompts, a request trace or conversations, instead of synthetic prompts.
    ///
    /// One `{"text": ...}` prompt per line, a request trace in the Mooncake form (`{"timestamp": ms, "input_length": N,
    /// "output_length": M, "hash_ids": [..]}` per line; told apart by its `input_length` key),
    /// whose prompts are synthesized to its lengths and shared blocks, or conversations replayed
    /// as multi-turn sessions (ShareGPT `{"conversations": [{"from", "value"}, ..]}` or OpenAI
    /// `{"messages": [{"role", "content"}, ..]}` per line).
    #[arg(help_heading = WORKLOAD, long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,

    /// Tokens per hash id of a trace (default 512, Mooncake's).
    #[arg(help_heading = WORKLOAD, long)]
    pub block_size: Option<u32>,

    /// Shared system prompts: this many distinct prefixes, one (round robin) in front of every
    /// synthetic prompt, so a server's prefix cache can reuse them.
    #[arg(help_heading = WORKLOAD, long)]
    pub num_prefix_prompts: Option<u32>,

    /// Tokens in each prefix prompt (default 100); prepended, so a prompt's input length is this
    /// plus its synthetic length, as in GenAI-Perf.
    #[arg(help_heading = WORKLOAD, long)]
    pub prefix_prompt_length: Option<u32>,

    /// Salt of the prompt text, so a run never meets an earlier run's prefix cache: `auto` (a
    /// fresh salt per run), `none` (the same seed sends byte-identical prompts every run), or a
    /// text (runs with the same text send the same prompts, and may share a cache on purpose).
    /// Lengths and sharing within the run do not depend on it.
    #[arg(help_heading = WORKLOAD, long, value_name = "auto|none|TEXT", default_value = "auto")]
    pub prompt_salt: String,

    /// Multi-turn sessions: this many distinct sessions (default 100 when --session-turns-mean
    /// is given; with a conversation file, its first N). Turn N of a session sends the whole
    /// history (earlier user messages and the server's answers) plus a new user message; a
    /// session stays on one worker and connection, so --concurrency counts sessions in flight.
    #[arg(help_heading = WORKLOAD, long, alias = "conversation-num")]
    pub num_sessions: Option<u32>,

    /// Mean user turns per synthetic session (default 1; sampled from a normal, at least 1).
    #[arg(help_heading = WORKLOAD, long)]
    pub session_turns_mean: Option<u32>,

    /// Standard deviation of the user turns per synthetic session.
    #[arg(help_heading = WORKLOAD, long)]
    pub session_turns_stddev: Option<u32>,

    /// Mean think time between a turn's answer and the session's next turn (ms; default 0).
    #[arg(help_heading = WORKLOAD, long, value_name = "MS")]
    pub session_turn_delay_mean: Option<u64>,

    /// Standard deviation of the think time (ms); sampled delays are clamped at 0.
    #[arg(help_heading = WORKLOAD, long, value_name = "MS")]
    pub session_turn_delay_stddev: Option<u64>,

    /// The HTTP header every request of a multi-turn or agentic session carries its session's
    /// id in (`RUN-sN`; the same for every turn and sub-agent of one task, so a KV-aware router
    /// such as Dynamo's or llm-d's can keep the session on one replica); `none` sends none.
    #[arg(help_heading = WORKLOAD, long, value_name = "NAME|none", default_value = "X-Session-ID")]
    pub session_header: String,

    /// Which answer a session's next turn carries in its history: `live`, the server's own (as
    /// a chat client or an agent sends it), or `recorded`, the conversation file's assistant
    /// message (the same history on every run and every server; the server's answer is still
    /// measured).
    #[arg(help_heading = WORKLOAD, long, value_enum, default_value_t = Replies::Live)]
    pub session_replies: Replies,
}

/// The load levels of a sweep (`profile` only: a search chooses its loads).
#[derive(Debug, Args, Clone, Default)]
pub struct LevelArgs {
    /// Closed-loop concurrency levels: 8, 1:32 (doubling), 1:32:4 or 1,4,8 (default 1).
    ///
    /// `N`, `start:end[:step]` (inclusive; powers of two without a step) or a list
    /// `1,4,8,16,32`. Each value is one level of the sweep.
    #[arg(help_heading = LOAD, long, value_name = "LEVELS", value_parser = FlagValue(values::concurrency_flag))]
    pub concurrency: Option<values::Levels<u32>>,

    /// Open-loop request rates (requests/s): 5, 1:16 (doubling), 5:20:5 or 5,10,20.
    ///
    /// `R`, `start:end[:step]` (doubling without a step) or a list `5,10,20`. Each value is one
    /// level. Excludes --concurrency.
    #[arg(help_heading = LOAD, long, conflicts_with = "concurrency", value_name = "LEVELS", value_parser = FlagValue(values::rate_flag))]
    pub request_rate: Option<values::Levels<f64>>,
}

/// How open-loop requests arrive (`profile`, and `search --over request-rate`).
#[derive(Debug, Args, Clone)]
pub struct ArrivalArgs {
    /// Gaps between open-loop requests.
    #[arg(help_heading = LOAD, long, value_enum, default_value = "constant")]
    pub request_distribution: DistributionArg,

    /// Shape of gamma-distributed gaps (< 1 burstier than Poisson, > 1 more regular).
    #[arg(help_heading = LOAD, long, default_value_t = 1.0)]
    pub burstiness: f64,

    /// Cap on requests in flight under --request-rate; a send that finds the cap reached leaves
    /// late, and its lag is reported.
    #[arg(help_heading = LOAD, long, default_value_t = 1024)]
    pub max_inflight: u32,
}

/// A trace replayed at its own send times (`profile` only).
#[derive(Debug, Args, Clone)]
pub struct FixedScheduleArgs {
    /// Send a trace's requests at their timestamps (relative to the first row, or to
    /// --fixed-schedule-start) instead of at a concurrency or rate: one level, `fixed_schedule`.
    #[arg(help_heading = LOAD, long)]
    pub fixed_schedule: bool,

    /// Replay a fixed schedule this many times faster (timestamps divided by it).
    #[arg(help_heading = LOAD, long, default_value_t = 1.0, requires = "fixed_schedule")]
    pub fixed_schedule_speedup: f64,

    /// Replay only the trace's rows from this timestamp on (ms); the schedule counts from it.
    #[arg(help_heading = LOAD, long, alias = "fixed-schedule-start-offset", requires = "fixed_schedule")]
    pub fixed_schedule_start: Option<u64>,

    /// Replay only the trace's rows up to this timestamp (ms, inclusive).
    #[arg(help_heading = LOAD, long, alias = "fixed-schedule-end-offset", requires = "fixed_schedule")]
    pub fixed_schedule_end: Option<u64>,
}

/// How long each level lasts (`profile` only: a search sizes each probe itself).
#[derive(Debug, Args, Clone, Default)]
pub struct StopArgs {
    /// Requests measured per level (default: 100, or 25 s, whichever comes first).
    ///
    /// Default: max(100, 2 × concurrency) requests (100 for a request rate: enough for a p99),
    /// or 25 s of sending when the server is slower than that, whichever comes first; or
    /// --num-prompts when that alone is given; with sessions, every session once. With
    /// sessions it counts turns (each turn is one request), not sessions.
    #[arg(help_heading = MEASUREMENT, long, alias = "num-requests", value_name = "N")]
    pub request_count: Option<u64>,

    /// Measurement window per level (bare number: ms; or 500ms, 10s, 1m).
    ///
    /// Requests sent within it are measured.
    #[arg(help_heading = MEASUREMENT, short = 'p', long, value_parser = millis, value_name = "TIME")]
    pub measurement_interval: Option<Duration>,

    /// Seconds per level: requests sent within it are measured (like --measurement-interval, in s).
    #[arg(help_heading = MEASUREMENT, long, conflicts_with_all = ["measurement_interval", "request_count"], value_parser = secs)]
    pub duration: Option<Duration>,
}

/// Levels that stop once a statistic is known closely enough (`profile` only).
#[derive(Debug, Args, Clone, Default)]
pub struct MoeArgs {
    /// Stop each level once the margin of error of --moe-metric is at most this share of its
    /// estimate (5%), at --confidence; --request-count (default 10000) and
    /// --measurement-interval/--duration cap a level, and a saturated level stops early.
    #[arg(help_heading = MEASUREMENT, long, value_name = "SHARE", value_parser = FlagValue(values::parse_margin))]
    pub target_moe: Option<f64>,

    /// The statistic --target-moe judges: a percentile or the average of a per-request metric
    /// (default: time_to_first_token.p99 with --streaming, request_latency.p99 without).
    #[arg(help_heading = MEASUREMENT, long, value_name = "METRIC.STAT", requires = "target_moe", value_parser = FlagValue(values::parse_moe_metric))]
    pub moe_metric: Option<crate::metrics::MetricRef>,
}

/// How a level is measured and what is read beside it (`profile`, `search`).
#[derive(Debug, Args, Clone)]
pub struct MeasureArgs {
    /// Confidence of --target-moe's intervals and of a search's decisions (default 95%).
    ///
    /// More than 50% and at most 99.9%.
    #[arg(help_heading = MEASUREMENT, long, value_parser = FlagValue(|_, raw| values::parse_confidence(raw)))]
    pub confidence: Option<f64>,

    /// Requests sent before measuring each level (excluded from the results).
    #[arg(
        help_heading = MEASUREMENT,
        long,
        alias = "num-warmup-requests",
        default_value_t = 0
    )]
    pub warmup_request_count: u64,

    /// Load before measuring each level, excluded from the results (bare number: seconds).
    #[arg(help_heading = MEASUREMENT, long, conflicts_with = "warmup_request_count", value_parser = secs)]
    pub warmup_duration: Option<Duration>,

    /// How percentiles are computed: numpy's linear interpolation (GenAI-Perf's) or perf_analyzer's nearest rank.
    #[arg(help_heading = MEASUREMENT, long, value_enum, default_value = "linear")]
    pub percentile_method: PercentileMethod,

    /// Time per row of each level's timeline.csv (bare number: seconds).
    #[arg(help_heading = MEASUREMENT, long, default_value = "1s", value_parser = secs)]
    pub timeline_interval: Duration,

    /// Prometheus endpoint of the server (default: the target's own /metrics for an OpenAI API,
    /// then port 8002 of the target host, whichever answers).
    #[arg(help_heading = MEASUREMENT, long, alias = "server-metrics-urls")]
    pub server_metrics_url: Option<String>,

    /// The engine's and the GPUs' view, and which headers the metrics endpoints get.
    #[command(flatten)]
    pub engine_view: EngineViewArgs,

    /// Split TTFT and latency by input length: rising edges in tokens (`128,512,2048` gives
    /// `<128`, `128-511`, `512-2047`, `>=2048`) or `auto` (the quartiles of the prompts'
    /// lengths). Per bucket in the JSON, a CSV section, the console (-v) and report.html.
    #[arg(help_heading = MEASUREMENT, long, value_name = "EDGES|auto", value_parser = FlagValue(|_, raw| values::parse_isl_buckets(Some(raw))))]
    pub isl_buckets: Option<values::IslBuckets>,

    /// Count output tokens from the server's usage report instead of the tokenizer.
    #[arg(help_heading = MEASUREMENT, long)]
    pub use_server_token_count: bool,

    /// Count each prompt's input tokens with the server's own tokenizer (vLLM's /tokenize, chat
    /// template included), once before the run, so input lengths match the server's usage;
    /// chat and completions endpoint types. The tokenizer still shapes synthetic prompts and
    /// counts output tokens.
    #[arg(help_heading = MEASUREMENT, long)]
    pub tokenizer_from_server: bool,

    /// The timeout, cancellation and size cap of each request (shared with `perf`).
    #[command(flatten)]
    pub requests: RequestArgs,
}

/// How each request is sent and given up on (`profile`, `search`, `perf`).
#[derive(Debug, Args, Clone)]
pub struct RequestArgs {
    /// Per-request timeout (bare number: seconds); a timed-out request counts as an error of kind
    /// `timeout`.
    #[arg(help_heading = MEASUREMENT, long, default_value = "600s", value_parser = secs)]
    pub request_timeout: Duration,

    /// `--request-cancellation-rate`, `--request-cancellation-delay`.
    #[command(flatten)]
    pub cancellation: CancellationArgs,

    /// Largest server-sent event, streamed message or whole response body accepted (bytes, or
    /// with a KiB/MiB/GiB suffix); a response past it ends as a `response_too_large` error
    /// instead of being buffered.
    #[arg(help_heading = MEASUREMENT, long, default_value = "4MiB", value_parser = parse_size)]
    pub max_event_size: usize,

    /// Acknowledge every read at once (Linux TCP_QUICKACK) instead of delaying the ACK, so a
    /// server sending with Nagle's algorithm on is not held up by this client: measures the
    /// server without that ~40 ms stall (off by default: real clients delay their ACKs, and the
    /// run names the stall when it sees one).
    #[arg(help_heading = MEASUREMENT, long)]
    pub tcp_quickack: bool,
}

/// What passes and what fails the run (`profile`, `search`).
#[derive(Debug, Args, Clone)]
pub struct DecisionArgs {
    /// `--slo`, `--max-send-lag`, `--strict`, `--max-error-rate` (shared with `perf`).
    #[command(flatten)]
    pub verdict: VerdictArgs,

    /// Goodput objectives `metric:value` (ms for times, tokens/sec/user for per-user throughput).
    #[arg(help_heading = DECISIONS, short = 'g', long, num_args = 1.., value_parser = FlagValue(values::parse_goodput))]
    pub goodput: Vec<values::Objectives>,

    /// Knee detection: the knee is the first level beyond which throughput grows by less than
    /// this while p99 latency rises by more.
    #[arg(help_heading = DECISIONS, long, default_value = "10%", value_parser = FlagValue(values::parse_fraction))]
    pub knee_min_gain: f64,
}

/// When a level's objectives, measurement or errors fail the run (`profile`, `search`, `perf`).
#[derive(Debug, Args, Clone)]
pub struct VerdictArgs {
    /// Objective every level must meet, e.g. 'time_to_first_token.p99<=500ms' (repeatable).
    ///
    /// Checked at the end of every level, `METRIC[.STAT] OP VALUE[unit]`:
    /// `time_to_first_token.p99<=500ms`, `queue_share<=50%`, `request_throughput>=10`,
    /// `error_rate<1%`. Any failure makes the exit code 1.
    #[arg(help_heading = DECISIONS, long, value_parser = FlagValue(values::parse_slo))]
    pub slo: Vec<crate::metrics::Slo>,

    /// Send-lag p99 above which an open-loop level is marked not trustworthy (bare number: ms).
    #[arg(help_heading = DECISIONS, long, default_value = "2ms", value_parser = millis)]
    pub max_send_lag: Duration,

    /// Exit with code 1 when any level's measurement is not trustworthy.
    #[arg(help_heading = DECISIONS, long)]
    pub strict: bool,

    /// Fail the run (exit 1) when a level's share of failed requests is above this (10%, 0.1):
    /// past a few percent the percentiles describe only the survivors. 100% accepts any.
    #[arg(help_heading = DECISIONS, long, default_value = "5%", value_parser = FlagValue(values::parse_share))]
    pub max_error_rate: f64,
}

/// Files and console output (`profile`, `search`).
#[derive(Debug, Args, Clone)]
pub struct ArtifactArgs {
    /// GenAI-Perf's raw per-request export (`profile_export.json`, `inputs.json`) in each level
    /// directory, which NVIDIA's own parser and users' scripts read: `full` writes it (every
    /// response as received, ~23 KB per 100-token streamed request, written after each level);
    /// `none` keeps requests.jsonl (~0.6 KB per request) and the statistics files. Default:
    /// none, unless --profile-export-file names the file.
    #[arg(help_heading = OUTPUT, long, value_enum)]
    pub raw_export: Option<RawExportArg>,

    /// File name of the raw export in each level directory (GenAI-Perf's flag: a bare name;
    /// naming it asks for the raw export); the statistics files are named after its stem:
    /// NAME.json → NAME_genai_perf.csv/.json. Default: profile_export.json.
    #[arg(help_heading = OUTPUT, long)]
    pub profile_export_file: Option<String>,

    /// Where files go: a directory per level for a sweep ({timestamp}, {concurrency}, ...).
    ///
    /// Files directly in it for one level, a subdirectory per level for a sweep.
    /// Placeholders: `{timestamp}` (local time, YYYYMMDD_HHMMSS, one per invocation; `_2` is added
    /// if an earlier run in the same second took it), `{model}`,
    /// `{concurrency}`/`{rate}`/`{level}` (per level), `{shard}` (the shard index with
    /// --shard/--shards), e.g. `./bench/{timestamp}/c{concurrency}`.
    #[arg(help_heading = OUTPUT, long, value_name = "DIR")]
    pub artifact_dir: Option<PathBuf>,

    /// JUnit report, JSON stdout, Pushgateway.
    #[command(flatten)]
    pub outputs: OutputArgs,

    /// More detail on the console.
    #[arg(help_heading = OUTPUT, short = 'v', long)]
    pub verbose: bool,

    /// Print only the results table.
    #[arg(help_heading = OUTPUT, long)]
    pub quiet: bool,

    /// Write report.html for a single level too (GenAI-Perf's flag; a sweep always gets one).
    #[arg(help_heading = OUTPUT, long)]
    pub generate_plots: bool,
}

/// Flags of `ttftbench search`: the groups of `profile` that do not fix the levels or their
/// length (the search chooses its loads and each probe's length), and its own.
#[derive(Debug, Args, Clone)]
pub struct SearchArgs {
    /// Target, workload, measurement, decisions, files: as `profile`'s.
    #[command(flatten)]
    pub run: RunArgs,

    /// What the search varies.
    ///
    /// Closed-loop concurrency or open-loop request rate (with --request-distribution,
    /// --burstiness and --max-inflight).
    #[arg(help_heading = SEARCH, long, value_enum, default_value = "concurrency")]
    pub over: SearchOverArg,

    /// Lowest load, where the search starts (default 1: concurrency 1, or 1 request/s).
    #[arg(help_heading = SEARCH, long)]
    pub min: Option<f64>,

    /// Highest load the search may try, and its first probe (default: climbing from --min).
    ///
    /// Without it the search climbs from --min with short scouts, doubling until a load fails,
    /// up to concurrency 4096 or 100000 requests/s.
    #[arg(help_heading = SEARCH, long)]
    pub max: Option<f64>,

    /// A rate search stops bisecting when the next load above its answer is within this share
    /// (concurrency stops at one step).
    #[arg(help_heading = SEARCH, long, default_value = "5%", value_parser = FlagValue(values::parse_resolution))]
    pub resolution: f64,

    /// Most successful requests a probe measures.
    ///
    /// A probe whose decision is still open then is reported undecided (and counts as not
    /// meeting the objectives).
    #[arg(help_heading = SEARCH, long, default_value_t = crate::plan::search::DEFAULT_MAX_PROBE_REQUESTS)]
    pub max_probe_requests: u64,

    /// Longest a probe measures (bare number: seconds; or 90s, 5m); undecided past it.
    #[arg(help_heading = SEARCH, long, value_parser = secs)]
    pub max_probe_time: Option<Duration>,

    /// Longest the whole search runs (bare number: seconds; or 90s, 10m): then the probe under
    /// way stops and the answer is the highest load proven so far, with its confidence.
    #[arg(help_heading = SEARCH, long, value_parser = secs)]
    pub max_time: Option<Duration>,
}

/// What a search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SearchOverArg {
    /// Closed-loop concurrency.
    Concurrency,
    /// Open-loop request rate (requests/s).
    RequestRate,
}

/// An engine's name (`--server-kind`, `--metrics-style`), one of [`ServerKind::ALL`]'s.
fn server_kind() -> impl clap::builder::TypedValueParser<Value = ServerKind> {
    use clap::builder::TypedValueParser;
    let names = ServerKind::ALL.iter().map(|k| k.name());
    clap::builder::PossibleValuesParser::new(names).try_map(|s| s.parse::<ServerKind>())
}

/// Where the server's own view is read (profile and perf alike).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = MEASUREMENT)]
pub struct EngineViewArgs {
    /// Which engine's metrics to read from the server's page (default: detected from it):
    /// triton, trtllm, vllm, sglang, tgi, llamacpp.
    #[arg(long, value_parser = server_kind())]
    pub server_kind: Option<ServerKind>,

    /// A DCGM exporter's page for GPU telemetry (e.g. host:9400); without it GPUs are read from
    /// Triton's own metrics page when it has them.
    #[arg(long)]
    pub gpu_metrics_url: Option<String>,

    /// Send the -H header of this name to the metrics and statistics endpoints too (repeatable);
    /// other -H headers go only to the inference server (Triton's triton-access-token always may).
    #[arg(long)]
    pub metrics_header: Vec<String>,
}

/// Requests the client gives up on (AIPerf's flags), for `profile` and `perf` alike.
#[derive(Debug, Args, Clone)]
pub struct CancellationArgs {
    /// Share of requests the client cancels (AIPerf's flag): a percentage from 0 to 100, `10`
    /// or `10%`. Chosen from `--random-seed` and each request's number, so reruns cancel the
    /// same ones. Cancelled requests are counted apart (`cancelled_count`), not as errors, and
    /// left out of every latency statistic.
    #[arg(help_heading = MEASUREMENT, long = "request-cancellation-rate", value_name = "PERCENT", default_value = "0", value_parser = FlagValue(values::parse_percent))]
    pub rate: f64,

    /// How long after its send a request chosen by `--request-cancellation-rate` is cancelled
    /// (bare number: seconds, as in AIPerf; `500ms` works); one that completes sooner counts as
    /// a normal request.
    #[arg(help_heading = MEASUREMENT, long = "request-cancellation-delay", default_value = "0", value_parser = secs)]
    pub delay: Duration,
}

impl CancellationArgs {
    /// The plan's [`crate::plan::RequestCancellation`]: a share from 0 to 100 %.
    pub fn plan(&self) -> crate::plan::RequestCancellation {
        crate::plan::RequestCancellation {
            rate_pct: self.rate,
            delay: self.delay,
        }
    }
}

/// Running the whole plan several times in a row and combining the results.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = DECISIONS)]
pub struct RepeatArgs {
    /// Run the whole plan N times in a row (each repetition a complete sweep, in its own
    /// directory rep1/, rep2/, ...) and report per level the median of every statistic across
    /// them with its spread (min, max, 95 % interval); `compare` then tells a regression from
    /// noise.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Pause between repetitions (bare number: seconds), e.g. to let the server settle.
    #[arg(long, value_name = "S", default_value = "0s", value_parser = secs)]
    pub repeat_pause: Duration,
}

impl RepeatArgs {
    /// The plan's [`crate::plan::Repeat`]; at least 1 and at most 100 repetitions, and not with
    /// `--shard` (a shard's repetitions could not be lined up with the other shards').
    pub fn plan(&self, sharded: bool) -> Result<crate::plan::Repeat, crate::error::UsageError> {
        use crate::error::UsageError;
        if !(1..=100).contains(&self.repeat) {
            return Err(UsageError(format!(
                "--repeat {}: give 1 to 100 repetitions (3 is the usual choice: its median ignores one outlier)",
                self.repeat
            )));
        }
        if sharded && self.repeat > 1 {
            return Err(UsageError(
                "--repeat with --shard/--shards: repeat the whole sharded launch instead (start the N processes again) and merge each launch; one shard cannot line its repetitions up with the others'".into(),
            ));
        }
        Ok(crate::plan::Repeat {
            count: self.repeat,
            pause: self.repeat_pause,
        })
    }
}

/// Running one plan as N processes (`ttftbench merge` adds their results up).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = LOAD)]
pub struct ShardArgs {
    /// Run shard I of N (0-based): this process's part of the plan — concurrency, rate and
    /// request counts divided, prompts (perf: input-data entries) partitioned — for
    /// `ttftbench merge` to add up. perf's stability windows: every shard measures all -r
    /// windows of each level (no shard can know when the others' windows agree), reports the
    /// last three as perf_analyzer does, and marks the level stable when they agreed; a level
    /// lasts -r × 1.2 × the measurement interval on every shard (give -r 3 for the shortest).
    #[arg(long, value_name = "I/N", value_parser = FlagValue(values::parse_shard))]
    pub shard: Option<crate::load::Shard>,
    /// Run one of N shards, its index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) or
    /// --shard-index.
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// This process's shard index with --shards (Kubernetes sets JOB_COMPLETION_INDEX).
    #[arg(long, env = "JOB_COMPLETION_INDEX", value_name = "I")]
    pub shard_index: Option<u32>,
    /// Start the first level at this moment — Unix seconds or RFC 3339 (2026-01-01T12:00:00Z) —
    /// and later levels on shared boundaries after it, so all shards load the server together.
    #[arg(long, value_name = "TIME", value_parser = FlagValue(values::parse_start_at))]
    pub start_at: Option<u64>,
    /// Time between level starts after --start-at (bare number: seconds); by default a level's
    /// length plus a drain allowance, when the plan fixes that length.
    #[arg(long, value_parser = secs)]
    pub level_slot: Option<Duration>,
}

/// TLS flags shared by `profile`, `perf` and `doctor`: they apply when the URL is `https://` (a
/// URL without a scheme becomes `https://` when one is given).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = TARGET)]
pub struct TlsArgs {
    /// CA certificate(s) to trust in addition to the system's roots: a PEM file with one or more
    /// certificates (repeatable). For servers whose certificate a private CA signed.
    #[arg(long, value_name = "FILE")]
    pub cacert: Vec<PathBuf>,
    /// Client certificate chain (PEM) for servers that require mutual TLS; needs --key.
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// Private key of --cert (PEM: PKCS#8, RSA or EC). Its path may be shown; its contents never
    /// reach artifacts or logs.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Do not verify the server's certificate at all (anyone on the path could pose as the
    /// server). Warned about, and recorded in the artifacts.
    #[arg(short = 'k', long)]
    pub insecure: bool,
}

/// perf_analyzer's names for TLS settings (`perf` only), mapped onto the same settings as
/// `--cacert`, `--cert`, `--key` and `-k`.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = TARGET)]
pub struct PerfTlsArgs {
    /// gRPC over TLS (perf_analyzer's name).
    #[arg(long)]
    pub ssl_grpc_use_ssl: bool,
    /// gRPC: PEM file of the root certificates to trust (like --cacert).
    #[arg(long, value_name = "FILE")]
    pub ssl_grpc_root_certifications_file: Option<PathBuf>,
    /// gRPC: PEM file of the client's private key (like --key).
    #[arg(long, value_name = "FILE")]
    pub ssl_grpc_private_key_file: Option<PathBuf>,
    /// gRPC: PEM file of the client's certificate chain (like --cert).
    #[arg(long, value_name = "FILE")]
    pub ssl_grpc_certificate_chain_file: Option<PathBuf>,
    /// HTTPS: verify the server's certificate, 1 (default) or 0 (like -k), as libcurl's
    /// CURLOPT_SSL_VERIFYPEER.
    #[arg(long, value_name = "0|1", value_parser = clap::value_parser!(u8).range(0..=1))]
    pub ssl_https_verify_peer: Option<u8>,
    /// HTTPS: check the certificate's name against the host, 2 (default; 1 means the same, as in
    /// libcurl) or 0 (chain checked, name not), as libcurl's CURLOPT_SSL_VERIFYHOST.
    #[arg(long, value_name = "0|1|2", value_parser = clap::value_parser!(u8).range(0..=2))]
    pub ssl_https_verify_host: Option<u8>,
    /// HTTPS: CA bundle to trust (like --cacert).
    #[arg(long, value_name = "FILE")]
    pub ssl_https_ca_certificates_file: Option<PathBuf>,
    /// HTTPS: client certificate (like --cert).
    #[arg(long, value_name = "FILE")]
    pub ssl_https_client_certificate_file: Option<PathBuf>,
    /// HTTPS: how the client certificate file is encoded.
    #[arg(long, value_enum, ignore_case = true, default_value = "pem")]
    pub ssl_https_client_certificate_type: Encoding,
    /// HTTPS: the client certificate's private key (like --key).
    #[arg(long, value_name = "FILE")]
    pub ssl_https_private_key_file: Option<PathBuf>,
    /// HTTPS: how the private key file is encoded.
    #[arg(long, value_enum, ignore_case = true, default_value = "pem")]
    pub ssl_https_private_key_type: Encoding,
}

/// Result channels of `profile` and `perf` besides the artifact files.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = OUTPUT)]
pub struct OutputArgs {
    /// Write a JUnit XML report here: one test case per --slo objective and per level's validity
    /// verdict, for CI test reporters (GitLab, Jenkins, GitHub).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// `json`: one JSON object per finished level and a final summary object on stdout (for
    /// `| jq`); console text goes to stderr.
    #[arg(long, value_enum, default_value = "text")]
    pub output: StdoutFormat,
    /// Push each level's key metrics to this Prometheus Pushgateway (e.g.
    /// http://pushgateway:9091) when it ends; a failed push is a warning.
    #[arg(long)]
    pub push_gateway: Option<String>,
    /// Tag the run: KEY=VALUE, repeatable (e.g. --label release=v2.3 --label gpu=h100). Recorded
    /// with the run id, client host and server version in every level's JSON and summary.json,
    /// and shown in report.html's header.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// The HTTP header each request carries its id in (`RUN-SEQ`: the run id and the request's
    /// `seq`, recorded as `request_id` in requests.jsonl); `none` sends none. Over gRPC the id
    /// goes in KServe's `id` field.
    #[arg(long, value_name = "NAME|none", default_value = "X-Request-ID")]
    pub request_id_header: String,
    /// Read flags from a TOML file, or YAML for a `.yaml`/`.yml` file: keys are the long flag
    /// names (`model = "gpt2"`, `concurrency = [1, 2, 4]`, `streaming = true`; in YAML
    /// `model: gpt2`); flags on the command line win. Every run writes its own flags as
    /// `run.toml` in its artifact directory, so `--config run.toml` repeats it.
    #[arg(long, value_name = "FILE.toml|FILE.yaml")]
    pub config: Option<PathBuf>,
    /// Print the run's flags (file and command line together) as a config file and exit.
    #[arg(long)]
    pub print_config: bool,
    /// What stderr shows while a level runs: elapsed and remaining, requests done, in flight and
    /// failed, running TTFT p50/p99, ITL, output tokens/s, send lag (request-rate levels).
    /// `compact` redraws two lines, `dashboard` a full screen with the ladder so far; both leave
    /// one line per level. When stderr is not a terminal (CI logs), a plain line every 5 s
    /// instead. `none` (or `--quiet`): nothing.
    #[arg(help_heading = OUTPUT, long, value_enum, default_value = "compact")]
    pub ui: UiMode,
}

/// `--measurement-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MeasurementModeArg {
    /// Windows of a fixed length (1.2 × --measurement-interval).
    #[value(name = "time_windows")]
    TimeWindows,
    /// Windows of --measurement-request-count completed requests.
    #[value(name = "count_windows")]
    CountWindows,
}

/// `--input-tensor-format` / `--output-tensor-format` (HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TensorFormatArg {
    /// The binary tensor data extension.
    Binary,
    /// Tensors as JSON arrays.
    Json,
}

/// Flags of `ttftbench perf` (perf_analyzer's names, short forms and defaults). The groups it
/// shares with `profile` are flattened in; a flag that `profile` also has but declared here is
/// perf_analyzer's, whose meaning or default differs (each says how).
#[derive(Debug, Args, Clone)]
pub struct PerfArgs {
    /// Model name.
    #[arg(help_heading = TARGET, short = 'm', long = "model-name", visible_alias = "model")]
    pub model: String,
    /// Model version (default: the server's choice).
    #[arg(help_heading = TARGET, short = 'x', long)]
    pub model_version: Option<String>,
    /// Server address, with or without scheme (default localhost:8001 for gRPC, :8000 for HTTP).
    #[arg(help_heading = TARGET, short = 'u', long)]
    pub url: Option<String>,
    /// Protocol (default: gRPC when the address answers gRPC, else HTTP).
    ///
    /// Without -i the server is asked (perf_analyzer defaults to HTTP, which fails against
    /// Triton's gRPC port 8001).
    #[arg(help_heading = TARGET, short = 'i', long, value_enum, ignore_case = true)]
    pub protocol: Option<crate::perf::plan::Protocol>,
    /// Service kind; only Triton (KServe v2) is supported by this mode.
    #[arg(help_heading = TARGET, long, default_value = "triton")]
    pub service_kind: String,
    /// Batch size of each request (the model's leading dimension).
    #[arg(help_heading = WORKLOAD, short = 'b', long, default_value_t = 1)]
    pub batch_size: u32,
    /// Shape of an input with variable dimensions: `NAME:d1,d2,...` (repeatable).
    #[arg(help_heading = WORKLOAD, long)]
    pub shape: Vec<String>,
    /// `random`, `zero`, or a JSON file in perf_analyzer's input-data format (repeatable).
    #[arg(help_heading = WORKLOAD, long)]
    pub input_data: Vec<String>,
    /// Length of random strings for BYTES inputs.
    #[arg(help_heading = WORKLOAD, long, default_value_t = 128)]
    pub string_length: usize,
    /// Fixed string for BYTES inputs instead of random ones.
    #[arg(help_heading = WORKLOAD, long)]
    pub string_data: Option<String>,
    /// Concurrency sweep `start[:end[:step]]`, inclusive and linear (default 1).
    ///
    /// `1:32:2` = 1, 3, ..., 31.
    #[arg(help_heading = LOAD, long, value_name = "RANGE", value_parser = FlagValue(|flag, raw| parse_range_u32(raw, flag)))]
    pub concurrency_range: Option<(u32, u32, u32)>,
    /// Request-rate sweep `start[:end[:step]]` (requests/s), inclusive and linear.
    #[arg(help_heading = LOAD, long, conflicts_with = "concurrency_range", value_name = "RANGE", value_parser = FlagValue(crate::perf::plan::rate_range_flag))]
    pub request_rate_range: Option<values::Levels<f64>>,
    /// Gaps between requests under --request-rate-range.
    #[arg(help_heading = LOAD, long, value_enum, default_value = "constant")]
    pub request_distribution: DistributionArg,
    /// Ramp concurrency `start[:end[:step]]`: begin at start, add step requests each time the
    /// latest requests have received --request-period responses, up to end; measured once,
    /// without stability windows. With --request-rate-range, the rate drives the load and this
    /// caps requests in flight at end.
    #[arg(help_heading = LOAD, long, value_parser = FlagValue(|flag, raw| parse_range_u32(raw, flag)))]
    pub periodic_concurrency_range: Option<(u32, u32, u32)>,
    /// Responses each request of a periodic-concurrency step waits for before the next step.
    #[arg(help_heading = LOAD, long, default_value_t = 10)]
    pub request_period: u32,
    // Not `profile`'s: perf_analyzer's stability window (5 s by default, windows of 1.2 × it),
    // where profile's ends a level once.
    /// Measurement window (bare number: milliseconds).
    ///
    /// Windows last 1.2 × this, as in perf_analyzer.
    #[arg(help_heading = MEASUREMENT, short = 'p', long, default_value = "5000", value_parser = millis, value_name = "TIME")]
    pub measurement_interval: Duration,
    /// How windows end.
    #[arg(help_heading = MEASUREMENT, long, value_enum, default_value = "time_windows")]
    pub measurement_mode: MeasurementModeArg,
    /// Completed requests per window in count_windows mode.
    #[arg(help_heading = MEASUREMENT, long, default_value_t = 50)]
    pub measurement_request_count: u64,
    // Not `profile`'s: it also turns the stability loop off.
    /// Measure exactly this many requests in one window (no stability loop).
    #[arg(help_heading = MEASUREMENT, long, value_name = "N")]
    pub request_count: Option<u64>,
    /// Stability: the last 3 windows' throughput and latency within this percentage.
    #[arg(help_heading = MEASUREMENT, short = 's', long, default_value_t = 10.0)]
    pub stability_percentage: f64,
    /// Most windows per level before giving up on stability.
    #[arg(help_heading = MEASUREMENT, short = 'r', long, default_value_t = 10)]
    pub max_trials: u32,
    /// Stabilize on, and report, this latency percentile instead of the average.
    #[arg(help_heading = MEASUREMENT, long)]
    pub percentile: Option<u32>,
    // Not `profile`'s: perf_analyzer's nearest rank is the default here.
    /// How percentiles are computed: perf_analyzer's nearest rank, or numpy's linear interpolation.
    #[arg(help_heading = MEASUREMENT, long, value_enum, default_value = "nearest-rank")]
    pub percentile_method: PercentileMethod,
    /// Stop the sweep once a level's latency passes this (bare number: milliseconds; 0 = no limit).
    #[arg(help_heading = DECISIONS, short = 'l', long, default_value = "0", value_parser = millis)]
    pub latency_threshold: Duration,
    /// Requests sent before measuring each level.
    #[arg(help_heading = MEASUREMENT, long, default_value_t = 0)]
    pub warmup_request_count: u64,
    // Not `profile`'s: gRPC only and off unless given (no --no-streaming, no detection).
    /// Decoupled models: stream responses over gRPC (time to first response, response throughput).
    #[arg(help_heading = TARGET, long)]
    pub streaming: bool,
    /// Accepted for perf_analyzer compatibility: requests are always asynchronous here.
    #[arg(help_heading = TARGET, short = 'a', long = "async")]
    pub async_mode: bool,
    /// Accepted for perf_analyzer compatibility: requests are always asynchronous here, and
    /// concurrency N keeps exactly N in flight either way.
    #[arg(help_heading = TARGET, long = "sync")]
    pub sync_mode: bool,
    /// Accepted for perf_analyzer compatibility: the async runtime sizes itself.
    #[arg(help_heading = LOAD, long)]
    pub max_threads: Option<u32>,
    /// Request parameter `name:value[:type]` (type bool, int, string; inferred when omitted).
    #[arg(help_heading = WORKLOAD, long)]
    pub request_parameter: Vec<String>,
    /// Write perf_analyzer's latency report CSV here.
    #[arg(help_heading = OUTPUT, short = 'f', long, visible_alias = "file", value_name = "FILE")]
    pub latency_report_file: Option<std::path::PathBuf>,
    /// Write perf_analyzer's raw per-request export (JSON: every request's inputs, timestamps and
    /// output tensors, one experiment per level) here.
    #[arg(help_heading = OUTPUT, long)]
    pub profile_export_file: Option<std::path::PathBuf>,
    /// Add perf_analyzer's verbose columns to the CSV; with -f, also write every measured
    /// request (send time, latency, first response, error) to <stem>.requests.jsonl beside it.
    #[arg(help_heading = OUTPUT, long)]
    pub verbose_csv: bool,
    /// One CSV row per --timeline-interval of the run (soak tests: watch drift over hours).
    #[arg(help_heading = OUTPUT, long)]
    pub timeline: Option<std::path::PathBuf>,
    // Not `profile`'s: rows of the --timeline file over the whole run, not of each level.
    /// Time per timeline row (bare number: seconds).
    #[arg(help_heading = OUTPUT, long, default_value = "10s", value_parser = secs)]
    pub timeline_interval: Duration,
    /// HTTP header `Name: value` (repeatable), sent as gRPC metadata too.
    ///
    /// On statistics and metrics calls only when --metrics-header names it (or it is
    /// triton-access-token).
    #[arg(help_heading = TARGET, short = 'H', long)]
    pub header: Vec<String>,
    /// HTTP input tensor encoding.
    #[arg(help_heading = TARGET, long, value_enum, default_value = "binary")]
    pub input_tensor_format: TensorFormatArg,
    /// HTTP output tensor encoding.
    #[arg(help_heading = TARGET, long, value_enum, default_value = "binary")]
    pub output_tensor_format: TensorFormatArg,
    /// Prometheus endpoint for the pending-request gauge and the engine's metrics (default: port
    /// 8002 of the server, if it answers).
    #[arg(help_heading = MEASUREMENT, long)]
    pub metrics_url: Option<String>,
    /// The engine's and the GPUs' view, and which headers the metrics endpoints get.
    #[command(flatten)]
    pub engine_view: EngineViewArgs,
    /// The timeout, cancellation and size cap of each request (as `profile`'s).
    #[command(flatten)]
    pub requests: RequestArgs,
    /// Seed for random input data and schedules.
    #[arg(help_heading = WORKLOAD, long, default_value_t = 0)]
    pub random_seed: u64,
    /// `--slo`, `--max-send-lag`, `--strict`, `--max-error-rate` (as `profile`'s).
    #[command(flatten)]
    pub verdict: VerdictArgs,

    /// TLS.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// TLS under perf_analyzer's names.
    #[command(flatten)]
    pub pa_tls: PerfTlsArgs,
    /// Print each measurement window.
    #[arg(help_heading = OUTPUT, short = 'v', long)]
    pub verbose: bool,
    /// JUnit report, JSON stdout, Pushgateway.
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// Also write each level's files in a directory of its own below this one (GenAI-Perf's
    /// CSV and JSON, histograms.json, requests.jsonl; with --shard also shard.json), for
    /// `report`, `compare` and `merge`. Under --shard/--shards the default is
    /// artifacts/perf-shard{I}-of-{N}; `{shard}` is replaced by the shard index.
    #[arg(help_heading = OUTPUT, long)]
    pub artifact_dir: Option<PathBuf>,
    /// Where this process takes part in a run of several.
    #[command(flatten)]
    pub shard: ShardArgs,

    /// Repetitions of the whole plan.
    #[command(flatten)]
    pub repeat: RepeatArgs,
}

/// Flags of `ttftbench serve`.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Address to bind every listener to (0.0.0.0 serves every interface).
    #[arg(long, default_value = "127.0.0.1")]
    pub address: std::net::IpAddr,
    /// KServe v2 HTTP + OpenAI port (0 = any free port, printed).
    #[arg(long, default_value_t = 8000)]
    pub http_port: u16,
    /// KServe v2 gRPC port (0 = any free port, printed).
    #[arg(long, default_value_t = 8001)]
    pub grpc_port: u16,
    /// Prometheus metrics port (0 = any free port, printed); also serves /dcgm/metrics.
    #[arg(long, default_value_t = 8002)]
    pub metrics_port: u16,
    /// Which engine's metric families /metrics serves: triton, trtllm, vllm, sglang, tgi,
    /// llamacpp (llama-server's page; OpenAI responses then carry its `timings`, and /slots
    /// answers).
    #[arg(long, default_value = "triton", value_parser = server_kind())]
    pub metrics_style: ServerKind,
    /// Serve HTTP and gRPC over TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this CA (PEM) on HTTP and gRPC: mutual TLS.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Engine timing and faults.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Answers to a scored workload's questions.
    #[command(flatten)]
    pub answers: accuracy::AnswerArgs,
}

/// Timing model and fault injection of the simulated server. Defaults are the simulator's own
/// ([`crate::sim::EngineConfig::default`]).
#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Batch slots: sequences decoded together; more requests wait in the queue.
    #[arg(long, default_value_t = crate::sim::EngineConfig::default().max_batch)]
    pub max_batch: usize,
    /// Fixed cost of a prefill, in microseconds.
    #[arg(long, default_value_t = crate::sim::EngineConfig::default().prefill_base_us)]
    pub prefill_base_us: u64,
    /// Prefill cost per input token, in microseconds.
    #[arg(long, default_value_t = crate::sim::EngineConfig::default().prefill_us_per_token)]
    pub prefill_us_per_token: u64,
    /// Fixed cost of a decode step, in microseconds.
    #[arg(long, default_value_t = crate::sim::EngineConfig::default().decode_base_us)]
    pub decode_base_us: u64,
    /// Extra decode-step cost per running sequence, in microseconds.
    #[arg(long, default_value_t = crate::sim::EngineConfig::default().decode_us_per_seq)]
    pub decode_us_per_seq: u64,
    /// KV-cache blocks per model (0 = unlimited: never blocks admission or preempts).
    #[arg(long, default_value_t = crate::sim::EngineConfig::default().kv_blocks)]
    pub kv_blocks: u32,
    /// Tokens per KV-cache block.
    #[arg(long, default_value_t = crate::sim::EngineConfig::default().kv_block_size)]
    pub kv_block_size: u32,
    /// Reuse cached prompt blocks: shared prefixes skip that part of prefill.
    #[arg(long)]
    pub prefix_caching: bool,
    /// Queue limit (0 = unbounded); beyond it requests are rejected (HTTP 503 / RESOURCE_EXHAUSTED).
    #[arg(long, default_value_t = 0)]
    pub max_queue: usize,
    /// No timing at all: tokens as fast as the transport takes them (for benchmarking clients).
    #[arg(long)]
    pub instant: bool,
    /// Share of requests answered with a server error.
    #[arg(long, default_value_t = 0.0)]
    pub fault_error_rate: f64,
    /// Share of streams cut off half-way.
    #[arg(long, default_value_t = 0.0)]
    pub fault_cut_rate: f64,
    /// Share of requests that stall before their first token.
    #[arg(long, default_value_t = 0.0)]
    pub fault_stall_rate: f64,
    /// How long a stalled request stalls, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub fault_stall_ms: u64,
    /// Share of streams with one malformed event.
    #[arg(long, default_value_t = 0.0)]
    pub fault_malformed_rate: f64,
    /// Answer every inference request with 503 / UNAVAILABLE.
    #[arg(long)]
    pub fault_unavailable: bool,
    /// When the outage of --fault-outage-ms begins, in milliseconds after the server started.
    #[arg(long, default_value_t = 0)]
    pub fault_outage_after_ms: u64,
    /// An outage this long (ms): HTTP and gRPC listeners closed, open connections reset, then
    /// back on the same ports (0 = none).
    #[arg(long, default_value_t = 0)]
    pub fault_outage_ms: u64,
    /// Share of requests refused as rate-limited (HTTP 429 / gRPC RESOURCE_EXHAUSTED) with a
    /// Retry-After.
    #[arg(long, default_value_t = 0.0)]
    pub fault_rate_limit_rate: f64,
    /// Share of requests refused as unavailable (HTTP 503 / gRPC UNAVAILABLE) with a Retry-After.
    #[arg(long, default_value_t = 0.0)]
    pub fault_unavailable_rate: f64,
    /// The Retry-After (seconds) sent with rate-limited and unavailable answers.
    #[arg(long, default_value_t = 1)]
    pub fault_retry_after: u64,
    /// Share of gRPC calls reset (RST_STREAM) after their first response.
    #[arg(long, default_value_t = 0.0)]
    pub fault_reset_rate: f64,
    /// Send GOAWAY on every gRPC connection this many milliseconds after it opened (0 = never).
    #[arg(long, default_value_t = 0)]
    pub fault_goaway_ms: u64,
    /// Require `Authorization: Bearer KEY` on the OpenAI routes.
    #[arg(long, env = "TTFTBENCH_SIM_API_KEY", hide_env_values = true)]
    pub require_api_key: Option<String>,
    /// Restrict the statistics API to requests with header `triton-access-token: TOKEN`.
    #[arg(long, env = "TTFTBENCH_SIM_ACCESS_TOKEN", hide_env_values = true)]
    pub access_token: Option<String>,
}

/// Flags of `ttftbench demo`.
#[derive(Debug, Args, Clone)]
pub struct DemoArgs {
    /// Concurrency levels of the sweep.
    #[arg(long, default_value = "1,2,4,8,16,32", value_parser = FlagValue(values::concurrency_flag))]
    pub concurrency: values::Levels<u32>,
    /// Where artifacts go.
    #[arg(long, default_value = "artifacts/demo")]
    pub artifact_dir: PathBuf,
    /// Print only the results table.
    #[arg(long)]
    pub quiet: bool,
}

/// Flags of `ttftbench report`.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// Artifact directories: level directories (given together they form one run), sweep
    /// directories, or a folder of runs such as `bench/` (one run per timestamp directory).
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Where to write the page (default: `report.html` inside the one directory given, else in
    /// the current directory).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Knee detection fraction (see `profile --knee-min-gain`).
    #[arg(long, default_value = "10%", value_parser = FlagValue(values::parse_fraction))]
    pub knee_min_gain: f64,
}

/// Flags of `ttftbench merge`.
#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// The shards' artifact directories: each a sweep or a level directory written with
    /// --shard/--shards (every shard of the run, once).
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged run goes (a new directory, not inside a shard's).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Print only the results table.
    #[arg(long)]
    pub quiet: bool,
}

/// `compare --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Aligned columns for a terminal.
    Table,
    /// Machine-readable JSON.
    Json,
    /// Markdown, for a CI comment.
    Markdown,
}

/// Flags of `ttftbench compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The baseline run (a sweep or level directory). Alone, a folder of runs: its two newest
    /// runs are compared.
    pub baseline: PathBuf,
    /// The run to check against the baseline.
    pub current: Option<PathBuf>,
    /// Compare runs whose workloads differ (endpoint, model, input/output lengths, tokenizer,
    /// prompts, stop rule); without it such runs are refused.
    #[arg(long)]
    pub allow_mismatch: bool,
    /// Largest allowed fall of request, output-token and input (embeddings, rankings)
    /// throughput, e.g. `5%`.
    #[arg(long)]
    pub max_throughput_drop: Option<String>,
    /// Largest allowed rise of any p99 latency (TTFT, ITL, request latency), e.g. `10%`.
    #[arg(long)]
    pub max_p99_increase: Option<String>,
    /// Per-metric limit `METRIC[.STAT]:(+|-)LIMIT` (repeatable): `time_to_first_token.p99:+10%`,
    /// `request_throughput:-5%`, `time_to_first_token.p99:+50ms`, `queue_share:+5pp`.
    #[arg(long)]
    pub threshold: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// Write the output to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Write a JUnit XML report here: one test case per limit on each metric of each level.
    #[arg(long)]
    pub junit: Option<PathBuf>,
}

/// Flags of `ttftbench doctor` (the target flags of `profile`).
#[derive(Debug, Args, Clone)]
pub struct DoctorArgs {
    /// Model name as the server knows it.
    #[arg(short = 'm', long)]
    pub model: String,
    /// Server address (default localhost:8001 for kserve, localhost:8000 otherwise).
    #[arg(short = 'u', long)]
    pub url: Option<String>,
    /// Which API to check.
    #[arg(long, value_enum)]
    pub endpoint_type: Option<Api>,
    /// Legacy GenAI-Perf service kind (`openai` means `--endpoint-type chat`).
    #[arg(long, value_enum)]
    pub service_kind: Option<ServiceKind>,
    /// Custom endpoint path, as for `profile`.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Input layout of a Triton LLM model.
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// Extra header `Name: value` (repeatable).
    #[arg(short = 'H', long)]
    pub header: Vec<String>,
    /// API key sent as `Authorization: Bearer` (`x-api-key` for messages) to the target only
    /// (never printed); when not given, OpenAI-style endpoint types read `OPENAI_API_KEY` and
    /// messages reads `ANTHROPIC_API_KEY`.
    #[arg(long)]
    pub api_key: Option<String>,
    /// How reranker requests are laid out (--endpoint-type rankings), as for `profile`.
    #[arg(long, value_enum)]
    pub rankings_api: Option<RankingsLayout>,
    /// Prometheus endpoint (default: the target's own /metrics for an OpenAI API, then port 8002
    /// of the target host).
    #[arg(long)]
    pub server_metrics_url: Option<String>,
    /// Send the -H header of this name to the metrics and statistics endpoints too (repeatable).
    #[arg(long)]
    pub metrics_header: Vec<String>,
    /// Output tokens to ask for in the test request.
    #[arg(long, default_value_t = 12)]
    pub output_tokens: u32,
    /// TLS.
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// A flag's value read by one of [`crate::plan::values`]' parsers, given the flag's long name:
/// its message (which names the flag and says what to write) is the error as it is, exit code 2
/// as every usage error. The value is parsed here, once; the plan takes it typed.
#[derive(Clone, Copy)]
pub struct FlagValue<T>(pub fn(&str, &str) -> Result<T, crate::error::UsageError>);

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for FlagValue<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let flag = arg
            .and_then(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .unwrap_or_default();
        (self.0)(&flag, &value.to_string_lossy()).map_err(|e| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{}\n", e.0),
            )
            .with_cmd(cmd)
        })
    }
}

/// A duration flag whose bare numbers are milliseconds (`500`, `500ms`, `2s`, `1m`). (Clap
/// puts the flag in front of the message.)
fn millis(raw: &str) -> Result<Duration, crate::error::UsageError> {
    crate::plan::values::parse_duration("", raw, Duration::from_millis(1))
}

/// A duration flag whose bare numbers are seconds (`30`, `500ms`, `2s`, `1m`).
fn secs(raw: &str) -> Result<Duration, crate::error::UsageError> {
    crate::plan::values::parse_duration("", raw, Duration::from_secs(1))
}

/// A byte size flag's value that is not one; clap puts the flag in front (exit code 2, as
/// every clap error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// No number.
    #[error("'{0}' is not a size (e.g. 4194304 or 4MiB)")]
    NotSize(String),
    /// A unit other than KiB, MiB, GiB.
    #[error("'{0}': unknown unit (use KiB, MiB or GiB)")]
    Unit(String),
    /// Zero, or more than memory holds.
    #[error("'{0}' must be at least 1 byte and fit in memory")]
    Range(String),
}

/// A byte size: a number, optionally followed by `KiB`, `MiB` or `GiB` (or `K`, `M`, `G`).
/// Written here rather than with `bytesize`, which reads `K`/`KB`/`M`/`MB` as powers of 1000:
/// `--max-event-size 4MB` has always meant 4 MiB.
fn parse_size(s: &str) -> Result<usize, SizeError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num.parse().map_err(|_| SizeError::NotSize(s.into()))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(SizeError::Unit(s.into())),
    };
    match n.checked_mul(mult) {
        Some(v) if v > 0 => Ok(v),
        _ => Err(SizeError::Range(s.into())),
    }
}

impl TlsArgs {
    /// The TLS options as given.
    pub fn spec(&self) -> crate::plan::resolve::TlsSpec {
        crate::plan::resolve::TlsSpec {
            insecure: self.insecure,
            ca_files: self.cacert.clone(),
            cert: self.cert.clone().map(|p| (p, crate::target::Encoding::Pem)),
            key: self.key.clone().map(|p| (p, crate::target::Encoding::Pem)),
            ..Default::default()
        }
    }
}

impl EngineArgs {
    /// The faults `serve` flags ask for (validated later, with the rest of the config).
    pub fn faults(&self) -> crate::sim::FaultConfig {
        let e = self;
        crate::sim::FaultConfig {
            error_rate: e.fault_error_rate,
            cut_rate: e.fault_cut_rate,
            stall_rate: e.fault_stall_rate,
            stall_ms: e.fault_stall_ms,
            malformed_rate: e.fault_malformed_rate,
            unavailable: e.fault_unavailable,
            outage_after_ms: e.fault_outage_after_ms,
            outage_ms: e.fault_outage_ms,
            rate_limit_rate: e.fault_rate_limit_rate,
            unavailable_rate: e.fault_unavailable_rate,
            retry_after_s: e.fault_retry_after,
            reset_rate: e.fault_reset_rate,
            goaway_ms: e.fault_goaway_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unit spelling is a power of 1024, as the flag's help says; nothing else reads.
    #[test]
    fn sizes_are_binary_in_every_spelling() {
        for (raw, want) in [
            ("4194304", 4 << 20),
            ("4MiB", 4 << 20),
            ("4MB", 4 << 20),
            ("4m", 4 << 20),
            ("64 KiB", 64 << 10),
            ("1G", 1 << 30),
            ("7b", 7),
        ] {
            assert_eq!(parse_size(raw), Ok(want), "{raw}");
        }
        assert_eq!(parse_size("4TiB"), Err(SizeError::Unit("4TiB".into())));
        assert_eq!(parse_size("MiB"), Err(SizeError::NotSize("MiB".into())));
        assert_eq!(parse_size("0KiB"), Err(SizeError::Range("0KiB".into())));
    }
}
