//! HTTP response bodies that stream tokens as server-sent events, shared by the KServe
//! `generate_stream` route and the OpenAI routes, which differ only in how one event looks.
//!
//! The body is a hand-written `Stream` rather than a channel fed by a task: hyper polls it
//! directly, each poll hands over whatever the engine has produced, and nothing is spawned or
//! allocated per token. Events are written into one `BytesMut` block and split off as `Bytes`
//! that share that block, so a stream allocates once per few kilobytes of events.
//! Faults apply here: a malformed event halfway, or an aborted body (the client sees a chunked
//! body that never terminates properly) after half of the tokens.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};

use super::metrics::FailReason;
use super::state::Generation;

/// How one protocol writes its events.
pub(crate) trait EventFormat: Send + Unpin + 'static {
    /// Events before the first token (OpenAI chat: the role-only chunk).
    fn preamble(&mut self, _buf: &mut BytesMut) {}
    /// The event carrying token `index`.
    fn token(&mut self, buf: &mut BytesMut, index: u32);
    /// A precomputed shared event for token `index`, when the format has one.
    fn shared_token(&self, _index: u32) -> Option<Bytes> {
        None
    }
    /// Events after the last token (finish reason, usage, `[DONE]`) of `generation`, whose
    /// every token has been produced.
    fn finish(&mut self, _buf: &mut BytesMut, _generation: &Generation) {}
    /// An event whose JSON is cut off (malformed fault).
    fn malformed(&mut self, buf: &mut BytesMut);
    /// An error event in the middle of a stream.
    fn error(&mut self, buf: &mut BytesMut, message: &str);
    /// Rough size of one token event, to size the buffer.
    fn event_size_hint(&self) -> usize;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Preamble,
    Tokens,
    Finishing,
    Done,
}

/// An SSE body driven by a [`Generation`].
pub(crate) struct SseBody<F: EventFormat> {
    generation: Generation,
    format: F,
    buf: BytesMut,
    block: usize,
    phase: Phase,
    cut_after: Option<u32>,
    malformed_at: Option<u32>,
    /// Armed when the cut point is reached: the body errors once it fires.
    cut_timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Pause between the last event before a cut and the abort. hyper drops its write buffer when a
/// body fails, so without it an instant-mode stream would be cut before its first half left.
pub(crate) const CUT_FLUSH_DELAY: Duration = Duration::from_millis(5);

impl<F: EventFormat> SseBody<F> {
    /// A body streaming `generation` in `format`.
    pub(crate) fn new(generation: Generation, format: F) -> Self {
        let max = generation.source.max_tokens();
        let half = max / 2;
        let plan = generation.plan;
        // One block holds a few dozen events: big enough to amortize the allocation, small
        // enough that 10 000 concurrent streams do not pin much memory.
        let block = (format.event_size_hint() * (max as usize + 3).min(24)).clamp(256, 8 * 1024);
        SseBody {
            cut_after: plan.cut.then_some(half),
            malformed_at: plan.malformed.then_some(half),
            generation,
            format,
            buf: BytesMut::new(),
            block,
            phase: Phase::Preamble,
            cut_timer: None,
        }
    }

    /// The streaming response: 200, `text/event-stream`.
    pub(crate) fn into_response(self) -> Response {
        let headers = [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ];
        (headers, Body::from_stream(self)).into_response()
    }

    fn reserve(&mut self) {
        if self.buf.capacity() - self.buf.len() < self.format.event_size_hint() + 64 {
            self.buf.reserve(self.block);
        }
    }

