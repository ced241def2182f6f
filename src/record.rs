//! What happened to one request: the flat per-request record every later stage reads.
//!
//! Timestamps are nanoseconds on one monotonic clock ([`Clock`]), measured from the run's anchor;
//! the anchor's wall-clock time turns them into absolute Unix times for export, so records from
//! several processes can be merged.

pub mod capture;

use std::borrow::Cow;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr};

/// The run's single time base: a monotonic anchor plus the wall-clock time it corresponds to.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    anchor: Instant,
    unix_anchor_ns: u64,
}

impl Clock {
    /// Starts a clock now.
    pub fn start() -> Clock {
        Clock {
            anchor: Instant::now(),
            unix_anchor_ns: unix_now_ns(),
        }
    }

    /// The Unix clock itself: offsets are Unix ns (its monotonic readings are not used). For
    /// times read back from files, which are absolute.
    pub fn unix() -> Clock {
        Clock {
            anchor: Instant::now(),
            unix_anchor_ns: 0,
        }
    }

    /// Nanoseconds since the anchor.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.anchor.elapsed().as_nanos() as u64
    }

    /// Offset (ns) of an instant; instants before the anchor map to 0.
    pub fn offset_of(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.anchor).as_nanos() as u64
    }

    /// Absolute Unix time (ns) of an offset.
    pub fn unix_ns(&self, ns: u64) -> u64 {
        self.unix_anchor_ns + ns
    }

    /// Unix time (ns) of the anchor.
    pub fn unix_anchor_ns(&self) -> u64 {
        self.unix_anchor_ns
    }
}

/// The wall clock now, Unix nanoseconds (0 if the clock is before 1970).
pub fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Whether a request counts in the results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Sent to warm the server up; written to `requests.jsonl`, excluded from statistics.
    Warmup,
    /// Measured.
    Measure,
}

/// Why a request failed. Each kind is counted separately; failed requests are data.
///
/// Its key in files is declared here once, written and read back by the same attributes: the
/// variant's snake_case name or its `strum` name (aliases: older names read back), except for
/// the two kinds that carry a code, whose keys hold it ([`ErrorKind::key`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, IntoStaticStr, EnumString, EnumIter,
)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorKind {
    /// No connection could be made (refused, unreachable, DNS, TLS handshake).
    Connect,
    /// `--request-timeout` elapsed before the response completed.
    Timeout,
    /// The server answered with a non-success HTTP status.
    HttpStatus(u16),
    /// A stream was asked for but the server answered with one plain body.
    NotStreaming,
    /// The byte stream was not valid server-sent events.
    MalformedSse,
    /// An event or response body was not the JSON (or protobuf) the protocol defines.
    MalformedResponse,
    /// The transport ended before the final response.
    StreamCut,
    /// The server reported an error inside the stream (SSE error event, gRPC `error_message`).
    ServerError,
    /// A gRPC call ended with a non-OK status (the code as `tonic::Code` numbers it).
    GrpcStatus(i32),
    /// The response completed without a single content-bearing token.
    NoContent,
    /// A second Ctrl-C (or the end of the grace after the first) abandoned the request in
    /// flight. Not a failure of the server: counted apart (`abandoned_count`), never in errors,
    /// the error gate or latency statistics. Files written before it had its own kind called it
    /// `cancelled`.
    #[strum(to_string = "abandoned", serialize = "cancelled")]
    Abandoned,
    /// `--request-cancellation-rate` chose this request and the client dropped it
    /// `--request-cancellation-delay` after its send, before the response completed. Not a
    /// failure: counted apart (`cancelled_count`), never in errors or latency statistics.
    RequestCancelled,
    /// The server's address refused the connection (nothing listening: down or restarting).
    ConnectRefused,
    /// The connection was reset or closed by the server before the response began.
    ConnectionReset,
    /// The server asked the client to slow down: HTTP 429, HTTP 503 with `Retry-After`, gRPC
    /// `RESOURCE_EXHAUSTED`.
    RateLimited,
    /// The server reset the HTTP/2 stream (`RST_STREAM`).
    StreamReset,
    /// The server closed the HTTP/2 connection (`GOAWAY`) before the call completed.
    #[strum(to_string = "goaway")]
    GoAway,
    /// An event, streamed message, whole body or the response's text passed `--max-event-size`
    /// (reading stopped there instead of buffering it).
    ResponseTooLarge,
    /// This process may open no more files (`EMFILE`/`ENFILE`): every connection is one.
    #[strum(to_string = "too_many_open_files")]
    OpenFiles,
}

