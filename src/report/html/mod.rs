//! `report.html`: one self-contained page per sweep or timeline of runs.
//!
//! Contents, per run: the command line (secrets were redacted when it was recorded), the
//! ttftbench version, validity flags, the decisions (knee recommendation, queue-versus-compute
//! verdict, SLO checks, each level's drift over its timeline; a search's answer, cost and
//! probes), six charts — TTFT avg/p50/p99 versus load, throughput versus p99 latency with the
//! knee marked, ITL versus load, the server's queue versus compute share, error rate, and the
//! throughput/interactivity trade-off with the SLO-feasible levels and the Pareto frontier
//! marked — and a table of every level; where the server's metrics page was read, the engine's
//! KV-cache and the GPUs' charts and a table of the engine's view. Over several runs (a `bench/`
//! folder of timestamped runs) the page starts with the trend of each key metric across runs
//! and the change of the newest run against the one before it, so the seeds' timeline needs no
//! script.
//!
//! The page needs nothing else: inline CSS ([`style`], with print rules), inline SVG from
//! [`super::svg`], no script, no font or image fetched. [`render`] is a pure function of the runs;
//! the caller writes the file. This module lays out the page and a run's header; the charts,
//! the level table and the trend over runs have a file each.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::analysis::knee;
use crate::analysis::text::count;
use crate::artifact::read::Run;

mod charts;
mod engine;
mod figure;
mod search;
mod style;
mod tables;
mod trend;

use style::CSS;

/// File name of the report.
pub use crate::artifact::REPORT_FILE;

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

/// `2026-01-02 12:00:05 UTC` from Unix nanoseconds (proleptic Gregorian calendar).
pub fn utc(unix_ns: u64) -> String {
    crate::context::utc_strftime(unix_ns, "%Y-%m-%d %H:%M:%S UTC")
}

/// The names of the levels for which `pick` holds, joined by commas.
fn level_names(run: &Run, pick: impl Fn(&crate::stats::LevelSummary) -> bool) -> String {
    let names: Vec<String> = run
        .levels
        .iter()
        .filter(|l| pick(&l.summary))
        .map(|l| l.summary.stimulus.name())
        .collect();
    names.join(", ")
}

/// The run's flags: valid or not, failures, short outputs, missing server data, SLO totals.
fn badges(run: &Run) -> Markup {
    let interrupted = level_names(run, |l| l.interrupted);
    let errors: u64 = run.levels.iter().map(|l| l.summary.stats.error_count).sum();
    let short: u64 = run
        .levels
        .iter()
        .map(|l| l.summary.stats.short_outputs)
        .sum();
    let no_server = run.levels.iter().all(|l| l.summary.server.is_none());
    let untrusted = level_names(run, |l| !l.validity.trustworthy);
    let thin = level_names(run, |l| {
        l.validity
            .unsupported_percentiles
            .iter()
            .any(|p| p == "p99")
    });
    html! {
        p.badges {
            @if interrupted.is_empty() && errors == 0 && untrusted.is_empty() {
                span.ok { "valid: complete, no errors" }
            }
            @if !untrusted.is_empty() {
                span.bad { "not trustworthy: " (untrusted) }
            }
            @if !interrupted.is_empty() {
                span.bad { "interrupted: " (interrupted) }
            }
            @if errors > 0 {
                span.warn { (count(errors, "failed request")) }
            }
            @if short > 0 {
                span.warn { (count(short, "response")) " shorter than asked" }
            }
            @if !thin.is_empty() {
                span.warn {
                    "p99 from fewer than " (crate::metrics::fewest_for_percentile(99))
                    " requests (the slowest, not a tail): " (thin)
                }
            }
            @if no_server {
                span.warn { "no server-side queue/compute data" }
            }
            (slo_badge(run))
        }
    }
}

/// SLO checks over a run's levels: (checked, failed).
fn slo_counts(run: &Run) -> (usize, usize) {
    let checks = run.levels.iter().flat_map(|l| &l.slo);
    let failed = checks.clone().filter(|s| !s.passed).count();
    (checks.count(), failed)
}

/// The SLO checks of every level: all passed, or how many failed.
fn slo_badge(run: &Run) -> Markup {
    let (slo_total, slo_failed) = slo_counts(run);
    let checks = count(slo_total as u64, "check");
    html! {
        @if slo_total > 0 && slo_failed == 0 {
            span.ok { "SLO: " (checks) " passed" }
        } @else if slo_total > 0 {
            span.bad { "SLO: " (slo_failed) " of " (checks) " failed" }
        }
    }
}

