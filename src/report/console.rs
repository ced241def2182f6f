//! What a person sees on the terminal: the sweep table, GenAI-Perf's per-level metric table,
//! and error summaries. Pure functions of summaries, so their exact text is tested.

use std::fmt::Write as _;

use crate::analysis::text;
use crate::metrics::Metric;
use crate::stats::LevelSummary;

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text columns.
    Left,
    /// Number columns.
    Right,
}

/// Renders a table with a header rule, columns padded to their widest cell; columns past the
/// end of `aligns` are right-aligned.
pub fn table(headers: &[&str], aligns: &[Align], rows: &[Vec<String>]) -> String {
    let n = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = widths[i].saturating_sub(c.chars().count());
                match aligns.get(i).copied().unwrap_or(Align::Right) {
                    Align::Left => format!("{c}{}", " ".repeat(pad)),
                    Align::Right => format!("{}{c}", " ".repeat(pad)),
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// Milliseconds with two decimals; `-` for a missing value.
fn ms(v: Option<f64>) -> String {
    text::fixed_or(v, 2, "-")
}

/// The numbers of a `--repeat` run that vary most from run to run, per level: the median across
/// repetitions and the range seen, `612.10 [598.30–640.90]`; `-` where a level has no value.
/// `levels`: each level's name and its numbers across the `count` repetitions; `file`: where
/// the rest of the spread was written (none: not written).
pub fn repetitions_table(
    count: usize,
    levels: &[(String, Vec<crate::stats::repeat::MetricSpread>)],
    file: Option<&str>,
) -> String {
    use crate::metrics::MetricRef::{self, Dist, System};
    use crate::metrics::{Stat, SystemMetric};
    let cols: [(&str, MetricRef); 6] = [
        ("TTFT p50 (ms)", Dist(Metric::TimeToFirstToken, Stat::P50)),
        ("TTFT p99 (ms)", Dist(Metric::TimeToFirstToken, Stat::P99)),
        ("ITL avg (ms)", Dist(Metric::InterTokenLatency, Stat::Avg)),
        ("Latency p99 (ms)", Dist(Metric::RequestLatency, Stat::P99)),
        ("Output tok/s", System(SystemMetric::OutputTokenThroughput)),
        ("Requests/s", System(SystemMetric::RequestThroughput)),
    ];
    // Columns no level has (TTFT of a tensor model) are left out.
    let cols: Vec<(&str, MetricRef)> = cols
        .into_iter()
        .filter(|(_, m)| levels.iter().any(|(_, s)| s.iter().any(|s| s.metric == *m)))
        .collect();
    let mut headers = vec!["Level"];
    headers.extend(cols.iter().map(|(h, _)| *h));
    let rows: Vec<Vec<String>> = levels
        .iter()
        .map(|(name, spreads)| {
            let mut row = vec![name.clone()];
            row.extend(cols.iter().map(|(_, m)| {
                spreads
                    .iter()
                    .find(|s| s.metric == *m)
                    .map_or("-".to_string(), |s| {
                        let s = s.spread;
                        format!("{:.2} [{:.2}–{:.2}]", s.median, s.min, s.max)
                    })
            }));
            row
        })
        .collect();
    let more = file.map_or(String::new(), |f| format!(" (95 % intervals in {f})"));
    format!(
        "Over {count} repetitions: median [min–max]{more}\n{}",
        table(&headers, &[Align::Left], &rows)
    )
}

/// The sweep table: one row per level. Open-loop levels add TTFT p99 measured from each
/// request's intended send time (corrected for coordinated omission) beside the one from the
/// actual send, so a generator or cap that sent late shows as the gap between the two. When a
/// level saw reasoning (a reasoning model's `reasoning_content` / `reasoning` deltas), the time
/// to the first answer token (TTFO) and the reasoning tokens per request follow TTFT; when the
/// responses carried the server's own timings (llama.cpp), its prefill time and the client's
/// TTFT minus it (the transport, the HTTP layer and the wait for a slot) follow too.
/// Levels that answered embeddings or rankings (no tokens out) get their own columns
/// ([`batch_sweep_table`]); levels offered tools add the share that called one.
pub fn sweep_table(levels: &[LevelSummary]) -> String {
    use crate::metrics::{MetricRef, MetricSource, SystemMetric};
    if levels.iter().any(is_batch) {
        return batch_sweep_table(levels);
    }
    let any = |f: &dyn Fn(&LevelSummary) -> bool| levels.iter().any(f);
    let mut cols = vec![
        load_column(levels),
        ("TTFT avg (ms)", avg(Metric::TimeToFirstToken)),
        ("TTFT p99 (ms)", tail(Metric::TimeToFirstToken)),
    ];
    if any(&|l| l.stimulus.open_loop()) {
        cols.push((
            "TTFT p99 intended (ms)",
            tail(Metric::TimeToFirstTokenIntended),
        ));
    }
    if any(&|l| l.stats.get(Metric::ReasoningTokenCount).is_some()) {
        cols.push(("TTFO avg (ms)", avg(Metric::TimeToFirstOutputToken)));
        cols.push((
            "Reasoning tok avg",
            cell(|l| {
                let avg = l.shown_stat(Metric::ReasoningTokenCount).map(|s| s.avg);
                text::fixed_or(avg, 1, "-")
            }),
        ));
    }
    // Responses that carry the server's own timings (llama.cpp) split TTFT per request.
    if any(&|l| l.stats.get(Metric::ServerPrefillTime).is_some()) {
        cols.push((
            "Server prefill (ms)",
            cell(|l| ms(l.stats.get(Metric::ServerPrefillTime).map(|s| s.avg))),
        ));
        cols.push((
            "TTFT - server (ms)",
            cell(|l| ms(l.network_and_client_ttft_ms())),
        ));
    }
    // The engine's queue where it has one (TensorRT-LLM's estimated), else Triton's.
    let queue = MetricRef::System(SystemMetric::ServerQueueTime);
    cols.extend([
        ("ITL avg (ms)", avg(Metric::InterTokenLatency)),
        (
            "Output tok/s",
            cell(|l| format!("{:.1}", l.stats.output_token_throughput)),
        ),
        (
            "Req/s",
            cell(|l| format!("{:.2}", l.stats.request_throughput)),
        ),
        (
            "Server queue (ms)",
            cell(move |l| ms(MetricSource::metric(l, queue))),
        ),
        ("Errors", cell(|l| l.stats.error_count.to_string())),
    ]);
    // A column for requests cancelled on purpose only in runs that have some; likewise for
    // requests a second Ctrl-C abandoned in flight and for requests sent again after the server
    // closed their connection.
    let counts: [(&'static str, Count); 3] = [
        ("Cancelled", |l| l.stats.cancelled_count),
        ("Abandoned", |l| l.stats.abandoned_count),
        ("Reconnects", |l| l.stats.reconnect_count),
    ];
    for (header, n) in counts {
        if any(&|l| n(l) > 0) {
            cols.push((header, cell(move |l| n(l).to_string())));
        }
    }
    if any(&|l| l.stats.apis.tool_call_share.is_some()) {
        cols.push(("Tool calls", cell(|l| share(l.stats.apis.tool_call_share))));
    }
    // Scored workloads: accuracy with its interval, and the determinism check.
    if any(&|l| l.stats.accuracy.is_some()) {
        cols.push((
            "Accuracy",
            cell(|l| accuracy_cell(l.stats.accuracy.as_ref())),
        ));
        cols.push((
            "Answers changed",
            cell(|l| changed_cell(l.stats.accuracy.as_ref())),
        ));
    }
    column_table(levels, &cols)
}

/// A column of a table of levels: its header and how a level's cell reads.
type Column = (&'static str, Box<dyn Fn(&LevelSummary) -> String>);

/// A level's count of some kind of request.
type Count = fn(&LevelSummary) -> u64;

/// A column's cells.
fn cell(f: impl Fn(&LevelSummary) -> String + 'static) -> Box<dyn Fn(&LevelSummary) -> String> {
    Box::new(f)
}

/// The average of `m` in ms.
fn avg(m: Metric) -> Box<dyn Fn(&LevelSummary) -> String> {
    cell(move |l| ms(l.shown_stat(m).map(|s| s.avg)))
}

/// The p99 of `m` in ms, where the level's requests support one.
fn tail(m: Metric) -> Box<dyn Fn(&LevelSummary) -> String> {
    cell(move |l| ms(p99(l.shown_stat(m), l.stats.request_count)))
}

/// The first column: the load, marked where the level was interrupted.
fn load_column(levels: &[LevelSummary]) -> Column {
    let load = cell(|l| {
        let value = text::load_text(l.stimulus.value());
        let cut = if l.interrupted { " (interrupted)" } else { "" };
        format!("{value}{cut}")
    });
    (kind_title(levels), load)
}

/// A table of `levels` by `columns`, every column right-aligned.
fn column_table(levels: &[LevelSummary], columns: &[Column]) -> String {
    let headers: Vec<&str> = columns.iter().map(|c| c.0).collect();
    let row = |l| columns.iter().map(|c| c.1(l)).collect();
    let rows: Vec<Vec<String>> = levels.iter().map(row).collect();
    table(&headers, &[], &rows)
}

/// Whether a level answered embeddings or rankings: inputs counted, no tokens out.
pub fn is_batch(l: &LevelSummary) -> bool {
    l.stats.apis.input_throughput.is_some()
}

/// The first column's title: what the levels vary.
fn kind_title(levels: &[LevelSummary]) -> &'static str {
    match levels.first().map_or("level", |l| l.stimulus.kind()) {
        "concurrency" => "Concurrency",
        "request_rate" => "Request rate",
        "fixed_schedule" => "Fixed schedule (speed-up)",
        _ => "Level",
    }
}

/// The p99 of `s` when `n` requests support it (see [`crate::metrics::supports_percentile`]):
/// with fewer it is the slowest request, not a tail, and the tables show `-`.
fn p99(s: Option<&crate::metrics::Stats>, n: u64) -> Option<f64> {
    s.filter(|_| crate::metrics::supports_percentile(n, 99))
        .map(|s| s.p99)
}

/// A scored level in one line: its accuracy with the interval, the answers graded, and the
/// prompts whose output changed from their first (`None` for other levels).
pub fn accuracy_line(l: &LevelSummary) -> Option<String> {
    let a = l.stats.accuracy.as_ref()?;
    let unparsed = match a.unparsed {
        0 => String::new(),
        n => format!(", {n} without an answer in the expected form"),
    };
    let changed = a.changed.as_ref().map_or(String::new(), |c| {
        format!(
            "; {} of {} prompts changed from their first output",
            c.changed, c.compared
        )
    });
    Some(format!(
        "accuracy {} of {} answers at {:.0}% confidence{unparsed}{changed}",
        accuracy_cell(Some(a)),
        a.graded,
        a.confidence * 100.0
    ))
}

/// A level's whole sessions in one line: how many completed, failed or were cut short, the
/// time to task completion of the completed ones, their requests and tool round trips (`None`
/// for a level without sessions).
pub fn session_line(l: &LevelSummary) -> Option<String> {
    let s = l.stats.sessions.as_ref()?;
    let mut others = Vec::new();
    if s.failed > 0 {
        others.push(format!("{} failed", s.failed));
    }
    if s.cut_short > 0 {
        others.push(format!("{} cut short by the level's end", s.cut_short));
    }
    let others = if others.is_empty() {
        String::new()
    } else {
        format!(" ({})", others.join(", "))
    };
    let Some(c) = &s.completion else {
        return Some(format!("sessions: none completed{others}"));
    };
    let tools = if s.tool_round_trips_avg > 0.0 {
        format!(", {:.1} tool round trips", s.tool_round_trips_avg)
    } else {
        String::new()
    };
    Some(format!(
        "sessions: {} completed{others}; task completion p50 {:.0} p90 {:.0} max {:.0} ms, \
         {:.1} requests{tools} each",
        s.completed, c.p50, c.p90, c.max, s.turns_avg
    ))
}

/// A level's accuracy with its interval (`71.0% [62.4–78.3]`), or `-`.
pub fn accuracy_cell(a: Option<&crate::stats::scored::AccuracyStats>) -> String {
    a.map_or_else(
        || "-".to_string(),
        |a| text::interval(a.accuracy, a.low, a.high),
    )
}

/// A level's share of prompts whose output changed from their reference, with its interval;
/// `-` where nothing was compared (the reference level, or outputs not compared).
pub fn changed_cell(a: Option<&crate::stats::scored::AccuracyStats>) -> String {
    a.and_then(|a| a.changed.as_ref()).map_or_else(
        || "-".to_string(),
        |c| text::interval(c.share, c.low, c.high),
    )
}

/// A share as a percentage, or `-`.
fn share(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{:.1}%", v * 100.0))
}

/// The sweep table of embeddings and rankings levels: nothing streams and no token comes
/// back, so request latency, inputs (texts, passages) and input tokens per second say what
/// the server did.
fn batch_sweep_table(levels: &[LevelSummary]) -> String {
    use text::fixed_or;
    let cols = [
        load_column(levels),
        ("Latency avg (ms)", avg(Metric::RequestLatency)),
        ("Latency p99 (ms)", tail(Metric::RequestLatency)),
        (
            "Inputs/s",
            cell(|l| fixed_or(l.stats.apis.input_throughput, 2, "-")),
        ),
        (
            "Input tok/s",
            cell(|l| fixed_or(l.stats.apis.input_token_throughput, 1, "-")),
        ),
        (
            "Req/s",
            cell(|l| format!("{:.2}", l.stats.request_throughput)),
        ),
        ("Errors", cell(|l| l.stats.error_count.to_string())),
    ];
    column_table(levels, &cols)
}

/// The engine's and the GPUs' view of a level in three lines at most (`-v`); empty when
/// neither was read.
pub fn engine_lines(l: &LevelSummary) -> String {
    use crate::server_metrics::split::{QueueSource, engine_name};
    let mut out = String::new();
    let one = |v: Option<f64>| text::fixed_or(v, 1, "-");
    if let Some(e) = &l.engine {
        let mut parts = Vec::new();
        if let Some(w) = e.waiting {
            parts.push(format!("waiting {:.1} avg / {:.0} max", w.avg, w.max));
        }
        if let Some(r) = e.running {
            let of = e.slots.map_or(String::new(), |n| format!(" of {n} slots"));
            parts.push(format!("running {:.1} avg / {:.0} max{of}", r.avg, r.max));
        }
        if let Some(s) = e.split() {
            let est = if s.queue_source == QueueSource::WaitingGauge {
                " (estimated)"
            } else {
                ""
            };
            parts.push(format!("queue {:.1} ms{est}", s.queue_ms));
            match (s.prefill_ms, s.decode_ms) {
                (Some(p), Some(d)) => {
                    parts.push(format!("prefill {p:.1} ms, decode {d:.1} ms"));
                }
                _ => parts.push(format!("generation {:.1} ms", s.generation_ms)),
            }
        }
        if parts.is_empty() {
            parts.push("no gauges or times exported".to_string());
        }
        let _ = writeln!(out, "  {}: {}", engine_name(e.kind), parts.join(", "));
        let mut more = Vec::new();
        if let Some(k) = e.kv_usage {
            more.push(format!(
                "KV cache {:.0}% avg / {:.0}% max",
                k.avg * 100.0,
                k.max * 100.0
            ));
        }
        if let Some(p) = e.preemptions {
            more.push(format!("{p:.0} preemptions"));
        }
        if let Some(t) = l.server_ttft_ms() {
            more.push(format!(
                "server TTFT {t:.1} ms (network + client {} ms)",
                one(l.network_and_client_ttft_ms())
            ));
        }
        if let Some(p) = e.prefix_cache {
            more.push(match p.hit_rate {
                Some(r) => format!("prefix cache {:.1}% hits", r * 100.0),
                // TensorRT-LLM counts reused KV blocks but not the blocks looked up.
                None => format!(
                    "prefix cache {:.0} {} reused (no hit rate exported)",
                    p.hits,
                    match p.unit {
                        crate::server_metrics::engines::CacheUnit::Tokens => "tokens",
                        crate::server_metrics::engines::CacheUnit::Blocks => "KV blocks",
                    }
                ),
            });
        }
        if let Some(sd) = e.spec_decode.filter(|s| s.draft_tokens > 0.0) {
            more.push(format!(
                "speculative decoding {} of {:.0} draft tokens accepted",
                sd.acceptance_rate
                    .map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0)),
                sd.draft_tokens
            ));
        }
        if !more.is_empty() {
            out.push_str(&format!("  {}\n", more.join(", ")));
        }
    } else if let Some(t) = l.server_ttft_ms() {
        // Timings in the responses without the engine's page.
        out.push_str(&format!(
            "  server TTFT {t:.1} ms (from the responses' timings; client minus server {} ms)\n",
            one(l.network_and_client_ttft_ms())
        ));
    }
    if let Some(g) = &l.gpu {
        let pct = |v: Option<f64>| text::fixed_or(v.map(|v| v * 100.0), 0, "-");
        out.push_str(&format!(
            "  GPUs ({}): utilization {}% avg / {}% max, {} W, {} output tokens/J\n",
            g.gpus.len(),
            pct(g.utilization_avg()),
            pct(g.utilization_max()),
            text::fixed_or(g.power_avg_w(), 0, "-"),
            text::fixed_or(g.output_tokens_per_joule, 2, "-"),
        ));
    }
    out
}

/// GenAI-Perf's console table for one level (avg, min, max, p99, p90, p75) and its system metrics.
pub fn level_table(l: &LevelSummary) -> String {
    let headers = ["Statistic", "avg", "min", "max", "p99", "p90", "p75"];
    let rows: Vec<Vec<String>> = l
        .shown_metrics()
        .map(|(m, s)| {
            let f = |v: f64| format!("{v:.2}");
            let tail = |v: f64, q: u32| {
                if crate::metrics::supports_percentile(l.stats.request_count, q) {
                    f(v)
                } else {
                    "-".to_string()
                }
            };
            vec![
                m.label().to_string(),
                f(s.avg),
                f(s.min),
                f(s.max),
                tail(s.p99, 99),
                tail(s.p90, 90),
                f(s.p75),
            ]
        })
        .collect();
    let mut out = format!("LLM metrics, {}\n", l.stimulus.name());
    out.push_str(&table(&headers, &[Align::Left], &rows));
    let st = &l.stats;
    let (tokens, requests) = (st.output_token_throughput, st.request_throughput);
    let _ = writeln!(out, "Output token throughput (tokens/sec): {tokens:.2}");
    let _ = writeln!(out, "Request throughput (per sec): {requests:.2}");
    if let Some(g) = st.request_goodput {
        let _ = writeln!(out, "Request goodput (per sec): {g:.2}");
    }
    out.push_str(&api_lines(&st.apis));
    let (n, errors) = (st.request_count, st.error_count);
    let _ = write!(out, "Request count: {n}  Errors: {errors}");
    // Cancelled on purpose (`--request-cancellation-rate`): neither requests nor errors.
    let out_of_stats = "left out of the statistics";
    let abandoned = format!("in flight at the second Ctrl-C; {out_of_stats}");
    for (what, n, why) in [
        ("Cancelled", st.cancelled_count, out_of_stats),
        ("Abandoned", st.abandoned_count, abandoned.as_str()),
        (
            "Reconnects",
            st.reconnect_count,
            "sent again on a fresh connection",
        ),
    ] {
        if n > 0 {
            out.push_str(&format!("  {what}: {n} ({why})"));
        }
    }
    out.push('\n');
    if let Some(d) = &l.server {
        out.push_str(&format!(
            "Server ({}): {}, avg {:.2} ms = queue {} + compute input {:.2} + infer {:.2} + output {:.2} ms\n",
            d.source,
            text::count(d.requests, "request"),
            d.avg_request_ms,
            d.avg_queue_ms.map_or_else(|| "n/a".to_string(), |q| format!("{q:.2}")),
            d.avg_compute_input_ms,
            d.avg_compute_infer_ms,
            d.avg_compute_output_ms
        ));
    }
    out
}

/// The newer APIs' level numbers, a line each for those the level has: inputs answered
/// (embeddings, rankings), images sent, tools called.
fn api_lines(a: &crate::stats::apis::ApiStats) -> String {
    let mut out = String::new();
    if let (Some(i), Some(t)) = (a.input_throughput, a.input_token_throughput) {
        out.push_str(&format!(
            "Input throughput (inputs/sec): {i:.2}  Input token throughput (tokens/sec): {t:.2}\n"
        ));
    }
    if let (Some(n), Some(b)) = (a.image_count, a.image_bytes) {
        out.push_str(&format!("Images sent: {n} ({b} bytes)\n"));
    }
    if let Some(c) = a.tool_call_share {
        out.push_str(&format!(
            "Requests offered tools that called one: {}  with arguments that parse as JSON: {}\n",
            share(Some(c)),
            share(a.tool_args_valid_share)
        ));
    }
    out
}

/// TTFT by session turn (multi-turn sessions): requests, average input length, TTFT avg, p50
/// and p99, and TTFT per 1,000 input tokens (a prefix cache that holds the history keeps it
/// falling as turns grow); `None` without sessions. Without streaming the TTFT columns are
/// `-`.
pub fn turn_table(l: &LevelSummary) -> Option<String> {
    if l.stats.turns.is_empty() {
        return None;
    }
    // The server's own prefix-cache hits by turn, when it reports them per request: how much
    // of each turn's history it found cached from the turns before.
    let cached = l.stats.turns.iter().any(|t| t.cached_avg.is_some());
    let rows: Vec<Vec<String>> = l
        .stats
        .turns
        .iter()
        .map(|t| {
            let s = t.ttft.as_ref().filter(|_| l.streaming);
            let per_k = s
                .filter(|_| t.isl_avg > 0.0)
                .map(|s| s.avg * 1000.0 / t.isl_avg);
            let mut row = vec![t.label(), t.count.to_string(), format!("{:.1}", t.isl_avg)];
            if cached {
                row.push(t.cached_avg.map_or("-".into(), |c| format!("{c:.1}")));
            }
            row.extend([s.map(|s| s.avg), s.map(|s| s.p50), p99(s, t.count), per_k].map(ms));
            row
        })
        .collect();
    let mut headers = vec!["Turn", "Requests", "ISL avg"];
    if cached {
        headers.push("Cached avg");
    }
    headers.extend(["TTFT avg", "p50", "p99", "TTFT per 1k ISL"]);
    Some(format!(
        "TTFT (ms) by session turn, {}\n{}",
        l.stimulus.name(),
        table(&headers, &[Align::Left], &rows)
    ))
}

/// TTFT (or, without streaming, request latency) by input-length bucket (`--isl-buckets`):
/// a title line and a table; `None` when the level was not split.
pub fn isl_table(l: &LevelSummary) -> Option<String> {
    if l.stats.isl_buckets.is_empty() {
        return None;
    }
    let (name, pick): (
        &str,
        fn(&crate::stats::isl::IslBucket) -> Option<&crate::metrics::Stats>,
    ) = if l.streaming {
        ("TTFT", |b| b.ttft.as_ref())
    } else {
        ("Request latency", |b| b.latency.as_ref())
    };
    let rows: Vec<Vec<String>> = l
        .stats
        .isl_buckets
        .iter()
        .map(|b| {
            let s = pick(b);
            let mut row = vec![b.label(), b.count.to_string()];
            row.extend(
                [
                    s.map(|s| s.avg),
                    s.map(|s| s.p50),
                    s.filter(|_| crate::metrics::supports_percentile(b.count, 90))
                        .map(|s| s.p90),
                    p99(s, b.count),
                ]
                .map(ms),
            );
            row
        })
        .collect();
    let headers = ["Input tokens", "Requests", "avg", "p50", "p90", "p99"];
    Some(format!(
        "{name} (ms) by input length, {}\n{}",
        l.stimulus.name(),
        table(&headers, &[Align::Left], &rows)
    ))
}

/// Why TTFT and ITL show "-" when the levels did not stream, and how to get them; `None` when
/// every level streamed.
pub fn not_streaming_note(levels: &[LevelSummary]) -> Option<&'static str> {
    // Embeddings and rankings answers never stream: nothing to add for them.
    levels
        .iter()
        .any(|l| !l.streaming && !is_batch(l))
        .then_some(
        "TTFT and ITL are \"-\": the responses came whole, so there is no first token (or gap between tokens) to time, only the request's latency. They are measured where the target streams and --no-streaming is not given (a decoupled Triton model, or an OpenAI-style endpoint).",
    )
}

