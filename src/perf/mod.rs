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

pub mod files;
pub mod inputs;
pub mod plan;
pub mod repeat;
pub mod report;
pub mod session;

use std::sync::Arc;

use crate::analysis::slo::SloResult;
use crate::artifact::write_file;
use crate::engine::files as files_w;
use crate::engine::levels::{self, Flow, Planned, Ran};
use crate::engine::live::{Display, LiveView};
use crate::engine::outcome::{Ending, LevelEnd, Rules};
use crate::engine::{
    LevelSpec, Measured, Pass, Policy, RecordsFile, Session, Sinks, Stability, measure_level,
};
use crate::error::{Error, Result};
use crate::load::{Interrupt, LevelLength, Shared, Stimulus, WindowRule, gap_pool};
use crate::metrics::{Metric, PercentileMethod, Stats};
use crate::publish::{KeyMetrics, LevelReport, Mode, Publisher, RunEnd};
use crate::record::Clock;
use crate::server_metrics::StatsSnapshot;
use crate::workload::tensor::ModelInfo;
use crate::workload::tokenizer::Tokenizer;
use plan::{PerfPlan, Protocol};

/// The server's statistics over a level, as perf_analyzer prints them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
        // Each phase averaged over its own count between the two snapshots.
        let avg = |phase: fn(&StatsSnapshot) -> &crate::server_metrics::Duration| {
            let (pa, pb) = (phase(a), phase(b));
            match pb.count.saturating_sub(pa.count) {
                0 => 0.0,
                c => pb.ns.saturating_sub(pa.ns) as f64 / c as f64,
            }
        };
        ServerView {
            inference_count: b.inference_count.saturating_sub(a.inference_count),
            execution_count: b.execution_count.saturating_sub(a.execution_count),
            success_count: b.success.count.saturating_sub(a.success.count),
            avg_request_ns: avg(|s| &s.success),
            avg_queue_ns: avg(|s| &s.queue),
            avg_compute_input_ns: avg(|s| &s.compute_input),
            avg_compute_infer_ns: avg(|s| &s.compute_infer),
            avg_compute_output_ns: avg(|s| &s.compute_output),
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
    /// Requests of the merged windows the client cancelled on purpose
    /// (`--request-cancellation-rate`): neither successes nor failures, in no statistic.
    pub cancelled_count: u64,
    /// Requests of the merged windows a second Ctrl-C abandoned in flight: neither successes
    /// nor failures, in no statistic.
    pub abandoned_count: u64,
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
    /// Whether responses were asked to stream (`--streaming`).
    pub streaming: bool,
    /// Asked to stream, every successful request's responses came in one piece: one response,
    /// or all of them at once. The level has no time to first response apart from its latency,
    /// so none is reported.
    pub whole_responses: bool,
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
                // No token counts in tensor profiling; drift is judged on profile's levels.
                SystemMetric::OutputTokenThroughput
                | SystemMetric::TotalTokenThroughput
                | SystemMetric::RequestGoodput
                | SystemMetric::InputThroughput
                | SystemMetric::InputTokenThroughput
                | SystemMetric::ToolCallShare
                | SystemMetric::ToolArgsValidShare
                | SystemMetric::Accuracy
                | SystemMetric::AnswerChangedShare
                | SystemMetric::TtftP99Drift
                | SystemMetric::LatencyP99Drift
                | SystemMetric::ThroughputDrift => None,
            },
        }
    }
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
        let windows = files::PerfSection::of(m, batch);
        PerfLevel::from_parts(&m.summary, &m.agg, &windows, percentile, method)
    }

    /// perf_analyzer's numbers of a level's summary, its reported requests' aggregate and how
    /// its windows went (also a merged level's: the shards' aggregates summed).
    pub fn from_parts(
        summary: &crate::stats::LevelSummary,
        agg: &crate::stats::Aggregate,
        w: &files::PerfSection,
        percentile: Option<u32>,
        method: PercentileMethod,
    ) -> PerfLevel {
        let secs = w.window_secs.max(1e-9);
        let streaming = summary.streaming;
        let lat_dist = agg.dist(Metric::RequestLatency);
        let extra = percentile
            .filter(|p| ![50, 90, 95, 99].contains(p))
            .map(|p| (p, lat_dist.percentile(f64::from(p), method)));
        let first = agg.dist(Metric::TimeToFirstToken);
        let whole = streaming && agg.came_whole();
        // As perf_analyzer: client send/receive times are not meaningful for decoupled
        // streams (the "receive" would span the whole generation), so they are 0 there.
        let client_avg = |sum_ns: u64, count: u64| {
            if count > 0 && !streaming {
                sum_ns as f64 / count as f64
            } else {
                0.0
            }
        };
        PerfLevel {
            stimulus: summary.stimulus,
            request_count: agg.ok,
            error_count: agg.error_count(),
            cancelled_count: agg.cancelled,
            abandoned_count: agg.abandoned,
            throughput: agg.ok as f64 * f64::from(w.batch) / secs,
            response_throughput: agg.sum_chunks as f64 / secs,
            latency: lat_dist.stats_by(1.0, method),
            first_response: (streaming && !whole && first.count() > 0)
                .then(|| first.stats_by(1.0, method)),
            extra_percentile: extra,
            avg_send_ns: client_avg(agg.sum_send_ns, agg.send_count),
            avg_recv_ns: client_avg(agg.sum_recv_ns, agg.ok),
            streaming,
            whole_responses: whole,
            stable: w.stable,
            interrupted: summary.interrupted,
            windows: w.windows,
            server: w.server.clone(),
            engine: summary.engine.clone(),
            errors: agg.error_counts(),
            slo: Vec::new(),
            validity: summary.validity.clone(),
        }
    }
}

