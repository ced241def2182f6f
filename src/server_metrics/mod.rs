//! Triton's own view of a level: its Prometheus counters (`/metrics`), scraped before and after
//! the level and subtracted, so the server's queue and compute time sit beside the client's TTFT.
//!
//! Counters used (all cumulative, labelled `model` and `version`; summed over versions):
//! `nv_inference_request_success`, `nv_inference_request_failure`, `nv_inference_count`,
//! `nv_inference_exec_count`, `nv_inference_request_duration_us`, `nv_inference_queue_duration_us`,
//! `nv_inference_compute_input_duration_us`, `nv_inference_compute_infer_duration_us`,
//! `nv_inference_compute_output_duration_us`; gauge `nv_inference_pending_request_count`.

pub mod engines;
pub mod gpu;
pub mod grpc;
pub mod identity;
pub mod kind;
pub mod level;
pub mod probe;
pub mod prometheus;
pub mod split;

pub use kind::ServerKind;
pub use probe::{Attribution, ProbeConfig, ProbeSnapshot, Sampler, ServerProbe, StatsSource};

use serde::Serialize;

/// Where the server's own metrics come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricsSource {
    /// Try these URLs in order (the first with metrics for the model wins); silently absent
    /// when none answers.
    Auto(Vec<String>),
    /// The user asked for this URL; say so when it fails.
    Url(String),
}

impl MetricsSource {
    /// The URL tried first.
    pub fn url(&self) -> &str {
        self.candidates().first().map_or("", String::as_str)
    }

    /// Every URL to try, in order.
    pub fn candidates(&self) -> &[String] {
        match self {
            MetricsSource::Auto(u) => u,
            MetricsSource::Url(u) => std::slice::from_ref(u),
        }
    }

    /// Whether the user named the URL (its failure deserves a warning).
    pub fn explicit(&self) -> bool {
        matches!(self, MetricsSource::Url(_))
    }
}

/// Cumulative per-model counters at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    /// Successful requests.
    pub success: f64,
    /// Failed requests (all reasons).
    pub failure: f64,
    /// Inferences (batch elements).
    pub inference_count: f64,
    /// Model executions.
    pub exec_count: f64,
    /// Cumulative end-to-end server time (µs).
    pub request_us: f64,
    /// Cumulative queue time (µs).
    pub queue_us: f64,
    /// Cumulative compute-input time (µs).
    pub compute_input_us: f64,
    /// Cumulative compute-infer time (µs).
    pub compute_infer_us: f64,
    /// Cumulative compute-output time (µs).
    pub compute_output_us: f64,
    /// Requests waiting in the queue now.
    pub pending: f64,
    /// Whether the queue counter exists (older Triton versions name it differently).
    pub has_queue: bool,
}

/// Parses Prometheus text exposition and extracts the Triton counters of `model`.
/// Returns `None` when the text has no Triton inference counters for that model.
pub fn parse_prometheus(text: &str, model: &str) -> Option<Snapshot> {
    let mut s = Snapshot::default();
    let mut seen = false;
    let page = prometheus::parse(text);
    for sample in page
        .samples
        .iter()
        .filter(|x| x.label("model") == Some(model))
    {
        let slot = match sample.name.as_str() {
            "nv_inference_request_success" => &mut s.success,
            "nv_inference_request_failure" => &mut s.failure,
            "nv_inference_count" => &mut s.inference_count,
            "nv_inference_exec_count" => &mut s.exec_count,
            "nv_inference_request_duration_us" => &mut s.request_us,
            "nv_inference_queue_duration_us" => {
                s.has_queue = true;
                &mut s.queue_us
            }
            "nv_inference_compute_input_duration_us" => &mut s.compute_input_us,
            "nv_inference_compute_infer_duration_us" => &mut s.compute_infer_us,
            "nv_inference_compute_output_duration_us" => &mut s.compute_output_us,
            "nv_inference_pending_request_count" => &mut s.pending,
            _ => continue,
        };
        *slot += sample.value;
        seen = true;
    }
    seen.then_some(s)
}

/// What the server did during a level: differences of its counters, as averages per request.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerDelta {
    /// Where the numbers come from (`prometheus` or `statistics`).
    pub source: &'static str,
    /// Requests the server completed successfully during the level.
    pub requests: u64,
    /// Requests the server failed during the level.
    pub failures: u64,
    /// Model executions (batches) during the level.
    pub executions: u64,
    /// Average end-to-end server time per request (ms).
    pub avg_request_ms: f64,
    /// Average queue time per request (ms); `None` when the server has no queue counter.
    pub avg_queue_ms: Option<f64>,
    /// Average compute-input time (ms).
    pub avg_compute_input_ms: f64,
    /// Average compute-infer time (ms).
    pub avg_compute_infer_ms: f64,
    /// Average compute-output time (ms).
    pub avg_compute_output_ms: f64,
    /// Queue time as a share of server time (0–1).
    pub queue_share: Option<f64>,
    /// Most requests seen waiting in the server's queue during the level.
    pub max_pending: f64,
}

