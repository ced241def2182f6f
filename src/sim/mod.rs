//! The built-in simulated inference server (`ttftbench serve`, `ttftbench demo`, and every
//! integration test).
//!
//! It speaks the real protocols on real sockets, with Triton's port layout (each listener binds
//! separately; port 0 picks a free port and [`SimHandle`] reports what was bound):
//!
//! * **HTTP** (Triton 8000): KServe v2 — `GET /v2`, `/v2/health/{live,ready}`,
//!   `/v2/models/{m}[/versions/{v}]` (metadata), `.../ready`, `.../config`, `.../stats`,
//!   `GET /v2/models/stats`, `POST /v2/repository/index` (also `GET /v2/models`),
//!   `POST .../generate`, `.../generate_stream` (SSE without `[DONE]`), `.../infer` (JSON
//!   tensors and the binary tensor data extension, both ways) — and OpenAI: `GET /v1/models`,
//!   `POST /v1/chat/completions`, `POST /v1/completions` (SSE ending in `data: [DONE]`,
//!   optional usage chunk, optional bearer key).
//! * **gRPC** (Triton 8001): `inference.GRPCInferenceService` — health, metadata, config,
//!   `ModelInfer` (non-decoupled models; tensors in `raw_input_contents` or typed `contents`),
//!   `ModelStreamInfer` (many requests multiplexed on one stream, matched by `id`,
//!   `triton_final_response` and the empty final response as Triton sends them; tensor models
//!   answer once per request), `ModelStatistics`, `RepositoryIndex`.
//! * **Metrics** (Triton 8002): `GET /metrics` in the server's metrics style
//!   ([`SimConfig::metrics_style`], `serve --metrics-style`): the real metric families of Triton
//!   (`triton`, the default), TensorRT-LLM on Triton (`trtllm`), vLLM (`vllm`), SGLang
//!   (`sglang`) or TGI (`tgi`), computed from the engine's state (the `export` module lists
//!   every family). `GET /dcgm/metrics` is the DCGM exporter's page for the simulated GPU, in
//!   every style (for `--gpu-metrics-url`); Triton styles also carry Triton's `nv_gpu_*`
//!   families on `/metrics`. Every style ends with the simulator's own families:
//!   `ttftbench_sim_first_response_us`, the simulator's own time to first token: from the
//!   request's arrival (body read) to its first content-bearing chunk or message being handed to
//!   the transport; a summary in microseconds with quantiles 0.5/0.9/0.99 (HDR histogram, 3
//!   significant digits), `_sum` and `_count`. A client's TTFT minus this is its own overhead
//!   plus the network. Also `ttftbench_sim_running_sequences` (gauge: sequences in a batch slot,
//!   or tensor requests executing) and `ttftbench_sim_output_tokens` (counter).
//!
//! # `ttftbench serve` flags
//!
//! | flag | default | what |
//! |---|---|---|
//! | `--address ADDR` | `127.0.0.1` | where every listener binds (`0.0.0.0`: every interface) |
//! | `--http-port`, `--grpc-port`, `--metrics-port` | 8000, 8001, 8002 | 0 = a free port, printed |
//! | `--metrics-style triton\|trtllm\|vllm\|sglang\|tgi` | `triton` | which engine's families `/metrics` serves |
//! | `--max-batch`, `--max-queue`, `--prefill-base-us`, `--prefill-us-per-token`, `--decode-base-us`, `--decode-us-per-seq`, `--instant` | [`EngineConfig::default`] | engine timing and capacity |
//! | `--kv-blocks N` | 0 (unlimited) | KV-cache blocks per model; when they run out the engine preempts |
//! | `--kv-block-size N` | 16 | tokens per KV block |
//! | `--prefix-caching` | off | full prompt blocks already cached are not prefilled again |
//! | `--fault-*`, `--require-api-key`, `--access-token` | off | faults and credentials |
//! | `--answer-key FILE\|DIR`, `--answer-key-benchmark`, `--answer-accuracy`, `--accuracy-drop-per-batch`, `--accuracy-drop-above`, `--nondeterministic-share`, `--nondeterministic-above` | off | answer a scored workload's questions right with a probability that can fall with load, and change temperature-0 outputs under load ([`answers`]) |
//!
//! For example `ttftbench serve --metrics-style vllm --kv-blocks 400 --prefix-caching` behaves
//! like a vLLM server whose KV cache holds 6 400 tokens per model.
//!
//! # Models
//!
//! [`ModelSpec::defaults`]: `gpt2` (TensorRT-LLM ensemble, decoupled), `vllm_model` (vLLM
//! backend), `gpt2_nostream` (TensorRT-LLM layout, not decoupled: one response per request), two
//! reasoning models in the vLLM layout ([`ReasoningSpec`]: the first
//! [`DEFAULT_REASONING_TOKENS`] tokens of a chat answer are reasoning, sent in the field the
//! model names: `reasoning_vllm` uses `reasoning` as vLLM does, `reasoning_sglang` uses
//! `reasoning_content` as SGLang and DeepSeek do; usage reports
//! `completion_tokens_details.reasoning_tokens`), and five tensor models, each with its own
//! [`TensorTiming`]:
//!
//! | model | inputs | outputs | max batch | dynamic batching | instances | compute (µs) |
//! |---|---|---|---|---|---|---|
//! | `yolov8s` | `images` FP32 `[3,640,640]` | `output0` FP32 `[84,100]` | 8 | preferred 4, 8; delay 100 µs | 1 | 2000 + 500·b, input 200·b, output 10·b |
//! | `bert_classifier` | `input_ids` INT64 `[128]`, optional `attention_mask` INT64 `[128]` | `logits` FP32 `[2]` | 8 | no preferred; delay 0 | 2 | 1000 + 250·b, input 5·b, output 2·b |
//! | `text_classifier` | `input_ids` INT64 `[-1]`, optional `attention_mask` INT64 `[-1]` | `logits` FP32 `[2]` | 8 | no preferred; delay 0 | 2 | 1000 + 250·b, input 5·b, output 2·b |
//! | `resnet_fp16` | `input` FP32 `[3,224,224]` | `output` FP32 `[1000]` | 16 | preferred 8, 16; delay 100 µs | 1 | 1500 + 650·b, input 50·b, output 5·b |
//! | `resnet_int8` | `input` INT8 `[3,224,224]` | `output` FP32 `[1000]` | 16 | preferred 8, 16; delay 100 µs | 1 | 1000 + 350·b, input 15·b, output 5·b |
//!
//! `yolov8s`'s real output is `[84,8400]` (2.8 MB per image); 100 boxes keep answers small
//! enough not to dominate a load generator's test loop. `resnet_int8` takes INT8 input (a
//! client-quantized engine) so clients are exercised on a 1-byte datatype.
//!
//! # Timing
//!
//! LLMs run on a miniature continuous-batching engine per model ([`EngineConfig`]): batch slots,
//! a FIFO queue, prefill cost per input token, decode cost per running sequence, and a paged KV
//! cache (`kv`): admission needs blocks for the prompt, decode takes a block at each block
//! boundary, a full pool preempts the youngest running request (recomputed when readmitted), and
//! with prefix caching a prompt's cached leading blocks are not prefilled. The default pool is
//! unlimited and prefix caching off, which keeps the timing below exact. Per successful
//! request the server-side time splits without overlap into `compute_input` (received → parsed
//! and tokenized), `queue` (→ admitted to a batch slot, stall included), `compute_infer` (→ last
//! token produced) and `compute_output` (→ final response handed to the transport);
//! `request_duration` is their sum (in the `trtllm` style Triton does not see the engine's queue:
//! its `queue` stays 0 and the wait is part of `compute_infer`, as with the real backend). Output
//! text cycles through common English words that are one
//! GPT-2 token each, so re-tokenizing a response gives exactly the number of tokens streamed.
//!
//! Tensor models run on Triton's dynamic batcher in miniature (`batcher`): a FIFO queue,
//! batches formed when a model instance is free (preferred sizes at once, otherwise after
//! `max_queue_delay_us`, never above `max_batch_size`; without dynamic batching one request per
//! execution), `instance_count` instances in parallel, and an execution of `b` elements lasting
//! `input_us_per_item·b` (compute_input) + `base_us + per_item_us·b` (compute_infer) +
//! `output_us_per_item·b` (compute_output). Statistics count as Triton does: `execution_count`
//! +1 per execution and `batch_stats` per batch size (both when the execution ends),
//! `inference_count` +b per successful request of b elements, every request of a batch
//! reporting the batch's phases; parsing and encoding are overhead (`success − queue −
//! compute`), and so is timer lateness (tokio's timers tick in milliseconds; the schedule itself
//! does not drift). Requests are validated like Triton does, with its messages plus the expected
//! and given values; outputs are zeros of the declared shape.
//!
//! With all engine timings zero (the server-wide [`EngineConfig::instant`], `serve --instant`)
//! both the engine and the batcher are bypassed: tokens flow as fast as the transport takes them
//! and every tensor request is its own zero-length execution, for benchmarking clients.
//!
//! Failures are counted by reason: `REJECTED` (queue full, unavailable), `CANCELED` (client
//! left), `BACKEND` (injected error or cut), `OTHER` (invalid input, shutdown). Faults
//! ([`FaultConfig`]) are deterministic so tests can predict them; tensor models honour
//! `unavailable`, `error_rate` and `stall_rate` (cuts and malformed events are stream faults).
//!
//! The simulated GPU (`gpu`) is shared by every model: utilization follows the engines' busy
//! time, memory the KV blocks in use, power the utilization, and energy integrates power.

