//! KServe v2 / Triton gRPC service (`inference.GRPCInferenceService`).
//!
//! The unary RPCs go through the tonic-generated server. `ModelStreamInfer`, the hot path, is
//! routed in front of it to a handler with its own codec: every response of a request is made of
//! byte strings precomputed per model, per request and per output word (model name and version,
//! `id`, the `triton_final_response` parameter, the `text_output` tensor description, the BYTES
//! element), written straight into tonic's encode buffer. A token therefore costs no heap
//! allocation and no protobuf encoding, and the bytes are the ones prost would produce (a unit
//! test decodes them with prost).
//!
//! Many requests may share one bidirectional stream; they run concurrently and their responses
//! interleave, each echoing its request's `id`. The final-response rules follow Triton:
//! TensorRT-LLM layout: last token `triton_final_response=false` then an empty final response
//! when the request set `triton_enable_empty_final_response=true`, else the last token is final;
//! vLLM layout: the last token is always final. Per-request errors travel as
//! `ModelStreamInferResponse.error_message`; a cut fault ends the whole call (as a dropped
//! connection would) with status `ABORTED`.
//!
//! Tensor models answer `ModelInfer` (and, one response per request with
//! `triton_final_response=true`, `ModelStreamInfer`): inputs in `raw_input_contents` or typed
//! `contents`, validated by [`super::tensor`], outputs always in `raw_output_contents` as Triton
//! sends them; validation errors are `INVALID_ARGUMENT`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::stream::SelectAll;
use futures_util::{Stream, StreamExt};
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint};
use tokio::sync::watch;
use tokio::time::Instant;
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::codegen::Service;
use tonic::codegen::{BoxFuture, http};
use tonic::server::NamedService;
use tonic::{Code, Request, Response, Status, Streaming};

use super::engine::signalled;
use super::grpc_wire::text_output_tensor;
use super::http::{
    ACCESS_TOKEN_HEADER, EXTENSIONS, MAX_BODY_BYTES, RESTRICTED_MESSAGE, SERVER_NAME, output_text,
};
use super::metrics::FailReason;
use super::models::{LlmLayout, ModelKind};
use super::request::{BadRequest, GenParams, bag_from_infer_request, interpret};
use super::state::{BeginError, Generation, ModelEntry, SimState, TensorRun};
use super::tensor::{
    InputData, InputView, OutputChoice, TensorError, select_outputs, validate_inputs,
};
use super::tokens;
use crate::proto;
use crate::proto::grpc_inference_service_server::{
    GrpcInferenceService, GrpcInferenceServiceServer,
};
use crate::workload::tensor::encode_bytes_elements;

const STREAM_INFER_PATH: &str = "/inference.GRPCInferenceService/ModelStreamInfer";

/// Process-wide fragments: the final-flag parameter entries, one `raw_output_contents` entry
/// per output word, and the malformed entry.
struct Fragments {
    final_true: Bytes,
    final_false: Bytes,
    words: Vec<Bytes>,
    malformed: Bytes,
}

fn fragments() -> &'static Fragments {
    static F: std::sync::OnceLock<Fragments> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let param = |b: bool| {
            let mut r = proto::ModelInferResponse::default();
            r.parameters
                .insert("triton_final_response".to_owned(), bool_param(b));
            Bytes::from(r.encode_to_vec())
        };
        let raw = |content: Vec<u8>| {
            Bytes::from(
                proto::ModelInferResponse {
                    raw_output_contents: vec![content],
                    ..Default::default()
                }
                .encode_to_vec(),
            )
        };
        let words = (0..tokens::CYCLE as u32)
            .map(|i| raw(encode_bytes_elements([tokens::word(i).as_bytes()])))
            .collect();
        // A BYTES element whose length prefix promises far more than the buffer holds.
        let bad = [1000u32.to_le_bytes(), *b" the"].concat();
        Fragments {
            final_true: param(true),
            final_false: param(false),
            words,
            malformed: raw(bad),
        }
    })
}

fn bool_param(b: bool) -> proto::InferParameter {
    proto::InferParameter {
        parameter_choice: Some(proto::infer_parameter::ParameterChoice::BoolParam(b)),
    }
}

