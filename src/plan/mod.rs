//! What was asked, resolved: the validated, serializable [`RunPlan`], built once — from the
//! flags by the front end (`cli`), or directly by `demo`, `doctor` and tests — out of sections
//! each resolved and checked alone ([`resolve`]), from values parsed by [`values`]. Everything
//! downstream reads typed fields; no string matching after this point.

pub mod apis;
pub mod fingerprint;
pub mod outputs;
pub mod resolve;
pub mod scored;
pub mod search;
pub mod shard;
pub mod traffic;
pub mod values;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::analysis::validity::DEFAULT_MAX_SEND_LAG_MS;
use crate::load::{LevelLength, LevelLengthRule, Stimulus};
use crate::metrics::{Objective, PercentileMethod};
use crate::server_metrics::{MetricsSource, ProbeConfig, ServerKind};
use crate::target::Target;
use crate::workload::WorkloadPlan;
pub use shard::{LevelPart, ShardPlan};

/// Console verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    /// Only the table.
    Quiet,
    /// Table, per-level lines, the live view (`--ui`).
    Normal,
    /// Plus per-metric detail tables.
    Verbose,
}

/// `--request-cancellation-rate P --request-cancellation-delay D` as planned, the same for
/// `profile` and `perf` (both run it on the one engine, [`crate::load`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct RequestCancellation {
    /// The share of requests cancelled, as a percentage (0–100, as AIPerf writes it).
    #[serde(rename = "request_cancellation_rate")]
    pub rate_pct: f64,
    /// How long after its send a chosen request is cancelled.
    #[serde(rename = "request_cancellation_delay", with = "duration_secs")]
    pub delay: Duration,
}

impl RequestCancellation {
    /// Which requests the client cancels under run seed `seed`, and when; `None` when it cancels
    /// none (rate 0).
    pub fn chooser(&self, seed: u64) -> Option<crate::load::Cancellation> {
        crate::load::Cancellation::new(self.rate_pct / 100.0, self.delay, seed)
    }
}

/// A complete, validated run.
#[derive(Debug, Clone, Serialize)]
pub struct RunPlan {
    /// Where and how.
    pub target: Target,
    /// What.
    pub workload: WorkloadPlan,
    /// Load levels, run in order.
    pub levels: Vec<Stimulus>,
    /// When each level's measurement ends.
    pub stop: LevelLengthRule,
    /// Warm-up requests before each level.
    pub warmup_requests: u64,
    /// Warm-up time before each level (instead of a request count).
    #[serde(with = "opt_duration_secs")]
    pub warmup_duration: Option<Duration>,
    /// Send-lag p99 (ms) above which an open-loop level is not trustworthy.
    pub max_send_lag_ms: f64,
    /// Untrustworthy levels make the run fail.
    pub strict: bool,
    /// A level with a larger share of failed requests fails the run (`--max-error-rate`).
    pub max_error_rate: f64,
    /// How percentiles are computed (`--percentile-method`).
    pub percentile_method: PercentileMethod,
    /// Timeline row interval.
    #[serde(with = "duration_secs")]
    pub timeline_interval: Duration,
    /// Write GenAI-Perf's raw per-request export (`--raw-export full`).
    pub raw_export: bool,
    /// The names of each level's GenAI-Perf files (`--profile-export-file`).
    pub export_names: outputs::ExportNames,
    /// `--artifact-dir`, when given.
    pub artifact_dir: Option<PathBuf>,
    /// Goodput objectives.
    pub goodput: Vec<Objective>,
    /// The run's flags as a config file, written as `run.toml` beside each level's files
    /// (empty: none; see `cli::config`).
    #[serde(skip)]
    pub run_config: String,
    /// TTFT by input length (`--isl-buckets`).
    pub isl_buckets: values::IslBuckets,
    /// `--slo` objectives, checked at the end of every level.
    pub slos: Vec<crate::metrics::Slo>,
    /// `--knee-min-gain` as a fraction.
    pub knee_min_gain: f64,
    /// Server metrics endpoint.
    pub server_metrics: MetricsSource,
    /// The engine whose metrics to read (`--server-kind`); detected when `None`.
    pub server_kind: Option<ServerKind>,
    /// A DCGM exporter's page (`--gpu-metrics-url`).
    pub gpu_metrics_url: Option<String>,
    /// Count output tokens from server usage.
    pub use_server_token_count: bool,
    /// Count each prompt's input tokens with the server's own tokenizer (vLLM's `/tokenize`),
    /// once before the run (`--tokenizer-from-server`).
    pub tokenizer_from_server: bool,
    /// Per-request timeout.
    #[serde(with = "duration_secs")]
    pub request_timeout: Duration,
    /// `--request-cancellation-rate` and `--request-cancellation-delay` (flattened: the recorded
    /// plan keeps the two keys it always had).
    #[serde(flatten)]
    pub request_cancellation: RequestCancellation,
    /// Console verbosity.
    pub verbosity: Verbosity,
    /// The command line as typed, secrets redacted.
    pub command_line: String,
    /// Which part of a run of several processes this is, and when its levels start.
    pub shard: ShardPlan,
    /// `--repeat N --repeat-pause S`: how many times the whole plan runs, and the pause between.
    pub repeat: Repeat,

