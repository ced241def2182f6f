//! Command-line syntax. These types only describe flags; `plan` turns them into a validated
//! [`crate::plan::RunPlan`] once, and nothing downstream looks at strings again.

pub mod perf;
pub mod profile;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Load generator for LLM and tensor inference servers: TTFT, inter-token latency, throughput,
/// knees and regressions.
#[derive(Debug, Parser)]
#[command(name = "ttftbench", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// GenAI-Perf-style LLM profiling: streaming TTFT / ITL / throughput over a load sweep.
    Profile(Box<ProfileArgs>),
    /// perf_analyzer-style profiling of any KServe v2 model: tensors, batch sizes, stability
    /// windows, perf_analyzer's console report and `-f` CSV.
    Perf(Box<PerfArgs>),
    /// Built-in simulated inference server (Triton KServe v2 HTTP + gRPC, OpenAI, /metrics).
    Serve(ServeArgs),
    /// A concurrency sweep against an in-process simulated server: the zero-setup tour.
    Demo(DemoArgs),
    /// Render report.html (charts, knee, trend across runs) for existing artifact directories.
    Report(ReportArgs),
    /// Compare a run with a baseline, level by level; exit code 1 on regression.
    Compare(CompareArgs),
    /// Step-by-step connectivity check: TCP, health, metadata, model, metrics, one streamed request.
    Doctor(Box<DoctorArgs>),
}

/// `--endpoint-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EndpointTypeArg {
    /// Triton KServe v2 over gRPC (ModelStreamInfer).
    Kserve,
    /// OpenAI `/v1/chat/completions`.
    Chat,
    /// OpenAI `/v1/completions`.
    Completions,
    /// Triton HTTP `/v2/models/{model}/generate` (`generate_stream` with --streaming).
    Generate,
}

/// `--service-kind` (legacy GenAI-Perf flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServiceKindArg {
    /// Triton (gRPC by default).
    Triton,
    /// An OpenAI-compatible HTTP server.
    Openai,
}

/// `--raw-export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RawExportArg {
    /// No per-request export (maximum-rate runs).
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

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// TensorRT-LLM input layout (text_input, max_tokens, stream, ...).
    Tensorrtllm,
    /// vLLM backend input layout (text_input, stream, sampling_parameters).
    Vllm,
}

/// `--percentile-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PercentileMethodArg {
    /// numpy's default linear interpolation between neighbouring samples (GenAI-Perf, vLLM bench).
    Linear,
    /// The sample at rank (n-1)·p rounded half up (perf_analyzer).
    NearestRank,
}

impl PercentileMethodArg {
    /// The plan's value.
    pub fn method(self) -> crate::metrics::PercentileMethod {
        match self {
            PercentileMethodArg::Linear => crate::metrics::PercentileMethod::Linear,
            PercentileMethodArg::NearestRank => crate::metrics::PercentileMethod::NearestRank,
        }
    }
}

/// Flags of `ttftbench profile` (GenAI-Perf's names and aliases).
#[derive(Debug, Args, Clone)]
pub struct ProfileArgs {
    /// Model name as the server knows it.
    #[arg(short = 'm', long = "model")]
    pub model: String,

    /// Legacy GenAI-Perf service kind; `openai` implies `--endpoint-type chat` unless one is given.
    #[arg(long = "service-kind", value_enum)]
    pub service_kind: Option<ServiceKindArg>,

    /// Which API to drive.
    #[arg(long = "endpoint-type", value_enum)]
    pub endpoint_type: Option<EndpointTypeArg>,

    /// Custom endpoint path (e.g. `v1/chat/completions`), overriding the endpoint type's default.
    #[arg(long = "endpoint")]
    pub endpoint: Option<String>,

    /// Input layout of a Triton LLM model.
    #[arg(long = "backend", value_enum)]
    pub backend: Option<BackendArg>,

    /// Server address, with or without scheme (default localhost:8001 for kserve, localhost:8000 otherwise).
    #[arg(short = 'u', long = "url")]
    pub url: Option<String>,

