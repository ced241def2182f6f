//! The newer APIs on the simulated server: OpenAI Responses (`POST /v1/responses`), Anthropic
//! Messages (`POST /v1/messages`), embeddings (`POST /v1/embeddings`), rerankers (`POST
//! /v1/rerank` and TEI's `/rerank` in Cohere/Jina's and TEI's forms, NIM's `/v1/ranking`);
//! and what chat shares with them: images in the prompt, tool calls.
//!
//! Every route runs its request through the same engine as chat (queue, batch slots, prefill,
//! decode, faults): an embeddings or rerank request is a prefill of all its texts and one
//! step. Streams follow the servers' own event sequences (vLLM 0.32's, with `type` first as
//! OpenAI and Anthropic write it): Responses `response.created`, `response.in_progress`,
//! `response.output_item.added`, deltas, `response.output_text.done`, `response.output_item.done`,
//! `response.completed` with usage; Messages `message_start` (input tokens), `content_block_start`,
//! `content_block_delta` ×n, `content_block_stop`, `message_delta` (output tokens),
//! `message_stop`; `/v1/messages` answers 400 without an `anthropic-version` header, as
//! Anthropic's API does. A reasoning model's leading tokens are `response.reasoning_text.delta` /
//! `thinking_delta`; a tool call's tokens are its arguments, `{"query":"<words>"}`.
//!
//! Tools: a request offering tools calls the first one (or the one `tool_choice` names) when
//! its choice is required/any or names a tool, never with none, and with auto for the prompts
//! whose text hashes even (about half, the same prompts every run).
//!
//! Images (chat `image_url`, Responses `input_image`, Messages `image` blocks, as base64 data)
//! add prompt tokens as a vision encoder's patches would: one per 28×28 pixels of each image
//! (its size read from its header); an image that is not PNG or JPEG is a 400.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use base64::Engine as _;
use bytes::BytesMut;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::http::{MAX_BODY_BYTES, begin_status};
use super::models::ReasoningSpec;
use super::request::{
    BadRequest, DEFAULT_MAX_TOKENS, Prompt, json_object, model_name, resolve_length, wrong,
};
use super::state::{BeginError, ModelEntry, SimState};
use super::stream::{Answer, EventFormat, Reject, SseBody, full_json_response, json_answer};
use super::tokens;

/// Dimension of the simulator's embeddings.
pub(crate) const EMBED_DIM: usize = 64;

/// Pixels per side of one image token (a ViT patch after 2×2 merging, as Qwen-VL counts).
const PATCH: u32 = 28;

/// The routes.
pub(crate) fn router(state: Arc<SimState>) -> Router {
    Router::new()
        .route("/v1/responses", post(responses))
        .route("/v1/messages", post(messages))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/rerank", post(rerank))
        .route("/rerank", post(rerank))
        .route("/v1/ranking", post(rerank))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_key))
        .with_state(state)
}

/// Which API a handler answers for: its error bodies differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    OpenAi,
    Anthropic,
}

fn error(style: Style, status: StatusCode, message: &str) -> Response {
    let body = match style {
        Style::OpenAi => {
            json!({"error": {"message": message, "type": "BadRequestError", "code": status.as_u16()}})
        }
        Style::Anthropic => {
            let kind = match status.as_u16() {
                401 => "authentication_error",
                404 => "not_found_error",
                503 | 500 => "overloaded_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    };
    json_answer(status, body.to_string())
}

/// The API key a request gives, as `Authorization: Bearer` or Anthropic's `x-api-key`.
pub(crate) fn given_key(h: &HeaderMap) -> Option<&str> {
    h.get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok()?.strip_prefix("Bearer "))
        .or_else(|| h.get("x-api-key")?.to_str().ok())
        .map(str::trim)
}

/// The configured API key, as `Authorization: Bearer` or Anthropic's `x-api-key`.
async fn require_key(State(st): State<Arc<SimState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &st.api_key
        && given_key(req.headers()) != Some(key.as_str())
    {
        let style = match req.uri().path() {
            "/v1/messages" => Style::Anthropic,
            _ => Style::OpenAi,
        };
        return error(style, StatusCode::UNAUTHORIZED, "invalid x-api-key");
    }
    next.run(req).await
}

/// What a request asks of the engine.
struct Asked {
    model: Option<String>,
    prompt: Prompt,
    max_tokens: u32,
    stream: bool,
    tool: Option<String>,
}

/// The model a request names (or the first text model), or the error to answer.
fn model<'a>(st: &'a SimState, name: Option<&str>, style: Style) -> Result<&'a ModelEntry, Reject> {
    st.text_model(name)
        .map_err(|e| error(style, StatusCode::NOT_FOUND, &e.to_string()).into())
}

