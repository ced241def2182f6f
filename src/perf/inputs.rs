//! Input tensors for `ttftbench perf`: names, datatypes and shapes from the model's metadata and
//! config; values random, zero, or from perf_analyzer's input-data JSON; encoded once per
//! dataset entry for gRPC (`raw_input_contents`) or HTTP (binary tensor extension or JSON), and
//! reused for every request.
//!
//! perf_analyzer's input-data format: `{"data": [{"INPUT": VALUE, ...}, ...]}` where VALUE is a
//! flat (or nested) list in row-major order, `{"content": LIST, "shape": [d1, ...]}`, or
//! `{"b64": "..."}` (raw little-endian bytes; BYTES elements with their 4-byte length prefixes).
//! One entry is one request; entries are sent round-robin. A file of JSON lines, each such an
//! object, is read the same way. `model` and `validation_data` keys are ignored.

use std::collections::HashMap;
use std::path::Path;

use base64::Engine;
use bytes::Bytes;
use prost::Message;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

use super::plan::{DataSource, ParamValue, PerfPlan, Protocol};
use crate::client::Payload;
use crate::error::{UsageError, usage};
use crate::proto::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use crate::proto::{InferParameter, ModelInferRequest, infer_parameter::ParameterChoice};
use crate::workload::tensor::{
    DataType, ModelInfo, TensorSpec, bytes_elements, element_value, encode_bytes_elements,
    encode_scalar,
};
use crate::workload::{Dataset, Entry};

/// One input of one request, ready to encode.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Input name.
    pub name: String,
    /// Datatype.
    pub datatype: DataType,
    /// Full shape, batch dimension included when the model batches.
    pub shape: Vec<i64>,
    /// Row-major little-endian contents (BYTES: length-prefixed elements).
    pub raw: Vec<u8>,
}

/// Builds the requests of a run: the tensors of every dataset entry, checked against the model.
pub fn tensors(plan: &PerfPlan, info: &ModelInfo) -> Result<Vec<Vec<Tensor>>, UsageError> {
    check_batch(plan, info)?;
    for (name, _) in &plan.shapes {
        if info.input(name).is_none() {
            return Err(UsageError(format!(
                "--shape {name}: model '{}' has no input '{name}'; its inputs are: {}",
                info.name,
                info.describe_inputs()
            )));
        }
    }
    let entries: Vec<HashMap<String, Value>> = match &plan.data {
        DataSource::Random | DataSource::Zero => vec![HashMap::new()],
        DataSource::Files(paths) => {
            let mut all = Vec::new();
            for p in paths {
                all.extend(read_data_file(p)?);
            }
            if all.is_empty() {
                return usage("--input-data: the files hold no data entries");
            }
            all
        }
    };
    tensors_from_entries(plan, info, &entries)
}

/// The tensors of every entry read from `--input-data` (or the one empty entry of generated
/// data), checked against the model. Pure: the fuzz target calls it with hostile entries.
#[doc(hidden)]
pub fn tensors_from_entries(
    plan: &PerfPlan,
    info: &ModelInfo,
    entries: &[HashMap<String, Value>],
) -> Result<Vec<Vec<Tensor>>, UsageError> {
    let mut rng = StdRng::seed_from_u64(plan.seed);
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        for key in entry.keys() {
            if info.input(key).is_none() {
                return Err(UsageError(format!(
                    "--input-data entry {i}: '{key}' is not an input of model '{}'; its inputs are: {}",
                    info.name,
                    info.describe_inputs()
                )));
            }
        }
        let mut request = Vec::new();
        for spec in &info.inputs {
            let tensor = match entry.get(&spec.name) {
                Some(v) => from_json(plan, info, spec, v, i)?,
                None if matches!(plan.data, DataSource::Files(_)) && spec.optional => continue,
                None if matches!(plan.data, DataSource::Files(_)) => {
                    // perf_analyzer's --request-parameter travels as a request parameter, which
                    // a model reading the value from an input tensor never sees.
                    let hint = if plan.request_parameters.iter().any(|(n, _)| n == &spec.name) {
                        format!(
                            " (--request-parameter {} is sent as a request parameter, not as this input: put \"{}\": [value] in each entry)",
                            spec.name, spec.name
                        )
                    } else {
                        format!(": add \"{}\" to each entry", spec.name)
                    };
                    return Err(UsageError(format!(
                        "--input-data entry {i}: input '{}' ({} {}) is missing and not optional{hint}",
                        spec.name,
                        spec.datatype.name(),
                        dims_text(&spec.dims)
                    )));
                }
                // An optional input whose shape is not known is left out rather than guessed.
                None if spec.optional && item_shape(plan, info, spec).is_err() => continue,
                None => generated(plan, info, spec, &mut rng)?,
            };
            request.push(tensor);
        }
        out.push(request);
    }
    Ok(out)
}

