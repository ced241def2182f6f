//! Server-level faults: an outage (listeners closed, open connections reset, then back on the
//! same ports), requests refused as rate-limited or unavailable with `Retry-After`, gRPC calls
//! reset mid-stream (`RST_STREAM`). GOAWAY is the gRPC server's own `max_connection_age`.
//!
//! The outage works on real sockets, as a killed and restarted server looks from outside: while
//! it lasts the listening socket does not exist (a connect is refused by the kernel), and every
//! connection accepted before it is shut down with `SO_LINGER` 0, so the peer reads an end of
//! stream or a reset in the middle of whatever it was doing.

use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::faults::{Admission, FaultConfig};
use super::state::SimState;

/// When the server is down.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outage {
    begins: Instant,
    ends: Instant,
}

impl Outage {
    /// The outage `cfg` asks for, timed from now (the server's start); `None` without one.
    pub(crate) fn from_config(cfg: &FaultConfig) -> Option<Outage> {
        (cfg.outage_ms > 0).then(|| {
            let begins = Instant::now() + Duration::from_millis(cfg.outage_after_ms);
            Outage {
                begins,
                ends: begins + Duration::from_millis(cfg.outage_ms),
            }
        })
    }
}

/// Open connections of one listener, by descriptor, so an outage can reset them.
#[derive(Debug, Default)]
struct Registry {
    fds: Mutex<HashSet<RawFd>>,
}

