//! `summary.csv`: one row per level of a sweep, the numbers a capacity table needs.
//!
//! Columns: `level` (directory name stem, e.g. `concurrency8`), then the stimulus kind with its
//! value (`concurrency`), TTFT avg/p50/p99, ITL avg/p99, request latency avg/p99 (ms), output
//! token and request throughput (per second), the server's average queue and compute-infer time
//! and queue share (empty when the server's metrics were not available), request and error
//! counts; then the engine's view (`engine` kind, its queue with `engine_queue_source` —
//! `engine`, `triton` or `waiting_gauge` for Little's-law estimates —, prefill, decode and
//! generation time, waiting and running requests, KV-cache usage, preemptions, server TTFT and
//! client TTFT minus it, prefix-cache hit rate) and the GPUs' (utilization, peak memory in GiB,
//! power, output tokens per joule); then, appended after those so scripts that index the earlier
//! columns keep reading what they read, a reasoning model's split — time to first output token
//! (TTFO, the first answer token past the reasoning) avg/p50/p99 and reasoning tokens per
//! request (avg), empty for a level that saw no reasoning — `cancelled_count` (requests
//! cancelled on purpose by `--request-cancellation-rate`, in no other column) and
//! `reconnect_count` (requests sent again on a fresh connection after the server had closed
//! their reused HTTP/1.1 one); then the token counts the server disagrees with —
//! `isl_mismatch_pct` and `osl_mismatch_pct`, the share of requests whose input (output) token
//! count differs from the server's usage, empty when the server reported none — and
//! `cached_prompt_tokens_avg` (the prompt tokens the server reused per request, from llama.cpp's
//! per-response `timings`), and last `abandoned_count` (requests a second Ctrl-C abandoned in
//! flight, in no other column). `server_ttft_avg_ms` is the responses' own prompt time (llama.cpp's
//! `timings.prompt_ms`) where they carry it, else the engine's TTFT histogram (vLLM);
//! `network_and_client_ttft_avg_ms` is client TTFT minus it (with llama.cpp, per request, and
//! the wait for a free slot is in it). Values are plain decimals; a missing value is an empty
//! cell.

use crate::metrics::Metric;
use crate::stats::LevelSummary;

/// Header line of `summary.csv`.
pub const HEADER: &str = "level,stimulus,value,ttft_avg_ms,ttft_p50_ms,ttft_p99_ms,itl_avg_ms,itl_p99_ms,request_latency_avg_ms,request_latency_p99_ms,output_token_throughput,request_throughput,server_queue_avg_ms,server_compute_infer_avg_ms,server_queue_share_pct,request_count,error_count,engine,engine_queue_avg_ms,engine_queue_source,engine_prefill_avg_ms,engine_decode_avg_ms,engine_generation_avg_ms,engine_waiting_avg,engine_waiting_max,engine_running_avg,engine_kv_cache_usage_avg_pct,engine_kv_cache_usage_max_pct,engine_preemptions,server_ttft_avg_ms,network_and_client_ttft_avg_ms,prefix_cache_hit_rate_pct,gpu_utilization_avg_pct,gpu_utilization_max_pct,gpu_memory_used_max_gib,gpu_power_avg_w,output_tokens_per_joule,ttfo_avg_ms,ttfo_p50_ms,ttfo_p99_ms,reasoning_token_count_avg,cancelled_count,reconnect_count,isl_mismatch_pct,osl_mismatch_pct,cached_prompt_tokens_avg,abandoned_count";

/// Two decimals; an empty cell for a missing value.
fn cell(v: Option<f64>) -> String {
    crate::analysis::text::fixed_or(v, 2, "")
}

