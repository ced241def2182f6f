//! Triton's KServe v2 gRPC API: `ModelStreamInfer` (one bidirectional stream per request) and
//! `ModelInfer`, over each worker's own HTTP/2 connection ([`super::grpc_conn`]); discovery and
//! statistics calls go through tonic.
//!
//! Messages travel as raw bytes: requests are encoded once per dataset entry and only get their
//! id put in front per send (protobuf fields may come in any order); each chunk of a response is
//! timestamped when the worker takes it off the connection, before any protobuf decoding, and its
//! messages are read with the allocation-free scanner in [`super::wire`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use super::grpc_conn::{self, Flow, GrpcConn, GrpcTarget};
use super::request_id::IdField;
use super::wire::read_infer_response;
use super::{Exchange, error_chain};
use crate::error::UsageError;
use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use crate::record::{Clock, ErrorKind, RequestError};
use crate::target::Target;
use crate::workload::tensor::ModelInfo;

const STREAM_PATH: &str = "/inference.GRPCInferenceService/ModelStreamInfer";
const INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";

/// Largest response message accepted: Triton's own gRPC limit (`INT32_MAX`). A 4 MiB default
/// (tonic's) would fail every request of a model whose outputs are larger — YOLOv8's `output0`
/// `[84,8400]` FP32 is 2.8 MB per image, so from batch 2 on — although Triton sent a valid
/// response.
pub const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// A gRPC client for one server and model: where calls go, and the model's facts. Each worker
/// opens its own connection ([`Exchange`] keeps it between requests).
#[derive(Clone, Debug)]
pub struct GrpcClient {
    route: Arc<Route>,
    ids: Arc<AtomicU64>,
    streaming: bool,
    decoupled: bool,
    text: bool,
    /// Largest response message accepted.
    max_message: usize,
}

/// Where a worker connects, and the two methods' URIs.
#[derive(Debug)]
struct Route {
    target: GrpcTarget,
    stream_uri: http::Uri,
    infer_uri: http::Uri,
}

/// What a response's content is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseMode {
    /// LLM text (`text_output`): collected for token counting; a response counts when it carries text.
    Text,
    /// Tensors: outputs are only counted; a response counts when it has outputs (empty final
    /// responses do not).
    Tensors,
}

/// Opens a channel (HTTP/2 connection) to the target: over TLS for `https://`, verified with
/// the same settings and explained the same way as HTTP. A refused certificate or unusable TLS
/// settings are usage errors; an unreachable server is a failed run.
pub async fn connect(target: &Target) -> Result<Channel, crate::error::Error> {
    let base_url = &target.base_url;
    let ep = Endpoint::from_shared(base_url.to_string())
        .map_err(|e| crate::error::Error::usage(format!("invalid gRPC address {base_url}: {e}")))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .http2_adaptive_window(true);
    let ep = if target.uses_tls() {
        super::tls::TlsContext::new(&target.tls)?.grpc_endpoint(ep)?
    } else {
        ep
    };
    ep.connect().await.map_err(|e| {
        if let Some(f) = super::tls::TlsFailure::find(&e) {
            let addr = base_url.trim_start_matches("https://");
            return crate::error::Error::usage(f.message(addr));
        }
        crate::error::Error::failed(format!(
            "cannot connect to the gRPC server at {base_url}: {}\n  check that the server is running and listening there (Triton's gRPC port is 8001; its HTTP port 8000 needs --endpoint-type generate); from a container use an address reachable from it and start Triton with --grpc-address 0.0.0.0",
            error_chain(&e)
        ))
    })
}

/// Prefix Triton's gRPC server puts before the header key of `--grpc-restricted-protocol`: a
/// protocol restricted with `<apis>:triton-access-token=T` wants the metadata
/// `triton-grpc-protocol-triton-access-token: T` (over HTTP the key itself is the header).
pub const RESTRICTED_PROTOCOL_PREFIX: &str = "triton-grpc-protocol-";

