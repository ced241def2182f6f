//! perf_analyzer mode: profile any KServe v2 model with tensors, batch sizes and perf_analyzer's
//! measurement windows and stability rule, and report as perf_analyzer does (console and `-f`
//! CSV).
//!
//! Per level, load runs continuously while contiguous windows are measured: a time window lasts
//! 1.2 × `--measurement-interval` (count windows: until `--measurement-request-count` requests
//! completed). A request belongs to the window its last response falls in; only successful
//! requests count. After each window the last three are compared: the level is stable when
//! none has zero throughput and, for both throughput and latency (average, or `--percentile`),
//! max/min ≤ 1 + `-s`/100. The level's result merges those three windows (counts and
//! histograms added, server statistics differenced across them). Up to `-r` windows are tried.
//! Where this differs from perf_analyzer: count windows close exactly when their last request
//! completes (perf_analyzer polls once a second); percentiles come from HDR histograms (0.1 %).

pub mod inputs;
pub mod plan;
pub mod report;
pub mod session;

use std::sync::Arc;

use crate::analysis::slo::SloResult;
use crate::artifact::write_file;
use crate::engine::outcome::{Ending, LevelEnd, Rules};
use crate::engine::{
    LevelSpec, Measured, Pass, Policy, RecordsFile, Session, Sinks, Stability, measure_level,
};
use crate::error::{Error, Result};
use crate::load::{Cancel, Shared, Stimulus, Stop, WindowRule, gap_pool};
use crate::metrics::{Metric, PercentileMethod, Stats};
use crate::publish::{KeyMetrics, LevelReport, Mode, Publisher, RunEnd};
use crate::record::Clock;
use crate::server_metrics::StatsSnapshot;
use crate::workload::tensor::ModelInfo;
use crate::workload::tokenizer::Tokenizer;
use plan::{PerfPlan, Protocol};

/// The server's statistics over a level, as perf_analyzer prints them.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    /// Batch elements inferred.
    pub inference_count: u64,
    /// Model executions.
    pub execution_count: u64,
    /// Successful requests.
    pub success_count: u64,
    /// Average server time per request (ns).
    pub avg_request_ns: f64,
    /// Average queue time (ns).
    pub avg_queue_ns: f64,
    /// Average compute-input time (ns).
    pub avg_compute_input_ns: f64,
    /// Average compute-infer time (ns).
    pub avg_compute_infer_ns: f64,
    /// Average compute-output time (ns).
    pub avg_compute_output_ns: f64,
}

impl ServerView {
    /// The difference of two statistics snapshots (each phase averaged over its own count).
    pub fn between(a: &StatsSnapshot, b: &StatsSnapshot) -> ServerView {
        let avg = |ns_b: u64, ns_a: u64, c_b: u64, c_a: u64| {
            let c = c_b.saturating_sub(c_a);
            if c == 0 {
                0.0
            } else {
                ns_b.saturating_sub(ns_a) as f64 / c as f64
            }
        };
        ServerView {
            inference_count: b.inference_count.saturating_sub(a.inference_count),
            execution_count: b.execution_count.saturating_sub(a.execution_count),
            success_count: b.success.count.saturating_sub(a.success.count),
            avg_request_ns: avg(b.success.ns, a.success.ns, b.success.count, a.success.count),
            avg_queue_ns: avg(b.queue.ns, a.queue.ns, b.queue.count, a.queue.count),
            avg_compute_input_ns: avg(
                b.compute_input.ns,
                a.compute_input.ns,
                b.compute_input.count,
                a.compute_input.count,
            ),
            avg_compute_infer_ns: avg(
                b.compute_infer.ns,
                a.compute_infer.ns,
                b.compute_infer.count,
                a.compute_infer.count,
            ),
            avg_compute_output_ns: avg(
                b.compute_output.ns,
                a.compute_output.ns,
                b.compute_output.count,
                a.compute_output.count,
            ),
        }
    }
}