mod answers;
mod apis;
mod batcher;
mod counters;
mod disruption;
mod engine;
mod engine_api;
mod engine_config;
mod export;
mod faults;
mod gpu;
mod grpc;
mod grpc_wire;
mod http;
mod kv;
mod metrics;
mod models;
mod openai;
mod phase;
mod request;
mod state;
mod stream;
mod tensor;
mod tls;
mod tokens;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::serve::ListenerExt as _;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use crate::server_metrics::ServerKind;
pub use answers::AnswerConfig;
pub use engine_config::{EngineConfig, NOMINAL_TOKENS_PER_SLOT};
pub use faults::FaultConfig;
pub use models::{
    DEFAULT_REASONING_TOKENS, DataType, DynamicBatching, LlmLayout, ModelKind, ModelSpec,
    ReasoningField, ReasoningSpec, TensorSpec, TensorTiming,
};
pub use tls::SimTls;

use crate::workload::tokenizer::Tokenizer;

/// Everything the simulated server needs to start.
#[derive(Clone)]
pub struct SimConfig {
    /// Address every listener binds to.
    pub bind: IpAddr,
    /// KServe v2 + OpenAI HTTP port (Triton's default is 8000); 0 = any free port.
    pub http_port: u16,
    /// KServe v2 gRPC port (Triton's default is 8001); 0 = any free port.
    pub grpc_port: u16,
    /// Prometheus metrics port (Triton's default is 8002); 0 = any free port.
    pub metrics_port: u16,
    /// Engine timing and capacity, for models without their own.
    pub engine: EngineConfig,
    /// Faults to inject.
    pub faults: FaultConfig,
    /// When set, OpenAI routes require `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// When set, the statistics API requires header `triton-access-token: <token>`.
    pub access_token: Option<String>,
    /// The hosted models; default [`ModelSpec::defaults`].
    pub models: Vec<ModelSpec>,
    /// Which engine's metric families `/metrics` serves (`serve --metrics-style`).
    pub metrics_style: ServerKind,
    /// Serve HTTP and gRPC over TLS (`serve --tls-cert`, `--tls-key`, `--tls-client-ca`); the
    /// metrics port stays plain HTTP, as Triton's does.
    pub tls: Option<SimTls>,
    /// Answer a scored workload's questions (`serve --answer-key`): right with a set
    /// probability, falling with load, on the OpenAI routes.
    pub answers: Option<AnswerConfig>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            http_port: 0,
            grpc_port: 0,
            metrics_port: 0,
            engine: EngineConfig::default(),
            faults: FaultConfig::default(),
            api_key: None,
            access_token: None,
            models: ModelSpec::defaults(),
            metrics_style: ServerKind::Triton,
            tls: None,
            answers: None,
        }
    }
}

