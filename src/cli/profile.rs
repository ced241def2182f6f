//! `profile`'s flags converted into a [`RunPlan`], each section through its resolver. The clap
//! types end here.

use std::time::Duration;

use super::{DistributionArg, ProfileArgs};
use crate::analysis::sequential::{Looks, MoeTarget, Rule};
use crate::error::{UsageError, usage};
use crate::load::Arrival;
use crate::metrics::{Metric, MetricRef, Stat};
use crate::plan::resolve::{self, StopSpec, TargetSpec, WorkloadSpec};
use crate::plan::{RunPlan, Verbosity, values};
use crate::target::{Api, redact_command_line};

impl super::ApiInputArgs {
    /// The newer APIs' flags as given, with `--rankings-api` and whether `--endpoint` was.
    pub fn spec(
        &self,
        rankings_api: Option<crate::target::RankingsLayout>,
        endpoint_given: bool,
    ) -> crate::plan::apis::ApiSpec {
        crate::plan::apis::ApiSpec {
            batch_size_text: self.batch_size_text,
            batch_size_image: self.batch_size_image,
            image_width: (self.image_width_mean, self.image_width_stddev),
            image_height: (self.image_height_mean, self.image_height_stddev),
            image_format: self.image_format,
            image_dir: self.image_dir.clone(),
            tools: self.tools.clone(),
            tool_choice: self.tool_choice.clone(),
            rankings_api,
            endpoint_given,
        }
    }
}

/// The arrival process of `--request-distribution` with `--burstiness`.
pub fn arrival(d: DistributionArg, burstiness: f64) -> Result<Arrival, UsageError> {
    values::check_burstiness(burstiness)?;
    Ok(match d {
        DistributionArg::Constant => Arrival::Constant,
        DistributionArg::Poisson => Arrival::Poisson,
        DistributionArg::Gamma => values::gamma(burstiness)?,
    })
}

impl super::TargetArgs {
    /// `--streaming` / `--no-streaming`; `None` leaves it to what the target can do.
    pub fn streaming_asked(&self) -> Option<bool> {
        (self.streaming || self.no_streaming).then_some(self.streaming)
    }

    /// Where requests go, as given; `measure` holds the client's limits and the metrics headers.
    pub fn spec(&self, measure: &super::MeasureArgs) -> TargetSpec {
        TargetSpec {
            endpoint_type: self.endpoint_type,
            service_kind: self.service_kind,
            backend: self.backend,
            url: self.url.clone(),
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            streaming: self.streaming_asked(),
            headers: self.header.clone(),
            api_key: self.api_key.clone(),
            env_api_key: std::env::var("OPENAI_API_KEY").ok(),
            env_anthropic_key: std::env::var("ANTHROPIC_API_KEY").ok(),
            metrics_headers: measure.engine_view.metrics_header.clone(),
            max_event_bytes: measure.requests.max_event_size,
            tcp_quickack: measure.requests.tcp_quickack,
            tls: self.tls.spec(),
        }
    }
}

impl super::WorkloadArgs {
    /// What is sent, as given; a replayed trace's window from `fixed`.
    fn spec(&self, fixed: &super::FixedScheduleArgs) -> WorkloadSpec {
        WorkloadSpec {
            input_file: self.input_file.clone(),
            input_tokens_mean: self.synthetic_input_tokens_mean,
            input_tokens_stddev: self.synthetic_input_tokens_stddev,
            output_tokens_mean: self.output_tokens_mean,
            output_tokens_stddev: self.output_tokens_stddev,
            output_deterministic: self.output_tokens_mean_deterministic,
            num_prompts: self.num_prompts,
            tokenizer: self.tokenizer.clone(),
            seed: self.random_seed,
            extra_inputs: self.extra_inputs.clone(),
            num_prefix_prompts: self.num_prefix_prompts,
            prefix_prompt_length: self.prefix_prompt_length,
            prompt_salt: Some(self.prompt_salt.clone()),
            trace: crate::plan::traffic::TraceSpec {
                block_size: self.block_size,
                fixed_schedule: fixed.fixed_schedule,
                start_ms: fixed.fixed_schedule_start,
                end_ms: fixed.fixed_schedule_end,
                ..Default::default()
            },
            sessions: crate::plan::traffic::SessionSpec {
                num_sessions: self.num_sessions,
                turns_mean: self.session_turns_mean,
                turns_stddev: self.session_turns_stddev,
                delay_mean_ms: self.session_turn_delay_mean,
                delay_stddev_ms: self.session_turn_delay_stddev,
                header: Some(self.session_header.clone()),
                replies: self.session_replies,
            },
            rankings: false,
            accuracy: Default::default(),
        }
    }
}

