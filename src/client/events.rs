//! Reading the JSON of one streamed event (or one whole non-streamed body) without building a
//! document: the text it carries is appended straight into the request's output buffer, so a
//! token costs no heap allocation.
//!
//! Shapes understood, all in one pass:
//! * OpenAI chat chunks `{"choices":[{"delta":{"content":"..","reasoning_content":".."}}]}`
//!   (tool-call deltas `"tool_calls":[{"function":{"arguments":".."}}]` count as text too) and
//!   whole responses `{"choices":[{"message":{"content":".."}}]}`;
//! * OpenAI completions `{"choices":[{"text":".."}]}`;
//! * Triton generate / generate_stream `{"text_output":".."}` (a string, or an array of strings);
//! * usage `{"usage":{"prompt_tokens":N,"completion_tokens":M}}` (any event, possibly `choices: []`),
//!   with `completion_tokens_details.reasoning_tokens` when the server counts reasoning apart;
//! * Triton's token counts next to `text_output`, when the model returns them:
//!   `num_output_tokens` (the vLLM backend), `output_ids` (TensorRT-LLM: the tokens; their count),
//!   `sequence_length` (TensorRT-LLM), in that order of preference, each a number or nested
//!   arrays; a count per event, summed over a stream;
//! * errors `{"error":"msg"}` or `{"error":{"message":"msg"}}`;
//! * llama.cpp's per-request `timings` `{"timings":{"cache_n":N,"prompt_n":N,"prompt_ms":F,
//!   "predicted_n":N,"predicted_ms":F,...}}`, on the last event of a stream (the usage chunk,
//!   or the `finish_reason` chunk without `include_usage`) and at the top level of a whole body.
//!   Like usage, it is left to the full reader: one event a request, never a token event.
//!
//! Only the first choice is read: one request asks for one completion.
//!
//! Reasoning text (`reasoning_content`, SGLang's and DeepSeek's name; `reasoning`, vLLM's) is
//! output like content and goes into the same buffer, so OSL counts every generated token (as
//! AIPerf does); [`EventInfo::reasoning_bytes`] says how much of an event's text was reasoning,
//! so the request can tell its first answer token from its first token of any kind.

mod apis;

use super::seed::seed;

pub use apis::ToolSpans;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};

use crate::record::ServerTimings;

