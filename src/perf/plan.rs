//! What `ttftbench perf` was asked, resolved once from perf_analyzer's flags.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{MeasurementModeArg, PerfArgs, ProtocolArg, TensorFormatArg};
use crate::error::UsageError;
use crate::load::Stimulus;
use crate::load::WindowRule;
use crate::server_metrics::MetricsSource;
use crate::target::{Api, Backend, Target, normalize_url, parse_header, redact_command_line};

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Which wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// KServe v2 gRPC.
    Grpc,
    /// KServe v2 HTTP.
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
    /// Timeline file and its row interval.
    pub timeline: Option<(PathBuf, Duration)>,
    /// HTTP: binary input tensors.
    pub binary_inputs: bool,
    /// HTTP: binary output tensors.
    pub binary_outputs: bool,
    /// Prometheus endpoint.
    pub metrics: MetricsSource,
    /// Per-request timeout.
    #[serde(skip)]
    pub request_timeout: Duration,
    /// Random seed.
    pub seed: u64,
    /// `--slo` objectives, checked on every level.
    pub slos: Vec<crate::metrics::Slo>,
    /// Print every window.
    pub verbose: bool,
    /// The command line, secrets redacted.
    pub command_line: String,
}

/// perf_analyzer's refusal of `--streaming` over HTTP (KServe's HTTP `/infer` answers once; only
/// gRPC `ModelStreamInfer` streams a decoupled model's responses).
pub const STREAMING_NEEDS_GRPC: &str = "--streaming is only allowed with the gRPC protocol (-i grpc, Triton's port 8001): HTTP /infer answers each request once";

/// Windows at least this long get an automatic timeline next to the `-f` file.
pub const AUTO_TIMELINE_WINDOW: Duration = Duration::from_secs(60);