/// Runs `ttftbench perf` for a plan made from its flags: returns the exit code.
pub async fn main(plan: &PerfPlan) -> Result<u8> {
    let interrupt = Interrupt::new();
    crate::engine::signals::watch_signals(interrupt.clone());
    let outcome = if plan.repeat.is_repeated() {
        let r = repeat::run_repeated(plan, interrupt.clone()).await?;
        finish_repeated(plan, &r)?;
        r.combined
    } else {
        let outcome = run(plan, interrupt.clone(), true).await?;
        if let Some(path) = &plan.report_file {
            write_file(path, report_csv(plan, &outcome.levels))?;
            // A single run's file: spread from an earlier repeated run no longer describes it.
            let _ = std::fs::remove_file(crate::artifact::repeat::sidecar(path));
        }
        outcome
    };
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
    let end = outcome.ending(plan.strict, plan.max_error_rate);
    for line in &end.lines {
        eprintln!("{line}");
    }
    Ok(end.code)
}

/// The `-f` file's text for `levels`.
fn report_csv(plan: &PerfPlan, levels: &[PerfLevel]) -> String {
    report::csv(
        levels,
        report::CsvOptions {
            percentile: plan.percentile,
            verbose: plan.verbose_csv,
        },
    )
}

/// A repeated run's `-f` file (the medians), its spread beside it, and the spread on the
/// console.
fn finish_repeated(plan: &PerfPlan, r: &repeat::Repeated) -> Result<()> {
    let spreads = repeat::spreads(r);
    if let Some(path) = &plan.report_file {
        write_file(path, report_csv(plan, &r.combined.levels))?;
        write_file(
            &crate::artifact::repeat::sidecar(path),
            crate::artifact::repeat::csv(&spreads),
        )?;
    }
    crate::publish::console_text(
        plan.outputs.json_stdout(),
        &crate::report::console::repetitions_table(
            r.reps.len(),
            &spreads,
            plan.report_file
                .as_deref()
                .map(|p| crate::artifact::repeat::sidecar(p).display().to_string())
                .as_deref(),
        ),
    );
    Ok(())
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
    /// Levels at which this shard had no load: name and why.
    pub idle: Vec<(String, String)>,
    /// Whether a stop left planned requests unmeasured (a level cut short, levels not run).
    pub interrupted: bool,
}

