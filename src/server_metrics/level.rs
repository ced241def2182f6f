//! What the engine did during one level: the difference of its cumulative counters between the
//! level's first and last [`EngineSample`], and the average and maximum of its gauges sampled
//! while the level ran ([`EngineLevelView`]).
//!
//! Use: [`EngineLevel::new`] with the sample taken when the level starts,
//! [`EngineLevel::observe`] for each sample taken during it (every 500 ms or so),
//! [`EngineLevel::finish`] with the sample taken when it ends. Gauges average over the observed
//! samples and the end sample (the start sample describes the previous level). A counter
//! missing at the start but present at the end counts from zero (exporters that create a series
//! on its first event, as TGI's does); one missing at the end is `None`.

use serde::{Deserialize, Serialize};

use super::engines::{CacheUnit, EngineSample, SpecDecode, TimeSum};
use super::kind::ServerKind;
use super::prometheus::Histogram;

// Vocabulary at the bottom (`metrics`): statistics and reports read it too.
pub use crate::metrics::GaugeStats;

/// Running mean and maximum of a gauge.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GaugeAcc {
    sum: f64,
    max: f64,
    n: u32,
}

impl GaugeAcc {
    /// Adds a sample (absent values and NaN are skipped).
    pub fn push(&mut self, v: Option<f64>) {
        if let Some(v) = v.filter(|v| !v.is_nan()) {
            self.max = if self.n == 0 { v } else { self.max.max(v) };
            self.sum += v;
            self.n += 1;
        }
    }

    /// The statistics so far; `None` without samples.
    pub fn stats(&self) -> Option<GaugeStats> {
        (self.n > 0).then(|| GaugeStats {
            avg: self.sum / f64::from(self.n),
            max: self.max,
            samples: self.n,
        })
    }
}

/// Server-side time to first token over a level, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TtftView {
    /// Requests whose first token the server counted.
    pub count: f64,
    /// Mean.
    pub avg_s: f64,
    /// Median, interpolated in the engine's histogram buckets.
    pub p50_s: Option<f64>,
    /// 90th percentile, interpolated.
    pub p90_s: Option<f64>,
    /// 99th percentile, interpolated.
    pub p99_s: Option<f64>,
}

/// Prefix-cache lookups over a level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrefixView {
    /// Looked up (`None` when the engine exports hits only).
    pub queried: Option<f64>,
    /// Found cached.
    pub hits: f64,
    /// `hits / queried`, when both are known and something was looked up.
    pub hit_rate: Option<f64>,
    /// Tokens or blocks.
    pub unit: CacheUnit,
}

/// Speculative decoding over a level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeView {
    /// Draft proposals verified.
    pub drafts: f64,
    /// Draft tokens proposed.
    pub draft_tokens: f64,
    /// Draft tokens accepted.
    pub accepted_tokens: f64,
    /// `accepted_tokens / draft_tokens`, when drafts were proposed.
    pub acceptance_rate: Option<f64>,
}

