//! Tensor models on the wire: checking an inference request against the model the way Triton
//! does, with Triton's error messages plus what was expected and what was given, and answering
//! with deterministic outputs.
//!
//! Both protocols reduce a request to [`InputView`]s that borrow the request's bytes (gRPC
//! `raw_input_contents` or typed `contents`; HTTP JSON `data` or binary-extension blobs), so
//! validation copies no tensor data. Checks, in order: known input name, no duplicates,
//! datatype, rank, batch dimension (1 ≤ b ≤ `max_batch_size`, the same in every input), fixed
//! dimensions, then the data: raw byte size = elements × element size, BYTES framed as 4-byte
//! little-endian lengths, typed/JSON element counts; finally every required input present.
//!
//! Outputs are all zeros (BYTES: empty strings) of the declared shape with the request's batch
//! dimension; variable output dimensions are 1. They are sliced from one zero buffer per model
//! (and, for JSON answers, one precomputed `0,0,...` text per output), so answering costs a copy
//! at most, never per-element work.

use std::io::Write as _;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use super::models::{DataType, ModelSpec};
use crate::proto;

/// Where one input's data sits in the request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum InputData<'a> {
    /// A gRPC `raw_input_contents` entry or an HTTP binary-extension blob.
    Raw(&'a [u8]),
    /// gRPC typed `contents`, when set.
    Contents(Option<&'a proto::InferTensorContents>),
    /// HTTP JSON `data`, when set.
    Json(Option<&'a Value>),
}

/// One input of a request, as sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputView<'a> {
    /// Input name.
    pub(crate) name: &'a str,
    /// Datatype string as sent.
    pub(crate) datatype: &'a str,
    /// Shape as sent (batch dimension included for batching models).
    pub(crate) shape: &'a [i64],
    /// The data.
    pub(crate) data: InputData<'a>,
}

/// Why a tensor model refuses a request's inputs or outputs (HTTP 400, gRPC `INVALID_ARGUMENT`):
/// Triton's message where Triton has one, plus what was expected and what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TensorError {
    /// An input the model does not have.
    #[error("unexpected inference input '{input}' for model '{model}' (its inputs are {known:?})")]
    UnknownInput {
        /// The input as named.
        input: String,
        /// The model.
        model: String,
        /// The model's inputs.
        known: Vec<String>,
    },
    /// The same input twice.
    #[error("input '{input}' appears more than once in the request for model '{model}'")]
    DuplicateInput {
        /// The input.
        input: String,
        /// The model.
        model: String,
    },
    /// An input sent with another datatype than the model's.
    #[error("inference input '{input}' data-type is '{got}', but model '{model}' expects '{want}'")]
    Datatype {
        /// The input.
        input: String,
        /// The datatype sent.
        got: String,
        /// The model.
        model: String,
        /// The model's datatype.
        want: &'static str,
    },
    /// An input of another rank or fixed dimension than the model's.
    #[error(
        "unexpected shape for input '{input}' for model '{model}'. Expected {}, got {}{}",
        dims(.expected),
        dims(.got),
        batch_note(*.max_batch_size, .got)
    )]
    Shape {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The shape the model declares (batch dimension included).
        expected: Vec<i64>,
        /// The shape sent.
        got: Vec<i64>,
        /// Set when the shape lacks just the batch dimension: the model's `max_batch_size`.
        max_batch_size: Option<u32>,
    },
    /// A batch dimension below 1.
    #[error(
        "inference request batch-size must be >= 1 for '{model}' (got {batch} in input '{input}')"
    )]
    BatchTooSmall {
        /// The model.
        model: String,
        /// The batch sent.
        batch: i64,
        /// The input.
        input: String,
    },
    /// A batch dimension above the model's `max_batch_size`.
    #[error(
        "inference request batch-size must be <= {max} for '{model}' (got {batch} in input '{input}')"
    )]
    BatchTooLarge {
        /// The model's `max_batch_size`.
        max: u32,
        /// The model.
        model: String,
        /// The batch sent.
        batch: i64,
        /// The input.
        input: String,
    },
    /// Inputs with different batch dimensions.
    #[error(
        "input '{input}' batch size does not match other inputs for '{model}': '{first}' has batch size {first_batch}, '{input}' has {batch}"
    )]
    BatchMismatch {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The first input.
        first: String,
        /// Its batch.
        first_batch: i64,
        /// This input's batch.
        batch: i64,
    },
    /// A shape whose element count overflows.
    #[error("input '{input}' for model '{model}': shape {} holds too many elements", dims(.shape))]
    TooManyElements {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The shape sent.
        shape: Vec<i64>,
    },
    /// Required inputs missing.
    #[error(
        "expected {required} inputs but got {} inputs for model '{model}'. Got input(s) {got:?}, but missing required input(s) {missing:?}. Please provide all required input(s).",
        .got.len()
    )]
    MissingInputs {
        /// Required inputs of the model.
        required: usize,
        /// The model.
        model: String,
        /// The inputs sent, in request order.
        got: Vec<String>,
        /// The required inputs not sent.
        missing: Vec<String>,
    },
    /// Raw data of another size than the shape needs.
    #[error(
        "input byte size mismatch for input '{input}' for model '{model}'. Expected {expected}, got {got} (shape {} is {count} elements of {size} bytes for {datatype})",
        dims(.shape)
    )]
    ByteSize {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// Bytes the shape needs.
        expected: u64,
        /// Bytes sent.
        got: usize,
        /// The shape.
        shape: Vec<i64>,
        /// Its elements.
        count: u64,
        /// Bytes per element.
        size: usize,
        /// The datatype.
        datatype: &'static str,
    },
    /// Fewer length-prefixed strings in raw BYTES data than the shape needs.
    #[error(
        "expected {count} string elements for inference input '{input}' for model '{model}', got {found} ({})",
        BYTES_FRAMING
    )]
    TooFewStrings {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// Strings the shape needs.
        count: u64,
        /// Strings found.
        found: u64,
    },
    /// A BYTES length prefix cut short.
    #[error(
        "incomplete string length indicator for inference input '{input}' for model '{model}', expecting 4 bytes but only {left} bytes available (element {element}; {})",
        BYTES_FRAMING
    )]
    ShortLength {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// Bytes left.
        left: usize,
        /// The element.
        element: u64,
    },
    /// A BYTES element longer than the bytes left.
    #[error(
        "string element {element} of inference input '{input}' for model '{model}' claims {claims} bytes but only {left} bytes remain ({})",
        BYTES_FRAMING
    )]
    StringOverrun {
        /// The element.
        element: u64,
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// Its length prefix.
        claims: usize,
        /// Bytes left.
        left: usize,
    },
    /// Bytes after the last BYTES element.
    #[error(
        "inference input '{input}' for model '{model}' has {left} bytes left after its {count} string elements ({})",
        BYTES_FRAMING
    )]
    BytesLeftOver {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// Bytes left.
        left: usize,
        /// Strings read.
        count: u64,
    },
    /// No data at all.
    #[error("inference input '{input}' for model '{model}' has no data: {}", no_data_fix(.contents_field))]
    NoData {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// gRPC: the typed-contents field it could have used; HTTP JSON: `None`.
        contents_field: Option<&'static str>,
    },
    /// A datatype with no typed-contents field sent in typed contents.
    #[error(
        "inference input '{input}' for model '{model}': {datatype} data must be sent in raw_input_contents"
    )]
    RawOnly {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The datatype.
        datatype: &'static str,
    },
    /// Typed contents or JSON data with another element count than the shape.
    #[error(
        "unexpected number of elements for inference input '{input}' for model '{model}': shape {} needs {count}, {field} has {got}",
        dims(.shape)
    )]
    ElementCount {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The shape.
        shape: Vec<i64>,
        /// Elements it needs.
        count: u64,
        /// Where the elements were: `contents.fp32_contents`, `'data'`.
        field: String,
        /// Elements there.
        got: u64,
    },
    /// FP16/BF16 in JSON.
    #[error(
        "inference input '{input}' for model '{model}': {datatype} data must be sent as binary data (parameters.binary_data_size), not JSON"
    )]
    BinaryOnly {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The datatype.
        datatype: &'static str,
    },
    /// A JSON element that does not fit the datatype.
    #[error(
        "inference input '{input}' for model '{model}': {shown} is not a valid {datatype} element"
    )]
    BadElement {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The element (a long string by its length).
        shown: String,
        /// The datatype.
        datatype: &'static str,
    },
    /// Raw contents that do not match the inputs one to one.
    #[error(
        "expected {inputs} raw_input_contents (one per input, in input order) for model '{model}', got {raw}"
    )]
    RawCount {
        /// Inputs in the request.
        inputs: usize,
        /// The model.
        model: String,
        /// `raw_input_contents` entries.
        raw: usize,
    },
    /// Typed contents beside raw contents.
    #[error(
        "contents field must not be specified when using raw_input_contents for '{input}' for model '{model}'"
    )]
    ContentsWithRaw {
        /// The input.
        input: String,
        /// The model.
        model: String,
    },
    /// An output the model does not have.
    #[error(
        "unexpected inference output '{output}' for model '{model}' (its outputs are {known:?})"
    )]
    UnknownOutput {
        /// The output as named.
        output: String,
        /// The model.
        model: String,
        /// The model's outputs.
        known: Vec<String>,
    },
}

