//! What a search found, as `search.json` says it: the answer and the load above it, which
//! probes proved their verdicts and which are covered by the proven ones under monotonicity,
//! the statement in words with its confidence, and the requests spent against a ladder.

use std::time::Duration;

use super::bisect::Order;
use super::cost::Estimate;
use super::{Ended, Probe};
use crate::analysis::sequential::{Check, Stopped};
use crate::artifact::search::{
    AnswerDoc, LADDER_REQUESTS, LadderDoc, MonotonicityDoc, NextDoc, ObjectiveDoc, ProbeDoc,
    ProbeVerdict, Proof, SearchDoc,
};
use crate::error::Error;
use crate::metrics::{Metric, MetricSource, SystemMetric};
use crate::plan::search::SearchPlan;

/// The method in one sentence, for `search.json`.
const METHOD: &str = "probes ordered so that only loads bounding the answer are proven (from --max down, or a climb from --min with scouts cut at their first look), then bisection; each probe stops when every objective's distribution-free interval (binomial order statistics for a percentile, the count of failures for error_rate) lies wholly on one side of its bound, at per-look levels calibrated exactly for a look after every request, so that a probe's verdict errs with probability at most (1 - confidence)/2 either way";

/// `search.json`'s document of a search.
pub fn document(
    plan: &SearchPlan,
    order: &Order,
    probes: &[Probe],
    estimate: Option<&Estimate>,
    elapsed: Duration,
    ended: Ended,
) -> SearchDoc {
    // The latest probe at a load: a scouted load's proof comes after its scout.
    let proof = |load: Option<f64>| load.and_then(|l| probes.iter().rev().find(|p| p.load == l));
    let answer = proof(order.answer()).filter(|p| p.verdict == ProbeVerdict::Meets);
    let next = proof(order.next_above()).filter(|p| p.verdict != ProbeVerdict::Meets);
    let monotonicity = MonotonicityDoc {
        meets_up_to: answer.map(|a| a.load),
        fails_from: probes
            .iter()
            .filter(|p| p.verdict == ProbeVerdict::Fails)
            .map(|p| p.load)
            .reduce(f64::min),
    };
    let spent: u64 = probes.iter().map(|p| p.level.sent).sum();
    let top = next.map_or_else(|| answer.map_or(plan.min, |a| a.load), |n| n.load);
    let loads = crate::artifact::search::ladder_loads(
        plan.axis.is_concurrency(),
        plan.min,
        top,
        plan.resolution,
    );
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
        order: if plan.max_given { "from_max" } else { "climb" }.into(),
        min: plan.min,
        max: plan.max_given.then_some(plan.max),
        resolution: plan.resolution,
        max_probe_requests: plan.rule.looks.cap,
        max_probe_time_s: plan.rule.max_time.map(|d| d.as_secs_f64()),
        max_time_s: plan.max_time.map(|d| d.as_secs_f64()),
        answer: answer.map(answer_doc),
        next: next.map(|p| NextDoc {
            load: p.load,
            level: p.level.summary.stimulus.name(),
            verdict: p.verdict,
        }),
        statement: statement(plan, answer, next, ended),
        cost: super::cost::doc(&plan.rule, estimate),
        probes: probes
            .iter()
            .enumerate()
            .map(|(i, p)| probe_doc(i, p, plan.run.max_error_rate, &monotonicity))
            .collect(),
        monotonicity,
        requests_spent: spent,
        elapsed_s: elapsed.as_secs_f64(),
        ladder: LadderDoc {
            loads,
            requests_per_level: LADDER_REQUESTS,
            requests: ladder_requests,
            share_spent: spent as f64 / ladder_requests.max(1) as f64,
        },
        exit_code: if ended.interrupted {
            Error::Interrupted.exit_code()
        } else if answer.is_some() {
            0
        } else {
            1
        },
        interrupted: ended.interrupted,
        timed_out: ended.timed_out,
    }
}

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

/// [`Proof::Proven`] when the probe's own interval settled its verdict; `covered` when its verdict
/// follows from a proven one (a load at or below the answer meets, one at or above a proven
/// fail fails); `unproven` otherwise.
fn proof_of(p: &Probe, m: &MonotonicityDoc) -> Proof {
    match p.verdict {
        ProbeVerdict::Meets | ProbeVerdict::Fails => Proof::Proven,
        _ if m.meets_up_to.is_some_and(|a| p.load <= a) => Proof::Covered,
        _ if m.fails_from.is_some_and(|f| p.load >= f) => Proof::Covered,
        _ => Proof::Unproven,
    }
}

fn probe_doc(i: usize, p: &Probe, max_error_rate: f64, m: &MonotonicityDoc) -> ProbeDoc {
    let st = p.level.settled.as_ref();
    ProbeDoc {
        index: i as u32 + 1,
        load: p.load,
        level: p.level.summary.stimulus.name(),
        dir: p.level.dir.display().to_string(),
        kind: p.kind,
        verdict: p.verdict,
        proof: proof_of(p, m),
        stopped: st.map_or(Stopped::RequestCap, |s| Stopped::from(&s.stopped)),
        why: super::why(&p.level, max_error_rate),
        measured: st.map_or(p.level.summary.stats.request_count, |s| s.measured),
        sent: p.level.sent,
        elapsed_s: p.elapsed.as_secs_f64(),
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
    ended: Ended,
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
    if ended.timed_out {
        return timed_out(plan, answer, next, (&objectives, &conf));
    }
    let cut = if ended.interrupted {
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

/// The statement of a search `--max-time` cut short: the highest load proven so far, never a
/// guess about the loads not yet proven.
fn timed_out(
    plan: &SearchPlan,
    answer: Option<&Probe>,
    next: Option<&Probe>,
    (objectives, conf): (&str, &str),
) -> String {
    let what = plan.axis.key().replace('_', " ");
    let limit = plan.max_time.map_or(String::new(), |d| {
        format!(" ({})", crate::analysis::text::duration(d.as_secs_f64()))
    });
    let below = next
        .filter(|n| matches!(n.verdict, ProbeVerdict::Fails | ProbeVerdict::Saturated))
        .map_or(String::new(), |n| {
            format!(" and below {}", crate::analysis::text::load_text(n.load))
        });
    match answer {
        Some(a) => format!(
            "{what} {} meets {objectives} at {conf} confidence: the highest load proven before --max-time{limit} ran out; the highest {what} meeting them is at or above it{below}",
            crate::analysis::text::load_text(a.load)
        ),
        None => format!("no load was proven to meet {objectives} before --max-time{limit} ran out"),
    }
}
