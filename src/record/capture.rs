//! The responses of one request as they arrived ([`Capture`]) and the form they were captured
//! in ([`ResponseForm`]): the client fills captures on the wire path, the raw export
//! (`artifact::raw_export`) renders them, so they sit below both.

/// Each response of one request as it arrived: its read time and its bytes (an SSE event's
/// `data`, a whole HTTP body, or an undecoded gRPC response message). Pooled and reused, so a
/// warm run allocates nothing here; encoded into the raw export by the collector, off the hot
/// path.
///
/// A token event of the stream's usual shape (the event reader's remembered prefix, a text, its
/// suffix: `client::events::EventReader`) is kept as its text alone, the shape once per request:
/// a 100-token stream's events are ~170 bytes each, of which the text is a few. The worker then
/// copies the text instead of the event, and the raw export's spill knows without comparing
/// bytes what two such events share ([`Response`]).
#[derive(Debug, Default)]
pub struct Capture {
    /// Whole responses and the texts of shaped ones, one after another.
    bytes: Vec<u8>,
    spans: Vec<Span>,
    /// The shapes' prefixes and suffixes, one after another.
    shape_bytes: Vec<u8>,
    /// Per shape: where its prefix ends and where its suffix ends in `shape_bytes`.
    shapes: Vec<(usize, usize)>,
    /// The reader's key of the last shape kept.
    shape_key: u64,
}

/// One response's place in a [`Capture`].
#[derive(Debug, Clone, Copy)]
struct Span {
    /// Arrival time (run clock, ns).
    t: u64,
    /// End offset of the response's bytes (or text) in `bytes`.
    end: usize,
    /// 0 for a whole response, else 1 + its shape's index.
    shape: usize,
}

/// One captured response: `prefix`, `middle` and `suffix` one after another are its bytes. A
/// whole response is all `middle`; a shaped one is its shape's prefix, its text and the shape's
/// suffix, and two responses of the same `shape` (non-zero) share those.
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    /// The shape's bytes before the text (empty for a whole response).
    pub prefix: &'a [u8],
    /// The text, or the whole response.
    pub middle: &'a [u8],
    /// The shape's bytes after the text (empty for a whole response).
    pub suffix: &'a [u8],
    /// 0 for a whole response, else which shape of its capture it has.
    pub shape: usize,
}

impl<'a> Response<'a> {
    /// The response's bytes in one piece (borrowed when it was kept whole).
    pub fn whole(&self) -> std::borrow::Cow<'a, [u8]> {
        if self.shape == 0 {
            return self.middle.into();
        }
        let mut v = Vec::new();
        self.whole_in(&mut v);
        v.into()
    }

    /// The response's bytes in one piece: itself when kept whole, else put together in `buf`
    /// (reused by the caller, so nothing is allocated per response).
    pub fn whole_in<'b>(&self, buf: &'b mut Vec<u8>) -> &'b [u8]
    where
        'a: 'b,
    {
        if self.shape == 0 {
            return self.middle;
        }
        buf.clear();
        buf.extend_from_slice(self.prefix);
        buf.extend_from_slice(self.middle);
        buf.extend_from_slice(self.suffix);
        buf
    }
}

impl Capture {
    /// Records one response read at `t`.
    #[inline]
    pub fn push(&mut self, t: u64, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        let end = self.bytes.len();
        self.spans.push(Span { t, end, shape: 0 });
    }

    /// Records a response read at `t` that is `prefix`, `text` and `suffix`, the event reader's
    /// shape known by `key` (the same key, the same prefix and suffix): the shape is copied
    /// the first time a request sees it, the text every time.
    #[inline]
    pub fn push_shaped(&mut self, t: u64, key: u64, prefix: &[u8], text: &[u8], suffix: &[u8]) {
        if self.shapes.is_empty() || key != self.shape_key {
            self.add_shape(key, prefix, suffix);
        }
        self.push_text(t, text);
    }

    /// Records a response read at `t` that is `prefix`, `text` and `suffix`, a shape of its own
    /// (as the raw export's spill reads a request's first event of a shape back).
    pub fn push_new_shape(&mut self, t: u64, prefix: &[u8], text: &[u8], suffix: &[u8]) {
        self.add_shape(self.shape_key.wrapping_add(1), prefix, suffix);
        self.push_text(t, text);
    }

    /// Records a response read at `t` of the last shape kept, by its text; `false`, recording
    /// nothing, when no shape was kept.
    pub fn push_text(&mut self, t: u64, text: &[u8]) -> bool {
        if self.shapes.is_empty() {
            return false;
        }
        self.bytes.extend_from_slice(text);
        let end = self.bytes.len();
        self.spans.push(Span {
            t,
            end,
            shape: self.shapes.len(),
        });
        true
    }

    fn add_shape(&mut self, key: u64, prefix: &[u8], suffix: &[u8]) {
        self.shape_bytes.extend_from_slice(prefix);
        let p = self.shape_bytes.len();
        self.shape_bytes.extend_from_slice(suffix);
        self.shapes.push((p, self.shape_bytes.len()));
        self.shape_key = key;
    }

