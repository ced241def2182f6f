//! What a generation request asks for, whatever protocol carried it.
//!
//! KServe `generate` JSON, KServe tensors (gRPC `ModelInferRequest`, raw or typed contents) and
//! the vLLM `sampling_parameters` JSON string all reduce to a [`Bag`] of named scalars, which
//! [`interpret`] turns into [`GenParams`]. Values are taken leniently where clients differ in
//! practice (GenAI-Perf sends `"max_tokens": "100"` inside `sampling_parameters`, one-element
//! arrays for `text_input`), and strictly where Triton is strict (tensor names, datatypes, shapes),
//! so a client that works against the simulator also works against Triton. Every error message
//! says what was expected.

use serde_json::Value;

use super::models::{DataType, ModelSpec};
use super::tensor::{TensorError, check_required_inputs, contents_field};
use crate::proto;

/// Output length when a request names none (vLLM's and the generate extension's default).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16;

/// Largest output the simulator agrees to produce for one request.
pub(crate) const MAX_TOKENS_LIMIT: u32 = 1 << 20;

/// Why the simulator refuses a request as malformed (HTTP 400, gRPC `INVALID_ARGUMENT`, the
/// OpenAI routes' `BadRequestError`): each message names the field, input or header, what was
/// expected, and what came.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadRequest {
    /// The body is not JSON.
    #[error("failed to parse the request body as JSON: {0}")]
    BodyJson(#[source] serde_json::Error),
    /// A KServe infer body's JSON header is not JSON.
    #[error(
        "failed to parse the request JSON: {source}{}",
        if *.header_length_missing { " (a body carrying binary tensor data needs the Inference-Header-Content-Length header, set to the JSON header's length)" } else { "" }
    )]
    InferJson {
        /// What the parser said.
        #[source]
        source: serde_json::Error,
        /// The request had no `Inference-Header-Content-Length`.
        header_length_missing: bool,
    },
    /// The body or one of its parts lacks the shape it must have (the phrase says which:
    /// `a JSON object`, `an 'inputs' array of {name, shape, datatype, data}`, ...).
    #[error("expected {0}")]
    Expected(&'static str),
    /// A field holds a value of another type.
    #[error("expected '{field}' to be {expected}{}", got_text(.got))]
    WrongType {
        /// The field (`max_tokens`, `stream_options.include_usage`).
        field: String,
        /// What it must be (`a boolean`).
        expected: &'static str,
        /// What it was, when worth saying.
        got: Option<String>,
    },
    /// A field the API requires (Anthropic's wording), with the shape it takes.
    #[error("{field}: Field required{}", shape.map(|s| format!(" ({s})")).unwrap_or_default())]
    Required {
        /// The field.
        field: &'static str,
        /// What it holds, when worth saying.
        shape: Option<&'static str>,
    },
    /// A tool's result that answers no call an earlier message of the history made (strict
    /// servers check this; `at` is the item's index in `messages` or `input`).
    #[error("item {at} answers tool call '{id}', which no earlier assistant message made")]
    UnansweredCall {
        /// The item's index.
        at: usize,
        /// The call id it names.
        id: String,
    },
    /// A list of texts holding something else.
    #[error("expected '{0}' to hold strings")]
    NotStrings(String),
    /// An image whose base64 does not decode.
    #[error("an image's base64 does not decode: {0}")]
    ImageBase64(#[source] base64::DecodeError),
    /// An image that cannot be read at all.
    #[error("{0}")]
    ImageRead(#[source] std::io::Error),
    /// An image that is not a PNG or JPEG.
    #[error("an image is not a PNG or JPEG the server can read: {0}")]
    ImageFormat(#[source] image::ImageError),
    /// `sampling_parameters` as a string that is not JSON.
    #[error("expected 'sampling_parameters' to be a JSON object string: {0}")]
    SamplingParametersJson(#[source] serde_json::Error),
    /// Several prompts in one completions request.
    #[error(
        "the simulator accepts one prompt per request: a string, a one-string array, or an array of token ids"
    )]
    SeveralPrompts,
    /// `n` other than 1.
    #[error("the simulator generates one choice per request ('n' must be 1, got {0})")]
    SeveralChoices(u32),
    /// `min_tokens` above `max_tokens`.
    #[error("min_tokens ({min}) must be less than or equal to max_tokens ({max})")]
    MinAboveMax {
        /// `min_tokens`.
        min: u32,
        /// `max_tokens`.
        max: u32,
    },
    /// An output length of 0.
    #[error("expected max_tokens to be at least 1")]
    NoTokens,
    /// An output length past what the simulator produces.
    #[error("max_tokens {0} is above the simulator's limit of {MAX_TOKENS_LIMIT}")]
    TooManyTokens(u32),
    /// A KServe request to an LLM model whose raw contents do not match its inputs.
    #[error("expected {inputs} raw_input_contents (one per input), got {raw}")]
    RawCount {
        /// Inputs in the request.
        inputs: usize,
        /// `raw_input_contents` entries.
        raw: usize,
    },
    /// An input an LLM model does not have.
    #[error("unexpected inference input '{input}' for model '{model}'")]
    UnknownInput {
        /// The input.
        input: String,
        /// The model.
        model: String,
    },
    /// The same input twice.
    #[error("input '{0}' appears more than once")]
    DuplicateInput(String),
    /// An input sent with another datatype than the model's.
    #[error("unexpected datatype {got} for inference input '{input}', expecting {want}")]
    Datatype {
        /// The datatype sent.
        got: String,
        /// The input.
        input: String,
        /// The model's datatype.
        want: &'static str,
    },
    /// An input of another shape than the model's.
    #[error(
        "unexpected shape for input '{input}' for model '{model}'. Expected {expected:?}, got {got:?}{}",
        if *.batched { " (the first dimension is the batch size, because max_batch_size > 0)" } else { "" }
    )]
    Shape {
        /// The input.
        input: String,
        /// The model.
        model: String,
        /// The shape the model declares.
        expected: Vec<i64>,
        /// The shape sent.
        got: Vec<i64>,
        /// The model batches (its first dimension is the batch).
        batched: bool,
    },
    /// A batch other than 1 for an LLM model.
    #[error(
        "input '{input}' has batch size {batch}; the simulator serves one sequence per request, expected 1"
    )]
    Batch {
        /// The input.
        input: String,
        /// The batch sent.
        batch: i64,
    },
    /// An LLM input of more than one element.
    #[error("input '{input}' must hold exactly one element, got shape {shape:?}")]
    NotOneElement {
        /// The input.
        input: String,
        /// The shape sent.
        shape: Vec<i64>,
    },
    /// Typed contents beside raw contents.
    #[error("input '{0}': contents must not be set when raw_input_contents is used")]
    ContentsWithRaw(String),
    /// Raw data of another size than one element.
    #[error(
        "input '{input}': expected {size} bytes of raw {datatype} data for one element, got {got}"
    )]
    RawSize {
        /// The input.
        input: String,
        /// Bytes of one element.
        size: usize,
        /// The datatype.
        datatype: &'static str,
        /// Bytes sent.
        got: usize,
    },
    /// Raw BYTES data not framed as one length-prefixed string.
    #[error(
        "input '{input}': expected raw BYTES data as a 4-byte little-endian length followed by that many bytes ({got} bytes given)"
    )]
    RawBytes {
        /// The input.
        input: String,
        /// Bytes sent.
        got: usize,
    },
    /// A datatype the LLM models do not take.
    #[error("input '{input}': datatype {datatype} is not supported by the simulator's LLM models")]
    UnsupportedDatatype {
        /// The input.
        input: String,
        /// The datatype.
        datatype: &'static str,
    },
    /// An input without data.
    #[error(
        "input '{input}': expected its data either in raw_input_contents or in contents ({field} field for {datatype})"
    )]
    NoData {
        /// The input.
        input: String,
        /// The typed-contents field for its datatype.
        field: &'static str,
        /// The datatype.
        datatype: &'static str,
    },
    /// Typed contents of more than one element.
    #[error("input '{input}': expected 1 element in contents, got {got}")]
    ContentsCount {
        /// The input.
        input: String,
        /// Elements sent.
        got: usize,
    },
    /// FP16/BF16 in typed contents.
    #[error("input '{input}': {datatype} data must be sent in raw_input_contents")]
    RawOnly {
        /// The input.
        input: String,
        /// The datatype.
        datatype: &'static str,
    },
    /// Text that is not UTF-8.
    #[error("input '{input}' must be UTF-8 text: {source}")]
    NotUtf8 {
        /// The input.
        input: String,
        /// Where the bytes stopped being UTF-8.
        #[source]
        source: std::string::FromUtf8Error,
    },
    /// A JSON infer input without one of its parts (`a 'datatype'`, `'data' (or
    /// binary_data_size)`).
    #[error("expected input '{input}' to have {part}")]
    InputPart {
        /// The input.
        input: String,
        /// What it lacks.
        part: &'static str,
    },
    /// A datatype name KServe does not have.
    #[error("input '{input}': unknown datatype {datatype}")]
    UnknownDatatype {
        /// The input.
        input: String,
        /// The name sent.
        datatype: String,
    },
    /// A `binary_data_size` that is not a byte count.
    #[error("input '{input}': binary_data_size must be a byte count, got {got}")]
    BinarySize {
        /// The input.
        input: String,
        /// The value sent.
        got: Value,
    },
    /// A `binary_data_size` past the binary data left (`header_length_missing`: the request
    /// had no `Inference-Header-Content-Length`, so the whole body was read as JSON).
    #[error(
        "input '{input}': binary_data_size {size} is more than the {left} bytes of binary data left after the JSON header{}",
        if *.header_length_missing { " (binary tensor data needs the Inference-Header-Content-Length header, set to the JSON header's length)" } else { "" }
    )]
    BinaryOverrun {
        /// The input.
        input: String,
        /// Its `binary_data_size`.
        size: usize,
        /// Binary bytes left.
        left: usize,
        /// No `Inference-Header-Content-Length` was sent.
        header_length_missing: bool,
    },
    /// An LLM input's `binary_data_size` past the binary data left.
    #[error("input '{input}': binary_data_size {size} is more than the {left} binary bytes left")]
    BinaryShort {
        /// The input.
        input: String,
        /// Its `binary_data_size`.
        size: usize,
        /// Binary bytes left.
        left: usize,
    },
    /// Binary data no input claimed.
    #[error(
        "{0} bytes of binary data left after the last input: the inputs' binary_data_size values must add up to the body after the JSON header"
    )]
    BinaryLeftOver(usize),
    /// An `Inference-Header-Content-Length` past the body.
    #[error("Inference-Header-Content-Length {length} is larger than the body ({body} bytes)")]
    HeaderLength {
        /// The header's value.
        length: usize,
        /// The body's size.
        body: usize,
    },
    /// A JSON element that does not fit the input's datatype.
    #[error("input '{input}': {element} is not a valid {datatype} element")]
    BadElement {
        /// The input.
        input: String,
        /// The element.
        element: Value,
        /// The datatype.
        datatype: &'static str,
    },
    /// A datatype that JSON cannot carry.
    #[error("input '{input}': {datatype} data must be sent as binary data")]
    BinaryOnly {
        /// The input.
        input: String,
        /// The datatype.
        datatype: &'static str,
    },
    /// A tensor model's inputs or outputs (Triton's checks).
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// A field of the wrong type, for the JSON bodies' parsers.
pub(crate) fn wrong(field: &str, expected: &'static str) -> BadRequest {
    wrong_got(field, expected, None)
}

