//! The plan's sections, each resolved from plain values and validated alone: where requests go
//! ([`target`]), the load levels ([`levels`]), when a level's measurement ends ([`stop`]), what
//! to send ([`workload`]), where the server's metrics are ([`metrics_source`]), and which part of
//! a run of several processes this one is, with when its levels start ([`shard`]). The front end
//! converts its flags into these inputs; `demo`, `doctor` and tests call them directly.

use std::path::PathBuf;
use std::time::Duration;

use super::shard::{ShardPlan, derived_slot};
use crate::error::{UsageError, usage};
use crate::load::{Arrival, LevelLength, LevelLengthRule, Shard, Stimulus};
use crate::server_metrics::MetricsSource;
use crate::target::{
    Api, Backend, ClientIdentity, Encoding, ServiceKind, StreamSupport, Target, TlsSettings,
    Verify, bracket_host, default_endpoint, normalize_metrics_url, normalize_url, parse_header,
};
use crate::workload::{OutputLength, PromptSource, WorkloadPlan};

/// What names the target, as given.
#[derive(Debug, Clone, Default)]
pub struct TargetSpec {
    /// `--endpoint-type`.
    pub endpoint_type: Option<Api>,
    /// `--service-kind` (legacy).
    pub service_kind: Option<ServiceKind>,
    /// `--backend`.
    pub backend: Option<Backend>,
    /// `-u`.
    pub url: Option<String>,
    /// `--endpoint`.
    pub endpoint: Option<String>,
    /// `-m`.
    pub model: String,
    /// `--streaming` (`Some(true)`), `--no-streaming` (`Some(false)`), or neither: streamed
    /// where the API can stream, settled against the model's config before the session for
    /// Triton ([`crate::engine::streaming`]).
    pub streaming: Option<bool>,
    /// `-H` values as given (`Name: value`).
    pub headers: Vec<String>,
    /// `--api-key`.
    pub api_key: Option<String>,
    /// `OPENAI_API_KEY` from the environment: used for OpenAI-style targets only (a Triton target
    /// never takes a key it was not given on the command line).
    pub env_api_key: Option<String>,
    /// `ANTHROPIC_API_KEY` from the environment: used for the Messages API only.
    pub env_anthropic_key: Option<String>,
    /// `--metrics-header` names: `-H` headers that may also go to metrics and statistics.
    pub metrics_headers: Vec<String>,
    /// `--max-event-size` in bytes (0: the default, 4 MiB).
    pub max_event_bytes: usize,
    /// `--tcp-quickack`.
    pub tcp_quickack: bool,
    /// TLS options.
    pub tls: TlsSpec,
}

/// TLS options as given, under whichever names (`--cacert`, `-k`, perf_analyzer's `--ssl-*`).
#[derive(Debug, Clone, Default)]
pub struct TlsSpec {
    /// Use TLS even though the URL names no scheme (`--ssl-grpc-use-ssl`).
    pub use_tls: bool,
    /// Check nothing of the server's certificate (`-k`, `--ssl-https-verify-peer 0`).
    pub insecure: bool,
    /// Check the chain but not the name (`--ssl-https-verify-host 0`).
    pub skip_hostname: bool,
    /// Extra trusted CA files (PEM).
    pub ca_files: Vec<PathBuf>,
    /// Client certificate chain file and its encoding.
    pub cert: Option<(PathBuf, Encoding)>,
    /// Client private key file and its encoding.
    pub key: Option<(PathBuf, Encoding)>,
}

impl TlsSpec {
    /// Whether anything here asks for TLS: a URL without a scheme then means `https://`.
    pub fn asks_for_tls(&self) -> bool {
        self.use_tls
            || self.insecure
            || self.skip_hostname
            || !self.ca_files.is_empty()
            || self.cert.is_some()
            || self.key.is_some()
    }
}

/// The TLS settings: verification on unless switched off, the extra CAs and the client
/// certificate, each file checked to exist (their contents are read when connecting).
pub fn tls(s: &TlsSpec) -> Result<TlsSettings, UsageError> {
    for f in &s.ca_files {
        readable_file("--cacert", f)?;
    }
    let identity = match (&s.cert, &s.key) {
        (None, None) => None,
        (Some(_), None) => {
            return usage(
                "--cert names a client certificate but no --key names its private key; give both",
            );
        }
        (None, Some(_)) => {
            return usage(
                "--key names a private key but no --cert names its certificate; give both",
            );
        }
        (Some((cert, cert_encoding)), Some((key, key_encoding))) => {
            readable_file("--cert", cert)?;
            readable_file("--key", key)?;
            Some(ClientIdentity {
                cert: cert.clone(),
                cert_encoding: *cert_encoding,
                key: key.clone(),
                key_encoding: *key_encoding,
            })
        }
    };
    Ok(TlsSettings {
        verify: if s.insecure {
            Verify::Off
        } else if s.skip_hostname {
            Verify::ChainOnly
        } else {
            Verify::Full
        },
        ca_files: s.ca_files.clone(),
        identity,
    })
}

fn readable_file(flag: &str, p: &std::path::Path) -> Result<(), UsageError> {
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => usage(format!("{flag} {}: not a file", p.display())),
        Err(e) => usage(format!("{flag} {}: {e}", p.display())),
    }
}