impl ErrorKind {
    /// Stable snake_case key used in files and tables (`http_503`, `stream_cut`, ...).
    pub fn key(&self) -> Cow<'static, str> {
        match self {
            ErrorKind::HttpStatus(code) => format!("http_{code}").into(),
            ErrorKind::GrpcStatus(code) => format!("grpc_{}", grpc_code_name(*code)).into(),
            named => Cow::Borrowed(named.into()),
        }
    }

    /// The kind a [`ErrorKind::key`] names (`grpc_other` reads back as an unnamed gRPC code).
    pub fn from_key(key: &str) -> Option<ErrorKind> {
        if let Some(code) = key.strip_prefix("http_") {
            return code.parse().ok().map(ErrorKind::HttpStatus);
        }
        if let Some(name) = key.strip_prefix("grpc_") {
            let code = (0..=16).find(|c| grpc_code_name(*c) == name).unwrap_or(-1);
            return Some(ErrorKind::GrpcStatus(code));
        }
        // The two kinds with a code are read by their prefixes above.
        key.parse().ok()
    }

    /// What the user can do about this kind of failure, when there is something to say.
    pub fn hint(&self) -> Option<Cow<'static, str>> {
        if *self == ErrorKind::OpenFiles {
            return Some(open_files_hint(open_file_limit()).into());
        }
        self.static_hint().map(Cow::Borrowed)
    }

    fn static_hint(&self) -> Option<&'static str> {
        match self {
            ErrorKind::Connect => Some(
                "check -u host:port, that the server is running, and that it listens on an address this machine can reach",
            ),
            ErrorKind::HttpStatus(401) | ErrorKind::HttpStatus(403) => Some(
                "the server wants credentials: add --api-key KEY (or set OPENAI_API_KEY) or -H 'Header: value'",
            ),
            ErrorKind::HttpStatus(404) => {
                Some("check -m (model name) and --endpoint-type / --endpoint")
            }
            ErrorKind::ConnectRefused => Some(
                "nothing listened at the server's address: check that it is running (workers retried with backoff)",
            ),
            ErrorKind::ConnectionReset | ErrorKind::GoAway | ErrorKind::StreamReset => Some(
                "the server dropped connections or streams: check its logs for restarts, and proxies or load balancers in between",
            ),
            ErrorKind::RateLimited | ErrorKind::HttpStatus(429) | ErrorKind::GrpcStatus(8) => Some(
                "the server (or a gateway) is rejecting load: lower --concurrency / --request-rate or raise its queue limits",
            ),
            ErrorKind::NotStreaming => Some(
                "the endpoint answered with a single body: drop --streaming, or enable streaming (decoupled model) on the server",
            ),
            ErrorKind::Timeout => Some("raise --request-timeout or lower the load"),
            ErrorKind::StreamCut => Some(
                "the server closed streams early: check its logs for crashes or proxies with idle timeouts",
            ),
            ErrorKind::ResponseTooLarge => Some(
                "the server sent more than --max-event-size in one event or response (default 4MiB): raise it if that is expected, otherwise the server ignores the requested length",
            ),
            ErrorKind::NoContent => Some(
                "responses carried no text: check --output-tokens-mean, and that the model streams text_output / delta.content",
            ),
            _ => None,
        }
    }
}