/// A field of the wrong type, with what it held (`got`) when that is worth saying.
fn wrong_got(field: &str, expected: &'static str, got: Option<String>) -> BadRequest {
    BadRequest::WrongType {
        field: field.into(),
        expected,
        got,
    }
}

/// A JSON request body, which must be an object.
pub(crate) fn json_object(body: &[u8]) -> Result<Value, BadRequest> {
    let v: Value = serde_json::from_slice(body).map_err(BadRequest::BodyJson)?;
    if !v.is_object() {
        return Err(BadRequest::Expected("a JSON object"));
    }
    Ok(v)
}

/// A body's `model`, when it names one.
pub(crate) fn model_name(v: &Value) -> Result<Option<String>, BadRequest> {
    match v.get("model") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(wrong("model", "a string")),
    }
}

/// `, got X` when the value is worth showing.
fn got_text(got: &Option<String>) -> String {
    got.as_ref()
        .map(|g| format!(", got {g}"))
        .unwrap_or_default()
}

/// The prompt, as far as the simulator cares: text to tokenize, or a known token count (OpenAI
/// completions accept token-id arrays).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Prompt {
    /// Prompt text.
    Text(String),
    /// A prompt given as token ids; only their number matters.
    Tokens(u32),
    /// Text followed by this many tokens more (an image's patches).
    Mixed(String, u32),
}

