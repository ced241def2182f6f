//! GenAI-Perf's export files, as pure functions of a level's summary.
//!
//! `profile_export_genai_perf.csv`:
//! ```text
//! Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1,std,unit
//! time_to_first_token,45.12,...,ms           <- one row per per-request metric, snake_case key
//! ...
//!                                            <- blank line
//! Metric,Value,unit
//! output_token_throughput,1234.56,tokens/sec <- one row per system metric
//! ...
//! ```
//! The `Metric` column holds the snake_case key (not GenAI-Perf's title-case label) so
//! `grep -i first_token` and `csv.DictReader` rows keyed by `Metric` find the TTFT row. Numbers are
//! plain decimals with two places (GenAI-Perf writes thousands separators, which forces quoting
//! and breaks numeric parsing; here every cell parses as a float). Streaming-only metrics (TTFT,
//! TTST, ITL, per-user throughput, inter-chunk latency) are omitted without `--streaming`, as
//! GenAI-Perf does. Metrics only some servers make possible appear only when a request had
//! them, so GenAI-Perf's layout is unchanged elsewhere: `server_prefill_time`,
//! `client_minus_server_ttft`, `server_decode_time` (ms) and `cached_prompt_tokens` come from
//! the `timings` llama.cpp's `llama-server` puts on each response (see `crate::record::ServerTimings`). Server metrics, when available, follow as `server_*` rows of the second section,
//! then the engine's and the GPUs' rows (see [`super::server_view`]).
//!
//! With `--isl-buckets` a third section follows a blank line: [`CSV_ISL_HEADER`], then one row
//! a bucket (`<128`, `128-511`, `>=512`): its request count and its TTFT and request latency
//! avg/p50/p90/p99 in ms.
//!
//! The newer APIs add second-section rows (and JSON entries `{unit, avg}` after
//! `total_token_throughput`) only for levels that have them: `input_throughput` (inputs/sec:
//! texts embedded, passages ranked), `input_token_throughput` (tokens/sec) and `input_count`
//! for embeddings and rankings; `image_count` and `image_bytes` for levels that sent images;
//! `tool_call_share` and `tool_args_valid_share` (fractions 0..1) for levels that offered
//! tools. Embeddings and rankings levels have no `output_sequence_length` row (nothing is
//! generated) and, never streamed, no streaming-only rows. A scored workload's levels add
//! `accuracy` with `accuracy_ci_low`/`_high` (the Wilson interval at the run's confidence;
//! fractions), `graded_count`, `correct_count`, `unparsed_count`, and where temperature-0
//! outputs were compared `answer_changed_share` with its interval, `answer_changed_count` and
//! `answer_compared_count`; in the JSON, `accuracy` and `answer_changed_share` entries
//! ([`accuracy_json`]). A level of multi-turn or agentic sessions adds `session_completed_count`,
//! `session_failed_count` and `session_cut_short_count`, and with a completed session
//! `session_completion_time_avg`/`_p50`/`_p90`/`_p99`/`_max` (ms: from a session's first request
//! to its last answer, think and tool time and every branch included), `session_turns_avg` and
//! `session_tool_round_trips_avg` (requests per completed session); in the JSON, `sessions`
//! (`completed`, `failed`, `cut_short`, `completion`: the ms distribution or null, `turns_avg`,
//! `tool_round_trips_avg`).
//!
//! `profile_export_genai_perf.json`: GenAI-Perf's keys in GenAI-Perf's order —
//! `{metric: {unit, avg, p1, p5, p10, p25, p50, p75, p90, p95, p99, min, max, std}}` for
//! distributions (plus `p99.9` and `count`), `{unit, avg}` for system metrics — then
//! `error_count`, `errors`, `cancelled_count` (requests cancelled on purpose by
//! `--request-cancellation-rate`: in no other count or statistic), `abandoned_count` (only when
//! not 0, also a CSV row then: requests a second Ctrl-C abandoned in flight, in no other count or
//! statistic), `reconnect_count` (requests sent
//! again on a fresh connection after the server had closed their reused HTTP/1.1 one; also a CSV
//! row when not 0), `burst_count` (only when not 0: successful requests whose two or more
//! content-bearing responses arrived in one burst, a buffered stream), `connections` (only for HTTP/1.1 levels with both: TTFT on fresh and reused
//! connections, `fresh_count`, `fresh_ttft_p50_ms`, `reused_count`, `reused_ttft_min_ms`,
//! `reused_ttft_p50_ms`), `server_metrics` (Triton's counters; null when not scraped),
//! `engine_metrics` and `gpu_metrics` (see [`super::server_view`]; null when not read), `validity`
//! (with the token counts the server disagrees with: `osl_mismatch_count`/`_compared_count`/
//! `_share` for output and `isl_mismatch_*` for input tokens, against its usage),
//! `drift` (only for a level with at least 30 timeline intervals: `span_s`, `confidence`, and per
//! metric `metric`, `points`, `median`, `per_hour`, `lower_per_hour`, `upper_per_hour`,
//! `relative_per_hour`, `drifts`; see [`crate::stats::trend`]), `level` (name,
//! stimulus, value, `started_unix_ns`, and `percentile_method`: `linear`, numpy's default as
//! GenAI-Perf computes percentiles, or `nearest-rank`, perf_analyzer's), and `input_config` (the
//! resolved plan, secrets removed).

