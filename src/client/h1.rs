//! A minimal HTTP/1.1 client for HTTP and HTTPS targets. Each worker owns one keep-alive
//! connection and reads responses straight off the socket: every read is timestamped the moment
//! it returns, and the body is unframed (chunked or sized), split into server-sent events and read
//! as JSON in place — no body channel, no task hand-off, no allocation per token. (A general HTTP
//! client delivers each chunk of a streamed body through a channel to the reading task, which
//! costs a wake-up per token and dominated the client's CPU.) HTTPS runs the same loop over a
//! rustls stream ([`Stream::Tls`]): the read returns decrypted bytes, timestamped as it returns,
//! so reads, timestamps and the bounds on hostile streams are shared.
//!
//! Requests are written as `METHOD path HTTP/1.1` with `Host`, `Content-Type`, `Content-Length`,
//! the user's headers, and the body. Responses may be chunked, sized, or read to close.
//!
//! A connection is reused only while the server can be expected to take another request on it
//! ([`H1Conn::usable`]): not after `Connection: close`, an HTTP/1.0 answer or a failed exchange,
//! not once `Keep-Alive: max` is spent or its `timeout` has (nearly) passed while idle, not when
//! the server has closed it while idle (a non-blocking read sees EOF). Servers also close without
//! saying so (llama.cpp's server after every stream, while announcing `Keep-Alive: timeout=5,
//! max=100`), and a close can cross a request on the wire; such a request fails on the reused
//! connection before any byte of a response arrives ([`H1Conn::reused`] tells the caller), and the
//! caller sends it again on a fresh connection.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use reqwest::header::HeaderMap;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::request_id::RequestIds;
use crate::record::{Clock, ErrorKind, RequestError};

/// TLS for an `https://` target: the connector (the target's rustls configuration, offering one
/// protocol by ALPN) and the name the server's certificate must carry.
#[derive(Clone)]
pub struct TlsDial {
    connector: tokio_rustls::TlsConnector,
    name: rustls::pki_types::ServerName<'static>,
}

impl std::fmt::Debug for TlsDial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsDial").field("name", &self.name).finish()
    }
}

impl TlsDial {
    /// TLS to `host` with `ctx`'s verifier and client certificate, offering `alpn`
    /// ([`super::tls::ALPN_HTTP1`] here, [`super::tls::ALPN_H2`] for gRPC).
    pub fn new(
        ctx: &super::tls::TlsContext,
        host: &str,
        alpn: &[u8],
    ) -> Result<TlsDial, crate::error::UsageError> {
        let config = ctx.client_config(&[alpn])?;
        Ok(TlsDial {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            name: super::tls::server_name(host)?,
        })
    }
}

/// Where and how requests are written, rendered once.
#[derive(Debug, Clone)]
pub struct H1Target {
    addr: String,
    /// `POST /path HTTP/1.1\r\nHost: ...\r\n` plus the user's headers; content type and length
    /// follow per request.
    head: Vec<u8>,
    /// TLS, for `https://`.
    tls: Option<TlsDial>,
    /// Acknowledge every read at once (`--tcp-quickack`).
    quickack: bool,
}

impl H1Target {
    /// With `--tcp-quickack`: after every read the kernel is asked to acknowledge at once instead
    /// of delaying the ACK (Linux `TCP_QUICKACK`, which the kernel clears again by itself), so a
    /// server that sends with Nagle's algorithm on is not held up by the client's delayed ACK.
    pub fn with_quickack(mut self, on: bool) -> H1Target {
        self.quickack = on;
        self
    }

