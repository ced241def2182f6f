//! Checking the one answer of an embeddings or rankings request: one vector (or score) per
//! input sent, every number finite, every vector of one dimension. Pure functions of the body;
//! embeddings are read without building their vectors (a batch of 64 vectors of 1024 floats is
//! counted and checked, not stored).
//!
//! Shapes read:
//! * embeddings (OpenAI): `{"data": [{"index": i, "embedding": [f, ...]}, ...], "usage":
//!   {"prompt_tokens": n}}`; an `embedding` given as a base64 string (`encoding_format:
//!   base64`) counts 4 bytes a number;
//! * rankings: Cohere/Jina `{"results": [{"index", "relevance_score"}]}` (vLLM, llama-server,
//!   TEI's `/v1/rerank`), NIM `{"rankings": [{"index", "logit"}]}`, TEI `[{"index", "score"}]`;
//! * an `error` field (string or `{message}`), in either.

use std::fmt;

use base64::Engine as _;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a valid answer held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchReply {
    /// Vectors or scores: the inputs sent.
    pub items: u32,
    /// The vectors' dimension (embeddings).
    pub dim: Option<u32>,
    /// `usage.prompt_tokens`, when the server reported it.
    pub prompt_tokens: Option<u32>,
}

/// Why an answer is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchError {
    /// The server reported an error in the body.
    Server(String),
    /// The body is not what the API defines, or does not answer every input.
    Malformed(String),
}

/// Checks an embeddings answer to a request of `expected` texts.
pub fn embeddings(body: &[u8], expected: u32) -> Result<BatchReply, BatchError> {
    let answer: Embeddings = serde_json::from_slice(body)
        .map_err(|e| BatchError::Malformed(not_json("embeddings", body, &e)))?;
    if let Some(e) = super::events::error_message(&answer.error) {
        return Err(BatchError::Server(e));
    }
    let Some(data) = answer.data else {
        return Err(BatchError::Malformed(
            "the answer has no \"data\" list of embeddings".into(),
        ));
    };
    if let Some(msg) = data
        .iter()
        .enumerate()
        .find_map(|(i, d)| d.embedding.problem(i))
    {
        return Err(BatchError::Malformed(msg));
    }
    check_count(data.iter().map(|d| d.index.as_u64()), expected, "embedding")?;
    let dim = data.first().map(|d| d.embedding.dim);
    if let Some(i) = data.iter().position(|d| Some(d.embedding.dim) != dim) {
        return Err(BatchError::Malformed(format!(
            "embedding {i} has {} dimensions where embedding 0 has {}",
            data[i].embedding.dim,
            dim.unwrap_or(0)
        )));
    }
    if dim == Some(0) {
        return Err(BatchError::Malformed("the embeddings are empty".into()));
    }
    Ok(BatchReply {
        items: expected,
        dim,
        prompt_tokens: prompt_tokens(&answer.usage),
    })
}

/// Checks a rankings answer to a request of `expected` passages.
pub fn rankings(body: &[u8], expected: u32) -> Result<BatchReply, BatchError> {
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| BatchError::Malformed(not_json("rankings", body, &e)))?;
    if let Some(e) = v.get("error").and_then(super::events::error_message) {
        return Err(BatchError::Server(e));
    }
    let list = match &v {
        serde_json::Value::Array(a) => a,
        _ => ["results", "rankings", "data"]
            .iter()
            .find_map(|k| v.get(k)?.as_array())
            .ok_or_else(|| {
                BatchError::Malformed(
                    "the answer has no \"results\" (or \"rankings\") list of scores".into(),
                )
            })?,
    };
    let mut seen: Vec<Option<u64>> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let score = ["relevance_score", "score", "logit"]
            .iter()
            .find_map(|k| item.get(k))
            .ok_or_else(|| BatchError::Malformed(format!("result {i} has no score")))?;
        if !score.as_f64().is_some_and(f64::is_finite) {
            return Err(BatchError::Malformed(format!(
                "result {i}'s score is not a finite number: {score}"
            )));
        }
        seen.push(item.get("index").and_then(serde_json::Value::as_u64));
    }
    check_count(seen.into_iter(), expected, "score")?;
    Ok(BatchReply {
        items: expected,
        dim: None,
        prompt_tokens: v.get("usage").and_then(prompt_tokens),
    })
}