/// The server's address with TLS options taken into account: a URL without a scheme becomes
/// `https://` when TLS is asked for; an explicit `http://` with TLS options is a contradiction.
pub fn url_for_tls(raw: &str, tls: &TlsSpec) -> Result<String, UsageError> {
    let raw = raw.trim();
    let explicit = raw.contains("://");
    if !tls.asks_for_tls() || raw.starts_with("https://") {
        return Ok(raw.to_string());
    }
    if explicit {
        return usage(format!(
            "-u {raw} is plain HTTP, but TLS options (--cacert, --cert/--key, -k or --ssl-*) were given: use -u https://... to connect over TLS, or drop the TLS options"
        ));
    }
    Ok(format!("https://{raw}"))
}

/// The API, address, endpoint and headers of a run: Triton's gRPC port by default, the HTTP port
/// for HTTP APIs.
pub fn target(s: &TargetSpec) -> Result<Target, UsageError> {
    let api = match (s.endpoint_type, s.service_kind) {
        (Some(Api::Kserve), Some(ServiceKind::Openai)) => {
            return usage(
                "--endpoint-type kserve is Triton's gRPC API; it cannot be combined with --service-kind openai",
            );
        }
        (Some(api), _) => api,
        (None, Some(ServiceKind::Openai)) => Api::Chat,
        (None, _) => Api::Kserve,
    };
    if s.backend.is_some() && api != Api::Kserve {
        return usage(format!(
            "--backend only applies to Triton's KServe API (--endpoint-type kserve); it has no effect with --endpoint-type {}",
            api.name()
        ));
    }
    if s.model.trim().is_empty() {
        return usage("-m/--model must name a model");
    }
    let default_url = if api == Api::Kserve {
        "localhost:8001"
    } else {
        "localhost:8000"
    };
    let url = url_for_tls(s.url.as_deref().unwrap_or(default_url), &s.tls)?;
    let (base_url, host) = normalize_url(&url)?;
    let streaming = s
        .streaming
        .unwrap_or(api.stream_support() != StreamSupport::Never);
    let endpoint = match &s.endpoint {
        Some(e) => e.trim_start_matches('/').to_string(),
        None => default_endpoint(api, &s.model, streaming),
    };
    let headers = super::values::parse_each(&s.headers, parse_header)?;
    let metrics_headers = metrics_headers(&headers, &s.metrics_headers)?;
    // Each vendor's variable goes to its own API only: an OpenAI key is never sent to an
    // Anthropic-style server, nor the other way round.
    let env_key = match api {
        Api::Chat | Api::Completions | Api::Responses | Api::Embeddings | Api::Rankings => {
            s.env_api_key.clone()
        }
        Api::Messages => s.env_anthropic_key.clone(),
        Api::Kserve | Api::Generate | Api::Infer => None,
    };
    let api_key = s
        .api_key
        .clone()
        .or(env_key)
        .filter(|k| !k.trim().is_empty());
    let target = Target {
        api,
        base_url,
        host,
        endpoint,
        model: s.model.clone(),
        backend: s.backend.unwrap_or(Backend::Tensorrtllm),
        streaming,
        streaming_by_default: s.streaming.is_none(),
        headers,
        metrics_headers,
        api_key,
        max_event_bytes: if s.max_event_bytes == 0 {
            crate::target::DEFAULT_MAX_EVENT_BYTES
        } else {
            s.max_event_bytes
        },
        tcp_quickack: s.tcp_quickack,
        tls: tls(&s.tls)?,
        rankings: Default::default(),
    };
    target.header_map()?;
    Ok(target)
}

/// `--metrics-header` names, each naming a `-H` header (case-insensitively).
pub fn metrics_headers(
    headers: &[crate::target::Header],
    names: &[String],
) -> Result<Vec<String>, UsageError> {
    names
        .iter()
        .map(|n| {
            let n = n.trim();
            if headers.iter().any(|h| h.name.eq_ignore_ascii_case(n)) {
                Ok(n.to_string())
            } else {
                usage(format!(
                    "--metrics-header {n}: no -H header has that name; give the header with -H '{n}: value' too"
                ))
            }
        })
        .collect()
}

/// The load levels: closed-loop concurrencies, or open-loop rates with their arrival process and
/// in-flight cap; concurrency 1 when neither is given.
pub fn levels(
    concurrency: Option<&super::values::Levels<u32>>,
    request_rate: Option<&super::values::Levels<f64>>,
    arrival: Arrival,
    max_inflight: u32,
) -> Result<Vec<Stimulus>, UsageError> {
    if max_inflight == 0 {
        return usage("--max-inflight must be at least 1");
    }
    Ok(match (concurrency, request_rate) {
        (Some(_), Some(_)) => {
            return usage("--concurrency and --request-rate both set the load; give one of them");
        }
        (levels, None) => super::values::concurrency_levels(levels),
        (None, Some(rates)) => rates
            .values
            .iter()
            .map(|&rate| Stimulus::RequestRate {
                rate,
                arrival,
                max_inflight,
            })
            .collect(),
    })
}