    /// For an `http://` URL, or an `https://` one with its TLS; `None` for other schemes (or
    /// `https://` without TLS settings).
    pub fn new(url: &reqwest::Url, headers: &HeaderMap, tls: Option<TlsDial>) -> Option<H1Target> {
        let tls = match (url.scheme(), tls) {
            ("http", _) => None,
            ("https", Some(t)) => Some(t),
            _ => return None,
        };
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let host_header = match url.port() {
            Some(p) => format!(
                "{}:{p}",
                if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.to_string()
                }
            ),
            None => host.to_string(),
        };
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let mut head =
            format!("POST {path} HTTP/1.1\r\nHost: {host_header}\r\nAccept: */*\r\n").into_bytes();
        for (name, value) in headers {
            head.extend_from_slice(name.as_str().as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value.as_bytes());
            head.extend_from_slice(b"\r\n");
        }
        Some(H1Target {
            addr,
            head,
            tls,
            quickack: false,
        })
    }
}

/// The read buffer a connection starts with: room for a streamed token's event or a small
/// response, so ten thousand idle streams cost little.
const FIRST_READ_BUF: usize = 4 * 1024;
/// The read buffer's limit. A read that fills the buffer doubles it up to this, so a server that
/// sends a whole response at once is read in one system call (the first read of a 19 KB stream
/// into 16 KB cost a second read, its wake-up and a copy of the cut event).
const MAX_READ_BUF: usize = 256 * 1024;
/// The longest response head accepted; a head that does not end by then is malformed.
const MAX_HEAD: usize = 64 * 1024;

/// A connection's byte stream: plain TCP, or TLS over it.
#[derive(Debug)]
pub enum Stream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://`: reads return decrypted bytes.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    /// Asks the kernel to acknowledge what has arrived now rather than after its delayed-ACK
    /// timer (Linux only; elsewhere nothing). The flag does not stick: it is set after each read.
    fn quickack(&self) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = match self {
                Stream::Plain(s) => s.as_raw_fd(),
                Stream::Tls(s) => s.get_ref().0.as_raw_fd(),
            };
            let one: libc::c_int = 1;
            // SAFETY: a socket option of one int on a socket this stream owns.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::IPPROTO_TCP,
                    libc::TCP_QUICKACK,
                    (&one as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, b),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, b),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One keep-alive connection with its read buffer.
#[derive(Debug)]
pub struct H1Conn {
    stream: Stream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Reusable for another request.
    pub reusable: bool,
    /// When the latest read returned (run clock, ns): the arrival time of what it read.
    last_read_ns: u64,
    /// Responses read whole on this connection.
    served: u32,
    /// Requests the server said it still takes on this connection (`Keep-Alive: max`).
    max_left: Option<u32>,
    /// How long the server keeps it open while idle (`Keep-Alive: timeout`).
    idle_timeout: Option<std::time::Duration>,
    /// When the last response ended.
    idle_since: Option<std::time::Instant>,
    /// Whether the last response was an event stream.
    last_streamed: bool,
    /// Ask the kernel to acknowledge every read at once (`--tcp-quickack`).
    quickack: bool,
}

/// A `Keep-Alive: timeout` this close to passing counts as passed: the server's timer and ours
/// started a round trip apart, and a request sent into the server's close would fail.
const IDLE_MARGIN: std::time::Duration = std::time::Duration::from_millis(250);

/// Opens a connection.
pub async fn connect(t: &H1Target) -> Result<H1Conn, RequestError> {
    Ok(H1Conn {
        stream: open(&t.addr, t.tls.as_ref()).await?,
        buf: vec![0; FIRST_READ_BUF],
        start: 0,
        end: 0,
        reusable: true,
        last_read_ns: 0,
        served: 0,
        max_left: None,
        idle_timeout: None,
        idle_since: None,
        last_streamed: false,
        quickack: t.quickack,
    })
}