/// `-H` headers as gRPC metadata (names lower-cased; binary `-bin` headers are not supported),
/// with `authorization: Bearer` from the API key: what inference and discovery calls carry.
///
/// A `triton-*` header (Triton's own keys, such as PyTriton's `triton-access-token`) is also sent
/// under [`RESTRICTED_PROTOCOL_PREFIX`], so the `-H 'triton-access-token: T'` that opens a
/// restricted API over HTTP opens it over gRPC too.
pub fn metadata_for(target: &Target) -> Result<MetadataMap, UsageError> {
    let mut map = metadata_of(target, |_| true)?;
    if let Some(key) = &target.api_key {
        let v = MetadataValue::try_from(format!("Bearer {}", key.trim())).map_err(|_| {
            UsageError("--api-key contains characters not allowed in metadata".into())
        })?;
        map.insert("authorization", v);
    }
    Ok(map)
}

/// The metadata of the statistics call: only the headers the statistics endpoint may see
/// ([`Target::is_metrics_header`]), never the API key.
pub fn stats_metadata_for(target: &Target) -> Result<MetadataMap, UsageError> {
    metadata_of(target, |h| target.is_metrics_header(h))
}

fn metadata_of(
    target: &Target,
    keep: impl Fn(&crate::target::Header) -> bool,
) -> Result<MetadataMap, UsageError> {
    let mut map = MetadataMap::new();
    for h in target.headers.iter().filter(|h| keep(h)) {
        let name = h.name.to_ascii_lowercase();
        let key = MetadataKey::from_bytes(name.as_bytes()).map_err(|_| {
            UsageError(format!(
                "-H: '{}' is not a valid gRPC metadata name",
                h.name
            ))
        })?;
        let value = MetadataValue::try_from(h.value.as_str()).map_err(|_| {
            UsageError(format!(
                "-H: the value of '{}' is not valid gRPC metadata",
                h.name
            ))
        })?;
        if name.starts_with("triton-") && !name.starts_with(RESTRICTED_PROTOCOL_PREFIX) {
            let mirrored = format!("{RESTRICTED_PROTOCOL_PREFIX}{name}");
            let given = target
                .headers
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(&mirrored));
            if !given && let Ok(k) = MetadataKey::from_bytes(mirrored.as_bytes()) {
                map.append(k, value.clone());
            }
        }
        map.append(key, value);
    }
    Ok(map)
}

/// Adds `-H` metadata to a request.
pub fn with_metadata<T>(mut req: tonic::Request<T>, md: &MetadataMap) -> tonic::Request<T> {
    let m = req.metadata_mut();
    for kv in md.iter() {
        if let tonic::metadata::KeyAndValueRef::Ascii(k, v) = kv {
            m.append(k.clone(), v.clone());
        }
    }
    req
}

impl GrpcClient {
    /// A client for the target's model. Workers connect on their first request
    /// ([`GrpcClient::prepare`]).
    pub fn new(
        target: &Target,
        info: &ModelInfo,
        mode: ResponseMode,
    ) -> crate::error::Result<GrpcClient> {
        let tls = match target.uses_tls() {
            false => None,
            true => {
                let ctx = super::tls::TlsContext::new(&target.tls)?;
                let (host, _) = super::tls::host_port(&target.base_url).unwrap_or_default();
                Some(super::h1::TlsDial::new(&ctx, &host, super::tls::ALPN_H2)?)
            }
        };
        let metadata = metadata_for(target)?.into_headers();
        let conn_target = GrpcTarget::new(&target.base_url, tls, metadata)?;
        Ok(GrpcClient {
            route: Arc::new(Route {
                stream_uri: conn_target.uri(STREAM_PATH)?,
                infer_uri: conn_target.uri(INFER_PATH)?,
                target: conn_target,
            }),
            ids: Arc::new(AtomicU64::new(1)),
            streaming: target.streaming,
            decoupled: info.decoupled,
            text: mode == ResponseMode::Text,
            // Text responses carry a token or a few; tensors may be megabytes (Triton's own
            // limit applies to them).
            max_message: if mode == ResponseMode::Text {
                target.max_event_bytes.max(1)
            } else {
                MAX_RESPONSE_BYTES
            },
        })
    }

