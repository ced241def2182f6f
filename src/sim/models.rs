//! The model table: which models the simulator hosts, and how each one describes itself
//! (KServe model metadata, Triton model configuration) over HTTP and gRPC.
//!
//! The table is data (`Vec<ModelSpec>` in [`super::SimConfig`]), so new kinds of models are
//! added by describing them, not by new routes. The defaults ([`ModelSpec::defaults`]) are the
//! two LLM layouts GenAI-Perf targets on Triton (`gpt2` as a TensorRT-LLM ensemble, `vllm_model`
//! as a vLLM backend model), a non-decoupled TensorRT-LLM model (`gpt2_nostream`), and the tensor
//! models of perf_analyzer's usual examples: `yolov8s`, `bert_classifier` (and
//! `text_classifier`, its dynamic-length twin), `resnet_fp16` and `resnet_int8`. Tensor models run through the dynamic batcher (`super::batcher`) with the
//! timing of [`TensorTiming`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::engine_config::EngineConfig;
use crate::proto;

/// Element type of a tensor, in the KServe/Triton vocabulary: the client's own, so both ends
/// name datatypes from one declaration.
pub use crate::workload::tensor::DataType;

/// One input or output of a model, as its configuration declares it (without the batch dim).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorSpec {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub datatype: DataType,
    /// Dimensions without the batch dimension; -1 = variable.
    pub dims: Vec<i64>,
    /// Inputs only: the request may leave it out.
    #[serde(default)]
    pub optional: bool,
}

impl TensorSpec {
    /// A required tensor.
    pub fn new(name: &str, datatype: DataType, dims: &[i64]) -> Self {
        TensorSpec {
            name: name.to_owned(),
            datatype,
            dims: dims.to_vec(),
            optional: false,
        }
    }

    /// An optional input.
    pub fn optional(name: &str, datatype: DataType, dims: &[i64]) -> Self {
        TensorSpec {
            optional: true,
            ..TensorSpec::new(name, datatype, dims)
        }
    }
}

/// How the request of an LLM model is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmLayout {
    /// TensorRT-LLM ensemble: `max_tokens` tensor; the last token may be followed by an empty
    /// final response when the request asks for it (`triton_enable_empty_final_response`).
    #[serde(rename = "tensorrtllm")]
    TensorRtLlm,
    /// vLLM backend: limits inside the `sampling_parameters` JSON string; the last token always
    /// carries the final flag.
    Vllm,
}

/// What a model computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Text generation through the simulated engine.
    Llm(LlmLayout),
    /// Plain tensors in, tensors out (image model, classifier): validated like Triton, batched
    /// by the dynamic batcher, answered with deterministic (all-zero) outputs.
    Tensor,
}

/// Triton's `dynamic_batching` block, for tensor models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicBatching {
    /// Batch sizes the scheduler prefers to form.
    pub preferred_batch_size: Vec<i32>,
    /// How long the scheduler may hold a request to form a batch, in microseconds.
    pub max_queue_delay_us: u64,
}

/// Compute timing of a tensor model: one execution of a batch of `b` elements takes
/// `input_us_per_item × b` (compute_input: copying inputs to the device), then
/// `base_us + per_item_us × b` (compute_infer: the model itself), then `output_us_per_item × b`
/// (compute_output: copying outputs back). All times in microseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TensorTiming {
    /// Fixed cost of one execution (kernel launches, framework overhead).
    pub base_us: u64,
    /// Model cost per batch element.
    pub per_item_us: u64,
    /// Input copy cost per batch element.
    pub input_us_per_item: u64,
    /// Output copy cost per batch element.
    pub output_us_per_item: u64,
    /// Model instances executing batches in parallel (Triton's `instance_group.count`).
    pub instance_count: u32,
}

impl Default for TensorTiming {
    /// A GPU image model in the 5 ms class: 2000 + 500 × batch µs of compute, 50 µs per element
    /// of input copy and 10 µs per element of output copy, one instance.
    fn default() -> Self {
        TensorTiming::new([2000, 500, 50, 10], 1)
    }
}