/// What ends a level, as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct StopSpec {
    /// `--request-count`.
    pub request_count: Option<u64>,
    /// `--measurement-interval`.
    pub measurement_interval: Option<Duration>,
    /// `--duration` (overrides the interval).
    pub duration: Option<Duration>,
    /// `--num-prompts`: alone, also the requests per level.
    pub num_prompts: Option<u32>,
}

/// When each level's measurement ends: a count, a window, or GenAI-Perf's default
/// (max(10, 2 × concurrency) requests).
pub fn stop(s: &StopSpec) -> Result<LevelLengthRule, UsageError> {
    let window = s.duration.or(s.measurement_interval);
    match (s.request_count, window, s.num_prompts) {
        (Some(_), Some(_), _) => usage(
            "--request-count and --measurement-interval both end a level; give one of them (count: exact number of requests; interval: a time window)",
        ),
        (Some(0), None, _) => usage("--request-count must be at least 1"),
        (Some(n), None, _) => Ok(LevelLengthRule::Fixed(LevelLength::Requests(n))),
        (None, Some(d), _) if d < Duration::from_millis(1) => {
            usage("--measurement-interval must be at least 1 ms")
        }
        (None, Some(d), _) => Ok(LevelLengthRule::Fixed(LevelLength::Window(d))),
        (None, None, Some(n)) => Ok(LevelLengthRule::Fixed(LevelLength::Requests(u64::from(
            n.max(1),
        )))),
        (None, None, None) => Ok(LevelLengthRule::Auto),
    }
}

/// The line said before a run whose fixed request count is too few for a tail percentile the
/// tables show (they show `-` for it); `None` otherwise.
pub fn short_count_notice(stop: &LevelLengthRule) -> Option<String> {
    let LevelLengthRule::Fixed(LevelLength::Requests(n)) = *stop else {
        return None;
    };
    let missing: Vec<u32> = crate::metrics::SHOWN_TAILS
        .into_iter()
        .filter(|&q| !crate::metrics::supports_percentile(n, q))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let needs: Vec<String> = missing
        .iter()
        .map(|&q| format!("p{q} {}", crate::metrics::fewest_for_percentile(q)))
        .collect();
    Some(format!(
        "{} a level is too few for {} (successful requests needed: {}): the tables show '-' for {}; --request-count {} measures every percentile shown",
        crate::analysis::text::count(n, "request"),
        missing
            .iter()
            .map(|q| format!("p{q}"))
            .collect::<Vec<_>>()
            .join(", "),
        needs.join(", "),
        if missing.len() == 1 { "it" } else { "them" },
        crate::metrics::fewest_for_percentile(99),
    ))
}

/// What to send, as given.
#[derive(Debug, Clone, Default)]
pub struct WorkloadSpec {
    /// `--input-file`.
    pub input_file: Option<PathBuf>,
    /// `--synthetic-input-tokens-mean`.
    pub input_tokens_mean: Option<u32>,
    /// `--synthetic-input-tokens-stddev`.
    pub input_tokens_stddev: u32,
    /// `--output-tokens-mean`.
    pub output_tokens_mean: Option<u32>,
    /// `--output-tokens-stddev`.
    pub output_tokens_stddev: u32,
    /// `--output-tokens-mean-deterministic`.
    pub output_deterministic: bool,
    /// `--num-prompts`.
    pub num_prompts: Option<u32>,
    /// `--tokenizer`: a file, a directory or a Hugging Face model name.
    pub tokenizer: Option<String>,
    /// `--random-seed`.
    pub seed: u64,
    /// `--extra-inputs` values as given.
    pub extra_inputs: Vec<String>,
    /// `--num-prefix-prompts`.
    pub num_prefix_prompts: Option<u32>,
    /// `--prefix-prompt-length`.
    pub prefix_prompt_length: Option<u32>,
    /// `--prompt-salt` as given.
    pub prompt_salt: Option<String>,
    /// A trace's block size and schedule window (`--block-size`, `--fixed-schedule*`).
    pub trace: super::traffic::TraceSpec,
    /// Multi-turn sessions (`--num-sessions`, `--session-turns-*`, `--session-turn-delay-*`).
    pub sessions: super::traffic::SessionSpec,
    /// The endpoint type is rankings: `--input-file` holds queries and passages.
    pub rankings: bool,
    /// A scored workload (`--accuracy-*`).
    pub accuracy: super::scored::AccuracySpec,
}

