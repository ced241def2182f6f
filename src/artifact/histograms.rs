//! `histograms.json`: every metric's HDR histogram in the standard serialized form (HdrHistogram
//! "V2 compressed", base64 — what HdrHistogram interval logs carry, readable by the Java, Python
//! and Go libraries), plus the exact running moments and the level's counters, so levels and
//! shards merge without loss: adding the files of a level's shards gives the file one process
//! would have written for all their requests.
//!
//! ```text
//! {"format": "hdrhistogram-v2-deflate-base64", "schema_version": 2, "significant_digits": 3,
//!  "metrics": {"time_to_first_token": {"stored_unit": "ns", "count": 200, "sum": 9.1e9,
//!              "sum_sq": 4.2e17, "min": 41000000, "max": 52000000, "hdr": "HISTFAAA..."}, ...},
//!  "counters": {"ok": 200, "good": 180, "warmup": 0, "sum_osl": 20000, "sum_isl": 40000,
//!               "osl_mismatch": 0, "short_outputs": 0, "sum_chunks": 20000, "sum_send_ns": 0,
//!               "send_count": 0, "sum_recv_ns": 9.0e10,
//!               "first_sent_unix_ns": 1767225600001000000, "last_response_unix_ns": ...,
//!               "errors": [{"kind": "http_503", "count": 2, "example": "HTTP 503: busy"}],
//!               "cancelled": 0, "reconnects": 0, "osl_compared": 0, "isl_mismatch": 0,
//!               "isl_compared": 0}}
//! ```
//! `cancelled` counts requests cancelled on purpose (`--request-cancellation-rate`), `reconnects`
//! requests sent again on a fresh connection, `osl_compared` / `isl_compared` the requests with
//! a server usage count and `isl_mismatch` those whose input count differed from the client's;
//! files written before these existed read as 0. Levels of the newer APIs add `"apis":
//! {"inputs", "images", "image_bytes", "tools_offered", "tools_called", "tools_valid"}` (absent:
//! all 0); levels where a streamed answer's tokens all arrived in one burst add `"burst"`, the
//! number of such requests (absent: 0); levels stopped by a second Ctrl-C add `"abandoned"`, the
//! requests abandoned in flight (absent: 0; older files listed them among the errors as
//! `cancelled`, which reads back as abandoned). Levels of a scored workload add `"answers":
//! {"graded", "correct", "unparsed", "compared", "changed", "example"}`: counts, the prompts
//! whose output was compared with its reference and those that differed (prompt indices:
//! shards send disjoint prompts, so their lists join), and the first change's example. Levels
//! of sessions add `"sessions": {"completion", "failed", "cut_short", "turns",
//! "tool_round_trips"}`: the completed sessions' time to task completion (an entry as in
//! `metrics`, in ns; `null` when none completed) and counts, requests and tool round trips
//! summed over the completed sessions.
//! Stored units: `ns` for times, `tokens` for lengths, `millitokens/sec` for per-user throughput.
//! The counters' times are absolute (Unix ns), so shards' windows line up; files without
//! `counters` (older versions) still give their distributions.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde_json::{Map, Value, json};

use crate::metrics::{Metric, Unit};
use crate::record::ErrorKind;
use crate::stats::{Aggregate, Dist, Moments, SIGFIG};

fn stored_unit(m: Metric) -> &'static str {
    match m.unit() {
        Unit::Millis => "ns",
        Unit::Tokens => "tokens",
        Unit::TokensPerSecPerUser => "millitokens/sec",
    }
}

/// Encodes every non-empty distribution of `agg` and its counters; `unix_anchor_ns` is the
/// Unix time of the clock `agg`'s times are on.
pub fn encode(agg: &Aggregate, unix_anchor_ns: u64) -> Value {
    let mut metrics = Map::new();
    for (m, d) in agg.dists() {
        if let Some(v) = dist_entry(stored_unit(m), d) {
            metrics.insert(m.key().to_string(), v);
        }
    }
    let mut doc = json!({"format": "hdrhistogram-v2-deflate-base64",
        "schema_version": super::SCHEMA_VERSION, "significant_digits": SIGFIG,
        "metrics": metrics, "counters": counters(agg, unix_anchor_ns)});
    if !agg.isl.edges().is_empty() {
        doc["isl_buckets"] = isl_json(agg);
    }
    doc
}

