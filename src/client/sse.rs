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

    /// Consumes `chunk`, calling `on_event(name, data)` for every event it completes.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), SseError> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(end) = find_event_end(&self.buf[start..]) {
            let (body_len, delim_len) = end;
            let event = start..start + body_len;
            dispatch(&self.buf[event], &mut self.joined, &mut on_event);
            start += body_len + delim_len;
        }
        if start > 0 {
            self.buf.drain(..start);
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
            let buf = std::mem::take(&mut self.buf);
            dispatch(&buf, &mut self.joined, &mut on_event);
            self.buf = buf;
        }
        self.buf.clear();
    }
}

/// Finds the end of the first event in `b`: (event length, delimiter length). The delimiter is a
/// blank line in any of the three line-ending styles.
fn find_event_end(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                // "\n\n" or "\n\r\n" or "\n\r" (then the \r ends the blank line)
                match b.get(i + 1) {
                    Some(b'\n') => return Some((i, 2)),
                    Some(b'\r') => {
                        return match b.get(i + 2) {
                            Some(b'\n') => Some((i, 3)),
                            Some(_) => Some((i, 2)),
                            // "\n\r" at the end of the buffer: the \r may be followed by \n in the
                            // next read; wait for it so the \n is not taken as a new blank line.
                            None => None,
                        };
                    }
                    Some(_) => i += 1,
                    None => return None,
                }
            }
            b'\r' => match b.get(i + 1) {
                Some(b'\n') => match b.get(i + 2) {
                    Some(b'\r') => match b.get(i + 3) {
                        Some(b'\n') => return Some((i, 4)),
                        Some(_) => return Some((i, 3)),
                        None => return None,
                    },
                    Some(b'\n') => return Some((i, 3)),
                    Some(_) => i += 2,
                    None => return None,
                },
                Some(b'\r') => return Some((i, 2)),
                Some(_) => i += 1,
                None => return None,
            },
            _ => i += 1,
        }
    }
    None
}

/// Splits one event's lines and calls back with its name and data.
fn dispatch(event: &[u8], joined: &mut Vec<u8>, on_event: &mut impl FnMut(&[u8], &[u8])) {
    let mut name: &[u8] = b"";
    let mut single: Option<&[u8]> = None;
    let mut data_lines = 0usize;
    joined.clear();
    for line in event.split(|&c| c == b'\n' || c == b'\r') {
        if line.is_empty() || line[0] == b':' {
            continue;
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
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
                    single = Some(value);
                } else {
                    if data_lines == 2 {
                        joined.extend_from_slice(single.unwrap_or_default());
                    }
                    joined.push(b'\n');
                    joined.extend_from_slice(value);
                }
            }
            b"event" => name = value,
            _ => {}
        }
    }
    match data_lines {
        0 => {}
        1 => on_event(name, single.unwrap_or_default()),
        _ => on_event(name, joined),
    }
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