impl Prompt {
    /// The prompt text, if it was given as text.
    pub(crate) fn text(&self) -> &str {
        match self {
            Prompt::Text(s) | Prompt::Mixed(s, _) => s,
            Prompt::Tokens(_) => "",
        }
    }
}

/// A resolved generation request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GenParams {
    /// What to prefill.
    pub prompt: Prompt,
    /// Exactly how many tokens to generate.
    pub max_tokens: u32,
    /// The request's `stream` flag, when it set one.
    pub stream: Option<bool>,
    /// The request's `exclude_input_in_output` flag, when it set one.
    pub exclude_input: Option<bool>,
    /// gRPC request parameter `triton_enable_empty_final_response`.
    pub empty_final: bool,
}

impl GenParams {
    /// True when a non-streaming answer must start with the prompt (TensorRT-LLM and vLLM echo
    /// the input unless `exclude_input_in_output` is true).
    pub(crate) fn echo_input(&self) -> bool {
        self.exclude_input != Some(true)
    }
}

/// A single value of a request field or tensor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    /// A string (or a BYTES element).
    Text(String),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A JSON object or a multi-element array.
    Json(Value),
}

impl Scalar {
    /// Converts a JSON value; one-element arrays unwrap (GenAI-Perf sends `["prompt"]`), `null`
    /// is absent.
    pub(crate) fn from_json(v: Value) -> Option<Scalar> {
        Some(match v {
            Value::Null => return None,
            Value::Bool(b) => Scalar::Bool(b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Scalar::Int(i),
                None => Scalar::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Scalar::Text(s),
            Value::Array(mut a) if a.len() == 1 => return Scalar::from_json(a.pop()?),
            other => Scalar::Json(other),
        })
    }

    /// Short description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Scalar::Text(s) if s.len() > 40 => format!("a {}-byte string", s.len()),
            Scalar::Text(s) => format!("{s:?}"),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Json(v) if v.is_array() => "an array".to_owned(),
            Scalar::Json(_) => "an object".to_owned(),
        }
    }

    /// The value as a `u32`, leniently (integral floats and numeric strings accepted).
    pub(crate) fn to_u32(&self, name: &str) -> Result<u32, BadRequest> {
        let bad = || wrong_got(name, "a non-negative integer", Some(self.describe()));
        let whole =
            |f: f64| (f.fract() == 0.0 && f >= 0.0 && f <= u32::MAX as f64).then_some(f as u64);
        let v = match self {
            Scalar::Int(i) => u64::try_from(*i).ok(),
            Scalar::Float(f) => whole(*f),
            Scalar::Text(s) => {
                let t = s.trim();
                t.parse::<u64>()
                    .ok()
                    .or_else(|| t.parse::<f64>().ok().and_then(whole))
            }
            _ => None,
        };
        v.and_then(|v| u32::try_from(v).ok()).ok_or_else(bad)
    }

    /// The value as a boolean, leniently (`"true"`, `1`, ...).
    pub(crate) fn to_bool(&self, name: &str) -> Result<bool, BadRequest> {
        let bad = || wrong_got(name, "a boolean", Some(self.describe()));
        match self {
            Scalar::Bool(b) => Ok(*b),
            Scalar::Int(0) => Ok(false),
            Scalar::Int(1) => Ok(true),
            Scalar::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

/// Named request values; the first value pushed under a name wins, so callers push in order of
/// precedence (top-level keys before `parameters`).
#[derive(Debug, Default)]
pub(crate) struct Bag {
    items: Vec<(String, Scalar)>,
}

impl Bag {
    /// Adds `name` unless already present.
    pub(crate) fn push(&mut self, name: String, value: Scalar) {
        if self.get(&name).is_none() {
            self.items.push((name, value));
        }
    }

    /// The value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Scalar> {
        self.items.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn take(&mut self, name: &str) -> Option<Scalar> {
        let i = self.items.iter().position(|(n, _)| n == name)?;
        Some(self.items.swap_remove(i).1)
    }

    fn u32(&self, name: &str) -> Result<Option<u32>, BadRequest> {
        self.get(name).map(|v| v.to_u32(name)).transpose()
    }

    fn bool(&self, name: &str) -> Result<Option<bool>, BadRequest> {
        self.get(name).map(|v| v.to_bool(name)).transpose()
    }

    /// A bag from a generate-extension JSON body: top-level keys, then the keys of
    /// `parameters` (lower precedence).
    pub(crate) fn from_generate_json(body: Value) -> Result<Bag, BadRequest> {
        let Value::Object(mut map) = body else {
            return Err(BadRequest::Expected(
                "a JSON object with a 'text_input' field",
            ));
        };
        let mut bag = Bag::default();
        let params = map.remove("parameters");
        bag.extend_json(map);
        match params {
            Some(Value::Object(p)) => bag.extend_json(p),
            Some(Value::Null) | None => {}
            Some(_) => return Err(not_object("parameters", None)),
        }
        Ok(bag)
    }

    /// Adds the keys of a JSON object (see [`Bag::push`]); `null` values are absent.
    fn extend_json(&mut self, map: serde_json::Map<String, Value>) {
        for (k, v) in map {
            if let Some(s) = Scalar::from_json(v) {
                self.push(k, s);
            }
        }
    }
}

/// Resolves the output length from `max_tokens` and `min_tokens` (either may be absent).
pub(crate) fn resolve_length(
    max: Option<u32>,
    min: Option<u32>,
    default: u32,
) -> Result<u32, BadRequest> {
    let n = match (max, min) {
        (Some(max), Some(min)) if min > max => {
            return Err(BadRequest::MinAboveMax { min, max });
        }
        (Some(max), _) => max,
        (None, Some(min)) => min.max(default),
        (None, None) => default,
    };
    if n == 0 {
        return Err(BadRequest::NoTokens);
    }
    if n > MAX_TOKENS_LIMIT {
        return Err(BadRequest::TooManyTokens(n));
    }
    Ok(n)
}

/// Turns a bag into generation parameters: `text_input`, `max_tokens`, `min_tokens`, `stream`,
/// `exclude_input_in_output`, and a vLLM `sampling_parameters` JSON (object or string, values may
/// be strings) supplying `max_tokens`/`min_tokens` when the top level does not.
pub(crate) fn interpret(mut bag: Bag) -> Result<GenParams, BadRequest> {
    let prompt = match bag.take("text_input") {
        Some(Scalar::Text(s)) => s,
        Some(other) => return Err(wrong_got("text_input", "a string", Some(other.describe()))),
        None => return Err(BadRequest::Expected("a 'text_input' string")),
    };
    let mut max = bag.u32("max_tokens")?;
    let mut min = bag.u32("min_tokens")?;
    if let Some(sp) = bag.take("sampling_parameters") {
        let v = match sp {
            Scalar::Text(s) if s.trim().is_empty() => Value::Object(Default::default()),
            Scalar::Text(s) => {
                serde_json::from_str::<Value>(&s).map_err(BadRequest::SamplingParametersJson)?
            }
            Scalar::Json(v) => v,
            other => {
                return Err(not_object("sampling_parameters", Some(other.describe())));
            }
        };
        let Value::Object(obj) = v else {
            return Err(not_object("sampling_parameters", None));
        };
        let mut sp = Bag::default();
        sp.extend_json(obj);
        if max.is_none() {
            max = sp.u32("max_tokens")?;
        }
        if min.is_none() {
            min = sp.u32("min_tokens")?;
        }
    }
    Ok(GenParams {
        prompt: Prompt::Text(prompt),
        max_tokens: resolve_length(max, min, DEFAULT_MAX_TOKENS)?,
        stream: bag.bool("stream")?,
        exclude_input: bag.bool("exclude_input_in_output")?,
        empty_final: false,
    })
}

/// `field` is not a JSON object (`got`: what it was, when worth saying).
fn not_object(field: &str, got: Option<String>) -> BadRequest {
    wrong_got(field, "a JSON object", got)
}

/// Reads the inputs of a gRPC `ModelInferRequest` into a bag, validating them against the model
/// the way Triton does: known names, declared datatypes, shapes (with the batch dimension when
/// `max_batch_size > 0`), all required inputs present. Request parameters `max_tokens` /
/// `min_tokens` (perf_analyzer's `--request-parameter`) are accepted with lower precedence.
pub(crate) fn bag_from_infer_request(
    spec: &ModelSpec,
    req: &proto::ModelInferRequest,
) -> Result<(Bag, bool), BadRequest> {
    let raw = &req.raw_input_contents;
    if !raw.is_empty() && raw.len() != req.inputs.len() {
        return Err(BadRequest::RawCount {
            inputs: req.inputs.len(),
            raw: raw.len(),
        });
    }
    let mut bag = Bag::default();
    for (i, input) in req.inputs.iter().enumerate() {
        let Some(ts) = spec.input(&input.name) else {
            return Err(BadRequest::UnknownInput {
                input: input.name.clone(),
                model: spec.name.clone(),
            });
        };
        if bag.get(&input.name).is_some() {
            return Err(BadRequest::DuplicateInput(input.name.clone()));
        }
        if input.datatype != ts.datatype.name() {
            return Err(BadRequest::Datatype {
                got: input.datatype.clone(),
                input: input.name.clone(),
                want: ts.datatype.name(),
            });
        }
        let (expected, shape) = (spec.metadata_shape(ts), &input.shape);
        let fits = |(&got, &want): (&i64, &i64)| got >= 0 && (want < 0 || got == want);
        if shape.len() != expected.len() || !shape.iter().zip(&expected).all(fits) {
            return Err(BadRequest::Shape {
                input: input.name.clone(),
                model: spec.name.clone(),
                expected,
                got: shape.clone(),
                batched: spec.max_batch_size > 0,
            });
        }
        let batch = shape.first().copied().unwrap_or(0);
        if spec.max_batch_size > 0 && batch != 1 {
            return Err(BadRequest::Batch {
                input: input.name.clone(),
                batch,
            });
        }
        if shape.iter().product::<i64>() != 1 {
            return Err(BadRequest::NotOneElement {
                input: input.name.clone(),
                shape: shape.clone(),
            });
        }
        let value = if raw.is_empty() {
            scalar_from_contents(&input.name, ts.datatype, input.contents.as_ref())?
        } else {
            if input.contents.is_some() {
                return Err(BadRequest::ContentsWithRaw(input.name.clone()));
            }
            scalar_from_raw(&input.name, ts.datatype, &raw[i])?
        };
        bag.push(input.name.clone(), value);
    }
    // The bag holds exactly the request's inputs here (each was pushed above, parameters come
    // below), so looking the names up in the request is the same as in the bag.
    check_required_inputs(spec, req.inputs.iter().map(|t| t.name.as_str()))?;
    let mut empty_final = false;
    for (k, p) in &req.parameters {
        use proto::infer_parameter::ParameterChoice as P;
        let value = match &p.parameter_choice {
            Some(P::BoolParam(b)) => Scalar::Bool(*b),
            Some(P::Int64Param(i)) => Scalar::Int(*i),
            Some(P::Uint64Param(u)) => Scalar::Int(i64::try_from(*u).unwrap_or(i64::MAX)),
            Some(P::DoubleParam(d)) => Scalar::Float(*d),
            Some(P::StringParam(s)) => Scalar::Text(s.clone()),
            None => continue,
        };
        match k.as_str() {
            "triton_enable_empty_final_response" => empty_final = value.to_bool(k)?,
            "max_tokens" | "min_tokens" => bag.push(k.clone(), value),
            _ => {}
        }
    }
    Ok((bag, empty_final))
}

/// One fixed-width element's bytes (`N` of them), or what was wrong with `raw`.
fn fixed<const N: usize>(name: &str, dt: DataType, raw: &[u8]) -> Result<[u8; N], BadRequest> {
    raw.try_into().map_err(|_| BadRequest::RawSize {
        input: name.into(),
        size: N,
        datatype: dt.name(),
        got: raw.len(),
    })
}

fn scalar_from_raw(name: &str, dt: DataType, raw: &[u8]) -> Result<Scalar, BadRequest> {
    Ok(match dt {
        DataType::Bytes => {
            let bad = || BadRequest::RawBytes {
                input: name.into(),
                got: raw.len(),
            };
            let head: [u8; 4] = raw
                .get(..4)
                .and_then(|h| h.try_into().ok())
                .ok_or_else(bad)?;
            let len = u32::from_le_bytes(head) as usize;
            let body = raw.get(4..).filter(|b| b.len() == len).ok_or_else(bad)?;
            Scalar::Text(utf8(name, body)?)
        }
        DataType::Bool => Scalar::Bool(fixed::<1>(name, dt, raw)?[0] != 0),
        DataType::I32 => Scalar::Int(i64::from(i32::from_le_bytes(fixed(name, dt, raw)?))),
        DataType::U32 => Scalar::Int(i64::from(u32::from_le_bytes(fixed(name, dt, raw)?))),
        DataType::I64 => Scalar::Int(i64::from_le_bytes(fixed(name, dt, raw)?)),
        DataType::F32 => Scalar::Float(f64::from(f32::from_le_bytes(fixed(name, dt, raw)?))),
        DataType::F64 => Scalar::Float(f64::from_le_bytes(fixed(name, dt, raw)?)),
        other => {
            return Err(BadRequest::UnsupportedDatatype {
                input: name.into(),
                datatype: other.name(),
            });
        }
    })
}

fn scalar_from_contents(
    name: &str,
    dt: DataType,
    contents: Option<&proto::InferTensorContents>,
) -> Result<Scalar, BadRequest> {
    let c = contents.ok_or_else(|| no_data(name, dt))?;
    Ok(match dt {
        DataType::Bytes => Scalar::Text(utf8(name, one(name, dt, &c.bytes_contents)?)?),
        DataType::Bool => Scalar::Bool(*one(name, dt, &c.bool_contents)?),
        DataType::I32 | DataType::I16 | DataType::I8 => {
            Scalar::Int(i64::from(*one(name, dt, &c.int_contents)?))
        }
        DataType::U32 | DataType::U16 | DataType::U8 => {
            Scalar::Int(i64::from(*one(name, dt, &c.uint_contents)?))
        }
        DataType::I64 => Scalar::Int(*one(name, dt, &c.int64_contents)?),
        DataType::U64 => {
            Scalar::Int(i64::try_from(*one(name, dt, &c.uint64_contents)?).unwrap_or(i64::MAX))
        }
        DataType::F32 => Scalar::Float(f64::from(*one(name, dt, &c.fp32_contents)?)),
        DataType::F64 => Scalar::Float(*one(name, dt, &c.fp64_contents)?),
        DataType::F16 | DataType::Bf16 => {
            return Err(BadRequest::RawOnly {
                input: name.into(),
                datatype: dt.name(),
            });
        }
    })
}

/// The one element of input `name`'s typed-contents `field`. An empty field usually means the
/// data sits in another field (INT64 values in int_contents, say), so the error names the
/// field that was expected.
fn one<'a, T>(name: &str, dt: DataType, field: &'a [T]) -> Result<&'a T, BadRequest> {
    match field {
        [x] => Ok(x),
        [] => Err(no_data(name, dt)),
        _ => Err(BadRequest::ContentsCount {
            input: name.into(),
            got: field.len(),
        }),
    }
}