impl PerfOutcome {
    /// How the run ends (perf_analyzer's rule: a single level that never stabilised fails; a
    /// shard with no load at any level ends with 0).
    pub fn ending(&self, strict: bool, max_error_rate: f64) -> Ending {
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
        let rules = Rules {
            strict,
            single_level_must_stabilize: true,
            max_error_rate,
        };
        crate::engine::outcome::ending_or_idle(&ends, &self.idle, self.interrupted, rules)
    }
}

/// Runs a perf plan in-process. With `print`, writes perf_analyzer's console report to stdout
/// (stderr under `--output json`) as levels complete. The plan's result channels
/// ([`crate::publish`]) get each level and the run's end.
pub async fn run(plan: &PerfPlan, interrupt: Interrupt, print: bool) -> Result<PerfOutcome> {
    let dirs: Vec<_> = plan
        .levels
        .iter()
        .filter_map(|s| files::level_dir(plan, s))
        .collect();
    crate::artifact::ensure_levels_writable(&dirs)?;
    let (protocol, info, client, probe) = session::prepare(plan).await?;
    let dataset = partition(inputs::dataset(plan, &info, protocol)?, plan, print)?;
    let protocol_name = if protocol == Protocol::Grpc {
        "gRPC"
    } else {
        "HTTP"
    };
    if print {
        for n in &probe.notices {
            eprintln!("{n}");
        }
        crate::publish::console_text(
            plan.outputs.json_stdout(),
            &report::settings(plan, protocol_name),
        );
    }
    let context = crate::context::RunContext::new(
        plan.outputs.labels.clone(),
        probe.identity.clone(),
        probe.model.clone(),
        crate::record::unix_now_ns(),
    );
    let shared = Shared {
        client,
        dataset: Arc::new(dataset),
        tokenizer: Tokenizer::builtin_gpt2(),
        clock: Clock::start(),
        interrupt: interrupt.clone(),
        timeout: plan.request_timeout,
        cancellation: plan.request_cancellation.chooser(plan.seed),
        use_server_token_count: false,
        count_tokens: false,
        seed: plan.seed,
        shard: plan.shard.shard,
        gaps: gap_pool(),
        captures: plan
            .profile_export
            .is_some()
            .then(crate::load::capture_pool),
        request_ids: crate::engine::session::request_ids(
            Some(&context.run_id),
            &plan.outputs,
            protocol == Protocol::Grpc,
        ),
        // perf sends no sessions.
        session_header: None,
    };
    let session = Session::new(shared, probe);
    // The timeline and the per-request log, kept across levels.
    let timeline = plan
        .timeline
        .as_ref()
        .map(|(p, every)| (p.as_path(), *every));
    let records = plan.requests_log.as_deref();
    let mut sinks = Sinks::files(&session.shared, records, timeline, plan.target.streaming)?;
    sinks.raw_export = raw_export_writer(plan, protocol, &info, &session.shared)?;
    if print {
        sinks.live = live_view(plan);
    }
    let publisher = Publisher::new(&plan.outputs, Mode::Perf, &plan.target.model);
    let mut sweep = Sweep {
        plan,
        plan_id: plan.plan_id(),
        input_config: plan.input_config(),
        session,
        context,
        sinks,
        protocol: protocol_name,
        print,
        publisher,
        todo: plan.levels.iter().copied().collect(),
        whole: None,
        index: 0,
    };
    let Ran { levels, idle, cut } = levels::run(&mut sweep, &interrupt, print).await?;
    let Sweep {
        mut sinks,
        publisher,
        ..
    } = sweep;
    sinks.finish_files("--profile-export-file")?;
    if let Some(w) = sinks.raw_export.take() {
        w.finish()
            .map_err(|e| Error::failed(format!("writing --profile-export-file: {e}")))?;
    }
    if print && !levels.is_empty() {
        publisher.text(&report::summary(&levels, plan.percentile));
    }
    if print && levels.iter().any(|l| l.whole_responses) {
        eprintln!(
            "{}",
            report::whole_responses_hint(&info.name, info.input("stream").is_some())
        );
    }
    let interrupted = cut || levels.iter().any(|l| l.interrupted);
    let outcome = PerfOutcome {
        levels,
        protocol,
        model: info,
        idle,
        interrupted,
    };
    publisher.finish(&RunEnd {
        exit_code: outcome.ending(plan.strict, plan.max_error_rate).code,
        interrupted,
        knee: None,
        verdict: Vec::new(),
    })?;
    Ok(outcome)
}