fn begin_error(style: Style, e: BeginError) -> Reject {
    error(style, begin_status(e), e.message()).into()
}

/// The 400 answer to a malformed request.
fn bad_request(style: Style, m: BadRequest) -> Reject {
    error(style, StatusCode::BAD_REQUEST, &m.to_string()).into()
}

/// The answer to a generation whose tokens stopped coming.
fn source_error(style: Style, e: super::engine::SourceError) -> Reject {
    error(style, StatusCode::SERVICE_UNAVAILABLE, &e.to_string()).into()
}

/// Text and image tokens of one message's `content`: a string, or parts (`text` /
/// `input_text` parts' text; `image_url`, `input_image` and `image` parts' images).
pub(crate) fn content(c: &Value, text: &mut String) -> Result<u32, BadRequest> {
    match c {
        Value::String(s) => {
            text.push_str(s);
            Ok(0)
        }
        Value::Null => Ok(0),
        Value::Array(parts) => {
            let mut images = 0;
            for p in parts {
                // `content` of an Anthropic tool_result block: the tool's result.
                if let Some(t) = p
                    .get("text")
                    .or_else(|| p.get("content"))
                    .and_then(Value::as_str)
                {
                    text.push_str(t);
                }
                if let Some(data) = image_data(p) {
                    images += image_tokens(&data?)?;
                }
            }
            Ok(images)
        }
        _ => Err(wrong("content", "a string or a list of parts")),
    }
}

/// The bytes of an image part, in any of the three APIs' forms.
fn image_data(p: &Value) -> Option<Result<Vec<u8>, BadRequest>> {
    let b64 = match p.get("type").and_then(Value::as_str)? {
        "image_url" => data_url(p.pointer("/image_url/url")?.as_str()?),
        "input_image" => data_url(p.get("image_url")?.as_str()?),
        "image" => p.pointer("/source/data")?.as_str(),
        _ => None,
    }?;
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(BadRequest::ImageBase64),
    )
}

fn data_url(url: &str) -> Option<&str> {
    url.strip_prefix("data:")?
        .split_once(";base64,")
        .map(|(_, d)| d)
}

/// Prompt tokens of one image: one per `PATCH`² pixels (at least one).
fn image_tokens(bytes: &[u8]) -> Result<u32, BadRequest> {
    let (w, h) = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(BadRequest::ImageRead)?
        .into_dimensions()
        .map_err(BadRequest::ImageFormat)?;
    Ok((w.div_ceil(PATCH) * h.div_ceil(PATCH)).max(1))
}

/// The prompt of text and image tokens.
pub(crate) fn prompt(text: String, image_tokens: u32) -> Prompt {
    match image_tokens {
        0 => Prompt::Text(text),
        n => Prompt::Mixed(text, n),
    }
}

/// The API whose form a history's tool calls and results take.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ToolForm {
    /// Chat: `tool_calls` and `tool` messages.
    Chat,
    /// Responses: `function_call` and `function_call_output` items.
    Responses,
    /// Messages: `tool_use` and `tool_result` blocks.
    Messages,
}

/// Checks that every tool result of a request's history answers, by its id, a call an
/// earlier item made, as strict servers do: chat `tool` messages name an id of an earlier
/// assistant message's `tool_calls`, Responses `function_call_output` items the `call_id`
/// of an earlier `function_call`, Messages `tool_result` blocks the `id` of an earlier
/// `tool_use` block.
pub(crate) fn check_tool_results(items: &[Value], form: ToolForm) -> Result<(), BadRequest> {
    let id = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let mut made: Vec<String> = Vec::new();
    for (at, item) in items.iter().enumerate() {
        let (calls, answers): (Vec<String>, Vec<String>) = match form {
            ToolForm::Responses => match item.get("type").and_then(Value::as_str) {
                Some("function_call") => (vec![id(item, "call_id")], vec![]),
                Some("function_call_output") => (vec![], vec![id(item, "call_id")]),
                _ => continue,
            },
            ToolForm::Messages => {
                let blocks = item.get("content").and_then(Value::as_array);
                let of = |kind: &str, key: &str| -> Vec<String> {
                    let kind_is = |b: &&Value| b.get("type").and_then(Value::as_str) == Some(kind);
                    blocks
                        .into_iter()
                        .flatten()
                        .filter(kind_is)
                        .map(|b| id(b, key))
                        .collect()
                };
                (of("tool_use", "id"), of("tool_result", "tool_use_id"))
            }
            ToolForm::Chat => {
                let calls = item.get("tool_calls").and_then(Value::as_array);
                let calls = calls.into_iter().flatten().map(|c| id(c, "id")).collect();
                match item.get("role").and_then(Value::as_str) {
                    Some("tool") => (calls, vec![id(item, "tool_call_id")]),
                    _ => (calls, vec![]),
                }
            }
        };
        if let Some(id) = answers.into_iter().find(|a| !made.contains(a)) {
            return Err(BadRequest::UnansweredCall { at, id });
        }
        made.extend(calls);
    }
    Ok(())
}

