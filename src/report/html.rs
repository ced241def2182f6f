//! `report.html`: one self-contained page per sweep or timeline of runs.
//!
//! Contents, per run: the command line (secrets were redacted when it was recorded), the
//! ttftbench version, validity flags, the decisions (knee recommendation, queue-versus-compute
//! verdict, SLO checks), five charts — TTFT avg/p50/p99 versus load, throughput versus p99
//! latency with the knee marked, ITL versus load, the server's queue versus compute share, error
//! rate — and a table of every level. Over several runs (a `bench/` folder of timestamped runs)
//! the page starts with the trend of each key metric across runs and the change of the newest run
//! against the one before it, so the seeds' timeline needs no script.
//!
//! The page needs nothing else: inline CSS (with print rules: one chart per row at a readable
//! size, no split figures or tables, each earlier run on its own page), inline SVG from [`super::svg`], no script, no font or image
//! fetched. [`render`] is a pure function of the runs; the caller writes the file.

use std::fmt::Write as _;

use super::svg::{self, Chart, Mark, Pt, Series, XScale, esc};
use crate::analysis::knee;
use crate::artifact::read::{LoadedLevel, Run};
use crate::metrics::Metric;
use crate::metrics::{MetricRef, MetricSource, Stat, SystemMetric};
use crate::stats::LevelSummary;

/// File name of the report.
pub const REPORT_FILE: &str = "report.html";

/// What the page says about how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Knee fraction (see [`knee`]).
    pub knee_min_gain: f64,
    /// Version of the ttftbench writing the page.
    pub version: String,
    /// When the page was written (free text, e.g. `2026-01-02 12:00:00 UTC`).
    pub generated_at: String,
}

