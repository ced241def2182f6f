//! The charts of one run: TTFT (or request latency) versus load, throughput versus p99 with
//! the knee marked, ITL versus load, the server's queue versus compute share, error rate, TTFT
//! by input length (with `--isl-buckets`); then the engine's KV-cache and GPU charts where those were read (see `super::engine`).
//! Latency axes turn logarithmic when the levels span more than ten times (a knee's tail would
//! otherwise flatten the levels before it).

use maud::{Markup, html};

use super::super::svg::{self, Chart, Mark, Pt, Series, XScale};
use super::figure::{figure, kind_title, load_label};
use crate::analysis::knee;
use crate::analysis::text;
use crate::artifact::read::LoadedLevel;
use crate::metrics::Metric;
use crate::metrics::{MetricRef, MetricSource, Stat, SystemMetric};
use crate::report::console::is_batch;
use crate::stats::LevelSummary;

/// Log2 for geometric load ladders, else proportional.
pub(super) fn x_scale(levels: &[LoadedLevel]) -> XScale {
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

/// Whether any level has TTFT (streamed responses).
fn streamed(levels: &[LoadedLevel]) -> bool {
    levels.iter().any(|l| {
        l.summary
            .metric(MetricRef::Dist(Metric::TimeToFirstToken, Stat::Avg))
            .is_some()
    })
}

/// One statistic of one metric across the levels, as a series; a level of a `--repeat` run
/// gets an error bar from its lowest to its highest repetition.
fn stat_series(levels: &[LoadedLevel], name: &str, m: MetricRef, unit: &str) -> Series {
    Series {
        name: name.to_string(),
        points: levels
            .iter()
            .filter_map(|l| {
                let v = l.summary.metric(m)?;
                let x = l.summary.stimulus.value();
                let range = repetition_range(l, m);
                let spread = range.map_or(String::new(), |(lo, hi)| {
                    format!(
                        " (median of {} repetitions, {}–{})",
                        l.repetitions.len(),
                        svg::num(lo),
                        svg::num(hi)
                    )
                });
                Some(Pt {
                    range,
                    ..Pt::new(
                        x,
                        v,
                        format!(
                            "{} {}: {name} {} {unit}{spread}",
                            l.summary.stimulus.kind().replace('_', " "),
                            load_label(&l.summary),
                            svg::num(v)
                        ),
                    )
                })
            })
            .collect(),
    }
}

/// The lowest and highest value of `m` across a level's repetitions; `None` for a single run.
pub(super) fn repetition_range(l: &LoadedLevel, m: MetricRef) -> Option<(f64, f64)> {
    let values: Vec<f64> = l.repetitions.iter().filter_map(|r| r.metric(m)).collect();
    let s = crate::stats::repeat::Spread::of(&values).filter(|s| s.n > 1)?;
    Some((s.min, s.max))
}

/// What every chart of a run shares.
struct Ctx<'a> {
    levels: &'a [LoadedLevel],
    /// The load axis' name.
    kind: String,
    /// The load axis' scale.
    scale: XScale,
    /// Whether responses streamed (TTFT and ITL exist).
    streaming: bool,
}

impl Ctx<'_> {
    /// A line chart over the load axis with no marks or reference lines.
    fn load_chart(&self, id: &str, title: String, y_label: &str, series: Vec<Series>) -> Chart {
        Chart::lines(id, title, &self.kind, y_label, self.scale, series)
    }
}

/// The charts of one run, in a grid.
pub(super) fn run_charts(levels: &[LoadedLevel], k: &knee::Analysis) -> Markup {
    let ctx = Ctx {
        levels,
        kind: kind_title(levels),
        scale: x_scale(levels),
        streaming: streamed(levels),
    };
    let mut out = Vec::new();
    latency_chart(&mut out, &ctx);
    knee_chart(&mut out, &ctx, k);
    itl_chart(&mut out, &ctx);
    queue_chart(&mut out, &ctx);
    error_chart(&mut out, &ctx);
    pareto_chart(&mut out, &ctx);
    isl_chart(&mut out, &ctx);
    turn_chart(&mut out, &ctx);
    super::engine::charts(&mut out, levels, ctx.scale);
    html! { div.charts { @for f in &out { (f) } } }
}

