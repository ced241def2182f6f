//! `search`'s front end on the level engine, callable in-process: the highest concurrency or
//! request rate at which every `--slo` holds, with a stated confidence. It doubles from `--min`
//! and then bisects ([`bisect`]); each probe is a level of the one engine under the sequential
//! rule ([`crate::analysis::sequential`]), which measures only until the probe's decision is
//! settled, stops a saturated probe early, and reports a probe still open at its cap as
//! undecided. Every probe writes a level's usual files; the search's directory gets
//! `summary.csv`, `summary.json`, `pareto.csv`, `search.json` and `report.html`.

pub mod bisect;

use std::path::PathBuf;
use std::sync::Arc;

use crate::analysis::sequential::{Check, Decision, StopReason};
use crate::analysis::{knee, verdict};
use crate::artifact::search::{
    AnswerDoc, LADDER_REQUESTS, LadderDoc, NextDoc, ObjectiveDoc, ProbeDoc, ProbeVerdict, SearchDoc,
};
use crate::artifact::{self, write_file};
use crate::engine::Policy;
use crate::error::{Error, Result, create_dir};
use crate::load::{Cancel, Stop};
use crate::metrics::{Metric, MetricSource, SystemMetric};
use crate::plan::LevelPart;
use crate::plan::search::SearchPlan;
use crate::profile::{Ids, LevelResult, LevelRun, Runner, Ui};
use crate::publish::RunEnd;
use crate::stats::LevelSummary;
use bisect::Bisection;

/// One probe of a search.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The load.
    pub load: f64,
    /// The level it measured.
    pub level: LevelResult,
    /// What it says for the search.
    pub verdict: ProbeVerdict,
}

/// A finished (or interrupted) search.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Every probe, in the order made.
    pub probes: Vec<Probe>,
    /// What `search.json` holds: the answer, its confidence, the probes, the cost.
    pub doc: SearchDoc,
    /// The search's directory.
    pub dir: PathBuf,
}

/// Runs a search. Usage mistakes are [`Error::Usage`] before anything is sent; Ctrl-C during
/// the first probe is [`Error::Interrupted`], later it ends the search with what it found.
pub async fn run(plan: &SearchPlan, cancel: Cancel, ui: Ui) -> Result<SearchOutcome> {
    let run = &plan.run;
    let layout = artifact::fresh_layout(run, &artifact::local_timestamp());
    let dir = layout.sweep_dir();
    artifact::ensure_writable(&dir)?;
    let mut runner = Runner::start(run, &cancel, ui, Ids::new(run), None).await?;
    ui.say(&intro(plan));
    let policy = Policy::Sequential(Arc::new(plan.rule.clone()));
    let mut bracket = Bisection::new(
        plan.axis.is_concurrency(),
        plan.min,
        plan.max,
        plan.resolution,
    );
    let mut probes: Vec<Probe> = Vec::new();
    while let Some(load) = bracket.next() {
        if cancel.stopping() {
            break;
        }
        let stimulus = plan.axis.stimulus(load);
        let part = LevelPart {
            index: probes.len() as u32,
            whole: stimulus,
            load: Ok((stimulus, Stop::Requests(plan.rule.looks.cap))),
            warmup: run.level_part(0).warmup,
            start_at: None,
        };
        let level_dir = layout.level_dir(&stimulus);
        create_dir(&level_dir)?;
        let level = LevelRun {
            part: &part,
            stimulus,
            policy: policy.clone(),
            dir: &level_dir,
        };
        let level = match runner.level(run, &level, ui).await {
            Err(Error::Interrupted) if !probes.is_empty() => break,
            r => r?,
        };
        let verdict = probe_verdict(&level, run.max_error_rate);
        ui.say(&probe_line(
            probes.len() + 1,
            &level,
            verdict,
            run.max_error_rate,
        ));
        if verdict == ProbeVerdict::Interrupted {
            probes.push(Probe {
                load,
                level,
                verdict,
            });
            break;
        }
        bracket.record(load, verdict == ProbeVerdict::Meets);
        probes.push(Probe {
            load,
            level,
            verdict,
        });
    }
    let interrupted = cancel.stopping();
    let doc = document(plan, &bracket, &probes, interrupted);
    write_file(
        &dir.join(artifact::search::SEARCH_FILE),
        artifact::search::json(&doc),
    )?;
    let levels: Vec<LevelResult> = probes.iter().map(|p| p.level.clone()).collect();
    if !levels.is_empty() {
        let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.summary.clone()).collect();
        let mut k = knee::analyze(&summaries, run.knee_min_gain);
        let v = verdict::with_knee(&summaries, &mut k);
        crate::profile::write_sweep(run, &dir, &levels, (&v, &k), &runner.ids, &[])?;
    }
    runner.publisher.finish(&RunEnd {
        exit_code: doc.exit_code,
        interrupted,
        knee: None,
        verdict: vec![doc.statement.clone()],
    })?;
    Ok(SearchOutcome { probes, doc, dir })
}

