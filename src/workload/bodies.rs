//! Request bodies of the newer APIs, as pure functions of the plan and one request's inputs:
//! OpenAI Responses and Anthropic Messages (with images and tools, which chat takes too),
//! embeddings batches and reranker requests (their datasets: `dataset::build_batches`).
//!
//! Bodies (fields in this order; `--extra-inputs` last, overriding):
//!
//! * responses: `{"model", "input", "max_output_tokens"?, "stream", "tools"?, "tool_choice"?}`;
//!   `input` is the prompt text, or `[{"role":"user","content":[{"type":"input_text","text"},
//!   <images>]}]` with images, or a session's messages.
//! * messages: `{"model", "system"?, "messages", "max_tokens", "stream", "tools"?,
//!   "tool_choice"?}`; `max_tokens` is required by the API: without `--output-tokens-mean` it is
//!   [`MESSAGES_DEFAULT_MAX_TOKENS`] (and the request counts as asking for none). A session's
//!   system messages go to `system`.
//! * chat with images: the user message's `content` is `[{"type":"text","text"}, <images>]`.
//! * `--output-tokens-mean-deterministic` adds `min_tokens` and `ignore_eos` (vLLM's extensions)
//!   to responses and messages as to chat.
//! * embeddings: `{"model", "input": [texts], "encoding_format": "float"}`.
//! * rankings, per `--rankings-api`: rerank `{"model", "query", "documents": [..]}`; tei
//!   `{"query", "texts": [..]}`; nim `{"model", "query": {"text"}, "passages": [{"text"}, ..]}`.

use serde_json::{Map, Value, json};

use super::WorkloadPlan;
use super::conversation::history::{Message, Role};
use super::images::Image;
use crate::target::{Api, RankingsLayout, Target};

/// What a request carries: one prompt, or a session's messages.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// One user prompt.
    Text(&'a str),
    /// A session's messages (system, then user and assistant in turn).
    Messages(&'a [Message]),
}

impl Input<'_> {
    /// The chat API's `messages`.
    pub(super) fn messages(&self) -> Value {
        match self {
            Input::Text(text) => json!([{"role": "user", "content": text}]),
            Input::Messages(m) => serde_json::to_value(m).unwrap_or(Value::Null),
        }
    }

    /// The text for the completions and generate APIs: a session's messages joined by blank
    /// lines (those APIs have no roles; the chat template is the chat API's business).
    pub(super) fn text(&self) -> Value {
        match self {
            Input::Text(text) => json!(text),
            Input::Messages(m) => {
                let texts: Vec<&str> = m.iter().map(|m| m.content.as_str()).collect();
                json!(texts.join("\n\n"))
            }
        }
    }
}

/// `max_tokens` of a Messages request when no output length was asked for (the API requires
/// one).
pub const MESSAGES_DEFAULT_MAX_TOKENS: u32 = 1024;

/// The body of one Responses or Messages request (chat's is [`super::dataset::http_body`], which
/// calls [`content`] for its images and [`tool_fields`] for its tools).
pub fn chat_like_body(
    t: &Target,
    w: &WorkloadPlan,
    input: Input,
    max_tokens: Option<u32>,
    images: &[Image],
) -> Value {
    let mut m = Map::new();
    m.insert("model".into(), json!(t.model));
    match t.api {
        Api::Messages => {
            let (system, messages) = messages_of(input, images);
            if let Some(s) = system {
                m.insert("system".into(), json!(s));
            }
            m.insert("messages".into(), messages);
            m.insert(
                "max_tokens".into(),
                json!(max_tokens.unwrap_or(MESSAGES_DEFAULT_MAX_TOKENS)),
            );
        }
        _ => {
            m.insert("input".into(), responses_input(input, images));
            if let Some(n) = max_tokens {
                m.insert("max_output_tokens".into(), json!(n));
            }
        }
    }
    exact_output_fields(&mut m, w, max_tokens);
    m.insert("stream".into(), json!(t.streaming));
    tool_fields(&mut m, t.api, w);
    m.extend(w.extra_inputs.iter().cloned());
    Value::Object(m)
}

/// `min_tokens` and `ignore_eos` (vLLM's extensions), when the plan asks for exactly
/// `max_tokens`.
pub fn exact_output_fields(m: &mut Map<String, Value>, w: &WorkloadPlan, max_tokens: Option<u32>) {
    if let Some(n) = max_tokens.filter(|_| w.exact_output()) {
        m.insert("min_tokens".into(), json!(n));
        m.insert("ignore_eos".into(), json!(true));
    }
}

/// `tools` and `tool_choice` in `api`'s form, when the plan sends tools.
pub fn tool_fields(m: &mut Map<String, Value>, api: Api, w: &WorkloadPlan) {
    if let Some(tools) = &w.tools {
        m.insert("tools".into(), tools.tools_json(api));
        m.insert("tool_choice".into(), tools.choice.json(api));
    }
}

/// A user message's `content`: the text alone, or a list of the text part and the images.
pub fn content(api: Api, text: &str, images: &[Image]) -> Value {
    if images.is_empty() {
        return json!(text);
    }
    let kind = match api {
        Api::Responses => "input_text",
        _ => "text",
    };
    let mut parts = vec![json!({"type": kind, "text": text})];
    parts.extend(images.iter().map(|i| i.content_part(api)));
    Value::Array(parts)
}