/// This process's open-file limit (soft, hard), when the system says.
pub fn open_file_limit() -> Option<(u64, u64)> {
    rlimit::Resource::NOFILE.get().ok()
}

/// The file-limit advice for `too_many_open_files`, with the limit in force.
fn open_files_hint(limit: Option<(u64, u64)>) -> String {
    let now = match limit {
        Some((soft, hard)) => format!("this process may open {soft} files (hard limit {hard})"),
        None => "this process reached its open-file limit".to_string(),
    };
    format!(
        "{now}, and every HTTP connection in flight (and every 64 gRPC streams) takes one: raise it with `ulimit -n N` in the shell that runs ttftbench (up to the hard limit; above it `ulimit -Hn` as root, or LimitNOFILE= for a service, or /etc/security/limits.conf), or lower --concurrency / --max-inflight"
    )
}

/// The canonical lower-case name of a gRPC status code number.
pub fn grpc_code_name(code: i32) -> &'static str {
    match code {
        0 => "ok",
        1 => "cancelled",
        2 => "unknown",
        3 => "invalid_argument",
        4 => "deadline_exceeded",
        5 => "not_found",
        6 => "already_exists",
        7 => "permission_denied",
        8 => "resource_exhausted",
        9 => "failed_precondition",
        10 => "aborted",
        11 => "out_of_range",
        12 => "unimplemented",
        13 => "internal",
        14 => "unavailable",
        15 => "data_loss",
        16 => "unauthenticated",
        _ => "other",
    }
}

/// A failed request: the kind (counted) and a message (the first of each kind is shown).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", .kind.key())]
pub struct RequestError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// Detail for people: status line, server message, transport error.
    pub message: Box<str>,
}

impl RequestError {
    /// Builds an error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> RequestError {
        RequestError {
            kind,
            message: message.into().into_boxed_str(),
        }
    }
}

/// The server's own account of one request, from the `timings` object llama.cpp's
/// `llama-server` puts on each response (the last event of a stream, the top level of a whole
/// body): its prompt processing and its generation, timed on the server's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ServerTimings {
    /// Prompt tokens the server evaluated (`prompt_n`: the cached ones excluded, at least one).
    pub prompt_tokens: u32,
    /// Prompt tokens it reused from its cache (`cache_n`).
    pub cached_tokens: u32,
    /// Prompt processing (`prompt_ms`), µs: from the request taking a slot to the logits of
    /// its first token. The wait for a free slot is not in it.
    pub prefill_us: u64,
    /// Generation (`predicted_ms`), µs: from the first token to the last.
    pub decode_us: u64,
}

/// Content-bearing responses closer than this on average (ns) arrived in one burst: no engine
/// decodes 100,000 tokens a second for one user, while the reads of an answer sent whole (one
/// read, or a few back to back when it is larger than the read buffer) are microseconds apart.
pub const BURST_GAP_NS: u64 = 10_000;