impl Registry {
    /// Shuts every registered connection down with an abortive close (`SO_LINGER` 0): the
    /// server's side sees end of stream at once and drops it, which sends the peer a reset.
    fn reset_all(&self) {
        let fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        for fd in fds.iter() {
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: the descriptor is open: a connection leaves the registry (under this lock)
            // before its socket is closed. Both calls only change that socket's state.
            unsafe {
                libc::setsockopt(
                    *fd,
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
                libc::shutdown(*fd, libc::SHUT_RDWR);
            }
        }
    }
}

/// An accepted connection, registered while it is open.
#[derive(Debug)]
pub(crate) struct Tracked {
    inner: TcpStream,
    registry: Arc<Registry>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // Leaves the registry before `inner` closes the descriptor (fields drop after this).
        let mut fds = self.registry.fds.lock().unwrap_or_else(|e| e.into_inner());
        fds.remove(&self.inner.as_raw_fd());
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for Tracked {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// A listener that goes away for the outage and comes back on the same address.
#[derive(Debug)]
pub(crate) struct OutageListener {
    listener: Option<TcpListener>,
    addr: SocketAddr,
    outage: Option<Outage>,
    registry: Arc<Registry>,
    /// The outage's reset of open connections has been done.
    reset_done: bool,
}

impl OutageListener {
    /// Wraps a bound listener; `outage` is when it will be down, if ever.
    pub(crate) fn new(listener: TcpListener, outage: Option<Outage>) -> io::Result<Self> {
        Ok(OutageListener {
            addr: listener.local_addr()?,
            listener: Some(listener),
            outage,
            registry: Arc::new(Registry::default()),
            reset_done: false,
        })
    }

    /// The next connection. During the outage nothing listens; after it, the address is bound
    /// again.
    pub(crate) async fn next(&mut self) -> (Tracked, SocketAddr) {
        loop {
            if let Some(o) = self.outage {
                let now = Instant::now();
                if now >= o.begins && now < o.ends {
                    self.listener = None;
                    if !self.reset_done {
                        self.registry.reset_all();
                        self.reset_done = true;
                    }
                    tokio::time::sleep_until(o.ends).await;
                    continue;
                }
            }
            let Some(listener) = self.listener.as_ref() else {
                match super::bind(self.addr.ip(), self.addr.port(), "restarted") {
                    Ok(l) => self.listener = Some(l),
                    // The port may be briefly unavailable; try again shortly.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
                continue;
            };
            let accepted = match self.outage {
                Some(o) if Instant::now() < o.begins => tokio::select! {
                    r = listener.accept() => Some(r),
                    _ = tokio::time::sleep_until(o.begins) => None,
                },
                _ => Some(listener.accept().await),
            };
            match accepted {
                None => continue,
                Some(Ok((stream, peer))) => {
                    let _ = stream.set_nodelay(true);
                    self.registry
                        .fds
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(stream.as_raw_fd());
                    let tracked = Tracked {
                        inner: stream,
                        registry: self.registry.clone(),
                    };
                    return (tracked, peer);
                }
                // Out of descriptors and the like: wait instead of spinning.
                Some(Err(_)) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    /// The connections as the stream of results tonic's server takes.
    pub(crate) fn incoming(
        self,
    ) -> impl futures_util::Stream<Item = Result<Tracked, io::Error>> + Send + 'static {
        futures_util::stream::unfold(self, |mut l| async move {
            let (conn, _) = l.next().await;
            Some((Ok(conn), l))
        })
    }
}

impl axum::serve::Listener for OutageListener {
    type Io = Tracked;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        self.next().await
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

/// Inference routes: the requests admission faults apply to.
fn is_inference(req: &Request) -> bool {
    let p = req.uri().path();
    req.method() == http::Method::POST
        && (p.ends_with("/generate")
            || p.ends_with("/generate_stream")
            || p.ends_with("/infer")
            || p.ends_with("/chat/completions")
            || p.ends_with("/completions"))
}

/// HTTP middleware: refuses a share of inference requests with 429 or 503 and `Retry-After`.
pub(crate) async fn admit_http(
    State(state): State<Arc<SimState>>,
    req: Request,
    next: Next,
) -> Response {
    if !is_inference(&req) {
        return next.run(req).await;
    }
    let status = match state.faults.admit() {
        Admission::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        Admission::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Admission::Pass | Admission::Reset => return next.run(req).await,
    };
    let secs = state.faults.config().retry_after_s;
    let body = serde_json::json!({"error": format!(
        "{}: injected fault, retry after {secs} s",
        status.canonical_reason().unwrap_or("refused")
    )});
    (
        status,
        [(http::header::RETRY_AFTER, secs.to_string())],
        axum::Json(body),
    )
        .into_response()
}

/// Inference RPCs of the gRPC service.
fn is_inference_rpc(path: &str) -> bool {
    path.ends_with("/ModelInfer") || path.ends_with("/ModelStreamInfer")
}

/// gRPC layer: refuses a share of inference calls (`RESOURCE_EXHAUSTED` / `UNAVAILABLE` with
/// `grpc-retry-pushback-ms`) and resets a share after their first response message.
#[derive(Clone)]
pub(crate) struct GrpcAdmission<S> {
    /// The gRPC routes.
    pub(crate) inner: S,
    /// Whose faults apply.
    pub(crate) state: Arc<SimState>,
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for GrpcAdmission<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let admission = if is_inference_rpc(req.uri().path()) {
            self.state.faults.admit()
        } else {
            Admission::Pass
        };
        let pushback_ms = self.state.faults.config().retry_after_s * 1000;
        let refuse = |status: tonic::Status| -> Self::Future {
            let mut status = status;
            if let Ok(v) = pushback_ms.to_string().parse() {
                status.metadata_mut().insert("grpc-retry-pushback-ms", v);
            }
            Box::pin(std::future::ready(Ok(status.into_http())))
        };
        match admission {
            Admission::RateLimited => refuse(tonic::Status::resource_exhausted(
                "injected fault: rate limited",
            )),
            Admission::Unavailable => {
                refuse(tonic::Status::unavailable("injected fault: unavailable"))
            }
            Admission::Reset => {
                let fut = self.inner.call(req);
                Box::pin(async move {
                    let resp = fut.await?;
                    Ok(resp.map(|body| {
                        tonic::body::Body::new(ResetAfterFirst {
                            body,
                            seen: 0,
                            reset: None,
                        })
                    }))
                })
            }
            Admission::Pass => Box::pin(self.inner.call(req)),
        }
    }
}

/// A response body that fails at its second data frame: hyper answers a failing body by
/// resetting the HTTP/2 stream (`RST_STREAM`).
struct ResetAfterFirst {
    body: tonic::body::Body,
    seen: u32,
    /// Armed at the second data frame: the reset waits for it. h2 drops a stream's queued
    /// data when the stream is reset, and when the tokens come in a burst (a busy machine) the
    /// connection task may not have written the first message yet: the client would see the
    /// reset alone, not a reset mid-stream.
    reset: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// How long the first message has to leave before the reset (a few connection-task polls).
const RESET_GRACE: Duration = Duration::from_millis(50);

impl http_body::Body for ResetAfterFirst {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, tonic::Status>>> {
        if let Some(grace) = self.reset.as_mut() {
            std::task::ready!(grace.as_mut().poll(cx));
            return Poll::Ready(Some(Err(tonic::Status::internal(
                "injected fault: stream reset",
            ))));
        }
        let frame = std::task::ready!(Pin::new(&mut self.body).poll_frame(cx));
        if let Some(Ok(f)) = &frame
            && f.is_data()
        {
            // The second message is replaced by the reset, once the first has left.
            if self.seen >= 1 {
                self.reset = Some(Box::pin(tokio::time::sleep(RESET_GRACE)));
                return self.poll_frame(cx);
            }
            self.seen += 1;
        }
        Poll::Ready(frame)
    }
}