/// The run's description: its levels, model, endpoint type, start and end, and ttftbench version.
fn meta(run: &Run) -> String {
    let mut meta = vec![count(run.levels.len() as u64, "level")];
    if let Some(m) = run.levels.iter().find_map(|l| l.model.clone()) {
        meta.push(format!("model {m}"));
    }
    if let Some(a) = run.levels.iter().find_map(|l| l.api.clone()) {
        meta.push(format!("endpoint type {a}"));
    }
    if run.started_unix_ns() > 0 {
        meta.push(format!("started {}", utc(run.started_unix_ns())));
    }
    if run.ended_unix_ns() > 0 {
        meta.push(format!("ended {}", utc(run.ended_unix_ns())));
    }
    let version = run.levels.iter().find_map(|l| l.version.clone());
    meta.push(format!(
        "recorded by ttftbench {}",
        version.as_deref().unwrap_or("(version not recorded)")
    ));
    meta.join(" · ")
}

/// One run: its header (meta, command, flags, decisions), charts and level table.
fn run_body(run: &Run, opts: &Options) -> Markup {
    let summaries = run.summaries();
    let mut k = knee::analyze(&summaries, opts.knee_min_gain);
    let verdict = if summaries.len() > 1 {
        crate::analysis::verdict::with_knee(&summaries, &mut k).lines
    } else {
        Vec::new()
    };
    let context = run.levels.iter().find_map(|l| l.context.as_ref());
    html! {
        p.meta { (meta(run)) }
        @if let Some(c) = context {
            @for line in c.header_lines() {
                p.meta { (line) }
            }
        }
        p.meta { "directory: " code { (run.dir.display().to_string()) } }
        @if let Some(cmd) = run.command_line() {
            pre.cmd { (cmd) }
        }
        (badges(run))
        @if let Some(s) = &run.search {
            (search::section(s))
        }
        div.decision {
            p { strong { (k.recommendation) } }
            @for line in &verdict {
                p { (line) }
            }
            @for l in run.levels.iter().filter(|l| !l.summary.validity.trustworthy) {
                p.fail {
                    "Not trustworthy at " (l.summary.stimulus.name()) ": "
                    (l.summary.validity.reasons.join("; "))
                }
            }
            @for l in &run.levels {
                @for s in l.slo.iter().filter(|s| !s.passed) {
                    p.fail {
                        "SLO failed at " (l.summary.stimulus.name()) ": " (s.objective) " — "
                        (s.shown_actual())
                    }
                }
            }
            (drift(run))
        }
        (charts::run_charts(&run.levels, &k))
        (tables::level_table(&run.levels, k.knee.as_ref().map(|k| k.level.as_str())))
        (engine::table(&run.levels))
    }
}

/// Each level's drift over its timeline (a soak), one paragraph per level that had enough
/// intervals for a verdict; marked when a metric drifts.
fn drift(run: &Run) -> Markup {
    html! {
        @for l in &run.levels {
            @if let Some(d) = &l.summary.drift {
                @let lines: Vec<String> = d.metrics.iter().map(|m| m.line()).collect();
                @let drifts = d.metrics.iter().any(|m| m.drifts);
                p class=[drifts.then_some("fail")] {
                    "Drift at " (l.summary.stimulus.name()) " over "
                    (crate::analysis::text::duration(d.span_s))
                    " (Theil–Sen slope per hour, " (format!("{:.0}", d.confidence * 100.0))
                    " % interval): " (lines.join("; "))
                }
            }
        }
    }
}