/// Prompts (synthetic, 550 tokens by default as GenAI-Perf, a file of prompts, or a trace read
/// and checked here), output lengths, prefix prompts, the salt mode and extra request fields.
pub fn workload(s: &WorkloadSpec) -> Result<WorkloadPlan, UsageError> {
    if s.num_prompts == Some(0) {
        return usage("--num-prompts must be at least 1");
    }
    let (prompts, conversation_file) = prompt_source(s)?;
    let num_prompts = match &prompts {
        PromptSource::Trace(t) => u32::try_from(t.requests).unwrap_or(u32::MAX),
        PromptSource::Scored(q) => u32::try_from(q.items).unwrap_or(u32::MAX),
        _ => s.num_prompts.unwrap_or(100),
    };
    let output = match s.output_tokens_mean {
        Some(_) if matches!(prompts, PromptSource::Trace(_)) => {
            return usage(
                "--output-tokens-mean: the trace gives each request's output length (output_length); drop the flag",
            );
        }
        Some(0) => return usage("--output-tokens-mean must be at least 1"),
        Some(mean) => Some(OutputLength {
            mean,
            stddev: s.output_tokens_stddev,
            deterministic: s.output_deterministic,
        }),
        None if s.output_deterministic && !matches!(prompts, PromptSource::Trace(_)) => {
            return usage("--output-tokens-mean-deterministic needs --output-tokens-mean N");
        }
        None => None,
    };
    let mut extra_inputs =
        super::values::parse_each(&s.extra_inputs, super::values::parse_extra_input)?
            .into_iter()
            .flatten()
            .collect();
    if matches!(prompts, PromptSource::Scored(_)) {
        super::scored::greedy_by_default(&mut extra_inputs);
    }
    let synthetic = matches!(prompts, PromptSource::Synthetic { .. });
    let sessions = super::traffic::sessions(
        &s.sessions,
        &super::traffic::SessionContext {
            conversation_file: conversation_file.then_some(()).and(s.input_file.as_deref()),
            synthetic,
            num_prompts: s.num_prompts.is_some(),
            prefix_prompts: s.num_prefix_prompts.is_some(),
            seed: s.seed,
        },
    )?;
    Ok(WorkloadPlan {
        sessions,
        prefix_prompts: super::traffic::prefix_pool(
            s.num_prefix_prompts,
            s.prefix_prompt_length,
            synthetic,
        )?,
        prompt_salt: super::traffic::prompt_salt(s.prompt_salt.as_deref())?,
        prompts,
        num_prompts,
        output,
        tokenizer: s.tokenizer.clone(),
        seed: s.seed,
        extra_inputs,
        // Set by `super::apis::resolve`, which knows the endpoint type.
        batch_size_text: 1,
        images: None,
        tools: None,
    })
}

/// Where prompts come from: an `--input-file` (a trace when its first row has `input_length`,
/// conversations when it has `conversations` or `messages`, else `{"text": ...}` prompts) or
/// synthetic ones; says whether the file holds conversations (read by the session resolver).
fn prompt_source(s: &WorkloadSpec) -> Result<(PromptSource, bool), UsageError> {
    let caches = crate::workload::scored::locate::DatasetCaches::from_process();
    if let Some(src) = super::scored::source(&s.accuracy, s.num_prompts, &caches)? {
        let other = [
            ("--input-file", s.input_file.is_some()),
            (
                "--synthetic-input-tokens-mean",
                s.input_tokens_mean.is_some(),
            ),
            ("--num-prefix-prompts", s.num_prefix_prompts.is_some()),
            ("the session flags", s.sessions.any()),
        ];
        if let Some((flag, _)) = other.iter().find(|(_, given)| *given) {
            return usage(format!(
                "--accuracy-benchmark sends its dataset's questions, one request each; {flag} chooses other prompts: drop one of them"
            ));
        }
        return Ok((PromptSource::Scored(src), false));
    }
    if let (true, Some(p)) = (s.rankings, &s.input_file) {
        let data = crate::workload::rankings::read(p)
            .map_err(|e| UsageError(format!("--input-file {}: {e}", p.display())))?;
        return Ok((
            PromptSource::Rankings(crate::workload::rankings::RankingsSource {
                path: p.clone(),
                data: std::sync::Arc::new(data),
            }),
            false,
        ));
    }
    let first = match &s.input_file {
        Some(_) if s.input_tokens_mean.is_some() => {
            return usage(
                "--input-file and --synthetic-input-tokens-mean both choose prompts; give one",
            );
        }
        // A file that is one JSON array holds conversations (the form ShareGPT dumps come in):
        // a row with the ShareGPT key stands for it, so it is told apart below like JSONL.
        Some(p) if crate::workload::conversation::file::is_array(p) => {
            Some(serde_json::json!({"conversations": []}))
        }
        Some(p) => Some(crate::workload::trace::first_row(p)?),
        None => None,
    };
    let trace = first.as_ref().is_some_and(crate::workload::trace::is_trace);
    if let (Some(v), Some(p)) = (&first, &s.input_file)
        && (crate::workload::conversation::file::is_conversation(v)
            || crate::workload::conversation::dag::is_dag(v))
    {
        if s.trace.block_size.is_some() {
            return usage(
                "--block-size is the token count of one hash id of a trace; this --input-file holds conversations: drop it",
            );
        }
        return Ok((PromptSource::File(p.clone()), true));
    }
    if trace {
        let path = s.input_file.as_deref().unwrap_or(std::path::Path::new(""));
        let spec = super::traffic::TraceSpec {
            num_prompts: s.num_prompts,
            exact_output: s.output_deterministic,
            ..s.trace
        };
        return Ok((
            PromptSource::Trace(super::traffic::trace_source(path, &spec)?),
            false,
        ));
    }
    if s.trace.block_size.is_some() {
        return usage(
            "--block-size is the token count of one hash id of a trace: give --input-file with trace rows, or drop it",
        );
    }
    let source = match &s.input_file {
        Some(p) => PromptSource::File(p.clone()),
        None => match s.input_tokens_mean.unwrap_or(550) {
            0 => return usage("--synthetic-input-tokens-mean must be at least 1"),
            mean => PromptSource::Synthetic {
                mean,
                stddev: s.input_tokens_stddev,
            },
        },
    };
    Ok((source, false))
}

