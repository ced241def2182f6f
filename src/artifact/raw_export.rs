//! perf_analyzer's raw per-request export — GenAI-Perf's `profile_export.json` and `inputs.json`,
//! and `perf --profile-export-file` — encoded request by request and streamed to disk.
//!
//! # `profile_export.json`
//!
//! The layout perf_analyzer writes (`src/profile_data_exporter.cc`) and GenAI-Perf's
//! `LLMProfileDataParser` reads (`genai_perf/profile_data_parser/`), key order as perf_analyzer
//! writes it, compact, one level (experiment) per file:
//!
//! ```text
//! {"experiments":[{"experiment":{"mode":"concurrency","value":4},      <- or "request_rate", 5.0
//!   "requests":[
//!     {"timestamp":1764412345000000000,                                 <- request sent, Unix ns
//!      "request_inputs":{"payload":"{\"model\":\"gpt2\",...}"},          <- openai: the body, a string
//!      "response_timestamps":[1764412345041000000, ...],                <- one per response, Unix ns
//!      "response_outputs":[{"response":"data: {...}\n\n"}, ...]},       <- openai: one per SSE event
//!     ...],
//!   "window_boundaries":[1764412345000000000,1764412355000000000]}],
//!  "version":"ttftbench 0.1.0","schema_version":2,"service_kind":"openai","endpoint":"v1/chat/completions"}
//! ```
//!
//! * `service_kind` is `openai` for every HTTP JSON API (chat, completions, and Triton's
//!   `generate`/`generate_stream`, which GenAI-Perf also drives through perf_analyzer's OpenAI
//!   client) and `triton` for KServe v2 (gRPC and HTTP `/infer`). `endpoint` is the URL path
//!   without its leading `/` (`v1/chat/completions`, `v2/models/gpt2/generate_stream`); `""` for
//!   `triton`. GenAI-Perf picks its response parser from these two fields.
//! * Timestamps are nanoseconds since the Unix epoch: the run's monotonic offsets plus its one
//!   wall-clock anchor, so every timestamp of a run is on one clock. `timestamp` is when the
//!   request was handed to the transport (perf_analyzer: just before the asynchronous send); each
//!   response timestamp is when the read that brought it returned, before decoding (responses
//!   of one read share it, as in `requests.jsonl`).
//! * One `response_outputs` entry per response, in arrival order, text as received:
//!   - streamed HTTP: one entry per server-sent event, `{"response": "data: <data>\n\n"}` with
//!     the event's `data` as it arrived (`[DONE]` included). perf_analyzer writes one entry per
//!     libcurl read, which may hold several events or part of one; GenAI-Perf splits and merges
//!     those back into events, so one event per entry is the form its parser is built for.
//!   - non-streamed HTTP: the whole body, `{"response": "<body>"}`.
//!   - KServe (`triton`): `{"<output name>": <value>, ...}` per response message, each output
//!     tensor as perf_analyzer renders it (below). A response without `text_output` (Triton's
//!     empty final response) still lists it as `""`, as perf_analyzer lists every requested output
//!     and renders an empty buffer as `""`.
//! * `request_inputs`: for `openai`, `{"payload": "<request body>"}`, with the prompt of
//!   completions (`prompt`) and generate (`text_input`) in the one-element list form GenAI-Perf's
//!   converters send and its parser joins (`" ".join(payload["prompt"])`); ttftbench sends the
//!   same text as a plain string, which those APIs treat identically. For `triton`, the input
//!   tensors by name.
//! * Tensor values, as perf_analyzer's `AddDataToJSON`: `BYTES` is one string (the buffer after
//!   its first 4-byte length prefix); a numeric tensor of one element is a scalar, of several a
//!   flat array; an empty buffer is `""`. FP16 and BF16, which perf_analyzer leaves `null`, are
//!   written as numbers.
//! * Only measured requests that completed are written: perf_analyzer records no failed request
//!   and no warm-up. Failures stay in `requests.jsonl`.
//! * `window_boundaries`: the measurement's start and end (Unix ns): earliest send and latest end
//!   of any measured request of the level.
//!
//! # `inputs.json`
//!
//! perf_analyzer's `--input-data` file, one entry per dataset entry in dataset order:
//! `{"data":[{"payload":[{<body>}]}, ...]}` for HTTP JSON APIs (the body in the list form above),
//! `{"data":[{"text_input":["..."],"max_tokens":[256],...}, ...]}` (each tensor's values as a
//! list) for KServe; then `"schema_version":2` (perf_analyzer reads only `data`).
//!
//! Both files are written by [`RawExportWriter`]: the header at the start of the level, one
//! request at a time as the collector receives it, the footer at the end; nothing accumulates in
//! memory.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use prost::Message;
use serde_json::{Map, Value};

use super::bulk_file::BulkFile;
use crate::load::CapturePool;
use crate::load::Stimulus;
pub use crate::record::capture::ResponseForm;
use crate::record::capture::{Capture, Response};
use crate::record::{Clock, Phase, RequestRecord};
use crate::target::{Api, Target};
use crate::workload::tensor::{DataType, element_value};
use crate::workload::{Dataset, Payload};

/// Raw per-request export inside a level directory.
pub const RAW_EXPORT_FILE: &str = "profile_export.json";
/// The requests' payloads, in perf_analyzer's input-data format.
pub const INPUTS_FILE: &str = "inputs.json";

