//! `search`'s front end on the level engine, callable in-process: the highest concurrency or
//! request rate at which every `--slo` holds, with a stated confidence. [`bisect`] orders the
//! probes so that a full "meets" proof is paid only for loads that bound the answer; each probe
//! is a level of the one engine under the sequential rule ([`crate::analysis::sequential`]),
//! which measures only until the probe's decision is settled, stops a saturated probe early,
//! and reports a probe still open at its cap as undecided. [`cost`] says up front what a proof
//! costs and, after the first probe, how long the search should take; `--max-time` ends it with
//! the highest load proven so far. Every probe writes a level's usual files; the search's
//! directory gets `summary.csv`, `summary.json`, `pareto.csv`, `search.json` ([`document`]) and
//! `report.html`.

pub mod bisect;
pub mod cost;
pub mod document;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analysis::sequential::{Decision, Rule, StopReason};
use crate::artifact::search::{ProbeVerdict, SearchDoc};
use crate::artifact::{self, Layout, write_file};
use crate::engine::levels::{self, Flow, Planned};
use crate::engine::{Policy, files};
use crate::error::Result;
use crate::load::{Interrupt, LevelLength, Stimulus};
use crate::plan::LevelPart;
use crate::plan::search::SearchPlan;
use crate::profile::{Decisions, Ids, LevelResult, LevelRun, Runner, Ui};
use crate::publish::RunEnd;
use bisect::{Kind, Order, Outcome};

/// One probe of a search.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The load.
    pub load: f64,
    /// A proof or a scout.
    pub kind: Kind,
    /// The level it measured.
    pub level: LevelResult,
    /// What it says for the search.
    pub verdict: ProbeVerdict,
    /// How long it took, warm-up included.
    pub elapsed: Duration,
}

/// A finished (or interrupted, or timed-out) search.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// What `search.json` holds: the answer, its confidence, the probes, the cost.
    pub doc: SearchDoc,
    /// The search's directory.
    pub dir: PathBuf,
}

/// How the search loop ended, besides running out of probes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ended {
    /// Ctrl-C.
    pub interrupted: bool,
    /// `--max-time` ran out.
    pub timed_out: bool,
}

/// Runs a search. Usage mistakes are [`crate::error::Error::Usage`] before anything is sent;
/// Ctrl-C during the first probe is [`crate::error::Error::Interrupted`], later it ends the
/// search with what it found.
pub async fn run(plan: &SearchPlan, interrupt: Interrupt, ui: Ui) -> Result<SearchOutcome> {
    let started = Instant::now();
    let settled = crate::engine::streaming::settle(&plan.run).await?;
    if let Some(line) = &settled.line {
        ui.say(line);
    }
    // A search whose streaming the target's model settled runs that plan.
    let owned;
    let plan = match settled.plan {
        std::borrow::Cow::Borrowed(_) => plan,
        std::borrow::Cow::Owned(run) => {
            owned = SearchPlan {
                run,
                ..plan.clone()
            };
            &owned
        }
    };
    let run = &plan.run;
    let layout = artifact::fresh_layout(run, &artifact::local_timestamp());
    let dir = layout.sweep_dir();
    artifact::ensure_writable(&dir)?;
    let runner = Runner::start(run, &interrupt, ui, Ids::new(run), None).await?;
    ui.say(&cost::intro(plan));
    for line in cost::needs(&plan.rule) {
        ui.say(&line);
    }
    let mut search = Search {
        plan,
        runner,
        layout,
        order: Order::new(
            plan.axis.is_concurrency(),
            plan.min,
            plan.max,
            plan.resolution,
            plan.max_given,
        ),
        deadline: plan.max_time.map(|d| started + d),
        estimate: None,
        ended: Ended::default(),
        interrupt: interrupt.clone(),
        ui,
    };
    let probes = levels::run(&mut search, &interrupt, ui.speaks())
        .await?
        .levels;
    let Search {
        runner,
        order,
        estimate,
        mut ended,
        ..
    } = search;
    ended.interrupted = interrupt.stopping();
    let doc = document::document(
        plan,
        &order,
        &probes,
        estimate.as_ref(),
        started.elapsed(),
        ended,
    );
    write_file(
        &dir.join(artifact::search::SEARCH_FILE),
        artifact::search::json(&doc),
    )?;
    write_levels(plan, &dir, &probes, &runner)?;
    runner.publisher.finish(&RunEnd {
        exit_code: doc.exit_code,
        interrupted: ended.interrupted,
        knee: None,
        verdict: vec![doc.statement.clone()],
    })?;
    Ok(SearchOutcome { doc, dir })
}