/// The server's Prometheus endpoint: the one given, or else tried quietly: the target's own
/// `/metrics` for an OpenAI API (vLLM, SGLang and TGI serve it on their API port), then port
/// 8002 of the target's host (Triton's).
pub fn metrics_source(url: Option<&str>, target: &Target) -> Result<MetricsSource, UsageError> {
    Ok(match url {
        Some(u) => MetricsSource::Url(normalize_metrics_url(u)?),
        None => {
            let mut urls = Vec::new();
            if !matches!(target.api, Api::Kserve | Api::Generate | Api::Infer) {
                urls.push(format!("{}/metrics", target.origin()));
            }
            // Triton serves its metrics one port above gRPC and two above HTTP (8001 and 8000
            // give 8002): the target's own server in Triton's layout, whichever ports it was
            // given. Not a fixed 8002: another server there is not the target.
            let port = reqwest::Url::parse(&target.base_url)
                .ok()
                .and_then(|u| u.port_or_known_default());
            if let Some(port) = port {
                let above = if target.api == Api::Kserve { 1 } else { 2 };
                let triton = format!(
                    "http://{}:{}/metrics",
                    bracket_host(&target.host),
                    port.saturating_add(above)
                );
                if !urls.contains(&triton) {
                    urls.push(triton);
                }
            }
            MetricsSource::Auto(urls)
        }
    })
}

/// `--gpu-metrics-url`: a DCGM exporter's page (`host:9400` or a full URL; `/metrics` added
/// when the path does not end with it).
pub fn gpu_metrics_url(url: Option<&str>) -> Result<Option<String>, UsageError> {
    url.map(normalize_metrics_url).transpose()
}

/// How this process takes part in a run of several, as given.
#[derive(Debug, Clone, Default)]
pub struct ShardSpec {
    /// `--shard I/N`.
    pub shard: Option<Shard>,
    /// `--shards N` (the Kubernetes form).
    pub shards: Option<u32>,
    /// `--shard-index`, or `JOB_COMPLETION_INDEX` (read with `--shards`).
    pub shard_index: Option<u32>,
    /// `--start-at`, as Unix nanoseconds.
    pub start_at: Option<u64>,
    /// `--level-slot`.
    pub level_slot: Option<Duration>,
    /// Levels in the plan.
    pub levels: usize,
    /// One level's length when the plan fixes it: a time window, after a timed warm-up or none.
    pub level_length: Option<Duration>,
}

/// The shard section: this process's part (`--shard I/N`, or `--shards N` with the index from
/// `JOB_COMPLETION_INDEX`), the first level's start and the slot between level starts (given,
/// or derived from a level's fixed length; see [`super::shard`]).
pub fn shard(s: &ShardSpec) -> Result<ShardPlan, UsageError> {
    let shard = match (s.shard, s.shards, s.shard_index) {
        (Some(_), Some(_), _) => {
            return usage(
                "--shard I/N and --shards N both say which part this process runs; give one (--shards takes the index from JOB_COMPLETION_INDEX)",
            );
        }
        (Some(shard), None, _) => shard,
        (None, Some(n), Some(i)) => {
            super::values::shard(i, n, "--shards with JOB_COMPLETION_INDEX")?
        }
        (None, Some(n), None) => {
            return usage(format!(
                "--shards {n} takes this process's index from JOB_COMPLETION_INDEX (set in every pod of a Kubernetes Indexed Job) or --shard-index, and neither is set: give --shard I/{n} instead"
            ));
        }
        (None, None, _) => Shard::WHOLE,
    };
    let start_at_unix_ns = s.start_at;
    let level_slot = match (start_at_unix_ns, s.level_slot) {
        (None, Some(_)) => {
            return usage(
                "--level-slot spaces the level starts after --start-at: give --start-at too",
            );
        }
        (_, Some(d)) if d.is_zero() => return usage("--level-slot must be more than 0"),
        (Some(_), Some(d)) => {
            if let Some(len) = s.level_length.filter(|len| d < *len) {
                return usage(format!(
                    "--level-slot {:.1}s is shorter than one level ({:.1}s of warm-up and measurement): every level would start late",
                    d.as_secs_f64(),
                    len.as_secs_f64()
                ));
            }
            Some(d)
        }
        (Some(_), None) if s.levels > 1 => match s.level_length {
            Some(len) => Some(derived_slot(len)),
            None => {
                return usage(format!(
                    "--start-at with {} levels: shards move from level to level together only when each level has a known length; give --level-slot (e.g. 90s), or time-bounded levels (--measurement-interval or --duration, with --warmup-duration instead of a warm-up request count)",
                    s.levels
                ));
            }
        },
        (_, None) => None,
    };
    Ok(ShardPlan {
        shard,
        start_at_unix_ns,
        level_slot,
    })
}