/// The engine's own view of a level. Read back from a level's JSON (`engine_metrics`), where a
/// missing field is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineLevelView {
    /// Which engine.
    pub kind: ServerKind,
    /// Whether the model was found by name on the page at both ends.
    pub model_matched: bool,
    /// Requests waiting in the engine.
    pub waiting: Option<GaugeStats>,
    /// Requests in the running batch.
    pub running: Option<GaugeStats>,
    /// KV-cache usage, 0–1.
    pub kv_usage: Option<GaugeStats>,
    /// Preemptions during the level.
    pub preemptions: Option<f64>,
    /// Requests the engine finished during the level.
    pub requests: Option<f64>,
    /// Mean time a request waited in the engine's queue, seconds.
    pub avg_queue_s: Option<f64>,
    /// Mean time a request waited in Triton's queue, seconds (Triton servers).
    pub avg_triton_queue_s: Option<f64>,
    /// Mean prefill time (scheduled → first token), seconds.
    pub avg_prefill_s: Option<f64>,
    /// Mean decode time (first → last token), seconds.
    pub avg_decode_s: Option<f64>,
    /// Mean inference time (scheduled → last token; Triton: `compute_infer`), seconds.
    pub avg_inference_s: Option<f64>,
    /// Mean server-side request time, seconds.
    pub avg_e2e_s: Option<f64>,
    /// Seconds spent in prefill batches (TGI).
    pub prefill_busy_s: Option<f64>,
    /// Seconds spent in decode batches (TGI).
    pub decode_busy_s: Option<f64>,
    /// Sum of the finished requests' decode times, seconds (llama.cpp, which exports the sum
    /// but not the count: [`EngineLevelView::with_client_requests`] divides it).
    #[serde(default)]
    pub decode_total_s: Option<f64>,
    /// Speculative decoding, where the engine exports it.
    #[serde(default)]
    pub spec_decode: Option<SpecDecodeView>,
    /// Batch slots the server has (llama.cpp's `/slots`, when enabled).
    #[serde(default)]
    pub slots: Option<u32>,
    /// `requests` is the client's count of requests finished in the level, because the engine
    /// exports no finished-request counter (llama.cpp).
    #[serde(default)]
    pub requests_from_client: bool,
    /// Server-side time to first token.
    pub server_ttft: Option<TtftView>,
    /// Prefix-cache lookups.
    pub prefix_cache: Option<PrefixView>,
    /// Prompt tokens processed during the level.
    pub prompt_tokens: Option<f64>,
    /// Tokens generated during the level.
    pub generation_tokens: Option<f64>,
    /// Seconds between the level's first and last sample (what Little's law divides by).
    #[serde(default)]
    pub window_s: Option<f64>,
}

impl EngineLevelView {
    /// A view of `kind` in which no series was read (the model matched, every figure absent).
    pub fn empty(kind: ServerKind) -> Self {
        EngineLevelView {
            kind,
            model_matched: true,
            ..EngineLevelView::default()
        }
    }

    /// Completes the view of an engine without a finished-request counter (llama.cpp) with
    /// what the client saw: `requests` finished in the level (the divisor of the per-request
    /// averages and of the queue estimate), and `prefill_s`, the mean of the responses' own
    /// prompt-processing times (`timings.prompt_ms`), as the engine's prefill time. A view
    /// whose engine counts its requests is returned as it was.
    pub fn with_client_requests(mut self, requests: u64, prefill_s: Option<f64>) -> Self {
        if self.requests.is_some() || self.kind != ServerKind::LlamaCpp {
            return self;
        }
        self.requests = Some(requests as f64);
        self.requests_from_client = true;
        if requests > 0 {
            self.avg_decode_s = self.decode_total_s.map(|s| s / requests as f64);
        }
        self.avg_prefill_s = self.avg_prefill_s.or(prefill_s);
        self
    }

    /// The same view with the server's batch slots.
    pub fn with_slots(mut self, slots: Option<u32>) -> Self {
        self.slots = slots.or(self.slots);
        self
    }

    /// Mean time a request waited in the engine, estimated by Little's law from the waiting
    /// gauge (`avg waiting × level seconds / requests`): for engines that export the queue's
    /// length but not its time (TensorRT-LLM). `None` without the gauge or finished requests.
    pub fn estimated_queue_s(&self, level_s: f64) -> Option<f64> {
        if level_s <= 0.0 {
            return None;
        }
        let waiting = self.waiting?.avg;
        let n = self.requests.filter(|&n| n > 0.0)?;
        Some(waiting * level_s / n)
    }
}

/// Accumulates one level's engine samples.
#[derive(Debug, Clone, Default)]
pub struct EngineLevel {
    start: EngineSample,
    waiting: GaugeAcc,
    running: GaugeAcc,
    kv: GaugeAcc,
    matched: bool,
}

impl EngineLevel {
    /// Starts a level at `start` (its gauges are not counted: they describe what came before).
    pub fn new(start: EngineSample) -> Self {
        EngineLevel {
            matched: start.model_matched,
            start,
            ..EngineLevel::default()
        }
    }

    /// A sample taken while the level runs.
    pub fn observe(&mut self, s: &EngineSample) {
        self.waiting.push(s.waiting);
        self.running.push(s.running);
        self.kv.push(s.kv_usage);
        self.matched &= s.model_matched;
    }

