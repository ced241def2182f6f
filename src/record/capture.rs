//! The responses of one request as they arrived ([`Capture`]) and the form they were captured
//! in ([`ResponseForm`]): the client fills captures on the wire path, the raw export
//! (`artifact::raw_export`) renders them, so they sit below both.

/// Each response of one request as it arrived: its read time and its bytes (an SSE event's
/// `data`, a whole HTTP body, or an undecoded gRPC response message). Pooled and reused, so a
/// warm run allocates nothing here; encoded into the raw export by the collector, off the hot
/// path.
#[derive(Debug, Default)]
pub struct Capture {
    bytes: Vec<u8>,
    /// (arrival time ns, end offset of the response's bytes in `bytes`).
    spans: Vec<(u64, usize)>,
}

impl Capture {
    /// Records one response read at `t`.
    #[inline]
    pub fn push(&mut self, t: u64, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        self.spans.push((t, self.bytes.len()));
    }

    /// Records a response read at `t` made of the last response's first `prefix` bytes,
    /// `middle`, and the last response's final `suffix` bytes (how the raw export's spill stores
    /// responses); `false`, recording nothing, when the last response is shorter than that.
    pub fn push_like_last(&mut self, t: u64, prefix: usize, middle: &[u8], suffix: usize) -> bool {
        let start = self
            .spans
            .len()
            .checked_sub(2)
            .map_or(0, |i| self.spans[i].1);
        let end = self.spans.last().map_or(0, |s| s.1);
        if prefix + suffix > end - start {
            return false;
        }
        self.bytes.extend_from_within(start..start + prefix);
        self.bytes.extend_from_slice(middle);
        self.bytes.extend_from_within(end - suffix..end);
        self.spans.push((t, self.bytes.len()));
        true
    }

    /// Forgets the responses, keeping capacity.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// Responses recorded.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The responses in arrival order: (time, bytes).
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        let mut start = 0;
        self.spans.iter().map(move |&(t, end)| {
            let s = &self.bytes[start..end];
            start = end;
            (t, s)
        })
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