impl TensorTiming {
    /// `[base_us, per_item_us, input_us_per_item, output_us_per_item]` on `instance_count`
    /// instances.
    pub const fn new(us: [u64; 4], instance_count: u32) -> Self {
        let [base_us, per_item_us, input_us_per_item, output_us_per_item] = us;
        TensorTiming {
            base_us,
            per_item_us,
            input_us_per_item,
            output_us_per_item,
            instance_count,
        }
    }

    /// Durations of the compute_input, compute_infer and compute_output phases of one execution
    /// of `batch` elements, in microseconds.
    pub fn phases_us(&self, batch: u32) -> (u64, u64, u64) {
        let b = u64::from(batch);
        (
            self.input_us_per_item.saturating_mul(b),
            self.base_us
                .saturating_add(self.per_item_us.saturating_mul(b)),
            self.output_us_per_item.saturating_mul(b),
        )
    }

    /// Total duration of one execution of `batch` elements, in microseconds.
    pub fn execution_us(&self, batch: u32) -> u64 {
        let (i, c, o) = self.phases_us(batch);
        i.saturating_add(c).saturating_add(o)
    }

    /// Checks the timing can run.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.instance_count == 0 {
            anyhow::bail!("tensor timing instance_count must be at least 1");
        }
        Ok(())
    }
}

/// Which field of an OpenAI chat completion carries a reasoning model's reasoning text; its
/// name in the simulator's model files and the JSON key it sends are its snake_case name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum ReasoningField {
    /// `reasoning_content`: DeepSeek's API and SGLang, and vLLM until it renamed the field.
    ReasoningContent,
    /// `reasoning`: vLLM's name since its `reasoning_content` → `reasoning` change (RFC
    /// vllm-project/vllm#27755, PR #27752; the old name was removed in PR #33402).
    Reasoning,
}

crate::names::serde_by_name!(ReasoningField);

impl ReasoningField {
    /// The JSON key.
    pub fn key(self) -> &'static str {
        self.into()
    }
}

/// A reasoning model: the first `tokens` tokens of every answer are reasoning. On the OpenAI
/// chat route they stream as `delta.<field>` (non-streaming: `message.<field>`) and the rest as
/// `content`; usage counts them in `completion_tokens_details.reasoning_tokens`. Other routes
/// (completions, KServe) return every token as text, as servers without a reasoning parser do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningSpec {
    /// Reasoning tokens per answer (fewer when the answer is shorter).
    pub tokens: u32,
    /// The field they go in.
    pub field: ReasoningField,
}

/// Reasoning tokens per answer of the default reasoning models.
pub const DEFAULT_REASONING_TOKENS: u32 = 32;

/// Largest output buffer (one output at the maximum batch size) a tensor model may declare: the
/// simulator keeps one zero buffer of that size per model to answer from.
const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// Longest execution a tensor model may take (one hour): keeps the scheduler's time arithmetic
/// far from overflow.
const MAX_EXECUTION_US: u64 = 3_600_000_000;

/// One hosted model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Model name (also the OpenAI model id).
    pub name: String,
    /// The only version served (Triton's default repository layout has "1").
    pub version: String,
    /// Triton platform (`"ensemble"`, `"onnxruntime_onnx"`, ...), or empty for backend models.
    pub platform: String,
    /// Triton backend (`"vllm"`, `"python"`, ...), or empty for ensembles.
    pub backend: String,
    /// 0 = no batch dimension; > 0 = request shapes carry a leading batch dimension.
    pub max_batch_size: u32,
    /// Decoupled transaction policy: many responses per request, only over `ModelStreamInfer`.
    pub decoupled: bool,
    /// What the model computes.
    pub kind: ModelKind,
    /// Inputs in declaration order.
    pub inputs: Vec<TensorSpec>,
    /// Outputs in declaration order.
    pub outputs: Vec<TensorSpec>,
    /// Dynamic batching, for tensor models.
    #[serde(default)]
    pub dynamic_batching: Option<DynamicBatching>,
    /// Engine timing for this model; `None` = the server-wide [`super::SimConfig::engine`]. For
    /// tensor models only two things of it matter: `max_queue`, and whether it is instant (all
    /// timings zero), which makes the tensor model instant too (no batcher, zero compute time).
    #[serde(default)]
    pub engine: Option<EngineConfig>,
    /// Compute timing of a tensor model; `None` = [`TensorTiming::default`]. Ignored by LLMs.
    #[serde(default)]
    pub tensor_timing: Option<TensorTiming>,
    /// A reasoning model's split of its answers (LLMs); `None` = no reasoning.
    #[serde(default)]
    pub reasoning: Option<ReasoningSpec>,
}