/// 1. TTFT (or request latency, without streaming) avg, p50 and p99 versus load; with a reasoning
///    model, TTFO (the first answer token, past the reasoning) avg and p99 beside them.
fn latency_chart(out: &mut Vec<Markup>, ctx: &Ctx) {
    let (metric, title, what) = if ctx.streaming {
        (Metric::TimeToFirstToken, "TTFT", "time to first token")
    } else {
        (Metric::RequestLatency, "Request latency", "request latency")
    };
    let stats = [("avg", Stat::Avg), ("p50", Stat::P50), ("p99", Stat::P99)];
    let mut wanted: Vec<(String, MetricRef)> = stats
        .iter()
        .map(|(n, s)| (format!("{title} {n}"), MetricRef::Dist(metric, *s)))
        .collect();
    let ttfo = ctx.streaming
        && ctx.levels.iter().any(|l| {
            l.summary
                .stats
                .get(Metric::TimeToFirstOutputToken)
                .is_some()
        });
    if ttfo {
        for (n, s) in [stats[0], stats[2]] {
            let m = MetricRef::Dist(Metric::TimeToFirstOutputToken, s);
            wanted.push((format!("TTFO {n}"), m));
        }
    }
    let series = wanted
        .iter()
        .map(|(name, m)| stat_series(ctx.levels, name, *m, "ms"))
        // A statistic the source lacks (perf_analyzer's CSV has no average) is left out.
        .filter(|s| s.points.iter().any(|p| p.y.is_finite()))
        .collect();
    let (title, what) = if ttfo {
        ("TTFT and TTFO", "time to first token / first output token")
    } else {
        (title, what)
    };
    let chart = ctx.load_chart(
        "ttft",
        format!("{title} vs {}", ctx.kind),
        &format!("{what} (ms)"),
        series,
    );
    figure(
        out,
        svg::line_chart(&chart),
        if ctx.streaming {
            "A p99 pulling away from p50 is the tail users feel first."
        } else if ctx.levels.iter().any(|l| is_batch(&l.summary)) {
            "Embeddings and rankings answers come whole: request latency is their latency."
        } else {
            "Not streamed: there is no TTFT without --streaming, so request latency is shown."
        },
    );
}

/// 2. Throughput versus p99 latency, one point per level labelled by its load, the knee marked.
fn knee_chart(out: &mut Vec<Markup>, ctx: &Ctx, k: &knee::Analysis) {
    let (lat, lat_name, short) = if ctx.streaming {
        (Metric::TimeToFirstToken, "time to first token", "TTFT p99")
    } else {
        (Metric::RequestLatency, "request latency", "latency p99")
    };
    let lat = MetricRef::Dist(lat, Stat::P99);
    let tput = if k.throughput_metric == SystemMetric::OutputTokenThroughput.key() {
        SystemMetric::OutputTokenThroughput
    } else {
        SystemMetric::RequestThroughput
    };
    let tput_unit = match tput {
        SystemMetric::OutputTokenThroughput => "output tokens/s",
        _ => "requests/s",
    };
    let points: Vec<Pt> = ctx
        .levels
        .iter()
        .filter(|l| l.summary.stats.request_count > 0)
        .filter_map(|l| {
            let x = l.summary.metric(lat)?;
            let y = l.summary.metric(MetricRef::System(tput))?;
            let tip = format!(
                "{} {}: {} {tput_unit} at p99 {} ms",
                ctx.kind,
                load_label(&l.summary),
                svg::num(y),
                svg::num(x)
            );
            Some(Pt {
                label: load_label(&l.summary),
                ..Pt::new(x, y, tip)
            })
        })
        .collect();
    let marks = k
        .knee
        .as_ref()
        .map(|kn| Mark {
            x: kn.p99_ms,
            y: kn.throughput,
            text: format!("knee: {} {}", ctx.kind, svg::num(kn.value)),
        })
        .into_iter()
        .collect();
    // p99 from before the knee to far beyond it spans decades: a log axis keeps the levels
    // before the knee apart.
    let x_scale = if svg::spans_decades(points.iter().map(|p| p.x)) {
        XScale::Log10
    } else {
        XScale::Linear
    };
    let title = format!("Throughput vs {short}");
    let x_label = if x_scale == XScale::Log10 {
        svg::log_titled(&format!("{lat_name} p99 (ms)"))
    } else {
        format!("{lat_name} p99 (ms)")
    };
    let series = vec![Series {
        name: format!("levels (labelled by {})", ctx.kind),
        points,
    }];
    let chart = Chart {
        marks,
        ..Chart::lines("knee", title, &x_label, tput_unit, x_scale, series)
    };
    figure(out, svg::line_chart(&chart), &k.recommendation);
}