/// One message of a `ModelStreamInfer` response stream, kept as precomputed fragments.
#[derive(Debug, Clone)]
pub(crate) enum OutMsg {
    /// One output word.
    Token {
        head: Bytes,
        outputs: Bytes,
        index: u32,
        last: bool,
    },
    /// The whole output in one response (non-streaming requests).
    Text {
        head: Bytes,
        outputs: Bytes,
        raw: Bytes,
        last: bool,
    },
    /// An empty final response (no outputs, `triton_final_response=true`).
    EmptyFinal { head: Bytes },
    /// A request-level error.
    Error { head: Bytes, message: String },
    /// A response whose BYTES element is malformed (fault injection).
    Malformed { head: Bytes, outputs: Bytes },
    /// A tensor model's only (so final) response; `body` holds its `outputs` and
    /// `raw_output_contents` fields.
    Tensor { head: Bytes, body: Bytes },
}

impl OutMsg {
    /// Writes the protobuf encoding of the `ModelStreamInferResponse`.
    fn encode(&self, buf: &mut impl BufMut) {
        let f = fragments();
        let flag = |last: bool| if last { &f.final_true } else { &f.final_false };
        let parts: [&[u8]; 4] = match self {
            OutMsg::Token {
                head,
                outputs,
                index,
                last,
            } => [
                head,
                flag(*last),
                outputs,
                &f.words[*index as usize % tokens::CYCLE],
            ],
            OutMsg::Text {
                head,
                outputs,
                raw,
                last,
            } => [head, flag(*last), outputs, raw],
            OutMsg::EmptyFinal { head } => [head, &f.final_true, &[], &[]],
            OutMsg::Error { head, message } => {
                encode_key(1, WireType::LengthDelimited, buf);
                encode_varint(message.len() as u64, buf);
                buf.put_slice(message.as_bytes());
                [head, &f.final_true, &[], &[]]
            }
            OutMsg::Malformed { head, outputs } => [head, &f.final_false, outputs, &f.malformed],
            OutMsg::Tensor { head, body } => [head, &f.final_true, body, &[]],
        };
        let len: usize = parts.iter().map(|p| p.len()).sum();
        encode_key(2, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        for p in parts {
            buf.put_slice(p);
        }
    }

    /// The same message as a prost struct (for the generated-trait path and tests).
    pub(crate) fn to_proto(&self) -> proto::ModelStreamInferResponse {
        let mut buf = BytesMut::new();
        self.encode(&mut buf);
        proto::ModelStreamInferResponse::decode(buf.freeze()).unwrap_or_else(|e| {
            proto::ModelStreamInferResponse {
                error_message: format!("internal encoding error: {e}"),
                infer_response: None,
            }
        })
    }
}

/// Codec for `ModelStreamInfer`: decodes requests with prost, encodes precomputed fragments
/// (it is its own encoder).
#[derive(Debug, Clone, Copy, Default)]
struct StreamCodec;

impl Encoder for StreamCodec {
    type Item = OutMsg;
    type Error = Status;

    fn encode(&mut self, item: OutMsg, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst);
        Ok(())
    }
}

impl Codec for StreamCodec {
    type Encode = OutMsg;
    type Decode = proto::ModelInferRequest;
    type Encoder = StreamCodec;
    type Decoder = tonic_prost::ProstDecoder<proto::ModelInferRequest>;

    fn encoder(&mut self) -> StreamCodec {
        StreamCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::default()
    }
}

/// The gRPC service handed to tonic: `ModelStreamInfer` goes to the fragment codec, everything
/// else to the generated server.
#[derive(Clone)]
pub(crate) struct GrpcService {
    state: Arc<SimState>,
    inner: GrpcInferenceServiceServer<GrpcSim>,
}

impl GrpcService {
    /// The service over `state`.
    pub(crate) fn new(state: Arc<SimState>) -> Self {
        let inner = GrpcInferenceServiceServer::new(GrpcSim {
            state: state.clone(),
        })
        .max_decoding_message_size(MAX_BODY_BYTES);
        GrpcService { state, inner }
    }
}

impl NamedService for GrpcService {
    const NAME: &'static str = "inference.GRPCInferenceService";
}

impl Service<http::Request<tonic::body::Body>> for GrpcService {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        if req.uri().path() != STREAM_INFER_PATH {
            return self.inner.call(req);
        }
        let svc = StreamInferSvc {
            state: self.state.clone(),
        };
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(StreamCodec)
                .apply_max_message_size_config(Some(MAX_BODY_BYTES), None);
            Ok(grpc.streaming(svc, req).await)
        })
    }
}

struct StreamInferSvc {
    state: Arc<SimState>,
}