    /// Stream responses (required for TTFT, TTST and ITL).
    #[arg(long = "streaming")]
    pub streaming: bool,

    /// Number of unique prompts in the dataset (reused round-robin). Alone, also the number of
    /// requests measured per level.
    #[arg(long = "num-prompts", alias = "num-dataset-entries")]
    pub num_prompts: Option<u32>,

    /// Requests measured per level.
    #[arg(long = "request-count", alias = "num-requests")]
    pub request_count: Option<u64>,

    /// Mean input (prompt) length in tokens.
    #[arg(long = "synthetic-input-tokens-mean", alias = "isl")]
    pub synthetic_input_tokens_mean: Option<u32>,

    /// Standard deviation of the input length in tokens.
    #[arg(long = "synthetic-input-tokens-stddev", default_value_t = 0)]
    pub synthetic_input_tokens_stddev: u32,

    /// Mean output length in tokens, sent as the API's max-tokens field.
    #[arg(long = "output-tokens-mean", alias = "osl")]
    pub output_tokens_mean: Option<u32>,

    /// Standard deviation of the output length in tokens.
    #[arg(long = "output-tokens-stddev", default_value_t = 0)]
    pub output_tokens_stddev: u32,

    /// Ask the server to produce exactly the sampled output length (min_tokens / ignore_eos).
    #[arg(long = "output-tokens-mean-deterministic")]
    pub output_tokens_mean_deterministic: bool,

    /// Closed-loop concurrency: `N`, `start:end[:step]` (inclusive; powers of two without a step)
    /// or a list `1,4,8,16,32`. Each value is one level of the sweep.
    #[arg(long = "concurrency")]
    pub concurrency: Option<String>,

    /// Open-loop request rate (requests/s): `R`, `start:end[:step]` (doubling without a step) or
    /// a list `5,10,20`. Each value is one level. Excludes --concurrency.
    #[arg(long = "request-rate", conflicts_with = "concurrency")]
    pub request_rate: Option<String>,

    /// Gaps between open-loop requests.
    #[arg(long = "request-distribution", value_enum, default_value = "constant")]
    pub request_distribution: DistributionArg,

    /// Shape of gamma-distributed gaps (< 1 burstier than Poisson, > 1 more regular).
    #[arg(long = "burstiness", default_value_t = 1.0)]
    pub burstiness: f64,

    /// Cap on requests in flight under --request-rate; a send that finds the cap reached leaves
    /// late, and its lag is reported.
    #[arg(long = "max-inflight", default_value_t = 1024)]
    pub max_inflight: u32,

    /// Measurement window per level (bare number: milliseconds; or 500ms, 10s, 1m): requests
    /// sent within it are measured.
    #[arg(short = 'p', long = "measurement-interval", value_parser = millis)]
    pub measurement_interval: Option<Duration>,