use serde_json::{Map, Value, json};

use super::server_view::num;
use crate::metrics::{Metric, Stats};
use crate::server_metrics::ServerDelta;
use crate::stats::LevelSummary;

/// Header of the distribution section.
pub const CSV_DIST_HEADER: &str = "Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1,std,unit";

/// The CSV file's text.
pub fn csv(s: &LevelSummary) -> String {
    let mut out = String::with_capacity(2048);
    out.push_str(CSV_DIST_HEADER);
    out.push('\n');
    for (m, st) in s.shown_metrics() {
        let cells = [
            st.avg, st.min, st.max, st.p99, st.p95, st.p90, st.p75, st.p50, st.p25, st.p10, st.p5,
            st.p1, st.std,
        ]
        .map(num)
        .join(",");
        out.push_str(&format!("{},{cells},{}\n", m.key(), m.unit().label()));
    }
    out.push('\n');
    out.push_str("Metric,Value,unit\n");
    for (key, value, unit) in system_rows(s) {
        out.push_str(&format!("{key},{value},{unit}\n"));
    }
    if !s.stats.isl_buckets.is_empty() {
        out.push('\n');
        out.push_str(&isl_bucket_csv(s));
    }
    out
}

/// Header of the third section, present with `--isl-buckets`.
pub const CSV_ISL_HEADER: &str = "Input Length Bucket,min_isl,max_isl,count,time_to_first_token_avg,time_to_first_token_p50,time_to_first_token_p90,time_to_first_token_p99,request_latency_avg,request_latency_p50,request_latency_p90,request_latency_p99,unit";

/// The CSV's third section: one row a bucket; `max_isl` is exclusive and empty for the last
/// bucket; cells of a bucket without requests (or TTFT of a level that did not stream) are N/A.
fn isl_bucket_csv(s: &LevelSummary) -> String {
    let mut out = String::from(CSV_ISL_HEADER);
    out.push('\n');
    for b in &s.stats.isl_buckets {
        let max = b.max_isl.map(|m| m.to_string()).unwrap_or_default();
        out.push_str(&format!("{},{},{max},{}", b.label(), b.min_isl, b.count));
        let ttft = b.ttft.as_ref().filter(|_| s.streaming);
        for st in [ttft, b.latency.as_ref()] {
            let v = st.map_or([f64::NAN; 4], |x| [x.avg, x.p50, x.p90, x.p99]);
            out.push_str(&format!(",{}", v.map(num).join(",")));
        }
        out.push_str(",ms\n");
    }
    out
}

/// A `(key, formatted value, unit)` row of the CSV's second section.
fn row(key: &str, value: String, unit: &'static str) -> (String, String, &'static str) {
    (key.to_string(), value, unit)
}