/// The live view `--ui` asks for on stderr, over the plan's levels (an open-ended
/// `--concurrency-range N:0` has no total).
fn live_view(plan: &PerfPlan) -> Option<LiveView> {
    let total = u32::try_from(plan.levels.len())
        .ok()
        .filter(|_| !plan.unbounded);
    Display::for_stderr(plan.outputs.ui).map(|d| LiveView::stderr(d, total))
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
        shared.client.response_form(&target),
        &shared.dataset,
        pool.clone(),
    )
    .with_outputs(outputs);
    let w = export
        .writer(path, shared.clock)
        .map_err(|e| Error::io("write", path, e))?;
    Ok(Some(w))
}

/// A shard's part of the input data: entries `index`, `index + count`, ... of a list of
/// several (`--input-data` files); random or zero data, one tensor set, is sent by every shard.
fn partition(
    d: crate::workload::Dataset,
    plan: &PerfPlan,
    print: bool,
) -> Result<crate::workload::Dataset> {
    let s = plan.shard.shard;
    if s.is_whole() || d.len() < 2 {
        return Ok(d);
    }
    if d.len() < s.count as usize {
        if print {
            eprintln!(
                "{s}: {} input-data entries are fewer than the {} shards: every shard sends all of them",
                d.len(),
                s.count
            );
        }
        return Ok(d);
    }
    Ok(d.partition(s.index, s.count)?)
}

/// `perf`'s choices in the level loop: the plan's levels in order (an open-ended concurrency
/// range adds one step at a time), each measured under perf_analyzer's windows into the
/// run-wide files and, with a level directory, its own; past the latency threshold the sweep
/// stops.
struct Sweep<'a> {
    plan: &'a PerfPlan,
    /// The plan's identity, written into every level's files.
    plan_id: String,
    /// The plan's recorded form, likewise.
    input_config: serde_json::Value,
    session: Session,
    context: crate::context::RunContext,
    /// The run-wide timeline, requests log, raw export and live view.
    sinks: Sinks,
    /// `gRPC` or `HTTP`, as the report names the protocol.
    protocol: &'static str,
    /// Whether perf_analyzer's console report is printed.
    print: bool,
    publisher: Publisher,
    /// The levels still to run.
    todo: std::collections::VecDeque<Stimulus>,
    /// The plan's level last asked for (a shard measures its part of it).
    whole: Option<Stimulus>,
    /// The next level's place in the plan.
    index: usize,
}

