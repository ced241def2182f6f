//! `requests.jsonl`: one JSON object per request, written while the run goes (so an interrupted
//! run still has every finished request on disk, and memory does not grow with request count).
//!
//! Fields (times are absolute Unix nanoseconds, so files from several machines merge; absent
//! times are `null`):
//!
//! | field | meaning |
//! |---|---|
//! | `level` | stimulus name, e.g. `concurrency8` |
//! | `phase` | `warmup` or `measure` |
//! | `seq` | request number within the level |
//! | `prompt_index` | dataset entry sent |
//! | `intended_ns` | when the schedule wanted it sent |
//! | `sent_ns` | when it was handed to the transport |
//! | `first_byte_ns` | first response byte |
//! | `first_token_ns`, `second_token_ns`, `last_token_ns` | content-bearing responses |
//! | `end_ns` | end of the exchange |
//! | `ttft_ms`, `latency_ms`, `itl_ms` | derived, as in the summary |
//! | `isl`, `osl` | input and output tokens as counted for the statistics (the tokenizer's, or the server's with `--use-server-token-count`) |
//! | `server_isl`, `server_osl` | the server's usage counts, `null` when it reported none |
//! | `client_isl` | only when `isl` holds the server's count (`--use-server-token-count`): the input tokens the client counted before sending (the tokenizer's, or the server's `/tokenize` with `--tokenizer-from-server`) |
//! | `tokenizer_osl` | the tokenizer's output count, `null` for failed requests |
//! | `first_output_token_ns`, `ttfo_ms`, `reasoning_tokens` | only in rows of requests whose response streamed reasoning (`reasoning_content` / `reasoning`): the first response with answer text, the time to it from the send (absent when the reasoning never reached an answer), and the tokenizer's count of the reasoning text (the server's with `--use-server-token-count`; absent for failed requests), which `osl` includes |
//! | `server_reasoning_tokens` | in those rows, the server's `usage.completion_tokens_details.reasoning_tokens`, when it reported one |
//! | `server_prefill_ms`, `server_decode_ms`, `server_prompt_tokens`, `server_cached_tokens` | only in rows of responses that carried the server's own `timings` (llama.cpp's `llama-server`): its prompt processing (`prompt_ms`: from the request taking a slot to its first token's logits; the wait for a slot is not in it) and generation (`predicted_ms`) times, the prompt tokens it evaluated (`prompt_n`) and those it reused from its cache (`cache_n`) |
//! | `requested_osl` | output tokens asked for |
//! | `chunks`, `responses` | content-bearing responses, all responses |
//! | `lossy_text` | the output text held invalid UTF-8 and was counted with U+FFFD in its place |
//! | `reconnected` | only when true: the first send failed on a reused HTTP/1.1 connection the server had closed, before any response byte, and the request was sent again on a fresh one (its times are that send's) |
//! | `connection_reused` | HTTP/1.1 only: whether the request went out on a connection that had already served one |
//! | `error`, `error_message` | failure kind and detail, or `null`; two kinds are not failures: `request_cancelled` (`--request-cancellation-rate`) and `abandoned` (in flight at a second Ctrl-C) |
//! | `session`, `turn` | only in rows of multi-turn sessions: the session's number in the run (0-based, in the order sessions started; a number taken when a phase's request budget was already spent is never sent, so numbers may skip at a phase's end; `prompt_index` is its conversation) and the turn (0-based: turn `t` carried `t + 1` user messages and the server's `t` answers between them) |
//! | `shard` | in a merged file only: the shard that sent the request |
//! | `request_id` | the id the request was sent with (`RUN-SEQ`: `X-Request-ID` over HTTP, KServe `id` over gRPC); absent when it had none |
//! | `inputs` | embeddings and rankings only: the texts embedded or passages ranked (`osl` is 0: nothing is generated) |
//! | `images`, `image_bytes` | only in rows of requests that sent images: how many, and their encoded size (before base64) |
//! | `tool_calls`, `tool_args_valid` | only in rows of requests sent with `--tools`: the response's tool calls, and (when it made any) whether every call's arguments parse as JSON |
//! | `first_tool_token_ns`, `ttftt_ms` | in rows whose response called a tool: its first argument text, and the time to it from the send |
//! | `correct`, `unparsed`, `answer_changed`, `output_hash` | only in rows of a scored workload's successful requests: whether the answer was graded right, whether no answer in the expected form was found (only when true), whether the temperature-0 output differed from its prompt's reference output (the run's first for that prompt; absent for the reference itself and when outputs are not compared), and the output text's FNV-1a hash (16 hex digits) |