impl ModelSpec {
    /// The TensorRT-LLM ensemble layout (`all_models/inflight_batcher_llm/ensemble`), decoupled,
    /// `max_batch_size` 64.
    pub fn tensorrt_llm(name: &str) -> Self {
        use DataType::*;
        ModelSpec {
            platform: "ensemble".to_owned(),
            backend: String::new(),
            max_batch_size: 64,
            decoupled: true,
            kind: ModelKind::Llm(LlmLayout::TensorRtLlm),
            inputs: vec![
                TensorSpec::new("text_input", Bytes, &[1]),
                TensorSpec::new("max_tokens", I32, &[1]),
                TensorSpec::optional("stream", Bool, &[1]),
                TensorSpec::optional("exclude_input_in_output", Bool, &[1]),
                TensorSpec::optional("min_tokens", I32, &[1]),
                TensorSpec::optional("temperature", F32, &[1]),
                TensorSpec::optional("end_id", I32, &[1]),
                TensorSpec::optional("pad_id", I32, &[1]),
            ],
            outputs: vec![TensorSpec::new("text_output", Bytes, &[-1])],
            ..ModelSpec::tensor(name, 0, Vec::new(), Vec::new())
        }
    }

    /// The TensorRT-LLM layout with a non-decoupled transaction policy: exactly one response per
    /// request (`ModelInfer`, HTTP `infer` and `generate` work; streaming does not).
    pub fn tensorrt_llm_non_decoupled(name: &str) -> Self {
        ModelSpec {
            decoupled: false,
            ..ModelSpec::tensorrt_llm(name)
        }
    }

    /// The vLLM backend layout (`max_batch_size` 0, always decoupled).
    pub fn vllm(name: &str) -> Self {
        use DataType::*;
        ModelSpec {
            platform: String::new(),
            backend: "vllm".to_owned(),
            decoupled: true,
            kind: ModelKind::Llm(LlmLayout::Vllm),
            inputs: vec![
                TensorSpec::new("text_input", Bytes, &[1]),
                TensorSpec::optional("stream", Bool, &[1]),
                TensorSpec::optional("sampling_parameters", Bytes, &[1]),
                TensorSpec::optional("exclude_input_in_output", Bool, &[1]),
            ],
            outputs: vec![TensorSpec::new("text_output", Bytes, &[-1])],
            ..ModelSpec::tensor(name, 0, Vec::new(), Vec::new())
        }
    }

    /// A tensor model on the ONNX Runtime backend, without dynamic batching and with the default
    /// timing; refine it with [`ModelSpec::with_dynamic_batching`], [`ModelSpec::with_timing`]
    /// and [`ModelSpec::with_platform`].
    pub fn tensor(
        name: &str,
        max_batch_size: u32,
        inputs: Vec<TensorSpec>,
        outputs: Vec<TensorSpec>,
    ) -> Self {
        ModelSpec {
            name: name.to_owned(),
            version: "1".to_owned(),
            platform: "onnxruntime_onnx".to_owned(),
            backend: "onnxruntime".to_owned(),
            max_batch_size,
            decoupled: false,
            kind: ModelKind::Tensor,
            inputs,
            outputs,
            dynamic_batching: None,
            engine: None,
            tensor_timing: None,
            reasoning: None,
        }
    }

    /// The same model with Triton's `dynamic_batching` block.
    pub fn with_dynamic_batching(
        mut self,
        preferred_batch_size: &[i32],
        max_queue_delay_us: u64,
    ) -> Self {
        self.dynamic_batching = Some(DynamicBatching {
            preferred_batch_size: preferred_batch_size.to_vec(),
            max_queue_delay_us,
        });
        self
    }

    /// A reasoning model in the vLLM backend layout whose first `tokens` tokens are reasoning,
    /// sent in `field` on the OpenAI chat route.
    pub fn reasoning(name: &str, tokens: u32, field: ReasoningField) -> Self {
        ModelSpec {
            reasoning: Some(ReasoningSpec { tokens, field }),
            ..ModelSpec::vllm(name)
        }
    }