/// One distribution's entry, in `unit` (see [`stored_unit`]); `None` when it is empty (or,
/// unreachably, does not serialize).
fn dist_entry(unit: &str, d: &Dist) -> Option<Value> {
    if d.count() == 0 {
        return None;
    }
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(d.histogram(), &mut buf)
        .ok()?;
    let Moments {
        count,
        sum,
        sum_sq,
        min,
        max,
    } = d.moments();
    Some(json!({
        "stored_unit": unit,
        "count": count,
        "sum": sum,
        "sum_sq": sum_sq,
        "min": min,
        "max": max,
        "hdr": base64::engine::general_purpose::STANDARD.encode(&buf),
    }))
}

/// `isl_buckets` (`--isl-buckets`): `{"edges": [128, 512], "buckets": [{"time_to_first_token":
/// {...}, "request_latency": {...}}, ...]}`, one bucket more than edges, each distribution as in
/// `metrics` (absent when empty).
fn isl_json(agg: &Aggregate) -> Value {
    let buckets: Vec<Value> = agg
        .isl
        .dists()
        .iter()
        .map(|(ttft, latency)| {
            let mut b = Map::new();
            for (m, d) in [
                (Metric::TimeToFirstToken, ttft),
                (Metric::RequestLatency, latency),
            ] {
                if let Some(v) = dist_entry(stored_unit(m), d) {
                    b.insert(m.key().to_string(), v);
                }
            }
            Value::Object(b)
        })
        .collect();
    json!({"edges": agg.isl.edges(), "buckets": buckets})
}

/// Why a `histograms.json` cannot be read back: the message names the entry and what is wrong
/// with it. Such a file was damaged or written by something else: exit code 2 (the caller
/// names the file).
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// No `metrics` object.
    #[error("histograms.json: no \"metrics\" object")]
    NoMetrics,
    /// A distribution, or the counters, lack a field.
    #[error("{entry}: no \"{field}\"")]
    Missing {
        /// The metric key, or `counters`.
        entry: String,
        /// The field.
        field: &'static str,
    },
    /// A histogram that is not base64.
    #[error("{key}: {cause}")]
    Base64 {
        /// The metric key.
        key: String,
        /// What the decoder said.
        cause: base64::DecodeError,
    },
    /// Bytes that do not decode as an HDR histogram.
    #[error("{key}: not an HDR histogram (its encoding does not decode)")]
    NotHdr {
        /// The metric key.
        key: String,
    },
    /// Bytes the HDR decoder refused.
    #[error("{key}: {cause:?}")]
    Hdr {
        /// The metric key.
        key: String,
        /// What the decoder said.
        cause: hdrhistogram::serialization::DeserializeError,
    },
    /// A distribution whose minimum is above its maximum.
    #[error("{key}: min {min} is above max {max}")]
    MinAboveMax {
        /// The metric key.
        key: String,
        /// Its `min`.
        min: u64,
        /// Its `max`.
        max: u64,
    },
    /// `isl_buckets` without `edges`.
    #[error("isl_buckets: no \"edges\"")]
    NoEdges,
    /// An `isl_buckets` edge that is not a token count.
    #[error("isl_buckets: an edge is not a token count")]
    BadEdge,
    /// `isl_buckets` edges a plan could not have asked for.
    #[error("isl_buckets: {0}")]
    Edges(String),
    /// More buckets than the edges cut.
    #[error("isl_buckets: {edges} edges but more buckets")]
    ExtraBuckets {
        /// Edges in the file.
        edges: usize,
    },
    /// An error kind this version does not know.
    #[error("counters: unknown error kind \"{0}\"")]
    ErrorKind(String),
}

crate::error::usage_error!(HistogramError);

/// Reads `isl_buckets` into `agg` when the file has them.
fn decode_isl(doc: &Value, agg: &mut Aggregate) -> Result<(), HistogramError> {
    let Some(v) = doc.get("isl_buckets") else {
        return Ok(());
    };
    let edges: Vec<u32> = v["edges"]
        .as_array()
        .ok_or(HistogramError::NoEdges)?
        .iter()
        .map(|e| e.as_u64().and_then(|n| u32::try_from(n).ok()))
        .collect::<Option<_>>()
        .ok_or(HistogramError::BadEdge)?;
    if let Some(why) = crate::metrics::buckets::edges_problem(&edges) {
        return Err(HistogramError::Edges(why));
    }
    agg.isl = crate::stats::isl::IslDists::new(&edges);
    let buckets = v.get("buckets").and_then(Value::as_array);
    for (i, b) in buckets.into_iter().flatten().enumerate() {
        let mut pair = [Dist::new(), Dist::new()];
        for (slot, m) in pair
            .iter_mut()
            .zip([Metric::TimeToFirstToken, Metric::RequestLatency])
        {
            if let Some(d) = b.get(m.key()) {
                *slot = dist_from(m.key(), d)?;
            }
        }
        let [ttft, latency] = pair;
        if !agg.isl.set(i, ttft, latency) {
            return Err(HistogramError::ExtraBuckets { edges: edges.len() });
        }
    }
    Ok(())
}