/// One line per error kind with its first message and a hint, for a level with failures.
pub fn error_lines(l: &LevelSummary) -> String {
    let mut out = String::new();
    for e in &l.stats.errors {
        out.push_str(&format!("  {} × {}: {}\n", e.count, e.kind, e.example));
        if let Some(h) = &e.hint {
            out.push_str(&format!("    hint: {h}\n"));
        }
    }
    out
}

/// How the server's token counts compare with the client's (`-v`), when the server reported
/// counts: output tokens against the tokenizer's, input tokens against what the client counted
/// before sending (statistics use the client's unless `--use-server-token-count`), with what to
/// do when the input counts differ.
pub fn token_count_line(l: &LevelSummary) -> Option<String> {
    let st = &l.stats;
    let mut parts = Vec::new();
    if let Some(share) = st.osl_mismatch_share() {
        parts.push(format!(
            "output tokens: the server's count differs from the tokenizer's on {} of {} ({:.1}%)",
            st.osl_mismatch,
            text::count(st.osl_compared, "request"),
            share * 100.0
        ));
    }
    if let Some(share) = st.isl_mismatch_share() {
        let hint = if st.isl_mismatch > 0 {
            " — count with the server's own tokenizer: --tokenizer-from-server (vLLM's /tokenize), or --tokenizer with the model's tokenizer.json"
        } else {
            ""
        };
        parts.push(format!(
            "input tokens: the server's count differs from the client's on {} of {} ({:.1}%){hint}",
            st.isl_mismatch,
            text::count(st.isl_compared, "request"),
            share * 100.0
        ));
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// `NOT TRUSTWORTHY <level>: <reason>` for every reason of every untrustworthy level, as both
/// `profile` and `perf` print them under their tables.
pub fn untrusted_lines<'a>(
    levels: impl IntoIterator<Item = (String, &'a crate::metrics::Validity)>,
) -> Vec<String> {
    levels
        .into_iter()
        .filter(|(_, v)| !v.trustworthy)
        .flat_map(|(name, v)| {
            v.reasons
                .iter()
                .map(move |r| format!("NOT TRUSTWORTHY {name}: {r}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// One line for a run some of whose levels measured too few successful requests for the p99
/// the tables show (they show `-` there): which levels, how many each, and the flag that
/// measures more. `None` when every level supports it, or when a fixed count too small for it
/// was said before the run (`plan::resolve::short_count_notice`).
pub fn thin_tail_line(
    levels: &[LevelSummary],
    stop: &crate::load::LevelLengthRule,
) -> Option<String> {
    use crate::load::{LevelLength, LevelLengthRule};
    use crate::metrics::{fewest_for_percentile, supports_percentile};
    if let LevelLengthRule::Fixed(LevelLength::Requests(n)) = stop
        && !supports_percentile(*n, 99)
    {
        return None;
    }
    let thin: Vec<String> = levels
        .iter()
        .filter(|l| !is_batch(l) && !supports_percentile(l.stats.request_count, 99))
        .map(|l| format!("{} {}", l.stimulus.name(), l.stats.request_count))
        .collect();
    if thin.is_empty() {
        return None;
    }
    let n = fewest_for_percentile(99);
    let default = match stop {
        crate::load::LevelLengthRule::Auto => format!(
            " (a level measures {n} requests or {} s by default, whichever comes first)",
            crate::load::DEFAULT_LEVEL_TIME.as_secs()
        ),
        crate::load::LevelLengthRule::Fixed(_) => String::new(),
    };
    Some(format!(
        "p99 is '-' where a level measured fewer than {n} successful requests: {}{default}; --request-count {n} measures it at every level",
        thin.join(", ")
    ))
}

/// A level's drift over its timeline intervals (a soak): a header, then one line per metric;
/// empty when the level had too few intervals for a verdict.
pub fn drift_lines(l: &LevelSummary) -> Vec<String> {
    let Some(d) = &l.drift else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "drift over {} (Theil–Sen slope per hour, {:.0} % interval):",
        text::duration(d.span_s),
        d.confidence * 100.0
    )];
    out.extend(d.metrics.iter().map(|m| format!("  {}", m.line())));
    out
}

/// A search's result: every probe (load, requests its decision was made on, verdict, why it
/// stopped, each objective's estimate and interval), the answer with its confidence, what it
/// measured there, and the requests spent against the equivalent ladder.
pub fn search_text(d: &crate::artifact::search::SearchDoc) -> String {
    let load_head = if d.over == "concurrency" {
        "Concurrency"
    } else {
        "Req/s"
    };
    let mut headers = vec![
        "Probe", load_head, "Requests", "Verdict", "Proof", "Stopped",
    ];
    headers.extend(d.objectives.iter().map(String::as_str));
    use Align::{Left, Right};
    let mut aligns = vec![Right, Right, Right, Left, Left, Left];
    aligns.extend(d.objectives.iter().map(|_| Left));
    let rows: Vec<Vec<String>> = d
        .probes
        .iter()
        .map(|p| {
            let mut row = vec![
                p.index.to_string(),
                text::load_text(p.load),
                p.measured.to_string(),
                p.verdict.word().to_string(),
                <&str>::from(p.proof).to_string(),
                <&str>::from(p.stopped).to_string(),
            ];
            row.extend(d.objectives.iter().map(|o| {
                p.objectives
                    .iter()
                    .find(|x| &x.objective == o)
                    .map_or("-".into(), |o| o.shown(true))
            }));
            row
        })
        .collect();
    let mut out = table(&headers, &aligns, &rows);
    out.push_str(&format!("answer: {}\n", d.statement));
    out.push_str(&proof_line(d).unwrap_or_default());
    if let Some(a) = &d.answer {
        let mut parts = vec![
            format!("{:.2} requests/s", a.request_throughput),
            format!("{:.1} output tokens/s", a.output_token_throughput),
        ];
        if let Some(g) = a.request_goodput {
            parts.push(format!("goodput {g:.2} requests/s"));
        }
        if let Some(u) = a.output_token_throughput_per_user {
            parts.push(format!("{u:.1} output tokens/s per user"));
        }
        out.push_str(&format!("at {}: {}\n", a.level, parts.join(", ")));
    }
    let l = &d.ladder;
    let span = match (l.loads.first(), l.loads.last()) {
        (Some(a), Some(b)) if l.loads.len() > 1 => format!(
            " ({} to {})",
            text::load_text(*a),
            text::load_text((b * 1000.0).round() / 1000.0)
        ),
        _ => String::new(),
    };
    out.push_str(&format!(
        "requests spent: {} (warm-up included) in {}, {:.0}% of the {} a ladder of {}{span} at {} requests per level sends\n",
        d.requests_spent,
        text::duration(d.elapsed_s),
        l.share_spent * 100.0,
        l.requests,
        text::count(l.loads.len() as u64, "level"),
        l.requests_per_level
    ));
    out
}

/// `proven: concurrency 8 meets (probe 4), concurrency 9 fails (probe 7); covered by
/// monotonicity: ...`: the verdicts the answer rests on, and what they cover.
fn proof_line(d: &crate::artifact::search::SearchDoc) -> Option<String> {
    use crate::artifact::search::ProbeVerdict;
    let what = d.over.replace('_', " ");
    let m = &d.monotonicity;
    let find = |load: f64, v: ProbeVerdict| {
        d.probes
            .iter()
            .find(|p| p.load == load && p.verdict == v)
            .map(|p| {
                format!(
                    "{what} {} {} (probe {})",
                    text::load_text(load),
                    v.word(),
                    p.index
                )
            })
    };
    let proven: Vec<String> = [
        m.meets_up_to.and_then(|a| find(a, ProbeVerdict::Meets)),
        m.fails_from.and_then(|f| find(f, ProbeVerdict::Fails)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if proven.is_empty() {
        return None;
    }
    let mut covered = Vec::new();
    if let Some(a) = m.meets_up_to.filter(|&a| a > d.min) {
        covered.push(format!("every {what} below {} meets", text::load_text(a)));
    }
    if let Some(f) = m.fails_from.filter(|&f| d.max.is_none_or(|max| f < max)) {
        covered.push(format!("every one above {} fails", text::load_text(f)));
    }
    let covered = if covered.is_empty() {
        String::new()
    } else {
        format!("; covered by monotonicity: {}", covered.join(", "))
    };
    Some(format!("proven: {}{covered}\n", proven.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::metrics::Stats;
    use crate::stats::{ErrorCount, LevelStats};

    fn level(c: u32, ttft: f64, errors: u64) -> LevelSummary {
        let s = |avg: f64| Stats {
            count: 3,
            avg,
            min: avg / 2.0,
            max: avg * 3.0,
            p75: avg,
            p90: avg * 2.0,
            p99: avg * 2.5,
            ..Stats::default()
        };
        LevelSummary::new(
            Stimulus::Concurrency(c),
            LevelStats {
                metrics: vec![
                    (Metric::TimeToFirstToken, s(ttft)),
                    (Metric::InterTokenLatency, s(4.0)),
                ],
                request_count: 100,
                error_count: errors,
                errors: if errors > 0 {
                    vec![ErrorCount {
                        kind: "http_401".into(),
                        count: errors,
                        example: "HTTP 401".into(),
                        hint: Some("add --api-key".into()),
                    }]
                } else {
                    vec![]
                },
                duration_s: 1.0,
                output_token_throughput: 1234.56,
                request_throughput: 12.3456,
                ..Default::default()
            },
        )
    }

    #[test]
    fn session_line_exact() {
        use crate::stats::sessions::SessionStats;
        let mut l = level(4, 10.0, 0);
        assert_eq!(session_line(&l), None, "no sessions, no line");
        let completion = Stats {
            count: 3,
            p50: 812.4,
            p90: 1504.6,
            max: 1720.0,
            ..Stats::default()
        };
        l.stats.sessions = Some(SessionStats {
            completed: 3,
            failed: 1,
            cut_short: 2,
            completion: Some(completion),
            turns_avg: 7.0,
            tool_round_trips_avg: 1.0,
        });
        assert_eq!(
            session_line(&l).unwrap(),
            "sessions: 3 completed (1 failed, 2 cut short by the level's end); task completion \
             p50 812 p90 1505 max 1720 ms, 7.0 requests, 1.0 tool round trips each"
        );
        l.stats.sessions = Some(SessionStats {
            completed: 40,
            completion: Some(completion),
            turns_avg: 5.125,
            ..SessionStats::default()
        });
        assert_eq!(
            session_line(&l).unwrap(),
            "sessions: 40 completed; task completion p50 812 p90 1505 max 1720 ms, 5.1 requests each"
        );
        l.stats.sessions = Some(SessionStats {
            failed: 2,
            ..SessionStats::default()
        });
        assert_eq!(
            session_line(&l).unwrap(),
            "sessions: none completed (2 failed)"
        );
    }

    #[test]
    fn search_text_exact() {
        let text = search_text(&crate::artifact::search::example());
        let expected = "\
Probe  Concurrency  Requests  Verdict  Proof   Stopped  time_to_first_token.p75<=25ms
-----  -----------  --------  -------  ------  -------  -----------------------------
    1            9        20  fails    proven  settled  95.39 [81.36, open] ms
    2            8        25  meets    proven  settled  23.24 [14.81, 23.85] ms
answer: concurrency 8 meets time_to_first_token.p75<=25ms; concurrency 9 does not (fails): the highest concurrency meeting them is 8, at 95 % confidence
proven: concurrency 8 meets (probe 2), concurrency 9 fails (probe 1)
at concurrency8: 25.52 requests/s, 962.7 output tokens/s, goodput 25.52 requests/s, 140.5 output tokens/s per user
requests spent: 65 (warm-up included) in 3 s, 16% of the 400 a ladder of 2 levels (8 to 9) at 200 requests per level sends
";
        assert_eq!(text, expected);
    }

    #[test]
    fn too_few_requests_show_no_tail_and_one_line_says_so() {
        use crate::load::{LevelLength, LevelLengthRule};
        let mut thin = level(1, 60.0, 0);
        thin.stats.request_count = 22;
        let levels = [thin.clone(), level(8, 300.0, 0)];
        let table = sweep_table(&levels);
        assert!(
            table.contains("          1          60.00              -"),
            "{table}"
        );
        assert!(
            table.contains("          8         300.00         750.00"),
            "{table}"
        );
        assert_eq!(
            thin_tail_line(&levels, &LevelLengthRule::Auto).unwrap(),
            "p99 is '-' where a level measured fewer than 100 successful requests: concurrency1 22 (a level measures 100 requests or 25 s by default, whichever comes first); --request-count 100 measures it at every level"
        );
        // A count too small was said before the run: not again after it.
        let short = LevelLengthRule::Fixed(LevelLength::Requests(22));
        assert_eq!(thin_tail_line(&levels, &short), None);
        let window =
            LevelLengthRule::Fixed(LevelLength::Window(std::time::Duration::from_secs(10)));
        assert!(
            thin_tail_line(&levels, &window)
                .unwrap()
                .ends_with("concurrency1 22; --request-count 100 measures it at every level")
        );
        assert_eq!(thin_tail_line(&levels[1..], &LevelLengthRule::Auto), None);
        let mut lt = thin;
        lt.stats.request_count = 9;
        let t = level_table(&lt);
        assert!(
            t.contains("Time To First Token (ms)  60.00  30.00  180.00    -    -  60.00"),
            "{t}"
        );
    }

    #[test]
    fn drift_lines_exact() {
        use crate::stats::trend::{Drift, DriftLine, DriftMetric};
        let mut l = level(4, 45.0, 0);
        assert!(drift_lines(&l).is_empty());
        l.drift = Some(Drift {
            span_s: 5400.0,
            confidence: 0.95,
            metrics: vec![DriftLine {
                metric: DriftMetric::LatencyP99,
                points: 90,
                median: 400.0,
                per_hour: 30.0,
                lower_per_hour: 21.5,
                upper_per_hour: 38.25,
                relative_per_hour: 0.075,
                drifts: true,
            }],
        });
        assert_eq!(
            drift_lines(&l),
            [
                "drift over 90.0 min (Theil–Sen slope per hour, 95 % interval):",
                "  latency p99 +30.00 ms/h [+21.50, +38.25] (+7.5 %/h): drifts"
            ]
        );
    }

    #[test]
    fn sweep_table_exact() {
        let text = sweep_table(&[level(1, 45.0, 0), level(32, 240.5, 2)]);
        let expected = "\
Concurrency  TTFT avg (ms)  TTFT p99 (ms)  ITL avg (ms)  Output tok/s  Req/s  Server queue (ms)  Errors
-----------  -------------  -------------  ------------  ------------  -----  -----------------  ------
          1          45.00         112.50          4.00        1234.6  12.35                  -       0
         32         240.50         601.25          4.00        1234.6  12.35                  -       2
";
        assert_eq!(text, expected);
    }

    /// A level that saw reasoning adds TTFO and reasoning tokens after TTFT; a level without
    /// (another run mixed in) shows "-" there.
    #[test]
    fn reasoning_sweep_table_shows_ttfo_and_reasoning_tokens() {
        let mut thinking = level(1, 45.0, 0);
        let st = |avg: f64| Stats {
            count: 3,
            avg,
            ..Stats::default()
        };
        thinking
            .stats
            .metrics
            .push((Metric::TimeToFirstOutputToken, st(180.25)));
        thinking
            .stats
            .metrics
            .push((Metric::ReasoningTokenCount, st(16.0)));
        let text = sweep_table(&[thinking, level(2, 50.0, 0)]);
        let expected = "\
Concurrency  TTFT avg (ms)  TTFT p99 (ms)  TTFO avg (ms)  Reasoning tok avg  ITL avg (ms)  Output tok/s  Req/s  Server queue (ms)  Errors
-----------  -------------  -------------  -------------  -----------------  ------------  ------------  -----  -----------------  ------
          1          45.00         112.50         180.25               16.0          4.00        1234.6  12.35                  -       0
          2          50.00         125.00              -                  -          4.00        1234.6  12.35                  -       0
";
        assert_eq!(text, expected);
    }

    #[test]
    fn open_loop_sweep_table_shows_ttft_from_intended() {
        let rate = |r: f64, ttft: f64, intended: f64| {
            let mut l = level(1, ttft, 0);
            l.stimulus = Stimulus::RequestRate {
                rate: r,
                arrival: crate::load::Arrival::Poisson,
                max_inflight: 1024,
            };
            l.stats.metrics.push((
                Metric::TimeToFirstTokenIntended,
                Stats {
                    p99: intended,
                    ..Stats::default()
                },
            ));
            l
        };
        let text = sweep_table(&[rate(5.0, 20.0, 50.5), rate(7.5, 30.0, 1500.0)]);
        let expected = "\
Request rate  TTFT avg (ms)  TTFT p99 (ms)  TTFT p99 intended (ms)  ITL avg (ms)  Output tok/s  Req/s  Server queue (ms)  Errors
------------  -------------  -------------  ----------------------  ------------  ------------  -----  -----------------  ------
           5          20.00          50.00                   50.50          4.00        1234.6  12.35                  -       0
         7.5          30.00          75.00                 1500.00          4.00        1234.6  12.35                  -       0
";
        assert_eq!(text, expected);
    }

    #[test]
    fn level_table_exact() {
        let text = level_table(&level(8, 10.0, 0));
        let expected = "\
LLM metrics, concurrency8
Statistic                   avg   min    max    p99    p90    p75
------------------------  -----  ----  -----  -----  -----  -----
Time To First Token (ms)  10.00  5.00  30.00  25.00  20.00  10.00
Inter Token Latency (ms)   4.00  2.00  12.00  10.00   8.00   4.00
Output token throughput (tokens/sec): 1234.56
Request throughput (per sec): 12.35
Request count: 100  Errors: 0
";
        assert_eq!(text, expected);
    }

    #[test]
    fn isl_table_exact() {
        use crate::stats::isl::IslBucket;
        let mut l = level(2, 10.0, 0);
        assert_eq!(isl_table(&l), None, "not asked for");
        let st = |avg: f64| Stats {
            avg,
            p50: avg,
            p90: avg * 1.5,
            p99: avg * 2.0,
            ..Stats::default()
        };
        let bucket = |min_isl, max_isl, count, ttft: Option<f64>| IslBucket {
            min_isl,
            max_isl,
            count,
            ttft: ttft.map(st),
            latency: ttft.map(|t| st(t + 40.0)),
        };
        l.stats.isl_buckets = vec![
            // 12 requests support a p90, not a p99; 150 both.
            bucket(0, Some(128), 12, Some(12.5)),
            bucket(128, Some(512), 0, None),
            bucket(512, None, 150, Some(80.0)),
        ];
        let expected = "\
TTFT (ms) by input length, concurrency2
Input tokens  Requests    avg    p50     p90     p99
------------  --------  -----  -----  ------  ------
<128                12  12.50  12.50   18.75       -
128-511              0      -      -       -       -
>=512              150  80.00  80.00  120.00  160.00
";
        assert_eq!(isl_table(&l).unwrap(), expected);
        l.streaming = false;
        assert!(
            isl_table(&l)
                .unwrap()
                .contains("Request latency (ms) by input length")
        );
        assert!(
            isl_table(&l)
                .unwrap()
                .contains(">=512              150  120.00")
        );
    }

    #[test]
    fn turn_table_exact() {
        use crate::stats::turns::TurnStats;
        let mut l = level(2, 10.0, 0);
        assert_eq!(turn_table(&l), None, "no sessions");
        let st = |avg: f64| Stats {
            avg,
            p50: avg,
            p99: avg * 2.0,
            ..Stats::default()
        };
        let turn = |turn, count, isl_avg, ttft: Option<f64>| TurnStats {
            turn,
            and_later: turn == 15,
            count,
            ttft: ttft.map(st),
            isl_avg,
            cached_avg: None,
        };
        l.stats.turns = vec![
            // 2 requests support no p99.
            turn(0, 120, 100.0, Some(20.0)),
            turn(1, 0, 0.0, None),
            turn(15, 2, 4000.0, Some(40.0)),
        ];
        let expected = "\
TTFT (ms) by session turn, concurrency2
Turn  Requests  ISL avg  TTFT avg    p50    p99  TTFT per 1k ISL
----  --------  -------  --------  -----  -----  ---------------
0          120    100.0     20.00  20.00  40.00           200.00
1            0      0.0         -      -      -                -
>=15         2   4000.0     40.00  40.00      -            10.00
";
        assert_eq!(turn_table(&l).unwrap(), expected);
        // A server that reports its prefix-cache hits per request gets their column.
        l.stats.turns[2].cached_avg = Some(3968.0);
        let expected = "\
TTFT (ms) by session turn, concurrency2
Turn  Requests  ISL avg  Cached avg  TTFT avg    p50    p99  TTFT per 1k ISL
----  --------  -------  ----------  --------  -----  -----  ---------------
0          120    100.0           -     20.00  20.00  40.00           200.00
1            0      0.0           -         -      -      -                -
>=15         2   4000.0      3968.0     40.00  40.00      -            10.00
";
        assert_eq!(turn_table(&l).unwrap(), expected);
        l.stats.turns[2].cached_avg = None;
        l.streaming = false;
        assert!(
            turn_table(&l)
                .unwrap()
                .contains("0          120    100.0         -")
        );
    }

    #[test]
    fn token_count_line_exact() {
        let mut l = level(1, 10.0, 0);
        assert_eq!(token_count_line(&l), None);
        l.stats.osl_compared = 40;
        l.stats.osl_mismatch = 3;
        assert_eq!(
            token_count_line(&l).unwrap(),
            "output tokens: the server's count differs from the tokenizer's on 3 of 40 requests (7.5%)"
        );
        l.stats.isl_compared = 40;
        l.stats.isl_mismatch = 40;
        assert_eq!(
            token_count_line(&l).unwrap(),
            "output tokens: the server's count differs from the tokenizer's on 3 of 40 requests (7.5%)
input tokens: the server's count differs from the client's on 40 of 40 requests (100.0%) — count with the server's own tokenizer: --tokenizer-from-server (vLLM's /tokenize), or --tokenizer with the model's tokenizer.json"
        );
        l.stats.isl_mismatch = 0;
        assert!(token_count_line(&l).unwrap().ends_with(
            "input tokens: the server's count differs from the client's on 0 of 40 requests (0.0%)"
        ));
    }

    #[test]
    fn error_lines_with_hint() {
        assert_eq!(
            error_lines(&level(1, 1.0, 2)),
            "  2 × http_401: HTTP 401\n    hint: add --api-key\n"
        );
    }

    #[test]
    fn engine_lines_exact() {
        let mut l = crate::stats::test_level(crate::load::Stimulus::Concurrency(8), 2200.0);
        assert_eq!(engine_lines(&l), "");
        l.engine = Some(crate::artifact::server_view::tests::vllm_view());
        assert_eq!(
            engine_lines(&l),
            "  vLLM: waiting 3.0 avg / 6 max, running 8.0 avg / 8 max, queue 2000.0 ms, prefill 100.0 ms, decode 900.0 ms
  KV cache 80% avg / 95% max, 4 preemptions, server TTFT 2100.0 ms (network + client 100.0 ms), prefix cache 25.0% hits
"
        );
    }
}
