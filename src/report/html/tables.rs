//! The table of a run's levels, one row per level.

use crate::analysis::text;
use std::fmt::Write as _;

use super::figure::{kind_title, load_label};
use crate::artifact::read::LoadedLevel;
use crate::metrics::Metric;
use crate::metrics::{Kind, MetricRef, MetricSource, Stat, SystemMetric};
use crate::report::svg::esc;
use crate::stats::LevelSummary;

/// `digits` decimals; an en dash for a missing value.
pub(super) fn cell(v: Option<f64>, digits: usize) -> String {
    text::fixed_or(v, digits, "–")
}

/// A level's SLO cell: none checked, all passed, or which failed (in the hover text).
pub(super) fn slo_cell(lv: &LoadedLevel) -> String {
    let failed = lv.slo.iter().filter(|s| !s.passed).count();
    if lv.slo.is_empty() {
        "<td>–</td>".to_string()
    } else if failed == 0 {
        format!("<td class=\"pass\">pass ({})</td>", lv.slo.len())
    } else {
        let which: Vec<String> = lv
            .slo
            .iter()
            .filter(|s| !s.passed)
            .map(|s| format!("{} ({})", s.objective, s.shown_actual()))
            .collect();
        format!(
            "<td class=\"fail\" title=\"{}\">fail {failed}/{}</td>",
            esc(&which.join("; ")),
            lv.slo.len()
        )
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
        notes.push(text::count(l.stats.short_outputs, "short output"));
    }
    if l.stats.cancelled_count > 0 {
        // Cancelled requests are in no column (not requests, not errors): the note says how many.
        notes.push(format!("{} cancelled", l.stats.cancelled_count));
    }
    if l.stats.abandoned_count > 0 {
        notes.push(format!("{} abandoned", l.stats.abandoned_count));
    }
    if l.stats.reconnect_count > 0 {
        notes.push(text::count(l.stats.reconnect_count, "reconnect"));
    }
    notes.join(", ")
}

/// The table of every level of a run: latency, throughput, server queue, errors, SLOs, notes.
/// A run where a level saw reasoning adds TTFO avg and reasoning tokens (avg) after TTFT, as the
/// console's sweep table does; a level without reasoning shows dashes there.
pub(super) fn level_table(out: &mut String, levels: &[LoadedLevel], knee_level: Option<&str>) {
    let kind = kind_title(levels);
    let d = |l: &LevelSummary, m: Metric, s: Stat| l.metric(MetricRef::Dist(m, s));
    let sys = |l: &LevelSummary, m: SystemMetric| l.metric(MetricRef::System(m));
    let reasoning = levels
        .iter()
        .any(|lv| lv.summary.stats.get(Metric::ReasoningTokenCount).is_some());
    let mut head = vec![
        esc(&kind),
        "TTFT avg (ms)".into(),
        "TTFT p50".into(),
        "TTFT p99".into(),
    ];
    if reasoning {
        head.extend(["TTFO avg (ms)".into(), "Reasoning tok avg".into()]);
    }
    head.extend(
        [
            "ITL avg (ms)",
            "ITL p99",
            "Latency p99 (ms)",
            "Output tok/s",
            "Req/s",
        ]
        .map(String::from),
    );
    // Embeddings and rankings: inputs and input tokens per second; tools: the share called.
    let has = |m: SystemMetric| levels.iter().any(|lv| sys(&lv.summary, m).is_some());
    let extra: Vec<(&str, SystemMetric, usize)> = [
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
    let _ = writeln!(
        out,
        "<div class=\"tablewrap\"><table class=\"levels\"><thead><tr><th>{}</th></tr></thead><tbody>",
        head.join("</th><th>")
    );
    for lv in levels {
        let l = &lv.summary;
        let errors = match sys(l, SystemMetric::ErrorRate) {
            Some(r) if l.stats.error_count > 0 => {
                format!("{} ({:.1}%)", l.stats.error_count, r * 100.0)
            }
            _ => l.stats.error_count.to_string(),
        };
        let mut row = vec![
            esc(&load_label(l)),
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
            esc(&errors),
        ]);
        let _ = writeln!(
            out,
            "<tr><td>{}</td>{}<td>{}</td></tr>",
            row.join("</td><td>"),
            slo_cell(lv),
            esc(&notes(l, knee_level))
        );
    }
    out.push_str("</tbody></table></div>\n");
}