/// The rows of the CSV's second section.
fn system_rows(s: &LevelSummary) -> Vec<(String, String, &'static str)> {
    let st = &s.stats;
    let count = |k: &str, n: u64| row(k, n.to_string(), "count");
    let rate = |k: &str, v: f64, unit| row(k, num(v), unit);
    let tokens = |k: &str, v: f64| rate(k, v, "tokens/sec");
    let mut rows = vec![
        tokens("output_token_throughput", st.output_token_throughput),
        tokens("total_token_throughput", st.total_token_throughput),
        rate("request_throughput", st.request_throughput, "requests/sec"),
    ];
    rows.extend(
        st.request_goodput
            .map(|g| rate("request_goodput", g, "requests/sec")),
    );
    rows.push(count("request_count", st.request_count));
    rows.push(count("error_count", st.error_count));
    // Only runs that cancel requests on purpose, abandon them at a second Ctrl-C or send them
    // again after the server closed their connection get these rows: GenAI-Perf's own rows stay
    // as they are otherwise.
    for (k, n) in [
        ("cancelled_count", st.cancelled_count),
        ("abandoned_count", st.abandoned_count),
        ("reconnect_count", st.reconnect_count),
    ] {
        if n > 0 {
            rows.push(count(k, n));
        }
    }
    let accuracy = st.accuracy.as_ref().map_or_else(Vec::new, accuracy_values);
    let sessions = st.sessions.as_ref().map_or_else(Vec::new, session_values);
    for (key, value, unit) in api_values(&st.apis)
        .into_iter()
        .chain(accuracy)
        .chain(sessions)
    {
        let shown = match unit {
            "count" | "bytes" => format!("{value:.0}"),
            "fraction" => format!("{value:.4}"),
            _ => num(value),
        };
        rows.push(row(key, shown, unit));
    }
    rows.push(row("benchmark_duration", num(st.duration_s), "sec"));
    if let Some(d) = &s.server {
        rows.extend(server_rows(d));
    }
    rows.extend(super::server_view::csv_rows(s));
    rows
}

/// A `(key, value, unit)` row of the CSV's second section before its value is formatted.
pub type Entry = (&'static str, f64, &'static str);

/// The newer APIs' level numbers the level has, `(key, value, unit)` (see the module's notes).
pub fn api_values(a: &crate::stats::apis::ApiStats) -> Vec<Entry> {
    let count = |n: Option<u64>| n.map(|n| n as f64);
    [
        ("input_throughput", a.input_throughput, "inputs/sec"),
        (
            "input_token_throughput",
            a.input_token_throughput,
            "tokens/sec",
        ),
        ("input_count", count(a.input_count), "count"),
        ("image_count", count(a.image_count), "count"),
        ("image_bytes", count(a.image_bytes), "bytes"),
        ("tool_call_share", a.tool_call_share, "fraction"),
        ("tool_args_valid_share", a.tool_args_valid_share, "fraction"),
    ]
    .into_iter()
    .filter_map(|(k, v, u)| v.map(|v| (k, v, u)))
    .collect()
}

/// A level's session rows, `(key, value, unit)`: sessions completed, failed and cut short, the
/// completed ones' time to task completion (avg, p50, p90, p99, max) and their requests and
/// tool round trips on average.
pub fn session_values(s: &crate::stats::sessions::SessionStats) -> Vec<Entry> {
    let mut rows = vec![
        ("session_completed_count", s.completed as f64, "count"),
        ("session_failed_count", s.failed as f64, "count"),
        ("session_cut_short_count", s.cut_short as f64, "count"),
    ];
    if let Some(c) = &s.completion {
        rows.extend([
            ("session_completion_time_avg", c.avg, "ms"),
            ("session_completion_time_p50", c.p50, "ms"),
            ("session_completion_time_p90", c.p90, "ms"),
            ("session_completion_time_p99", c.p99, "ms"),
            ("session_completion_time_max", c.max, "ms"),
            ("session_turns_avg", s.turns_avg, "requests"),
            (
                "session_tool_round_trips_avg",
                s.tool_round_trips_avg,
                "requests",
            ),
        ]);
    }
    rows
}