impl std::fmt::Debug for SimConfig {
    // Secrets are shown only as present or absent, so configs can be logged.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = |s: &Option<String>| if s.is_some() { "<set>" } else { "<none>" };
        let models: Vec<&str> = self.models.iter().map(|m| m.name.as_str()).collect();
        f.debug_struct("SimConfig")
            .field("bind", &self.bind)
            .field("http_port", &self.http_port)
            .field("grpc_port", &self.grpc_port)
            .field("metrics_port", &self.metrics_port)
            .field("engine", &self.engine)
            .field("faults", &self.faults)
            .field("api_key", &secret(&self.api_key))
            .field("access_token", &secret(&self.access_token))
            .field("metrics_style", &self.metrics_style)
            .field("tls", &self.tls)
            .field("answers", &self.answers.as_ref().map(|a| a.set.items.len()))
            .field("models", &models)
            .finish()
    }
}

/// A running simulated server. Dropping it signals shutdown and lets connections close in the
/// background; [`SimHandle::shutdown`] does the same and waits for it.
pub struct SimHandle {
    /// Bound address of the HTTP listener (KServe v2 + OpenAI).
    pub http_addr: SocketAddr,
    /// Bound address of the gRPC listener.
    pub grpc_addr: SocketAddr,
    /// Bound address of the metrics listener.
    pub metrics_addr: SocketAddr,
    /// HTTP and gRPC are served over TLS.
    pub tls: bool,
    state: Arc<state::SimState>,
    shutdown_tx: watch::Sender<bool>,
    servers: Vec<JoinHandle<()>>,
    engines: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandle")
            .field("http_addr", &self.http_addr)
            .field("grpc_addr", &self.grpc_addr)
            .field("metrics_addr", &self.metrics_addr)
            .finish()
    }
}