/// The file's text.
pub fn csv(levels: &[LevelSummary]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for l in levels {
        let get = |m: Metric, f: fn(&crate::metrics::Stats) -> f64| l.shown_stat(m).map(f);
        let server = l.server.as_ref();
        let row = [
            l.stimulus.name(),
            l.stimulus.kind().to_string(),
            crate::analysis::text::load_text(l.stimulus.value()),
            cell(get(Metric::TimeToFirstToken, |s| s.avg)),
            cell(get(Metric::TimeToFirstToken, |s| s.p50)),
            cell(get(Metric::TimeToFirstToken, |s| s.p99)),
            cell(get(Metric::InterTokenLatency, |s| s.avg)),
            cell(get(Metric::InterTokenLatency, |s| s.p99)),
            cell(get(Metric::RequestLatency, |s| s.avg)),
            cell(get(Metric::RequestLatency, |s| s.p99)),
            cell(Some(l.stats.output_token_throughput)),
            cell(Some(l.stats.request_throughput)),
            cell(server.and_then(|d| d.avg_queue_ms)),
            cell(server.map(|d| d.avg_compute_infer_ms)),
            cell(server.and_then(|d| d.queue_share).map(|q| q * 100.0)),
            l.stats.request_count.to_string(),
            l.stats.error_count.to_string(),
        ];
        out.push_str(&row.join(","));
        out.push(',');
        out.push_str(&engine_cells(l).join(","));
        out.push(',');
        out.push_str(&reasoning_and_cancelled_cells(l).join(","));
        out.push('\n');
    }
    out
}

/// The last cells of a row: TTFO avg/p50/p99 and reasoning tokens (avg), empty unless the level
/// saw reasoning (only requests that streamed reasoning have these metrics), then the
/// cancelled requests, the token-count mismatch shares, the cached prompt tokens and the
/// abandoned requests.
fn reasoning_and_cancelled_cells(l: &LevelSummary) -> Vec<String> {
    let ttfo = l.stats.get(Metric::TimeToFirstOutputToken);
    vec![
        cell(ttfo.map(|s| s.avg)),
        cell(ttfo.map(|s| s.p50)),
        cell(ttfo.map(|s| s.p99)),
        cell(l.stats.get(Metric::ReasoningTokenCount).map(|s| s.avg)),
        l.stats.cancelled_count.to_string(),
        l.stats.reconnect_count.to_string(),
        cell(l.stats.isl_mismatch_share().map(|s| s * 100.0)),
        cell(l.stats.osl_mismatch_share().map(|s| s * 100.0)),
        cell(l.stats.get(Metric::CachedPromptTokens).map(|s| s.avg)),
        l.stats.abandoned_count.to_string(),
    ]
}

/// The engine's and the GPUs' cells of a row: empty where not read.
fn engine_cells(l: &LevelSummary) -> Vec<String> {
    let e = l.engine.as_ref();
    let split = e.and_then(|e| e.split());
    let g = l.gpu.as_ref();
    let pct = |v: Option<f64>| cell(v.map(|v| v * 100.0));
    vec![
        e.map_or(String::new(), |e| e.kind.name().to_string()),
        cell(split.map(|s| s.queue_ms)),
        split.map_or(String::new(), |s| {
            let source = serde_json::json!(s.queue_source);
            source.as_str().unwrap_or_default().to_string()
        }),
        cell(split.and_then(|s| s.prefill_ms)),
        cell(split.and_then(|s| s.decode_ms)),
        cell(split.map(|s| s.generation_ms)),
        cell(e.and_then(|e| e.waiting).map(|g| g.avg)),
        cell(e.and_then(|e| e.waiting).map(|g| g.max)),
        cell(e.and_then(|e| e.running).map(|g| g.avg)),
        pct(e.and_then(|e| e.kv_usage).map(|g| g.avg)),
        pct(e.and_then(|e| e.kv_usage).map(|g| g.max)),
        cell(e.and_then(|e| e.preemptions)),
        cell(l.server_ttft_ms()),
        cell(l.network_and_client_ttft_ms()),
        pct(e.and_then(|e| e.prefix_cache).and_then(|p| p.hit_rate)),
        pct(g.and_then(|g| g.utilization_avg())),
        pct(g.and_then(|g| g.utilization_max())),
        cell(
            g.and_then(|g| g.memory_used_max_bytes())
                .map(|b| b / super::server_view::GIB),
        ),
        cell(g.and_then(|g| g.power_avg_w())),
        cell(g.and_then(|g| g.output_tokens_per_joule)),
    ]
}