/// The tool a request makes the model call, if it does (see the module's notes).
pub(crate) fn decide_tool(body: &Value, prompt: &str) -> Option<String> {
    let tools = body.get("tools")?.as_array()?;
    let name = |t: &Value| {
        t.get("name")
            .or_else(|| t.pointer("/function/name"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let first = tools.iter().find_map(name)?;
    let choice = body.get("tool_choice");
    let kind = match choice {
        None | Some(Value::Null) => "auto",
        Some(Value::String(s)) => s.as_str(),
        Some(v) => v.get("type").and_then(Value::as_str).unwrap_or("auto"),
    };
    let named = choice.and_then(name);
    match kind {
        "none" => None,
        "required" | "any" => Some(first),
        "tool" | "function" => named.or(Some(first)),
        _ => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            prompt.hash(&mut h);
            h.finish().is_multiple_of(2).then_some(first)
        }
    }
}

/// Tool-call argument token `i` of `n`, JSON-escaped for a JSON string (`escaped`) or not:
/// the arguments are `{"query":"<word 0>…<word n-1>"}`.
pub(crate) fn tool_piece(out: &mut impl std::fmt::Write, i: u32, n: u32, escaped: bool) {
    let q = if escaped { "\\\"" } else { "\"" };
    if i == 0 {
        let _ = write!(out, "{{{q}query{q}:{q}");
    }
    let _ = out.write_str(tokens::word(i));
    if i + 1 == n {
        let _ = write!(out, "{q}}}");
    }
}

/// The whole arguments of an `n`-token tool call.
pub(crate) fn tool_arguments(n: u32) -> String {
    let mut s = String::new();
    for i in 0..n.max(1) {
        tool_piece(&mut s, i, n.max(1), false);
    }
    s
}

/// Whole-number field `key` (absent or `null`: `None`), capped at `u32::MAX`.
fn u32_field(v: &Value, key: &str) -> Result<Option<u32>, BadRequest> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_u64()
            .map(|n| Some(n.min(u64::from(u32::MAX)) as u32))
            .ok_or_else(|| wrong(key, "a whole number")),
    }
}

/// A Responses request: `input` (text, or messages whose content is a string or parts).
fn parse_responses(body: &[u8]) -> Result<Asked, BadRequest> {
    let v = json_object(body)?;
    let (mut text, mut images) = (String::new(), 0);
    match v.get("input") {
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(items)) => {
            check_tool_results(items, ToolForm::Responses)?;
            for m in items {
                // A function_call_output item's `output`: the tool's result.
                let c = m.get("content").or_else(|| m.get("output"));
                images += content(c.unwrap_or(&Value::Null), &mut text)?;
            }
        }
        _ => return Err(wrong("input", "a string or a list of messages")),
    }
    let max = u32_field(&v, "max_output_tokens")?;
    asked(&v, text, images, max)
}

/// What request `v` with prompt `text` and `images` image tokens asks, `max` tokens at most.
fn asked(v: &Value, text: String, images: u32, max: Option<u32>) -> Result<Asked, BadRequest> {
    let max_tokens = resolve_length(max, u32_field(v, "min_tokens")?, DEFAULT_MAX_TOKENS)?;
    Ok(Asked {
        model: model_name(v)?,
        tool: decide_tool(v, &text),
        max_tokens,
        stream: v.get("stream").and_then(Value::as_bool).unwrap_or(false),
        prompt: prompt(text, images),
    })
}

/// A Messages request: `system`, `messages` (content strings or blocks), `max_tokens`
/// (required, as Anthropic's API has it).
fn parse_messages(body: &[u8]) -> Result<Asked, BadRequest> {
    let v = json_object(body)?;
    let (mut text, mut images) = (String::new(), 0);
    if let Some(s) = v.get("system") {
        images += content(s, &mut text)?;
    }
    let msgs = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(BadRequest::Required {
            field: "messages",
            shape: Some("a list of {role, content}"),
        })?;
    check_tool_results(msgs, ToolForm::Messages)?;
    for m in msgs {
        images += content(m.get("content").unwrap_or(&Value::Null), &mut text)?;
    }
    let max = u32_field(&v, "max_tokens")?.ok_or(BadRequest::Required {
        field: "max_tokens",
        shape: None,
    })?;
    asked(&v, text, images, Some(max))
}

async fn responses(State(st): State<Arc<SimState>>, body: Bytes) -> Answer {
    generate(st, body, Api::Responses).await
}