fn counters(agg: &Aggregate, unix_anchor_ns: u64) -> Value {
    let errors: Vec<Value> = agg
        .error_entries()
        .map(|(k, n, m)| json!({"kind": k.key(), "count": n, "example": m}))
        .collect();
    let mut c = json!({
        "ok": agg.ok, "good": agg.good, "warmup": agg.warmup,
        "sum_osl": agg.sum_osl, "sum_isl": agg.sum_isl,
        "osl_mismatch": agg.osl_mismatch, "short_outputs": agg.short_outputs,
        "osl_compared": agg.osl_compared,
        "isl_mismatch": agg.isl_mismatch, "isl_compared": agg.isl_compared,
        "sum_chunks": agg.sum_chunks, "sum_send_ns": agg.sum_send_ns,
        "send_count": agg.send_count, "sum_recv_ns": agg.sum_recv_ns,
        "first_sent_unix_ns": agg.first_sent_ns.map(|t| unix_anchor_ns + t),
        "last_response_unix_ns": agg.last_response_ns.map(|t| unix_anchor_ns + t),
        "errors": errors,
        "cancelled": agg.cancelled,
        "reconnects": agg.reconnects,
    });
    // Only levels of the newer APIs have these: other levels' files stay as they were.
    let a = &agg.apis;
    if *a != crate::stats::apis::ApiTally::default() {
        c["apis"] = json!({"inputs": a.inputs, "images": a.images, "image_bytes": a.image_bytes,
            "tools_offered": a.offered, "tools_called": a.called, "tools_valid": a.valid});
    }
    // Likewise only levels that saw a buffered stream, or were stopped by a second Ctrl-C.
    if agg.burst > 0 {
        c["burst"] = json!(agg.burst);
    }
    if agg.abandoned > 0 {
        c["abandoned"] = json!(agg.abandoned);
    }
    // And only scored workloads' levels.
    let t = &agg.answers;
    if t.graded > 0 {
        c["answers"] = json!({"graded": t.graded, "correct": t.correct, "unparsed": t.unparsed,
            "compared": t.compared.iter().collect::<Vec<u32>>(),
            "changed": t.changed.iter().collect::<Vec<u32>>(), "example": t.example});
    }
    // And only levels of sessions.
    let s = &agg.sessions;
    if s.completion.count() + s.failed + s.cut > 0 {
        c["sessions"] = json!({"completion": dist_entry("ns", &s.completion), "failed": s.failed,
            "cut_short": s.cut, "turns": s.turns, "tool_round_trips": s.tools});
    }
    c
}

/// A level's sessions as [`counters`] writes them (absent: none ended).
fn sessions_from(
    v: Option<&Value>,
) -> Result<crate::stats::sessions::SessionDists, HistogramError> {
    let Some(v) = v else {
        return Ok(Default::default());
    };
    let n = |k: &str| or_zero(v, k);
    let completion = match v.get("completion").filter(|c| !c.is_null()) {
        Some(c) => dist_from("sessions.completion", c)?,
        None => Dist::default(),
    };
    Ok(crate::stats::sessions::SessionDists {
        completion,
        failed: n("failed"),
        cut: n("cut_short"),
        turns: n("turns"),
        tools: n("tool_round_trips"),
    })
}

/// A scored level's answers as [`counters`] writes them (absent: none graded).
fn answers_from(v: Option<&Value>) -> crate::stats::scored::AnswerTally {
    let Some(v) = v else {
        return Default::default();
    };
    let n = |k: &str| or_zero(v, k);
    let set = |k: &str| {
        let mut s = crate::stats::scored::PromptSet::default();
        for i in v.get(k).and_then(Value::as_array).into_iter().flatten() {
            if let Some(i) = i.as_u64().and_then(|i| u32::try_from(i).ok()) {
                s.insert(i);
            }
        }
        s
    };
    crate::stats::scored::AnswerTally {
        graded: n("graded"),
        correct: n("correct"),
        unparsed: n("unparsed"),
        compared: set("compared"),
        changed: set("changed"),
        example: serde_json::from_value(v["example"].clone()).ok(),
    }
}

