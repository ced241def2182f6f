//! The engine, callable in-process: runs a [`RunPlan`] level by level and returns every level's
//! summary. The CLI, `demo`, tests and benchmarks all call [`profile`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::artifact;
use crate::client::discovery::{PreflightError, check_http};
use crate::client::{Client, GrpcClient, HttpClient, grpc};
use crate::collector::{Collector, FileSinks};
use crate::load::{Cancel, Halt, PhaseSpec, Shared, capture_pool, gap_pool, run_phase};
use crate::load::{Stimulus, Stop};
use crate::plan::{RunPlan, Verbosity};
use crate::record::{Clock, Phase};
use crate::report::console;
use crate::server_metrics::{ServerProbe, StatsSource};
use crate::stats::{Aggregate, LevelSummary};
use crate::target::Api;
use crate::workload::tokenizer::Tokenizer;
use crate::workload::{dataset, kserve};

/// The result of one level.
#[derive(Debug, Clone)]
pub struct LevelResult {
    /// Numbers.
    pub summary: LevelSummary,
    /// Where its files are.
    pub dir: PathBuf,
    /// Its `--slo` checks (empty without objectives).
    pub slo: Vec<crate::analysis::slo::SloResult>,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Levels run, in order (an interrupted run stops early).
    pub levels: Vec<LevelResult>,
    /// Where sweep-wide files went (`summary.csv`), for sweeps.
    pub sweep_dir: Option<PathBuf>,
    /// Whether the run was interrupted.
    pub interrupted: bool,
    /// Where the server's time went across the levels.
    pub verdict: crate::analysis::verdict::Verdict,
    /// The knee of the sweep and the recommendation.
    pub knee: crate::analysis::knee::Analysis,
}

impl Outcome {
    /// Whether no request succeeded in any level (exit code 1).
    pub fn all_failed(&self) -> bool {
        self.levels
            .iter()
            .all(|l| l.summary.stats.request_count == 0)
    }

    /// `--slo` checks that failed, with their level names.
    pub fn slo_failures(&self) -> Vec<(String, &crate::analysis::slo::SloResult)> {
        self.levels
            .iter()
            .flat_map(|l| {
                l.slo
                    .iter()
                    .filter(|r| !r.passed)
                    .map(|r| (l.summary.stimulus.name(), r))
            })
            .collect()
    }
}

/// How output reaches the terminal.
#[derive(Debug, Clone, Copy)]
pub struct Ui {
    /// Console verbosity.
    pub verbosity: Verbosity,
    /// Draw progress bars (only on a terminal).
    pub progress: bool,
}

impl Ui {
    /// Progress bars when stderr is a terminal and the run is not quiet.
    pub fn for_terminal(verbosity: Verbosity) -> Ui {
        use std::io::IsTerminal;
        Ui {
            verbosity,
            progress: verbosity != Verbosity::Quiet && std::io::stderr().is_terminal(),
        }
    }

    /// Nothing printed (tests, library use).
    pub fn silent() -> Ui {
        Ui {
            verbosity: Verbosity::Quiet,
            progress: false,
        }
    }

    fn say(&self, s: &str) {
        if self.verbosity != Verbosity::Quiet {
            eprintln!("{s}");
        }
    }
}

