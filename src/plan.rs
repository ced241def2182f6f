//! What was asked, resolved: the validated, serializable [`RunPlan`] built once from the flags.
//! Everything downstream reads typed fields; no string matching after this point.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{BackendArg, EndpointTypeArg, ProfileArgs, ServiceKindArg};
use crate::error::UsageError;
use crate::load::{Arrival, Stimulus, Stop, StopRule};
use crate::metrics::{Metric, Objective};
use crate::server_metrics::MetricsSource;
use crate::target::{
    Api, Backend, Target, bracket_host, default_endpoint, normalize_metrics_url, normalize_url,
    parse_header, redact_command_line,
};
use crate::workload::{OutputLength, PromptSource, WorkloadPlan};

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Console verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    /// Only the table.
    Quiet,
    /// Table, per-level lines, progress bars.
    Normal,
    /// Plus per-metric detail tables.
    Verbose,
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
    pub stop: StopRule,
    /// Warm-up requests before each level.
    pub warmup_requests: u64,
    /// Warm-up time before each level (instead of a request count).
    #[serde(with = "opt_duration_secs")]
    pub warmup_duration: Option<Duration>,
    /// Send-lag p99 (ms) above which an open-loop level is not trustworthy.
    pub max_send_lag_ms: f64,
    /// Untrustworthy levels make the run fail.
    pub strict: bool,
    /// Timeline row interval.
    #[serde(with = "duration_secs")]
    pub timeline_interval: Duration,
    /// `--artifact-dir`, when given.
    pub artifact_dir: Option<PathBuf>,
    /// Goodput objectives.
    pub goodput: Vec<Objective>,
    /// `--slo` objectives, checked at the end of every level.
    pub slos: Vec<crate::metrics::Slo>,
    /// `--knee-min-gain` as a fraction.
    pub knee_min_gain: f64,
    /// Server metrics endpoint.
    pub server_metrics: MetricsSource,
    /// Count output tokens from server usage.
    pub use_server_token_count: bool,
    /// Per-request timeout.
    #[serde(with = "duration_secs")]
    pub request_timeout: Duration,
    /// Console verbosity.
    pub verbosity: Verbosity,
    /// The command line as typed, secrets redacted.
    pub command_line: String,
}

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

