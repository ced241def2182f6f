//! The table of a run's levels, one row per level.

use std::fmt::Write as _;

use super::charts::{kind_title, load_label};
use crate::artifact::read::LoadedLevel;
use crate::metrics::Metric;
use crate::metrics::{MetricRef, MetricSource, Stat, SystemMetric};
use crate::report::svg::esc;
use crate::stats::LevelSummary;

/// `digits` decimals; an en dash for a missing value.
fn cell(v: Option<f64>, digits: usize) -> String {
    crate::analysis::text::fixed_or(v, digits, "–")
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

/// A level's notes: the knee, an interruption, short outputs.
fn notes(l: &LevelSummary, knee_level: Option<&str>) -> String {
    let mut notes = Vec::new();
    if knee_level == Some(l.stimulus.name().as_str()) {
        notes.push("knee".to_string());
    }
    if l.interrupted {
        notes.push("interrupted".to_string());
    }
    if l.stats.short_outputs > 0 {
        notes.push(crate::analysis::text::count(
            l.stats.short_outputs,
            "short output",
        ));
    }
    notes.join(", ")
}

/// The table of every level of a run: latency, throughput, server queue, errors, SLOs, notes.
pub(super) fn level_table(out: &mut String, levels: &[LoadedLevel], knee_level: Option<&str>) {
    let kind = kind_title(levels);
    let d = |l: &LevelSummary, m: Metric, s: Stat| l.metric(MetricRef::Dist(m, s));
    let sys = |l: &LevelSummary, m: SystemMetric| l.metric(MetricRef::System(m));
    let _ = writeln!(
        out,
        "<div class=\"tablewrap\"><table class=\"levels\"><thead><tr><th>{}</th><th>TTFT avg (ms)</th><th>TTFT p50</th><th>TTFT p99</th><th>ITL avg (ms)</th><th>ITL p99</th><th>Latency p99 (ms)</th><th>Output tok/s</th><th>Req/s</th><th>Queue (ms)</th><th>Queue share</th><th>Errors</th><th>SLO</th><th>Notes</th></tr></thead><tbody>",
        esc(&kind)
    );
    for lv in levels {
        let l = &lv.summary;
        let slo = slo_cell(lv);
        let errors = match sys(l, SystemMetric::ErrorRate) {
            Some(r) if l.stats.error_count > 0 => {
                format!("{} ({:.1}%)", l.stats.error_count, r * 100.0)
            }
            _ => l.stats.error_count.to_string(),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{slo}<td>{}</td></tr>",
            esc(&load_label(l)),
            cell(d(l, Metric::TimeToFirstToken, Stat::Avg), 2),
            cell(d(l, Metric::TimeToFirstToken, Stat::P50), 2),
            cell(d(l, Metric::TimeToFirstToken, Stat::P99), 2),
            cell(d(l, Metric::InterTokenLatency, Stat::Avg), 2),
            cell(d(l, Metric::InterTokenLatency, Stat::P99), 2),
            cell(d(l, Metric::RequestLatency, Stat::P99), 2),
            cell(sys(l, SystemMetric::OutputTokenThroughput), 1),
            cell(sys(l, SystemMetric::RequestThroughput), 2),
            cell(sys(l, SystemMetric::ServerQueueTime), 2),
            sys(l, SystemMetric::QueueShare)
                .map_or_else(|| "–".to_string(), |q| format!("{:.0}%", q * 100.0)),
            esc(&errors),
            esc(&notes(l, knee_level))
        );
    }
    out.push_str("</tbody></table></div>\n");
}