fn check_batch(plan: &PerfPlan, info: &ModelInfo) -> Result<(), UsageError> {
    if info.max_batch_size == 0 && plan.batch > 1 {
        return Err(UsageError(format!(
            "-b {}: model '{}' does not batch (max_batch_size 0); use -b 1",
            plan.batch, info.name
        )));
    }
    if info.max_batch_size > 0 && plan.batch > info.max_batch_size as u32 {
        return Err(UsageError(format!(
            "-b {}: larger than model '{}' allows (max_batch_size {})",
            plan.batch, info.name, info.max_batch_size
        )));
    }
    Ok(())
}

fn dims_text(d: &[i64]) -> String {
    format!(
        "[{}]",
        d.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
    )
}

/// The per-item shape of an input: `--shape` first, then the model's dims; variable dims must be
/// given.
fn item_shape(
    plan: &PerfPlan,
    info: &ModelInfo,
    spec: &TensorSpec,
) -> Result<Vec<i64>, UsageError> {
    if let Some((_, s)) = plan.shapes.iter().find(|(n, _)| *n == spec.name) {
        let fixed_ok =
            s.len() == spec.dims.len() && s.iter().zip(&spec.dims).all(|(g, d)| *d < 0 || g == d);
        if !spec.dims.is_empty() && !fixed_ok {
            return Err(UsageError(format!(
                "--shape {}:{}: model '{}' declares {} as {} {} (-1 = any); the given shape does not fit",
                spec.name,
                s.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
                info.name,
                spec.name,
                spec.datatype.name(),
                dims_text(&spec.dims)
            )));
        }
        return Ok(s.clone());
    }
    if spec.dims.iter().any(|d| *d < 0) {
        return Err(UsageError(format!(
            "input '{}' of model '{}' has variable dimensions {}: give its shape with --shape {}:{}",
            spec.name,
            info.name,
            dims_text(&spec.dims),
            spec.name,
            spec.dims
                .iter()
                .map(|d| if *d < 0 {
                    "N".to_string()
                } else {
                    d.to_string()
                })
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    Ok(spec.dims.clone())
}

fn elements(shape: &[i64]) -> usize {
    shape.iter().map(|d| (*d).max(0) as usize).product()
}

/// Random or zero values, generated once.
fn generated(
    plan: &PerfPlan,
    info: &ModelInfo,
    spec: &TensorSpec,
    rng: &mut StdRng,
) -> Result<Tensor, UsageError> {
    let item = item_shape(plan, info, spec)?;
    let n = elements(&item);
    let zero = plan.data == DataSource::Zero;
    let one: Vec<u8> = match spec.datatype {
        DataType::Bytes => {
            let strings: Vec<Vec<u8>> = (0..n)
                .map(|_| match &plan.string_data {
                    Some(s) => s.as_bytes().to_vec(),
                    None if zero => vec![b'0'; plan.string_length],
                    None => (0..plan.string_length)
                        .map(|_| b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.random_range(0..36)])
                        .collect(),
                })
                .collect();
            encode_bytes_elements(strings.iter().map(Vec::as_slice))
        }
        dt => {
            let size = dt.size().unwrap_or(1);
            let mut v = vec![0u8; n * size];
            if !zero {
                for chunk in v.chunks_mut(size) {
                    let x = match dt {
                        DataType::Bool => json!(rng.random_bool(0.5)),
                        DataType::F16 | DataType::Bf16 | DataType::F32 | DataType::F64 => {
                            json!(rng.random::<f64>())
                        }
                        // Small non-negative integers are valid for every integer type and for
                        // inputs such as token ids.
                        _ => json!(rng.random_range(0..100u32)),
                    };
                    let bytes = encode_scalar(dt, &x).map_err(|e| UsageError(e.to_string()))?;
                    chunk.copy_from_slice(&bytes);
                }
            }
            v
        }
    };
    Ok(batched(plan, info, spec, &item, one))
}

/// Replicates one item's contents along the batch dimension, when the model batches.
fn batched(
    plan: &PerfPlan,
    info: &ModelInfo,
    spec: &TensorSpec,
    item: &[i64],
    one: Vec<u8>,
) -> Tensor {
    let (shape, raw) = if info.max_batch_size > 0 {
        let batch = std::iter::once(i64::from(plan.batch));
        (
            batch.chain(item.iter().copied()).collect(),
            one.repeat(plan.batch as usize),
        )
    } else {
        (item.to_vec(), one)
    };
    Tensor {
        name: spec.name.clone(),
        datatype: spec.datatype,
        shape,
        raw,
    }
}

fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(items) => items.iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}

fn from_json(
    plan: &PerfPlan,
    info: &ModelInfo,
    spec: &TensorSpec,
    v: &Value,
    entry: usize,
) -> Result<Tensor, UsageError> {
    let at = format!("--input-data entry {entry}, input '{}'", spec.name);
    let (content, given_shape): (&Value, Option<Vec<i64>>) = match v {
        Value::Object(o) if o.contains_key("b64") => {
            let b64 = o
                .get("b64")
                .and_then(Value::as_str)
                .ok_or_else(|| UsageError(format!("{at}: \"b64\" must be a string")))?;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| UsageError(format!("{at}: invalid base64 ({e})")))?;
            let item = match o.get("shape") {
                Some(s) => shape_from_json(s, &at)?,
                None => item_shape(plan, info, spec)?,
            };
            if let Some(size) = spec.datatype.size()
                && raw.len() != elements(&item) * size
            {
                return Err(UsageError(format!(
                    "{at}: {} bytes of b64 data, expected {} for {} {}",
                    raw.len(),
                    elements(&item) * size,
                    spec.datatype.name(),
                    dims_text(&item)
                )));
            }
            return Ok(batched(plan, info, spec, &item, raw));
        }
        Value::Object(o) => {
            let c = o.get("content").ok_or_else(|| {
                UsageError(format!("{at}: an object needs \"content\" (or \"b64\")"))
            })?;
            (
                c,
                o.get("shape")
                    .map(|s| shape_from_json(s, &at))
                    .transpose()?,
            )
        }
        other => (other, None),
    };
    let mut flat = Vec::new();
    flatten(content, &mut flat);
    let item = match given_shape {
        Some(s) => s,
        None => match item_shape(plan, info, spec) {
            Ok(s) => s,
            // One variable dimension can be read off the number of values.
            Err(e) => {
                let fixed: i64 = spec.dims.iter().filter(|d| **d > 0).product();
                if spec.dims.iter().filter(|d| **d < 0).count() == 1
                    && fixed > 0
                    && flat.len() as i64 % fixed == 0
                {
                    spec.dims
                        .iter()
                        .map(|d| {
                            if *d < 0 {
                                flat.len() as i64 / fixed
                            } else {
                                *d
                            }
                        })
                        .collect()
                } else {
                    return Err(e);
                }
            }
        },
    };
    if flat.len() != elements(&item) {
        return Err(UsageError(format!(
            "{at}: {} values, expected {} for shape {} ({} declares {})",
            flat.len(),
            elements(&item),
            dims_text(&item),
            info.name,
            dims_text(&spec.dims)
        )));
    }
    let raw = if spec.datatype == DataType::Bytes {
        let strings: Vec<String> = flat
            .iter()
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
            .collect();
        encode_bytes_elements(strings.iter().map(|s| s.as_bytes()))
    } else {
        let mut raw = Vec::with_capacity(flat.len() * spec.datatype.size().unwrap_or(1));
        for x in flat {
            raw.extend(encode_scalar(spec.datatype, x).map_err(|e| {
                UsageError(format!(
                    "{at}: expected {} values: {e}",
                    spec.datatype.name()
                ))
            })?);
        }
        raw
    };
    Ok(batched(plan, info, spec, &item, raw))
}

fn shape_from_json(v: &Value, at: &str) -> Result<Vec<i64>, UsageError> {
    v.as_array()
        .and_then(|a| {
            a.iter()
                .map(|d| d.as_i64().filter(|x| *x > 0))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| {
            UsageError(format!(
                "{at}: \"shape\" must be a list of positive integers"
            ))
        })
}

/// Reads a perf_analyzer input-data file (or JSON lines of entries).
pub fn read_data_file(path: &Path) -> Result<Vec<HashMap<String, Value>>, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("--input-data {}: {e}", path.display())))?;
    parse_data_text(&text, path)
}

