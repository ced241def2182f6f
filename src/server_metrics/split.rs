//! Where a request's time inside the server went, by the engine's own account: its queue, then
//! prefill and decode where the engine exports them, else the generation as one part
//! ([`EngineSplit`], from an [`EngineLevelView`]).
//!
//! The queue is the one the engine exports (vLLM, SGLang, TGI: time from arrival to scheduling;
//! plain Triton: its scheduler queue). TensorRT-LLM exports the executor's waiting requests but
//! not their time, and Triton's own queue counter misses that queue (Triton hands the request to
//! the backend at once), so its queue is estimated by Little's law from the waiting gauge:
//! average waiting × level seconds / requests finished ([`EngineLevelView::estimated_queue_s`]).
//! Triton's compute time of such a decoupled backend spans the whole generation with the
//! executor's queue inside it, so the generation is that time minus the estimated queue.
//!
//! llama.cpp exports no queue time either: its queue is estimated the same way from
//! `requests_deferred` (requests waiting for a free slot), over the requests the client
//! finished; its prefill is the mean of the responses' own `timings.prompt_ms` and its decode
//! `tokens_predicted_seconds_total` over those requests
//! ([`EngineLevelView::with_client_requests`]).

use serde::{Deserialize, Serialize};

use super::kind::ServerKind;
use super::level::EngineLevelView;

/// How the queue time was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueSource {
    /// The engine's own queue-time metric (vLLM, SGLang, TGI).
    Engine,
    /// Triton's scheduler queue counter (a backend that queues in Triton).
    Triton,
    /// Little's law over the engine's waiting-requests gauge (TensorRT-LLM's executor).
    WaitingGauge,
}

impl QueueSource {
    /// What the queue is called in sentences.
    pub fn noun(self, kind: ServerKind) -> String {
        match self {
            QueueSource::Engine => format!("{} queue", engine_name(kind)),
            QueueSource::Triton => "Triton queue".to_string(),
            QueueSource::WaitingGauge => format!(
                "{} queue (estimated from its {} requests)",
                engine_name(kind),
                if kind == ServerKind::LlamaCpp {
                    "deferred"
                } else {
                    "waiting"
                }
            ),
        }
    }
}

/// The engine's name as people write it.
pub fn engine_name(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Triton => "Triton",
        ServerKind::TrtLlm => "TensorRT-LLM",
        ServerKind::Vllm => "vLLM",
        ServerKind::Sglang => "SGLang",
        ServerKind::Tgi => "TGI",
        ServerKind::LlamaCpp => "llama.cpp",
    }
}

/// A request's average time in the server, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EngineSplit {
    /// Waiting before being scheduled.
    pub queue_ms: f64,
    /// Where [`EngineSplit::queue_ms`] comes from.
    pub queue_source: QueueSource,
    /// Scheduled → first token, where exported (vLLM; llama.cpp from its responses' timings).
    pub prefill_ms: Option<f64>,
    /// First → last token, where exported (vLLM, llama.cpp).
    pub decode_ms: Option<f64>,
    /// Everything after the queue: prefill plus decode.
    pub generation_ms: f64,
}

impl EngineSplit {
    /// The queue's share of the server's time, 0–1.
    pub fn queue_share(&self) -> Option<f64> {
        let total = self.queue_ms + self.generation_ms;
        (total > 0.0).then(|| (self.queue_ms / total).clamp(0.0, 1.0))
    }
}