    /// Requests sent before measuring each level (excluded from the results).
    #[arg(
        long = "warmup-request-count",
        alias = "num-warmup-requests",
        default_value_t = 0
    )]
    pub warmup_request_count: u64,

    /// Load before measuring each level, excluded from the results (bare number: seconds).
    #[arg(long = "warmup-duration", conflicts_with = "warmup_request_count", value_parser = secs)]
    pub warmup_duration: Option<Duration>,

    /// Seconds per level: requests sent within it are measured (like --measurement-interval, in s).
    #[arg(long = "duration", conflicts_with_all = ["measurement_interval", "request_count"], value_parser = secs)]
    pub duration: Option<Duration>,

    /// Send-lag p99 above which an open-loop level is marked not trustworthy (bare number: ms).
    #[arg(long = "max-send-lag", default_value = "2ms", value_parser = millis)]
    pub max_send_lag: Duration,

    /// Exit with code 1 when any level's measurement is not trustworthy.
    #[arg(long = "strict")]
    pub strict: bool,

    /// How percentiles are computed: numpy's linear interpolation (GenAI-Perf's) or perf_analyzer's nearest rank.
    #[arg(long = "percentile-method", value_enum, default_value = "linear")]
    pub percentile_method: PercentileMethodArg,

    /// Time per row of each level's timeline.csv (bare number: seconds).
    #[arg(long = "timeline-interval", default_value = "1s", value_parser = secs)]
    pub timeline_interval: Duration,

    /// GenAI-Perf's raw per-request export (`profile_export.json`, `inputs.json`) in each level
    /// directory, which NVIDIA's own parser and users' scripts read; `none` skips it (it costs
    /// a copy of every response).
    #[arg(long = "raw-export", value_enum, default_value = "full")]
    pub raw_export: RawExportArg,

    /// Where artifacts go: files directly in it for one level, a subdirectory per level for a sweep.
    /// Placeholders: `{timestamp}` (local time, YYYYMMDD_HHMMSS, one per invocation; `_2` is added
    /// if an earlier run in the same second took it), `{model}`,
    /// `{concurrency}`/`{rate}`/`{level}` (per level), e.g. `./bench/{timestamp}/c{concurrency}`.
    #[arg(long = "artifact-dir")]
    pub artifact_dir: Option<PathBuf>,

    /// Hugging Face `tokenizer.json` to count tokens with (default: built-in GPT-2).
    #[arg(long = "tokenizer")]
    pub tokenizer: Option<PathBuf>,

    /// Seed for prompts and output lengths.
    #[arg(long = "random-seed", default_value_t = 0)]
    pub random_seed: u64,

    /// Extra HTTP header `Name: value` (repeatable); also sent on discovery and metrics calls.
    #[arg(short = 'H', long = "header")]
    pub header: Vec<String>,

    /// Extra request field `name:value` (value parsed as JSON when it is JSON) or a JSON object.
    #[arg(long = "extra-inputs")]
    pub extra_inputs: Vec<String>,

    /// Goodput objectives `metric:value` (ms for times, tokens/sec/user for per-user throughput).
    #[arg(short = 'g', long = "goodput", num_args = 1..)]
    pub goodput: Vec<String>,

    /// Service-level objective checked at the end of every level, `METRIC[.STAT] OP VALUE[unit]`
    /// (repeatable): `time_to_first_token.p99<=500ms`, `queue_share<=50%`,
    /// `request_throughput>=10`, `error_rate<1%`. Any failure makes the exit code 1.
    #[arg(long = "slo")]
    pub slo: Vec<String>,

    /// Knee detection: the knee is the first level beyond which throughput grows by less than
    /// this while p99 latency rises by more.
    #[arg(long = "knee-min-gain", default_value = "10%")]
    pub knee_min_gain: String,

    /// JSONL prompts, one `{"text": ...}` per line, instead of synthetic ones.
    #[arg(long = "input-file")]
    pub input_file: Option<PathBuf>,

    /// Prometheus endpoint of the server (default: port 8002 of the target host, if it answers).
    #[arg(long = "server-metrics-url", alias = "server-metrics-urls")]
    pub server_metrics_url: Option<String>,

    /// Count output tokens from the server's usage report instead of the tokenizer.
    #[arg(long = "use-server-token-count")]
    pub use_server_token_count: bool,

    /// API key sent as `Authorization: Bearer` (never written to artifacts or logs).
    #[arg(long = "api-key", env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Per-request timeout (bare number: seconds); a timed-out request counts as an error of kind
    /// `timeout`.
    #[arg(long = "request-timeout", default_value = "600s", value_parser = secs)]
    pub request_timeout: Duration,

    /// Largest server-sent event, streamed message or whole response body accepted (bytes, or
    /// with a KiB/MiB/GiB suffix); a response past it ends as a `response_too_large` error
    /// instead of being buffered.
    #[arg(long = "max-event-size", default_value = "4MiB", value_parser = parse_size)]
    pub max_event_size: usize,

    /// JUnit report, JSON stdout, Pushgateway.
    #[command(flatten)]
    pub outputs: OutputArgs,

    /// More detail on the console.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// Print only the results table.
    #[arg(long = "quiet")]
    pub quiet: bool,
}

/// `--output`: what stdout carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormatArg {
    /// The console tables.
    Text,
    /// One JSON object per finished level, then a summary object; all else on stderr.
    Json,
}

