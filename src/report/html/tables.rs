//! The table of a run's levels, one row per level.

use maud::{Markup, html};

use super::figure::{kind_title, load_label};
use crate::analysis::text::count;
use crate::artifact::read::LoadedLevel;
use crate::metrics::Metric;
use crate::metrics::{Kind, MetricRef, MetricSource, Stat, SystemMetric};
use crate::stats::LevelSummary;

/// `digits` decimals; an en dash for a missing value (the engine's table too).
pub(super) fn cell(v: Option<f64>, digits: usize) -> String {
    crate::analysis::text::fixed_or(v, digits, "–")
}

/// A level's SLO cell: none checked, all passed, or which failed (in the hover text).
pub(super) fn slo_cell(lv: &LoadedLevel) -> Markup {
    let failed = lv.slo.iter().filter(|s| !s.passed).count();
    let which: Vec<String> = lv
        .slo
        .iter()
        .filter(|s| !s.passed)
        .map(|s| format!("{} ({})", s.objective, s.shown_actual()))
        .collect();
    html! {
        @if lv.slo.is_empty() {
            td { "–" }
        } @else if failed == 0 {
            td.pass { "pass (" (lv.slo.len()) ")" }
        } @else {
            td.fail title=(which.join("; ")) { "fail " (failed) "/" (lv.slo.len()) }
        }
    }
}

/// A level's notes: the knee, an interruption, short outputs, requests cancelled on purpose or
/// abandoned by a second Ctrl-C.
fn notes(l: &LevelSummary, knee_level: Option<&str>) -> String {
    let mut notes = Vec::new();
    if knee_level == Some(l.stimulus.name().as_str()) {
        notes.push("knee".to_string());
    }
    if l.interrupted {
        notes.push("interrupted".to_string());
    }
    if l.stats.short_outputs > 0 {
        notes.push(count(l.stats.short_outputs, "short output"));
    }
    if l.stats.cancelled_count > 0 {
        // Cancelled requests are in no column (not requests, not errors): the note says how many.
        notes.push(format!("{} cancelled", l.stats.cancelled_count));
    }
    if l.stats.abandoned_count > 0 {
        notes.push(format!("{} abandoned", l.stats.abandoned_count));
    }
    if l.stats.reconnect_count > 0 {
        notes.push(count(l.stats.reconnect_count, "reconnect"));
    }
    notes.join(", ")
}

/// The extra columns of embeddings and rankings (inputs and input tokens per second), tools
/// (the share called) and scored workloads: (heading, metric, decimals).
type Extra = (&'static str, SystemMetric, usize);

/// The table of every level of a run: latency, throughput, server queue, errors, SLOs, notes.
/// A run where a level saw reasoning adds TTFO avg and reasoning tokens (avg) after TTFT, as the
/// console's sweep table does; a level without reasoning shows dashes there.
pub(super) fn level_table(levels: &[LoadedLevel], knee_level: Option<&str>) -> Markup {
    let reasoning = levels
        .iter()
        .any(|lv| lv.summary.stats.get(Metric::ReasoningTokenCount).is_some());
    let mut head = vec![
        kind_title(levels),
        "TTFT avg (ms)".into(),
        "TTFT p50".into(),
        "TTFT p99".into(),
    ];
    if reasoning {
        head.extend(["TTFO avg (ms)".into(), "Reasoning tok avg".into()]);
    }
    for h in [
        "ITL avg (ms)",
        "ITL p99",
        "Latency p99 (ms)",
        "Output tok/s",
        "Req/s",
    ] {
        head.push(h.into());
    }
    // Embeddings and rankings: inputs and input tokens per second; tools: the share called.
    let has = |m: SystemMetric| levels.iter().any(|lv| sys(&lv.summary, m).is_some());
    let extra: Vec<Extra> = [
        ("Inputs/s", SystemMetric::InputThroughput, 2),
        ("Input tok/s", SystemMetric::InputTokenThroughput, 1),
        ("Tool calls", SystemMetric::ToolCallShare, 0),
        ("Tool args valid", SystemMetric::ToolArgsValidShare, 0),
        ("Accuracy", SystemMetric::Accuracy, 0),
        ("Answers changed", SystemMetric::AnswerChangedShare, 0),
    ]
    .into_iter()
    .filter(|(_, m, _)| has(*m))
    .collect();
    head.extend(extra.iter().map(|(h, _, _)| h.to_string()));
    head.extend(["Queue (ms)", "Queue share", "Errors", "SLO", "Notes"].map(String::from));
    html! {
        div.tablewrap {
            table.levels {
                thead { tr { @for h in &head { th { (h) } } } }
                tbody {
                    @for lv in levels {
                        tr {
                            @for c in row(&lv.summary, reasoning, &extra) {
                                td { (c) }
                            }
                            (slo_cell(lv))
                            td { (notes(&lv.summary, knee_level)) }
                        }
                    }
                }
            }
        }
    }
}

/// A distribution's statistic at a level.
fn d(l: &LevelSummary, m: Metric, s: Stat) -> Option<f64> {
    l.metric(MetricRef::Dist(m, s))
}

/// A run-wide figure at a level.
fn sys(l: &LevelSummary, m: SystemMetric) -> Option<f64> {
    l.metric(MetricRef::System(m))
}

/// A level's cells up to its errors (the SLO and notes cells follow).
fn row(l: &LevelSummary, reasoning: bool, extra: &[Extra]) -> Vec<String> {
    let errors = match sys(l, SystemMetric::ErrorRate) {
        Some(r) if l.stats.error_count > 0 => {
            format!("{} ({:.1}%)", l.stats.error_count, r * 100.0)
        }
        _ => l.stats.error_count.to_string(),
    };
    let mut row = vec![
        load_label(l),
        cell(d(l, Metric::TimeToFirstToken, Stat::Avg), 2),
        cell(d(l, Metric::TimeToFirstToken, Stat::P50), 2),
        cell(d(l, Metric::TimeToFirstToken, Stat::P99), 2),
    ];
    if reasoning {
        row.push(cell(d(l, Metric::TimeToFirstOutputToken, Stat::Avg), 2));
        row.push(cell(d(l, Metric::ReasoningTokenCount, Stat::Avg), 1));
    }
    row.extend([
        cell(d(l, Metric::InterTokenLatency, Stat::Avg), 2),
        cell(d(l, Metric::InterTokenLatency, Stat::P99), 2),
        cell(d(l, Metric::RequestLatency, Stat::P99), 2),
        cell(sys(l, SystemMetric::OutputTokenThroughput), 1),
        cell(sys(l, SystemMetric::RequestThroughput), 2),
    ]);
    row.extend(
        extra
            .iter()
            .map(|&(_, m, digits)| match MetricRef::System(m).kind() {
                // With their intervals: a share of a few dozen answers is rough.
                _ if m == SystemMetric::Accuracy => {
                    crate::report::console::accuracy_cell(l.stats.accuracy.as_ref())
                }
                _ if m == SystemMetric::AnswerChangedShare => {
                    crate::report::console::changed_cell(l.stats.accuracy.as_ref())
                }
                Kind::Fraction => {
                    sys(l, m).map_or_else(|| "–".into(), |v| format!("{:.0}%", v * 100.0))
                }
                _ => cell(sys(l, m), digits),
            }),
    );
    row.extend([
        cell(sys(l, SystemMetric::ServerQueueTime), 2),
        sys(l, SystemMetric::QueueShare)
            .map_or_else(|| "–".to_string(), |q| format!("{:.0}%", q * 100.0)),
        errors,
    ]);
    row
}