/// Parses the text of an input-data file named `path` (pure: the fuzz target's entry point).
#[doc(hidden)]
pub fn parse_data_text(text: &str, path: &Path) -> Result<Vec<HashMap<String, Value>>, UsageError> {
    let entry = |v: Value, where_: &str| -> Result<HashMap<String, Value>, UsageError> {
        match v {
            Value::Object(mut o) => {
                o.remove("model");
                Ok(o.into_iter().collect())
            }
            Value::Array(_) => Err(UsageError(format!(
                "--input-data {} {where_}: sequence (stream) entries are not supported; give one object of input tensors per entry",
                path.display()
            ))),
            _ => Err(UsageError(format!(
                "--input-data {} {where_}: expected an object of input tensors",
                path.display()
            ))),
        }
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) if o.contains_key("data") => {
            let data = o.get("data").and_then(Value::as_array).ok_or_else(|| {
                UsageError(format!("--input-data {}: \"data\" must be a list of entries", path.display()))
            })?;
            data.iter().enumerate().map(|(i, v)| entry(v.clone(), &format!("entry {i}"))).collect()
        }
        Ok(Value::Object(o)) => Ok(vec![entry(Value::Object(o), "")?]),
        Ok(_) => Err(UsageError(format!(
            "--input-data {}: expected {{\"data\": [{{\"INPUT\": [...]}}, ...]}} (perf_analyzer's input-data format)",
            path.display()
        ))),
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let v: Value = serde_json::from_str(l).map_err(|e| {
                    UsageError(format!(
                        "--input-data {} line {}: not JSON ({e}); expected perf_analyzer's {{\"data\": [...]}} format or one JSON object per line",
                        path.display(),
                        i + 1
                    ))
                })?;
                entry(v, &format!("line {}", i + 1))
            })
            .collect(),
    }
}