/// Runs a plan: prepares the client and dataset, then every level in order. Errors that map to
/// exit code 2 are [`crate::error::UsageError`]s; everything else is a failed run.
pub async fn profile(plan: &RunPlan, cancel: Cancel, ui: Ui) -> Result<Outcome> {
    let tokenizer = match &plan.workload.tokenizer {
        Some(p) => Tokenizer::from_file(p)
            .map_err(|e| crate::error::UsageError(format!("--tokenizer: {e:#}")))?,
        None => Tokenizer::builtin_gpt2(),
    };
    let max_workers = plan.levels.iter().map(Stimulus::workers).max().unwrap_or(1);
    let prepared = prepare(plan, &tokenizer, max_workers).await?;
    for n in &prepared.probe.notices {
        ui.say(n);
    }
    let clock = Clock::start();
    let shared = Arc::new(Shared {
        client: prepared.client,
        dataset: Arc::new(prepared.dataset),
        tokenizer,
        clock,
        cancel: cancel.clone(),
        timeout: plan.request_timeout,
        use_server_token_count: plan.use_server_token_count,
        count_tokens: true,
        seed: plan.workload.seed,
        gaps: gap_pool(),
        captures: plan.raw_export.then(capture_pool),
    });
    let raw_export = shared.captures.clone().map(|pool| {
        artifact::raw_export::RawExport::new(&plan.target, &shared.client, &shared.dataset, pool)
    });
    let mut probe = prepared.probe;
    let layout = artifact::fresh_layout(plan, &artifact::local_timestamp());
    let input_config = plan.input_config();
    let mut levels = Vec::new();
    let mut seq_base = 0u64;
    for stimulus in &plan.levels {
        if cancel.stopping() {
            break;
        }
        let dir = layout.level_dir(stimulus);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create artifact directory {}", dir.display()))?;
        let stop = plan.stop.for_level(stimulus);
        let (summary, agg) = run_level(
            &shared,
            plan,
            stimulus,
            stop,
            &mut seq_base,
            &dir,
            &mut probe,
            &ui,
            raw_export.as_ref(),
        )
        .await?;
        let slo = crate::analysis::slo::evaluate(&plan.slos, &summary);
        write_level(&dir, &summary, &agg, &input_config, &slo)?;
        if ui.verbosity != Verbosity::Quiet {
            report_level(&summary, &dir, ui.verbosity);
            for r in &slo {
                eprintln!("  SLO {}", r.line());
            }
        }
        levels.push(LevelResult { summary, dir, slo });
    }
    let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.summary.clone()).collect();
    let verdict = crate::analysis::verdict::verdict(&summaries);
    let knee = crate::analysis::knee::analyze(&summaries, plan.knee_min_gain);
    let sweep_dir = if plan.levels.len() > 1 && !levels.is_empty() {
        let d = layout.sweep_dir();
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
        let path = d.join(artifact::SUMMARY_FILE);
        std::fs::write(&path, artifact::summary::csv(&summaries))
            .with_context(|| format!("cannot write {}", path.display()))?;
        let path = d.join(artifact::SUMMARY_JSON_FILE);
        let dirs: Vec<PathBuf> = levels.iter().map(|l| l.dir.clone()).collect();
        let slos: Vec<Vec<crate::analysis::slo::SloResult>> =
            levels.iter().map(|l| l.slo.clone()).collect();
        let doc = artifact::summary::with_decisions(
            artifact::summary::json(&summaries, &dirs, &verdict, &input_config),
            &d,
            &dirs,
            &slos,
            &knee,
        );
        std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        write_report(plan, &d, &levels)?;
        Some(d)
    } else {
        None
    };
    Ok(Outcome {
        levels,
        sweep_dir,
        interrupted: cancel.stopping(),
        verdict,
        knee,
    })
}

/// Writes the sweep's `report.html` next to `summary.csv`.
fn write_report(plan: &RunPlan, sweep_dir: &std::path::Path, levels: &[LevelResult]) -> Result<()> {
    use crate::artifact::read::{LoadedLevel, RecordedSlo, run_from};
    let loaded = levels
        .iter()
        .map(|l| LoadedLevel {
            dir: l.dir.clone(),
            summary: l.summary.clone(),
            command_line: Some(plan.command_line.clone()),
            version: Some(crate::VERSION.to_string()),
            slo: l.slo.iter().map(RecordedSlo::from_result).collect(),
            model: Some(plan.target.model.clone()),
            api: Some(plan.target.api.name().to_string()),
        })
        .collect();
    let run = run_from(sweep_dir, loaded);
    let opts = crate::report::html::Options {
        knee_min_gain: plan.knee_min_gain,
        version: crate::VERSION.to_string(),
        generated_at: crate::report::html::utc(crate::report::html::now_unix_ns()),
    };
    let path = sweep_dir.join(crate::report::html::REPORT_FILE);
    std::fs::write(&path, crate::report::html::render(&[run], &opts))
        .with_context(|| format!("cannot write {}", path.display()))
}

fn report_level(l: &LevelSummary, dir: &std::path::Path, verbosity: Verbosity) {
    let ttft = l
        .stats
        .get(crate::metrics::Metric::TimeToFirstToken)
        .filter(|_| l.streaming)
        .map_or("-".to_string(), |s| format!("{:.2}", s.avg));
    eprintln!(
        "{}: {} requests, {} errors, TTFT avg {} ms, {:.1} output tok/s -> {}",
        l.stimulus.name(),
        l.stats.request_count,
        l.stats.error_count,
        ttft,
        l.stats.output_token_throughput,
        dir.display()
    );
    if l.stats.error_count > 0 {
        eprint!("{}", console::error_lines(l));
    }
    if verbosity == Verbosity::Verbose {
        eprintln!("{}", console::level_table(l));
    }
}

/// Client, dataset and server probe for a plan, after checking the server knows the model.
struct Prepared {
    client: Client,
    dataset: crate::workload::Dataset,
    probe: ServerProbe,
}

fn preflight_error(e: PreflightError) -> anyhow::Error {
    match e {
        PreflightError::Usage(u) => u.into(),
        e @ PreflightError::Unavailable(_) => anyhow::anyhow!(e),
    }
}