    /// Ends a level that lasted `window_s` seconds at `end`: [`EngineLevel::finish`] with the
    /// window recorded, so the queue can be estimated from the waiting gauge.
    pub fn finish_over(self, end: &EngineSample, window_s: f64) -> EngineLevelView {
        EngineLevelView {
            window_s: Some(window_s),
            ..self.finish(end)
        }
    }

    /// Ends the level at `end` (whose gauges count as one more sample).
    pub fn finish(mut self, end: &EngineSample) -> EngineLevelView {
        self.observe(end);
        let b = &self.start;
        let d = |before: Option<f64>, after: Option<f64>| {
            after.map(|a| (a - before.unwrap_or(0.0)).max(0.0))
        };
        let avg = |before: Option<TimeSum>, after: Option<TimeSum>| {
            let a = after?;
            let b = before.unwrap_or_default();
            let n = a.count - b.count;
            (n > 0.0).then(|| (a.seconds - b.seconds).max(0.0) / n)
        };
        let busy = |before: Option<TimeSum>, after: Option<TimeSum>| {
            after.map(|a| (a.seconds - before.unwrap_or_default().seconds).max(0.0))
        };
        EngineLevelView {
            kind: end.kind,
            model_matched: self.matched,
            waiting: self.waiting.stats(),
            running: self.running.stats(),
            kv_usage: self.kv.stats(),
            preemptions: d(b.preemptions, end.preemptions),
            requests: d(b.requests, end.requests),
            avg_queue_s: avg(b.queue, end.queue),
            avg_triton_queue_s: avg(b.triton_queue, end.triton_queue),
            avg_prefill_s: avg(b.prefill, end.prefill),
            avg_decode_s: avg(b.decode, end.decode),
            avg_inference_s: avg(b.inference, end.inference),
            avg_e2e_s: avg(b.e2e, end.e2e),
            prefill_busy_s: busy(b.prefill_batches, end.prefill_batches),
            decode_busy_s: busy(b.decode_batches, end.decode_batches),
            decode_total_s: d(b.decode_sum_s, end.decode_sum_s),
            spec_decode: spec_view(b.spec_decode, end.spec_decode),
            server_ttft: ttft_view(b.ttft.as_ref(), end.ttft.as_ref()),
            prefix_cache: prefix_view(b, end),
            prompt_tokens: d(b.prompt_tokens, end.prompt_tokens),
            generation_tokens: d(b.generation_tokens, end.generation_tokens),
            ..EngineLevelView::default()
        }
    }
}

fn ttft_view(before: Option<&Histogram>, after: Option<&Histogram>) -> Option<TtftView> {
    let after = after?;
    let h = before.map_or_else(|| after.clone(), |b| after.since(b));
    Some(TtftView {
        count: h.count,
        avg_s: h.mean()?,
        p50_s: h.quantile(0.5),
        p90_s: h.quantile(0.9),
        p99_s: h.quantile(0.99),
    })
}

fn spec_view(before: Option<SpecDecode>, after: Option<SpecDecode>) -> Option<SpecDecodeView> {
    let (a, b) = (after?, before.unwrap_or_default());
    let d = |x: f64, y: f64| (x - y).max(0.0);
    let draft_tokens = d(a.draft_tokens, b.draft_tokens);
    let accepted_tokens = d(a.accepted_tokens, b.accepted_tokens);
    Some(SpecDecodeView {
        drafts: d(a.drafts, b.drafts),
        draft_tokens,
        accepted_tokens,
        acceptance_rate: (draft_tokens > 0.0).then(|| (accepted_tokens / draft_tokens).min(1.0)),
    })
}