/// Result channels of `profile` and `perf` besides the artifact files.
#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Write a JUnit XML report here: one test case per --slo objective and per level's validity
    /// verdict, for CI test reporters (GitLab, Jenkins, GitHub).
    #[arg(long = "junit")]
    pub junit: Option<PathBuf>,
    /// `json`: one JSON object per finished level and a final summary object on stdout (for
    /// `| jq`); console text goes to stderr.
    #[arg(long = "output", value_enum, default_value = "text")]
    pub output: OutputFormatArg,
    /// Push each level's key metrics to this Prometheus Pushgateway (e.g.
    /// http://pushgateway:9091) when it ends; a failed push is a warning.
    #[arg(long = "push-gateway")]
    pub push_gateway: Option<String>,
}

/// `-i`: perf_analyzer's protocol flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    /// KServe v2 gRPC.
    Grpc,
    /// KServe v2 HTTP/REST.
    Http,
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

/// Flags of `ttftbench perf` (perf_analyzer's names, short forms and defaults).
#[derive(Debug, Args, Clone)]
pub struct PerfArgs {
    /// Model name.
    #[arg(short = 'm', long = "model-name", visible_alias = "model")]
    pub model: String,
    /// Model version (default: the server's choice).
    #[arg(short = 'x', long = "model-version")]
    pub model_version: Option<String>,
    /// Server address, with or without scheme (default localhost:8001 for gRPC, :8000 for HTTP).
    #[arg(short = 'u', long = "url")]
    pub url: Option<String>,
    /// Protocol. Without -i the server is asked: gRPC when the address answers gRPC, else HTTP
    /// (perf_analyzer defaults to HTTP, which fails against Triton's gRPC port 8001).
    #[arg(short = 'i', long = "protocol", value_enum, ignore_case = true)]
    pub protocol: Option<ProtocolArg>,
    /// Service kind; only Triton (KServe v2) is supported by this mode.
    #[arg(long = "service-kind", default_value = "triton")]
    pub service_kind: String,
    /// Batch size of each request (the model's leading dimension).
    #[arg(short = 'b', long = "batch-size", default_value_t = 1)]
    pub batch_size: u32,
    /// Shape of an input with variable dimensions: `NAME:d1,d2,...` (repeatable).
    #[arg(long = "shape")]
    pub shape: Vec<String>,
    /// `random`, `zero`, or a JSON file in perf_analyzer's input-data format (repeatable).
    #[arg(long = "input-data")]
    pub input_data: Vec<String>,
    /// Length of random strings for BYTES inputs.
    #[arg(long = "string-length", default_value_t = 128)]
    pub string_length: usize,
    /// Fixed string for BYTES inputs instead of random ones.
    #[arg(long = "string-data")]
    pub string_data: Option<String>,
    /// Concurrency sweep `start[:end[:step]]`, inclusive and linear (`1:32:2` = 1, 3, ..., 31).
    #[arg(long = "concurrency-range")]
    pub concurrency_range: Option<String>,
    /// Request-rate sweep `start[:end[:step]]` (requests/s), inclusive and linear.
    #[arg(long = "request-rate-range", conflicts_with = "concurrency_range")]
    pub request_rate_range: Option<String>,
    /// Gaps between requests under --request-rate-range.
    #[arg(long = "request-distribution", value_enum, default_value = "constant")]
    pub request_distribution: DistributionArg,
    /// Ramp concurrency `start[:end[:step]]`: begin at start, add step requests each time the
    /// latest requests have received --request-period responses, up to end; measured once,
    /// without stability windows. With --request-rate-range, the rate drives the load and this
    /// caps requests in flight at end.
    #[arg(long = "periodic-concurrency-range")]
    pub periodic_concurrency_range: Option<String>,
    /// Responses each request of a periodic-concurrency step waits for before the next step.
    #[arg(long = "request-period", default_value_t = 10)]
    pub request_period: u32,
    /// Measurement window (bare number: milliseconds); windows last 1.2 × this, as in
    /// perf_analyzer.
    #[arg(short = 'p', long = "measurement-interval", default_value = "5000", value_parser = millis)]
    pub measurement_interval: Duration,
    /// How windows end.
    #[arg(long = "measurement-mode", value_enum, default_value = "time_windows")]
    pub measurement_mode: MeasurementModeArg,
    /// Completed requests per window in count_windows mode.
    #[arg(long = "measurement-request-count", default_value_t = 50)]
    pub measurement_request_count: u64,
    /// Measure exactly this many requests in one window (no stability loop).
    #[arg(long = "request-count")]
    pub request_count: Option<u64>,
    /// Stability: the last 3 windows' throughput and latency within this percentage.
    #[arg(short = 's', long = "stability-percentage", default_value_t = 10.0)]
    pub stability_percentage: f64,
    /// Most windows per level before giving up on stability.
    #[arg(short = 'r', long = "max-trials", default_value_t = 10)]
    pub max_trials: u32,
    /// Stabilize on, and report, this latency percentile instead of the average.
    #[arg(long = "percentile")]
    pub percentile: Option<u32>,
    /// How percentiles are computed: perf_analyzer's nearest rank, or numpy's linear interpolation.
    #[arg(long = "percentile-method", value_enum, default_value = "nearest-rank")]
    pub percentile_method: PercentileMethodArg,
    /// Stop the sweep once a level's latency passes this (bare number: milliseconds; 0 = no limit).
    #[arg(short = 'l', long = "latency-threshold", default_value = "0", value_parser = millis)]
    pub latency_threshold: Duration,
    /// Requests sent before measuring each level.
    #[arg(long = "warmup-request-count", default_value_t = 0)]
    pub warmup_request_count: u64,
    /// Decoupled models: stream responses over gRPC (time to first response, response throughput).
    #[arg(long = "streaming")]
    pub streaming: bool,
    /// Accepted for perf_analyzer compatibility: requests are always asynchronous here.
    #[arg(short = 'a', long = "async")]
    pub async_mode: bool,
    /// Accepted for perf_analyzer compatibility: requests are always asynchronous here, and
    /// concurrency N keeps exactly N in flight either way.
    #[arg(long = "sync")]
    pub sync_mode: bool,
    /// Accepted for perf_analyzer compatibility: the async runtime sizes itself.
    #[arg(long = "max-threads")]
    pub max_threads: Option<u32>,
    /// Request parameter `name:value[:type]` (type bool, int, string; inferred when omitted).
    #[arg(long = "request-parameter")]
    pub request_parameter: Vec<String>,
    /// Write perf_analyzer's latency report CSV here.
    #[arg(short = 'f', long = "latency-report-file", visible_alias = "file")]
    pub latency_report_file: Option<std::path::PathBuf>,
    /// Write perf_analyzer's raw per-request export (JSON: every request's inputs, timestamps and
    /// output tensors, one experiment per level) here.
    #[arg(long = "profile-export-file")]
    pub profile_export_file: Option<std::path::PathBuf>,
    /// Add perf_analyzer's verbose columns to the CSV; with -f, also write every measured
    /// request (send time, latency, first response, error) to <stem>.requests.jsonl beside it.
    #[arg(long = "verbose-csv")]
    pub verbose_csv: bool,
    /// One CSV row per --timeline-interval of the run (soak tests: watch drift over hours).
    #[arg(long = "timeline")]
    pub timeline: Option<std::path::PathBuf>,
    /// Time per timeline row (bare number: seconds).
    #[arg(long = "timeline-interval", default_value = "10s", value_parser = secs)]
    pub timeline_interval: Duration,
    /// HTTP header `Name: value` (repeatable); sent as gRPC metadata too, and on statistics calls.
    #[arg(short = 'H', long = "header")]
    pub header: Vec<String>,
    /// HTTP input tensor encoding.
    #[arg(long = "input-tensor-format", value_enum, default_value = "binary")]
    pub input_tensor_format: TensorFormatArg,
    /// HTTP output tensor encoding.
    #[arg(long = "output-tensor-format", value_enum, default_value = "binary")]
    pub output_tensor_format: TensorFormatArg,
    /// Prometheus endpoint for the pending-request gauge (default: port 8002 of the server, if it answers).
    #[arg(long = "metrics-url")]
    pub metrics_url: Option<String>,
    /// Per-request timeout (bare number: seconds).
    #[arg(long = "request-timeout", default_value = "600s", value_parser = secs)]
    pub request_timeout: Duration,
    /// Largest server-sent event, streamed message or whole response body accepted (bytes, or
    /// with a KiB/MiB/GiB suffix); a response past it ends as a `response_too_large` error
    /// instead of being buffered.
    #[arg(long = "max-event-size", default_value = "4MiB", value_parser = parse_size)]
    pub max_event_size: usize,
    /// Seed for random input data and schedules.
    #[arg(long = "random-seed", default_value_t = 0)]
    pub random_seed: u64,
    /// Service-level objective checked on every level, e.g. `request_latency.p99<=3ms` or
    /// `request_throughput>=8000` (infer/sec); exit code 1 when one fails (repeatable).
    #[arg(long = "slo")]
    pub slo: Vec<String>,
    /// Send-lag p99 above which an open-loop level is marked not trustworthy (bare number: ms).
    #[arg(long = "max-send-lag", default_value = "2ms", value_parser = millis)]
    pub max_send_lag: Duration,
    /// Exit with code 1 when any level's measurement is not trustworthy.
    #[arg(long = "strict")]
    pub strict: bool,
    /// Print each measurement window.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// JUnit report, JSON stdout, Pushgateway.
    #[command(flatten)]
    pub outputs: OutputArgs,
}

