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
///
/// Memory and time stay bounded on hostile streams: an unfinished event is kept only up to the
/// limit (then [`SseError::EventTooLarge`]), and bytes of an unfinished event are looked at once
/// (a new read is searched for a blank line, and the kept bytes are parsed again only when one
/// arrives), so a 64 MB line costs one pass over 64 MB, not one per read.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes received but not yet consumed (an incomplete event).
    buf: Vec<u8>,
    /// Data of an event with several `data:` lines (rare; single-line events are not copied).
    joined: Vec<u8>,
    /// How much of `buf` is known to hold no blank line.
    scanned: usize,
    /// The largest event accepted, in bytes.
    limit: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser {
            buf: Vec::new(),
            joined: Vec::new(),
            scanned: 0,
            limit: MAX_EVENT_BYTES,
        }
    }
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

/// Largest event accepted by default: a token's event is a few hundred bytes, and a whole
/// non-streamed completion of a hundred thousand tokens fits.
pub const MAX_EVENT_BYTES: usize = 4 << 20;

/// Buffers that grew past this for one odd response are given back when the next starts.
const KEEP_CAPACITY: usize = 64 * 1024;

impl SseParser {
    /// A parser with an empty buffer.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Sets the largest event accepted (bytes).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
    }

    /// Forgets any partial event (reuse between requests without giving back memory, unless a
    /// huge event made the buffers grow).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.joined.clear();
        self.scanned = 0;
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::new();
        }
        if self.joined.capacity() > KEEP_CAPACITY {
            self.joined = Vec::new();
        }
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
        on_event: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), SseError> {
        self.feed_to(chunk, &mut Plain(on_event))
    }

    /// [`SseParser::feed`] into a sink that may read the usual event itself
    /// ([`EventSink::lines`]).
    pub fn feed_to(&mut self, chunk: &[u8], sink: &mut impl EventSink) -> Result<(), SseError> {
        if self.buf.is_empty() {
            let used = parse(chunk, &mut self.joined, sink);
            let rest = &chunk[used..];
            if rest.len() > self.limit {
                return Err(SseError::EventTooLarge(self.limit));
            }
            self.buf.extend_from_slice(rest);
        } else {
            self.buf.extend_from_slice(chunk);
            if has_blank_line(&self.buf, self.scanned) {
                let used = parse(&self.buf, &mut self.joined, sink);
                self.buf.drain(..used);
            }
        }
        if self.buf.len() > self.limit {
            return Err(SseError::EventTooLarge(self.limit));
        }
        // What is kept holds no blank line, except that a CR at its very end may be the first
        // of two line ends: look at it again with the next read.
        self.scanned = self.buf.len() - usize::from(self.buf.last() == Some(&b'\r'));
        Ok(())
    }

    /// At end of stream: dispatches a final event that lacked its terminating blank line (some
    /// servers end the body right after the last `data:` line).
    pub fn finish(&mut self, on_event: impl FnMut(&[u8], &[u8])) {
        if self.has_partial() {
            self.buf.extend_from_slice(b"\n\n");
            parse(&self.buf, &mut self.joined, &mut Plain(on_event));
        }
        self.buf.clear();
    }
}

/// Where the framing hands events.
pub trait EventSink {
    /// A shortcut for the usual events, each one `data: ` line and a blank line: at the start of
    /// an event, `at` holds the bytes from there to the end of what was read. The sink may read
    /// whole events of that form itself and return the bytes they took (each `data: `, its data
    /// and `\n\n`), when their data holds no line end (the sink checks); 0 leaves the next event
    /// to the framing and [`EventSink::event`]. The line's end is then found by whoever reads the
    /// data anyway, not searched for twice.
    fn lines(&mut self, at: &[u8]) -> usize {
        let _ = at;
        0
    }

    /// One complete event: its name (empty for the default) and its data.
    fn event(&mut self, name: &[u8], data: &[u8]);
}

/// A sink that is only a callback.
struct Plain<F>(F);

impl<F: FnMut(&[u8], &[u8])> EventSink for Plain<F> {
    fn event(&mut self, name: &[u8], data: &[u8]) {
        (self.0)(name, data)
    }
}

/// Whether a line end in `data[from..]` starts where another line end (or the data) begins:
/// an empty line, which ends an event. CR LF is one line end, CR CR and LF anything are two.
fn has_blank_line(data: &[u8], from: usize) -> bool {
    memchr::memchr2_iter(b'\n', b'\r', &data[from..]).any(|off| {
        let j = from + off;
        j == 0 || data[j - 1] == b'\n' || (data[j - 1] == b'\r' && data[j] == b'\r')
    })
}