fn param(v: &ParamValue) -> InferParameter {
    let choice = match v {
        ParamValue::Bool(b) => ParameterChoice::BoolParam(*b),
        ParamValue::Int(i) => ParameterChoice::Int64Param(*i),
        ParamValue::Double(d) => ParameterChoice::DoubleParam(*d),
        ParamValue::Str(s) => ParameterChoice::StringParam(s.clone()),
    };
    InferParameter {
        parameter_choice: Some(choice),
    }
}

/// Encodes one request for gRPC (without `id`, appended per send).
pub fn grpc_request(plan: &PerfPlan, info: &ModelInfo, tensors: &[Tensor]) -> Vec<u8> {
    let mut parameters: HashMap<String, InferParameter> = plan
        .request_parameters
        .iter()
        .map(|(k, v)| (k.clone(), param(v)))
        .collect();
    // Every request to a decoupled model, streamed or not: backends may end a request with a
    // flags-only FINAL (PyTriton always does, TensorRT-LLM ensembles when a step is still in
    // flight), which Triton forwards only when asked; without it such a request never ends.
    if plan.target.streaming || info.decoupled {
        parameters.insert(
            "triton_enable_empty_final_response".into(),
            InferParameter {
                parameter_choice: Some(ParameterChoice::BoolParam(true)),
            },
        );
    }
    ModelInferRequest {
        model_name: info.name.clone(),
        model_version: plan.model_version.clone(),
        id: String::new(),
        parameters,
        inputs: tensors
            .iter()
            .map(|t| InferInputTensor {
                name: t.name.clone(),
                datatype: t.datatype.name().into(),
                shape: t.shape.clone(),
                ..Default::default()
            })
            .collect(),
        outputs: Vec::<InferRequestedOutputTensor>::new(),
        raw_input_contents: tensors.iter().map(|t| t.raw.clone()).collect(),
    }
    .encode_to_vec()
}

