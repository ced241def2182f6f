//! A worker's own HTTP/2 connection for gRPC calls, driven by the worker's task itself.
//!
//! A general gRPC client runs each connection in a task of its own: that task reads the socket and
//! hands every message to the calling task through a channel and a wake-up. With a hundred
//! streamed responses per request, those hand-offs (and the worker threads woken to run them)
//! cost more than the rest of the request (measured against the instant simulator, 100-token
//! streams at concurrency 64: 47 µs of CPU per request through tonic's pooled channels; see
//! `scripts/bench_client.sh`). Here each worker owns one connection, as it does over HTTP/1.1,
//! and polls it inline while it waits for its own call: the socket is read, frames are decoded
//! by `h2`, and the worker takes the data straight from the stream's buffer.
//!
//! Wire format of a call (gRPC over HTTP/2): a `POST` of `/inference.GRPCInferenceService/<rpc>`
//! with `content-type: application/grpc` and `te: trailers`; request and response bodies are
//! messages, each prefixed by a compressed flag (1 byte) and its length (4 bytes, big-endian);
//! the call's status comes in the trailers (`grpc-status`, `grpc-message`), or in the response
//! headers when the server sends no message at all ("trailers-only").

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use h2::client::{Connection, SendRequest};
use http::{HeaderMap, HeaderValue, Request, Uri};

use super::h1::{Stream, TlsDial};
use super::{error_chain, failure};
use crate::record::{ErrorKind, RequestError};

/// Flow-control window of each call: what the server may send before the worker has read any of
/// it. Text streams never come near it; tensor responses of megabytes arrive in fewer rounds.
const STREAM_WINDOW: u32 = 8 << 20;
/// The connection's window (one call at a time uses it).
const CONNECTION_WINDOW: u32 = 16 << 20;
/// Largest frame the server may send: fewer frames for large tensors.
const MAX_FRAME: u32 = 1 << 20;
/// Largest response header block accepted.
const MAX_HEADER_LIST: u32 = 1 << 20;
/// How long connecting (TCP, TLS and the HTTP/2 settings exchange) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where calls go and what every call carries, rendered once.
#[derive(Debug, Clone)]
pub struct GrpcTarget {
    addr: String,
    tls: Option<TlsDial>,
    base: String,
    headers: HeaderMap,
}

impl GrpcTarget {
    /// For a `http://` or `https://` base URL (with its TLS), sending `metadata` on every call.
    pub fn new(
        base_url: &str,
        tls: Option<TlsDial>,
        metadata: HeaderMap,
    ) -> Result<GrpcTarget, crate::error::UsageError> {
        let (host, port) = super::tls::host_port(base_url)
            .ok_or_else(|| crate::error::UsageError(format!("invalid gRPC address {base_url}")))?;
        let addr = format!("{}:{port}", crate::target::bracket_host(&host));
        let mut headers = metadata;
        headers.insert("content-type", HeaderValue::from_static("application/grpc"));
        headers.insert("te", HeaderValue::from_static("trailers"));
        headers.insert(
            "user-agent",
            HeaderValue::from_static(concat!("ttftbench/", env!("CARGO_PKG_VERSION"))),
        );
        Ok(GrpcTarget {
            addr,
            tls,
            base: base_url.trim_end_matches('/').to_string(),
            headers,
        })
    }

    /// The URI of a method (`path`: `/package.Service/Method`).
    pub fn uri(&self, path: &str) -> Result<Uri, crate::error::UsageError> {
        format!("{}{path}", self.base).parse().map_err(|e| {
            crate::error::UsageError(format!("invalid gRPC address {}: {e}", self.base))
        })
    }
}

/// One HTTP/2 connection, polled by whichever call is waiting on it.
pub struct GrpcConn {
    send: SendRequest<Bytes>,
    io: Io,
}

/// The connection's reading and writing side.
struct Io {
    conn: Connection<Stream, Bytes>,
    /// Set when the connection future has finished: `Some(None)` closed cleanly, `Some(Some(e))`
    /// failed.
    closed: Option<Option<h2::Error>>,
}

impl std::fmt::Debug for GrpcConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcConn")
            .field("closed", &self.io.closed.is_some())
            .finish()
    }
}