/// `--use-server-token-count` against the API: OpenAI-compatible servers report counts
/// (`usage`, asked for in every streamed request); Triton's generate and KServe endpoints do
/// when the model returns a count output, which the session checks against the model's
/// outputs before any request (a flag silently ignored would pass the tokenizer's numbers off
/// as the server's). Tensor inference has no tokens.
pub fn server_token_count(api: Api, asked: bool) -> Result<bool, UsageError> {
    match api {
        Api::Infer if asked => Err(UsageError(
            "--use-server-token-count: tensor inference has no tokens to count".into(),
        )),
        Api::Infer => Ok(false),
        _ => Ok(asked),
    }
}

/// `--tokenizer-from-server` against the API and the workload: vLLM's `/tokenize` takes chat and
/// completions prompts, and counts each dataset prompt once, so multi-turn sessions (whose
/// requests carry a growing history) are not counted by it.
pub fn tokenizer_from_server(api: Api, asked: bool, sessions: bool) -> Result<bool, UsageError> {
    if !asked {
        return Ok(false);
    }
    if !matches!(api, Api::Chat | Api::Completions) {
        return Err(UsageError(
            "--tokenizer-from-server counts with vLLM's /tokenize, which takes chat and completions prompts: give --endpoint-type chat or completions, or drop the flag".into(),
        ));
    }
    if sessions {
        return Err(UsageError(
            "--tokenizer-from-server counts each prompt once before the run, but a multi-turn session's requests carry a history that grows turn by turn: drop the flag (the server's counts are still compared with the client's, per level)".into(),
        ));
    }
    Ok(true)
}

/// The outputs a Triton LLM model reports its token count in (TensorRT-LLM's `output_ids` and
/// `sequence_length`; the vLLM backend's `num_output_tokens`, sent only when the request asks
/// with `return_num_output_tokens`).
pub const COUNT_OUTPUTS: [&str; 3] = ["output_ids", "sequence_length", "num_output_tokens"];