impl levels::Mode for Sweep<'_> {
    type Probe = ();
    type Level = PerfLevel;

    /// With `--start-at`: when the levels start and, for shards, how long a level lasts.
    fn announce(&self) {
        let plan = self.plan;
        let Some(mut line) = crate::engine::start::schedule_line(&plan.shard) else {
            return;
        };
        if !self.print {
            return;
        }
        let s = plan.shard.shard;
        if !s.is_whole() && plan.windows.stabilizes() {
            line.push_str(&format!(
                "; every level measures all {} windows (-r) on every shard, so shards stay together",
                plan.max_trials
            ));
        }
        crate::publish::console_text(plan.outputs.json_stdout(), &format!("{line}\n"));
    }

    fn next(&mut self, _done: &[PerfLevel]) -> Option<Planned<()>> {
        let stimulus = self.todo.pop_front()?;
        self.whole = Some(stimulus);
        let part = self.plan.level_part(self.index, stimulus);
        self.index += 1;
        Some(Planned {
            part,
            dir: files::level_dir(self.plan, &stimulus),
            probe: (),
        })
    }

    fn writer(&self) -> files_w::Writer<'_> {
        files_w::Writer {
            mode: "perf",
            plan_id: &self.plan_id,
            shard: &self.plan.shard,
            anchor_unix_ns: self.session.shared.clock.unix_anchor_ns(),
            run_config: &self.plan.run_config,
        }
    }

    /// One level (this process's part of it) on the engine; with a level directory, its rows
    /// go to the directory's `requests.jsonl` and its files are written there. Its report is
    /// printed and published.
    async fn measure(&mut self, level: Planned<()>) -> Result<PerfLevel> {
        let plan = self.plan;
        let (stimulus, stop) = level.load()?;
        let pass_line = |p: &Pass| {
            let line = format!(
                "  Pass [{}] throughput: {} infer/sec. {}: {} usec\n",
                p.index,
                report::g6(p.ok as f64 * f64::from(plan.batch) / p.secs.max(1e-9)),
                plan.percentile
                    .map_or("Avg latency".to_string(), |p| format!("p{p} latency")),
                (p.latency_ns / 1000.0) as u64
            );
            crate::publish::console_text(plan.outputs.json_stdout(), &line);
        };
        let spec = LevelSpec {
            index: level.part.index,
            stimulus,
            start_at: level.part.start_at,
            policy: policy(plan, stop),
            warmup: level.part.warmup,
            objectives: &[],
            isl_edges: &[],
            max_send_lag_ms: plan.max_send_lag_ms,
            streaming: plan.target.streaming,
            percentile_method: plan.percentile_method,
            on_pass: (self.print && plan.verbose).then_some(&pass_line as &(dyn Fn(&Pass) + Sync)),
            own_line: false,
        };
        let run_wide = match &level.dir {
            Some(d) => {
                crate::error::create_dir(d)?;
                let records = RecordsFile::create(
                    &d.join(crate::artifact::RECORDS_FILE),
                    self.session.shared.request_ids.clone(),
                )?;
                Some(self.sinks.records.replace(records))
            }
            None => None,
        };
        if let Some(w) = self.sinks.raw_export.as_mut() {
            w.begin_level(&stimulus)
                .map_err(|e| Error::failed(format!("writing --profile-export-file: {e}")))?;
        }
        let mut measured = measure_level(&mut self.session, &spec, &mut self.sinks).await?;
        if let Some(w) = self.sinks.raw_export.as_mut() {
            w.end_level()
                .map_err(|e| Error::failed(format!("writing --profile-export-file: {e}")))?;
        }
        let mut perf_level = PerfLevel::from_measured(
            &measured,
            plan.batch,
            plan.percentile,
            plan.percentile_method,
        );
        perf_level.slo = crate::analysis::slo::evaluate(&plan.slos, &perf_level);
        // The level's files say what its console block says: responses that came whole have no
        // time to first token or between tokens (the plan, and so `merge`, still says streamed).
        measured.summary.streaming &= !perf_level.whole_responses;
        if self.print {
            levels::say_measured(&measured, plan.shard.shard);
        }
        if let (Some(d), Some(before)) = (&level.dir, run_wide) {
            if let Some(r) = std::mem::replace(&mut self.sinks.records, before) {
                r.finish()?;
            }
            self.write_level(d, &level.part, &measured, &perf_level)?;
        }
        self.publish(level.part.whole, &perf_level).await;
        Ok(perf_level)
    }

    /// Past the latency threshold the sweep stops; an open-ended concurrency range adds one
    /// step at a time until it is reached.
    fn after(&mut self, done: &[PerfLevel]) -> Flow {
        let plan = self.plan;
        let Some(level) = done.last() else {
            return Flow::Next;
        };
        let over = plan.latency_threshold_ms > 0
            && level
                .latency
                .avg
                .max(level.extra_percentile.map_or(0.0, |(_, v)| v))
                / 1e6
                >= plan.latency_threshold_ms as f64;
        if over {
            if self.print {
                self.publisher.text(&format!(
                    "Measured latency went over the set limit of {} msec.\n",
                    plan.latency_threshold_ms
                ));
            }
            return Flow::Stop;
        }
        // `--concurrency-range start:0`: keep adding one step until the latency threshold.
        if plan.unbounded
            && let Some(Stimulus::Concurrency(n)) = self.whole
        {
            self.todo.push_back(Stimulus::Concurrency(n + 1));
        }
        Flow::Next
    }
}

