//! What kind of transport failure a request met (refused, reset, GOAWAY, stream reset,
//! rate-limited) and how long the server asked the client to wait before the next one.
//!
//! Kinds are read from the error itself — the `io::Error` kind or the HTTP/2 error found in the
//! source chain — never from message text.

use std::error::Error;
use std::io;
use std::time::Duration;

use crate::record::ErrorKind;

/// The kind of an I/O failure on a connection, `fallback` when it says nothing more specific.
pub fn io_kind(e: &io::Error, fallback: ErrorKind) -> ErrorKind {
    if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
        return ErrorKind::OpenFiles;
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ErrorKind::ConnectionReset,
        _ => fallback,
    }
}

/// The most specific kind found in an error's source chain: an I/O error's kind, or an HTTP/2
/// `GOAWAY` / `RST_STREAM`; `None` when nothing in the chain says more.
pub fn chain_kind(e: &(dyn Error + 'static)) -> Option<ErrorKind> {
    let mut cur: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            let k = io_kind(io, ErrorKind::Connect);
            if k != ErrorKind::Connect {
                return Some(k);
            }
        }
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            if h2.is_go_away() {
                return Some(ErrorKind::GoAway);
            }
            if h2.is_reset() {
                return Some(ErrorKind::StreamReset);
            }
            if let Some(io) = h2.get_io() {
                return Some(io_kind(io, ErrorKind::ConnectionReset));
            }
        }
        cur = err.source();
    }
    None
}

/// The wait a `Retry-After` header asks for: whole (or decimal) seconds. An HTTP date is not
/// read (`None`): the client's own backoff applies instead.
pub fn retry_after(value: &[u8]) -> Option<Duration> {
    wait(std::str::from_utf8(value).ok()?.trim().parse().ok()?)
}

/// The wait a gRPC status asks for: `grpc-retry-pushback-ms` (gRPC's retry pushback), else a
/// `retry-after` in seconds.
pub fn grpc_pushback(md: &http::HeaderMap) -> Option<Duration> {
    if let Some(v) = md.get("grpc-retry-pushback-ms") {
        let ms: f64 = v.to_str().ok()?.trim().parse().ok()?;
        return wait(ms / 1000.0);
    }
    md.get("retry-after")
        .and_then(|v| retry_after(v.as_bytes()))
}

/// Longest server-requested wait honoured; the run's end bounds it further.
const MAX_WAIT_S: f64 = 3600.0;

/// A wait of `secs` asked for by the server, when it is a wait at all.
fn wait(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(MAX_WAIT_S)))
}

/// The kind of a non-success HTTP status: 429, and 503 that says when to come back
/// (`Retry-After`), are rate limiting; anything else is its status code.
pub fn http_status_kind(status: u16, retry_after: Option<Duration>) -> ErrorKind {
    match status {
        429 => ErrorKind::RateLimited,
        503 if retry_after.is_some() => ErrorKind::RateLimited,
        s => ErrorKind::HttpStatus(s),
    }
}

/// What a Messages API's error body says about the server: Anthropic's errors are
/// `{"type":"error","error":{...}}`; an OpenAI-style `{"error":{"message":...}}` (or FastAPI's
/// `{"detail":...}`) comes from a server that speaks OpenAI's API at that address, or that
/// checks this request with its OpenAI machinery (vLLM's request validation). Appended to the
/// failure's message.
pub fn messages_error_note(body: &[u8]) -> &'static str {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return "";
    };
    let anthropic = v.get("type").and_then(|t| t.as_str()) == Some("error");
    let openai = v.get("error").is_some_and(|e| e.is_object()) || v.get("detail").is_some();
    if anthropic || !openai {
        return "";
    }
    " — an OpenAI-style error body, not Anthropic's {\"type\": \"error\", \"error\": {...}}: if -u points at an OpenAI-compatible server without Anthropic's Messages API, use --endpoint-type chat (or --endpoint PATH of its Messages route); otherwise fix what the message names"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_error_bodies() {
        let openai = br#"{"error":{"message":"field required","type":"Bad Request","code":400}}"#;
        assert!(messages_error_note(openai).contains("--endpoint-type chat"));
        assert!(messages_error_note(br#"{"detail":"Not Found"}"#).contains("OpenAI-style"));
        let anthropic = br#"{"type":"error","error":{"type":"not_found_error","message":"x"}}"#;
        assert_eq!(messages_error_note(anthropic), "");
        assert_eq!(messages_error_note(b"not json"), "");
    }

    #[test]
    fn io_errors_by_kind() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(
            io_kind(&refused, ErrorKind::Connect),
            ErrorKind::ConnectRefused
        );
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(
            io_kind(&reset, ErrorKind::StreamCut),
            ErrorKind::ConnectionReset
        );
        let other = io::Error::other("x");
        assert_eq!(io_kind(&other, ErrorKind::StreamCut), ErrorKind::StreamCut);
        // Found through a wrapper's source chain.
        #[derive(Debug)]
        struct Wrap(io::Error);
        impl std::fmt::Display for Wrap {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("wrapped")
            }
        }
        impl Error for Wrap {
            fn source(&self) -> Option<&(dyn Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(chain_kind(&Wrap(refused)), Some(ErrorKind::ConnectRefused));
        assert_eq!(chain_kind(&Wrap(other)), None);
    }

    #[test]
    fn retry_after_values() {
        assert_eq!(retry_after(b" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(b"0.5"), Some(Duration::from_millis(500)));
        assert_eq!(retry_after(b"Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(retry_after(b"-1"), None);
        assert_eq!(http_status_kind(429, None), ErrorKind::RateLimited);
        assert_eq!(
            http_status_kind(503, Some(Duration::from_secs(1))),
            ErrorKind::RateLimited
        );
        assert_eq!(http_status_kind(503, None), ErrorKind::HttpStatus(503));
        let mut md = http::HeaderMap::new();
        md.insert("grpc-retry-pushback-ms", "1500".parse().unwrap());
        assert_eq!(grpc_pushback(&md), Some(Duration::from_millis(1500)));
    }
}
