//! KServe v2 / Triton HTTP routes (health, metadata, configuration, statistics, repository
//! index, `infer`, and the generate extension), plus the Prometheus metrics router that serves
//! the separate metrics port.
//!
//! `infer` takes JSON tensors and the binary tensor data extension on both sides: inputs with
//! `parameters.binary_data_size` read their bytes from after the JSON header (its length in
//! `Inference-Header-Content-Length`); outputs asked with `parameters.binary_data` (or
//! request-wide `binary_data_output`) are answered the same way, with
//! `Content-Type: application/octet-stream`; everything else is plain JSON.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::{BufMut, BytesMut};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::models::DataType;
use super::request::{BadRequest, Bag, GenParams, bag_from_infer_request, interpret};
use super::state::{BeginError, Generation, ModelEntry, SimState};
use super::stream::{
    Answer, EventFormat, Reject, SseBody, full_json_response, json_answer, kserve_error,
};
use super::tensor::{
    HttpAnswer, InputData, InputView, OutputChoice, select_outputs, validate_inputs,
};
use super::tokens;
use crate::proto;
use crate::workload::tensor::encode_bytes_elements;

/// Largest request body accepted (image tensors of a batch of 8 are ~40 MB).
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// Server name reported by `GET /v2` and `ServerMetadata`.
pub(crate) const SERVER_NAME: &str = "ttftbench-sim";

/// Triton's extension list (its `server.cc`), which clients such as perf_analyzer inspect.
pub(crate) const EXTENSIONS: [&str; 13] = [
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "parameters",
    "statistics",
    "trace",
    "logging",
];

/// Header that carries the access token of restricted APIs.
pub(crate) const ACCESS_TOKEN_HEADER: &str = "triton-access-token";

/// Message when a restricted API is called without the right token.
pub(crate) const RESTRICTED_MESSAGE: &str =
    "This API is restricted, expecting header 'triton-access-token'";

/// The KServe v2 router (the OpenAI routes are merged in by the caller).
pub(crate) fn router(state: Arc<SimState>) -> Router {
    let r = Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2/models", get(list_models))
        .route("/v2/models/stats", get(all_stats))
        .route("/v2/repository/index", post(list_models));
    let r = per_model(r, "", get(model_metadata));
    let r = per_model(r, "/ready", get(model_ready));
    let r = per_model(r, "/config", get(model_config));
    let r = per_model(r, "/stats", get(model_stats));
    let r = per_model(r, "/generate", post(generate::<false>));
    let r = per_model(r, "/generate_stream", post(generate::<true>));
    per_model(r, "/infer", post(infer))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Routes `tail` under a model with and without a version, as Triton does.
fn per_model(
    r: Router<Arc<SimState>>,
    tail: &str,
    handler: axum::routing::MethodRouter<Arc<SimState>>,
) -> Router<Arc<SimState>> {
    r.route(&format!("/v2/models/{{model}}{tail}"), handler.clone())
        .route(
            &format!("/v2/models/{{model}}/versions/{{version}}{tail}"),
            handler,
        )
}

/// The metrics-port router: `GET /metrics` (in the server's metrics style),
/// `GET /dcgm/metrics` (the DCGM exporter's page for the simulated GPU) and, in llama.cpp's
/// style, `GET /slots`.
pub(crate) fn metrics_router(state: Arc<SimState>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/dcgm/metrics", get(dcgm_metrics))
        // llama-server serves /slots on its one port, beside /metrics.
        .route("/slots", get(super::engine_api::slots))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                "Not Found: try /metrics or /dcgm/metrics\n",
            )
        })
        .with_state(state)
}

/// Fallback for unknown paths on the HTTP port, in KServe's error shape.
pub(crate) async fn not_found() -> Response {
    kserve_error(StatusCode::NOT_FOUND, "Not Found")
}

#[derive(Debug, Deserialize)]
struct ModelPath {
    model: String,
    version: Option<String>,
}

fn json_response(body: impl Into<axum::body::Body>) -> Response {
    json_answer(StatusCode::OK, body)
}

fn lookup<'a>(st: &'a SimState, p: &ModelPath) -> Result<&'a ModelEntry, Reject> {
    st.lookup(&p.model, p.version.as_deref())
        .map_err(|m| kserve_error(StatusCode::BAD_REQUEST, &m.to_string()).into())
}

async fn server_metadata() -> Response {
    let body = json!({
        "name": SERVER_NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": EXTENSIONS,
    });
    json_response(body.to_string())
}