impl tonic::server::StreamingService<proto::ModelInferRequest> for StreamInferSvc {
    type Response = OutMsg;
    type ResponseStream = Mux;
    type Future = std::future::Ready<Result<Response<Mux>, Status>>;

    fn call(&mut self, request: Request<Streaming<proto::ModelInferRequest>>) -> Self::Future {
        std::future::ready(open_stream(&self.state, request.into_inner()).map(Response::new))
    }
}

fn open_stream(
    state: &Arc<SimState>,
    inbound: Streaming<proto::ModelInferRequest>,
) -> Result<Mux, Status> {
    if state.faults.unavailable() {
        return Err(Status::unavailable(BeginError::Unavailable.message()));
    }
    Ok(Mux::new(state.clone(), inbound))
}

/// How many requests one poll takes off the inbound stream before serving responses (fairness
/// when a client pipelines many requests).
const ACCEPT_BUDGET: usize = 64;

/// All requests of one `ModelStreamInfer` call, multiplexed onto its response stream.
pub(crate) struct Mux {
    state: Arc<SimState>,
    inbound: Option<Streaming<proto::ModelInferRequest>>,
    active: SelectAll<ReqStream>,
    ready: VecDeque<OutMsg>,
    /// The shutdown flag, checked on every poll: one atomic load while nothing changed.
    shutdown_rx: watch::Receiver<bool>,
    /// Resolves on shutdown. Polled only before returning `Pending`, so the task is woken on
    /// shutdown without locking the flag's shared waiter list once per message sent.
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    done: bool,
}

impl Mux {
    fn new(state: Arc<SimState>, inbound: Streaming<proto::ModelInferRequest>) -> Self {
        let mut shutdown_rx = state.shutdown.clone();
        // The first check reads the flag itself, whatever the clone's notion of "seen" is.
        shutdown_rx.mark_changed();
        let mut rx = state.shutdown.clone();
        let shutdown = Box::pin(async move {
            signalled(&mut rx).await;
        });
        Mux {
            state,
            inbound: Some(inbound),
            active: SelectAll::new(),
            ready: VecDeque::new(),
            shutdown_rx,
            shutdown,
            done: false,
        }
    }

    /// True when the `shutdown` future would resolve: the flag is true or its sender is gone.
    fn shutdown_requested(&mut self) -> bool {
        match self.shutdown_rx.has_changed() {
            // Nothing sent since the flag was last read, and it read `false` then.
            Ok(false) => false,
            Ok(true) => *self.shutdown_rx.borrow_and_update(),
            Err(_) => true,
        }
    }

    /// Ends the call: the server is shutting down.
    fn shut_down(&mut self) -> Poll<Option<Result<OutMsg, Status>>> {
        self.done = true;
        Poll::Ready(Some(Err(Status::unavailable(
            BeginError::ShuttingDown.message(),
        ))))
    }

    /// Starts one request: validation errors become an immediate error response.
    fn accept(&mut self, req: proto::ModelInferRequest) {
        let arrival = Instant::now();
        // An owned handle, so the model entry borrowed from it does not borrow `self`.
        let state_handle = self.state.clone();
        let state = &state_handle;
        let entry = match state.lookup(&req.model_name, Some(&req.model_version)) {
            Ok(e) => e,
            Err(e) => return self.refuse(error_head(&req), e),
        };
        let index = state.models.iter().position(|m| std::ptr::eq(m, entry));
        let index = index.unwrap_or(0);
        let head = entry.wire.head(&req.id);
        let layout = match entry.spec.kind {
            ModelKind::Llm(l) => l,
            ModelKind::Tensor => return self.accept_tensor(entry, index, head, &req, arrival),
        };
        let params = match parse_llm_request(entry, &req) {
            Ok(p) => p,
            Err(e) => {
                entry.record_invalid(arrival);
                return self.refuse(head, e);
            }
        };
        // A model that is not decoupled answers with exactly one response.
        let streaming = entry.spec.decoupled && params.stream == Some(true);
        let empty_final = layout == LlmLayout::TensorRtLlm && params.empty_final;
        let echo = (!streaming && params.echo_input()).then(|| params.prompt.text().to_owned());
        let st = state.clone();
        let start = Box::pin(async move {
            let entry = &st.models[index];
            st.begin(entry, &params.prompt, params.max_tokens, false, arrival)
                .await
        });
        self.active.push(ReqStream {
            streaming,
            empty_final,
            echo,
            ..ReqStream::new(ReqPhase::Starting(start), head, entry.wire.outputs.clone())
        });
    }