const CSS: &str = r#":root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:#fff;margin:0 auto;max-width:1320px;padding:20px 28px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
p.meta{color:var(--muted);margin:2px 0}
pre.cmd{background:#f6f8fa;border:1px solid var(--line);border-radius:4px;padding:8px 10px;white-space:pre-wrap;word-break:break-all;font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;margin:6px 0}
.badges span{display:inline-block;border-radius:10px;padding:1px 9px;margin:2px 6px 2px 0;font-size:12px;border:1px solid}
.ok{color:var(--ok);border-color:var(--ok)}
.bad{color:var(--bad);border-color:var(--bad)}
.warn{color:var(--warn);border-color:var(--warn)}
.decision{border-left:4px solid #0b6bcb;background:#f3f8fe;padding:6px 12px;margin:10px 0}
.decision p{margin:4px 0}
.decision p.fail{color:var(--bad);font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:14px 20px;margin:10px 0}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px 8px 4px;break-inside:avoid}
figcaption{color:var(--muted);font-size:12px;margin:2px 4px}
svg.chart{width:100%;height:auto;display:block;font:11px system-ui,"DejaVu Sans",sans-serif}
svg text{fill:#24292f}
svg .ct{font-size:14px;font-weight:600}
svg .at{font-size:11.5px;fill:var(--muted)}
svg .lt{fill:var(--muted)}
svg .grid{stroke:#e6e9ed;stroke-width:1}
svg .frame,svg .tick{stroke:#8c959f;stroke-width:1}
svg .line{fill:none;stroke-width:2}
svg .pl{font-size:10px;fill:var(--muted)}
svg .mark circle{fill:none;stroke:#cf222e;stroke-width:2.2}
svg .mark text{fill:#cf222e;font-weight:600}
svg .ref line{stroke:#cf222e;stroke-dasharray:5 4;stroke-width:1.3}
svg .ref text{fill:#cf222e;font-weight:600}
svg .ref text,svg .mark text,svg .pl{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg .empty{fill:var(--muted);font-size:13px}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:8px 0;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
thead th{background:#f6f8fa}
table.compare td:nth-child(2),table.compare th:nth-child(2){text-align:left}
td.fail{color:var(--bad);font-weight:600}
td.pass{color:var(--ok)}
details{margin:10px 0}
summary{cursor:pointer;font-weight:600}
footer{color:var(--muted);font-size:12px;margin-top:30px;border-top:1px solid var(--line);padding-top:6px}
@media print{body{max-width:none;padding:0;font-size:11px}.charts{grid-template-columns:1fr;gap:8px}figure{width:15cm;margin:0 auto}figcaption{font-size:10px}figure,table,.decision,pre.cmd{break-inside:avoid}h2,h3{break-after:avoid}section.run+section.run,details{break-before:page}.tablewrap{overflow:visible}table{font-size:9px}th,td{padding:2px 3px;white-space:normal}}
"#;

/// The wall clock now, Unix nanoseconds (0 if the clock is before 1970).
pub fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `2026-01-02 12:00:05 UTC` from Unix nanoseconds (proleptic Gregorian calendar).
pub fn utc(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn load_label(l: &LevelSummary) -> String {
    svg::num(l.stimulus.value())
}

fn kind_title(levels: &[LoadedLevel]) -> String {
    match levels.first().map(|l| l.summary.stimulus.kind()) {
        Some("concurrency") => "concurrency".into(),
        Some("request_rate") => "request rate (req/s)".into(),
        Some(other) => other.replace('_', " "),
        None => "load".into(),
    }
}

fn x_scale(levels: &[LoadedLevel]) -> XScale {
    let mut vals: Vec<f64> = levels.iter().map(|l| l.summary.stimulus.value()).collect();
    vals.sort_by(f64::total_cmp);
    vals.dedup();
    let (Some(&min), Some(&max)) = (vals.first(), vals.last()) else {
        return XScale::Linear;
    };
    // Ladders that grow geometrically (1, 2, 4, ... 32) crowd the left of a linear axis; evenly
    // stepped ones (1, 3, 5, ... 31) crowd the right of a logarithmic one.
    let geometric = vals.windows(2).all(|w| w[1] >= w[0] * 1.5);
    if min > 0.0 && max / min >= 8.0 && geometric {
        XScale::Log2
    } else {
        XScale::Linear
    }
}

fn streamed(levels: &[LoadedLevel]) -> bool {
    levels.iter().any(|l| {
        l.summary
            .metric(MetricRef::Dist(Metric::TimeToFirstToken, Stat::Avg))
            .is_some()
    })
}

fn stat_series(levels: &[LoadedLevel], name: &str, m: MetricRef, unit: &str) -> Series {
    Series {
        name: name.to_string(),
        points: levels
            .iter()
            .filter_map(|l| {
                let v = l.summary.metric(m)?;
                let x = l.summary.stimulus.value();
                Some(Pt::new(
                    x,
                    v,
                    format!(
                        "{} {}: {name} {} {unit}",
                        l.summary.stimulus.kind().replace('_', " "),
                        load_label(&l.summary),
                        svg::num(v)
                    ),
                ))
            })
            .collect(),
    }
}

fn figure(out: &mut String, svg_text: &str, caption: &str) {
    let _ = writeln!(
        out,
        "<figure>{svg_text}<figcaption>{}</figcaption></figure>",
        esc(caption)
    );
}

fn run_charts(out: &mut String, levels: &[LoadedLevel], k: &knee::Analysis) {
    let kind = kind_title(levels);
    let scale = x_scale(levels);
    let streaming = streamed(levels);
    out.push_str("<div class=\"charts\">\n");
    // 1. TTFT (or request latency) statistics versus load.
    let (metric, title, what) = if streaming {
        (Metric::TimeToFirstToken, "TTFT", "time to first token")
    } else {
        (Metric::RequestLatency, "Request latency", "request latency")
    };
    let chart = Chart {
        id: "ttft".into(),
        title: format!("{title} vs {kind}"),
        x_label: kind.clone(),
        y_label: format!("{what} (ms)"),
        x_scale: scale,
        x_ticks: vec![],
        series: [("avg", Stat::Avg), ("p50", Stat::P50), ("p99", Stat::P99)]
            .iter()
            .map(|(n, s)| {
                stat_series(
                    levels,
                    &format!("{title} {n}"),
                    MetricRef::Dist(metric, *s),
                    "ms",
                )
            })
            // A statistic the source lacks (perf_analyzer's CSV has no average) is left out.
            .filter(|s| s.points.iter().any(|p| p.y.is_finite()))
            .collect(),
        lines: true,
        marks: vec![],
        hlines: vec![],
        legend_title: String::new(),
    };
    figure(
        out,
        &svg::line_chart(&chart),
        if streaming {
            "A p99 pulling away from p50 is the tail users feel first."
        } else {
            "Not streamed: there is no TTFT without --streaming, so request latency is shown."
        },
    );
    // 2. Throughput versus p99 latency, the knee marked.
    let lat = if streaming {
        MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99)
    } else {
        MetricRef::Dist(Metric::RequestLatency, Stat::P99)
    };
    let tput = if k.throughput_metric == SystemMetric::OutputTokenThroughput.key() {
        SystemMetric::OutputTokenThroughput
    } else {
        SystemMetric::RequestThroughput
    };
    let tput_unit = match tput {
        SystemMetric::OutputTokenThroughput => "output tokens/s",
        _ => "requests/s",
    };
    let points: Vec<Pt> = levels
        .iter()
        .filter(|l| l.summary.stats.request_count > 0)
        .filter_map(|l| {
            let x = l.summary.metric(lat)?;
            let y = l.summary.metric(MetricRef::System(tput))?;
            Some(Pt {
                x,
                y,
                tip: format!(
                    "{} {}: {} {tput_unit} at p99 {} ms",
                    kind,
                    load_label(&l.summary),
                    svg::num(y),
                    svg::num(x)
                ),
                label: load_label(&l.summary),
            })
        })
        .collect();
    let marks = k
        .knee
        .as_ref()
        .map(|kn| Mark {
            x: kn.p99_ms,
            y: kn.throughput,
            text: format!("knee: {kind} {}", svg::num(kn.value)),
        })
        .into_iter()
        .collect();
    let chart = Chart {
        id: "knee".into(),
        title: format!(
            "Throughput vs {}",
            if streaming { "TTFT p99" } else { "latency p99" }
        ),
        x_label: format!(
            "{} p99 (ms)",
            if streaming {
                "time to first token"
            } else {
                "request latency"
            }
        ),
        y_label: tput_unit.into(),
        x_scale: XScale::Linear,
        x_ticks: vec![],
        series: vec![Series {
            name: format!("levels (labelled by {kind})"),
            points,
        }],
        lines: true,
        marks,
        hlines: vec![],
        legend_title: String::new(),
    };
    figure(out, &svg::line_chart(&chart), &k.recommendation);
    // 3. ITL versus load.
    let chart = Chart {
        id: "itl".into(),
        title: format!("Inter-token latency vs {kind}"),
        x_label: kind.clone(),
        y_label: "inter-token latency (ms)".into(),
        x_scale: scale,
        x_ticks: vec![],
        series: if streaming {
            [("avg", Stat::Avg), ("p99", Stat::P99)]
                .iter()
                .map(|(n, s)| {
                    stat_series(
                        levels,
                        &format!("ITL {n}"),
                        MetricRef::Dist(Metric::InterTokenLatency, *s),
                        "ms",
                    )
                })
                .collect()
        } else {
            vec![]
        },
        lines: true,
        marks: vec![],
        hlines: vec![],
        legend_title: String::new(),
    };
    figure(
        out,
        &svg::line_chart(&chart),
        if streaming {
            "Decode speed per user: it grows with the batch the server decodes together."
        } else {
            "No inter-token latency without --streaming."
        },
    );
    // 4. Server queue versus compute share.
    let cats: Vec<String> = levels.iter().map(|l| load_label(&l.summary)).collect();
    let queue: Vec<Option<f64>> = levels
        .iter()
        .map(|l| {
            l.summary
                .metric(MetricRef::System(SystemMetric::QueueShare))
        })
        .collect();
    let compute: Vec<Option<f64>> = queue.iter().map(|q| q.map(|q| 1.0 - q)).collect();
    figure(
        out,
        &svg::stacked_share_chart(
            "queue",
            &format!("Server time: queue vs compute, by {kind}"),
            &kind,
            &cats,
            &[("queue".into(), queue), ("compute".into(), compute)],
            Some((
                crate::analysis::verdict::QUEUE_SHARE_LIMIT,
                "50%: tune scheduling above".into(),
            )),
        ),
        "From Triton's own counters. A queue share above half the server time means requests wait more than they compute.",
    );
    // 5. Error rate.
    let chart = Chart {
        id: "errors".into(),
        title: format!("Error rate vs {kind}"),
        x_label: kind.clone(),
        y_label: "failed requests (%)".into(),
        x_scale: scale,
        x_ticks: vec![],
        series: vec![Series {
            name: "error rate".into(),
            points: levels
                .iter()
                .filter_map(|l| {
                    let r = l
                        .summary
                        .metric(MetricRef::System(SystemMetric::ErrorRate))?;
                    Some(Pt::new(
                        l.summary.stimulus.value(),
                        r * 100.0,
                        format!(
                            "{kind} {}: {} of {} requests failed ({:.1}%)",
                            load_label(&l.summary),
                            l.summary.stats.error_count,
                            l.summary.stats.error_count + l.summary.stats.request_count,
                            r * 100.0
                        ),
                    ))
                })
                .collect(),
        }],
        lines: true,
        marks: vec![],
        hlines: vec![],
        legend_title: String::new(),
    };
    figure(
        out,
        &svg::line_chart(&chart),
        "Failures are counted by kind in each level's profile_export_genai_perf.json.",
    );
    out.push_str("</div>\n");
}

/// `digits` decimals; an en dash for a missing value.
fn cell(v: Option<f64>, digits: usize) -> String {
    crate::analysis::text::fixed_or(v, digits, "–")
}

fn level_table(out: &mut String, levels: &[LoadedLevel], knee_level: Option<&str>) {
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
        let failed = lv.slo.iter().filter(|s| !s.passed).count();
        let slo = if lv.slo.is_empty() {
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
        };
        let mut notes = Vec::new();
        if knee_level == Some(l.stimulus.name().as_str()) {
            notes.push("knee".to_string());
        }
        if l.interrupted {
            notes.push("interrupted".to_string());
        }
        if l.stats.short_outputs > 0 {
            notes.push(format!("{} short outputs", l.stats.short_outputs));
        }
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
            esc(&notes.join(", "))
        );
    }
    out.push_str("</tbody></table></div>\n");
}

fn badges(out: &mut String, run: &Run) {
    out.push_str("<p class=\"badges\">");
    let interrupted: Vec<String> = run
        .levels
        .iter()
        .filter(|l| l.summary.interrupted)
        .map(|l| l.summary.stimulus.name())
        .collect();
    let errors: u64 = run.levels.iter().map(|l| l.summary.stats.error_count).sum();
    let short: u64 = run
        .levels
        .iter()
        .map(|l| l.summary.stats.short_outputs)
        .sum();
    let no_server = run.levels.iter().all(|l| l.summary.server.is_none());
    if interrupted.is_empty() && errors == 0 {
        out.push_str("<span class=\"ok\">valid: complete, no errors</span>");
    }
    if !interrupted.is_empty() {
        let _ = write!(
            out,
            "<span class=\"bad\">interrupted: {}</span>",
            esc(&interrupted.join(", "))
        );
    }
    if errors > 0 {
        let _ = write!(out, "<span class=\"warn\">{errors} failed requests</span>");
    }
    if short > 0 {
        let _ = write!(
            out,
            "<span class=\"warn\">{short} responses shorter than asked</span>"
        );
    }
    if no_server {
        out.push_str("<span class=\"warn\">no server-side queue/compute data</span>");
    }
    let slo_total: usize = run.levels.iter().map(|l| l.slo.len()).sum();
    let slo_failed: usize = run
        .levels
        .iter()
        .map(|l| l.slo.iter().filter(|s| !s.passed).count())
        .sum();
    if slo_total > 0 {
        if slo_failed == 0 {
            let _ = write!(
                out,
                "<span class=\"ok\">SLO: {slo_total} checks passed</span>"
            );
        } else {
            let _ = write!(
                out,
                "<span class=\"bad\">SLO: {slo_failed} of {slo_total} checks failed</span>"
            );
        }
    }
    out.push_str("</p>\n");
}

fn run_body(out: &mut String, run: &Run, opts: &Options) {
    let summaries = run.summaries();
    let k = knee::analyze(&summaries, opts.knee_min_gain);
    let model = run.levels.iter().find_map(|l| l.model.clone());
    let api = run.levels.iter().find_map(|l| l.api.clone());
    let version = run.levels.iter().find_map(|l| l.version.clone());
    let mut meta = vec![format!("{} levels", run.levels.len())];
    if let Some(m) = model {
        meta.push(format!("model {m}"));
    }
    if let Some(a) = api {
        meta.push(format!("endpoint type {a}"));
    }
    if run.started_unix_ns() > 0 {
        meta.push(format!("started {}", utc(run.started_unix_ns())));
    }
    meta.push(format!(
        "recorded by ttftbench {}",
        version.as_deref().unwrap_or("(version not recorded)")
    ));
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&meta.join(" · ")));
    let _ = writeln!(
        out,
        "<p class=\"meta\">directory: <code>{}</code></p>",
        esc(&run.dir.display().to_string())
    );
    if let Some(cmd) = run.command_line() {
        let _ = writeln!(out, "<pre class=\"cmd\">{}</pre>", esc(cmd));
    }
    badges(out, run);
    out.push_str("<div class=\"decision\">\n");
    let _ = writeln!(out, "<p><strong>{}</strong></p>", esc(&k.recommendation));
    if summaries.len() > 1 {
        for line in crate::analysis::verdict::verdict(&summaries).lines {
            let _ = writeln!(out, "<p>{}</p>", esc(&line));
        }
    }
    for l in &run.levels {
        for s in l.slo.iter().filter(|s| !s.passed) {
            let _ = writeln!(
                out,
                "<p class=\"fail\">SLO failed at {}: {} — {}</p>",
                esc(&l.summary.stimulus.name()),
                esc(&s.objective),
                esc(&s.shown_actual())
            );
        }
    }
    out.push_str("</div>\n");
    run_charts(out, &run.levels, &k);
    level_table(out, &run.levels, k.knee.as_ref().map(|k| k.level.as_str()));
}

/// The trend metrics drawn across runs: (chart id, title, metric, y axis, unit scale).
const TREND: [(&str, &str, MetricRef, &str, f64); 7] = [
    (
        "trend-ttft-p99",
        "TTFT p99 by run",
        MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99),
        "ms",
        1.0,
    ),
    (
        "trend-ttft-avg",
        "TTFT avg by run",
        MetricRef::Dist(Metric::TimeToFirstToken, Stat::Avg),
        "ms",
        1.0,
    ),
    (
        "trend-throughput",
        "Output token throughput by run",
        MetricRef::System(SystemMetric::OutputTokenThroughput),
        "tokens/s",
        1.0,
    ),
    (
        "trend-latency-p99",
        "Request latency p99 by run",
        MetricRef::Dist(Metric::RequestLatency, Stat::P99),
        "ms",
        1.0,
    ),
    (
        "trend-itl-avg",
        "Inter-token latency avg by run",
        MetricRef::Dist(Metric::InterTokenLatency, Stat::Avg),
        "ms",
        1.0,
    ),
    (
        "trend-queue-share",
        "Server queue share by run",
        MetricRef::System(SystemMetric::QueueShare),
        "% of server time",
        100.0,
    ),
    (
        "trend-error-rate",
        "Error rate by run",
        MetricRef::System(SystemMetric::ErrorRate),
        "% of requests",
        100.0,
    ),
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

fn trend(out: &mut String, runs: &[Run]) {
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let names = level_names(runs);
    let kind = runs
        .last()
        .map_or_else(|| "load".to_string(), |r| kind_title(&r.levels));
    let _ = writeln!(
        out,
        "<section id=\"trend\"><h2>Trend across {} runs</h2>\n<p class=\"meta\">Oldest to newest; one line per load level. Hover a point for its value.</p>",
        runs.len()
    );
    out.push_str("<div class=\"charts\">\n");
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
                        Some(Pt::new(
                            i as f64,
                            v,
                            format!("{}, {name}: {} {unit}", r.label, svg::num(v)),
                        ))
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let chart = Chart {
            id: id.into(),
            title: title.into(),
            x_label: "run".into(),
            y_label: unit.into(),
            x_scale: XScale::Index,
            x_ticks: labels.clone(),
            series,
            lines: true,
            marks: vec![],
            hlines: vec![],
            legend_title: format!("{kind}:"),
        };
        figure(out, &svg::line_chart(&chart), &metric.key());
    }
    out.push_str("</div>\n");
    if let [.., prev, last] = runs {
        changes(out, prev, last);
    }
    out.push_str("<h3>Runs</h3>\n<div class=\"tablewrap\"><table class=\"runs\"><thead><tr><th>Run</th><th>Started</th><th>Levels</th><th>Knee</th><th>SLO</th><th>Errors</th></tr></thead><tbody>\n");
    for r in runs.iter().rev() {
        let k = knee::analyze(&r.summaries(), knee::DEFAULT_MIN_GAIN);
        let total: usize = r.levels.iter().map(|l| l.slo.len()).sum();
        let failed: usize = r
            .levels
            .iter()
            .map(|l| l.slo.iter().filter(|s| !s.passed).count())
            .sum();
        let slo = match (total, failed) {
            (0, _) => "<td>–</td>".to_string(),
            (t, 0) => format!("<td class=\"pass\">pass ({t})</td>"),
            (t, f) => format!("<td class=\"fail\">fail {f}/{t}</td>"),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{slo}<td>{}</td></tr>",
            esc(&r.label),
            if r.started_unix_ns() > 0 {
                utc(r.started_unix_ns())
            } else {
                "–".into()
            },
            esc(&r
                .levels
                .iter()
                .map(|l| load_label(&l.summary))
                .collect::<Vec<_>>()
                .join(", ")),
            k.knee
                .as_ref()
                .map_or_else(|| "–".to_string(), |k| esc(&svg::num(k.value))),
            r.levels
                .iter()
                .map(|l| l.summary.stats.error_count)
                .sum::<u64>()
        );
    }
    out.push_str("</tbody></table></div>\n</section>\n");
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
            format!("{regressed} changes crossed it (marked below).")
        }
    );
    out.push_str(&crate::report::compare::html_table(&cmp));
}

/// The whole page for `runs` (oldest first).
pub fn render(runs: &[Run], opts: &Options) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let newest = runs.last();
    let title = match (runs.len(), newest) {
        (1, Some(r)) => format!("ttftbench report: {}", r.label),
        (n, Some(r)) => format!("ttftbench report: {n} runs, newest {}", r.label),
        _ => "ttftbench report".to_string(),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<meta name=\"generator\" content=\"ttftbench {}\"/>\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<header><h1>{}</h1><p class=\"meta\">Generated {} by ttftbench {}.</p></header>\n<main>\n",
        esc(&opts.version),
        esc(&title),
        esc(&title),
        esc(&opts.generated_at),
        esc(&opts.version)
    );
    if runs.len() > 1 {
        trend(&mut out, runs);
    }
    if let Some(r) = newest {
        let _ = writeln!(
            out,
            "<section class=\"run\" id=\"run-{}\"><h2>{}{}</h2>",
            esc(&r.label),
            if runs.len() > 1 {
                "Newest run: "
            } else {
                "Run "
            },
            esc(&r.label)
        );
        run_body(&mut out, r, opts);
        out.push_str("</section>\n");
    }
    if runs.len() > 1 {
        let _ = writeln!(out, "<h2>Earlier runs</h2>");
        for r in runs[..runs.len() - 1].iter().rev() {
            let _ = writeln!(
                out,
                "<details class=\"run\" id=\"run-{}\"><summary>Run {}</summary>",
                esc(&r.label),
                esc(&r.label)
            );
            run_body(&mut out, r, opts);
            out.push_str("</details>\n");
        }
    }
    out.push_str("</main>\n<footer>Self-contained: inline SVG charts, no script, nothing loaded from the network. Hover a point for its value. Knee: the first level beyond which throughput grows less than the set fraction while p99 latency rises by more than it.</footer>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::artifact::read::{LoadedLevel, RecordedSlo, run_from};
    use crate::load::Stimulus;
    use crate::metrics::Stats;
    use crate::stats::LevelStats;

    fn level(c: u32, ttft_p99: f64, tput: f64, slo_passed: Option<bool>) -> LoadedLevel {
        let st = |p99: f64| Stats {
            count: 10,
            avg: p99 / 2.0,
            p50: p99 / 2.0,
            p99,
            ..Stats::default()
        };
        LoadedLevel {
            dir: std::path::PathBuf::from(format!("r/c{c}")),
            summary: LevelSummary {
                stimulus: Stimulus::Concurrency(c),
                stats: LevelStats {
                    metrics: vec![
                        (Metric::TimeToFirstToken, st(ttft_p99)),
                        (Metric::InterTokenLatency, st(6.0)),
                        (Metric::RequestLatency, st(500.0)),
                    ],
                    request_count: 10,
                    error_count: 0,
                    errors: vec![],
                    warmup_count: 0,
                    duration_s: 1.0,
                    output_token_throughput: tput,
                    total_token_throughput: tput,
                    request_throughput: tput / 100.0,
                    request_goodput: None,
                    osl_mismatch: 0,
                    short_outputs: 0,
                },
                server: None,
                streaming: true,
                interrupted: false,
                started_unix_ns: 1_767_355_205_000_000_000,
                validity: Default::default(),
            },
            command_line: Some("ttftbench profile -m gpt2 --api-key <redacted>".into()),
            version: Some("0.0.9".into()),
            slo: slo_passed
                .map(|p| RecordedSlo {
                    objective: "time_to_first_token.p99<=500ms".into(),
                    actual: Some(ttft_p99),
                    unit: "ms".into(),
                    passed: p,
                })
                .into_iter()
                .collect(),
            model: Some("gpt2".into()),
            api: Some("kserve".into()),
        }
    }

    fn opts() -> Options {
        Options {
            knee_min_gain: 0.1,
            version: "1.2.3".into(),
            generated_at: "2026-01-02 12:00:05 UTC".into(),
        }
    }

    #[test]
    fn one_run_page_exact_parts() {
        let run = run_from(
            std::path::Path::new("r"),
            vec![
                level(8, 180.0, 1000.0, Some(true)),
                level(1, 30.0, 200.0, Some(true)),
                level(32, 2600.0, 1010.0, Some(false)),
            ],
        );
        let page = render(std::slice::from_ref(&run), &opts());
        assert_eq!(page, render(&[run], &opts()), "deterministic");
        assert!(page.starts_with(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
        ));
        assert!(page.contains("<header><h1>ttftbench report: r</h1><p class=\"meta\">Generated 2026-01-02 12:00:05 UTC by ttftbench 1.2.3.</p></header>"));
        assert!(page.contains("<p class=\"meta\">3 levels · model gpt2 · endpoint type kserve · started 2026-01-02 12:00:05 UTC · recorded by ttftbench 0.0.9</p>"));
        assert!(page.contains(
            "<pre class=\"cmd\">ttftbench profile -m gpt2 --api-key &lt;redacted&gt;</pre>"
        ));
        assert!(page.contains("<span class=\"bad\">SLO: 1 of 3 checks failed</span>"));
        assert!(page.contains("<p class=\"fail\">SLO failed at concurrency32: time_to_first_token.p99&lt;=500ms — 2600.00 ms</p>"));
        assert!(page.contains(
            "<tr><td>8</td><td>90.00</td><td>90.00</td><td>180.00</td><td>3.00</td><td>6.00</td><td>500.00</td><td>1000.0</td><td>10.00</td><td>–</td><td>–</td><td>0</td><td class=\"pass\">pass (1)</td><td>knee</td></tr>"
        ), "{page}");
        assert!(page.contains("<g class=\"mark\">"));
        assert!(!page.contains("Trend across"));
        assert!(page.ends_with("</body>\n</html>\n"));
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_767_355_205_000_000_000), "2026-01-02 12:00:05 UTC");
    }
}
