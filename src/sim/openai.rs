//! OpenAI-compatible routes: `GET /v1/models`, `POST /v1/chat/completions`,
//! `POST /v1/completions`, streaming (SSE ending in `data: [DONE]`) or not, serving the same models
//! by name. Optional bearer-token check when an API key is configured.
//!
//! In llama.cpp's metrics style every response carries llama-server's `timings` (the last data
//! event of a stream, the top level of a whole body: [`super::engine_api::timings`]); `/slots`
//! and `/tokenize` answer as the style's engine does ([`super::engine_api`]).
//!
//! A reasoning model ([`super::models::ReasoningSpec`]) answers chat requests with its first
//! reasoning tokens in the model's reasoning field (`delta.reasoning` or
//! `delta.reasoning_content`; non-streaming `message.<field>`), the rest in `content` (`null`
//! when nothing is left), and usage with `completion_tokens_details.reasoning_tokens`.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use bytes::{BufMut, BytesMut};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::http::{MAX_BODY_BYTES, begin_status};
use super::models::ReasoningSpec;
use super::request::{
    BadRequest, DEFAULT_MAX_TOKENS, Prompt, Scalar, json_object, model_name, resolve_length, wrong,
};
use super::state::{BeginError, Generation, SimState};
use super::stream::{Answer, EventFormat, Reject, SseBody, full_json_response, json_answer};
use super::tokens;

/// The OpenAI router.
pub(crate) fn router(state: Arc<SimState>) -> Router {
    Router::new()
        .route("/v1/models", get(list_models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            require_api_key,
        ))
        .route("/slots", get(super::engine_api::slots))
        .route("/tokenize", post(super::engine_api::tokenize))
        .with_state(state)
}

/// `{"error": {"message", "type", "code"}}` with `status`.
fn error(status: StatusCode, message: &str, kind: &str) -> Reject {
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    json_answer(status, body.to_string()).into()
}

fn begin_error(e: BeginError) -> Reject {
    let status = begin_status(e);
    let kind = if status == StatusCode::INTERNAL_SERVER_ERROR {
        "InternalServerError"
    } else {
        "ServiceUnavailableError"
    };
    error(status, e.message(), kind)
}

async fn require_api_key(State(st): State<Arc<SimState>>, req: Request, next: Next) -> Response {
    // Anthropic's clients send the key as `x-api-key` (to /v1/models too).
    if let Some(key) = &st.api_key
        && super::apis::given_key(req.headers()) != Some(key.as_str())
    {
        let body = json!({"error": {
            "message": "Incorrect API key provided",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }});
        return json_answer(StatusCode::UNAUTHORIZED, body.to_string());
    }
    next.run(req).await
}

async fn list_models(State(st): State<Arc<SimState>>) -> Response {
    let data: Vec<Value> = st
        .models
        .iter()
        .filter(|m| m.is_llm())
        .map(|m| {
            json!({
                "id": m.spec.name,
                "object": "model",
                "created": st.started_unix,
                "owned_by": "ttftbench-sim",
            })
        })
        .collect();
    let body = json!({"object": "list", "data": data});
    json_answer(StatusCode::OK, body.to_string())
}

/// A parsed OpenAI request.
#[derive(Debug)]
struct OpenAiRequest {
    model: Option<String>,
    prompt: Prompt,
    max_tokens: u32,
    stream: bool,
    include_usage: bool,
    echo: bool,
    /// The tool the model calls (chat with `tools`; see [`super::apis::decide_tool`]).
    tool: Option<String>,
    /// Where in the prompt's text a scored question ends it: the last user message (chat), or
    /// the whole prompt.
    asked: std::ops::Range<usize>,
    /// `temperature` was 0: greedy decoding.
    greedy: bool,
}

fn lenient_u32(v: &Value, key: &str) -> Result<Option<u32>, BadRequest> {
    let s = v.get(key).cloned().and_then(Scalar::from_json);
    s.map(|s| s.to_u32(key)).transpose()
}

fn lenient_bool(v: Option<&Value>, key: &str) -> Result<bool, BadRequest> {
    let s = v.cloned().and_then(Scalar::from_json);
    s.map_or(Ok(false), |s| s.to_bool(key))
}