impl RunPlan {
    /// Builds the plan from `profile` flags. `argv` is the command line, for the record.
    pub fn from_profile(a: &ProfileArgs, argv: &[String]) -> Result<RunPlan, UsageError> {
        let api = match (a.endpoint_type, a.service_kind) {
            (Some(EndpointTypeArg::Kserve), Some(ServiceKindArg::Openai)) => {
                return usage(
                    "--endpoint-type kserve is Triton's gRPC API; it cannot be combined with --service-kind openai",
                );
            }
            (Some(EndpointTypeArg::Kserve), _) => Api::Kserve,
            (Some(EndpointTypeArg::Chat), _) => Api::Chat,
            (Some(EndpointTypeArg::Completions), _) => Api::Completions,
            (Some(EndpointTypeArg::Generate), _) => Api::Generate,
            (None, Some(ServiceKindArg::Openai)) => Api::Chat,
            (None, _) => Api::Kserve,
        };
        if a.backend.is_some() && api != Api::Kserve {
            return usage(format!(
                "--backend only applies to Triton's KServe API (--endpoint-type kserve); it has no effect with --endpoint-type {}",
                api.name()
            ));
        }
        let backend = match a.backend {
            Some(BackendArg::Vllm) => Backend::Vllm,
            _ => Backend::Tensorrtllm,
        };
        let default_url = if api == Api::Kserve {
            "localhost:8001"
        } else {
            "localhost:8000"
        };
        let (base_url, host) = normalize_url(a.url.as_deref().unwrap_or(default_url))?;
        let endpoint = match &a.endpoint {
            Some(e) => e.trim_start_matches('/').to_string(),
            None => default_endpoint(api, &a.model, a.streaming),
        };
        if a.model.trim().is_empty() {
            return usage("-m/--model must name a model");
        }
        let headers = a
            .header
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        let api_key = a.api_key.clone().filter(|k| !k.trim().is_empty());
        let target = Target {
            api,
            base_url,
            host: host.clone(),
            endpoint,
            model: a.model.clone(),
            backend,
            streaming: a.streaming,
            headers,
            api_key,
            max_event_bytes: a.max_event_size,
        };
        target.header_map()?;

        let arrival = arrival_from(a.request_distribution, a.burstiness)?;
        if a.max_inflight == 0 {
            return usage("--max-inflight must be at least 1");
        }
        let levels = match (&a.concurrency, &a.request_rate) {
            (Some(spec), _) => parse_concurrency(spec)?,
            (None, Some(spec)) => parse_float_levels(spec, "--request-rate")?
                .into_iter()
                .map(|rate| Stimulus::RequestRate {
                    rate,
                    arrival,
                    max_inflight: a.max_inflight,
                })
                .collect(),
            (None, None) => vec![Stimulus::Concurrency(1)],
        };
        let secs = |v: Option<f64>, flag: &str| -> Result<Option<Duration>, UsageError> {
            match v {
                Some(x) if !(x > 0.0 && x.is_finite()) => {
                    usage(format!("{flag} must be a positive number of seconds"))
                }
                Some(x) => Ok(Some(Duration::from_secs_f64(x))),
                None => Ok(None),
            }
        };
        let duration = secs(a.duration, "--duration")?;
        let warmup_duration = secs(a.warmup_duration, "--warmup-duration")?;
        let timeline_interval = secs(Some(a.timeline_interval), "--timeline-interval")?
            .unwrap_or(Duration::from_secs(1));
        if !(a.max_send_lag > 0.0 && a.max_send_lag.is_finite()) {
            return usage("--max-send-lag must be a positive number of milliseconds");
        }
        let measurement_interval = match (a.measurement_interval, duration) {
            (_, Some(d)) => Some(d.as_millis().max(1) as u64),
            (m, None) => m,
        };
        let stop = match (a.request_count, measurement_interval, a.num_prompts) {
            (Some(_), Some(_), _) => {
                return usage(
                    "--request-count and --measurement-interval both end a level; give one of them (count: exact number of requests; interval: a time window)",
                );
            }
            (Some(0), None, _) => return usage("--request-count must be at least 1"),
            (Some(n), None, _) => StopRule::Fixed(Stop::Requests(n)),
            (None, Some(0), _) => return usage("--measurement-interval must be at least 1 ms"),
            (None, Some(ms), _) => StopRule::Fixed(Stop::Window(Duration::from_millis(ms))),
            (None, None, Some(n)) => StopRule::Fixed(Stop::Requests(u64::from(n.max(1)))),
            (None, None, None) => StopRule::Auto,
        };
        let num_prompts = a.num_prompts.unwrap_or(100);
        if num_prompts == 0 {
            return usage("--num-prompts must be at least 1");
        }
        let prompts = match &a.input_file {
            Some(p) => {
                if a.synthetic_input_tokens_mean.is_some() {
                    return usage(
                        "--input-file and --synthetic-input-tokens-mean both choose prompts; give one",
                    );
                }
                PromptSource::File(p.clone())
            }
            None => {
                let mean = a.synthetic_input_tokens_mean.unwrap_or(550);
                if mean == 0 {
                    return usage("--synthetic-input-tokens-mean must be at least 1");
                }
                PromptSource::Synthetic {
                    mean,
                    stddev: a.synthetic_input_tokens_stddev,
                }
            }
        };
        let output = match a.output_tokens_mean {
            Some(0) => return usage("--output-tokens-mean must be at least 1"),
            Some(mean) => Some(OutputLength {
                mean,
                stddev: a.output_tokens_stddev,
                deterministic: a.output_tokens_mean_deterministic,
            }),
            None if a.output_tokens_mean_deterministic => {
                return usage("--output-tokens-mean-deterministic needs --output-tokens-mean N");
            }
            None => None,
        };
        let extra_inputs = a
            .extra_inputs
            .iter()
            .map(|s| parse_extra_input(s))
            .collect::<Result<Vec<_>, _>>()?;
        let extra_inputs = extra_inputs.into_iter().flatten().collect();
        let goodput = parse_objectives(&a.goodput)?;
        let slos = a
            .slo
            .iter()
            .map(|s| crate::metrics::parse(s).map_err(UsageError))
            .collect::<Result<Vec<_>, _>>()?;
        let knee_min_gain = parse_fraction("--knee-min-gain", &a.knee_min_gain)?;
        let server_metrics = match &a.server_metrics_url {
            Some(u) => MetricsSource::Url(normalize_metrics_url(u)?),
            None => MetricsSource::Auto(format!("http://{}:8002/metrics", bracket_host(&host))),
        };
        if !(a.request_timeout > 0.0 && a.request_timeout.is_finite()) {
            return usage("--request-timeout must be a positive number of seconds");
        }
        let verbosity = match (a.quiet, a.verbose) {
            (true, true) => return usage("--quiet and --verbose contradict each other"),
            (true, false) => Verbosity::Quiet,
            (false, true) => Verbosity::Verbose,
            (false, false) => Verbosity::Normal,
        };
        Ok(RunPlan {
            target,
            workload: WorkloadPlan {
                prompts,
                num_prompts,
                output,
                tokenizer: a.tokenizer.clone(),
                seed: a.random_seed,
                extra_inputs,
                server_usage: a.use_server_token_count,
            },
            levels,
            stop,
            warmup_requests: a.warmup_request_count,
            warmup_duration,
            max_send_lag_ms: a.max_send_lag,
            strict: a.strict,
            timeline_interval,
            artifact_dir: a.artifact_dir.clone(),
            goodput,
            slos,
            knee_min_gain,
            server_metrics,
            use_server_token_count: a.use_server_token_count,
            request_timeout: Duration::from_secs_f64(a.request_timeout),
            verbosity,
            command_line: redact_command_line(argv),
        })
    }

