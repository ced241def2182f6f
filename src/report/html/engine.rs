//! The server's own view in the report, where its metrics page was read (or its responses
//! carried its timings): the engine's table (its queue, prefill and decode, batch, KV cache,
//! preemptions, server TTFT, prefix cache) and
//! two charts — KV-cache usage versus load, GPU utilization and power versus load (with output
//! tokens per joule in each point's hover text).

use maud::{Markup, html};

use super::figure::{figure, kind_title, load_label};
use super::tables::cell;
use crate::artifact::read::LoadedLevel;
use crate::report::svg::{self, Chart, Pt, Series, XScale};
use crate::server_metrics::split::engine_name;
use crate::stats::LevelSummary;

/// A series of one value per level, points only where it is known.
fn series(
    levels: &[LoadedLevel],
    name: &str,
    value: impl Fn(&LevelSummary) -> Option<f64>,
    tip: impl Fn(&LevelSummary, f64) -> String,
) -> Series {
    Series {
        name: name.to_string(),
        points: levels
            .iter()
            .filter_map(|l| {
                let v = value(&l.summary)?;
                Some(Pt::new(l.summary.stimulus.value(), v, tip(&l.summary, v)))
            })
            .collect(),
    }
}

/// The KV-cache chart (when an engine exported its usage) and the GPU chart (when GPUs were
/// read).
pub(super) fn charts(out: &mut Vec<Markup>, levels: &[LoadedLevel], scale: XScale) {
    let kind = kind_title(levels);
    let at = |l: &LevelSummary| format!("{kind} {}", load_label(l));
    if levels.iter().any(|l| {
        l.summary
            .engine
            .as_ref()
            .is_some_and(|e| e.kv_usage.is_some())
    }) {
        let kv = |max: bool| {
            move |l: &LevelSummary| {
                let g = l.engine.as_ref()?.kv_usage?;
                Some(if max { g.max } else { g.avg } * 100.0)
            }
        };
        let tip = |what: &'static str| {
            let at = &at;
            move |l: &LevelSummary, v: f64| {
                let pre = l.engine.as_ref().and_then(|e| e.preemptions).unwrap_or(0.0);
                format!("{}: KV cache {what} {v:.0}%, {pre:.0} preemptions", at(l))
            }
        };
        let c = Chart::lines(
            "kv",
            format!("KV-cache usage vs {kind}"),
            &kind,
            "KV-cache usage (%)",
            scale,
            vec![
                series(levels, "avg", kv(false), tip("avg")),
                series(levels, "max", kv(true), tip("max")),
            ],
        );
        figure(
            out,
            svg::line_chart(&c),
            "From the engine's own gauge, sampled every 500 ms. Near 100% the engine stops admitting requests or preempts running ones (hover for the count).",
        );
    }
    if levels.iter().any(|l| l.summary.gpu.is_some()) {
        gpu_chart(out, levels, &kind, scale);
    }
}

fn gpu_chart(out: &mut Vec<Markup>, levels: &[LoadedLevel], kind: &str, scale: XScale) {
    let tip = |l: &LevelSummary, what: String| {
        let tpj = l
            .gpu
            .as_ref()
            .and_then(|g| g.output_tokens_per_joule)
            .map_or(String::new(), |t| format!(", {t:.2} output tokens/J"));
        format!("{kind} {}: {what}{tpj}", load_label(l))
    };
    let util = series(
        levels,
        "utilization avg (%)",
        |l| l.gpu.as_ref()?.utilization_avg().map(|u| u * 100.0),
        |l, v| tip(l, format!("GPU utilization {v:.0}%")),
    );
    let power = series(
        levels,
        "power, all GPUs (W ÷ 10)",
        |l| l.gpu.as_ref()?.power_avg_w().map(|w| w / 10.0),
        |l, v| tip(l, format!("{:.0} W", v * 10.0)),
    );
    let c = Chart::lines(
        "gpu",
        format!("GPUs vs {kind}"),
        kind,
        "utilization (%) · power (W ÷ 10)",
        scale,
        vec![util, power]
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .collect(),
    );
    figure(
        out,
        svg::line_chart(&c),
        "From Triton's nv_gpu_* metrics or a DCGM exporter (--gpu-metrics-url). Hover for output tokens per joule where power or energy is known.",
    );
}