async fn live() -> StatusCode {
    StatusCode::OK
}

async fn ready(State(st): State<Arc<SimState>>) -> StatusCode {
    if st.shutting_down() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    }
}

/// `GET /v2/models` (non-standard, for people with curl) and `POST /v2/repository/index`.
async fn list_models(State(st): State<Arc<SimState>>) -> Response {
    let list: Vec<Value> = st
        .models
        .iter()
        .map(|m| json!({"name": m.spec.name, "version": m.spec.version, "state": "READY"}))
        .collect();
    json_response(Value::Array(list).to_string())
}

async fn model_metadata(State(st): State<Arc<SimState>>, Path(p): Path<ModelPath>) -> Answer {
    Ok(json_response(lookup(&st, &p)?.metadata_json.clone()))
}

async fn model_ready(State(st): State<Arc<SimState>>, Path(p): Path<ModelPath>) -> Answer {
    lookup(&st, &p)?;
    Ok(ready(State(st)).await.into_response())
}

async fn model_config(State(st): State<Arc<SimState>>, Path(p): Path<ModelPath>) -> Answer {
    Ok(json_response(lookup(&st, &p)?.config_json.clone()))
}

fn check_access(st: &SimState, headers: &HeaderMap) -> Result<(), Reject> {
    if st.may_read_stats(headers.get(ACCESS_TOKEN_HEADER).map(HeaderValue::as_bytes)) {
        return Ok(());
    }
    Err(kserve_error(StatusCode::FORBIDDEN, RESTRICTED_MESSAGE).into())
}

async fn all_stats(State(st): State<Arc<SimState>>, headers: HeaderMap) -> Answer {
    check_access(&st, &headers)?;
    let stats: Vec<Value> = st.models.iter().map(|m| m.metrics.stats_json()).collect();
    Ok(json_response(json!({ "model_stats": stats }).to_string()))
}

async fn model_stats(
    State(st): State<Arc<SimState>>,
    Path(p): Path<ModelPath>,
    headers: HeaderMap,
) -> Answer {
    check_access(&st, &headers)?;
    let stats = lookup(&st, &p)?.metrics.stats_json();
    Ok(json_response(json!({ "model_stats": [stats] }).to_string()))
}

async fn metrics(State(st): State<Arc<SimState>>) -> Response {
    prometheus_text(super::export::render(st.metrics_style, &st))
}

async fn dcgm_metrics(State(st): State<Arc<SimState>>) -> Response {
    prometheus_text(super::export::render_dcgm(&st))
}

fn prometheus_text(body: String) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// HTTP status for a request that could not start.
pub(crate) fn begin_status(e: BeginError) -> StatusCode {
    match e {
        BeginError::Injected => StatusCode::INTERNAL_SERVER_ERROR,
        BeginError::Unavailable | BeginError::QueueFull | BeginError::ShuttingDown => {
            StatusCode::SERVICE_UNAVAILABLE
        }
    }
}

/// The KServe error answer to a request that could not start.
fn begin_error(e: BeginError) -> Reject {
    kserve_error(begin_status(e), e.message()).into()
}

/// The KServe error answer to a generation whose tokens stopped coming.
fn source_error(e: super::engine::SourceError) -> Reject {
    kserve_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()).into()
}

/// Refuses tensor models on the LLM routes.
fn require_llm(entry: &ModelEntry) -> Result<(), Reject> {
    if entry.is_llm() {
        return Ok(());
    }
    let name = &entry.spec.name;
    let why = format!(
        "model '{name}' is a tensor model: the generate extension needs a text model (send tensors to /v2/models/{name}/infer)"
    );
    Err(kserve_error(StatusCode::BAD_REQUEST, &why).into())
}

/// Parses a generate-extension body; returns the request `id` (echoed in responses) too.
fn parse_generate(body: &[u8]) -> Result<(GenParams, Option<String>), BadRequest> {
    let v: Value = serde_json::from_slice(body).map_err(BadRequest::BodyJson)?;
    let id = request_id(&v);
    let params = interpret(Bag::from_generate_json(v)?)?;
    Ok((params, id))
}

/// Shared start of both generate routes: lookup, parse, faults, engine.
async fn start_generate<'a>(
    st: &'a SimState,
    p: &ModelPath,
    body: &[u8],
) -> Result<(&'a ModelEntry, GenParams, Option<String>, Generation), Reject> {
    let arrival = Instant::now();
    let entry = lookup(st, p)?;
    require_llm(entry)?;
    let (params, id) = parse_generate(body).map_err(|m| invalid(entry, arrival, m))?;
    let g = st
        .begin(entry, &params.prompt, params.max_tokens, false, arrival)
        .await
        .map_err(begin_error)?;
    Ok((entry, params, id, g))
}