/// Anthropic's API refuses a request without the `anthropic-version` header; so does this one,
/// so a client that forgets it fails here before it fails there.
async fn messages(State(st): State<Arc<SimState>>, headers: HeaderMap, body: Bytes) -> Answer {
    if !headers.contains_key("anthropic-version") {
        return Err(error(
            Style::Anthropic,
            StatusCode::BAD_REQUEST,
            "anthropic-version: header is required",
        )
        .into());
    }
    generate(st, body, Api::Messages).await
}

/// The two generative APIs here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Responses,
    Messages,
}

async fn generate(st: Arc<SimState>, body: Bytes, api: Api) -> Answer {
    let arrival = Instant::now();
    let (style, parsed) = match api {
        Api::Responses => (Style::OpenAi, parse_responses(&body)),
        Api::Messages => (Style::Anthropic, parse_messages(&body)),
    };
    let asked = parsed.map_err(|m| bad_request(style, m))?;
    let entry = model(&st, asked.model.as_deref(), style)?;
    // A tool call is all the answer: no reasoning before it.
    let reasoning = entry.spec.reasoning.filter(|_| asked.tool.is_none());
    let mut g = st
        .begin(entry, &asked.prompt, asked.max_tokens, true, arrival)
        .await
        .map_err(|e| begin_error(style, e))?;
    let shape = Shape {
        id: st.next_id(),
        model: entry.spec.name.clone(),
        input_tokens: g.input_tokens,
        max_tokens: asked.max_tokens,
        reasoning,
        tool: asked.tool,
    };
    if asked.stream {
        return Ok(match api {
            Api::Responses => SseBody::new(g, ResponsesEvents { s: shape, seq: 0 }).into_response(),
            Api::Messages => SseBody::new(g, MessagesEvents { s: shape }).into_response(),
        });
    }
    let n = g.run_to_end().await.map_err(|e| source_error(style, e))?;
    let body = match api {
        Api::Responses => shape.responses_body(n),
        Api::Messages => shape.messages_body(n),
    };
    Ok(full_json_response(&mut g, body.to_string().into_bytes()))
}

/// What one generative answer looks like, whatever its framing.
struct Shape {
    id: u64,
    model: String,
    input_tokens: u32,
    max_tokens: u32,
    reasoning: Option<ReasoningSpec>,
    tool: Option<String>,
}

impl Shape {
    /// Reasoning tokens among `n`.
    fn thinking(&self, n: u32) -> u32 {
        self.reasoning.map_or(0, |r| r.tokens.min(n))
    }

    /// The answer text of `n` tokens, after the reasoning.
    fn answer(&self, n: u32) -> String {
        (self.thinking(n)..n).map(tokens::word).collect()
    }

    fn reasoning_text(&self, n: u32) -> String {
        (0..self.thinking(n)).map(tokens::word).collect()
    }

    fn responses_output(&self, n: u32) -> Value {
        if let Some(name) = &self.tool {
            return json!([{"type": "function_call", "id": format!("fc_{}", self.id), "call_id": format!("call_{}", self.id), "name": name, "arguments": tool_arguments(n), "status": "completed"}]);
        }
        let message = json!({"type": "message", "id": format!("msg_{}", self.id), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": self.answer(n), "annotations": []}]});
        match self.thinking(n) {
            0 => json!([message]),
            _ => json!([{"type": "reasoning", "id": format!("rs_{}", self.id), "summary": [],
                "content": [{"type": "reasoning_text", "text": self.reasoning_text(n)}]}, message]),
        }
    }

    fn responses_usage(&self, n: u32) -> Value {
        json!({"input_tokens": self.input_tokens, "output_tokens": n,
            "total_tokens": u64::from(self.input_tokens) + u64::from(n),
            "output_tokens_details": {"reasoning_tokens": self.thinking(n)}})
    }

    fn responses_body(&self, n: u32) -> Value {
        json!({"id": format!("resp_{}", self.id), "object": "response", "status": self.status(n),
            "model": self.model, "output": self.responses_output(n), "usage": self.responses_usage(n)})
    }

    /// Responses' status: incomplete when cut by the length limit, as vLLM says.
    fn status(&self, n: u32) -> &'static str {
        if n >= self.max_tokens && self.tool.is_none() {
            "incomplete"
        } else {
            "completed"
        }
    }

    fn messages_content(&self, n: u32) -> Value {
        if let Some(name) = &self.tool {
            let input: Value = serde_json::from_str(&tool_arguments(n)).unwrap_or(Value::Null);
            return json!([{"type": "tool_use", "id": format!("toolu_{}", self.id), "name": name, "input": input}]);
        }
        let text = json!({"type": "text", "text": self.answer(n)});
        match self.thinking(n) {
            0 => json!([text]),
            _ => {
                json!([{"type": "thinking", "thinking": self.reasoning_text(n), "signature": "sim"}, text])
            }
        }
    }

    /// Token `index` inside a JSON string: a piece of the tool call's arguments, or a word.
    fn put_token(&self, buf: &mut BytesMut, index: u32) {
        match self.tool {
            Some(_) => tool_piece(buf, index, self.max_tokens, true),
            None => {
                let _ = buf.write_str(tokens::word(index));
            }
        }
    }

    fn stop_reason(&self) -> &'static str {
        if self.tool.is_some() {
            "tool_use"
        } else {
            "max_tokens"
        }
    }