impl ServerDelta {
    /// Difference between two snapshots; `max_pending` is the largest gauge value sampled.
    pub fn between(before: &Snapshot, after: &Snapshot, max_pending: f64) -> ServerDelta {
        let d = |a: f64, b: f64| (b - a).max(0.0);
        let requests = d(before.success, after.success);
        let per = |total_us: f64| {
            if requests > 0.0 {
                total_us / requests / 1000.0
            } else {
                0.0
            }
        };
        let request_us = d(before.request_us, after.request_us);
        let queue_us = d(before.queue_us, after.queue_us);
        let avg_queue_ms = after.has_queue.then(|| per(queue_us));
        let queue_share =
            (after.has_queue && request_us > 0.0).then(|| (queue_us / request_us).min(1.0));
        ServerDelta {
            source: "prometheus",
            requests: requests as u64,
            failures: d(before.failure, after.failure) as u64,
            executions: d(before.exec_count, after.exec_count) as u64,
            avg_request_ms: per(request_us),
            avg_queue_ms,
            avg_compute_input_ms: per(d(before.compute_input_us, after.compute_input_us)),
            avg_compute_infer_ms: per(d(before.compute_infer_us, after.compute_infer_us)),
            avg_compute_output_ms: per(d(before.compute_output_us, after.compute_output_us)),
            queue_share,
            max_pending: max_pending.max(after.pending).max(before.pending),
        }
    }
}

/// One `{count, ns}` pair of the statistics extension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Duration {
    /// Events.
    pub count: u64,
    /// Total nanoseconds.
    pub ns: u64,
}

/// Cumulative per-model statistics from Triton's statistics extension (summed over versions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Batch elements inferred.
    pub inference_count: u64,
    /// Model executions.
    pub execution_count: u64,
    /// Successful requests (count, total time).
    pub success: Duration,
    /// Failed requests.
    pub fail: Duration,
    /// Time in the queue.
    pub queue: Duration,
    /// Input preparation.
    pub compute_input: Duration,
    /// Model execution.
    pub compute_infer: Duration,
    /// Output extraction.
    pub compute_output: Duration,
}

impl StatsSnapshot {
    /// From the gRPC `ModelStatisticsResponse.model_stats`.
    pub fn from_proto(stats: &[crate::proto::ModelStatistics]) -> StatsSnapshot {
        let d = |x: &Option<crate::proto::StatisticDuration>| {
            x.as_ref().map_or(Duration::default(), |v| Duration {
                count: v.count,
                ns: v.ns,
            })
        };
        let mut out = StatsSnapshot::default();
        for m in stats {
            out.inference_count += m.inference_count;
            out.execution_count += m.execution_count;
            if let Some(i) = &m.inference_stats {
                out.success.add(d(&i.success));
                out.fail.add(d(&i.fail));
                out.queue.add(d(&i.queue));
                out.compute_input.add(d(&i.compute_input));
                out.compute_infer.add(d(&i.compute_infer));
                out.compute_output.add(d(&i.compute_output));
            }
        }
        out
    }

    /// From the HTTP `GET /v2/models/{m}/stats` JSON.
    pub fn from_json(v: &serde_json::Value) -> Option<StatsSnapshot> {
        let stats = v.get("model_stats")?.as_array()?;
        let num =
            |x: Option<&serde_json::Value>| x.and_then(serde_json::Value::as_u64).unwrap_or(0);
        let d = |i: &serde_json::Value, k: &str| Duration {
            count: num(i.get(k).and_then(|x| x.get("count"))),
            ns: num(i.get(k).and_then(|x| x.get("ns"))),
        };
        let mut out = StatsSnapshot::default();
        for m in stats {
            out.inference_count += num(m.get("inference_count"));
            out.execution_count += num(m.get("execution_count"));
            if let Some(i) = m.get("inference_stats") {
                out.success.add(d(i, "success"));
                out.fail.add(d(i, "fail"));
                out.queue.add(d(i, "queue"));
                out.compute_input.add(d(i, "compute_input"));
                out.compute_infer.add(d(i, "compute_infer"));
                out.compute_output.add(d(i, "compute_output"));
            }
        }
        Some(out)
    }
}