/// Whether a Triton model's outputs let `--use-server-token-count` read the server's count:
/// `Err` names its outputs and what to do instead.
pub fn check_server_count(
    model: &str,
    outputs: &[&str],
    extra_inputs: &[(String, serde_json::Value)],
) -> Result<(), UsageError> {
    let asks_vllm = extra_inputs
        .iter()
        .any(|(k, v)| k == "return_num_output_tokens" && v == &serde_json::Value::Bool(true));
    let counts = outputs
        .iter()
        .any(|o| COUNT_OUTPUTS[..2].contains(o) || (*o == COUNT_OUTPUTS[2] && asks_vllm));
    if counts {
        return Ok(());
    }
    let vllm_hint = if outputs.contains(&COUNT_OUTPUTS[2]) {
        " (it declares num_output_tokens: add --extra-inputs return_num_output_tokens:true to have the vLLM backend send it)"
    } else {
        ""
    };
    Err(UsageError(format!(
        "--use-server-token-count: model '{model}' returns no token count (its outputs: {}){vllm_hint}; Triton reports one only in output_ids or sequence_length (TensorRT-LLM) or num_output_tokens (vLLM backend); drop the flag and give the model's tokenizer instead (--tokenizer ORG/NAME, from the local Hugging Face cache, or a tokenizer.json)",
        if outputs.is_empty() {
            "none declared".to_string()
        } else {
            outputs.join(", ")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_sections() {
        let secs = Duration::from_secs;
        let one_of_four = Some(Shard { index: 1, count: 4 });
        let spec = |shard: Option<Shard>, shards, index| ShardSpec {
            shard,
            shards,
            shard_index: index,
            levels: 1,
            ..ShardSpec::default()
        };
        assert_eq!(
            shard(&spec(None, None, Some(3))).unwrap().shard,
            Shard::WHOLE
        );
        assert_eq!(
            shard(&spec(one_of_four, None, Some(3))).unwrap().shard,
            Shard { index: 1, count: 4 }
        );
        assert_eq!(
            shard(&spec(None, Some(4), Some(3))).unwrap().shard,
            Shard { index: 3, count: 4 }
        );
        for (bad, says) in [
            (spec(None, Some(4), None), "JOB_COMPLETION_INDEX"),
            (spec(one_of_four, Some(4), None), "give one"),
            (spec(None, Some(4), Some(4)), "not below"),
        ] {
            let e = shard(&bad).unwrap_err();
            assert!(e.0.contains(says), "{e}");
        }
        let timed = |levels, level_length, level_slot| ShardSpec {
            start_at: Some(1_767_225_600_000_000_000),
            levels,
            level_length,
            level_slot,
            ..ShardSpec::default()
        };
        let p = shard(&timed(3, Some(secs(10)), None)).unwrap();
        assert_eq!(p.start_at_unix_ns, Some(1_767_225_600_000_000_000));
        assert_eq!(p.level_slot, Some(secs(15)));
        assert_eq!(p.level_start(2), Some(1_767_225_630_000_000_000));
        assert_eq!(shard(&timed(1, None, None)).unwrap().level_slot, None);
        assert_eq!(
            shard(&timed(3, None, Some(secs(90)))).unwrap().level_slot,
            Some(secs(90))
        );
        let e = shard(&timed(3, None, None)).unwrap_err();
        assert!(e.0.contains("--level-slot"), "{e}");
        let e = shard(&timed(3, Some(secs(10)), Some(secs(5)))).unwrap_err();
        assert!(e.0.contains("shorter than one level"), "{e}");
        let e = shard(&ShardSpec {
            level_slot: Some(secs(5)),
            ..ShardSpec::default()
        })
        .unwrap_err();
        assert!(e.0.contains("give --start-at"), "{e}");
    }

    #[test]
    fn server_token_count_only_where_the_server_counts() {
        assert_eq!(server_token_count(Api::Chat, true), Ok(true));
        assert_eq!(server_token_count(Api::Completions, false), Ok(false));
        assert_eq!(server_token_count(Api::Kserve, true), Ok(true));
        assert!(server_token_count(Api::Infer, true).is_err());
        let e = check_server_count("gpt2", &["text_output"], &[]).unwrap_err();
        assert!(
            e.0.contains("model 'gpt2' returns no token count (its outputs: text_output)")
                && e.0.contains("--tokenizer"),
            "{e}"
        );
        assert!(check_server_count("m", &["text_output", "output_ids"], &[]).is_ok());
        assert!(check_server_count("m", &["sequence_length"], &[]).is_ok());
        let vllm = ["text_output", "num_output_tokens"];
        let e = check_server_count("m", &vllm, &[]).unwrap_err();
        assert!(
            e.0.contains("--extra-inputs return_num_output_tokens:true"),
            "{e}"
        );
        let asked = [(
            "return_num_output_tokens".to_string(),
            serde_json::Value::Bool(true),
        )];
        assert!(check_server_count("m", &vllm, &asked).is_ok());
    }

    fn spec(model: &str) -> TargetSpec {
        TargetSpec {
            model: model.into(),
            ..TargetSpec::default()
        }
    }

    #[test]
    fn target_defaults_and_endpoints() {
        let t = target(&spec("gpt2")).unwrap();
        assert_eq!(t.api, Api::Kserve);
        assert_eq!(t.base_url, "http://localhost:8001");
        let t = target(&TargetSpec {
            service_kind: Some(ServiceKind::Openai),
            streaming: Some(true),
            ..spec("m")
        })
        .unwrap();
        assert_eq!(t.api, Api::Chat);
        assert_eq!(
            t.endpoint_url(),
            "http://localhost:8000/v1/chat/completions"
        );
        let t = target(&TargetSpec {
            endpoint_type: Some(Api::Generate),
            streaming: Some(true),
            url: Some("https://h:9/api/".into()),
            ..spec("m")
        })
        .unwrap();
        assert_eq!(
            t.endpoint_url(),
            "https://h:9/api/v2/models/m/generate_stream"
        );
        let refused: [fn(&mut TargetSpec); 4] = [
            |t| (t.endpoint_type, t.backend) = (Some(Api::Chat), Some(Backend::Vllm)),
            |t| (t.endpoint_type, t.service_kind) = (Some(Api::Kserve), Some(ServiceKind::Openai)),
            |t| t.model = " ".into(),
            |t| t.headers = vec!["novalue".into()],
        ];
        for change in refused {
            let mut bad = spec("m");
            change(&mut bad);
            assert!(target(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn levels_forms_and_conflicts() {
        let c = |s: &str| crate::plan::values::concurrency_flag("--concurrency", s).unwrap();
        let r = |s: &str| crate::plan::values::rate_flag("--request-rate", s).unwrap();
        assert_eq!(
            levels(None, None, Arrival::Constant, 1024).unwrap(),
            [Stimulus::Concurrency(1)]
        );
        assert_eq!(
            levels(Some(&c("1:8")), None, Arrival::Constant, 1024).unwrap(),
            [1, 2, 4, 8].map(Stimulus::Concurrency)
        );
        let rates = levels(None, Some(&r("10,20")), Arrival::Poisson, 64).unwrap();
        assert_eq!(
            rates[1],
            Stimulus::RequestRate {
                rate: 20.0,
                arrival: Arrival::Poisson,
                max_inflight: 64
            }
        );
        assert!(levels(Some(&c("4")), Some(&r("10")), Arrival::Constant, 1024).is_err());
        assert!(levels(None, Some(&r("10")), Arrival::Constant, 0).is_err());
    }

    #[test]
    fn stop_rules() {
        let ms = |n| Some(Duration::from_millis(n));
        let spec = |request_count, measurement_interval, duration, num_prompts| StopSpec {
            request_count,
            measurement_interval,
            duration,
            num_prompts,
        };
        let window = |n| LevelLengthRule::Fixed(LevelLength::Window(Duration::from_millis(n)));
        for (given, want) in [
            (spec(None, None, None, None), LevelLengthRule::Auto),
            (
                spec(None, None, None, Some(200)),
                LevelLengthRule::Fixed(LevelLength::Requests(200)),
            ),
            (spec(None, ms(10_000), None, Some(200)), window(10_000)),
            (spec(None, None, ms(3_000), None), window(3_000)),
        ] {
            assert_eq!(stop(&given).unwrap(), want, "{given:?}");
        }
        for bad in [
            spec(Some(5), ms(100), None, None),
            spec(Some(0), None, None, None),
            spec(None, Some(Duration::from_micros(10)), None, None),
        ] {
            assert!(stop(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn workload_sections() {
        let w = workload(&WorkloadSpec::default()).unwrap();
        assert_eq!(
            w.prompts,
            PromptSource::Synthetic {
                mean: 550,
                stddev: 0
            }
        );
        assert_eq!(w.num_prompts, 100);
        assert_eq!(w.output, None);
        let w = workload(&WorkloadSpec {
            output_tokens_mean: Some(100),
            output_tokens_stddev: 10,
            output_deterministic: true,
            extra_inputs: vec!["ignore_eos:true".into(), "{\"temperature\":0.5}".into()],
            ..WorkloadSpec::default()
        })
        .unwrap();
        assert_eq!(
            w.output,
            Some(OutputLength {
                mean: 100,
                stddev: 10,
                deterministic: true
            })
        );
        assert_eq!(
            w.extra_inputs[..2],
            [
                ("ignore_eos".into(), serde_json::json!(true)),
                ("temperature".into(), serde_json::json!(0.5))
            ]
        );
        let refused: [fn(&mut WorkloadSpec); 4] = [
            |w| w.num_prompts = Some(0),
            |w| (w.input_file, w.input_tokens_mean) = (Some("p.jsonl".into()), Some(10)),
            |w| w.output_deterministic = true,
            |w| w.extra_inputs = vec!["{not json".into()],
        ];
        for change in refused {
            let mut bad = WorkloadSpec::default();
            change(&mut bad);
            assert!(workload(&bad).is_err(), "{bad:?}");
        }
    }

    fn api_spec(api: Api, url: &str) -> TargetSpec {
        TargetSpec {
            endpoint_type: Some(api),
            url: Some(url.into()),
            model: "m".into(),
            ..TargetSpec::default()
        }
    }

    #[test]
    fn metrics_source_default_and_given() {
        let auto = |api, url| {
            let t = target(&api_spec(api, url)).unwrap();
            match metrics_source(None, &t).unwrap() {
                MetricsSource::Auto(urls) => urls,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            auto(Api::Kserve, "[::1]:8001"),
            ["http://[::1]:8002/metrics"]
        );
        // An OpenAI server's own port first (vLLM, SGLang, TGI), then Triton's layout beside
        // it: two above its HTTP port, never a fixed 8002 (another server may hold it).
        assert_eq!(
            auto(Api::Chat, "https://h:8080/prefix"),
            ["https://h:8080/metrics", "http://h:8082/metrics"]
        );
        assert_eq!(auto(Api::Generate, "h:8000"), ["http://h:8002/metrics"]);
        assert_eq!(auto(Api::Kserve, "h:18001"), ["http://h:18002/metrics"]);
        let chat = target(&api_spec(Api::Chat, "https://h:8080/prefix")).unwrap();
        assert_eq!(
            metrics_source(Some("h:9"), &chat).unwrap(),
            MetricsSource::Url("http://h:9/metrics".into())
        );
        assert_eq!(
            gpu_metrics_url(Some("dcgm:9400")).unwrap(),
            Some("http://dcgm:9400/metrics".into())
        );
    }

    #[test]
    fn the_environment_key_is_for_openai_targets_only() {
        let with_env = |api: Api, flag: Option<&str>| {
            target(&TargetSpec {
                api_key: flag.map(str::to_string),
                env_api_key: Some("sk-env".into()),
                ..api_spec(api, "h:1")
            })
            .unwrap()
            .api_key
        };
        assert_eq!(with_env(Api::Chat, None).as_deref(), Some("sk-env"));
        assert_eq!(with_env(Api::Completions, None).as_deref(), Some("sk-env"));
        for triton in [Api::Kserve, Api::Generate] {
            assert_eq!(with_env(triton, None), None, "{triton:?}");
            // Given on the command line, it is the user's choice (a gateway in front of Triton).
            assert_eq!(
                with_env(triton, Some("sk-flag")).as_deref(),
                Some("sk-flag")
            );
        }
    }

    #[test]
    fn metrics_headers_name_given_headers() {
        let t = target(&TargetSpec {
            headers: vec![
                "X-Team: infra".into(),
                "Triton-Access-Token: t".into(),
                "X-Gateway-Key: g".into(),
            ],
            metrics_headers: vec!["x-team".into()],
            api_key: Some("sk".into()),
            ..api_spec(Api::Chat, "h:1")
        })
        .unwrap();
        let m = t.metrics_header_map().unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m.get("x-team").unwrap(), "infra");
        assert_eq!(m.get("triton-access-token").unwrap(), "t");
        assert!(m.get("authorization").is_none() && m.get("x-gateway-key").is_none());
        assert_eq!(
            t.header_map().unwrap().len(),
            4,
            "all of them to the target"
        );
        let e = target(&TargetSpec {
            metrics_headers: vec!["X-Missing".into()],
            ..api_spec(Api::Chat, "h:1")
        })
        .unwrap_err();
        assert!(e.0.contains("no -H header"), "{e}");
    }
}
