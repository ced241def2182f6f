//! Server-wide state shared by every protocol: the model table with each model's engine and
//! counters, the fault decider, credentials, and the path every inference request takes from
//! "validated" to "tokens flowing" ([`SimState::begin`]), and the one a tensor request takes from
//! "validated" to "executed" ([`SimState::run_tensor`]).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;

use super::batcher::{Batcher, BatcherConfig, ExecTimes};
use super::engine::{Engine, SubmitError, TokenSource, Work};
use super::faults::{FaultPlan, Faults};
use super::grpc_wire::ModelWire;
use super::kv::block_hashes;
use super::metrics::{EngineTimes, FailReason, ModelMetrics, Tracker, elapsed_ns};
use super::models::{ModelKind, ModelSpec};
use super::request::Prompt;
use super::tensor::TensorWire;
use super::tokens;
use crate::workload::tokenizer::Tokenizer;

/// One hosted model with everything precomputed for serving it.
pub(crate) struct ModelEntry {
    /// What the model is.
    pub(crate) spec: ModelSpec,
    /// Its counters.
    pub(crate) metrics: Arc<ModelMetrics>,
    /// Its engine (LLMs); `None` in instant mode and for tensor models.
    pub(crate) engine: Option<Arc<Engine>>,
    /// Its dynamic batcher (tensor models); `None` in instant mode and for LLMs.
    pub(crate) batcher: Option<Arc<Batcher>>,
    /// KV block size when its engine caches prefixes (prompts are then hashed per block).
    prefix_block: Option<u32>,
    /// Precomputed answers (tensor models).
    pub(crate) tensor: Option<TensorWire>,
    /// Metadata JSON body.
    pub(crate) metadata_json: Bytes,
    /// Model configuration JSON body.
    pub(crate) config_json: Bytes,
    /// `generate_stream` events for requests without an `id`, one per output word, shared.
    pub(crate) generate_events: Arc<[Bytes]>,
    /// Precomputed gRPC response pieces.
    pub(crate) wire: ModelWire,
}

impl ModelEntry {
    /// Prepares model `spec` and starts its engine (LLMs) or batcher (tensor models) with
    /// `engine` timing, unless that timing is instant; counters are kept as `style` exports
    /// them.
    fn start(
        spec: ModelSpec,
        engine: super::EngineConfig,
        style: crate::server_metrics::ServerKind,
        shutdown: &watch::Receiver<bool>,
    ) -> (ModelEntry, Option<tokio::task::JoinHandle<()>>) {
        let is_tensor = spec.kind == ModelKind::Tensor;
        let batch_stats = if is_tensor { spec.max_batch() } else { 0 };
        let metrics = ModelMetrics::with_batch_stats(&spec.name, &spec.version, batch_stats);
        let metrics = Arc::new(metrics.styled(style, !is_tensor));
        if !is_tensor {
            metrics.engine.configure(&engine);
        }
        let (llm_engine, batcher, task) = if engine.is_instant() {
            (None, None, None)
        } else if is_tensor {
            let bcfg = BatcherConfig::for_model(&spec, &engine);
            let (b, task) = Batcher::spawn(bcfg, metrics.clone(), shutdown.clone());
            (None, Some(b), Some(task))
        } else {
            let (e, task) = Engine::spawn(engine.clone(), metrics.clone(), shutdown.clone());
            (Some(e), None, Some(task))
        };
        let generate_events = tokens::WORDS
            .iter()
            .map(|w| {
                let event = serde_json::json!({
                    "model_name": spec.name,
                    "model_version": spec.version,
                    "text_output": w,
                });
                Bytes::from(format!("data: {event}\n\n"))
            })
            .collect();
        let entry = ModelEntry {
            metadata_json: Bytes::from(spec.metadata_json().to_string()),
            config_json: Bytes::from(spec.config_json().to_string()),
            generate_events,
            wire: ModelWire::new(&spec),
            tensor: is_tensor.then(|| TensorWire::new(&spec)),
            prefix_block: (llm_engine.is_some() && engine.prefix_caching)
                .then_some(engine.kv_block_size),
            spec,
            metrics,
            engine: llm_engine,
            batcher,
        };
        (entry, task)
    }