/// Throughput against interactivity (per-user output tokens/s), one point per level: levels
/// that met every SLO apart from those that did not, the Pareto frontier marked.
fn pareto_chart(out: &mut Vec<Markup>, ctx: &Ctx) {
    if !ctx.streaming || ctx.levels.len() < 2 {
        return;
    }
    let input: Vec<(&LevelSummary, Option<bool>)> = ctx
        .levels
        .iter()
        .map(|l| {
            let met = (!l.slo.is_empty()).then(|| l.slo.iter().all(|s| s.passed));
            (&l.summary, met)
        })
        .collect();
    let points = crate::analysis::pareto::points(&input);
    let pt = |p: &crate::analysis::pareto::Point| {
        let u = p.per_user?;
        Some(Pt {
            label: svg::num(p.load),
            ..Pt::new(
                u,
                p.throughput,
                format!(
                    "{} {}: {} output tokens/s, {} per user{}",
                    ctx.kind,
                    svg::num(p.load),
                    svg::num(p.throughput),
                    svg::num(u),
                    match p.feasible {
                        Some(true) => ", met every SLO",
                        Some(false) => ", missed an SLO",
                        None => "",
                    }
                ),
            )
        })
    };
    let group = |name: &str, keep: &dyn Fn(Option<bool>) -> bool| Series {
        name: name.into(),
        points: points
            .iter()
            .filter(|p| keep(p.feasible))
            .filter_map(pt)
            .collect(),
    };
    let series: Vec<Series> = [
        group("met every SLO", &|f| f == Some(true)),
        group("missed an SLO", &|f| f == Some(false)),
        group("levels (no SLO given)", &|f| f.is_none()),
    ]
    .into_iter()
    .filter(|s| !s.points.is_empty())
    .collect();
    let marks = points
        .iter()
        .filter(|p| p.frontier)
        .filter_map(|p| {
            Some(Mark {
                x: p.per_user?,
                y: p.throughput,
                text: "frontier".into(),
            })
        })
        .collect();
    let chart = Chart {
        marks,
        lines: false,
        ..Chart::lines(
            "pareto",
            "Throughput vs interactivity".into(),
            "output tokens/s per user",
            "output tokens/s (all users)",
            XScale::Linear,
            series,
        )
    };
    figure(
        out,
        svg::line_chart(&chart),
        "Each level: per-user speed against total throughput; the frontier holds the levels no other beats on both. pareto.csv has the numbers.",
    );
}

/// 3. ITL avg and p99 versus load.
fn itl_chart(out: &mut Vec<Markup>, ctx: &Ctx) {
    let series = if ctx.streaming {
        [("avg", Stat::Avg), ("p99", Stat::P99)]
            .iter()
            .map(|(n, s)| {
                stat_series(
                    ctx.levels,
                    &format!("ITL {n}"),
                    MetricRef::Dist(Metric::InterTokenLatency, *s),
                    "ms",
                )
            })
            .collect()
    } else {
        vec![]
    };
    let chart = ctx.load_chart(
        "itl",
        format!("Inter-token latency vs {}", ctx.kind),
        "inter-token latency (ms)",
        series,
    );
    figure(
        out,
        svg::line_chart(&chart),
        if ctx.streaming {
            "Decode speed per user: it grows with the batch the server decodes together."
        } else {
            "No inter-token latency without --streaming."
        },
    );
}

/// 4. The server's queue versus compute share per level, with the verdict's limit.
fn queue_chart(out: &mut Vec<Markup>, ctx: &Ctx) {
    let cats: Vec<String> = ctx.levels.iter().map(|l| load_label(&l.summary)).collect();
    let share = MetricRef::System(SystemMetric::QueueShare);
    let queue: Vec<Option<f64>> = ctx.levels.iter().map(|l| l.summary.metric(share)).collect();
    let compute: Vec<Option<f64>> = queue.iter().map(|q| q.map(|q| 1.0 - q)).collect();
    figure(
        out,
        svg::stacked_share_chart(
            "queue",
            &format!("Server time: queue vs compute, by {}", ctx.kind),
            &ctx.kind,
            &cats,
            &[("queue".into(), queue), ("compute".into(), compute)],
            Some((
                crate::analysis::verdict::QUEUE_SHARE_LIMIT,
                "50%: tune scheduling above".into(),
            )),
        ),
        "From the engine's own queue where its metrics page was read (TensorRT-LLM's estimated from its waiting requests), else Triton's counters. A queue share above half the server time means requests wait more than they compute.",
    );
}

