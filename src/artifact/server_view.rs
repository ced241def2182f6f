//! The engine's and the GPUs' view of a level in the export files, as pure functions of the
//! level's summary.
//!
//! Level JSON: `engine_metrics` is the engine's view (`server_metrics::level::EngineLevelView`:
//! `kind`, gauges as `{avg, max, samples}`, times in seconds, counters as deltas over the level,
//! `prefix_cache {queried, hits, hit_rate, unit}`, `window_s`) plus two derived keys: `split`
//! (`{queue_ms, queue_source: engine|triton|waiting_gauge, prefill_ms, decode_ms, generation_ms}`)
//! `server_ttft_ms` (the server's mean TTFT: llama.cpp's per-response `timings.prompt_ms`
//! where the responses carry it, else the engine's histogram) and `network_and_client_ttft_ms`
//! (client TTFT avg minus it); `null` when the page was not read. llama.cpp's view adds
//! `decode_total_s` (its `tokens_predicted_seconds_total` over the level), `slots` (from
//! `/slots`) and `requests_from_client: true` (its `requests` are the client's: it counts
//! none); `spec_decode {drafts, draft_tokens, accepted_tokens, acceptance_rate}` where exported. `gpu_metrics` is `{gpus: [{uuid, name, utilization, memory_used_bytes,
//! memory_total_bytes, power_w, energy_j}], window_s, energy_j, energy_source: counter|power,
//! output_tokens_per_joule}` or `null`.
//!
//! CSV rows (second section, `key,value,unit`), each only when known: `engine_waiting_requests_
//! {avg,max}`, `engine_running_requests_{avg,max}` (count), `engine_queue_time_avg` (ms; named
//! `engine_queue_time_estimated_avg` when Little's law estimated it from the waiting gauge),
//! `engine_prefill_time_avg`, `engine_decode_time_avg`, `engine_generation_time_avg` (ms),
//! `engine_queue_share` (percent), `engine_kv_cache_usage_{avg,max}` (percent),
//! `engine_preemptions` (count), `server_ttft_{avg,p99}` and `network_and_client_ttft_avg` (ms),
//! `prefix_cache_hit_rate` (percent), `prefix_cache_hits` (tokens or blocks), `engine_slots`
//! (count, llama.cpp), `spec_decode_acceptance_rate` (percent) and `spec_decode_draft_tokens`
//! (tokens) when drafts were proposed; then
//! `gpu_count`, `gpu_utilization_{avg,max}` (percent), `gpu_memory_used_max` (GiB, all GPUs),
//! `gpu_power_avg` (W, all GPUs), `gpu_energy` (J) and `output_tokens_per_joule`.

use serde_json::{Value, json};

use crate::server_metrics::split::QueueSource;
use crate::stats::LevelSummary;

/// One `key,value,unit` row.
pub type Row = (String, String, &'static str);

/// Two decimals; `N/A` for a value that is not finite (as GenAI-Perf's CSV writes it).
pub(super) fn num(v: f64) -> String {
    crate::analysis::text::fixed_or(Some(v), 2, "N/A")
}

/// The `engine_metrics` value.
pub fn engine_json(s: &LevelSummary) -> Value {
    let Some(e) = &s.engine else {
        return Value::Null;
    };
    let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.insert("split".into(), json!(e.split()));
        m.insert("server_ttft_ms".into(), json!(s.server_ttft_ms()));
        m.insert(
            "network_and_client_ttft_ms".into(),
            json!(s.network_and_client_ttft_ms()),
        );
    }
    v
}

/// The engine's and the GPUs' rows of the CSV's second section.
pub fn csv_rows(s: &LevelSummary) -> Vec<Row> {
    let mut rows = engine_rows(s);
    rows.extend(gpu_rows(s));
    rows
}

/// A share as a percentage.
fn pct(v: Option<f64>) -> Option<f64> {
    v.map(|v| v * 100.0)
}

