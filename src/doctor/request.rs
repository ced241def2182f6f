//! doctor's last step: one streamed request sent through exactly the code a profile of the
//! endpoint uses — the session `profile` prepares (discovery, the request built from the same
//! plan) and the same client (`Client::prepare` + `Client::execute`, the direct HTTP/1.1 client or
//! the gRPC stream) — with every response kept as it arrived (the raw export's capture) and shown
//! with its arrival time and text. So a request that works here works there.

use std::time::Duration;

use super::{BIND_FIX, KEY_FIX, NOT_DECOUPLED_FIX, SHOWN_EVENTS, Step};
use crate::client::{Capture, Exchange};
use crate::load::Interrupt;
use crate::plan::RunPlan;
use crate::record::{ErrorKind, RequestError};
use crate::target::Api;

/// How long the streamed request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Sends the plan's first request and judges what came back.
pub(super) async fn request(plan: &RunPlan) -> Step {
    let t = &plan.target;
    let step = Step::new(
        "request",
        match t.api {
            Api::Kserve => "one streamed request (ModelStreamInfer)".to_string(),
            a if !a.generates() => format!("one request (POST {})", t.endpoint_url()),
            _ => format!("one streamed request (POST {})", t.endpoint_url()),
        },
    );
    let session = match crate::engine::session::prepare_llm(plan, Interrupt::new(), None).await {
        Ok(s) => s,
        Err(e) => {
            return step.fail(
                e.to_string(),
                "fix what it names: the request is built as profile builds it",
            );
        }
    };
    let shared = &session.shared;
    let entry = shared.dataset.entry(0);
    let mut ex = Exchange::new();
    ex.capture = Some(Capture::default());
    ex.reset();
    // Embeddings and rankings: the answer must hold one vector or score per input sent.
    ex.expect_inputs = entry.sent.inputs;
    let clock = shared.clock;
    let sent_ns = match tokio::time::timeout(REQUEST_TIMEOUT, shared.client.prepare(&mut ex)).await
    {
        Ok(Ok(())) => clock.now_ns(),
        Ok(Err(e)) => return failed(step, Some(e), Vec::new()),
        Err(_) => return failed(step, None, Vec::new()),
    };
    let sent = tokio::time::timeout(
        REQUEST_TIMEOUT,
        shared.client.execute(&entry.payload, &mut ex, &clock),
    )
    .await;
    let events = ex
        .capture
        .as_ref()
        .map_or_else(Vec::new, |c| events_of(c, sent_ns, t.api));
    match sent {
        Ok(Ok(())) if !t.api.generates() => judge_answer(step, &ex, events, entry.sent.inputs),
        Ok(Ok(())) => judge(step, events, false),
        Ok(Err(e)) => failed(step, Some(e), events),
        Err(_) => failed(step, None, events),
    }
}

/// Each captured response as an event: its time since the send and its text.
fn events_of(c: &Capture, sent_ns: u64, api: Api) -> Vec<Event> {
    c.iter()
        .map(|(t, r)| {
            let data = &*r.whole();
            let at_ms = t.saturating_sub(sent_ns) as f64 / 1e6;
            let (text, note) = match api {
                Api::Kserve => grpc_event(data),
                Api::Embeddings => (String::new(), "the answer: vectors"),
                Api::Rankings => (String::new(), "the answer: scores"),
                _ => http_event(data),
            };
            Event { at_ms, text, note }
        })
        .collect()
}

/// An SSE event's data (or a whole JSON body): its text, or what it was instead.
fn http_event(data: &[u8]) -> (String, &'static str) {
    let mut text = String::new();
    let note = if data == b"[DONE]" {
        "[DONE]"
    } else {
        match crate::client::events::parse_event(data, &mut text) {
            Ok(i) if i.error.is_some() => "error in event",
            Ok(i) if i.completion_tokens.is_some() => "usage",
            Ok(_) => "no text: role, final or empty",
            Err(_) => "not JSON",
        }
    };
    (text, note)
}

/// A `ModelStreamInferResponse` as received: its text, or what it was instead.
fn grpc_event(data: &[u8]) -> (String, &'static str) {
    use prost::Message;
    match crate::proto::ModelStreamInferResponse::decode(data) {
        Ok(m) if !m.error_message.is_empty() => (m.error_message, "error in response"),
        Ok(m) => {
            let (text, fin) = stream_text(m.infer_response.as_ref());
            (text, if fin { "final response" } else { "no text" })
        }
        Err(_) => (String::new(), "not a ModelStreamInferResponse"),
    }
}

