//! Reading the server's own view while a run goes: Triton's statistics extension and its
//! Prometheus counters before and after each level, and the engine's metrics page — whichever
//! engine it is ([`super::engines::detect`], or `--server-kind`) — with the GPUs' (Triton's own
//! page or a DCGM exporter's, `--gpu-metrics-url`), sampled every 500 ms while the level runs so
//! gauges (waiting, running, KV-cache usage, GPU utilization and power) are averaged over it.
//!
//! Requests to these endpoints carry only the headers the caller's client has (see
//! `engine::session::metrics_http_client`: never the API key).

use crate::error::UsageError;
use std::time::Duration as StdDuration;

use super::engines::{self, EngineSample};
use super::gpu::{self, GpuLevel, GpuSample, GpuView};
use super::level::{EngineLevel, EngineLevelView};
use super::prometheus;
use super::{
    MetricsSource, PageError, ServerDelta, ServerKind, Snapshot, StatsSnapshot, fetch_page,
    model_statistics_version, parse_prometheus,
};

/// How often gauges are sampled while a level runs.
pub const SAMPLE_EVERY: StdDuration = StdDuration::from_millis(500);

/// Where the server's statistics extension is reached.
pub enum StatsSource {
    /// Not available for this API.
    None,
    /// `GET /v2/models/{m}/stats`.
    Http(String),
    /// gRPC `ModelStatistics`, with the metadata the statistics call may carry.
    Grpc(tonic::transport::Channel, tonic::metadata::MetadataMap),
}

/// Which metrics pages to read, as the plan says.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeConfig {
    /// The server's `/metrics`.
    pub metrics: MetricsSource,
    /// The engine whose families to read (`--server-kind`); detected from the page when `None`.
    pub kind: Option<ServerKind>,
    /// A DCGM exporter's page (`--gpu-metrics-url`); without it GPUs are read from the server's
    /// page when it has Triton's GPU families.
    pub gpu_url: Option<String>,
    /// The target's origin (`scheme://host:port`): a page under it is the target's own.
    pub target_origin: String,
}

/// Where the metrics page came from, which says how much proof it needs to be the target's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageOrigin {
    /// Under the target's own origin: the same server by construction.
    Target,
    /// `--server-metrics-url`: the user's word; a page that disagrees is warned about, kept.
    Named,
    /// A guess at Triton's layout on the target's host: another server may answer there (an
    /// inference host often runs several), so it is used only once a level shows its request
    /// counter moving with the client's requests.
    Guessed,
}

impl PageOrigin {
    fn of(url: &str, cfg: &ProbeConfig) -> PageOrigin {
        if cfg.metrics.explicit() {
            PageOrigin::Named
        } else if !cfg.target_origin.is_empty()
            && url.starts_with(&format!("{}/", cfg.target_origin))
        {
            PageOrigin::Target
        } else {
            PageOrigin::Guessed
        }
    }
}

/// Whose counters a level's page read, judged from its request counter.
#[derive(Debug, Clone, PartialEq)]
pub enum Attribution {
    /// The target's (or nothing to judge).
    Target,
    /// Not the target's: the page is dropped for the rest of the run, and what the level read
    /// of it is to be dropped too. The line says why and which flag names the right page.
    Foreign {
        /// Why, and the flag that names the right page.
        line: String,
        /// The GPUs were read from that page too.
        with_gpus: bool,
    },
    /// The named page disagrees with the client: kept, with this warning.
    Doubtful(String),
}

/// A page counted at least this share of the requests the client finished to be the target's
/// (a shared server counts more, never fewer).
pub const MIN_COUNTED_SHARE: f64 = 0.5;

/// What one read of the metrics pages says.
#[derive(Debug, Clone, Default)]
struct Page {
    prom: Option<Snapshot>,
    engine: Option<EngineSample>,
    gpus: Vec<GpuSample>,
}

