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

use crate::analysis::text;
use std::fmt::Write as _;

use super::svg::esc;
use crate::analysis::knee;
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

/// The wall clock now, Unix nanoseconds (0 if the clock is before 1970).
pub fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `2026-01-02 12:00:05 UTC` from Unix nanoseconds (proleptic Gregorian calendar).
pub fn utc(unix_ns: u64) -> String {
    crate::context::utc_strftime(unix_ns, "%Y-%m-%d %H:%M:%S UTC")
}

/// The run's flags: valid or not, failures, short outputs, missing server data, SLO totals.
fn badges(out: &mut String, run: &Run) {
    out.push_str("<p class=\"badges\">");
    // The names of the levels that are `so`, joined.
    let names = |so: &dyn Fn(&crate::stats::LevelSummary) -> bool| {
        let named = run.levels.iter().filter(|l| so(&l.summary));
        named
            .map(|l| l.summary.stimulus.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sum = |n: fn(&crate::stats::LevelSummary) -> u64| -> u64 {
        run.levels.iter().map(|l| n(&l.summary)).sum()
    };
    let interrupted = names(&|l| l.interrupted);
    let errors = sum(|l| l.stats.error_count);
    let short = sum(|l| l.stats.short_outputs);
    let no_server = run.levels.iter().all(|l| l.summary.server.is_none());
    let untrusted = names(&|l| !l.validity.trustworthy);
    if interrupted.is_empty() && errors == 0 && untrusted.is_empty() {
        out.push_str("<span class=\"ok\">valid: complete, no errors</span>");
    }
    if !untrusted.is_empty() {
        let _ = write!(
            out,
            "<span class=\"bad\">not trustworthy: {}</span>",
            esc(&untrusted)
        );
    }
    if !interrupted.is_empty() {
        let _ = write!(
            out,
            "<span class=\"bad\">interrupted: {}</span>",
            esc(&interrupted)
        );
    }
    if errors > 0 {
        let _ = write!(
            out,
            "<span class=\"warn\">{}</span>",
            text::count(errors, "failed request")
        );
    }
    if short > 0 {
        let _ = write!(
            out,
            "<span class=\"warn\">{} shorter than asked</span>",
            text::count(short, "response")
        );
    }
    let thin = names(&|l| {
        l.validity
            .unsupported_percentiles
            .iter()
            .any(|p| p == "p99")
    });
    if !thin.is_empty() {
        let _ = write!(
            out,
            "<span class=\"warn\">p99 from fewer than {} requests (the slowest, not a tail): {}</span>",
            crate::metrics::fewest_for_percentile(99),
            esc(&thin)
        );
    }
    if no_server {
        out.push_str("<span class=\"warn\">no server-side queue/compute data</span>");
    }
    slo_badge(out, run);
    out.push_str("</p>\n");
}

/// SLO checks over a run's levels: (checked, failed).
fn slo_counts(run: &Run) -> (usize, usize) {
    let checks = run.levels.iter().flat_map(|l| &l.slo);
    let failed = checks.clone().filter(|s| !s.passed).count();
    (checks.count(), failed)
}

/// The SLO checks of every level: all passed, or how many failed.
fn slo_badge(out: &mut String, run: &Run) {
    let (slo_total, slo_failed) = slo_counts(run);
    if slo_total > 0 {
        if slo_failed == 0 {
            let _ = write!(
                out,
                "<span class=\"ok\">SLO: {} passed</span>",
                text::count(slo_total as u64, "check")
            );
        } else {
            let _ = write!(
                out,
                "<span class=\"bad\">SLO: {slo_failed} of {} failed</span>",
                text::count(slo_total as u64, "check")
            );
        }
    }
}

/// One run: its header (meta, command, flags, decisions), charts and level table.
fn run_body(out: &mut String, run: &Run, opts: &Options) {
    let summaries = run.summaries();
    let mut k = knee::analyze(&summaries, opts.knee_min_gain);
    let verdict = if summaries.len() > 1 {
        crate::analysis::verdict::with_knee(&summaries, &mut k).lines
    } else {
        Vec::new()
    };
    let model = run.levels.iter().find_map(|l| l.model.clone());
    let api = run.levels.iter().find_map(|l| l.api.clone());
    let version = run.levels.iter().find_map(|l| l.version.clone());
    let mut meta = vec![text::count(run.levels.len() as u64, "level")];
    if let Some(m) = model {
        meta.push(format!("model {m}"));
    }
    if let Some(a) = api {
        meta.push(format!("endpoint type {a}"));
    }
    if run.started_unix_ns() > 0 {
        meta.push(format!("started {}", utc(run.started_unix_ns())));
    }
    if run.ended_unix_ns() > 0 {
        meta.push(format!("ended {}", utc(run.ended_unix_ns())));
    }
    meta.push(format!(
        "recorded by ttftbench {}",
        version.as_deref().unwrap_or("(version not recorded)")
    ));
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&meta.join(" · ")));
    if let Some(c) = run.levels.iter().find_map(|l| l.context.as_ref()) {
        for line in c.header_lines() {
            let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&line));
        }
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">directory: <code>{}</code></p>",
        esc(&run.dir.display().to_string())
    );
    if let Some(cmd) = run.command_line() {
        let _ = writeln!(out, "<pre class=\"cmd\">{}</pre>", esc(cmd));
    }
    badges(out, run);
    if let Some(s) = &run.search {
        search::section(out, s);
    }
    out.push_str("<div class=\"decision\">\n");
    let _ = writeln!(out, "<p><strong>{}</strong></p>", esc(&k.recommendation));
    for line in &verdict {
        let _ = writeln!(out, "<p>{}</p>", esc(line));
    }
    for l in run
        .levels
        .iter()
        .filter(|l| !l.summary.validity.trustworthy)
    {
        let _ = writeln!(
            out,
            "<p class=\"fail\">Not trustworthy at {}: {}</p>",
            esc(&l.summary.stimulus.name()),
            esc(&l.summary.validity.reasons.join("; "))
        );
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
    drift(out, run);
    out.push_str("</div>\n");
    charts::run_charts(out, &run.levels, &k);
    tables::level_table(out, &run.levels, k.knee.as_ref().map(|k| k.level.as_str()));
    engine::table(out, &run.levels);
}