/// `usage.prompt_tokens`, when the server reported it.
fn prompt_tokens(usage: &serde_json::Value) -> Option<u32> {
    let n = usage.get("prompt_tokens")?.as_u64()?;
    Some(n.min(u64::from(u32::MAX)) as u32)
}

/// One item per input, and (where items say their index) every index once, below `expected`.
fn check_count(
    indexes: impl ExactSizeIterator<Item = Option<u64>>,
    expected: u32,
    what: &str,
) -> Result<(), BatchError> {
    let n = indexes.len();
    if n != expected as usize {
        return Err(BatchError::Malformed(format!(
            "{n} {what}s for {expected} inputs: the server must answer each input once"
        )));
    }
    let mut hit = vec![false; n];
    for (i, index) in indexes.enumerate() {
        let Some(ix) = index else { continue };
        match hit.get_mut(ix as usize) {
            Some(h) if !*h => *h = true,
            Some(_) => {
                return Err(BatchError::Malformed(format!(
                    "{what} {i} repeats index {ix}"
                )));
            }
            None => {
                return Err(BatchError::Malformed(format!(
                    "{what} {i} has index {ix}, past the {expected} inputs sent"
                )));
            }
        }
    }
    Ok(())
}

/// Why a body is not JSON, naming Python's non-finite literals when they are the reason.
fn not_json(api: &str, body: &[u8], e: &serde_json::Error) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    let nonfinite = [&b"NaN"[..], b"Infinity"]
        .iter()
        .any(|lit| body.windows(lit.len()).any(|w| w == *lit));
    if nonfinite {
        return format!(
            "the {api} answer holds a non-finite number (NaN or Infinity), which is not JSON ({e})"
        );
    }
    format!("the {api} answer is not valid JSON ({e}): {text}")
}

/// An embeddings answer as read; `usage`, `error` and each `index` may have any shape.
#[derive(Deserialize)]
struct Embeddings {
    data: Option<Vec<Embedding>>,
    #[serde(default)]
    usage: serde_json::Value,
    #[serde(default)]
    error: serde_json::Value,
}

#[derive(Deserialize)]
struct Embedding {
    #[serde(default)]
    index: serde_json::Value,
    #[serde(default)]
    embedding: Vector,
}

/// A vector: its numbers counted and checked finite (JSON numbers always are; a `null` or a
/// string in place of one is noted), or a base64 string of little-endian f32s. Read without
/// keeping the numbers.
#[derive(Default)]
struct Vector {
    dim: u32,
    /// The first thing wrong in it.
    bad: Option<Bad>,
}

#[derive(Clone, Copy)]
enum Bad {
    /// A null or a non-number at this position.
    NotFiniteAt(u32),
    /// A base64 float that is NaN or infinite.
    NonFinite,
    /// A string that is not base64 of 32-bit floats.
    NotBase64,
}

impl Vector {
    /// What is wrong with embedding `i`, when something is.
    fn problem(&self, i: usize) -> Option<String> {
        Some(match self.bad? {
            Bad::NotFiniteAt(n) => {
                format!("embedding {i} holds a value that is not a finite number at position {n}")
            }
            Bad::NonFinite => format!("embedding {i} holds a non-finite number"),
            Bad::NotBase64 => {
                format!("embedding {i} is a string that is not base64 of 32-bit floats")
            }
        })
    }
}

impl<'de> Deserialize<'de> for Vector {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Vector, D::Error> {
        d.deserialize_any(Vector::default())
    }
}

impl<'de> Visitor<'de> for Vector {
    type Value = Vector;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an embedding vector")
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Vector, A::Error> {
        while let Some(finite) = seq.next_element_seed(Number)? {
            if !finite && self.bad.is_none() {
                self.bad = Some(Bad::NotFiniteAt(self.dim));
            }
            self.dim += 1;
        }
        Ok(self)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vector, E> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(v);
        let Some(bytes) = bytes.ok().filter(|b| b.len() % 4 == 0) else {
            return Ok(Vector {
                dim: 0,
                bad: Some(Bad::NotBase64),
            });
        };
        let finite = bytes
            .chunks_exact(4)
            .all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite());
        Ok(Vector {
            dim: (bytes.len() / 4) as u32,
            bad: (!finite).then_some(Bad::NonFinite),
        })
    }
}