/// Opens a connection and completes the HTTP/2 settings exchange (a PING answered means the
/// server's settings have been read), so no call's time includes connection setup.
pub async fn connect(t: &GrpcTarget) -> Result<GrpcConn, RequestError> {
    let setup = async {
        let stream = super::h1::open(&t.addr, t.tls.as_ref()).await?;
        let (send, mut conn) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .max_frame_size(MAX_FRAME)
            .max_header_list_size(MAX_HEADER_LIST)
            .enable_push(false)
            .handshake::<Stream, Bytes>(stream)
            .await
            .map_err(|e| connect_error(&t.addr, &e))?;
        let ping = conn.ping_pong();
        let mut c = GrpcConn {
            send,
            io: Io { conn, closed: None },
        };
        if let Some(mut p) = ping {
            c.drive(p.ping(h2::Ping::opaque()))
                .await
                .and_then(|r| r.map_err(|e| transport_error(&e)))
                .map_err(|e| RequestError::new(e.kind, format!("{}: {}", t.addr, e.message)))?;
        }
        Ok(c)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, setup)
        .await
        .unwrap_or_else(|_| {
            Err(RequestError::new(
                ErrorKind::Connect,
                format!("connecting to {} timed out", t.addr),
            ))
        })
}

fn connect_error(addr: &str, e: &h2::Error) -> RequestError {
    RequestError::new(
        failure::chain_kind(e).unwrap_or(ErrorKind::Connect),
        format!("HTTP/2 setup with {addr} failed: {}", error_chain(e)),
    )
}

/// A transport failure as a request error: reset, GOAWAY and I/O errors by kind; anything else
/// `h2` refused (a frame that breaks the protocol) is a malformed response.
pub fn transport_error(e: &h2::Error) -> RequestError {
    let kind = failure::chain_kind(e).unwrap_or(if e.is_io() {
        ErrorKind::ConnectionReset
    } else {
        ErrorKind::MalformedResponse
    });
    RequestError::new(kind, error_chain(e))
}

impl GrpcConn {
    /// Whether the connection can take another call: it is polled once, so a GOAWAY or a close
    /// that arrived while it was idle is seen now rather than by the next call.
    pub async fn is_open(&mut self) -> bool {
        if self.io.closed.is_none() {
            std::future::poll_fn(|cx| {
                self.io.poll_conn(cx);
                Poll::Ready(())
            })
            .await;
        }
        self.io.closed.is_none()
    }

    /// Whether the connection has ended (as last seen; nothing is read).
    pub fn is_closed(&self) -> bool {
        self.io.closed.is_some()
    }

    /// Waits for `fut` (a call's own step) while reading and writing the connection.
    pub async fn drive<F: Future>(&mut self, fut: F) -> Result<F::Output, RequestError> {
        self.io.drive(fut).await
    }

    /// Starts a call of `uri`: sends the headers and the request message (`head`, then `body`)
    /// and half-closes the request side. Returns the response, still to be awaited with
    /// [`GrpcConn::drive`].
    pub async fn start(
        &mut self,
        t: &GrpcTarget,
        uri: &Uri,
        head: Bytes,
        body: Bytes,
    ) -> Result<h2::client::ResponseFuture, RequestError> {
        let send = &mut self.send;
        let ready = std::future::poll_fn(|cx| send.poll_ready(cx));
        self.io
            .drive(ready)
            .await?
            .map_err(|e| transport_error(&e))?;
        let mut req = Request::new(());
        *req.method_mut() = http::Method::POST;
        *req.uri_mut() = uri.clone();
        *req.headers_mut() = t.headers.clone();
        let (response, mut stream) = self
            .send
            .send_request(req, false)
            .map_err(|e| transport_error(&e))?;
        stream
            .send_data(head, false)
            .and_then(|()| stream.send_data(body, true))
            .map_err(|e| transport_error(&e))?;
        Ok(response)
    }
}

impl Io {
    fn poll_conn(&mut self, cx: &mut Context<'_>) {
        if self.closed.is_none()
            && let Poll::Ready(r) = Pin::new(&mut self.conn).poll(cx)
        {
            self.closed = Some(r.err());
        }
    }