    /// Whether requests go over `ModelStreamInfer` (streaming, or a decoupled model) rather
    /// than `ModelInfer`.
    pub fn stream_rpc(&self) -> bool {
        self.streaming || self.decoupled
    }

    /// Makes sure the worker's connection is open and set up, outside any measured time.
    pub async fn prepare(&self, ex: &mut Exchange) -> Result<(), RequestError> {
        if let Some(c) = ex.grpc.as_mut()
            && c.is_open().await
        {
            return Ok(());
        }
        ex.grpc = None;
        ex.grpc = Some(grpc_conn::connect(&self.route.target).await?);
        Ok(())
    }

    /// Sends one request on the worker's connection and reads every response into `ex`. Both
    /// RPCs are read the same way (a unary call is one message each way on the wire), so
    /// response headers, each message and the trailers are seen as they arrive. The connection
    /// stays in `ex` throughout: a call dropped half-way leaves it there with the stream's reset
    /// queued, which the next request's `prepare` writes, so a cancellation costs no reconnect
    /// (after a timeout the engine gives it up: [`Exchange::drop_connections`]). A connection
    /// that failed is dropped.
    pub async fn execute(
        &self,
        body: &Bytes,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        if ex.grpc.is_none() {
            ex.grpc = Some(grpc_conn::connect(&self.route.target).await?);
        }
        let id = match &ex.ids {
            Some(ids) => ids.grpc_field(ex.seq),
            None => IdField::numeric(self.ids.fetch_add(1, Ordering::Relaxed)),
        };
        // The message's prefix (not compressed; its length) and the id field, ahead of the body
        // shared by every request of this dataset entry.
        let mut head = BytesMut::with_capacity(5 + id.bytes().len());
        head.put_u8(0);
        head.put_u32((body.len() + id.bytes().len()) as u32);
        head.put_slice(id.bytes());
        let result = self.call(head.freeze(), body.clone(), ex, clock).await;
        // Not polled again here: the next request's `prepare` does that once.
        if ex.grpc.as_ref().is_some_and(GrpcConn::is_closed) {
            ex.grpc = None;
        }
        result
    }

    async fn call(
        &self,
        head: Bytes,
        body: Bytes,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        // Decoupled models only answer on the stream RPC, even for a non-streamed request.
        let stream_rpc = self.stream_rpc();
        let r = &self.route;
        let uri = if stream_rpc {
            &r.stream_uri
        } else {
            &r.infer_uri
        };
        let response = conn_of(ex)?.start(&r.target, uri, head, body).await?;
        ex.send_done_ns = Some(clock.now_ns());
        let response = conn_of(ex)?
            .drive(response)
            .await?
            .map_err(|e| grpc_conn::transport_error(&e))?;
        ex.bytes_at(clock.now_ns());
        let (parts, mut recv) = response.into_parts();
        // A trailers-only response: the status is in the headers and no message follows.
        if let Some((code, message)) = grpc_conn::status_of(&parts.headers) {
            return Err(self.ended(code, message, &parts.headers, stream_rpc, ex));
        }
        if parts.status != http::StatusCode::OK {
            let status = parts.status.as_u16();
            return Err(status_error(
                grpc_conn::code_of_http_status(status),
                format!("HTTP status {status} without a gRPC status"),
            ));
        }
        let mut partial = std::mem::take(&mut ex.body);
        partial.clear();
        let result = self
            .read_messages(&mut recv, &mut partial, stream_rpc, ex, clock)
            .await;
        ex.body = partial;
        result
    }