    fn messages_body(&self, n: u32) -> Value {
        json!({"id": format!("msg_{}", self.id), "type": "message", "role": "assistant", "model": self.model,
            "content": self.messages_content(n), "stop_reason": self.stop_reason(), "stop_sequence": null,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": n}})
    }
}

/// One server-sent event `name` whose data is `{"type": name}` then `fields`, into `buf`.
fn event(buf: &mut BytesMut, name: &str, fields: Value) {
    let mut data = json!({ "type": name });
    if let (Some(d), Value::Object(f)) = (data.as_object_mut(), fields) {
        d.extend(f);
    }
    let _ = write!(buf, "event: {name}\ndata: {data}\n\n");
}

/// Responses' stream (see the module's notes).
struct ResponsesEvents {
    s: Shape,
    seq: u32,
}

impl ResponsesEvents {
    fn next_seq(&mut self) -> u32 {
        self.seq += 1;
        self.seq - 1
    }

    /// Event `name` with `fields`, then its sequence number.
    fn emit(&mut self, buf: &mut BytesMut, name: &str, mut fields: Value) {
        fields["sequence_number"] = self.next_seq().into();
        event(buf, name, fields);
    }

    /// The item now streaming: the reasoning item, the message, or the function call.
    fn item_added(&mut self, buf: &mut BytesMut, index: u32, item: Value) {
        let fields = json!({"output_index": index, "item": item});
        self.emit(buf, "response.output_item.added", fields);
    }

    /// The closing events of a stream that emitted `n` tokens.
    fn finish_tokens(&mut self, buf: &mut BytesMut, n: u32) {
        if self.s.tool.is_none() {
            let fields = json!({"item_id": format!("msg_{}", self.s.id), "output_index": u32::from(self.s.thinking(n) > 0), "content_index": 0, "text": self.s.answer(n)});
            self.emit(buf, "response.output_text.done", fields);
        }
        let kind = match self.s.status(n) {
            "incomplete" => "response.incomplete",
            _ => "response.completed",
        };
        let fields = json!({ "response": self.s.responses_body(n) });
        self.emit(buf, kind, fields);
    }

    fn message_item(&self) -> Value {
        json!({"type": "message", "id": format!("msg_{}", self.s.id), "role": "assistant", "status": "in_progress", "content": []})
    }
}

impl EventFormat for ResponsesEvents {
    fn preamble(&mut self, buf: &mut BytesMut) {
        for kind in ["response.created", "response.in_progress"] {
            let r = json!({"id": format!("resp_{}", self.s.id), "object": "response", "status": "in_progress", "model": self.s.model, "output": [], "usage": null});
            self.emit(buf, kind, json!({ "response": r }));
        }
        let item = match (&self.s.tool, self.s.reasoning) {
            (Some(name), _) => {
                json!({"type": "function_call", "id": format!("fc_{}", self.s.id), "call_id": format!("call_{}", self.s.id), "name": name, "arguments": "", "status": "in_progress"})
            }
            (None, Some(_)) => {
                json!({"type": "reasoning", "id": format!("rs_{}", self.s.id), "summary": [], "content": []})
            }
            (None, None) => self.message_item(),
        };
        self.item_added(buf, 0, item);
    }

    fn token(&mut self, buf: &mut BytesMut, index: u32) {
        let thinking = self.s.reasoning.map_or(0, |r| r.tokens);
        if self.s.tool.is_none() && thinking > 0 && index == thinking {
            let item = self.message_item();
            self.item_added(buf, 1, item);
        }
        let seq = self.next_seq();
        let (kind, item, output) = match (&self.s.tool, index < thinking) {
            (Some(_), _) => ("response.function_call_arguments.delta", "fc", 0),
            (None, true) => ("response.reasoning_text.delta", "rs", 0),
            (None, false) => ("response.output_text.delta", "msg", u32::from(thinking > 0)),
        };
        let _ = write!(
            buf,
            "event: {kind}\ndata: {{\"type\":\"{kind}\",\"item_id\":\"{item}_{}\",\"output_index\":{output},\"content_index\":0,\"delta\":\"",
            self.s.id
        );
        self.s.put_token(buf, index);
        let _ = write!(buf, "\",\"sequence_number\":{seq}}}\n\n");
    }

    fn finish(&mut self, buf: &mut BytesMut, g: &super::state::Generation) {
        self.finish_tokens(buf, g.source.emitted());
    }

    fn malformed(&mut self, buf: &mut BytesMut) {
        buf.extend_from_slice(
            b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" the\n\n",
        );
    }

    fn error(&mut self, buf: &mut BytesMut, message: &str) {
        let fields = json!({"code": "server_error", "message": message, "param": null});
        self.emit(buf, "error", fields);
    }

    fn event_size_hint(&self) -> usize {
        200
    }
}

/// Anthropic's stream (see the module's notes).
struct MessagesEvents {
    s: Shape,
}

impl MessagesEvents {
    fn block_start(&self, buf: &mut BytesMut, index: u32, block: Value) {
        let fields = json!({"index": index, "content_block": block});
        event(buf, "content_block_start", fields);
    }

    /// The closing events of a stream that emitted `n` tokens.
    fn finish_tokens(&mut self, buf: &mut BytesMut, n: u32) {
        let last =
            u32::from(self.s.tool.is_none() && self.s.thinking(n) > 0 && n > self.s.thinking(n));
        self.block_stop(buf, last);
        let delta = json!({"stop_reason": self.s.stop_reason(), "stop_sequence": null});
        let fields = json!({"delta": delta, "usage": {"output_tokens": n}});
        event(buf, "message_delta", fields);
        event(buf, "message_stop", json!({}));
    }

    fn block_stop(&self, buf: &mut BytesMut, index: u32) {
        event(buf, "content_block_stop", json!({ "index": index }));
    }
}

impl EventFormat for MessagesEvents {
    fn preamble(&mut self, buf: &mut BytesMut) {
        let m = json!({"id": format!("msg_{}", self.s.id), "type": "message", "role": "assistant", "content": [], "model": self.s.model,
            "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": self.s.input_tokens, "output_tokens": 0}});
        event(buf, "message_start", json!({ "message": m }));
        let block = match (&self.s.tool, self.s.reasoning) {
            (Some(name), _) => {
                json!({"type": "tool_use", "id": format!("toolu_{}", self.s.id), "name": name, "input": {}})
            }
            (None, Some(_)) => json!({"type": "thinking", "thinking": ""}),
            (None, None) => json!({"type": "text", "text": ""}),
        };
        self.block_start(buf, 0, block);
    }

    fn token(&mut self, buf: &mut BytesMut, index: u32) {
        let thinking = self.s.reasoning.map_or(0, |r| r.tokens);
        if self.s.tool.is_none() && thinking > 0 && index == thinking {
            self.block_stop(buf, 0);
            self.block_start(buf, 1, json!({"type": "text", "text": ""}));
        }
        let block = u32::from(self.s.tool.is_none() && thinking > 0 && index >= thinking);
        let (kind, field) = match (&self.s.tool, index < thinking) {
            (Some(_), _) => ("input_json_delta", "partial_json"),
            (None, true) => ("thinking_delta", "thinking"),
            (None, false) => ("text_delta", "text"),
        };
        let _ = write!(
            buf,
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{block},\"delta\":{{\"type\":\"{kind}\",\"{field}\":\""
        );
        self.s.put_token(buf, index);
        buf.extend_from_slice(b"\"}}\n\n");
    }

    fn finish(&mut self, buf: &mut BytesMut, g: &super::state::Generation) {
        self.finish_tokens(buf, g.source.emitted());
    }

    fn malformed(&mut self, buf: &mut BytesMut) {
        buf.extend_from_slice(
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" the\n\n",
        );
    }

    fn error(&mut self, buf: &mut BytesMut, message: &str) {
        let error = json!({"type": "overloaded_error", "message": message});
        event(buf, "error", json!({ "error": error }));
    }

    fn event_size_hint(&self) -> usize {
        140
    }
}

/// An embeddings or rerank request: its texts as one prompt (the engine prefills them all),
/// run to its one step.
async fn run_batch(
    st: &SimState,
    name: Option<&str>,
    texts: &[String],
) -> Result<(super::state::Generation, String), Reject> {
    let arrival = Instant::now();
    let entry = model(st, name, Style::OpenAi)?;
    let p = Prompt::Text(texts.join("\n"));
    let mut g = st
        .begin(entry, &p, 1, true, arrival)
        .await
        .map_err(|e| begin_error(Style::OpenAi, e))?;
    g.run_to_end()
        .await
        .map_err(|e| source_error(Style::OpenAi, e))?;
    Ok((g, entry.spec.name.clone()))
}

/// A text's embedding: [`EMBED_DIM`] numbers from its hash, unit length.
pub(crate) fn vector(text: &str) -> [f32; EMBED_DIM] {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let mut x = h.finish() | 1;
    let mut v = [0f32; EMBED_DIM];
    for e in v.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *e = (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
    }
    let norm = v
        .iter()
        .map(|e| e * e)
        .sum::<f32>()
        .sqrt()
        .max(f32::MIN_POSITIVE);
    v.map(|e| e / norm)
}

fn strings(v: Option<&Value>, what: &str) -> Result<Vec<String>, BadRequest> {
    let as_text = |x: &Value| -> Option<String> {
        x.as_str()
            .or_else(|| x.get("text")?.as_str())
            .map(str::to_string)
    };
    match v {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(as_text)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| BadRequest::NotStrings(what.into())),
        _ => Err(wrong(what, "a string or a non-empty list of strings")),
    }
}