impl EngineLevelView {
    /// The level's split, when the engine says enough for one: a queue (exported, or estimated
    /// from the waiting gauge and the level's window) and the time after it.
    pub fn split(&self) -> Option<EngineSplit> {
        let ms = |s: f64| s * 1e3;
        let estimated = || self.estimated_queue_s(self.window_s?);
        let (queue_s, source) = match self.kind {
            // Triton's counter (≈ 0) plus the executor's queue it cannot see.
            ServerKind::TrtLlm => (
                estimated()? + self.avg_triton_queue_s.unwrap_or(0.0),
                QueueSource::WaitingGauge,
            ),
            ServerKind::Triton => (self.avg_queue_s?, QueueSource::Triton),
            _ => match self.avg_queue_s {
                Some(q) => (q, QueueSource::Engine),
                None => (estimated()?, QueueSource::WaitingGauge),
            },
        };
        let generation_s = match (self.avg_prefill_s, self.avg_decode_s) {
            (Some(p), Some(d)) => p + d,
            _ => match (self.kind, self.avg_inference_s, self.avg_e2e_s) {
                // Triton's compute time of the backend holds the executor's queue.
                (ServerKind::TrtLlm, Some(inf), _) => (inf - queue_s).max(0.0),
                (_, Some(inf), _) => inf,
                (_, None, Some(e2e)) => (e2e - queue_s).max(0.0),
                _ => return None,
            },
        };
        Some(EngineSplit {
            queue_ms: ms(queue_s),
            queue_source: source,
            prefill_ms: self.avg_prefill_s.map(ms),
            decode_ms: self.avg_decode_s.map(ms),
            generation_ms: ms(generation_s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server_metrics::level::GaugeStats;

    #[test]
    fn vllm_splits_queue_prefill_and_decode() {
        let v = EngineLevelView {
            avg_queue_s: Some(0.3),
            avg_prefill_s: Some(0.05),
            avg_decode_s: Some(0.65),
            ..EngineLevelView::empty(ServerKind::Vllm)
        };
        let s = v.split().unwrap();
        assert_eq!(s.queue_source, QueueSource::Engine);
        assert!((s.queue_ms - 300.0).abs() < 1e-9);
        assert!((s.generation_ms - 700.0).abs() < 1e-9);
        assert!((s.queue_share().unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(QueueSource::Engine.noun(v.kind), "vLLM queue");
    }

    #[test]
    fn trtllm_queue_is_estimated_and_taken_out_of_triton_compute() {
        // 4 requests waiting on average over 10 s while 20 finished: 2 s each in the queue;
        // Triton's compute time (3 s) holds that queue, so 1 s of generation.
        let v = EngineLevelView {
            waiting: Some(GaugeStats {
                avg: 4.0,
                max: 7.0,
                samples: 20,
            }),
            requests: Some(20.0),
            avg_triton_queue_s: Some(0.0),
            avg_inference_s: Some(3.0),
            window_s: Some(10.0),
            ..EngineLevelView::empty(ServerKind::TrtLlm)
        };
        let s = v.split().unwrap();
        assert_eq!(s.queue_source, QueueSource::WaitingGauge);
        assert!((s.queue_ms - 2000.0).abs() < 1e-9);
        assert!((s.generation_ms - 1000.0).abs() < 1e-9);
        assert_eq!(s.prefill_ms, None);
        // Without the window there is nothing to estimate from.
        assert_eq!(
            EngineLevelView {
                window_s: None,
                ..v
            }
            .split(),
            None
        );
    }

    #[test]
    fn sglang_and_tgi_use_their_queue_with_e2e_or_inference() {
        let sg = EngineLevelView {
            avg_queue_s: Some(0.1),
            avg_e2e_s: Some(0.5),
            ..EngineLevelView::empty(ServerKind::Sglang)
        };
        assert!((sg.split().unwrap().generation_ms - 400.0).abs() < 1e-9);
        let tgi = EngineLevelView {
            avg_queue_s: Some(0.1),
            avg_inference_s: Some(0.3),
            ..EngineLevelView::empty(ServerKind::Tgi)
        };
        assert!((tgi.split().unwrap().generation_ms - 300.0).abs() < 1e-9);
        assert_eq!(EngineLevelView::empty(ServerKind::Tgi).split(), None);
        let triton = EngineLevelView {
            avg_queue_s: Some(0.01),
            avg_triton_queue_s: Some(0.01),
            avg_inference_s: Some(0.2),
            ..EngineLevelView::empty(ServerKind::Triton)
        };
        assert_eq!(triton.split().unwrap().queue_source, QueueSource::Triton);
    }
}