impl super::MeasureArgs {
    /// `--confidence`, 95 % when not given.
    pub fn confidence(&self) -> f64 {
        self.confidence.unwrap_or(DEFAULT_CONFIDENCE)
    }
}

impl super::ArtifactArgs {
    fn verbosity(&self) -> Result<Verbosity, UsageError> {
        match (self.quiet, self.verbose) {
            (true, true) => usage("--quiet and --verbose contradict each other"),
            (true, false) => Ok(Verbosity::Quiet),
            (false, true) => Ok(Verbosity::Verbose),
            (false, false) => Ok(Verbosity::Normal),
        }
    }
}

impl ProfileArgs {
    /// The load levels and the stop rule: a trace's fixed schedule, or the concurrency or
    /// request-rate levels.
    fn load(
        &self,
        workload: &crate::workload::WorkloadPlan,
        stop: crate::load::LevelLengthRule,
    ) -> Result<(Vec<crate::load::Stimulus>, crate::load::LevelLengthRule), UsageError> {
        let (levels, open_loop) = (&self.levels, &self.run.arrival);
        if self.fixed_schedule.fixed_schedule {
            let measure = &self.run.measure;
            let spec = crate::plan::traffic::FixedScheduleSpec {
                speedup: self.fixed_schedule.fixed_schedule_speedup,
                max_inflight: open_loop.max_inflight,
                other_load: levels.concurrency.is_some() || levels.request_rate.is_some(),
                warmup: measure.warmup_request_count > 0 || measure.warmup_duration.is_some(),
                request_count: self.stop.request_count,
            };
            return crate::plan::traffic::fixed_schedule(workload, &spec, stop);
        }
        if let Some(sessions) = &workload.sessions {
            return crate::plan::traffic::session_load(
                sessions,
                levels.concurrency.as_ref(),
                levels.request_rate.is_some(),
                stop,
            );
        }
        let levels = resolve::levels(
            levels.concurrency.as_ref(),
            levels.request_rate.as_ref(),
            arrival(open_loop.request_distribution, open_loop.burstiness)?,
            open_loop.max_inflight,
        )?;
        Ok((levels, stop))
    }

    /// `--target-moe` as the sequential rule of every level: the statistic, its target, the
    /// confidence, and the caps (`--request-count`, default [`DEFAULT_MOE_CAP`]; the measurement
    /// interval or duration).
    fn target_moe(&self, streaming: bool) -> Result<Option<Rule>, UsageError> {
        let measure = &self.run.measure;
        let Some(target) = self.moe.target_moe else {
            // A scored run's accuracy intervals and verdict are at --confidence too.
            if measure.confidence.is_some() && self.run.accuracy.accuracy_benchmark.is_none() {
                return Err(UsageError(
                    "--confidence applies to --target-moe: add --target-moe 5% (or use `ttftbench search`)".into(),
                ));
            }
            return Ok(None);
        };
        if self.fixed_schedule.fixed_schedule
            || self.shard.shard.is_some()
            || self.shard.shards.is_some()
        {
            return Err(UsageError(
                "--target-moe stops each level on its own numbers: it cannot replay a trace's schedule (--fixed-schedule) or split a level over shards (--shard)".into(),
            ));
        }
        let metric = moe_metric(self.moe.moe_metric, streaming)?;
        Ok(Some(Rule::new(
            Vec::new(),
            Some(MoeTarget { metric, target }),
            measure.confidence(),
            Looks::new(self.stop.request_count.unwrap_or(DEFAULT_MOE_CAP)),
            self.stop.measurement_interval.or(self.stop.duration),
        )))
    }

