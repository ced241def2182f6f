//! `perf`'s flags (perf_analyzer's names) converted into a [`PerfPlan`]: the target and
//! protocol, the levels, the measurement windows, then the rest. The clap types end here.

use std::path::PathBuf;

use super::{MeasurementModeArg, PerfArgs, TensorFormatArg};
use crate::error::{UsageError, usage};
use crate::load::{Stimulus, WindowRule};
use crate::perf::plan::{
    AUTO_TIMELINE_WINDOW, PerfPlan, Protocol, STREAMING_NEEDS_GRPC, infer_path, linear, parse_data,
    parse_param, parse_shape, sibling,
};
use crate::plan::{resolve, values};
use crate::target::{
    Api, Backend, Encoding, Target, normalize_url, parse_header, redact_command_line,
};

/// Gives a TLS file that ttftbench's own flag left unset perf_analyzer's flag's file, if any
/// (ttftbench's flags win where both are given).
fn fill(slot: &mut Option<(PathBuf, Encoding)>, file: &Option<PathBuf>, encoding: Encoding) {
    if slot.is_none() {
        *slot = file.clone().map(|f| (f, encoding));
    }
}

/// The plan of `ttftbench perf WORDS...` as the command line makes it, with no command line
/// recorded (tests and the fuzz targets); clap's refusal is a usage error with its message.
#[doc(hidden)]
pub fn plan_of(words: &[&str]) -> Result<PerfPlan, UsageError> {
    use clap::Parser;
    let argv = ["ttftbench", "perf"].iter().chain(words);
    let cli = super::Cli::try_parse_from(argv).map_err(|e| UsageError(e.to_string()))?;
    let super::Command::Perf(p) = cli.command else {
        unreachable!("the words follow `perf`")
    };
    p.plan(&[])
}

impl PerfArgs {
    /// The validated plan of these flags; `argv` is kept (redacted) for the record.
    pub fn plan(&self, argv: &[String]) -> Result<PerfPlan, UsageError> {
        if !self.service_kind.eq_ignore_ascii_case("triton") {
            return usage(format!(
                "--service-kind {}: ttftbench perf profiles KServe v2 (Triton) servers; for OpenAI-compatible LLM endpoints use `ttftbench profile --endpoint-type chat`",
                self.service_kind
            ));
        }
        let protocol = self.protocol;
        if self.streaming && protocol == Some(Protocol::Http) {
            return usage(STREAMING_NEEDS_GRPC);
        }
        let target = self.target(protocol)?;
        if self.batch_size == 0 {
            return usage("-b must be at least 1");
        }
        let periodic = self.periodic_concurrency_range;
        let (levels, unbounded) = self.levels(periodic)?;
        let windows = self.windows(periodic.is_some())?;
        self.check_numbers(&windows)?;
        let mut plan = PerfPlan {
            metrics: resolve::metrics_source(self.metrics_url.as_deref(), &target)?,
            server_kind: self.engine_view.server_kind,
            gpu_metrics_url: resolve::gpu_metrics_url(self.engine_view.gpu_metrics_url.as_deref())?,
            target,
            protocol,
            model_version: self.model_version.clone().unwrap_or_default(),
            batch: self.batch_size,
            shapes: values::parse_each(&self.shape, parse_shape)?,
            data: parse_data(&self.input_data)?,
            string_length: self.string_length,
            string_data: self.string_data.clone(),
            levels,
            unbounded,
            windows,
            stability: self.stability_percentage / 100.0,
            max_trials: self.max_trials.max(1),
            percentile: self.percentile,
            latency_threshold_ms: self.latency_threshold.as_millis() as u64,
            warmup: self.warmup_request_count,
            request_parameters: values::parse_each(&self.request_parameter, parse_param)?,
            report_file: self.latency_report_file.clone(),
            profile_export: self.profile_export_file.clone(),
            percentile_method: self.percentile_method,
            verbose_csv: self.verbose_csv,
            requests_log: self
                .latency_report_file
                .as_ref()
                .filter(|_| self.verbose_csv)
                .map(|f| sibling(f, "requests.jsonl")),
            timeline: self.timeline(&windows).map(|p| (p, self.timeline_interval)),
            binary_inputs: self.input_tensor_format == TensorFormatArg::Binary,
            binary_outputs: self.output_tensor_format == TensorFormatArg::Binary,
            request_timeout: self.requests.request_timeout,
            seed: self.random_seed,
            request_cancellation: self.requests.cancellation.plan(),
            slos: self.verdict.slo.clone(),
            max_send_lag_ms: self.verdict.max_send_lag.as_secs_f64() * 1e3,
            strict: self.verdict.strict,
            max_error_rate: self.verdict.max_error_rate,
            verbose: self.verbose,
            command_line: redact_command_line(argv),
            outputs: self.outputs.plan()?,
            run_config: super::config::resolved(argv),
            artifact_dir: self.artifact_dir.clone(),
            shard: crate::plan::ShardPlan::default(),
            repeat: crate::plan::Repeat::ONCE,
        };
        // The slot between level starts depends on each level's length, known once the plan is.
        plan.shard = resolve::shard(&self.shard.spec(plan.levels.len(), plan.level_length()))?;
        self.shard_rules(&mut plan)?;
        plan.repeat = self.repeat.plan(!plan.shard.shard.is_whole())?;
        Ok(plan)
    }