/// How long [`SimHandle::shutdown`] waits for connections to finish before cutting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

impl SimHandle {
    /// Base URL of the HTTP listener, e.g. `http://127.0.0.1:8000` (`https://` over TLS).
    pub fn http_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.http_addr)
    }

    /// Address of the gRPC listener as `host:port` (what `-u` takes for Triton gRPC), with
    /// `https://` in front when it serves TLS.
    pub fn grpc_target(&self) -> String {
        match self.tls {
            true => format!("https://{}", self.grpc_addr),
            false => self.grpc_addr.to_string(),
        }
    }

    /// URL of the Prometheus endpoint, e.g. `http://127.0.0.1:8002/metrics`.
    pub fn metrics_url(&self) -> String {
        format!("http://{}/metrics", self.metrics_addr)
    }

    /// URL of the simulated DCGM exporter, e.g. `http://127.0.0.1:8002/dcgm/metrics`.
    pub fn dcgm_url(&self) -> String {
        format!("http://{}/dcgm/metrics", self.metrics_addr)
    }

    /// The names of the hosted models.
    pub fn model_names(&self) -> Vec<String> {
        self.state
            .models
            .iter()
            .map(|m| m.spec.name.clone())
            .collect()
    }

    /// A copy of the simulator's first-response histogram (µs) for `model` — the same data as
    /// the `ttftbench_sim_first_response_us` summary, for in-process comparisons.
    pub fn first_response_histogram(&self, model: &str) -> Option<hdrhistogram::Histogram<u64>> {
        let entry = self.state.lookup(model, None).ok()?;
        Some(entry.metrics.first_response_histogram())
    }

    /// Stops accepting connections, ends in-flight streams with an error, waits up to 5 s for
    /// connections to close, then cuts whatever is left.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown_tx.send(true);
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        for task in self.servers.iter_mut().chain(self.engines.iter_mut()) {
            if tokio::time::timeout_at(deadline, &mut *task).await.is_err() {
                task.abort();
            }
        }
        self.servers.clear();
        self.engines.clear();
    }
}