async fn prepare(plan: &RunPlan, tokenizer: &Tokenizer, max_workers: usize) -> Result<Prepared> {
    use crate::error::UsageError;
    let t = &plan.target;
    let calls = metrics_http_client(t)?;
    match t.api {
        Api::Chat | Api::Completions | Api::Generate => {
            let c = HttpClient::new(t, max_workers)?;
            check_http(c.inner(), t).await.map_err(preflight_error)?;
            let dataset =
                dataset::build_http(&plan.target, &plan.workload, tokenizer).map_err(|e| UsageError(format!("{e:#}")))?;
            let stats = match t.api {
                Api::Generate => {
                    StatsSource::Http(format!("{}/v2/models/{}/stats", t.base_url, t.model))
                }
                _ => StatsSource::None,
            };
            let probe =
                ServerProbe::new(calls, &plan.target.model, &plan.server_metrics, stats).await;
            Ok(Prepared {
                client: Client::Http(c),
                dataset,
                probe,
            })
        }
        Api::Infer => Err(UsageError(
            "tensor inference (/v2/models/{m}/infer) is profiled with `ttftbench perf`, not `profile`".into(),
        )
        .into()),
        Api::Kserve => {
            let channel = grpc::connect(&t.base_url)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
            let info = grpc::discover(channel.clone(), t)
                .await
                .map_err(preflight_error)?;
            // Streaming a non-decoupled model is the more basic mistake: say so first.
            if t.streaming && !info.decoupled {
                return Err(UsageError(format!(
                    "model '{}' is not decoupled (its config has no model_transaction_policy {{ decoupled: true }}), so it sends one response per request and cannot stream tokens: drop --streaming to measure whole-request latency, or deploy the model in decoupled mode",
                    info.name
                ))
                .into());
            }
            kserve::check_layout(&info, t.backend)?;
            let dataset = dataset::build_kserve(&plan.target, &plan.workload, tokenizer, &info).map_err(|e| {
                match e.downcast::<UsageError>() {
                    Ok(u) => anyhow::Error::from(u),
                    Err(e) => anyhow::Error::from(UsageError(format!("{e:#}"))),
                }
            })?;
            let client = GrpcClient::new(t, &info, max_workers, channel.clone(), grpc::ResponseMode::Text)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
            let md = grpc::metadata_for(t)?;
            let probe = ServerProbe::new(
                calls,
                &plan.target.model,
                &plan.server_metrics,
                StatsSource::Grpc(channel, md),
            )
            .await;
            Ok(Prepared {
                client: Client::Grpc(client),
                dataset,
                probe,
            })
        }
    }
}

/// A small HTTP client for `/metrics` and `/stats`, carrying the `-H` headers (e.g. an access
/// token) as those calls need them too.
pub fn metrics_http_client(t: &crate::target::Target) -> Result<reqwest::Client> {
    crate::client::http::install_tls_provider();
    reqwest::Client::builder()
        .no_proxy()
        .default_headers(t.header_map()?)
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {e}"))
}