    /// Reads response messages until the final one (then the rest of the call), the call's end,
    /// or a failure.
    async fn read_messages(
        &self,
        recv: &mut h2::RecvStream,
        partial: &mut Vec<u8>,
        stream_rpc: bool,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        let mut error = String::new();
        loop {
            let next = conn_of(ex)?
                .drive(std::future::poll_fn(|cx| recv.poll_data(cx)))
                .await?;
            match next {
                Some(Ok(chunk)) => {
                    let at = clock.now_ns();
                    let _ = recv.flow_control().release_capacity(chunk.len());
                    let flow = grpc_conn::deframe(&chunk, partial, self.max_message, |m| {
                        self.on_message(m, at, stream_rpc, ex, &mut error)
                    })?;
                    if flow == Flow::Final {
                        drain(conn_of(ex)?, recv).await;
                        return Ok(());
                    }
                }
                Some(Err(e)) => return Err(broken(ex, grpc_conn::transport_error(&e))),
                None => {
                    let trailers = conn_of(ex)?
                        .drive(std::future::poll_fn(|cx| recv.poll_trailers(cx)))
                        .await?
                        .map_err(|e| broken(ex, grpc_conn::transport_error(&e)))?
                        .unwrap_or_default();
                    let (code, message) =
                        grpc_conn::status_of(&trailers).unwrap_or((0, String::new()));
                    return Err(self.ended(code, message, &trailers, stream_rpc, ex));
                }
            }
        }
    }

    /// One response message, read at `at`: counted, kept for the raw export, its text added.
    fn on_message(
        &self,
        bytes: &[u8],
        at: u64,
        stream_rpc: bool,
        ex: &mut Exchange,
        error: &mut String,
    ) -> Result<Flow, RequestError> {
        ex.responses += 1;
        ex.keep_response(at, bytes);
        let text = if self.text { Some(&mut ex.text) } else { None };
        let info = if stream_rpc {
            ex.responses_shape.read(bytes, text, error)
        } else {
            read_infer_response(bytes, text)
        }
        .map_err(|e| {
            RequestError::new(
                ErrorKind::MalformedResponse,
                format!("response {}: {e}", ex.responses),
            )
        })?;
        if info.has_error {
            return Err(RequestError::new(
                ErrorKind::ServerError,
                std::mem::take(error),
            ));
        }
        ex.add_server_tokens(info.tokens);
        let content = if self.text {
            info.text_bytes > 0
        } else {
            info.outputs > 0
        };
        if content {
            ex.content_at(at);
        }
        if self.text && ex.text.len() > self.max_message {
            return Err(RequestError::new(
                ErrorKind::ResponseTooLarge,
                format!(
                    "the response's output text passed --max-event-size ({} bytes); reading stopped there",
                    self.max_message
                ),
            ));
        }
        // A response without the parameter is final (Triton's client does the same); a unary
        // call has exactly one.
        Ok(if !stream_rpc || info.final_flag.unwrap_or(true) {
            Flow::Final
        } else {
            Flow::More
        })
    }

    /// The error of a call that ended before its final response: with status `code` (from
    /// `block`, its trailers or trailers-only headers), or OK with responses missing.
    fn ended(
        &self,
        code: i32,
        message: String,
        block: &http::HeaderMap,
        stream_rpc: bool,
        ex: &mut Exchange,
    ) -> RequestError {
        if code != 0 {
            ex.retry_after = super::failure::grpc_pushback(block);
            return broken(ex, status_error(code, message));
        }
        RequestError::new(
            if stream_rpc {
                ErrorKind::StreamCut
            } else {
                ErrorKind::MalformedResponse
            },
            format!(
                "the call ended after {} responses without a final response",
                ex.responses
            ),
        )
    }
}

/// The worker's connection, which `execute` opened if it had none.
fn conn_of(ex: &mut Exchange) -> Result<&mut GrpcConn, RequestError> {
    ex.grpc
        .as_mut()
        .ok_or_else(|| RequestError::new(ErrorKind::Connect, "the worker has no gRPC connection"))
}

/// After the final response, reads the call to its end, so it finishes cleanly instead of being
/// reset (thousands of resets make HTTP/2 peers tear the connection down). The end usually came
/// with the final response: a timer is armed only when it has not.
async fn drain(conn: &mut GrpcConn, recv: &mut h2::RecvStream) {
    let rest = async {
        while let Ok(Some(Ok(chunk))) = conn
            .drive(std::future::poll_fn(|cx| recv.poll_data(cx)))
            .await
        {
            let _ = recv.flow_control().release_capacity(chunk.len());
        }
        let _ = conn
            .drive(std::future::poll_fn(|cx| recv.poll_trailers(cx)))
            .await;
    };
    let mut rest = std::pin::pin!(rest);
    let done =
        std::future::poll_fn(|cx| std::task::Poll::Ready(rest.as_mut().poll(cx).is_ready())).await;
    if !done {
        let _ = tokio::time::timeout(super::http::DRAIN_TIMEOUT, rest).await;
    }
}

