//! LLM requests for Triton's KServe v2 gRPC API, shaped by the model's own metadata and config:
//! input names, datatypes and the batch dimension come from the server, never assumed.
//!
//! Layouts (`--backend`):
//! * `tensorrtllm`: `text_input` (BYTES), `max_tokens` (its declared integer type; 256 when no
//!   `--output-tokens-mean`), `stream` (BOOL) when declared, `exclude_input_in_output = true`
//!   when declared, and for `--output-tokens-mean-deterministic` `min_tokens` (newer ensembles)
//!   or `min_length` (older ones).
//! * `vllm`: `text_input`, `stream`, `exclude_input_in_output` when declared, and
//!   `sampling_parameters`, a JSON string whose values are strings as GenAI-Perf sends them:
//!   `{"max_tokens": "N"}` plus `"min_tokens": "N"` and `"ignore_eos": "true"` when deterministic.
//!
//! Every request that goes over `ModelStreamInfer` (streaming, or any request to a decoupled
//! model) carries the parameter `triton_enable_empty_final_response = true`, as perf_analyzer
//! sets it, so the end of a response is always signalled: a decoupled model may end a request
//! with a flags-only FINAL after its last data response (PyTriton always does, even for one
//! non-streamed response), and Triton forwards that to the client only with this parameter.

use std::collections::HashMap;

use prost::Message;
use serde_json::{Value, json};

use super::tensor::{DataType, ModelInfo, encode_scalar};
use crate::error::UsageError;
use crate::proto::model_infer_request::InferInputTensor;
use crate::proto::{InferParameter, ModelInferRequest, infer_parameter::ParameterChoice};
use crate::target::Backend;

/// Default `max_tokens` for TensorRT-LLM when the user gives no output length (GenAI-Perf's).
pub const DEFAULT_TRTLLM_MAX_TOKENS: u32 = 256;

/// What one LLM request asks for.
#[derive(Debug, Clone)]
pub struct LlmAsk<'a> {
    /// Prompt text.
    pub text: &'a str,
    /// Output tokens to ask for, when the user chose.
    pub max_tokens: Option<u32>,
    /// Ask for exactly `max_tokens`.
    pub deterministic: bool,
    /// Stream tokens.
    pub streaming: bool,
    /// `--extra-inputs`.
    pub extra: &'a [(String, Value)],
}

/// Checks that the model's inputs fit the layout, before any request is built.
pub fn check_layout(info: &ModelInfo, backend: Backend) -> Result<(), UsageError> {
    let needed: &[&str] = match backend {
        Backend::Tensorrtllm => &["text_input", "max_tokens"],
        Backend::Vllm => &["text_input"],
    };
    let absent = |n: &&str| info.input(n).is_none();
    let missing: Vec<&str> = needed.iter().copied().filter(absent).collect();
    if !missing.is_empty() {
        let other = match backend {
            Backend::Tensorrtllm if info.input("sampling_parameters").is_some() => {
                " It looks like the vLLM layout: try --backend vllm."
            }
            Backend::Vllm if info.input("max_tokens").is_some() => {
                " It looks like the TensorRT-LLM layout: try --backend tensorrtllm."
            }
            _ => "",
        };
        return Err(UsageError(format!(
            "model '{}' does not have the {} input layout: it lacks {}. Its inputs are: {}.{other}",
            info.name,
            backend.name(),
            missing.join(", "),
            info.describe_inputs()
        )));
    }
    if let Some(t) = info.input("text_input")
        && t.datatype != DataType::Bytes
    {
        return Err(UsageError(format!(
            "model '{}': input text_input is {}, expected BYTES (TYPE_STRING)",
            info.name,
            t.datatype.name()
        )));
    }
    Ok(())
}