async fn embeddings(State(st): State<Arc<SimState>>, body: Bytes) -> Answer {
    let bad = |m| bad_request(Style::OpenAi, m);
    let v = json_object(&body).map_err(bad)?;
    let texts = strings(v.get("input"), "input").map_err(bad)?;
    let (mut g, name) = run_batch(&st, v.get("model").and_then(Value::as_str), &texts).await?;
    let mut out = String::with_capacity(texts.len() * EMBED_DIM * 12 + 128);
    out.push_str("{\"object\":\"list\",\"data\":[");
    for (i, t) in texts.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        let _ = write!(
            out,
            "{sep}{{\"object\":\"embedding\",\"index\":{i},\"embedding\":["
        );
        for (j, x) in vector(t).iter().enumerate() {
            let _ = write!(out, "{}{x:.6}", if j > 0 { "," } else { "" });
        }
        out.push_str("]}");
    }
    let n = g.input_tokens;
    let _ = write!(
        out,
        "],\"model\":{},\"usage\":{{\"prompt_tokens\":{n},\"total_tokens\":{n}}}}}",
        json!(name)
    );
    Ok(full_json_response(&mut g, out.into_bytes()))
}

/// Cohere/Jina (`documents`), TEI (`texts`) and NIM (`query.text`, `passages`) rerank requests,
/// each answered in its own form.
async fn rerank(State(st): State<Arc<SimState>>, req_body: Bytes) -> Answer {
    let bad = |m| bad_request(Style::OpenAi, m);
    let v = json_object(&req_body).map_err(bad)?;
    let query = v
        .get("query")
        .and_then(|q| q.as_str().or_else(|| q.get("text")?.as_str()))
        .map(str::to_string);
    let (key, docs) = ["documents", "texts", "passages"]
        .iter()
        .find_map(|k| v.get(k).map(|d| (*k, d)))
        .unzip();
    let (Some(query), Some(key)) = (query, key) else {
        return Err(error(
            Style::OpenAi,
            StatusCode::BAD_REQUEST,
            "expected 'query' and 'documents' (or 'texts', or 'passages')",
        )
        .into());
    };
    let docs = strings(docs, key).map_err(bad)?;
    let all = [std::slice::from_ref(&query), &docs].concat();
    let (mut g, name) = run_batch(&st, v.get("model").and_then(Value::as_str), &all).await?;
    let q = vector(&query);
    let mut scored: Vec<(usize, f32)> = docs
        .iter()
        .map(|d| vector(d).iter().zip(&q).map(|(a, b)| a * b).sum())
        .enumerate()
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let n = g.input_tokens;
    let usage = json!({"prompt_tokens": n, "total_tokens": n});
    let body = match key {
        "texts" => json!(
            scored
                .iter()
                .map(|(i, s)| json!({"index": i, "score": s}))
                .collect::<Vec<_>>()
        ),
        "passages" => {
            json!({"rankings": scored.iter().map(|(i, s)| json!({"index": i, "logit": s})).collect::<Vec<_>>(), "usage": usage})
        }
        _ => json!({"id": format!("rerank-{}", st.next_id()), "model": name, "usage": usage,
            "results": scored.iter().map(|(i, s)| json!({"index": i, "relevance_score": s})).collect::<Vec<_>>()}),
    };
    Ok(full_json_response(&mut g, body.to_string().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result answering a call made before it passes in each form; one answering an id no
    /// earlier item made, or made only after it, is refused naming its item and id.
    #[test]
    fn tool_results_must_answer_an_earlier_call() {
        let chat = json!([{"role": "user", "content": "u"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"}]);
        let responses = json!([{"type": "function_call", "call_id": "c1", "name": "g"},
            {"type": "function_call_output", "call_id": "c1", "output": "r"}]);
        let messages = json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "c1"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]}]);
        for (v, form) in [
            (chat, ToolForm::Chat),
            (responses, ToolForm::Responses),
            (messages, ToolForm::Messages),
        ] {
            let items = v.as_array().unwrap();
            assert!(check_tool_results(items, form).is_ok(), "{form:?}");
            let last = items.len() - 1;
            let mut wrong = items.clone();
            let bad = wrong[last].to_string().replace("\"c1\"", "\"c2\"");
            wrong[last] = serde_json::from_str(&bad).unwrap();
            let e = check_tool_results(&wrong, form).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "item {last} answers tool call 'c2', which no earlier assistant message made"
                )
            );
            let mut late = items.clone();
            late.swap(last - 1, last);
            assert!(
                check_tool_results(&late, form).is_err(),
                "{form:?}: answered before the call"
            );
        }
    }

    #[test]
    fn tools_decided_per_choice() {
        let with = |choice: Value| json!({"tools": [{"type": "function", "function": {"name": "a"}}, {"name": "b"}], "tool_choice": choice});
        for (choice, want) in [
            (json!("required"), Some("a")),
            (json!({"type": "any"}), Some("a")),
            (json!("none"), None),
            (json!({"type": "none"}), None),
            (json!({"type": "tool", "name": "b"}), Some("b")),
            (
                json!({"type": "function", "function": {"name": "b"}}),
                Some("b"),
            ),
        ] {
            let got = decide_tool(&with(choice.clone()), "x");
            assert_eq!(got.as_deref(), want, "{choice}");
        }
        let auto: usize = (0..200)
            .filter(|i| decide_tool(&with(json!("auto")), &format!("p{i}")).is_some())
            .count();
        assert!((60..140).contains(&auto), "about half: {auto}");
        assert_eq!(decide_tool(&json!({"tool_choice": "required"}), "x"), None);
    }

    #[test]
    fn tool_arguments_are_json_piece_by_piece() {
        for n in [1, 2, 5] {
            let args = tool_arguments(n);
            let v: Value = serde_json::from_str(&args).unwrap();
            assert!(v["query"].is_string(), "{args}");
            let mut escaped = String::new();
            for i in 0..n {
                tool_piece(&mut escaped, i, n, true);
            }
            let unescaped: String = serde_json::from_str(&format!("\"{escaped}\"")).unwrap();
            assert_eq!(unescaped, args);
        }
    }

    #[test]
    fn image_tokens_from_headers() {
        let img =
            crate::workload::images::draw(56, 30, crate::workload::images::ImageFormat::Png, 1);
        assert_eq!(image_tokens(&img.bytes).unwrap(), 4);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&img.bytes);
        let mut text = String::new();
        let parts = json!([{"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{b64}")}},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{b64}")},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}]);
        assert_eq!(content(&parts, &mut text).unwrap(), 12);
        assert_eq!(text, "hi");
        let bad = json!([{"type": "image", "source": {"data": "aGVsbG8="}}]);
        assert!(
            content(&bad, &mut text)
                .unwrap_err()
                .to_string()
                .contains("not a PNG or JPEG")
        );
    }

    /// The events of a 4-token stream in format `f`, finished by `finish` (no engine behind it).
    fn four_tokens<F: EventFormat>(mut f: F, finish: fn(&mut F, &mut BytesMut, u32)) -> String {
        let mut buf = BytesMut::new();
        f.preamble(&mut buf);
        for i in 0..4 {
            f.token(&mut buf, i);
        }
        finish(&mut f, &mut buf, 4);
        String::from_utf8(buf.to_vec()).unwrap()
    }

    #[test]
    fn event_sequences_parse() {
        let shape = |tool: Option<&str>, reasoning: Option<ReasoningSpec>| Shape {
            id: 7,
            model: "m".into(),
            input_tokens: 3,
            max_tokens: 4,
            reasoning,
            tool: tool.map(str::to_string),
        };
        let r = Some(ReasoningSpec {
            tokens: 2,
            field: super::super::models::ReasoningField::Reasoning,
        });
        for (tool, reasoning) in [(None, None), (Some("f"), None), (None, r)] {
            let responses = ResponsesEvents {
                s: shape(tool, reasoning),
                seq: 0,
            };
            let messages = MessagesEvents {
                s: shape(tool, reasoning),
            };
            for text in [
                four_tokens(responses, ResponsesEvents::finish_tokens),
                four_tokens(messages, MessagesEvents::finish_tokens),
            ] {
                let mut out = String::new();
                let mut reader = crate::client::events::EventReader::new();
                for line in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    reader.read(line.as_bytes(), &mut out).expect(line);
                }
                match tool {
                    Some(_) => assert_eq!(out, tool_arguments(4), "{text}"),
                    None => assert_eq!(out, tokens::text(4), "{text}"),
                }
                if tool.is_some() {
                    assert_eq!(reader.tools().summarize(&out), (1, true));
                }
            }
        }
    }
}
