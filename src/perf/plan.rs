//! What `ttftbench perf` was asked, resolved once from perf_analyzer's flags.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::error::{UsageError, usage};
use crate::load::{LevelLength, Stimulus, WindowRule};
use crate::plan::values::Levels;
use crate::plan::{LevelPart, ShardPlan};
use crate::server_metrics::MetricsSource;
use crate::target::Target;

/// Which wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// KServe v2 gRPC.
    #[value(help = "KServe v2 gRPC")]
    Grpc,
    /// KServe v2 HTTP.
    #[value(help = "KServe v2 HTTP/REST")]
    Http,
}

/// Where input tensor values come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DataSource {
    /// Random values, generated once and reused (perf_analyzer's default).
    Random,
    /// Zeros.
    Zero,
    /// perf_analyzer input-data JSON files (`{"data": [{"INPUT": [...]}, ...]}`), or JSON lines of
    /// such objects; entries are sent round-robin.
    Files(Vec<PathBuf>),
}

/// A request parameter's value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// A number with a fraction.
    Double(f64),
    /// `string`.
    Str(String),
}

/// A validated `ttftbench perf` run.
#[derive(Debug, Clone, Serialize)]
pub struct PerfPlan {
    /// Server, model, headers, streaming.
    pub target: Target,
    /// Protocol, or `None` to detect it from the server.
    pub protocol: Option<Protocol>,
    /// Model version ("" = server's choice).
    pub model_version: String,
    /// Batch size.
    pub batch: u32,
    /// Shapes for variable dimensions.
    pub shapes: Vec<(String, Vec<i64>)>,
    /// Input data.
    pub data: DataSource,
    /// Random string length for BYTES inputs.
    pub string_length: usize,
    /// Fixed string for BYTES inputs.
    pub string_data: Option<String>,
    /// Load levels in order.
    pub levels: Vec<Stimulus>,
    /// Whether the concurrency range is open-ended (`end` 0: until the latency threshold).
    pub unbounded: bool,
    /// Window rule.
    pub windows: WindowRule,
    /// Stability tolerance as a fraction (0.10 = 10 %).
    pub stability: f64,
    /// Most windows per level.
    pub max_trials: u32,
    /// Latency percentile to stabilize on and report, instead of the average.
    pub percentile: Option<u32>,
    /// How percentiles are computed (`--percentile-method`, perf_analyzer's nearest rank by default).
    pub percentile_method: crate::metrics::PercentileMethod,
    /// Stop the sweep once latency passes this (ms; 0 = none).
    pub latency_threshold_ms: u64,
    /// Warm-up requests per level.
    pub warmup: u64,
    /// Request parameters.
    pub request_parameters: Vec<(String, ParamValue)>,
    /// `-f` file.
    pub report_file: Option<PathBuf>,
    /// `--verbose-csv`.
    pub verbose_csv: bool,
    /// With `--verbose-csv` and `-f`: every measured request, one JSON line each (the format of
    /// `profile`'s `requests.jsonl`), in `<stem>.requests.jsonl` beside the report.
    pub requests_log: Option<PathBuf>,
    /// `--profile-export-file`: perf_analyzer's raw per-request export.
    pub profile_export: Option<PathBuf>,
    /// Timeline file and its row interval.
    pub timeline: Option<(PathBuf, Duration)>,
    /// HTTP: binary input tensors.
    pub binary_inputs: bool,
    /// HTTP: binary output tensors.
    pub binary_outputs: bool,
    /// Prometheus endpoint.
    pub metrics: MetricsSource,
    /// The engine whose metrics to read (`--server-kind`); detected when `None`.
    pub server_kind: Option<crate::server_metrics::ServerKind>,
    /// A DCGM exporter's page (`--gpu-metrics-url`).
    pub gpu_metrics_url: Option<String>,
    /// Per-request timeout.
    #[serde(skip)]
    pub request_timeout: Duration,
    /// Random seed.
    pub seed: u64,
    /// `--request-cancellation-rate` and `--request-cancellation-delay`, as `profile` plans them.
    #[serde(flatten)]
    pub request_cancellation: crate::plan::RequestCancellation,
    /// `--slo` objectives, checked on every level.
    pub slos: Vec<crate::metrics::Slo>,
    /// Send-lag p99 (ms) above which an open-loop level is not trustworthy.
    pub max_send_lag_ms: f64,
    /// Untrustworthy levels make the run fail.
    pub strict: bool,
    /// A level with a larger share of failed requests fails the run (`--max-error-rate`).
    pub max_error_rate: f64,
    /// Print every window.
    pub verbose: bool,
    /// The command line, secrets redacted.
    pub command_line: String,
    /// Where results go besides the console and `-f` (JUnit, JSON stdout, Pushgateway, the
    /// GitHub step summary).
    #[serde(skip)]
    pub outputs: crate::plan::outputs::Outputs,
    /// The run's flags as a config file (`run.toml` beside each level's files; empty: none).
    #[serde(skip)]
    pub run_config: String,
    /// `--artifact-dir`: each level's files in a directory of its own below this one.
    pub artifact_dir: Option<PathBuf>,
    /// Which part of a run of several processes this is, and when its levels start.
    pub shard: ShardPlan,
    /// `--repeat N --repeat-pause S`.
    pub repeat: crate::plan::Repeat,
}

