//! `profile`'s front end on the level engine, callable in-process: runs a [`RunPlan`] level by
//! level and writes GenAI-Perf's files per level (CSV, JSON, histograms, `requests.jsonl`,
//! timeline) and, for a sweep, `summary.csv`/`summary.json`, `pareto.csv` and `report.html`.
//! The CLI, `demo`, tests and benchmarks all call [`run`]. A [`Runner`] is a run in progress
//! (the session, the run's identity, the result channels); `search` drives one too, choosing
//! its levels as it goes.

use std::path::{Path, PathBuf};

use crate::analysis::knee::{self, Analysis};
use crate::analysis::sequential::Settled;
use crate::analysis::slo::{self, SloResult};
use crate::analysis::verdict::{self, Verdict};
use crate::artifact;
use crate::artifact::raw_export::RawExport;
use crate::artifact::write_file;
use crate::context::{RunContext, ServerIdentity};
use crate::engine::levels::{self, Planned, Ran};
use crate::engine::live::{Display, LiveView};
use crate::engine::outcome::{Ending, LevelEnd, Rules};
use crate::engine::{LevelSpec, Measured, Policy, Session, Sinks, files, measure_level};
use crate::error::{Error, Result, create_dir};
use crate::load::{Interrupt, Stimulus};
use crate::plan::fingerprint::{FINGERPRINT_KEY, Fingerprint};
use crate::plan::outputs::UiMode;
use crate::plan::{LevelPart, RunPlan, Verbosity};
use crate::publish::{KeyMetrics, LevelReport, Mode, Publisher, RunEnd};
use crate::report::console;
use crate::stats::LevelSummary;

mod repeat;

/// The result of one level.
#[derive(Debug, Clone)]
pub struct LevelResult {
    /// Numbers.
    pub summary: LevelSummary,
    /// Where its files are.
    pub dir: PathBuf,
    /// Its `--slo` checks (empty without objectives).
    pub slo: Vec<SloResult>,
    /// With `--repeat`: each repetition's numbers of this level, in order (`summary` holds
    /// their medians); empty for a single run.
    pub repetitions: Vec<LevelSummary>,
    /// Under the sequential rule (`--target-moe`, `search`): how the level ended.
    pub settled: Option<Settled>,
    /// Requests sent (warm-up included), what the level cost.
    pub sent: u64,
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
    /// Levels at which this shard had no load: name and why.
    pub idle: Vec<(String, String)>,
    /// With `--repeat N`: each repetition's own outcome, in order (`levels` then holds the
    /// combined levels: medians across them); empty for a single run.
    pub repetitions: Vec<Outcome>,
    /// The run's identity and server (the first repetition's with `--repeat`); `None` when
    /// nothing was sent.
    pub context: Option<RunContext>,
}

impl Outcome {
    /// A shard with no load at any level: nothing was sent.
    fn idle(idle: Vec<(String, String)>) -> Outcome {
        Outcome {
            levels: Vec::new(),
            sweep_dir: None,
            interrupted: false,
            verdict: verdict::verdict(&[]),
            knee: knee::analyze(&[], 0.1),
            idle,
            repetitions: Vec::new(),
            context: None,
        }
    }

    /// Whether no request succeeded in any level.
    pub fn all_failed(&self) -> bool {
        self.levels
            .iter()
            .all(|l| l.summary.stats.request_count == 0)
    }

    /// How the run ends: exit code and the lines that explain it (a shard with no load at any
    /// level ends with 0).
    pub fn ending(&self, strict: bool, max_error_rate: f64) -> Ending {
        let ends: Vec<LevelEnd<'_>> = self
            .levels
            .iter()
            .map(|l| LevelEnd::of(&l.summary, &l.slo))
            .collect();
        let rules = Rules {
            strict,
            single_level_must_stabilize: false,
            max_error_rate,
        };
        crate::engine::outcome::ending_or_idle(&ends, &self.idle, self.interrupted, rules)
    }
}

/// How output reaches the terminal.
#[derive(Debug, Clone, Copy)]
pub struct Ui {
    /// Console verbosity.
    pub verbosity: Verbosity,
    /// How the live view draws while levels run (`None`: not at all).
    pub live: Option<Display>,
}

impl Ui {
    /// The live view `--ui` asks for, as stderr can show it (redrawn on a terminal, plain lines
    /// otherwise), unless the run is quiet.
    pub fn for_terminal(verbosity: Verbosity, ui: UiMode) -> Ui {
        Ui {
            verbosity,
            live: Display::for_stderr(ui).filter(|_| verbosity != Verbosity::Quiet),
        }
    }

