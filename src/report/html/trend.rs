//! Several runs of one sweep over time (the seeds' `bench/{timestamp}` timeline): the trend of
//! each key metric across runs, the newest run against the one before, and the runs' table.

use crate::analysis::text;
use std::fmt::Write as _;

use super::charts::repetition_range;
use super::figure::{figure, kind_title, load_label};
use super::{slo_counts, utc};
use crate::analysis::knee;
use crate::artifact::read::Run;
use crate::metrics::Metric;
use crate::metrics::{MetricRef, MetricSource, Stat, SystemMetric};
use crate::report::svg::{self, Chart, Pt, Series, XScale, esc};

/// The trend metrics drawn across runs: (chart id, title, metric, y axis, unit scale).
#[rustfmt::skip]
const TREND: [(&str, &str, MetricRef, &str, f64); 7] = [
    ("trend-ttft-p99", "TTFT p99 by run", MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99), "ms", 1.0),
    ("trend-ttft-avg", "TTFT avg by run", MetricRef::Dist(Metric::TimeToFirstToken, Stat::Avg), "ms", 1.0),
    ("trend-throughput", "Output token throughput by run", MetricRef::System(SystemMetric::OutputTokenThroughput), "tokens/s", 1.0),
    ("trend-latency-p99", "Request latency p99 by run", MetricRef::Dist(Metric::RequestLatency, Stat::P99), "ms", 1.0),
    ("trend-itl-avg", "Inter-token latency avg by run", MetricRef::Dist(Metric::InterTokenLatency, Stat::Avg), "ms", 1.0),
    ("trend-queue-share", "Server queue share by run", MetricRef::System(SystemMetric::QueueShare), "% of server time", 100.0),
    ("trend-error-rate", "Error rate by run", MetricRef::System(SystemMetric::ErrorRate), "% of requests", 100.0),
];

/// Level names across runs, in load order.
fn level_names(runs: &[Run]) -> Vec<(f64, String)> {
    let mut names: Vec<(f64, String)> = Vec::new();
    for r in runs {
        for l in &r.levels {
            let n = l.summary.stimulus.name();
            if !names.iter().any(|(_, x)| *x == n) {
                names.push((l.summary.stimulus.value(), n));
            }
        }
    }
    names.sort_by(|a, b| a.0.total_cmp(&b.0));
    names
}

/// The trend section over several runs: a chart per key metric (one line per level), the newest
/// run against the one before, and a table of the runs.
pub(super) fn trend(out: &mut String, runs: &[Run]) {
    let _ = writeln!(
        out,
        "<section id=\"trend\"><h2>Trend across {}</h2>\n<p class=\"meta\">Oldest to newest; one line per load level. Hover a point for its value.</p>",
        text::count(runs.len() as u64, "run")
    );
    out.push_str("<div class=\"charts\">\n");
    trend_charts(out, runs);
    out.push_str("</div>\n");
    if let [.., prev, last] = runs {
        changes(out, prev, last);
    }
    runs_table(out, runs);
    out.push_str("</section>\n");
}

/// One chart per [`TREND`] metric that any run has.
fn trend_charts(out: &mut String, runs: &[Run]) {
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let names = level_names(runs);
    let kind = runs
        .last()
        .map_or_else(|| "load".to_string(), |r| kind_title(&r.levels));
    for (id, title, metric, unit, scale) in TREND {
        let series: Vec<Series> = names
            .iter()
            .map(|(value, name)| Series {
                name: svg::num(*value),
                points: runs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| {
                        let l = r
                            .levels
                            .iter()
                            .find(|l| l.summary.stimulus.name() == *name)?;
                        let v = l.summary.metric(metric)? * scale;
                        // A run of repetitions: its median, with their range as a band.
                        let range =
                            repetition_range(l, metric).map(|(lo, hi)| (lo * scale, hi * scale));
                        let spread = range.map_or(String::new(), |(lo, hi)| {
                            format!(
                                " ({}–{} across its repetitions)",
                                svg::num(lo),
                                svg::num(hi)
                            )
                        });
                        Some(Pt {
                            range,
                            ..Pt::new(
                                i as f64,
                                v,
                                format!("{}, {name}: {} {unit}{spread}", r.label, svg::num(v)),
                            )
                        })
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let chart = Chart {
            x_ticks: labels.clone(),
            legend_title: format!("{kind}:"),
            ..Chart::lines(id, title.into(), "run", unit, XScale::Index, series)
        };
        figure(out, &svg::line_chart(&chart), &metric.key());
    }
}

/// The runs, newest first: start, levels, knee, SLO verdict, errors.
fn runs_table(out: &mut String, runs: &[Run]) {
    out.push_str("<h3>Runs</h3>\n<div class=\"tablewrap\"><table class=\"runs\"><thead><tr><th>Run</th><th>Started</th><th>Levels</th><th>Knee</th><th>SLO</th><th>Errors</th></tr></thead><tbody>\n");
    for r in runs.iter().rev() {
        let k = knee::analyze(&r.summaries(), knee::DEFAULT_MIN_GAIN);
        let slo = match slo_counts(r) {
            (0, _) => "<td>–</td>".to_string(),
            (t, 0) => format!("<td class=\"pass\">pass ({t})</td>"),
            (t, f) => format!("<td class=\"fail\">fail {f}/{t}</td>"),
        };
        let loads: Vec<String> = r.levels.iter().map(|l| load_label(&l.summary)).collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{slo}<td>{}</td></tr>",
            esc(&r.label),
            if r.started_unix_ns() > 0 {
                utc(r.started_unix_ns())
            } else {
                "–".into()
            },
            esc(&loads.join(", ")),
            k.knee
                .as_ref()
                .map_or_else(|| "–".to_string(), |k| esc(&svg::num(k.value))),
            r.levels
                .iter()
                .map(|l| l.summary.stats.error_count)
                .sum::<u64>()
        );
    }
    out.push_str("</tbody></table></div>\n");
}

/// The newest run against the one before, with the seeds' rule: throughput down more than 5 %
/// or p99 up more than 10 % is worth investigating.
fn changes(out: &mut String, prev: &Run, last: &Run) {
    let cmp = crate::report::compare::compare(prev, last, &crate::report::compare::Rules::seeds());
    let _ = writeln!(
        out,
        "<h3>{} compared with {}</h3>",
        esc(&last.label),
        esc(&prev.label)
    );
    let regressed = cmp.regressions().count();
    let _ = writeln!(
        out,
        "<p class=\"meta\">Rule: throughput down more than 5% or p99 up more than 10% — investigate. {}</p>",
        if regressed == 0 {
            "Nothing crossed it.".to_string()
        } else {
            format!(
                "{} crossed it (marked below).",
                text::count(regressed as u64, "change")
            )
        }
    );
    out.push_str(&crate::report::compare::html_table(&cmp));
}