    /// What a shard needs besides its part: a sweep every shard walks alike (no latency
    /// threshold, which each shard would judge on its own latency alone), and its level
    /// directories for `merge` (by default `artifacts/perf-shard{I}-of-{N}`), where its rows go
    /// too.
    fn shard_rules(&self, plan: &mut PerfPlan) -> Result<(), UsageError> {
        let s = plan.shard.shard;
        if plan.unbounded && plan.shard.start_at_unix_ns.is_some() {
            return usage(
                "--start-at with an open-ended --concurrency-range (end 0): the levels' starts must be known in advance; give the range an end",
            );
        }
        if !s.is_whole() && plan.latency_threshold_ms > 0 {
            return usage(
                "-l/--latency-threshold with --shard: each shard would stop the sweep on its own latency and the shards would part ways; drop -l and give the range an end",
            );
        }
        if !s.is_whole() && plan.artifact_dir.is_none() {
            plan.artifact_dir = Some(PathBuf::from(format!(
                "artifacts/perf-shard{}-of-{}",
                s.index, s.count
            )));
        }
        if let Some(dir) = &plan.artifact_dir {
            plan.artifact_dir = Some(PathBuf::from(
                dir.to_string_lossy()
                    .replace("{shard}", &s.index.to_string()),
            ));
            // Each level's requests.jsonl holds the rows; no second copy beside -f.
            plan.requests_log = None;
        }
        Ok(())
    }

    /// The server, the model's infer path and the headers; gRPC's port 8001 unless `-i http`.
    fn target(&self, protocol: Option<Protocol>) -> Result<Target, UsageError> {
        if self.model.trim().is_empty() {
            return usage("-m must name a model");
        }
        let default_url = match protocol {
            Some(Protocol::Http) => "localhost:8000",
            _ => "localhost:8001",
        };
        let tls = self.tls_spec(protocol);
        let url = resolve::url_for_tls(self.url.as_deref().unwrap_or(default_url), &tls)?;
        let (base_url, host) = normalize_url(&url)?;
        let headers = values::parse_each(&self.header, parse_header)?;
        let version = self.model_version.clone().unwrap_or_default();
        let target = Target {
            rankings: Default::default(),
            api: if protocol == Some(Protocol::Http) {
                Api::Infer
            } else {
                Api::Kserve
            },
            base_url,
            host,
            endpoint: infer_path(&self.model, &version),
            model: self.model.clone(),
            backend: Backend::Tensorrtllm,
            streaming: self.streaming,
            streaming_by_default: false,
            metrics_headers: resolve::metrics_headers(&headers, &self.engine_view.metrics_header)?,
            headers,
            api_key: None,
            max_event_bytes: self.requests.max_event_size,
            tcp_quickack: self.requests.tcp_quickack,
            tls: resolve::tls(&tls)?,
        };
        target.header_map()?;
        Ok(target)
    }