/// One generate response object, text included.
fn generate_json(entry: &ModelEntry, id: Option<&str>, text: &str) -> Vec<u8> {
    let mut v = json!({
        "model_name": entry.spec.name,
        "model_version": entry.spec.version,
        "text_output": text,
    });
    if let Some(id) = id {
        v["id"] = Value::String(id.to_owned());
    }
    v.to_string().into_bytes()
}

/// The text of `tokens_out` tokens, after the prompt when `with_input`.
pub(crate) fn output_text(params: &GenParams, tokens_out: u32, with_input: bool) -> String {
    let prompt = if with_input { params.prompt.text() } else { "" };
    let mut s = String::with_capacity(prompt.len() + tokens::text_len(tokens_out));
    s.push_str(prompt);
    tokens::push_text(&mut s, tokens_out);
    s
}

/// Runs a generation to its end and returns the response text, or the error answer.
async fn whole_text(g: &mut Generation, params: &GenParams) -> Result<String, Reject> {
    let n = g.run_to_end().await.map_err(source_error)?;
    Ok(output_text(params, n, params.echo_input()))
}

/// Runs a generate request to its end: the one response object, or the error answer.
async fn whole_json(
    g: &mut Generation,
    entry: &ModelEntry,
    id: Option<&str>,
    params: &GenParams,
) -> Result<Vec<u8>, Reject> {
    let text = whole_text(g, params).await?;
    Ok(generate_json(entry, id, &text))
}

/// Both generate routes: `/generate` (`STREAM` false) answers one JSON object, and
/// `/generate_stream` answers server-sent events.
async fn generate<const STREAM: bool>(
    State(st): State<Arc<SimState>>,
    Path(p): Path<ModelPath>,
    body: Bytes,
) -> Answer {
    let (entry, params, id, mut g) = start_generate(&st, &p, &body).await?;
    if STREAM {
        return stream_answer(g, entry, id, &params).await;
    }
    let body = whole_json(&mut g, entry, id.as_deref(), &params).await?;
    Ok(full_json_response(&mut g, body))
}

