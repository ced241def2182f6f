//! How to talk to the server: one client per protocol, all filling the same per-request
//! [`Exchange`] with byte-arrival timestamps.
//!
//! Timestamps are taken when the transport hands over bytes, before any JSON or protobuf is
//! decoded; events that arrive in one read share that read's timestamp.

// Vocabulary (`record::capture`): the raw export reads captures without the client.
pub use crate::record::capture::Capture;
pub use crate::workload::Payload;
// Vocabulary (`error`): the server view formats its errors the same way.
pub use crate::error::error_chain;

pub mod batch;
pub mod discovery;
pub mod events;
pub mod failure;
pub mod grpc;
pub mod grpc_conn;
pub mod h1;
pub mod http;
pub mod request_id;
mod seed;
pub mod sse;
pub mod tls;
pub mod tokenize;
pub mod wire;
pub mod wrong_port;

use crate::record::capture::ResponseForm;
use crate::record::{Clock, RequestError};
use crate::target::{Api, Target};

pub use grpc::GrpcClient;
pub use http::HttpClient;

/// What the server sent back for one request, filled while the response streams in. A worker owns
/// one and reuses it, so its buffers are allocated once, not per request or per token.
#[derive(Debug, Default)]
pub struct Exchange {
    /// When the request's bytes were fully encoded into the transport.
    pub send_done_ns: Option<u64>,
    /// First response byte (response headers count).
    pub first_byte_ns: Option<u64>,
    /// First content-bearing response.
    pub first_token_ns: Option<u64>,
    /// Second content-bearing response.
    pub second_token_ns: Option<u64>,
    /// First response carrying answer text (anything but reasoning): a reasoning model's first
    /// output token. Set for every response shape; it means something only when
    /// `reasoning_end > 0`.
    pub first_output_token_ns: Option<u64>,
    /// Where the reasoning ends in `text` (0: the response had no reasoning). Servers stream a
    /// model's reasoning before its answer, so the reasoning is the prefix `text[..reasoning_end]`
    /// and is counted there by the tokenizer, off the hot path, without a second buffer or a copy
    /// per token: the end of the reasoning text of the last event that carried some (an event with
    /// both is taken as reasoning first, answer after). Answer text a server sent between two
    /// reasoning events would count as reasoning; no server interleaves them.
    pub reasoning_end: usize,
    /// Latest content-bearing response.
    pub last_token_ns: Option<u64>,
    /// First response carrying tool-call argument text.
    pub first_tool_token_ns: Option<u64>,
    /// Inputs the request sent (embeddings' texts, rankings' passages): the answer must hold
    /// one vector or score each. 0 for generative requests. Set by the caller after
    /// [`Exchange::reset`].
    pub expect_inputs: u32,
    /// Content-bearing responses.
    pub chunks: u32,
    /// All responses/events, including empty, role-only and usage-only ones.
    pub responses: u32,
    /// Concatenated output text (what the tokenizer counts).
    pub text: String,
    /// Gaps between consecutive content-bearing responses (ns).
    pub gaps: Vec<u64>,
    /// Server-reported output tokens (usage), when it reported them.
    pub completion_tokens: Option<u32>,
    /// Server-reported input tokens (usage), when it reported them.
    pub prompt_tokens: Option<u32>,
    /// Server-reported reasoning tokens (usage's `completion_tokens_details.reasoning_tokens`),
    /// when it reported them.
    pub reasoning_tokens: Option<u32>,
    /// The server's own timings of the request (llama.cpp's `timings`), when it sent them.
    pub timings: Option<crate::record::ServerTimings>,
    /// How long the server asked the client to wait before the next request (`Retry-After`,
    /// gRPC retry pushback), when a failed response said so.
    pub retry_after: Option<std::time::Duration>,
    /// The output text held invalid UTF-8 and was kept with U+FFFD in its place.
    pub lossy_text: bool,
    pub(crate) sse: sse::SseParser,
    /// Reads each event's JSON, remembering the shape of the stream's token events.
    pub(crate) events: events::EventReader,
    /// Reads each gRPC stream response, remembering the shape of the stream's token responses.
    pub(crate) responses_shape: wire::StreamShape,
    /// The worker's direct HTTP/1.1 connection, kept between requests.
    pub(crate) h1: Option<h1::H1Conn>,
    /// Whether the request went out on a connection that had already served one (HTTP/1.1;
    /// `None` elsewhere).
    pub connection_reused: Option<bool>,
    /// It failed on a reused connection before any response byte arrived: the server had most
    /// likely closed it, and it may be sent once more on a fresh one.
    pub stale_connection: bool,
    /// The worker's own HTTP/2 connection for gRPC calls, kept between requests.
    pub(crate) grpc: Option<grpc_conn::GrpcConn>,
    /// Request-writing buffer, reused.
    pub(crate) scratch: Vec<u8>,
    /// Whole-body buffer, reused.
    pub(crate) body: Vec<u8>,
    /// Every response as received, for the raw export (`profile_export.json`); `None` when the
    /// run does not write one, so the hot path pays one branch per response.
    pub capture: Option<Capture>,
    /// How requests name themselves (set once per worker; `None`: gRPC sends a bare counter,
    /// HTTP no header).
    pub ids: Option<std::sync::Arc<request_id::RequestIds>>,
    /// This request's sequence number (its id's tail).
    pub seq: u64,
    /// The session-affinity header line (`Name: value\r\n`) of the session whose requests go
    /// through this exchange (`None`: requests that stand alone, or `--session-header none`).
    pub session_header: Option<Box<[u8]>>,
}