impl Duration {
    fn add(&mut self, o: Duration) {
        self.count += o.count;
        self.ns += o.ns;
    }

    fn since(self, before: Duration) -> Duration {
        Duration {
            count: self.count.saturating_sub(before.count),
            ns: self.ns.saturating_sub(before.ns),
        }
    }

    /// Average in ms per event (0 without events).
    fn avg_ms(self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.ns as f64 / self.count as f64 / 1e6
        }
    }
}

impl ServerDelta {
    /// Difference between two statistics snapshots, as perf_analyzer computes it: each phase's
    /// time over its own count.
    pub fn from_stats(
        before: &StatsSnapshot,
        after: &StatsSnapshot,
        max_pending: f64,
    ) -> ServerDelta {
        let success = after.success.since(before.success);
        let queue = after.queue.since(before.queue);
        let ci = after.compute_input.since(before.compute_input);
        let cf = after.compute_infer.since(before.compute_infer);
        let co = after.compute_output.since(before.compute_output);
        let accounted = queue.ns + ci.ns + cf.ns + co.ns;
        ServerDelta {
            source: "statistics",
            requests: success.count,
            failures: after.fail.since(before.fail).count,
            executions: after.execution_count.saturating_sub(before.execution_count),
            avg_request_ms: success.avg_ms(),
            avg_queue_ms: Some(queue.avg_ms()),
            avg_compute_input_ms: ci.avg_ms(),
            avg_compute_infer_ms: cf.avg_ms(),
            avg_compute_output_ms: co.avg_ms(),
            queue_share: (accounted > 0).then(|| queue.ns as f64 / accounted as f64),
            max_pending,
        }
    }

    /// The statistics extension's per-phase averages (ms) without their counts, as
    /// perf_analyzer's CSV keeps them: the server time is the phases' sum, the queue share is
    /// the queue's part of it.
    pub fn from_phase_avgs(queue: f64, input: f64, infer: f64, output: f64) -> ServerDelta {
        let total = queue + input + infer + output;
        ServerDelta {
            source: "statistics",
            avg_request_ms: total,
            avg_queue_ms: Some(queue),
            avg_compute_input_ms: input,
            avg_compute_infer_ms: infer,
            avg_compute_output_ms: output,
            queue_share: (total > 0.0).then(|| queue / total),
            ..ServerDelta::default()
        }
    }
}

/// Largest metrics page read (a server with thousands of series stays far below it).
const MAX_PAGE_BYTES: usize = 16 << 20;

/// Why a metrics page could not be read: the URL and what happened. A default URL that does
/// not answer is skipped; an explicit one is a usage error the caller words (its flag).
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// No answer.
    #[error("cannot reach {url}: {}", crate::error::error_chain(.source))]
    Unreachable {
        /// The page.
        url: String,
        /// What the client said.
        source: reqwest::Error,
    },
    /// An answer other than success.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The page.
        url: String,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// The body broke off.
    #[error("reading {url}: {source}")]
    Read {
        /// The page.
        url: String,
        /// What the client said.
        source: reqwest::Error,
    },
    /// A page past `MAX_PAGE_BYTES`.
    #[error("{url}: the page is larger than {MAX_PAGE_BYTES} bytes")]
    TooLarge {
        /// The page.
        url: String,
    },
}

