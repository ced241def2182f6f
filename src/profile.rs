//! `profile`'s front end on the level engine, callable in-process: runs a [`RunPlan`] level by
//! level and writes GenAI-Perf's files per level (CSV, JSON, histograms, `requests.jsonl`,
//! timeline) and, for a sweep, `summary.csv`/`summary.json` and `report.html`. The CLI, `demo`,
//! tests and benchmarks all call [`run`].

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::analysis::knee::{self, Analysis};
use crate::analysis::slo::{self, SloResult};
use crate::analysis::verdict::{self, Verdict};
use crate::artifact;
use crate::artifact::raw_export::RawExport;
use crate::artifact::timeline::Timeline;
use crate::artifact::write_file;
use crate::engine::outcome::{Ending, LevelEnd, Rules};
use crate::engine::{LevelSpec, Measured, Policy, RecordsFile, Session, Sinks, measure_level};
use crate::error::{Error, Result, create_dir};
use crate::load::{Cancel, Stimulus, Stop};
use crate::plan::{RunPlan, Verbosity};
use crate::publish::{KeyMetrics, LevelReport, Mode, Publisher, RunEnd};
use crate::report::console;
use crate::stats::{Aggregate, LevelSummary};

/// The result of one level.
#[derive(Debug, Clone)]
pub struct LevelResult {
    /// Numbers.
    pub summary: LevelSummary,
    /// Where its files are.
    pub dir: PathBuf,
    /// Its `--slo` checks (empty without objectives).
    pub slo: Vec<SloResult>,
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
    pub verdict: Verdict,
    /// The knee of the sweep and the recommendation.
    pub knee: Analysis,
}

impl Outcome {
    /// Whether no request succeeded in any level.
    pub fn all_failed(&self) -> bool {
        self.levels
            .iter()
            .all(|l| l.summary.stats.request_count == 0)
    }