/// One measured level (the merge of its last windows).
#[derive(Debug, Clone)]
pub struct PerfLevel {
    /// Load.
    pub stimulus: Stimulus,
    /// Successful requests in the merged windows.
    pub request_count: u64,
    /// Failed requests in the merged windows.
    pub error_count: u64,
    /// Requests × batch per second.
    pub throughput: f64,
    /// Responses per second (decoupled streaming).
    pub response_throughput: f64,
    /// Request latency (ns): send to the last non-empty response.
    pub latency: Stats,
    /// Time to first response (ns), for streaming.
    pub first_response: Option<Stats>,
    /// `--percentile N` when N is not one of 50/90/95/99: (N, value in ns).
    pub extra_percentile: Option<(u32, f64)>,
    /// Average client send time (ns).
    pub avg_send_ns: f64,
    /// Average client receive time (ns).
    pub avg_recv_ns: f64,
    /// Whether responses streamed.
    pub streaming: bool,
    /// Whether the stability rule was met (always true for single-window levels).
    pub stable: bool,
    /// Stopped by a signal before its windows could stabilise (the partial window is reported).
    pub interrupted: bool,
    /// Windows measured.
    pub windows: u32,
    /// The server's statistics over the merged windows.
    pub server: Option<ServerView>,
    /// The engine's own view over the whole level (`--server-kind`, or detected).
    pub engine: Option<crate::server_metrics::level::EngineLevelView>,
    /// Failed requests of the merged windows by kind, with the first message of each (most
    /// frequent first): what Triton said, so a failing run says why.
    pub errors: Vec<crate::stats::ErrorCount>,
    /// `--slo` results.
    pub slo: Vec<crate::analysis::slo::SloResult>,
    /// Whether the level's numbers can be trusted, and why not.
    pub validity: crate::metrics::Validity,
}

impl crate::metrics::MetricSource for PerfLevel {
    /// perf's latencies are request latencies (and time to first response when streaming), in
    /// ms like every time objective; throughput is inferences per second.
    fn metric(&self, m: crate::metrics::MetricRef) -> Option<f64> {
        use crate::metrics::{MetricRef, SystemMetric};
        let ms = |s: &Stats, stat: crate::metrics::Stat| stat.of(s) / 1e6;
        match m {
            MetricRef::Dist(Metric::RequestLatency, stat) => Some(ms(&self.latency, stat)),
            MetricRef::Dist(Metric::TimeToFirstToken, stat) => {
                self.first_response.as_ref().map(|s| ms(s, stat))
            }
            MetricRef::Dist(..) => None,
            MetricRef::System(s) => match s {
                SystemMetric::RequestThroughput => Some(self.throughput),
                SystemMetric::RequestCount => Some(self.request_count as f64),
                SystemMetric::ErrorCount => Some(self.error_count as f64),
                SystemMetric::ErrorRate => {
                    let all = self.request_count + self.error_count;
                    (all > 0).then(|| self.error_count as f64 / all as f64)
                }
                SystemMetric::QueueShare => self.server.as_ref().and_then(|v| {
                    let total = v.avg_queue_ns
                        + v.avg_compute_input_ns
                        + v.avg_compute_infer_ns
                        + v.avg_compute_output_ns;
                    (total > 0.0).then(|| v.avg_queue_ns / total)
                }),
                SystemMetric::ServerQueueTime => self.server.as_ref().map(|v| v.avg_queue_ns / 1e6),
                SystemMetric::ServerComputeTime => self.server.as_ref().map(|v| {
                    (v.avg_compute_input_ns + v.avg_compute_infer_ns + v.avg_compute_output_ns)
                        / 1e6
                }),
                SystemMetric::KvCacheUsage => self.engine.as_ref()?.kv_usage.map(|g| g.max),
                SystemMetric::Preemptions => self.engine.as_ref()?.preemptions,
                SystemMetric::OutputTokenThroughput
                | SystemMetric::TotalTokenThroughput
                | SystemMetric::RequestGoodput => None,
            },
        }
    }
}

