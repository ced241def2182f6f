//! JSON over HTTP: OpenAI-compatible chat/completions, Triton's generate / generate_stream, and
//! KServe v2 `/infer`. Streams are server-sent events; one parser and one event reader serve
//! every API. Requests go through the per-worker connection of [`super::h1`], over TCP or TLS;
//! a pooled reqwest client (verifying TLS the same way) serves discovery calls.

use std::sync::Once;
use std::time::Duration;

use bytes::Bytes;

use super::h1::{self, H1Target};
use super::{Exchange, error_chain};
use crate::record::{Clock, ErrorKind, RequestError};
use crate::target::{Api, Target};

/// Installs rustls' ring provider once per process (reqwest is built without a default provider).
pub fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An HTTP client bound to one endpoint.
#[derive(Clone, Debug)]
pub struct HttpClient {
    /// For discovery calls.
    client: reqwest::Client,
    streaming: bool,
    /// Where requests go, over each worker's own connection.
    h1: std::sync::Arc<H1Target>,
    /// Largest event, whole body or response text accepted.
    max_event: usize,
    /// Learned from requests that found their reused connection closed: the server closes the
    /// connection after a whole body (`[0]`) or after an event stream (`[1]`) without saying
    /// so, so after such a response the worker opens a fresh connection (outside measured time)
    /// instead of sending into the close. Shared by every worker.
    closes_after: std::sync::Arc<[std::sync::atomic::AtomicBool; 2]>,
    /// The API: how a whole answer is read (text, vectors, scores), and what an error body means.
    api: Api,
    /// The embeddings' dimension, set by the first answer: every later one must match it.
    /// Shared by every worker (0: none seen yet).
    dim: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl HttpClient {
    /// Builds a client for the target's endpoint: each worker keeps one keep-alive connection
    /// (TLS for `https://`, verified as the plan says). Proxies from the environment are
    /// ignored because benchmark traffic must go straight to the server.
    pub fn new(target: &Target, pool_hint: usize) -> crate::error::Result<HttpClient> {
        install_tls_provider();
        let url = reqwest::Url::parse(&target.endpoint_url()).map_err(|e| {
            crate::error::Error::usage(format!("invalid URL {}: {e}", target.endpoint_url()))
        })?;
        let tls = target
            .uses_tls()
            .then(|| super::tls::TlsContext::new(&target.tls))
            .transpose()?;
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(pool_hint.max(1))
            .pool_idle_timeout(Duration::from_secs(300))
            .connect_timeout(Duration::from_secs(10))
            .default_headers(target.header_map()?);
        if url.scheme() == "http" {
            builder = builder.http1_only();
        }
        let h1_tls = match &tls {
            Some(ctx) => {
                builder = ctx.reqwest(builder)?;
                Some(h1::TlsDial::new(
                    ctx,
                    url.host_str().unwrap_or_default(),
                    super::tls::ALPN_HTTP1,
                )?)
            }
            None => None,
        };
        let client = builder.build().map_err(|e| {
            crate::error::Error::failed(format!(
                "cannot build the HTTP client: {}",
                error_chain(&e)
            ))
        })?;
        let h1 = H1Target::new(&url, &target.header_map()?, h1_tls)
            .map(|t| std::sync::Arc::new(t.with_quickack(target.tcp_quickack)))
            .ok_or_else(|| {
                crate::error::Error::usage(format!(
                    "{}: only http:// and https:// URLs are supported",
                    target.endpoint_url()
                ))
            })?;
        Ok(HttpClient {
            client,
            streaming: target.streaming,
            h1,
            max_event: target.max_event_bytes.max(1),
            closes_after: std::sync::Arc::default(),
            api: target.api,
            dim: std::sync::Arc::default(),
        })
    }

    /// The underlying pooled client (for discovery calls that share its headers and pool).
    pub fn inner(&self) -> &reqwest::Client {
        &self.client
    }

    /// Makes sure the worker's direct connection is open and one the server will answer on,
    /// outside any measured time ([`h1::H1Conn::usable`]).
    pub async fn prepare(&self, ex: &mut Exchange) -> Result<(), RequestError> {
        let t = &self.h1;
        if ex.h1.as_mut().is_some_and(|c| c.usable()) {
            return Ok(());
        }
        ex.h1 = Some(h1::connect(t).await?);
        Ok(())
    }

    /// A request failed on a reused connection before any response byte: most likely the server
    /// had closed it (see [`h1`]). Marks the exchange for one more try on a fresh connection and
    /// learns whether the server closes after this kind of response.
    fn stale(&self, conn: &h1::H1Conn, ex: &mut Exchange) {
        if conn.reused() && ex.first_byte_ns.is_none() {
            ex.stale_connection = true;
            self.closes_after[usize::from(conn.last_streamed())]
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// One exchange on the worker's direct connection. `tensors`: count one response per body
    /// instead of reading text.
    #[allow(clippy::too_many_arguments)]
    async fn execute_h1(
        &self,
        t: &H1Target,
        body: &[u8],
        content_type: &str,
        extra: Option<(&str, usize)>,
        tensors: bool,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        let mut conn = match ex.h1.take() {
            Some(c) => c,
            None => h1::connect(t).await?,
        };
        ex.connection_reused = Some(conn.reused());
        let sent = conn
            .send(
                t,
                (content_type, ex.ids.as_deref().map(|i| (i, ex.seq))),
                extra,
                ex.session_header.as_deref(),
                body,
                &mut ex.scratch,
            )
            .await;
        if let Err(e) = sent {
            self.stale(&conn, ex);
            return Err(RequestError::new(
                super::failure::io_kind(&e, ErrorKind::StreamCut),
                format!("writing the request: {e}"),
            ));
        }
        ex.send_done_ns = Some(clock.now_ns());
        let (head, first_byte) = match conn.read_head(clock).await {
            Ok(h) => h,
            Err(e) => {
                self.stale(&conn, ex);
                return Err(e);
            }
        };
        ex.bytes_at(first_byte);
        let status = head.status;
        let mut whole = std::mem::take(&mut ex.body);
        whole.clear();
        let ok = (200..300).contains(&status);
        let result = if !ok || !head.is_sse() {
            // Tensor answers are only timed, never read: nothing of them is kept.
            let (limit, strict) = if !ok {
                (64 * 1024, false)
            } else if tensors && ex.capture.is_none() {
                (0, false)
            } else {
                (self.max_event, true)
            };
            let mut at = first_byte;
            let mut too_large = false;
            let read = conn
                .read_body(head.framing, clock, |d, t| {
                    at = t;
                    let room = limit.saturating_sub(whole.len());
                    // A JSON body is read whole, so one past the limit ends the request.
                    too_large = strict && d.len() > room;
                    whole.extend_from_slice(&d[..d.len().min(room)]);
                    !too_large
                })
                .await;
            match read {
                Ok(()) if too_large => Err(too_large_error("the response body", limit)),
                Err(e) => Err(e),
                Ok(()) if !ok => {
                    let text = String::from_utf8_lossy(&whole[..whole.len().min(2048)])
                        .trim()
                        .to_string();
                    ex.retry_after = head.retry_after;
                    let note = match self.api {
                        Api::Messages => super::failure::messages_error_note(&whole),
                        _ => "",
                    };
                    Err(RequestError::new(
                        super::failure::http_status_kind(status, head.retry_after),
                        format!(
                            "HTTP {status} {}: {}{note}",
                            head.reason,
                            if text.is_empty() {
                                "(empty body)"
                            } else {
                                &text
                            }
                        ),
                    ))
                }
                Ok(()) if self.streaming && !tensors => {
                    let ct = if head.content_type.is_empty() {
                        "no content type"
                    } else {
                        &head.content_type
                    };
                    let text = String::from_utf8_lossy(&whole[..whole.len().min(2048)])
                        .trim()
                        .to_string();
                    Err(RequestError::new(
                        ErrorKind::NotStreaming,
                        format!("asked for a stream but the server answered {ct}: {text}"),
                    ))
                }
                Ok(()) if tensors => {
                    ex.responses += 1;
                    ex.content_at(at);
                    ex.keep_response(at, &whole);
                    Ok(())
                }
                Ok(()) => match self.api {
                    Api::Embeddings | Api::Rankings => self.read_batch(&whole, at, ex),
                    _ => read_whole_bytes(&whole, at, ex),
                },
            }
        } else {
            let mut sse = std::mem::take(&mut ex.sse);
            sse.set_limit(self.max_event);
            let mut state = StreamState {
                done: false,
                error: None,
                max_text: self.max_event,
            };
            let read = conn
                .read_body(head.framing, clock, |d, t| {
                    let mut sink = StreamSink {
                        ex: &mut *ex,
                        st: &mut state,
                        t,
                    };
                    if let Err(e) = sse.feed_to(d, &mut sink) {
                        state.error = Some(sse_error(e));
                    }
                    state.error.is_none()
                })
                .await;
            if read.is_ok() && state.error.is_none() {
                let t = clock.now_ns();
                sse.finish(|name, data| on_event(name, data, t, ex, &mut state));
            }
            sse.reset();
            ex.sse = sse;
            match (read, state.error.take()) {
                (_, Some(e)) => Err(e),
                (Err(e), None) => Err(RequestError::new(
                    e.kind,
                    format!("after {} events: {}", ex.responses, e.message),
                )),
                (Ok(()), None) => Ok(()),
            }
        };
        ex.body = whole;
        let closes = self.closes_after[usize::from(head.is_sse())]
            .load(std::sync::atomic::Ordering::Relaxed);
        if result.is_ok() && conn.reusable && head.keep_alive && !closes {
            conn.finished(&head);
            ex.h1 = Some(conn);
        }
        result
    }

    /// An embeddings or rankings answer read at `t`: one vector or score per input sent
    /// (`ex.expect_inputs`), every number finite, every vector of the dimension the first answer
    /// had. A valid answer is the request's one content response.
    fn read_batch(&self, body: &[u8], t: u64, ex: &mut Exchange) -> Result<(), RequestError> {
        use super::batch::{self, BatchError};
        ex.responses += 1;
        ex.keep_response(t, body);
        let expected = ex.expect_inputs.max(1);
        let read = match self.api {
            Api::Embeddings => batch::embeddings(body, expected),
            _ => batch::rankings(body, expected),
        };
        let reply = read.map_err(|e| match e {
            BatchError::Server(m) => RequestError::new(ErrorKind::ServerError, m),
            BatchError::Malformed(m) => RequestError::new(ErrorKind::MalformedResponse, m),
        })?;
        if let Some(d) = reply.dim {
            use std::sync::atomic::Ordering::Relaxed;
            let first = match self.dim.compare_exchange(0, d, Relaxed, Relaxed) {
                Ok(_) => d,
                Err(seen) => seen,
            };
            if first != d {
                return Err(RequestError::new(
                    ErrorKind::MalformedResponse,
                    format!(
                        "vectors of {d} dimensions where earlier answers had {first}: one model must answer every request"
                    ),
                ));
            }
        }
        ex.prompt_tokens = reply.prompt_tokens;
        ex.content_at(t);
        Ok(())
    }

    /// Sends one request and reads its response into `ex`.
    pub async fn execute(
        &self,
        body: &Bytes,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        self.execute_h1(&self.h1, body, "application/json", None, false, ex, clock)
            .await
    }

    /// Sends one KServe v2 `/infer` request (tensors) and reads the whole response; the binary
    /// tensor extension's header length goes in `Inference-Header-Content-Length`.
    pub async fn execute_infer(
        &self,
        body: &Bytes,
        header_len: Option<usize>,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        let (ct, extra) = match header_len {
            Some(n) => (
                "application/octet-stream",
                Some(("Inference-Header-Content-Length", n)),
            ),
            None => ("application/json", None),
        };
        self.execute_h1(&self.h1, body, ct, extra, true, ex, clock)
            .await
    }
}

/// How long to wait for the end of a body or stream after the final response. Reading it to the
/// end lets the connection go back to the pool (HTTP) and lets the call finish cleanly instead of
/// being reset (gRPC; thousands of resets make HTTP/2 peers tear the connection down).
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

struct StreamState {
    done: bool,
    error: Option<RequestError>,
    /// Largest output text accepted for one response.
    max_text: usize,
}

/// An event that outgrew the limit is a response too large; nothing else goes wrong in SSE
/// framing (unknown lines are ignored by the format).
fn sse_error(e: super::sse::SseError) -> RequestError {
    match e {
        super::sse::SseError::EventTooLarge(n) => too_large_error("one server-sent event", n),
    }
}

fn too_large_error(what: &str, limit: usize) -> RequestError {
    RequestError::new(
        ErrorKind::ResponseTooLarge,
        format!("{what} passed --max-event-size ({limit} bytes); reading stopped there"),
    )
}

/// A streamed response's events, read at `t`, going into the exchange.
struct StreamSink<'a> {
    ex: &'a mut Exchange,
    st: &'a mut StreamState,
    t: u64,
}

impl super::sse::EventSink for StreamSink<'_> {
    /// Token events of the stream's usual shape, read straight from the stream.
    #[inline]
    fn lines(&mut self, at: &[u8]) -> usize {
        let (t, st) = (self.t, &mut *self.st);
        if st.done || st.error.is_some() {
            return 0;
        }
        let Exchange {
            events,
            text,
            capture,
            ..
        } = &mut *self.ex;
        let run = events.read_run(at, text, st.max_text, |event, piece| {
            if let Some(c) = capture.as_mut() {
                let (key, prefix, suffix) = events.shape();
                c.push_shaped(t, key, prefix, piece, suffix);
                debug_assert_eq!(event.len(), prefix.len() + piece.len() + suffix.len());
            }
        });
        let ex = &mut *self.ex;
        ex.responses += run.events;
        let reasoning = run.text_bytes * usize::from(run.reasoning);
        on_text(t, ex, st, run.with_text, run.text_bytes, reasoning);
        run.bytes
    }

    fn event(&mut self, name: &[u8], data: &[u8]) {
        on_event(name, data, self.t, self.ex, self.st);
    }
}

#[inline]
fn on_event(name: &[u8], data: &[u8], t: u64, ex: &mut Exchange, st: &mut StreamState) {
    if st.done || st.error.is_some() {
        return;
    }
    ex.responses += 1;
    ex.keep_response(t, data);
    if data == b"[DONE]" {
        st.done = true;
        return;
    }
    if name == b"error" {
        st.error = Some(RequestError::new(
            ErrorKind::ServerError,
            format!("error event in stream: {}", String::from_utf8_lossy(data)),
        ));
        return;
    }
    let parsed = match ex.events.read(data, &mut ex.text) {
        Err(e) if std::str::from_utf8(data).is_err() => lossy_event(data, ex).ok_or(e),
        r => r,
    };
    match parsed {
        Ok(info) => on_info(info, t, ex, st),
        Err(e) => {
            let shown = String::from_utf8_lossy(&data[..data.len().min(200)]).into_owned();
            st.error = Some(RequestError::new(
                ErrorKind::MalformedResponse,
                format!("event {} is not valid JSON ({e}): {shown}", ex.responses),
            ));
        }
    }
}

/// What a read event says, into the exchange.
#[inline]
fn on_info(info: super::events::EventInfo, t: u64, ex: &mut Exchange, st: &mut StreamState) {
    if let Some(msg) = info.error {
        st.error = Some(RequestError::new(ErrorKind::ServerError, msg));
        return;
    }
    if info.completion_tokens.is_some() {
        ex.completion_tokens = info.completion_tokens;
    }
    ex.add_server_tokens(info.tokens);
    if info.prompt_tokens.is_some() {
        ex.prompt_tokens = info.prompt_tokens;
    }
    if info.reasoning_tokens.is_some() {
        ex.reasoning_tokens = info.reasoning_tokens;
    }
    if info.timings.is_some() {
        ex.timings = info.timings;
    }
    if info.tool_bytes > 0 && ex.first_tool_token_ns.is_none() {
        ex.first_tool_token_ns = Some(t);
    }
    let with_text = u32::from(info.content_bytes > 0);
    on_text(
        t,
        ex,
        st,
        with_text,
        info.content_bytes,
        info.reasoning_bytes,
    );
}

/// `with_text` responses read at `t` appended `len` bytes of text, `reasoning` of them
/// reasoning.
#[inline]
fn on_text(
    t: u64,
    ex: &mut Exchange,
    st: &mut StreamState,
    with_text: u32,
    len: usize,
    reasoning: usize,
) {
    if with_text > 0 {
        ex.contents_at(t, with_text);
        ex.split_reasoning(t, len, reasoning);
        if ex.text.len() > st.max_text {
            st.error = Some(too_large_error("the response's output text", st.max_text));
        }
    }
}

/// An event that is JSON once its invalid UTF-8 is replaced by U+FFFD: read that way, and the
/// request marked (its record says `lossy_text`; the console says it once per run).
fn lossy_event(data: &[u8], ex: &mut Exchange) -> Option<super::events::EventInfo> {
    let fixed = String::from_utf8_lossy(data);
    let info = ex.events.read_body(fixed.as_bytes(), &mut ex.text).ok()?;
    ex.lossy_text = true;
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            "the server sent text that is not valid UTF-8; it is counted with U+FFFD in place of each invalid sequence (requests.jsonl: lossy_text)"
        );
    }
    Some(info)
}