    /// Nothing printed (tests, library use).
    pub fn silent() -> Ui {
        Ui {
            verbosity: Verbosity::Quiet,
            live: None,
        }
    }

    /// Whether anything is said on stderr (not `--quiet`).
    pub(crate) fn speaks(&self) -> bool {
        self.verbosity != Verbosity::Quiet
    }

    /// A line on stderr unless quiet.
    pub(crate) fn say(&self, s: &str) {
        if self.speaks() {
            eprintln!("{s}");
        }
    }
}

/// Runs a plan: settles whether it streams (when no flag said), prepares the session, then
/// every level in order. Usage mistakes (the server does not know the model, a bad input file)
/// are [`Error::Usage`]; nothing is sent then.
/// A shard (`--shard`) runs its part of each level, waits for each level's shared start, and
/// writes `shard.json` beside each level's files; at a level where its part is empty it writes
/// only that file, saying so.
/// With `--repeat N` the whole plan runs N times and the levels are combined (see
/// [`repeat`]).
pub async fn run(plan: &RunPlan, interrupt: Interrupt, ui: Ui) -> Result<Outcome> {
    let settled = crate::engine::streaming::settle(plan).await?;
    if let Some(line) = &settled.line {
        ui.say(line);
    }
    for n in &plan.notices {
        ui.say(&format!("note: {n}"));
    }
    let plan = settled.plan.as_ref();
    if plan.repeat.is_repeated() {
        return repeat::run(plan, interrupt, ui).await;
    }
    run_once(plan, interrupt, ui).await
}

/// Every level directory of `plan` under `layout`, in the plan's order.
fn level_dirs(plan: &RunPlan, layout: &artifact::Layout) -> Vec<PathBuf> {
    plan.levels.iter().map(|s| layout.level_dir(s)).collect()
}

/// Runs the plan once.
async fn run_once(plan: &RunPlan, interrupt: Interrupt, ui: Ui) -> Result<Outcome> {
    let parts: Vec<LevelPart> = (0..plan.levels.len()).map(|i| plan.level_part(i)).collect();
    let layout = artifact::fresh_layout(plan, &artifact::local_timestamp());
    artifact::ensure_levels_writable(&level_dirs(plan, &layout))?;
    let ids = Ids::new(plan);
    if parts.iter().all(|p| p.load.is_err()) {
        // Nothing to send at any level: say so without connecting to anything.
        let writer = ids.writer(plan, 0);
        let mut idle = Vec::new();
        for part in &parts {
            let dir = layout.level_dir(&part.whole);
            idle.extend(levels::write_idle(&writer, part, &dir, ui.speaks())?);
        }
        return Ok(Outcome::idle(idle));
    }
    let total = u32::try_from(plan.levels.len()).ok();
    let runner = Runner::start(plan, &interrupt, ui, ids, total).await?;
    let mut sweep = Sweep {
        runner,
        plan,
        layout: &layout,
        parts: parts.into_iter(),
        ui,
    };
    let ran = levels::run(&mut sweep, &interrupt, ui.speaks()).await?;
    let Runner {
        ids, mut publisher, ..
    } = sweep.runner;
    conclude(plan, &layout, &ids, ran, &interrupt, &mut publisher)
}

/// `profile`'s choices in the level loop: the plan's levels in order, each in its directory
/// under the run's layout.
struct Sweep<'a> {
    runner: Runner,
    plan: &'a RunPlan,
    layout: &'a artifact::Layout,
    parts: std::vec::IntoIter<LevelPart>,
    ui: Ui,
}

impl levels::Mode for Sweep<'_> {
    type Probe = ();
    type Level = LevelResult;

    fn announce(&self) {
        if let Some(line) = crate::engine::start::schedule_line(&self.plan.shard) {
            self.ui.say(&line);
        }
    }

    fn next(&mut self, _done: &[LevelResult]) -> Option<Planned<()>> {
        let part = self.parts.next()?;
        Some(Planned {
            dir: Some(self.layout.level_dir(&part.whole)),
            part,
            probe: (),
        })
    }

    fn writer(&self) -> files::Writer<'_> {
        self.runner.writer(self.plan)
    }

    async fn measure(&mut self, level: Planned<()>) -> Result<LevelResult> {
        let (stimulus, stop) = level.load()?;
        let dir = self.layout.level_dir(&level.part.whole);
        let level = LevelRun {
            part: &level.part,
            stimulus,
            policy: level_policy(self.plan, stop),
            dir: &dir,
        };
        self.runner.level(self.plan, &level, self.ui).await
    }
}