    /// Where results go besides the artifact directory (JUnit, JSON stdout, Pushgateway, the
    /// GitHub step summary); not part of GenAI-Perf's `input_config`.
    #[serde(skip)]
    pub outputs: outputs::Outputs,
    /// Write `report.html` for a single level too (GenAI-Perf's `--generate-plots`; a sweep
    /// always gets one).
    pub generate_plots: bool,
    /// What the user should know about how the command line was read (arguments meant for
    /// perf_analyzer that mean nothing here), said before the run starts.
    #[serde(skip)]
    pub notices: Vec<String>,
    /// `--target-moe`: each level measures until the margin of error of one statistic is
    /// reached (or a cap, or saturation) instead of a fixed count; `None`: fixed stops.
    pub target_moe: Option<crate::analysis::sequential::Rule>,
}

/// `--repeat N --repeat-pause S`: the whole plan runs `count` times in a row (each repetition a
/// complete sweep, in order, so drift shows), `pause` apart; results are combined per level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Repeat {
    /// Repetitions (1: a single run).
    pub count: u32,
    /// Pause between repetitions.
    #[serde(with = "duration_secs")]
    pub pause: Duration,
}

impl Repeat {
    /// One run, no pause.
    pub const ONCE: Repeat = Repeat {
        count: 1,
        pause: Duration::ZERO,
    };

    /// Whether the plan runs more than once.
    pub fn is_repeated(&self) -> bool {
        self.count > 1
    }
}

/// Fields of a [`RunPlan`]'s JSON that differ between the shards of one run and are left out
/// of its identity.
pub const PER_PROCESS_FIELDS: [&str; 5] = [
    "shard",
    "artifact_dir",
    "command_line",
    "verbosity",
    "generate_plots",
];

/// `Option<Duration>` as seconds or null: the plan's durations and the shard section's slot.
mod opt_duration_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &Option<std::time::Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}

mod duration_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// `--max-error-rate`'s default: a level that lost more than 5 % of its requests fails the run.
/// Its latency percentiles describe only the requests that survived (a failed request has no
/// TTFT), so past a few percent they flatter the server; below that, the odd reset of a long run
/// against a real server gets a warning line, not a failed run (`engine::outcome`).
pub const DEFAULT_MAX_ERROR_RATE: f64 = 0.05;

impl RunPlan {
    /// A plan for `target` with GenAI-Perf's defaults (the builder's start): concurrency 1,
    /// max(10, 2 × concurrency) requests per level, 100 synthetic prompts of 550 tokens, output
    /// length left to the server, metrics from port 8002 of the target's host. Change fields with
    /// struct update syntax: `RunPlan { levels, ..RunPlan::new(target) }`.
    pub fn new(target: Target) -> RunPlan {
        let server_metrics = resolve::metrics_source(None, &target)
            .unwrap_or_else(|_| MetricsSource::Auto(Vec::new()));
        RunPlan {
            target,
            workload: WorkloadPlan::default(),
            levels: vec![Stimulus::Concurrency(1)],
            stop: LevelLengthRule::Auto,
            warmup_requests: 0,
            warmup_duration: None,
            max_send_lag_ms: DEFAULT_MAX_SEND_LAG_MS,
            strict: false,
            max_error_rate: DEFAULT_MAX_ERROR_RATE,
            timeline_interval: Duration::from_secs(1),
            percentile_method: PercentileMethod::Linear,
            raw_export: false,
            export_names: outputs::ExportNames::default(),
            artifact_dir: None,
            goodput: Vec::new(),
            run_config: String::new(),
            isl_buckets: values::IslBuckets::Off,
            slos: Vec::new(),
            knee_min_gain: 0.10,
            server_metrics,
            server_kind: None,
            gpu_metrics_url: None,
            use_server_token_count: false,
            tokenizer_from_server: false,
            request_timeout: Duration::from_secs(600),
            request_cancellation: RequestCancellation::default(),
            verbosity: Verbosity::Normal,
            command_line: String::new(),
            shard: ShardPlan::default(),
            repeat: Repeat::ONCE,
            outputs: outputs::Outputs::default(),
            generate_plots: false,
            notices: Vec::new(),
            target_moe: None,
        }
    }

    /// Which requests the client cancels, and when; `None` when it cancels none.
    pub fn cancellation(&self) -> Option<crate::load::Cancellation> {
        self.request_cancellation.chooser(self.workload.seed)
    }

    /// The plan's identity, equal on every shard of one run (see [`shard::plan_id`]).
    pub fn plan_id(&self) -> String {
        shard::plan_id(&self.input_config(), &PER_PROCESS_FIELDS)
    }

    /// Level `index` as this process runs it: its part of the load, of the request counts and
    /// of the warm-up, and when it starts.
    pub fn level_part(&self, index: usize) -> LevelPart {
        let whole = self.levels[index];
        let warmup = match (self.warmup_duration, self.warmup_requests) {
            (Some(d), _) => Some(LevelLength::Window(d)),
            (None, n) if n > 0 => Some(LevelLength::Requests(n)),
            _ => None,
        };
        self.shard
            .part(index as u32, whole, self.stop.for_level(&whole), warmup)
    }

    /// One level's length when the plan fixes it (a time window after a timed warm-up or
    /// none), for the slot between level starts.
    pub fn level_length(&self) -> Option<Duration> {
        let LevelLengthRule::Fixed(LevelLength::Window(window)) = self.stop else {
            return None;
        };
        match (self.warmup_duration, self.warmup_requests) {
            (Some(d), _) => Some(d + window),
            (None, 0) => Some(window),
            (None, _) => None,
        }
    }

    /// Which metrics pages the server probe reads.
    pub fn probe_config(&self) -> ProbeConfig {
        ProbeConfig {
            metrics: self.server_metrics.clone(),
            kind: self.server_kind,
            gpu_url: self.gpu_metrics_url.clone(),
            target_origin: self.target.origin(),
        }
    }

    /// The plan as GenAI-Perf's `input_config` (secrets are never part of it).
    pub fn input_config(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}