/// What the settings block shows.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Batch size.
    pub batch: u32,
    /// Window rule.
    pub window: WindowRule,
    /// Latency threshold (ms).
    pub latency_threshold_ms: u64,
    /// "gRPC" or "HTTP".
    pub protocol: &'static str,
    /// Streaming.
    pub streaming: bool,
    /// `--percentile`.
    pub percentile: Option<u32>,
}

impl PerfLevel {
    /// perf_analyzer's numbers of a measured level: throughput in inferences (requests × batch)
    /// per second of the reported windows, latencies in ns, the server's statistics over those
    /// windows.
    pub fn from_measured(
        m: &Measured,
        batch: u32,
        percentile: Option<u32>,
        method: PercentileMethod,
    ) -> PerfLevel {
        let agg = &m.agg;
        let secs = m.windows.secs.max(1e-9);
        let streaming = m.summary.streaming;
        let lat_dist = agg.dist(Metric::RequestLatency);
        let extra = percentile
            .filter(|p| ![50, 90, 95, 99].contains(p))
            .map(|p| (p, lat_dist.percentile(f64::from(p), method)));
        let first = agg.dist(Metric::TimeToFirstToken);
        PerfLevel {
            stimulus: m.summary.stimulus,
            request_count: agg.ok,
            error_count: agg.error_count(),
            throughput: agg.ok as f64 * f64::from(batch) / secs,
            response_throughput: agg.sum_chunks as f64 / secs,
            latency: lat_dist.stats_by(1.0, method),
            first_response: (streaming && first.count() > 0).then(|| first.stats_by(1.0, method)),
            extra_percentile: extra,
            // As perf_analyzer: client send/receive times are not meaningful for decoupled
            // streams (the "receive" would span the whole generation), so they are 0 there.
            avg_send_ns: if agg.send_count > 0 && !streaming {
                agg.sum_send_ns as f64 / agg.send_count as f64
            } else {
                0.0
            },
            avg_recv_ns: if agg.ok > 0 && !streaming {
                agg.sum_recv_ns as f64 / agg.ok as f64
            } else {
                0.0
            },
            streaming,
            stable: m.windows.stable,
            interrupted: m.summary.interrupted,
            windows: m.windows.measured,
            server: m
                .windows
                .stats
                .as_ref()
                .map(|(a, b)| ServerView::between(a, b)),
            engine: m.summary.engine.clone(),
            errors: agg.error_counts(),
            slo: Vec::new(),
            validity: m.summary.validity.clone(),
        }
    }
}

/// Runs `ttftbench perf` for a plan made from its flags: returns the exit code.
pub async fn main(plan: &PerfPlan) -> Result<u8> {
    let cancel = Cancel::new();
    crate::engine::signals::watch_signals(cancel.clone());
    let outcome = run(plan, cancel.clone(), true).await?;
    if let Some(path) = &plan.report_file {
        let text = report::csv(
            &outcome.levels,
            report::CsvOptions {
                percentile: plan.percentile,
                verbose: plan.verbose_csv,
            },
        );
        write_file(path, text)?;
    }
    let mut lines = crate::report::console::untrusted_lines(
        outcome
            .levels
            .iter()
            .map(|l| (l.stimulus.name(), &l.validity)),
    );
    if !plan.slos.is_empty() {
        let named: Vec<(String, Vec<SloResult>)> = outcome
            .levels
            .iter()
            .map(|l| (l.stimulus.name(), l.slo.clone()))
            .collect();
        lines.extend(crate::analysis::slo::console_lines(&named));
    }
    for line in lines {
        crate::publish::console_text(plan.outputs.json_stdout(), &format!("{line}\n"));
    }
    let end = outcome.ending(plan.strict, plan.max_error_rate, cancel.stopping());
    for line in &end.lines {
        eprintln!("{line}");
    }
    Ok(end.code)
}

/// The result of a perf run.
#[derive(Debug, Clone)]
pub struct PerfOutcome {
    /// Levels measured, in the order run.
    pub levels: Vec<PerfLevel>,
    /// The protocol used (after detection).
    pub protocol: Protocol,
    /// What the server said about the model.
    pub model: ModelInfo,
}