/// What a level's raw export says about its traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportFormat {
    /// `openai` or `triton`.
    pub service_kind: &'static str,
    /// URL path without the leading `/` (`""` for `triton`).
    pub endpoint: String,
    /// How responses were captured.
    pub responses: ResponseForm,
    /// Outputs listed in every KServe response (`""` when a response lacks one).
    pub outputs: Vec<String>,
}

/// The file's opening, up to its first experiment.
pub const FILE_OPEN: &str = "{\"experiments\":[";

/// An experiment's opening, up to its first request (after a comma unless it is the first).
pub fn experiment_open(stimulus: &Stimulus, first: bool) -> String {
    let (mode, value) = match stimulus {
        Stimulus::Concurrency(n) => ("concurrency", Value::from(*n)),
        Stimulus::RequestRate { rate, .. } => ("request_rate", Value::from(*rate)),
        Stimulus::FixedSchedule { speedup, .. } => ("fixed_schedule", Value::from(*speedup)),
    };
    format!(
        "{}{{\"experiment\":{{\"mode\":\"{mode}\",\"value\":{value}}},\"requests\":[",
        if first { "" } else { "," }
    )
}

/// An experiment's end, after its last request.
pub fn experiment_close(window: Option<(u64, u64)>) -> String {
    let bounds = match window {
        Some((a, b)) => format!("{a},{b}"),
        None => String::new(),
    };
    format!("],\"window_boundaries\":[{bounds}]}}")
}

/// The file's end, after its last experiment.
pub fn file_close(version: &str, f: &ExportFormat) -> String {
    footer(version, f.service_kind, &f.endpoint)
}

/// The file's end from its fields: `service_kind` and `endpoint` as the readers pick their
/// parser by (a merged file keeps its shards').
pub fn footer(version: &str, service_kind: &str, endpoint: &str) -> String {
    format!(
        "],\"version\":{},\"schema_version\":{},\"service_kind\":{},\"endpoint\":{}}}",
        json_str(version),
        super::SCHEMA_VERSION,
        json_str(service_kind),
        json_str(endpoint)
    )
}

/// A one-experiment file's opening (GenAI-Perf's per-level file), up to the first request.
pub fn open(stimulus: &Stimulus) -> String {
    format!("{FILE_OPEN}{}", experiment_open(stimulus, true))
}

/// One request object (preceded by a comma unless it is the first), appended to `out`.
/// `inputs` is the request's `request_inputs` object as JSON text ([`request_inputs`]);
/// `unix` turns a run-clock offset into Unix ns.
pub fn request(
    out: &mut Vec<u8>,
    first: bool,
    sent_unix_ns: u64,
    inputs: &str,
    capture: &Capture,
    f: &ExportFormat,
    unix: impl Fn(u64) -> u64,
) {
    if !first {
        out.push(b',');
    }
    out.extend_from_slice(b"{\"timestamp\":");
    push_u64(out, sent_unix_ns);
    out.extend_from_slice(b",\"request_inputs\":");
    out.extend_from_slice(inputs.as_bytes());
    out.extend_from_slice(b",\"response_timestamps\":[");
    // The usage-only event left out ends the stream, before `[DONE]`: only the last two
    // responses are looked at.
    let from = capture.len().saturating_sub(2);
    let skip = capture
        .iter()
        .enumerate()
        .skip(from)
        // A shaped response is a token event, with its choice: only whole ones are looked at.
        .find(|(_, (_, r))| r.shape == 0 && !exported(r.middle, f))
        .map(|(i, _)| i);
    let kept = || {
        capture
            .iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != skip)
            .map(|(_, r)| r)
    };
    // Responses of one read share a timestamp: its digits are written once and copied.
    let mut last: Option<(u64, std::ops::Range<usize>)> = None;
    for (i, (t, _)) in kept().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match &last {
            Some((prev, r)) if *prev == t => out.extend_from_within(r.clone()),
            _ => {
                let from = out.len();
                push_u64(out, unix(t));
                last = Some((t, from..out.len()));
            }
        }
    }
    out.extend_from_slice(b"],\"response_outputs\":[");
    let mut shape = None;
    for (i, (_, r)) in kept().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        response_output(out, &r, &mut shape, f);
    }
    out.extend_from_slice(b"]}");
}

/// Where the previous shaped response's pieces were written in `out`: its shape, its entry's
/// start through the escaped prefix, and the escaped suffix through the entry's end.
type ShapeAt = Option<(usize, std::ops::Range<usize>, std::ops::Range<usize>)>;

/// Whether a captured response goes into the export: all but the usage-only event ttftbench asks
/// OpenAI-compatible servers for (`"choices": []` with `usage`), which comes last. GenAI-Perf
/// does not ask for it, so its files never hold one, and its parser fails on an event without a
/// choice; the counts it carries are in `requests.jsonl` (`server_osl`, `server_isl`).
/// (A server that reports usage with every chunk, vLLM's `continuous_usage_stats`, sends it
/// beside a choice: those chunks stay.)
fn exported(bytes: &[u8], f: &ExportFormat) -> bool {
    // Built once: building a searcher per event cost more than the search.
    static USAGE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"usage\""));
    static NO_CHOICE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"choices\":[]"));
    if f.responses != ResponseForm::SseEvents || USAGE.find(bytes).is_none() {
        return true;
    }
    // The compact form servers write (a quote inside a string is escaped, so this is a key):
    // no parse, which was a tenth of the export's time, once per request.
    if NO_CHOICE.find(bytes).is_some() {
        return false;
    }
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return true;
    };
    !v["choices"].as_array().is_some_and(|c| c.is_empty())
}