/// Reads the pages the probe settled on (cheap to clone into the sampling task).
#[derive(Clone)]
struct PageReader {
    http: reqwest::Client,
    prom_url: Option<String>,
    kind: Option<ServerKind>,
    gpu_url: Option<String>,
    model: String,
    /// The server's batch slots, read once (llama.cpp's `/slots`).
    slots: Option<u32>,
}

impl PageReader {
    /// One read of each page; a page that does not answer reads as empty.
    async fn read(&self) -> Page {
        let mut out = Page::default();
        if let Some(url) = &self.prom_url
            && let Ok(text) = fetch_page(&self.http, url).await
        {
            out = self.parse(&text, self.gpu_url.as_deref() == Some(url.as_str()));
        }
        if let Some(g) = self
            .gpu_url
            .as_ref()
            .filter(|g| Some(*g) != self.prom_url.as_ref())
            && let Ok(text) = fetch_page(&self.http, g).await
        {
            out.gpus = gpu::read_gpus(&prometheus::parse(&text));
        }
        out
    }

    fn parse(&self, text: &str, gpus: bool) -> Page {
        let page = prometheus::parse(text);
        Page {
            prom: parse_prometheus(text, &self.model),
            engine: self
                .kind
                .and_then(|k| engines::read_sample(&page, k, Some(&self.model))),
            gpus: if gpus {
                gpu::read_gpus(&page)
            } else {
                Vec::new()
            },
        }
    }
}

/// The server's own views, read before and after each level: the statistics extension
/// (per-model queue and compute time, as perf_analyzer reads it), Triton's Prometheus counters,
/// the engine's metrics and the GPUs'.
pub struct ServerProbe {
    reader: PageReader,
    stats: StatsSource,
    /// Model version whose gRPC statistics are read ("" = all versions, summed).
    version: String,
    /// Things the user should know about the server's metrics (printed once).
    pub notices: Vec<String>,
    /// Where the page read came from (`None` without one).
    origin: Option<PageOrigin>,
    /// The page's attribution has been warned about (said once a run).
    doubted: bool,
    /// What the server says it is (after [`ServerProbe::identify`]).
    pub identity: super::identity::ServerIdentity,
    /// What the server says about the model (after [`ServerProbe::identify`]), when it says.
    pub model: Option<serde_json::Value>,
}

/// Counters at one instant.
#[derive(Default, Debug, Clone)]
pub struct ProbeSnapshot {
    /// Triton's Prometheus counters.
    pub prom: Option<Snapshot>,
    /// Statistics extension counters.
    pub stats: Option<StatsSnapshot>,
    /// The engine's sample.
    pub engine: Option<EngineSample>,
    /// Every GPU's sample.
    pub gpus: Vec<GpuSample>,
}

/// What the sampling task saw while a level ran.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// Largest pending-request count of Triton's gauge.
    pub max_pending: f64,
    /// The engine's gauges and start counters.
    pub engine: Option<EngineLevel>,
    /// The GPUs' gauges and start counters.
    pub gpus: Option<GpuLevel>,
    /// The server's batch slots (llama.cpp's `/slots`).
    slots: Option<u32>,
}

impl Sampled {
    /// Nothing sampled yet, from the level's start.
    fn from_start(start: &ProbeSnapshot, slots: Option<u32>) -> Sampled {
        Sampled {
            max_pending: 0.0,
            engine: start.engine.clone().map(EngineLevel::new),
            gpus: (!start.gpus.is_empty()).then(|| GpuLevel::new(start.gpus.clone())),
            slots,
        }
    }

    fn observe(&mut self, page: &Page) {
        if let Some(p) = &page.prom {
            self.max_pending = self.max_pending.max(p.pending);
        }
        if let (Some(level), Some(s)) = (&mut self.engine, &page.engine) {
            level.observe(s);
        }
        if let Some(level) = &mut self.gpus
            && !page.gpus.is_empty()
        {
            level.observe(&page.gpus);
        }
    }