    /// `--slo` checks that failed, with their level names.
    pub fn slo_failures(&self) -> Vec<(String, &SloResult)> {
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

    /// How the run ends: exit code and the lines that explain it.
    pub fn ending(&self, strict: bool) -> Ending {
        let ends: Vec<LevelEnd<'_>> = self
            .levels
            .iter()
            .map(|l| LevelEnd::of(&l.summary, &l.slo))
            .collect();
        crate::engine::outcome::ending(
            &ends,
            self.interrupted,
            Rules {
                strict,
                single_level_must_stabilize: false,
            },
        )
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

/// Runs a plan: prepares the session, then every level in order. Usage mistakes (the server
/// does not know the model, a bad input file) are [`Error::Usage`]; nothing is sent then.
pub async fn run(plan: &RunPlan, cancel: Cancel, ui: Ui) -> Result<Outcome> {
    let layout = artifact::fresh_layout(plan, &artifact::local_timestamp());
    if let Some(first) = plan.levels.first() {
        artifact::ensure_writable(&layout.level_dir(first))?;
    }
    let mut session = crate::engine::session::prepare_llm(plan, cancel.clone()).await?;
    for n in &session.probe.notices {
        ui.say(n);
    }
    let raw = session.shared.captures.clone().map(|pool| {
        RawExport::new(
            &plan.target,
            &session.shared.client,
            &session.shared.dataset,
            pool,
        )
    });
    let input_config = plan.input_config();
    let mut publisher = Publisher::new(&plan.outputs, Mode::Profile, &plan.target.model);
    let mut levels = Vec::new();
    for (i, stimulus) in plan.levels.iter().enumerate() {
        if cancel.stopping() {
            break;
        }
        let dir = layout.level_dir(stimulus);
        create_dir(&dir)?;
        let progress = ui.progress.then(|| {
            level_progress(
                stimulus,
                plan.stop.for_level(stimulus),
                i,
                plan.levels.len(),
            )
        });
        let measured =
            run_level(&mut session, plan, stimulus, &dir, progress, raw.as_ref()).await?;
        let slo = slo::evaluate(&plan.slos, &measured.summary);
        let doc = level_doc(&measured.summary, &input_config, &slo);
        write_level(&dir, &measured.summary, &measured.agg, &doc)?;
        if ui.verbosity != Verbosity::Quiet {
            report_level(&measured.summary, &dir, ui.verbosity);
            for r in &slo {
                eprintln!("  SLO {}", r.line());
            }
        }
        publisher
            .level(LevelReport {
                stimulus: *stimulus,
                doc,
                slo: slo.clone(),
                validity: measured.summary.validity.clone(),
                key: KeyMetrics::of(&measured.summary),
            })
            .await;
        levels.push(LevelResult {
            summary: measured.summary,
            dir,
            slo,
        });
    }
    let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.summary.clone()).collect();
    let verdict = verdict::verdict(&summaries);
    let knee = knee::analyze(&summaries, plan.knee_min_gain);
    let sweep_dir = if plan.levels.len() > 1 && !levels.is_empty() {
        let d = layout.sweep_dir();
        write_sweep(plan, &d, &levels, &verdict, &knee, &input_config)?;
        Some(d)
    } else {
        None
    };
    let outcome = Outcome {
        levels,
        sweep_dir,
        interrupted: cancel.stopping(),
        verdict,
        knee,
    };
    let sweep = outcome.levels.len() > 1;
    publisher.finish(&RunEnd {
        exit_code: outcome.ending(plan.strict).code,
        interrupted: outcome.interrupted,
        knee: sweep.then(|| outcome.knee.recommendation.clone()),
        verdict: if sweep {
            outcome.verdict.lines.clone()
        } else {
            Vec::new()
        },
    })?;
    Ok(outcome)
}

/// One level on the engine, with its own `requests.jsonl` and timeline in `dir`.
async fn run_level(
    session: &mut Session,
    plan: &RunPlan,
    stimulus: &Stimulus,
    dir: &Path,
    progress: Option<ProgressBar>,
    raw: Option<&RawExport>,
) -> Result<Measured> {
    let timeline_path = dir.join(artifact::TIMELINE_FILE);
    let timeline = Timeline::create(&timeline_path, plan.timeline_interval, session.shared.clock)
        .map_err(|e| Error::io("write", &timeline_path, e))?;
    let raw_export = match raw {
        Some(r) => Some(
            r.level(dir, stimulus, session.shared.clock, &session.shared.dataset)
                .map_err(|e| {
                    Error::io("write", &dir.join(artifact::raw_export::RAW_EXPORT_FILE), e)
                })?,
        ),
        None => None,
    };
    let mut sinks = Sinks {
        records: Some(RecordsFile::create(&dir.join(artifact::RECORDS_FILE))?),
        timeline: Some(timeline),
        progress,
        raw_export,
        raw_error: None,
    };
    let warmup = match (plan.warmup_duration, plan.warmup_requests) {
        (Some(d), _) => Some(Stop::Window(d)),
        (None, n) if n > 0 => Some(Stop::Requests(n)),
        _ => None,
    };
    let spec = LevelSpec {
        stimulus: *stimulus,
        policy: Policy::Fixed(plan.stop.for_level(stimulus)),
        warmup,
        objectives: &plan.goodput,
        max_send_lag_ms: plan.max_send_lag_ms,
        streaming: plan.target.streaming,
        percentile_method: plan.percentile_method,
        on_pass: None,
    };
    let measured = measure_level(session, &spec, &mut sinks).await?;
    if let Some(p) = sinks.progress.take() {
        p.finish_and_clear();
    }
    if let Some(t) = sinks.timeline.take() {
        // The last interval is still open: close it at the level's end.
        t.finish()?;
    }
    if let Some(r) = sinks.records.take() {
        r.finish()?;
    }
    sinks.raw_result("the raw export")?;
    if let Some(mut w) = sinks.raw_export.take() {
        let path = dir.join(artifact::raw_export::RAW_EXPORT_FILE);
        w.end_level()
            .and_then(|()| w.finish())
            .map_err(|e| Error::io("write", &path, e))?;
    }
    Ok(measured)
}

/// `summary.csv`, `summary.json` and `report.html` next to the level directories.
fn write_sweep(
    plan: &RunPlan,
    d: &Path,
    levels: &[LevelResult],
    verdict: &Verdict,
    knee: &Analysis,
    input_config: &serde_json::Value,
) -> Result<()> {
    create_dir(d)?;
    let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.summary.clone()).collect();
    write_file(
        &d.join(artifact::SUMMARY_FILE),
        artifact::summary::csv(&summaries),
    )?;
    let dirs: Vec<PathBuf> = levels.iter().map(|l| l.dir.clone()).collect();
    let slos: Vec<Vec<SloResult>> = levels.iter().map(|l| l.slo.clone()).collect();
    let doc = artifact::summary::with_decisions(
        artifact::summary::json(&summaries, &dirs, verdict, input_config),
        d,
        &dirs,
        &slos,
        knee,
    );
    write_file(&d.join(artifact::SUMMARY_JSON_FILE), pretty(&doc))?;
    write_report(plan, d, levels)
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Writes the sweep's `report.html` next to `summary.csv`.
fn write_report(plan: &RunPlan, sweep_dir: &Path, levels: &[LevelResult]) -> Result<()> {
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
    write_file(
        &sweep_dir.join(crate::report::html::REPORT_FILE),
        crate::report::html::render(&[run], &opts),
    )
}

fn report_level(l: &LevelSummary, dir: &Path, verbosity: Verbosity) {
    let ttft = l
        .stats
        .get(crate::metrics::Metric::TimeToFirstToken)
        .filter(|_| l.streaming)
        .map_or("-".to_string(), |s| format!("{:.2}", s.avg));
    eprintln!(
        "{}: {}, {}, TTFT avg {} ms, {:.1} output tok/s -> {}",
        l.stimulus.name(),
        crate::analysis::text::count(l.stats.request_count, "request"),
        crate::analysis::text::count(l.stats.error_count, "error"),
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

/// A progress bar for one level of `total`; while in-flight requests finish after a time window
/// it says it is draining.
fn level_progress(stimulus: &Stimulus, stop: Stop, index: usize, total: usize) -> ProgressBar {
    let bar = match stop {
        Stop::Requests(n) => {
            let b = ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix:>24} [{bar:30}] {pos}/{len} requests {elapsed}",
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
                    "{{prefix:>24}} {{spinner}} {{pos}} requests {{elapsed}} / {:.0}s window",
                    d.as_secs_f64()
                ))
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        }
    };
    bar.set_prefix(format!("[{}/{total}] {}", index + 1, stimulus.name()));
    bar
}

/// A level's JSON document (its GenAI-Perf JSON file, and its line of `--output json`).
pub fn level_doc(
    s: &LevelSummary,
    input_config: &serde_json::Value,
    slo: &[SloResult],
) -> serde_json::Value {
    let mut doc = artifact::genai_perf::json(s, input_config);
    if let serde_json::Value::Object(m) = &mut doc {
        m.insert("ttftbench_version".into(), crate::VERSION.into());
        if !slo.is_empty() {
            m.insert("slo".into(), slo::json(slo));
        }
    }
    doc
}

/// Writes a level's GenAI-Perf files (the JSON one is `doc`, from [`level_doc`]) and
/// histograms (`requests.jsonl` was streamed already).
pub fn write_level(
    dir: &Path,
    s: &LevelSummary,
    agg: &Aggregate,
    doc: &serde_json::Value,
) -> Result<()> {
    write_file(&dir.join(artifact::CSV_FILE), artifact::genai_perf::csv(s))?;
    write_file(&dir.join(artifact::JSON_FILE), pretty(doc))?;
    write_file(
        &dir.join(artifact::HISTOGRAMS_FILE),
        serde_json::to_string(&artifact::histograms::encode(agg)).unwrap_or_default(),
    )
}