/// When a level of `plan` ends: at `stop`, or under the sequential rule of `--target-moe`.
fn level_policy(plan: &RunPlan, stop: crate::load::LevelLength) -> Policy {
    match &plan.target_moe {
        Some(rule) => Policy::Sequential(std::sync::Arc::new(rule.clone())),
        None => Policy::Fixed(stop),
    }
}

/// A run in progress: the prepared session, the run's identity and result channels. `profile`
/// runs the plan's levels through it; `search` the probes it chooses as it goes.
pub(crate) struct Runner {
    session: Session,
    /// The run's identity, written into every level's files.
    pub(crate) ids: Ids,
    raw: Option<RawExport>,
    anchor: u64,
    /// The result channels (`--output json`, `--junit`, ...).
    pub(crate) publisher: Publisher,
    live: Option<LiveView>,
}

impl Runner {
    /// Prepares the session (discovery, client, server probe, workload) and says what it
    /// found; `total`: the number of levels when known (the live view counts toward it).
    pub(crate) async fn start(
        plan: &RunPlan,
        interrupt: &Interrupt,
        ui: Ui,
        mut ids: Ids,
        total: Option<u32>,
    ) -> Result<Runner> {
        let session =
            crate::engine::session::prepare_llm(plan, interrupt.clone(), Some(&ids.context.run_id))
                .await?;
        for n in &session.probe.notices {
            ui.say(n);
        }
        ids.context.server = session.probe.identity.clone();
        ids.context.model = session.probe.model.clone();
        say_context(&ids.context, ui);
        let raw = session.shared.captures.clone().map(|pool| {
            RawExport::new(
                &plan.target,
                session.shared.client.response_form(&plan.target),
                &session.shared.dataset,
                pool,
            )
        });
        let anchor = session.shared.clock.unix_anchor_ns();
        let live = ui.live.map(|d| LiveView::stderr(d, total));
        Ok(Runner {
            session,
            ids,
            raw,
            anchor,
            publisher: Publisher::new(&plan.outputs, Mode::Profile, &plan.target.model),
            live,
        })
    }

    /// The level files' writer of this run.
    pub(crate) fn writer<'a>(&'a self, plan: &'a RunPlan) -> files::Writer<'a> {
        self.ids.writer(plan, self.anchor)
    }

    /// Measures one level, writes its files, says it on the console and publishes it.
    pub(crate) async fn level(
        &mut self,
        plan: &RunPlan,
        level: &LevelRun<'_>,
        ui: Ui,
    ) -> Result<LevelResult> {
        create_dir(level.dir)?;
        let measured = self.measure(plan, level).await?;
        let (report, result) = self.keep(plan, level, measured, ui)?;
        self.publisher.level(report).await;
        Ok(result)
    }

    /// One level on the engine, with its own `requests.jsonl` and timeline in its directory.
    async fn measure(&mut self, plan: &RunPlan, level: &LevelRun<'_>) -> Result<Measured> {
        let session = &mut self.session;
        let dir = level.dir;
        let mut sinks = Sinks::files(
            &session.shared,
            Some(&dir.join(artifact::RECORDS_FILE)),
            Some((&dir.join(artifact::TIMELINE_FILE), plan.timeline_interval)),
            plan.target.streaming,
        )?;
        sinks.live = self.live.clone();
        if let Some(r) = &self.raw {
            let raw = r.level(
                dir,
                &plan.export_names.raw,
                &level.stimulus,
                session.shared.clock,
                &session.shared.dataset,
            );
            let raw = raw.map_err(|e| Error::io("write", &dir.join(&plan.export_names.raw), e))?;
            sinks.raw_export = Some(raw);
        }
        let isl_edges = session.isl_edges.clone();
        let spec = LevelSpec {
            index: level.part.index,
            stimulus: level.stimulus,
            start_at: level.part.start_at,
            policy: level.policy.clone(),
            warmup: level.part.warmup,
            objectives: &plan.goodput,
            isl_edges: &isl_edges,
            max_send_lag_ms: plan.max_send_lag_ms,
            streaming: plan.target.streaming,
            percentile_method: plan.percentile_method,
            on_pass: None,
            own_line: true,
        };
        let measured = measure_level(session, &spec, &mut sinks).await?;
        sinks.finish_files("the raw export")?;
        if let Some(mut w) = sinks.raw_export.take() {
            let path = dir.join(&plan.export_names.raw);
            w.end_level()
                .and_then(|()| w.finish())
                .map_err(|e| Error::io("write", &path, e))?;
        }
        Ok(measured)
    }