/// Triton's hint when a request leaves out the batch dimension.
fn batch_note(max_batch_size: Option<u32>, got: &[i64]) -> String {
    match max_batch_size {
        Some(m) => format!(
            ". NOTE: max_batch_size is {m}, so every input shape starts with the batch dimension, e.g. {}",
            dims(&[&[1], got].concat())
        ),
        None => String::new(),
    }
}

/// How to send an input's data, by protocol.
fn no_data_fix(contents_field: &Option<&'static str>) -> String {
    match contents_field {
        Some(field) => format!("send it in raw_input_contents or in contents.{field}"),
        None => "set 'data', or send it as binary data with parameters.binary_data_size".into(),
    }
}

/// `[1,3,640,640]`, Triton's way of printing dims.
pub(crate) fn dims(d: &[i64]) -> String {
    let d: Vec<String> = d.iter().map(i64::to_string).collect();
    format!("[{}]", d.join(","))
}

fn element_count(shape: &[i64]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))
}

/// Validates the inputs of a request for tensor model `spec`; returns its batch size (1 for
/// models without a batch dimension).
pub(crate) fn validate_inputs(
    spec: &ModelSpec,
    inputs: &[InputView<'_>],
) -> Result<u32, TensorError> {
    let model = spec.name.as_str();
    let batched = spec.max_batch_size > 0;
    let mut batch: Option<(i64, &str)> = None;
    for (i, input) in inputs.iter().enumerate() {
        let name = input.name;
        let Some(ts) = spec.input(name) else {
            return Err(TensorError::UnknownInput {
                input: name.into(),
                model: model.into(),
                known: spec.inputs.iter().map(|t| t.name.clone()).collect(),
            });
        };
        if inputs[..i].iter().any(|o| o.name == name) {
            return Err(TensorError::DuplicateInput {
                input: name.into(),
                model: model.into(),
            });
        }
        let want = ts.datatype.name();
        if input.datatype != want {
            return Err(TensorError::Datatype {
                input: name.into(),
                got: input.datatype.into(),
                model: model.into(),
                want,
            });
        }
        let expected = spec.metadata_shape(ts);
        let shape_error = |max_batch_size| TensorError::Shape {
            input: name.into(),
            model: model.into(),
            expected: expected.clone(),
            got: input.shape.to_vec(),
            max_batch_size,
        };
        if input.shape.len() != expected.len() {
            let lacks_batch = batched && input.shape.len() == ts.dims.len();
            return Err(shape_error(lacks_batch.then_some(spec.max_batch_size)));
        }
        if batched {
            let b = input.shape[0];
            if b < 1 {
                return Err(TensorError::BatchTooSmall {
                    model: model.into(),
                    batch: b,
                    input: name.into(),
                });
            }
            if b > i64::from(spec.max_batch_size) {
                return Err(TensorError::BatchTooLarge {
                    max: spec.max_batch_size,
                    model: model.into(),
                    batch: b,
                    input: name.into(),
                });
            }
            let (first, first_name) = *batch.get_or_insert((b, name));
            if first != b {
                return Err(TensorError::BatchMismatch {
                    input: name.into(),
                    model: model.into(),
                    first: first_name.into(),
                    first_batch: first,
                    batch: b,
                });
            }
        }
        let fits = input
            .shape
            .iter()
            .zip(&expected)
            .all(|(&got, &want)| got >= 0 && (want < 0 || got == want));
        if !fits {
            return Err(shape_error(None));
        }
        let count = element_count(input.shape).ok_or_else(|| TensorError::TooManyElements {
            input: name.into(),
            model: model.into(),
            shape: input.shape.to_vec(),
        })?;
        check_data(model, input, ts.datatype, count)?;
    }
    check_required_inputs(spec, inputs.iter().map(|i| i.name))?;
    Ok(batch.map_or(1, |(b, _)| b as u32))
}

/// Triton's error when a request for `spec` whose inputs are named `given` (in request order)
/// lacks a required input. Shared by the LLM and the tensor models' validation.
pub(crate) fn check_required_inputs<'a>(
    spec: &ModelSpec,
    given: impl Iterator<Item = &'a str> + Clone,
) -> Result<(), TensorError> {
    let missing: Vec<String> = spec
        .inputs
        .iter()
        .filter(|t| !t.optional && !given.clone().any(|n| n == t.name))
        .map(|t| t.name.clone())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(TensorError::MissingInputs {
        required: spec.inputs.iter().filter(|t| !t.optional).count(),
        model: spec.name.clone(),
        got: given.map(String::from).collect(),
        missing,
    })
}