/// Opens a TCP connection to `addr` (no Nagle delay), with TLS over it when `tls` is given.
pub async fn open(addr: &str, tls: Option<&TlsDial>) -> Result<Stream, RequestError> {
    let stream = TcpStream::connect(addr).await.map_err(|e| {
        RequestError::new(
            super::failure::io_kind(&e, ErrorKind::Connect),
            format!("cannot connect to {addr}: {e}"),
        )
    })?;
    let _ = stream.set_nodelay(true);
    let Some(tls) = tls else {
        return Ok(Stream::Plain(stream));
    };
    let s = tls
        .connector
        .connect(tls.name.clone(), stream)
        .await
        .map_err(|e| {
            let msg = super::tls::describe_io(&e, addr)
                .unwrap_or_else(|| format!("TLS handshake with {addr} failed: {e}"));
            RequestError::new(super::failure::io_kind(&e, ErrorKind::Connect), msg)
        })?;
    Ok(Stream::Tls(Box::new(s)))
}

impl H1Conn {
    /// Whether another request may be sent on this idle connection: the server neither closed it
    /// nor said it would (see the module's notes). Finding out before sending keeps reconnects
    /// out of measured time.
    pub fn usable(&mut self) -> bool {
        if !self.reusable || self.max_left == Some(0) {
            return false;
        }
        if let (Some(timeout), Some(since)) = (self.idle_timeout, self.idle_since)
            && since.elapsed() + IDLE_MARGIN >= timeout
        {
            return false;
        }
        self.is_open()
    }

    /// Whether a request was already answered on this connection.
    pub fn reused(&self) -> bool {
        self.served > 0
    }

    /// Whether the last response on it was an event stream.
    pub fn last_streamed(&self) -> bool {
        self.last_streamed
    }

    /// A response was read whole: the connection may serve another as its head allows.
    pub fn finished(&mut self, head: &Head) {
        self.served += 1;
        self.idle_since = Some(std::time::Instant::now());
        self.last_streamed = head.sse;
        if head.keep_alive_max.is_some() {
            self.max_left = head.keep_alive_max;
        }
        if head.keep_alive_timeout.is_some() {
            self.idle_timeout = head.keep_alive_timeout;
        }
    }