/// The `/generate_stream` answer to a started generation.
async fn stream_answer(
    mut g: Generation,
    entry: &ModelEntry,
    id: Option<String>,
    params: &GenParams,
) -> Answer {
    if params.stream == Some(false) {
        // The backend was told not to stream: one event with the whole text, as TensorRT-LLM
        // and vLLM answer `stream: false` on this route.
        let json = whole_json(&mut g, entry, id.as_deref(), params).await?;
        let event = [b"data: ", &json[..], b"\n\n"].concat();
        g.succeed();
        return Ok((
            [(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")],
            event,
        )
            .into_response());
    }
    let prefix = id.map(|id| {
        let head =
            json!({"id": id, "model_name": entry.spec.name, "model_version": entry.spec.version});
        // `{"id":..,"model_name":..,"model_version":..}` → `data: {..., "text_output":`
        let mut s = head.to_string();
        s.pop();
        Bytes::from(format!("data: {s},\"text_output\":"))
    });
    let format = KserveEvents {
        shared: entry.generate_events.clone(),
        prefix,
        model: entry.spec.name.clone(),
    };
    Ok(SseBody::new(g, format).into_response())
}

/// `generate_stream` events: `data: {"model_name":..,"model_version":..,"text_output":"<token>"}`,
/// no `[DONE]` sentinel (the body just ends), errors as `data: {"error": ...}`.
struct KserveEvents {
    /// Precomputed events (requests without `id`).
    shared: Arc<[Bytes]>,
    /// Per-request event head up to `"text_output":` when the request carried an `id`.
    prefix: Option<Bytes>,
    model: String,
}

impl EventFormat for KserveEvents {
    fn token(&mut self, buf: &mut BytesMut, index: u32) {
        if let Some(prefix) = &self.prefix {
            buf.put_slice(prefix);
            buf.put_u8(b'"');
            buf.put_slice(tokens::word(index).as_bytes());
            buf.put_slice(b"\"}\n\n");
        }
    }

    fn shared_token(&self, index: u32) -> Option<Bytes> {
        match self.prefix {
            Some(_) => None,
            None => self.shared.get(index as usize % tokens::CYCLE).cloned(),
        }
    }

    fn malformed(&mut self, buf: &mut BytesMut) {
        let model = json!(self.model);
        let _ = write!(
            buf,
            "data: {{\"model_name\":{model},\"text_output\":\" the\n\n"
        );
    }

    fn error(&mut self, buf: &mut BytesMut, message: &str) {
        let _ = write!(buf, "data: {}\n\n", json!({ "error": message }));
    }

    fn event_size_hint(&self) -> usize {
        self.prefix.as_ref().map_or(0, Bytes::len) + 16
    }
}

/// `POST .../infer` (JSON, with the binary tensor extension on input and output): tensor models
/// and non-decoupled text models, as on Triton.
async fn infer(
    State(st): State<Arc<SimState>>,
    Path(p): Path<ModelPath>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let arrival = Instant::now();
    let entry = lookup(&st, &p)?;
    if entry.spec.decoupled {
        return Err(kserve_error(
            StatusCode::BAD_REQUEST,
            "HTTP end point doesn't support models with decoupled transaction policy",
        )
        .into());
    }
    if !entry.is_llm() {
        return tensor_infer(&st, entry, &headers, body, arrival).await;
    }
    let bad = |m| invalid(entry, arrival, m);
    let (req, binary_out) = parse_infer_json(&headers, &body).map_err(bad)?;
    let params = bag_from_infer_request(&entry.spec, &req)
        .and_then(|(bag, _)| interpret(bag))
        .map_err(bad)?;
    let mut g = st
        .begin(entry, &params.prompt, params.max_tokens, false, arrival)
        .await
        .map_err(begin_error)?;
    let text = whole_text(&mut g, &params).await?;
    let shape = entry.spec.single_output_shape();
    let mut head = json!({
        "model_name": entry.spec.name,
        "model_version": entry.spec.version,
        "outputs": [{"name": "text_output", "datatype": "BYTES", "shape": shape}],
    });
    if !req.id.is_empty() {
        head["id"] = Value::String(req.id.clone());
    }
    if !binary_out {
        head["outputs"][0]["data"] = json!([text]);
        return Ok(full_json_response(&mut g, head.to_string().into_bytes()));
    }
    let blob = encode_bytes_elements([text.as_bytes()]);
    head["outputs"][0]["parameters"] = json!({ "binary_data_size": blob.len() });
    g.succeed();
    let json = head.to_string().into_bytes();
    let blobs = vec![Bytes::from(blob)];
    Ok(infer_response(HttpAnswer { json, blobs }))
}

/// `infer` of a tensor model: validate, run through the batcher, answer in JSON or binary.
async fn tensor_infer(
    st: &SimState,
    entry: &ModelEntry,
    headers: &HeaderMap,
    body: Bytes,
    arrival: Instant,
) -> Answer {
    let parsed = parse_tensor_infer(entry, headers, &body);
    // The input tensors (megabytes for images) are not needed past validation.
    drop(body);
    let (batch, outputs, id) = parsed.map_err(|m| invalid(entry, arrival, m))?;
    let run = st
        .run_tensor(entry, batch, arrival)
        .await
        .map_err(begin_error)?;
    let Some(wire) = &entry.tensor else {
        return Err(kserve_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error: tensor model without outputs",
        )
        .into());
    };
    let answer = wire.http_answer(&entry.spec, id.as_deref(), batch, &outputs);
    run.succeed();
    Ok(infer_response(answer))
}

/// Records a request that failed validation and answers it 400 with why.
fn invalid(entry: &ModelEntry, arrival: Instant, m: BadRequest) -> Reject {
    entry.record_invalid(arrival);
    kserve_error(StatusCode::BAD_REQUEST, &m.to_string()).into()
}

/// Binary answers up to this size are sent as one buffer; larger ones as the JSON header
/// followed by the shared output buffers, uncopied.
const COALESCE_BYTES: usize = 64 * 1024;

/// An infer answer: plain JSON, or the JSON header and the binary outputs after it.
fn infer_response(a: HttpAnswer) -> Response {
    if a.blobs.is_empty() {
        return json_answer(StatusCode::OK, a.json);
    }
    let json_len = a.json.len();
    let total = json_len + a.blobs.iter().map(Bytes::len).sum::<usize>();
    let body = if total <= COALESCE_BYTES {
        let mut all = a.json;
        all.reserve_exact(total - json_len);
        a.blobs.iter().for_each(|b| all.extend_from_slice(b));
        axum::body::Body::from(all)
    } else {
        let chunks = std::iter::once(Bytes::from(a.json))
            .chain(a.blobs)
            .map(Ok::<_, std::convert::Infallible>);
        axum::body::Body::from_stream(futures_util::stream::iter(chunks))
    };
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(
        header::HeaderName::from_static("inference-header-content-length"),
        HeaderValue::from(json_len),
    );
    // A streamed body has no length of its own; hyper frames it by this header instead of
    // falling back to chunked encoding, as Triton's answers carry a length.
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(total));
    resp
}