    /// The TLS options under both sets of names as one: ttftbench's (`--cacert`, `--cert`,
    /// `--key`, `-k`) apply to either protocol; perf_analyzer's `--ssl-grpc-*` to gRPC and
    /// `--ssl-https-*` to HTTP, as in perf_analyzer (both when the protocol is detected).
    fn tls_spec(&self, protocol: Option<Protocol>) -> resolve::TlsSpec {
        let mut spec = self.tls.spec();
        let p = &self.pa_tls;
        let grpc = protocol != Some(Protocol::Http);
        let http = protocol != Some(Protocol::Grpc);
        if grpc {
            spec.use_tls |= p.ssl_grpc_use_ssl;
            spec.ca_files
                .extend(p.ssl_grpc_root_certifications_file.clone());
            fill(
                &mut spec.cert,
                &p.ssl_grpc_certificate_chain_file,
                Encoding::Pem,
            );
            fill(&mut spec.key, &p.ssl_grpc_private_key_file, Encoding::Pem);
        }
        if http {
            spec.insecure |= p.ssl_https_verify_peer == Some(0);
            spec.skip_hostname |= p.ssl_https_verify_host == Some(0);
            spec.ca_files
                .extend(p.ssl_https_ca_certificates_file.clone());
            let cert_type = p.ssl_https_client_certificate_type;
            fill(
                &mut spec.cert,
                &p.ssl_https_client_certificate_file,
                cert_type,
            );
            let key_type = p.ssl_https_private_key_type;
            fill(&mut spec.key, &p.ssl_https_private_key_file, key_type);
        }
        spec
    }

    /// The levels in order, and whether the concurrency range is open-ended (`start:0`).
    fn levels(
        &self,
        periodic: Option<(u32, u32, u32)>,
    ) -> Result<(Vec<Stimulus>, bool), UsageError> {
        let arrival = super::profile::arrival(self.request_distribution, 1.0)?;
        let concurrency = |start, end, step| -> Result<(Vec<Stimulus>, bool), UsageError> {
            let levels = linear(start, end, step)?.into_iter();
            Ok((levels.map(Stimulus::Concurrency).collect(), false))
        };
        match (self.concurrency_range, &self.request_rate_range) {
            (_, Some(r)) => {
                let cap = periodic.map_or(1024, |(_, end, _)| end.max(1));
                let levels = (r.values.iter())
                    .map(|&rate| Stimulus::RequestRate {
                        rate,
                        arrival,
                        max_inflight: cap,
                    })
                    .collect();
                Ok((levels, false))
            }
            (Some((start, end, step)), None) => {
                if end == 0 {
                    if self.latency_threshold.is_zero() {
                        return usage(
                            "--concurrency-range with end 0 sweeps until the latency threshold: give -l/--latency-threshold MS",
                        );
                    }
                    return Ok((vec![Stimulus::Concurrency(start)], true));
                }
                concurrency(start, end, step)
            }
            (None, None) => match periodic {
                Some((start, end, step)) => concurrency(start, end.max(start), step),
                None => Ok((vec![Stimulus::Concurrency(1)], false)),
            },
        }
    }

    /// perf_analyzer's windows: time windows of 1.2 × the interval, count windows, one window of
    /// `--request-count` requests, or one window of the interval (periodic concurrency).
    fn windows(&self, periodic: bool) -> Result<WindowRule, UsageError> {
        if self.measurement_interval.is_zero() {
            return usage("--measurement-interval must be at least 1 ms");
        }
        let interval = self.measurement_interval;
        Ok(
            match (self.request_count, periodic, self.measurement_mode) {
                (Some(0), _, _) => return usage("--request-count must be at least 1"),
                (Some(n), _, _) => WindowRule::Requests(n),
                (None, true, _) => WindowRule::Once(interval),
                (None, false, MeasurementModeArg::TimeWindows) => {
                    WindowRule::Time(interval.mul_f64(1.2))
                }
                (None, false, MeasurementModeArg::CountWindows) => {
                    if self.measurement_request_count == 0 {
                        return usage("--measurement-request-count must be at least 1");
                    }
                    WindowRule::Count(self.measurement_request_count)
                }
            },
        )
    }