    /// Checks a measured level's SLOs, writes its files and says it on the console: what is
    /// published, and what is kept.
    fn keep(
        &mut self,
        plan: &RunPlan,
        level: &LevelRun<'_>,
        measured: Measured,
        ui: Ui,
    ) -> Result<(LevelReport, LevelResult)> {
        let slo = slo::evaluate(&plan.slos, &measured.summary);
        levels::note_gpus(&mut self.ids.context, &measured);
        let writer = self.writer(plan);
        let mut doc = level_doc(&measured.summary, &self.ids, &slo, &writer);
        if let (Some(st), serde_json::Value::Object(map)) = (&measured.settled, &mut doc) {
            map.insert(
                "sequential".into(),
                serde_json::to_value(st).unwrap_or_default(),
            );
        }
        if let (false, serde_json::Value::Object(map)) = (measured.notes.is_empty(), &mut doc) {
            map.insert(
                "server_view_notes".into(),
                serde_json::json!(measured.notes),
            );
        }
        writer.write_level(level.dir, &plan.export_names, &measured, &doc, level.part)?;
        if ui.speaks() {
            levels::say_measured(&measured, plan.shard.shard);
            report_level(&measured.summary, level.dir, ui.verbosity);
            let lines = (measured.settled.iter().flat_map(Settled::lines))
                .chain(console::drift_lines(&measured.summary))
                .chain(slo.iter().map(|r| format!("SLO {}", r.line())));
            for line in lines {
                eprintln!("  {line}");
            }
        }
        let report = LevelReport {
            stimulus: level.part.whole,
            doc,
            slo: slo.clone(),
            validity: measured.summary.validity.clone(),
            key: KeyMetrics::of(&measured.summary),
        };
        let result = LevelResult {
            sent: measured.sent,
            summary: measured.summary,
            dir: level.dir.to_path_buf(),
            slo,
            repetitions: Vec::new(),
            settled: measured.settled,
        };
        Ok((report, result))
    }
}

/// The run's end: knee, verdict, the sweep's files (or one level's report), the publisher's
/// last line.
fn conclude(
    plan: &RunPlan,
    layout: &artifact::Layout,
    ids: &Ids,
    ran: Ran<LevelResult>,
    interrupt: &Interrupt,
    publisher: &mut Publisher,
) -> Result<Outcome> {
    let Ran { levels, idle, .. } = ran;
    let decisions = Decisions::of(&levels, plan.knee_min_gain);
    let sweep_dir = if plan.levels.len() > 1 && !levels.is_empty() {
        let d = layout.sweep_dir();
        write_sweep(plan, &d, &levels, &decisions, ids, &[])?;
        Some(d)
    } else {
        if let (true, [one]) = (plan.generate_plots, levels.as_slice()) {
            write_report(plan, &one.dir, &levels, &ids.context)?;
        }
        None
    };
    let interrupted = crate::engine::outcome::interrupted(
        levels.iter().any(|l| l.summary.interrupted),
        interrupt.stopping(),
        (levels.len() + idle.len(), plan.levels.len()),
    );
    let outcome = Outcome {
        levels,
        sweep_dir,
        interrupted,
        verdict: decisions.verdict,
        knee: decisions.knee,
        idle,
        repetitions: Vec::new(),
        context: Some(ids.context.clone()),
    };
    publish_end(publisher, plan, &outcome)?;
    Ok(outcome)
}

/// The run's last word to the result channels: exit code, and for a sweep the knee and verdict.
fn publish_end(publisher: &Publisher, plan: &RunPlan, outcome: &Outcome) -> Result<()> {
    let sweep = outcome.levels.len() > 1;
    publisher.finish(&RunEnd {
        exit_code: outcome.ending(plan.strict, plan.max_error_rate).code,
        interrupted: outcome.interrupted,
        knee: sweep.then(|| outcome.knee.recommendation.clone()),
        verdict: if sweep {
            outcome.verdict.lines.clone()
        } else {
            Vec::new()
        },
    })
}