    /// Answers one request with an error response at once.
    fn refuse(&mut self, head: Bytes, e: impl std::fmt::Display) {
        let message = e.to_string();
        self.ready.push_back(OutMsg::Error { head, message });
    }

    /// Starts one tensor request: one response once its execution ended.
    fn accept_tensor(
        &mut self,
        entry: &ModelEntry,
        index: usize,
        head: Bytes,
        req: &proto::ModelInferRequest,
        arrival: Instant,
    ) {
        let (batch, outputs) = match parse_tensor_request(entry, req) {
            Ok(x) => x,
            Err(e) => {
                entry.record_invalid(arrival);
                return self.refuse(head, e);
            }
        };
        let st = self.state.clone();
        let run = Box::pin(async move {
            let entry = &st.models[index];
            let run = st
                .run_tensor(entry, batch, arrival)
                .await
                .map_err(TensorFailed::Begin)?;
            let wire = entry.tensor.as_ref().ok_or(TensorFailed::NoOutputs)?;
            let mut r = wire.grpc_response(&entry.spec, String::new(), batch, &outputs);
            // Name, version and id are in the head already.
            r.model_name.clear();
            r.model_version.clear();
            Ok((Bytes::from(r.encode_to_vec()), run))
        });
        self.active
            .push(ReqStream::new(ReqPhase::Tensor(run), head, Bytes::new()));
    }
}

impl Stream for Mux {
    type Item = Result<OutMsg, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.shutdown_requested() {
            return this.shut_down();
        }
        let mut budget = ACCEPT_BUDGET;
        while let Some(inbound) = this.inbound.as_mut() {
            if budget == 0 {
                // More may be waiting: come back after serving some responses.
                cx.waker().wake_by_ref();
                break;
            }
            match Pin::new(inbound).poll_next(cx) {
                Poll::Ready(Some(Ok(req))) => {
                    budget -= 1;
                    this.accept(req);
                }
                Poll::Ready(Some(Err(_))) => {
                    // The client's side broke (reset, cancelled): nobody is left to answer.
                    this.done = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(None) => this.inbound = None,
                Poll::Pending => break,
            }
        }
        if let Some(m) = this.ready.pop_front() {
            return Poll::Ready(Some(Ok(m)));
        }
        match Pin::new(&mut this.active).poll_next(cx) {
            Poll::Ready(Some(Ok(m))) => Poll::Ready(Some(Ok(m))),
            Poll::Ready(Some(Err(status))) => {
                this.done = true;
                Poll::Ready(Some(Err(status)))
            }
            // Nothing in flight: the call ends once the client closed its side.
            Poll::Ready(None) if this.inbound.is_none() => Poll::Ready(None),
            Poll::Ready(None) | Poll::Pending => {
                // Registers the waker for shutdown; resolves if it came since the check above.
                if this.shutdown.as_mut().poll(cx).is_ready() {
                    return this.shut_down();
                }
                Poll::Pending
            }
        }
    }
}

fn error_head(req: &proto::ModelInferRequest) -> Bytes {
    Bytes::from(
        proto::ModelInferResponse {
            model_name: req.model_name.clone(),
            model_version: req.model_version.clone(),
            id: req.id.clone(),
            ..Default::default()
        }
        .encode_to_vec(),
    )
}

/// Validates a tensor model's `ModelInferRequest`: its batch size and the outputs to answer.
fn parse_tensor_request(
    entry: &ModelEntry,
    req: &proto::ModelInferRequest,
) -> Result<(u32, Vec<OutputChoice>), TensorError> {
    let spec = &entry.spec;
    let raw = &req.raw_input_contents;
    if !raw.is_empty() && raw.len() != req.inputs.len() {
        return Err(TensorError::RawCount {
            inputs: req.inputs.len(),
            model: spec.name.clone(),
            raw: raw.len(),
        });
    }
    let mut views = Vec::with_capacity(req.inputs.len());
    for (i, input) in req.inputs.iter().enumerate() {
        let data = match raw.get(i) {
            None => InputData::Contents(input.contents.as_ref()),
            Some(_) if input.contents.is_some() => {
                return Err(TensorError::ContentsWithRaw {
                    input: input.name.clone(),
                    model: spec.name.clone(),
                });
            }
            Some(r) => InputData::Raw(r),
        };
        views.push(InputView {
            name: &input.name,
            datatype: &input.datatype,
            shape: &input.shape,
            data,
        });
    }
    let batch = validate_inputs(spec, &views)?;
    let outputs = select_outputs(
        spec,
        req.outputs.iter().map(|o| (o.name.as_str(), None)),
        true,
    )?;
    Ok((batch, outputs))
}