    /// Whether the connection is still open (EOF or unasked-for bytes make it unusable).
    fn is_open(&mut self) -> bool {
        if !self.reusable {
            return false;
        }
        let mut probe = [0u8; 1];
        match &mut self.stream {
            Stream::Plain(s) => match s.try_read(&mut probe) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
                // EOF, an error, or bytes nobody asked for: not usable.
                _ => false,
            },
            // TLS records (session tickets) may arrive between responses: a read that takes
            // them returns no data and would wait, so the connection is open; EOF, a
            // close_notify, an error or unasked-for data make it unusable.
            Stream::Tls(s) => {
                let waker = std::task::Waker::noop();
                let mut cx = Context::from_waker(waker);
                let mut buf = ReadBuf::new(&mut probe);
                matches!(
                    Pin::new(s.as_mut()).poll_read(&mut cx, &mut buf),
                    Poll::Pending
                )
            }
        }
    }

    /// Writes one request: the target's head, its id header, its session header line, content
    /// type, length, extra header, body. Returns when the last byte has been handed to the
    /// kernel.
    pub async fn send(
        &mut self,
        t: &H1Target,
        (content_type, id): (&str, Option<(&RequestIds, u64)>),
        extra: Option<(&str, usize)>,
        session: Option<&[u8]>,
        body: &[u8],
        scratch: &mut Vec<u8>,
    ) -> io::Result<()> {
        scratch.clear();
        scratch.extend_from_slice(&t.head);
        if let Some((ids, seq)) = id {
            ids.push_header(seq, scratch);
        }
        if let Some(line) = session {
            scratch.extend_from_slice(line);
        }
        scratch.extend_from_slice(b"Content-Type: ");
        scratch.extend_from_slice(content_type.as_bytes());
        scratch.extend_from_slice(b"\r\nContent-Length: ");
        push_decimal(scratch, body.len());
        scratch.extend_from_slice(b"\r\n");
        if let Some((name, value)) = extra {
            scratch.extend_from_slice(name.as_bytes());
            scratch.extend_from_slice(b": ");
            push_decimal(scratch, value);
            scratch.extend_from_slice(b"\r\n");
        }
        scratch.extend_from_slice(b"\r\n");
        // Small bodies travel in the same write as the head; large tensors are written from the
        // shared buffer without copying.
        if body.len() <= 64 * 1024 {
            scratch.extend_from_slice(body);
            self.stream.write_all(scratch).await?;
        } else {
            self.stream.write_all(scratch).await?;
            self.stream.write_all(body).await?;
        }
        // TLS may hold the last record until flushed; for TCP this is a no-op.
        self.stream.flush().await
    }

    /// [`Self::fill`] within a response: a failed read spends the connection and becomes a
    /// request error that says what was being read.
    async fn fill_or_fail(&mut self, clock: &Clock, reading: &str) -> Result<usize, RequestError> {
        self.fill(clock).await.map_err(|e| {
            self.reusable = false;
            RequestError::new(
                super::failure::io_kind(&e, ErrorKind::StreamCut),
                format!("{reading}: {e}"),
            )
        })
    }

    /// Reads more bytes into the buffer and timestamps them; returns how many (0 at EOF).
    async fn fill(&mut self, clock: &Clock) -> io::Result<usize> {
        if self.start > 0 && self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                // Only an unfinished head or chunk-size line is kept unconsumed, and both are
                // bounded by their callers: this stays below MAX_HEAD + MAX_READ_BUF.
                let n = self.buf.len() * 2;
                self.buf.resize(n, 0);
            }
        }
        let room = self.buf.len() - self.end;
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        // Taken as the read returns, before anything is parsed.
        self.last_read_ns = clock.now_ns();
        if self.quickack {
            self.stream.quickack();
        }
        self.end += n;
        if n == room && self.buf.len() < MAX_READ_BUF {
            // More was probably waiting: read it in one go next time.
            let len = (self.buf.len() * 2).min(MAX_READ_BUF);
            self.buf.resize(len, 0);
        }
        Ok(n)
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Reads the response head; returns it with the arrival time of its first byte.
    pub async fn read_head(&mut self, clock: &Clock) -> Result<(Head, u64), RequestError> {
        let mut first: Option<u64> = None;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(self.available()) {
                Ok(httparse::Status::Complete(len)) => {
                    let head = Head::from_parsed(&resp)?;
                    self.start += len;
                    return Ok((head, first.unwrap_or(self.last_read_ns)));
                }
                Ok(httparse::Status::Partial) if self.available().len() > MAX_HEAD => {
                    self.reusable = false;
                    return Err(RequestError::new(
                        ErrorKind::MalformedResponse,
                        format!("the response head did not end within {MAX_HEAD} bytes"),
                    ));
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => {
                    self.reusable = false;
                    return Err(RequestError::new(
                        ErrorKind::MalformedResponse,
                        format!("invalid HTTP response head: {e}"),
                    ));
                }
            }
            let n = self
                .fill_or_fail(clock, "reading the response head")
                .await?;
            if n == 0 {
                self.reusable = false;
                return Err(RequestError::new(
                    ErrorKind::ConnectionReset,
                    "the server closed the connection before responding",
                ));
            }
            first.get_or_insert(self.last_read_ns);
        }
    }

    /// Reads the body, calling `data(bytes, t)` with each piece of unframed payload and the
    /// arrival time of the read that brought it. Stops early (and marks the connection
    /// unusable) when `data` returns `false`.
    pub async fn read_body(
        &mut self,
        framing: Framing,
        clock: &Clock,
        mut data: impl FnMut(&[u8], u64) -> bool,
    ) -> Result<(), RequestError> {
        let mut state = match framing {
            Framing::Chunked => Unframe::ChunkSize,
            Framing::Length(0) => return Ok(()),
            Framing::Length(n) => Unframe::Sized(n),
            Framing::Close => {
                self.reusable = false;
                Unframe::ToClose
            }
        };
        loop {
            // Consume what is buffered.
            loop {
                let avail = self.available();
                match &mut state {
                    Unframe::Done => return Ok(()),
                    Unframe::Sized(rem) | Unframe::ChunkData(rem) => {
                        if avail.is_empty() {
                            break;
                        }
                        let take = (*rem).min(avail.len() as u64) as usize;
                        let keep_going = data(&avail[..take], self.last_read_ns);
                        self.start += take;
                        *rem -= take as u64;
                        if !keep_going {
                            self.reusable = false;
                            return Ok(());
                        }
                        if *rem == 0 {
                            state = match state {
                                Unframe::Sized(_) => Unframe::Done,
                                _ => Unframe::ChunkCrlf,
                            };
                        }
                    }
                    Unframe::ToClose => {
                        if avail.is_empty() {
                            break;
                        }
                        let n = avail.len();
                        let keep_going = data(avail, self.last_read_ns);
                        self.start += n;
                        if !keep_going {
                            return Ok(());
                        }
                    }
                    Unframe::ChunkSize => match memchr::memchr(b'\n', avail) {
                        None if avail.len() > 1024 => {
                            return Err(self.malformed("chunk size line too long"));
                        }
                        None => break,
                        Some(i) => {
                            let line = &avail[..i];
                            let hex = line.split(|&c| c == b';').next().unwrap_or_default();
                            let hex = std::str::from_utf8(hex).unwrap_or("").trim();
                            let size = u64::from_str_radix(hex, 16)
                                .map_err(|_| self.malformed("invalid chunk size"))?;
                            self.start += i + 1;
                            state = if size == 0 {
                                Unframe::Trailers
                            } else {
                                Unframe::ChunkData(size)
                            };
                        }
                    },
                    Unframe::ChunkCrlf => {
                        if avail.is_empty() || avail == b"\r" {
                            break;
                        }
                        match avail {
                            [b'\r', b'\n', ..] => self.start += 2,
                            [b'\n', ..] => self.start += 1,
                            _ => return Err(self.malformed("chunk data longer than its size")),
                        }
                        state = Unframe::ChunkSize;
                    }
                    Unframe::Trailers => match memchr::memchr(b'\n', avail) {
                        None if avail.len() > MAX_HEAD => {
                            return Err(self.malformed("trailer line too long"));
                        }
                        None => break,
                        Some(i) => {
                            let empty = avail[..i].iter().all(|c| *c == b'\r');
                            self.start += i + 1;
                            if empty {
                                state = Unframe::Done;
                            }
                        }
                    },
                }
            }
            if matches!(state, Unframe::Done) {
                return Ok(());
            }
            let n = self
                .fill_or_fail(clock, "the response body broke off")
                .await?;
            if n == 0 {
                if matches!(state, Unframe::ToClose) {
                    return Ok(());
                }
                self.reusable = false;
                return Err(RequestError::new(
                    ErrorKind::StreamCut,
                    "the response body broke off: connection closed before its end",
                ));
            }
        }
    }

    fn malformed(&mut self, what: &str) -> RequestError {
        self.reusable = false;
        RequestError::new(
            ErrorKind::MalformedResponse,
            format!("invalid chunked body: {what}"),
        )
    }
}