    /// The same model with its own compute timing.
    pub fn with_timing(mut self, timing: TensorTiming) -> Self {
        self.tensor_timing = Some(timing);
        self
    }

    /// The same model on another platform/backend (`"tensorrt_plan"`/`"tensorrt"`, ...).
    pub fn with_platform(mut self, platform: &str, backend: &str) -> Self {
        self.platform = platform.to_owned();
        self.backend = backend.to_owned();
        self
    }

    /// `yolov8s`, the object detector of perf_analyzer's image example: input `images` FP32
    /// `[3,640,640]` (4.9 MB per image), output `output0` FP32 `[84,100]`, `max_batch_size` 8,
    /// dynamic batching (preferred 4 and 8, 100 µs queue delay), one instance, 2000 + 500 × batch
    /// µs of compute plus 200 µs per image of input copy.
    ///
    /// The real model's output is `[84,8400]` (2.8 MB per image); 100 candidate boxes keep the
    /// simulator's answers (33.6 KB per image) from dominating a load generator's test loop.
    pub fn yolov8s() -> Self {
        use DataType::*;
        ModelSpec::tensor(
            "yolov8s",
            8,
            vec![TensorSpec::new("images", F32, &[3, 640, 640])],
            vec![TensorSpec::new("output0", F32, &[84, 100])],
        )
        .with_dynamic_batching(&[4, 8], 100)
        .with_timing(TensorTiming::new([2000, 500, 200, 10], 1))
    }

    /// `bert_classifier`, a BERT sequence classifier exported at a fixed sequence length (as
    /// most TensorRT and ONNX exports are): input `input_ids` INT64 `[128]`, optional
    /// `attention_mask` INT64 `[128]`, output `logits` FP32 `[2]`, `max_batch_size` 8, dynamic
    /// batching (no preferred sizes, no queue delay), two instances, 1000 + 250 × batch µs of
    /// compute. Fixed dimensions are what let perf_analyzer's command lines for it (and the
    /// soak test in the guides) run without `--shape`.
    pub fn bert_classifier() -> Self {
        Self::classifier("bert_classifier", 128)
    }

    /// `text_classifier`: the same classifier with a dynamic sequence length (`[-1]`), so a
    /// client must be told the shape to send (`--shape input_ids:N`), as with Triton.
    pub fn text_classifier() -> Self {
        Self::classifier("text_classifier", -1)
    }

    /// A two-instance sequence classifier over `input_ids` of length `seq` (-1: any).
    fn classifier(name: &str, seq: i64) -> Self {
        use DataType::*;
        ModelSpec::tensor(
            name,
            8,
            vec![
                TensorSpec::new("input_ids", I64, &[seq]),
                TensorSpec::optional("attention_mask", I64, &[seq]),
            ],
            vec![TensorSpec::new("logits", F32, &[2])],
        )
        .with_dynamic_batching(&[], 0)
        .with_timing(TensorTiming::new([1000, 250, 5, 2], 2))
    }

    /// `resnet_fp16`, a TensorRT ResNet-50 plan at FP16 (perf_analyzer's batch/precision loop
    /// `resnet_${fp_mode}` with `-b 1..16`): input `input` FP32 `[3,224,224]`, output `output`
    /// FP32 `[1000]`, `max_batch_size` 16, dynamic batching (preferred 8 and 16, 100 µs delay),
    /// 1500 + 650 × batch µs of compute.
    pub fn resnet_fp16() -> Self {
        Self::resnet("resnet_fp16", DataType::F32, [1500, 650, 50, 5])
    }

    /// `resnet_int8`: the INT8 plan of the same network, faster (1000 + 350 × batch µs). Its
    /// input is quantized on the client, INT8 `[3,224,224]` (a quarter of the FP32 bytes), so
    /// clients are exercised on a 1-byte datatype too; output `output` FP32 `[1000]`.
    pub fn resnet_int8() -> Self {
        Self::resnet("resnet_int8", DataType::I8, [1000, 350, 15, 5])
    }