fn parse_llm_request(
    entry: &ModelEntry,
    req: &proto::ModelInferRequest,
) -> Result<GenParams, BadRequest> {
    let (bag, empty_final) = bag_from_infer_request(&entry.spec, req)?;
    let mut params = interpret(bag)?;
    params.empty_final = empty_final;
    Ok(params)
}

type StartFuture = Pin<Box<dyn Future<Output = Result<Generation, BeginError>> + Send>>;

/// A tensor request until its answer is encoded: the response body fields and the run to record.
type TensorFuture = Pin<Box<dyn Future<Output = Result<(Bytes, TensorRun), TensorFailed>> + Send>>;

/// Why a streamed tensor request ended without its answer.
#[derive(Debug, thiserror::Error)]
enum TensorFailed {
    /// Refused or cut short before it ran (faults, a full queue, shutdown).
    #[error("{}", .0.message())]
    Begin(BeginError),
    /// The model has no output encoder (a tensor model always has one).
    #[error("internal error: tensor model without outputs")]
    NoOutputs,
}

enum ReqPhase {
    Starting(StartFuture),
    /// A tensor request waiting for its execution.
    Tensor(TensorFuture),
    Running(Box<Generation>),
    /// The last token went out; an empty final response is owed.
    OweEmptyFinal(Box<Generation>),
    Done,
}

/// One request inside a `ModelStreamInfer` call.
struct ReqStream {
    phase: ReqPhase,
    head: Bytes,
    outputs: Bytes,
    streaming: bool,
    empty_final: bool,
    echo: Option<String>,
    cut_after: Option<u32>,
    malformed_at: Option<u32>,
    /// Non-streaming: the text collected so far (prompt echo included).
    text: String,
}

impl ReqStream {
    /// A request in `phase` answering with `head` and `outputs`; not streaming, echoing
    /// nothing, no faults armed.
    fn new(phase: ReqPhase, head: Bytes, outputs: Bytes) -> Self {
        ReqStream {
            phase,
            head,
            outputs,
            streaming: false,
            empty_final: false,
            echo: None,
            cut_after: None,
            malformed_at: None,
            text: String::new(),
        }
    }

    fn error(&mut self, message: String) -> Poll<Option<Result<OutMsg, Status>>> {
        self.phase = ReqPhase::Done;
        Poll::Ready(Some(Ok(OutMsg::Error {
            head: self.head.clone(),
            message,
        })))
    }

    /// Ends the call as a dropped connection would (cut fault).
    fn cut(&mut self) -> Poll<Option<Result<OutMsg, Status>>> {
        if let ReqPhase::Running(g) = &mut self.phase {
            g.tracker.fail(FailReason::Backend);
        }
        self.phase = ReqPhase::Done;
        Poll::Ready(Some(Err(Status::aborted(
            "stream cut by fault injection (cut_rate)",
        ))))
    }

    /// The last token went out in `msg`: done if it was the final response, else an empty final
    /// response is owed.
    fn last_sent(&mut self, msg: OutMsg, last: bool) -> Poll<Option<Result<OutMsg, Status>>> {
        if let ReqPhase::Running(mut g) = std::mem::replace(&mut self.phase, ReqPhase::Done) {
            if last {
                g.succeed();
            } else {
                self.phase = ReqPhase::OweEmptyFinal(g);
            }
        }
        Poll::Ready(Some(Ok(msg)))
    }
}