/// Flags of `ttftbench serve`.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Address to bind every listener to (0.0.0.0 serves every interface).
    #[arg(long = "address", default_value = "127.0.0.1")]
    pub address: std::net::IpAddr,
    /// KServe v2 HTTP + OpenAI port (0 = any free port, printed).
    #[arg(long = "http-port", default_value_t = 8000)]
    pub http_port: u16,
    /// KServe v2 gRPC port (0 = any free port, printed).
    #[arg(long = "grpc-port", default_value_t = 8001)]
    pub grpc_port: u16,
    /// Prometheus metrics port (0 = any free port, printed); also serves /dcgm/metrics.
    #[arg(long = "metrics-port", default_value_t = 8002)]
    pub metrics_port: u16,
    /// Which engine's metric families /metrics serves: triton, trtllm, vllm, sglang, tgi.
    #[arg(
        long = "metrics-style",
        default_value = "triton",
        value_parser = clap::builder::TypedValueParser::try_map(
            clap::builder::PossibleValuesParser::new(
                crate::server_metrics::ServerKind::ALL.map(|k| k.name())
            ),
            |s| s.parse::<crate::server_metrics::ServerKind>()
        )
    )]
    pub metrics_style: crate::server_metrics::ServerKind,
    /// Engine timing and faults.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Timing model and fault injection of the simulated server. Defaults are the simulator's own