enum Unframe {
    ChunkSize,
    ChunkData(u64),
    ChunkCrlf,
    Trailers,
    Sized(u64),
    ToClose,
    Done,
}

/// A `Keep-Alive` header's `timeout` (seconds) and `max` parameters (RFC 2068 §19.7.1.1; what
/// servers send today), each when present and a number.
fn keep_alive(v: &str) -> (Option<std::time::Duration>, Option<u32>) {
    let (mut timeout, mut max) = (None, None);
    for part in v.split(',') {
        let Some((k, n)) = part.split_once('=') else {
            continue;
        };
        let n = n.trim().trim_matches('"');
        match k.trim().to_ascii_lowercase().as_str() {
            "timeout" => timeout = n.parse::<u64>().ok().map(std::time::Duration::from_secs),
            "max" => max = n.parse::<u32>().ok(),
            _ => {}
        }
    }
    (timeout, max)
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// `Content-Length`.
    Length(u64),
    /// Until the server closes the connection.
    Close,
}

/// What the response head said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Status code.
    pub status: u16,
    /// Reason phrase; kept only for a status other than 2xx (it only appears in errors).
    pub reason: String,
    /// `Content-Type`, lower-cased; kept only when it is not an event stream (it only appears
    /// in errors), so a streamed response costs no allocation here.
    pub content_type: String,
    /// Whether the body is a server-sent event stream.
    sse: bool,
    /// Body framing.
    pub framing: Framing,
    /// Whether the server keeps the connection open.
    pub keep_alive: bool,
    /// `Retry-After`, read only on a status other than 2xx.
    pub retry_after: Option<std::time::Duration>,
    /// `Keep-Alive: max=N`: requests the server still takes on the connection.
    pub keep_alive_max: Option<u32>,
    /// `Keep-Alive: timeout=N`: how long it keeps an idle connection.
    pub keep_alive_timeout: Option<std::time::Duration>,
}