    /// The plan as GenAI-Perf's `input_config` (secrets are never part of it).
    pub fn input_config(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// `name:value` (value parsed as JSON when it is JSON, else a string) or a JSON object.
pub fn parse_extra_input(raw: &str) -> Result<Vec<(String, serde_json::Value)>, UsageError> {
    let t = raw.trim();
    if t.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(t)
            .map_err(|e| UsageError(format!("--extra-inputs {t}: invalid JSON object ({e})")))?;
        return match v {
            serde_json::Value::Object(m) => Ok(m.into_iter().collect()),
            _ => usage(format!("--extra-inputs {t}: expected a JSON object")),
        };
    }
    match t.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() => {
            let v = v.trim();
            let value = serde_json::from_str(v)
                .unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
            Ok(vec![(k.trim().to_string(), value)])
        }
        _ => usage(format!(
            "--extra-inputs '{t}': expected name:value or a JSON object"
        )),
    }
}

/// `--goodput time_to_first_token:500 inter_token_latency:20`.
pub fn parse_objectives(raw: &[String]) -> Result<Vec<Objective>, UsageError> {
    let valid = "time_to_first_token, time_to_second_token, inter_token_latency, request_latency, output_token_throughput_per_user";
    raw.iter()
        .flat_map(|s| s.split_whitespace())
        .map(|item| {
            let (k, v) = item
                .split_once(':')
                .or_else(|| item.split_once('='))
                .ok_or_else(|| {
                    UsageError(format!(
                        "--goodput '{item}': expected metric:value, e.g. time_to_first_token:500"
                    ))
                })?;
            let metric = Metric::from_key(k)
                .filter(|m| {
                    matches!(
                        m,
                        Metric::TimeToFirstToken
                            | Metric::TimeToSecondToken
                            | Metric::InterTokenLatency
                            | Metric::RequestLatency
                            | Metric::OutputTokenThroughputPerUser
                    )
                })
                .ok_or_else(|| {
                    UsageError(format!("--goodput: unknown metric '{k}'; valid: {valid}"))
                })?;
            let bound: f64 = v
                .trim_end_matches("ms")
                .parse()
                .map_err(|_| UsageError(format!("--goodput {item}: '{v}' is not a number")))?;
            if !(bound > 0.0 && bound.is_finite()) {
                return usage(format!("--goodput {item}: the value must be positive"));
            }
            Ok(Objective { metric, bound })
        })
        .collect()
}

