//! Server-sent events framing, incremental and allocation-free in steady state.
//!
//! Wire format (WHATWG "server-sent events"): UTF-8 lines ending in `\n`, `\r\n` or `\r`; an empty
//! line ends an event; `data:` lines accumulate the event's data (joined by `\n`); `event:` names
//! it; lines starting with `:` are comments (keep-alive pings); a single space after the colon is
//! not part of the value. OpenAI-compatible servers end with `data: [DONE]`; Triton's
//! `generate_stream` simply ends the body. Events may be split across reads or packed several to a
//! read; the parser handles both and reports each complete event once.

/// Incremental SSE parser. Feed it each chunk as it arrives; it calls back once per complete event
/// with the event name (empty for the default `message`) and its data.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes received but not yet consumed (an incomplete event).
    buf: Vec<u8>,
    /// Data of an event with several `data:` lines (rare; single-line events are not copied).
    joined: Vec<u8>,
}

/// Why a stream is not valid SSE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// An event grew past the size limit without ending.
    EventTooLarge(usize),
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::EventTooLarge(n) => write!(
                f,
                "an SSE event exceeded {n} bytes without a blank line ending it"
            ),
        }
    }
}

/// Largest event accepted (a whole non-streamed completion fits easily).
pub const MAX_EVENT_BYTES: usize = 64 << 20;

impl SseParser {
    /// A parser with an empty buffer.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Forgets any partial event (reuse between requests without giving back memory).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.joined.clear();
    }

    /// Whether bytes of an unfinished event are buffered.
    pub fn has_partial(&self) -> bool {
        self.buf.iter().any(|b| !b.is_ascii_whitespace())
    }

    /// Consumes `chunk`, calling `on_event(name, data)` for every event it completes. Complete
    /// events are read in place; only an unfinished tail is copied and kept.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), SseError> {
        if self.buf.is_empty() {
            let used = parse(chunk, &mut self.joined, &mut on_event);
            self.buf.extend_from_slice(&chunk[used..]);
        } else {
            self.buf.extend_from_slice(chunk);
            let used = parse(&self.buf, &mut self.joined, &mut on_event);
            self.buf.drain(..used);
        }
        if self.buf.len() > MAX_EVENT_BYTES {
            return Err(SseError::EventTooLarge(MAX_EVENT_BYTES));
        }
        Ok(())
    }

    /// At end of stream: dispatches a final event that lacked its terminating blank line (some
    /// servers end the body right after the last `data:` line).
    pub fn finish(&mut self, mut on_event: impl FnMut(&[u8], &[u8])) {
        if self.has_partial() {
            self.buf.extend_from_slice(b"\n\n");
            parse(&self.buf, &mut self.joined, &mut on_event);
        }
        self.buf.clear();
    }
}

/// Reads the complete events at the start of `data` in one pass over its lines, calling
/// `on_event` for each; returns how many bytes they took (the rest is an unfinished event).
fn parse(data: &[u8], joined: &mut Vec<u8>, on_event: &mut impl FnMut(&[u8], &[u8])) -> usize {
    let mut pos = 0;
    let mut used = 0;
    let mut name: &[u8] = b"";
    let mut single: &[u8] = b"";
    let mut data_lines = 0usize;
    while let Some(off) = memchr::memchr2(b'\n', b'\r', &data[pos..]) {
        let eol = pos + off;
        let term = if data[eol] == b'\r' {
            match data.get(eol + 1) {
                // A CR at the very end may be the first half of CRLF: wait for the next read.
                None => break,
                Some(b'\n') => 2,
                Some(_) => 1,
            }
        } else {
            1
        };
        let line = &data[pos..eol];
        pos = eol + term;
        if line.is_empty() {
            match data_lines {
                0 => {}
                1 => on_event(name, single),
                _ => on_event(name, joined),
            }
            name = b"";
            data_lines = 0;
            used = pos;
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                data_lines += 1;
                if data_lines == 1 {
                    single = value;
                } else {
                    if data_lines == 2 {
                        joined.clear();
                        joined.extend_from_slice(single);
                    }
                    joined.push(b'\n');
                    joined.extend_from_slice(value);
                }
            }
            b"event" => name = value,
            _ => {}
        }
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, |n, d| {
                out.push((
                    String::from_utf8_lossy(n).into(),
                    String::from_utf8_lossy(d).into(),
                ))
            })
            .unwrap();
        }
        p.finish(|n, d| {
            out.push((
                String::from_utf8_lossy(n).into(),
                String::from_utf8_lossy(d).into(),
            ))
        });
        out
    }

    fn data(v: &[(String, String)]) -> Vec<&str> {
        v.iter().map(|(_, d)| d.as_str()).collect()
    }

    #[test]
    fn several_events_in_one_read() {
        let out = collect(&[b"data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n"]);
        assert_eq!(data(&out), ["{\"a\":1}", "{\"a\":2}", "[DONE]"]);
    }

    #[test]
    fn event_split_across_reads_at_every_byte() {
        let stream: &[u8] =
            b"data: {\"x\":\"hello\"}\n\n: ping\n\nevent: error\ndata: bad\n\ndata: last\n\n";
        for cut in 0..stream.len() {
            let out = collect(&[&stream[..cut], &stream[cut..]]);
            assert_eq!(
                data(&out),
                ["{\"x\":\"hello\"}", "bad", "last"],
                "cut at {cut}"
            );
            assert_eq!(out[1].0, "error");
        }
    }

    #[test]
    fn byte_by_byte_crlf() {
        let stream: &[u8] = b"data: one\r\n\r\ndata: two\r\n\r\n";
        let chunks: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(data(&collect(&chunks)), ["one", "two"]);
    }

    #[test]
    fn multi_line_data_and_no_space() {
        let out = collect(&[b"data:a\ndata: b\ndata:  c\n\n"]);
        assert_eq!(data(&out), ["a\nb\n c"]);
    }

    #[test]
    fn comments_and_unknown_fields_ignored() {
        let out = collect(&[b": keep-alive\n\nid: 7\nretry: 10\ndata: x\n\n"]);
        assert_eq!(data(&out), ["x"]);
    }

    #[test]
    fn trailing_event_without_blank_line() {
        let out = collect(&[b"data: a\n\ndata: b\n"]);
        assert_eq!(data(&out), ["a", "b"]);
    }

    #[test]
    fn bare_cr_line_endings() {
        let out = collect(&[b"data: a\r\rdata: b\r\r"]);
        assert_eq!(data(&out), ["a", "b"]);
    }

    #[test]
    fn oversized_event_is_an_error() {
        let mut p = SseParser::new();
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(p.feed(&big, |_, _| {}).is_err());
    }
}