/// What the search will do, once at the start.
fn intro(plan: &SearchPlan) -> String {
    let r = &plan.rule;
    format!(
        "search: the highest {} meeting {}, from {} up to {}, at {} % confidence (each probe's intervals at {} % over up to {} looks and {}), at most {} per probe{}",
        plan.axis.key().replace('_', " "),
        r.objectives
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" and "),
        crate::analysis::text::load_text(plan.min),
        crate::analysis::text::load_text(plan.max),
        crate::metrics::trim_num(r.confidence * 100.0),
        crate::metrics::trim_num((r.look_confidence() * 1e4).floor() / 100.0),
        r.looks.count(),
        crate::analysis::text::count(r.interval_objectives() as u64, "objective"),
        crate::analysis::text::count(r.looks.cap, "request"),
        r.max_time
            .map_or(String::new(), |d| format!(" or {:.0} s", d.as_secs_f64()))
    )
}

/// `probe 3: concurrency4 meets (63 requests, settled)`.
fn probe_line(n: usize, l: &LevelResult, v: ProbeVerdict, max_error_rate: f64) -> String {
    let measured = l.settled.as_ref().map_or(0, |s| s.measured);
    format!(
        "probe {n}: {} {} ({}, {})",
        l.summary.stimulus.name(),
        v.word(),
        crate::analysis::text::count(measured, "measured request"),
        why(l, max_error_rate)
    )
}