/// Each level's drift over its timeline (a soak), one paragraph per level that had enough
/// intervals for a verdict; marked when a metric drifts.
fn drift(out: &mut String, run: &Run) {
    for l in &run.levels {
        let Some(d) = &l.summary.drift else {
            continue;
        };
        let lines: Vec<String> = d.metrics.iter().map(|m| m.line()).collect();
        let class = if d.metrics.iter().any(|m| m.drifts) {
            " class=\"fail\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<p{class}>Drift at {} over {} (Theil–Sen slope per hour, {:.0} % interval): {}</p>",
            esc(&l.summary.stimulus.name()),
            esc(&text::duration(d.span_s)),
            d.confidence * 100.0,
            esc(&lines.join("; "))
        );
    }
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
        trend::trend(&mut out, runs);
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
        let context = crate::context::RunContext {
            run_id: "20260102T120005Z-00abcd".into(),
            labels: [("release".to_string(), "v2".to_string())].into(),
            client: crate::context::ClientHost {
                host: "bench-1".into(),
                os: "linux".into(),
                arch: "x86_64".into(),
                kernel: None,
                cpu: None,
                cores: 2,
            },
            server: crate::context::ServerIdentity {
                name: Some("triton".into()),
                version: Some("2.51.0".into()),
                extensions: Vec::new(),
                source: "GET /v2".into(),
            },
            model: None,
            gpus: Vec::new(),
        };
        LoadedLevel {
            context: Some(context),
            fingerprint: None,
            dir: std::path::PathBuf::from(format!("r/c{c}")),
            summary: LevelSummary {
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
            repetitions: Vec::new(),
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
        assert!(page.contains("<p class=\"meta\">3 levels · model gpt2 · endpoint type kserve · started 2026-01-02 12:00:05 UTC · ended 2026-01-02 12:01:05 UTC · recorded by ttftbench 0.0.9</p>\n<p class=\"meta\">run 20260102T120005Z-00abcd · labels release=v2</p>\n<p class=\"meta\">server triton 2.51.0 (from GET /v2)</p>\n<p class=\"meta\">client bench-1 (linux x86_64, 2 cores)</p>"));
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
        let page = page(vec![level(1, 30.0, 200.0, None), thinking]);
        assert!(page.contains("<th>TTFT p99</th><th>TTFO avg (ms)</th><th>Reasoning tok avg</th><th>ITL avg (ms)</th>"), "{page}");
        assert!(page.contains("<tr><td>1</td><td>15.00</td><td>15.00</td><td>30.00</td><td>–</td><td>–</td><td>3.00</td>"), "{page}");
        assert!(page.contains("<tr><td>4</td><td>150.00</td><td>150.00</td><td>300.00</td><td>412.50</td><td>32.0</td><td>3.00</td>"), "{page}");
        assert!(page.contains("<td>3 cancelled</td></tr>"), "{page}");
        let plain = self::page(vec![level(1, 30.0, 200.0, None)]);
        assert!(!plain.contains("TTFO avg"));
    }

    /// The page of one run of `levels`.
    fn page(levels: Vec<LoadedLevel>) -> String {
        render(&[run_from(std::path::Path::new("r"), levels)], &opts())
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
        let page = page(vec![
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
        let page = self::page(vec![
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
        let page = page(vec![few, level(8, 180.0, 1000.0, None)]);
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
        let page = page(vec![level(1, 30.0, 200.0, None), soak]);
        assert!(page.contains(
            "<p class=\"fail\">Drift at concurrency8 over 2.0 h (Theil–Sen slope per hour, 95 % interval): TTFT p99 +12.00 ms/h [+11.00, +13.00] (+12.0 %/h): drifts; output tok/s -0.50 tokens/sec/h [-1.50, +0.50] (-0.5 %/h): steady</p>\n"
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