fn prefix_view(b: &EngineSample, end: &EngineSample) -> Option<PrefixView> {
    let after = end.prefix_cache?;
    let before = b.prefix_cache;
    let hits = (after.hits - before.map_or(0.0, |p| p.hits)).max(0.0);
    let queried = after
        .queried
        .map(|q| (q - before.and_then(|p| p.queried).unwrap_or(0.0)).max(0.0));
    Some(PrefixView {
        queried,
        hits,
        hit_rate: queried.filter(|&q| q > 0.0).map(|q| (hits / q).min(1.0)),
        unit: after.unit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server_metrics::engines::sample_from_text;

    /// A vLLM page of: waiting, KV usage, preemptions, queue time's sum and count, prefix-cache
    /// queries and hits, then TTFT's requests under 0.1 s, all requests and sum.
    fn vllm(v: [f64; 10]) -> EngineSample {
        let [wait, kv, pre, q_sum, q_n, asked, hits, fast, n, sum] = v;
        let text = format!(
            "vllm:num_requests_waiting{{model_name=\"m\"}} {wait}\n\
             vllm:num_requests_running{{model_name=\"m\"}} 8\n\
             vllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv}\n\
             vllm:num_preemptions_total{{model_name=\"m\"}} {pre}\n\
             vllm:request_queue_time_seconds_sum{{model_name=\"m\"}} {q_sum}\n\
             vllm:request_queue_time_seconds_count{{model_name=\"m\"}} {q_n}\n\
             vllm:prefix_cache_queries_total{{model_name=\"m\"}} {asked}\n\
             vllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"0.1\",model_name=\"m\"}} {fast}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\",model_name=\"m\"}} {n}\n\
             vllm:time_to_first_token_seconds_sum{{model_name=\"m\"}} {sum}\n\
             vllm:time_to_first_token_seconds_count{{model_name=\"m\"}} {n}\n"
        );
        sample_from_text(&text, None, Some("m")).unwrap()
    }

    #[test]
    fn a_level_is_counter_deltas_and_gauge_averages() {
        let mut level = EngineLevel::new(vllm([
            50.0, 0.9, 1.0, 10.0, 100.0, 1000.0, 100.0, 90.0, 100.0, 5.0,
        ]));
        level.observe(&vllm([
            2.0, 0.5, 1.0, 10.0, 100.0, 1000.0, 100.0, 90.0, 100.0, 5.0,
        ]));
        level.observe(&vllm([
            6.0, 0.7, 2.0, 11.0, 110.0, 1500.0, 400.0, 95.0, 110.0, 5.6,
        ]));
        let v = level.finish(&vllm([
            4.0, 0.6, 4.0, 13.0, 120.0, 2000.0, 600.0, 100.0, 120.0, 6.4,
        ]));
        assert_eq!(
            v.waiting,
            Some(GaugeStats {
                avg: 4.0,
                max: 6.0,
                samples: 3
            })
        );
        assert_eq!(v.running.map(|g| g.avg), Some(8.0));
        assert_eq!(v.kv_usage.map(|g| g.max), Some(0.7));
        assert_eq!(v.preemptions, Some(3.0));
        assert!(
            (v.avg_queue_s.unwrap() - 0.15).abs() < 1e-12,
            "3 s over 20 requests"
        );
        let p = v.prefix_cache.unwrap();
        assert_eq!(
            (p.queried, p.hits, p.hit_rate),
            (Some(1000.0), 500.0, Some(0.5))
        );
        let t = v.server_ttft.unwrap();
        assert_eq!(t.count, 20.0);
        assert!((t.avg_s - 0.07).abs() < 1e-12);
        // 10 of the level's 20 first tokens fell under 0.1 s: the median is the bucket's top.
        assert!((t.p50_s.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(t.p99_s, Some(0.1), "past the last finite bound: that bound");
        assert!(v.model_matched);
        assert_eq!((v.avg_prefill_s, v.prefill_busy_s), (None, None));
        // Without a finished-request counter there is nothing to divide by.
        assert_eq!(v.estimated_queue_s(10.0), None);
    }

    #[test]
    fn counters_created_during_the_level_count_from_zero() {
        let start = sample_from_text("tgi_queue_size 0\n", None, None).unwrap();
        let end = sample_from_text(
            "tgi_queue_size 3\ntgi_request_success 12\ntgi_request_queue_duration_sum 6\ntgi_request_queue_duration_count 12\n",
            None,
            None,
        )
        .unwrap();
        let v = EngineLevel::new(start).finish(&end);
        assert_eq!(v.requests, Some(12.0));
        assert_eq!(v.avg_queue_s, Some(0.5));
        assert_eq!(
            v.waiting,
            Some(GaugeStats {
                avg: 3.0,
                max: 3.0,
                samples: 1
            })
        );
        assert_eq!(v.kv_usage, None);
        // Little's law: 3 waiting on average over 8 s while 12 requests finished.
        assert_eq!(v.estimated_queue_s(8.0), Some(2.0));
    }
}