fn parse_request(body: &[u8], chat: bool) -> Result<OpenAiRequest, BadRequest> {
    let v = json_object(body)?;
    let model = model_name(&v)?;
    let mut asked = None;
    let prompt = if chat {
        let messages = v
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| wrong("messages", "an array of {role, content}"))?;
        super::apis::check_tool_results(messages, super::apis::ToolForm::Chat)?;
        let mut text = String::new();
        let mut images = 0u32;
        let mut last_user = 0..0;
        for m in messages {
            let start = text.len();
            images += super::apis::content(m.get("content").unwrap_or(&Value::Null), &mut text)?;
            if m.get("role").and_then(Value::as_str) == Some("user") {
                last_user = start..text.len();
            }
        }
        asked = Some(last_user);
        super::apis::prompt(text, images)
    } else {
        match v.get("prompt") {
            Some(Value::String(s)) => Prompt::Text(s.clone()),
            Some(Value::Array(a)) => match a.as_slice() {
                [Value::String(s)] => Prompt::Text(s.clone()),
                a if a.iter().all(Value::is_u64) => Prompt::Tokens(a.len() as u32),
                [Value::Array(t)] if t.iter().all(Value::is_u64) => Prompt::Tokens(t.len() as u32),
                _ => return Err(BadRequest::SeveralPrompts),
            },
            _ => return Err(wrong("prompt", "a string")),
        }
    };
    if let Some(n) = lenient_u32(&v, "n")?
        && n != 1
    {
        return Err(BadRequest::SeveralChoices(n));
    }
    let max = match lenient_u32(&v, "max_completion_tokens")? {
        Some(n) => Some(n),
        None => lenient_u32(&v, "max_tokens")?,
    };
    let min = lenient_u32(&v, "min_tokens")?;
    let tool = chat
        .then(|| super::apis::decide_tool(&v, prompt.text()))
        .flatten();
    let asked = asked.unwrap_or(0..prompt.text().len());
    Ok(OpenAiRequest {
        model,
        prompt,
        max_tokens: resolve_length(max, min, DEFAULT_MAX_TOKENS)?,
        stream: lenient_bool(v.get("stream"), "stream")?,
        include_usage: lenient_bool(
            v.pointer("/stream_options/include_usage"),
            "stream_options.include_usage",
        )?,
        echo: lenient_bool(v.get("echo"), "echo")?,
        asked,
        greedy: v.get("temperature").and_then(Value::as_f64) == Some(0.0),
        tool,
    })
}

async fn chat(State(st): State<Arc<SimState>>, body: Bytes) -> Answer {
    serve(st, body, true).await
}

async fn completions(State(st): State<Arc<SimState>>, body: Bytes) -> Answer {
    serve(st, body, false).await
}