fn check_data(
    model: &str,
    input: &InputView<'_>,
    dt: DataType,
    count: u64,
) -> Result<(), TensorError> {
    let name = input.name;
    let element_count = |field: String, got: u64| TensorError::ElementCount {
        input: name.into(),
        model: model.into(),
        shape: input.shape.to_vec(),
        count,
        field,
        got,
    };
    match input.data {
        InputData::Raw(raw) => match dt.size() {
            Some(size) => {
                let expected = count.saturating_mul(size as u64);
                if raw.len() as u64 != expected {
                    return Err(TensorError::ByteSize {
                        input: name.into(),
                        model: model.into(),
                        expected,
                        got: raw.len(),
                        shape: input.shape.to_vec(),
                        count,
                        size,
                        datatype: dt.name(),
                    });
                }
                Ok(())
            }
            None => check_bytes_framing(model, name, raw, count),
        },
        InputData::Contents(None) => Err(TensorError::NoData {
            input: name.into(),
            model: model.into(),
            contents_field: Some(contents_field(dt)),
        }),
        InputData::Contents(Some(c)) => match contents(dt, Some(c)) {
            (_, None) => Err(TensorError::RawOnly {
                input: name.into(),
                model: model.into(),
                datatype: dt.name(),
            }),
            (field, Some(len)) if len as u64 != count => {
                Err(element_count(format!("contents.{field}"), len as u64))
            }
            _ => Ok(()),
        },
        InputData::Json(None) => Err(TensorError::NoData {
            input: name.into(),
            model: model.into(),
            contents_field: None,
        }),
        InputData::Json(Some(v)) => {
            let mut n = 0u64;
            json_elements(model, name, dt, v, &mut n)?;
            if n != count {
                return Err(element_count("'data'".into(), n));
            }
            Ok(())
        }
    }
}