impl PerfPlan {
    /// Resolves perf_analyzer's flags.
    pub fn from_args(a: &PerfArgs, argv: &[String]) -> Result<PerfPlan, UsageError> {
        if !a.service_kind.eq_ignore_ascii_case("triton") {
            return usage(format!(
                "--service-kind {}: ttftbench perf profiles KServe v2 (Triton) servers; for OpenAI-compatible LLM endpoints use `ttftbench profile --endpoint-type chat`",
                a.service_kind
            ));
        }
        if a.model.trim().is_empty() {
            return usage("-m must name a model");
        }
        let protocol = a.protocol.map(|p| match p {
            ProtocolArg::Grpc => Protocol::Grpc,
            ProtocolArg::Http => Protocol::Http,
        });
        if a.streaming && protocol == Some(Protocol::Http) {
            return usage(STREAMING_NEEDS_GRPC);
        }
        let default_url = match protocol {
            Some(Protocol::Http) => "localhost:8000",
            _ => "localhost:8001",
        };
        let (base_url, host) = normalize_url(a.url.as_deref().unwrap_or(default_url))?;
        let headers = a
            .header
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        let model_version = a.model_version.clone().unwrap_or_default();
        let target = Target {
            api: if protocol == Some(Protocol::Http) {
                Api::Infer
            } else {
                Api::Kserve
            },
            base_url,
            host: host.clone(),
            endpoint: infer_path(&a.model, &model_version),
            model: a.model.clone(),
            backend: Backend::Tensorrtllm,
            streaming: a.streaming,
            headers,
            api_key: None,
            max_event_bytes: a.max_event_size,
        };
        target.header_map()?;
        if a.batch_size == 0 {
            return usage("-b must be at least 1");
        }
        let shapes = a
            .shape
            .iter()
            .map(|s| parse_shape(s))
            .collect::<Result<Vec<_>, _>>()?;
        let data = parse_data(&a.input_data)?;
        let arrival = crate::plan::arrival_from(a.request_distribution, 1.0)?;
        let periodic = a
            .periodic_concurrency_range
            .as_deref()
            .map(|s| parse_range_u32(s, "--periodic-concurrency-range"))
            .transpose()?;
        let (mut levels, mut unbounded) = (Vec::new(), false);
        match (&a.concurrency_range, &a.request_rate_range) {
            (_, Some(r)) => {
                let cap = periodic.map_or(1024, |(_, end, _)| end.max(1));
                for rate in parse_range_f64(r, "--request-rate-range")? {
                    levels.push(Stimulus::RequestRate {
                        rate,
                        arrival,
                        max_inflight: cap,
                    });
                }
            }
            (Some(c), None) => {
                let (start, end, step) = parse_range_u32(c, "--concurrency-range")?;
                if end == 0 {
                    if a.latency_threshold == 0 {
                        return usage(
                            "--concurrency-range with end 0 sweeps until the latency threshold: give -l/--latency-threshold MS",
                        );
                    }
                    unbounded = true;
                    levels.push(Stimulus::Concurrency(start));
                } else {
                    levels.extend(
                        linear(start, end, step)?
                            .into_iter()
                            .map(Stimulus::Concurrency),
                    );
                }
            }
            (None, None) => match periodic {
                Some((start, end, step)) => levels.extend(
                    linear(start, end.max(start), step)?
                        .into_iter()
                        .map(Stimulus::Concurrency),
                ),
                None => levels.push(Stimulus::Concurrency(1)),
            },
        }
        if a.measurement_interval == 0 {
            return usage("--measurement-interval must be at least 1 ms");
        }
        let interval = Duration::from_millis(a.measurement_interval);
        let windows = match (a.request_count, periodic.is_some(), a.measurement_mode) {
            (Some(0), _, _) => return usage("--request-count must be at least 1"),
            (Some(n), _, _) => WindowRule::Requests(n),
            (None, true, _) => WindowRule::Once(interval),
            (None, false, MeasurementModeArg::TimeWindows) => {
                WindowRule::Time(interval.mul_f64(1.2))
            }
            (None, false, MeasurementModeArg::CountWindows) => {
                if a.measurement_request_count == 0 {
                    return usage("--measurement-request-count must be at least 1");
                }
                WindowRule::Count(a.measurement_request_count)
            }
        };
        if !(a.stability_percentage > 0.0 && a.stability_percentage.is_finite()) {
            return usage("-s/--stability-percentage must be a positive number");
        }
        if a.max_trials < 3 && windows.stabilizes() {
            return usage(
                "-r/--max-trials must be at least 3 (stability compares the last 3 windows)",
            );
        }
        if let Some(p) = a.percentile
            && !(1..=99).contains(&p)
        {
            return usage("--percentile must be between 1 and 99");
        }
        let request_parameters = a
            .request_parameter
            .iter()
            .map(|p| parse_param(p))
            .collect::<Result<Vec<_>, _>>()?;
        if a.string_length == 0 && a.string_data.is_none() {
            return usage("--string-length must be at least 1");
        }
        let timeline = match (&a.timeline, &a.latency_report_file) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(f)) if window_len(&windows).is_some_and(|w| w >= AUTO_TIMELINE_WINDOW) => {
                Some(sibling(f, "timeline.csv"))
            }
            _ => None,
        };
        if !(a.timeline_interval > 0.0 && a.timeline_interval.is_finite()) {
            return usage("--timeline-interval must be a positive number of seconds");
        }
        let metrics = match &a.metrics_url {
            Some(u) => {
                let (b, _) = normalize_url(u)?;
                MetricsSource::Url(if b.ends_with("/metrics") {
                    b
                } else {
                    format!("{b}/metrics")
                })
            }
            None => {
                let h = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                MetricsSource::Auto(format!("http://{h}:8002/metrics"))
            }
        };
        if !(a.request_timeout > 0.0 && a.request_timeout.is_finite()) {
            return usage("--request-timeout must be a positive number of seconds");
        }
        Ok(PerfPlan {
            target,
            protocol,
            model_version,
            batch: a.batch_size,
            shapes,
            data,
            string_length: a.string_length,
            string_data: a.string_data.clone(),
            levels,
            unbounded,
            windows,
            stability: a.stability_percentage / 100.0,
            max_trials: a.max_trials.max(1),
            percentile: a.percentile,
            latency_threshold_ms: a.latency_threshold,
            warmup: a.warmup_request_count,
            request_parameters,
            report_file: a.latency_report_file.clone(),
            verbose_csv: a.verbose_csv,
            requests_log: a
                .latency_report_file
                .as_ref()
                .filter(|_| a.verbose_csv)
                .map(|f| sibling(f, "requests.jsonl")),
            timeline: timeline.map(|p| (p, Duration::from_secs_f64(a.timeline_interval))),
            binary_inputs: a.input_tensor_format == TensorFormatArg::Binary,
            binary_outputs: a.output_tensor_format == TensorFormatArg::Binary,
            metrics,
            request_timeout: Duration::from_secs_f64(a.request_timeout),
            seed: a.random_seed,
            slos: a
                .slo
                .iter()
                .map(|s| crate::metrics::parse(s).map_err(UsageError))
                .collect::<Result<Vec<_>, _>>()?,
            verbose: a.verbose,
            command_line: redact_command_line(argv),
        })
    }
}