impl PerfOutcome {
    /// How the run ends (perf_analyzer's rule: a single level that never stabilised fails).
    pub fn ending(&self, strict: bool, max_error_rate: f64, interrupted: bool) -> Ending {
        let ends: Vec<LevelEnd<'_>> = self
            .levels
            .iter()
            .map(|l| LevelEnd {
                load: l.stimulus,
                succeeded: l.request_count,
                errors: &l.errors,
                trustworthy: l.validity.trustworthy,
                slo: &l.slo,
                stable: l.stable,
            })
            .collect();
        crate::engine::outcome::ending(
            &ends,
            interrupted,
            Rules {
                strict,
                single_level_must_stabilize: true,
                max_error_rate,
            },
        )
    }
}

/// Runs a perf plan in-process. With `print`, writes perf_analyzer's console report to stdout
/// (stderr under `--output json`) as levels complete. The plan's result channels
/// ([`crate::publish`]) get each level and the run's end.
pub async fn run(plan: &PerfPlan, cancel: Cancel, print: bool) -> Result<PerfOutcome> {
    let (protocol, info, client, probe) = session::prepare(plan).await?;
    let dataset = inputs::dataset(plan, &info, protocol)?;
    let settings = Settings {
        batch: plan.batch,
        window: plan.windows,
        latency_threshold_ms: plan.latency_threshold_ms,
        protocol: if protocol == Protocol::Grpc {
            "gRPC"
        } else {
            "HTTP"
        },
        streaming: plan.target.streaming,
        percentile: plan.percentile,
    };
    if print {
        for n in &probe.notices {
            eprintln!("{n}");
        }
        crate::publish::console_text(plan.outputs.json_stdout(), &report::settings(&settings));
    }
    let shared = Shared {
        client,
        dataset: Arc::new(dataset),
        tokenizer: Tokenizer::builtin_gpt2(),
        clock: Clock::start(),
        cancel: cancel.clone(),
        timeout: plan.request_timeout,
        use_server_token_count: false,
        count_tokens: false,
        seed: plan.seed,
        shard: crate::load::Shard::WHOLE,
        gaps: gap_pool(),
        captures: plan
            .profile_export
            .is_some()
            .then(crate::load::capture_pool),
    };
    let mut session = Session::new(shared, probe);
    let mut sinks = open_sinks(plan, session.shared.clock)?;
    sinks.raw_export = raw_export_writer(plan, protocol, &info, &session.shared)?;
    let mut publisher = Publisher::new(&plan.outputs, Mode::Perf, &plan.target.model);
    let levels = run_levels(
        plan,
        &mut session,
        &mut sinks,
        &settings,
        print,
        &mut publisher,
    )
    .await?;
    if let Some(t) = sinks.timeline.take() {
        t.finish()?;
    }
    if let Some(r) = sinks.records.take() {
        r.finish()?;
    }
    sinks.raw_result("--profile-export-file")?;
    if let Some(w) = sinks.raw_export.take() {
        w.finish()
            .map_err(|e| Error::failed(format!("writing --profile-export-file: {e}")))?;
    }
    if print && !levels.is_empty() {
        publisher.text(&report::summary(&levels, plan.percentile));
    }
    let outcome = PerfOutcome {
        levels,
        protocol,
        model: info,
    };
    publisher.finish(&RunEnd {
        exit_code: outcome
            .ending(plan.strict, plan.max_error_rate, cancel.stopping())
            .code,
        interrupted: cancel.stopping(),
        knee: None,
        verdict: Vec::new(),
    })?;
    Ok(outcome)
}

/// The timeline and the per-request log, kept across levels.
fn open_sinks(plan: &PerfPlan, clock: Clock) -> Result<Sinks> {
    Ok(Sinks {
        timeline: match &plan.timeline {
            Some((path, every)) => Some(
                crate::artifact::timeline::Timeline::create(path, *every, clock)
                    .map_err(|e| Error::io("write", path, e))?,
            ),
            None => None,
        },
        records: match &plan.requests_log {
            Some(path) => Some(RecordsFile::create(path)?),
            None => None,
        },
        progress: None,
        raw_export: None,
        raw_error: None,
    })
}