const BYTES_FRAMING: &str =
    "each BYTES element is a 4-byte little-endian length followed by that many bytes";

fn check_bytes_framing(model: &str, name: &str, raw: &[u8], count: u64) -> Result<(), TensorError> {
    let (input, model) = (name.to_string(), model.to_string());
    let mut rest = raw;
    for n in 0..count {
        if rest.is_empty() {
            return Err(TensorError::TooFewStrings {
                input,
                model,
                count,
                found: n,
            });
        }
        let Some((head, tail)) = rest.split_first_chunk::<4>() else {
            return Err(TensorError::ShortLength {
                input,
                model,
                left: rest.len(),
                element: n,
            });
        };
        let len = u32::from_le_bytes(*head) as usize;
        if len > tail.len() {
            return Err(TensorError::StringOverrun {
                element: n,
                input,
                model,
                claims: len,
                left: tail.len(),
            });
        }
        rest = &tail[len..];
    }
    if !rest.is_empty() {
        return Err(TensorError::BytesLeftOver {
            input,
            model,
            left: rest.len(),
            count,
        });
    }
    Ok(())
}

/// The typed-contents field that carries `dt`.
pub(crate) fn contents_field(dt: DataType) -> &'static str {
    contents(dt, None).0
}

/// The typed-contents field that carries `dt`, and the elements in it in `c` (`None` for types
/// that must travel raw).
fn contents(dt: DataType, c: Option<&proto::InferTensorContents>) -> (&'static str, Option<usize>) {
    let len = |f: fn(&proto::InferTensorContents) -> usize| c.map(f);
    match dt {
        DataType::Bytes => ("bytes_contents", len(|c| c.bytes_contents.len())),
        DataType::Bool => ("bool_contents", len(|c| c.bool_contents.len())),
        DataType::I8 | DataType::I16 | DataType::I32 => {
            ("int_contents", len(|c| c.int_contents.len()))
        }
        DataType::U8 | DataType::U16 | DataType::U32 => {
            ("uint_contents", len(|c| c.uint_contents.len()))
        }
        DataType::I64 => ("int64_contents", len(|c| c.int64_contents.len())),
        DataType::U64 => ("uint64_contents", len(|c| c.uint64_contents.len())),
        DataType::F32 => ("fp32_contents", len(|c| c.fp32_contents.len())),
        DataType::F64 => ("fp64_contents", len(|c| c.fp64_contents.len())),
        DataType::F16 | DataType::Bf16 => ("raw_input_contents", None),
    }
}

