//! Triton's KServe v2 gRPC API: `ModelStreamInfer` (one bidirectional stream per request, many
//! streams multiplexed over a small pool of HTTP/2 connections) and `ModelInfer`.
//!
//! Messages travel as raw bytes: requests are encoded once per dataset entry and only get their
//! id appended per send; responses are timestamped in the codec the moment a complete message
//! has arrived, before any protobuf decoding, then read with the allocation-free scanner in
//! [`super::wire`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use super::request_id::IdField;
use super::wire::read_infer_response;
use super::{Exchange, error_chain};
use crate::error::UsageError;
use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use crate::record::{Clock, ErrorKind, RequestError};
use crate::target::Target;
use crate::workload::tensor::{DataType, ModelInfo, TensorSpec};

const STREAM_PATH: &str = "/inference.GRPCInferenceService/ModelStreamInfer";
const INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";

/// Requests in flight per HTTP/2 connection before another connection is opened. Measured against
/// the instant simulator (100-token streams, 30 000 requests, 2 cores): 64 streams per connection
/// gave 15.1k/14.0k/15.6k/14.9k req/s at concurrency 16/64/256/1024, one connection per request
/// 13.2k/15.8k/10.5k/8.3k, and a single shared connection 15.0k/13.0k/10.2k and 5 803 failed
/// streams at 1024 (servers cap concurrent streams per connection, commonly near 100).
pub const STREAMS_PER_CONNECTION: usize = 64;

/// Largest response message accepted: Triton's own gRPC limit (`INT32_MAX`). tonic's default of
/// 4 MiB fails every request of a model whose outputs are larger — YOLOv8's `output0`
/// `[84,8400]` FP32 is 2.8 MB per image, so from batch 2 on — with `OutOfRange: decoded message
/// length too large`, although Triton sent a valid response.
pub const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// A response message with the time its last byte arrived.
#[derive(Debug)]
pub struct Timed {
    /// Run-clock nanoseconds when the message was complete.
    pub at: u64,
    /// The undecoded message.
    pub bytes: Bytes,
}

/// A request on its way out: the body encoded once per dataset entry, plus this request's id.
pub struct Outgoing {
    /// `ModelInferRequest` without `id`.
    pub body: Bytes,
    /// The request id, field 3, encoded.
    pub id: IdField,
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing")
            .field("body", &self.body.len())
            .finish()
    }
}

/// Codec passing bytes through: writes pre-built request bytes (recording when they have been
/// handed to the transport), timestamps response bytes and hands them over undecoded.
#[derive(Clone, Debug)]
pub struct RawCodec {
    clock: Clock,
    sent: Arc<AtomicU64>,
}

impl Codec for RawCodec {
    type Encode = Outgoing;
    type Decode = Timed;
    type Encoder = RawEncoder;
    type Decoder = TimedDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder {
            clock: self.clock,
            sent: self.sent.clone(),
        }
    }
    fn decoder(&mut self) -> TimedDecoder {
        TimedDecoder { clock: self.clock }
    }
}

/// Writes pre-encoded request bytes and the id field, without an intermediate copy.
#[derive(Debug)]
pub struct RawEncoder {
    clock: Clock,
    sent: Arc<AtomicU64>,
}

impl Encoder for RawEncoder {
    type Item = Outgoing;
    type Error = Status;
    fn encode(&mut self, item: Outgoing, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item.body);
        dst.put_slice(item.id.bytes());
        self.sent.store(self.clock.now_ns(), Ordering::Relaxed);
        Ok(())
    }
}

/// Timestamps each complete response message before anything decodes it.
#[derive(Debug)]
pub struct TimedDecoder {
    clock: Clock,
}

impl Decoder for TimedDecoder {
    type Item = Timed;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Timed>, Status> {
        let at = self.clock.now_ns();
        let n = src.remaining();
        Ok(Some(Timed {
            at,
            bytes: src.copy_to_bytes(n),
        }))
    }
}

/// A pool of gRPC connections to one server, with the model's facts.
#[derive(Clone, Debug)]
pub struct GrpcClient {
    channels: Arc<Vec<Channel>>,
    next: Arc<AtomicUsize>,
    ids: Arc<AtomicU64>,
    metadata: Arc<MetadataMap>,
    streaming: bool,
    decoupled: bool,
    text: bool,
    /// Largest response message accepted.
    max_message: usize,
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
    if !md.is_empty() {
        let m = req.metadata_mut();
        for kv in md.iter() {
            if let tonic::metadata::KeyAndValueRef::Ascii(k, v) = kv {
                m.append(k.clone(), v.clone());
            }
        }
    }
    req
}