/// One request, start to end. Times are ns offsets on the run's [`Clock`].
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRecord {
    /// Warm-up or measured.
    pub phase: Phase,
    /// Sequence number of the request within its level (warm-up and measured share the count).
    pub seq: u64,
    /// Which dataset entry was sent.
    pub prompt_index: u32,
    /// When the schedule wanted the request sent (open loop), or when its worker became free.
    pub intended_ns: u64,
    /// When the request was handed to the transport.
    pub sent_ns: u64,
    /// When the request's bytes were fully encoded into the transport (client send time ends),
    /// where the protocol client can see it.
    pub send_done_ns: Option<u64>,
    /// First response byte read from the transport.
    pub first_byte_ns: Option<u64>,
    /// First content-bearing response (first token).
    pub first_token_ns: Option<u64>,
    /// Second content-bearing response.
    pub second_token_ns: Option<u64>,
    /// First response carrying answer text rather than reasoning (a reasoning model's first
    /// output token); `None` for responses without reasoning, and for reasoning that never
    /// reached an answer.
    pub first_output_token_ns: Option<u64>,
    /// Last content-bearing response.
    pub last_token_ns: Option<u64>,
    /// When the exchange ended (final response, stream end, or failure).
    pub end_ns: u64,
    /// Input tokens.
    pub isl: u32,
    /// Output tokens counted for this request (tokenizer, or server usage when asked for).
    pub osl: u32,
    /// Output tokens the server reported in its usage, when it did.
    pub server_osl: Option<u32>,
    /// Output tokens the tokenizer counted in the text, when it was counted (every successful
    /// LLM request): next to `server_osl`, it shows whether the two agree.
    pub tokenizer_osl: Option<u32>,
    /// Input tokens the server reported in its usage, when it did.
    pub server_isl: Option<u32>,
    /// Input tokens as the client counted them before sending (the tokenizer's, or the
    /// server's `/tokenize` with `--tokenizer-from-server`), when `isl` holds the server's usage
    /// count instead (`--use-server-token-count`); `None` when `isl` is the client's count.
    pub client_isl: Option<u32>,
    /// The server's own timings of the request (llama.cpp's `timings`), when it sent them.
    pub server_timings: Option<ServerTimings>,
    /// Reasoning tokens among the output tokens (the tokenizer's count of the reasoning text),
    /// for responses that streamed reasoning (`None` otherwise, and for failed requests). `osl`
    /// counts them too, as AIPerf's OSL does: the answer alone is `osl − reasoning_tokens`.
    pub reasoning_tokens: Option<u32>,
    /// Reasoning tokens the server reported in its usage
    /// (`completion_tokens_details.reasoning_tokens`), for responses that streamed reasoning and
    /// when it reported them; with `--use-server-token-count` they are the `reasoning_tokens`
    /// used.
    pub server_reasoning_tokens: Option<u32>,
    /// Output tokens asked for (the max-tokens field sent).
    pub requested_osl: u32,
    /// Content-bearing responses (SSE events / stream responses with text).
    pub chunks: u32,
    /// Every response or event received, including empty and usage-only ones.
    pub responses: u32,
    /// The output text held invalid UTF-8: it was counted after replacing each invalid
    /// sequence with U+FFFD (as a Python client decoding with `errors="replace"` would).
    pub lossy_text: bool,
    /// It was sent a second time, on a fresh connection, after its first send failed on a reused
    /// HTTP/1.1 connection the server had closed (before any response byte); its times are the
    /// second send's.
    pub reconnected: bool,
    /// Whether it went out on a connection that had already served a request (HTTP/1.1; `None`
    /// for other transports).
    pub connection_reused: Option<bool>,
    /// The failure, for failed requests.
    pub error: Option<RequestError>,
    /// The request's place in a multi-turn session; `None` for a request that stands alone.
    pub conversation: Option<Turn>,
    /// What it carried besides its prompt text (batch inputs, images, tools).
    pub sent: Sent,
    /// What its response did with the tools it was offered.
    pub tools: ToolUse,
    /// A scored request's graded answer (`None`: not scored, or failed).
    pub answer: Option<Box<Answer>>,
}

/// Tokens of an output kept in its [`OutputPrint`], to name the first one that differs.
pub const HEAD_TOKENS: usize = 16;

/// An output text in a few bytes: its hash, its length and its first [`HEAD_TOKENS`] token ids.
/// Two outputs are the same when hash and length agree; the ids say where two differ when they
/// differ early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputPrint {
    /// FNV-1a hash of the text's bytes.
    pub hash: u64,
    /// Tokens in the text.
    pub tokens: u32,
    /// The first tokens' ids (`min(tokens, HEAD_TOKENS)` of them are meaningful).
    pub head: [u32; HEAD_TOKENS],
}