/// Counts the elements of JSON `data` (flat or nested, row-major), checking each one fits `dt`.
fn json_elements(
    model: &str,
    name: &str,
    dt: DataType,
    v: &Value,
    n: &mut u64,
) -> Result<(), TensorError> {
    if let Value::Array(a) = v {
        for x in a {
            json_elements(model, name, dt, x, n)?;
        }
        return Ok(());
    }
    let int_in = |lo: i64, hi: i64| v.as_i64().is_some_and(|i| (lo..=hi).contains(&i));
    let ok = match dt {
        DataType::Bool => v.is_boolean(),
        DataType::Bytes => v.is_string(),
        DataType::I8 => int_in(i8::MIN.into(), i8::MAX.into()),
        DataType::I16 => int_in(i16::MIN.into(), i16::MAX.into()),
        DataType::I32 => int_in(i32::MIN.into(), i32::MAX.into()),
        DataType::I64 => v.is_i64(),
        DataType::U8 => int_in(0, u8::MAX.into()),
        DataType::U16 => int_in(0, u16::MAX.into()),
        DataType::U32 => int_in(0, u32::MAX.into()),
        DataType::U64 => v.is_u64(),
        DataType::F32 | DataType::F64 => v.is_number(),
        DataType::F16 | DataType::Bf16 => {
            return Err(TensorError::BinaryOnly {
                input: name.into(),
                model: model.into(),
                datatype: dt.name(),
            });
        }
    };
    if !ok {
        let shown = match v {
            Value::String(s) if s.len() > 40 => format!("a {}-byte string", s.len()),
            other => other.to_string(),
        };
        return Err(TensorError::BadElement {
            input: name.into(),
            model: model.into(),
            shown,
            datatype: dt.name(),
        });
    }
    *n += 1;
    Ok(())
}

/// One output a response carries: its index in the model's outputs, and whether it travels as
/// binary data (HTTP binary extension; gRPC always answers raw).
pub(crate) type OutputChoice = (usize, bool);

/// Resolves the requested outputs (`name`, per-output `binary_data` flag); none requested means
/// every output. `binary_default` applies where a request did not say (`binary_data_output`).
pub(crate) fn select_outputs<'a>(
    spec: &ModelSpec,
    requested: impl IntoIterator<Item = (&'a str, Option<bool>)>,
    binary_default: bool,
) -> Result<Vec<OutputChoice>, TensorError> {
    let mut chosen = Vec::with_capacity(spec.outputs.len());
    for (name, binary) in requested {
        let Some(i) = spec.outputs.iter().position(|o| o.name == name) else {
            return Err(TensorError::UnknownOutput {
                output: name.into(),
                model: spec.name.clone(),
                known: spec.outputs.iter().map(|t| t.name.clone()).collect(),
            });
        };
        chosen.push((i, binary.unwrap_or(binary_default)));
    }
    if chosen.is_empty() {
        chosen.extend((0..spec.outputs.len()).map(|i| (i, binary_default)));
    }
    Ok(chosen)
}

/// Precomputed pieces of one output.
#[derive(Debug)]
struct OutputWire {
    name: String,
    /// The name as a JSON string literal.
    name_json: String,
    datatype: DataType,
    /// Declared dims with variable ones resolved to 1.
    dims: Vec<i64>,
    /// Elements per batch element.
    item_elems: usize,
    /// Bytes per batch element (BYTES: 4 per element, the zero length prefix).
    item_bytes: usize,
    /// `0,0,...` (or `false`/`""`) for the largest batch, built on first JSON answer.
    json_data: OnceLock<Bytes>,
}

impl OutputWire {
    fn json_token(&self) -> &'static str {
        match self.datatype {
            DataType::Bool => "false",
            DataType::Bytes => "\"\"",
            _ => "0",
        }
    }
}