/// ([`crate::sim::EngineConfig::default`]).
#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Batch slots: sequences decoded together; more requests wait in the queue.
    #[arg(long = "max-batch", default_value_t = crate::sim::EngineConfig::default().max_batch)]
    pub max_batch: usize,
    /// Fixed cost of a prefill, in microseconds.
    #[arg(long = "prefill-base-us", default_value_t = crate::sim::EngineConfig::default().prefill_base_us)]
    pub prefill_base_us: u64,
    /// Prefill cost per input token, in microseconds.
    #[arg(long = "prefill-us-per-token", default_value_t = crate::sim::EngineConfig::default().prefill_us_per_token)]
    pub prefill_us_per_token: u64,
    /// Fixed cost of a decode step, in microseconds.
    #[arg(long = "decode-base-us", default_value_t = crate::sim::EngineConfig::default().decode_base_us)]
    pub decode_base_us: u64,
    /// Extra decode-step cost per running sequence, in microseconds.
    #[arg(long = "decode-us-per-seq", default_value_t = crate::sim::EngineConfig::default().decode_us_per_seq)]
    pub decode_us_per_seq: u64,
    /// KV-cache blocks per model (0 = unlimited: never blocks admission or preempts).
    #[arg(long = "kv-blocks", default_value_t = crate::sim::EngineConfig::default().kv_blocks)]
    pub kv_blocks: u32,
    /// Tokens per KV-cache block.
    #[arg(long = "kv-block-size", default_value_t = crate::sim::EngineConfig::default().kv_block_size)]
    pub kv_block_size: u32,
    /// Reuse cached prompt blocks: shared prefixes skip that part of prefill.
    #[arg(long = "prefix-caching")]
    pub prefix_caching: bool,
    /// Queue limit (0 = unbounded); beyond it requests are rejected (HTTP 503 / RESOURCE_EXHAUSTED).
    #[arg(long = "max-queue", default_value_t = 0)]
    pub max_queue: usize,
    /// No timing at all: tokens as fast as the transport takes them (for benchmarking clients).
    #[arg(long = "instant")]
    pub instant: bool,
    /// Share of requests answered with a server error.
    #[arg(long = "fault-error-rate", default_value_t = 0.0)]
    pub fault_error_rate: f64,
    /// Share of streams cut off half-way.
    #[arg(long = "fault-cut-rate", default_value_t = 0.0)]
    pub fault_cut_rate: f64,
    /// Share of requests that stall before their first token.
    #[arg(long = "fault-stall-rate", default_value_t = 0.0)]
    pub fault_stall_rate: f64,
    /// How long a stalled request stalls, in milliseconds.
    #[arg(long = "fault-stall-ms", default_value_t = 1000)]
    pub fault_stall_ms: u64,
    /// Share of streams with one malformed event.
    #[arg(long = "fault-malformed-rate", default_value_t = 0.0)]
    pub fault_malformed_rate: f64,
    /// Answer every inference request with 503 / UNAVAILABLE.
    #[arg(long = "fault-unavailable")]
    pub fault_unavailable: bool,
    /// When the outage of --fault-outage-ms begins, in milliseconds after the server started.
    #[arg(long = "fault-outage-after-ms", default_value_t = 0)]
    pub fault_outage_after_ms: u64,
    /// An outage this long (ms): HTTP and gRPC listeners closed, open connections reset, then
    /// back on the same ports (0 = none).
    #[arg(long = "fault-outage-ms", default_value_t = 0)]
    pub fault_outage_ms: u64,
    /// Share of requests refused as rate-limited (HTTP 429 / gRPC RESOURCE_EXHAUSTED) with a
    /// Retry-After.
    #[arg(long = "fault-rate-limit-rate", default_value_t = 0.0)]
    pub fault_rate_limit_rate: f64,
    /// Share of requests refused as unavailable (HTTP 503 / gRPC UNAVAILABLE) with a Retry-After.
    #[arg(long = "fault-unavailable-rate", default_value_t = 0.0)]
    pub fault_unavailable_rate: f64,
    /// The Retry-After (seconds) sent with rate-limited and unavailable answers.
    #[arg(long = "fault-retry-after", default_value_t = 1)]
    pub fault_retry_after: u64,
    /// Share of gRPC calls reset (RST_STREAM) after their first response.
    #[arg(long = "fault-reset-rate", default_value_t = 0.0)]
    pub fault_reset_rate: f64,
    /// Send GOAWAY on every gRPC connection this many milliseconds after it opened (0 = never).
    #[arg(long = "fault-goaway-ms", default_value_t = 0)]
    pub fault_goaway_ms: u64,
    /// Require `Authorization: Bearer KEY` on the OpenAI routes.
    #[arg(
        long = "require-api-key",
        env = "TTFTBENCH_SIM_API_KEY",
        hide_env_values = true
    )]
    pub require_api_key: Option<String>,
    /// Restrict the statistics API to requests with header `triton-access-token: TOKEN`.
    #[arg(
        long = "access-token",
        env = "TTFTBENCH_SIM_ACCESS_TOKEN",
        hide_env_values = true
    )]
    pub access_token: Option<String>,
}

