//! Reading a level directory GenAI-Perf itself wrote, so `compare` and `report` take an old
//! GenAI-Perf baseline as a run beside ttftbench's.
//!
//! GenAI-Perf writes `<stem>_genai_perf.json` (`profile_export_genai_perf.json` by default; the
//! stem is `--profile-export-file`'s) into each level directory
//! (`<model>-<service kind>-<endpoint type>-<stimulus>`; `analyze` puts one per load below a
//! run directory). Its JSON holds, per metric, `{unit, avg, p1 … p99, min, max, std}` under the
//! same snake_case keys ttftbench uses (times in ms), system metrics as `{unit, avg}`, and
//! `input_config`: the resolved configuration, from which the load comes
//! (`perf_analyzer.stimulus`: `{"concurrency": N}` or `{"request_rate": R}`), and the model
//! (`model_names`), endpoint type and streaming (`endpoint`).
//!
//! What GenAI-Perf does not record reads as unknown: no p99.9, no errors (perf_analyzer drops
//! failed requests), no server-side statistics, no start time. Each metric's sample count is
//! taken to be the request count (exact for TTFT, latency and lengths; TTST and ITL skip requests
//! with one response). The benchmark duration is request count / request throughput.

use std::path::Path;

use crate::error::{Error, Result};
use serde_json::Value;

use super::loaded::LoadedLevel;
use crate::load::Stimulus;
use crate::load::pacer::Arrival;
use crate::metrics::{Metric, Stat, Stats};
use crate::stats::{LevelStats, LevelSummary};

/// Whether a `*_genai_perf.json` document was written by GenAI-Perf (it has GenAI-Perf's
/// `input_config` and none of ttftbench's `level` block).
pub fn is_genai_perf(doc: &Value) -> bool {
    doc.get("level").is_none() && doc.pointer("/input_config/perf_analyzer").is_some()
}

fn num(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

fn stats(v: &Value, count: u64) -> Stats {
    // GenAI-Perf writes no p99.9.
    Stats::from_fn(count, |s| match s {
        Stat::P999 => f64::NAN,
        s => num(v.get(s.key())),
    })
}

fn stimulus(cfg: &Value, dir: &Path) -> Result<Stimulus> {
    let s = cfg.pointer("/perf_analyzer/stimulus");
    if let Some(n) = s.and_then(|s| s.get("concurrency")).and_then(Value::as_u64)
        && let Ok(n) = u32::try_from(n)
        && n >= 1
    {
        return Ok(Stimulus::Concurrency(n));
    }
    if let Some(r) = s
        .and_then(|s| s.get("request_rate"))
        .and_then(Value::as_f64)
        && r > 0.0
        && r.is_finite()
    {
        return Ok(Stimulus::RequestRate {
            rate: r,
            arrival: Arrival::Constant,
            max_inflight: 1024,
        });
    }
    Err(Error::usage(format!(
        "{}: GenAI-Perf run with load {} (neither a concurrency nor a request rate): it cannot be placed on a load axis",
        dir.display(),
        s.map_or("unknown".to_string(), Value::to_string)
    )))
}

/// Rebuilds a level from GenAI-Perf's JSON (pure: no I/O).
pub fn level_from_genai_perf(doc: &Value, dir: &Path) -> Result<LoadedLevel> {
    let cfg = doc.get("input_config").unwrap_or(&Value::Null);
    let stimulus = stimulus(cfg, dir)?;
    let avg = |k: &str| num(doc.get(k).and_then(|v| v.get("avg")));
    let request_count = avg("request_count").max(0.0).round() as u64;
    let metrics = Metric::ALL
        .iter()
        .filter_map(|m| {
            let v = doc.get(m.key())?;
            (v.is_object() && v.get("p50").is_some()).then(|| (*m, stats(v, request_count)))
        })
        .collect();
    let request_throughput = avg("request_throughput");
    let stats = LevelStats {
        metrics,
        request_count,
        // GenAI-Perf computes percentiles with numpy's default, linear interpolation.
        percentile_method: Some(crate::metrics::PercentileMethod::Linear),
        duration_s: if request_throughput > 0.0 {
            request_count as f64 / request_throughput
        } else {
            0.0
        },
        output_token_throughput: avg("output_token_throughput"),
        total_token_throughput: f64::NAN,
        request_throughput,
        request_goodput: doc["request_goodput"]["avg"].as_f64(),
        ..Default::default()
    };
    let summary = LevelSummary {
        streaming: cfg["endpoint"]["streaming"]
            .as_bool()
            .unwrap_or_else(|| doc.get(Metric::TimeToFirstToken.key()).is_some()),
        ..LevelSummary::new(stimulus, stats)
    };
    let text = |p: &str| cfg.pointer(p).and_then(Value::as_str).map(str::to_string);
    Ok(LoadedLevel {
        model: text("/model_names/0"),
        api: text("/endpoint/type").map(|t| format!("GenAI-Perf {t}")),
        ..LoadedLevel::new(dir, summary)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_genai_perf_json() {
        let doc = serde_json::json!({
            "request_throughput": {"unit": "requests/sec", "avg": 34.76},
            "request_latency": {"unit": "ms", "avg": 84.36, "p1": 36.3, "p5": 50.6, "p10": 62.4, "p25": 70.1,
                "p50": 86.2, "p75": 99.9, "p90": 111.0, "p95": 113.8, "p99": 129.8, "min": 32.8, "max": 133.8, "std": 25.1},
            "request_count": {"unit": "count", "avg": 20.0},
            "time_to_first_token": {"unit": "ms", "avg": 21.6, "p1": 13.8, "p5": 14.5, "p10": 14.7, "p25": 18.4,
                "p50": 20.6, "p75": 24.0, "p90": 28.3, "p95": 32.9, "p99": 32.9, "min": 13.7, "max": 32.9, "std": 5.5},
            "output_token_throughput": {"unit": "tokens/sec", "avg": 410.11},
            "input_config": {"model_names": ["gpt2"], "endpoint": {"type": "chat", "streaming": true},
                "perf_analyzer": {"stimulus": {"concurrency": 3}}}
        });
        assert!(is_genai_perf(&doc));
        let l = level_from_genai_perf(&doc, Path::new("x")).unwrap();
        assert_eq!(l.summary.stimulus, Stimulus::Concurrency(3));
        assert_eq!(l.summary.stats.request_count, 20);
        assert!((l.summary.stats.duration_s - 20.0 / 34.76).abs() < 1e-12);
        let ttft = l.summary.stats.get(Metric::TimeToFirstToken).unwrap();
        assert_eq!((ttft.avg, ttft.p99), (21.6, 32.9));
        assert!(l.summary.stats.get(Metric::RequestLatency).is_some());
        assert!(l.summary.streaming);
        assert_eq!(l.model.as_deref(), Some("gpt2"));
        assert_eq!(l.api.as_deref(), Some("GenAI-Perf chat"));
        let rate = serde_json::json!({"input_config": {"perf_analyzer": {"stimulus": {"request_rate": 5.0}}}});
        assert!(matches!(
            level_from_genai_perf(&rate, Path::new("x")).unwrap().summary.stimulus,
            Stimulus::RequestRate { rate, .. } if rate == 5.0
        ));
        let fixed = serde_json::json!({"input_config": {"perf_analyzer": {"stimulus": {"fixed_schedule": true}}}});
        assert!(level_from_genai_perf(&fixed, Path::new("x")).is_err());
        assert!(!is_genai_perf(
            &serde_json::json!({"level": {}, "input_config": {}})
        ));
    }
}