use std::borrow::Cow;
use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::record::{Clock, ErrorKind, Phase, RequestError, RequestRecord, ServerTimings};

/// One line, as written and as read back (the derived `*_ms` fields are read and not used;
/// fields added since the first version default when absent).
#[derive(Serialize, Deserialize)]
struct Row<'a> {
    level: Cow<'a, str>,
    phase: Phase,
    seq: u64,
    prompt_index: u32,
    intended_ns: u64,
    sent_ns: u64,
    first_byte_ns: Option<u64>,
    first_token_ns: Option<u64>,
    second_token_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_output_token_ns: Option<u64>,
    last_token_ns: Option<u64>,
    end_ns: u64,
    ttft_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttfo_ms: Option<f64>,
    latency_ms: Option<f64>,
    itl_ms: Option<f64>,
    isl: u32,
    osl: u32,
    server_osl: Option<u32>,
    tokenizer_osl: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_reasoning_tokens: Option<u32>,
    server_isl: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_isl: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_prefill_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_decode_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_prompt_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_cached_tokens: Option<u32>,
    requested_osl: u32,
    chunks: u32,
    responses: u32,
    #[serde(default)]
    lossy_text: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    reconnected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    connection_reused: Option<bool>,
    error: Option<Cow<'a, str>>,
    error_message: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<Shown<'a>>,
    #[serde(default, skip_serializing_if = "is_default")]
    inputs: u32,
    #[serde(default, skip_serializing_if = "is_default")]
    images: u32,
    #[serde(default, skip_serializing_if = "is_default")]
    image_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_args_valid: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_tool_token_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttftt_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    correct: Option<bool>,
    #[serde(default, skip_serializing_if = "is_default")]
    unparsed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer_changed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_hash: Option<Hex>,
}

/// A 64-bit hash as 16 hex digits (0 when a row's text is not hex).
struct Hex(u64);

impl Serialize for Hex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:016x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Hex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(Hex(u64::from_str_radix(&text, 16).unwrap_or(0)))
    }
}

/// Whether a field holds its default (`0`, `false`): such fields are left out of the row.
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// A time in µs as the row's ms, and back (exact: µs are three decimals of ms).
fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1e3
}

fn ms_to_us(ms: f64) -> u64 {
    (ms * 1e3).round().max(0.0) as u64
}

/// A value written as its `Display` text, without building a `String`; read back as text.
enum Shown<'a> {
    Of(&'a dyn std::fmt::Display),
    Read(String),
}

impl Serialize for Shown<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shown::Of(v) => s.collect_str(v),
            Shown::Read(text) => s.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for Shown<'_> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Shown::Read)
    }
}

/// Writes one JSON line for `rec`, with the id it was sent with when it had one.
pub fn write_row(
    out: &mut impl Write,
    level: &str,
    clock: &Clock,
    rec: &RequestRecord,
    request_id: Option<&dyn std::fmt::Display>,
) -> std::io::Result<()> {
    write_shard_row(out, level, clock, rec, (None, request_id))
}