impl Drop for SimHandle {
    // Signal everything to stop, then let the servers close their connections in the
    // background (aborting the accept loops at once would orphan the connection tasks); after
    // the grace period whatever is left is aborted.
    fn drop(&mut self) {
        let _ = self.shutdown_tx.send(true);
        let tasks: Vec<JoinHandle<()>> = self
            .servers
            .drain(..)
            .chain(self.engines.drain(..))
            .collect();
        if tasks.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::time::sleep(SHUTDOWN_GRACE).await;
                    for t in tasks {
                        t.abort();
                    }
                });
            }
            Err(_) => tasks.iter().for_each(JoinHandle::abort),
        }
    }
}

/// Time since the Unix epoch by the wall clock (zero if the clock is before 1970).
pub(crate) fn unix_now() -> Duration {
    Duration::from_nanos(crate::record::unix_now_ns())
}

/// Pending connections the kernel may hold per listener: a load test opening thousands of
/// connections at once must not see SYNs dropped (and retried a second later).
const LISTEN_BACKLOG: u32 = 4096;

pub(crate) fn bind(ip: IpAddr, port: u16, what: &str) -> anyhow::Result<TcpListener> {
    let addr = SocketAddr::new(ip, port);
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .with_context(|| format!("cannot create the {what} socket"))?;
    // Lets `serve` restart on its fixed ports while old connections sit in TIME_WAIT.
    socket
        .set_reuseaddr(true)
        .with_context(|| format!("cannot configure the {what} socket"))?;
    if let Err(e) = socket.bind(addr) {
        // The usual cause on a host that already runs an inference server: say what to do.
        let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
            ": another process listens there; stop it, or give serve other ports \
             (--http-port, --grpc-port, --metrics-port; 0 picks a free one) and point -u at them"
        } else {
            ""
        };
        return Err(e).with_context(|| format!("cannot bind the {what} port on {addr}{hint}"));
    }
    socket
        .listen(LISTEN_BACKLOG)
        .with_context(|| format!("cannot listen on the {what} port {addr}"))
}

