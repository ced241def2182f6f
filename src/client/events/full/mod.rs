//! The full JSON reader: every shape the event readers understand, read with serde seeds that
//! append text in place (no document built), for what the scanner leaves to it (escapes, errors,
//! tool calls, token counts, timings, Responses' and Anthropic's events and whole bodies). The
//! Responses and Anthropic part is `apis`. Keys come from the table of `super::keys`.

mod apis;

use crate::client::seed::seed;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};
use serde::{Deserialize, Deserializer};

use super::keys::{self, Choice, Delta, ToolCall, Top};
use super::{EventInfo, ToolSpans};
use crate::record::ServerTimings;

/// The full JSON reader, for what the scanner left to it; `text` is restored on failure.
pub(super) fn parse_full(
    data: &[u8],
    text: &mut String,
    before: usize,
    tools: &mut ToolSpans,
) -> Result<EventInfo, serde_json::Error> {
    text.truncate(before);
    parse_event_tools(data, text, tools)
}

/// The full JSON reader, noting tool-call spans in `tools` (taken back with the text when the
/// event turns out not to be JSON).
pub(super) fn parse_event_tools(
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

/// Usage in OpenAI's names (`prompt_tokens`, `completion_tokens`) or in Responses' and
/// Anthropic's (`input_tokens`, `output_tokens`; Anthropic's cached input counted apart).
#[derive(Default)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    /// Any JSON: a server's details of another shape must not fail the event; only a numeric
    /// `reasoning_tokens` in it is read.
    completion_tokens_details: Option<serde_json::Value>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    output_tokens_details: Option<serde_json::Value>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// Read as serde's derive reads a struct of optional fields, with the keys of the table: an
/// object by its keys (unknown ones skipped, a repeated one an error), an array by position.
impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Usage, D::Error> {
        d.deserialize_struct("Usage", &[], UsageVisitor)
    }
}

struct UsageVisitor;