/// Reads the complete events at the start of `data` in one pass over its lines, calling
/// `on_event` for each; returns how many bytes they took (the rest is an unfinished event).
fn parse(data: &[u8], joined: &mut Vec<u8>, sink: &mut impl EventSink) -> usize {
    let mut pos = 0;
    let mut used = 0;
    let mut name: &[u8] = b"";
    let mut single: &[u8] = b"";
    let mut data_lines = 0usize;
    // Whether the caller's shortcut may be asked at the next event's start: not right after it
    // stopped, since it stops at an event it does not read.
    let mut shortcut = true;
    loop {
        // Events the caller's shortcut knows, read by it.
        if data_lines == 0 && name.is_empty() && std::mem::replace(&mut shortcut, true) {
            let n = sink.lines(&data[pos..]);
            debug_assert!(n == 0 || data[..pos + n].ends_with(b"\n\n"));
            if n > 0 {
                pos += n;
                used = pos;
                shortcut = false;
                continue;
            }
        }
        let eol = match data.get(pos) {
            // The blank line after a `data:` line, the usual end of an event: no search.
            Some(b'\n') => pos,
            _ => match memchr::memchr2(b'\n', b'\r', &data[pos..]) {
                Some(off) => pos + off,
                None => break,
            },
        };
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
                1 => sink.event(name, single),
                _ => sink.event(name, joined),
            }
            name = b"";
            data_lines = 0;
            used = pos;
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        // Nearly every line is `data: ...`: no search for its colon.
        let (field, value) = if let Some(v) = line.strip_prefix(b"data:") {
            (&b"data"[..], v.strip_prefix(b" ").unwrap_or(v))
        } else {
            match memchr::memchr(b':', line) {
                Some(p) => {
                    let v = &line[p + 1..];
                    (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (line, &b""[..]),
            }
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
        // Arriving in pieces, and with a smaller limit: the error comes once the unfinished
        // event passes the limit, and nothing past it is kept.
        let mut p = SseParser::new();
        p.set_limit(1000);
        let mut fed = 0;
        let err = loop {
            match p.feed(
                b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
                |_, _| {},
            ) {
                Ok(()) => fed += 1,
                Err(e) => break e,
            }
            assert!(fed < 100, "no error after {fed} lines");
        };
        assert_eq!(err, SseError::EventTooLarge(1000));
        assert!(p.buf.len() <= 1000 + 50);
        p.reset();
        // Events under the limit still pass after a reset.
        let mut n = 0;
        p.feed(b"data: a\n\n", |_, d| n += d.len()).unwrap();
        assert_eq!(n, 1);
    }

    /// Any stream cut into any pieces gives the same events as in one piece, and every kind of
    /// blank line ends an event when its two halves arrive in different reads.
    #[test]
    fn blank_lines_split_across_reads() {
        let stream: &[u8] =
            b"data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\n\r\ndata: e\r\n\ndata: f\n\rdata: g\n\n";
        let whole = data(&collect(&[stream])).join(",");
        assert_eq!(whole, "a,b,c,d,e,f,g");
        for i in 0..stream.len() {
            for j in i..stream.len() {
                let got = collect(&[&stream[..i], &stream[i..j], &stream[j..]]);
                assert_eq!(data(&got).join(","), whole, "cut at {i}, {j}");
            }
        }
        // One byte at a time, events are reported as soon as their blank line is complete.
        let mut p = SseParser::new();
        let mut seen = Vec::new();
        for (k, b) in b"data: x\n\ndata: y\r\n\r\n".iter().enumerate() {
            p.feed(&[*b], |_, d| seen.push((k, d.to_vec()))).unwrap();
        }
        assert_eq!(seen, [(8, b"x".to_vec()), (19, b"y".to_vec())]);
    }

    /// A long line fed in small reads is searched once, not once per read: a 4 MB line in
    /// 1 KB reads finishes quickly (the old re-scan read 8 GB).
    #[test]
    fn long_line_is_linear() {
        let mut p = SseParser::new();
        let piece = vec![b'x'; 1024];
        p.feed(b"data: ", |_, _| {}).unwrap();
        let t = std::time::Instant::now();
        for _ in 0..(MAX_EVENT_BYTES / 1024 - 1) {
            p.feed(&piece, |_, _| {}).unwrap();
        }
        let mut n = 0;
        p.feed(b"\n\n", |_, d| n = d.len()).unwrap();
        assert_eq!(n, MAX_EVENT_BYTES - 1024);
        // Generous: linear work takes a few milliseconds, quadratic would take seconds.
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t.elapsed()
        );
    }
}
