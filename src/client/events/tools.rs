//! Where tool-call arguments lie in a request's output text: every reader notes them here, and
//! the request checks at its end that each call's arguments are JSON.

use serde::de::IgnoredAny;

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

    /// `text` from `from` on, split into what lies outside every call's arguments and the
    /// first call's arguments (`None` without a call): an answer's content and its tool call.
    pub fn split(&self, text: &str, from: usize) -> (String, Option<String>) {
        let (mut content, mut args) = (String::new(), None::<String>);
        let mut at = from;
        for &(k, s, e) in &self.spans {
            let (s, e) = (s.max(from), e.min(text.len()));
            if s >= e {
                continue;
            }
            content.push_str(text.get(at..s).unwrap_or_default());
            if k == self.spans[0].0 {
                args.get_or_insert_with(String::new)
                    .push_str(text.get(s..e).unwrap_or_default());
            }
            at = e;
        }
        content.push_str(text.get(at.min(text.len())..).unwrap_or_default());
        (content, args)
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
    fn split_keeps_the_first_call_and_the_text_around() {
        let text = "think|ok {\"q\":1} then {\"r\":2}.";
        let mut t = ToolSpans::default();
        assert_eq!(
            t.split(text, 6),
            ("ok {\"q\":1} then {\"r\":2}.".into(), None)
        );
        t.push(0, 9, 16);
        t.push(1, 22, 29);
        assert_eq!(
            t.split(text, 6),
            ("ok  then .".into(), Some("{\"q\":1}".into())),
            "the second call's arguments are not the answer's text either"
        );
    }
}