/// One level's row of the engine table: its load, then the engine's and the GPUs' cells.
fn row(l: &LevelSummary) -> Option<Vec<String>> {
    let e = l.engine.as_ref();
    let g = l.gpu.as_ref();
    if e.is_none() && g.is_none() && l.server_ttft_ms().is_none() {
        return None;
    }
    let split = e.and_then(|e| e.split());
    let queue = split.map_or_else(
        || "–".to_string(),
        |s| {
            let est = matches!(
                s.queue_source,
                crate::server_metrics::split::QueueSource::WaitingGauge
            );
            format!("{:.1}{}", s.queue_ms, if est { " (est.)" } else { "" })
        },
    );
    let gauge = |v: Option<crate::server_metrics::level::GaugeStats>, pct: f64| {
        v.map_or_else(
            || "–".to_string(),
            |g| format!("{:.1} / {:.1}", g.avg * pct, g.max * pct),
        )
    };
    let cells = vec![
        load_label(l),
        e.map_or("–", |e| engine_name(e.kind)).to_string(),
        gauge(e.and_then(|e| e.waiting), 1.0),
        gauge(e.and_then(|e| e.running), 1.0),
        queue,
        cell(split.and_then(|s| s.prefill_ms), 1),
        cell(split.and_then(|s| s.decode_ms), 1),
        cell(split.map(|s| s.generation_ms), 1),
        gauge(e.and_then(|e| e.kv_usage), 100.0),
        cell(e.and_then(|e| e.preemptions), 0),
        cell(l.server_ttft_ms(), 1),
        cell(l.network_and_client_ttft_ms(), 1),
        cell(
            e.and_then(|e| e.prefix_cache)
                .and_then(|p| p.hit_rate)
                .map(|r| r * 100.0),
            1,
        ),
        cell(g.and_then(|g| g.utilization_avg()).map(|u| u * 100.0), 0),
        cell(g.and_then(|g| g.power_avg_w()), 0),
        cell(g.and_then(|g| g.output_tokens_per_joule), 2),
    ];
    Some(cells)
}

/// The engine's table, when any level has the engine's or the GPUs' view.
pub(super) fn table(levels: &[LoadedLevel]) -> Markup {
    let rows: Vec<Vec<String>> = levels.iter().filter_map(|l| row(&l.summary)).collect();
    if rows.is_empty() {
        return html! {};
    }
    html! {
        h3 { "The server's view" }
        div.tablewrap {
            table.levels.engine {
                thead {
                    tr {
                        th { (kind_title(levels)) }
                        @for h in HEADINGS {
                            th { (h) }
                        }
                    }
                }
                tbody {
                    @for r in &rows {
                        tr { @for c in r { td { (c) } } }
                    }
                }
            }
        }
        p.meta {
            "Queue marked (est.): estimated by Little's law from the engine's waiting requests (TensorRT-LLM and llama.cpp export no queue time; llama.cpp's are its deferred requests, over the requests the client finished). Network + client TTFT: client TTFT minus the server's own — with llama.cpp, per request, against the prompt time its responses carry ("
            code { "timings.prompt_ms" }
            ", from taking a slot), so the wait for a free slot is in it."
        }
    }
}

/// The engine table's headings after the load's.
const HEADINGS: [&str; 15] = [
    "Engine",
    "Waiting avg / max",
    "Running avg / max",
    "Queue (ms)",
    "Prefill (ms)",
    "Decode (ms)",
    "Generation (ms)",
    "KV cache avg / max (%)",
    "Preemptions",
    "Server TTFT (ms)",
    "Network + client TTFT (ms)",
    "Prefix-cache hits (%)",
    "GPU util (%)",
    "GPU power (W)",
    "Output tok/J",
];
