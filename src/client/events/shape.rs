//! The first reader of a stream's events: the remembered shape of its last token event, read
//! with two compares and one pass over the text, and runs of such events read straight from the
//! stream's bytes.

use super::scan::{self, Span};
use super::{EventInfo, ToolSpans, full};

/// Reads a stream's events, remembering the shape of the last token event: a server sends the
/// same JSON around every token (`{"id":"chatcmpl-7",...,"delta":{"content":"` … `"},...}`), so
/// an event that starts and ends with the same bytes as the previous one and holds one plain
/// string between them is that shape again with other text. That is checked with two
/// comparisons and one pass over the text, instead of walking every field (the walk was a
/// third of the client's CPU on a fast server). Anything else takes [`super::parse_event`]'s path.
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
    fn learn(&mut self, data: &[u8], span: &Span, key: u64) {
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
        if let Some(info) = scan::scan(data, text, &mut span) {
            if let Some(span) = span {
                // The oldest shape's buffers take the new one; the others move down a place.
                self.others.rotate_right(1);
                std::mem::swap(&mut self.shape, &mut self.others[0]);
                self.learned += 1;
                self.shape.learn(data, &span, self.learned);
            }
            return Ok(info);
        }
        full::parse_full(data, text, before, &mut self.tools)
    }

    /// Parses a whole body (or an event read apart from the stream's shape), appending its
    /// text and noting its tool-call spans, without learning a shape from it.
    pub fn read_body(
        &mut self,
        data: &[u8],
        text: &mut String,
    ) -> Result<EventInfo, serde_json::Error> {
        let before = text.len();
        if let Some(info) = scan::scan(data, text, &mut None) {
            return Ok(info);
        }
        full::parse_full(data, text, before, &mut self.tools)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::events::parse_event;

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
}