/// A scored level's CSV rows, `(key, value, unit)`: the accuracy and its interval, the answers
/// graded, and where outputs were compared, the changed share, its interval and its counts.
pub fn accuracy_values(a: &crate::stats::scored::AccuracyStats) -> Vec<Entry> {
    let mut rows = vec![
        ("accuracy", a.accuracy, "fraction"),
        ("accuracy_ci_low", a.low, "fraction"),
        ("accuracy_ci_high", a.high, "fraction"),
        ("graded_count", a.graded as f64, "count"),
        ("correct_count", a.correct as f64, "count"),
        ("unparsed_count", a.unparsed as f64, "count"),
    ];
    if let Some(c) = &a.changed {
        rows.extend([
            ("answer_changed_share", c.share, "fraction"),
            ("answer_changed_ci_low", c.low, "fraction"),
            ("answer_changed_ci_high", c.high, "fraction"),
            ("answer_changed_count", c.changed as f64, "count"),
            ("answer_compared_count", c.compared as f64, "count"),
        ]);
    }
    rows
}

/// A scored level's JSON entries: `accuracy` (`{unit, avg, graded, correct, unparsed, low,
/// high, confidence, chance}`) and, where outputs were compared, `answer_changed_share`
/// (`{unit, avg, changed, compared, low, high, example}`).
pub fn accuracy_json(a: &crate::stats::scored::AccuracyStats) -> (Value, Option<Value>) {
    let accuracy = json!({
        "unit": "fraction", "avg": a.accuracy, "graded": a.graded, "correct": a.correct,
        "unparsed": a.unparsed, "low": a.low, "high": a.high, "confidence": a.confidence,
        "chance": a.chance,
    });
    let changed = a.changed.as_ref().map(|c| {
        json!({
            "unit": "fraction", "avg": c.share, "changed": c.changed, "compared": c.compared,
            "low": c.low, "high": c.high, "example": c.example,
        })
    });
    (accuracy, changed)
}

fn server_rows(d: &ServerDelta) -> Vec<(String, String, &'static str)> {
    let ms = |k: &str, v: f64| row(k, num(v), "ms");
    let mut rows = vec![
        row("server_request_count", d.requests.to_string(), "count"),
        row("server_failure_count", d.failures.to_string(), "count"),
        ms("server_request_time_avg", d.avg_request_ms),
    ];
    rows.extend(d.avg_queue_ms.map(|q| ms("server_queue_time_avg", q)));
    rows.extend([
        ms("server_compute_input_time_avg", d.avg_compute_input_ms),
        ms("server_compute_infer_time_avg", d.avg_compute_infer_ms),
        ms("server_compute_output_time_avg", d.avg_compute_output_ms),
    ]);
    rows.extend(
        d.queue_share
            .map(|q| row("server_queue_share", num(q * 100.0), "percent")),
    );
    rows.push(row(
        "server_max_pending_requests",
        num(d.max_pending),
        "count",
    ));
    rows
}

fn stats_json(unit: &str, st: &Stats) -> Value {
    json!({
        "unit": unit,
        "avg": st.avg,
        "p1": st.p1, "p5": st.p5, "p10": st.p10, "p25": st.p25, "p50": st.p50,
        "p75": st.p75, "p90": st.p90, "p95": st.p95, "p99": st.p99,
        "min": st.min, "max": st.max, "std": st.std,
        "p99.9": st.p999,
        "count": st.count,
    })
}

/// `m`'s distribution as the level's own, or null.
fn dist_json(m: Metric, st: Option<&Stats>) -> Value {
    st.map_or(Value::Null, |st| stats_json(m.unit().label(), st))
}