/// The whole number at `k` in `v`; 0 when absent (files written before it was counted).
fn or_zero(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn apis_from(v: Option<&Value>) -> crate::stats::apis::ApiTally {
    let n = |k: &str| v.map_or(0, |v| or_zero(v, k));
    crate::stats::apis::ApiTally {
        inputs: n("inputs"),
        images: n("images"),
        image_bytes: n("image_bytes"),
        offered: n("tools_offered"),
        called: n("tools_called"),
        valid: n("tools_valid"),
    }
}

/// Reads the counters into `agg` (its times become Unix ns); `false` when the file has none.
fn decode_counters(doc: &Value, agg: &mut Aggregate) -> Result<bool, HistogramError> {
    let Some(c) = doc.get("counters") else {
        return Ok(false);
    };
    let u = |field: &'static str| {
        c.get(field)
            .and_then(Value::as_u64)
            .ok_or_else(|| HistogramError::Missing {
                entry: "counters".into(),
                field,
            })
    };
    agg.ok = u("ok")?;
    agg.good = u("good")?;
    agg.warmup = u("warmup")?;
    agg.sum_osl = u("sum_osl")?;
    agg.sum_isl = u("sum_isl")?;
    agg.osl_mismatch = u("osl_mismatch")?;
    agg.short_outputs = u("short_outputs")?;
    agg.sum_chunks = u("sum_chunks")?;
    agg.sum_send_ns = u("sum_send_ns")?;
    agg.send_count = u("send_count")?;
    agg.sum_recv_ns = u("sum_recv_ns")?;
    agg.first_sent_ns = c.get("first_sent_unix_ns").and_then(Value::as_u64);
    agg.last_response_ns = c.get("last_response_unix_ns").and_then(Value::as_u64);
    // Absent in files written before these were counted.
    agg.cancelled = or_zero(c, "cancelled");
    agg.reconnects = or_zero(c, "reconnects");
    agg.osl_compared = or_zero(c, "osl_compared");
    agg.isl_mismatch = or_zero(c, "isl_mismatch");
    agg.isl_compared = or_zero(c, "isl_compared");
    agg.burst = or_zero(c, "burst");
    agg.abandoned = or_zero(c, "abandoned");
    agg.apis = apis_from(c.get("apis"));
    agg.answers = answers_from(c.get("answers"));
    agg.sessions = sessions_from(c.get("sessions"))?;
    for e in c["errors"].as_array().into_iter().flatten() {
        let key = e.get("kind").and_then(Value::as_str).unwrap_or("");
        let kind = ErrorKind::from_key(key).ok_or_else(|| HistogramError::ErrorKind(key.into()))?;
        let n = or_zero(e, "count");
        let example = e.get("example").and_then(Value::as_str).unwrap_or("");
        // Older files listed abandoned requests among the errors (as `cancelled`).
        if kind == ErrorKind::Abandoned {
            agg.abandoned += n;
        } else {
            agg.add_errors(kind, n, example);
        }
    }
    Ok(true)
}

/// Decodes a `histograms.json` document into `agg`: its distributions (metrics it does not know
/// are skipped) and, when the file has them, its counters (times in Unix ns). Returns how many
/// distributions were read and whether there were counters.
pub fn decode(doc: &Value, agg: &mut Aggregate) -> Result<(usize, bool), HistogramError> {
    let metrics = doc["metrics"]
        .as_object()
        .ok_or(HistogramError::NoMetrics)?;
    let mut n = 0;
    for (key, v) in metrics {
        let Some(m) = Metric::from_key(key) else {
            continue;
        };
        let d = dist_from(key, v)?;
        agg.set_dist(m, d);
        n += 1;
    }
    decode_isl(doc, agg)?;
    Ok((n, decode_counters(doc, agg)?))
}