impl Exchange {
    /// A fresh exchange. Buffers start empty and grow to the largest response seen, then stay:
    /// idle workers of a large open-loop pool cost almost nothing.
    pub fn new() -> Exchange {
        Exchange::default()
    }

    /// Gives up the worker's connections after a request that timed out: a server that let a
    /// call run past the timeout may have stopped answering on that connection as a whole, so the
    /// next request starts on a fresh one. (A deliberately cancelled gRPC call keeps its
    /// connection: only its stream is reset.)
    pub fn drop_connections(&mut self) {
        self.h1 = None;
        self.grpc = None;
    }

    /// Clears the previous request's data, keeping buffer capacity.
    pub fn reset(&mut self) {
        self.send_done_ns = None;
        self.first_byte_ns = None;
        self.first_token_ns = None;
        self.second_token_ns = None;
        self.first_output_token_ns = None;
        self.reasoning_end = 0;
        self.last_token_ns = None;
        self.first_tool_token_ns = None;
        self.expect_inputs = 0;
        self.events.clear_tools();
        self.chunks = 0;
        self.responses = 0;
        self.text.clear();
        self.gaps.clear();
        self.completion_tokens = None;
        self.prompt_tokens = None;
        self.reasoning_tokens = None;
        self.timings = None;
        self.retry_after = None;
        self.lossy_text = false;
        self.connection_reused = None;
        self.stale_connection = false;
        self.sse.reset();
        if let Some(c) = self.capture.as_mut() {
            c.clear();
        }
        // A huge response's buffers are given back rather than kept for every later request.
        if self.text.capacity() > 1 << 20 {
            self.text = String::new();
        }
        if self.body.capacity() > 1 << 20 {
            self.body = Vec::new();
        }
    }

    /// Keeps a copy of a response read at `t`, when the run captures responses.
    #[inline]
    pub fn keep_response(&mut self, t: u64, data: &[u8]) {
        if let Some(c) = self.capture.as_mut() {
            c.push(t, data);
        }
    }

    /// Bytes were read at `t`.
    #[inline]
    pub fn bytes_at(&mut self, t: u64) {
        if self.first_byte_ns.is_none() {
            self.first_byte_ns = Some(t);
        }
    }

    /// A response said how many output tokens it carries (Triton's count outputs): they add up
    /// over a stream into the server's count.
    #[inline]
    pub fn add_server_tokens(&mut self, n: Option<u32>) {
        if let Some(n) = n {
            self.completion_tokens = Some(self.completion_tokens.unwrap_or(0).saturating_add(n));
        }
    }

    /// A response whose text was `content_bytes` long, `reasoning_bytes` of them reasoning, was
    /// read at `t` (after its text was appended): notes where the reasoning ends and the first
    /// answer token. Two comparisons per event; nothing else for a server without reasoning.
    #[inline]
    pub fn split_reasoning(&mut self, t: u64, content_bytes: usize, reasoning_bytes: usize) {
        let answer = content_bytes - reasoning_bytes;
        if reasoning_bytes > 0 {
            self.reasoning_end = self.text.len() - answer;
        }
        if answer > 0 && self.first_output_token_ns.is_none() {
            self.first_output_token_ns = Some(t);
        }
    }

    /// `n` responses carrying output content were read at `t` (one read holding several).
    #[inline]
    pub fn contents_at(&mut self, t: u64, n: u32) {
        self.content_at(t);
        if n > 1 {
            // Each later one came 0 ns after the one before.
            self.second_token_ns.get_or_insert(t);
            self.gaps.resize(self.gaps.len() + (n - 1) as usize, 0);
            self.chunks += n - 1;
        }
    }

    /// A response carrying output content was read at `t`.
    #[inline]
    pub fn content_at(&mut self, t: u64) {
        match self.last_token_ns {
            None => self.first_token_ns = Some(t),
            Some(prev) => {
                if self.second_token_ns.is_none() {
                    self.second_token_ns = Some(t);
                }
                self.gaps.push(t.saturating_sub(prev));
            }
        }
        self.last_token_ns = Some(t);
        self.chunks += 1;
    }
}