impl GrpcClient {
    /// Opens enough connections for `workers` concurrent requests.
    pub async fn new(
        target: &Target,
        info: &ModelInfo,
        workers: usize,
        first: Channel,
        mode: ResponseMode,
    ) -> Result<GrpcClient, String> {
        let n = workers.div_ceil(STREAMS_PER_CONNECTION).max(1);
        let mut channels = vec![first];
        for _ in 1..n {
            channels.push(connect(target).await.map_err(|e| e.to_string())?);
        }
        let metadata = metadata_for(target).map_err(|e| e.0)?;
        Ok(GrpcClient {
            channels: Arc::new(channels),
            next: Arc::new(AtomicUsize::new(0)),
            ids: Arc::new(AtomicU64::new(1)),
            metadata: Arc::new(metadata),
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

    /// A channel for discovery and statistics calls.
    pub fn channel(&self) -> Channel {
        self.channels[0].clone()
    }

    /// Sends one request and reads every response into `ex`. Both RPCs go through the
    /// streaming call API (a unary call is one message each way on the wire), so response
    /// headers, each message and the trailers are seen as they arrive.
    pub async fn execute(
        &self,
        body: &Bytes,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.channels.len();
        let mut grpc = tonic::client::Grpc::new(self.channels[i].clone())
            .max_decoding_message_size(self.max_message);
        let msg = Outgoing {
            body: body.clone(),
            id: match &ex.ids {
                Some(ids) => ids.grpc_field(ex.seq),
                None => IdField::numeric(self.ids.fetch_add(1, Ordering::Relaxed)),
            },
        };
        grpc.ready().await.map_err(|e| {
            let kind = super::failure::chain_kind(&e).unwrap_or(ErrorKind::Connect);
            RequestError::new(kind, error_chain(&e))
        })?;
        let sent = Arc::new(AtomicU64::new(0));
        let codec = RawCodec {
            clock: *clock,
            sent: sent.clone(),
        };
        // Decoupled models only answer on the stream RPC, even for a non-streamed request.
        let stream_rpc = self.stream_rpc();
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(if stream_rpc {
            STREAM_PATH
        } else {
            INFER_PATH
        });
        let req = with_metadata(
            tonic::Request::new(futures_util::stream::once(std::future::ready(msg))),
            &self.metadata,
        );
        let result = self
            .exchange(&mut grpc, req, path, codec, stream_rpc, ex, clock)
            .await;
        let t = sent.load(Ordering::Relaxed);
        if t > 0 {
            ex.send_done_ns = Some(t);
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    async fn exchange(
        &self,
        grpc: &mut tonic::client::Grpc<Channel>,
        req: tonic::Request<futures_util::stream::Once<std::future::Ready<Outgoing>>>,
        path: tonic::codegen::http::uri::PathAndQuery,
        codec: RawCodec,
        stream_rpc: bool,
        ex: &mut Exchange,
        clock: &Clock,
    ) -> Result<(), RequestError> {
        let resp = grpc.streaming(req, path, codec).await.map_err(|s| {
            ex.retry_after = super::failure::grpc_pushback(s.metadata());
            status_error(s)
        })?;
        ex.bytes_at(clock.now_ns());
        let mut stream = resp.into_inner();
        let mut error = String::new();
        loop {
            match stream.message().await {
                Ok(Some(Timed { at, bytes })) => {
                    ex.responses += 1;
                    ex.keep_response(at, &bytes);
                    let text = if self.text { Some(&mut ex.text) } else { None };
                    let info = if stream_rpc {
                        ex.responses_shape.read(&bytes, text, &mut error)
                    } else {
                        read_infer_response(&bytes, text)
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
                            std::mem::take(&mut error),
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
                    // A response without the parameter is final (Triton's client does the same);
                    // a unary call has exactly one.
                    if !stream_rpc || info.final_flag.unwrap_or(true) {
                        // The request stream is half-closed, so the server ends the call right
                        // after its final response; wait for that instead of resetting the stream.
                        let deadline = tokio::time::Instant::now() + super::http::DRAIN_TIMEOUT;
                        while let Ok(Ok(Some(_))) =
                            tokio::time::timeout_at(deadline, stream.message()).await
                        {
                        }
                        return Ok(());
                    }
                }
                Ok(None) => {
                    return Err(RequestError::new(
                        if stream_rpc {
                            ErrorKind::StreamCut
                        } else {
                            ErrorKind::MalformedResponse
                        },
                        format!(
                            "the call ended after {} responses without a final response",
                            ex.responses
                        ),
                    ));
                }
                Err(status) => {
                    ex.retry_after = super::failure::grpc_pushback(status.metadata());
                    let e = status_error(status);
                    // After responses have flowed, a failed call is a stream cut off mid-way
                    // (unless the transport says exactly how: reset, GOAWAY); before, the status
                    // itself (UNAVAILABLE, RESOURCE_EXHAUSTED, ...) is the story.
                    let transport = matches!(
                        e.kind,
                        ErrorKind::StreamReset | ErrorKind::GoAway | ErrorKind::ConnectionReset
                    );
                    if ex.responses > 0 && !transport {
                        return Err(RequestError::new(
                            ErrorKind::StreamCut,
                            format!(
                                "the stream broke off after {} responses: {} ({})",
                                ex.responses,
                                e.message,
                                e.kind.key()
                            ),
                        ));
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Connections are opened in [`GrpcClient::new`]; nothing more to warm.
    pub async fn warm_connections(&self, _n: usize) {}
}

/// A gRPC status as a request error. The transport's own failures (refused, reset, GOAWAY,
/// `RST_STREAM`) are told by the error tonic keeps as the status's source; rate limiting is
/// `RESOURCE_EXHAUSTED`.
pub fn status_error(s: Status) -> RequestError {
    let specific = std::error::Error::source(&s).and_then(super::failure::chain_kind);
    let kind = match (s.code(), specific) {
        (_, Some(k)) => k,
        (Code::ResourceExhausted, None) => ErrorKind::RateLimited,
        (Code::Unavailable, None)
            if s.message().contains("connect") || s.message().contains("transport") =>
        {
            ErrorKind::Connect
        }
        // tonic refuses a message past max_decoding_message_size before buffering it.
        (Code::OutOfRange, None) if s.message().contains("message length too large") => {
            ErrorKind::ResponseTooLarge
        }
        (code, None) => ErrorKind::GrpcStatus(code as i32),
    };
    let msg = if s.message().is_empty() {
        format!("{:?}", s.code())
    } else {
        s.message().to_string()
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
    Ok(model_info(meta, config))
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
    let index = c
        .repository_index(with_metadata(
            tonic::Request::new(RepositoryIndexRequest::default()),
            md,
        ))
        .await
        .ok()
        .map(|r| {
            r.into_inner()
                .models
                .into_iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
        });
    let names = match index {
        Some(v) if !v.is_empty() => Some(v),
        index => c
            .model_statistics(with_metadata(
                tonic::Request::new(ModelStatisticsRequest::default()),
                md,
            ))
            .await
            .ok()
            .map(|r| {
                r.into_inner()
                    .model_stats
                    .into_iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty())
            .or(index),
    };
    names.map(|mut v| {
        v.sort();
        v.dedup();
        v
    })
}

/// Combines metadata (names, datatypes, shapes) with config (batching, decoupled, optional inputs).
pub fn model_info(
    meta: crate::proto::ModelMetadataResponse,
    config: Option<crate::proto::ModelConfig>,
) -> ModelInfo {
    let max_batch_size = config.as_ref().map_or(0, |c| c.max_batch_size);
    let strip_batch = |shape: &[i64]| -> Vec<i64> {
        // Metadata shapes include the batch dimension (-1) when the model batches.
        if max_batch_size > 0 && !shape.is_empty() {
            shape[1..].to_vec()
        } else {
            shape.to_vec()
        }
    };
    let optional = |name: &str| {
        config
            .as_ref()
            .is_some_and(|c| c.input.iter().any(|i| i.name == name && i.optional))
    };
    let inputs = meta
        .inputs
        .iter()
        .map(|t| TensorSpec {
            name: t.name.clone(),
            datatype: DataType::from_name(&t.datatype).unwrap_or(DataType::Bytes),
            dims: strip_batch(&t.shape),
            optional: optional(&t.name),
        })
        .collect();
    let outputs = meta
        .outputs
        .iter()
        .map(|t| TensorSpec {
            name: t.name.clone(),
            datatype: DataType::from_name(&t.datatype).unwrap_or(DataType::Bytes),
            dims: strip_batch(&t.shape),
            optional: false,
        })
        .collect();
    ModelInfo {
        name: meta.name,
        platform: meta.platform,
        backend: config
            .as_ref()
            .map(|c| c.backend.clone())
            .unwrap_or_default(),
        max_batch_size,
        decoupled: config
            .as_ref()
            .and_then(|c| c.model_transaction_policy.as_ref())
            .is_some_and(|p| p.decoupled),
        inputs,
        outputs,
    }
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