    /// A one-instance TensorRT ResNet-50 plan with `input` of `input_type`, timed by `us` (see
    /// [`TensorTiming::new`]).
    fn resnet(name: &str, input_type: DataType, us: [u64; 4]) -> Self {
        ModelSpec::tensor(
            name,
            16,
            vec![TensorSpec::new("input", input_type, &[3, 224, 224])],
            vec![TensorSpec::new("output", DataType::F32, &[1000])],
        )
        .with_platform("tensorrt_plan", "tensorrt")
        .with_dynamic_batching(&[8, 16], 100)
        .with_timing(TensorTiming::new(us, 1))
    }

    /// The models hosted when nothing else is configured: `gpt2` (TensorRT-LLM ensemble,
    /// decoupled), `vllm_model` (vLLM backend), `gpt2_nostream` (TensorRT-LLM layout, not
    /// decoupled), the tensor models `yolov8s`, `bert_classifier`, `text_classifier`,
    /// `resnet_fp16`, `resnet_int8`, and two reasoning models with
    /// [`DEFAULT_REASONING_TOKENS`] reasoning tokens: `reasoning_vllm` (field `reasoning`, as
    /// vLLM sends it) and `reasoning_sglang` (field `reasoning_content`, as SGLang and DeepSeek
    /// send it).
    pub fn defaults() -> Vec<ModelSpec> {
        vec![
            ModelSpec::tensorrt_llm("gpt2"),
            ModelSpec::vllm("vllm_model"),
            ModelSpec::tensorrt_llm_non_decoupled("gpt2_nostream"),
            ModelSpec::yolov8s(),
            ModelSpec::bert_classifier(),
            ModelSpec::text_classifier(),
            ModelSpec::resnet_fp16(),
            ModelSpec::resnet_int8(),
            ModelSpec::reasoning(
                "reasoning_vllm",
                DEFAULT_REASONING_TOKENS,
                ReasoningField::Reasoning,
            ),
            ModelSpec::reasoning(
                "reasoning_sglang",
                DEFAULT_REASONING_TOKENS,
                ReasoningField::ReasoningContent,
            ),
        ]
    }

    /// Compute timing of this (tensor) model.
    pub fn timing(&self) -> TensorTiming {
        self.tensor_timing.clone().unwrap_or_default()
    }

    /// Largest batch one request or one execution may carry: `max_batch_size`, or 1 for models
    /// without a batch dimension.
    pub fn max_batch(&self) -> u32 {
        self.max_batch_size.max(1)
    }