fn engine_rows(s: &LevelSummary) -> Vec<Row> {
    let Some(e) = &s.engine else {
        return Vec::new();
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut push = |key: &str, v: Option<f64>, unit: &'static str| {
        if let Some(v) = v {
            rows.push((key.to_string(), num(v), unit));
        }
    };
    for (name, gauge) in [("waiting", e.waiting), ("running", e.running)] {
        let key = |stat: &str| format!("engine_{name}_requests_{stat}");
        push(&key("avg"), gauge.map(|g| g.avg), "count");
        push(&key("max"), gauge.map(|g| g.max), "count");
    }
    if let Some(sp) = e.split() {
        let key = if sp.queue_source == QueueSource::WaitingGauge {
            "engine_queue_time_estimated_avg"
        } else {
            "engine_queue_time_avg"
        };
        push(key, Some(sp.queue_ms), "ms");
        push("engine_prefill_time_avg", sp.prefill_ms, "ms");
        push("engine_decode_time_avg", sp.decode_ms, "ms");
        push("engine_generation_time_avg", Some(sp.generation_ms), "ms");
        push("engine_queue_share", pct(sp.queue_share()), "percent");
    }
    let (kv, ttft) = (e.kv_usage, e.server_ttft);
    push(
        "engine_kv_cache_usage_avg",
        pct(kv.map(|g| g.avg)),
        "percent",
    );
    push(
        "engine_kv_cache_usage_max",
        pct(kv.map(|g| g.max)),
        "percent",
    );
    push("engine_preemptions", e.preemptions, "count");
    push("server_ttft_avg", ttft.map(|t| t.avg_s * 1e3), "ms");
    let p99 = ttft.and_then(|t| t.p99_s).map(|p| p * 1e3);
    push("server_ttft_p99", p99, "ms");
    let rest = s.network_and_client_ttft_ms();
    push("network_and_client_ttft_avg", rest, "ms");
    if let Some(p) = e.prefix_cache {
        push("prefix_cache_hit_rate", pct(p.hit_rate), "percent");
        let unit = match p.unit {
            crate::server_metrics::engines::CacheUnit::Tokens => "tokens",
            crate::server_metrics::engines::CacheUnit::Blocks => "blocks",
        };
        push("prefix_cache_hits", Some(p.hits), unit);
    }
    push("engine_slots", e.slots.map(f64::from), "count");
    if let Some(sd) = e.spec_decode.filter(|s| s.draft_tokens > 0.0) {
        let rate = pct(sd.acceptance_rate);
        push("spec_decode_acceptance_rate", rate, "percent");
        push("spec_decode_draft_tokens", Some(sd.draft_tokens), "tokens");
    }
    rows
}

fn gpu_rows(s: &LevelSummary) -> Vec<Row> {
    let Some(g) = &s.gpu else {
        return Vec::new();
    };
    let mut rows: Vec<Row> = vec![("gpu_count".into(), g.gpus.len().to_string(), "count")];
    let mut push = |key: &str, v: Option<f64>, unit: &'static str| {
        if let Some(v) = v {
            rows.push((key.to_string(), num(v), unit));
        }
    };
    push("gpu_utilization_avg", pct(g.utilization_avg()), "percent");
    push("gpu_utilization_max", pct(g.utilization_max()), "percent");
    let memory = g.memory_used_max_bytes().map(|b| b / GIB);
    push("gpu_memory_used_max", memory, "GiB");
    push("gpu_power_avg", g.power_avg_w(), "W");
    push("gpu_energy", g.energy_j, "J");
    let per_joule = g.output_tokens_per_joule;
    push("output_tokens_per_joule", per_joule, "tokens/J");
    rows
}