    fn check_numbers(&self, windows: &WindowRule) -> Result<(), UsageError> {
        if !(self.stability_percentage > 0.0 && self.stability_percentage.is_finite()) {
            return usage("-s/--stability-percentage must be a positive number");
        }
        if self.max_trials < 3 && windows.stabilizes() {
            return usage(
                "-r/--max-trials must be at least 3 (stability compares the last 3 windows)",
            );
        }
        if let Some(p) = self.percentile
            && !(1..=99).contains(&p)
        {
            return usage("--percentile must be between 1 and 99");
        }
        if self.string_length == 0 && self.string_data.is_none() {
            return usage("--string-length must be at least 1");
        }
        for (flag, d) in [
            ("--timeline-interval", self.timeline_interval),
            ("--request-timeout", self.requests.request_timeout),
            ("--max-send-lag", self.verdict.max_send_lag),
        ] {
            if d.is_zero() {
                return usage(format!("{flag} must be more than 0"));
            }
        }
        Ok(())
    }

    /// `--timeline`, or one next to the `-f` file when windows are a minute or longer (a soak).
    fn timeline(&self, windows: &WindowRule) -> Option<PathBuf> {
        let long = match windows {
            WindowRule::Time(d) | WindowRule::Once(d) => *d >= AUTO_TIMELINE_WINDOW,
            _ => false,
        };
        match (&self.timeline, &self.latency_report_file) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(f)) if long => Some(sibling(f, "timeline.csv")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Arrival;
    use crate::perf::plan::{ParamValue, parse_range_f64, parse_range_u32};
    use std::path::Path;
    use std::time::Duration;

    /// The plan of a command line written as one string (its words split at spaces).
    fn plan(line: &str) -> Result<PerfPlan, UsageError> {
        plan_of(&line.split_whitespace().collect::<Vec<_>>())
    }

    #[test]
    fn seed_commands_parse() {
        let p = plan(
            "-m yolov8s --concurrency-range 1:32:2 --shape images:3,640,640 --input-data random \
             -u localhost:8001 --measurement-interval 15000 -f latency_vs_concurrency.csv",
        )
        .unwrap();
        assert_eq!(p.levels.len(), 16);
        assert_eq!(p.levels[1], Stimulus::Concurrency(3));
        assert_eq!(p.levels[15], Stimulus::Concurrency(31));
        assert_eq!(p.windows, WindowRule::Time(Duration::from_millis(18_000)));
        assert_eq!(p.shapes, [("images".to_string(), vec![3, 640, 640])]);
        assert_eq!(p.protocol, None, "detected from the server");
        let p =
            plan("-m resnet_fp16 -b 8 --concurrency-range 8 --input-data random -f r.csv").unwrap();
        assert_eq!(
            (p.batch, p.levels.clone()),
            (8, vec![Stimulus::Concurrency(8)])
        );
        let p = plan(
            "-m llama3 --streaming --measurement-interval 30000 --concurrency-range 1:8:2 \
             -u localhost:8001 --async --request-parameter max_tokens:256 \
             --request-parameter temperature:0.0",
        )
        .unwrap();
        assert_eq!(p.levels, [1, 3, 5, 7].map(Stimulus::Concurrency));
        assert_eq!(
            p.request_parameters[..2],
            [
                ("max_tokens".to_string(), ParamValue::Int(256)),
                ("temperature".to_string(), ParamValue::Double(0.0))
            ]
        );
        let p = plan(
            "-m yolov8s --concurrency-range 8 --latency-report-file latency_report.csv --verbose-csv",
        )
        .unwrap();
        assert!(p.verbose_csv && p.report_file.is_some());
        assert_eq!(
            p.requests_log.as_deref(),
            Some(Path::new("latency_report.requests.jsonl"))
        );
        let p = plan(
            "-m bert_classifier --request-rate-range 100 --measurement-interval 86400000 \
             --periodic-concurrency-range 1 -f stability_24h.csv",
        )
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
    fn shard_plans() {
        let shard = |extra: &str| {
            plan(&format!(
                "-m m --concurrency-range 2:4:2 -p 1000 -r 3 {extra}"
            ))
        };
        let (a, b) = (
            shard("--shard 0/2").unwrap(),
            shard("--shard 1/2 -f other.csv").unwrap(),
        );
        assert_eq!(a.plan_id(), b.plan_id(), "paths are per process");
        assert_ne!(a.plan_id(), shard("--shard 1/2 -b 2").unwrap().plan_id());
        assert_eq!(
            b.artifact_dir.as_deref(),
            Some(Path::new("artifacts/perf-shard1-of-2"))
        );
        let p = b.level_part(1, Stimulus::Concurrency(4));
        assert_eq!(p.load.unwrap().0, Stimulus::Concurrency(2));
        // Three windows of 1.2 s each on every shard, plus 5 s of drain: a 9 s slot.
        let t = shard("--shard 1/2 --start-at 1767225600").unwrap();
        assert_eq!(t.level_length(), Some(Duration::from_millis(3600)));
        assert_eq!(t.shard.level_slot, Some(Duration::from_secs(9)));
        assert_eq!(t.shard.level_start(1), Some(1_767_225_609_000_000_000));
        for (extra, says) in [
            ("--shard 1/2 -l 50", "--latency-threshold with --shard"),
            (
                "--shard 1/2 --warmup-request-count 5 --start-at 1767225600",
                "give --level-slot",
            ),
        ] {
            let e = shard(extra).unwrap_err().0;
            assert!(e.contains(says), "{e}");
        }
        let d = shard("--shard 1/2 --artifact-dir out/s{shard}").unwrap();
        assert_eq!(d.artifact_dir.as_deref(), Some(Path::new("out/s1")));
    }

    #[test]
    fn ranges_and_errors() {
        assert_eq!(parse_range_u32("4", "f").unwrap(), (4, 4, 1));
        assert_eq!(parse_range_u32("1:4", "f").unwrap(), (1, 4, 1));
        assert!(parse_range_u32("0:4", "f").is_err());
        assert!(parse_range_u32("4:1", "f").is_err());
        let u32_refusal = |raw| parse_range_u32(raw, "--concurrency-range").unwrap_err().0;
        let f64_refusal = |raw| parse_range_f64(raw, "--request-rate-range").unwrap_err().0;
        for (e, says) in [
            (u32_refusal("1:4:0"), "the step is 0"),
            (u32_refusal("-3"), "values must be positive ('-3' is not)"),
            (u32_refusal("1,,4"), "not lists"),
            (
                f64_refusal("10:30:0"),
                "--request-rate-range 10:30:0: the step is '0'",
            ),
            (f64_refusal("-5"), "values must be positive ('-5' is not)"),
        ] {
            assert!(e.contains(says), "{e}");
        }
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
            plan("-m m --concurrency-range 1:0").is_err(),
            "open-ended sweep needs -l"
        );
        assert!(
            plan("-m m --concurrency-range 1:0 -l 50")
                .unwrap()
                .unbounded
        );
        for refused in [
            "-m m -b 0",
            "-m m --input-data /nonexistent.json",
            "-m m --service-kind openai",
            "-m m -i grpc -r 2",
        ] {
            assert!(plan(refused).is_err(), "{refused}");
        }
        // Found against real Triton: `-i http --streaming` ran and every request failed.
        let e = plan("-m m -i http --streaming").unwrap_err().0;
        assert!(e.contains("only allowed with the gRPC protocol"), "{e}");
        assert!(plan("-m m -i grpc --streaming").is_ok());
        let p =
            plan("-m m -i http --measurement-mode count_windows --measurement-request-count 20")
                .unwrap();
        assert_eq!(
            p.target.endpoint_url(),
            "http://localhost:8000/v2/models/m/infer"
        );
        assert_eq!(p.windows, WindowRule::Count(20));
    }
}