/// `summary.json`: `{"levels": [{"name", "stimulus", "value", "dir", "interrupted", ...stats}],
/// "verdict": {steps, queue_dominated, lines}, "input_config": {...}}`; each level carries the
/// same numbers as its row of `summary.csv` plus the full server view.
/// `time_to_first_output_token` and `reasoning_token_count` (statistics, as
/// `time_to_first_token`) are null for a level that saw no reasoning; `cancelled_count` and
/// `abandoned_count` are always there. `server_ttft_ms` and `network_and_client_ttft_ms` are the
/// CSV's columns of those names; `isl_mismatch_share` and `osl_mismatch_share` (0–1) are null
/// when the server reported no usage; `server_prefill_time`, `client_minus_server_ttft` and
/// `server_decode_time` (statistics) are null unless the responses carried the server's timings.
pub fn json(
    levels: &[LevelSummary],
    dirs: &[std::path::PathBuf],
    verdict: &crate::analysis::verdict::Verdict,
    input_config: &serde_json::Value,
) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = levels
        .iter()
        .zip(dirs)
        .map(|(l, d)| {
            let stat = |m: Metric| l.shown_stat(m);
            serde_json::json!({
                "name": l.stimulus.name(),
                "stimulus": l.stimulus.kind(),
                "value": l.stimulus.value(),
                "dir": d.display().to_string(),
                "interrupted": l.interrupted,
                "time_to_first_token": stat(Metric::TimeToFirstToken),
                "inter_token_latency": stat(Metric::InterTokenLatency),
                "request_latency": stat(Metric::RequestLatency),
                "output_token_throughput": l.stats.output_token_throughput,
                "request_throughput": l.stats.request_throughput,
                "request_goodput": l.stats.request_goodput,
                "request_count": l.stats.request_count,
                "error_count": l.stats.error_count,
                "cancelled_count": l.stats.cancelled_count,
                "abandoned_count": l.stats.abandoned_count,
                "reconnect_count": l.stats.reconnect_count,
                "time_to_first_output_token": l.stats.get(Metric::TimeToFirstOutputToken),
                "reasoning_token_count": l.stats.get(Metric::ReasoningTokenCount),
                "server_ttft_ms": l.server_ttft_ms(),
                "network_and_client_ttft_ms": l.network_and_client_ttft_ms(),
                "server_prefill_time": l.stats.get(Metric::ServerPrefillTime),
                "client_minus_server_ttft": stat(Metric::ClientMinusServerTtft),
                "server_decode_time": l.stats.get(Metric::ServerDecodeTime),
                "isl_mismatch_share": l.stats.isl_mismatch_share(),
                "osl_mismatch_share": l.stats.osl_mismatch_share(),
                "server_metrics": l.server,
                "engine_metrics": super::server_view::engine_json(l),
                "gpu_metrics": l.gpu,
            })
        })
        .collect();
    serde_json::json!({"levels": rows, "verdict": verdict, "input_config": input_config})
}