/// `search`'s choices in the level loop: the probes [`bisect`] orders, each under the
/// sequential rule cut to the time left, until the bracket closes or `--max-time` runs out.
struct Search<'a> {
    plan: &'a SearchPlan,
    runner: Runner,
    layout: Layout,
    order: Order,
    deadline: Option<Instant>,
    estimate: Option<cost::Estimate>,
    ended: Ended,
    interrupt: Interrupt,
    ui: Ui,
}

/// A probe the order asked for: its load, kind and the rule it measures under.
struct Asked {
    load: f64,
    kind: Kind,
    rule: Rule,
}

impl levels::Mode for Search<'_> {
    type Probe = Asked;
    type Level = Probe;

    fn next(&mut self, done: &[Probe]) -> Option<Planned<Asked>> {
        let (load, kind) = self.order.next()?;
        let left = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            self.ended.timed_out = !self.interrupt.stopping();
            return None;
        }
        let run = &self.plan.run;
        let stimulus = self.plan.axis.stimulus(load);
        let rule = probe_rule(self.plan, load, kind, left);
        let part = LevelPart {
            index: done.len() as u32,
            whole: stimulus,
            load: Ok((stimulus, LevelLength::Requests(rule.looks.cap))),
            warmup: run.level_part(0).warmup,
            start_at: None,
        };
        Some(Planned {
            part,
            dir: Some(probe_dir(&self.layout, &stimulus, kind)),
            probe: Asked { load, kind, rule },
        })
    }

    fn writer(&self) -> files::Writer<'_> {
        self.runner.writer(&self.plan.run)
    }

    /// Runs one probe.
    async fn measure(&mut self, level: Planned<Asked>) -> Result<Probe> {
        let run = &self.plan.run;
        let (stimulus, _) = level.load()?;
        let Asked { load, kind, rule } = level.probe;
        let dir = probe_dir(&self.layout, &stimulus, kind);
        let started = Instant::now();
        let level = LevelRun {
            part: &level.part,
            stimulus,
            policy: Policy::Sequential(Arc::new(rule)),
            dir: &dir,
        };
        let level = self.runner.level(run, &level, self.ui).await?;
        let verdict = probe_verdict(&level, run.max_error_rate, kind);
        Ok(Probe {
            load,
            kind,
            level,
            verdict,
            elapsed: started.elapsed(),
        })
    }

    /// Says the probe, tells the order, and ends the search on Ctrl-C or at `--max-time`.
    fn after(&mut self, done: &[Probe]) -> Flow {
        let Some(probe) = done.last() else {
            return Flow::Next;
        };
        let index = done.len() - 1;
        self.ui
            .say(&probe_line(index + 1, probe, self.plan.run.max_error_rate));
        let verdict = probe.verdict;
        if verdict == ProbeVerdict::Interrupted {
            return Flow::Stop;
        }
        if verdict == ProbeVerdict::Undecided && self.deadline.is_some_and(|d| Instant::now() >= d)
        {
            self.ended.timed_out = true;
            return Flow::Stop;
        }
        self.order.record(probe.load, outcome(verdict));
        if index == 0 && self.order.next().is_some() {
            self.estimate = cost::estimate(self.plan, &self.order, probe);
            if let Some(e) = &self.estimate {
                self.ui.say(&e.line);
            }
        }
        Flow::Next
    }
}

/// The sweep-wide files over the probes that settled something (a scout left open after its
/// twenty requests describes little, and its load may be proven later in a probe of its own).
fn write_levels(plan: &SearchPlan, dir: &Path, probes: &[Probe], runner: &Runner) -> Result<()> {
    let levels: Vec<LevelResult> = probes
        .iter()
        .filter(|p| p.verdict != ProbeVerdict::Scouted)
        .map(|p| p.level.clone())
        .collect();
    if levels.is_empty() {
        return Ok(());
    }
    let decisions = Decisions::of(&levels, plan.run.knee_min_gain);
    crate::profile::write_sweep(&plan.run, dir, &levels, &decisions, &runner.ids, &[])
}

/// Successful requests a scout measures: its first look, and for a rate at least two seconds
/// of arrivals (the saturation signals need half a second and eight points to judge).
fn scout_cap(plan: &SearchPlan, load: f64) -> u64 {
    let first = crate::load::Looks::new(plan.rule.looks.cap).first;
    let cap = if plan.axis.is_concurrency() {
        first
    } else {
        first.max((load * 2.0).ceil() as u64)
    };
    cap.min(plan.rule.looks.cap)
}