/// What one event contributed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventInfo {
    /// Bytes of text appended to the output buffer (0 for role-only, usage-only, empty events).
    pub content_bytes: usize,
    /// Of those, bytes from reasoning fields (`reasoning_content`, `reasoning`); the rest is
    /// answer text (content, completion text, tool-call arguments).
    pub reasoning_bytes: usize,
    /// Of those, bytes of tool-call arguments (their spans go to the reader's [`ToolSpans`]).
    pub tool_bytes: usize,
    /// `usage.completion_tokens`, when present.
    pub completion_tokens: Option<u32>,
    /// `usage.prompt_tokens`, when present.
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens`, when present (a number).
    pub reasoning_tokens: Option<u32>,
    /// Output tokens this event carries by the server's own count (Triton's
    /// `num_output_tokens`, `output_ids`, `sequence_length`), when present.
    pub tokens: Option<u32>,
    /// The server's own timings of the request (llama.cpp's `timings`), when present.
    pub timings: Option<ServerTimings>,
    /// An error the server reported in the event.
    pub error: Option<String>,
}

/// What [`EventReader::read_run`] read: whole events of the remembered shape.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Bytes the events took in the stream, `data: ` and blank lines included (0: none read).
    pub bytes: usize,
    /// Events read.
    pub events: u32,
    /// Of those, events whose text was not empty.
    pub with_text: u32,
    /// Bytes of text appended.
    pub text_bytes: usize,
    /// The text is reasoning (the shape's field is a reasoning field), all of it or none.
    pub reasoning: bool,
}

/// Parses one event's JSON, appending any text it carries to `text`.
pub fn parse_event(data: &[u8], text: &mut String) -> Result<EventInfo, serde_json::Error> {
    let before = text.len();
    if let Some(info) = fast::scan(data, text, &mut None) {
        return Ok(info);
    }
    parse_full(data, text, before, &mut ToolSpans::default())
}

/// Reads a stream's events, remembering the shape of the last token event: a server sends the
/// same JSON around every token (`{"id":"chatcmpl-7",...,"delta":{"content":"` … `"},...}`), so
/// an event that starts and ends with the same bytes as the previous one and holds one plain
/// string between them is that shape again with other text. That is checked with two
/// comparisons and one pass over the text, instead of walking every field (the walk was a
/// third of the client's CPU on a fast server). Anything else takes [`parse_event`]'s path.
///
/// A stream's first event (the role), its last token (`"finish_reason":"length"`) and its
/// token events are three shapes; the reader keeps the last few it learned beside the token
/// events' own, so a server whose events carry no per-request id (Triton's `generate_stream`,
/// a replayed stream) has its whole stream read by shape once the first request has been read.
///
/// Why this is exact: the remembered bytes are those of an event the scanner accepted as valid
/// JSON whose only text was one escape-free string at exactly that place; replacing that
/// string's contents by other escape-free, control-free UTF-8 keeps the document valid and
/// changes the extracted text to exactly the new contents. The string's field (reasoning or
/// not) is part of the prefix, so whether the text is reasoning is remembered with the shape.
#[derive(Debug, Default)]
pub struct EventReader {
    /// The shape of the last event read by its shape or learned: the stream's token events.
    shape: Shape,
    /// Shapes learned before it, kept in case they come again.
    others: [Shape; OTHER_SHAPES],
    /// The request in flight's tool-call argument spans (cleared per request).
    tools: ToolSpans,
    /// Counts the shapes learned, so that a capture can tell one from the next.
    learned: u64,
}

/// Shapes kept beside the token events' own (a stream's role and final events, the answer's
/// shape beside the reasoning's).
const OTHER_SHAPES: usize = 3;

/// An event's JSON around its one text string (see [`EventReader`]).
#[derive(Debug, Default)]
struct Shape {
    /// The bytes before the text, up to and including its opening quote (empty: no shape).
    prefix: Vec<u8>,
    /// The bytes after the text, from its closing quote.
    suffix: Vec<u8>,
    /// The text sits in a reasoning field.
    reasoning: bool,
    /// Neither `prefix` nor `suffix` holds a line end (the shape came from a one-line event),
    /// so an event matching the shape is one SSE line ([`EventReader::read_run`]).
    one_line: bool,
    /// `suffix`, the blank line ending an SSE event, `data: ` and `prefix`: what lies between
    /// the texts of two events of the shape sent one after the other (set when `one_line`).
    joint: Vec<u8>,
    /// Which shape learned this is (a capture tells shapes apart by it).
    key: u64,
}

impl Shape {
    /// Becomes the shape of `data`, whose text is `span`.
    fn learn(&mut self, data: &[u8], span: &fast::Span, key: u64) {
        self.prefix.clear();
        self.prefix.extend_from_slice(&data[..span.start]);
        self.suffix.clear();
        self.suffix.extend_from_slice(&data[span.end..]);
        self.reasoning = span.reasoning;
        self.key = key;
        let one_line = |b: &[u8]| memchr::memchr2(b'\n', b'\r', b).is_none();
        self.one_line = one_line(&self.prefix) && one_line(&self.suffix);
        self.joint.clear();
        if self.one_line {
            self.joint.extend_from_slice(&self.suffix);
            self.joint.extend_from_slice(b"\n\ndata: ");
            self.joint.extend_from_slice(&self.prefix);
        }
    }

    /// The text of an event of this shape, appended; `None` if it is not one.
    #[inline]
    fn read(&self, data: &[u8], text: &mut String) -> Option<usize> {
        let (p, s) = (self.prefix.len(), self.suffix.len());
        if p == 0 || data.len() < p + s || !data.starts_with(&self.prefix) {
            return None;
        }
        if !data.ends_with(&self.suffix) {
            return None;
        }
        // The suffix starts with the text's closing quote: the text is plain when the first
        // quote after the prefix is that one.
        let (n, ascii) = plain_text(&data[p..])?;
        if n != data.len() - p - s {
            return None;
        }
        push_text(&data[p..p + n], ascii, text)
    }

    /// What [`EventReader::read`] says of an event of this shape with `n` bytes of text.
    fn info(&self, n: usize) -> EventInfo {
        EventInfo {
            content_bytes: n,
            // A multiply, not a branch: one extra integer per event.
            reasoning_bytes: n * usize::from(self.reasoning),
            ..EventInfo::default()
        }
    }
}

impl EventReader {
    /// A reader with no shape learned yet.
    pub fn new() -> EventReader {
        EventReader::default()
    }

    /// Parses one event's JSON, appending any text it carries to `text`.
    // Inlined into the per-event loop: the usual event is the remembered shape, a few compares;
    // the call itself (saving and restoring six registers per event) was a third of this
    // function's samples. The rest stays out of line.
    #[inline]
    pub fn read(&mut self, data: &[u8], text: &mut String) -> Result<EventInfo, serde_json::Error> {
        if let Some(n) = self.shape.read(data, text) {
            return Ok(self.shape.info(n));
        }
        self.read_other(data, text)
    }

    /// An event of another shape: one kept from before (which becomes the token events'
    /// shape), or the scanner, then the full reader.
    #[inline(never)]
    fn read_other(
        &mut self,
        data: &[u8],
        text: &mut String,
    ) -> Result<EventInfo, serde_json::Error> {
        for i in 0..OTHER_SHAPES {
            if let Some(n) = self.others[i].read(data, text) {
                std::mem::swap(&mut self.shape, &mut self.others[i]);
                return Ok(self.shape.info(n));
            }
        }
        let before = text.len();
        let mut span = None;
        if let Some(info) = fast::scan(data, text, &mut span) {
            if let Some(span) = span {
                // The oldest shape's buffers take the new one; the others move down a place.
                self.others.rotate_right(1);
                std::mem::swap(&mut self.shape, &mut self.others[0]);
                self.learned += 1;
                self.shape.learn(data, &span, self.learned);
            }
            return Ok(info);
        }
        parse_full(data, text, before, &mut self.tools)
    }

    /// Parses a whole body (or an event read apart from the stream's shape), appending its
    /// text and noting its tool-call spans, without learning a shape from it.
    pub fn read_body(
        &mut self,
        data: &[u8],
        text: &mut String,
    ) -> Result<EventInfo, serde_json::Error> {
        let before = text.len();
        if let Some(info) = fast::scan(data, text, &mut None) {
            return Ok(info);
        }
        parse_full(data, text, before, &mut self.tools)
    }

    /// The remembered shape: its key (changed whenever another shape is learned), the bytes
    /// before an event's text and the bytes after it.
    pub fn shape(&self) -> (u64, &[u8], &[u8]) {
        (self.shape.key, &self.shape.prefix, &self.shape.suffix)
    }

    /// The tool-call spans of the request in flight.
    pub fn tools(&self) -> &ToolSpans {
        &self.tools
    }

    /// Forgets the request in flight's tool-call spans (the shape learned stays).
    pub fn clear_tools(&mut self) {
        self.tools.clear();
    }

    /// Reads the events of the remembered shape that follow one another from the start of
    /// `at` (where an SSE event begins), each one `data: ` line and a blank line: their texts are
    /// appended and `each` is given every event's data and text. Stops at the first event that
    /// is not of the shape or not whole in `at` (nothing of it appended), or once `text` is
    /// longer than `limit`.
    ///
    /// Such an event's data holds no line end (the shape's fixed parts hold none and the text
    /// has no byte below 0x20), so the SSE line is exactly the data, and the framing's work is
    /// done here. Between the texts of two such events lie the suffix, the blank line, `data: `
    /// and the prefix: one comparison with that joint (`Shape::joint`) per event instead of
    /// three, and the exchange is told once per run, not once per event.
    #[inline]
    pub fn read_run(
        &self,
        at: &[u8],
        text: &mut String,
        limit: usize,
        mut each: impl FnMut(&[u8], &[u8]),
    ) -> Run {
        let shape = &self.shape;
        let mut run = Run {
            reasoning: shape.reasoning,
            ..Run::default()
        };
        let (p, s) = (shape.prefix.len(), shape.suffix.len());
        if !shape.one_line
            || p == 0
            || !at.starts_with(b"data: ")
            || !at[6..].starts_with(&shape.prefix)
        {
            return run;
        }
        // Where the text of the event starting at `run.bytes` begins.
        let mut pos = 6 + p;
        loop {
            let rest = &at[pos..];
            // The text ends at the first quote; the suffix starts with it.
            let Some((n, ascii)) = plain_text(rest) else {
                break;
            };
            let after = &rest[n..];
            let more = after.starts_with(&shape.joint);
            let last = after.starts_with(&shape.suffix) && after[s..].starts_with(b"\n\n");
            if !(more || last) {
                break;
            }
            let Some(len) = push_text(&rest[..n], ascii, text) else {
                break;
            };
            each(&at[run.bytes + 6..pos + n + s], &rest[..n]);
            run.events += 1;
            run.with_text += u32::from(len > 0);
            run.text_bytes += len;
            run.bytes = pos + n + s + 2;
            if !more || text.len() > limit {
                break;
            }
            pos = run.bytes + 6 + p;
        }
        run
    }
}

/// Where a string's contents at the start of `rest` end (its closing quote), when it holds no
/// escape and no byte JSON forbids raw, and whether it is ASCII; `None` otherwise or without a
/// closing quote. One pass for every question (the quote was a `memchr` call of its own, the
/// checks a second pass over the text): a token's text is a few bytes.
#[inline]
fn plain_text(rest: &[u8]) -> Option<(usize, bool)> {
    let mut ascii = true;
    for (i, &c) in rest.iter().enumerate() {
        if c == b'"' {
            return Some((i, ascii));
        }
        if c == b'\\' || c < 0x20 {
            return None;
        }
        ascii &= c < 0x80;
    }
    None
}

/// Appends `plain` (a string's contents that [`plain_text`] passed) when it is UTF-8 (known
/// when `ascii`, without asking `from_utf8`, a call per token that was 2 % of a one-write run's
/// CPU); its length.
#[inline]
fn push_text(plain: &[u8], ascii: bool, text: &mut String) -> Option<usize> {
    let piece = if ascii {
        // SAFETY: every byte is below 0x80, so `plain` is ASCII, which is valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(plain) }
    } else {
        std::str::from_utf8(plain).ok()?
    };
    text.push_str(piece);
    Some(plain.len())
}

/// The full JSON reader, for what the scanner left to it; `text` is restored on failure.
fn parse_full(
    data: &[u8],
    text: &mut String,
    before: usize,
    tools: &mut ToolSpans,
) -> Result<EventInfo, serde_json::Error> {
    text.truncate(before);
    parse_event_tools(data, text, tools)
}

/// The full JSON reader alone, without the fast scanner's shortcut (the fuzz target checks that
/// the two agree).
#[doc(hidden)]
pub fn parse_event_full(data: &[u8], text: &mut String) -> Result<EventInfo, serde_json::Error> {
    parse_event_tools(data, text, &mut ToolSpans::default())
}

/// The full JSON reader, noting tool-call spans in `tools` (taken back with the text when the
/// event turns out not to be JSON).
fn parse_event_tools(
    data: &[u8],
    text: &mut String,
    tools: &mut ToolSpans,
) -> Result<EventInfo, serde_json::Error> {
    let (before, spans, tool_bytes) = (text.len(), tools.len(), tools.bytes());
    let mut info = EventInfo::default();
    let mut de = serde_json::Deserializer::from_slice(data);
    let result = EventSeed {
        text,
        info: &mut info,
        tools,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    if let Err(e) = result {
        text.truncate(before);
        tools.truncate(spans);
        tools.clip(before);
        return Err(e);
    }
    info.content_bytes = text.len() - before;
    info.tool_bytes = tools.bytes() - tool_bytes;
    Ok(info)
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum TopKey {
    Choices,
    Usage,
    TextOutput,
    Error,
    Timings,
    NumOutputTokens,
    OutputIds,
    SequenceLength,
    // Responses and Anthropic Messages (see `apis`).
    Type,
    Delta,
    Index,
    OutputIndex,
    ItemId,
    Response,
    Message,
    Output,
    Content,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ChoiceKey {
    Delta,
    Message,
    Text,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum DeltaKey {
    Content,
    ReasoningContent,
    ToolCalls,
    Reasoning,
    #[serde(other)]
    Other,
}

/// Usage in OpenAI's names (`prompt_tokens`, `completion_tokens`) or in Responses' and
/// Anthropic's (`input_tokens`, `output_tokens`; Anthropic's cached input counted apart).
#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    /// Any JSON: a server's details of another shape must not fail the event; only a numeric
    /// `reasoning_tokens` in it is read.
    #[serde(default)]
    completion_tokens_details: Option<serde_json::Value>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    output_tokens_details: Option<serde_json::Value>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl Usage {
    /// Sets the counts this usage gives (OpenAI's names first).
    fn apply(&self, info: &mut EventInfo) {
        let count = |v: u64| v.min(u64::from(u32::MAX)) as u32;
        let cached = self.cache_read_input_tokens.unwrap_or(0)
            + self.cache_creation_input_tokens.unwrap_or(0);
        let input = self.input_tokens.map(|n| n.saturating_add(cached));
        info.prompt_tokens = self.prompt_tokens.or(input).map(count);
        info.completion_tokens = self.completion_tokens.or(self.output_tokens).map(count);
        info.reasoning_tokens = [&self.completion_tokens_details, &self.output_tokens_details]
            .into_iter()
            .flatten()
            .find_map(|d| d.get("reasoning_tokens")?.as_u64())
            .map(count);
    }
}

/// The message of an `error` value: a string, an object's `message`, or the value's JSON;
/// `None` for `null`.
pub(crate) fn error_message(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => Some(
            o.get("message")
                .and_then(|m| m.as_str())
                .map_or_else(|| v.to_string(), str::to_string),
        ),
        other => Some(other.to_string()),
    }
}

/// llama.cpp's `timings` object: the fields read (the per-token and per-second rates it adds
/// are derived from these, and skipped).
#[derive(Deserialize, Default)]
struct Timings {
    #[serde(default)]
    prompt_n: Option<f64>,
    #[serde(default)]
    cache_n: Option<f64>,
    #[serde(default)]
    prompt_ms: Option<f64>,
    #[serde(default)]
    predicted_ms: Option<f64>,
}

impl Timings {
    /// The record's form; `None` without a prompt time (not llama.cpp's object). Negative,
    /// NaN and huge values from a hostile server saturate instead of wrapping.
    fn into_record(self) -> Option<ServerTimings> {
        let us = |ms: f64| (ms * 1000.0).round().max(0.0) as u64;
        let n = |v: Option<f64>| v.unwrap_or(0.0).round().max(0.0) as u32;
        Some(ServerTimings {
            prefill_us: us(self.prompt_ms?),
            decode_us: self.predicted_ms.map_or(0, us),
            prompt_tokens: n(self.prompt_n),
            cached_tokens: n(self.cache_n),
        })
    }
}

struct EventSeed<'a> {
    text: &'a mut String,
    info: &'a mut EventInfo,
    tools: &'a mut ToolSpans,
}

seed! {
    EventSeed, deserialize_map, "a JSON object",
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        // num_output_tokens, output_ids, sequence_length: the first present is the count.
        let mut counts: [Option<u32>; 3] = [None; 3];
        let mut ev = apis::ApiEvent::default();
        while let Some(key) = map.next_key::<TopKey>()? {
            match key {
                TopKey::Choices => map.next_value_seed(ChoicesSeed {
                    text: self.text,
                    reasoning: &mut self.info.reasoning_bytes,
                    tools: &mut *self.tools,
                })?,
                TopKey::TextOutput => map.next_value_seed(TextSeed { text: self.text })?,
                TopKey::Usage => {
                    if let Some(u) = map.next_value::<Option<Usage>>()? {
                        u.apply(self.info);
                    }
                }
                TopKey::Error => {
                    let v: serde_json::Value = map.next_value()?;
                    if let Some(m) = error_message(&v) {
                        self.info.error = Some(m);
                    }
                }
                TopKey::Timings => {
                    self.info.timings = map
                        .next_value::<Option<Timings>>()?
                        .and_then(Timings::into_record);
                }
                TopKey::NumOutputTokens => counts[0] = first_number(&map.next_value()?),
                TopKey::OutputIds => counts[1] = Some(numbers(&map.next_value()?)),
                TopKey::SequenceLength => counts[2] = first_number(&map.next_value()?),
                TopKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
                other => self.api_key(other, &mut map, &mut ev)?,
            }
        }
        ev.finish(self.text, self.info, self.tools);
        self.info.tokens = counts.into_iter().flatten().next();
        Ok(())
    }
}

impl EventSeed<'_> {
    /// A Responses or Anthropic key's value, into `ev` (classified at the event's end) or
    /// straight into the text and info.
    fn api_key<'de, A: MapAccess<'de>>(
        &mut self,
        key: TopKey,
        map: &mut A,
        ev: &mut apis::ApiEvent,
    ) -> Result<(), A::Error> {
        match key {
            TopKey::Type => map.next_value_seed(apis::TypeSeed(&mut ev.kind))?,
            TopKey::Delta => map.next_value_seed(apis::DeltaValueSeed {
                text: &mut *self.text,
                info: &mut *self.info,
                ev,
            })?,
            TopKey::Index | TopKey::OutputIndex => {
                ev.index = apis::index_of(&map.next_value()?);
            }
            TopKey::ItemId => {
                let id: serde_json::Value = map.next_value()?;
                ev.item = id.as_str().map(apis::item_key);
            }
            TopKey::Response | TopKey::Message => map.next_value_seed(apis::EnvelopeSeed {
                info: &mut *self.info,
                message: &mut ev.message,
            })?,
            _ => map.next_value_seed(apis::ItemsSeed {
                text: &mut *self.text,
                info: &mut *self.info,
                tools: &mut *self.tools,
            })?,
        }
        Ok(())
    }
}

/// The first number in a value (a number, or nested arrays of them), as a count.
fn first_number(v: &serde_json::Value) -> Option<u32> {
    match v {
        serde_json::Value::Number(n) => n.as_u64().map(|n| n.min(u64::from(u32::MAX)) as u32),
        serde_json::Value::Array(a) => a.iter().find_map(first_number),
        _ => None,
    }
}

/// How many numbers a value holds (`output_ids`: the tokens themselves).
fn numbers(v: &serde_json::Value) -> u32 {
    match v {
        serde_json::Value::Number(_) => 1,
        serde_json::Value::Array(a) => a.iter().map(numbers).fold(0, u32::saturating_add),
        _ => 0,
    }
}

/// `choices`: reads the first element, skips the rest; `null` is allowed. `reasoning` adds up
/// the bytes of reasoning text appended.
struct ChoicesSeed<'a> {
    text: &'a mut String,
    reasoning: &'a mut usize,
    tools: &'a mut ToolSpans,
}

seed! {
    ChoicesSeed, deserialize_any, "an array of choices",
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if seq
            .next_element_seed(ChoiceSeed {
                text: self.text,
                reasoning: self.reasoning,
                tools: self.tools,
            })?
            .is_some()
        {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
        }
        Ok(())
    }
}

struct ChoiceSeed<'a> {
    text: &'a mut String,
    reasoning: &'a mut usize,
    tools: &'a mut ToolSpans,
}

seed! {
    ChoiceSeed, deserialize_map, "a choice object",
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<ChoiceKey>()? {
            match key {
                ChoiceKey::Delta | ChoiceKey::Message => map.next_value_seed(DeltaSeed {
                    text: &mut *self.text,
                    reasoning: &mut *self.reasoning,
                    tools: &mut *self.tools,
                })?,
                ChoiceKey::Text => map.next_value_seed(TextSeed { text: self.text })?,
                ChoiceKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A `delta` or `message` object: content and reasoning text both count as output; the
/// reasoning's bytes are added to `reasoning` too.
struct DeltaSeed<'a> {
    text: &'a mut String,
    reasoning: &'a mut usize,
    tools: &'a mut ToolSpans,
}

seed! {
    DeltaSeed, deserialize_any, "a delta or message object",
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<DeltaKey>()? {
            match key {
                DeltaKey::Content => map.next_value_seed(TextSeed { text: self.text })?,
                DeltaKey::ReasoningContent | DeltaKey::Reasoning => {
                    let before = self.text.len();
                    map.next_value_seed(TextSeed { text: self.text })?;
                    *self.reasoning += self.text.len() - before;
                }
                DeltaKey::ToolCalls => map.next_value_seed(ToolCallsSeed {
                    text: &mut *self.text,
                    tools: &mut *self.tools,
                })?,
                DeltaKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `tool_calls`: `null`, or an array of calls; each call's `function.arguments` is output text
/// (a model streaming a tool call generates those tokens as it would content).
struct ToolCallsSeed<'a> {
    text: &'a mut String,
    tools: &'a mut ToolSpans,
}

seed! {
    ToolCallsSeed, deserialize_any, "an array of tool calls",
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut position = 0;
        while seq
            .next_element_seed(ToolCallSeed {
                text: &mut *self.text,
                tools: &mut *self.tools,
                position,
            })?
            .is_some()
        {
            position += 1;
        }
        Ok(())
    }
}

/// One tool call: its `function.arguments` text is appended and noted as call `index` (a
/// stream's calls say their index; a whole message's are in order).
struct ToolCallSeed<'a> {
    text: &'a mut String,
    tools: &'a mut ToolSpans,
    position: u32,
}

seed! {
    ToolCallSeed, deserialize_any, "a tool call",
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut index, mut args) = (None, None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "index" => index = apis::index_of(&map.next_value()?),
                "function" => {
                    let at = self.text.len();
                    map.next_value_seed(FieldSeed {
                        path: &["arguments"],
                        text: &mut *self.text,
                    })?;
                    args = Some((at, self.text.len()));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some((s, e)) = args {
            self.tools.push(index.unwrap_or(self.position), s, e);
        }
        Ok(())
    }
}

/// An object in which the text at `path` (nested keys) is appended; everything else skipped.
struct FieldSeed<'a> {
    path: &'static [&'static str],
    text: &'a mut String,
}

seed! {
    FieldSeed, deserialize_any, "an object",
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (first, rest) = self.path.split_first().expect("a non-empty path");
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key != *first {
                map.next_value::<IgnoredAny>()?;
            } else if rest.is_empty() {
                map.next_value_seed(TextSeed {
                    text: &mut *self.text,
                })?;
            } else {
                map.next_value_seed(FieldSeed {
                    path: rest,
                    text: &mut *self.text,
                })?;
            }
        }
        Ok(())
    }
}

/// A text value: a string (appended), `null` (nothing), or an array of strings (all appended).
struct TextSeed<'a> {
    text: &'a mut String,
}

seed! {
    TextSeed, deserialize_any, "text, null, or an array of text",
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.text.push_str(v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(TextSeed {
                text: &mut *self.text,
            })?
            .is_some()
        {}
        Ok(())
    }
}

/// The fast scanner alone: what it read (text and reasoning bytes appended), or `None` where it
/// defers to the full reader.
#[doc(hidden)]
pub fn scan_fast(data: &[u8], text: &mut String) -> Option<EventInfo> {
    fast::scan(data, text, &mut None)
}

/// A single-pass scanner for the common token event — text in `choices[0].delta.content` (or
/// `reasoning_content`, `reasoning`, `message.content`, `text`) or in `text_output` — that reads
/// only the bytes it must, and OpenAI's usage of plain counts. Anything it is not sure about
/// (escapes in the text, other usage, `error`, malformed input, unexpected shapes) makes it give
/// up with `None`, and the full JSON reader decides; so it never accepts what that reader would
/// reject for the text and counts it extracts.
mod fast {
    use super::EventInfo;

    /// An event's top-level `delta`, as read.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Delta {
        /// None.
        None,
        /// A string (Responses) of this many bytes, appended.
        Text(usize),
        /// An object (Anthropic), its text appended and classified.
        Object,
    }

    /// Where the one text string of an event lies.
    #[derive(Clone, Copy, Debug)]
    pub struct Span {
        /// Offset of the string's contents (after its opening quote).
        pub start: usize,
        /// Offset of its closing quote.
        pub end: usize,
        /// The string is a reasoning field's.
        pub reasoning: bool,
    }

    /// Appends the event's text to `text` and says how many bytes (and how many of them
    /// reasoning), or `None` to defer. `span` receives where the text's contents lie in `data`
    /// when exactly one string held text (it is left `None` otherwise).
    pub fn scan(data: &[u8], text: &mut String, span: &mut Option<Span>) -> Option<EventInfo> {
        // Two checks for the whole event instead of one per string (both vectorize): invalid
        // UTF-8 or a raw control character anywhere, even in a field that is skipped, is for the
        // full reader to judge. Compact JSON (what servers stream) has no control characters at
        // all, so only pretty-printed events take the slow path for it.
        if data.iter().copied().min().is_some_and(|m| m < 0x20) {
            return None;
        }
        std::str::from_utf8(data).ok()?;
        let mut p = Parser {
            b: data,
            i: 0,
            strings: 0,
            span: None,
            in_reasoning: false,
            reasoning: 0,
        };
        let before = text.len();
        // A Responses event's `type`, and its `delta`: which kind of text a string delta is
        // depends on the type, which may come after it (vLLM writes it last).
        let mut kind: Option<&[u8]> = None;
        let mut delta = Delta::None;
        let mut usage: Option<(Option<u64>, Option<u64>)> = None;
        p.ws();
        p.expect(b'{')?;
        p.object_fields(|p, key| match key {
            b"choices" => p.choices(text),
            b"text_output" => p.text_value(text),
            b"type" if p.peek()? == b'"' => {
                kind = Some(p.plain_string()?);
                Some(())
            }
            b"delta" if delta == Delta::None && p.peek()? == b'"' => {
                let at = text.len();
                p.text_value(text)?;
                delta = Delta::Text(text.len() - at);
                Some(())
            }
            b"delta" if delta == Delta::None && p.peek()? == b'{' => {
                delta = Delta::Object;
                p.anthropic_delta(text)
            }
            // OpenAI's usage of plain counts (every streamed request's last event with
            // `include_usage`, every whole answer); any other usage is the full reader's.
            b"usage" if usage.is_none() => {
                usage = Some(p.usage()?);
                Some(())
            }
            // A second usage, errors, llama.cpp's timings, the server's token counts, a second
            // delta, Responses' and Anthropic's envelopes, whole outputs and content blocks: the
            // full reader's.
            b"usage" | b"error" | b"timings" | b"num_output_tokens" | b"output_ids"
            | b"sequence_length" | b"delta" | b"response" | b"message" | b"output" | b"content" => {
                None
            }
            _ => p.skip_value(),
        })?;
        p.ws();
        if p.i != p.b.len() {
            return None;
        }
        p.classify_delta(kind, delta)?;
        // No shape is learned from an event with usage: an event read by the shape would give no
        // counts.
        if p.strings == 1 && usage.is_none() {
            *span = p.span;
        }
        // The full reader's rule (`Usage::apply`): counts beyond u32 are u32::MAX.
        let count = |v: u64| v.min(u64::from(u32::MAX)) as u32;
        let (prompt, completion) = usage.unwrap_or_default();
        Some(EventInfo {
            content_bytes: text.len() - before,
            reasoning_bytes: p.reasoning,
            prompt_tokens: prompt.map(count),
            completion_tokens: completion.map(count),
            ..EventInfo::default()
        })
    }

    struct Parser<'a> {
        b: &'a [u8],
        i: usize,
        /// Text strings appended so far.
        strings: u32,
        /// Where the first one's contents lie.
        span: Option<Span>,
        /// The value being read is a reasoning field's.
        in_reasoning: bool,
        /// Bytes of reasoning text appended so far.
        reasoning: usize,
    }

    impl<'a> Parser<'a> {
        fn ws(&mut self) {
            while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            }
        }

        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.b.get(self.i).copied()
        }

        fn expect(&mut self, c: u8) -> Option<()> {
            (self.peek()? == c).then(|| self.i += 1)
        }

        /// Calls `f(key)` for each field, `f` consuming the value.
        fn object_fields(
            &mut self,
            mut f: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
        ) -> Option<()> {
            if self.peek()? == b'}' {
                self.i += 1;
                return Some(());
            }
            loop {
                let key = self.plain_string()?;
                self.expect(b':')?;
                f(self, key)?;
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        return Some(());
                    }
                    _ => return None,
                }
            }
        }

        /// A string without escapes, returned raw (keys, and text we append).
        fn plain_string(&mut self) -> Option<&'a [u8]> {
            self.expect(b'"')?;
            let start = self.i;
            let rest = &self.b[start..];
            let end = memchr::memchr2(b'"', b'\\', rest)?;
            if rest[end] != b'"' {
                return None;
            }
            // Raw control characters and invalid UTF-8 were ruled out for the whole event in
            // `scan`.
            self.i = start + end + 1;
            Some(&rest[..end])
        }

        /// Skips any value; strings may hold escapes here since nothing is extracted.
        fn skip_value(&mut self) -> Option<()> {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    loop {
                        let rest = &self.b[self.i..];
                        let j = memchr::memchr2(b'"', b'\\', rest)?;
                        if rest[j] == b'\\' {
                            // Only the escapes JSON defines (the full reader rejects others).
                            let len = match rest.get(j + 1)? {
                                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                                b'u' if rest
                                    .get(j + 2..j + 6)?
                                    .iter()
                                    .all(u8::is_ascii_hexdigit) =>
                                {
                                    6
                                }
                                _ => return None,
                            };
                            self.i += j + len;
                        } else {
                            self.i += j + 1;
                            return Some(());
                        }
                    }
                }
                b'{' => {
                    self.i += 1;
                    self.object_fields(|p, _| p.skip_value())
                }
                b'[' => {
                    self.i += 1;
                    self.array_items(|p, _| p.skip_value())
                }
                b't' => self.literal(b"true"),
                b'f' => self.literal(b"false"),
                b'n' => self.literal(b"null"),
                b'-' | b'0'..=b'9' => self.number(),
                _ => None,
            }
        }

        /// A usage object of plain counts: `prompt_tokens`, `completion_tokens` (each at most
        /// once: the full reader rejects a repeated field) and `total_tokens`, which nothing reads.
        /// `null`, another field, or a count that is not a plain integer defers.
        fn usage(&mut self) -> Option<(Option<u64>, Option<u64>)> {
            let (mut prompt, mut completion) = (None, None);
            self.expect(b'{')?;
            self.object_fields(|p, key| {
                let slot = match key {
                    b"prompt_tokens" => &mut prompt,
                    b"completion_tokens" => &mut completion,
                    b"total_tokens" => return p.count().map(drop),
                    _ => return None,
                };
                if slot.is_some() {
                    return None;
                }
                *slot = Some(p.count()?);
                Some(())
            })?;
            Some((prompt, completion))
        }

        /// A count: a JSON number (read by [`Self::number`]) that is digits only, at most 19 of
        /// them (below u64::MAX): no sign, fraction or exponent.
        fn count(&mut self) -> Option<u64> {
            self.ws();
            let start = self.i;
            self.number()?;
            let digits = &self.b[start..self.i];
            if digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            Some(digits.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
        }

        /// A JSON number, checked against the grammar without converting it.
        fn number(&mut self) -> Option<()> {
            let b = self.b;
            let digits = |i: &mut usize| {
                let s = *i;
                while *i < b.len() && b[*i].is_ascii_digit() {
                    *i += 1;
                }
                *i > s
            };
            let mut i = self.i;
            if b.get(i) == Some(&b'-') {
                i += 1;
            }
            match b.get(i) {
                Some(b'0') => i += 1,
                Some(b'1'..=b'9') => {
                    digits(&mut i);
                }
                _ => return None,
            }
            if b.get(i) == Some(&b'.') {
                i += 1;
                if !digits(&mut i) {
                    return None;
                }
            }
            if matches!(b.get(i), Some(b'e' | b'E')) {
                i += 1;
                if matches!(b.get(i), Some(b'+' | b'-')) {
                    i += 1;
                }
                if !digits(&mut i) {
                    return None;
                }
            }
            self.i = i;
            Some(())
        }

        fn literal(&mut self, lit: &[u8]) -> Option<()> {
            if self.b[self.i..].starts_with(lit) {
                self.i += lit.len();
                Some(())
            } else {
                None
            }
        }

        /// Calls `f(index)` for each element, `f` consuming it.
        fn array_items(&mut self, mut f: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
            if self.peek()? == b']' {
                self.i += 1;
                return Some(());
            }
            let mut n = 0;
            loop {
                f(self, n)?;
                n += 1;
                match self.peek()? {
                    b',' => self.i += 1,
                    b']' => {
                        self.i += 1;
                        return Some(());
                    }
                    _ => return None,
                }
            }
        }

        /// `choices`: text of the first choice; later choices skipped.
        fn choices(&mut self, text: &mut String) -> Option<()> {
            if self.peek()? == b'n' {
                return self.literal(b"null");
            }
            self.expect(b'[')?;
            self.array_items(|p, idx| {
                if idx > 0 {
                    return p.skip_value();
                }
                p.expect(b'{')?;
                p.object_fields(|p, key| match key {
                    b"delta" | b"message" => {
                        if p.peek()? == b'n' {
                            return p.literal(b"null");
                        }
                        p.expect(b'{')?;
                        p.object_fields(|p, key| match key {
                            b"content" => p.text_value(text),
                            b"reasoning_content" | b"reasoning" => {
                                p.in_reasoning = true;
                                let r = p.text_value(text);
                                p.in_reasoning = false;
                                r
                            }
                            b"tool_calls" => p.tool_calls(),
                            _ => p.skip_value(),
                        })
                    }
                    b"text" => p.text_value(text),
                    _ => p.skip_value(),
                })
            })
        }

        /// `tool_calls`: `null` or `[]` here; calls (whose argument text is output, and whose
        /// spans the full reader records) defer to the full reader.
        fn tool_calls(&mut self) -> Option<()> {
            match self.peek()? {
                b'n' => self.literal(b"null"),
                b'[' => {
                    self.i += 1;
                    self.array_items(|_, _| None)
                }
                _ => None,
            }
        }

        /// Anthropic's `delta` object: `text` is answer, `thinking` reasoning; a tool call's
        /// `partial_json` defers to the full reader; anything else (`type`, `signature`,
        /// `stop_reason`) is skipped.
        fn anthropic_delta(&mut self, text: &mut String) -> Option<()> {
            self.expect(b'{')?;
            self.object_fields(|p, key| match key {
                b"text" => p.text_value(text),
                b"thinking" => {
                    p.in_reasoning = true;
                    let r = p.text_value(text);
                    p.in_reasoning = false;
                    r
                }
                b"partial_json" => None,
                _ => p.skip_value(),
            })
        }

        /// A Responses string delta's kind, from the event's `type`: output text stays answer,
        /// reasoning text becomes reasoning; another type (a tool call's arguments, audio), none,
        /// or another string beside the delta defers to the full reader. Anthropic's object
        /// deltas were classified as they were read.
        fn classify_delta(&mut self, kind: Option<&[u8]>, delta: Delta) -> Option<()> {
            let Delta::Text(len) = delta else {
                return Some(());
            };
            match kind? {
                _ if self.strings > 1 => None,
                b"response.output_text.delta" => Some(()),
                b"response.reasoning_text.delta" | b"response.reasoning_summary_text.delta" => {
                    self.reasoning += len;
                    if let Some(s) = self.span.as_mut() {
                        s.reasoning = true;
                    }
                    Some(())
                }
                _ => None,
            }
        }

        /// A text value: a plain string (appended), `null`, or an array of plain strings.
        fn text_value(&mut self, text: &mut String) -> Option<()> {
            match self.peek()? {
                b'n' => self.literal(b"null"),
                b'[' => {
                    self.i += 1;
                    self.array_items(|p, _| p.text_value(text))
                }
                _ => {
                    let s = self.plain_string()?;
                    text.push_str(std::str::from_utf8(s).ok()?);
                    if self.strings == 0 {
                        self.span = Some(Span {
                            start: self.i - 1 - s.len(),
                            end: self.i - 1,
                            reasoning: self.in_reasoning,
                        });
                    }
                    self.strings += 1;
                    self.reasoning += s.len() * usize::from(self.in_reasoning);
                    Some(())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> (EventInfo, String) {
        let mut t = String::new();
        let info = parse_event(s.as_bytes(), &mut t).unwrap();
        (info, t)
    }

    /// Events of the remembered shape read straight from the stream, `data: ` and blank line
    /// included; the run's data and texts, or `None` when it read nothing.
    fn run_of(r: &EventReader, at: &str, text: &mut String) -> Option<(Run, Vec<String>)> {
        let mut seen = Vec::new();
        let run = r.read_run(at.as_bytes(), text, usize::MAX, |data, piece| {
            let (data, piece) = (
                String::from_utf8_lossy(data),
                String::from_utf8_lossy(piece),
            );
            seen.push(format!("{data}|{piece}"));
        });
        (run.bytes > 0).then_some((run, seen))
    }

    fn chat_event(c: &str) -> String {
        format!(
            r#"{{"id":"x","choices":[{{"index":0,"delta":{{"content":"{c}"}},"finish_reason":null}}]}}"#
        )
    }

    #[test]
    fn read_run_takes_remembered_shape_events_from_the_stream() {
        let ev = chat_event;
        let mut r = EventReader::new();
        let mut text = String::new();
        // Nothing learned yet.
        assert!(run_of(&r, &format!("data: {}\n\n", ev("a")), &mut text).is_none());
        r.read(ev("a").as_bytes(), &mut text).unwrap();
        // Three of the shape, the last one's text empty, then the end of the stream.
        let stream = format!(
            "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
            ev(" bc"),
            ev("d"),
            ev("")
        );
        let (run, seen) = run_of(&r, &stream, &mut text).unwrap();
        assert_eq!(&stream[run.bytes..], "data: [DONE]\n\n");
        assert_eq!(
            (run.events, run.with_text, run.text_bytes, run.reasoning),
            (3, 2, 4, false)
        );
        assert_eq!(text, "a bcd");
        let want: Vec<String> = [" bc", "d", ""]
            .iter()
            .map(|t| format!("{}|{t}", ev(t)))
            .collect();
        assert_eq!(seen, want);
        // An unfinished event ends the run before it, as does one of another shape.
        let cut = format!("data: {}\n\ndata: {}", ev("e"), ev("f"));
        for tail in [&cut[..cut.len() - 3], &cut[..cut.len() - 1], &cut] {
            let (run, _) = run_of(&r, tail, &mut text).unwrap();
            assert_eq!(run.bytes, 6 + ev("e").len() + 2, "{tail}");
        }
        assert_eq!(text, "a bcdeee");
        // Escapes, control bytes, another shape, another framing: left to the full reading,
        // nothing appended.
        for other in [
            ev(r#"q\"x"#),
            ev("tab\there"),
            ev("new\nline"),
            ev("x").replace("null", "\"stop\""),
        ] {
            let framed = format!("data: {other}\n\n");
            assert!(run_of(&r, &framed, &mut text).is_none(), "{other}");
        }
        for framing in [
            "data:{}\n\n",
            "data: {}\r\n\r\n",
            "data: {}\n",
            "event: x\ndata: {}\n\n",
        ] {
            let framed = framing.replace("{}", &ev("g"));
            assert!(run_of(&r, &framed, &mut text).is_none(), "{framed:?}");
        }
        assert_eq!(text, "a bcdeee");
        // A shape learned from an event of several lines is never read from one line.
        let mut r = EventReader::new();
        r.read(
            b"{\"choices\":[{\"delta\":{\"content\":\"a\"}}]\n}",
            &mut text,
        )
        .unwrap();
        let framed = "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]\n}\n\n";
        assert!(run_of(&r, framed, &mut text).is_none());
    }

    #[test]
    fn read_run_stops_once_the_text_passes_the_limit() {
        let mut r = EventReader::new();
        let mut text = String::new();
        r.read(chat_event("a").as_bytes(), &mut text).unwrap();
        let stream = ["bb", "cc", "dd"]
            .iter()
            .map(|t| format!("data: {}\n\n", chat_event(t)))
            .collect::<String>();
        let run = r.read_run(stream.as_bytes(), &mut text, 4, |_, _| {});
        assert_eq!((run.events, text.as_str()), (2, "abbcc"));
    }

    #[test]
    fn read_run_says_the_text_is_reasoning() {
        let mut r = EventReader::new();
        let mut text = String::new();
        let ev = |c: &str| format!(r#"{{"choices":[{{"delta":{{"reasoning_content":"{c}"}}}}]}}"#);
        r.read(ev("a").as_bytes(), &mut text).unwrap();
        let run = r.read_run(
            format!("data: {}\n\n", ev("b")).as_bytes(),
            &mut text,
            usize::MAX,
            |_, _| {},
        );
        assert_eq!((run.events, run.text_bytes, run.reasoning), (1, 1, true));
    }

    #[test]
    fn chat_role_only_chunk_has_no_content() {
        let (i, t) = parse(
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        );
        assert_eq!(i.content_bytes, 0);
        assert_eq!(t, "");
    }

    #[test]
    fn chat_content_and_escapes() {
        let (i, t) =
            parse(r#"{"choices":[{"index":0,"delta":{"content":" he said \"hi\"\n\u00e9"}}]}"#);
        assert_eq!(t, " he said \"hi\"\né");
        assert_eq!(i.content_bytes, t.len());
    }

    #[test]
    fn reasoning_counts_as_output() {
        let (i, t) =
            parse(r#"{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}"#);
        assert_eq!(t, "think");
        assert_eq!((i.content_bytes, i.reasoning_bytes), (5, 5));
    }

    /// Both readers tell reasoning bytes from answer bytes, in both fields' names, in arrays, next
    /// to content in one event, and with escapes (which only the full reader takes).
    #[test]
    fn reasoning_bytes_apart_in_both_readers() {
        let cases: [(&str, usize, usize, bool); 7] = [
            (
                r#"{"choices":[{"delta":{"reasoning":"hmm "}}]}"#,
                4,
                4,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":"ab","content":"xyz"}}]}"#,
                5,
                2,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"content":"xyz","reasoning":["a","bc"]}}]}"#,
                6,
                3,
                true,
            ),
            (r#"{"choices":[{"delta":{"content":" the"}}]}"#, 4, 0, true),
            (
                r#"{"choices":[{"delta":{"reasoning":"","content":"a"}}]}"#,
                1,
                0,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"reasoning":"q\"x","content":"a"}}]}"#,
                4,
                3,
                false,
            ),
            (
                r#"{"choices":[{"message":{"reasoning_content":"r","content":"ok"}}]}"#,
                3,
                1,
                true,
            ),
        ];
        for (e, content, reasoning, fast_ok) in cases {
            let mut full = String::new();
            let i = parse_event_full(e.as_bytes(), &mut full).unwrap();
            assert_eq!(
                (i.content_bytes, i.reasoning_bytes),
                (content, reasoning),
                "{e}"
            );
            let mut t = String::new();
            match scan_fast(e.as_bytes(), &mut t) {
                Some(f) => {
                    assert!(fast_ok, "{e}");
                    assert_eq!((f, t), (i, full), "{e}");
                }
                None => assert!(!fast_ok, "{e}"),
            }
        }
    }

    /// The remembered shape remembers whether its one string was reasoning: a reasoning stream
    /// read by the shortcut gives reasoning bytes, and an answer event after it (another field,
    /// so another prefix) does not pass for the same shape.
    #[test]
    fn remembered_shape_knows_reasoning() {
        let ev = |field: &str, c: &str| {
            format!(
                r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"{field}":"{c}"}},"finish_reason":null}}]}}"#
            )
        };
        let mut r = EventReader::new();
        let mut t = String::new();
        let first = r.read(ev("reasoning", "Let").as_bytes(), &mut t).unwrap();
        assert_eq!((first.content_bytes, first.reasoning_bytes), (3, 3));
        assert_eq!(
            r.shape.read(ev("reasoning", " me").as_bytes(), &mut t),
            Some(3)
        );
        let again = r.read(ev("reasoning", " see").as_bytes(), &mut t).unwrap();
        assert_eq!((again.content_bytes, again.reasoning_bytes), (4, 4));
        let mut probe = String::new();
        assert_eq!(
            r.shape.read(ev("content", "The").as_bytes(), &mut probe),
            None
        );
        let answer = r.read(ev("content", "The").as_bytes(), &mut t).unwrap();
        assert_eq!((answer.content_bytes, answer.reasoning_bytes), (3, 0));
        let next = r.read(ev("content", " end").as_bytes(), &mut t).unwrap();
        assert_eq!((next.content_bytes, next.reasoning_bytes), (4, 0));
        assert_eq!(t, "Let me seeThe end");
    }

    /// A stream's role, token and final events are three shapes: once one request has been
    /// read, the next one's events are all read by a shape kept (no shape is learned again), and
    /// a token event makes the token shape the one runs are read with.
    #[test]
    fn a_streams_shapes_are_kept_across_requests() {
        let ev = |delta: &str, finish: &str| {
            format!(
                r#"{{"id":"x","choices":[{{"index":0,"delta":{{{delta}}},"finish_reason":{finish}}}]}}"#
            )
        };
        let stream = [
            ev(r#""role":"assistant","content":"""#, "null"),
            ev(r#""content":"a""#, "null"),
            ev(r#""content":"b""#, "null"),
            ev(r#""content":"c""#, r#""length""#),
        ];
        let mut r = EventReader::new();
        let mut t = String::new();
        for e in &stream {
            r.read(e.as_bytes(), &mut t).unwrap();
        }
        assert_eq!(r.learned, 3);
        for e in &stream[..2] {
            let info = r.read(e.as_bytes(), &mut t).unwrap();
            assert_eq!(info, parse_event(e.as_bytes(), &mut String::new()).unwrap());
        }
        let run = format!("data: {}\n\n", stream[2]);
        let mut each = 0;
        assert_eq!(
            r.read_run(run.as_bytes(), &mut t, usize::MAX, |_, _| each += 1)
                .events,
            1
        );
        r.read(stream[3].as_bytes(), &mut t).unwrap();
        assert_eq!((r.learned, each, t.as_str()), (3, 1, "abcabc"));
        // Four shapes are kept: with a fifth, one of the stream's is learned again.
        for finish in [r#""stop""#, r#""tool_calls""#] {
            r.read(ev(r#""content":"d""#, finish).as_bytes(), &mut t)
                .unwrap();
        }
        for e in [&stream[0], &stream[1], &stream[3]] {
            r.read(e.as_bytes(), &mut t).unwrap();
        }
        assert_eq!((r.learned, t.as_str()), (6, "abcabcddac"));
    }

    /// Tool-call arguments are output, read by the full reader (which notes each call's
    /// spans); the call's id, type and name are not.
    #[test]
    fn tool_call_arguments_count_as_output() {
        let plain = r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"city"}}]}}]}"#;
        let mut t = String::new();
        assert_eq!(scan_fast(plain.as_bytes(), &mut t), None, "calls defer");
        assert_eq!(parse(plain).1, "city");
        let mut r = EventReader::new();
        let mut t = String::new();
        let i = r.read(plain.as_bytes(), &mut t).unwrap();
        assert_eq!((i.content_bytes, i.tool_bytes), (4, 4));
        assert_eq!(
            r.tools().summarize(&t),
            (1, false),
            "\"city\" is not JSON yet"
        );
        let escaped = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Paris\"}"}},{"function":{"name":"x","arguments":"!"}}]}}]}"#;
        let mut t = String::new();
        assert_eq!(scan_fast(escaped.as_bytes(), &mut t), None);
        let (i, t) = parse(escaped);
        assert_eq!(t, r#"{"city": "Paris"}!"#);
        assert_eq!(i.content_bytes, t.len());
        assert_eq!(
            parse(r#"{"choices":[{"delta":{"tool_calls":null}}]}"#).1,
            ""
        );
    }

    /// Reads every `data:` payload of a captured stream as a client does; the timings seen.
    fn stream_timings(engine: &str, name: &str) -> (Vec<ServerTimings>, String) {
        let mut r = EventReader::new();
        let mut text = String::new();
        let mut seen = Vec::new();
        for d in crate::test_fixtures::sse_data(engine, name) {
            if d == "[DONE]" {
                continue;
            }
            let info = r.read(d.as_bytes(), &mut text).expect(&d);
            seen.extend(info.timings);
        }
        (seen, text)
    }

    #[test]
    fn llamacpp_timings_from_the_real_streams_and_bodies() {
        // The usage chunk carries them (include_usage), exactly once.
        let (t, text) = stream_timings("llamacpp", "chat_stream");
        assert_eq!(
            t,
            [ServerTimings {
                prompt_tokens: 21,
                cached_tokens: 0,
                prefill_us: 21_167,
                decode_us: 35_502,
            }]
        );
        assert!(!text.is_empty());
        // Without include_usage, the finish_reason chunk does.
        let (t, _) = stream_timings("llamacpp", "chat_stream_no_usage");
        assert_eq!(t.len(), 1, "{t:?}");
        // /v1/completions puts usage and timings on the finish_reason chunk.
        let (t, _) = stream_timings("llamacpp", "completions_stream");
        assert_eq!(
            t,
            [ServerTimings {
                prompt_tokens: 4,
                cached_tokens: 0,
                prefill_us: 3_878,
                decode_us: 31_720,
            }]
        );
        // A whole body: at the top level, beside usage (20 of 21 prompt tokens cached).
        let mut text = String::new();
        let body = crate::test_fixtures::body("llamacpp", "chat");
        let info = parse_event(body.as_bytes(), &mut text).unwrap();
        assert_eq!(
            info.timings,
            Some(ServerTimings {
                prompt_tokens: 1,
                cached_tokens: 20,
                prefill_us: 12_853,
                decode_us: 21_044,
            })
        );
        assert_eq!(
            (info.prompt_tokens, info.completion_tokens),
            (Some(21), Some(8))
        );
        // vLLM sends none.
        let (t, _) = stream_timings("vllm", "chat_stream");
        assert!(t.is_empty());
    }

    #[test]
    fn hostile_timings_saturate() {
        let (info, _) = parse(
            r#"{"timings":{"prompt_n":-3,"cache_n":1e30,"prompt_ms":-1.5,"predicted_ms":1e300}}"#,
        );
        assert_eq!(
            info.timings,
            Some(ServerTimings {
                prompt_tokens: 0,
                cached_tokens: u32::MAX,
                prefill_us: 0,
                decode_us: u64::MAX,
            })
        );
        // Another server's `timings` without a prompt time is not llama.cpp's.
        assert_eq!(parse(r#"{"timings":{"total":3}}"#).0.timings, None);
        assert_eq!(parse(r#"{"timings":null}"#).0.timings, None);
    }

    /// The SSE `data` of every event of a captured stream.
    fn fixture_events(engine: &str, name: &str) -> Vec<String> {
        let path = format!(
            "{}/tests/fixtures/engines/{engine}/{name}.http",
            env!("CARGO_MANIFEST_DIR")
        );
        let raw = std::fs::read_to_string(&path).unwrap();
        raw.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(str::to_string)
            .collect()
    }

    /// Real Responses and Messages streams (vLLM 0.32 and llama-server, captured): the text
    /// is exactly the deltas', the usage is read, nothing else counts as content; the fast
    /// path and the full reader agree event by event.
    #[test]
    fn responses_and_messages_streams_of_real_engines() {
        for engine in ["vllm", "llamacpp"] {
            for (name, final_text_key) in [
                ("responses_stream", "response.output_text.done"),
                ("messages_stream", ""),
            ] {
                let mut r = EventReader::new();
                let (mut text, mut chunks, mut usage) = (String::new(), 0, (None, None));
                let mut expected = String::new();
                for e in fixture_events(engine, name) {
                    let v: serde_json::Value = serde_json::from_str(&e).unwrap();
                    if let Some(d) = v.get("delta").and_then(|d| d.as_str()) {
                        expected.push_str(d);
                    }
                    if let Some(d) = v.pointer("/delta/text").and_then(|d| d.as_str()) {
                        expected.push_str(d);
                    }
                    let mut alone = String::new();
                    let full = parse_event_full(e.as_bytes(), &mut alone).unwrap();
                    let i = r.read(e.as_bytes(), &mut text).unwrap();
                    assert_eq!(i, full, "{engine} {name}: {e}");
                    chunks += usize::from(i.content_bytes > 0);
                    usage.0 = i.prompt_tokens.or(usage.0);
                    usage.1 = i.completion_tokens.or(usage.1);
                    if v["type"] == final_text_key {
                        assert_eq!(v["text"].as_str().unwrap(), expected, "{engine}");
                    }
                }
                assert_eq!(text, expected, "{engine} {name}");
                assert!(chunks >= 2, "{engine} {name}: {chunks} content events");
                assert!(usage.1 == Some(8), "{engine} {name}: {usage:?}");
                assert!(usage.0.unwrap() > 0, "{engine} {name}: {usage:?}");
            }
        }
    }

    /// Responses and Anthropic shapes the captures lack: reasoning deltas (type before or after
    /// the delta), tool-call argument deltas by call, error events, audio, whole bodies.
    #[test]
    fn responses_and_messages_shapes() {
        let read = |events: &[&str]| {
            let mut r = EventReader::new();
            let mut t = String::new();
            let infos: Vec<EventInfo> = events
                .iter()
                .map(|e| r.read(e.as_bytes(), &mut t).unwrap())
                .collect();
            let tools = r.tools().summarize(&t);
            (infos, t, tools)
        };
        let (i, t, _) = read(&[
            r#"{"delta":"Let me","output_index":0,"type":"response.reasoning_text.delta"}"#,
            r#"{"type":"response.reasoning_summary_text.delta","delta":" think"}"#,
            r#"{"type":"response.output_text.delta","delta":"Yes"}"#,
        ]);
        assert_eq!(t, "Let me thinkYes");
        let split: Vec<(usize, usize)> = i
            .iter()
            .map(|i| (i.content_bytes, i.reasoning_bytes))
            .collect();
        assert_eq!(split, [(6, 6), (6, 6), (3, 0)]);
        // A function call streamed in two pieces, a second call by another item id.
        let (i, t, tools) = read(&[
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"city\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"\"Paris\"}"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_2","delta":"{}"}"#,
        ]);
        assert_eq!(t, r#"{"city":"Paris"}{}"#);
        assert_eq!(tools, (2, true));
        assert!(
            i.iter()
                .all(|i| i.tool_bytes == i.content_bytes && i.tool_bytes > 0)
        );
        // Anthropic: thinking, text, then a tool_use block's JSON in pieces (index after delta).
        let (i, t, tools) = read(&[
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}"#,
            r#"{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"q\": "},"index":2}"#,
            r#"{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"1}"},"index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
        ]);
        assert_eq!(t, r#"hmok{"q": 1}"#);
        assert_eq!(tools, (1, true));
        assert_eq!((i[0].reasoning_bytes, i[1].content_bytes), (2, 0));
        assert_eq!(i[5].completion_tokens, Some(9));
        // Errors, audio, the envelope's repeated text and usage.
        for (e, err) in [
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                "Overloaded",
            ),
            (
                r#"{"type":"error","code":"server_error","message":"boom","param":null}"#,
                "boom",
            ),
            (
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"x","message":"ran out"}}}"#,
                "ran out",
            ),
        ] {
            assert_eq!(parse(e).0.error.as_deref(), Some(err), "{e}");
        }
        let (i, t) = parse(r#"{"type":"response.audio.delta","delta":"UklGRg=="}"#);
        assert_eq!((i.content_bytes, t.as_str()), (0, ""));
        let (i, t) = parse(
            r#"{"type":"response.completed","response":{"output":[{"type":"message","content":[{"type":"output_text","text":"all of it"}]}],"error":null,"usage":{"input_tokens":5,"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1}}}}"#,
        );
        assert_eq!(
            (t.as_str(), i.error),
            ("", None),
            "completed repeats no text"
        );
        assert_eq!(
            (i.prompt_tokens, i.completion_tokens, i.reasoning_tokens),
            (Some(5), Some(3), Some(1))
        );
        let (i, _) = parse(
            r#"{"type":"message_start","message":{"usage":{"cache_read_input_tokens":20,"input_tokens":1,"output_tokens":0}}}"#,
        );
        assert_eq!((i.prompt_tokens, i.completion_tokens), (Some(21), Some(0)));
    }

    /// Whole Responses and Messages bodies: every item's text, reasoning apart, tool calls by
    /// item.
    #[test]
    fn responses_and_messages_bodies() {
        let mut r = EventReader::new();
        let mut t = String::new();
        let body = r#"{"id":"resp_1","output":[{"content":[{"text":"think","type":"reasoning_text"}],"summary":[],"type":"reasoning"},{"content":[{"type":"output_text","text":"Hi"}],"role":"assistant","type":"message"},{"arguments":"{\"a\":1}","name":"f","type":"function_call"}],"usage":{"input_tokens":4,"output_tokens":6}}"#;
        let i = r.read_body(body.as_bytes(), &mut t).unwrap();
        assert_eq!(t, r#"thinkHi{"a":1}"#);
        assert_eq!(
            (i.reasoning_bytes, i.tool_bytes, i.completion_tokens),
            (5, 7, Some(6))
        );
        assert_eq!(r.tools().summarize(&t), (1, true));
        r.clear_tools();
        let mut t = String::new();
        let body = r#"{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"mm","signature":"s"},{"type":"text","text":"Sure"},{"type":"tool_use","id":"t1","name":"get","input":{"city":"Oslo"}}],"usage":{"input_tokens":10,"output_tokens":4}}"#;
        let i = r.read_body(body.as_bytes(), &mut t).unwrap();
        assert_eq!(t, r#"mmSure{"city":"Oslo"}"#);
        assert_eq!((i.reasoning_bytes, i.prompt_tokens), (2, Some(10)));
        assert_eq!(r.tools().summarize(&t), (1, true));
        for vllm in ["responses", "messages"] {
            let raw = std::fs::read_to_string(format!(
                "{}/tests/fixtures/engines/vllm/{vllm}.http",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            let body = raw.split("\r\n\r\n").nth(1).unwrap();
            let mut t = String::new();
            let i = EventReader::new()
                .read_body(body.as_bytes(), &mut t)
                .unwrap();
            assert!(
                i.content_bytes > 0 && i.completion_tokens == Some(8),
                "{vllm}: {i:?} {t}"
            );
        }
    }

    #[test]
    fn usage_only_chunk() {
        let (i, t) = parse(
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}"#,
        );
        assert_eq!(
            (i.content_bytes, i.prompt_tokens, i.completion_tokens),
            (0, Some(12), Some(34))
        );
        assert_eq!(t, "");
    }

    /// OpenAI's usage of plain counts is the scanner's (as the full reader reads it, counts past
    /// u32 saturating); anything else in a usage is deferred, and no shape is learned from an
    /// event that carries one.
    #[test]
    fn plain_usage_is_scanned_and_the_rest_deferred() {
        let scanned = [
            r#"{"id":"c","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":100,"total_tokens":107}}"#,
            r#"{"usage":{"completion_tokens":0},"choices":[{"delta":{"content":"hi"}}]}"#,
            r#"{"usage":{ "prompt_tokens" : 9999999999999999999 },"choices":[]}"#,
            r#"{"choices":[],"usage":{}}"#,
        ];
        for e in scanned {
            let mut full = String::new();
            let want = parse_event_full(e.as_bytes(), &mut full).unwrap();
            let mut t = String::new();
            assert_eq!(scan_fast(e.as_bytes(), &mut t), Some(want), "{e}");
            assert_eq!(t, full, "{e}");
        }
        let mut t = String::new();
        let big = scan_fast(scanned[2].as_bytes(), &mut t).unwrap();
        assert_eq!(big.prompt_tokens, Some(u32::MAX));
        let deferred = [
            r#"{"choices":[],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1.0}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1e3}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":012}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":-1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":18446744073709551616}}"#,
            r#"{"choices":[],"usage":{"input_tokens":3}}"#,
            r#"{"choices":[],"usage":{"completion_tokens_details":{"reasoning_tokens":2}}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}"#,
        ];
        for e in deferred {
            assert_eq!(scan_fast(e.as_bytes(), &mut String::new()), None, "{e}");
        }
        // An event with text and usage is read, but its shape is not remembered.
        let mut r = EventReader::new();
        let mut text = String::new();
        let with_usage =
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"completion_tokens":1}}"#;
        assert_eq!(
            r.read(with_usage.as_bytes(), &mut text)
                .unwrap()
                .completion_tokens,
            Some(1)
        );
        let framed = format!("data: {with_usage}\n\n");
        assert!(run_of(&r, &framed, &mut text).is_none());
    }

    /// The server's reasoning count is read from usage's details; details of another shape are
    /// ignored, not an error.
    #[test]
    fn usage_reasoning_tokens() {
        let (i, _) = parse(
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":40,"completion_tokens_details":{"reasoning_tokens":32}}}"#,
        );
        assert_eq!(
            (i.completion_tokens, i.reasoning_tokens),
            (Some(40), Some(32))
        );
        for odd in [
            r#"null"#,
            r#""x""#,
            r#"{"reasoning_tokens":null}"#,
            r#"[1]"#,
        ] {
            let e = format!(
                r#"{{"usage":{{"completion_tokens":3,"completion_tokens_details":{odd}}}}}"#
            );
            let (i, _) = parse(&e);
            assert_eq!(
                (i.completion_tokens, i.reasoning_tokens),
                (Some(3), None),
                "{e}"
            );
        }
    }

    #[test]
    fn completions_text_and_null_usage() {
        let (i, t) = parse(
            r#"{"choices":[{"text":" the","index":0,"logprobs":null,"finish_reason":null}],"usage":null}"#,
        );
        assert_eq!(t, " the");
        assert_eq!(i.completion_tokens, None);
    }

    #[test]
    fn whole_chat_response() {
        let (i, t) = parse(
            r#"{"choices":[{"message":{"role":"assistant","content":"abc"}}],"usage":{"completion_tokens":3}}"#,
        );
        assert_eq!(t, "abc");
        assert_eq!(i.completion_tokens, Some(3));
    }

    #[test]
    fn triton_token_counts() {
        let count = |s: &str| parse(s).0.tokens;
        assert_eq!(
            count(r#"{"text_output":" a b","output_ids":[[5,6]],"sequence_length":[2]}"#),
            Some(2)
        );
        assert_eq!(
            count(r#"{"text_output":"x","sequence_length":[[7]]}"#),
            Some(7)
        );
        assert_eq!(
            count(r#"{"text_output":"x","output_ids":[1,2,3],"num_output_tokens":1}"#),
            Some(1),
            "num_output_tokens first"
        );
        assert_eq!(count(r#"{"text_output":"x"}"#), None);
        let (i, t) = parse(r#"{"model_name":"m","text_output":"ab","output_ids":[9,9]}"#);
        assert_eq!((i.content_bytes, t.as_str(), i.tokens), (2, "ab", Some(2)));
    }

    #[test]
    fn triton_text_output_string_and_array() {
        let (_, t) = parse(r#"{"model_name":"gpt2","model_version":"1","text_output":" world"}"#);
        assert_eq!(t, " world");
        let (_, t) = parse(r#"{"text_output":["a","b"],"batch_index":0}"#);
        assert_eq!(t, "ab");
    }

    #[test]
    fn only_first_choice_is_read() {
        let (_, t) = parse(r#"{"choices":[{"delta":{"content":"A"}},{"delta":{"content":"B"}}]}"#);
        assert_eq!(t, "A");
    }

    #[test]
    fn errors_in_both_shapes() {
        let (i, _) = parse(r#"{"error":"boom"}"#);
        assert_eq!(i.error.as_deref(), Some("boom"));
        let (i, _) = parse(r#"{"error":{"message":"bad key","type":"x"}}"#);
        assert_eq!(i.error.as_deref(), Some("bad key"));
        let (i, _) = parse(r#"{"error":null,"text_output":"a"}"#);
        assert_eq!(i.error, None);
    }

    /// The fast scanner and the full reader agree on every event shape and on broken input.
    #[test]
    fn fast_path_agrees_with_the_full_reader() {
        let events = [
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"content":"a"b\n"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hm","content":null}}],"x":[1,2.5e3,-4,{"y":"z\u00e9"}]}"#,
            r#"{"choices":[],"usage":{"completion_tokens":3}}"#,
            r#"{"choices":[{"text":" x"},{"text":" y"}]}"#,
            r#"{"model_name":"gpt2","model_version":"1","text_output":" w"}"#,
            r#"{"text_output":["a","b"]}"#,
            r#"{"error":"boom"}"#,
            r#" { "choices" : [ { "delta" : { "content" : "sp" } } ] } "#,
            r#"{"choices":[{"delta":{"content":"é✓"}}]}"#,
            r#"{"choices":[{"delta":{"content":" the"}}]"#,
            r#"{"choices":[{"delta":{"content":" the"}}]}}"#,
            r#"{"choices":[{"delta":{"content":" the"}}],}"#,
            r#"{"a":tru,"choices":[]}"#,
            r#"{"a":01x}"#,
            r#"{"a":-0.5e+3,"b":1E2,"c":-,"choices":[]}"#,
            r#"{"a":1.,"choices":[]}"#,
            r#"{"a":-12.75e-2,"choices":[{"delta":{"content":"n"}}]}"#,
            "{\"choices\":[{\"delta\":{\"content\":\"tab\there\"}}]}",
            r#"[1]"#,
            r#""#,
            r#"{"choices":null,"text_output":null}"#,
            r#"{"content_index":0,"delta":"32","item_id":"m","output_index":0,"type":"response.output_text.delta"}"#,
            r#"{"type":"response.reasoning_text.delta","delta":"hm"}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":"{}"}"#,
            r#"{"delta":"x"}"#,
            r#"{"delta":"x","delta":"y","type":"response.output_text.delta"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" gu"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"t"}}"#,
            r#"{"type":"content_block_delta","delta":{"partial_json":"{"},"index":1}"#,
            r#"{"type":"message_stop"}"#,
            r#"{"type":3,"delta":{"text":"a"},"choices":[{"delta":{"content":"b"}}]}"#,
        ];
        for e in events {
            let mut full = String::new();
            let mut de = serde_json::Deserializer::from_slice(e.as_bytes());
            let mut info = EventInfo::default();
            let full_ok = EventSeed {
                text: &mut full,
                info: &mut info,
                tools: &mut ToolSpans::default(),
            }
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .is_ok();
            let mut fast_text = String::new();
            if let Some(n) = fast::scan(e.as_bytes(), &mut fast_text, &mut None) {
                assert!(
                    full_ok,
                    "fast path accepted what the full reader rejects: {e}"
                );
                assert_eq!(fast_text, full, "{e}");
                assert_eq!(n.content_bytes, fast_text.len());
                info.content_bytes = full.len();
                assert_eq!(n, info, "{e}");
            }
            let mut t = String::from("pre");
            let r = parse_event(e.as_bytes(), &mut t);
            assert_eq!(r.is_ok(), full_ok, "{e}");
            if full_ok {
                assert_eq!(&t[3..], full, "{e}");
            } else {
                assert_eq!(t, "pre", "{e}");
            }
        }
        // The common shapes take the fast path.
        assert!(fast::scan(events[0].as_bytes(), &mut String::new(), &mut None).is_some());
        assert!(fast::scan(events[6].as_bytes(), &mut String::new(), &mut None).is_some());
    }

    /// A stream read through one [`EventReader`] gives, event by event, exactly what
    /// [`parse_event`] gives each event alone, whatever the events' shapes and their order.
    #[test]
    fn reader_agrees_with_parse_event_on_streams() {
        let chat = |c: &str| {
            format!(
                r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":"{c}"}},"logprobs":null,"finish_reason":null}}]}}"#
            )
        };
        let mut events: Vec<Vec<u8>> = vec![
            br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#.to_vec(),
        ];
        for c in [
            " the",
            " of",
            "",
            "é✓ 漢字",
            "  ",
            r#"a\"b"#,
            r#"tab\there"#,
            r#"x\u00e9"#,
            "end",
        ] {
            events.push(chat(c).into_bytes());
        }
        let mut raw = chat("RAW").into_bytes();
        // Text the reader must not take as the remembered shape: a quote that closes the
        // string early, a raw control character, invalid UTF-8, a cut-off event.
        for bad in [&b"a\",\"x\":\"b"[..], b"a\nb", b"\xff\xfe", b"\xe2\x9c"] {
            let at = raw.windows(3).position(|w| w == b"RAW").unwrap();
            let mut e = raw[..at].to_vec();
            e.extend_from_slice(bad);
            e.extend_from_slice(&raw[at + 3..]);
            events.push(e);
        }
        raw.truncate(raw.len() - 2);
        events.push(raw);
        events.push(br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}"#.to_vec());
        events.push(br#"{"choices":[],"usage":{"completion_tokens":3}}"#.to_vec());
        events.push(br#"{"model_name":"gpt2","model_version":"1","text_output":" w"}"#.to_vec());
        events
            .push(br#"{"model_name":"gpt2","model_version":"1","text_output":"\u0041"}"#.to_vec());
        events.push(br#"{"model_name":"gpt2","model_version":"1","text_output":"x"}"#.to_vec());
        events.push(br#"{"choices":[{"delta":{"content":"a","reasoning_content":"b"}}]}"#.to_vec());
        events.push(br#"{"choices":[{"delta":{"content":"c","reasoning_content":"b"}}]}"#.to_vec());
        events.push(br#"{"choices":[{"index":0,"delta":{"reasoning":"th"}}]}"#.to_vec());
        events.push(br#"{"choices":[{"index":0,"delta":{"reasoning":"ink"}}]}"#.to_vec());
        events.push(br#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}"#.to_vec());
        events.push(br#"{"choices":[{"index":0,"delta":{"content":"ok"}}]}"#.to_vec());
        // Every order of a few of them, so each can follow each.
        let mut reader = EventReader::new();
        for round in 0..events.len() {
            for (i, e) in events.iter().enumerate() {
                let e = if (i + round) % 3 == 0 {
                    &events[(i * 7 + round) % events.len()]
                } else {
                    e
                };
                let (mut a, mut b) = (String::from("p"), String::from("p"));
                let ra = reader.read(e, &mut a);
                let rb = parse_event(e, &mut b);
                assert_eq!(ra.is_ok(), rb.is_ok(), "{}", String::from_utf8_lossy(e));
                if let (Ok(x), Ok(y)) = (ra, rb) {
                    assert_eq!(x, y, "{}", String::from_utf8_lossy(e));
                }
                assert_eq!(a, b, "{}", String::from_utf8_lossy(e));
            }
        }
        // The common token event is read by the remembered shape.
        let mut r = EventReader::new();
        r.read(chat(" a").as_bytes(), &mut String::new()).unwrap();
        let mut t = String::new();
        assert_eq!(r.shape.read(chat(" bc").as_bytes(), &mut t), Some(3));
        assert_eq!(t, " bc");
    }

    #[test]
    fn malformed_json_leaves_buffer_untouched() {
        let mut t = String::from("keep");
        assert!(parse_event(br#"{"choices":[{"delta":{"content":"x"}}"#, &mut t).is_err());
        assert_eq!(t, "keep");
        assert!(parse_event(b"[DONE]", &mut t).is_err());
    }
}