async fn serve(st: Arc<SimState>, body: Bytes, chat: bool) -> Answer {
    let arrival = Instant::now();
    let req = parse_request(&body, chat)
        .map_err(|m| error(StatusCode::BAD_REQUEST, &m.to_string(), "BadRequestError"))?;
    let entry = st
        .text_model(req.model.as_deref())
        .map_err(|e| error(StatusCode::NOT_FOUND, &e.to_string(), "NotFoundError"))?;
    let name = entry.spec.name.as_str();
    // llama.cpp's timings count the prompt's tokens.
    let llamacpp = st.metrics_style == crate::server_metrics::ServerKind::LlamaCpp;
    let need_usage = !req.stream || req.include_usage || llamacpp;
    // Only the chat route separates reasoning from content; a tool call is all the answer.
    let reasoning = entry.spec.reasoning.filter(|_| chat && req.tool.is_none());
    // A scored question gets its answer first (reasoning models and tool calls answer as
    // they always do).
    let script = match (&st.answers, req.prompt.text().get(req.asked.clone())) {
        (Some(a), Some(asked)) if reasoning.is_none() && req.tool.is_none() => {
            a.answer(asked, req.greedy)
        }
        _ => None,
    };
    let mut g = st
        .begin(entry, &req.prompt, req.max_tokens, need_usage, arrival)
        .await
        .map_err(begin_error)?;
    let id = format!(
        "{}-{}",
        if chat { "chatcmpl" } else { "cmpl" },
        st.next_id()
    );
    let created = super::unix_now().as_secs();
    let object = match (chat, req.stream) {
        (true, true) => "chat.completion.chunk",
        (true, false) => "chat.completion",
        (false, _) => "text_completion",
    };
    let mut body = json!({"id": id, "object": object, "created": created, "model": name});
    if req.stream {
        let mut head = body.to_string();
        head.pop(); // reopen the object: events append `,"choices":...}`
        let format = OpenAiEvents {
            head: Bytes::from(format!("data: {head}")),
            chat,
            include_usage: req.include_usage,
            input_tokens: g.input_tokens,
            reasoning,
            timings: llamacpp,
            tool: req.tool.map(|name| (name, req.max_tokens)),
            script,
        };
        return Ok(SseBody::new(g, format).into_response());
    }
    let n = g.run_to_end().await.map_err(|e| {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            &e.to_string(),
            "ServiceUnavailableError",
        )
    })?;
    let mut text = String::with_capacity(tokens::text_len(n));
    if req.echo && !chat {
        text.push_str(req.prompt.text());
    }
    text.extend((0..n).map(|i| piece(script.as_ref(), i)));
    drop(script);
    let choice = if let Some(name) = &req.tool {
        let call = json!({"id": format!("call_{id}"), "type": "function",
            "function": {"name": name, "arguments": super::apis::tool_arguments(n)}});
        json!({"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [call]}, "logprobs": null, "finish_reason": "tool_calls"})
    } else if chat {
        json!({"index": 0, "message": chat_message(text, reasoning, n), "logprobs": null, "finish_reason": "length"})
    } else {
        json!({"index": 0, "text": text, "logprobs": null, "finish_reason": "length"})
    };
    body["choices"] = json!([choice]);
    body["usage"] = usage(g.input_tokens, n, reasoning);
    if llamacpp {
        body["timings"] = super::engine_api::timings(&g);
    }
    Ok(full_json_response(&mut g, body.to_string().into_bytes()))
}

/// The assistant message of `n` tokens whose text is `text`: reasoning first when the model
/// reasons.
fn chat_message(text: String, reasoning: Option<ReasoningSpec>, n: u32) -> Value {
    let Some(r) = reasoning else {
        return json!({"role": "assistant", "content": text});
    };
    let split = tokens::text_len(r.tokens.min(n));
    let content = &text[split..];
    let mut m = json!({"role": "assistant"});
    m[r.field.key()] = json!(&text[..split]);
    m["content"] = json!((!content.is_empty()).then_some(content));
    m
}

/// The usage object; a reasoning model's adds `completion_tokens_details.reasoning_tokens`.
fn usage(prompt: u32, completion: u32, reasoning: Option<ReasoningSpec>) -> Value {
    let mut u = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": u64::from(prompt) + u64::from(completion),
    });
    if let Some(r) = reasoning {
        u["completion_tokens_details"] = json!({"reasoning_tokens": r.tokens.min(completion)});
    }
    u
}

/// Chat / completion chunks. Every event starts with the per-request head
/// `data: {"id":..,"object":..,"created":..,"model":..` and appends its `choices`.
struct OpenAiEvents {
    head: Bytes,
    chat: bool,
    include_usage: bool,
    input_tokens: u32,
    /// Chat with a reasoning model: its leading tokens go in its reasoning field.
    reasoning: Option<ReasoningSpec>,
    /// llama.cpp style: the last data event carries the request's `timings`.
    timings: bool,
    /// Chat calling a tool (its name, and the tokens its arguments take): every token is a
    /// piece of the call's arguments.
    tool: Option<(String, u32)>,
    /// A scored question's answer: its first tokens (the word cycle after them).
    script: Option<super::answers::Scripted>,
}

/// The text of output token `index`: the scripted answer's, else the word cycle's.
fn piece(script: Option<&super::answers::Scripted>, index: u32) -> &str {
    let scripted = script.and_then(|s| s.tokens.get(index as usize));
    scripted.map_or(tokens::word(index), String::as_str)
}