/// Bytes in a GiB.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::server_metrics::ServerKind;
    use crate::server_metrics::engines::CacheUnit;
    use crate::server_metrics::gpu::{GpuLevelView, GpuView};
    use crate::server_metrics::level::{EngineLevelView, GaugeStats, PrefixView, TtftView};

    fn gauge(avg: f64, max: f64) -> Option<GaugeStats> {
        Some(GaugeStats {
            avg,
            max,
            samples: 10,
        })
    }

    /// A vLLM level: 2 s of queue, 0.1 s prefill, 0.9 s decode, KV 95% at peak.
    pub(crate) fn vllm_view() -> EngineLevelView {
        EngineLevelView {
            kind: ServerKind::Vllm,
            model_matched: true,
            waiting: gauge(3.0, 6.0),
            running: gauge(8.0, 8.0),
            kv_usage: gauge(0.8, 0.95),
            preemptions: Some(4.0),
            requests: Some(40.0),
            avg_queue_s: Some(2.0),
            avg_triton_queue_s: None,
            avg_prefill_s: Some(0.1),
            avg_decode_s: Some(0.9),
            avg_inference_s: Some(1.0),
            avg_e2e_s: Some(3.0),
            prefill_busy_s: None,
            decode_busy_s: None,
            server_ttft: Some(TtftView {
                count: 40.0,
                avg_s: 2.1,
                p50_s: None,
                p90_s: None,
                p99_s: Some(2.5),
            }),
            prefix_cache: Some(PrefixView {
                queried: Some(1000.0),
                hits: 250.0,
                hit_rate: Some(0.25),
                unit: CacheUnit::Tokens,
            }),
            prompt_tokens: Some(4000.0),
            generation_tokens: Some(2000.0),
            window_s: Some(10.0),
            ..EngineLevelView::empty(ServerKind::Vllm)
        }
    }

    /// A llama.cpp level over 10 s: 2 requests deferred on average while the client finished
    /// 40, 4 slots, 36 s of decode in all, 80% of the prompt tokens cached.
    pub(crate) fn llamacpp_view() -> EngineLevelView {
        EngineLevelView {
            waiting: gauge(2.0, 5.0),
            running: gauge(3.5, 4.0),
            prefill_busy_s: Some(1.5),
            decode_total_s: Some(36.0),
            slots: Some(4),
            prefix_cache: Some(PrefixView {
                queried: Some(5000.0),
                hits: 4000.0,
                hit_rate: Some(0.8),
                unit: CacheUnit::Tokens,
            }),
            prompt_tokens: Some(5000.0),
            generation_tokens: Some(2560.0),
            window_s: Some(10.0),
            ..EngineLevelView::empty(ServerKind::LlamaCpp)
        }
        .with_client_requests(40, Some(0.05))
    }

    fn level() -> LevelSummary {
        let mut s = crate::stats::test_level(crate::load::Stimulus::Concurrency(8), 2200.0);
        s.engine = Some(vllm_view());
        s.gpu = Some(
            GpuView::new(
                vec![GpuLevelView {
                    uuid: "GPU-a".into(),
                    name: Some("NVIDIA H100".into()),
                    utilization: gauge(0.5, 0.9),
                    memory_used_bytes: gauge(GIB, 2.0 * GIB),
                    memory_total_bytes: Some(80.0 * GIB),
                    power_w: gauge(300.0, 400.0),
                    energy_j: None,
                }],
                10.0,
            )
            .with_output_rate(600.0),
        );
        s
    }

    #[test]
    fn csv_rows_exact() {
        let rows: Vec<String> = csv_rows(&level())
            .into_iter()
            .map(|(k, v, u)| format!("{k},{v},{u}"))
            .collect();
        assert_eq!(
            rows.join("\n"),
            "engine_waiting_requests_avg,3.00,count
engine_waiting_requests_max,6.00,count
engine_running_requests_avg,8.00,count
engine_running_requests_max,8.00,count
engine_queue_time_avg,2000.00,ms
engine_prefill_time_avg,100.00,ms
engine_decode_time_avg,900.00,ms
engine_generation_time_avg,1000.00,ms
engine_queue_share,66.67,percent
engine_kv_cache_usage_avg,80.00,percent
engine_kv_cache_usage_max,95.00,percent
engine_preemptions,4.00,count
server_ttft_avg,2100.00,ms
server_ttft_p99,2500.00,ms
network_and_client_ttft_avg,100.00,ms
prefix_cache_hit_rate,25.00,percent
prefix_cache_hits,250.00,tokens
gpu_count,1,count
gpu_utilization_avg,50.00,percent
gpu_utilization_max,90.00,percent
gpu_memory_used_max,2.00,GiB
gpu_power_avg,300.00,W
gpu_energy,3000.00,J
output_tokens_per_joule,2.00,tokens/J"
        );
        assert!(
            csv_rows(&crate::stats::test_level(
                crate::load::Stimulus::Concurrency(1),
                5.0
            ))
            .is_empty()
        );
    }

    #[test]
    fn json_carries_the_split_and_reads_back() {
        let s = level();
        let v = engine_json(&s);
        assert_eq!(v["kind"], "vllm");
        assert_eq!(v["split"]["queue_source"], "engine");
        assert_eq!(v["split"]["queue_ms"], 2000.0);
        assert_eq!(v["network_and_client_ttft_ms"], 100.0);
        let back: EngineLevelView = serde_json::from_value(v).unwrap();
        assert_eq!(back, vllm_view());
        let g = json!(s.gpu);
        assert_eq!(g["energy_source"], "power");
        let back: GpuView = serde_json::from_value(g).unwrap();
        assert_eq!(Some(back), s.gpu);
    }

    #[test]
    fn llamacpp_rows_and_json_exact() {
        let mut s = crate::stats::test_level(crate::load::Stimulus::Concurrency(4), 80.0);
        s.engine = Some(llamacpp_view());
        let rows: Vec<String> = csv_rows(&s)
            .into_iter()
            .map(|(k, v, u)| format!("{k},{v},{u}"))
            .collect();
        assert_eq!(
            rows.join("\n"),
            "engine_waiting_requests_avg,2.00,count
engine_waiting_requests_max,5.00,count
engine_running_requests_avg,3.50,count
engine_running_requests_max,4.00,count
engine_queue_time_estimated_avg,500.00,ms
engine_prefill_time_avg,50.00,ms
engine_decode_time_avg,900.00,ms
engine_generation_time_avg,950.00,ms
engine_queue_share,34.48,percent
prefix_cache_hit_rate,80.00,percent
prefix_cache_hits,4000.00,tokens
engine_slots,4.00,count"
        );
        let v = engine_json(&s);
        assert_eq!(v["kind"], "llamacpp");
        assert_eq!(v["requests_from_client"], true);
        assert_eq!(v["split"]["queue_source"], "waiting_gauge");
        let back: EngineLevelView = serde_json::from_value(v).unwrap();
        assert_eq!(back, llamacpp_view());
    }
}