/// After responses have flowed, a failed call is a stream cut off mid-way (unless the transport
/// says exactly how: reset, GOAWAY); before, the status itself (UNAVAILABLE, RESOURCE_EXHAUSTED,
/// ...) is the story.
fn broken(ex: &Exchange, e: RequestError) -> RequestError {
    let transport = matches!(
        e.kind,
        ErrorKind::StreamReset | ErrorKind::GoAway | ErrorKind::ConnectionReset
    );
    if ex.responses > 0 && !transport {
        return RequestError::new(
            ErrorKind::StreamCut,
            format!(
                "the stream broke off after {} responses: {} ({})",
                ex.responses,
                e.message,
                e.kind.key()
            ),
        );
    }
    e
}

/// A gRPC status (not OK) as a request error: `RESOURCE_EXHAUSTED` is rate limiting, anything
/// else its code.
pub fn status_error(code: i32, message: String) -> RequestError {
    let kind = match code {
        8 => ErrorKind::RateLimited,
        c => ErrorKind::GrpcStatus(c),
    };
    let msg = if message.is_empty() {
        format!("{:?}", Code::from_i32(code))
    } else {
        message
    };
    RequestError::new(kind, msg)
}

/// Discovery over gRPC: server live, model metadata and config, with messages that say what to
/// change.
pub async fn discover(
    channel: Channel,
    target: &Target,
) -> Result<ModelInfo, crate::client::discovery::PreflightError> {
    discover_version(channel, target, "").await
}

/// [`discover`] for one model version (`""` = the server's choice). An unknown version is a
/// usage error at start, as in perf_analyzer, instead of every request failing later.
pub async fn discover_version(
    channel: Channel,
    target: &Target,
    version: &str,
) -> Result<ModelInfo, crate::client::discovery::PreflightError> {
    use crate::client::discovery::{PreflightError, list_hint};
    use crate::proto::{ModelConfigRequest, ModelMetadataRequest};
    let md = metadata_for(target).map_err(PreflightError::Usage)?;
    let mut c = GrpcInferenceServiceClient::new(channel);
    let meta = c
        .model_metadata(with_metadata(
            tonic::Request::new(ModelMetadataRequest {
                name: target.model.clone(),
                version: version.to_string(),
            }),
            &md,
        ))
        .await;
    let meta = match meta {
        Ok(m) => m.into_inner(),
        Err(s) if !version.is_empty() && version_missing(&s, &mut c, target, &md).await => {
            return Err(PreflightError::Usage(UsageError(format!(
                "model '{}' has no version {version} on {} ({}): drop -x/--model-version to use the server's choice, or give one it has",
                target.model,
                target.base_url,
                s.message()
            ))));
        }
        Err(s)
            if matches!(s.code(), Code::NotFound | Code::InvalidArgument)
                || s.message().contains("unknown model") =>
        {
            let names = model_names(&mut c, &md).await;
            return Err(PreflightError::Usage(UsageError(format!(
                "model '{}' is not found on {} ({}); {}",
                target.model,
                target.base_url,
                s.message(),
                list_hint(names.as_deref())
            ))));
        }
        Err(s) if matches!(s.code(), Code::Unauthenticated | Code::PermissionDenied) => {
            return Err(PreflightError::Usage(UsageError(format!(
                "the server refused model metadata ({:?}: {}): add the header it expects with -H 'name: value' (e.g. -H 'triton-access-token: TOKEN')",
                s.code(),
                s.message()
            ))));
        }
        Err(s) => {
            return Err(PreflightError::Unavailable(format!(
                "ModelMetadata for '{}' failed at {}: {:?}: {}",
                target.model,
                target.base_url,
                s.code(),
                s.message()
            )));
        }
    };
    let config = c
        .model_config(with_metadata(
            tonic::Request::new(ModelConfigRequest {
                name: target.model.clone(),
                version: version.to_string(),
            }),
            &md,
        ))
        .await
        .map(|r| r.into_inner().config)
        .ok()
        .flatten();
    Ok(crate::client::discovery::model_info(meta, config))
}

