//! Which inference engine a metrics endpoint belongs to: the vocabulary shared by the metrics
//! adapters (`--server-kind`), and the simulator's `serve --metrics-style`.

use std::fmt;
use std::str::FromStr;

/// An inference server whose Prometheus metrics ttftbench can read.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// Triton Inference Server core metrics (`nv_inference_*`), any backend.
    #[default]
    Triton,
    /// TensorRT-LLM on Triton: Triton's core metrics plus the backend's `nv_trt_llm_*` families.
    TrtLlm,
    /// vLLM's OpenAI-compatible server (`vllm:*`).
    Vllm,
    /// SGLang (`sglang:*`).
    Sglang,
    /// Hugging Face Text Generation Inference (`tgi_*`).
    Tgi,
    /// llama.cpp's `llama-server` (`llamacpp:*`, with `--metrics`).
    LlamaCpp,
}

impl ServerKind {
    /// Every kind, in the order flags list them.
    pub const ALL: [ServerKind; 6] = [
        ServerKind::Triton,
        ServerKind::TrtLlm,
        ServerKind::Vllm,
        ServerKind::Sglang,
        ServerKind::Tgi,
        ServerKind::LlamaCpp,
    ];

    /// The name flags use (`triton`, `trtllm`, `vllm`, `sglang`, `tgi`, `llamacpp`).
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Triton => "triton",
            ServerKind::TrtLlm => "trtllm",
            ServerKind::Vllm => "vllm",
            ServerKind::Sglang => "sglang",
            ServerKind::Tgi => "tgi",
            ServerKind::LlamaCpp => "llamacpp",
        }
    }

    /// True for the kinds served by Triton (core `nv_inference_*` and GPU `nv_gpu_*` families).
    pub fn is_triton(self) -> bool {
        matches!(self, ServerKind::Triton | ServerKind::TrtLlm)
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A server kind name that is not one of [`ServerKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown server kind {0:?}: expected one of triton, trtllm, vllm, sglang, tgi, llamacpp")]
pub struct UnknownServerKind(pub String);

impl FromStr for ServerKind {
    type Err = UnknownServerKind;

    /// Accepts the flag names, case-insensitively, `tensorrtllm`/`trt-llm` for `trtllm`, and
    /// `llama.cpp`/`llama-cpp`/`llama-server` for `llamacpp`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "triton" => Ok(ServerKind::Triton),
            "trtllm" | "trt-llm" | "tensorrtllm" | "tensorrt-llm" => Ok(ServerKind::TrtLlm),
            "vllm" => Ok(ServerKind::Vllm),
            "sglang" => Ok(ServerKind::Sglang),
            "tgi" => Ok(ServerKind::Tgi),
            "llamacpp" | "llama.cpp" | "llama-cpp" | "llama_cpp" | "llama-server" => {
                Ok(ServerKind::LlamaCpp)
            }
            _ => Err(UnknownServerKind(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ServerKind::ALL {
            assert_eq!(k.name().parse::<ServerKind>(), Ok(k));
        }
        assert_eq!("TensorRTLLM".parse::<ServerKind>(), Ok(ServerKind::TrtLlm));
        assert_eq!("llama.cpp".parse::<ServerKind>(), Ok(ServerKind::LlamaCpp));
        let e = "ollama".parse::<ServerKind>().unwrap_err();
        assert!(e.to_string().contains("expected one of"), "{e}");
        // Serde uses the flag names too (plans written to files).
        for k in ServerKind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<ServerKind>(&json).unwrap(), k);
        }
    }
}