/// `isl_buckets`: one object a bucket, `{min_isl, max_isl (exclusive, null for the last),
/// count, time_to_first_token, request_latency}`, the two distributions as the level's own
/// (null where the bucket had no request; TTFT only when the level streamed).
fn isl_buckets_json(s: &LevelSummary) -> Value {
    let buckets: Vec<Value> = s
        .stats
        .isl_buckets
        .iter()
        .map(|b| {
            json!({
                "min_isl": b.min_isl,
                "max_isl": b.max_isl,
                "count": b.count,
                "time_to_first_token": dist_json(Metric::TimeToFirstToken, b.ttft.as_ref().filter(|_| s.streaming)),
                "request_latency": dist_json(Metric::RequestLatency, b.latency.as_ref()),
            })
        })
        .collect();
    Value::Array(buckets)
}

/// `turns` (multi-turn sessions): one object per turn index, `{turn (0-based), and_later (the
/// last bucket, holding every later turn too), count, time_to_first_token (as the level's own;
/// null without streaming or without a request), input_sequence_length: {unit, avg}}`.
pub fn turns_json(s: &LevelSummary) -> Value {
    let turns: Vec<Value> = s
        .stats
        .turns
        .iter()
        .map(|t| {
            let ttft = dist_json(
                Metric::TimeToFirstToken,
                t.ttft.as_ref().filter(|_| s.streaming),
            );
            let mut v = json!({
                "turn": t.turn,
                "and_later": t.and_later,
                "count": t.count,
                "time_to_first_token": ttft,
                "input_sequence_length": {"unit": "tokens", "avg": t.isl_avg},
            });
            if let Some(c) = t.cached_avg {
                v["cached_prompt_tokens"] = json!({"unit": "tokens", "avg": c});
            }
            v
        })
        .collect();
    Value::Array(turns)
}