impl Stream for ReqStream {
    type Item = Result<OutMsg, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match &mut this.phase {
                ReqPhase::Starting(fut) => match fut.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => return this.error(e.message().to_owned()),
                    Poll::Ready(Ok(g)) => {
                        let half = g.source.max_tokens() / 2;
                        if this.streaming {
                            this.cut_after = g.plan.cut.then_some(half);
                            this.malformed_at = g.plan.malformed.then_some(half);
                        }
                        if let Some(echo) = this.echo.take() {
                            this.text = echo;
                        }
                        this.phase = ReqPhase::Running(Box::new(g));
                    }
                },
                ReqPhase::Tensor(fut) => match fut.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => return this.error(e.to_string()),
                    Poll::Ready(Ok((body, run))) => {
                        this.phase = ReqPhase::Done;
                        run.succeed();
                        return Poll::Ready(Some(Ok(OutMsg::Tensor {
                            head: this.head.clone(),
                            body,
                        })));
                    }
                },
                ReqPhase::OweEmptyFinal(g) => {
                    g.succeed();
                    this.phase = ReqPhase::Done;
                    return Poll::Ready(Some(Ok(OutMsg::EmptyFinal {
                        head: this.head.clone(),
                    })));
                }
                ReqPhase::Done => return Poll::Ready(None),
                ReqPhase::Running(g) if !this.streaming => {
                    // One response with everything, once every token is there.
                    loop {
                        match g.source.poll_token(cx) {
                            Poll::Pending => return Poll::Pending,
                            Poll::Ready(Some(Ok(i))) => this.text.push_str(tokens::word(i)),
                            Poll::Ready(Some(Err(e))) => {
                                g.tracker.fail(FailReason::Other);
                                return this.error(e.to_string());
                            }
                            Poll::Ready(None) => break,
                        }
                    }
                    if g.plan.cut {
                        return this.cut();
                    }
                    g.tracker.first_response();
                    let mut raw = BytesMut::with_capacity(this.text.len() + 16);
                    proto::ModelInferResponse {
                        raw_output_contents: vec![encode_bytes_elements([this.text.as_bytes()])],
                        ..Default::default()
                    }
                    .encode(&mut raw)
                    .ok();
                    let last = !this.empty_final;
                    let msg = OutMsg::Text {
                        head: this.head.clone(),
                        outputs: this.outputs.clone(),
                        raw: raw.freeze(),
                        last,
                    };
                    return this.last_sent(msg, last);
                }
                ReqPhase::Running(g) => {
                    let emitted = g.source.emitted();
                    if this.malformed_at == Some(emitted) {
                        this.malformed_at = None;
                        return Poll::Ready(Some(Ok(OutMsg::Malformed {
                            head: this.head.clone(),
                            outputs: this.outputs.clone(),
                        })));
                    }
                    if this.cut_after.is_some_and(|k| emitted >= k) {
                        return this.cut();
                    }
                    match g.source.poll_token(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Some(Ok(index))) => {
                            g.tracker.first_response();
                            let is_last = index + 1 >= g.source.max_tokens();
                            let last = is_last && !this.empty_final;
                            let msg = OutMsg::Token {
                                head: this.head.clone(),
                                outputs: this.outputs.clone(),
                                index,
                                last,
                            };
                            if is_last {
                                return this.last_sent(msg, last);
                            }
                            return Poll::Ready(Some(Ok(msg)));
                        }
                        Poll::Ready(Some(Err(e))) => {
                            g.tracker.fail(FailReason::Other);
                            return this.error(e.to_string());
                        }
                        Poll::Ready(None) => {
                            // Only reachable with zero tokens, which validation prevents.
                            g.succeed();
                            this.phase = ReqPhase::Done;
                        }
                    }
                }
            }
        }
    }
}

/// `text` as a BYTES element; a malformed one (fault injection) claims 1000 bytes more than it
/// holds.
fn text_element(text: &str, malformed: bool) -> Vec<u8> {
    let claimed = text.len() as u32 + if malformed { 1000 } else { 0 };
    [&claimed.to_le_bytes(), text.as_bytes()].concat()
}

/// `ModelInfer` of a tensor model.
async fn tensor_infer(
    st: &SimState,
    entry: &ModelEntry,
    mut req: proto::ModelInferRequest,
    arrival: Instant,
) -> Result<Response<proto::ModelInferResponse>, Status> {
    let (batch, outputs) = parse_tensor_request(entry, &req).map_err(|m| {
        entry.record_invalid(arrival);
        Status::invalid_argument(m.to_string())
    })?;
    // The input tensors (megabytes for images) are not needed past validation.
    let id = std::mem::take(&mut req.id);
    drop(req);
    let run = st
        .run_tensor(entry, batch, arrival)
        .await
        .map_err(begin_status)?;
    let wire = entry
        .tensor
        .as_ref()
        .ok_or_else(|| Status::internal("tensor model without outputs"))?;
    let resp = wire.grpc_response(&entry.spec, id, batch, &outputs);
    run.succeed();
    Ok(Response::new(resp))
}

/// The unary RPCs (and a codec-generic `ModelStreamInfer` for completeness: the service in front
/// of it routes that method to the fragment codec).
#[derive(Clone)]
pub(crate) struct GrpcSim {
    state: Arc<SimState>,
}

