//! `histograms.json`: every metric's HDR histogram in the standard serialized form (HdrHistogram
//! "V2 compressed", base64 — what HdrHistogram interval logs carry, readable by the Java, Python
//! and Go libraries), plus the exact running moments, so levels and shards merge without loss.
//!
//! ```text
//! {"format": "hdrhistogram-v2-deflate-base64", "significant_digits": 3,
//!  "metrics": {"time_to_first_token": {"stored_unit": "ns", "count": 200, "sum": 9.1e9,
//!              "sum_sq": 4.2e17, "min": 41000000, "max": 52000000, "hdr": "HISTFAAA..."}, ...}}
//! ```
//! Stored units: `ns` for times, `tokens` for lengths, `millitokens/sec` for per-user throughput.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde_json::{Map, Value, json};

use crate::metrics::{Metric, Unit};
use crate::stats::{Aggregate, Dist, SIGFIG};

fn stored_unit(m: Metric) -> &'static str {
    match m.unit() {
        Unit::Millis => "ns",
        Unit::Tokens => "tokens",
        Unit::TokensPerSecPerUser => "millitokens/sec",
    }
}

/// Encodes every non-empty distribution of `agg`.
pub fn encode(agg: &Aggregate) -> Value {
    let mut metrics = Map::new();
    for (m, d) in agg.dists() {
        if d.count() == 0 {
            continue;
        }
        let mut buf = Vec::new();
        if V2DeflateSerializer::new()
            .serialize(d.histogram(), &mut buf)
            .is_err()
        {
            continue;
        }
        let (count, sum, sum_sq, min, max) = d.moments();
        metrics.insert(
            m.key().to_string(),
            json!({
                "stored_unit": stored_unit(m),
                "count": count,
                "sum": sum,
                "sum_sq": sum_sq,
                "min": min,
                "max": max,
                "hdr": base64::engine::general_purpose::STANDARD.encode(&buf),
            }),
        );
    }
    json!({"format": "hdrhistogram-v2-deflate-base64", "significant_digits": SIGFIG, "metrics": metrics})
}

/// Decodes the distributions of a `histograms.json` document into `agg` (metrics it does not
/// know are skipped). Returns how many were read.
pub fn decode_into(doc: &Value, agg: &mut Aggregate) -> Result<usize, String> {
    let metrics = doc
        .get("metrics")
        .and_then(Value::as_object)
        .ok_or("histograms.json: no \"metrics\" object")?;
    let mut n = 0;
    for (key, v) in metrics {
        let Some(m) = Metric::from_key(key) else {
            continue;
        };
        let b64 = v
            .get("hdr")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{key}: no \"hdr\""))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("{key}: {e}"))?;
        let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("{key}: {e:?}"))?;
        let num = |f: &str| {
            v.get(f)
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("{key}: no \"{f}\""))
        };
        let d = Dist::from_parts(
            hist,
            num("count")? as u64,
            num("sum")?,
            num("sum_sq")?,
            num("min")? as u64,
            num("max")? as u64,
        );
        agg.set_dist(m, d);
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Phase, RequestRecord};

    #[test]
    fn round_trip_keeps_statistics() {
        let mut agg = Aggregate::new();
        for i in 1..=500u64 {
            let rec = RequestRecord {
                phase: Phase::Measure,
                seq: i,
                prompt_index: 0,
                intended_ns: 0,
                sent_ns: 0,
                send_done_ns: None,
                first_byte_ns: Some(i * 900_000),
                first_token_ns: Some(i * 1_000_000),
                second_token_ns: Some(i * 1_000_000 + 5_000_000),
                last_token_ns: Some(i * 1_000_000 + 500_000_000),
                end_ns: i * 1_000_000 + 500_000_000,
                isl: 200,
                osl: 101,
                server_osl: None,
                tokenizer_osl: None,
                server_isl: None,
                requested_osl: 101,
                chunks: 101,
                responses: 102,
                lossy_text: false,
                error: None,
            };
            agg.record(&rec, &[5_000_000, 4_000_000], &[]);
        }
        let doc = encode(&agg);
        let text = serde_json::to_string(&doc).unwrap();
        let mut back = Aggregate::new();
        let n = decode_into(&serde_json::from_str(&text).unwrap(), &mut back).unwrap();
        assert!(n >= 8);
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