impl Head {
    fn from_parsed(r: &httparse::Response<'_, '_>) -> Result<Head, RequestError> {
        let status = r.code.ok_or_else(|| {
            RequestError::new(ErrorKind::MalformedResponse, "response without a status")
        })?;
        let mut content_type = String::new();
        let mut sse = false;
        let mut chunked = false;
        let mut length = None;
        let mut close = r.version == Some(0);
        let mut retry_after = None;
        let (mut keep_alive_max, mut keep_alive_timeout) = (None, None);
        for h in r.headers.iter() {
            if !(200..300).contains(&status) && h.name.eq_ignore_ascii_case("retry-after") {
                retry_after = super::failure::retry_after(h.value);
            }
            let v = std::str::from_utf8(h.value).unwrap_or("").trim();
            if h.name.eq_ignore_ascii_case("content-type") {
                sse = starts_with_ci(v, "text/event-stream");
                content_type = if sse {
                    String::new()
                } else {
                    v.to_ascii_lowercase()
                };
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked |= contains_ci(v, "chunked");
            } else if h.name.eq_ignore_ascii_case("content-length") {
                length = v.parse::<u64>().ok();
            } else if h.name.eq_ignore_ascii_case("keep-alive") {
                (keep_alive_timeout, keep_alive_max) = keep_alive(v);
            } else if h.name.eq_ignore_ascii_case("connection") {
                if contains_ci(v, "close") {
                    close = true;
                } else if contains_ci(v, "keep-alive") {
                    close = false;
                }
            }
        }
        let framing = if chunked {
            Framing::Chunked
        } else if let Some(n) = length {
            Framing::Length(n)
        } else if status == 204 || status == 304 {
            Framing::Length(0)
        } else {
            Framing::Close
        };
        Ok(Head {
            status,
            reason: if (200..300).contains(&status) {
                String::new()
            } else {
                r.reason.unwrap_or("").to_string()
            },
            content_type,
            sse,
            framing,
            keep_alive: !close && framing != Framing::Close,
            retry_after,
            keep_alive_max,
            keep_alive_timeout,
        })
    }

    /// Whether the body is a server-sent event stream.
    pub fn is_sse(&self) -> bool {
        self.sse
    }
}

