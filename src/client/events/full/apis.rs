//! The full reader's part for OpenAI Responses and Anthropic Messages events and bodies.
//!
//! Responses streams (`/v1/responses`): the text of `response.output_text.delta` is answer,
//! that of `response.reasoning_text.delta` and `response.reasoning_summary_text.delta`
//! reasoning, that of `response.function_call_arguments.delta` a tool call's arguments (one
//! call per `output_index`, or per `item_id` when a server sends no index); any other string
//! `delta` is answer text, except `response.audio.delta` (base64 audio, not text). The type may
//! come after the delta (vLLM writes `type` last), so the delta is classified at the event's
//! end. `response.completed` (and `.incomplete`) carry `response.usage` (`input_tokens`,
//! `output_tokens`, `output_tokens_details.reasoning_tokens`); `response.failed` carries
//! `response.error`; an `error` event carries `message`. The text repeated by the `.done`
//! events and by `response.completed`'s `output` is not read again.
//!
//! Anthropic streams (`/v1/messages`): `content_block_delta`'s `delta` object holds `text`
//! (answer), `thinking` (reasoning) or `partial_json` (a tool call's arguments, one call per
//! `index`); `message_start` carries `message.usage.input_tokens` (cached tokens, which llama.cpp
//! reports apart as `cache_read_input_tokens`, are added), `message_delta` the running
//! `usage.output_tokens`; an `error` event carries `error.message`.
//!
//! Whole bodies: Responses' `output` items (`message` content `text`, `reasoning` content and
//! summary `text`, `function_call` `arguments`), Anthropic's `content` blocks (`text`,
//! `thinking`, `tool_use` `input`, written out as JSON text).

use crate::client::seed::seed;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess};

use super::{EventInfo, FieldSeed, TextSeed, ToolSpans, Usage, error_message};
use crate::client::events::keys::{self, Block, EventType, ItemType, Top};

/// What a Responses event's `type` makes of its string `delta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Kind {
    /// No type (or one without a string delta): answer text, as any delta.
    #[default]
    Answer,
    /// Reasoning text.
    Reasoning,
    /// A tool call's arguments.
    ToolArgs,
    /// Audio bytes: not text.
    Audio,
    /// An `error` event: its `message` is the error.
    Error,
}

impl Kind {
    fn of(t: &str) -> Kind {
        match EventType::of(t.as_bytes()) {
            EventType::Error => Kind::Error,
            EventType::Audio => Kind::Audio,
            EventType::FunctionCallArguments
            | EventType::CustomToolCallInput
            | EventType::McpCallArguments => Kind::ToolArgs,
            EventType::ReasoningText | EventType::ReasoningSummaryText => Kind::Reasoning,
            // A type of reasoning the table does not name yet is reasoning still.
            _ if t.contains("reasoning") => Kind::Reasoning,
            EventType::OutputText | EventType::Other => Kind::Answer,
        }
    }
}

/// A Responses or Anthropic event's own keys, gathered in any order and applied at its end
/// ([`ApiEvent::finish`]).
#[derive(Debug, Default)]
pub(super) struct ApiEvent {
    /// From `type`.
    pub kind: Kind,
    /// Where a string `delta` (Responses) went in the text.
    pub delta: Option<(usize, usize)>,
    /// Where an Anthropic `partial_json` went.
    pub tool: Option<(usize, usize)>,
    /// `index` (Anthropic) or `output_index` (Responses).
    pub index: Option<u32>,
    /// A hash of `item_id` (Responses servers that send no index).
    pub item: Option<u32>,
    /// A string `message` (a Responses `error` event's).
    pub message: Option<String>,
}

impl ApiEvent {
    /// Classifies the delta by the type, records tool spans, takes an error event's message.
    pub fn finish(self, text: &mut String, info: &mut EventInfo, tools: &mut ToolSpans) {
        let key = self.index.or(self.item).unwrap_or(0);
        if let Some((s, e)) = self.delta {
            match self.kind {
                Kind::Reasoning => info.reasoning_bytes += e - s,
                Kind::ToolArgs => tools.push(key, s, e),
                // Only when the audio delta is the text's last piece can it be taken back
                // exactly; it always is (one delta per event).
                Kind::Audio if e == text.len() => text.truncate(s),
                _ => {}
            }
        }
        if let Some((s, e)) = self.tool {
            tools.push(key, s, e);
        }
        if self.kind == Kind::Error && info.error.is_none() {
            info.error = self.message.or_else(|| Some("error event".to_string()));
        }
    }
}

/// `type`: its kind (any other JSON is ignored).
pub(super) struct TypeSeed<'a>(pub &'a mut Kind);

seed! {
    TypeSeed, deserialize_any, "an event type", skipping others;
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        *self.0 = Kind::of(v);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// A small unsigned number (`index`, `output_index`), or `None` for anything else.
pub(super) fn index_of(v: &serde_json::Value) -> Option<u32> {
    v.as_u64().map(|n| n.min(u64::from(u32::MAX)) as u32)
}

/// `item_id`: a call's key when no index says it (FNV-1a of the id, its top bit set so it
/// never meets a small index).
pub(super) fn item_key(id: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in id.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h | 0x8000_0000
}

/// `delta`: a Responses string (appended, its range noted), an Anthropic object (its text
/// appended and classified), or anything else ignored.
pub(super) struct DeltaValueSeed<'a> {
    pub text: &'a mut String,
    pub info: &'a mut EventInfo,
    pub ev: &'a mut ApiEvent,
}