    /// True for text-generation models.
    pub(crate) fn is_llm(&self) -> bool {
        matches!(self.spec.kind, ModelKind::Llm(_))
    }

    /// Records a request that arrived at `arrival` and failed validation (reason `OTHER`).
    pub(crate) fn record_invalid(&self, arrival: Instant) {
        self.metrics
            .record_failure(FailReason::Other, elapsed_ns(arrival));
    }
}

/// Why an inference request did not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BeginError {
    /// The `unavailable` fault is on.
    Unavailable,
    /// The `error_rate` fault hit this request.
    Injected,
    /// The engine queue is full.
    QueueFull,
    /// The server is shutting down.
    ShuttingDown,
}

/// A request for a model (or a version of it) the simulator does not host: Triton's message
/// (HTTP 400 on KServe routes, gRPC `NOT_FOUND`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Request for unknown model: '{name}' {}is not found", version_text(.version))]
pub(crate) struct UnknownModel {
    /// The model as named.
    pub(crate) name: String,
    /// The version asked for, when it is the version that is unknown.
    pub(crate) version: Option<String>,
}

/// Why a generative route (OpenAI, Anthropic, embeddings, rerank) has no text model for a
/// request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoTextModel {
    /// The request named no model, and no text model is hosted.
    #[error("no text model is hosted")]
    NoneHosted,
    /// The request named a model that is not a hosted text model.
    #[error("The model `{0}` does not exist.")]
    Unknown(String),
}

fn version_text(version: &Option<String>) -> String {
    version
        .as_ref()
        .map(|v| format!("version {v} "))
        .unwrap_or_default()
}

impl BeginError {
    /// Message for the client.
    pub(crate) fn message(self) -> &'static str {
        match self {
            BeginError::Unavailable => "server unavailable (fault injection: unavailable)",
            BeginError::Injected => "injected fault: internal error (fault injection: error_rate)",
            BeginError::QueueFull => "queue full",
            BeginError::ShuttingDown => "server is shutting down",
        }
    }
}

impl From<SubmitError> for BeginError {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::QueueFull => BeginError::QueueFull,
            SubmitError::ShuttingDown => BeginError::ShuttingDown,
        }
    }
}

/// A request whose tokens are on their way.
#[derive(Debug)]
pub(crate) struct Generation {
    /// Where the tokens come from.
    pub(crate) source: TokenSource,
    /// Records the request's outcome.
    pub(crate) tracker: Tracker,
    /// Faults to apply while streaming.
    pub(crate) plan: FaultPlan,
    /// Input token count (0 when it was not needed and so not counted).
    pub(crate) input_tokens: u32,
}

impl Generation {
    /// Records success now, with the engine's timestamps.
    pub(crate) fn succeed(&mut self) {
        let engine = EngineTimes {
            admitted: self.source.admitted_at(),
            first_token: self.source.first_token_at(),
            last_token: self.source.last_token_at(),
        };
        let n = self.source.emitted();
        self.tracker.succeed(engine, n);
    }

    /// Waits for every token (non-streaming responses). Fails like the source does, and then
    /// records the request as failed: every transport answers that with an error of its own.
    pub(crate) async fn run_to_end(&mut self) -> Result<u32, super::engine::SourceError> {
        while let Some(t) = self.source.next_token().await {
            if let Err(e) = t {
                self.tracker.fail(FailReason::Other);
                return Err(e);
            }
        }
        Ok(self.source.emitted())
    }
}

/// A tensor request that ran: its tracker and the execution it joined. [`TensorRun::succeed`]
/// records it once the answer is handed to the transport; dropping it records a cancellation.
#[derive(Debug)]
pub(crate) struct TensorRun {
    tracker: Tracker,
    /// The execution.
    pub(crate) times: ExecTimes,
    /// The request's own batch size.
    batch: u32,
}

impl TensorRun {
    /// Records success now.
    pub(crate) fn succeed(mut self) {
        self.tracker.succeed_tensor(self.times.phases, self.batch);
    }
}