/// 6. TTFT p50 by input-length bucket, one line per load level (`--isl-buckets`).
///
/// Request latency without streaming; nothing when no level was split.
fn isl_chart(out: &mut Vec<Markup>, ctx: &Ctx) {
    let what = if ctx.streaming { "TTFT" } else { "latency" };
    let lines = CategoryLines {
        id: "isl",
        title: format!("{what} p50 by input length"),
        x_label: "input tokens",
        y_label: format!("{what} p50 (ms)"),
        caption: "Prefill grows with the prompt: a line that rises with the bucket says long prompts drive TTFT; a flat line with a high level says queueing does.",
    };
    lines.draw(out, ctx, |l| {
        l.summary
            .stats
            .isl_buckets
            .iter()
            .map(|b| {
                let s = if ctx.streaming {
                    b.ttft.as_ref()
                } else {
                    b.latency.as_ref()
                };
                let point = s.map(|s| {
                    let tip = format!(
                        "{} {}, {} input tokens: {what} p50 {} ms, p99 {} ms, {}",
                        ctx.kind,
                        load_label(&l.summary),
                        b.label(),
                        svg::num(s.p50),
                        svg::num(s.p99),
                        text::count(b.count, "request")
                    );
                    (s.p50, tip)
                });
                (b.label(), point)
            })
            .collect()
    });
}

/// 7. TTFT avg by session turn, one line per load level (multi-turn sessions, streamed).
///
/// Nothing without sessions or without streaming.
fn turn_chart(out: &mut Vec<Markup>, ctx: &Ctx) {
    if !ctx.streaming {
        return;
    }
    let lines = CategoryLines {
        id: "turns",
        title: "TTFT avg by session turn".to_string(),
        x_label: "turn (0 = first)",
        y_label: "TTFT avg (ms)".to_string(),
        caption: "Each turn carries the session's history, so its input grows: a line that rises in step with the input says the server prefills the history again; a flatter one says its prefix cache holds it.",
    };
    lines.draw(out, ctx, |l| {
        l.summary
            .stats
            .turns
            .iter()
            .map(|t| {
                let point = t.ttft.as_ref().map(|s| {
                    let tip = format!(
                        "{} {}, turn {}: TTFT avg {} ms, p99 {} ms, input {} tokens avg, {}",
                        ctx.kind,
                        load_label(&l.summary),
                        t.label(),
                        svg::num(s.avg),
                        svg::num(s.p99),
                        svg::num(t.isl_avg),
                        text::count(t.count, "request")
                    );
                    (s.avg, tip)
                });
                (t.label(), point)
            })
            .collect()
    });
}

/// A line chart over named categories (input-length buckets, session turns), one line per
/// load level; the x ticks are the categories of the level that has the most.
struct CategoryLines {
    id: &'static str,
    title: String,
    x_label: &'static str,
    y_label: String,
    caption: &'static str,
}

impl CategoryLines {
    /// Draws the chart from `points(level)`: each category's label and, when the level has a
    /// value there, its y and tooltip. Nothing when no level has a category.
    fn draw(
        self,
        out: &mut Vec<Markup>,
        ctx: &Ctx,
        points: impl Fn(&LoadedLevel) -> Vec<(String, Option<(f64, String)>)>,
    ) {
        let per_level: Vec<_> = ctx.levels.iter().map(|l| (l, points(l))).collect();
        let Some((_, widest)) = per_level
            .iter()
            .max_by_key(|(_, p)| p.len())
            .filter(|(_, p)| !p.is_empty())
        else {
            return;
        };
        let ticks = widest.iter().map(|(label, _)| label.clone()).collect();
        let series = per_level
            .iter()
            .map(|(l, p)| Series {
                name: format!("{} {}", ctx.kind, load_label(&l.summary)),
                points: p
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (_, v))| {
                        let (y, tip) = v.as_ref()?;
                        Some(Pt::new(i as f64, *y, tip.clone()))
                    })
                    .collect(),
            })
            .collect();
        let chart = Chart {
            x_ticks: ticks,
            ..Chart::lines(
                self.id,
                self.title,
                self.x_label,
                &self.y_label,
                XScale::Index,
                series,
            )
        };
        figure(out, svg::line_chart(&chart), self.caption);
    }
}

/// 5. Failed requests as a share of all, per level.
fn error_chart(out: &mut Vec<Markup>, ctx: &Ctx) {
    let points = ctx
        .levels
        .iter()
        .filter_map(|l| {
            let s = &l.summary.stats;
            let r = l
                .summary
                .metric(MetricRef::System(SystemMetric::ErrorRate))?;
            Some(Pt::new(
                l.summary.stimulus.value(),
                r * 100.0,
                format!(
                    "{} {}: {} of {} failed ({:.1}%)",
                    ctx.kind,
                    load_label(&l.summary),
                    s.error_count,
                    text::count(s.error_count + s.request_count, "request"),
                    r * 100.0
                ),
            ))
        })
        .collect();
    let chart = ctx.load_chart(
        "errors",
        format!("Error rate vs {}", ctx.kind),
        "failed requests (%)",
        vec![Series {
            name: "error rate".into(),
            points,
        }],
    );
    figure(
        out,
        svg::line_chart(&chart),
        "Failures are counted by kind in each level's profile_export_genai_perf.json.",
    );
}
