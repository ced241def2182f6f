//! What a real engine's server says beside its OpenAI routes, in the simulator's metrics style:
//! llama.cpp's per-response `timings` and its `GET /slots`, and `POST /tokenize` as vLLM answers
//! it (`{"model", "prompt"}` or `{"model", "messages", "add_generation_prompt"}` →
//! `{"count", "max_model_len", "tokens", "token_strs"}`) or as llama.cpp does (`{"content"}` →
//! `{"tokens"}`, and `{"tokens": []}` for any other body, as the real one answers).
//!
//! `timings` (llama.cpp's `server_slot_stats::to_json`): `cache_n` (prompt tokens found in the
//! prefix cache), `prompt_n` (the others, at least one: llama.cpp always evaluates one),
//! `prompt_ms` (admitted to a slot → first token produced), `predicted_n`, `predicted_ms`
//! (first → last token produced), and the per-token and per-second rates derived from them.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::state::{Generation, SimState};
use crate::server_metrics::ServerKind;

/// The `timings` object of a request whose tokens have all been produced.
pub(crate) fn timings(g: &Generation) -> Value {
    let src = &g.source;
    let ms = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
        (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64() * 1e3,
        _ => 0.0,
    };
    let first = src.first_token_at();
    let prompt_ms = ms(src.admitted_at(), first);
    // The engine marks the sequence done just after publishing its last token.
    let predicted_ms = ms(first, src.last_token_at().or_else(|| Some(Instant::now())));
    let cached = src.cached_tokens().min(g.input_tokens);
    let prompt_n = (g.input_tokens - cached).max(1);
    let predicted_n = src.emitted();
    let per_token = |ms: f64, n: u32| if n > 0 { ms / f64::from(n) } else { 0.0 };
    let per_second = |ms: f64, n: u32| {
        if ms > 0.0 {
            1e3 / ms * f64::from(n)
        } else {
            0.0
        }
    };
    json!({
        "cache_n": cached,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": per_token(prompt_ms, prompt_n),
        "prompt_per_second": per_second(prompt_ms, prompt_n),
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": per_token(predicted_ms, predicted_n.saturating_sub(1)),
        "predicted_per_second": per_second(predicted_ms, predicted_n.saturating_sub(1)),
    })
}

/// A JSON answer.
fn json_body(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        v.to_string(),
    )
        .into_response()
}

/// The 404 of a route the style's engine does not have.
fn absent() -> Response {
    json_body(StatusCode::NOT_FOUND, &json!({"detail": "Not Found"}))
}

/// `GET /slots` (llama.cpp style): one object a batch slot of the first text model, the first
/// `running` of them processing.
pub(crate) async fn slots(State(st): State<Arc<SimState>>) -> Response {
    if st.metrics_style != ServerKind::LlamaCpp {
        return absent();
    }
    let Some(m) = st.models.iter().find(|m| m.is_llm()) else {
        return json_body(StatusCode::OK, &json!([]));
    };
    let e = &m.metrics.engine;
    let n = super::counters::get(&e.max_batch).max(1);
    let running = m.metrics.running_now();
    let slots: Vec<Value> = (0..n)
        .map(|id| json!({"id": id, "n_ctx": 4096, "speculative": false, "is_processing": id < running}))
        .collect();
    json_body(StatusCode::OK, &Value::Array(slots))
}

/// `POST /tokenize`, as the style's engine answers it (vLLM, llama.cpp; 404 otherwise).
pub(crate) async fn tokenize(State(st): State<Arc<SimState>>, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        let error = json!({"error": "the body is not JSON"});
        return json_body(StatusCode::BAD_REQUEST, &error);
    };
    match st.metrics_style {
        ServerKind::Vllm => vllm_tokenize(&st, &v),
        ServerKind::LlamaCpp => {
            let content = v.get("content").and_then(Value::as_str);
            let tokens = content.map(|text| st.encode(text)).unwrap_or_default();
            json_body(StatusCode::OK, &json!({"tokens": tokens}))
        }
        _ => absent(),
    }
}

/// vLLM's answer: the prompt's tokens, or the messages' contents' (the simulator has no chat
/// template: its usage counts the contents too).
fn vllm_tokenize(st: &SimState, v: &Value) -> Response {
    let text = match (v.get("prompt"), v.get("messages")) {
        (Some(Value::String(p)), _) => p.clone(),
        (_, Some(Value::Array(messages))) => messages
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .collect(),
        _ => {
            let error = json!({"error": {"message": "give 'prompt' (a string) or 'messages'", "type": "BadRequestError", "code": 400}});
            return json_body(StatusCode::BAD_REQUEST, &error);
        }
    };
    let tokens = st.encode(&text);
    let body =
        json!({"count": tokens.len(), "max_model_len": 4096, "tokens": tokens, "token_strs": null});
    json_body(StatusCode::OK, &body)
}