/// Fields of a [`PerfPlan`]'s JSON that differ between the shards of one run (paths, the
/// command line, console detail) and are left out of its identity.
pub const PER_PROCESS_FIELDS: [&str; 8] = [
    "shard",
    "artifact_dir",
    "command_line",
    "report_file",
    "requests_log",
    "profile_export",
    "timeline",
    "verbose",
];

impl PerfPlan {
    /// Which requests the client cancels, and when; `None` when it cancels none.
    pub fn cancellation(&self) -> Option<crate::load::Cancellation> {
        self.request_cancellation.chooser(self.seed)
    }

    /// The plan as recorded in every level's JSON (`input_config`).
    pub fn input_config(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The plan's identity, equal on every shard of one run (see [`crate::plan::shard::plan_id`]).
    pub fn plan_id(&self) -> String {
        crate::plan::shard::plan_id(&self.input_config(), &PER_PROCESS_FIELDS)
    }

    /// Level `index` of the plan (`whole`) as this process runs it: its part of the load, of the
    /// request counts (`--request-count`, count windows, warm-up) and its start. Time windows
    /// are not divided: shards measure them together.
    pub fn level_part(&self, index: usize, whole: Stimulus) -> LevelPart {
        let stop = match self.windows {
            WindowRule::Requests(n) | WindowRule::Count(n) => LevelLength::Requests(n),
            WindowRule::Looks(l) => LevelLength::Requests(l.cap),
            WindowRule::Time(d) | WindowRule::Once(d) => LevelLength::Window(d),
        };
        let warmup = (self.warmup > 0).then_some(LevelLength::Requests(self.warmup));
        self.shard.part(index as u32, whole, stop, warmup)
    }

    /// The longest a level can take when the plan fixes it, for the slot between level starts:
    /// `-r` time windows (every shard measures all of them), or the one window of a periodic
    /// run; unknown with a warm-up request count or request-counted windows.
    pub fn level_length(&self) -> Option<Duration> {
        if self.warmup > 0 {
            return None;
        }
        match self.windows {
            WindowRule::Time(w) => Some(w * self.max_trials),
            WindowRule::Once(d) => Some(d),
            WindowRule::Requests(_) | WindowRule::Count(_) | WindowRule::Looks(_) => None,
        }
    }

    /// Which metrics pages the server probe reads.
    pub fn probe_config(&self) -> crate::server_metrics::ProbeConfig {
        crate::server_metrics::ProbeConfig {
            metrics: self.metrics.clone(),
            kind: self.server_kind,
            gpu_url: self.gpu_metrics_url.clone(),
            target_origin: self.target.origin(),
        }
    }
}

/// perf_analyzer's refusal of `--streaming` over HTTP (KServe's HTTP `/infer` answers once; only
/// gRPC `ModelStreamInfer` streams a decoupled model's responses).
pub const STREAMING_NEEDS_GRPC: &str = "--streaming is only allowed with the gRPC protocol (-i grpc, Triton's port 8001): HTTP /infer answers each request once";

/// Windows at least this long get an automatic timeline next to the `-f` file.
pub const AUTO_TIMELINE_WINDOW: Duration = Duration::from_secs(60);

/// `v2/models/{m}[/versions/{v}]/infer`.
pub fn infer_path(model: &str, version: &str) -> String {
    if version.is_empty() {
        format!("v2/models/{model}/infer")
    } else {
        format!("v2/models/{model}/versions/{version}/infer")
    }
}

/// `NAME:d1,d2,...`
pub fn parse_shape(raw: &str) -> Result<(String, Vec<i64>), UsageError> {
    let (name, dims) = raw
        .rsplit_once(':')
        .filter(|(n, _)| !n.is_empty())
        .ok_or_else(|| {
            UsageError(format!(
                "--shape {raw}: expected NAME:d1,d2,... (e.g. images:3,640,640)"
            ))
        })?;
    let dims = dims
        .split(',')
        .map(|d| {
            d.trim()
                .parse::<i64>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| {
                    UsageError(format!("--shape {raw}: '{d}' is not a positive dimension"))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((name.to_string(), dims))
}

pub fn parse_data(values: &[String]) -> Result<DataSource, UsageError> {
    match values {
        [] => Ok(DataSource::Random),
        [one] if one == "random" => Ok(DataSource::Random),
        [one] if one == "zero" => Ok(DataSource::Zero),
        many => {
            if many.iter().any(|v| v == "random" || v == "zero") {
                return usage("--input-data: 'random' or 'zero' cannot be combined with files");
            }
            let paths: Vec<PathBuf> = many.iter().map(PathBuf::from).collect();
            if let Some(missing) = paths.iter().find(|p| !p.exists()) {
                return usage(format!(
                    "--input-data {}: no such file (use random, zero, or a JSON file in perf_analyzer's input-data format)",
                    missing.display()
                ));
            }
            Ok(DataSource::Files(paths))
        }
    }
}

/// `dir/stem.ext` → `dir/stem.{suffix}`: files that belong with the `-f` report.
/// `<stem>.<suffix>` beside the `-f` report.
pub fn sibling(report: &std::path::Path, suffix: &str) -> PathBuf {
    let stem = report
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "perf".into());
    report.with_file_name(format!("{stem}.{suffix}"))
}

/// `name:value[:type]`; the type is inferred from the value when omitted.
pub fn parse_param(raw: &str) -> Result<(String, ParamValue), UsageError> {
    let mut parts = raw.splitn(3, ':');
    let name = parts.next().unwrap_or_default().trim();
    let value = parts.next();
    let ty = parts.next();
    let (Some(value), false) = (value, name.is_empty()) else {
        return usage(format!(
            "--request-parameter {raw}: expected name:value[:type] (type bool, int or string)"
        ));
    };
    let bad = |t: &str| {
        UsageError(format!(
            "--request-parameter {raw}: '{value}' is not a valid {t}"
        ))
    };
    let v = match ty.map(str::trim) {
        Some("bool") => ParamValue::Bool(value.trim().parse().map_err(|_| bad("bool"))?),
        Some("int") => ParamValue::Int(value.trim().parse().map_err(|_| bad("int"))?),
        Some("string") => ParamValue::Str(value.to_string()),
        Some("double") | Some("float") => {
            ParamValue::Double(value.trim().parse().map_err(|_| bad("number"))?)
        }
        Some(other) => {
            return usage(format!(
                "--request-parameter {raw}: unknown type '{other}' (bool, int, string)"
            ));
        }
        None => {
            let t = value.trim();
            if let Ok(b) = t.parse::<bool>() {
                ParamValue::Bool(b)
            } else if let Ok(i) = t.parse::<i64>() {
                ParamValue::Int(i)
            } else if let Ok(f) = t.parse::<f64>() {
                ParamValue::Double(f)
            } else {
                ParamValue::Str(value.to_string())
            }
        }
    };
    Ok((name.to_string(), v))
}

/// perf_analyzer's `start[:end[:step]]` (integers; end omitted = start; step default 1).
pub fn parse_range_u32(raw: &str, flag: &str) -> Result<(u32, u32, u32), UsageError> {
    range_form(raw, flag)?;
    let parts: Vec<&str> = raw.split(':').collect();
    let num = |s: &str| -> Result<u32, UsageError> {
        s.trim().parse().map_err(|_| {
            UsageError(if s.trim().starts_with('-') {
                format!("{flag} {raw}: values must be positive ('{s}' is not)")
            } else {
                format!("{flag} {raw}: '{s}' is not a whole number")
            })
        })
    };
    let (start, end, step) = match parts.as_slice() {
        [a] => (num(a)?, None, 1),
        [a, b] => (num(a)?, Some(num(b)?), 1),
        [a, b, c] => (num(a)?, Some(num(b)?), num(c)?),
        _ => return usage(format!("{flag} {raw}: expected start[:end[:step]]")),
    };
    if start == 0 {
        return usage(format!("{flag} {raw}: start must be at least 1"));
    }
    if step == 0 {
        return usage(format!(
            "{flag} {raw}: the step is 0; give a step of at least 1 (or leave it out: step 1)"
        ));
    }
    let end = end.unwrap_or(start);
    if end != 0 && end < start {
        return usage(format!(
            "{flag} {raw}: the end ({end}) is below the start ({start})"
        ));
    }
    Ok((start, end, step))
}

/// `start, start+step, …, end` (inclusive).
pub fn linear(start: u32, end: u32, step: u32) -> Result<Vec<u32>, UsageError> {
    let v: Vec<u32> = (start..=end).step_by(step as usize).collect();
    if v.len() > 1000 {
        return usage("too many levels (at most 1000)");
    }
    Ok(v)
}

/// Refuses a list (`1,4,8`: `profile`'s form) where perf_analyzer takes a range.
fn range_form(raw: &str, flag: &str) -> Result<(), UsageError> {
    if raw.contains(',') {
        return usage(format!(
            "{flag} {raw}: perf_analyzer's ranges are start[:end[:step]] (e.g. 1:8:2), not lists; run one level per value, or use `ttftbench profile --concurrency 1,4,8`"
        ));
    }
    Ok(())
}

/// `--request-rate-range`'s value, for clap.
pub fn rate_range_flag(flag: &str, raw: &str) -> Result<Levels<f64>, UsageError> {
    let values = parse_range_f64(raw, flag)?;
    Ok(Levels {
        values,
        text: raw.into(),
    })
}

/// perf_analyzer's `start[:end[:step]]` for request rates (linear, inclusive).
pub fn parse_range_f64(raw: &str, flag: &str) -> Result<Vec<f64>, UsageError> {
    range_form(raw, flag)?;
    let parts: Vec<&str> = raw.split(':').collect();
    let num = |s: &str| -> Result<f64, UsageError> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| UsageError(format!("{flag} {raw}: '{s}' is not a number")))?;
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            usage(format!(
                "{flag} {raw}: values must be positive ('{s}' is not)"
            ))
        }
    };
    let step = |s: &str| {
        num(s).map_err(|_| {
            UsageError(format!(
                "{flag} {raw}: the step is '{s}'; give a positive step (or leave it out: step 1)"
            ))
        })
    };
    let (start, end, step) = match parts.as_slice() {
        [a] => (num(a)?, None, 1.0),
        [a, b] => (num(a)?, Some(num(b)?), 1.0),
        [a, b, c] => (num(a)?, Some(num(b)?), step(c)?),
        _ => return usage(format!("{flag} {raw}: expected start[:end[:step]]")),
    };
    let end = end.unwrap_or(start);
    if end < start {
        return usage(format!(
            "{flag} {raw}: the end ({end}) is below the start ({start})"
        ));
    }
    let out: Vec<f64> = (0..=1000)
        .map(|i| start + step * f64::from(i))
        .take_while(|&v| v <= end * (1.0 + 1e-9))
        .collect();
    if out.len() > 1000 {
        return usage(format!("{flag} {raw}: too many levels (at most 1000)"));
    }
    Ok(out)
}