/// Responses' `input`: the bare text, or messages.
fn responses_input(input: Input, images: &[Image]) -> Value {
    match input {
        Input::Text(text) if images.is_empty() => json!(text),
        Input::Text(text) => {
            json!([{"role": "user", "content": content(Api::Responses, text, images)}])
        }
        Input::Messages(ms) => Value::Array(ms.iter().flat_map(responses_items).collect()),
    }
}

/// One message as Responses input items: a tool call is a `function_call` item after the
/// assistant's text (left out when empty), a tool's result a `function_call_output`.
fn responses_items(m: &Message) -> Vec<Value> {
    if m.role == Role::Tool {
        let id = m.tool_call_id.as_deref().unwrap_or_default();
        return vec![json!({"type": "function_call_output", "call_id": id, "output": m.content})];
    }
    let text = json!({"role": m.role, "content": m.content});
    match &m.tool_calls {
        None => vec![text],
        Some([c]) => {
            let call = json!({"type": "function_call", "call_id": c.id,
                "name": c.function.name, "arguments": c.function.arguments});
            if m.content.is_empty() {
                vec![call]
            } else {
                vec![text, call]
            }
        }
    }
}

/// Messages' `system` (a session's system messages joined) and `messages`.
fn messages_of(input: Input, images: &[Image]) -> (Option<String>, Value) {
    match input {
        Input::Text(text) => (
            None,
            json!([{"role": "user", "content": content(Api::Messages, text, images)}]),
        ),
        Input::Messages(ms) => {
            let system: Vec<&str> = ms
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str())
                .collect();
            let system = (!system.is_empty()).then(|| system.join("\n\n"));
            let mut out: Vec<Value> = Vec::new();
            for m in ms.iter().filter(|m| m.role != Role::System) {
                anthropic_message(m, &mut out);
            }
            (system, Value::Array(out))
        }
    }
}

/// Appends one message in Anthropic's form: a tool call is a `tool_use` block of the
/// assistant's message, a tool's result a `tool_result` block of a user message, and the user
/// text after a result joins that message as a text block (the API wants roles to alternate).
fn anthropic_message(m: &Message, out: &mut Vec<Value>) {
    match (m.role, &m.tool_calls) {
        (Role::Tool, _) => {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            let result = json!({"type": "tool_result", "tool_use_id": id, "content": m.content});
            out.push(json!({"role": "user", "content": [result]}));
        }
        (Role::Assistant, Some([c])) => {
            let input: Value = serde_json::from_str(&c.function.arguments).unwrap_or(json!({}));
            let call =
                json!({"type": "tool_use", "id": c.id, "name": c.function.name, "input": input});
            let mut blocks = Vec::new();
            if !m.content.is_empty() {
                blocks.push(json!({"type": "text", "text": m.content}));
            }
            blocks.push(call);
            out.push(json!({"role": "assistant", "content": blocks}));
        }
        (Role::User, _) => match result_before(out) {
            Some(blocks) => blocks.push(json!({"type": "text", "text": m.content})),
            None => out.push(json!({"role": m.role, "content": m.content})),
        },
        _ => out.push(json!({"role": m.role, "content": m.content})),
    }
}

/// The blocks of the last message when it is a user message of blocks (a tool's result).
fn result_before(out: &mut [Value]) -> Option<&mut Vec<Value>> {
    let last = out.last_mut()?;
    if last.get("role")? != "user" {
        return None;
    }
    last.get_mut("content")?.as_array_mut()
}

/// An embeddings request's body.
pub fn embeddings_body(t: &Target, w: &WorkloadPlan, texts: &[&str]) -> Value {
    let body = json!({"model": t.model, "input": texts, "encoding_format": "float"});
    with_extra(body, w)
}

/// A reranker request's body in the target's layout.
pub fn rankings_body(t: &Target, w: &WorkloadPlan, query: &str, passages: &[&str]) -> Value {
    let body = match t.rankings {
        RankingsLayout::Rerank => json!({"model": t.model, "query": query, "documents": passages}),
        RankingsLayout::Tei => json!({"query": query, "texts": passages}),
        RankingsLayout::Nim => {
            let ps: Vec<Value> = passages.iter().map(|p| json!({"text": p})).collect();
            json!({"model": t.model, "query": {"text": query}, "passages": ps})
        }
    };
    with_extra(body, w)
}