/// A protocol client. An enum rather than a trait object: the hot path dispatches without boxing
/// futures.
#[derive(Clone, Debug)]
pub enum Client {
    /// OpenAI-compatible or Triton HTTP (generate / generate_stream).
    Http(HttpClient),
    /// Triton KServe v2 gRPC.
    Grpc(GrpcClient),
}

impl Client {
    /// The form of each response this client captures for a request to `target`: the raw
    /// export renders captures by it.
    pub fn response_form(&self, target: &Target) -> ResponseForm {
        match (self, target.api) {
            (Client::Grpc(c), _) if c.stream_rpc() => ResponseForm::KserveStream,
            (Client::Grpc(_), _) => ResponseForm::KserveUnary,
            (Client::Http(_), Api::Infer) => ResponseForm::KserveHttp,
            (Client::Http(_), _) if target.streaming => ResponseForm::SseEvents,
            (Client::Http(_), _) => ResponseForm::Body,
        }
    }

    /// Sends one request and reads its whole response into `ex`.
    pub async fn execute(
        &self,
        payload: &Payload,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        match (self, payload) {
            (Client::Http(c), Payload::Http(body)) => c.execute(body, ex, clock).await,
            (Client::Grpc(c), Payload::Grpc(body)) => c.execute(body, ex, clock).await,
            (Client::Http(c), Payload::HttpInfer { body, header_len }) => {
                c.execute_infer(body, *header_len, ex, clock).await
            }
            // Datasets are built for their client; a mismatch is a programming error, reported
            // as a failed request rather than a panic on the wire path.
            _ => Err(RequestError::new(
                crate::record::ErrorKind::MalformedResponse,
                "payload does not match the client's protocol",
            )),
        }
    }

    /// Gets the worker's connection ready before a request is timed (HTTP/1.1 and HTTP/2 alike
    /// connect here, so connection setup never counts in a request's TTFT).
    pub async fn prepare(&self, ex: &mut Exchange) -> Result<(), RequestError> {
        match self {
            Client::Http(c) => c.prepare(ex).await,
            Client::Grpc(c) => c.prepare(ex).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_tracks_tokens_and_gaps() {
        let mut ex = Exchange::new();
        ex.bytes_at(5);
        ex.bytes_at(9);
        ex.content_at(10);
        ex.content_at(10); // same read: a zero gap, recorded as such
        ex.content_at(25);
        assert_eq!(ex.first_byte_ns, Some(5));
        assert_eq!(ex.first_token_ns, Some(10));
        assert_eq!(ex.second_token_ns, Some(10));
        assert_eq!(ex.last_token_ns, Some(25));
        assert_eq!(ex.chunks, 3);
        assert_eq!(ex.gaps, vec![0, 15]);
        ex.reset();
        assert_eq!(ex.chunks, 0);
        assert!(ex.gaps.is_empty() && ex.first_token_ns.is_none());
    }

    /// Reasoning first, then the answer: the reasoning prefix ends where the answer starts, and
    /// the first answer token is the first event with answer text.
    #[test]
    fn exchange_splits_reasoning_from_answer() {
        let mut ex = Exchange::new();
        for (t, s, reasoning) in [(10, "Let", true), (20, " me", true), (30, "Yes", false)] {
            ex.text.push_str(s);
            let r = if reasoning { s.len() } else { 0 };
            ex.split_reasoning(t, s.len(), r);
        }
        ex.text.push_str("ab");
        ex.split_reasoning(40, 2, 0);
        assert_eq!((ex.reasoning_end, ex.first_output_token_ns), (6, Some(30)));
        assert_eq!(&ex.text[..ex.reasoning_end], "Let me");
        // One event with both: its reasoning counted before its answer.
        ex.reset();
        ex.text.push_str("thinkok");
        ex.split_reasoning(5, 7, 5);
        assert_eq!((ex.reasoning_end, ex.first_output_token_ns), (5, Some(5)));
        ex.reset();
        assert_eq!((ex.reasoning_end, ex.first_output_token_ns), (0, None));
    }

    #[test]
    fn capture_keeps_responses_in_order_and_only_when_on() {
        let mut ex = Exchange::new();
        ex.keep_response(1, b"ignored");
        assert!(ex.capture.is_none());
        ex.capture = Some(Capture::default());
        ex.keep_response(5, b"{\"a\":1}");
        ex.keep_response(5, b"");
        ex.keep_response(9, b"[DONE]");
        let c = ex.capture.as_ref().unwrap();
        let got: Vec<(u64, &[u8])> = c.iter().map(|(t, r)| (t, r.middle)).collect();
        assert_eq!(
            got,
            vec![(5, &b"{\"a\":1}"[..]), (5, &b""[..]), (9, &b"[DONE]"[..])]
        );
        assert_eq!(c.len(), 3);
        ex.reset();
        assert!(ex.capture.as_ref().unwrap().is_empty());
    }
}