    /// Waits for `fut` while reading and writing the connection. `fut` is polled first, so data
    /// already read costs no system call; the connection is polled only when `fut` has to wait.
    ///
    /// `fut` is polled with a waker that does nothing: everything that can make it ready happens
    /// inside the connection's poll, which this task makes itself (and whose socket wakes it).
    /// With the task's own waker, `h2` would wake the task from inside its own poll for every
    /// message it reads, and the runtime would hand each such wake-up to another thread (a futex
    /// call and a context switch per token; against Triton at concurrency 32, 38 885 futex calls
    /// for 200 requests against 2 458 over HTTP).
    async fn drive<F: Future>(&mut self, fut: F) -> Result<F::Output, RequestError> {
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            let mut quiet = Context::from_waker(std::task::Waker::noop());
            if let Poll::Ready(v) = fut.as_mut().poll(&mut quiet) {
                return Poll::Ready(Ok(v));
            }
            if self.closed.is_none() {
                self.poll_conn(cx);
                if let Poll::Ready(v) = fut.as_mut().poll(&mut quiet) {
                    return Poll::Ready(Ok(v));
                }
            }
            match &self.closed {
                None => Poll::Pending,
                Some(Some(e)) => Poll::Ready(Err(transport_error(e))),
                Some(None) => Poll::Ready(Err(RequestError::new(
                    ErrorKind::ConnectionReset,
                    "the server closed the HTTP/2 connection",
                ))),
            }
        })
        .await
    }
}

impl Drop for GrpcConn {
    /// A call dropped half-way (a cancelled or timed-out request) may have queued a
    /// `RST_STREAM` that no later request wrote; one last poll writes it, so the server stops
    /// generating before it sees the close.
    fn drop(&mut self) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        self.io.poll_conn(&mut cx);
    }
}

/// The next step of reading a call's response messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    More,
    /// The final response has been read.
    Final,
}

/// Splits a chunk of a response body into gRPC messages, joining a message cut across chunks in
/// `partial`; calls `each` with every complete message, in order, until it says
/// [`Flow::Final`]. A message longer than `max` bytes, or compressed (none is asked for), fails
/// the call.
pub fn deframe(
    mut chunk: &[u8],
    partial: &mut Vec<u8>,
    max: usize,
    mut each: impl FnMut(&[u8]) -> Result<Flow, RequestError>,
) -> Result<Flow, RequestError> {
    if !partial.is_empty() {
        if partial.len() < 5 {
            let take = (5 - partial.len()).min(chunk.len());
            partial.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if partial.len() < 5 {
                return Ok(Flow::More);
            }
        }
        let len = message_len(partial, max)?;
        let take = (5 + len - partial.len()).min(chunk.len());
        partial.extend_from_slice(&chunk[..take]);
        chunk = &chunk[take..];
        if partial.len() < 5 + len {
            return Ok(Flow::More);
        }
        let flow = each(&partial[5..]);
        partial.clear();
        if flow? == Flow::Final {
            return Ok(Flow::Final);
        }
    }
    while chunk.len() >= 5 {
        let len = message_len(chunk, max)?;
        if chunk.len() < 5 + len {
            break;
        }
        if each(&chunk[5..5 + len])? == Flow::Final {
            return Ok(Flow::Final);
        }
        chunk = &chunk[5 + len..];
    }
    partial.extend_from_slice(chunk);
    Ok(Flow::More)
}

/// The length of the message whose 5-byte prefix starts `b`.
fn message_len(b: &[u8], max: usize) -> Result<usize, RequestError> {
    let len = u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
    match b[0] {
        0 => {}
        1 => {
            return Err(RequestError::new(
                ErrorKind::MalformedResponse,
                "the server sent a compressed message although the call asked for none",
            ));
        }
        f => {
            return Err(RequestError::new(
                ErrorKind::MalformedResponse,
                format!("a response message starts with flag {f} (0 or 1 expected)"),
            ));
        }
    }
    if len > max {
        return Err(RequestError::new(
            ErrorKind::ResponseTooLarge,
            format!("a response message of {len} bytes passed the limit of {max} bytes"),
        ));
    }
    Ok(len)
}

/// A call's status from its trailers (or trailers-only headers): the code, and the message
/// percent-decoded; `None` when the block has no `grpc-status`.
///
/// Read here rather than by tonic's `Status::from_header_map`, which panics on a
/// `grpc-status-details-bin` that is not base64: a hostile server must not crash the client.
pub fn status_of(h: &HeaderMap) -> Option<(i32, String)> {
    let code = h.get("grpc-status")?;
    let code = std::str::from_utf8(code.as_bytes())
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2); // UNKNOWN, as gRPC reads an unparsable status
    let message = h
        .get("grpc-message")
        .map(|v| percent_decode(v.as_bytes()))
        .unwrap_or_default();
    Some((code, message))
}