/// Whether a failed versioned metadata call failed because of the version: the model itself
/// answers without one. (Triton says "Request for unknown model: 'm' version 7 is not found"
/// either way, so the message alone cannot tell.)
async fn version_missing(
    s: &Status,
    c: &mut GrpcInferenceServiceClient<Channel>,
    target: &Target,
    md: &MetadataMap,
) -> bool {
    use crate::proto::ModelMetadataRequest;
    if !matches!(
        s.code(),
        Code::NotFound | Code::InvalidArgument | Code::Unavailable
    ) && !s.message().contains("unknown model")
    {
        return false;
    }
    c.model_metadata(with_metadata(
        tonic::Request::new(ModelMetadataRequest {
            name: target.model.clone(),
            version: String::new(),
        }),
        md,
    ))
    .await
    .is_ok()
}

/// The models a server has, for an "unknown model" message: the repository index, or, when that
/// is empty or refused, the names in the statistics of all models. PyTriton loads its models
/// through the load API with inline configs, so its repository directory (and index) stays
/// empty while the models are loaded and do appear in the statistics. `None` when neither
/// answers (on PyTriton both are restricted APIs: they need the access token).
async fn model_names(
    c: &mut GrpcInferenceServiceClient<Channel>,
    md: &MetadataMap,
) -> Option<Vec<String>> {
    use crate::proto::{ModelStatisticsRequest, RepositoryIndexRequest};
    let index = RepositoryIndexRequest::default();
    let index = c.repository_index(with_metadata(tonic::Request::new(index), md));
    let mut names = index.await.ok().map(|r| {
        let models = r.into_inner().models;
        models.into_iter().map(|m| m.name).collect::<Vec<_>>()
    });
    if names.as_ref().is_none_or(Vec::is_empty) {
        let stats = ModelStatisticsRequest::default();
        let stats = c.model_statistics(with_metadata(tonic::Request::new(stats), md));
        let listed = stats.await.ok().map(|r| {
            let models = r.into_inner().model_stats;
            models.into_iter().map(|m| m.name).collect::<Vec<_>>()
        });
        names = listed.filter(|v| !v.is_empty()).or(names);
    }
    names.map(|mut v| {
        v.sort();
        v.dedup();
        v
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn target(headers: &[&str]) -> Target {
        let mut argv = vec![
            "ttftbench",
            "profile",
            "-m",
            "m",
            "--service-kind",
            "triton",
        ];
        for h in headers {
            argv.extend(["-H", h]);
        }
        let cli = crate::cli::Cli::try_parse_from(&argv).unwrap();
        let crate::cli::Command::Profile(p) = cli.command else {
            panic!("expected profile")
        };
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        p.plan(&argv).unwrap().target
    }

    #[test]
    fn triton_headers_also_go_under_the_restricted_protocol_prefix() {
        let md = metadata_for(&target(&["Triton-Access-Token: T", "X-Team: infra"])).unwrap();
        assert_eq!(md.get("triton-access-token").unwrap(), "T");
        assert_eq!(
            md.get("triton-grpc-protocol-triton-access-token").unwrap(),
            "T"
        );
        assert_eq!(md.get("x-team").unwrap(), "infra");
        assert!(md.get("triton-grpc-protocol-x-team").is_none());
        // Given in its gRPC form too: that one wins and is not doubled.
        let md = metadata_for(&target(&[
            "triton-access-token: T",
            "triton-grpc-protocol-triton-access-token: U",
        ]))
        .unwrap();
        let all: Vec<_> = md
            .get_all("triton-grpc-protocol-triton-access-token")
            .iter()
            .collect();
        assert_eq!(all, ["U"]);
        // Already prefixed: sent as is.
        let md = metadata_for(&target(&["triton-grpc-protocol-k: v"])).unwrap();
        assert_eq!(md.len(), 1);
    }
}