impl Sweep<'_> {
    /// A measured level's files in `dir`: GenAI-Perf's with a `perf` section, the histograms
    /// and, for a shard, `shard.json`.
    fn write_level(
        &mut self,
        dir: &std::path::Path,
        part: &crate::plan::LevelPart,
        measured: &Measured,
        level: &PerfLevel,
    ) -> Result<()> {
        levels::note_gpus(&mut self.context, measured);
        let section = files::PerfSection::of(measured, self.plan.batch);
        let own = vec![section.entry()];
        let writer = levels::Mode::writer(self);
        let doc = writer.level_doc(
            &measured.summary,
            &self.input_config,
            own,
            &level.slo,
            &self.context,
        );
        let names = crate::plan::outputs::ExportNames::default();
        writer.write_level(dir, &names, measured, &doc, part)
    }

    /// Prints the level's block of perf_analyzer's report and hands it to the result channels.
    async fn publish(&mut self, whole: Stimulus, level: &PerfLevel) {
        if self.print {
            self.publisher
                .text(&report::level(level, self.protocol, self.plan.percentile));
        }
        self.publisher
            .level(LevelReport {
                stimulus: whole,
                doc: report::json(level),
                slo: level.slo.clone(),
                validity: level.validity.clone(),
                key: KeyMetrics::of(level),
            })
            .await;
    }
}

/// perf_analyzer's windows as the engine's policy for this process's part of a level ended by
/// `stop`: one window for `--request-count` and periodic runs, the stability rule otherwise
/// (count windows of this shard's part of the count; every window measured on a shard).
fn policy(plan: &PerfPlan, stop: LevelLength) -> Policy {
    let rule = match (plan.windows, stop) {
        (WindowRule::Requests(_) | WindowRule::Once(_), stop) => return Policy::Fixed(stop),
        (WindowRule::Count(_), LevelLength::Requests(n)) => WindowRule::Count(n),
        (rule, _) => rule,
    };
    Policy::Stable(Stability {
        rule,
        tolerance: plan.stability,
        max_trials: plan.max_trials,
        percentile: plan.percentile,
        method: plan.percentile_method,
        every_trial: !plan.shard.shard.is_whole(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{self, DataType as SimType, ModelSpec, SimConfig, TensorSpec as SimTensor};

    /// perf's plan of a command line written as one string.
    fn plan(args: &str) -> PerfPlan {
        crate::cli::perf::plan_of(&args.split_whitespace().collect::<Vec<_>>()).unwrap()
    }

    /// A YOLOv8-sized output: `[84,8400]` FP32, 2.8 MB per image.
    fn big_output_sim() -> SimConfig {
        SimConfig {
            models: vec![ModelSpec::tensor(
                "yolo_full",
                8,
                vec![SimTensor::new("images", SimType::F32, &[3, 8, 8])],
                vec![SimTensor::new("output0", SimType::F32, &[84, 8400])],
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
        let args = format!("-m yolo_full -b 2 -u {url} --request-count 3");
        let out = run(&plan(&args), Interrupt::new(), false).await.unwrap();
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
            let args = format!("-m yolo_full -i {proto} -u {url} --request-count 1");
            let bad = plan(&format!("{args} -x 7"));
            let e = run(&bad, Interrupt::new(), false).await.unwrap_err();
            assert_eq!(e.exit_code(), 2, "{proto}: a usage error, got {e}");
            assert!(e.to_string().contains("has no version 7"), "{proto}: {e}");
            let good = plan(&format!("{args} -x 1"));
            let out = run(&good, Interrupt::new(), false).await.unwrap();
            assert_eq!(out.levels[0].request_count, 1, "{proto}");
        }
        sim.shutdown().await;
    }
}