/// One response's `response_outputs` entry. Text responses are escaped straight into `out`: one
/// per token, no allocation.
///
/// A shaped response is its shape's prefix, its text and its suffix. Escaping maps byte by byte
/// and the pieces meet at quotes, so the escaped event is the three escaped one after another:
/// the shape's escaped pieces are written once per request (their places kept in `at`) and
/// copied for each later event of it (a chat event is ~170 bytes, its text a few, and quotes come
/// every few bytes, which made escaping every event whole a third of the export's time).
fn response_output(out: &mut Vec<u8>, r: &Response<'_>, at: &mut ShapeAt, f: &ExportFormat) {
    if let Some((_, head, tail)) = at.as_ref().filter(|a| r.shape != 0 && a.0 == r.shape) {
        out.extend_from_within(head.clone());
        super::escape::push_escaped(out, r.middle);
        out.extend_from_within(tail.clone());
        return;
    }
    let (open, close) = match f.responses {
        ResponseForm::SseEvents => ("data: ", "\\n\\n"),
        ResponseForm::Body => ("", ""),
        _ => return tensor_output(out, &r.whole(), f),
    };
    let start = out.len();
    out.extend_from_slice(b"{\"response\":\"");
    out.extend_from_slice(open.as_bytes());
    super::escape::push_escaped(out, r.prefix);
    let head = start..out.len();
    super::escape::push_escaped(out, r.middle);
    let from = out.len();
    super::escape::push_escaped(out, r.suffix);
    out.extend_from_slice(close.as_bytes());
    out.extend_from_slice(b"\"}");
    if r.shape != 0 {
        *at = Some((r.shape, head, from..out.len()));
    }
}

fn tensor_output(out: &mut Vec<u8>, bytes: &[u8], f: &ExportFormat) {
    let obj = match f.responses {
        ResponseForm::SseEvents | ResponseForm::Body => return,
        ResponseForm::KserveStream => {
            let msg = crate::proto::ModelStreamInferResponse::decode(bytes).ok();
            grpc_outputs(msg.and_then(|m| m.infer_response).as_ref(), &f.outputs)
        }
        ResponseForm::KserveUnary => {
            let msg = crate::proto::ModelInferResponse::decode(bytes).ok();
            grpc_outputs(msg.as_ref(), &f.outputs)
        }
        ResponseForm::KserveHttp => http_tensors(bytes, "outputs", &f.outputs),
    };
    // Serializing a map of strings and numbers cannot fail.
    let _ = serde_json::to_writer(&mut *out, &obj);
}

fn single(key: &str, v: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_string(), v);
    m
}

/// Each output tensor of a KServe gRPC response, then every `listed` name it lacked as `""`.
fn grpc_outputs(
    resp: Option<&crate::proto::ModelInferResponse>,
    listed: &[String],
) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(r) = resp {
        for (i, t) in r.outputs.iter().enumerate() {
            let v = grpc_tensor(&t.datatype, r.raw_output_contents.get(i), &t.contents);
            m.insert(t.name.clone(), v);
        }
    }
    with_listed(m, listed)
}

/// `m` with every `listed` name it lacks as `""`.
fn with_listed(mut m: Map<String, Value>, listed: &[String]) -> Map<String, Value> {
    for name in listed {
        if !m.contains_key(name) {
            m.insert(name.clone(), Value::String(String::new()));
        }
    }
    m
}

/// A KServe gRPC tensor's value: its raw buffer when the message has one, else its typed
/// contents, else `""`.
fn grpc_tensor(
    datatype: &str,
    raw: Option<&Vec<u8>>,
    contents: &Option<crate::proto::InferTensorContents>,
) -> Value {
    let dt = DataType::from_name(datatype);
    match (raw, contents) {
        (Some(raw), _) => raw_tensor(dt, raw),
        (None, Some(c)) => typed_tensor(dt, c),
        (None, None) => Value::String(String::new()),
    }
}

/// Values as perf_analyzer renders them: `""` for none, the value for one, else an array.
fn one_or_many(v: Vec<Value>) -> Value {
    match v.len() {
        0 => Value::String(String::new()),
        1 => v.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(v),
    }
}

/// A tensor's raw little-endian buffer as perf_analyzer renders it.
pub fn raw_tensor(dt: Option<DataType>, raw: &[u8]) -> Value {
    if raw.is_empty() {
        return Value::String(String::new());
    }
    let Some(dt) = dt else {
        return Value::Null;
    };
    if dt == DataType::Bytes {
        let rest = raw.get(4..).unwrap_or_default();
        return Value::String(String::from_utf8_lossy(rest).into_owned());
    }
    let size = dt.size().unwrap_or(1);
    let values: Vec<Value> = raw
        .chunks_exact(size)
        .map(|c| element_value(dt, c))
        .collect();
    match values.len() {
        1 => values.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(values),
    }
}