/// One element of a vector: whether it is a finite number (anything else is read and
/// answered `false`).
struct Number;

impl<'de> DeserializeSeed<'de> for Number {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Number {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        Ok(v.is_finite())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn malformed(r: Result<BatchReply, BatchError>) -> String {
        match r {
            Err(BatchError::Malformed(m)) => m,
            other => panic!("expected a malformed answer, got {other:?}"),
        }
    }

    #[test]
    fn embeddings_checked() {
        let ok = br#"{"object":"list","data":[{"index":0,"embedding":[0.1,-2e-3,3]},{"object":"embedding","embedding":[1,2,3],"index":1}],"usage":{"prompt_tokens":7,"total_tokens":7}}"#;
        assert_eq!(
            embeddings(ok, 2),
            Ok(BatchReply {
                items: 2,
                dim: Some(3),
                prompt_tokens: Some(7)
            })
        );
        assert!(malformed(embeddings(ok, 3)).contains("2 embeddings for 3 inputs"));
        let uneven = br#"{"data":[{"embedding":[1,2]},{"embedding":[1,2,3]}]}"#;
        assert!(
            malformed(embeddings(uneven, 2))
                .contains("embedding 1 has 3 dimensions where embedding 0 has 2")
        );
        let null = br#"{"data":[{"embedding":[1,null,3]}]}"#;
        assert!(malformed(embeddings(null, 1)).contains("not a finite number at position 1"));
        let nan = br#"{"data":[{"embedding":[1,NaN]}]}"#;
        assert!(malformed(embeddings(nan, 1)).contains("non-finite number (NaN or Infinity)"));
        let twice = br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}"#;
        assert!(malformed(embeddings(twice, 2)).contains("repeats index 0"));
        assert!(malformed(embeddings(br#"{"object":"list"}"#, 1)).contains("no \"data\""));
        assert_eq!(
            embeddings(br#"{"error":{"message":"model not loaded"}}"#, 1),
            Err(BatchError::Server("model not loaded".into()))
        );
        // Four bytes a float in base64: [1.0, 2.0].
        let b64 = br#"{"data":[{"embedding":"AACAPwAAAEA="}]}"#;
        assert_eq!(embeddings(b64, 1).unwrap().dim, Some(2));
    }

    #[test]
    fn rankings_in_each_layout() {
        let cohere = br#"{"id":"x","results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":-1.5}],"usage":{"prompt_tokens":12}}"#;
        assert_eq!(
            rankings(cohere, 2),
            Ok(BatchReply {
                items: 2,
                dim: None,
                prompt_tokens: Some(12)
            })
        );
        let tei = br#"[{"index":0,"score":0.5}]"#;
        assert_eq!(rankings(tei, 1).unwrap().items, 1);
        let nim = br#"{"rankings":[{"index":0,"logit":3.2},{"index":1,"logit":-0.1}]}"#;
        assert_eq!(rankings(nim, 2).unwrap().items, 2);
        assert!(malformed(rankings(cohere, 3)).contains("2 scores for 3 inputs"));
        assert!(malformed(rankings(br#"{"results":[{"index":0}]}"#, 1)).contains("no score"));
        assert!(
            malformed(rankings(
                br#"{"results":[{"index":0,"relevance_score":"high"}]}"#,
                1
            ))
            .contains("not a finite number")
        );
        assert!(
            malformed(rankings(br#"[{"index":3,"score":1}]"#, 1)).contains("past the 1 inputs")
        );
        assert!(malformed(rankings(br#"{"x":1}"#, 1)).contains("no \"results\""));
        assert_eq!(
            rankings(br#"{"error":"boom"}"#, 1),
            Err(BatchError::Server("boom".into()))
        );
    }
}