    /// `profile`'s flags with `run`'s groups and every other group at its defaults: the run a
    /// search shares, whose levels and their length the search then chooses.
    pub fn with_defaults(run: super::RunArgs) -> ProfileArgs {
        ProfileArgs {
            run,
            levels: defaults(),
            fixed_schedule: defaults(),
            stop: defaults(),
            moe: defaults(),
            // Not parsed: a search in an Indexed Job is still one process (JOB_COMPLETION_INDEX).
            shard: super::ShardArgs::default(),
            repeat: defaults(),
            perf_analyzer_args: Vec::new(),
        }
    }

    /// The validated plan of these flags; `argv` is the command line, kept (redacted) for the
    /// record.
    pub fn plan(&self, argv: &[String]) -> Result<RunPlan, UsageError> {
        let super::RunArgs {
            target: t,
            workload: w,
            measure: m,
            decisions: d,
            artifacts: a,
            accuracy,
            ..
        } = &self.run;
        let passed = values::perf_analyzer_passthrough(&self.perf_analyzer_args)?;
        let mut target = resolve::target(&t.spec(m))?;
        let mut workload = resolve::workload(&WorkloadSpec {
            rankings: target.api == Api::Rankings,
            accuracy: accuracy.spec(m.confidence()),
            ..w.spec(&self.fixed_schedule)
        })?;
        crate::plan::apis::resolve(
            &w.api_inputs.spec(t.rankings_api, t.endpoint.is_some()),
            &mut target,
            &mut workload,
        )?;
        let stop = resolve::stop(&StopSpec {
            request_count: self.stop.request_count,
            // A flag of ttftbench's own wins over the same one after `--`.
            measurement_interval: self
                .stop
                .measurement_interval
                .or(passed.measurement_interval),
            duration: self.stop.duration,
            num_prompts: w.num_prompts,
        })?;
        let stop = match &workload.prompts {
            crate::workload::PromptSource::Scored(src) => {
                crate::plan::scored::check_target(target.api)?;
                crate::plan::scored::stop(src, stop)
            }
            _ => stop,
        };
        let (levels, stop) = self.load(&workload, stop)?;
        let tokenizer_from_server = resolve::tokenizer_from_server(
            target.api,
            m.tokenizer_from_server,
            workload.sessions.is_some(),
        )?;
        let target_moe = self.target_moe(target.streaming)?;
        positive("--request-timeout", m.requests.request_timeout)?;
        positive("--timeline-interval", m.timeline_interval)?;
        positive("--max-send-lag", d.verdict.max_send_lag)?;
        let mut plan = RunPlan {
            server_metrics: resolve::metrics_source(m.server_metrics_url.as_deref(), &target)?,
            server_kind: m.engine_view.server_kind,
            gpu_metrics_url: resolve::gpu_metrics_url(m.engine_view.gpu_metrics_url.as_deref())?,
            workload,
            levels,
            stop,
            warmup_requests: m.warmup_request_count,
            warmup_duration: m.warmup_duration,
            max_send_lag_ms: d.verdict.max_send_lag.as_secs_f64() * 1e3,
            strict: d.verdict.strict,
            max_error_rate: d.verdict.max_error_rate,
            timeline_interval: m.timeline_interval,
            percentile_method: m.percentile_method,
            // GenAI-Perf always writes its raw export; here it is asked for by name or by flag.
            raw_export: match a.raw_export {
                Some(r) => r == super::RawExportArg::Full,
                None => a.profile_export_file.is_some(),
            },
            export_names: crate::plan::outputs::ExportNames::from_file(
                a.profile_export_file
                    .as_deref()
                    .unwrap_or(crate::artifact::raw_export::RAW_EXPORT_FILE),
                &crate::artifact::OTHER_LEVEL_FILES,
            )?,
            artifact_dir: a.artifact_dir.clone(),
            goodput: d.goodput.iter().flat_map(|g| g.0.iter().copied()).collect(),
            run_config: super::config::resolved(argv),
            isl_buckets: m.isl_buckets.clone().unwrap_or_default(),
            slos: d.verdict.slo.clone(),
            knee_min_gain: d.knee_min_gain,
            use_server_token_count: resolve::server_token_count(
                target.api,
                m.use_server_token_count,
            )?,
            tokenizer_from_server,
            request_timeout: m.requests.request_timeout,
            request_cancellation: m.requests.cancellation.plan(),
            verbosity: match a.verbosity()? {
                Verbosity::Normal if passed.verbose => Verbosity::Verbose,
                v => v,
            },
            command_line: redact_command_line(argv),
            outputs: a.outputs.plan()?,
            target,
            shard: crate::plan::ShardPlan::default(),
            repeat: crate::plan::Repeat::ONCE,
            generate_plots: a.generate_plots,
            notices: passed.ignored,
            target_moe,
        };
        if plan.target_moe.is_none() {
            plan.notices.extend(resolve::short_count_notice(&plan.stop));
        }
        if plan.verbosity == Verbosity::Quiet {
            // `--quiet` prints only the table: no live view either.
            plan.outputs.ui = crate::plan::outputs::UiMode::None;
        }
        // The slot between level starts depends on each level's length, known once the plan is.
        plan.shard = resolve::shard(&self.shard.spec(plan.levels.len(), plan.level_length()))?;
        plan.repeat = self.repeat.plan(!plan.shard.shard.is_whole())?;
        if plan.workload.sessions.is_some() {
            crate::plan::traffic::check_session_target(
                plan.target.api,
                !plan.shard.shard.is_whole(),
            )?;
        }
        Ok(plan)
    }
}

