//! The full reader's part for OpenAI Responses and Anthropic Messages events and bodies, and
//! the tool-call spans every shape records.
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

use super::{EventInfo, TextSeed};

/// Where tool-call argument text lies in the output text, by call: spans of one call that
/// follow each other are merged. Kept by the event reader for the request in flight (cleared
/// with it); pushing allocates only when the first call of a worker's first tool stream arrives.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolSpans {
    /// (call key, start, end) in the output text.
    spans: Vec<(u32, usize, usize)>,
}

impl ToolSpans {
    /// Notes that `text[start..end]` is argument text of call `key`.
    pub fn push(&mut self, key: u32, start: usize, end: usize) {
        if end <= start {
            return;
        }
        match self.spans.last_mut() {
            Some(last) if last.0 == key && last.2 == start => last.2 = end,
            _ => self.spans.push((key, start, end)),
        }
    }

    /// Forgets every span (a new request).
    pub fn clear(&mut self) {
        self.spans.clear();
    }

    /// Spans recorded.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether none were.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Drops the spans after the first `n` (a parse that failed took its text back). A span
    /// that a failed parse extended keeps its extension: its text is gone, so it is cut back to
    /// the text's new end by [`ToolSpans::clip`].
    pub fn truncate(&mut self, n: usize) {
        self.spans.truncate(n);
    }

    /// Cuts every span back to the first `len` bytes of the text.
    pub fn clip(&mut self, len: usize) {
        for s in &mut self.spans {
            s.2 = s.2.min(len);
        }
        self.spans.retain(|s| s.1 < s.2);
    }

    /// Bytes of argument text noted.
    pub fn bytes(&self) -> usize {
        self.spans.iter().map(|s| s.2 - s.1).sum()
    }

    /// The calls in `text` and whether every one's arguments parse as JSON (`(0, false)`
    /// without a call). Spans beyond `text` (never, unless the text was cut) count as invalid.
    pub fn summarize(&self, text: &str) -> (u32, bool) {
        let mut keys: Vec<u32> = Vec::new();
        for &(k, ..) in &self.spans {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let valid = !keys.is_empty()
            && keys.iter().all(|&k| {
                let mut args = String::new();
                for &(key, s, e) in &self.spans {
                    match text.get(s..e) {
                        Some(piece) if key == k => args.push_str(piece),
                        None => return false,
                        _ => {}
                    }
                }
                serde_json::from_str::<IgnoredAny>(&args).is_ok()
            });
        (keys.len() as u32, valid)
    }
}

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
        match t {
            "error" => Kind::Error,
            "response.audio.delta" => Kind::Audio,
            "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta"
            | "response.mcp_call_arguments.delta" => Kind::ToolArgs,
            _ if t.contains("reasoning") => Kind::Reasoning,
            _ => Kind::Answer,
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
        while let Some(key) = map.next_key::<BlockKey>()? {
            let at = self.text.len();
            match key {
                BlockKey::Text => map.next_value_seed(TextSeed { text: self.text })?,
                BlockKey::Thinking => {
                    map.next_value_seed(TextSeed { text: self.text })?;
                    self.info.reasoning_bytes += self.text.len() - at;
                }
                BlockKey::PartialJson => {
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

/// Keys of Anthropic's deltas and content blocks, and of Responses' output items.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum BlockKey {
    Type,
    Text,
    Thinking,
    PartialJson,
    Input,
    Content,
    Summary,
    Arguments,
    #[serde(other)]
    Other,
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
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "usage" => {
                    if let Some(u) = map.next_value::<Option<super::Usage>>()? {
                        u.apply(self.info);
                    }
                }
                "error" => {
                    let v: serde_json::Value = map.next_value()?;
                    if let Some(m) = super::error_message(&v) {
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
    pub tools: &'a mut super::ToolSpans,
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
    tools: &'a mut super::ToolSpans,
    key: u32,
}

seed! {
    ItemSeed, deserialize_any, "an output item or content block",
    fn visit_unit<E: de::Error>(self) -> Result<(), E> { Ok(()) }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut reasoning_item, mut reasoning, mut tool) = (false, 0usize, None);
        let start = self.text.len();
        while let Some(key) = map.next_key::<BlockKey>()? {
            let at = self.text.len();
            match key {
                BlockKey::Type => {
                    let kind = map.next_value::<Option<std::borrow::Cow<'de, str>>>()?;
                    reasoning_item = kind.as_deref() == Some("reasoning");
                }
                // Responses' message and reasoning content, reasoning summaries.
                BlockKey::Content | BlockKey::Summary => {
                    map.next_value_seed(PartsSeed { text: &mut *self.text })?;
                }
                BlockKey::Text => map.next_value_seed(TextSeed { text: self.text })?,
                BlockKey::Thinking => {
                    map.next_value_seed(TextSeed { text: self.text })?;
                    reasoning += self.text.len() - at;
                }
                BlockKey::Arguments => {
                    map.next_value_seed(TextSeed { text: self.text })?;
                    tool = Some((at, self.text.len()));
                }
                // Anthropic's tool_use input is already JSON: written out as its text.
                BlockKey::Input => {
                    let v: serde_json::Value = map.next_value()?;
                    // Straight into the text, not through a String of its own.
                    let _ = std::fmt::Write::write_fmt(self.text, format_args!("{v}"));
                    tool = Some((at, self.text.len()));
                }
                BlockKey::PartialJson | BlockKey::Other => {
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
            .next_element_seed(super::FieldSeed {
                path: &["text"],
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

    #[test]
    fn spans_merge_per_call_and_check_json() {
        let text = "{\"a\":1}{\"b\":";
        let mut t = ToolSpans::default();
        assert_eq!(t.summarize(text), (0, false));
        t.push(0, 0, 3);
        t.push(0, 3, 7);
        assert_eq!(t.len(), 1, "contiguous spans of one call merge");
        assert_eq!(t.summarize(text), (1, true));
        t.push(1, 7, 12);
        assert_eq!(
            t.summarize(text),
            (2, false),
            "the second call's JSON is cut off"
        );
        t.push(5, 20, 30);
        assert_eq!(t.summarize(text), (3, false), "a span past the text");
        t.clear();
        assert!(t.is_empty());
        t.push(3, 2, 2);
        assert!(t.is_empty(), "empty spans are not kept");
    }

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
}
