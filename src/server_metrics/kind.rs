//! Which inference engine a metrics endpoint belongs to: the vocabulary shared by the metrics
//! adapters (`--server-kind`), and the simulator's `serve --metrics-style`.

/// An inference server whose Prometheus metrics ttftbench can read. Its name in flags and
/// files is its lower-case name; the other spellings read back too, in any case.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
)]
#[strum(
    serialize_all = "lowercase",
    ascii_case_insensitive,
    parse_err_ty = UnknownServerKind,
    parse_err_fn = UnknownServerKind::of
)]
pub enum ServerKind {
    /// Triton Inference Server core metrics (`nv_inference_*`), any backend.
    #[default]
    Triton,
    /// TensorRT-LLM on Triton: Triton's core metrics plus the backend's `nv_trt_llm_*` families.
    #[strum(
        to_string = "trtllm",
        serialize = "trt-llm",
        serialize = "tensorrtllm",
        serialize = "tensorrt-llm"
    )]
    TrtLlm,
    /// vLLM's OpenAI-compatible server (`vllm:*`).
    Vllm,
    /// SGLang (`sglang:*`).
    Sglang,
    /// Hugging Face Text Generation Inference (`tgi_*`).
    Tgi,
    /// llama.cpp's `llama-server` (`llamacpp:*`, with `--metrics`).
    #[strum(
        to_string = "llamacpp",
        serialize = "llama.cpp",
        serialize = "llama-cpp",
        serialize = "llama_cpp",
        serialize = "llama-server"
    )]
    LlamaCpp,
}

crate::names::serde_by_name!(ServerKind);

impl ServerKind {
    /// Every kind, in the order flags list them: the order of declaration.
    pub const ALL: &'static [ServerKind] = <ServerKind as strum::VariantArray>::VARIANTS;

    /// The name flags use (`triton`, `trtllm`, `vllm`, `sglang`, `tgi`, `llamacpp`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// True for the kinds served by Triton (core `nv_inference_*` and GPU `nv_gpu_*` families).
    pub fn is_triton(self) -> bool {
        matches!(self, ServerKind::Triton | ServerKind::TrtLlm)
    }
}

/// A server kind name that is not one of [`ServerKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown server kind {name:?}: expected one of {names}",
    name = .0,
    names = <ServerKind as strum::VariantNames>::VARIANTS.join(", ")
)]
pub struct UnknownServerKind(pub String);

impl UnknownServerKind {
    fn of(name: &str) -> UnknownServerKind {
        UnknownServerKind(name.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        crate::names::assert_serde_round_trip::<ServerKind>();
        assert_eq!("TensorRTLLM".parse::<ServerKind>(), Ok(ServerKind::TrtLlm));
        assert_eq!("llama.cpp".parse::<ServerKind>(), Ok(ServerKind::LlamaCpp));
        let e = "ollama".parse::<ServerKind>().unwrap_err();
        assert!(e.to_string().contains("expected one of"), "{e}");
        assert_eq!(
            e.to_string(),
            "unknown server kind \"ollama\": expected one of triton, trtllm, vllm, sglang, tgi, llamacpp"
        );
    }
}