/// A failed request (or one that timed out: `None`) as the step's failure, with the fix its kind
/// calls for and the events that did arrive.
fn failed(step: Step, e: Option<RequestError>, events: Vec<Event>) -> Step {
    let lines = event_lines(&events);
    let Some(e) = e else {
        return step.with_lines(lines).fail(
            format!("no complete response within {}s", REQUEST_TIMEOUT.as_secs()),
            "the server stalls: see its log",
        );
    };
    let detail = e.message.to_string();
    let step = step.with_lines(lines);
    match e.kind {
        ErrorKind::NotStreaming => step.fail(
            format!("the endpoint answered with one JSON body instead of a stream ({detail}): there is no time to first token"),
            "use the streaming endpoint: pass --streaming to profile (Triton HTTP: v2/models/MODEL/generate_stream, not .../generate; OpenAI: \"stream\": true), and drop a custom --endpoint that points at a non-streaming route",
        ),
        ErrorKind::HttpStatus(401 | 403) => step.fail(detail, KEY_FIX),
        ErrorKind::HttpStatus(400 | 404) => step.fail(
            detail,
            "check the model name (-m) and the endpoint (--endpoint-type, --endpoint): the route or model does not exist on this server",
        ),
        ErrorKind::HttpStatus(429 | 503) | ErrorKind::RateLimited => step.fail(detail, OVERLOADED_FIX),
        ErrorKind::GrpcStatus(code) => grpc_failure(step, code, detail),
        ErrorKind::Connect | ErrorKind::ConnectRefused | ErrorKind::ConnectionReset => {
            step.fail(detail, BIND_FIX)
        }
        ErrorKind::StreamCut | ErrorKind::StreamReset | ErrorKind::GoAway => step.fail(
            format!("the stream broke off after {} events: {detail}", events.len()),
            "the server or a proxy cut the response: see the server's log and any proxy timeouts",
        ),
        ErrorKind::ServerError => step.fail(
            format!("the server reported an error: {detail}"),
            "see the server's log; check the inputs doctor listed against --backend and --extra-inputs",
        ),
        _ => step.fail(detail, "see the server's log"),
    }
}

const OVERLOADED_FIX: &str = "the server is up but refuses inference (overloaded, queue full, or the model is not ready): check the model's readiness (/v2/models/MODEL/ready) and the server's log, raise its queue limits, or retry when it has capacity";

/// A gRPC status code (tonic's numbering) as the step's failure.
fn grpc_failure(step: Step, code: i32, detail: String) -> Step {
    let detail = format!("{}: {detail}", crate::record::grpc_code_name(code));
    match tonic::Code::from_i32(code) {
        tonic::Code::Unavailable | tonic::Code::ResourceExhausted => {
            step.fail(detail, OVERLOADED_FIX)
        }
        tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => step.fail(detail, KEY_FIX),
        tonic::Code::InvalidArgument => step.fail(
            detail,
            "the model rejected the request's inputs: check --backend (tensorrtllm or vllm layout) and --extra-inputs against the inputs listed above",
        ),
        _ => step.fail(detail, "see the server's log"),
    }
}

/// One arrival during the streamed request.
struct Event {
    at_ms: f64,
    text: String,
    note: &'static str,
}

fn event_lines(events: &[Event]) -> Vec<String> {
    let mut lines: Vec<String> = events
        .iter()
        .take(SHOWN_EVENTS)
        .enumerate()
        .map(|(i, e)| {
            let shown = if e.text.is_empty() {
                format!("({})", e.note)
            } else {
                let t: String = e.text.chars().take(60).collect();
                format!("{t:?}")
            };
            format!(
                "{:>10} ms  event {:>3}: {shown}",
                format!("+{:.1}", e.at_ms),
                i + 1
            )
        })
        .collect();
    if events.len() > SHOWN_EVENTS {
        lines.push(format!(
            "... {} more events, the last at +{:.1} ms",
            events.len() - SHOWN_EVENTS,
            events.last().map_or(0.0, |e| e.at_ms)
        ));
    }
    lines
}

/// Judges an embeddings or rankings answer: the client checked it as a profile does (one
/// vector or score per input, finite, one dimension), so arriving here it passed.
fn judge_answer(step: Step, ex: &Exchange, events: Vec<Event>, inputs: u32) -> Step {
    let at_ms = events.last().map_or(0.0, |e| e.at_ms);
    let lines = event_lines(&events);
    let tokens = ex.prompt_tokens.map_or_else(String::new, |n| {
        format!(", {n} input tokens by the server's count")
    });
    step.with_lines(lines).ok(format!(
        "one answer for {} at +{at_ms:.1} ms{tokens}",
        crate::analysis::text::count(u64::from(inputs.max(1)), "input")
    ))
}