/// Encodes one request for HTTP: binary tensor extension (JSON header + raw blobs, returning the
/// header length for `Inference-Header-Content-Length`) or all-JSON.
pub fn http_request(
    plan: &PerfPlan,
    info: &ModelInfo,
    tensors: &[Tensor],
) -> (Vec<u8>, Option<usize>) {
    let params: serde_json::Map<String, Value> = plan
        .request_parameters
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
        .collect();
    let outputs: Vec<Value> = info
        .outputs
        .iter()
        .map(|o| json!({"name": o.name, "parameters": {"binary_data": plan.binary_outputs}}))
        .collect();
    let inputs: Vec<Value> = tensors
        .iter()
        .map(|t| {
            let mut input =
                json!({"name": t.name, "shape": t.shape, "datatype": t.datatype.name()});
            if plan.binary_inputs {
                input["parameters"] = json!({"binary_data_size": t.raw.len()});
            } else {
                input["data"] = Value::Array(json_values(t));
            }
            input
        })
        .collect();
    let mut header = json!({"inputs": inputs, "outputs": outputs});
    if !params.is_empty() {
        header["parameters"] = Value::Object(params);
    }
    let mut body = serde_json::to_vec(&header).unwrap_or_default();
    if !plan.binary_inputs {
        return (body, None);
    }
    let header_len = body.len();
    for t in tensors {
        body.extend_from_slice(&t.raw);
    }
    (body, Some(header_len))
}

/// A tensor's values as a flat JSON list (for the all-JSON HTTP encoding).
fn json_values(t: &Tensor) -> Vec<Value> {
    let r = &t.raw;
    match t.datatype {
        DataType::Bytes => bytes_elements(r)
            .map(|e| json!(String::from_utf8_lossy(e)))
            .collect(),
        // Half-precision values travel as their float value.
        dt => r
            .chunks_exact(dt.size().unwrap_or(1))
            .map(|c| element_value(dt, c))
            .collect(),
    }
}