/// One distribution entry of the file, checked: a damaged one is an error, never a crash.
fn dist_from(key: &str, v: &Value) -> Result<Dist, HistogramError> {
    let missing = |field| HistogramError::Missing {
        entry: key.into(),
        field,
    };
    let b64 = v["hdr"].as_str().ok_or_else(|| missing("hdr"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|cause| HistogramError::Base64 {
            key: key.into(),
            cause,
        })?;
    // The hdrhistogram crate's varint decoding can overflow on damaged bytes (a panic where
    // arithmetic is checked): a file from elsewhere must be an error, never a crash.
    let hist: hdrhistogram::Histogram<u64> =
        std::panic::catch_unwind(|| Deserializer::new().deserialize(&mut bytes.as_slice()))
            .map_err(|_| HistogramError::NotHdr { key: key.into() })?
            .map_err(|cause| HistogramError::Hdr {
                key: key.into(),
                cause,
            })?;
    let num = |field| {
        v.get(field)
            .and_then(Value::as_f64)
            .ok_or_else(|| missing(field))
    };
    let (min, max) = (num("min")? as u64, num("max")? as u64);
    if !hist.is_empty() && min > max {
        return Err(HistogramError::MinAboveMax {
            key: key.into(),
            min,
            max,
        });
    }
    let moments = Moments {
        count: num("count")? as u64,
        sum: num("sum")?,
        sum_sq: num("sum_sq")?,
        min,
        max,
    };
    Ok(Dist::from_parts(hist, moments))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RequestRecord;

    #[test]
    fn round_trip_keeps_statistics() {
        let mut agg = Aggregate::new();
        for i in 1..=500u64 {
            let rec = RequestRecord {
                seq: i,
                first_byte_ns: Some(i * 900_000),
                first_token_ns: Some(i * 1_000_000),
                second_token_ns: Some(i * 1_000_000 + 5_000_000),
                last_token_ns: Some(i * 1_000_000 + 500_000_000),
                end_ns: i * 1_000_000 + 500_000_000,
                isl: 200,
                responses: 102,
                ..crate::stats::test_record(0, 0, 101)
            };
            agg.record(&rec, &[5_000_000, 4_000_000], &[]);
        }
        agg.record_error(ErrorKind::HttpStatus(503), "HTTP 503: busy");
        agg.record_error(ErrorKind::GrpcStatus(14), "unavailable");
        agg.cancelled = 7;
        agg.burst = 3;
        agg.abandoned = 4;
        // A scored level's answers: counts, compared and changed prompts, the example.
        agg.answers.graded = 500;
        agg.answers.correct = 321;
        for p in [0, 5, 200] {
            agg.answers.compared.insert(p);
        }
        agg.answers.changed.insert(200);
        agg.answers.example = Some(crate::record::ChangeExample {
            prompt: 200,
            token: 3,
            reference: " the".into(),
            now: " of".into(),
        });
        // Sessions: two completed (7 and 5 requests, 3 tool round trips), one failed.
        use crate::record::{SessionEnd, SessionOutcome};
        for (end, turns, tool_round_trips) in [
            (SessionEnd::Completed(1_800_000_000), 7, 3),
            (SessionEnd::Completed(900_000_000), 5, 0),
            (SessionEnd::Failed, 2, 0),
        ] {
            let s = SessionOutcome {
                end,
                turns,
                tool_round_trips,
            };
            agg.sessions.record(s);
        }
        let doc = encode(&agg, 1_000_000_000);
        let text = serde_json::to_string(&doc).unwrap();
        let mut back = Aggregate::new();
        let (n, counters) = decode(&serde_json::from_str(&text).unwrap(), &mut back).unwrap();
        assert!(n >= 8 && counters);
        let sessions = back
            .summarize(false, crate::metrics::PercentileMethod::Linear)
            .sessions;
        let s = sessions.expect("sessions read back");
        assert_eq!(
            (s.completed, s.failed, s.turns_avg, s.tool_round_trips_avg),
            (2, 1, 6.0, 1.5)
        );
        assert_eq!(back.ok, 500);
        assert_eq!(back.sum_osl, 500 * 101);
        assert_eq!(back.error_counts(), agg.error_counts());
        assert_eq!((back.cancelled, back.burst, back.abandoned), (7, 3, 4));
        assert_eq!(back.answers, agg.answers);
        assert_eq!(back.first_sent_ns, Some(1_000_000_000), "absolute");
        assert_eq!(back.last_response_ns, Some(1_000_000_000 + 1_000_000_000));
        assert_eq!(
            back.summarize(false, crate::metrics::PercentileMethod::Linear),
            agg.summarize(false, crate::metrics::PercentileMethod::Linear)
        );
        for m in [
            Metric::TimeToFirstToken,
            Metric::InterTokenLatency,
            Metric::InterChunkLatency,
            Metric::OutputSequenceLength,
        ] {
            assert_eq!(
                agg.dist(m).stats(1.0),
                back.dist(m).stats(1.0),
                "{}",
                m.key()
            );
        }
    }
}