/// Validates a tensor model's HTTP infer request (JSON, with binary inputs after the header):
/// its batch size, the outputs to answer, and its `id`.
fn parse_tensor_infer(
    entry: &ModelEntry,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(u32, Vec<OutputChoice>, Option<String>), BadRequest> {
    let spec = &entry.spec;
    let (v, binary) = split_infer_body(headers, body)?;
    let inputs = json_inputs(&v)?;
    let mut rest = binary;
    let mut parsed = Vec::with_capacity(inputs.len());
    for input in inputs {
        let (name, datatype, shape) = input_head(input)?;
        let data = match input.pointer("/parameters/binary_data_size") {
            Some(size) => {
                let size = size
                    .as_u64()
                    .and_then(|s| usize::try_from(s).ok())
                    .ok_or_else(|| BadRequest::BinarySize {
                        input: name.into(),
                        got: size.clone(),
                    })?;
                if size > rest.len() {
                    return Err(BadRequest::BinaryOverrun {
                        input: name.into(),
                        size,
                        left: rest.len(),
                        header_length_missing: binary.is_empty(),
                    });
                }
                let (this, tail) = rest.split_at(size);
                rest = tail;
                InputData::Raw(this)
            }
            None => InputData::Json(input.get("data")),
        };
        parsed.push((name, datatype, shape, data));
    }
    if !rest.is_empty() {
        return Err(BadRequest::BinaryLeftOver(rest.len()));
    }
    let views: Vec<InputView<'_>> = parsed
        .iter()
        .map(|(name, datatype, shape, data)| InputView {
            name,
            datatype,
            shape,
            data: *data,
        })
        .collect();
    let batch = validate_inputs(spec, &views)?;
    let flag = |p: Option<&Value>| p.and_then(Value::as_bool);
    let binary_default = flag(v.pointer("/parameters/binary_data_output")).unwrap_or(false);
    let requested = match v.get("outputs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(outs)) => outs
            .iter()
            .map(|o| {
                let name = o
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or(BadRequest::Expected(
                        "every requested output to have a 'name'",
                    ))?;
                Ok((name, flag(o.pointer("/parameters/binary_data"))))
            })
            .collect::<Result<Vec<_>, BadRequest>>()?,
        Some(_) => {
            return Err(BadRequest::WrongType {
                field: "outputs".into(),
                expected: "an array of {name, parameters}",
                got: None,
            });
        }
    };
    let outputs = select_outputs(spec, requested, binary_default)?;
    let id = request_id(&v);
    Ok((batch, outputs, id))
}

/// A request's `id`, string or number, as the responses echo it.
fn request_id(v: &Value) -> Option<String> {
    match v.get("id")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The `inputs` array of a JSON infer request.
fn json_inputs(v: &Value) -> Result<&Vec<Value>, BadRequest> {
    v.get("inputs")
        .and_then(Value::as_array)
        .ok_or(BadRequest::Expected(
            "an 'inputs' array of {name, shape, datatype, data}",
        ))
}

/// The `name`, `datatype` and `shape` every JSON infer input must carry.
fn input_head(input: &Value) -> Result<(&str, &str, Vec<i64>), BadRequest> {
    let name = input
        .get("name")
        .and_then(Value::as_str)
        .ok_or(BadRequest::Expected("every input to have a 'name'"))?;
    let lacks = |part| BadRequest::InputPart {
        input: name.into(),
        part,
    };
    let datatype = input
        .get("datatype")
        .and_then(Value::as_str)
        .ok_or_else(|| lacks("a 'datatype'"))?;
    let shape = input
        .get("shape")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_i64).collect())
        .ok_or_else(|| lacks("a 'shape' array of integers"))?;
    Ok((name, datatype, shape))
}