/// Judges the events of the request: several text-bearing events are a stream.
fn judge(step: Step, events: Vec<Event>, one_body: bool) -> Step {
    let content: Vec<&Event> = events.iter().filter(|e| !e.text.is_empty()).collect();
    let lines = event_lines(&events);
    let step = if one_body {
        step.fail(
            format!(
                "the endpoint answered with one JSON body instead of a stream ({} bytes of text at +{:.1} ms): there is no time to first token",
                content.first().map_or(0, |e| e.text.len()),
                events.last().map_or(0.0, |e| e.at_ms)
            ),
            "use the streaming endpoint: pass --streaming to profile (Triton HTTP: v2/models/MODEL/generate_stream, not .../generate; OpenAI: \"stream\": true), and drop a custom --endpoint that points at a non-streaming route",
        )
    } else {
        match content.as_slice() {
            [] => step.fail(
                format!("{} events, none carried text", events.len()),
                "the model produced no output text: check its output tensor (text_output) and max tokens, and the server's log",
            ),
            [only] => step.fail(
                format!(
                    "only one event carried text (at +{:.1} ms): TTFT equals the whole latency",
                    only.at_ms
                ),
                NOT_DECOUPLED_FIX,
            ),
            [first, .., last] => step.ok(format!(
                "{} events, {} with text; first token at +{:.1} ms, last at +{:.1} ms",
                events.len(),
                content.len(),
                first.at_ms,
                last.at_ms
            )),
        }
    };
    step.with_lines(lines)
}

/// The text of a stream response (its `text_output` tensor, or its only output) and whether it is
/// the final response (`triton_final_response`; a response without it is final, as in Triton's
/// own client).
fn stream_text(r: Option<&crate::proto::ModelInferResponse>) -> (String, bool) {
    use crate::proto::infer_parameter::ParameterChoice;
    let Some(r) = r else {
        return (String::new(), true);
    };
    let fin = match r
        .parameters
        .get("triton_final_response")
        .and_then(|p| p.parameter_choice.as_ref())
    {
        Some(ParameterChoice::BoolParam(b)) => *b,
        _ => true,
    };
    let idx = r
        .outputs
        .iter()
        .position(|o| o.name == "text_output")
        .or((r.outputs.len() == 1).then_some(0));
    let mut text = String::new();
    if let Some(i) = idx {
        if let Some(raw) = r.raw_output_contents.get(i) {
            for e in crate::workload::tensor::bytes_elements(raw) {
                text.push_str(&String::from_utf8_lossy(e));
            }
        } else if let Some(c) = r.outputs[i].contents.as_ref() {
            for b in &c.bytes_contents {
                text.push_str(&String::from_utf8_lossy(b));
            }
        }
    }
    (text, fin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn ev(at_ms: f64, text: &str) -> Event {
        Event {
            at_ms,
            text: text.into(),
            note: "no text: role, final or empty",
        }
    }

    #[test]
    fn judging_the_events() {
        let s = || Step::new("request", "one streamed request");
        let ok = judge(
            s(),
            vec![ev(12.0, " the"), ev(15.5, " of"), ev(15.6, "")],
            false,
        );
        assert_eq!(ok.status, Status::Ok);
        assert_eq!(
            ok.detail,
            "3 events, 2 with text; first token at +12.0 ms, last at +15.5 ms"
        );
        assert_eq!(
            ok.lines,
            [
                "     +12.0 ms  event   1: \" the\"",
                "     +15.5 ms  event   2: \" of\"",
                "     +15.6 ms  event   3: (no text: role, final or empty)"
            ]
        );
        let one = judge(s(), vec![ev(80.0, "all of it"), ev(80.1, "")], false);
        assert_eq!(one.status, Status::Fail);
        assert!(one.detail.starts_with("only one event carried text"));
        assert_eq!(one.fix.as_deref(), Some(NOT_DECOUPLED_FIX));
        let none = judge(s(), vec![ev(5.0, "")], false);
        assert!(none.detail.contains("none carried text"));
        let body = judge(s(), vec![ev(90.0, "whole answer")], true);
        assert!(
            body.detail
                .starts_with("the endpoint answered with one JSON body")
        );
        let many: Vec<Event> = (0..25).map(|i| ev(f64::from(i), "x")).collect();
        let st = judge(s(), many, false);
        assert_eq!(st.lines.len(), SHOWN_EVENTS + 1);
        assert_eq!(
            st.lines[SHOWN_EVENTS],
            "... 5 more events, the last at +24.0 ms"
        );
    }

    #[test]
    fn stream_response_text_and_final_flag() {
        use crate::proto::model_infer_response::InferOutputTensor;
        use crate::proto::{InferParameter, ModelInferResponse, infer_parameter::ParameterChoice};
        use crate::workload::tensor::encode_bytes_elements;
        let mut r = ModelInferResponse {
            outputs: vec![InferOutputTensor {
                name: "text_output".into(),
                datatype: "BYTES".into(),
                ..Default::default()
            }],
            raw_output_contents: vec![encode_bytes_elements([&b" hello"[..], b" world"])],
            ..Default::default()
        };
        r.parameters.insert(
            "triton_final_response".into(),
            InferParameter {
                parameter_choice: Some(ParameterChoice::BoolParam(false)),
            },
        );
        assert_eq!(stream_text(Some(&r)), (" hello world".to_string(), false));
        r.parameters.clear();
        r.raw_output_contents.clear();
        assert_eq!(stream_text(Some(&r)), (String::new(), true));
        assert_eq!(stream_text(None), (String::new(), true));
    }
}