/// An HTTP infer answer: the JSON header and the binary blobs that follow it (if any).
#[derive(Debug)]
pub(crate) struct HttpAnswer {
    /// The JSON part.
    pub(crate) json: Vec<u8>,
    /// Binary output data, in output order; empty for a pure JSON answer.
    pub(crate) blobs: Vec<Bytes>,
}

/// Everything needed to answer one tensor model's requests, built once at startup.
#[derive(Debug)]
pub(crate) struct TensorWire {
    batched: bool,
    max_batch: usize,
    outputs: Vec<OutputWire>,
    /// Zeros, as long as the largest output at the largest batch.
    zeros: Bytes,
}

impl TensorWire {
    /// The answers of `spec` (a validated tensor model).
    pub(crate) fn new(spec: &ModelSpec) -> Self {
        let max_batch = spec.max_batch() as usize;
        let outputs: Vec<OutputWire> = spec
            .outputs
            .iter()
            .map(|o| {
                let dims: Vec<i64> = o.dims.iter().map(|&d| d.max(1)).collect();
                let item_elems = dims.iter().map(|&d| d as usize).product::<usize>();
                OutputWire {
                    name: o.name.clone(),
                    name_json: Value::String(o.name.clone()).to_string(),
                    datatype: o.datatype,
                    dims,
                    item_elems,
                    item_bytes: item_elems * o.datatype.size().unwrap_or(4),
                    json_data: OnceLock::new(),
                }
            })
            .collect();
        let largest = outputs.iter().map(|o| o.item_bytes).max().unwrap_or(0) * max_batch;
        TensorWire {
            batched: spec.max_batch_size > 0,
            max_batch,
            outputs,
            zeros: Bytes::from(vec![0u8; largest]),
        }
    }

    fn shape(&self, o: &OutputWire, batch: u32) -> Vec<i64> {
        let b = self.batched.then_some(i64::from(batch));
        b.into_iter().chain(o.dims.iter().copied()).collect()
    }

    fn elems(&self, o: &OutputWire, batch: u32) -> usize {
        o.item_elems * self.batch_factor(batch)
    }

    fn batch_factor(&self, batch: u32) -> usize {
        if self.batched {
            (batch as usize).clamp(1, self.max_batch)
        } else {
            1
        }
    }

    fn raw(&self, o: &OutputWire, batch: u32) -> Bytes {
        let n = (o.item_bytes * self.batch_factor(batch)).min(self.zeros.len());
        self.zeros.slice(..n)
    }

    /// The gRPC `ModelInferResponse` (outputs always in `raw_output_contents`, as Triton does).
    pub(crate) fn grpc_response(
        &self,
        spec: &ModelSpec,
        id: String,
        batch: u32,
        outputs: &[OutputChoice],
    ) -> proto::ModelInferResponse {
        let (outputs, raw_output_contents) = outputs
            .iter()
            .filter_map(|&(i, _)| self.outputs.get(i))
            .map(|o| {
                let tensor = proto::model_infer_response::InferOutputTensor {
                    name: o.name.clone(),
                    datatype: o.datatype.name().to_owned(),
                    shape: self.shape(o, batch),
                    parameters: Default::default(),
                    contents: None,
                };
                (tensor, self.raw(o, batch).to_vec())
            })
            .unzip();
        proto::ModelInferResponse {
            model_name: spec.name.clone(),
            model_version: spec.version.clone(),
            id,
            parameters: Default::default(),
            outputs,
            raw_output_contents,
        }
    }

    /// The HTTP answer: JSON `data` for outputs not asked in binary, blobs for the others.
    pub(crate) fn http_answer(
        &self,
        spec: &ModelSpec,
        id: Option<&str>,
        batch: u32,
        outputs: &[OutputChoice],
    ) -> HttpAnswer {
        let mut json = Vec::with_capacity(256);
        let mut blobs = Vec::new();
        let id = id.map(|id| format!("\"id\":{},", Value::from(id)));
        let _ = write!(
            json,
            "{{{}\"model_name\":{},\"model_version\":{},\"outputs\":[",
            id.unwrap_or_default(),
            Value::from(spec.name.as_str()),
            Value::from(spec.version.as_str())
        );
        let chosen = outputs
            .iter()
            .filter_map(|&(i, binary)| Some((self.outputs.get(i)?, binary)));
        for (k, (o, binary)) in chosen.enumerate() {
            if k > 0 {
                json.push(b',');
            }
            let _ = write!(
                json,
                "{{\"name\":{},\"datatype\":\"{}\",\"shape\":{}",
                o.name_json,
                o.datatype.name(),
                dims(&self.shape(o, batch))
            );
            if binary {
                let blob = self.raw(o, batch);
                let _ = write!(
                    json,
                    ",\"parameters\":{{\"binary_data_size\":{}}}}}",
                    blob.len()
                );
                blobs.push(blob);
            } else {
                json.extend_from_slice(b",\"data\":[");
                json.extend_from_slice(&self.json_data(o, batch));
                json.extend_from_slice(b"]}");
            }
        }
        json.extend_from_slice(b"]}");
        HttpAnswer { json, blobs }
    }