fn window_len(w: &WindowRule) -> Option<Duration> {
    match w {
        WindowRule::Time(d) | WindowRule::Once(d) => Some(*d),
        _ => None,
    }
}

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

fn parse_data(values: &[String]) -> Result<DataSource, UsageError> {
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
fn sibling(report: &std::path::Path, suffix: &str) -> PathBuf {
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
    let parts: Vec<&str> = raw.split(':').collect();
    let num = |s: &str| -> Result<u32, UsageError> {
        s.trim()
            .parse()
            .map_err(|_| UsageError(format!("{flag} {raw}: '{s}' is not a whole number")))
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
        return usage(format!("{flag} {raw}: step must be at least 1"));
    }
    let end = end.unwrap_or(start);
    if end != 0 && end < start {
        return usage(format!(
            "{flag} {raw}: the end ({end}) is below the start ({start})"
        ));
    }
    Ok((start, end, step))
}

fn linear(start: u32, end: u32, step: u32) -> Result<Vec<u32>, UsageError> {
    let v: Vec<u32> = (start..=end).step_by(step as usize).collect();
    if v.len() > 1000 {
        return usage("too many levels (at most 1000)");
    }
    Ok(v)
}

/// perf_analyzer's `start[:end[:step]]` for request rates (linear, inclusive).
pub fn parse_range_f64(raw: &str, flag: &str) -> Result<Vec<f64>, UsageError> {
    let parts: Vec<&str> = raw.split(':').collect();
    let num = |s: &str| -> Result<f64, UsageError> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| UsageError(format!("{flag} {raw}: '{s}' is not a number")))?;
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            usage(format!("{flag} {raw}: values must be positive"))
        }
    };
    let (start, end, step) = match parts.as_slice() {
        [a] => (num(a)?, None, 1.0),
        [a, b] => (num(a)?, Some(num(b)?), 1.0),
        [a, b, c] => (num(a)?, Some(num(b)?), num(c)?),
        _ => return usage(format!("{flag} {raw}: expected start[:end[:step]]")),
    };
    let end = end.unwrap_or(start);
    if end < start {
        return usage(format!(
            "{flag} {raw}: the end ({end}) is below the start ({start})"
        ));
    }
    let mut out = Vec::new();
    while out.len() <= 1000 {
        let v = start + step * out.len() as f64;
        if v > end * (1.0 + 1e-9) {
            break;
        }
        out.push(v);
    }
    if out.len() > 1000 {
        return usage(format!("{flag} {raw}: too many levels (at most 1000)"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Arrival;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<PerfPlan, UsageError> {
        let mut argv = vec!["ttftbench", "perf"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(&argv).map_err(|e| UsageError(e.to_string()))?;
        match cli.command {
            crate::cli::Command::Perf(p) => PerfPlan::from_args(&p, &[]),
            other => panic!("expected perf, got {other:?}"),
        }
    }

    #[test]
    fn seed_commands_parse() {
        let p = plan(&[
            "-m",
            "yolov8s",
            "--concurrency-range",
            "1:32:2",
            "--shape",
            "images:3,640,640",
            "--input-data",
            "random",
            "-u",
            "localhost:8001",
            "--measurement-interval",
            "15000",
            "-f",
            "latency_vs_concurrency.csv",
        ])
        .unwrap();
        assert_eq!(p.levels.len(), 16);
        assert_eq!(p.levels[1], Stimulus::Concurrency(3));
        assert_eq!(p.levels[15], Stimulus::Concurrency(31));
        assert_eq!(p.windows, WindowRule::Time(Duration::from_millis(18_000)));
        assert_eq!(p.shapes, [("images".to_string(), vec![3, 640, 640])]);
        assert_eq!(p.protocol, None, "detected from the server");
        let p = plan(&[
            "-m",
            "resnet_fp16",
            "-b",
            "8",
            "--concurrency-range",
            "8",
            "--input-data",
            "random",
            "-f",
            "r.csv",
        ])
        .unwrap();
        assert_eq!(
            (p.batch, p.levels.clone()),
            (8, vec![Stimulus::Concurrency(8)])
        );
        let p = plan(&[
            "-m",
            "llama3",
            "--streaming",
            "--measurement-interval",
            "30000",
            "--concurrency-range",
            "1:8:2",
            "-u",
            "localhost:8001",
            "--async",
            "--request-parameter",
            "max_tokens:256",
            "--request-parameter",
            "temperature:0.0",
        ])
        .unwrap();
        assert_eq!(p.levels, [1, 3, 5, 7].map(Stimulus::Concurrency));
        assert_eq!(
            p.request_parameters[0],
            ("max_tokens".to_string(), ParamValue::Int(256))
        );
        assert_eq!(
            p.request_parameters[1],
            ("temperature".to_string(), ParamValue::Double(0.0))
        );
        let p = plan(&[
            "-m",
            "yolov8s",
            "--concurrency-range",
            "8",
            "--latency-report-file",
            "latency_report.csv",
            "--verbose-csv",
        ])
        .unwrap();
        assert!(p.verbose_csv && p.report_file.is_some());
        assert_eq!(
            p.requests_log.as_deref(),
            Some(std::path::Path::new("latency_report.requests.jsonl"))
        );
        let p = plan(&[
            "-m",
            "bert_classifier",
            "--request-rate-range",
            "100",
            "--measurement-interval",
            "86400000",
            "--periodic-concurrency-range",
            "1",
            "-f",
            "stability_24h.csv",
        ])
        .unwrap();
        assert_eq!(
            p.levels,
            [Stimulus::RequestRate {
                rate: 100.0,
                arrival: Arrival::Constant,
                max_inflight: 1
            }]
        );
        assert_eq!(p.windows, WindowRule::Once(Duration::from_secs(86_400)));
        assert_eq!(
            p.timeline.as_ref().unwrap().0,
            PathBuf::from("stability_24h.timeline.csv")
        );
    }

    #[test]
    fn ranges_and_errors() {
        assert_eq!(parse_range_u32("4", "f").unwrap(), (4, 4, 1));
        assert_eq!(parse_range_u32("1:4", "f").unwrap(), (1, 4, 1));
        assert!(parse_range_u32("0:4", "f").is_err());
        assert!(parse_range_u32("4:1", "f").is_err());
        assert!(parse_range_u32("1:4:0", "f").is_err());
        assert_eq!(
            parse_range_f64("10:30:10", "f").unwrap(),
            [10.0, 20.0, 30.0]
        );
        assert_eq!(
            parse_shape("input_ids:128").unwrap(),
            ("input_ids".to_string(), vec![128])
        );
        assert!(parse_shape("images").is_err());
        assert!(parse_shape("images:3,x").is_err());
        assert_eq!(
            parse_param("flag:true:bool").unwrap().1,
            ParamValue::Bool(true)
        );
        assert_eq!(
            parse_param("name:abc").unwrap().1,
            ParamValue::Str("abc".into())
        );
        assert!(parse_param("n:abc:int").is_err());
        assert!(
            plan(&["-m", "m", "--concurrency-range", "1:0"]).is_err(),
            "open-ended sweep needs -l"
        );
        assert!(
            plan(&["-m", "m", "--concurrency-range", "1:0", "-l", "50"])
                .unwrap()
                .unbounded
        );
        assert!(plan(&["-m", "m", "-b", "0"]).is_err());
        assert!(plan(&["-m", "m", "--input-data", "/nonexistent.json"]).is_err());
        assert!(plan(&["-m", "m", "--service-kind", "openai"]).is_err());
        assert!(plan(&["-m", "m", "-i", "grpc", "-r", "2"]).is_err());
        // Found against real Triton: `-i http --streaming` ran and every request failed.
        let e = plan(&["-m", "m", "-i", "http", "--streaming"])
            .unwrap_err()
            .0;
        assert!(e.contains("only allowed with the gRPC protocol"), "{e}");
        assert!(plan(&["-m", "m", "-i", "grpc", "--streaming"]).is_ok());
        let p = plan(&[
            "-m",
            "m",
            "-i",
            "http",
            "--measurement-mode",
            "count_windows",
            "--measurement-request-count",
            "20",
        ])
        .unwrap();
        assert_eq!(
            p.target.endpoint_url(),
            "http://localhost:8000/v2/models/m/infer"
        );
        assert_eq!(p.windows, WindowRule::Count(20));
    }
}