/// perf_analyzer's `--profile-export-file`, when asked for: every output of the model listed
/// in each response, as perf_analyzer requests them all.
fn raw_export_writer(
    plan: &PerfPlan,
    protocol: Protocol,
    info: &ModelInfo,
    shared: &Shared,
) -> Result<Option<crate::artifact::raw_export::RawExportWriter>> {
    let (Some(path), Some(pool)) = (&plan.profile_export, &shared.captures) else {
        return Ok(None);
    };
    let mut target = plan.target.clone();
    if protocol == Protocol::Http {
        target.api = crate::target::Api::Infer;
    }
    let outputs = info.outputs.iter().map(|o| o.name.clone()).collect();
    let export = crate::artifact::raw_export::RawExport::new(
        &target,
        &shared.client,
        &shared.dataset,
        pool.clone(),
    )
    .with_outputs(outputs);
    let w = export
        .writer(path, shared.clock)
        .map_err(|e| Error::io("write", path, e))?;
    Ok(Some(w))
}

/// The level loop: each level in order; past the latency threshold the sweep stops, and an
/// open-ended concurrency range adds one step at a time until it is reached.
async fn run_levels(
    plan: &PerfPlan,
    session: &mut Session,
    sinks: &mut Sinks,
    settings: &Settings,
    print: bool,
    publisher: &mut Publisher,
) -> Result<Vec<PerfLevel>> {
    let mut levels: Vec<PerfLevel> = Vec::new();
    let mut todo: std::collections::VecDeque<Stimulus> = plan.levels.iter().copied().collect();
    let json = plan.outputs.json_stdout();
    let pass_line = |p: &Pass| {
        let line = format!(
            "  Pass [{}] throughput: {} infer/sec. {}: {} usec\n",
            p.index,
            report::g6(p.ok as f64 * f64::from(plan.batch) / p.secs.max(1e-9)),
            plan.percentile
                .map_or("Avg latency".to_string(), |p| format!("p{p} latency")),
            (p.latency_ns / 1000.0) as u64
        );
        crate::publish::console_text(json, &line);
    };
    while let Some(stimulus) = todo.pop_front() {
        if session.shared.cancel.stopping() {
            break;
        }
        let spec = LevelSpec {
            index: levels.len() as u32,
            stimulus,
            start_at: None,
            policy: policy(plan),
            warmup: (plan.warmup > 0).then_some(Stop::Requests(plan.warmup)),
            objectives: &[],
            max_send_lag_ms: plan.max_send_lag_ms,
            streaming: plan.target.streaming,
            percentile_method: plan.percentile_method,
            on_pass: (print && plan.verbose).then_some(&pass_line as &(dyn Fn(&Pass) + Sync)),
        };
        if let Some(w) = sinks.raw_export.as_mut() {
            w.begin_level(&stimulus)
                .map_err(|e| Error::failed(format!("writing --profile-export-file: {e}")))?;
        }
        let measured = measure_level(session, &spec, sinks).await?;
        if let Some(w) = sinks.raw_export.as_mut() {
            w.end_level()
                .map_err(|e| Error::failed(format!("writing --profile-export-file: {e}")))?;
        }
        let mut level = PerfLevel::from_measured(
            &measured,
            plan.batch,
            plan.percentile,
            plan.percentile_method,
        );
        level.slo = crate::analysis::slo::evaluate(&plan.slos, &level);
        if print {
            publisher.text(&report::level(&level, settings.protocol, plan.percentile));
        }
        publisher
            .level(LevelReport {
                stimulus,
                doc: report::json(&level),
                slo: level.slo.clone(),
                validity: level.validity.clone(),
                key: KeyMetrics::of(&level),
            })
            .await;
        let over = plan.latency_threshold_ms > 0
            && level
                .latency
                .avg
                .max(level.extra_percentile.map_or(0.0, |(_, v)| v))
                / 1e6
                >= plan.latency_threshold_ms as f64;
        levels.push(level);
        if over {
            if print {
                publisher.text(&format!(
                    "Measured latency went over the set limit of {} msec.\n",
                    plan.latency_threshold_ms
                ));
            }
            break;
        }
        // `--concurrency-range start:0`: keep adding one step until the latency threshold.
        if plan.unbounded
            && let Stimulus::Concurrency(n) = stimulus
        {
            todo.push_back(Stimulus::Concurrency(n + 1));
        }
    }
    Ok(levels)
}

