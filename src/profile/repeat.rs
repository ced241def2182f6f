//! `--repeat N`: the whole plan runs N times in a row, each repetition a complete sweep in its
//! own directory (`rep1/`, `rep2/`, ...; see [`artifact::Layout::repetition`]), then every level
//! is combined: the median of each statistic across the repetitions, with its spread
//! ([`crate::stats::repeat`]). The combined levels are written where a single run's levels go,
//! so `compare`, `report` and any GenAI-Perf reader see one run whose numbers are medians, and
//! `compare` finds each repetition through the combined level's `repetitions` block.

use std::path::{Path, PathBuf};

use super::{
    Decisions, Ids, LevelResult, Outcome, Ui, level_doc, run_once, write_report, write_sweep,
};
use crate::analysis::slo;
use crate::artifact::{self, repeat as files, write_file};
use crate::error::{Result, create_dir};
use crate::load::Interrupt;
use crate::plan::RunPlan;
use crate::publish::{KeyMetrics, LevelReport, Mode, Publisher};
use crate::stats::LevelSummary;
use crate::stats::repeat::{self, MetricSpread};

/// Runs `plan` `plan.repeat.count` times and combines the levels every finished repetition
/// measured. Ctrl-C ends the current repetition as it ends a single run, and the repetitions
/// finished so far are combined. Only the combined run reaches `--junit`, `--output json` and
/// the Pushgateway.
pub(super) async fn run(plan: &RunPlan, interrupt: Interrupt, ui: Ui) -> Result<Outcome> {
    let layout = artifact::fresh_layout(plan, &artifact::local_timestamp());
    // Every repetition's levels and the combined ones, before the first request.
    let mut dirs = super::level_dirs(plan, &layout);
    for k in 1..=plan.repeat.count {
        let rep = repetition(plan, &layout, k);
        let rep_layout = artifact::Layout::new(&rep, layout.timestamp().to_string());
        dirs.extend(super::level_dirs(&rep, &rep_layout));
    }
    artifact::ensure_levels_writable(&dirs)?;
    let reps = crate::engine::repeat::each(
        plan.repeat,
        &interrupt,
        |s| ui.say(s),
        |k| {
            let rep_plan = repetition(plan, &layout, k);
            let interrupt = interrupt.clone();
            async move {
                let outcome = run_once(&rep_plan, interrupt, ui).await?;
                let interrupted = outcome.interrupted;
                Ok((outcome, interrupted))
            }
        },
    )
    .await?;
    combine(plan, &layout, reps, &interrupt, ui).await
}

/// The plan of repetition `k` (1-based): the whole plan, its files in its own directory, its
/// results published only through the combined run.
fn repetition(plan: &RunPlan, layout: &artifact::Layout, k: u32) -> RunPlan {
    RunPlan {
        artifact_dir: Some(layout.repetition(k, &plan.levels)),
        outputs: crate::plan::outputs::Outputs {
            labels: plan.outputs.labels.clone(),
            request_id_header: plan.outputs.request_id_header.clone(),
            ..Default::default()
        },
        ..plan.clone()
    }
}

/// The combined run of finished repetitions `reps`: one level per plan level that every
/// repetition measured, its files written, the sweep's files beside them.
async fn combine(
    plan: &RunPlan,
    layout: &artifact::Layout,
    reps: Vec<Outcome>,
    interrupt: &Interrupt,
    ui: Ui,
) -> Result<Outcome> {
    let context = reps.iter().find_map(|r| r.context.clone());
    let mut ids = Ids::new(plan);
    if let Some(c) = &context {
        ids.context = c.clone();
    }
    let mut publisher = Publisher::new(&plan.outputs, Mode::Profile, &plan.target.model);
    let mut levels = Vec::new();
    let mut table = Vec::new();
    for stimulus in &plan.levels {
        let name = stimulus.name();
        let Some(found) = crate::engine::repeat::in_each(&reps, |r| {
            r.levels.iter().find(|l| l.summary.stimulus.name() == name)
        }) else {
            continue;
        };
        let (result, spreads, report) = combine_level(plan, layout, &ids, &found)?;
        let checks: Vec<&[_]> = found.iter().map(|l| l.slo.as_slice()).collect();
        crate::engine::repeat::warn_slo_noise(&name, &plan.slos, &checks, |w| ui.say(w));
        publisher.level(report).await;
        table.push((stimulus.name(), spreads));
        levels.push(result);
    }
    let decisions = Decisions::of(&levels, plan.knee_min_gain);
    let sweep_dir = write_run_files(plan, layout, &ids, &levels, &decisions, &table)?;
    let interrupted = crate::engine::outcome::interrupted(
        reps.iter().any(|r| r.interrupted),
        interrupt.stopping(),
        (reps.len(), plan.repeat.count as usize),
    );
    let outcome = Outcome {
        levels,
        sweep_dir,
        interrupted,
        verdict: decisions.verdict,
        knee: decisions.knee,
        idle: Vec::new(),
        repetitions: reps,
        context,
    };
    super::publish_end(&publisher, plan, &outcome)?;
    Ok(outcome)
}