/// ASCII-case-insensitive prefix test, without lower-casing a copy.
pub(crate) fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// ASCII-case-insensitive substring test, without lower-casing a copy.
fn contains_ci(s: &str, needle: &str) -> bool {
    s.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

fn push_decimal(out: &mut Vec<u8>, v: usize) {
    let mut buf = [0u8; 20];
    out.extend_from_slice(super::wire::decimal(v as u64, &mut buf));
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// A server that answers one request with `response`, written in pieces of `piece` bytes.
    async fn serve_once(response: Vec<u8>, piece: usize) -> String {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut req = vec![0u8; 4096];
            let _ = s.read(&mut req).await;
            for c in response.chunks(piece.max(1)) {
                let _ = s.write_all(c).await;
                tokio::time::sleep(std::time::Duration::from_micros(200)).await;
            }
        });
        addr
    }

    async fn exchange(
        response: &[u8],
        piece: usize,
    ) -> (Head, Vec<u8>, Result<(), RequestError>, bool) {
        let addr = serve_once(response.to_vec(), piece).await;
        let url = reqwest::Url::parse(&format!("http://{addr}/v1/x")).unwrap();
        let t = H1Target::new(&url, &HeaderMap::new(), None).unwrap();
        let mut c = connect(&t).await.unwrap();
        let mut scratch = Vec::new();
        c.send(
            &t,
            ("application/json", None),
            None,
            None,
            b"{}",
            &mut scratch,
        )
        .await
        .unwrap();
        let clock = Clock::start();
        let (head, _) = c.read_head(&clock).await.unwrap();
        let mut body = Vec::new();
        let r = c
            .read_body(head.framing, &clock, |d, _| {
                body.extend_from_slice(d);
                true
            })
            .await;
        let reusable = c.reusable && head.keep_alive;
        (head, body, r, reusable)
    }

    #[tokio::test]
    async fn chunked_body_split_anywhere() {
        let resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n7\r\ndata: a\r\n4;ext=1\r\n\n\n\nx\r\n0\r\nTrailer: v\r\n\r\n";
        for piece in [1, 2, 3, 7, 1000] {
            let (head, body, r, reusable) = exchange(resp, piece).await;
            assert!(r.is_ok(), "piece {piece}: {r:?}");
            assert!(head.is_sse());
            assert_eq!(body, b"data: a\n\n\nx", "piece {piece}");
            assert!(reusable, "piece {piece}");
        }
    }

    #[tokio::test]
    async fn sized_and_close_delimited() {
        let (head, body, r, reusable) =
            exchange(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 2).await;
        assert!(r.is_ok());
        assert_eq!(
            (head.framing, body.as_slice(), reusable),
            (Framing::Length(5), &b"hello"[..], true)
        );
        let (head, body, r, reusable) = exchange(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
            4,
        )
        .await;
        assert!(r.is_ok());
        assert_eq!(
            (head.framing, body.as_slice(), reusable),
            (Framing::Close, &b"until the end"[..], false)
        );
    }

    #[tokio::test]
    async fn truncated_chunked_body_is_a_stream_cut() {
        let (_, body, r, reusable) = exchange(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            100,
        )
        .await;
        assert_eq!(r.unwrap_err().kind, ErrorKind::StreamCut);
        assert_eq!(body, b"hel");
        assert!(!reusable);
        let (_, _, r, _) = exchange(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            100,
        )
        .await;
        assert_eq!(r.unwrap_err().kind, ErrorKind::MalformedResponse);
    }

    #[test]
    fn request_head_rendering() {
        let url = reqwest::Url::parse("http://localhost:8000/api/v1/chat/completions?x=1").unwrap();
        let mut h = HeaderMap::new();
        h.insert("authorization", "Bearer k".parse().unwrap());
        let t = H1Target::new(&url, &h, None).unwrap();
        assert_eq!(t.addr, "localhost:8000");
        assert_eq!(
            String::from_utf8(t.head.clone()).unwrap(),
            "POST /api/v1/chat/completions?x=1 HTTP/1.1\r\nHost: localhost:8000\r\nAccept: */*\r\nauthorization: Bearer k\r\n"
        );
        assert!(H1Target::new(&reqwest::Url::parse("https://x/").unwrap(), &h, None).is_none());
        let mut v = Vec::new();
        push_decimal(&mut v, 1234567);
        assert_eq!(v, b"1234567");
    }
}