    fn json_data(&self, o: &OutputWire, batch: u32) -> Bytes {
        let n = self.elems(o, batch);
        let token = o.json_token();
        let all = o.json_data.get_or_init(|| {
            let max = o.item_elems * self.max_batch;
            Bytes::from(vec![token; max].join(","))
        });
        // Every token has the same length, so the first `n` elements are a prefix.
        let len = (n * (token.len() + 1)).saturating_sub(1).min(all.len());
        all.slice(..len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::models::TensorSpec;
    use crate::workload::tensor::encode_bytes_elements;

    fn raw<'a>(name: &'a str, dt: &'a str, shape: &'a [i64], data: &'a [u8]) -> InputView<'a> {
        InputView {
            name,
            datatype: dt,
            shape,
            data: InputData::Raw(data),
        }
    }

    /// Model `name` with one `input` and one FP32 output.
    fn one_input(name: &str, max_batch_size: u32, input: TensorSpec) -> ModelSpec {
        let output = TensorSpec::new("o", DataType::F32, &[1]);
        ModelSpec::tensor(name, max_batch_size, vec![input], vec![output])
    }

    #[test]
    fn valid_requests_and_batch_size() {
        let y = ModelSpec::yolov8s();
        let img = vec![0u8; 3 * 640 * 640 * 4 * 2];
        assert_eq!(
            validate_inputs(&y, &[raw("images", "FP32", &[2, 3, 640, 640], &img)]),
            Ok(2)
        );
        let b = ModelSpec::text_classifier();
        let ids = vec![0u8; 8 * 16];
        assert_eq!(
            validate_inputs(
                &b,
                &[
                    raw("input_ids", "INT64", &[1, 16], &ids),
                    raw("attention_mask", "INT64", &[1, 16], &ids)
                ]
            ),
            Ok(1)
        );
        let bytes_model = one_input("s", 0, TensorSpec::new("t", DataType::Bytes, &[2]));
        let framed = [2u32.to_le_bytes().as_slice(), b"hi", &0u32.to_le_bytes()].concat();
        assert_eq!(
            validate_inputs(&bytes_model, &[raw("t", "BYTES", &[2], &framed)]),
            Ok(1)
        );
    }

    #[test]
    fn errors_name_what_was_expected() {
        let y = ModelSpec::yolov8s();
        let img = vec![0u8; 3 * 640 * 640 * 4];
        let err = |inputs: &[InputView<'_>]| {
            validate_inputs(&y, inputs)
                .expect_err("invalid")
                .to_string()
        };
        let e = err(&[raw("image", "FP32", &[1, 3, 640, 640], &img)]);
        assert!(
            e.starts_with("unexpected inference input 'image' for model 'yolov8s'"),
            "{e}"
        );
        let e = err(&[raw("images", "FP16", &[1, 3, 640, 640], &img)]);
        assert_eq!(
            e,
            "inference input 'images' data-type is 'FP16', but model 'yolov8s' expects 'FP32'"
        );
        let e = err(&[raw("images", "FP32", &[3, 640, 640], &img)]);
        assert!(
            e.starts_with("unexpected shape for input 'images' for model 'yolov8s'. Expected [-1,3,640,640], got [3,640,640]. NOTE"),
            "{e}"
        );
        let e = err(&[raw("images", "FP32", &[1, 3, 640, 641], &img)]);
        assert!(
            e.contains("Expected [-1,3,640,640], got [1,3,640,641]"),
            "{e}"
        );
        let e = err(&[raw("images", "FP32", &[9, 3, 640, 640], &img)]);
        assert!(
            e.starts_with("inference request batch-size must be <= 8 for 'yolov8s'"),
            "{e}"
        );
        let e = err(&[raw("images", "FP32", &[1, 3, 640, 640], &img[1..])]);
        assert!(
            e.starts_with("input byte size mismatch for input 'images' for model 'yolov8s'. Expected 4915200, got 4915199"),
            "{e}"
        );
        let e = err(&[]);
        assert!(e.contains("missing required input(s) [\"images\"]"), "{e}");

        let b = ModelSpec::text_classifier();
        let ids = vec![0u8; 8 * 4];
        let e = validate_inputs(
            &b,
            &[
                raw("input_ids", "INT64", &[1, 4], &ids),
                raw("attention_mask", "INT64", &[2, 2], &ids),
            ],
        )
        .expect_err("batch mismatch")
        .to_string();
        assert!(e.contains("batch size does not match other inputs"), "{e}");
    }

    #[test]
    fn bytes_framing_and_typed_counts() {
        let m = one_input("s", 4, TensorSpec::new("t", DataType::Bytes, &[2]));
        let check = |data: &[u8]| {
            validate_inputs(&m, &[raw("t", "BYTES", &[1, 2], data)]).map_err(|e| e.to_string())
        };
        let one = [1u32.to_le_bytes().as_slice(), b"a"].concat();
        let e = check(&one).expect_err("one of two");
        assert!(e.starts_with("expected 2 string elements"), "{e}");
        let e = check(&[one.as_slice(), &[1, 0]].concat()).expect_err("short prefix");
        assert!(e.starts_with("incomplete string length indicator"), "{e}");
        let e = check(&[one.as_slice(), &9u32.to_le_bytes(), b"x"].concat()).expect_err("overrun");
        assert!(e.contains("claims 9 bytes but only 1 bytes remain"), "{e}");
        let e = check(&[one.as_slice(), &one, b"zz"].concat()).expect_err("extra");
        assert!(
            e.contains("2 bytes left after its 2 string elements"),
            "{e}"
        );

        let f = one_input("f", 0, TensorSpec::new("x", DataType::F32, &[3]));
        let c = proto::InferTensorContents {
            fp32_contents: vec![1.0, 2.0],
            ..Default::default()
        };
        let v = InputView {
            name: "x",
            datatype: "FP32",
            shape: &[3],
            data: InputData::Contents(Some(&c)),
        };
        let e = validate_inputs(&f, &[v]).expect_err("2 of 3").to_string();
        assert!(
            e.contains("shape [3] needs 3, contents.fp32_contents has 2"),
            "{e}"
        );
        let data = serde_json::json!([[1, 2], [true]]);
        let v = InputView {
            data: InputData::Json(Some(&data)),
            ..v
        };
        let e = validate_inputs(&f, &[v])
            .expect_err("bool in FP32")
            .to_string();
        assert!(e.contains("true is not a valid FP32 element"), "{e}");
    }

    #[test]
    fn bytes_elements_are_length_prefixed() {
        for w in crate::sim::tokens::WORDS {
            let e = encode_bytes_elements([w.as_bytes()]);
            let len = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize;
            assert_eq!(&e[4..], w.as_bytes());
            assert_eq!(len, w.len());
        }
    }

    #[test]
    fn outputs_have_the_batch_and_json_is_sliced() {
        let y = ModelSpec::yolov8s();
        let w = TensorWire::new(&y);
        let r = w.grpc_response(&y, "7".into(), 3, &[(0, true)]);
        assert_eq!(r.outputs[0].shape, vec![3, 84, 100]);
        assert_eq!(r.raw_output_contents[0].len(), 3 * 84 * 100 * 4);
        let b = ModelSpec::text_classifier();
        let w = TensorWire::new(&b);
        let a = w.http_answer(&b, Some("x"), 2, &[(0, false)]);
        let v: Value = serde_json::from_slice(&a.json).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"id": "x", "model_name": "text_classifier", "model_version": "1",
                "outputs": [{"name": "logits", "datatype": "FP32", "shape": [2, 2], "data": [0, 0, 0, 0]}]})
        );
        let a = w.http_answer(&b, None, 8, &[(0, true)]);
        let v: Value = serde_json::from_slice(&a.json).expect("json");
        assert_eq!(v["outputs"][0]["parameters"]["binary_data_size"], 64);
        assert_eq!(a.blobs[0].len(), 64);
        assert_eq!(
            select_outputs(&b, [("nope", None)], false)
                .expect_err("unknown")
                .to_string(),
            "unexpected inference output 'nope' for model 'text_classifier' (its outputs are [\"logits\"])"
        );
    }
}
