//! Several runs of one sweep over time (the seeds' `bench/{timestamp}` timeline): the trend of
//! each key metric across runs, the newest run against the one before, and the runs' table.

use maud::{Markup, html};

use super::charts::repetition_range;
use super::figure::{figure, kind_title, load_label};
use super::{slo_counts, utc};
use crate::analysis::knee;
use crate::artifact::read::Run;
use crate::metrics::Metric;
use crate::metrics::{MetricRef, MetricSource, Stat, SystemMetric};
use crate::report::svg::{self, Chart, Pt, Series, XScale};

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
pub(super) fn trend(runs: &[Run]) -> Markup {
    let mut charts = Vec::new();
    trend_charts(&mut charts, runs);
    html! {
        section #trend {
            h2 { "Trend across " (crate::analysis::text::count(runs.len() as u64, "run")) }
            p.meta { "Oldest to newest; one line per load level. Hover a point for its value." }
            div.charts { @for f in &charts { (f) } }
            @if let [.., prev, last] = runs {
                (changes(prev, last))
            }
            (runs_table(runs))
        }
    }
}

/// One chart per [`TREND`] metric that any run has.
fn trend_charts(out: &mut Vec<Markup>, runs: &[Run]) {
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
        figure(out, svg::line_chart(&chart), &metric.key());
    }
}

/// The runs, newest first: start, levels, knee, SLO verdict, errors.
fn runs_table(runs: &[Run]) -> Markup {
    html! {
        h3 { "Runs" }
        div.tablewrap {
            table.runs {
                thead {
                    tr {
                        th { "Run" } th { "Started" } th { "Levels" } th { "Knee" } th { "SLO" }
                        th { "Errors" }
                    }
                }
                tbody {
                    @for r in runs.iter().rev() {
                        (run_row(r))
                    }
                }
            }
        }
    }
}

/// A run's row of the runs' table.
fn run_row(r: &Run) -> Markup {
    let k = knee::analyze(&r.summaries(), knee::DEFAULT_MIN_GAIN);
    let loads: Vec<String> = r.levels.iter().map(|l| load_label(&l.summary)).collect();
    let errors: u64 = r.levels.iter().map(|l| l.summary.stats.error_count).sum();
    html! {
        tr {
            td { (r.label) }
            td {
                @if r.started_unix_ns() > 0 { (utc(r.started_unix_ns())) } @else { "–" }
            }
            td { (loads.join(", ")) }
            td {
                @match &k.knee {
                    Some(k) => (svg::num(k.value)),
                    None => "–",
                }
            }
            @match slo_counts(r) {
                (0, _) => td { "–" },
                (t, 0) => td.pass { "pass (" (t) ")" },
                (t, f) => td.fail { "fail " (f) "/" (t) },
            }
            td { (errors) }
        }
    }
}

/// The newest run against the one before, with the seeds' rule: throughput down more than 5 %
/// or p99 up more than 10 % is worth investigating.
fn changes(prev: &Run, last: &Run) -> Markup {
    let cmp = crate::report::compare::compare(prev, last, &crate::report::compare::Rules::seeds());
    let regressed = cmp.regressions().count();
    html! {
        h3 { (last.label) " compared with " (prev.label) }
        p.meta {
            "Rule: throughput down more than 5% or p99 up more than 10% — investigate. "
            @if regressed == 0 {
                "Nothing crossed it."
            } @else {
                (crate::analysis::text::count(regressed as u64, "change")) " crossed it (marked below)."
            }
        }
        (crate::report::compare::html_table(&cmp))
    }
}