/// The arrival process from `--request-distribution` and `--burstiness`.
pub fn arrival_from(
    d: crate::cli::DistributionArg,
    burstiness: f64,
) -> Result<Arrival, UsageError> {
    use crate::cli::DistributionArg;
    if !(burstiness > 0.0 && burstiness.is_finite()) {
        return usage("--burstiness must be a positive number (1 = Poisson)");
    }
    Ok(match d {
        DistributionArg::Constant => Arrival::Constant,
        DistributionArg::Poisson => Arrival::Poisson,
        DistributionArg::Gamma => Arrival::Gamma { shape: burstiness },
    })
}

/// Request rates: `R`, `start:end[:step]` (doubling without a step, both ends inclusive) or
/// `a,b,c`; positive numbers.
pub fn parse_float_levels(spec: &str, flag: &str) -> Result<Vec<f64>, UsageError> {
    let spec = spec.trim();
    let num = |s: &str| -> Result<f64, UsageError> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| UsageError(format!("{flag} {spec}: '{s}' is not a number")))?;
        if !(v > 0.0 && v.is_finite()) {
            return usage(format!("{flag} {spec}: rates must be positive"));
        }
        Ok(v)
    };
    if spec.contains(',') {
        return spec
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(num)
            .collect();
    }
    let parts: Vec<&str> = spec.split(':').collect();
    let (start, end, step) = match parts.as_slice() {
        [one] => return Ok(vec![num(one)?]),
        [a, b] => (num(a)?, num(b)?, None),
        [a, b, c] => (num(a)?, num(b)?, Some(num(c)?)),
        _ => {
            return usage(format!(
                "{flag} {spec}: expected R, start:end[:step], or a list like 5,10,20"
            ));
        }
    };
    if end < start {
        return usage(format!(
            "{flag} {spec}: the end ({end}) is below the start ({start})"
        ));
    }
    let mut out = Vec::new();
    let mut v = start;
    // A small tolerance keeps `0.1:0.3:0.1` from losing its last level to rounding.
    while v <= end * (1.0 + 1e-9) && out.len() <= 1000 {
        out.push(v);
        v = match step {
            Some(s) => start + s * out.len() as f64,
            None => v * 2.0,
        };
    }
    if out.len() > 1000 {
        return usage(format!("{flag} {spec}: too many levels (at most 1000)"));
    }
    Ok(out)
}

/// A percentage (`10%`) or a fraction (`0.1`) as a fraction, for `--knee-min-gain`.
pub fn parse_fraction(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let t = raw.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| UsageError(format!("{flag} '{t}': expected a percentage such as 10%")))?;
    if !(v > 0.0 && v.is_finite()) {
        return usage(format!("{flag} '{t}': must be more than 0"));
    }
    Ok(v)
}

/// `N`, `start:end[:step]` or `a,b,c`.
pub fn parse_concurrency(spec: &str) -> Result<Vec<Stimulus>, UsageError> {
    let values = parse_int_levels(spec, "--concurrency")?;
    Ok(values.into_iter().map(Stimulus::Concurrency).collect())
}