/// Flags of `ttftbench demo`.
#[derive(Debug, Args, Clone)]
pub struct DemoArgs {
    /// Concurrency levels of the sweep.
    #[arg(long = "concurrency", default_value = "1,2,4,8,16,32")]
    pub concurrency: String,
    /// Where artifacts go.
    #[arg(long = "artifact-dir", default_value = "artifacts/demo")]
    pub artifact_dir: PathBuf,
    /// Print only the results table.
    #[arg(long = "quiet")]
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
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Knee detection fraction (see `profile --knee-min-gain`).
    #[arg(long = "knee-min-gain", default_value = "10%")]
    pub knee_min_gain: String,
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
    /// Largest allowed fall of request and output-token throughput, e.g. `5%`.
    #[arg(long = "max-throughput-drop")]
    pub max_throughput_drop: Option<String>,
    /// Largest allowed rise of any p99 latency (TTFT, ITL, request latency), e.g. `10%`.
    #[arg(long = "max-p99-increase")]
    pub max_p99_increase: Option<String>,
    /// Per-metric limit `METRIC[.STAT]:(+|-)LIMIT` (repeatable): `time_to_first_token.p99:+10%`,
    /// `request_throughput:-5%`, `time_to_first_token.p99:+50ms`, `queue_share:+5pp`.
    #[arg(long = "threshold")]
    pub threshold: Vec<String>,
    /// Output format.
    #[arg(long = "format", value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// Write the output to this file instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Write a JUnit XML report here: one test case per limit on each metric of each level.
    #[arg(long = "junit")]
    pub junit: Option<PathBuf>,
}