/// A tensor sent in typed `contents` fields.
fn typed_tensor(dt: Option<DataType>, c: &crate::proto::InferTensorContents) -> Value {
    match dt {
        Some(DataType::Bytes) => c
            .bytes_contents
            .first()
            .map_or(Value::String(String::new()), |b| {
                Value::String(String::from_utf8_lossy(b).into_owned())
            }),
        Some(DataType::Bool) => {
            one_or_many(c.bool_contents.iter().map(|&b| Value::Bool(b)).collect())
        }
        _ => {
            let mut v: Vec<Value> = Vec::new();
            v.extend(c.int_contents.iter().map(|&x| Value::from(x)));
            v.extend(c.int64_contents.iter().map(|&x| Value::from(x)));
            v.extend(c.uint_contents.iter().map(|&x| Value::from(x)));
            v.extend(c.uint64_contents.iter().map(|&x| Value::from(x)));
            v.extend(c.fp32_contents.iter().map(|&x| Value::from(f64::from(x))));
            v.extend(c.fp64_contents.iter().map(|&x| Value::from(x)));
            one_or_many(v)
        }
    }
}

/// The tensors (`inputs` or `outputs`) of a KServe v2 HTTP body: a JSON header, followed by the
/// binary blobs of tensors whose `parameters.binary_data_size` is set, in tensor order.
fn http_tensors(body: &[u8], key: &str, listed: &[String]) -> Map<String, Value> {
    let mut stream = serde_json::Deserializer::from_slice(body).into_iter::<Value>();
    let header = stream.next().and_then(Result::ok).unwrap_or(Value::Null);
    let mut binary = body.get(stream.byte_offset()..).unwrap_or_default();
    let mut m = Map::new();
    if let Some(tensors) = header.get(key).and_then(Value::as_array) {
        for t in tensors {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            let dt = t["datatype"].as_str().and_then(DataType::from_name);
            let size = t["parameters"]["binary_data_size"].as_u64();
            let v = match size {
                Some(n) => {
                    let n = (n as usize).min(binary.len());
                    let (raw, rest) = binary.split_at(n);
                    binary = rest;
                    raw_tensor(dt, raw)
                }
                None => json_data(dt, t.get("data")),
            };
            m.insert(name.to_string(), v);
        }
    }
    with_listed(m, listed)
}

/// A tensor's JSON `data` (nested or flat) rendered like a raw buffer: one string for BYTES,
/// a scalar for one element, an array otherwise.
fn json_data(dt: Option<DataType>, data: Option<&Value>) -> Value {
    let mut flat = Vec::new();
    fn walk(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            other => out.push(other.clone()),
        }
    }
    if let Some(d) = data {
        walk(d, &mut flat);
    }
    if dt == Some(DataType::Bytes) {
        return flat
            .into_iter()
            .next()
            .unwrap_or(Value::String(String::new()));
    }
    one_or_many(flat)
}

/// An HTTP JSON body with the prompt in GenAI-Perf's list form (`prompt`/`text_input` strings
/// become one-element lists); `None` when the body is not a JSON object.
pub fn genai_perf_body(body: &[u8]) -> Option<Map<String, Value>> {
    let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    for key in ["prompt", "text_input"] {
        if let Some(v) = m.get_mut(key)
            && v.is_string()
        {
            *v = Value::Array(vec![v.take()]);
        }
    }
    Some(m)
}

/// A request's `request_inputs` object as JSON text.
pub fn request_inputs(payload: &Payload) -> String {
    let obj = match payload {
        Payload::Http(body) => {
            let text = match genai_perf_body(body) {
                Some(m) => Value::Object(m).to_string(),
                None => String::from_utf8_lossy(body).into_owned(),
            };
            single("payload", Value::String(text))
        }
        Payload::Grpc(bytes) => grpc_inputs(bytes),
        Payload::HttpInfer { body, .. } => http_tensors(body, "inputs", &[]),
    };
    Value::Object(obj).to_string()
}

fn grpc_inputs(bytes: &[u8]) -> Map<String, Value> {
    let mut m = Map::new();
    if let Ok(req) = crate::proto::ModelInferRequest::decode(bytes) {
        for (i, t) in req.inputs.iter().enumerate() {
            let v = grpc_tensor(&t.datatype, req.raw_input_contents.get(i), &t.contents);
            m.insert(t.name.clone(), v);
        }
    }
    m
}

/// One `inputs.json` entry: `{"payload":[{body}]}` for HTTP JSON APIs, tensor name → list of
/// values for KServe.
pub fn inputs_entry(payload: &Payload) -> String {
    let obj = match payload {
        Payload::Http(body) => {
            let b = genai_perf_body(body).map_or(Value::Null, Value::Object);
            single("payload", Value::Array(vec![b]))
        }
        Payload::Grpc(bytes) => listed(grpc_inputs(bytes)),
        Payload::HttpInfer { body, .. } => listed(http_tensors(body, "inputs", &[])),
    };
    Value::Object(obj).to_string()
}

fn listed(m: Map<String, Value>) -> Map<String, Value> {
    m.into_iter()
        .map(|(k, v)| match v {
            Value::Array(_) => (k, v),
            other => (k, Value::Array(vec![other])),
        })
        .collect()
}