/// Builds the request (without `id`, which each send appends) and returns it encoded, with the
/// number of output tokens asked for.
pub fn build_request(
    info: &ModelInfo,
    backend: Backend,
    ask: &LlmAsk<'_>,
) -> Result<(Vec<u8>, u32), UsageError> {
    let mut b = Tensors::default();
    b.push(info, "text_input", &json!(ask.text))?;
    let asked = match backend {
        Backend::Tensorrtllm => {
            let n = ask.max_tokens.unwrap_or(DEFAULT_TRTLLM_MAX_TOKENS);
            b.push(info, "max_tokens", &json!(n))?;
            if ask.deterministic {
                let newer_first = ["min_tokens", "min_length"];
                let Some(name) = newer_first.into_iter().find(|n| info.input(n).is_some()) else {
                    return Err(UsageError(format!(
                        "--output-tokens-mean-deterministic needs a min_tokens (or min_length) input, and model '{}' has neither; its inputs are: {}",
                        info.name,
                        info.describe_inputs()
                    )));
                };
                b.push(info, name, &json!(n))?;
            }
            n
        }
        Backend::Vllm => {
            let n = ask.max_tokens;
            let sp = match (n.map(|n| n.to_string()), ask.deterministic) {
                (Some(n), true) => json!({"max_tokens": n, "min_tokens": n, "ignore_eos": "true"}),
                (Some(n), false) => json!({"max_tokens": n}),
                (None, _) => json!({}),
            };
            if info.input("sampling_parameters").is_some() {
                b.push(info, "sampling_parameters", &json!(sp.to_string()))?;
            } else if n.is_some() {
                return Err(UsageError(format!(
                    "--output-tokens-mean needs the sampling_parameters input of the vLLM layout, and model '{}' lacks it; its inputs are: {}",
                    info.name,
                    info.describe_inputs()
                )));
            }
            n.unwrap_or(0)
        }
    };
    if info.input("stream").is_some() {
        b.push(info, "stream", &json!(ask.streaming))?;
    }
    if info.input("exclude_input_in_output").is_some() {
        b.push(info, "exclude_input_in_output", &json!(true))?;
    }
    for (name, value) in ask.extra {
        // A user value replaces the layout's default for the same input.
        b.remove(name);
        b.push(info, name, value)?;
    }
    let mut parameters = HashMap::new();
    if ask.streaming || info.decoupled {
        parameters.insert(
            "triton_enable_empty_final_response".to_string(),
            InferParameter {
                parameter_choice: Some(ParameterChoice::BoolParam(true)),
            },
        );
    }
    let req = ModelInferRequest {
        model_name: info.name.clone(),
        parameters,
        inputs: b.inputs,
        raw_input_contents: b.raw,
        ..Default::default()
    };
    Ok((req.encode_to_vec(), asked))
}

/// Input tensors and their raw contents, kept in step.
#[derive(Default)]
struct Tensors {
    inputs: Vec<InferInputTensor>,
    raw: Vec<Vec<u8>>,
}

impl Tensors {
    /// One scalar input, encoded in the datatype the model declares.
    fn push(&mut self, info: &ModelInfo, name: &str, value: &Value) -> Result<(), UsageError> {
        let spec = info.input(name).ok_or_else(|| {
            UsageError(format!(
                "model '{}' has no input '{name}'; its inputs are: {}",
                info.name,
                info.describe_inputs()
            ))
        })?;
        let bytes = encode_scalar(spec.datatype, value).map_err(|e| {
            UsageError(format!(
                "input '{name}' of model '{}' is {}: {e}",
                info.name,
                spec.datatype.name()
            ))
        })?;
        self.inputs.push(InferInputTensor {
            name: name.to_string(),
            datatype: spec.datatype.name().to_string(),
            shape: info.request_shape(spec, 1, 1),
            ..Default::default()
        });
        self.raw.push(bytes);
        Ok(())
    }

    fn remove(&mut self, name: &str) {
        if let Some(i) = self.inputs.iter().position(|t| t.name == name) {
            self.inputs.remove(i);
            self.raw.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tensor::TensorSpec;

    fn spec(name: &str, dt: DataType, optional: bool) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            datatype: dt,
            dims: vec![1],
            optional,
        }
    }

    fn model(name: &str, backend: &str, max_batch_size: i32, inputs: Vec<TensorSpec>) -> ModelInfo {
        ModelInfo {
            name: name.into(),
            platform: if backend.is_empty() { "ensemble" } else { "" }.into(),
            backend: backend.into(),
            max_batch_size,
            decoupled: true,
            inputs,
            outputs: vec![spec("text_output", DataType::Bytes, false)],
        }
    }

    fn trtllm() -> ModelInfo {
        let inputs = vec![
            spec("text_input", DataType::Bytes, false),
            spec("max_tokens", DataType::I32, false),
            spec("stream", DataType::Bool, true),
            spec("exclude_input_in_output", DataType::Bool, true),
            spec("min_tokens", DataType::I32, true),
            spec("temperature", DataType::F32, true),
        ];
        model("gpt2", "", 64, inputs)
    }

    fn vllm() -> ModelInfo {
        let inputs = vec![
            spec("text_input", DataType::Bytes, false),
            spec("stream", DataType::Bool, true),
            spec("sampling_parameters", DataType::Bytes, true),
            spec("exclude_input_in_output", DataType::Bool, true),
        ];
        model("vllm_model", "vllm", 0, inputs)
    }