/// The JSON document (without `input_config`, which the caller appends from the plan).
pub fn json(s: &LevelSummary, input_config: &Value) -> Value {
    let st = &s.stats;
    let mut m = Map::new();
    // A system metric's `{unit, avg}` entry.
    let avg = |m: &mut Map<String, Value>, key: &str, unit: &str, v: Value| {
        m.insert(key.into(), json!({"unit": unit, "avg": v}));
    };
    avg(
        &mut m,
        "request_throughput",
        "requests/sec",
        json!(st.request_throughput),
    );
    let count = |m: &mut Map<String, Value>, key: &str, n: u64| avg(m, key, "count", json!(n));
    let shown: Vec<(Metric, &Stats)> = s.shown_metrics().collect();
    let dist = |m: &mut Map<String, Value>, metric: Metric| {
        if let Some((_, stats)) = shown.iter().find(|(k, _)| *k == metric) {
            m.insert(
                metric.key().into(),
                stats_json(metric.unit().label(), stats),
            );
        }
    };
    dist(&mut m, Metric::RequestLatency);
    count(&mut m, "request_count", st.request_count);
    if let Some(g) = st.request_goodput {
        avg(&mut m, "request_goodput", "requests/sec", json!(g));
    }
    dist(&mut m, Metric::TimeToFirstToken);
    dist(&mut m, Metric::TimeToSecondToken);
    dist(&mut m, Metric::InterTokenLatency);
    let tokens = json!(st.output_token_throughput);
    avg(&mut m, "output_token_throughput", "tokens/sec", tokens);
    dist(&mut m, Metric::OutputTokenThroughputPerUser);
    dist(&mut m, Metric::OutputSequenceLength);
    dist(&mut m, Metric::InputSequenceLength);
    let tokens = json!(st.total_token_throughput);
    avg(&mut m, "total_token_throughput", "tokens/sec", tokens);
    for (key, value, unit) in api_values(&st.apis) {
        avg(&mut m, key, unit, json!(value));
    }
    if let Some(a) = &st.accuracy {
        let (accuracy, changed) = accuracy_json(a);
        m.insert("accuracy".into(), accuracy);
        if let Some(c) = changed {
            m.insert("answer_changed_share".into(), c);
        }
    }
    if let Some(sessions) = &st.sessions {
        m.insert("sessions".into(), json!(sessions));
    }
    for (metric, _) in &shown {
        if !m.contains_key(metric.key()) {
            dist(&mut m, *metric);
        }
    }
    if !st.isl_buckets.is_empty() {
        m.insert("isl_buckets".into(), isl_buckets_json(s));
    }
    if !st.turns.is_empty() {
        m.insert("turns".into(), turns_json(s));
    }
    count(&mut m, "error_count", st.error_count);
    m.insert("errors".into(), json!(st.errors));
    count(&mut m, "cancelled_count", st.cancelled_count);
    if st.abandoned_count > 0 {
        count(&mut m, "abandoned_count", st.abandoned_count);
    }
    count(&mut m, "reconnect_count", st.reconnect_count);
    if st.burst_count > 0 {
        count(&mut m, "burst_count", st.burst_count);
    }
    if let Some(c) = &st.connections {
        m.insert("connections".into(), json!(c));
    }
    avg(&mut m, "benchmark_duration", "sec", json!(st.duration_s));
    m.insert("server_metrics".into(), json!(s.server));
    m.insert("engine_metrics".into(), super::server_view::engine_json(s));
    m.insert("gpu_metrics".into(), json!(s.gpu));
    let mut validity = serde_json::to_value(&s.validity).unwrap_or_else(|_| json!({}));
    validity["interrupted"] = json!(s.interrupted);
    validity["osl_mismatch_count"] = json!(st.osl_mismatch);
    validity["osl_compared_count"] = json!(st.osl_compared);
    validity["osl_mismatch_share"] = json!(st.osl_mismatch_share());
    validity["isl_mismatch_count"] = json!(st.isl_mismatch);
    validity["isl_compared_count"] = json!(st.isl_compared);
    validity["isl_mismatch_share"] = json!(st.isl_mismatch_share());
    validity["short_output_count"] = json!(st.short_outputs);
    m.insert("validity".into(), validity);
    if let Some(d) = &s.drift {
        m.insert("drift".into(), json!(d));
    }
    m.insert(
        "level".into(),
        json!({"name": s.stimulus.name(), "stimulus": s.stimulus.kind(), "value": s.stimulus.value(), "started_unix_ns": s.started_unix_ns, "ended_unix_ns": s.ended_unix_ns, "percentile_method": st.percentile_method}),
    );
    m.insert("input_config".into(), input_config.clone());
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::stats::{ErrorCount, LevelStats};

    fn st(base: f64) -> Stats {
        Stats {
            count: 10,
            avg: base,
            min: base - 1.0,
            max: base + 9.0,
            std: 0.5,
            p1: base - 1.0,
            p5: base - 0.5,
            p10: base - 0.25,
            p25: base,
            p50: base + 0.125,
            p75: base + 1.0,
            p90: base + 2.0,
            p95: base + 3.0,
            p99: base + 8.0,
            p999: base + 9.0,
        }
    }

    fn summary(streaming: bool, server: Option<ServerDelta>) -> LevelSummary {
        LevelSummary {
            gpu: None,
            streaming,
            started_unix_ns: 1_700_000_000_000_000_000,
            ended_unix_ns: 1_700_000_060_000_000_000,
            server,
            ..LevelSummary::new(
                Stimulus::Concurrency(4),
                LevelStats {
                    metrics: vec![
                        (Metric::TimeToFirstToken, st(45.0)),
                        (Metric::RequestLatency, st(1000.0)),
                        (Metric::InterTokenLatency, st(9.5)),
                        (Metric::OutputSequenceLength, st(100.0)),
                        (Metric::InputSequenceLength, st(200.0)),
                        (Metric::SendLag, st(0.01)),
                    ],
                    request_count: 10,
                    error_count: 1,
                    errors: vec![ErrorCount {
                        kind: "http_503".into(),
                        count: 1,
                        example: "busy".into(),
                        hint: None,
                    }],
                    duration_s: 2.5,
                    output_token_throughput: 400.0,
                    total_token_throughput: 1200.0,
                    request_throughput: 4.0,
                    request_goodput: Some(3.6),
                    ..Default::default()
                },
            )
        }
    }

    #[test]
    fn csv_exact_text() {
        let expected = "\
Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1,std,unit
time_to_first_token,45.00,44.00,54.00,53.00,48.00,47.00,46.00,45.12,45.00,44.75,44.50,44.00,0.50,ms
request_latency,1000.00,999.00,1009.00,1008.00,1003.00,1002.00,1001.00,1000.12,1000.00,999.75,999.50,999.00,0.50,ms
inter_token_latency,9.50,8.50,18.50,17.50,12.50,11.50,10.50,9.62,9.50,9.25,9.00,8.50,0.50,ms
output_sequence_length,100.00,99.00,109.00,108.00,103.00,102.00,101.00,100.12,100.00,99.75,99.50,99.00,0.50,tokens
input_sequence_length,200.00,199.00,209.00,208.00,203.00,202.00,201.00,200.12,200.00,199.75,199.50,199.00,0.50,tokens

Metric,Value,unit
output_token_throughput,400.00,tokens/sec
total_token_throughput,1200.00,tokens/sec
request_throughput,4.00,requests/sec
request_goodput,3.60,requests/sec
request_count,10,count
error_count,1,count
benchmark_duration,2.50,sec
";
        assert_eq!(csv(&summary(true, None)), expected);
    }

    #[test]
    fn csv_without_streaming_drops_token_timing_rows() {
        let text = csv(&summary(false, None));
        assert!(!text.contains("time_to_first_token"));
        assert!(!text.contains("inter_token_latency"));
        assert!(text.contains("\nrequest_latency,1000.00,"));
    }

    #[test]
    fn csv_server_rows() {
        let d = ServerDelta {
            source: "prometheus",
            requests: 10,
            executions: 40,
            max_pending: 3.0,
            ..ServerDelta::from_phase_avgs(10.0, 0.1, 39.8, 0.1)
        };
        let text = csv(&summary(true, Some(d)));
        let tail = text.split("benchmark_duration,2.50,sec\n").nth(1).unwrap();
        assert_eq!(
            tail,
            "\
server_request_count,10,count
server_failure_count,0,count
server_request_time_avg,50.00,ms
server_queue_time_avg,10.00,ms
server_compute_input_time_avg,0.10,ms
server_compute_infer_time_avg,39.80,ms
server_compute_output_time_avg,0.10,ms
server_queue_share,20.00,percent
server_max_pending_requests,3.00,count
"
        );
    }

    #[test]
    fn seed_snippets_find_the_ttft_row() {
        let text = csv(&summary(true, None));
        // column -s, -t file | grep -i first_token
        assert_eq!(
            text.lines()
                .filter(|l| l.to_lowercase().contains("first_token"))
                .count(),
            1
        );
        // csv.DictReader: rows keyed by the first header line; 'time_to_first_token' in r['Metric']
        let mut rdr = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(text.as_bytes());
        let headers = rdr.headers().unwrap().clone();
        let metric = headers.iter().position(|h| h == "Metric").unwrap();
        let avg = headers.iter().position(|h| h == "avg").unwrap();
        let p99 = headers.iter().position(|h| h == "p99").unwrap();
        let rows: Vec<_> = rdr
            .records()
            .map(|r| r.unwrap())
            .filter(|r| {
                r.get(metric)
                    .is_some_and(|m| m.contains("time_to_first_token"))
            })
            .collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(&rows[0][avg], "45.00");
        assert_eq!(&rows[0][p99], "53.00");
    }

    #[test]
    fn json_keys_and_order() {
        let v = json(&summary(true, None), &json!({"model": "gpt2"}));
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "request_throughput",
                "request_latency",
                "request_count",
                "request_goodput",
                "time_to_first_token",
                "inter_token_latency",
                "output_token_throughput",
                "output_sequence_length",
                "input_sequence_length",
                "total_token_throughput",
                "error_count",
                "errors",
                "cancelled_count",
                "reconnect_count",
                "benchmark_duration",
                "server_metrics",
                "engine_metrics",
                "gpu_metrics",
                "validity",
                "level",
                "input_config"
            ]
        );
        let ttft = &v["time_to_first_token"];
        assert_eq!(ttft["unit"], "ms");
        assert_eq!(ttft["avg"], 45.0);
        assert_eq!(ttft["p99"], 53.0);
        assert_eq!(ttft["p99.9"], 54.0);
        let ttft_keys: Vec<&str> = ttft
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            ttft_keys,
            [
                "unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min",
                "max", "std", "p99.9", "count"
            ]
        );
        assert_eq!(v["request_count"], json!({"unit": "count", "avg": 10}));
        assert_eq!(v["server_metrics"], Value::Null);
        assert_eq!(v["engine_metrics"], Value::Null);
        assert_eq!(v["level"]["name"], "concurrency4");
        assert_eq!(v["input_config"]["model"], "gpt2");
    }

    /// A level of sessions: its CSV rows exact, its JSON entry read back whole.
    #[test]
    fn sessions_rows_exact_and_json_round_trip() {
        use crate::stats::sessions::SessionStats;
        let mut s = summary(true, None);
        let mut completion = st(900.0);
        completion.count = 3;
        s.stats.sessions = Some(SessionStats {
            completed: 3,
            failed: 1,
            cut_short: 0,
            completion: Some(completion),
            turns_avg: 7.0,
            tool_round_trips_avg: 1.0,
        });
        let text = csv(&s);
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("session_")).collect();
        assert_eq!(
            rows,
            [
                "session_completed_count,3,count",
                "session_failed_count,1,count",
                "session_cut_short_count,0,count",
                "session_completion_time_avg,900.00,ms",
                "session_completion_time_p50,900.12,ms",
                "session_completion_time_p90,902.00,ms",
                "session_completion_time_p99,908.00,ms",
                "session_completion_time_max,909.00,ms",
                "session_turns_avg,7.00,requests",
                "session_tool_round_trips_avg,1.00,requests",
            ]
        );
        let doc = json(&s, &Value::Null);
        let back: SessionStats = serde_json::from_value(doc["sessions"].clone()).unwrap();
        assert_eq!(Some(back), s.stats.sessions);
        s.stats.sessions = None;
        assert!(json(&s, &Value::Null).get("sessions").is_none());
        assert!(!csv(&s).contains("session_"));
    }

    /// The per-turn block of a run of sessions, exact; TTFT is null without streaming.
    #[test]
    fn turns_block_exact() {
        use crate::stats::turns::TurnStats;
        let mut s = summary(true, None);
        let mut one = st(20.0);
        one.count = 3;
        s.stats.turns = vec![
            TurnStats {
                turn: 0,
                and_later: false,
                count: 3,
                ttft: Some(one),
                isl_avg: 100.0,
                cached_avg: Some(64.0),
            },
            TurnStats {
                turn: 1,
                and_later: false,
                count: 0,
                ttft: None,
                isl_avg: 0.0,
                cached_avg: None,
            },
        ];
        assert_eq!(
            serde_json::to_string(&turns_json(&s)).unwrap(),
            r#"[{"turn":0,"and_later":false,"count":3,"time_to_first_token":{"unit":"ms","avg":20.0,"p1":19.0,"p5":19.5,"p10":19.75,"p25":20.0,"p50":20.125,"p75":21.0,"p90":22.0,"p95":23.0,"p99":28.0,"min":19.0,"max":29.0,"std":0.5,"p99.9":29.0,"count":3},"input_sequence_length":{"unit":"tokens","avg":100.0},"cached_prompt_tokens":{"unit":"tokens","avg":64.0}},{"turn":1,"and_later":false,"count":0,"time_to_first_token":null,"input_sequence_length":{"unit":"tokens","avg":0.0}}]"#
        );
        let doc = json(&s, &Value::Null);
        assert_eq!(doc["turns"][0]["count"], 3);
        let back = crate::artifact::read::level_from_json(&doc, std::path::Path::new("x"));
        assert_eq!(back.unwrap().summary.stats.turns, s.stats.turns);
        s.streaming = false;
        assert!(turns_json(&s)[0]["time_to_first_token"].is_null());
        s.stats.turns.clear();
        assert!(
            json(&s, &Value::Null).get("turns").is_none(),
            "no sessions, no block"
        );
    }
}