/// Prompt token counts are cached by text hash: benchmarks cycle through a fixed prompt set, and
/// the tokenizer is the most expensive thing the simulator does per request.
const TOKEN_CACHE_CAP: usize = 8192;

/// A prompt's token count and the chained hashes of its full KV blocks.
type PromptBlocks = (u32, Arc<[u64]>);

/// Prompts whose block hashes are kept (each holds one hash per KV block of its prompt).
const PREFIX_CACHE_CAP: usize = 1024;

/// Prompts longer than this are tokenized on the blocking pool, not on a runtime thread.
const BLOCKING_TOKENIZE_BYTES: usize = 64 * 1024;

/// Everything the protocol handlers share.
pub(crate) struct SimState {
    /// The hosted models, in configuration order.
    pub(crate) models: Vec<ModelEntry>,
    index: HashMap<String, usize>,
    /// Fault decider.
    pub(crate) faults: Faults,
    /// Bearer token required on OpenAI routes.
    pub(crate) api_key: Option<String>,
    /// `triton-access-token` required on the statistics API.
    pub(crate) access_token: Option<String>,
    /// Server start, Unix seconds (OpenAI `created` of models).
    pub(crate) started_unix: u64,
    /// Which engine's metric families `/metrics` serves.
    pub(crate) metrics_style: crate::server_metrics::ServerKind,
    /// The simulated GPU every model runs on.
    pub(crate) gpu: super::gpu::SimGpu,
    tokenizer: Tokenizer,
    token_cache: Mutex<HashMap<u64, u32>>,
    /// Prompt block hashes by (text hash, block size), for prefix-caching engines.
    prefix_cache: Mutex<HashMap<(u64, u32), PromptBlocks>>,
    /// Turns true when the server shuts down.
    pub(crate) shutdown: watch::Receiver<bool>,
    next_id: AtomicU64,
    /// A scored workload's answers (`serve --answer-key`).
    pub(crate) answers: Option<super::answers::Answers>,
}

impl SimState {
    /// Builds the model table and starts one engine per LLM model (none in instant mode).
    pub(crate) fn new(
        cfg: super::SimConfig,
        tokenizer: Tokenizer,
        shutdown: watch::Receiver<bool>,
    ) -> anyhow::Result<(SimState, Vec<tokio::task::JoinHandle<()>>)> {
        let mut models = Vec::with_capacity(cfg.models.len());
        let mut index = HashMap::new();
        let mut tasks = Vec::new();
        for spec in cfg.models {
            spec.validate()?;
            if index.insert(spec.name.clone(), models.len()).is_some() {
                anyhow::bail!("model {:?} is configured twice", spec.name);
            }
            let engine_cfg = spec.engine.clone().unwrap_or_else(|| cfg.engine.clone());
            engine_cfg.validate()?;
            let (entry, task) = ModelEntry::start(spec, engine_cfg, cfg.metrics_style, &shutdown);
            tasks.extend(task);
            models.push(entry);
        }
        if let Some(a) = &cfg.answers {
            a.validate()?;
        }
        let answers = cfg.answers.map(super::answers::Answers::new);
        let started_unix = super::unix_now().as_secs();
        let state = SimState {
            models,
            index,
            faults: Faults::new(cfg.faults),
            api_key: cfg.api_key,
            access_token: cfg.access_token,
            started_unix,
            metrics_style: cfg.metrics_style,
            gpu: super::gpu::SimGpu::new(),
            tokenizer,
            token_cache: Mutex::new(HashMap::new()),
            prefix_cache: Mutex::new(HashMap::new()),
            shutdown,
            next_id: AtomicU64::new(1),
            answers,
        };
        Ok((state, tasks))
    }