/// Writes one JSON line for `rec`, with the shard that sent it (a merged file) and its id.
pub fn write_shard_row(
    out: &mut impl Write,
    level: &str,
    clock: &Clock,
    rec: &RequestRecord,
    (shard, request_id): (Option<u32>, Option<&dyn std::fmt::Display>),
) -> std::io::Result<()> {
    let abs = |t: u64| clock.unix_ns(t);
    let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
    let kind = rec.error.as_ref().map(|e| e.kind.key());
    let row = Row {
        level: level.into(),
        phase: rec.phase,
        seq: rec.seq,
        prompt_index: rec.prompt_index,
        intended_ns: abs(rec.intended_ns),
        sent_ns: abs(rec.sent_ns),
        first_byte_ns: rec.first_byte_ns.map(abs),
        first_token_ns: rec.first_token_ns.map(abs),
        second_token_ns: rec.second_token_ns.map(abs),
        first_output_token_ns: rec.first_output_token_ns.map(abs),
        last_token_ns: rec.last_token_ns.map(abs),
        end_ns: abs(rec.end_ns),
        ttft_ms: ms(rec.ttft_ns()),
        ttfo_ms: ms(rec.ttfo_ns()),
        latency_ms: ms(rec.latency_ns()),
        itl_ms: ms(rec.itl_ns()),
        isl: rec.isl,
        osl: rec.osl,
        server_osl: rec.server_osl,
        tokenizer_osl: rec.tokenizer_osl,
        reasoning_tokens: rec.reasoning_tokens,
        server_reasoning_tokens: rec.server_reasoning_tokens,
        server_isl: rec.server_isl,
        client_isl: rec.client_isl,
        server_prefill_ms: rec.server_timings.map(|t| us_to_ms(t.prefill_us)),
        server_decode_ms: rec.server_timings.map(|t| us_to_ms(t.decode_us)),
        server_prompt_tokens: rec.server_timings.map(|t| t.prompt_tokens),
        server_cached_tokens: rec.server_timings.map(|t| t.cached_tokens),
        requested_osl: rec.requested_osl,
        chunks: rec.chunks,
        responses: rec.responses,
        lossy_text: rec.lossy_text,
        reconnected: rec.reconnected,
        connection_reused: rec.connection_reused,
        error: kind,
        error_message: rec.error.as_ref().map(|e| e.message.as_ref().into()),
        session: rec.conversation.map(|c| c.session),
        turn: rec.conversation.map(|c| c.turn),
        shard,
        request_id: request_id.map(Shown::Of),
        inputs: rec.sent.inputs,
        images: rec.sent.images,
        image_bytes: rec.sent.image_bytes,
        tool_calls: (rec.sent.tools || rec.tools.calls > 0).then_some(rec.tools.calls),
        tool_args_valid: (rec.tools.calls > 0).then_some(rec.tools.args_valid),
        first_tool_token_ns: rec.tools.first_token_ns.map(abs),
        ttftt_ms: ms(rec.ttft_tool_ns()),
        correct: rec.answer.as_ref().map(|a| a.correct),
        unparsed: rec.answer.as_ref().is_some_and(|a| a.unparsed),
        answer_changed: rec.answer.as_ref().and_then(|a| a.changed),
        output_hash: rec.answer.as_ref().map(|a| Hex(a.output.hash)),
    };
    serde_json::to_writer(&mut *out, &row)?;
    out.write_all(b"\n")
}

/// A row read back: its level, its record, and the id it was sent with (none in rows written
/// before requests carried ids, or by a run without a run id).
#[derive(Debug)]
pub struct ReadBack {
    /// The level name.
    pub level: String,
    /// The record, times on the Unix clock.
    pub record: RequestRecord,
    /// `request_id`.
    pub request_id: Option<String>,
}

/// Why a `requests.jsonl` line cannot be read back: exit code 2 (`merge` was given the file;
/// the caller names it and the line).
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// Not a record's JSON.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    /// An error kind this version does not know.
    #[error("unknown error kind '{0}'")]
    ErrorKind(String),
}

crate::error::usage_error!(RowError);