/// A scored request's answer: graded against its row, fingerprinted for the determinism check.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The grader found the expected answer.
    pub correct: bool,
    /// No answer in the expected form was found.
    pub unparsed: bool,
    /// The whole output text (reasoning included), fingerprinted.
    pub output: OutputPrint,
    /// Whether the output differs from its prompt's reference output (the run's first measured
    /// one); `None` for the reference itself, or when outputs are not compared (not greedy).
    pub changed: Option<bool>,
    /// Where it first differs, for the first changed output of a level (an example).
    pub change: Option<Box<ChangeExample>>,
}

/// Where a changed output first differs from its prompt's reference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeExample {
    /// The prompt (its dataset index).
    pub prompt: u32,
    /// The first differing token (0-based); when the first [`HEAD_TOKENS`] agree, the texts
    /// differ after them and this is [`HEAD_TOKENS`].
    pub token: u32,
    /// That token in the reference output (empty past its end or beyond the kept tokens).
    pub reference: String,
    /// That token in this output.
    pub now: String,
}

/// What a request carried besides its prompt text, from its dataset entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Texts embedded or passages ranked (embeddings, rankings); 0 for a generative request,
    /// which produces tokens instead.
    pub inputs: u32,
    /// Images sent with the prompt.
    pub images: u32,
    /// Their encoded size in bytes (before base64).
    pub image_bytes: u64,
    /// Tool definitions were sent with it.
    pub tools: bool,
}

/// What a response did with the tools its request offered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolUse {
    /// Tool calls in the response.
    pub calls: u32,
    /// Every call's arguments parse as JSON (meaningful when `calls > 0`).
    pub args_valid: bool,
    /// The first response carrying tool-call argument text (run clock, ns).
    pub first_token_ns: Option<u64>,
}

/// A request's place in a multi-turn session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The session's number in the run (0-based, in the order sessions started).
    pub session: u64,
    /// The turn (0-based): turn `t` carries `t + 1` user messages and the `t` answers between
    /// them.
    pub turn: u32,
}

/// How one session ended, as its worker saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// Every turn answered, every branch joined: the task completed in this many ns.
    Completed(u64),
    /// A turn failed, which ends its session (the next turn would need its answer).
    Failed,
    /// The level ended (its count, window or a Ctrl-C) before the session's last turn.
    Cut,
}

/// One session, reported by its worker when the session (with every branch) has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionOutcome {
    /// How it ended.
    pub end: SessionEnd,
    /// Requests it sent, its branches' included.
    pub turns: u32,
    /// Of those, the ones that carried a tool's result back to the model.
    pub tool_round_trips: u32,
}