/// Writes one combined level (GenAI-Perf's JSON and CSV of the medians, with the `repetitions`
/// block) and returns it, its spreads and what the result channels get.
fn combine_level(
    plan: &RunPlan,
    layout: &artifact::Layout,
    ids: &Ids,
    found: &[&LevelResult],
) -> Result<(LevelResult, Vec<MetricSpread>, LevelReport)> {
    let summaries: Vec<&LevelSummary> = found.iter().map(|l| &l.summary).collect();
    let combined = repeat::combined(&summaries);
    let spreads = repeat::spreads(&summaries, &combined);
    let dir = layout.level_dir(&combined.stimulus);
    create_dir(&dir)?;
    let slo = slo::evaluate(&plan.slos, &combined);
    let writer = ids.writer(plan, 0);
    let mut doc = level_doc(&combined, ids, &slo, &writer);
    let rel: Vec<String> = found
        .iter()
        .map(|l| relative(&dir, &l.dir).display().to_string())
        .collect();
    if let serde_json::Value::Object(m) = &mut doc {
        m.insert(
            "repetitions".into(),
            files::block(found.len(), Some(&rel), &spreads),
        );
    }
    write_file(
        &dir.join(&plan.export_names.csv),
        artifact::genai_perf::csv(&combined),
    )?;
    write_file(
        &dir.join(&plan.export_names.json),
        serde_json::to_string_pretty(&doc).unwrap_or_default(),
    )?;
    let report = LevelReport {
        stimulus: combined.stimulus,
        doc,
        slo: slo.clone(),
        validity: combined.validity.clone(),
        key: KeyMetrics::of(&combined),
    };
    let result = LevelResult {
        repetitions: found.iter().map(|l| l.summary.clone()).collect(),
        summary: combined,
        dir,
        slo,
        settled: None,
        sent: found.iter().map(|l| l.sent).sum(),
    };
    Ok((result, spreads, report))
}

/// `target` relative to `from` (both under the same run directory): `../rep1/<level>` or
/// `rep1`.
fn relative(from: &Path, target: &Path) -> PathBuf {
    let (f, t): (Vec<_>, Vec<_>) = (from.components().collect(), target.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let up = std::iter::repeat_n(std::path::Component::ParentDir, f.len() - common);
    up.chain(t[common..].iter().copied()).collect()
}

/// The sweep's files (`summary.csv`, `summary.json` with each level's spread, `report.html`)
/// and `repetitions.csv`; for a single level, `repetitions.csv` in its directory. Returns the
/// sweep directory of a sweep.
fn write_run_files(
    plan: &RunPlan,
    layout: &artifact::Layout,
    ids: &Ids,
    levels: &[LevelResult],
    decisions: &Decisions,
    table: &[(String, Vec<MetricSpread>)],
) -> Result<Option<PathBuf>> {
    let csv = files::csv(table);
    match levels {
        [] => Ok(None),
        [one] if plan.levels.len() == 1 => {
            write_file(&one.dir.join(files::REPETITIONS_CSV_FILE), csv)?;
            if plan.generate_plots {
                write_report(plan, &one.dir, levels, &ids.context)?;
            }
            Ok(None)
        }
        _ => {
            let d = layout.sweep_dir();
            write_sweep(plan, &d, levels, decisions, ids, table)?;
            write_file(&d.join(files::REPETITIONS_CSV_FILE), csv)?;
            Ok(Some(d))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_between_combined_and_repetition_levels() {
        assert_eq!(
            relative(Path::new("a/b/gpt2-c1"), Path::new("a/b/rep1/gpt2-c1")),
            PathBuf::from("../rep1/gpt2-c1")
        );
        assert_eq!(
            relative(Path::new("a/gpt2-c1"), Path::new("a/gpt2-c1/rep2")),
            PathBuf::from("rep2")
        );
    }
}