/// A whole JSON body read at `t`: its text arrives at once.
fn read_whole_bytes(body: &[u8], t: u64, ex: &mut Exchange) -> Result<(), RequestError> {
    ex.responses += 1;
    ex.keep_response(t, body);
    let parsed = match ex.events.read_body(body, &mut ex.text) {
        Err(e) if std::str::from_utf8(body).is_err() => lossy_event(body, ex).ok_or(e),
        r => r,
    };
    let info = parsed.map_err(|e| {
        let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        RequestError::new(
            ErrorKind::MalformedResponse,
            format!("response is not valid JSON ({e}): {shown}"),
        )
    })?;
    if let Some(msg) = info.error {
        return Err(RequestError::new(ErrorKind::ServerError, msg));
    }
    ex.completion_tokens = info.completion_tokens;
    ex.prompt_tokens = info.prompt_tokens;
    ex.reasoning_tokens = info.reasoning_tokens;
    ex.timings = info.timings;
    ex.add_server_tokens(info.tokens);
    if info.content_bytes > 0 {
        ex.content_at(t);
        ex.split_reasoning(t, info.content_bytes, info.reasoning_bytes);
        if info.tool_bytes > 0 {
            ex.first_tool_token_ns = Some(t);
        }
    }
    Ok(())
}