fn lookup<'a>(st: &'a SimState, name: &str, version: &str) -> Result<&'a ModelEntry, Status> {
    st.lookup(name, Some(version))
        .map_err(|e| Status::not_found(e.to_string()))
}

fn begin_status(e: BeginError) -> Status {
    match e {
        BeginError::Unavailable | BeginError::ShuttingDown => Status::unavailable(e.message()),
        BeginError::Injected => Status::internal(e.message()),
        BeginError::QueueFull => Status::resource_exhausted(e.message()),
    }
}

#[tonic::async_trait]
impl GrpcInferenceService for GrpcSim {
    async fn server_live(
        &self,
        _request: Request<proto::ServerLiveRequest>,
    ) -> Result<Response<proto::ServerLiveResponse>, Status> {
        Ok(Response::new(proto::ServerLiveResponse { live: true }))
    }

    async fn server_ready(
        &self,
        _request: Request<proto::ServerReadyRequest>,
    ) -> Result<Response<proto::ServerReadyResponse>, Status> {
        Ok(Response::new(proto::ServerReadyResponse {
            ready: !self.state.shutting_down(),
        }))
    }

    async fn model_ready(
        &self,
        request: Request<proto::ModelReadyRequest>,
    ) -> Result<Response<proto::ModelReadyResponse>, Status> {
        let r = request.into_inner();
        lookup(&self.state, &r.name, &r.version)?;
        Ok(Response::new(proto::ModelReadyResponse {
            ready: !self.state.shutting_down(),
        }))
    }

    async fn server_metadata(
        &self,
        _request: Request<proto::ServerMetadataRequest>,
    ) -> Result<Response<proto::ServerMetadataResponse>, Status> {
        Ok(Response::new(proto::ServerMetadataResponse {
            name: SERVER_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            extensions: EXTENSIONS.iter().map(|s| (*s).to_owned()).collect(),
        }))
    }

    async fn model_metadata(
        &self,
        request: Request<proto::ModelMetadataRequest>,
    ) -> Result<Response<proto::ModelMetadataResponse>, Status> {
        let r = request.into_inner();
        Ok(Response::new(
            lookup(&self.state, &r.name, &r.version)?
                .spec
                .metadata_proto(),
        ))
    }

    async fn model_infer(
        &self,
        request: Request<proto::ModelInferRequest>,
    ) -> Result<Response<proto::ModelInferResponse>, Status> {
        let arrival = Instant::now();
        let req = request.into_inner();
        let st = &self.state;
        let entry = lookup(st, &req.model_name, &req.model_version)?;
        if entry.spec.decoupled {
            return Err(Status::new(
                Code::Unimplemented,
                "ModelInfer RPC doesn't support models with decoupled transaction policy",
            ));
        }
        if !entry.is_llm() {
            return tensor_infer(st, entry, req, arrival).await;
        }
        let params = parse_llm_request(entry, &req).map_err(|m| {
            entry.record_invalid(arrival);
            Status::invalid_argument(m.to_string())
        })?;
        let mut g = st
            .begin(entry, &params.prompt, params.max_tokens, false, arrival)
            .await
            .map_err(begin_status)?;
        let n = g
            .run_to_end()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        if g.plan.cut {
            g.tracker.fail(FailReason::Backend);
            return Err(Status::aborted(
                "response cut by fault injection (cut_rate)",
            ));
        }
        let text = output_text(&params, n, params.echo_input());
        let element = text_element(&text, g.plan.malformed);
        g.succeed();
        Ok(Response::new(proto::ModelInferResponse {
            model_name: entry.spec.name.clone(),
            model_version: entry.spec.version.clone(),
            id: req.id,
            parameters: Default::default(),
            outputs: vec![text_output_tensor(&entry.spec)],
            raw_output_contents: vec![element],
        }))
    }

    type ModelStreamInferStream = Pin<
        Box<dyn Stream<Item = Result<proto::ModelStreamInferResponse, Status>> + Send + 'static>,
    >;

    async fn model_stream_infer(
        &self,
        request: Request<Streaming<proto::ModelInferRequest>>,
    ) -> Result<Response<Self::ModelStreamInferStream>, Status> {
        let mux = open_stream(&self.state, request.into_inner())?;
        Ok(Response::new(Box::pin(
            mux.map(|r| r.map(|m| m.to_proto())),
        )))
    }