/// Adds what the sweep decided to the document from [`json`]: `ttftbench_version`; per level its
/// `path` relative to the sweep directory (so the tree can be moved and still be read) and its
/// `slo` checks; the sweep's `knee` (see [`crate::analysis::knee`]); and
/// `slo: {checked, passed, failed: [{level, objective, actual, unit}]}` when objectives were given.
pub fn with_decisions(
    mut doc: serde_json::Value,
    sweep_dir: &std::path::Path,
    dirs: &[std::path::PathBuf],
    slo: &[Vec<crate::analysis::slo::SloResult>],
    knee: &crate::analysis::knee::Analysis,
) -> serde_json::Value {
    let mut names = Vec::new();
    if let Some(rows) = doc.get_mut("levels").and_then(|v| v.as_array_mut()) {
        for (i, row) in rows.iter_mut().enumerate() {
            names.push(row["name"].as_str().unwrap_or("").to_string());
            let Some(obj) = row.as_object_mut() else {
                continue;
            };
            if let Some(rel) = dirs.get(i).and_then(|d| d.strip_prefix(sweep_dir).ok()) {
                obj.insert("path".into(), rel.display().to_string().into());
            }
            if let Some(r) = slo.get(i).filter(|r| !r.is_empty()) {
                obj.insert("slo".into(), crate::analysis::slo::json(r));
            }
        }
    }
    if let Some(m) = doc.as_object_mut() {
        m.insert("ttftbench_version".into(), crate::VERSION.into());
        m.insert("knee".into(), serde_json::json!(knee));
        let checked: usize = slo.iter().map(Vec::len).sum();
        if checked > 0 {
            let failed: Vec<serde_json::Value> = slo
                .iter()
                .enumerate()
                .flat_map(|(i, rs)| {
                    let name = names.get(i).cloned().unwrap_or_default();
                    rs.iter().filter(|r| !r.passed).map(move |r| {
                        serde_json::json!({
                            "level": name,
                            "objective": r.slo.to_string(),
                            "actual": r.actual,
                            "unit": r.slo.metric.kind().unit(),
                        })
                    })
                })
                .collect();
            m.insert(
                "slo".into(),
                serde_json::json!({"checked": checked, "passed": failed.is_empty(), "failed": failed}),
            );
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::metrics::Stats;
    use crate::server_metrics::ServerDelta;
    use crate::stats::LevelStats;

    fn level(c: u32, ttft: f64, server: Option<ServerDelta>) -> LevelSummary {
        let s = |avg: f64| Stats {
            count: 1,
            avg,
            p50: avg,
            p99: avg * 2.0,
            ..Stats::default()
        };
        LevelSummary {
            server,
            ..LevelSummary::new(
                Stimulus::Concurrency(c),
                LevelStats {
                    metrics: vec![
                        (Metric::TimeToFirstToken, s(ttft)),
                        (Metric::RequestLatency, s(500.0)),
                        (Metric::InterTokenLatency, s(5.0)),
                    ],
                    request_count: 20,
                    duration_s: 1.0,
                    output_token_throughput: 1000.0,
                    total_token_throughput: 3000.0,
                    request_throughput: 10.0,
                    ..Default::default()
                },
            )
        }
    }

    /// `summary.json` of `levels`, in directories `a`, `b`, ...
    fn doc(levels: &[LevelSummary]) -> serde_json::Value {
        let dirs: Vec<std::path::PathBuf> = ["a", "b"][..levels.len()]
            .iter()
            .map(std::path::PathBuf::from)
            .collect();
        let verdict = crate::analysis::verdict::verdict(levels);
        json(levels, &dirs, &verdict, &serde_json::json!({}))
    }

    #[test]
    fn decisions_added_to_summary_json() {
        let levels = [level(1, 45.0, None), level(8, 88.5, None)];
        let dirs = [
            std::path::PathBuf::from("./bench/T/c1"),
            std::path::PathBuf::from("./bench/T/c8"),
        ];
        let slos = [crate::metrics::parse("time_to_first_token.p99<=100ms").unwrap()];
        let results: Vec<Vec<crate::analysis::slo::SloResult>> = levels
            .iter()
            .map(|l| crate::analysis::slo::evaluate(&slos, l))
            .collect();
        let knee = crate::analysis::knee::analyze(&levels, 0.1);
        let verdict = crate::analysis::verdict::verdict(&levels);
        let doc = with_decisions(
            json(&levels, &dirs, &verdict, &serde_json::json!({})),
            std::path::Path::new("./bench/T"),
            &dirs,
            &results,
            &knee,
        );
        assert_eq!(doc["levels"][0]["path"], "c1");
        assert_eq!(doc["levels"][1]["slo"][0]["passed"], false);
        assert_eq!(
            doc["slo"],
            serde_json::json!({"checked": 2, "passed": false, "failed": [
                {"level": "concurrency8", "objective": "time_to_first_token.p99<=100ms", "actual": 177.0, "unit": "ms"}
            ]})
        );
        assert_eq!(doc["knee"]["min_gain"], 0.1);
        assert_eq!(doc["ttftbench_version"], crate::VERSION);
    }

    #[test]
    fn exact_text() {
        let d = ServerDelta {
            source: "prometheus",
            requests: 20,
            executions: 5,
            max_pending: 4.0,
            ..ServerDelta::from_phase_avgs(25.0, 0.0, 75.0, 0.0)
        };
        let text = csv(&[level(1, 45.0, None), level(8, 88.5, Some(d))]);
        assert_eq!(
            text,
            format!(
                "{HEADER}\nconcurrency1,concurrency,1,45.00,45.00,90.00,5.00,10.00,500.00,1000.00,1000.00,10.00,,,,20,0,,,,,,,,,,,,,,,,,,,,,,,,,0,0,,,,0\nconcurrency8,concurrency,8,88.50,88.50,177.00,5.00,10.00,500.00,1000.00,1000.00,10.00,25.00,75.00,25.00,20,0,,,,,,,,,,,,,,,,,,,,,,,,,0,0,,,,0\n"
            )
        );
    }

    /// A level that saw reasoning fills the TTFO and reasoning-token cells, appended after every
    /// earlier column (whose positions stay); one that did not leaves them empty; cancelled
    /// requests are counted in the last cell. summary.json carries the same numbers.
    #[test]
    fn reasoning_and_cancelled_cells_come_last() {
        let plain = level(1, 45.0, None);
        let mut thinking = level(4, 60.0, None);
        let st = |avg: f64, p50: f64, p99: f64| Stats {
            count: 20,
            avg,
            p50,
            p99,
            ..Stats::default()
        };
        thinking.stats.metrics.extend([
            (Metric::TimeToFirstOutputToken, st(180.25, 170.0, 240.5)),
            (Metric::ReasoningTokenCount, st(32.0, 32.0, 32.0)),
        ]);
        thinking.stats.cancelled_count = 7;
        thinking.stats.abandoned_count = 3;
        let text = csv(&[plain.clone(), thinking.clone()]);
        let lines: Vec<&str> = text.lines().collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        assert_eq!(
            header[16], "error_count",
            "earlier columns keep their places"
        );
        assert_eq!(
            header[header.len() - 10..],
            [
                "ttfo_avg_ms",
                "ttfo_p50_ms",
                "ttfo_p99_ms",
                "reasoning_token_count_avg",
                "cancelled_count",
                "reconnect_count",
                "isl_mismatch_pct",
                "osl_mismatch_pct",
                "cached_prompt_tokens_avg",
                "abandoned_count"
            ]
        );
        assert!(lines[1].ends_with(",,,,,,0,0,,,,0"), "{}", lines[1]);
        assert!(
            lines[2].ends_with(",180.25,170.00,240.50,32.00,7,0,,,,3"),
            "{}",
            lines[2]
        );
        for l in &lines[1..] {
            assert_eq!(l.split(',').count(), header.len(), "{l}");
        }
        let doc = doc(&[plain, thinking]);
        let (l0, l1) = (&doc["levels"][0], &doc["levels"][1]);
        assert_eq!(l0["time_to_first_output_token"], serde_json::Value::Null);
        assert_eq!(l0["reasoning_token_count"], serde_json::Value::Null);
        assert_eq!(l0["cancelled_count"], 0);
        assert_eq!(l1["time_to_first_output_token"]["p99"], 240.5);
        assert_eq!(l1["reasoning_token_count"]["avg"], 32.0);
        assert_eq!(l1["cancelled_count"], 7);
        assert_eq!(l0["abandoned_count"], 0);
        assert_eq!(l1["abandoned_count"], 3);
    }

    /// A llama.cpp level: its responses' timings fill the server TTFT and client-minus-server
    /// cells (no engine page needed), and the token counts the server disagrees with fill the
    /// mismatch cells; summary.json says the same.
    #[test]
    fn server_timings_and_token_mismatch_cells() {
        let mut l = level(4, 45.0, None);
        let st = |avg: f64| Stats {
            count: 20,
            avg,
            ..Stats::default()
        };
        l.stats.metrics.extend([
            (Metric::ServerPrefillTime, st(12.5)),
            (Metric::ClientMinusServerTtft, st(32.75)),
            (Metric::CachedPromptTokens, st(80.0)),
        ]);
        (l.stats.isl_compared, l.stats.isl_mismatch) = (20, 5);
        (l.stats.osl_compared, l.stats.osl_mismatch) = (20, 0);
        let text = csv(std::slice::from_ref(&l));
        let header: Vec<&str> = HEADER.split(',').collect();
        let row: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(cell("server_ttft_avg_ms"), "12.50");
        assert_eq!(cell("network_and_client_ttft_avg_ms"), "32.75");
        assert_eq!(cell("isl_mismatch_pct"), "25.00");
        assert_eq!(cell("osl_mismatch_pct"), "0.00");
        assert_eq!(cell("cached_prompt_tokens_avg"), "80.00");
        assert_eq!(cell("engine"), "", "no engine page was read");
        let doc = doc(std::slice::from_ref(&l));
        let lv = &doc["levels"][0];
        assert_eq!(lv["server_ttft_ms"], 12.5);
        assert_eq!(lv["network_and_client_ttft_ms"], 32.75);
        assert_eq!(lv["isl_mismatch_share"], 0.25);
        assert_eq!(lv["server_prefill_time"]["avg"], 12.5);
    }
}