/// Fetches a metrics page as text.
pub async fn fetch_page(client: &reqwest::Client, url: &str) -> Result<String, PageError> {
    let mut resp = client
        .get(url)
        .timeout(std::time::Duration::from_secs(5))
        .send()
        .await
        .map_err(|source| PageError::Unreachable {
            url: url.into(),
            source,
        })?;
    if !resp.status().is_success() {
        return Err(PageError::Status {
            url: url.into(),
            status: resp.status(),
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|source| PageError::Read {
        url: url.into(),
        source,
    })? {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(PageError::TooLarge { url: url.into() });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Cumulative per-model statistics (Triton's statistics extension).
pub async fn model_statistics(
    channel: tonic::transport::Channel,
    model: &str,
    md: &tonic::metadata::MetadataMap,
) -> Result<StatsSnapshot, tonic::Status> {
    model_statistics_version(channel, model, "", md).await
}

/// [`model_statistics`] of one version (`""` = every version, summed).
pub async fn model_statistics_version(
    channel: tonic::transport::Channel,
    model: &str,
    version: &str,
    md: &tonic::metadata::MetadataMap,
) -> Result<StatsSnapshot, tonic::Status> {
    use crate::proto::ModelStatisticsRequest;
    let mut c =
        crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient::new(channel);
    let resp = c
        .model_statistics(grpc::with_metadata(
            tonic::Request::new(ModelStatisticsRequest {
                name: model.to_string(),
                version: version.to_string(),
            }),
            md,
        ))
        .await?
        .into_inner();
    Ok(StatsSnapshot::from_proto(&resp.model_stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="gpt2",version="1"} 120
nv_inference_request_success{model="other",version="1"} 5
nv_inference_request_failure{model="gpt2",reason="BACKEND",version="1"} 2
nv_inference_request_failure{model="gpt2",reason="REJECTED",version="1"} 1
nv_inference_count{model="gpt2",version="1"} 120
nv_inference_exec_count{model="gpt2",version="1"} 40
nv_inference_request_duration_us{model="gpt2",version="1"} 6000000
nv_inference_queue_duration_us{model="gpt2",version="1"} 1200000
nv_inference_compute_input_duration_us{model="gpt2",version="1"} 12000
nv_inference_compute_infer_duration_us{model="gpt2",version="1"} 4700000
nv_inference_compute_output_duration_us{model="gpt2",version="1"} 24000
nv_inference_pending_request_count{model="gpt2",version="1"} 3
nv_gpu_utilization{gpu_uuid="GPU-1"} 0.5
"#;

    #[test]
    fn parses_triton_counters_for_one_model() {
        let s = parse_prometheus(TEXT, "gpt2").unwrap();
        assert_eq!(s.success, 120.0);
        assert_eq!(s.failure, 3.0);
        assert_eq!(s.exec_count, 40.0);
        assert_eq!(s.queue_us, 1_200_000.0);
        assert_eq!(s.pending, 3.0);
        assert!(s.has_queue);
        assert!(parse_prometheus(TEXT, "missing").is_none());
        assert!(parse_prometheus("garbage\n{{{", "gpt2").is_none());
    }

    #[test]
    fn delta_averages_per_request() {
        let before = Snapshot {
            success: 20.0,
            request_us: 1_000_000.0,
            queue_us: 200_000.0,
            has_queue: true,
            ..Default::default()
        };
        let after = parse_prometheus(TEXT, "gpt2").unwrap();
        let d = ServerDelta::between(&before, &after, 7.0);
        assert_eq!(d.requests, 100);
        assert!((d.avg_request_ms - 50.0).abs() < 1e-9);
        assert!((d.avg_queue_ms.unwrap() - 10.0).abs() < 1e-9);
        assert!((d.queue_share.unwrap() - 0.2).abs() < 1e-9);
        assert!((d.avg_compute_infer_ms - 47.0).abs() < 1e-9);
        assert_eq!(d.max_pending, 7.0);
    }

    #[test]
    fn statistics_delta_like_perf_analyzer() {
        let json = serde_json::json!({"model_stats": [{"name": "gpt2", "version": "1", "inference_count": 30, "execution_count": 10,
            "inference_stats": {"success": {"count": 30, "ns": 3_000_000_000u64}, "fail": {"count": 1, "ns": 5},
                "queue": {"count": 30, "ns": 900_000_000u64}, "compute_input": {"count": 30, "ns": 30_000_000u64},
                "compute_infer": {"count": 30, "ns": 2_040_000_000u64}, "compute_output": {"count": 30, "ns": 30_000_000u64},
                "cache_hit": {"count": 0, "ns": 0}, "cache_miss": {"count": 0, "ns": 0}}}]});
        let after = StatsSnapshot::from_json(&json).unwrap();
        let before = StatsSnapshot {
            success: Duration {
                count: 10,
                ns: 1_000_000_000,
            },
            queue: Duration {
                count: 10,
                ns: 100_000_000,
            },
            ..Default::default()
        };
        let d = ServerDelta::from_stats(&before, &after, 2.0);
        assert_eq!(d.source, "statistics");
        assert_eq!(d.requests, 20);
        assert_eq!(d.failures, 1);
        assert!((d.avg_request_ms - 100.0).abs() < 1e-9);
        assert!((d.avg_queue_ms.unwrap() - 40.0).abs() < 1e-9);
        assert!((d.avg_compute_infer_ms - 68.0).abs() < 1e-9);
        assert!((d.queue_share.unwrap() - 800.0 / 2900.0).abs() < 1e-9);
    }

    #[test]
    fn label_parsing_handles_escapes_and_order() {
        let page = r#"nv_inference_count{version="1",model="a\"b"} 4"#;
        assert_eq!(parse_prometheus(page, "a\"b").unwrap().inference_count, 4.0);
        let unlabelled = r#"nv_inference_count{version="1"} 4"#;
        assert_eq!(parse_prometheus(unlabelled, "m"), None);
    }
}