/// Reads one line back, the record's times on the Unix clock ([`Clock::unix`]), so writing it
/// with that clock (and its id) gives the line again.
pub fn read_row(line: &str) -> Result<ReadBack, RowError> {
    let r: Row = serde_json::from_str(line).map_err(RowError::Json)?;
    let error = match r.error {
        Some(key) => {
            let kind = ErrorKind::from_key(&key).ok_or_else(|| RowError::ErrorKind(key.into()))?;
            Some(RequestError::new(
                kind,
                r.error_message.unwrap_or_default().into_owned(),
            ))
        }
        None => None,
    };
    let rec = RequestRecord {
        sent: crate::record::Sent {
            inputs: r.inputs,
            images: r.images,
            image_bytes: r.image_bytes,
            tools: r.tool_calls.is_some(),
        },
        tools: crate::record::ToolUse {
            calls: r.tool_calls.unwrap_or(0),
            args_valid: r.tool_args_valid.unwrap_or(false),
            first_token_ns: r.first_tool_token_ns,
        },
        phase: r.phase,
        seq: r.seq,
        prompt_index: r.prompt_index,
        intended_ns: r.intended_ns,
        sent_ns: r.sent_ns,
        send_done_ns: None,
        first_byte_ns: r.first_byte_ns,
        first_token_ns: r.first_token_ns,
        second_token_ns: r.second_token_ns,
        first_output_token_ns: r.first_output_token_ns,
        last_token_ns: r.last_token_ns,
        end_ns: r.end_ns,
        isl: r.isl,
        osl: r.osl,
        server_osl: r.server_osl,
        tokenizer_osl: r.tokenizer_osl,
        server_isl: r.server_isl,
        client_isl: r.client_isl,
        server_timings: r.server_prefill_ms.map(|prefill| ServerTimings {
            prefill_us: ms_to_us(prefill),
            decode_us: r.server_decode_ms.map_or(0, ms_to_us),
            prompt_tokens: r.server_prompt_tokens.unwrap_or(0),
            cached_tokens: r.server_cached_tokens.unwrap_or(0),
        }),
        reasoning_tokens: r.reasoning_tokens,
        server_reasoning_tokens: r.server_reasoning_tokens,
        requested_osl: r.requested_osl,
        chunks: r.chunks,
        responses: r.responses,
        lossy_text: r.lossy_text,
        reconnected: r.reconnected,
        connection_reused: r.connection_reused,
        answer: r.correct.map(|correct| {
            Box::new(crate::record::Answer {
                correct,
                unparsed: r.unparsed,
                output: crate::record::OutputPrint {
                    hash: r.output_hash.map_or(0, |h| h.0),
                    tokens: 0,
                    head: [0; crate::record::HEAD_TOKENS],
                },
                changed: r.answer_changed,
                change: None,
            })
        }),
        error,
        conversation: match (r.session, r.turn) {
            (Some(session), Some(turn)) => Some(crate::record::Turn { session, turn }),
            _ => None,
        },
    };
    Ok(ReadBack {
        level: r.level.into_owned(),
        record: rec,
        request_id: r.request_id.map(|id| match id {
            Shown::Of(v) => v.to_string(),
            Shown::Read(text) => text,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ErrorKind, RequestError};

    /// `rec`'s row at `level` on `clock`, with its request id when it has one.
    fn row(
        level: &str,
        clock: &Clock,
        rec: &RequestRecord,
        id: Option<&dyn std::fmt::Display>,
    ) -> String {
        let mut out = Vec::new();
        write_row(&mut out, level, clock, rec, id).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn row_exact_text() {
        let clock = Clock::start();
        let base = clock.unix_anchor_ns();
        let rec = RequestRecord {
            seq: 3,
            prompt_index: 1,
            sent_ns: 1_000,
            first_byte_ns: Some(2_000_000),
            first_token_ns: Some(3_001_000),
            second_token_ns: None,
            last_token_ns: Some(3_001_000),
            end_ns: 4_000_000,
            isl: 5,
            responses: 2,
            ..crate::stats::test_record(0, 0, 1)
        };
        let expected = format!(
            "{{\"level\":\"concurrency1\",\"phase\":\"measure\",\"seq\":3,\"prompt_index\":1,\"intended_ns\":{},\"sent_ns\":{},\"first_byte_ns\":{},\"first_token_ns\":{},\"second_token_ns\":null,\"last_token_ns\":{},\"end_ns\":{},\"ttft_ms\":3.0,\"latency_ms\":3.0,\"itl_ms\":null,\"isl\":5,\"osl\":1,\"server_osl\":null,\"tokenizer_osl\":null,\"server_isl\":null,\"requested_osl\":1,\"chunks\":1,\"responses\":2,\"lossy_text\":false,\"error\":null,\"error_message\":null}}\n",
            base,
            base + 1_000,
            base + 2_000_000,
            base + 3_001_000,
            base + 3_001_000,
            base + 4_000_000
        );
        assert_eq!(row("concurrency1", &clock, &rec, None), expected);

        let mut failed = rec.clone();
        failed.error = Some(RequestError::new(
            ErrorKind::HttpStatus(503),
            "HTTP 503: busy",
        ));
        let ids = crate::client::request_id::RequestIds::new("run7", None);
        let s = row("concurrency1", &clock, &failed, Some(&ids.id(3)));
        assert!(
            s.ends_with("\"error\":\"http_503\",\"error_message\":\"HTTP 503: busy\",\"request_id\":\"run7-3\"}\n"),
            "{s}"
        );
        // Read back on the Unix clock, written again: the same line, and a shard can be added.
        let back = read_row(s.trim_end()).unwrap();
        assert_eq!(back.level, "concurrency1");
        let id = back.request_id.as_deref().unwrap();
        assert_eq!(id, "run7-3");
        assert_eq!(row(&back.level, &Clock::unix(), &back.record, Some(&id)), s);
        let mut tagged = Vec::new();
        let to = (Some(3), Some(&id as &dyn std::fmt::Display));
        write_shard_row(&mut tagged, &back.level, &Clock::unix(), &back.record, to).unwrap();
        assert!(
            String::from_utf8(tagged)
                .unwrap()
                .ends_with("busy\",\"shard\":3,\"request_id\":\"run7-3\"}\n")
        );
        assert!(read_row("{}").is_err());
        assert!(
            read_row(&s.replace("http_503", "bogus"))
                .unwrap_err()
                .to_string()
                .contains("bogus")
        );
    }

    /// A response with reasoning: its first answer token, TTFO and reasoning count join the row
    /// (exact text), and read back they give the same line.
    #[test]
    fn reasoning_row_exact_text() {
        let rec = RequestRecord {
            sent_ns: 1_000_000,
            first_byte_ns: Some(2_000_000),
            first_token_ns: Some(3_000_000),
            second_token_ns: Some(4_000_000),
            first_output_token_ns: Some(9_000_000),
            last_token_ns: Some(11_000_000),
            end_ns: 11_000_000,
            isl: 5,
            server_osl: Some(10),
            tokenizer_osl: Some(10),
            server_isl: Some(5),
            reasoning_tokens: Some(6),
            server_reasoning_tokens: Some(6),
            responses: 12,
            ..crate::stats::test_record(0, 0, 10)
        };
        let s = row("concurrency1", &Clock::unix(), &rec, None);
        assert_eq!(
            s,
            "{\"level\":\"concurrency1\",\"phase\":\"measure\",\"seq\":0,\"prompt_index\":0,\"intended_ns\":0,\"sent_ns\":1000000,\"first_byte_ns\":2000000,\"first_token_ns\":3000000,\"second_token_ns\":4000000,\"first_output_token_ns\":9000000,\"last_token_ns\":11000000,\"end_ns\":11000000,\"ttft_ms\":2.0,\"ttfo_ms\":8.0,\"latency_ms\":10.0,\"itl_ms\":0.888889,\"isl\":5,\"osl\":10,\"server_osl\":10,\"tokenizer_osl\":10,\"reasoning_tokens\":6,\"server_reasoning_tokens\":6,\"server_isl\":5,\"requested_osl\":10,\"chunks\":10,\"responses\":12,\"lossy_text\":false,\"error\":null,\"error_message\":null}\n"
        );
        let back = read_row(s.trim_end()).unwrap();
        assert_eq!(back.record, rec);
    }

    /// A turn of a multi-turn session: `session` and `turn` join the row (exact text), and read
    /// back they give the same record.
    #[test]
    fn session_row_exact_text() {
        let rec = RequestRecord {
            seq: 4,
            prompt_index: 2,
            first_byte_ns: None,
            first_token_ns: Some(1_000_000),
            second_token_ns: None,
            last_token_ns: Some(1_000_000),
            end_ns: 1_000_000,
            isl: 30,
            tokenizer_osl: Some(1),
            conversation: Some(crate::record::Turn {
                session: 7,
                turn: 2,
            }),
            ..crate::stats::test_record(0, 0, 1)
        };
        let s = row("concurrency2", &Clock::unix(), &rec, None);
        assert_eq!(
            s,
            "{\"level\":\"concurrency2\",\"phase\":\"measure\",\"seq\":4,\"prompt_index\":2,\"intended_ns\":0,\"sent_ns\":0,\"first_byte_ns\":null,\"first_token_ns\":1000000,\"second_token_ns\":null,\"last_token_ns\":1000000,\"end_ns\":1000000,\"ttft_ms\":1.0,\"latency_ms\":1.0,\"itl_ms\":null,\"isl\":30,\"osl\":1,\"server_osl\":null,\"tokenizer_osl\":1,\"server_isl\":null,\"requested_osl\":1,\"chunks\":1,\"responses\":1,\"lossy_text\":false,\"error\":null,\"error_message\":null,\"session\":7,\"turn\":2}\n"
        );
        assert_eq!(read_row(s.trim_end()).unwrap().record, rec);
    }

    /// A llama.cpp response's timings join the row as four fields (exact text) and read back.
    #[test]
    fn timings_row_exact_text() {
        let rec = RequestRecord {
            server_timings: Some(ServerTimings {
                prompt_tokens: 1,
                cached_tokens: 20,
                prefill_us: 12_853,
                decode_us: 21_044,
            }),
            ..crate::stats::test_record(0, 0, 8)
        };
        let s = row("concurrency1", &Clock::unix(), &rec, None);
        assert!(
            s.contains("\"server_isl\":null,\"server_prefill_ms\":12.853,\"server_decode_ms\":21.044,\"server_prompt_tokens\":1,\"server_cached_tokens\":20,\"requested_osl\""),
            "{s}"
        );
        assert_eq!(read_row(s.trim_end()).unwrap().record, rec);
    }
}