/// Starts the simulated server on the current tokio runtime and returns once all three
/// listeners are bound and serving.
pub async fn start(cfg: SimConfig) -> anyhow::Result<SimHandle> {
    cfg.engine.validate()?;
    cfg.faults.validate()?;
    if cfg.models.is_empty() {
        anyhow::bail!("the simulator needs at least one model to host");
    }
    let http_listener = bind(cfg.bind, cfg.http_port, "HTTP")?;
    let grpc_listener = bind(cfg.bind, cfg.grpc_port, "gRPC")?;
    let metrics_listener = bind(cfg.bind, cfg.metrics_port, "metrics")?;
    let http_addr = http_listener.local_addr()?;
    let grpc_addr = grpc_listener.local_addr()?;
    let metrics_addr = metrics_listener.local_addr()?;

    // The tokenizer takes a moment to load in debug builds; keep it off the runtime threads.
    let tokenizer = tokio::task::spawn_blocking(Tokenizer::builtin_gpt2)
        .await
        .context("loading the built-in tokenizer failed")?;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let cfg_faults = cfg.faults.clone();
    let tls = cfg.tls.clone();
    let http_tls = tls.as_ref().map(SimTls::server_config).transpose()?;
    let grpc_tls = tls.as_ref().map(SimTls::grpc_config).transpose()?;
    if let Some(c) = &grpc_tls {
        // Checked here so a bad certificate fails `start`, not the gRPC task later.
        tonic::transport::Server::builder()
            .tls_config(c.clone())
            .context("the gRPC listener cannot use the TLS certificate")?;
    }
    let (state, mut engines) = state::SimState::new(cfg, tokenizer, shutdown_rx.clone())?;
    let state = Arc::new(state);
    let gpu_state = state.clone();
    engines.push(tokio::spawn(gpu::sample_every(
        move || {
            gpu_state.gpu_reading();
        },
        shutdown_rx.clone(),
    )));

    let signal = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|v| *v).await;
    };
    let mut servers = Vec::with_capacity(3);

    let outage = disruption::Outage::from_config(&cfg_faults);
    let app = http::router(state.clone())
        .merge(openai::router(state.clone()))
        .merge(apis::router(state.clone()))
        .fallback(http::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            disruption::admit_http,
        ));
    // SSE events are small writes that must leave at once, not wait for Nagle: the listener
    // sets TCP_NODELAY on every connection it accepts.
    let listener = disruption::OutageListener::new(http_listener, outage)?;
    let sig = signal(shutdown_rx.clone());
    servers.push(tokio::spawn(async move {
        let served = match http_tls {
            Some(config) => {
                let listener = tls::TlsListener::new(listener, config);
                axum::serve(listener, app).with_graceful_shutdown(sig).await
            }
            None => axum::serve(listener, app).with_graceful_shutdown(sig).await,
        };
        if let Err(e) = served {
            tracing::warn!("simulator HTTP server stopped: {e}");
        }
    }));

    let incoming = disruption::OutageListener::new(grpc_listener, outage)?.incoming();
    let svc = grpc::GrpcService::new(state.clone());
    let sig = signal(shutdown_rx.clone());
    let goaway = (cfg_faults.goaway_ms > 0).then(|| Duration::from_millis(cfg_faults.goaway_ms));
    let admission_state = state.clone();
    let admission = tower::layer::layer_fn(move |inner| disruption::GrpcAdmission {
        inner,
        state: admission_state.clone(),
    });
    servers.push(tokio::spawn(async move {
        let mut builder = tonic::transport::Server::builder()
            // hyper's default of 200 streams per connection is far below what a load test
            // multiplexes onto one connection.
            .max_concurrent_streams(Some(1 << 16));
        if let Some(cfg) = grpc_tls {
            builder = match builder.tls_config(cfg) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!("simulator gRPC server cannot use its TLS settings: {e}");
                    return;
                }
            };
        }
        if let Some(age) = goaway {
            // GOAWAY after `age`; calls still running get a moment to finish.
            builder = builder
                .max_connection_age(age)
                .max_connection_age_grace(Duration::from_secs(5));
        }
        let mut builder = builder.layer(admission);
        if let Err(e) = builder
            .add_service(svc)
            .serve_with_incoming_shutdown(incoming, sig)
            .await
        {
            tracing::warn!("simulator gRPC server stopped: {e}");
        }
    }));

    let metrics_app = http::metrics_router(state.clone());
    let listener = metrics_listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let sig = signal(shutdown_rx);
    servers.push(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, metrics_app)
            .with_graceful_shutdown(sig)
            .await
        {
            tracing::warn!("simulator metrics server stopped: {e}");
        }
    }));

    tracing::debug!(%http_addr, %grpc_addr, %metrics_addr, "simulated inference server started");
    Ok(SimHandle {
        http_addr,
        grpc_addr,
        metrics_addr,
        tls: tls.is_some(),
        state,
        shutdown_tx,
        servers,
        engines,
    })
}