    /// The model `name` (and `version`, when given and non-empty).
    pub(crate) fn lookup(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<&ModelEntry, UnknownModel> {
        let unknown = |version: Option<&str>| UnknownModel {
            name: name.into(),
            version: version.map(String::from),
        };
        let entry = self
            .index
            .get(name)
            .map(|&i| &self.models[i])
            .ok_or_else(|| unknown(None))?;
        match version {
            Some(v) if !v.is_empty() && v != entry.spec.version => Err(unknown(Some(v))),
            _ => Ok(entry),
        }
    }

    /// The text model a request names, or the first one hosted when it names none (as
    /// single-model servers behave).
    pub(crate) fn text_model(&self, name: Option<&str>) -> Result<&ModelEntry, NoTextModel> {
        let Some(name) = name else {
            return self
                .models
                .iter()
                .find(|m| m.is_llm())
                .ok_or(NoTextModel::NoneHosted);
        };
        match self.lookup(name, None) {
            Ok(e) if e.is_llm() => Ok(e),
            _ => Err(NoTextModel::Unknown(name.into())),
        }
    }

    /// The simulated GPU now (advances its utilization window and energy).
    pub(crate) fn gpu_reading(&self) -> super::gpu::GpuReading {
        let all: Vec<&ModelMetrics> = self.models.iter().map(|m| &*m.metrics).collect();
        self.gpu.read(&all)
    }

    /// A process-unique number for response ids.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The GPT-2 token ids of `text` (`/tokenize`).
    pub(crate) fn encode(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text)
    }

    /// True when the statistics API answers a request that gave `token` (every request when no
    /// access token is configured).
    pub(crate) fn may_read_stats(&self, token: Option<&[u8]>) -> bool {
        self.access_token
            .as_ref()
            .is_none_or(|t| token == Some(t.as_bytes()))
    }

    /// True once shutdown was requested.
    pub(crate) fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Number of GPT-2 tokens in the prompt.
    pub(crate) async fn input_tokens(&self, prompt: &Prompt) -> u32 {
        let text = match prompt {
            Prompt::Tokens(n) => return *n,
            Prompt::Text(t) => t,
            Prompt::Mixed(t, extra) => {
                let text = Box::pin(self.input_tokens(&Prompt::Text(t.clone()))).await;
                return text.saturating_add(*extra);
            }
        };
        if text.is_empty() {
            return 0;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let key = h.finish();
        if let Some(&n) = self
            .token_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return n;
        }
        let n = self.tokenize(text, Tokenizer::count, text.len() / 4).await;
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        let mut cache = self.token_cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= TOKEN_CACHE_CAP {
            // Crude but bounded: a benchmark's prompt set refills it within one pass.
            cache.clear();
        }
        cache.insert(key, n);
        n
    }