fn json_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Writes `inputs.json` for a dataset (entry by entry, never the whole text at once).
pub fn write_inputs(path: &Path, dataset: &Dataset) -> io::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    w.write_all(b"{\"data\":[")?;
    for i in 0..dataset.len() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(inputs_entry(&dataset.entry(i).payload).as_bytes())?;
    }
    write!(w, "],\"schema_version\":{}}}", super::SCHEMA_VERSION)?;
    w.flush()
}

/// The `request_inputs` text of every dataset entry, rendered once per run, by the entry's
/// index in the whole dataset (a record's `prompt_index`): a shard's part of a partitioned
/// dataset leaves the other shards' places empty (an empty `Box<str>` does not allocate).
pub fn all_request_inputs(dataset: &Dataset) -> Arc<[Box<str>]> {
    let len = (0..dataset.len())
        .map(|i| dataset.prompt_index(i) as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out: Vec<Box<str>> = vec![Box::from(""); len];
    for i in 0..dataset.len() {
        out[dataset.prompt_index(i) as usize] =
            request_inputs(&dataset.entry(i).payload).into_boxed_str();
    }
    out.into()
}

/// A run's raw export: its format, every dataset entry's `request_inputs` rendered once, and the
/// pool response captures come from and go back to.
#[derive(Debug, Clone)]
pub struct RawExport {
    format: ExportFormat,
    inputs: Arc<[Box<str>]>,
    pool: CapturePool,
}

impl RawExport {
    /// For a run of `dataset` to `target` whose client captures `responses` (the client says
    /// which: `Client::response_form`); captures recycle through `pool`.
    pub fn new(
        target: &Target,
        responses: ResponseForm,
        dataset: &Dataset,
        pool: CapturePool,
    ) -> RawExport {
        RawExport {
            format: format_for(target, responses),
            inputs: all_request_inputs(dataset),
            pool,
        }
    }

    /// Writes `inputs.json` into a level directory and opens its raw export, `name`
    /// (`profile_export.json` unless `--profile-export-file` says otherwise).
    pub fn level(
        &self,
        dir: &Path,
        name: &str,
        stimulus: &Stimulus,
        clock: Clock,
        dataset: &Dataset,
    ) -> io::Result<RawExportWriter> {
        write_inputs(&dir.join(INPUTS_FILE), dataset)?;
        let mut w = self.writer(&dir.join(name), clock)?;
        w.begin_level(stimulus)?;
        Ok(w)
    }

    /// Opens a `profile_export.json` at `path` (no experiment open yet).
    pub fn writer(&self, path: &Path, clock: Clock) -> io::Result<RawExportWriter> {
        RawExportWriter::create(
            path,
            self.format.clone(),
            self.inputs.clone(),
            clock,
            self.pool.clone(),
        )
    }

    /// Lists these outputs in every KServe response (`""` when a response lacks one), as
    /// perf_analyzer lists every output it requested.
    pub fn with_outputs(mut self, outputs: Vec<String>) -> RawExport {
        self.format.outputs = outputs;
        self
    }
}

/// The `endpoint` a rankings export names: GenAI-Perf picks its parser from this field and
/// knows reranker traffic only as `rerank` (TEI) or `v1/ranking` (NIM); a Cohere/Jina-style
/// `v1/rerank` (vLLM, llama-server) would make it give up ("Unknown OpenAI response format"),
/// so that layout is written as `rerank`, the layout GenAI-Perf treats alike (latency and
/// throughput from the timestamps). A custom `--endpoint` is written as given.
fn genai_perf_rankings_endpoint(target: &Target) -> String {
    match target.endpoint.as_str() {
        "v1/rerank" => "rerank".to_string(),
        other => other.to_string(),
    }
}

/// What a run's traffic looks like to the export's readers.
pub fn format_for(target: &Target, responses: ResponseForm) -> ExportFormat {
    let (service_kind, endpoint) = match target.api {
        Api::Kserve | Api::Infer => ("triton", String::new()),
        Api::Rankings => ("openai", genai_perf_rankings_endpoint(target)),
        _ => ("openai", target.endpoint.clone()),
    };
    let outputs = match target.api {
        Api::Kserve => vec!["text_output".to_string()],
        _ => Vec::new(),
    };
    ExportFormat {
        service_kind,
        endpoint,
        responses,
        outputs,
    }
}

/// Streams a `profile_export.json`: experiments (levels) opened and closed in turn, fed by the
/// collector one record at a time (into the spill; written out when the level ends), the footer
/// written at the end. Captures go back to their pool once spilled. Requests are encoded one
/// after another straight into the file's buffer, which is written past the page cache
/// ([`super::bulk_file`]).
pub struct RawExportWriter {
    out: BulkFile,
    spill: Option<super::raw_spill::Spill>,
    format: ExportFormat,
    inputs: Arc<[Box<str>]>,
    clock: Clock,
    pool: CapturePool,
    experiments: u32,
    written: u64,
    window: Option<(u64, u64)>,
}

impl RawExportWriter {
    /// Creates the file and writes its opening; no experiment is open yet.
    pub fn create(
        path: &Path,
        format: ExportFormat,
        inputs: Arc<[Box<str>]>,
        clock: Clock,
        pool: CapturePool,
    ) -> io::Result<RawExportWriter> {
        let mut out = BulkFile::create(path)?;
        out.append(FILE_OPEN.as_bytes())?;
        Ok(RawExportWriter {
            out,
            spill: Some(super::raw_spill::Spill::create(path)?),
            format,
            inputs,
            clock,
            pool,
            experiments: 0,
            written: 0,
            window: None,
        })
    }

    /// Opens the experiment of one level.
    pub fn begin_level(&mut self, stimulus: &Stimulus) -> io::Result<()> {
        let first = self.experiments == 0;
        self.experiments += 1;
        self.written = 0;
        self.window = None;
        self.out.append(experiment_open(stimulus, first).as_bytes())
    }

    /// Writes the open experiment's requests out of the spill, then closes it.
    pub fn end_level(&mut self) -> io::Result<()> {
        let clock = self.clock;
        if let Some(mut spill) = self.spill.take() {
            let result = spill.drain(|r| self.write(r));
            self.spill = Some(spill);
            result?;
        }
        let window = self
            .window
            .map(|(a, b)| (clock.unix_ns(a), clock.unix_ns(b)));
        self.out.append(experiment_close(window).as_bytes())
    }

    /// Keeps a completed measured request for the level's export; recycles its capture either
    /// way.
    pub fn record(&mut self, rec: &RequestRecord, capture: Option<Capture>) -> io::Result<()> {
        let result = match &capture {
            Some(c) if rec.phase == Phase::Measure => self.keep(rec, c),
            _ => Ok(()),
        };
        if let Some(mut c) = capture {
            c.clear();
            let _ = self.pool.push(c);
        }
        result
    }

    fn keep(&mut self, rec: &RequestRecord, c: &Capture) -> io::Result<()> {
        let (a, b) = self.window.unwrap_or((rec.sent_ns, rec.end_ns));
        self.window = Some((a.min(rec.sent_ns), b.max(rec.end_ns)));
        if !rec.ok() || c.is_empty() {
            return Ok(());
        }
        match self.spill.as_mut() {
            Some(s) => s.push(u64::from(rec.prompt_index), rec.sent_ns, c),
            None => Ok(()),
        }
    }

    /// Writes one request read back from the spill.
    fn write(&mut self, r: &super::raw_spill::Spilled) -> io::Result<()> {
        let inputs = usize::try_from(r.prompt_index)
            .ok()
            .and_then(|i| self.inputs.get(i))
            .map_or("{}", |s| s);
        let clock = self.clock;
        request(
            self.out.buffer(),
            self.written == 0,
            clock.unix_ns(r.sent_ns),
            inputs,
            &r.capture,
            &self.format,
            |t| clock.unix_ns(t),
        );
        self.written += 1;
        self.out.write_if_full()
    }

    /// Writes the footer and flushes; removes the spill.
    pub fn finish(mut self) -> io::Result<()> {
        let version = format!("ttftbench {}", crate::VERSION);
        self.out
            .append(file_close(&version, &self.format).as_bytes())?;
        self.out.finish()?;
        match self.spill.take() {
            Some(s) => s.remove(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-experiment file's end.
    fn close(window: Option<(u64, u64)>, version: &str, f: &ExportFormat) -> String {
        format!("{}{}", experiment_close(window), file_close(version, f))
    }

    /// Found merging shards' exports: a shard's records name prompts by their index in the whole
    /// dataset, and its export gave them another prompt's inputs, or `{}`.
    #[test]
    fn a_shards_request_inputs_are_found_by_whole_dataset_index() {
        let entry = |t: &str| crate::workload::Entry {
            sent: Default::default(),
            payload: Payload::Http(bytes::Bytes::from(format!("{{\"prompt\":\"{t}\"}}"))),
            isl: 1,
            max_tokens: 1,
        };
        let whole = Dataset::new(["a", "b", "c", "d", "e"].map(entry).to_vec());
        let shard = whole.partition(1, 2).unwrap();
        let ins = all_request_inputs(&shard);
        assert_eq!(ins.len(), 4, "up to whole index 3");
        assert_eq!(&*ins[1], request_inputs(&entry("b").payload));
        assert_eq!(&*ins[3], request_inputs(&entry("d").payload));
        assert_eq!((&*ins[0], &*ins[2]), ("", ""));
    }

    /// `c` as the first request of a file in format `f`, sent at 1 with no inputs, its times
    /// as they are.
    fn one_request(c: &Capture, f: &ExportFormat) -> String {
        let mut out = Vec::new();
        request(&mut out, true, 1, "{}", c, f, |t| t);
        String::from_utf8(out).unwrap()
    }

    fn chat() -> ExportFormat {
        ExportFormat {
            service_kind: "openai",
            endpoint: "v1/chat/completions".into(),
            responses: ResponseForm::SseEvents,
            outputs: vec![],
        }
    }

    #[test]
    fn whole_file_for_one_chat_request() {
        let mut c = Capture::default();
        c.push(
            10,
            br#"{"choices":[{"delta":{"role":"assistant"}}],"object":"chat.completion.chunk"}"#,
        );
        c.push(
            25,
            br#"{"choices":[{"delta":{"content":"Hi"}}],"object":"chat.completion.chunk"}"#,
        );
        c.push(25, b"[DONE]");
        let inputs = request_inputs(&Payload::Http(bytes::Bytes::from_static(
            br#"{"model":"gpt2","messages":[{"role":"user","content":"Say \"hi\""}],"stream":true}"#,
        )));
        let mut out = open(&Stimulus::Concurrency(2)).into_bytes();
        request(&mut out, true, 1_000_005, &inputs, &c, &chat(), |t| {
            1_000_000 + t
        });
        out.extend_from_slice(
            close(Some((1_000_000, 1_000_030)), "ttftbench 9", &chat()).as_bytes(),
        );
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"experiments":[{"experiment":{"mode":"concurrency","value":2},"requests":["#,
                r#"{"timestamp":1000005,"request_inputs":{"payload":"{\"model\":\"gpt2\",\"messages\":[{\"role\":\"user\",\"content\":\"Say \\\"hi\\\"\"}],\"stream\":true}"},"#,
                r#""response_timestamps":[1000010,1000025,1000025],"#,
                r#""response_outputs":[{"response":"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}],\"object\":\"chat.completion.chunk\"}\n\n"},"#,
                r#"{"response":"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"object\":\"chat.completion.chunk\"}\n\n"},"#,
                r#"{"response":"data: [DONE]\n\n"}]}"#,
                r#"],"window_boundaries":[1000000,1000030]}],"version":"ttftbench 9","schema_version":2,"service_kind":"openai","endpoint":"v1/chat/completions"}"#
            )
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["experiments"][0]["requests"][0]["response_outputs"][2]["response"],
            "data: [DONE]\n\n"
        );
    }

    /// A capture of shaped token events (two shapes, alternating, texts with non-ASCII, shapes
    /// holding quotes and an escaped slash) renders byte for byte as the same events kept whole.
    #[test]
    fn shaped_events_render_as_the_same_events_whole() {
        let shapes = [
            (
                r#"{"id":"a\/b","choices":[{"delta":{"content":""#,
                r#""}}]}"#,
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":""#,
                r#""},"x":null}]}"#,
            ),
        ];
        let events = [
            (0, "Hi"),
            (0, " thé"),
            (1, "so"),
            (1, ""),
            (0, "!"),
            (0, " ok"),
        ];
        let (mut shaped, mut whole) = (Capture::default(), Capture::default());
        for c in [&mut shaped, &mut whole] {
            c.push(1, br#"{"choices":[{"delta":{"role":"assistant"}}]}"#);
        }
        for (i, (k, text)) in events.iter().enumerate() {
            let (p, s) = shapes[*k];
            let t = 2 + i as u64 / 2;
            shaped.push_shaped(
                t,
                10 + *k as u64,
                p.as_bytes(),
                text.as_bytes(),
                s.as_bytes(),
            );
            whole.push(t, format!("{p}{text}{s}").as_bytes());
        }
        for c in [&mut shaped, &mut whole] {
            c.push(9, b"[DONE]");
        }
        let text = one_request(&shaped, &chat());
        assert_eq!(text, one_request(&whole, &chat()));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["response_outputs"][2]["response"],
            "data: {\"id\":\"a\\/b\",\"choices\":[{\"delta\":{\"content\":\" thé\"}}]}\n\n"
        );
    }

    /// Compact (found without parsing) or spaced (parsed), the usage-only event is left out; a
    /// text that quotes one is not.
    #[test]
    fn usage_only_event_is_left_out_with_its_timestamp() {
        for usage in [
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            r#"{"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}"#,
        ] {
            let mut c = Capture::default();
            c.push(
                5,
                br#"{"choices":[{"delta":{"content":"Hi"}}],"usage":null}"#,
            );
            c.push(6, usage.as_bytes());
            c.push(7, b"[DONE]");
            let v: Value = serde_json::from_str(&one_request(&c, &chat())).unwrap();
            assert_eq!(v["response_timestamps"], serde_json::json!([5, 7]));
            let outputs = v["response_outputs"].as_array().unwrap();
            assert_eq!(outputs.len(), 2);
            assert!(outputs[0]["response"].as_str().unwrap().contains("Hi"));
        }
        let quoted = br#"{"choices":[{"delta":{"content":"\"choices\":[]"}}],"usage":{"a":1}}"#;
        assert!(exported(quoted, &chat()));
    }

    /// Responses of one read share a timestamp; each is written out in full.
    #[test]
    fn shared_timestamps_are_each_written() {
        let mut c = Capture::default();
        for (t, d) in [(5, "a"), (5, "b"), (5, "c"), (9, "d"), (12, "e"), (12, "f")] {
            c.push(t, d.as_bytes());
        }
        let mut out = Vec::new();
        request(&mut out, true, 1, "{}", &c, &chat(), |t| t * 1000);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["response_timestamps"],
            serde_json::json!([5000, 5000, 5000, 9000, 12000, 12000])
        );
    }

    #[test]
    fn second_request_is_comma_separated_and_rate_is_a_float() {
        let mut c = Capture::default();
        c.push(1, b"{}");
        let f = ExportFormat {
            responses: ResponseForm::Body,
            ..chat()
        };
        let mut out = Vec::new();
        request(&mut out, false, 7, "{\"payload\":\"{}\"}", &c, &f, |t| t);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#",{"timestamp":7,"request_inputs":{"payload":"{}"},"response_timestamps":[1],"response_outputs":[{"response":"{}"}]}"#
        );
        let rate = Stimulus::RequestRate {
            rate: 5.0,
            arrival: crate::load::pacer::Arrival::Constant,
            max_inflight: 8,
        };
        assert_eq!(
            open(&rate),
            r#"{"experiments":[{"experiment":{"mode":"request_rate","value":5.0},"requests":["#
        );
        assert_eq!(
            close(None, "v", &f),
            r#"],"window_boundaries":[]}],"version":"v","schema_version":2,"service_kind":"openai","endpoint":"v1/chat/completions"}"#
        );
    }

    #[test]
    fn prompts_take_genai_perf_list_form() {
        let inputs =
            |b: &'static [u8]| request_inputs(&Payload::Http(bytes::Bytes::from_static(b)));
        assert_eq!(
            inputs(br#"{"model":"m","prompt":"a b","max_tokens":3}"#),
            r#"{"payload":"{\"model\":\"m\",\"prompt\":[\"a b\"],\"max_tokens\":3}"}"#
        );
        assert_eq!(
            inputs(br#"{"text_input":"x","stream":true}"#),
            r#"{"payload":"{\"text_input\":[\"x\"],\"stream\":true}"}"#
        );
        let entry = inputs_entry(&Payload::Http(bytes::Bytes::from_static(
            br#"{"text_input":"x","stream":true}"#,
        )));
        assert_eq!(entry, r#"{"payload":[{"text_input":["x"],"stream":true}]}"#);
    }

    fn kserve_request() -> Vec<u8> {
        use crate::proto::model_infer_request::InferInputTensor;
        crate::proto::ModelInferRequest {
            model_name: "m".into(),
            inputs: [
                ("text_input", "BYTES"),
                ("max_tokens", "INT32"),
                ("stream", "BOOL"),
            ]
            .map(|(name, datatype)| InferInputTensor {
                name: name.into(),
                datatype: datatype.into(),
                shape: vec![1, 1],
                ..Default::default()
            })
            .to_vec(),
            raw_input_contents: vec![
                crate::workload::tensor::encode_bytes_elements([&b"Hello"[..]]),
                7i32.to_le_bytes().to_vec(),
                vec![1],
            ],
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn kserve_inputs_render_like_perf_analyzer() {
        let p = Payload::Grpc(bytes::Bytes::from(kserve_request()));
        assert_eq!(
            request_inputs(&p),
            r#"{"text_input":"Hello","max_tokens":7,"stream":true}"#
        );
        assert_eq!(
            inputs_entry(&p),
            r#"{"text_input":["Hello"],"max_tokens":[7],"stream":[true]}"#
        );
    }

    #[test]
    fn kserve_stream_responses_and_the_empty_final_one() {
        use crate::proto::model_infer_response::InferOutputTensor;
        let token = crate::proto::ModelStreamInferResponse {
            error_message: String::new(),
            infer_response: Some(crate::proto::ModelInferResponse {
                outputs: vec![InferOutputTensor {
                    name: "text_output".into(),
                    datatype: "BYTES".into(),
                    shape: vec![1],
                    ..Default::default()
                }],
                raw_output_contents: vec![crate::workload::tensor::encode_bytes_elements([
                    &b" tok"[..],
                ])],
                ..Default::default()
            }),
        }
        .encode_to_vec();
        let empty_final = crate::proto::ModelStreamInferResponse {
            error_message: String::new(),
            infer_response: Some(crate::proto::ModelInferResponse::default()),
        }
        .encode_to_vec();
        let mut c = Capture::default();
        c.push(3, &token);
        c.push(4, &empty_final);
        let f = ExportFormat {
            service_kind: "triton",
            endpoint: String::new(),
            responses: ResponseForm::KserveStream,
            outputs: vec!["text_output".into()],
        };
        assert_eq!(
            one_request(&c, &f),
            r#"{"timestamp":1,"request_inputs":{},"response_timestamps":[3,4],"response_outputs":[{"text_output":" tok"},{"text_output":""}]}"#
        );
    }

    #[test]
    fn tensors_as_perf_analyzer_renders_them() {
        let f32s: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(
            raw_tensor(Some(DataType::F32), &f32s),
            serde_json::json!([1.5, -2.0])
        );
        assert_eq!(
            raw_tensor(Some(DataType::I64), &(-3i64).to_le_bytes()),
            serde_json::json!(-3)
        );
        assert_eq!(raw_tensor(Some(DataType::U8), &[]), serde_json::json!(""));
        assert_eq!(
            raw_tensor(Some(DataType::F16), &0x3c00u16.to_le_bytes()),
            serde_json::json!(1.0)
        );
        // KServe HTTP: a JSON header with one JSON tensor and one binary one.
        let mut body = br#"{"model_name":"m","outputs":[{"name":"A","datatype":"INT32","shape":[2],"data":[[1],[2]]},{"name":"B","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}"#.to_vec();
        body.extend_from_slice(&0.5f32.to_le_bytes());
        let f = ExportFormat {
            service_kind: "triton",
            endpoint: String::new(),
            responses: ResponseForm::KserveHttp,
            outputs: vec!["A".into(), "B".into(), "C".into()],
        };
        let mut c = Capture::default();
        c.push(9, &body);
        let v: Value = serde_json::from_str(&one_request(&c, &f)).unwrap();
        assert_eq!(
            v["response_outputs"][0],
            serde_json::json!({"A": [1, 2], "B": 0.5, "C": ""})
        );
    }
}