    /// Checks the spec is servable.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.name.is_empty() || self.name.contains('/') {
            anyhow::bail!(
                "model name {:?} must be non-empty and contain no '/'",
                self.name
            );
        }
        if self.version.is_empty() {
            anyhow::bail!("model {:?}: version must be non-empty", self.name);
        }
        if let ModelKind::Llm(_) = self.kind {
            let text_in = self.input("text_input");
            let text_out = self.outputs.iter().find(|t| t.name == "text_output");
            if text_in.map(|t| t.datatype) != Some(DataType::Bytes)
                || text_out.map(|t| t.datatype) != Some(DataType::Bytes)
            {
                anyhow::bail!(
                    "LLM model {:?} needs a BYTES input `text_input` and a BYTES output `text_output`",
                    self.name
                );
            }
        }
        if let Some(e) = &self.engine {
            e.validate()?;
        }
        if self.kind == ModelKind::Tensor {
            self.validate_tensor()?;
        }
        Ok(())
    }

    fn validate_tensor(&self) -> anyhow::Result<()> {
        let name = &self.name;
        if self.decoupled {
            anyhow::bail!("tensor model {name:?}: decoupled tensor models are not simulated");
        }
        if self.outputs.is_empty() {
            anyhow::bail!("tensor model {name:?} needs at least one output");
        }
        if let Some(db) = &self.dynamic_batching {
            if self.max_batch_size == 0 {
                anyhow::bail!("tensor model {name:?}: dynamic batching needs max_batch_size > 0");
            }
            if let Some(p) = db
                .preferred_batch_size
                .iter()
                .find(|&&p| p < 1 || p as i64 > i64::from(self.max_batch_size))
            {
                anyhow::bail!(
                    "tensor model {name:?}: preferred batch size {p} must be between 1 and max_batch_size {}",
                    self.max_batch_size
                );
            }
        }
        for t in self.inputs.iter().chain(&self.outputs) {
            if t.dims.iter().any(|&d| d < -1) {
                anyhow::bail!(
                    "tensor model {name:?}: tensor {:?} has an invalid dimension in {:?} (use -1 for variable)",
                    t.name,
                    t.dims
                );
            }
        }
        for t in &self.outputs {
            let elems = t
                .dims
                .iter()
                .try_fold(1usize, |acc, &d| acc.checked_mul(d.max(1) as usize));
            let bytes = elems
                .and_then(|e| e.checked_mul(t.datatype.size().unwrap_or(4)))
                .and_then(|b| b.checked_mul(self.max_batch() as usize));
            if bytes.is_none_or(|b| b > MAX_OUTPUT_BYTES) {
                anyhow::bail!(
                    "tensor model {name:?}: output {:?} is larger than {} MB at batch size {}",
                    t.name,
                    MAX_OUTPUT_BYTES >> 20,
                    self.max_batch()
                );
            }
        }
        let timing = self.timing();
        timing.validate()?;
        if timing.execution_us(self.max_batch()) > MAX_EXECUTION_US {
            anyhow::bail!(
                "tensor model {name:?}: one execution at batch size {} would last {} µs, more than an hour",
                self.max_batch(),
                timing.execution_us(self.max_batch())
            );
        }
        Ok(())
    }

    /// The declared input called `name`.
    pub fn input(&self, name: &str) -> Option<&TensorSpec> {
        self.inputs.iter().find(|t| t.name == name)
    }

    /// Platform reported in model metadata: the config's platform, or the backend's name for
    /// backend models (as Triton does).
    pub fn metadata_platform(&self) -> &str {
        if self.platform.is_empty() {
            &self.backend
        } else {
            &self.platform
        }
    }

    /// Shape of a tensor as metadata reports it: a leading -1 batch dim when batching.
    pub fn metadata_shape(&self, t: &TensorSpec) -> Vec<i64> {
        let batch = (self.max_batch_size > 0).then_some(-1);
        batch.into_iter().chain(t.dims.iter().copied()).collect()
    }

    /// Shape of one output element for a batch-1 request (`[1, 1]` when batching, else `[1]`).
    pub(crate) fn single_output_shape(&self) -> &'static [i64] {
        if self.max_batch_size > 0 {
            &[1, 1]
        } else {
            &[1]
        }
    }

    /// KServe model metadata JSON.
    pub(crate) fn metadata_json(&self) -> Value {
        let p = self.metadata_proto();
        let tensors = |ts: Vec<proto::model_metadata_response::TensorMetadata>| -> Vec<Value> {
            let t = ts.into_iter();
            t.map(|t| json!({"name": t.name, "datatype": t.datatype, "shape": t.shape}))
                .collect()
        };
        json!({
            "name": p.name,
            "versions": p.versions,
            "platform": p.platform,
            "inputs": tensors(p.inputs),
            "outputs": tensors(p.outputs),
        })
    }

    /// gRPC `ModelMetadataResponse`.
    pub(crate) fn metadata_proto(&self) -> proto::ModelMetadataResponse {
        let tensors = |ts: &[TensorSpec]| {
            ts.iter()
                .map(|t| proto::model_metadata_response::TensorMetadata {
                    name: t.name.clone(),
                    datatype: t.datatype.name().to_owned(),
                    shape: self.metadata_shape(t),
                })
                .collect()
        };
        proto::ModelMetadataResponse {
            name: self.name.clone(),
            versions: vec![self.version.clone()],
            platform: self.metadata_platform().to_owned(),
            inputs: tensors(&self.inputs),
            outputs: tensors(&self.outputs),
        }
    }

    /// Instances the configuration reports: the tensor timing's count, 1 for LLM backends.
    fn instance_count(&self) -> u32 {
        match self.kind {
            ModelKind::Tensor => self.timing().instance_count,
            ModelKind::Llm(_) => 1,
        }
    }

    fn instance_kind(&self) -> proto::model_instance_group::Kind {
        // The vLLM backend declares KIND_MODEL (it manages its own GPUs); Triton reports
        // KIND_CPU for everything else in a CPU-only deployment.
        if self.backend == "vllm" {
            proto::model_instance_group::Kind::Model
        } else {
            proto::model_instance_group::Kind::Cpu
        }
    }

    /// Triton's model configuration as JSON (`GET /v2/models/{m}/config`), with the field names
    /// and enum spellings Triton prints; integer fields are numbers, as Triton emits them.
    pub(crate) fn config_json(&self) -> Value {
        let inputs: Vec<Value> = self
            .inputs
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "data_type": t.datatype.config_name(),
                    "format": "FORMAT_NONE",
                    "dims": t.dims,
                    "is_shape_tensor": false,
                    "allow_ragged_batch": false,
                    "optional": t.optional,
                    "is_non_linear_format_io": false,
                })
            })
            .collect();
        let outputs: Vec<Value> = self
            .outputs
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "data_type": t.datatype.config_name(),
                    "dims": t.dims,
                    "label_filename": "",
                    "is_shape_tensor": false,
                    "is_non_linear_format_io": false,
                })
            })
            .collect();
        let mut cfg = json!({
            "name": self.name,
            "platform": self.platform,
            "backend": self.backend,
            "runtime": "",
            "version_policy": {"latest": {"num_versions": 1}},
            "max_batch_size": self.max_batch_size,
            "input": inputs,
            "output": outputs,
            "batch_input": [],
            "batch_output": [],
            "optimization": {"priority": "PRIORITY_DEFAULT", "input_pinned_memory": {"enable": true},
                "output_pinned_memory": {"enable": true}, "gather_kernel_buffer_threshold": 0,
                "eager_batching": false},
            "instance_group": [],
            "default_model_filename": "",
            "cc_model_filenames": {},
            "metric_tags": {},
            "parameters": {},
            "model_warmup": [],
            "model_transaction_policy": {"decoupled": self.decoupled},
        });
        if self.platform == "ensemble" {
            // Steps are left out on purpose: clients such as perf_analyzer fetch the config of
            // every composing model, and the simulator hosts only the ensemble itself.
            cfg["ensemble_scheduling"] = json!({"step": []});
            return cfg;
        }
        cfg["instance_group"] = json!([{
            "name": format!("{}_0", self.name),
            "kind": self.instance_kind().as_str_name(),
            "count": self.instance_count(),
            "gpus": [],
            "secondary_devices": [],
            "profile": [],
            "passive": false,
            "host_policy": "",
        }]);
        if let Some(db) = &self.dynamic_batching {
            cfg["dynamic_batching"] = json!({
                "preferred_batch_size": db.preferred_batch_size,
                "max_queue_delay_microseconds": db.max_queue_delay_us,
                "preserve_ordering": false,
                "priority_levels": 0,
                "default_priority_level": 0,
                "priority_queue_policy": {},
            });
        }
        cfg
    }

    /// The same configuration as the gRPC `ModelConfig` message.
    pub(crate) fn config_proto(&self) -> proto::ModelConfig {
        use proto::model_config::SchedulingChoice;
        let (scheduling, instance_group) = if self.platform == "ensemble" {
            let steps = proto::ModelEnsembling { step: Vec::new() };
            (
                Some(SchedulingChoice::EnsembleScheduling(steps)),
                Vec::new(),
            )
        } else {
            let batching = self.dynamic_batching.as_ref().map(|db| {
                SchedulingChoice::DynamicBatching(proto::ModelDynamicBatching {
                    preferred_batch_size: db.preferred_batch_size.clone(),
                    max_queue_delay_microseconds: db.max_queue_delay_us,
                })
            });
            let group = proto::ModelInstanceGroup {
                name: format!("{}_0", self.name),
                count: self.instance_count().min(i32::MAX as u32) as i32,
                gpus: Vec::new(),
                kind: self.instance_kind() as i32,
            };
            (batching, vec![group])
        };
        proto::ModelConfig {
            name: self.name.clone(),
            platform: self.platform.clone(),
            backend: self.backend.clone(),
            max_batch_size: self.max_batch_size.min(i32::MAX as u32) as i32,
            input: self
                .inputs
                .iter()
                .map(|t| proto::ModelInput {
                    name: t.name.clone(),
                    data_type: t.datatype.proto() as i32,
                    format: proto::model_input::Format::None as i32,
                    dims: t.dims.clone(),
                    reshape: None,
                    is_shape_tensor: false,
                    allow_ragged_batch: false,
                    optional: t.optional,
                })
                .collect(),
            output: self
                .outputs
                .iter()
                .map(|t| proto::ModelOutput {
                    name: t.name.clone(),
                    data_type: t.datatype.proto() as i32,
                    dims: t.dims.clone(),
                    label_filename: String::new(),
                    reshape: None,
                })
                .collect(),
            instance_group,
            scheduling_choice: scheduling,
            parameters: Default::default(),
            model_transaction_policy: Some(proto::ModelTransactionPolicy {
                decoupled: self.decoupled,
            }),
            response_cache: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_fields_read_back() {
        crate::names::assert_serde_round_trip::<ReasoningField>();
        assert_eq!(ReasoningField::ReasoningContent.key(), "reasoning_content");
    }

    #[test]
    fn metadata_shapes_carry_batch_dim_only_when_batching() {
        let g = ModelSpec::tensorrt_llm("gpt2").metadata_json();
        assert_eq!(g["platform"], "ensemble");
        assert_eq!(
            g["inputs"][0],
            json!({"name": "text_input", "datatype": "BYTES", "shape": [-1, 1]})
        );
        assert_eq!(g["inputs"][1]["datatype"], "INT32");
        assert_eq!(g["outputs"][0]["shape"], json!([-1, -1]));
        let v = ModelSpec::vllm("vllm_model").metadata_json();
        assert_eq!(v["platform"], "vllm");
        assert_eq!(v["inputs"][0]["shape"], json!([1]));
    }

    #[test]
    fn config_json_looks_like_triton() {
        let c = ModelSpec::tensorrt_llm("gpt2").config_json();
        assert_eq!(c["max_batch_size"], 64);
        assert_eq!(c["input"][0]["data_type"], "TYPE_STRING");
        assert_eq!(c["input"][2]["optional"], true);
        assert_eq!(c["model_transaction_policy"]["decoupled"], true);
        let p = ModelSpec::vllm("v").config_proto();
        assert_eq!(p.backend, "vllm");
        assert_eq!(p.input[0].data_type, proto::DataType::TypeString as i32);
        assert!(ModelSpec::defaults().iter().all(|m| m.validate().is_ok()));
    }

    #[test]
    fn tensor_specs_are_checked() {
        let base = ModelSpec::yolov8s();
        assert!(base.validate().is_ok());
        let bad = |m: ModelSpec| m.validate().expect_err("invalid").to_string();
        let e = bad(base.clone().with_dynamic_batching(&[16], 0));
        assert!(e.contains("preferred batch size 16"), "{e}");
        let e = bad(ModelSpec {
            max_batch_size: 0,
            ..base.clone()
        });
        assert!(
            e.contains("dynamic batching needs max_batch_size > 0"),
            "{e}"
        );
        let e = bad(base.clone().with_timing(TensorTiming {
            instance_count: 0,
            ..TensorTiming::default()
        }));
        assert!(e.contains("instance_count"), "{e}");
        let e = bad(base.clone().with_timing(TensorTiming {
            per_item_us: u64::MAX,
            ..TensorTiming::default()
        }));
        assert!(e.contains("more than an hour"), "{e}");
        let e = bad(ModelSpec {
            outputs: vec![TensorSpec::new("huge", DataType::F32, &[1 << 20, 1 << 10])],
            ..base.clone()
        });
        assert!(e.contains("larger than 64 MB"), "{e}");
        let c = base.config_json();
        assert_eq!(c["instance_group"][0]["count"], 1);
        assert_eq!(c["dynamic_batching"]["preferred_batch_size"], json!([4, 8]));
        assert_eq!(
            ModelSpec::bert_classifier().config_proto().instance_group[0].count,
            2
        );
        let p = ModelSpec::resnet_int8().config_proto();
        assert_eq!(p.input[0].data_type, proto::DataType::TypeInt8 as i32);
        assert_eq!(p.platform, "tensorrt_plan");
    }
}