/// A sweep's knee and the verdict on where the server's time went (which names the knee),
/// decided together over its levels.
pub(crate) struct Decisions {
    /// Where the server's time went across the levels.
    pub(crate) verdict: Verdict,
    /// The knee and the recommendation.
    pub(crate) knee: Analysis,
}

impl Decisions {
    /// Decided over `levels` (`min_gain`: `--knee-min-gain`).
    pub(crate) fn of(levels: &[LevelResult], min_gain: f64) -> Decisions {
        let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.summary.clone()).collect();
        let mut knee = knee::analyze(&summaries, min_gain);
        let verdict = verdict::with_knee(&summaries, &mut knee);
        Decisions { verdict, knee }
    }
}

/// The plan's identity and recorded form, written into every artifact.
pub(crate) struct Ids {
    plan_id: String,
    input_config: serde_json::Value,
    /// What `compare` checks before comparing two runs.
    fingerprint: Fingerprint,
    /// The run id, labels, client host, server identity and GPUs.
    context: RunContext,
}

/// The run's id and the server it measures, once at the start.
fn say_context(c: &RunContext, ui: Ui) {
    let labels = c.labels_line();
    ui.say(&format!(
        "run {}{}: server {} ({}), client {}",
        c.run_id,
        if labels.is_empty() {
            String::new()
        } else {
            format!(" [{labels}]")
        },
        c.server.describe(),
        c.server.source,
        c.client.describe()
    ));
}

impl Ids {
    /// A new run's identity for `plan`: its id, recorded plan and fingerprint, a fresh run id;
    /// the server is filled in once the session has met it.
    pub(crate) fn new(plan: &RunPlan) -> Ids {
        Ids {
            plan_id: plan.plan_id(),
            input_config: plan.input_config(),
            fingerprint: plan.fingerprint(),
            context: RunContext::new(
                plan.outputs.labels.clone(),
                ServerIdentity::default(),
                None,
                crate::record::unix_now_ns(),
            ),
        }
    }

    /// The level files' writer of this process (`anchor`: the run clock's Unix anchor).
    fn writer<'a>(&'a self, plan: &'a RunPlan, anchor: u64) -> files::Writer<'a> {
        files::Writer {
            mode: "profile",
            plan_id: &self.plan_id,
            shard: &plan.shard,
            anchor_unix_ns: anchor,
            run_config: &plan.run_config,
        }
    }
}

/// One level of this process: the plan's level and this process's part of it.
pub(crate) struct LevelRun<'a> {
    /// The plan's level and this process's part.
    pub(crate) part: &'a LevelPart,
    /// The load this process sends.
    pub(crate) stimulus: Stimulus,
    /// When its measurement ends.
    pub(crate) policy: Policy,
    /// Where its files go.
    pub(crate) dir: &'a Path,
}

/// `summary.csv`, `summary.json`, `pareto.csv` and `report.html` next to the level
/// directories; `spreads`: each level's numbers across its repetitions for a `--repeat` run
/// (empty otherwise).
pub(crate) fn write_sweep(
    plan: &RunPlan,
    d: &Path,
    levels: &[LevelResult],
    decisions: &Decisions,
    ids: &Ids,
    spreads: &[(String, Vec<crate::stats::repeat::MetricSpread>)],
) -> Result<()> {
    create_dir(d)?;
    let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.summary.clone()).collect();
    write_file(
        &d.join(artifact::SUMMARY_FILE),
        artifact::summary::csv(&summaries),
    )?;
    let feasible: Vec<(&LevelSummary, Option<bool>)> = levels
        .iter()
        .map(|l| {
            let met = (!plan.slos.is_empty()).then(|| l.slo.iter().all(|r| r.passed));
            (&l.summary, met)
        })
        .collect();
    write_file(
        &d.join(artifact::pareto::PARETO_FILE),
        artifact::pareto::csv(&crate::analysis::pareto::points(&feasible)),
    )?;
    let dirs: Vec<PathBuf> = levels.iter().map(|l| l.dir.clone()).collect();
    let slos: Vec<Vec<SloResult>> = levels.iter().map(|l| l.slo.clone()).collect();
    let mut doc = artifact::summary::with_decisions(
        artifact::summary::json(&summaries, &dirs, &decisions.verdict, &ids.input_config),
        d,
        &dirs,
        &slos,
        &decisions.knee,
    );
    if let serde_json::Value::Object(m) = &mut doc {
        m.insert("plan_id".into(), ids.plan_id.clone().into());
        m.insert(
            "context".into(),
            serde_json::to_value(&ids.context).unwrap_or_default(),
        );
        if !plan.shard.shard.is_whole() {
            m.insert(
                "shard".into(),
                serde_json::to_value(plan.shard.shard).unwrap_or_default(),
            );
        }
    }
    artifact::repeat::add_to_summary(&mut doc, spreads);
    artifact::stamp(&mut doc);
    write_file(
        &d.join(artifact::SUMMARY_JSON_FILE),
        serde_json::to_string_pretty(&doc).unwrap_or_default(),
    )?;
    write_report(plan, d, levels, &ids.context)
}