/// A body object with the plan's `--extra-inputs` added last.
fn with_extra(mut body: Value, w: &WorkloadPlan) -> Value {
    if let Value::Object(m) = &mut body {
        m.extend(w.extra_inputs.iter().cloned());
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::RunPlan;

    fn plan(args: &str) -> RunPlan {
        super::super::dataset::tests::plan_for("m", args)
    }

    fn img() -> Image {
        Image {
            bytes: b"abc".to_vec(),
            format: super::super::images::ImageFormat::Png,
            width: 1,
            height: 1,
        }
    }

    /// Responses and Messages bodies, exactly, with and without images.
    #[test]
    fn responses_and_messages_bodies() {
        let p = plan("--endpoint-type responses --streaming");
        let b = chat_like_body(&p.target, &p.workload, Input::Text("hi"), Some(8), &[]);
        assert_eq!(
            b.to_string(),
            r#"{"model":"m","input":"hi","max_output_tokens":8,"stream":true}"#
        );
        let b = chat_like_body(&p.target, &p.workload, Input::Text("hi"), None, &[img()]);
        assert_eq!(
            b.to_string(),
            r#"{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,YWJj"}]}],"stream":true}"#
        );
        let p = plan("--endpoint-type messages --streaming");
        let b = chat_like_body(&p.target, &p.workload, Input::Text("hi"), None, &[]);
        assert_eq!(
            b.to_string(),
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1024,"stream":true}"#
        );
        let b = chat_like_body(&p.target, &p.workload, Input::Text("hi"), Some(5), &[img()]);
        assert_eq!(
            b.to_string(),
            r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"YWJj"}}]}],"max_tokens":5,"stream":true}"#
        );
    }

    /// A session's tool round trip in each chat-like API's form, exactly: the turn before the
    /// result offers the tool by name, the answer holds the call, the result answers its id
    /// (and the user text after it shares the result's message in Anthropic's form).
    #[test]
    fn tool_round_trip_in_each_api() {
        use crate::workload::conversation::history::ToolCall;
        use crate::workload::conversation::{ToolResult, UserTurn};
        let turn = |text: &str, tool: Option<&str>| UserTurn {
            text: text.into(),
            tokens: 1,
            tool: tool.map(|r| ToolResult {
                name: "grep".into(),
                text: r.into(),
                tokens: 1,
            }),
            ..UserTurn::default()
        };
        let mut h = super::super::conversation::history::History::default();
        h.ask(&turn("Fix it", None));
        let call = ToolCall::new("call_0_0".into(), "grep", r#"{"q":"x"}"#.into());
        h.answer("", 3, Some(call));
        h.ask(&turn("Go on", Some("a.rs:1")));
        let body = |api: &str, offer| {
            let p = plan(&format!("--endpoint-type {api} --output-tokens-mean 4"));
            let b = super::super::dataset::turn_body(
                &p.target,
                &p.workload,
                h.messages(),
                (None, offer),
            );
            String::from_utf8(b.to_vec()).unwrap()
        };
        let want = [
            (
                "chat",
                r#"{"model":"m","messages":[{"role":"user","content":"Fix it"},{"role":"assistant","content":"","tool_calls":[{"id":"call_0_0","type":"function","function":{"name":"grep","arguments":"{\"q\":\"x\"}"}}]},{"role":"tool","content":"a.rs:1","tool_call_id":"call_0_0"},{"role":"user","content":"Go on"}],"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"grep","parameters":{"type":"object","properties":{}}}}],"tool_choice":{"type":"function","function":{"name":"grep"}}}"#,
            ),
            (
                "responses",
                r#"{"model":"m","input":[{"role":"user","content":"Fix it"},{"type":"function_call","call_id":"call_0_0","name":"grep","arguments":"{\"q\":\"x\"}"},{"type":"function_call_output","call_id":"call_0_0","output":"a.rs:1"},{"role":"user","content":"Go on"}],"stream":true,"tools":[{"type":"function","name":"grep","parameters":{"type":"object","properties":{}}}],"tool_choice":{"type":"function","name":"grep"}}"#,
            ),
            (
                "messages",
                r#"{"model":"m","messages":[{"role":"user","content":"Fix it"},{"role":"assistant","content":[{"type":"tool_use","id":"call_0_0","name":"grep","input":{"q":"x"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0_0","content":"a.rs:1"},{"type":"text","text":"Go on"}]}],"max_tokens":1024,"stream":true,"tools":[{"name":"grep","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"grep"}}"#,
            ),
        ];
        for (api, want) in want {
            assert_eq!(body(api, Some("grep")), want, "{api}");
        }
        assert!(!body("chat", None).contains("tools"), "no offer, no tools");
    }

    /// Embeddings and each rankings layout, exactly.
    #[test]
    fn batch_bodies() {
        let p = plan("--endpoint-type embeddings --extra-inputs dimensions:8");
        assert_eq!(
            embeddings_body(&p.target, &p.workload, &["a", "b"]).to_string(),
            r#"{"model":"m","input":["a","b"],"encoding_format":"float","dimensions":8}"#
        );
        for (layout, want) in [
            (
                "rerank",
                r#"{"model":"m","query":"q","documents":["a","b"]}"#,
            ),
            ("tei", r#"{"query":"q","texts":["a","b"]}"#),
            (
                "nim",
                r#"{"model":"m","query":{"text":"q"},"passages":[{"text":"a"},{"text":"b"}]}"#,
            ),
        ] {
            let p = plan(&format!("--endpoint-type rankings --rankings-api {layout}"));
            assert_eq!(
                rankings_body(&p.target, &p.workload, "q", &["a", "b"]).to_string(),
                want,
                "{layout}"
            );
        }
    }
}