/// Triton refuses FP16 and BF16 tensors as JSON both ways ("receiving FP16 data via JSON is not
/// supported. Please use the binary data format for input X"; outputs: "sending FP16 data via
/// JSON is not supported"), so every request of such a run would fail: say so before it starts.
pub fn check_json_datatypes(
    plan: &PerfPlan,
    info: &ModelInfo,
    protocol: Protocol,
) -> Result<(), UsageError> {
    if protocol != Protocol::Http {
        return Ok(());
    }
    let half = |t: &&TensorSpec| matches!(t.datatype, DataType::F16 | DataType::Bf16);
    let checks = [
        (
            !plan.binary_inputs,
            &info.inputs,
            "input",
            "--input-tensor-format",
            "receiving",
        ),
        (
            !plan.binary_outputs,
            &info.outputs,
            "output",
            "--output-tensor-format",
            "sending",
        ),
    ];
    for (json, tensors, what, flag, verb) in checks {
        if let Some(t) = tensors.iter().find(half).filter(|_| json) {
            return Err(UsageError(format!(
                "{flag} json: {what} '{}' of model '{}' is {}, and Triton does not support {verb} {} data via JSON; use {flag} binary (the default) or -i grpc",
                t.name,
                info.name,
                t.datatype.name(),
                t.datatype.name()
            )));
        }
    }
    Ok(())
}