/// The whole page for `runs` (oldest first).
pub fn render(runs: &[Run], opts: &Options) -> String {
    let newest = runs.last();
    let title = match (runs.len(), newest) {
        (1, Some(r)) => format!("ttftbench report: {}", r.label),
        (n, Some(r)) => format!("ttftbench report: {n} runs, newest {}", r.label),
        _ => "ttftbench report".to_string(),
    };
    let earlier = &runs[..runs.len().saturating_sub(1)];
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content={ "ttftbench " (opts.version) };
                title { (title) }
                // The page's own style sheet, a constant written for it: markup already.
                style { (PreEscaped(CSS)) }
            }
            body {
                header {
                    h1 { (title) }
                    p.meta { "Generated " (opts.generated_at) " by ttftbench " (opts.version) "." }
                }
                main {
                    @if runs.len() > 1 {
                        (trend::trend(runs))
                    }
                    @if let Some(r) = newest {
                        section.run id={ "run-" (r.label) } {
                            h2 { @if runs.len() > 1 { "Newest run: " } @else { "Run " } (r.label) }
                            (run_body(r, opts))
                        }
                    }
                    @if !earlier.is_empty() {
                        h2 { "Earlier runs" }
                        @for r in earlier.iter().rev() {
                            details.run id={ "run-" (r.label) } {
                                summary { "Run " (r.label) }
                                (run_body(r, opts))
                            }
                        }
                    }
                }
                footer { "Self-contained: inline SVG charts, no script, nothing loaded from the network. Hover a point for its value. Knee: the first level beyond which throughput grows less than the set fraction while p99 latency rises by more than it." }
            }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::artifact::read::{LoadedLevel, RecordedSlo, run_from};
    use crate::load::Stimulus;
    use crate::metrics::{Metric, Stats};
    use crate::stats::{LevelStats, LevelSummary};

    fn level(c: u32, ttft_p99: f64, tput: f64, slo_passed: Option<bool>) -> LoadedLevel {
        let st = |p99: f64| Stats {
            count: 10,
            avg: p99 / 2.0,
            p50: p99 / 2.0,
            p99,
            ..Stats::default()
        };
        let context = serde_json::from_value(serde_json::json!({
            "run_id": "20260102T120005Z-00abcd", "labels": {"release": "v2"},
            "client": {"host": "bench-1", "os": "linux", "arch": "x86_64", "cores": 2},
            "server": {"name": "triton", "version": "2.51.0", "source": "GET /v2"},
        }))
        .unwrap();
        let summary = LevelSummary {
            started_unix_ns: 1_767_355_205_000_000_000,
            ended_unix_ns: 1_767_355_265_000_000_000,
            ..LevelSummary::new(
                Stimulus::Concurrency(c),
                LevelStats {
                    metrics: vec![
                        (Metric::TimeToFirstToken, st(ttft_p99)),
                        (Metric::InterTokenLatency, st(6.0)),
                        (Metric::RequestLatency, st(500.0)),
                    ],
                    request_count: 10,
                    duration_s: 1.0,
                    output_token_throughput: tput,
                    total_token_throughput: tput,
                    request_throughput: tput / 100.0,
                    ..Default::default()
                },
            )
        };
        LoadedLevel {
            context: Some(context),
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
            ..LoadedLevel::new(std::path::Path::new(&format!("r/c{c}")), summary)
        }
    }

    fn opts() -> Options {
        Options {
            knee_min_gain: 0.1,
            version: "1.2.3".into(),
            generated_at: "2026-01-02 12:00:05 UTC".into(),
        }
    }

    /// The page of one run of `levels`.
    fn page_of(levels: Vec<LoadedLevel>) -> String {
        render(&[run_from(std::path::Path::new("r"), levels)], &opts())
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
        assert!(
            page.starts_with("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        );
        assert!(page.contains("<header><h1>ttftbench report: r</h1><p class=\"meta\">Generated 2026-01-02 12:00:05 UTC by ttftbench 1.2.3.</p></header>"));
        assert!(page.contains("<p class=\"meta\">3 levels · model gpt2 · endpoint type kserve · started 2026-01-02 12:00:05 UTC · ended 2026-01-02 12:01:05 UTC · recorded by ttftbench 0.0.9</p><p class=\"meta\">run 20260102T120005Z-00abcd · labels release=v2</p><p class=\"meta\">server triton 2.51.0 (from GET /v2)</p><p class=\"meta\">client bench-1 (linux x86_64, 2 cores)</p>"));
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
        assert!(page.ends_with("</body></html>"));
    }

    /// A run where a level saw reasoning gets TTFO and reasoning-token columns after TTFT (a
    /// dash for a level without); cancelled requests are a note.
    #[test]
    fn reasoning_columns_and_cancelled_note() {
        let mut thinking = level(4, 300.0, 800.0, None);
        let st = |avg: f64| Stats {
            count: 10,
            avg,
            p50: avg,
            p99: avg,
            ..Stats::default()
        };
        let stats = &mut thinking.summary.stats;
        stats
            .metrics
            .push((Metric::TimeToFirstOutputToken, st(412.5)));
        stats.metrics.push((Metric::ReasoningTokenCount, st(32.0)));
        stats.cancelled_count = 3;
        let page = page_of(vec![level(1, 30.0, 200.0, None), thinking]);
        assert!(page.contains("<th>TTFT p99</th><th>TTFO avg (ms)</th><th>Reasoning tok avg</th><th>ITL avg (ms)</th>"), "{page}");
        assert!(page.contains("<tr><td>1</td><td>15.00</td><td>15.00</td><td>30.00</td><td>–</td><td>–</td><td>3.00</td>"), "{page}");
        assert!(page.contains("<tr><td>4</td><td>150.00</td><td>150.00</td><td>300.00</td><td>412.50</td><td>32.0</td><td>3.00</td>"), "{page}");
        assert!(page.contains("<td>3 cancelled</td></tr>"), "{page}");
        let plain = page_of(vec![level(1, 30.0, 200.0, None)]);
        assert!(!plain.contains("TTFO avg"));
    }

    /// The part of a page holding one chart.
    fn chart<'a>(page: &'a str, id: &str) -> &'a str {
        let start = page.find(&format!("data-chart=\"{id}\"")).unwrap();
        &page[start..start + page[start..].find("</svg>").unwrap()]
    }

    /// Issue 15: levels before the knee (p99 30-180 ms) under a 2,600 ms tail were a flat line on
    /// a proportional axis. Spanning more than 10x, the latency axes turn logarithmic with 1-2-5
    /// ticks; within 10x they stay proportional.
    #[test]
    fn latency_axes_turn_log_when_levels_span_decades() {
        let page = page_of(vec![
            level(1, 30.0, 200.0, None),
            level(8, 180.0, 1000.0, None),
            level(32, 2600.0, 1010.0, None),
        ]);
        let ttft = chart(&page, "ttft");
        assert!(
            ttft.contains(r#"<g class="axis" data-y-scale="log">"#),
            "{ttft}"
        );
        assert!(ttft.contains(">time to first token (ms, log scale)</text>"));
        // avg/p50 are p99/2 here: 15 ms to 2,600 ms, ticked 10, 20, 50, ... 5000.
        for tick in [
            "10", "20", "50", "100", "200", "500", "1000", "2000", "5000",
        ] {
            assert!(
                ttft.contains(&format!(r#"text-anchor="end">{tick}</text>"#)),
                "{tick}"
            );
        }
        let knee = chart(&page, "knee");
        assert!(knee.contains(">time to first token p99 (ms, log scale)</text>"));
        // The knee's ring (r = 9) leaves its point's label outside: offset 11, not 6.
        let ring = knee
            .split(r#"<g class="mark"><circle cx=""#)
            .nth(1)
            .unwrap();
        let cx: f64 = ring.split('"').next().unwrap().parse().unwrap();
        let label_x = format!(r#"<text class="pl" x="{:.1}""#, cx + 11.0);
        assert!(knee.contains(&label_x), "{knee}");
        // Within 10x: proportional, from 0.
        let page = page_of(vec![
            level(1, 100.0, 200.0, None),
            level(8, 180.0, 1000.0, None),
        ]);
        let ttft = chart(&page, "ttft");
        assert!(ttft.contains(r#"<g class="axis"><line"#), "{ttft}");
        assert!(ttft.contains(">time to first token (ms)</text>"));
        assert!(chart(&page, "knee").contains(">time to first token p99 (ms)</text>"));
    }

    #[test]
    fn untrustworthy_levels_are_flagged() {
        let mut few = level(1, 30.0, 200.0, None);
        few.summary.validity = crate::metrics::Validity {
            trustworthy: false,
            reasons: vec!["only 1 successful request measured".into()],
            ..Default::default()
        };
        let page = page_of(vec![few, level(8, 180.0, 1000.0, None)]);
        assert!(!page.contains("valid: complete"));
        assert!(page.contains("<span class=\"bad\">not trustworthy: concurrency1</span>"));
        assert!(page.contains(
            "<p class=\"fail\">Not trustworthy at concurrency1: only 1 successful request measured</p>"
        ));
    }

    /// A soak's drift: one paragraph per level with a verdict, marked when a metric drifts.
    #[test]
    fn drift_paragraphs() {
        use crate::stats::trend::{Drift, DriftLine, DriftMetric};
        let line = |metric, per_hour: f64, drifts| DriftLine {
            metric,
            points: 120,
            median: 100.0,
            per_hour,
            lower_per_hour: per_hour - 1.0,
            upper_per_hour: per_hour + 1.0,
            relative_per_hour: per_hour / 100.0,
            drifts,
        };
        let mut soak = level(8, 180.0, 1000.0, None);
        soak.summary.drift = Some(Drift {
            span_s: 7200.0,
            confidence: 0.95,
            metrics: vec![
                line(DriftMetric::TtftP99, 12.0, true),
                line(DriftMetric::OutputThroughput, -0.5, false),
            ],
        });
        let page = page_of(vec![level(1, 30.0, 200.0, None), soak]);
        assert!(page.contains(
            "<p class=\"fail\">Drift at concurrency8 over 2.0 h (Theil–Sen slope per hour, 95 % interval): TTFT p99 +12.00 ms/h [+11.00, +13.00] (+12.0 %/h): drifts; output tok/s -0.50 tokens/sec/h [-1.50, +0.50] (-0.5 %/h): steady</p>"
        ), "{page}");
        assert_eq!(page.matches("Drift at ").count(), 1);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_767_355_205_000_000_000), "2026-01-02 12:00:05 UTC");
    }
}