    /// The level's engine and GPU views, ending at `end` after `window_s` seconds.
    pub fn finish(
        self,
        end: &ProbeSnapshot,
        window_s: f64,
    ) -> (Option<EngineLevelView>, Option<GpuView>) {
        let engine = self
            .engine
            .zip(end.engine.as_ref())
            .map(|(level, e)| level.finish_over(e, window_s).with_slots(self.slots));
        let gpus = self
            .gpus
            .filter(|_| !end.gpus.is_empty())
            .map(|level| GpuView::new(level.finish(&end.gpus), window_s));
        (engine, gpus)
    }
}

/// The server's queue gauge as sampled so far: `(s since the sampling started, waiting
/// requests)` — the engine's waiting requests, else Triton's pending ones. At most
/// [`QUEUE_SAMPLES`] are kept: when full, every other one is dropped.
pub type QueueSeries = std::sync::Arc<std::sync::Mutex<Vec<(f64, f64)>>>;

/// Samples a [`QueueSeries`] keeps.
pub const QUEUE_SAMPLES: usize = 512;

/// The task sampling gauges while a level runs.
pub struct Sampler {
    handle: tokio::task::JoinHandle<Sampled>,
    stop: tokio::sync::oneshot::Sender<()>,
    /// The queue gauge so far, for the saturation signals read while the level runs.
    pub queue: QueueSeries,
}

/// The queue gauge of one read of the pages, when it has one.
fn queue_gauge(page: &Page) -> Option<f64> {
    page.engine
        .as_ref()
        .and_then(|e| e.waiting)
        .or_else(|| page.prom.as_ref().map(|p| p.pending))
}

impl Sampler {
    /// Stops sampling; what was seen.
    pub async fn finish(self) -> Option<Sampled> {
        let _ = self.stop.send(());
        self.handle.await.ok()
    }
}

impl ServerProbe {
    /// Judges whether the page read over the last level is the target's: `counted` is the
    /// requests its counter saw for the model (`None` when it has no request counter),
    /// `client` the requests the client finished in `level`. A page under the target's origin
    /// needs no proof. A guessed one that counted fewer than [`MIN_COUNTED_SHARE`] of them (or
    /// cannot count) is dropped for the rest of the run; a named one is kept with a warning,
    /// said once.
    pub fn attribute(&mut self, level: &str, counted: Option<f64>, client: u64) -> Attribution {
        let (Some(origin), Some(url)) = (self.origin, self.reader.prom_url.clone()) else {
            return Attribution::Target;
        };
        let short = counted.is_none_or(|c| c < client as f64 * MIN_COUNTED_SHARE);
        if origin == PageOrigin::Target || client == 0 || !short {
            return Attribution::Target;
        }
        let saw = match counted {
            Some(c) => format!(
                "it counted {} requests of model '{}' while {level} finished {client}",
                c.round(),
                self.reader.model,
            ),
            None => "it has no request counter to show it counts this target's requests".into(),
        };
        match origin {
            PageOrigin::Target => Attribution::Target,
            PageOrigin::Named if std::mem::replace(&mut self.doubted, true) => Attribution::Target,
            PageOrigin::Named => Attribution::Doubtful(format!(
                "warning: --server-metrics-url {url} may not be the target's metrics page: {saw}"
            )),
            PageOrigin::Guessed => {
                let with_gpus = self.reader.gpu_url.as_ref() == Some(&url);
                if with_gpus {
                    self.reader.gpu_url = None;
                }
                self.reader.prom_url = None;
                self.origin = None;
                Attribution::Foreign {
                    line: format!(
                        "server metrics: {url} is another server's, not the target's ({saw}); the server columns show '-': give --server-metrics-url with the target's /metrics page"
                    ),
                    with_gpus,
                }
            }
        }
    }