/// Writes `report.html` into `dir`: the sweep's, next to `summary.csv`, or a single level's
/// (`--generate-plots`).
fn write_report(
    plan: &RunPlan,
    sweep_dir: &Path,
    levels: &[LevelResult],
    context: &RunContext,
) -> Result<()> {
    use crate::artifact::read::{LoadedLevel, RecordedSlo, run_from};
    let loaded = levels
        .iter()
        .map(|l| LoadedLevel {
            context: Some(context.clone()),
            fingerprint: Some(plan.fingerprint()),
            dir: l.dir.clone(),
            summary: l.summary.clone(),
            command_line: Some(plan.command_line.clone()),
            version: Some(crate::VERSION.to_string()),
            slo: l.slo.iter().map(RecordedSlo::from_result).collect(),
            model: Some(plan.target.model.clone()),
            api: Some(plan.target.api.name().to_string()),
            repetitions: l.repetitions.clone(),
        })
        .collect();
    let mut run = run_from(sweep_dir, loaded);
    // A search writes its search.json first: the page shows the search with its levels.
    run.search = artifact::search::read(sweep_dir);
    let opts = crate::report::html::Options {
        knee_min_gain: plan.knee_min_gain,
        version: crate::VERSION.to_string(),
        generated_at: crate::report::html::utc(crate::record::unix_now_ns()),
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
    // Requests cancelled on purpose, or abandoned by a second Ctrl-C, are said only when there
    // are some.
    let mut cancelled = match l.stats.cancelled_count {
        0 => String::new(),
        n => format!(", {n} cancelled"),
    };
    if l.stats.abandoned_count > 0 {
        cancelled.push_str(&format!(", {} abandoned", l.stats.abandoned_count));
    }
    // Embeddings and rankings: no tokens out, so their latency and inputs per second.
    let numbers = match l.stats.apis.input_throughput {
        Some(inputs) => format!(
            "latency avg {} ms, {inputs:.1} inputs/s",
            l.stats
                .get(crate::metrics::Metric::RequestLatency)
                .map_or("-".to_string(), |s| format!("{:.2}", s.avg))
        ),
        None => format!(
            "TTFT avg {ttft} ms, {:.1} output tok/s",
            l.stats.output_token_throughput
        ),
    };
    eprintln!(
        "{}: {}, {}{cancelled}, {numbers} -> {}",
        l.stimulus.name(),
        crate::analysis::text::count(l.stats.request_count, "request"),
        crate::analysis::text::count(l.stats.error_count, "error"),
        dir.display()
    );
    if l.stats.error_count > 0 {
        eprint!("{}", console::error_lines(l));
    }
    let lines = [console::accuracy_line(l), console::session_line(l)];
    for line in lines.into_iter().flatten() {
        eprintln!("  {line}");
    }
    // Sessions are run to see TTFT by turn: the table is the point, so it is not kept for -v.
    if let Some(t) = console::turn_table(l) {
        eprintln!("{t}");
    }
    if verbosity == Verbosity::Verbose {
        eprint!("{}", console::engine_lines(l));
        eprintln!("{}", console::level_table(l));
        if let Some(line) = console::token_count_line(l) {
            eprintln!("{line}");
        }
        if let Some(t) = console::isl_table(l) {
            eprintln!("{t}");
        }
    }
}

/// A level's JSON document (its GenAI-Perf JSON file, and its line of `--output json`): the
/// numbers, the plan's identity and workload fingerprint, the shard, the SLO results.
fn level_doc(
    s: &LevelSummary,
    ids: &Ids,
    slo: &[SloResult],
    writer: &files::Writer<'_>,
) -> serde_json::Value {
    let fingerprint = serde_json::to_value(&ids.fingerprint).unwrap_or_default();
    let own = vec![(FINGERPRINT_KEY, fingerprint)];
    writer.level_doc(s, &ids.input_config, own, slo, &ids.context)
}