/// Flags of `ttftbench doctor` (the target flags of `profile`).
#[derive(Debug, Args, Clone)]
pub struct DoctorArgs {
    /// Model name as the server knows it.
    #[arg(short = 'm', long = "model")]
    pub model: String,
    /// Server address (default localhost:8001 for kserve, localhost:8000 otherwise).
    #[arg(short = 'u', long = "url")]
    pub url: Option<String>,
    /// Which API to check.
    #[arg(long = "endpoint-type", value_enum)]
    pub endpoint_type: Option<EndpointTypeArg>,
    /// Legacy GenAI-Perf service kind (`openai` means `--endpoint-type chat`).
    #[arg(long = "service-kind", value_enum)]
    pub service_kind: Option<ServiceKindArg>,
    /// Custom endpoint path, as for `profile`.
    #[arg(long = "endpoint")]
    pub endpoint: Option<String>,
    /// Input layout of a Triton LLM model.
    #[arg(long = "backend", value_enum)]
    pub backend: Option<BackendArg>,
    /// Extra header `Name: value` (repeatable).
    #[arg(short = 'H', long = "header")]
    pub header: Vec<String>,
    /// API key sent as `Authorization: Bearer` (never printed).
    #[arg(long = "api-key", env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Prometheus endpoint (default: port 8002 of the target host).
    #[arg(long = "server-metrics-url")]
    pub server_metrics_url: Option<String>,
    /// Output tokens to ask for in the test request.
    #[arg(long = "output-tokens", default_value_t = 12)]
    pub output_tokens: u32,
}

/// A duration flag whose bare numbers are milliseconds (`500`, `500ms`, `2s`, `1m`).
fn millis(raw: &str) -> Result<Duration, String> {
    crate::plan::values::parse_duration("", raw, Duration::from_millis(1)).map_err(|e| e.0)
}

/// A duration flag whose bare numbers are seconds (`30`, `500ms`, `2s`, `1m`).
fn secs(raw: &str) -> Result<Duration, String> {
    crate::plan::values::parse_duration("", raw, Duration::from_secs(1)).map_err(|e| e.0)
}

/// A byte size: a number, optionally followed by `KiB`, `MiB` or `GiB` (or `K`, `M`, `G`).
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 4194304 or 4MiB)"))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(format!("'{s}': unknown unit (use KiB, MiB or GiB)")),
    };
    match n.checked_mul(mult) {
        Some(v) if v > 0 => Ok(v),
        _ => Err(format!("'{s}' must be at least 1 byte and fit in memory")),
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