seed! {
    DeltaValueSeed, deserialize_any, "a delta", skipping others;
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        let at = self.text.len();
        self.text.push_str(v);
        self.ev.delta = Some((at, self.text.len()));
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Block>()? {
            let at = self.text.len();
            match key {
                Block::Text => map.next_value_seed(TextSeed { text: self.text })?,
                Block::Thinking => {
                    map.next_value_seed(TextSeed { text: self.text })?;
                    self.info.reasoning_bytes += self.text.len() - at;
                }
                Block::PartialJson => {
                    map.next_value_seed(TextSeed { text: self.text })?;
                    self.ev.tool = Some((at, self.text.len()));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A `message` (Anthropic's `message_start`) or `response` (Responses' lifecycle events)
/// object: its `usage` and `error` are read, the rest skipped (its `output` repeats text the
/// deltas carried). A string `message` is kept (a Responses error event's).
pub(super) struct EnvelopeSeed<'a> {
    pub info: &'a mut EventInfo,
    pub message: &'a mut Option<String>,
}

seed! {
    EnvelopeSeed, deserialize_any, "an object", skipping others;
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        *self.message = Some(v.to_string());
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Top>()? {
            match key {
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
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A whole body's list of output items (Responses' `output`) or content blocks (Anthropic's
/// `content`; a string `content` is text): item `i` is tool call `i` when it is one.
pub(super) struct ItemsSeed<'a> {
    pub text: &'a mut String,
    pub info: &'a mut EventInfo,
    pub tools: &'a mut ToolSpans,
}

seed! {
    ItemsSeed, deserialize_any, "a list of output items or content blocks",
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.text.push_str(v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> { Ok(()) }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0u32;
        while seq
            .next_element_seed(ItemSeed {
                text: &mut *self.text,
                info: &mut *self.info,
                tools: &mut *self.tools,
                key: i,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
}

/// One output item or content block; what its text is depends on its `type` (read in any
/// order), so ranges are noted and classified at its end.
struct ItemSeed<'a> {
    text: &'a mut String,
    info: &'a mut EventInfo,
    tools: &'a mut ToolSpans,
    key: u32,
}

seed! {
    ItemSeed, deserialize_any, "an output item or content block",
    fn visit_unit<E: de::Error>(self) -> Result<(), E> { Ok(()) }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut reasoning_item, mut reasoning, mut tool) = (false, 0usize, None);
        let start = self.text.len();
        while let Some(key) = map.next_key::<Block>()? {
            let at = self.text.len();
            match key {
                Block::Type => {
                    let kind = map.next_value::<Option<std::borrow::Cow<'de, str>>>()?;
                    reasoning_item =
                        kind.is_some_and(|k| ItemType::of(k.as_bytes()) == ItemType::Reasoning);
                }
                // Responses' message and reasoning content, reasoning summaries.
                Block::Content | Block::Summary => {
                    map.next_value_seed(PartsSeed { text: &mut *self.text })?;
                }
                Block::Text => map.next_value_seed(TextSeed { text: self.text })?,
                Block::Thinking => {
                    map.next_value_seed(TextSeed { text: self.text })?;
                    reasoning += self.text.len() - at;
                }
                Block::Arguments => {
                    map.next_value_seed(TextSeed { text: self.text })?;
                    tool = Some((at, self.text.len()));
                }
                // Anthropic's tool_use input is already JSON: written out as its text.
                Block::Input => {
                    let v: serde_json::Value = map.next_value()?;
                    // Straight into the text, not through a String of its own.
                    let _ = std::fmt::Write::write_fmt(self.text, format_args!("{v}"));
                    tool = Some((at, self.text.len()));
                }
                Block::PartialJson | Block::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if reasoning_item {
            // All of a reasoning item's text is reasoning (its content and its summary).
            reasoning = self.text.len() - start;
        }
        self.info.reasoning_bytes += reasoning;
        if let Some((s, e)) = tool {
            self.tools.push(self.key, s, e);
        }
        Ok(())
    }
}

/// A list of content parts whose `text` is appended (a string is text itself).
struct PartsSeed<'a> {
    text: &'a mut String,
}

seed! {
    PartsSeed, deserialize_any, "content parts",
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.text.push_str(v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> { Ok(()) }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(FieldSeed {
                path: keys::PART_TEXT,
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
    use crate::client::events::{EventReader, parse_event_full};

    #[test]
    fn kinds_of_types() {
        assert_eq!(Kind::of("response.output_text.delta"), Kind::Answer);
        assert_eq!(Kind::of("response.reasoning_text.delta"), Kind::Reasoning);
        assert_eq!(
            Kind::of("response.reasoning_summary_text.delta"),
            Kind::Reasoning
        );
        assert_eq!(
            Kind::of("response.function_call_arguments.delta"),
            Kind::ToolArgs
        );
        assert_eq!(Kind::of("response.audio.delta"), Kind::Audio);
        assert_eq!(Kind::of("error"), Kind::Error);
        assert_ne!(item_key("fc_1"), item_key("fc_2"));
        assert!(item_key("x") >= 0x8000_0000);
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
}