    /// `f` of the tokenizer and `text`, on the blocking pool when the text is long (`fallback`
    /// if that task fails).
    async fn tokenize<T: Send + 'static>(
        &self,
        text: &str,
        f: fn(&Tokenizer, &str) -> T,
        fallback: T,
    ) -> T {
        if text.len() <= BLOCKING_TOKENIZE_BYTES {
            return f(&self.tokenizer, text);
        }
        let (tk, owned) = (self.tokenizer.clone(), text.to_owned());
        tokio::task::spawn_blocking(move || f(&tk, &owned))
            .await
            .unwrap_or(fallback)
    }

    /// The prompt's token count and the chained hashes of its full `block`-token KV blocks, for
    /// an engine with prefix caching. Token-id prompts carry no content here, so they get no
    /// hashes (and never hit the prefix cache).
    async fn prefixed_work(&self, prompt: &Prompt, block: u32, max_tokens: u32) -> Work {
        let text = match prompt {
            Prompt::Tokens(n) => return Work::new(*n, max_tokens),
            Prompt::Text(t) => t,
            // The images after the text are never a shared prefix here: the text's blocks are.
            Prompt::Mixed(t, extra) => {
                let mut w =
                    Box::pin(self.prefixed_work(&Prompt::Text(t.clone()), block, max_tokens)).await;
                w.input_tokens = w.input_tokens.saturating_add(*extra);
                return w;
            }
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let key = (h.finish(), block);
        let cached = self
            .prefix_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let (n, prefix) = match cached {
            Some(v) => v,
            None => {
                let ids = self.tokenize(text, Tokenizer::encode, Vec::new()).await;
                let n = u32::try_from(ids.len()).unwrap_or(u32::MAX);
                let v: PromptBlocks = (n, block_hashes(&ids, block).into());
                let mut cache = self.prefix_cache.lock().unwrap_or_else(|p| p.into_inner());
                if cache.len() >= PREFIX_CACHE_CAP {
                    cache.clear();
                }
                cache.insert(key, v.clone());
                v
            }
        };
        Work {
            input_tokens: n,
            prefix,
            max_tokens,
        }
    }

    /// The admission every validated request goes through: starts tracking it, then applies
    /// the `unavailable` fault, refuses it during shutdown, and draws its faults (refusing it
    /// when `error_rate` hits). A refusal is recorded before it is returned.
    fn admit(
        &self,
        entry: &ModelEntry,
        arrival: Instant,
    ) -> Result<(Tracker, FaultPlan), BeginError> {
        let mut tracker = Tracker::new(entry.metrics.clone(), arrival);
        if self.faults.unavailable() {
            tracker.fail(FailReason::Rejected);
            return Err(BeginError::Unavailable);
        }
        if self.shutting_down() {
            tracker.fail(FailReason::Other);
            return Err(BeginError::ShuttingDown);
        }
        let plan = self.faults.next();
        if plan.error {
            tracker.fail(FailReason::Backend);
            return Err(BeginError::Injected);
        }
        Ok((tracker, plan))
    }

    /// Runs a tensor request of `batch` elements that passed validation: applies the
    /// `unavailable`, `error_rate` and `stall` faults (a stall delays the request before it
    /// reaches the batcher and counts as queue time), queues it in the model's batcher and waits
    /// for its execution (instant mode: a zero-length execution of its own). Failures are
    /// recorded before they are returned; dropping the future while queued withdraws the
    /// request and counts it `CANCELED`.
    pub(crate) async fn run_tensor(
        &self,
        entry: &ModelEntry,
        batch: u32,
        arrival: Instant,
    ) -> Result<TensorRun, BeginError> {
        let (mut tracker, plan) = self.admit(entry, arrival)?;
        tracker.mark_submitted();
        if let Some(stall) = plan.stall {
            let mut shutdown = self.shutdown.clone();
            tokio::select! {
                _ = shutdown.wait_for(|v| *v) => {
                    tracker.fail(FailReason::Other);
                    return Err(BeginError::ShuttingDown);
                }
                _ = tokio::time::sleep(stall) => {}
            }
        }
        let times = match &entry.batcher {
            None => {
                let now = Instant::now();
                entry.metrics.record_execution(batch, 0, 0, 0);
                ExecTimes::instant(now, batch)
            }
            Some(b) => match async { b.submit(batch)?.await }.await {
                Ok(t) => t,
                Err(e) => {
                    tracker.fail(e.into());
                    return Err(e.into());
                }
            },
        };
        Ok(TensorRun {
            tracker,
            times,
            batch,
        })
    }

    /// Starts an inference request that passed validation: applies the `unavailable` and
    /// `error_rate` faults, counts input tokens when the engine or the response needs them, and
    /// hands the request to the engine (or to instant mode). Failures are recorded in the
    /// model's counters before they are returned.
    pub(crate) async fn begin(
        &self,
        entry: &ModelEntry,
        prompt: &Prompt,
        max_tokens: u32,
        need_input_tokens: bool,
        arrival: Instant,
    ) -> Result<Generation, BeginError> {
        let (mut tracker, plan) = self.admit(entry, arrival)?;
        let work = match entry.prefix_block {
            Some(block) => self.prefixed_work(prompt, block, max_tokens).await,
            None if need_input_tokens || entry.engine.is_some() => {
                Work::new(self.input_tokens(prompt).await, max_tokens)
            }
            None => Work::new(0, max_tokens),
        };
        let input_tokens = work.input_tokens;
        tracker.mark_submitted();
        match TokenSource::start(entry.engine.as_ref(), work, plan.stall) {
            Ok(source) => {
                let source = source.with_shutdown(self.shutdown.clone());
                if entry.engine.is_none() {
                    // Instant mode has no batching: every request is its own execution.
                    entry.metrics.exec_count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Generation {
                    source,
                    tracker,
                    plan,
                    input_tokens,
                })
            }
            Err(e) => {
                tracker.fail(e.into());
                Err(e.into())
            }
        }
    }
}