/// Parses a level list of positive integers. `start:end` without a step doubles from start
/// (GenAI-Perf's power-of-two sweep); with a step it counts linearly; both ends inclusive.
pub fn parse_int_levels(spec: &str, flag: &str) -> Result<Vec<u32>, UsageError> {
    let spec = spec.trim();
    let num = |s: &str| -> Result<u32, UsageError> {
        let v: u32 = s.trim().parse().map_err(|_| {
            UsageError(format!(
                "{flag} {spec}: '{s}' is not a positive whole number"
            ))
        })?;
        if v == 0 {
            return usage(format!("{flag} {spec}: levels must be at least 1"));
        }
        Ok(v)
    };
    if spec.contains(',') {
        return spec
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(num)
            .collect();
    }
    let parts: Vec<&str> = spec.split(':').collect();
    match parts.as_slice() {
        [one] => Ok(vec![num(one)?]),
        [start, end] | [start, end, _] => {
            let (start, end) = (num(start)?, num(end)?);
            if end < start {
                return usage(format!(
                    "{flag} {spec}: the end ({end}) is below the start ({start})"
                ));
            }
            let mut out = Vec::new();
            if let [_, _, step] = parts.as_slice() {
                let step = num(step)?;
                let mut v = start;
                while v <= end {
                    out.push(v);
                    v = match v.checked_add(step) {
                        Some(n) => n,
                        None => break,
                    };
                }
            } else {
                let mut v = start;
                while v <= end {
                    out.push(v);
                    v = match v.checked_mul(2) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
            if out.len() > 1000 {
                return usage(format!(
                    "{flag} {spec}: {} levels is too many (at most 1000)",
                    out.len()
                ));
            }
            Ok(out)
        }
        _ => usage(format!(
            "{flag} {spec}: expected N, start:end[:step], or a list like 1,4,8"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Header;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<RunPlan, UsageError> {
        let mut argv = vec!["ttftbench", "profile"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(&argv).map_err(|e| UsageError(e.to_string()))?;
        match cli.command {
            crate::cli::Command::Profile(p) => {
                RunPlan::from_profile(&p, &argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            }
            other => panic!("expected profile, got {other:?}"),
        }
    }

    #[test]
    fn concurrency_forms() {
        let v = |s: &str| parse_int_levels(s, "--concurrency").unwrap();
        assert_eq!(v("8"), [8]);
        assert_eq!(v("1:32"), [1, 2, 4, 8, 16, 32]);
        assert_eq!(v("1:20"), [1, 2, 4, 8, 16]);
        assert_eq!(
            v("1:32:2"),
            [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]
        );
        assert_eq!(v("1,4,8,16,32"), [1, 4, 8, 16, 32]);
        assert!(parse_int_levels("0", "--concurrency").is_err());
        assert!(parse_int_levels("8:4", "--concurrency").is_err());
        assert!(parse_int_levels("a", "--concurrency").is_err());
        assert!(parse_int_levels("1:2:3:4", "--concurrency").is_err());
    }

    #[test]
    fn rate_forms() {
        let v = |s: &str| parse_float_levels(s, "--request-rate").unwrap();
        assert_eq!(v("10"), [10.0]);
        assert_eq!(v("2.5"), [2.5]);
        assert_eq!(v("1:8"), [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(v("10:50:20"), [10.0, 30.0, 50.0]);
        assert_eq!(v("0.1:0.3:0.1").len(), 3);
        assert_eq!(v("5,10,20"), [5.0, 10.0, 20.0]);
        assert!(parse_float_levels("0", "--request-rate").is_err());
        assert!(parse_float_levels("-1", "--request-rate").is_err());
        assert!(parse_float_levels("x", "--request-rate").is_err());
        let p = plan(&[
            "-m",
            "m",
            "--request-rate",
            "10,20",
            "--request-distribution",
            "gamma",
            "--burstiness",
            "0.5",
        ])
        .unwrap();
        assert_eq!(
            p.levels[1],
            Stimulus::RequestRate {
                rate: 20.0,
                arrival: Arrival::Gamma { shape: 0.5 },
                max_inflight: 1024
            }
        );
        assert_eq!(p.levels[0].name(), "request_rate10.0");
        assert!(plan(&["-m", "m", "--request-rate", "10", "--concurrency", "4"]).is_err());
    }

    #[test]
    fn seed_command_resolves() {
        let p = plan(&[
            "-m",
            "gpt2",
            "--service-kind",
            "triton",
            "--backend",
            "tensorrtllm",
            "--num-prompts",
            "200",
            "--synthetic-input-tokens-mean",
            "200",
            "--synthetic-input-tokens-stddev",
            "20",
            "--output-tokens-mean",
            "100",
            "--output-tokens-stddev",
            "10",
            "--concurrency",
            "1",
            "--measurement-interval",
            "10000",
            "--streaming",
            "--url",
            "localhost:8001",
            "--artifact-dir",
            "./ttft_c1",
        ])
        .unwrap();
        assert_eq!(p.target.api, Api::Kserve);
        assert_eq!(p.target.base_url, "http://localhost:8001");
        assert_eq!(p.levels, [Stimulus::Concurrency(1)]);
        assert_eq!(
            p.stop,
            StopRule::Fixed(Stop::Window(Duration::from_millis(10_000)))
        );
        assert_eq!(p.workload.num_prompts, 200);
        assert_eq!(
            p.server_metrics,
            MetricsSource::Auto("http://localhost:8002/metrics".into())
        );
    }

    #[test]
    fn openai_defaults_and_stop_rules() {
        let p = plan(&[
            "-m",
            "m",
            "--service-kind",
            "openai",
            "--num-prompts",
            "200",
            "--streaming",
        ])
        .unwrap();
        assert_eq!(p.target.api, Api::Chat);
        assert_eq!(
            p.target.endpoint_url(),
            "http://localhost:8000/v1/chat/completions"
        );
        assert_eq!(p.stop, StopRule::Fixed(Stop::Requests(200)));
        let p = plan(&[
            "-m",
            "m",
            "--endpoint-type",
            "generate",
            "--streaming",
            "-u",
            "https://h:9/api/",
        ])
        .unwrap();
        assert_eq!(
            p.target.endpoint_url(),
            "https://h:9/api/v2/models/m/generate_stream"
        );
        assert_eq!(
            p.stop.for_level(&Stimulus::Concurrency(8)),
            Stop::Requests(16)
        );
        assert_eq!(
            p.stop.for_level(&Stimulus::Concurrency(1)),
            Stop::Requests(10)
        );
        assert!(
            plan(&[
                "-m",
                "m",
                "--request-count",
                "5",
                "--measurement-interval",
                "100"
            ])
            .is_err()
        );
        assert!(plan(&["-m", "m", "--endpoint-type", "chat", "--backend", "vllm"]).is_err());
    }

    #[test]
    fn headers_goodput_extra_inputs() {
        let p = plan(&[
            "-m",
            "m",
            "--endpoint-type",
            "chat",
            "-H",
            "triton-access-token: s3cret",
            "-H",
            "X-Team:infra",
            "--goodput",
            "time_to_first_token:500",
            "inter_token_latency:20",
            "--extra-inputs",
            "ignore_eos:true",
            "--extra-inputs",
            "{\"temperature\":0.5}",
            "--api-key",
            "sk-abc",
        ])
        .unwrap();
        assert_eq!(
            p.target.headers[1],
            Header {
                name: "X-Team".into(),
                value: "infra".into()
            }
        );
        assert_eq!(p.goodput.len(), 2);
        assert_eq!(
            p.goodput[1],
            Objective {
                metric: Metric::InterTokenLatency,
                bound: 20.0
            }
        );
        assert_eq!(
            p.workload.extra_inputs[0],
            ("ignore_eos".to_string(), serde_json::json!(true))
        );
        assert_eq!(
            p.workload.extra_inputs[1],
            ("temperature".to_string(), serde_json::json!(0.5))
        );
        let cfg = p.input_config().to_string();
        assert!(!cfg.contains("s3cret") && !cfg.contains("sk-abc"), "{cfg}");
        assert!(cfg.contains("triton-access-token: <redacted>"));
        assert!(
            !p.command_line.contains("s3cret") && !p.command_line.contains("sk-abc"),
            "{}",
            p.command_line
        );
        let map = p.target.header_map().unwrap();
        assert_eq!(map.get("authorization").unwrap(), "Bearer sk-abc");
        assert!(plan(&["-m", "m", "--goodput", "bogus:1"]).is_err());
        assert!(plan(&["-m", "m", "-H", "novalue"]).is_err());
    }
}