/// Splits an infer body into its JSON header (parsed) and the binary data after it.
fn split_infer_body<'a>(
    headers: &HeaderMap,
    body: &'a [u8],
) -> Result<(Value, &'a [u8]), BadRequest> {
    let declared = headers.get("inference-header-content-length");
    let header_len =
        match declared {
            Some(v) => {
                let n: usize = v.to_str().ok().and_then(|s| s.trim().parse().ok()).ok_or(
                    BadRequest::Expected("Inference-Header-Content-Length to be a byte count"),
                )?;
                if n > body.len() {
                    return Err(BadRequest::HeaderLength {
                        length: n,
                        body: body.len(),
                    });
                }
                n
            }
            None => body.len(),
        };
    let (json_part, binary) = body.split_at(header_len);
    let v: Value = serde_json::from_slice(json_part).map_err(|source| BadRequest::InferJson {
        source,
        header_length_missing: declared.is_none(),
    })?;
    Ok((v, binary))
}

/// Turns a KServe JSON infer request (optionally followed by binary tensor data) for a text
/// model into the gRPC request shape, every input as raw bytes, so validation is shared with
/// gRPC. Returns whether the client asked for binary output.
fn parse_infer_json(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(proto::ModelInferRequest, bool), BadRequest> {
    let (v, mut binary) = split_infer_body(headers, body)?;
    let inputs = json_inputs(&v)?;
    let mut req = proto::ModelInferRequest {
        id: v
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        ..Default::default()
    };
    for input in inputs {
        let (name, dt_name, shape) = input_head(input)?;
        // Exactly the names Triton takes (the client's reading of model metadata is lenient).
        let dt: DataType = dt_name.parse().map_err(|_| BadRequest::UnknownDatatype {
            input: name.into(),
            datatype: dt_name.into(),
        })?;
        let binary_size = input
            .pointer("/parameters/binary_data_size")
            .and_then(Value::as_u64);
        let raw = match binary_size {
            Some(size) => {
                let size = size as usize;
                if size > binary.len() {
                    return Err(BadRequest::BinaryShort {
                        input: name.into(),
                        size,
                        left: binary.len(),
                    });
                }
                let (this, rest) = binary.split_at(size);
                binary = rest;
                this.to_vec()
            }
            None => json_data_to_raw(name, dt, input.get("data"))?,
        };
        req.inputs
            .push(proto::model_infer_request::InferInputTensor {
                name: name.to_owned(),
                datatype: dt_name.to_owned(),
                shape,
                parameters: Default::default(),
                contents: None,
            });
        req.raw_input_contents.push(raw);
    }
    let flag = |p: Option<&Value>| p.and_then(Value::as_bool).unwrap_or(false);
    let binary_out = flag(v.pointer("/parameters/binary_data_output"))
        || v.get("outputs")
            .and_then(Value::as_array)
            .is_some_and(|outs| {
                outs.iter()
                    .any(|o| flag(o.pointer("/parameters/binary_data")))
            });
    Ok((req, binary_out))
}

/// Encodes JSON tensor data (flat or nested, row-major) in raw form.
fn json_data_to_raw(name: &str, dt: DataType, data: Option<&Value>) -> Result<Vec<u8>, BadRequest> {
    let data = data.ok_or_else(|| BadRequest::InputPart {
        input: name.into(),
        part: "'data' (or binary_data_size)",
    })?;
    let mut flat = Vec::new();
    flatten(data, &mut flat);
    let mut out = Vec::new();
    let bad = |v: &Value| BadRequest::BadElement {
        input: name.into(),
        element: v.clone(),
        datatype: dt.name(),
    };
    for v in flat {
        let bytes = match dt {
            DataType::Bytes => v.as_str().map(|s| encode_bytes_elements([s.as_bytes()])),
            DataType::Bool => v.as_bool().map(|b| vec![u8::from(b)]),
            DataType::I32 => v
                .as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .map(|i| i.to_le_bytes().to_vec()),
            DataType::U32 => v
                .as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .map(|i| i.to_le_bytes().to_vec()),
            DataType::I64 => v.as_i64().map(|i| i.to_le_bytes().to_vec()),
            DataType::F32 => v.as_f64().map(|f| (f as f32).to_le_bytes().to_vec()),
            DataType::F64 => v.as_f64().map(|f| f.to_le_bytes().to_vec()),
            other => {
                return Err(BadRequest::BinaryOnly {
                    input: name.into(),
                    datatype: other.name(),
                });
            }
        };
        out.extend(bytes.ok_or_else(|| bad(v))?);
    }
    Ok(out)
}

fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}