/// Input `name` carries no data where a `dt` input keeps it.
fn no_data(name: &str, dt: DataType) -> BadRequest {
    BadRequest::NoData {
        input: name.into(),
        field: contents_field(dt),
        datatype: dt.name(),
    }
}

fn utf8(name: &str, b: &[u8]) -> Result<String, BadRequest> {
    String::from_utf8(b.to_vec()).map_err(|source| BadRequest::NotUtf8 {
        input: name.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tensor::encode_bytes_elements;
    use serde_json::json;

    fn parse_gen(v: Value) -> Result<GenParams, BadRequest> {
        interpret(Bag::from_generate_json(v)?)
    }

    #[test]
    fn generate_json_forms() {
        let p =
            parse_gen(json!({"text_input": "hi", "max_tokens": 5, "stream": true})).expect("ok");
        assert_eq!((p.max_tokens, p.stream), (5, Some(true)));
        let p = parse_gen(
            json!({"text_input": ["hi"], "parameters": {"max_tokens": "7", "stream": "false"}}),
        )
        .expect("ok");
        assert_eq!(
            (p.max_tokens, p.stream, p.prompt.text()),
            (7, Some(false), "hi")
        );
        let max = |v: Value| parse_gen(v).expect("ok").max_tokens;
        let sp = "{\"max_tokens\": \"100\", \"min_tokens\": \"100\"}";
        assert_eq!(
            max(json!({"text_input": "hi", "sampling_parameters": sp})),
            100
        );
        assert_eq!(
            max(json!({"text_input": "hi", "sampling_parameters": {"max_tokens": 3}})),
            3
        );
        assert_eq!(max(json!({"text_input": "hi"})), DEFAULT_MAX_TOKENS);
        assert_eq!(max(json!({"text_input": "hi", "min_tokens": 40})), 40);
        // Top level wins over parameters.
        let top = json!({"text_input": "x", "max_tokens": 2, "parameters": {"max_tokens": 9}});
        assert_eq!(max(top), 2);
    }

    #[test]
    fn generate_json_errors_say_what_was_expected() {
        for (body, want) in [
            (json!({"max_tokens": 5}), "text_input"),
            (
                json!({"text_input": "x", "max_tokens": "lots"}),
                "non-negative integer",
            ),
            (
                json!({"text_input": "x", "max_tokens": 2, "min_tokens": 3}),
                "min_tokens",
            ),
            (
                json!({"text_input": "x", "sampling_parameters": "{oops"}),
                "sampling_parameters",
            ),
            (json!({"text_input": "x", "max_tokens": 0}), ""),
            (json!([1, 2]), ""),
        ] {
            let Err(e) = parse_gen(body.clone()) else {
                panic!("{body} was accepted");
            };
            assert!(e.to_string().contains(want), "{body}: {e}");
        }
    }

    fn tensor(name: &str, dt: &str, shape: &[i64]) -> proto::model_infer_request::InferInputTensor {
        proto::model_infer_request::InferInputTensor {
            name: name.into(),
            datatype: dt.into(),
            shape: shape.to_vec(),
            parameters: Default::default(),
            contents: None,
        }
    }

    #[test]
    fn grpc_raw_and_typed_contents() {
        let spec = ModelSpec::tensorrt_llm("gpt2");
        let mut req = proto::ModelInferRequest {
            model_name: "gpt2".into(),
            inputs: vec![
                tensor("text_input", "BYTES", &[1, 1]),
                tensor("max_tokens", "INT32", &[1, 1]),
                tensor("stream", "BOOL", &[1, 1]),
            ],
            raw_input_contents: vec![
                encode_bytes_elements([b"hello".as_slice()]),
                9i32.to_le_bytes().to_vec(),
                vec![1],
            ],
            ..Default::default()
        };
        req.parameters.insert(
            "triton_enable_empty_final_response".into(),
            proto::InferParameter {
                parameter_choice: Some(proto::infer_parameter::ParameterChoice::BoolParam(true)),
            },
        );
        let (bag, empty_final) = bag_from_infer_request(&spec, &req).expect("raw");
        let p = interpret(bag).expect("params");
        assert_eq!(
            (p.prompt.text(), p.max_tokens, p.stream, empty_final),
            ("hello", 9, Some(true), true)
        );

        req.raw_input_contents.clear();
        req.inputs[0].contents = Some(proto::InferTensorContents {
            bytes_contents: vec![b"hey".to_vec()],
            ..Default::default()
        });
        req.inputs[1].contents = Some(proto::InferTensorContents {
            int_contents: vec![4],
            ..Default::default()
        });
        req.inputs[2].contents = Some(proto::InferTensorContents {
            bool_contents: vec![false],
            ..Default::default()
        });
        let (bag, _) = bag_from_infer_request(&spec, &req).expect("typed");
        let p = interpret(bag).expect("params");
        assert_eq!(
            (p.prompt.text(), p.max_tokens, p.stream),
            ("hey", 4, Some(false))
        );
    }

    #[test]
    fn grpc_validation_like_triton() {
        let spec = ModelSpec::tensorrt_llm("gpt2");
        let base = proto::ModelInferRequest {
            inputs: vec![
                tensor("text_input", "BYTES", &[1, 1]),
                tensor("max_tokens", "INT32", &[1, 1]),
            ],
            raw_input_contents: vec![
                encode_bytes_elements([b"hi".as_slice()]),
                3i32.to_le_bytes().to_vec(),
            ],
            ..Default::default()
        };
        type Change = fn(&mut proto::ModelInferRequest);
        let cases: [(&str, Change, &[&str]); 5] = [
            (
                "datatype",
                |r| r.inputs[1].datatype = "INT64".into(),
                &["unexpected datatype INT64", "expecting INT32"],
            ),
            (
                "shape",
                |r| r.inputs[0].shape = vec![1],
                &["unexpected shape"],
            ),
            (
                "missing input",
                |r| {
                    r.inputs.pop();
                    r.raw_input_contents.pop();
                },
                &["missing required input(s) [\"max_tokens\"]"],
            ),
            (
                "BYTES framing",
                |r| r.raw_input_contents[0] = vec![9, 0, 0, 0, b'x'],
                &["4-byte little-endian length"],
            ),
            (
                "unknown input",
                |r| r.inputs[0].name = "prompt".into(),
                &["unexpected inference input 'prompt'"],
            ),
        ];
        for (label, change, wants) in cases {
            let mut r = base.clone();
            change(&mut r);
            let e = bag_from_infer_request(&spec, &r)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            for want in wants {
                assert!(e.contains(want), "{label}: {e}");
            }
        }
        // vLLM: no batch dimension, sampling_parameters with string values.
        let v = ModelSpec::vllm("vllm_model");
        let r = proto::ModelInferRequest {
            inputs: vec![
                tensor("text_input", "BYTES", &[1]),
                tensor("sampling_parameters", "BYTES", &[1]),
            ],
            raw_input_contents: vec![
                encode_bytes_elements([b"hi".as_slice()]),
                encode_bytes_elements([b"{\"max_tokens\": \"12\"}".as_slice()]),
            ],
            ..Default::default()
        };
        let (bag, _) = bag_from_infer_request(&v, &r).expect("vllm");
        assert_eq!(interpret(bag).expect("p").max_tokens, 12);
    }
}
