//! Reading the JSON of one streamed event (or one whole non-streamed body) without building a
//! document: the text it carries is appended straight into the request's output buffer, so a
//! token costs no heap allocation.
//!
//! Shapes understood, all in one pass:
//! * OpenAI chat chunks `{"choices":[{"delta":{"content":"..","reasoning_content":".."}}]}`
//!   (tool-call deltas `"tool_calls":[{"function":{"arguments":".."}}]` count as text too) and
//!   whole responses `{"choices":[{"message":{"content":".."}}]}`;
//! * OpenAI completions `{"choices":[{"text":".."}]}`;
//! * Triton generate / generate_stream `{"text_output":".."}` (a string, or an array of strings);
//! * usage `{"usage":{"prompt_tokens":N,"completion_tokens":M}}` (any event, possibly `choices: []`),
//!   with `completion_tokens_details.reasoning_tokens` when the server counts reasoning apart;
//! * Triton's token counts next to `text_output`, when the model returns them:
//!   `num_output_tokens` (the vLLM backend), `output_ids` (TensorRT-LLM: the tokens; their count),
//!   `sequence_length` (TensorRT-LLM), in that order of preference, each a number or nested
//!   arrays; a count per event, summed over a stream;
//! * errors `{"error":"msg"}` or `{"error":{"message":"msg"}}`;
//! * llama.cpp's per-request `timings` `{"timings":{"cache_n":N,"prompt_n":N,"prompt_ms":F,
//!   "predicted_n":N,"predicted_ms":F,...}}`, on the last event of a stream (the usage chunk,
//!   or the `finish_reason` chunk without `include_usage`) and at the top level of a whole body.
//!   Like usage, it is left to the full reader: one event a request, never a token event.
//!
//! Only the first choice is read: one request asks for one completion.
//!
//! Reasoning text (`reasoning_content`, SGLang's and DeepSeek's name; `reasoning`, vLLM's) is
//! output like content and goes into the same buffer, so OSL counts every generated token (as
//! AIPerf does); [`EventInfo::reasoning_bytes`] says how much of an event's text was reasoning,
//! so the request can tell its first answer token from its first token of any kind.
//!
//! Three readers, one a file, tried in this order: the remembered shape of the stream's last
//! token event (`shape`: two compares and one pass over the text), the hand scanner for the
//! common events (`scan`: one pass, no document), and the full serde reader for everything
//! (`full`, with Responses' and Anthropic's part in `full/apis`). The keys they act on are named
//! once, by API, in `keys`: an API's new key is one edit there.

mod full;
mod keys;
mod scan;
mod shape;
mod tools;

pub(crate) use full::error_message;
pub use shape::{EventReader, Run};
pub use tools::ToolSpans;

use crate::record::ServerTimings;

/// What one event contributed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventInfo {
    /// Bytes of text appended to the output buffer (0 for role-only, usage-only, empty events).
    pub content_bytes: usize,
    /// Of those, bytes from reasoning fields (`reasoning_content`, `reasoning`); the rest is
    /// answer text (content, completion text, tool-call arguments).
    pub reasoning_bytes: usize,
    /// Of those, bytes of tool-call arguments (their spans go to the reader's [`ToolSpans`]).
    pub tool_bytes: usize,
    /// `usage.completion_tokens`, when present.
    pub completion_tokens: Option<u32>,
    /// `usage.prompt_tokens`, when present.
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens`, when present (a number).
    pub reasoning_tokens: Option<u32>,
    /// Output tokens this event carries by the server's own count (Triton's
    /// `num_output_tokens`, `output_ids`, `sequence_length`), when present.
    pub tokens: Option<u32>,
    /// The server's own timings of the request (llama.cpp's `timings`), when present.
    pub timings: Option<ServerTimings>,
    /// An error the server reported in the event.
    pub error: Option<String>,
}

/// Parses one event's JSON, appending any text it carries to `text`.
pub fn parse_event(data: &[u8], text: &mut String) -> Result<EventInfo, serde_json::Error> {
    let before = text.len();
    if let Some(info) = scan::scan(data, text, &mut None) {
        return Ok(info);
    }
    full::parse_full(data, text, before, &mut ToolSpans::default())
}

/// The full JSON reader alone, without the fast scanner's shortcut (the fuzz target checks that
/// the two agree).
#[doc(hidden)]
pub fn parse_event_full(data: &[u8], text: &mut String) -> Result<EventInfo, serde_json::Error> {
    full::parse_event_tools(data, text, &mut ToolSpans::default())
}

/// The fast scanner alone: what it read (text and reasoning bytes appended), or `None` where it
/// defers to the full reader.
#[doc(hidden)]
pub fn scan_fast(data: &[u8], text: &mut String) -> Option<EventInfo> {
    scan::scan(data, text, &mut None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses one event; its info and text.
    pub(super) fn parse(s: &str) -> (EventInfo, String) {
        let mut t = String::new();
        let info = parse_event(s.as_bytes(), &mut t).unwrap();
        (info, t)
    }

    #[test]
    fn chat_role_only_chunk_has_no_content() {
        let (i, t) = parse(
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        );
        assert_eq!(i.content_bytes, 0);
        assert_eq!(t, "");
    }

    #[test]
    fn chat_content_and_escapes() {
        let (i, t) =
            parse(r#"{"choices":[{"index":0,"delta":{"content":" he said \"hi\"\n\u00e9"}}]}"#);
        assert_eq!(t, " he said \"hi\"\né");
        assert_eq!(i.content_bytes, t.len());
    }

    #[test]
    fn reasoning_counts_as_output() {
        let (i, t) =
            parse(r#"{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}"#);
        assert_eq!(t, "think");
        assert_eq!((i.content_bytes, i.reasoning_bytes), (5, 5));
    }

    #[test]
    fn usage_only_chunk() {
        let (i, t) = parse(
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}"#,
        );
        assert_eq!(
            (i.content_bytes, i.prompt_tokens, i.completion_tokens),
            (0, Some(12), Some(34))
        );
        assert_eq!(t, "");
    }

    #[test]
    fn completions_text_and_null_usage() {
        let (i, t) = parse(
            r#"{"choices":[{"text":" the","index":0,"logprobs":null,"finish_reason":null}],"usage":null}"#,
        );
        assert_eq!(t, " the");
        assert_eq!(i.completion_tokens, None);
    }

    #[test]
    fn whole_chat_response() {
        let (i, t) = parse(
            r#"{"choices":[{"message":{"role":"assistant","content":"abc"}}],"usage":{"completion_tokens":3}}"#,
        );
        assert_eq!(t, "abc");
        assert_eq!(i.completion_tokens, Some(3));
    }

    #[test]
    fn triton_text_output_string_and_array() {
        let (_, t) = parse(r#"{"model_name":"gpt2","model_version":"1","text_output":" world"}"#);
        assert_eq!(t, " world");
        let (_, t) = parse(r#"{"text_output":["a","b"],"batch_index":0}"#);
        assert_eq!(t, "ab");
    }

    #[test]
    fn only_first_choice_is_read() {
        let (_, t) = parse(r#"{"choices":[{"delta":{"content":"A"}},{"delta":{"content":"B"}}]}"#);
        assert_eq!(t, "A");
    }

    #[test]
    fn malformed_json_leaves_buffer_untouched() {
        let mut t = String::from("keep");
        assert!(parse_event(br#"{"choices":[{"delta":{"content":"x"}}"#, &mut t).is_err());
        assert_eq!(t, "keep");
        assert!(parse_event(b"[DONE]", &mut t).is_err());
    }
}