/// Why a probe stopped, and its errors when too many of its requests failed.
fn why(l: &LevelResult, max_error_rate: f64) -> String {
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
/// survivors).
pub fn probe_verdict(l: &LevelResult, max_error_rate: f64) -> ProbeVerdict {
    let verdict = settled_verdict(l);
    if verdict == ProbeVerdict::Meets && too_many_errors(l, max_error_rate).is_some() {
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

/// `search.json`'s document of a search.
fn document(plan: &SearchPlan, b: &Bisection, probes: &[Probe], interrupted: bool) -> SearchDoc {
    let find = |load: Option<f64>| load.and_then(|l| probes.iter().find(|p| p.load == l));
    let answer = find(b.answer());
    let next = find(b.next_above()).filter(|_| answer.is_some() || b.next_above().is_some());
    let spent: u64 = probes.iter().map(|p| p.level.sent).sum();
    let top = next.map_or_else(|| answer.map_or(plan.min, |a| a.load), |n| n.load);
    let loads =
        artifact::search::ladder_loads(plan.axis.is_concurrency(), plan.min, top, plan.resolution);
    let ladder_requests = loads.len() as u64 * LADDER_REQUESTS;
    SearchDoc {
        over: plan.axis.key().into(),
        objectives: plan
            .rule
            .objectives
            .iter()
            .map(ToString::to_string)
            .collect(),
        confidence: plan.rule.confidence,
        look_confidence: plan.rule.look_confidence(),
        method: METHOD.into(),
        min: plan.min,
        max: plan.max_given.then_some(plan.max),
        resolution: plan.resolution,
        max_probe_requests: plan.rule.looks.cap,
        max_probe_time_s: plan.rule.max_time.map(|d| d.as_secs_f64()),
        answer: answer.map(answer_doc),
        next: next.map(|p| NextDoc {
            load: p.load,
            level: p.level.summary.stimulus.name(),
            verdict: p.verdict,
        }),
        statement: statement(plan, answer, next, interrupted),
        probes: probes
            .iter()
            .enumerate()
            .map(|(i, p)| probe_doc(i, p, plan.run.max_error_rate))
            .collect(),
        requests_spent: spent,
        ladder: LadderDoc {
            loads,
            requests_per_level: LADDER_REQUESTS,
            requests: ladder_requests,
            share_spent: spent as f64 / ladder_requests.max(1) as f64,
        },
        exit_code: if interrupted {
            Error::Interrupted.exit_code()
        } else if answer.is_some() {
            0
        } else {
            1
        },
        interrupted,
    }
}

/// The method in one sentence, for `search.json`.
const METHOD: &str = "doubling then bisection; each probe stops when every objective's distribution-free interval (binomial order statistics for a percentile, Clopper-Pearson for error_rate) lies wholly on one side of its bound, widened (Bonferroni) over the objectives and the looks so that a probe's verdict errs with probability at most (1 - confidence)/2 either way";

fn answer_doc(p: &Probe) -> AnswerDoc {
    let s = &p.level.summary;
    AnswerDoc {
        load: p.load,
        level: s.stimulus.name(),
        dir: p.level.dir.display().to_string(),
        request_throughput: s.stats.request_throughput,
        output_token_throughput: s.stats.output_token_throughput,
        request_goodput: s.metric(crate::metrics::MetricRef::System(
            SystemMetric::RequestGoodput,
        )),
        output_token_throughput_per_user: s
            .shown_stat(Metric::OutputTokenThroughputPerUser)
            .filter(|st| st.count > 0)
            .map(|st| st.avg),
    }
}

fn probe_doc(i: usize, p: &Probe, max_error_rate: f64) -> ProbeDoc {
    let st = p.level.settled.as_ref();
    ProbeDoc {
        index: i as u32 + 1,
        load: p.load,
        level: p.level.summary.stimulus.name(),
        dir: p.level.dir.display().to_string(),
        verdict: p.verdict,
        stopped: st.map_or("request_cap", |s| s.stopped.key()).into(),
        why: why(&p.level, max_error_rate),
        measured: st.map_or(p.level.summary.stats.request_count, |s| s.measured),
        sent: p.level.sent,
        objectives: st.map_or(Vec::new(), |s| {
            s.checks
                .iter()
                .zip(&p.level.slo)
                .map(objective_doc)
                .collect()
        }),
    }
}

/// An objective at a probe's last look; a point objective shows its value at the end.
fn objective_doc((c, r): (&Check, &crate::analysis::slo::SloResult)) -> ObjectiveDoc {
    let decision = match (c.interval, r.passed) {
        (true, _) => c.decision.word(),
        (false, true) => "meets",
        (false, false) => "fails",
    };
    ObjectiveDoc {
        objective: c.objective.to_string(),
        estimate: if c.interval { c.estimate } else { r.actual },
        lower: c.lower,
        upper: c.upper,
        unit: c.objective.metric.kind().unit().into(),
        decision: decision.into(),
        interval: c.interval,
    }
}

/// The answer in words, with its confidence.
fn statement(
    plan: &SearchPlan,
    answer: Option<&Probe>,
    next: Option<&Probe>,
    interrupted: bool,
) -> String {
    let what = plan.axis.key().replace('_', " ");
    let load = |p: &Probe| format!("{what} {}", crate::analysis::text::load_text(p.load));
    let conf = format!(
        "{} %",
        crate::metrics::trim_num(plan.rule.confidence * 100.0)
    );
    let objectives = plan
        .rule
        .objectives
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" and ");
    let cut = if interrupted {
        " (interrupted: the search did not finish)"
    } else {
        ""
    };
    match (answer, next) {
        (Some(a), Some(n)) if n.verdict == ProbeVerdict::Undecided => format!(
            "{} meets {objectives} at {conf} confidence; {} was undecided at its cap, so the highest load lies between them or above{cut}",
            load(a),
            load(n)
        ),
        (Some(a), Some(n)) => format!(
            "{} meets {objectives}; {} does not ({}): the highest {what} meeting them is {}, at {conf} confidence{cut}",
            load(a),
            load(n),
            n.verdict.word(),
            crate::analysis::text::load_text(a.load)
        ),
        (Some(a), None) => format!(
            "{} meets {objectives} at {conf} confidence; it is the highest load the search may try (--max){cut}",
            load(a)
        ),
        (None, Some(n)) => format!(
            "no load meets {objectives}: {} (--min) {}{cut}",
            load(n),
            match n.verdict {
                ProbeVerdict::Undecided => "was undecided at its cap".to_string(),
                v => v.word().to_string(),
            }
        ),
        (None, None) => format!("no load was settled{cut}"),
    }
}