    async fn model_config(
        &self,
        request: Request<proto::ModelConfigRequest>,
    ) -> Result<Response<proto::ModelConfigResponse>, Status> {
        let r = request.into_inner();
        let entry = lookup(&self.state, &r.name, &r.version)?;
        Ok(Response::new(proto::ModelConfigResponse {
            config: Some(entry.spec.config_proto()),
        }))
    }

    async fn model_statistics(
        &self,
        request: Request<proto::ModelStatisticsRequest>,
    ) -> Result<Response<proto::ModelStatisticsResponse>, Status> {
        let given = request.metadata().get(ACCESS_TOKEN_HEADER);
        if !self.state.may_read_stats(given.map(|v| v.as_bytes())) {
            return Err(Status::permission_denied(RESTRICTED_MESSAGE));
        }
        let r = request.into_inner();
        let model_stats = if r.name.is_empty() {
            self.state
                .models
                .iter()
                .map(|m| m.metrics.stats_proto())
                .collect()
        } else {
            vec![
                lookup(&self.state, &r.name, &r.version)?
                    .metrics
                    .stats_proto(),
            ]
        };
        Ok(Response::new(proto::ModelStatisticsResponse {
            model_stats,
        }))
    }

    async fn repository_index(
        &self,
        _request: Request<proto::RepositoryIndexRequest>,
    ) -> Result<Response<proto::RepositoryIndexResponse>, Status> {
        let models = self
            .state
            .models
            .iter()
            .map(|m| proto::repository_index_response::ModelIndex {
                name: m.spec.name.clone(),
                version: m.spec.version.clone(),
                state: "READY".to_owned(),
                reason: String::new(),
            })
            .collect();
        Ok(Response::new(proto::RepositoryIndexResponse { models }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::grpc_wire::ModelWire;
    use crate::sim::models::ModelSpec;

    fn final_flag(r: &proto::ModelInferResponse) -> Option<bool> {
        match r.parameters.get("triton_final_response")?.parameter_choice {
            Some(proto::infer_parameter::ParameterChoice::BoolParam(b)) => Some(b),
            _ => None,
        }
    }

    #[test]
    fn fragment_encoding_is_valid_protobuf() {
        let spec = ModelSpec::tensorrt_llm("gpt2");
        let wire = ModelWire::new(&spec);
        let head = wire.head("req-7");
        let tok = OutMsg::Token {
            head: head.clone(),
            outputs: wire.outputs.clone(),
            index: 1,
            last: false,
        };
        let p = tok.to_proto();
        assert!(p.error_message.is_empty());
        let r = p.infer_response.expect("response");
        assert_eq!(
            (
                r.model_name.as_str(),
                r.model_version.as_str(),
                r.id.as_str()
            ),
            ("gpt2", "1", "req-7")
        );
        assert_eq!(final_flag(&r), Some(false));
        assert_eq!(r.outputs.len(), 1);
        assert_eq!(r.outputs[0].name, "text_output");
        assert_eq!(r.outputs[0].datatype, "BYTES");
        assert_eq!(r.outputs[0].shape, vec![1, 1]);
        assert_eq!(
            r.raw_output_contents,
            vec![encode_bytes_elements([tokens::word(1).as_bytes()])]
        );

        let r = OutMsg::EmptyFinal { head: head.clone() }
            .to_proto()
            .infer_response
            .expect("r");
        assert!(r.outputs.is_empty() && r.raw_output_contents.is_empty());
        assert_eq!((final_flag(&r), r.id.as_str()), (Some(true), "req-7"));

        let e = OutMsg::Error {
            head,
            message: "boom".into(),
        }
        .to_proto();
        assert_eq!(e.error_message, "boom");
        assert_eq!(e.infer_response.map(|r| r.id), Some("req-7".to_owned()));

        // Same bytes as prost's own encoding of the equivalent message.
        let vllm = ModelSpec::vllm("v");
        let w = ModelWire::new(&vllm);
        let msg = OutMsg::Token {
            head: w.head(""),
            outputs: w.outputs.clone(),
            index: 0,
            last: true,
        };
        let mut ours = BytesMut::new();
        msg.encode(&mut ours);
        let decoded =
            proto::ModelStreamInferResponse::decode(ours.clone().freeze()).expect("decode");
        assert_eq!(
            decoded
                .infer_response
                .as_ref()
                .map(|r| r.outputs[0].shape.clone()),
            Some(vec![1])
        );
        assert_eq!(decoded.encode_to_vec().len(), ours.len());
    }
}
