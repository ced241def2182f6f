//! A single-pass scanner for the common token event — text in `choices[0].delta.content` (or
//! `reasoning_content`, `reasoning`, `message.content`, `text`) or in `text_output` — that reads
//! only the bytes it must, and OpenAI's usage of plain counts. Anything it is not sure about
//! (escapes in the text, other usage, `error`, malformed input, unexpected shapes) makes it give
//! up with `None`, and the full JSON reader decides; so it never accepts what that reader would
//! reject for the text and counts it extracts.
//!
//! Keys are matched through the table of `keys`: every key of an API the scanner does not read
//! itself hands the event to the full reader, so a key added there is never skipped here.

use super::EventInfo;
use super::keys::{Block, Choice, Delta as DeltaKey, EventType, Top, Usage};

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
    p.object_fields(|p, key| match Top::of(key) {
        Top::Choices => p.choices(text),
        Top::TextOutput => p.text_value(text),
        Top::Type if p.peek()? == b'"' => {
            kind = Some(p.plain_string()?);
            Some(())
        }
        Top::Delta if delta == Delta::None && p.peek()? == b'"' => {
            let at = text.len();
            p.text_value(text)?;
            delta = Delta::Text(text.len() - at);
            Some(())
        }
        Top::Delta if delta == Delta::None && p.peek()? == b'{' => {
            delta = Delta::Object;
            p.anthropic_delta(text)
        }
        // OpenAI's usage of plain counts (every streamed request's last event with
        // `include_usage`, every whole answer); any other usage is the full reader's.
        Top::Usage if usage.is_none() => {
            usage = Some(p.usage()?);
            Some(())
        }
        // A type that is not a string says nothing; the indices and item id of a Responses or
        // Anthropic event matter only to tool-call deltas, which the full reader takes.
        Top::Type | Top::Index | Top::OutputIndex | Top::ItemId | Top::Other => p.skip_value(),
        // Every other key the table names (a second usage, errors, llama.cpp's timings, the
        // server's token counts, a second delta, Responses' and Anthropic's envelopes, whole
        // outputs and content blocks, and any key an API adds there): the full reader's.
        _ => None,
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
                            b'u' if rest.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
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
            let slot = match Usage::of(key) {
                Usage::PromptTokens => &mut prompt,
                Usage::CompletionTokens => &mut completion,
                Usage::TotalTokens => return p.count().map(drop),
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
            p.object_fields(|p, key| match Choice::of(key) {
                Choice::Delta | Choice::Message => {
                    if p.peek()? == b'n' {
                        return p.literal(b"null");
                    }
                    p.expect(b'{')?;
                    p.object_fields(|p, key| match DeltaKey::of(key) {
                        DeltaKey::Content => p.text_value(text),
                        DeltaKey::ReasoningContent | DeltaKey::Reasoning => {
                            p.in_reasoning = true;
                            let r = p.text_value(text);
                            p.in_reasoning = false;
                            r
                        }
                        DeltaKey::ToolCalls => p.tool_calls(),
                        DeltaKey::Other => p.skip_value(),
                    })
                }
                Choice::Text => p.text_value(text),
                Choice::Other => p.skip_value(),
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
        self.object_fields(|p, key| match Block::of(key) {
            Block::Text => p.text_value(text),
            Block::Thinking => {
                p.in_reasoning = true;
                let r = p.text_value(text);
                p.in_reasoning = false;
                r
            }
            Block::PartialJson => None,
            // What the full reader skips in a delta object too.
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
        match EventType::of(kind?) {
            _ if self.strings > 1 => None,
            EventType::OutputText => Some(()),
            EventType::ReasoningText | EventType::ReasoningSummaryText => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::events::{EventReader, parse_event, parse_event_full, scan_fast};

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
        assert!(r.shape().1.is_empty(), "no shape learned");
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
            let parsed = parse_event_full(e.as_bytes(), &mut full);
            let full_ok = parsed.is_ok();
            let mut fast_text = String::new();
            if let Some(n) = scan(e.as_bytes(), &mut fast_text, &mut None) {
                assert!(
                    full_ok,
                    "fast path accepted what the full reader rejects: {e}"
                );
                assert_eq!(fast_text, full, "{e}");
                assert_eq!(n.content_bytes, fast_text.len());
                assert_eq!(Some(&n), parsed.as_ref().ok(), "{e}");
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
        assert!(scan(events[0].as_bytes(), &mut String::new(), &mut None).is_some());
        assert!(scan(events[6].as_bytes(), &mut String::new(), &mut None).is_some());
    }

    /// Every top-level key of the table, with values of every JSON kind: what the scanner
    /// accepts, the full reader reads alike (a key the scanner does not read is handed over,
    /// not skipped, whatever key the table gains).
    #[test]
    fn every_key_of_the_table_is_read_alike_or_handed_over() {
        use crate::client::events::keys::Top;
        let values = [
            "null",
            "1",
            "\"x\"",
            "[]",
            "[\"x\"]",
            "{}",
            "{\"text\":\"x\"}",
        ];
        for &(_, key) in Top::ALL {
            let key = std::str::from_utf8(key).unwrap();
            for v in values {
                let e = format!(r#"{{"id":"c","{key}":{v}}}"#);
                let (mut fast, mut full) = (String::new(), String::new());
                if let Some(info) = scan(e.as_bytes(), &mut fast, &mut None) {
                    let want = parse_event_full(e.as_bytes(), &mut full);
                    assert_eq!(Some(&info), want.as_ref().ok(), "{e}");
                    assert_eq!(fast, full, "{e}");
                }
            }
        }
        // Keys the scanner does not read are handed over even where their value is plain.
        for e in [
            r#"{"content":"x"}"#,
            r#"{"error":null}"#,
            r#"{"output":[]}"#,
        ] {
            assert_eq!(
                scan(e.as_bytes(), &mut String::new(), &mut None),
                None,
                "{e}"
            );
        }
    }
}