/// Appends token `index`'s text as the inside of a JSON string (scripted answers may hold
/// characters to escape; the word cycle needs none).
fn put_piece(buf: &mut BytesMut, script: Option<&super::answers::Scripted>, index: u32) {
    let text = piece(script, index);
    if script.is_some_and(|s| (index as usize) < s.tokens.len()) {
        let quoted = Value::String(text.to_string()).to_string();
        buf.put_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
    } else {
        buf.put_slice(text.as_bytes());
    }
}

/// Closes a chat `delta` string and the chunk.
const TAIL_DELTA: &[u8] = b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
/// Closes a completion `text` string and the chunk.
const TAIL_TEXT: &[u8] = b"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n";

impl OpenAiEvents {
    /// The finish chunk, the usage chunk when asked for, and `[DONE]`; `timings` (llama.cpp
    /// style) goes on the last data event: the usage chunk, else the finish chunk.
    fn finish_events(&self, buf: &mut BytesMut, tokens_out: u32, timings: Option<&str>) {
        let put_timings = |buf: &mut BytesMut| {
            if let Some(t) = timings {
                buf.put_slice(b",\"timings\":");
                buf.put_slice(t.as_bytes());
            }
        };
        self.choice_open(buf);
        if self.tool.is_some() {
            buf.put_slice(b"{},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]");
        } else if self.chat {
            buf.put_slice(b"{},\"logprobs\":null,\"finish_reason\":\"length\"}]");
        } else {
            buf.put_slice(b"\"\",\"logprobs\":null,\"finish_reason\":\"length\"}]");
        }
        if !self.include_usage {
            put_timings(buf);
        }
        buf.put_slice(b"}\n\n");
        if self.include_usage {
            buf.put_slice(&self.head);
            let usage = usage(self.input_tokens, tokens_out, self.reasoning);
            let _ = write!(buf, ",\"choices\":[],\"usage\":{usage}");
            put_timings(buf);
            buf.put_slice(b"}\n\n");
        }
        buf.put_slice(b"data: [DONE]\n\n");
    }

    fn choice_open(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.head);
        if self.chat {
            buf.put_slice(b",\"choices\":[{\"index\":0,\"delta\":");
        } else {
            buf.put_slice(b",\"choices\":[{\"index\":0,\"text\":");
        }
    }
}