impl RequestRecord {
    /// Sets the tokenizer's output count; it becomes the count used (`osl`) unless
    /// `keep_server` says `osl` already holds the server's.
    pub fn set_tokenizer_osl(&mut self, n: usize, keep_server: bool) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.tokenizer_osl = Some(n);
        if !keep_server {
            self.osl = n;
        }
    }

    /// The input tokens the client counted before sending.
    pub fn client_isl(&self) -> u32 {
        self.client_isl.unwrap_or(self.isl)
    }

    /// Whether the request completed with content.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Whether the client cancelled the request on purpose (`--request-cancellation-rate`).
    pub fn cancelled_on_purpose(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.kind == ErrorKind::RequestCancelled)
    }

    /// Whether the run abandoned the request in flight (a second Ctrl-C).
    pub fn abandoned(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.kind == ErrorKind::Abandoned)
    }

    /// Whether the request failed: an error other than a planned cancellation or an abandoned
    /// request.
    pub fn failed(&self) -> bool {
        self.error.is_some() && !self.cancelled_on_purpose() && !self.abandoned()
    }

    /// Time to first token from the actual send.
    pub fn ttft_ns(&self) -> Option<u64> {
        self.first_token_ns.map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Time to first token from the intended send time (coordinated-omission corrected).
    pub fn ttft_intended_ns(&self) -> Option<u64> {
        self.first_token_ns
            .map(|t| t.saturating_sub(self.intended_ns))
    }

    /// Time to the first answer token, past the reasoning (AIPerf's time_to_first_output_token),
    /// for responses that had reasoning.
    pub fn ttfo_ns(&self) -> Option<u64> {
        self.first_output_token_ns
            .map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Time between the first and second tokens (GenAI-Perf's time_to_second_token).
    pub fn ttst_ns(&self) -> Option<u64> {
        Some(self.second_token_ns?.saturating_sub(self.first_token_ns?))
    }

    /// Client TTFT minus the server's prompt processing (its `timings.prompt_ms`): the
    /// transport, the HTTP layer, tokenization, and the wait for a free slot. Clamped at 0.
    pub fn ttft_outside_prefill_ns(&self) -> Option<u64> {
        let prefill = self.server_timings?.prefill_us.saturating_mul(1000);
        Some(self.ttft_ns()?.saturating_sub(prefill))
    }

    /// Time to first byte of the response.
    pub fn ttfb_ns(&self) -> Option<u64> {
        self.first_byte_ns.map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Request latency: send to the last content-bearing response.
    pub fn latency_ns(&self) -> Option<u64> {
        self.last_token_ns.map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Request latency from the intended send time.
    pub fn latency_intended_ns(&self) -> Option<u64> {
        self.last_token_ns
            .map(|t| t.saturating_sub(self.intended_ns))
    }

    /// Client send time: from handing the request over until its bytes were written.
    pub fn send_ns(&self) -> Option<u64> {
        self.send_done_ns.map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Client receive time: from the first response byte to the last response.
    pub fn recv_ns(&self) -> Option<u64> {
        Some(self.last_token_ns?.saturating_sub(self.first_byte_ns?))
    }

    /// How late the request left compared with its intended time.
    pub fn send_lag_ns(&self) -> u64 {
        self.sent_ns.saturating_sub(self.intended_ns)
    }

    /// Inter-token latency as GenAI-Perf computes it: (latency − TTFT) / (OSL − 1), defined when
    /// more than one content response arrived and OSL > 1.
    pub fn itl_ns(&self) -> Option<u64> {
        if self.chunks < 2 || self.osl < 2 {
            return None;
        }
        let (first, last) = (self.first_token_ns?, self.last_token_ns?);
        let span = last.saturating_sub(first) as f64;
        Some((span / f64::from(self.osl - 1)).round() as u64)
    }

    /// Whether two or more content-bearing responses arrived in one burst: under
    /// [`BURST_GAP_NS`] apart on average (a buffered stream).
    pub fn arrived_in_a_burst(&self) -> bool {
        match (self.first_token_ns, self.last_token_ns) {
            (Some(first), Some(last)) if self.chunks >= 2 => {
                last.saturating_sub(first) < BURST_GAP_NS * u64::from(self.chunks - 1)
            }
            _ => false,
        }
    }

    /// Output tokens per second seen by this request's user: 1 / ITL.
    pub fn tokens_per_sec_per_user(&self) -> Option<f64> {
        self.itl_ns().filter(|&v| v > 0).map(|v| 1e9 / v as f64)
    }

    /// Time to the first token of a tool call's arguments, from the actual send.
    pub fn ttft_tool_ns(&self) -> Option<u64> {
        self.tools
            .first_token_ns
            .map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Whether it was a batch request (embeddings, rankings): it has inputs, not output tokens.
    pub fn batch(&self) -> bool {
        self.sent.inputs > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> RequestRecord {
        RequestRecord {
            intended_ns: 1_000,
            sent_ns: 2_000,
            send_done_ns: Some(2_500),
            first_byte_ns: Some(5_000),
            first_token_ns: Some(10_000),
            second_token_ns: Some(12_000),
            last_token_ns: Some(30_000),
            end_ns: 31_000,
            isl: 10,
            responses: 12,
            ..crate::stats::test_record(0, 0, 11)
        }
    }

    #[test]
    fn tokenizer_count_is_used_unless_the_server_count_is_kept() {
        let mut r = rec();
        r.set_tokenizer_osl(7, false);
        assert_eq!((r.osl, r.tokenizer_osl), (7, Some(7)));
        r.osl = 9;
        r.set_tokenizer_osl(8, true);
        assert_eq!((r.osl, r.tokenizer_osl), (9, Some(8)));
    }

    #[test]
    fn derived_times() {
        let r = rec();
        assert_eq!(r.ttft_ns(), Some(8_000));
        assert_eq!(r.ttft_intended_ns(), Some(9_000));
        assert_eq!(r.ttst_ns(), Some(2_000));
        assert_eq!(r.ttfb_ns(), Some(3_000));
        assert_eq!(r.latency_ns(), Some(28_000));
        assert_eq!(r.send_lag_ns(), 1_000);
        // (28000 - 8000) / (11 - 1)
        assert_eq!(r.itl_ns(), Some(2_000));
        assert_eq!(r.tokens_per_sec_per_user(), Some(500_000.0));
    }

    #[test]
    fn itl_needs_two_chunks_and_two_tokens() {
        let mut r = rec();
        r.chunks = 1;
        assert_eq!(r.itl_ns(), None);
        let mut r = rec();
        r.osl = 1;
        assert_eq!(r.itl_ns(), None);
        // One chunk carrying many tokens still has no inter-token gap to measure.
        let mut r = rec();
        r.chunks = 1;
        r.osl = 50;
        assert_eq!(r.itl_ns(), None);
    }

    /// Every kind reads back from its key: each kind without a code, every named gRPC code and
    /// an unnamed one, HTTP statuses; no two kinds share a key.
    #[test]
    fn every_error_kind_reads_back_from_its_key() {
        use strum::IntoEnumIterator;
        let coded = (0..=16)
            .chain([-1])
            .map(ErrorKind::GrpcStatus)
            .chain([200, 401, 429, 500, 503, 599].map(ErrorKind::HttpStatus));
        let kinds: Vec<ErrorKind> = ErrorKind::iter()
            .filter(|k| !matches!(k, ErrorKind::HttpStatus(_) | ErrorKind::GrpcStatus(_)))
            .chain(coded)
            .collect();
        assert!(kinds.contains(&ErrorKind::OpenFiles) && kinds.contains(&ErrorKind::Abandoned));
        let mut keys = std::collections::BTreeSet::new();
        for kind in kinds {
            let key = kind.key();
            assert_eq!(ErrorKind::from_key(&key), Some(kind), "{key}");
            assert!(keys.insert(key.clone()), "{key} names two kinds");
        }
        assert_eq!(ErrorKind::from_key("bogus"), None);
        assert_eq!(ErrorKind::from_key("http_x"), None);
    }

    #[test]
    fn error_keys() {
        assert_eq!(ErrorKind::HttpStatus(503).key(), "http_503");
        assert_eq!(ErrorKind::GrpcStatus(14).key(), "grpc_unavailable");
        assert_eq!(ErrorKind::StreamCut.key(), "stream_cut");
        assert_eq!(ErrorKind::ConnectRefused.key(), "connect_refused");
        assert_eq!(ErrorKind::RateLimited.key(), "rate_limited");
        // Abandoned requests have their own kind; older files called them cancelled.
        assert_eq!(ErrorKind::Abandoned.key(), "abandoned");
        for key in ["abandoned", "cancelled"] {
            assert_eq!(ErrorKind::from_key(key), Some(ErrorKind::Abandoned));
        }
        assert!(
            ErrorKind::HttpStatus(401)
                .hint()
                .unwrap()
                .contains("--api-key")
        );
        assert_eq!(ErrorKind::OpenFiles.key(), "too_many_open_files");
        let h = open_files_hint(Some((1024, 4096)));
        assert!(
            h.starts_with("this process may open 1024 files (hard limit 4096)"),
            "{h}"
        );
        assert!(
            h.contains("ulimit -n") && h.contains("--concurrency"),
            "{h}"
        );
        assert!(!h.contains("-u host:port"), "{h}");
    }
}