    fn take(&mut self) -> Bytes {
        self.buf.split().freeze()
    }
}

impl<F: EventFormat> Stream for SseBody<F> {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match this.phase {
                Phase::Preamble => {
                    this.phase = Phase::Tokens;
                    this.reserve();
                    this.format.preamble(&mut this.buf);
                    if !this.buf.is_empty() {
                        return Poll::Ready(Some(Ok(this.take())));
                    }
                }
                Phase::Tokens => {
                    let emitted = this.generation.source.emitted();
                    if this.malformed_at == Some(emitted) {
                        this.malformed_at = None;
                        this.reserve();
                        this.format.malformed(&mut this.buf);
                        return Poll::Ready(Some(Ok(this.take())));
                    }
                    if this.cut_after.is_some_and(|k| emitted >= k) {
                        let timer = this
                            .cut_timer
                            .get_or_insert_with(|| Box::pin(tokio::time::sleep(CUT_FLUSH_DELAY)));
                        if timer.as_mut().poll(cx).is_pending() {
                            return Poll::Pending;
                        }
                        this.phase = Phase::Done;
                        this.generation.tracker.fail(FailReason::Backend);
                        // An error from the body makes hyper abort the response mid-body.
                        return Poll::Ready(Some(Err(std::io::Error::other(
                            "stream cut by fault injection (cut_rate)",
                        ))));
                    }
                    match this.generation.source.poll_token(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Some(Ok(i))) => {
                            let chunk = match this.format.shared_token(i) {
                                Some(b) => b,
                                None => {
                                    this.reserve();
                                    this.format.token(&mut this.buf, i);
                                    this.take()
                                }
                            };
                            this.generation.tracker.first_response();
                            return Poll::Ready(Some(Ok(chunk)));
                        }
                        Poll::Ready(Some(Err(e))) => {
                            this.phase = Phase::Done;
                            this.generation.tracker.fail(e.into());
                            this.reserve();
                            this.format.error(&mut this.buf, &e.to_string());
                            return Poll::Ready(Some(Ok(this.take())));
                        }
                        Poll::Ready(None) => this.phase = Phase::Finishing,
                    }
                }
                Phase::Finishing => {
                    this.phase = Phase::Done;
                    this.reserve();
                    this.format.finish(&mut this.buf, &this.generation);
                    this.generation.succeed();
                    if !this.buf.is_empty() {
                        return Poll::Ready(Some(Ok(this.take())));
                    }
                }
                Phase::Done => return Poll::Ready(None),
            }
        }
    }
}

/// A complete (non-streaming) JSON answer, with the stream faults translated: a cut sends the
/// first half of the body and then aborts it; a malformed answer is truncated JSON.
pub(crate) fn full_json_response(generation: &mut Generation, body: Vec<u8>) -> Response {
    let plan = generation.plan;
    if plan.cut {
        generation.tracker.fail(FailReason::Backend);
        let body = Bytes::from(body);
        let first = body.slice(..body.len() / 2);
        let cut = futures_util::stream::once(async {
            tokio::time::sleep(CUT_FLUSH_DELAY).await;
            Err(std::io::Error::other(
                "response cut by fault injection (cut_rate)",
            ))
        });
        let parts = futures_util::stream::iter([Ok(first)]).chain(cut);
        return json_answer(StatusCode::OK, Body::from_stream(parts));
    }
    generation.succeed();
    let mut body = body;
    if plan.malformed {
        body.truncate(body.len() / 2);
    }
    json_answer(StatusCode::OK, body)
}

/// An answer with `status` and a JSON `body`.
pub(crate) fn json_answer(status: StatusCode, body: impl Into<Body>) -> Response {
    let json = [(header::CONTENT_TYPE, "application/json")];
    (status, json, body.into()).into_response()
}

/// An early-exit HTTP answer, for `?` in handlers. Boxed: a `Response` is large, and these
/// paths run once per request at most.
#[derive(Debug)]
pub(crate) struct Reject(Box<Response>);

/// A handler's answer: the response, or the error answer it stopped at.
pub(crate) type Answer = Result<Response, Reject>;

impl From<Response> for Reject {
    fn from(r: Response) -> Self {
        Reject(Box::new(r))
    }
}

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        *self.0
    }
}

/// A JSON error body `{"error": message}` (KServe's shape).
pub(crate) fn kserve_error(status: StatusCode, message: &str) -> Response {
    json_answer(status, serde_json::json!({ "error": message }).to_string())
}