/// perf_analyzer's windows as the engine's policy: one window for `--request-count` and periodic
/// runs, the stability rule otherwise.
fn policy(plan: &PerfPlan) -> Policy {
    match plan.windows {
        WindowRule::Requests(n) => Policy::Fixed(Stop::Requests(n)),
        WindowRule::Once(d) => Policy::Fixed(Stop::Window(d)),
        rule @ (WindowRule::Time(_) | WindowRule::Count(_)) => Policy::Stable(Stability {
            rule,
            tolerance: plan.stability,
            max_trials: plan.max_trials,
            percentile: plan.percentile,
            method: plan.percentile_method,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{self, DataType as SimType, ModelSpec, SimConfig, TensorSpec as SimTensor};
    use clap::Parser;

    fn plan(args: &[&str]) -> PerfPlan {
        let mut argv = vec!["ttftbench", "perf"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(&argv).unwrap();
        let crate::cli::Command::Perf(p) = cli.command else {
            panic!("expected perf")
        };
        p.plan(&[]).unwrap()
    }

    /// A YOLOv8-sized output: `[84,8400]` FP32, 2.8 MB per image.
    fn big_output_sim() -> SimConfig {
        SimConfig {
            models: vec![ModelSpec::tensor(
                "yolo_full",
                8,
                vec![SimTensor::new("images", SimType::Fp32, &[3, 8, 8])],
                vec![SimTensor::new("output0", SimType::Fp32, &[84, 8400])],
            )],
            ..SimConfig::default()
        }
    }

    /// Found against real Triton (`yolov8s`, `-b 2`): responses over 4 MiB failed with tonic's
    /// default decoding limit ("decoded message length too large") although Triton sent them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grpc_responses_over_4_mib_are_read() {
        let sim = sim::start(big_output_sim()).await.unwrap();
        let url = sim.grpc_target();
        let out = run(
            &plan(&[
                "-m",
                "yolo_full",
                "-b",
                "2",
                "-u",
                &url,
                "--request-count",
                "3",
            ]),
            Cancel::new(),
            false,
        )
        .await
        .unwrap();
        let l = &out.levels[0];
        assert!(l.errors.is_empty(), "5.6 MB responses: {:?}", l.errors);
        assert_eq!(l.request_count, 3);
        sim.shutdown().await;
    }

    /// Found against real Triton: `-x 7` of a model that has only version 1 passed discovery
    /// (metadata and config were read without the version) and every request failed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unknown_model_version_is_a_usage_error() {
        let sim = sim::start(big_output_sim()).await.unwrap();
        for (proto, url) in [("grpc", sim.grpc_target()), ("http", sim.http_url())] {
            let args = [
                "-m",
                "yolo_full",
                "-i",
                proto,
                "-u",
                &url,
                "--request-count",
                "1",
            ];
            let mut bad = args.to_vec();
            bad.extend(["-x", "7"]);
            let e = run(&plan(&bad), Cancel::new(), false).await.unwrap_err();
            assert_eq!(e.exit_code(), 2, "{proto}: a usage error, got {e}");
            assert!(e.to_string().contains("has no version 7"), "{proto}: {e}");
            let mut good = args.to_vec();
            good.extend(["-x", "1"]);
            let out = run(&plan(&good), Cancel::new(), false).await.unwrap();
            assert_eq!(out.levels[0].request_count, 1, "{proto}");
        }
        sim.shutdown().await;
    }
}