#[allow(clippy::too_many_arguments)]
async fn run_level(
    shared: &Arc<Shared>,
    plan: &RunPlan,
    stimulus: &Stimulus,
    stop: Stop,
    seq_base: &mut u64,
    dir: &std::path::Path,
    probe: &mut ServerProbe,
    ui: &Ui,
    raw_export: Option<&artifact::raw_export::RawExport>,
) -> Result<(LevelSummary, Aggregate)> {
    let started_unix_ns = shared.clock.unix_ns(shared.clock.now_ns());
    shared.client.warm_connections(stimulus.workers()).await;
    let progress = ui.progress.then(|| level_progress(stimulus, stop));
    let timeline_path = dir.join(artifact::TIMELINE_FILE);
    let timeline = crate::artifact::timeline::Timeline::create(
        &timeline_path,
        plan.timeline_interval,
        shared.clock,
    )
    .with_context(|| format!("cannot write {}", timeline_path.display()))?;
    let raw_export = match raw_export {
        Some(r) => Some(
            r.level(dir, stimulus, shared.clock, &shared.dataset)
                .with_context(|| format!("cannot write the raw export in {}", dir.display()))?,
        ),
        None => None,
    };
    let collector = Collector::spawn(
        stimulus.name(),
        Some(&dir.join(artifact::RECORDS_FILE)),
        shared.clock,
        plan.goodput.clone(),
        shared.gaps.clone(),
        progress.clone(),
        FileSinks {
            timeline: Some(timeline),
            raw_export,
        },
    )
    .with_context(|| {
        format!(
            "cannot write {}",
            dir.join(artifact::RECORDS_FILE).display()
        )
    })?;
    let warmup = match (plan.warmup_duration, plan.warmup_requests) {
        (Some(d), _) => Some(Stop::Window(d)),
        (None, n) if n > 0 => Some(Stop::Requests(n)),
        _ => None,
    };
    if let Some(stop) = warmup {
        let spec = PhaseSpec {
            phase: Phase::Warmup,
            stimulus: *stimulus,
            stop,
            seq_base: *seq_base,
        };
        let out = run_phase(shared.clone(), spec, collector.sender(), Halt::new()).await;
        *seq_base += out.sent;
    }
    let before = probe.snapshot().await;
    let sampler = probe.start_pending_sampler();
    let spec = PhaseSpec {
        phase: Phase::Measure,
        stimulus: *stimulus,
        stop,
        seq_base: *seq_base,
    };
    let cpu0 = crate::analysis::validity::process_cpu();
    let wall0 = std::time::Instant::now();
    let stalls = crate::analysis::validity::StallMonitor::start();
    let out = run_phase(shared.clone(), spec, collector.sender(), Halt::new()).await;
    let max_stall_ms = stalls.finish().await;
    let cpu_seconds = (crate::analysis::validity::process_cpu().saturating_sub(cpu0)).as_secs_f64();
    let wall_seconds = wall0.elapsed().as_secs_f64();
    *seq_base += out.sent;
    let max_pending = match sampler {
        Some((handle, stop_tx)) => {
            let _ = stop_tx.send(());
            handle.await.unwrap_or(0.0)
        }
        None => 0.0,
    };
    let after = probe.snapshot().await;
    let agg = collector
        .finish()
        .with_context(|| format!("writing {}", dir.join(artifact::RECORDS_FILE).display()))?;
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    let server = ServerProbe::delta(&before, &after, max_pending);
    let stats = agg.summarize(!plan.goodput.is_empty());
    let open_loop = stimulus.open_loop();
    let observed = crate::analysis::validity::Observed {
        cpu_seconds,
        wall_seconds,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        send_lag_p99_ms: stats
            .get(crate::metrics::Metric::SendLag)
            .filter(|_| open_loop)
            .map(|s| s.p99),
        requested_rate: match stimulus {
            Stimulus::RequestRate { rate, .. } => Some(*rate),
            Stimulus::Concurrency(_) => None,
        },
        sent: out.sent,
        send_span_s: out.send_span_ns as f64 / 1e9,
        intended_span_s: out.intended_span_ns as f64 / 1e9,
        delayed_by_cap: out.delayed_by_cap,
        max_stall_ms: Some(max_stall_ms),
        interrupted: out.interrupted,
    };
    let summary = LevelSummary {
        stimulus: *stimulus,
        stats,
        server,
        streaming: plan.target.streaming,
        interrupted: out.interrupted,
        started_unix_ns,
        validity: crate::analysis::validity::assess(&observed, plan.max_send_lag_ms),
    };
    Ok((summary, agg))
}

fn level_progress(stimulus: &Stimulus, stop: Stop) -> ProgressBar {
    let bar = match stop {
        Stop::Requests(n) => {
            let b = ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix:>16} [{bar:30}] {pos}/{len} requests {elapsed}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            b
        }
        Stop::Window(d) => {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(&format!(
                    "{{prefix:>16}} {{spinner}} {{pos}} requests {{elapsed}} / {:.0}s window",
                    d.as_secs_f64()
                ))
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        }
    };
    bar.set_prefix(stimulus.name());
    bar
}

/// Writes a level's GenAI-Perf files and histograms (`requests.jsonl` was streamed already).
pub fn write_level(
    dir: &std::path::Path,
    s: &LevelSummary,
    agg: &Aggregate,
    input_config: &serde_json::Value,
    slo: &[crate::analysis::slo::SloResult],
) -> Result<()> {
    let csv_path = dir.join(artifact::CSV_FILE);
    std::fs::write(&csv_path, artifact::genai_perf::csv(s))
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let json_path = dir.join(artifact::JSON_FILE);
    let mut doc = artifact::genai_perf::json(s, input_config);
    if let serde_json::Value::Object(m) = &mut doc {
        m.insert("ttftbench_version".into(), crate::VERSION.into());
        if !slo.is_empty() {
            m.insert("slo".into(), crate::analysis::slo::json(slo));
        }
    }
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    let h_path = dir.join(artifact::HISTOGRAMS_FILE);
    std::fs::write(
        &h_path,
        serde_json::to_string(&artifact::histograms::encode(agg))?,
    )
    .with_context(|| format!("cannot write {}", h_path.display()))?;
    Ok(())
}