    /// An ask for `text`; `exact` asks for exactly `max_tokens` and streams.
    fn ask<'a>(
        text: &'a str,
        max_tokens: Option<u32>,
        exact: bool,
        extra: &'a [(String, Value)],
    ) -> LlmAsk<'a> {
        LlmAsk {
            text,
            max_tokens,
            deterministic: exact,
            streaming: exact,
            extra,
        }
    }

    const EMPTY_FINAL: &str = "triton_enable_empty_final_response";

    /// The request built for `ask`, decoded, and the output tokens asked for.
    fn request(m: &ModelInfo, backend: Backend, ask: &LlmAsk) -> (ModelInferRequest, u32) {
        let (bytes, asked) = build_request(m, backend, ask).unwrap();
        (ModelInferRequest::decode(bytes.as_slice()).unwrap(), asked)
    }

    /// The raw contents of input `name`.
    fn raw<'a>(req: &'a ModelInferRequest, name: &str) -> &'a [u8] {
        let i = req.inputs.iter().position(|t| t.name == name).unwrap();
        &req.raw_input_contents[i]
    }

    #[test]
    fn trtllm_request_tensors() {
        let extra = vec![("temperature".to_string(), json!(0.5))];
        let ask = ask("Hi", Some(100), true, &extra);
        let (req, asked) = request(&trtllm(), Backend::Tensorrtllm, &ask);
        assert_eq!(asked, 100);
        let names: Vec<&str> = req.inputs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "text_input",
                "max_tokens",
                "min_tokens",
                "stream",
                "exclude_input_in_output",
                "temperature"
            ]
        );
        assert!(req.inputs.iter().all(|t| t.shape == [1, 1]));
        assert_eq!(req.raw_input_contents[0], [2, 0, 0, 0, b'H', b'i']);
        assert_eq!(req.raw_input_contents[1], 100i32.to_le_bytes());
        assert_eq!(req.raw_input_contents[3], [1]);
        assert_eq!(req.raw_input_contents[5], 0.5f32.to_le_bytes());
        assert!(req.parameters.contains_key(EMPTY_FINAL));
        assert_eq!(req.inputs[1].datatype, "INT32");
    }

    #[test]
    fn trtllm_defaults_to_256_tokens_and_older_min_length() {
        let mut m = trtllm();
        m.inputs.retain(|t| t.name != "min_tokens");
        m.inputs.push(spec("min_length", DataType::U32, true));
        let ask = ask("x", None, false, &[]);
        let (req, asked) = request(&m, Backend::Tensorrtllm, &ask);
        assert_eq!(asked, 256);
        // Not streamed, but the model is decoupled: its end may be a flags-only FINAL.
        assert!(req.parameters.contains_key(EMPTY_FINAL));
        m.decoupled = false;
        let (req, _) = request(&m, Backend::Tensorrtllm, &ask);
        assert!(req.parameters.is_empty(), "ModelInfer to a plain model");
        m.decoupled = true;
        let ask = LlmAsk {
            max_tokens: Some(7),
            deterministic: true,
            ..ask
        };
        let (req, _) = request(&m, Backend::Tensorrtllm, &ask);
        assert_eq!(raw(&req, "min_length"), 7u32.to_le_bytes());
    }

    #[test]
    fn vllm_sampling_parameters_are_strings() {
        let ask = ask("x", Some(64), true, &[]);
        let (req, asked) = request(&vllm(), Backend::Vllm, &ask);
        assert_eq!(asked, 64);
        let blob = raw(&req, "sampling_parameters");
        let json: Value = serde_json::from_slice(&blob[4..]).unwrap();
        assert_eq!(
            json,
            json!({"max_tokens": "64", "min_tokens": "64", "ignore_eos": "true"})
        );
        assert!(
            req.inputs.iter().all(|t| t.shape == [1]),
            "no batch dimension when max_batch_size is 0"
        );
    }

    #[test]
    fn layout_mismatch_names_the_inputs() {
        let e = check_layout(&vllm(), Backend::Tensorrtllm).unwrap_err().0;
        assert!(e.contains("lacks max_tokens"), "{e}");
        assert!(
            e.contains("sampling_parameters (BYTES [1], optional)"),
            "{e}"
        );
        assert!(e.contains("try --backend vllm"), "{e}");
        assert!(check_layout(&trtllm(), Backend::Tensorrtllm).is_ok());
        let extra = vec![("nonexistent".to_string(), json!(1))];
        let ask = ask("x", None, false, &extra);
        let e = build_request(&trtllm(), Backend::Tensorrtllm, &ask)
            .unwrap_err()
            .0;
        assert!(e.contains("has no input 'nonexistent'"), "{e}");
        let bad = vec![("max_tokens".to_string(), json!("lots"))];
        let ask = LlmAsk { extra: &bad, ..ask };
        let e = build_request(&trtllm(), Backend::Tensorrtllm, &ask)
            .unwrap_err()
            .0;
        assert!(e.contains("is INT32"), "{e}");
    }
}