impl super::ShardArgs {
    /// The shard section as given, for a plan of `levels` levels of `level_length` each.
    pub fn spec(&self, levels: usize, level_length: Option<Duration>) -> resolve::ShardSpec {
        resolve::ShardSpec {
            shard: self.shard,
            shards: self.shards,
            shard_index: self.shard_index,
            start_at: self.start_at,
            level_slot: self.level_slot,
            levels,
            level_length,
        }
    }
}

impl super::OutputArgs {
    /// The validated result channels; `GITHUB_STEP_SUMMARY` is read here, once.
    pub fn plan(&self) -> Result<crate::plan::outputs::Outputs, UsageError> {
        let mut outputs = crate::plan::outputs::resolve(
            self.junit.as_deref(),
            self.output,
            self.push_gateway.as_deref(),
            std::env::var_os("GITHUB_STEP_SUMMARY").map(std::path::PathBuf::from),
        )?;
        outputs.labels = crate::plan::outputs::labels(&self.labels)?;
        outputs.request_id_header =
            crate::plan::outputs::request_id_header(&self.request_id_header)?;
        outputs.ui = self.ui;
        Ok(outputs)
    }
}

impl super::DoctorArgs {
    /// doctor's one-prompt streamed plan: the same target resolution and request building as
    /// `profile`, a 16-token prompt, `--output-tokens` asked for.
    pub fn plan(&self) -> Result<RunPlan, UsageError> {
        let mut target = resolve::target(&TargetSpec {
            endpoint_type: self.endpoint_type,
            service_kind: self.service_kind,
            backend: self.backend,
            url: self.url.clone(),
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            // Embeddings and rankings answer once: their probe is not streamed.
            streaming: Some(self.endpoint_type.is_none_or(Api::generates)),
            headers: self.header.clone(),
            api_key: self.api_key.clone(),
            env_api_key: std::env::var("OPENAI_API_KEY").ok(),
            env_anthropic_key: std::env::var("ANTHROPIC_API_KEY").ok(),
            metrics_headers: self.metrics_header.clone(),
            tls: self.tls.spec(),
            ..TargetSpec::default()
        })?;
        let mut workload = resolve::workload(&WorkloadSpec {
            input_tokens_mean: Some(16),
            output_tokens_mean: target.api.generates().then_some(self.output_tokens.max(1)),
            num_prompts: Some(1),
            ..WorkloadSpec::default()
        })?;
        crate::plan::apis::resolve(
            &crate::plan::apis::ApiSpec {
                rankings_api: self.rankings_api,
                endpoint_given: self.endpoint.is_some(),
                batch_size_text: (!target.api.generates()).then_some(2),
                ..Default::default()
            },
            &mut target,
            &mut workload,
        )?;
        Ok(RunPlan {
            server_metrics: resolve::metrics_source(self.server_metrics_url.as_deref(), &target)?,
            workload,
            stop: crate::load::LevelLengthRule::Fixed(crate::load::LevelLength::Requests(1)),
            raw_export: false,
            ..RunPlan::new(target)
        })
    }
}