    /// Probes every source once. A guessed metrics page that does not answer is dropped
    /// silently; one the user named (`--server-metrics-url`, `--gpu-metrics-url`) that does not
    /// answer is a usage error, before any request is sent (a page that answers without the
    /// series sought is a warning: the run is still worth having).
    pub async fn new(
        http: reqwest::Client,
        model: &str,
        cfg: &ProbeConfig,
        stats: StatsSource,
    ) -> Result<ServerProbe, UsageError> {
        let mut notices = Vec::new();
        let found = find_metrics(&http, model, cfg, &mut notices).await?;
        let gpu_url = match &cfg.gpu_url {
            Some(url) => check_gpu_page(&http, url, &mut notices).await?,
            None => found.as_ref().filter(|f| f.has_gpus).map(|f| f.url.clone()),
        };
        let kind = found.as_ref().and_then(|f| f.kind);
        let slots = match (&found, kind) {
            (Some(f), Some(ServerKind::LlamaCpp)) => read_slots(&http, &f.url).await,
            _ => None,
        };
        let origin = found.as_ref().map(|f| PageOrigin::of(&f.url, cfg));
        let mut probe = ServerProbe {
            origin,
            doubted: false,
            reader: PageReader {
                http,
                prom_url: found.as_ref().map(|f| f.url.clone()),
                kind,
                gpu_url,
                model: model.to_string(),
                slots,
            },
            stats,
            version: String::new(),
            notices,
            identity: super::identity::ServerIdentity::default(),
            model: None,
        };
        if let Err(e) = probe.read_stats().await {
            probe.notices.push(e.to_string());
            probe.stats = StatsSource::None;
        }
        Ok(probe)
    }

    /// Reads once who the server is (see [`super::identity`]): over gRPC when `grpc` gives the
    /// channel and its metadata, else over HTTP at `base_url` (with the metrics client: no API
    /// key). `model` is what the session learned of the model.
    pub async fn identify(
        &mut self,
        base_url: &str,
        grpc: Option<(tonic::transport::Channel, &tonic::metadata::MetadataMap)>,
        model: Option<serde_json::Value>,
    ) {
        use super::identity;
        self.identity = match grpc {
            Some((channel, md)) => identity::identify_grpc(channel, md).await,
            None => identity::identify_http(&self.reader.http, base_url).await,
        };
        self.model = model;
    }

    /// Reads the gRPC statistics of one model version only (perf_analyzer's `-x`), not the sum
    /// over every loaded version. (For HTTP the version is part of the [`StatsSource::Http`] URL.)
    pub fn with_version(mut self, version: &str) -> ServerProbe {
        self.version = version.to_string();
        self
    }

    /// Reads the statistics extension once (`Ok(None)` when there is no source).
    pub async fn read_stats(&self) -> Result<Option<StatsSnapshot>, StatsError> {
        match &self.stats {
            StatsSource::None => Ok(None),
            StatsSource::Http(url) => {
                let resp = self
                    .reader
                    .http
                    .get(url)
                    .send()
                    .await
                    .map_err(StatsError::Request)?;
                let status = resp.status();
                if status == 403 || status == 401 {
                    return Err(StatsError::Restricted);
                }
                if !status.is_success() {
                    return Err(StatsError::Status {
                        url: url.clone(),
                        status,
                    });
                }
                let v: serde_json::Value = resp.json().await.map_err(StatsError::Body)?;
                StatsSnapshot::from_json(&v)
                    .map(Some)
                    .ok_or(StatsError::NoModelStats)
            }
            StatsSource::Grpc(channel, md) => {
                model_statistics_version(channel.clone(), &self.reader.model, &self.version, md)
                    .await
                    .map(Some)
                    .map_err(|s| {
                        if matches!(
                            s.code(),
                            tonic::Code::PermissionDenied | tonic::Code::Unauthenticated
                        ) || s.message().contains("restricted")
                        {
                            StatsError::Restricted
                        } else {
                            StatsError::Grpc(s)
                        }
                    })
            }
        }
    }

    /// Every source now: the metrics pages first, then the statistics.
    pub async fn snapshot(&self) -> ProbeSnapshot {
        let page = self.reader.read().await;
        ProbeSnapshot {
            prom: page.prom,
            stats: self.read_stats().await.ok().flatten(),
            engine: page.engine,
            gpus: page.gpus,
        }
    }