    /// Records a whole response read at `t` made of the last response's first `prefix` bytes,
    /// `middle`, and the last response's final `suffix` bytes (how the raw export's spill stores
    /// responses); `false`, recording nothing, when the last response is shorter than that. A
    /// shaped last response is put together in `scratch` first.
    pub fn push_like_last(
        &mut self,
        t: u64,
        prefix: usize,
        middle: &[u8],
        suffix: usize,
        scratch: &mut Vec<u8>,
    ) -> bool {
        let last = self.spans.len().checked_sub(1);
        if let Some(i) = last.filter(|&i| self.spans[i].shape != 0) {
            self.response(i).whole_in(scratch);
            if prefix + suffix > scratch.len() {
                return false;
            }
            self.bytes.extend_from_slice(&scratch[..prefix]);
            self.bytes.extend_from_slice(middle);
            self.bytes
                .extend_from_slice(&scratch[scratch.len() - suffix..]);
        } else {
            // A whole last response: copied within the capture's own bytes.
            let start = last
                .and_then(|i| i.checked_sub(1))
                .map_or(0, |j| self.spans[j].end);
            let end = self.spans.last().map_or(0, |s| s.end);
            if prefix + suffix > end - start {
                return false;
            }
            self.bytes.extend_from_within(start..start + prefix);
            self.bytes.extend_from_slice(middle);
            self.bytes.extend_from_within(end - suffix..end);
        }
        let end = self.bytes.len();
        self.spans.push(Span { t, end, shape: 0 });
        true
    }

    /// Forgets the responses, keeping capacity.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
        self.shape_bytes.clear();
        self.shapes.clear();
    }

    /// Responses recorded.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The responses in arrival order: (time, response).
    pub fn iter(&self) -> impl Iterator<Item = (u64, Response<'_>)> + '_ {
        let mut start = 0;
        self.spans.iter().map(move |s| {
            let r = self.response_at(start, s);
            start = s.end;
            (s.t, r)
        })
    }

    /// Response `i` (which must exist).
    fn response(&self, i: usize) -> Response<'_> {
        let start = i.checked_sub(1).map_or(0, |j| self.spans[j].end);
        self.response_at(start, &self.spans[i])
    }

    /// The response of span `s`, whose bytes start at `start`.
    fn response_at(&self, start: usize, s: &Span) -> Response<'_> {
        let (prefix, suffix): (&[u8], &[u8]) = match s.shape.checked_sub(1) {
            None => (&[], &[]),
            Some(i) => {
                let from = i.checked_sub(1).map_or(0, |j| self.shapes[j].1);
                let (p, e) = self.shapes[i];
                (&self.shape_bytes[from..p], &self.shape_bytes[p..e])
            }
        };
        Response {
            prefix,
            middle: &self.bytes[start..s.end],
            suffix,
            shape: s.shape,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped and whole responses read back as the bytes they stand for, a shape stored once
    /// per key and again when the key changes.
    #[test]
    fn shaped_responses_read_back_whole() {
        let mut c = Capture::default();
        c.push(1, b"{\"role\":1}");
        c.push_shaped(2, 7, b"{\"c\":\"", b"Hel", b"\"}");
        c.push_shaped(3, 7, b"{\"c\":\"", b"lo", b"\"}");
        c.push_shaped(4, 8, b"{\"r\":\"", b"x", b"\",\"f\":1}");
        c.push(5, b"[end]");
        let got: Vec<(u64, Vec<u8>, usize)> = c
            .iter()
            .map(|(t, r)| (t, r.whole().into_owned(), r.shape))
            .collect();
        let want: Vec<(u64, Vec<u8>, usize)> = vec![
            (1, b"{\"role\":1}".to_vec(), 0),
            (2, b"{\"c\":\"Hel\"}".to_vec(), 1),
            (3, b"{\"c\":\"lo\"}".to_vec(), 1),
            (4, b"{\"r\":\"x\",\"f\":1}".to_vec(), 2),
            (5, b"[end]".to_vec(), 0),
        ];
        assert_eq!(got, want);
        assert_eq!(c.shapes.len(), 2);
        c.clear();
        c.push_shaped(9, 8, b"a", b"b", b"c");
        assert_eq!(c.iter().next().unwrap().1.whole().as_ref(), b"abc");
    }
}

/// How captured responses are rendered into `response_outputs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseForm {
    /// Each capture is one SSE event's `data`.
    SseEvents,
    /// Each capture is one whole JSON body.
    Body,
    /// Each capture is a `ModelStreamInferResponse` message.
    KserveStream,
    /// Each capture is a `ModelInferResponse` message.
    KserveUnary,
    /// Each capture is a KServe v2 HTTP `/infer` response body (JSON, or JSON plus binary tensors).
    KserveHttp,
}