/// Requests per level at most under `--target-moe` without `--request-count`.
pub const DEFAULT_MOE_CAP: u64 = 10_000;
/// `--confidence` when not given.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// `--moe-metric` (a percentile or the average of a per-request metric, checked as it is
/// parsed), streamed when it needs to be; by default TTFT p99 of a streamed run, request
/// latency p99 otherwise.
fn moe_metric(given: Option<MetricRef>, streaming: bool) -> Result<MetricRef, UsageError> {
    match given {
        None if streaming => Ok(MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99)),
        None => Ok(MetricRef::Dist(Metric::RequestLatency, Stat::P99)),
        Some(m @ MetricRef::Dist(metric, _)) if metric.streaming_only() && !streaming => {
            Err(UsageError(format!(
                "--moe-metric {m}: {} is measured only on streamed responses: add --streaming",
                metric.key()
            )))
        }
        Some(m) => Ok(m),
    }
}

/// A flag group as clap fills it when none of its flags is given: its defaults, declared once
/// on its flags.
fn defaults<T: clap::Args + clap::FromArgMatches>() -> T {
    let cmd = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = cmd.get_matches_from(std::iter::empty::<&str>());
    T::from_arg_matches(&matches).expect("a group's defaults parse")
}

fn positive(flag: &str, d: Duration) -> Result<(), UsageError> {
    if d.is_zero() {
        return Err(UsageError(format!("{flag} must be more than 0")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::load::{Arrival, LevelLength, LevelLengthRule, Stimulus};
    use crate::metrics::{Metric, Objective};
    use crate::server_metrics::MetricsSource;
    use crate::target::{Api, Header};
    use clap::Parser;

    fn plan_args(args: &[&str]) -> Result<RunPlan, UsageError> {
        let mut argv = vec!["ttftbench", "profile"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(&argv).map_err(|e| UsageError(e.to_string()))?;
        match cli.command {
            Command::Profile(p) => p.plan(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
            other => panic!("expected profile, got {other:?}"),
        }
    }

    /// The plan of a command line written as one string (its words split at spaces).
    fn plan(line: &str) -> Result<RunPlan, UsageError> {
        plan_args(&line.split_whitespace().collect::<Vec<_>>())
    }

    fn window(d: Duration) -> LevelLengthRule {
        LevelLengthRule::Fixed(LevelLength::Window(d))
    }

    fn requests(n: u64) -> LevelLengthRule {
        LevelLengthRule::Fixed(LevelLength::Requests(n))
    }

    /// `--target-moe` becomes every level's sequential rule; what it cannot judge is refused
    /// with the fix.
    #[test]
    fn target_moe_rule_and_refusals() {
        let rule = plan("-m m --streaming --target-moe 5%")
            .unwrap()
            .target_moe
            .unwrap();
        let moe = rule.moe.unwrap();
        assert_eq!(
            (moe.metric.key(), moe.target),
            ("time_to_first_token.p99".to_string(), 0.05)
        );
        assert_eq!((rule.confidence, rule.looks.cap), (0.95, DEFAULT_MOE_CAP));
        let rule = plan("-m m --target-moe 10% --moe-metric request_latency.avg --confidence 90% --request-count 500")
            .unwrap()
            .target_moe
            .unwrap();
        assert_eq!(rule.moe.unwrap().metric.key(), "request_latency.avg");
        assert_eq!((rule.confidence, rule.looks.cap), (0.9, 500));
        assert!(plan("-m m").unwrap().target_moe.is_none());
        let refused = |a: &str| plan(&format!("-m m {a}")).unwrap_err().0;
        assert_eq!(
            refused("--confidence 90%"),
            "--confidence applies to --target-moe: add --target-moe 5% (or use `ttftbench search`)"
        );
        for (args, says) in [
            ("--target-moe 100%", "below 100% (e.g. 5%)"),
            (
                "--target-moe 5% --moe-metric request_throughput",
                "needs a percentile or the average of a per-request metric",
            ),
            (
                "--target-moe 5% --confidence 50%",
                "must be more than 50% and at most 99.9%",
            ),
        ] {
            assert!(refused(args).contains(says), "{args}");
        }
        assert!(
            refused("--no-streaming --target-moe 5% --moe-metric inter_token_latency.p99")
                .ends_with("is measured only on streamed responses: add --streaming")
        );
    }

    /// `--ui` becomes the plan's mode (shared with perf); `--quiet` turns the live view off.
    #[test]
    fn ui_modes() {
        use crate::plan::outputs::UiMode;
        let ui = |extra: &str| plan(&format!("-m m {extra}")).unwrap().outputs.ui;
        assert_eq!(ui(""), UiMode::Compact);
        assert_eq!(ui("--ui dashboard"), UiMode::Dashboard);
        assert_eq!(ui("--ui none"), UiMode::None);
        assert_eq!(ui("--quiet --ui dashboard"), UiMode::None);
        assert!(plan("-m m --ui fancy").is_err());
        let cli = Cli::try_parse_from(["ttftbench", "perf", "-m", "m", "--ui", "dashboard"]);
        let Ok(Cli {
            command: Command::Perf(p),
            ..
        }) = cli
        else {
            panic!("perf takes --ui")
        };
        assert_eq!(p.plan(&[]).unwrap().outputs.ui, UiMode::Dashboard);
    }

    #[test]
    fn request_rates_with_their_arrival() {
        let p = plan("-m m --request-rate 10,20 --request-distribution gamma --burstiness 0.5")
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
        assert!(plan("-m m --request-rate 10 --concurrency 4").is_err());
    }

    /// A trace file is told from a prompt file by its keys; `--fixed-schedule` makes one level
    /// of it, and what contradicts that is refused with the flag to change.
    #[test]
    fn trace_and_fixed_schedule_flags() {
        use crate::workload::{PromptSalt, PromptSource};
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.jsonl");
        let rows: String = (0..5)
            .map(|i| format!("{{\"timestamp\": {}, \"input_length\": 700, \"output_length\": {}, \"hash_ids\": [0, {i}]}}\n", i * 10, i + 1))
            .collect();
        std::fs::write(&trace, rows).unwrap();
        let t = trace.to_str().unwrap();
        let with = |extra: &str| {
            let mut a = vec!["-m", "m", "--input-file", t];
            a.extend(extra.split_whitespace());
            plan_args(&a)
        };
        let p = with("--fixed-schedule --fixed-schedule-speedup 2 --fixed-schedule-start 10 --prompt-salt none")
            .unwrap();
        assert_eq!(
            p.levels,
            [Stimulus::FixedSchedule {
                speedup: 2.0,
                max_inflight: 1024
            }]
        );
        assert_eq!(p.levels[0].name(), "fixed_schedule");
        assert_eq!(p.stop, requests(4), "the rows in the window");
        let PromptSource::Trace(src) = &p.workload.prompts else {
            panic!("a trace: {:?}", p.workload.prompts)
        };
        assert_eq!(
            (src.requests, src.block_size, src.start_ms),
            (4, 512, Some(10))
        );
        assert_eq!(p.workload.prompt_salt, PromptSalt::None);
        assert_eq!(p.input_config()["workload"]["prompt_salt"], "none");
        // The trace's prompts at a concurrency: every row, round robin.
        let p = with("--concurrency 2").unwrap();
        assert_eq!(p.workload.num_prompts, 5);
        assert_eq!(p.levels, [Stimulus::Concurrency(2)]);
        for (extra, says) in [
            ("--fixed-schedule --concurrency 4", "drop --concurrency"),
            ("--fixed-schedule --fixed-schedule-speedup 0", "above 0"),
            (
                "--fixed-schedule --request-count 9",
                "more than the 5 requests",
            ),
            ("--fixed-schedule --warmup-request-count 2", "no warm-up"),
            ("--output-tokens-mean 5", "output_length"),
            ("--num-prefix-prompts 2", "synthetic prompts"),
            ("--fixed-schedule --block-size 64", "needs 11"),
            ("--fixed-schedule-start 5", "--fixed-schedule"),
        ] {
            let e = with(extra).unwrap_err();
            assert!(e.0.contains(says), "{extra:?}: {e}");
        }
        let e = plan("-m m --fixed-schedule").unwrap_err();
        assert!(e.0.contains("give --input-file with trace rows"), "{e}");
        let e = plan("-m m --block-size 64").unwrap_err();
        assert!(e.0.contains("--block-size"), "{e}");
    }

    /// Every duration flag takes units; bare numbers keep their documented unit.
    #[test]
    fn duration_flags_take_units() {
        let p = plan("-m m --request-timeout 500ms --measurement-interval 2s --warmup-duration 1500ms --timeline-interval 250ms --max-send-lag 1")
            .unwrap();
        assert_eq!(p.request_timeout, Duration::from_millis(500));
        assert_eq!(p.stop, window(Duration::from_secs(2)));
        assert_eq!(p.warmup_duration, Some(Duration::from_millis(1500)));
        assert_eq!(p.timeline_interval, Duration::from_millis(250));
        assert_eq!(p.max_send_lag_ms, 1.0);
        let p = plan("-m m -p 4000 --request-timeout 30").unwrap();
        assert_eq!(p.stop, window(Duration::from_secs(4)));
        assert_eq!(p.request_timeout, Duration::from_secs(30));
        let e = plan("-m m --request-timeout 0").unwrap_err();
        assert!(e.0.contains("--request-timeout"), "{e}");
        let e = plan("-m m --request-timeout 5x").unwrap_err();
        assert!(e.0.contains("unknown unit 'x'"), "{e}");
    }

    #[test]
    fn seed_command_resolves() {
        let p = plan(
            "-m gpt2 --service-kind triton --backend tensorrtllm --num-prompts 200 \
             --synthetic-input-tokens-mean 200 --synthetic-input-tokens-stddev 20 \
             --output-tokens-mean 100 --output-tokens-stddev 10 --concurrency 1 \
             --measurement-interval 10000 --streaming --url localhost:8001 --artifact-dir ./ttft_c1",
        )
        .unwrap();
        assert_eq!(p.target.api, Api::Kserve);
        assert_eq!(p.target.base_url, "http://localhost:8001");
        assert_eq!(p.levels, [Stimulus::Concurrency(1)]);
        assert_eq!(p.stop, window(Duration::from_millis(10_000)));
        assert_eq!(p.workload.num_prompts, 200);
        assert_eq!(
            p.server_metrics,
            MetricsSource::Auto(vec!["http://localhost:8002/metrics".into()])
        );
    }

    #[test]
    fn openai_defaults_and_stop_rules() {
        let p = plan("-m m --service-kind openai --num-prompts 200 --streaming").unwrap();
        assert_eq!(p.target.api, Api::Chat);
        assert_eq!(
            p.target.endpoint_url(),
            "http://localhost:8000/v1/chat/completions"
        );
        assert_eq!(p.stop, requests(200));
        let p = plan("-m m --endpoint-type generate --streaming -u https://h:9/api/").unwrap();
        assert_eq!(
            p.target.endpoint_url(),
            "https://h:9/api/v2/models/m/generate_stream"
        );
        // Enough for a p99, or 25 s when the server is too slow for that.
        for (concurrency, requests) in [(8, 100), (64, 128)] {
            assert_eq!(
                p.stop.for_level(&Stimulus::Concurrency(concurrency)),
                LevelLength::RequestsOrTime {
                    requests,
                    time: Duration::from_secs(25)
                }
            );
        }
        assert!(plan("-m m --request-count 5 --measurement-interval 100").is_err());
        assert!(plan("-m m --endpoint-type chat --backend vllm").is_err());
    }

    #[test]
    fn headers_goodput_extra_inputs() {
        let p = plan_args(&[
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
            p.workload.extra_inputs[..2],
            [
                ("ignore_eos".to_string(), serde_json::json!(true)),
                ("temperature".to_string(), serde_json::json!(0.5))
            ]
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
        assert!(plan("-m m --goodput bogus:1").is_err());
        assert!(plan("-m m -H novalue").is_err());
    }

    /// Sessions: turn counts sampled from the seed, every session once by default, closed loop
    /// only, and the flags that contradict them refused with what to do instead.
    #[test]
    fn sessions_plan() {
        let with = |extra: &str| plan(&format!("-m m --endpoint-type chat {extra}"));
        let sampled = "--num-sessions 20 --session-turns-mean 4 --session-turns-stddev 2";
        let p = with(&format!("{sampled} --concurrency 3")).unwrap();
        let s = p.workload.sessions.as_ref().unwrap();
        assert_eq!((s.sessions, s.turns.len()), (20, 20));
        assert_eq!(
            s.total_turns,
            s.turns.iter().map(|&t| u64::from(t)).sum::<u64>()
        );
        assert!(s.turns.iter().any(|&t| t != 4), "sampled: {:?}", s.turns);
        assert_eq!(p.stop, requests(s.total_turns));
        assert_eq!(p.levels, [Stimulus::Concurrency(3)]);
        let again = with(sampled).unwrap();
        assert_eq!(again.workload.sessions.unwrap().turns, s.turns, "seeded");
        let counted = with("--session-turns-mean 2 --request-count 7").unwrap();
        assert_eq!(counted.workload.sessions.as_ref().unwrap().sessions, 100);
        assert_eq!(counted.stop, requests(7), "turns");
        assert!(with("").unwrap().workload.sessions.is_none());
        for (extra, says) in [
            ("--num-sessions 2 --request-rate 4", "give --concurrency N"),
            ("--session-turn-delay-mean 5", "give --num-sessions N"),
            ("--num-sessions 2 --num-prompts 5", "drop --num-prompts"),
            (
                "--num-sessions 2 --num-prefix-prompts 2",
                "drop --num-prefix-prompts",
            ),
            ("--num-sessions 0", "at least 1"),
            ("--num-sessions 2 --shard 1/2", "drop --shard"),
        ] {
            let e = with(extra).unwrap_err();
            assert!(e.0.contains(says), "{extra:?}: {e}");
        }
        let e = plan("-m m --endpoint-type kserve --num-sessions 2").unwrap_err();
        assert!(e.0.contains("--endpoint-type chat"), "{e}");
    }
}