/// The rule a probe measures under: the search's, cut to a scout's first look, and to the
/// time the search has left.
fn probe_rule(plan: &SearchPlan, load: f64, kind: Kind, left: Option<Duration>) -> Rule {
    let max_time = plan.rule.max_time.into_iter().chain(left).min();
    match kind {
        Kind::Proof => Rule {
            max_time,
            ..plan.rule.clone()
        },
        Kind::Scout => plan.rule.with_caps(scout_cap(plan, load), max_time),
    }
}

/// A probe's directory: the level's, with `-scout` after a scout's (a scouted load may be
/// proven later, in a directory of its own).
fn probe_dir(layout: &Layout, stimulus: &Stimulus, kind: Kind) -> PathBuf {
    let dir = layout.level_dir(stimulus);
    match (kind, dir.file_name()) {
        (Kind::Scout, Some(name)) => {
            dir.with_file_name(format!("{}-scout", name.to_string_lossy()))
        }
        _ => dir,
    }
}

/// What a verdict tells the order.
fn outcome(v: ProbeVerdict) -> Outcome {
    match v {
        ProbeVerdict::Meets => Outcome::Meets,
        ProbeVerdict::Scouted => Outcome::Passed,
        _ => Outcome::NotMeets,
    }
}

/// `probe 3: concurrency4 meets (63 measured requests, settled, 9.1 s)`.
fn probe_line(n: usize, p: &Probe, max_error_rate: f64) -> String {
    let l = &p.level;
    let measured = l.settled.as_ref().map_or(0, |s| s.measured);
    format!(
        "probe {n}: {}{} {} ({}, {}, {:.1} s)",
        l.summary.stimulus.name(),
        if p.kind == Kind::Scout { " scout" } else { "" },
        p.verdict.word(),
        crate::analysis::text::count(measured, "measured request"),
        why(l, max_error_rate),
        p.elapsed.as_secs_f64()
    )
}

/// Why a probe stopped, and its errors when too many of its requests failed.
pub(crate) fn why(l: &LevelResult, max_error_rate: f64) -> String {
    let why = l
        .settled
        .as_ref()
        .map_or(String::new(), |s| s.stopped.words());
    match too_many_errors(l, max_error_rate) {
        Some(e) if why.is_empty() => e,
        Some(e) => format!("{why}; {e}"),
        None => why,
    }
}

/// What a probe says for the search: saturated and undecided probes do not meet the
/// objectives; a settled one meets them only when its point objectives held too and no more
/// than `max_error_rate` of its requests failed (past that its percentiles describe only the
/// survivors). A scout left open at its first look is `scouted`.
pub fn probe_verdict(l: &LevelResult, max_error_rate: f64, kind: Kind) -> ProbeVerdict {
    let mut verdict = settled_verdict(l);
    if kind == Kind::Scout && verdict == ProbeVerdict::Undecided {
        verdict = ProbeVerdict::Scouted;
    }
    let passing = matches!(verdict, ProbeVerdict::Meets | ProbeVerdict::Scouted);
    if passing && too_many_errors(l, max_error_rate).is_some() {
        return ProbeVerdict::Fails;
    }
    verdict
}

/// `12% of its requests failed, over --max-error-rate 5%`, when they did.
fn too_many_errors(l: &LevelResult, max_error_rate: f64) -> Option<String> {
    let share = crate::engine::outcome::LevelEnd::of(&l.summary, &l.slo).error_share();
    (share > max_error_rate).then(|| {
        format!(
            "{} of its requests failed, over --max-error-rate {}",
            crate::engine::outcome::percent(share),
            crate::engine::outcome::percent(max_error_rate)
        )
    })
}

/// The verdict of the sequential rule and the point objectives alone.
fn settled_verdict(l: &LevelResult) -> ProbeVerdict {
    let Some(st) = &l.settled else {
        return ProbeVerdict::Undecided;
    };
    match (&st.stopped, st.decision) {
        (StopReason::Interrupted, _) => ProbeVerdict::Interrupted,
        (StopReason::Saturated { .. }, _) => ProbeVerdict::Saturated,
        (_, Decision::Fails) => ProbeVerdict::Fails,
        (_, Decision::Open) => ProbeVerdict::Undecided,
        (_, Decision::Meets) => {
            let points_held = st
                .checks
                .iter()
                .zip(&l.slo)
                .filter(|(c, _)| !c.interval)
                .all(|(_, r)| r.passed);
            if points_held {
                ProbeVerdict::Meets
            } else {
                ProbeVerdict::Fails
            }
        }
    }
}