    /// The statistics first, then the metrics pages without Triton's counters: for stability
    /// windows, whose boundaries are the statistics reads.
    pub async fn snapshot_stats_first(&self) -> ProbeSnapshot {
        let stats = self.read_stats().await.ok().flatten();
        let page = self.reader.read().await;
        ProbeSnapshot {
            prom: None,
            stats,
            engine: page.engine,
            gpus: page.gpus,
        }
    }

    /// Triton's view of a level: statistics when available (with the pending gauge from
    /// Prometheus), else Prometheus alone.
    pub fn delta(
        before: &ProbeSnapshot,
        after: &ProbeSnapshot,
        max_pending: f64,
    ) -> Option<ServerDelta> {
        match (&before.stats, &after.stats, &before.prom, &after.prom) {
            (Some(b), Some(a), _, _) => Some(ServerDelta::from_stats(b, a, max_pending)),
            (_, _, Some(b), Some(a)) => Some(ServerDelta::between(b, a, max_pending)),
            _ => None,
        }
    }

    /// Samples the metrics pages every [`SAMPLE_EVERY`] from `start` until told to stop;
    /// `None` when there is no page to read.
    pub fn start_sampler(&self, start: &ProbeSnapshot) -> Option<Sampler> {
        if self.reader.prom_url.is_none() && self.reader.gpu_url.is_none() {
            return None;
        }
        let reader = self.reader.clone();
        let mut sampled = Sampled::from_start(start, reader.slots);
        let (stop, mut rx) = tokio::sync::oneshot::channel::<()>();
        let queue = QueueSeries::default();
        let feed = queue.clone();
        let t0 = std::time::Instant::now();
        let handle = tokio::spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate: that sample is the start's, already taken.
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = &mut rx => break,
                    _ = tick.tick() => {
                        let page = reader.read().await;
                        if let (Some(q), Ok(mut series)) = (queue_gauge(&page), feed.lock()) {
                            if series.len() >= QUEUE_SAMPLES {
                                let kept = series.iter().step_by(2).copied().collect();
                                *series = kept;
                            }
                            series.push((t0.elapsed().as_secs_f64(), q));
                        }
                        sampled.observe(&page);
                    }
                }
            }
            sampled
        });
        Some(Sampler {
            handle,
            stop,
            queue,
        })
    }
}

/// The metrics page the probe reads.
struct Found {
    url: String,
    kind: Option<ServerKind>,
    has_gpus: bool,
}