/// The run's dataset: one prepared payload per data entry.
pub fn dataset(
    plan: &PerfPlan,
    info: &ModelInfo,
    protocol: Protocol,
) -> Result<Dataset, UsageError> {
    check_json_datatypes(plan, info, protocol)?;
    let all = tensors(plan, info)?;
    let entries = all
        .iter()
        .map(|t| {
            let payload = match protocol {
                Protocol::Grpc => Payload::Grpc(Bytes::from(grpc_request(plan, info, t))),
                Protocol::Http => {
                    let (body, header_len) = http_request(plan, info, t);
                    Payload::HttpInfer {
                        body: Bytes::from(body),
                        header_len,
                    }
                }
            };
            Entry {
                sent: crate::record::Sent::default(),
                payload,
                isl: 0,
                max_tokens: 0,
            }
        })
        .collect();
    Ok(Dataset::new(entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `perf -m m` and these flags (one string, its words split at spaces).
    fn plan(flags: &str) -> PerfPlan {
        let line = format!("-m m {flags}");
        crate::cli::perf::plan_of(&line.split_whitespace().collect::<Vec<_>>()).unwrap()
    }

    fn spec(name: &str, dt: DataType, dims: &[i64]) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            datatype: dt,
            dims: dims.to_vec(),
            optional: false,
        }
    }

    fn model(max_batch: i32, inputs: Vec<TensorSpec>) -> ModelInfo {
        ModelInfo {
            name: "m".into(),
            platform: String::new(),
            backend: String::new(),
            max_batch_size: max_batch,
            decoupled: false,
            inputs,
            outputs: vec![spec("out", DataType::F32, &[2])],
        }
    }

    #[test]
    fn random_image_input_with_batch() {
        let m = model(8, vec![spec("images", DataType::F32, &[3, 4, 4])]);
        let t = tensors(&plan("-b 4"), &m).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0][0].shape, [4, 3, 4, 4]);
        assert_eq!(t[0][0].raw.len(), 4 * 3 * 4 * 4 * 4);
        // Every batch item repeats the first.
        let item = 3 * 4 * 4 * 4;
        assert_eq!(t[0][0].raw[..item], t[0][0].raw[item..2 * item]);
        assert!(t[0][0].raw.iter().any(|b| *b != 0));
        let z = tensors(&plan("--input-data zero"), &m).unwrap();
        assert!(z[0][0].raw.iter().all(|b| *b == 0));
    }

    #[test]
    fn variable_dims_need_shape() {
        let m = model(8, vec![spec("input_ids", DataType::I64, &[-1])]);
        let e = tensors(&plan(""), &m).unwrap_err().0;
        assert!(e.contains("--shape input_ids:N"), "{e}");
        let t = tensors(&plan("--shape input_ids:16"), &m).unwrap();
        assert_eq!(t[0][0].shape, [1, 16]);
        assert_eq!(t[0][0].raw.len(), 16 * 8);
        let e = tensors(&plan("--shape bogus:3"), &m).unwrap_err().0;
        assert!(
            e.contains("no input 'bogus'") && e.contains("input_ids (INT64 [-1])"),
            "{e}"
        );
    }

    #[test]
    fn batch_limits() {
        let m = model(8, vec![spec("x", DataType::F32, &[1])]);
        let m0 = model(0, vec![spec("x", DataType::F32, &[1])]);
        for (m, b, says) in [(&m, 16, "max_batch_size 8"), (&m0, 2, "does not batch")] {
            let e = tensors(&plan(&format!("-b {b}")), m).unwrap_err().0;
            assert!(e.contains(says), "{e}");
        }
        assert_eq!(tensors(&plan(""), &m0).unwrap()[0][0].shape, [1]);
    }

    #[test]
    fn missing_input_names_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("prompts.json");
        std::fs::write(&f, "{\"text_input\": [\"hi\"]}\n").unwrap();
        let f = format!("--input-data {}", f.to_str().unwrap());
        let m = model(
            0,
            vec![
                spec("text_input", DataType::Bytes, &[1]),
                spec("max_tokens", DataType::I32, &[1]),
            ],
        );
        let e = tensors(&plan(&f), &m).unwrap_err().0;
        assert!(
            e.ends_with("is missing and not optional: add \"max_tokens\" to each entry"),
            "{e}"
        );
        let p = plan(&format!("{f} --request-parameter max_tokens:256"));
        let e = tensors(&p, &m).unwrap_err().0;
        assert!(
            e.contains("--request-parameter max_tokens is sent as a request parameter"),
            "{e}"
        );
    }

    #[test]
    fn json_input_data_forms() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("in.json");
        let raw = base64::engine::general_purpose::STANDARD.encode(7i64.to_le_bytes().repeat(2));
        let m = model(
            0,
            vec![
                spec("ids", DataType::I64, &[-1]),
                spec("text", DataType::Bytes, &[1]),
            ],
        );
        let with = |text: &str| {
            std::fs::write(&f, text).unwrap();
            tensors(&plan(&format!("--input-data {}", f.to_str().unwrap())), &m)
        };
        let t = with(&format!(
            r#"{{"data": [{{"ids": [1, 2, 3], "text": ["hi"]}}, {{"ids": {{"content": [[4], [5]], "shape": [2]}}, "text": ["x"]}}, {{"ids": {{"b64": "{raw}", "shape": [2]}}, "text": ["y"]}}]}}"#
        ))
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0][0].shape, [3]);
        assert_eq!(t[0][0].raw, [1i64, 2, 3].map(i64::to_le_bytes).concat());
        assert_eq!(t[0][1].raw, [2, 0, 0, 0, b'h', b'i']);
        assert_eq!(t[1][0].shape, [2]);
        assert_eq!(t[2][0].raw, 7i64.to_le_bytes().repeat(2));
        // Wrong names, counts and types say what was expected.
        for (text, says) in [
            (r#"{"data": [{"idz": [1]}]}"#, "'idz' is not an input"),
            (
                r#"{"data": [{"ids": {"content": [1, 2, 3], "shape": [2]}, "text": ["a"]}]}"#,
                "3 values, expected 2",
            ),
            (
                r#"{"data": [{"ids": ["a"], "text": ["a"]}]}"#,
                "expected INT64",
            ),
        ] {
            let e = with(text).unwrap_err().0;
            assert!(e.contains(says), "{e}");
        }
        let lines = "{\"ids\": [1], \"text\": [\"a\"]}\n{\"ids\": [2, 3], \"text\": [\"b\"]}\n";
        assert_eq!(with(lines).unwrap().len(), 2, "JSON lines");
    }

    #[test]
    fn encodings() {
        let m = model(8, vec![spec("x", DataType::I32, &[2])]);
        let p = plan("--request-parameter max_tokens:256 --input-data zero");
        let t = tensors(&p, &m).unwrap();
        let req = ModelInferRequest::decode(grpc_request(&p, &m, &t[0]).as_slice()).unwrap();
        assert_eq!(req.inputs[0].shape, [1, 2]);
        assert_eq!(req.raw_input_contents[0], [0; 8]);
        assert_eq!(
            req.parameters["max_tokens"].parameter_choice,
            Some(ParameterChoice::Int64Param(256))
        );
        let (body, header_len) = http_request(&p, &m, &t[0]);
        let header_len = header_len.unwrap();
        let header: Value = serde_json::from_slice(&body[..header_len]).unwrap();
        assert_eq!(header["inputs"][0]["parameters"]["binary_data_size"], 8);
        assert_eq!(header["outputs"][0]["parameters"]["binary_data"], true);
        assert_eq!(header["parameters"]["max_tokens"], 256);
        assert_eq!(&body[header_len..], [0; 8]);
        let pj = plan("--input-tensor-format json --output-tensor-format json --input-data zero");
        let (body, none) = http_request(&pj, &m, &t[0]);
        assert!(none.is_none());
        let doc: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc["inputs"][0]["data"], json!([0, 0]));
        assert_eq!(doc["outputs"][0]["parameters"]["binary_data"], false);
    }

    /// Found against real Triton 2.51: `{"datatype": "FP16", "data": [...]}` answers 400
    /// "receiving FP16 data via JSON is not supported. Please use the binary data format for
    /// input input_ids" (BF16 likewise), and FP16 outputs cannot be sent as JSON either.
    #[test]
    fn half_precision_needs_binary_tensors_over_http() {
        let mut m = model(8, vec![spec("x", DataType::F16, &[2])]);
        let json_in = plan("-i http --input-tensor-format json");
        let e = check_json_datatypes(&json_in, &m, Protocol::Http)
            .unwrap_err()
            .0;
        assert!(
            e.contains("input 'x' of model 'm' is FP16")
                && e.contains("--input-tensor-format binary"),
            "{e}"
        );
        assert!(check_json_datatypes(&json_in, &m, Protocol::Grpc).is_ok());
        assert!(check_json_datatypes(&plan("-i http"), &m, Protocol::Http).is_ok());
        m.inputs[0].datatype = DataType::F32;
        assert!(check_json_datatypes(&json_in, &m, Protocol::Http).is_ok());
        m.outputs[0].datatype = DataType::Bf16;
        let json_out = plan("-i http --output-tensor-format json");
        let e = check_json_datatypes(&json_out, &m, Protocol::Http)
            .unwrap_err()
            .0;
        assert!(e.contains("output 'out' of model 'm' is BF16"), "{e}");
    }

    /// Found against real Triton (PyTriton): a decoupled model profiled without `--streaming`
    /// answered, then ended with a flags-only FINAL that Triton only forwards when the request
    /// asks for empty final responses, so every request waited until its timeout.
    #[test]
    fn decoupled_models_always_ask_for_the_empty_final_response() {
        let flag = |streaming: bool, decoupled: bool| {
            let mut m = model(8, vec![spec("x", DataType::I32, &[1])]);
            m.decoupled = decoupled;
            let p = plan(if streaming {
                "--streaming --input-data zero"
            } else {
                "--input-data zero"
            });
            let t = tensors(&p, &m).unwrap();
            let req = ModelInferRequest::decode(grpc_request(&p, &m, &t[0]).as_slice()).unwrap();
            req.parameters
                .get("triton_enable_empty_final_response")
                .map(|v| v.parameter_choice.clone())
        };
        let on = Some(Some(ParameterChoice::BoolParam(true)));
        assert_eq!(flag(true, true), on);
        assert_eq!(flag(false, true), on, "decoupled without --streaming");
        assert_eq!(flag(false, false), None, "not decoupled: a unary call");
    }
}