impl<'de> de::Visitor<'de> for UsageVisitor {
    type Value = Usage;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct Usage")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Usage, A::Error> {
        use keys::Usage as K;
        let mut u = Usage::default();
        let mut seen = 0u32;
        while let Some(key) = map.next_key::<K>()? {
            if matches!(key, K::TotalTokens | K::Other) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let bit = 1u32 << key as u32;
            if seen & bit != 0 {
                return Err(de::Error::duplicate_field(key.name()));
            }
            seen |= bit;
            match key {
                K::PromptTokens => u.prompt_tokens = map.next_value()?,
                K::CompletionTokens => u.completion_tokens = map.next_value()?,
                K::CompletionTokensDetails => u.completion_tokens_details = map.next_value()?,
                K::InputTokens => u.input_tokens = map.next_value()?,
                K::OutputTokens => u.output_tokens = map.next_value()?,
                K::OutputTokensDetails => u.output_tokens_details = map.next_value()?,
                K::CacheReadInputTokens => u.cache_read_input_tokens = map.next_value()?,
                K::CacheCreationInputTokens => u.cache_creation_input_tokens = map.next_value()?,
                K::TotalTokens | K::Other => {}
            }
        }
        Ok(u)
    }

    /// No server sends one; read as the derive did (fields in declaration order, missing ones
    /// absent), so that no event reads differently.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Usage, A::Error> {
        Ok(Usage {
            prompt_tokens: seq.next_element()?.unwrap_or_default(),
            completion_tokens: seq.next_element()?.unwrap_or_default(),
            completion_tokens_details: seq.next_element()?.unwrap_or_default(),
            input_tokens: seq.next_element()?.unwrap_or_default(),
            output_tokens: seq.next_element()?.unwrap_or_default(),
            output_tokens_details: seq.next_element()?.unwrap_or_default(),
            cache_read_input_tokens: seq.next_element()?.unwrap_or_default(),
            cache_creation_input_tokens: seq.next_element()?.unwrap_or_default(),
        })
    }
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
            .find_map(|d| d.get(keys::REASONING_TOKENS)?.as_u64())
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
            o.get(keys::ERROR_MESSAGE)
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
        while let Some(key) = map.next_key::<Top>()? {
            match key {
                Top::Choices => map.next_value_seed(ChoicesSeed {
                    text: self.text,
                    reasoning: &mut self.info.reasoning_bytes,
                    tools: &mut *self.tools,
                })?,
                Top::TextOutput => map.next_value_seed(TextSeed { text: self.text })?,
                Top::Usage => {
                    if let Some(u) = map.next_value::<Option<Usage>>()? {
                        u.apply(self.info);
                    }
                }
                Top::Error => {
                    let v: serde_json::Value = map.next_value()?;
                    if let Some(m) = error_message(&v) {
                        self.info.error = Some(m);
                    }
                }
                Top::Timings => {
                    self.info.timings = map
                        .next_value::<Option<Timings>>()?
                        .and_then(Timings::into_record);
                }
                Top::NumOutputTokens => counts[0] = first_number(&map.next_value()?),
                Top::OutputIds => counts[1] = Some(numbers(&map.next_value()?)),
                Top::SequenceLength => counts[2] = first_number(&map.next_value()?),
                Top::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
                Top::Type
                | Top::Delta
                | Top::Index
                | Top::OutputIndex
                | Top::ItemId
                | Top::Response
                | Top::Message
                | Top::Output
                | Top::Content => self.api_key(key, &mut map, &mut ev)?,
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
        key: Top,
        map: &mut A,
        ev: &mut apis::ApiEvent,
    ) -> Result<(), A::Error> {
        match key {
            Top::Type => map.next_value_seed(apis::TypeSeed(&mut ev.kind))?,
            Top::Delta => map.next_value_seed(apis::DeltaValueSeed {
                text: &mut *self.text,
                info: &mut *self.info,
                ev,
            })?,
            Top::Index | Top::OutputIndex => {
                ev.index = apis::index_of(&map.next_value()?);
            }
            Top::ItemId => {
                let id: serde_json::Value = map.next_value()?;
                ev.item = id.as_str().map(apis::item_key);
            }
            Top::Response | Top::Message => map.next_value_seed(apis::EnvelopeSeed {
                info: &mut *self.info,
                message: &mut ev.message,
            })?,
            // `output` and `content`: a whole body's items or blocks.
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
        while let Some(key) = map.next_key::<Choice>()? {
            match key {
                Choice::Delta | Choice::Message => map.next_value_seed(DeltaSeed {
                    text: &mut *self.text,
                    reasoning: &mut *self.reasoning,
                    tools: &mut *self.tools,
                })?,
                Choice::Text => map.next_value_seed(TextSeed { text: self.text })?,
                Choice::Other => {
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
        while let Some(key) = map.next_key::<Delta>()? {
            match key {
                Delta::Content => map.next_value_seed(TextSeed { text: self.text })?,
                Delta::ReasoningContent | Delta::Reasoning => {
                    let before = self.text.len();
                    map.next_value_seed(TextSeed { text: self.text })?;
                    *self.reasoning += self.text.len() - before;
                }
                Delta::ToolCalls => map.next_value_seed(ToolCallsSeed {
                    text: &mut *self.text,
                    tools: &mut *self.tools,
                })?,
                Delta::Other => {
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
        while let Some(key) = map.next_key::<ToolCall>()? {
            match key {
                ToolCall::Index => index = apis::index_of(&map.next_value()?),
                ToolCall::Function => {
                    let at = self.text.len();
                    map.next_value_seed(FieldSeed {
                        path: keys::ARGUMENTS,
                        text: &mut *self.text,
                    })?;
                    args = Some((at, self.text.len()));
                }
                ToolCall::Other => {
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
pub(super) struct FieldSeed<'a> {
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
pub(super) struct TextSeed<'a> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::events::tests::parse;
    use crate::client::events::{EventReader, parse_event, scan_fast};

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
    fn errors_in_both_shapes() {
        let (i, _) = parse(r#"{"error":"boom"}"#);
        assert_eq!(i.error.as_deref(), Some("boom"));
        let (i, _) = parse(r#"{"error":{"message":"bad key","type":"x"}}"#);
        assert_eq!(i.error.as_deref(), Some("bad key"));
        let (i, _) = parse(r#"{"error":null,"text_output":"a"}"#);
        assert_eq!(i.error, None);
    }
}