/// Why the statistics extension could not be read: a note for the run's output, which goes on
/// without the server's queue and compute times.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// The server wants its access token.
    #[error(
        "note: the statistics API is restricted: add -H 'triton-access-token: TOKEN' (the header the server's --http-restricted-api / --grpc-restricted-protocol setting names) to see server queue and compute time"
    )]
    Restricted,
    /// No answer over HTTP.
    #[error("note: statistics unavailable: {0}")]
    Request(#[source] reqwest::Error),
    /// An HTTP answer other than success.
    #[error("note: statistics unavailable: {url} answered HTTP {status}")]
    Status {
        /// The statistics URL.
        url: String,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// A gRPC error.
    #[error("note: statistics unavailable: {:?}: {}", .0.code(), .0.message())]
    Grpc(tonic::Status),
    /// A body that is not JSON.
    #[error("note: statistics unreadable: {0}")]
    Body(#[source] reqwest::Error),
    /// JSON without `model_stats`.
    #[error("note: statistics unreadable: no model_stats")]
    NoModelStats,
}

/// The first candidate URL with metrics for `model`: Triton's counters or an engine's families.
async fn find_metrics(
    http: &reqwest::Client,
    model: &str,
    cfg: &ProbeConfig,
    notices: &mut Vec<String>,
) -> Result<Option<Found>, UsageError> {
    let explicit = cfg.metrics.explicit();
    for url in cfg.metrics.candidates() {
        let text = match fetch_page(http, url).await {
            Ok(t) => t,
            // A default URL is a guess; an explicit --server-metrics-url that does not answer
            // is a mistake to fix before measuring.
            Err(e) if explicit => return Err(unanswered("--server-metrics-url", &e)),
            Err(_) => continue,
        };
        let page = prometheus::parse(&text);
        let detected = engines::detect(&page);
        let kind = cfg.kind.or(detected);
        // Triton lists every loaded model by name: another model's counters are not this one's.
        // A guessed page must name the model whatever its engine: another server may answer
        // there.
        let guessed = PageOrigin::of(url, cfg) == PageOrigin::Guessed;
        let engine = kind
            .and_then(|k| engines::read_sample(&page, k, Some(model)))
            .filter(|e| e.model_matched || (e.kind != ServerKind::Triton && !guessed));
        let triton = parse_prometheus(&text, model);
        if let (Some(forced), None) = (cfg.kind, &engine) {
            notices.push(format!(
                "warning: --server-kind {forced}: {url} has none of {}'s metric families{}",
                super::split::engine_name(forced),
                detected.map_or(String::new(), |d| format!(" (it looks like {d})"))
            ));
        }
        if engine.is_none() && triton.is_none() {
            if explicit {
                notices.push(format!(
                    "warning: server metrics unavailable: {url} has no metrics this version reads for model '{model}' (Triton, TensorRT-LLM, vLLM, SGLang, TGI or llama.cpp families; llama-server needs --metrics)"
                ));
            }
            continue;
        }
        if let Some(e) = engine.as_ref().filter(|e| !e.model_matched) {
            notices.push(format!(
                "note: {url} has no {} series labelled '{model}'; reading the page's {} series",
                e.kind,
                if kind == Some(ServerKind::TrtLlm) {
                    "TensorRT-LLM model's"
                } else {
                    "only model's (or every)"
                }
            ));
        }
        return Ok(Some(Found {
            url: url.clone(),
            kind: engine.map(|e| e.kind),
            has_gpus: !gpu::read_gpus(&page).is_empty(),
        }));
    }
    Ok(None)
}

/// How many batch slots a llama-server has: the length of its `/slots` array, at the metrics
/// page's origin (`None` when the server runs without `--slots`, or answers something else).
async fn read_slots(http: &reqwest::Client, metrics_url: &str) -> Option<u32> {
    let url = slots_url(metrics_url)?;
    let text = fetch_page(http, &url).await.ok()?;
    slot_count(&text)
}

/// `/slots` at the origin of `metrics_url` (its path, query and fragment replaced).
pub fn slots_url(metrics_url: &str) -> Option<String> {
    let mut u = reqwest::Url::parse(metrics_url).ok()?;
    u.set_path("/slots");
    u.set_query(None);
    u.set_fragment(None);
    Some(u.to_string())
}

/// The number of slots in a `/slots` body: a JSON array with one object a slot.
pub fn slot_count(body: &str) -> Option<u32> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let slots = v.as_array()?;
    let all_slots = slots.iter().all(|s| s.get("id").is_some());
    (all_slots && !slots.is_empty()).then(|| u32::try_from(slots.len()).unwrap_or(u32::MAX))
}

/// The error of a metrics page the user named that does not answer.
fn unanswered(flag: &str, e: &PageError) -> UsageError {
    UsageError(format!(
        "{flag}: {e}; nothing was sent. Check the address and port (Triton serves /metrics on 8002, a DCGM exporter on 9400), or leave {flag} out to run without that view"
    ))
}

/// `url` when it answers with GPU series; a warning when it answers without; a usage error when
/// it does not answer.
async fn check_gpu_page(
    http: &reqwest::Client,
    url: &str,
    notices: &mut Vec<String>,
) -> Result<Option<String>, UsageError> {
    match fetch_page(http, url).await {
        Ok(text) if !gpu::read_gpus(&prometheus::parse(&text)).is_empty() => {
            Ok(Some(url.to_string()))
        }
        Ok(_) => {
            notices.push(format!(
                "warning: GPU metrics unavailable: {url} has no GPU series (nv_gpu_* or DCGM_FI_DEV_*)"
            ));
            Ok(None)
        }
        Err(e) => Err(unanswered("--gpu-metrics-url", &e)),
    }
}
