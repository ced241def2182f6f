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

use std::io::{BufWriter, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::artifact::timeline::Timeline;
use crate::client::discovery::PreflightError;
use crate::client::grpc::{self, GrpcClient, ResponseMode};
use crate::client::{Client, HttpClient};
use crate::error::UsageError;
use crate::load::WindowRule;
use crate::load::{Cancel, Completed, Halt, PhaseSpec, Shared, gap_pool, run_phase};
use crate::load::{Stimulus, Stop};
use crate::metrics::{Metric, Stats};
use crate::record::{Clock, Phase};
use crate::server_metrics::{ServerProbe, StatsSnapshot, StatsSource};
use crate::stats::Aggregate;
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
    /// Windows measured.
    pub windows: u32,
    /// The server's statistics over the merged windows.
    pub server: Option<ServerView>,
    /// Failed requests of the merged windows by kind, with the first message of each (most
    /// frequent first): what Triton said, so a failing run says why.
    pub errors: Vec<crate::stats::ErrorCount>,
    /// `--slo` results.
    pub slo: Vec<crate::analysis::slo::SloResult>,
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

/// One closed window.
#[derive(Debug)]
struct Window {
    start_ns: u64,
    end_ns: u64,
    agg: Aggregate,
}

impl Window {
    fn secs(&self) -> f64 {
        (self.end_ns.saturating_sub(self.start_ns)) as f64 / 1e9
    }
}

/// Runs `ttftbench perf`: returns the exit code.
pub async fn main(args: &crate::cli::PerfArgs, argv: &[String]) -> Result<u8> {
    let plan = PerfPlan::from_args(args, argv)?;
    let cancel = Cancel::new();
    crate::app::watch_signals(cancel.clone());
    let outcome = run(&plan, cancel.clone(), true).await?;
    if let Some(path) = &plan.report_file {
        let text = report::csv(
            &outcome.levels,
            report::CsvOptions {
                percentile: plan.percentile,
                verbose: plan.verbose_csv,
            },
        );
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if outcome.levels.is_empty() || outcome.levels.iter().all(|l| l.request_count == 0) {
        // Say what the server answered: without it a run where every request failed (an unknown
        // input, a model error) shows only zeros.
        match outcome.levels.iter().flat_map(|l| l.errors.first()).next() {
            Some(e) => eprintln!(
                "error: no request completed successfully; {} failed with {}: {}",
                e.count,
                e.kind,
                report::short_error(&e.example)
            ),
            None => eprintln!("error: no request completed successfully"),
        }
        return Ok(1);
    }
    if !plan.slos.is_empty() {
        let named: Vec<(String, Vec<crate::analysis::slo::SloResult>)> = outcome
            .levels
            .iter()
            .map(|l| (l.stimulus.name(), l.slo.clone()))
            .collect();
        for line in crate::analysis::slo::console_lines(&named) {
            println!("{line}");
        }
        if outcome
            .levels
            .iter()
            .any(|l| l.slo.iter().any(|r| !r.passed))
        {
            return Ok(1);
        }
    }
    if cancel.stopping() {
        // As `profile`: the shell's code for a run stopped by Ctrl-C/SIGTERM, whose report and
        // CSV cover the windows measured until then (how a soak test is ended early).
        eprintln!("interrupted: the report covers the windows measured before the signal");
        return Ok(130);
    }
    // perf_analyzer exits non-zero when its only level never stabilised.
    if outcome.levels.len() == 1 && !outcome.levels[0].stable {
        return Ok(1);
    }
    Ok(0)
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

/// Runs a perf plan in-process. With `print`, writes perf_analyzer's console report to stdout as
/// levels complete.
pub async fn run(plan: &PerfPlan, cancel: Cancel, print: bool) -> Result<PerfOutcome> {
    let (protocol, info, client, probe) = prepare(plan).await?;
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
        print!("{}", report::settings(&settings));
    }
    let shared = Arc::new(Shared {
        client,
        dataset: Arc::new(dataset),
        tokenizer: Tokenizer::builtin_gpt2(),
        clock: Clock::start(),
        cancel: cancel.clone(),
        timeout: plan.request_timeout,
        use_server_token_count: false,
        count_tokens: false,
        seed: plan.seed,
        gaps: gap_pool(),
        captures: plan
            .profile_export
            .is_some()
            .then(crate::load::capture_pool),
    });
    let mut sinks = Sinks {
        raw_export: raw_export_writer(plan, protocol, &info, &shared)?,
        timeline: match &plan.timeline {
            Some((path, every)) => Some(
                Timeline::create(path, *every, shared.clock)
                    .with_context(|| format!("cannot write {}", path.display()))?,
            ),
            None => None,
        },
        requests: match &plan.requests_log {
            Some(path) => Some(BufWriter::with_capacity(
                1 << 16,
                std::fs::File::create(path)
                    .with_context(|| format!("cannot write {}", path.display()))?,
            )),
            None => None,
        },
        error: None,
        level: String::new(),
    };
    let mut levels: Vec<PerfLevel> = Vec::new();
    let mut seq_base = 0u64;
    let mut todo: std::collections::VecDeque<Stimulus> = plan.levels.iter().copied().collect();
    while let Some(stimulus) = todo.pop_front() {
        if cancel.stopping() {
            break;
        }
        let level = measure_level(
            plan,
            &shared,
            &probe,
            stimulus,
            &mut seq_base,
            &mut sinks,
            print,
        )
        .await?;
        if print {
            print!(
                "{}",
                report::level(&level, settings.protocol, plan.percentile)
            );
        }
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
                println!(
                    "Measured latency went over the set limit of {} msec.",
                    plan.latency_threshold_ms
                );
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
    if let Some(t) = sinks.timeline.take() {
        t.finish().context("writing the timeline")?;
    }
    if let Some(w) = sinks.raw_export.take() {
        if let Some(e) = sinks.error.take() {
            return Err(e).context("writing --profile-export-file or the per-request log");
        }
        w.finish().context("writing --profile-export-file")?;
    }
    if let Some(mut w) = sinks.requests.take() {
        if let Some(e) = sinks.error.take() {
            return Err(e).context("writing the per-request log");
        }
        w.flush().context("writing the per-request log")?;
    }
    if print && !levels.is_empty() {
        print!("{}", report::summary(&levels, plan.percentile));
    }
    Ok(PerfOutcome {
        levels,
        protocol,
        model: info,
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
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Some(w))
}

/// Connects (detecting the protocol when `-i` was not given), reads the model's metadata and
/// config, and builds the client and the server probe.
async fn prepare(plan: &PerfPlan) -> Result<(Protocol, ModelInfo, Client, ServerProbe)> {
    let t = &plan.target;
    let workers = plan.levels.iter().map(Stimulus::workers).max().unwrap_or(1);
    let http = crate::run::metrics_http_client(t)?;
    let protocol = match plan.protocol {
        Some(p) => p,
        None => match grpc::connect(&t.base_url).await {
            Ok(ch) if probe_grpc(ch.clone()).await => Protocol::Grpc,
            _ => Protocol::Http,
        },
    };
    match protocol {
        Protocol::Grpc => {
            let channel = grpc::connect(&t.base_url)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
            let info = grpc::discover_version(channel.clone(), t, &plan.model_version)
                .await
                .map_err(preflight)?;
            check_model(plan, &info, protocol)?;
            let client = GrpcClient::new(t, &info, workers, channel.clone(), ResponseMode::Tensors)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
            let md = grpc::metadata_for(t)?;
            let probe = ServerProbe::new(
                http,
                &t.model,
                &plan.metrics,
                StatsSource::Grpc(channel, md),
            )
            .await
            .with_version(&plan.model_version);
            Ok((protocol, info, Client::Grpc(client), probe))
        }
        Protocol::Http => {
            let mut target = t.clone();
            target.api = crate::target::Api::Infer;
            let info = crate::client::discovery::model_info_http_version(
                &http,
                &target,
                &plan.model_version,
            )
            .await
            .map_err(preflight)?;
            check_model(plan, &info, protocol)?;
            let client = HttpClient::new(&target, workers)?;
            // perf_analyzer reads `v2/models/<m>[/versions/<v>]/stats`: with -x, that version only.
            let stats_url = format!(
                "{}/{}/stats",
                t.base_url,
                crate::client::discovery::model_path(&t.model, &plan.model_version)
            );
            let probe =
                ServerProbe::new(http, &t.model, &plan.metrics, StatsSource::Http(stats_url)).await;
            Ok((protocol, info, Client::Http(client), probe))
        }
    }
}

/// Whether the address answers KServe gRPC (ServerLive).
async fn probe_grpc(channel: tonic::transport::Channel) -> bool {
    let mut c =
        crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient::new(channel);
    let call = c.server_live(crate::proto::ServerLiveRequest {});
    matches!(
        tokio::time::timeout(Duration::from_secs(5), call).await,
        Ok(Ok(_))
    )
}

fn preflight(e: PreflightError) -> anyhow::Error {
    match e {
        PreflightError::Usage(u) => u.into(),
        e @ PreflightError::Unavailable(_) => anyhow::anyhow!(e),
    }
}

fn check_model(plan: &PerfPlan, info: &ModelInfo, protocol: Protocol) -> Result<(), UsageError> {
    // Explicit `-i http --streaming` is refused by the plan; this catches a detected HTTP server.
    if plan.target.streaming && protocol == Protocol::Http {
        return Err(UsageError(format!(
            "{} (the server at {} answered HTTP, not gRPC)",
            plan::STREAMING_NEEDS_GRPC,
            plan.target.base_url
        )));
    }
    if plan.target.streaming && !info.decoupled {
        return Err(UsageError(format!(
            "model '{}' is not decoupled (model_transaction_policy.decoupled is false), so it answers each request once and cannot stream: drop --streaming",
            info.name
        )));
    }
    if info.decoupled && !plan.target.streaming && plan.protocol == Some(Protocol::Http) {
        return Err(UsageError(format!(
            "model '{}' is decoupled: its responses only stream over gRPC; use -i grpc --streaming",
            info.name
        )));
    }
    if info.inputs.is_empty() {
        return Err(UsageError(format!(
            "model '{}' declares no inputs; perf needs its metadata to build requests",
            info.name
        )));
    }
    Ok(())
}

/// Warms up, then measures windows until stable (or the single window), and merges the last ones.
async fn measure_level(
    plan: &PerfPlan,
    shared: &Arc<Shared>,
    probe: &ServerProbe,
    stimulus: Stimulus,
    seq_base: &mut u64,
    sinks: &mut Sinks,
    print: bool,
) -> Result<PerfLevel> {
    shared.client.warm_connections(stimulus.workers()).await;
    if plan.warmup > 0 {
        let (tx, rx) = crate::load::record_queue();
        let drain = std::thread::spawn(move || std::iter::from_fn(|| rx.recv()).count());
        let spec = PhaseSpec {
            phase: Phase::Warmup,
            stimulus,
            stop: Stop::Requests(plan.warmup),
            seq_base: *seq_base,
        };
        let out = run_phase(shared.clone(), spec, tx, Halt::new()).await;
        let _ = drain.join();
        *seq_base += out.sent;
    }
    let stop = match plan.windows {
        WindowRule::Requests(n) => Stop::Requests(n),
        WindowRule::Once(d) => Stop::Window(d),
        // Runs until the stability loop halts it.
        WindowRule::Time(_) | WindowRule::Count(_) => Stop::Requests(u64::MAX),
    };
    let (win_tx, mut win_rx) = unbounded_channel::<Window>();
    let (rec_tx, rec_rx) = crate::load::record_queue();
    let start_ns = shared.clock.now_ns();
    let rule = plan.windows;
    let clock = shared.clock;
    let pool = shared.gaps.clone();
    let mut snapshots = vec![stats_now(probe).await];
    if let Some(w) = sinks.raw_export.as_mut() {
        w.begin_level(&stimulus)
            .context("writing --profile-export-file")?;
    }
    // The files travel with the collector thread and come back when it ends.
    let mut lent = std::mem::take(sinks);
    lent.level = stimulus.name();
    let collector = std::thread::Builder::new()
        .name("perf-windows".into())
        .spawn(move || collect_windows(rule, start_ns, clock, rec_rx, win_tx, pool, lent))?;
    let halt = Halt::new();
    let spec = PhaseSpec {
        phase: Phase::Measure,
        stimulus,
        stop,
        seq_base: *seq_base,
    };
    let phase = tokio::spawn(run_phase(shared.clone(), spec, rec_tx, halt.clone()));
    let mut windows: Vec<Window> = Vec::new();
    let mut measured = 0u32;
    let mut stable = !rule.stabilizes();
    while let Some(w) = win_rx.recv().await {
        snapshots.push(stats_now(probe).await);
        measured += 1;
        if print && plan.verbose {
            let lat = window_latency(&w.agg, plan.percentile);
            println!(
                "  Pass [{measured}] throughput: {} infer/sec. {}: {} usec",
                report::g6(w.agg.ok as f64 * f64::from(plan.batch) / w.secs().max(1e-9)),
                plan.percentile
                    .map_or("Avg latency".to_string(), |p| format!("p{p} latency")),
                (lat / 1000.0) as u64
            );
        }
        windows.push(w);
        if windows.len() > 3 {
            windows.remove(0);
            snapshots.remove(0);
        }
        if !rule.stabilizes() {
            continue;
        }
        if windows.len() == 3 && is_stable(&windows, plan) {
            stable = true;
            break;
        }
        if measured >= plan.max_trials || shared.cancel.stopping() {
            break;
        }
    }
    halt.halt();
    let out = phase.await.context("the load task failed")?;
    *seq_base += out.sent;
    // Wait for the collector to finish (it ends when the last sender is gone).
    while let Some(w) = win_rx.recv().await {
        if !rule.stabilizes() && windows.is_empty() {
            snapshots.push(stats_now(probe).await);
            windows.push(w);
        }
    }
    *sinks = collector
        .join()
        .map_err(|_| anyhow::anyhow!("the measurement thread panicked"))?;
    if let Some(w) = sinks.raw_export.as_mut() {
        w.end_level().context("writing --profile-export-file")?;
    }
    if windows.is_empty() {
        anyhow::bail!("no measurement window completed for {}", stimulus.name());
    }
    // Single-window levels: the snapshot before and the one after the window.
    let (first_snap, last_snap) = (
        snapshots.first().cloned().flatten(),
        snapshots.last().cloned().flatten(),
    );
    let mut level = merge(
        plan, stimulus, &windows, measured, stable, first_snap, last_snap,
    );
    level.slo = crate::analysis::slo::evaluate(&plan.slos, &level);
    Ok(level)
}

/// The statistics extension's counters now. Only those: perf reports no Prometheus numbers,
/// and scraping `/metrics` first would read the counters that much later than the window's
/// end, while requests keep completing (the client's and the server's counts then differ more).
async fn stats_now(probe: &ServerProbe) -> Option<StatsSnapshot> {
    probe.read_stats().await.ok().flatten()
}

fn window_latency(agg: &Aggregate, percentile: Option<u32>) -> f64 {
    let d = agg.dist(Metric::RequestLatency);
    match percentile {
        Some(p) => d.histogram().value_at_quantile(f64::from(p) / 100.0) as f64,
        None => d.stats(1.0).avg,
    }
}

/// perf_analyzer's rule over the last three windows.
fn is_stable(w: &[Window], plan: &PerfPlan) -> bool {
    let tput: Vec<f64> = w
        .iter()
        .map(|x| x.agg.ok as f64 / x.secs().max(1e-9))
        .collect();
    let lat: Vec<f64> = w
        .iter()
        .map(|x| window_latency(&x.agg, plan.percentile))
        .collect();
    let within = |v: &[f64]| {
        let (mn, mx) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        mn > 0.0 && mx / mn <= 1.0 + plan.stability
    };
    within(&tput) && within(&lat)
}

fn merge(
    plan: &PerfPlan,
    stimulus: Stimulus,
    windows: &[Window],
    measured: u32,
    stable: bool,
    before: Option<StatsSnapshot>,
    after: Option<StatsSnapshot>,
) -> PerfLevel {
    let mut agg = Aggregate::new();
    let mut secs = 0.0;
    for w in windows {
        agg.merge(&w.agg);
        secs += w.secs();
    }
    let secs = secs.max(1e-9);
    let lat_dist = agg.dist(Metric::RequestLatency);
    let extra = plan
        .percentile
        .filter(|p| ![50, 90, 95, 99].contains(p))
        .map(|p| {
            (
                p,
                lat_dist.histogram().value_at_quantile(f64::from(p) / 100.0) as f64,
            )
        });
    let first = agg.dist(Metric::TimeToFirstToken);
    PerfLevel {
        stimulus,
        request_count: agg.ok,
        error_count: agg.error_count(),
        throughput: agg.ok as f64 * f64::from(plan.batch) / secs,
        response_throughput: agg.sum_chunks as f64 / secs,
        latency: lat_dist.stats(1.0),
        first_response: (plan.target.streaming && first.count() > 0).then(|| first.stats(1.0)),
        extra_percentile: extra,
        // As perf_analyzer: client send/receive times are not meaningful for decoupled streams
        // (the "receive" would span the whole generation), so they are 0 there.
        avg_send_ns: if agg.send_count > 0 && !plan.target.streaming {
            agg.sum_send_ns as f64 / agg.send_count as f64
        } else {
            0.0
        },
        avg_recv_ns: if agg.ok > 0 && !plan.target.streaming {
            agg.sum_recv_ns as f64 / agg.ok as f64
        } else {
            0.0
        },
        streaming: plan.target.streaming,
        stable,
        windows: measured,
        server: match (before, after) {
            (Some(a), Some(b)) => Some(ServerView::between(&a, &b)),
            _ => None,
        },
        errors: agg.error_counts(),
        slo: Vec::new(),
    }
}

/// The collector thread: assigns each finished request to the window its last response falls
/// in, sends each window when it closes, feeds the timeline, and recycles gap buffers. Returns
/// the timeline when the load has stopped.
fn collect_windows(
    rule: WindowRule,
    start_ns: u64,
    clock: Clock,
    rx: crate::load::RecordSource,
    tx: UnboundedSender<Window>,
    pool: crate::load::GapPool,
    mut sinks: Sinks,
) -> Sinks {
    // Completions reach this thread microseconds after they end; a time window closes once its
    // end is this far in the past, so late arrivals still land in the right window.
    const GRACE_NS: u64 = 5_000_000;
    let len_ns = match rule {
        WindowRule::Time(d) => Some(d.as_nanos() as u64),
        _ => None,
    };
    let mut cur = Window {
        start_ns,
        end_ns: len_ns.map_or(u64::MAX, |l| start_ns + l),
        agg: Aggregate::new(),
    };
    let close = |cur: &mut Window, next_end: u64, tx: &UnboundedSender<Window>| {
        let next = Window {
            start_ns: cur.end_ns,
            end_ns: next_end,
            agg: Aggregate::new(),
        };
        let _ = tx.send(std::mem::replace(cur, next));
    };
    loop {
        let msg = rx.recv_timeout(Duration::from_millis(2));
        let closed = matches!(msg, Err(crate::load::queue::Empty::Closed));
        if let Ok(Completed {
            record,
            mut gaps,
            capture,
        }) = msg
        {
            sinks.raw_export(&record, capture);
            if record.phase == Phase::Measure {
                sinks.record(&clock, &record);
                let end = record.last_token_ns.unwrap_or(record.end_ns);
                if let Some(len) = len_ns {
                    while end >= cur.end_ns {
                        let next_end = cur.end_ns + len;
                        close(&mut cur, next_end, &tx);
                    }
                }
                cur.agg.record(&record, &[], &[]);
                if let WindowRule::Count(n) = rule
                    && cur.agg.ok >= n
                {
                    cur.end_ns = end.max(cur.start_ns + 1);
                    close(&mut cur, u64::MAX, &tx);
                }
            }
            gaps.clear();
            let _ = pool.push(gaps);
        }
        let now = clock.now_ns();
        if let Some(t) = sinks.timeline.as_mut() {
            t.advance(now);
        }
        if let Some(len) = len_ns {
            while now >= cur.end_ns + GRACE_NS {
                let next_end = cur.end_ns + len;
                close(&mut cur, next_end, &tx);
            }
        }
        if closed {
            break;
        }
    }
    // Single-window rules report once the load has stopped: the window ends at its last response.
    if matches!(rule, WindowRule::Once(_) | WindowRule::Requests(_)) {
        cur.end_ns = cur
            .agg
            .last_response_ns
            .unwrap_or_else(|| clock.now_ns())
            .max(cur.start_ns + 1);
        let _ = tx.send(cur);
    }
    sinks
}

/// Where measured requests are written besides the windows: the timeline and, with
/// `--verbose-csv`, the per-request log. Lent to each level's collector thread.
#[derive(Default)]
struct Sinks {
    timeline: Option<Timeline>,
    requests: Option<BufWriter<std::fs::File>>,
    /// `--profile-export-file`.
    raw_export: Option<crate::artifact::raw_export::RawExportWriter>,
    /// The first write error; the run reports it at the end instead of stopping mid-level.
    error: Option<std::io::Error>,
    /// The level being measured, as the per-request log names it (`concurrency8`).
    level: String,
}

impl Sinks {
    /// Hands a request and its response capture to the raw export (which recycles the capture).
    fn raw_export(
        &mut self,
        record: &crate::record::RequestRecord,
        capture: Option<crate::client::Capture>,
    ) {
        if let Some(w) = self.raw_export.as_mut()
            && let Err(e) = w.record(record, capture)
            && self.error.is_none()
        {
            self.error = Some(e);
        }
    }

    fn record(&mut self, clock: &Clock, record: &crate::record::RequestRecord) {
        if let Some(t) = self.timeline.as_mut() {
            t.record(record);
        }
        if let Some(w) = self.requests.as_mut()
            && self.error.is_none()
            && let Err(e) = crate::artifact::records::write_row(w, &self.level, clock, record)
        {
            self.error = Some(e);
        }
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
        PerfPlan::from_args(&p, &[]).unwrap()
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
            let u = e
                .downcast_ref::<UsageError>()
                .unwrap_or_else(|| panic!("{proto}: a usage error, got {e:#}"));
            assert!(u.0.contains("has no version 7"), "{proto}: {u}");
            let mut good = args.to_vec();
            good.extend(["-x", "1"]);
            let out = run(&plan(&good), Cancel::new(), false).await.unwrap();
            assert_eq!(out.levels[0].request_count, 1, "{proto}");
        }
        sim.shutdown().await;
    }
}
