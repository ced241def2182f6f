//! `perf --repeat N`: the whole sweep N times, each repetition's files (`-f` CSV, `--artifact-dir`,
//! requests log, raw export, timeline, JUnit) in `rep{k}/` beside where a single run puts them,
//! then per level the median of every number across the repetitions. The `-f` file holds the
//! medians in perf_analyzer's format (the guide's pandas plot reads it unchanged), and
//! `<stem>.repetitions.csv` beside it the spread (the format of
//! [`crate::artifact::repeat`]); `compare` and `report` find the repetitions through it.

use std::path::PathBuf;

use super::{PerfLevel, PerfOutcome, PerfPlan, run};
use crate::artifact::repeat::in_repetition;
use crate::error::{Error, Result};
use crate::load::Interrupt;
use crate::metrics::{MetricRef, Stat, Stats, SystemMetric};
use crate::stats::repeat::{MetricSpread, combined_validity, median, median_index, median_stats};

/// The outcome of a repeated perf run.
pub struct Repeated {
    /// The combined levels (medians), as one run.
    pub combined: PerfOutcome,
    /// Each repetition's own outcome, in order.
    pub reps: Vec<PerfOutcome>,
}

/// Repetition `k`'s plan: every file it writes moved into `rep{k}/`.
fn repetition_plan(plan: &PerfPlan, k: u32) -> Result<PerfPlan> {
    let moved = |p: &Option<PathBuf>| p.as_deref().map(|p| in_repetition(p, k));
    let mut outputs = plan.outputs.clone();
    outputs.junit = moved(&plan.outputs.junit);
    let rep = PerfPlan {
        report_file: moved(&plan.report_file),
        requests_log: moved(&plan.requests_log),
        profile_export: moved(&plan.profile_export),
        timeline: plan
            .timeline
            .as_ref()
            .map(|(p, d)| (in_repetition(p, k), *d)),
        artifact_dir: plan
            .artifact_dir
            .as_ref()
            .map(|d| d.join(format!("rep{k}"))),
        outputs,
        ..plan.clone()
    };
    for p in [&rep.report_file, &rep.requests_log, &rep.profile_export]
        .into_iter()
        .flatten()
        .chain(rep.timeline.as_ref().map(|(p, _)| p))
    {
        if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::error::create_dir(d)?;
        }
    }
    Ok(rep)
}

/// Runs the plan `plan.repeat.count` times (printing each repetition's report as perf does) and
/// combines the levels every finished repetition measured.
pub async fn run_repeated(plan: &PerfPlan, interrupt: Interrupt) -> Result<Repeated> {
    let reps = crate::engine::repeat::each(
        plan.repeat,
        &interrupt,
        |s| eprintln!("{s}"),
        |k| {
            let interrupt = interrupt.clone();
            async move {
                let rep = repetition_plan(plan, k)?;
                let outcome = run(&rep, interrupt.clone(), true).await?;
                if let Some(path) = &rep.report_file {
                    crate::artifact::write_file(path, super::report_csv(plan, &outcome.levels))?;
                }
                let interrupted = outcome.interrupted;
                Ok((outcome, interrupted))
            }
        },
    )
    .await?;
    let first = reps.first().ok_or(Error::Interrupted)?;
    let levels = plan
        .levels
        .iter()
        .filter_map(|s| level_in_each(&reps, &s.name()).map(|f| combined_level(plan, &f)))
        .collect();
    let combined = PerfOutcome {
        levels,
        protocol: first.protocol,
        model: first.model.clone(),
        idle: Vec::new(),
        interrupted: crate::engine::outcome::interrupted(
            reps.iter().any(|r| r.interrupted),
            interrupt.stopping(),
            (reps.len(), plan.repeat.count as usize),
        ),
    };
    Ok(Repeated { combined, reps })
}

/// The level standing for its repetitions: medians of its numbers; the server's and engine's
/// view, windows and errors from the middle one (by throughput); stable only when every
/// repetition was; its objectives checked on the medians.
fn combined_level(plan: &PerfPlan, reps: &[&PerfLevel]) -> PerfLevel {
    let t: Vec<f64> = reps.iter().map(|l| l.throughput).collect();
    let mid = reps[median_index(&t)];
    let med = |f: fn(&PerfLevel) -> f64| median(&reps.iter().map(|l| f(l)).collect::<Vec<_>>());
    let stats = |f: fn(&PerfLevel) -> Option<&Stats>| {
        let all: Vec<&Stats> = reps.iter().filter_map(|l| f(l)).collect();
        (!all.is_empty()).then(|| median_stats(&all))
    };
    let validity: Vec<&crate::metrics::Validity> = reps.iter().map(|l| &l.validity).collect();
    let mut level = PerfLevel {
        request_count: med(|l| l.request_count as f64).round() as u64,
        error_count: med(|l| l.error_count as f64).round() as u64,
        cancelled_count: med(|l| l.cancelled_count as f64).round() as u64,
        abandoned_count: med(|l| l.abandoned_count as f64).round() as u64,
        throughput: med(|l| l.throughput),
        response_throughput: med(|l| l.response_throughput),
        latency: stats(|l| Some(&l.latency)).unwrap_or_default(),
        first_response: stats(|l| l.first_response.as_ref()),
        whole_responses: reps.iter().all(|l| l.whole_responses),
        extra_percentile: mid.extra_percentile.map(|(p, _)| {
            let v: Vec<f64> = reps
                .iter()
                .filter_map(|l| l.extra_percentile.map(|e| e.1))
                .collect();
            (p, median(&v))
        }),
        avg_send_ns: med(|l| l.avg_send_ns),
        avg_recv_ns: med(|l| l.avg_recv_ns),
        stable: reps.iter().all(|l| l.stable),
        interrupted: reps.iter().any(|l| l.interrupted),
        validity: combined_validity(&validity, &mid.validity),
        ..mid.clone()
    };
    level.slo = crate::analysis::slo::evaluate(&plan.slos, &level);
    let checks: Vec<&[_]> = reps.iter().map(|l| l.slo.as_slice()).collect();
    let name = level.stimulus.name();
    crate::engine::repeat::warn_slo_noise(&name, &plan.slos, &checks, |w| eprintln!("{w}"));
    level
}

/// The level named `name` in every repetition, in order.
fn level_in_each<'a>(reps: &'a [PerfOutcome], name: &str) -> Option<Vec<&'a PerfLevel>> {
    let find = |r: &'a PerfOutcome| r.levels.iter().find(|l| l.stimulus.name() == name);
    crate::engine::repeat::in_each(reps, find)
}

/// perf's numbers of each combined level across its repetitions: latency avg and percentiles,
/// first response p50/p99, throughput.
pub fn spreads(r: &Repeated) -> Vec<(String, Vec<MetricSpread>)> {
    use crate::metrics::Metric;
    let metrics: Vec<MetricRef> = [Stat::Avg, Stat::P50, Stat::P90, Stat::P95, Stat::P99]
        .into_iter()
        .map(|s| MetricRef::Dist(Metric::RequestLatency, s))
        .chain(
            [Stat::P50, Stat::P99]
                .into_iter()
                .map(|s| MetricRef::Dist(Metric::TimeToFirstToken, s)),
        )
        .chain([MetricRef::System(SystemMetric::RequestThroughput)])
        .collect();
    r.combined
        .levels
        .iter()
        .map(|c| {
            let name = c.stimulus.name();
            let reps = level_in_each(&r.reps, &name).unwrap_or_default();
            let spreads = crate::stats::repeat::spreads_of(&reps, metrics.iter().copied());
            (name, spreads)
        })
        .collect()
}