impl EventFormat for OpenAiEvents {
    fn preamble(&mut self, buf: &mut BytesMut) {
        if let Some((name, _)) = &self.tool {
            // The call's id and name first, its arguments token by token after.
            self.choice_open(buf);
            let call = json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {"name": name, "arguments": ""}}]});
            let _ = write!(
                buf,
                "{call},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
            );
            return;
        }
        if self.chat {
            self.choice_open(buf);
            buf.put_slice(b"{\"role\":\"assistant\",\"content\":\"");
            buf.put_slice(TAIL_DELTA);
        }
    }

    fn token(&mut self, buf: &mut BytesMut, index: u32) {
        self.choice_open(buf);
        if let Some((_, n)) = &self.tool {
            buf.put_slice(b"{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"");
            let mut piece = String::new();
            super::apis::tool_piece(&mut piece, index, *n, true);
            buf.put_slice(piece.as_bytes());
            buf.put_slice(b"\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        } else if let Some(r) = self.reasoning
            && index < r.tokens
        {
            buf.put_slice(b"{\"");
            buf.put_slice(r.field.key().as_bytes());
            buf.put_slice(b"\":\"");
            buf.put_slice(tokens::word(index).as_bytes());
            buf.put_slice(TAIL_DELTA);
        } else if self.chat {
            buf.put_slice(b"{\"content\":\"");
            put_piece(buf, self.script.as_ref(), index);
            buf.put_slice(TAIL_DELTA);
        } else {
            buf.put_u8(b'"');
            put_piece(buf, self.script.as_ref(), index);
            buf.put_slice(TAIL_TEXT);
        }
    }

    fn finish(&mut self, buf: &mut BytesMut, g: &Generation) {
        // The answer is out: the request leaves the load now, before the client can have read
        // the end of the stream and sent its next one.
        self.script = None;
        let timings = self
            .timings
            .then(|| super::engine_api::timings(g).to_string());
        self.finish_events(buf, g.source.emitted(), timings.as_deref());
    }

    fn malformed(&mut self, buf: &mut BytesMut) {
        self.choice_open(buf);
        if self.chat {
            buf.put_slice(b"{\"content\":\" the\n\n");
        } else {
            buf.put_slice(b"\" the\n\n");
        }
    }

    fn error(&mut self, buf: &mut BytesMut, message: &str) {
        let e =
            json!({"error": {"message": message, "type": "ServiceUnavailableError", "code": 503}});
        let _ = write!(buf, "data: {e}\n\ndata: [DONE]\n\n");
    }

    fn event_size_hint(&self) -> usize {
        self.head.len() + 96
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_chat_and_completion_forms() {
        let r = parse_request(
            br#"{"model":"gpt2","messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"text","text":" there"}]}],"max_completion_tokens":"5","stream":true,"stream_options":{"include_usage":true}}"#,
            true,
        )
        .expect("chat");
        assert_eq!(
            (r.prompt.text(), r.max_tokens, r.stream, r.include_usage),
            ("hi there", 5, true, true)
        );
        let r = parse_request(br#"{"model":"gpt2","prompt":[1,2,3]}"#, false).expect("tokens");
        assert_eq!(
            (r.prompt, r.max_tokens),
            (Prompt::Tokens(3), DEFAULT_MAX_TOKENS)
        );
        assert!(parse_request(br#"{"prompt":["a","b"]}"#, false).is_err());
        assert!(parse_request(br#"{"messages":"hi"}"#, true).is_err());
        assert!(parse_request(br#"{"prompt":"x","n":2}"#, false).is_err());
    }

    /// Events after `head`: plain (no reasoning, tool or script) for 3 input tokens.
    fn events(head: &'static [u8], chat: bool, include_usage: bool, timings: bool) -> OpenAiEvents {
        OpenAiEvents {
            head: Bytes::from_static(head),
            chat,
            include_usage,
            input_tokens: 3,
            reasoning: None,
            timings,
            tool: None,
            script: None,
        }
    }

    #[test]
    fn chunks_are_valid_json() {
        let head =
            b"data: {\"id\":\"x\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\"";
        let mut f = events(head, false, true, false);
        let mut buf = BytesMut::new();
        f.token(&mut buf, 0);
        f.finish_events(&mut buf, 1, None);
        let text = String::from_utf8(buf.to_vec()).expect("utf8");
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 4, "{text}");
        for e in &events[..3] {
            let v: Value = serde_json::from_str(e.trim_start_matches("data: ")).expect(e);
            assert_eq!(v["object"], "text_completion");
        }
        assert_eq!(events[3], "data: [DONE]");
        f.chat = true;
        let mut buf = BytesMut::new();
        f.preamble(&mut buf);
        f.token(&mut buf, 1);
        let text = String::from_utf8(buf.to_vec()).expect("utf8");
        for e in text.split("\n\n").filter(|e| !e.is_empty()) {
            let _: Value = serde_json::from_str(e.trim_start_matches("data: ")).expect(e);
        }
    }

    /// llama.cpp style: the timings ride on the last data event, the usage chunk when asked
    /// for, else the finish chunk, as llama-server sends them.
    #[test]
    fn timings_go_on_the_last_data_event() {
        let head = b"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\"";
        let mut f = events(head, true, false, true);
        let last_data = |f: &OpenAiEvents| {
            let mut buf = BytesMut::new();
            f.finish_events(&mut buf, 2, Some(r#"{"prompt_ms":1.5}"#));
            let text = String::from_utf8(buf.to_vec()).expect("utf8");
            let data: Vec<Value> = text
                .split("\n\n")
                .filter_map(|e| e.strip_prefix("data: "))
                .filter(|e| *e != "[DONE]")
                .map(|e| serde_json::from_str(e).expect(e))
                .collect();
            let with: Vec<usize> = (0..data.len())
                .filter(|&i| data[i].get("timings").is_some())
                .collect();
            (data.len(), with)
        };
        assert_eq!(last_data(&f), (1, vec![0]));
        f.include_usage = true;
        assert_eq!(last_data(&f), (2, vec![1]));
    }
}