/// `grpc-message` is percent-encoded UTF-8 (gRPC's HTTP/2 protocol); undecodable input is kept as
/// it came.
fn percent_decode(v: &[u8]) -> String {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if v[i] == b'%'
            && i + 2 < v.len()
            && let (Some(h), Some(l)) = (hex(v[i + 1]), hex(v[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(v[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The gRPC code a response without `grpc-status` stands for, from its HTTP status (gRPC's
/// mapping for responses that did not come from a gRPC server).
pub fn code_of_http_status(status: u16) -> i32 {
    match status {
        400 => 13,                   // INTERNAL
        401 => 16,                   // UNAUTHENTICATED
        403 => 7,                    // PERMISSION_DENIED
        404 => 12,                   // UNIMPLEMENTED
        429 | 502 | 503 | 504 => 14, // UNAVAILABLE
        _ => 2,                      // UNKNOWN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(msgs: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in msgs {
            out.push(0);
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    /// Every split of a body into two chunks yields the same messages.
    #[test]
    fn messages_are_found_across_every_cut() {
        let body = framed(&[b"one", b"", b"three33", &[7u8; 300]]);
        for cut in 0..=body.len() {
            let mut partial = Vec::new();
            let mut got: Vec<Vec<u8>> = Vec::new();
            for chunk in [&body[..cut], &body[cut..]] {
                let flow = deframe(chunk, &mut partial, 1000, |m| {
                    got.push(m.to_vec());
                    Ok(Flow::More)
                })
                .unwrap();
                assert_eq!(flow, Flow::More);
            }
            assert!(partial.is_empty(), "cut {cut}");
            assert_eq!(got.len(), 4, "cut {cut}");
            assert_eq!(got[2], b"three33");
            assert_eq!(got[3], vec![7u8; 300]);
        }
    }

    #[test]
    fn byte_by_byte_and_final_stops() {
        let body = framed(&[b"a", b"final", b"after"]);
        let mut partial = Vec::new();
        let mut got = Vec::new();
        let mut flow = Flow::More;
        for b in &body {
            flow = deframe(std::slice::from_ref(b), &mut partial, 10, |m| {
                got.push(m.to_vec());
                Ok(if m == b"final" {
                    Flow::Final
                } else {
                    Flow::More
                })
            })
            .unwrap();
            if flow == Flow::Final {
                break;
            }
        }
        assert_eq!(flow, Flow::Final);
        assert_eq!(got, [b"a".to_vec(), b"final".to_vec()]);
    }

    #[test]
    fn oversized_and_compressed_messages_fail() {
        let body = framed(&[&[1u8; 11]]);
        let e = deframe(&body, &mut Vec::new(), 10, |_| Ok(Flow::More)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ResponseTooLarge);
        assert!(e.message.contains("11 bytes"), "{}", e.message);
        // Known before the message itself has arrived.
        let e = deframe(&body[..5], &mut Vec::new(), 10, |_| Ok(Flow::More)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ResponseTooLarge);
        let mut body = framed(&[b"x"]);
        body[0] = 1;
        let e = deframe(&body, &mut Vec::new(), 10, |_| Ok(Flow::More)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::MalformedResponse);
        assert!(e.message.contains("compressed"), "{}", e.message);
    }

    #[test]
    fn status_from_trailers() {
        let mut h = HeaderMap::new();
        assert_eq!(status_of(&h), None);
        h.insert("grpc-status", HeaderValue::from_static("8"));
        h.insert(
            "grpc-message",
            HeaderValue::from_static("queue%20full%3A 100%25 %zz"),
        );
        assert_eq!(status_of(&h), Some((8, "queue full: 100% %zz".to_string())));
        h.insert("grpc-status", HeaderValue::from_static("x"));
        assert_eq!(status_of(&h).unwrap().0, 2);
        assert_eq!(code_of_http_status(404), 12);
        assert_eq!(code_of_http_status(503), 14);
        assert_eq!(code_of_http_status(500), 2);
    }
}
