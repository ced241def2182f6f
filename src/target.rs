//! Where requests go: the API, the server's address, the model, headers and credentials, and
//! how each is shown without its secrets (redaction of headers and command lines).

use std::path::PathBuf;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use strum::{EnumString, IntoStaticStr, VariantArray, VariantNames};

use crate::error::{UsageError, usage};

/// Which API the requests go to; its name (`--endpoint-type`, files) is its snake_case name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    clap::ValueEnum,
    IntoStaticStr,
    EnumString,
    VariantArray,
    VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum Api {
    /// Triton KServe v2 gRPC (`ModelStreamInfer` / `ModelInfer`).
    #[value(help = "Triton KServe v2 over gRPC (ModelStreamInfer)")]
    Kserve,
    /// OpenAI chat completions.
    #[value(help = "OpenAI `/v1/chat/completions`")]
    Chat,
    /// OpenAI completions.
    #[value(help = "OpenAI `/v1/completions`")]
    Completions,
    /// Triton HTTP generate / generate_stream.
    #[value(
        help = "Triton HTTP `/v2/models/{model}/generate` (`generate_stream` with --streaming)"
    )]
    Generate,
    /// KServe v2 HTTP tensor inference (`/v2/models/{m}/infer`), for `perf -i http`.
    #[value(skip)]
    Infer,
    /// OpenAI Responses API (`/v1/responses`).
    #[value(help = "OpenAI Responses API `/v1/responses`")]
    Responses,
    /// Anthropic Messages API (`/v1/messages`).
    #[value(
        help = "Anthropic Messages API `/v1/messages` (`x-api-key` from --api-key or ANTHROPIC_API_KEY)"
    )]
    Messages,
    /// OpenAI embeddings (`/v1/embeddings`): batches of texts, one vector each.
    #[value(help = "OpenAI `/v1/embeddings`: --batch-size-text texts per request, never streamed")]
    Embeddings,
    /// A reranker: one query and N passages, one score each (`/v1/rerank` and its layouts).
    #[value(
        help = "A reranker (`/v1/rerank`; see --rankings-api): a query and --batch-size-text passages per request, never streamed"
    )]
    Rankings,
}

crate::names::serde_by_name!(Api);

impl Api {
    /// GenAI-Perf's service kind for this API, as used in artifact directory names.
    pub fn service_kind(self) -> &'static str {
        match self {
            Api::Kserve | Api::Infer => "triton",
            _ => "openai",
        }
    }

    /// Whether requests generate text token by token (every API but embeddings and rankings,
    /// which answer once per request with vectors or scores).
    pub fn generates(self) -> bool {
        !matches!(self, Api::Embeddings | Api::Rankings)
    }

    /// Whether a response of this API can come as a stream of tokens.
    pub fn stream_support(self) -> StreamSupport {
        match self {
            Api::Chat | Api::Completions | Api::Responses | Api::Messages => StreamSupport::Always,
            // Triton streams only from a decoupled model: one response per request otherwise.
            Api::Kserve | Api::Generate => StreamSupport::IfDecoupled,
            Api::Embeddings | Api::Rankings | Api::Infer => StreamSupport::Never,
        }
    }

    /// Whether the server lists its models as OpenAI's does (`/v1/models`: vLLM, llama-server,
    /// TEI for Responses, Messages, embeddings and rerank too); Triton's generate and KServe
    /// list theirs in the model repository.
    pub fn lists_openai_models(self) -> bool {
        !matches!(self, Api::Kserve | Api::Generate | Api::Infer)
    }

    /// Whether requests carry chat-like input: roles, images and tool definitions.
    pub fn chat_like(self) -> bool {
        matches!(self, Api::Chat | Api::Responses | Api::Messages)
    }

    /// The endpoint type's name.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// How a reranker request and answer are laid out (`--rankings-api`); its name is its
/// snake_case name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    IntoStaticStr,
    EnumString,
    VariantArray,
    VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum RankingsLayout {
    /// Cohere/Jina `POST /v1/rerank {model, query, documents: [..]}` answered with
    /// `results[].relevance_score` (vLLM, llama-server, TEI's `/v1/rerank` too).
    #[default]
    #[value(help = "Cohere/Jina `/v1/rerank` with `documents` (vLLM, llama-server, TEI)")]
    Rerank,
    /// Hugging Face TEI's native `POST /rerank {query, texts: [..]}`, answered with a list of
    /// `{index, score}` (GenAI-Perf's `--extra-inputs rankings:tei`).
    #[value(help = "Hugging Face TEI's own `/rerank` with `texts` (GenAI-Perf's `rankings:tei`)")]
    Tei,
    /// NVIDIA NIM's `POST /v1/ranking {model, query: {text}, passages: [{text}]}`, answered
    /// with `rankings[].logit` (GenAI-Perf's default rankings layout).
    #[value(
        help = "NVIDIA NIM `/v1/ranking` with `query.text` and `passages` (GenAI-Perf's default)"
    )]
    Nim,
}

crate::names::serde_by_name!(RankingsLayout);

impl RankingsLayout {
    /// The layout's flag value.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// The `anthropic-version` header sent to a Messages API unless `-H` gives one.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// GenAI-Perf's legacy `--service-kind`: which family of server (an OpenAI one implies the chat
/// endpoint unless another is named).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ServiceKind {
    /// Triton (KServe v2).
    #[value(help = "Triton (gRPC by default)")]
    Triton,
    /// An OpenAI-compatible server.
    #[value(help = "An OpenAI-compatible HTTP server")]
    Openai,
}

/// Input layout of a Triton LLM model; its name (`--backend`) is its snake_case name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    clap::ValueEnum,
    IntoStaticStr,
    EnumString,
    VariantArray,
    VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum Backend {
    /// TensorRT-LLM.
    #[value(help = "TensorRT-LLM input layout (text_input, max_tokens, stream, ...)")]
    Tensorrtllm,
    /// vLLM backend.
    #[value(help = "vLLM backend input layout (text_input, stream, sampling_parameters)")]
    Vllm,
}

crate::names::serde_by_name!(Backend);

impl Backend {
    /// The backend's flag value.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// An extra header. Values of secret-looking headers never reach artifacts or logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Header name as given.
    pub name: String,
    /// Header value.
    pub value: String,
}

impl Header {
    /// Whether the value must be redacted wherever it is shown or written.
    pub fn is_secret(&self) -> bool {
        is_secret_name(&self.name)
    }

    /// `Name: value`, with secret values redacted.
    pub fn redacted(&self) -> String {
        if self.is_secret() {
            format!("{}: <redacted>", self.name)
        } else {
            format!("{}: {}", self.name, self.value)
        }
    }
}

/// Whether a header or flag name suggests its value is a credential.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "authorization",
        "token",
        "key",
        "secret",
        "cookie",
        "password",
        "credential",
    ]
    .iter()
    .any(|s| n.contains(s))
}

impl Serialize for Header {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verify {
    /// The chain must lead to a trusted root (the system's or `--cacert`'s), be valid now, and
    /// name the host of the URL.
    #[default]
    Full,
    /// The chain is checked, the name is not (perf_analyzer's `--ssl-https-verify-host 0`).
    ChainOnly,
    /// Nothing is checked (`-k/--insecure`, `--ssl-https-verify-peer 0`): anyone on the path can
    /// pose as the server. Warned about once and recorded in the artifacts.
    Off,
}

/// How a certificate or key file is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// Base64 between `-----BEGIN ...-----` lines (one or more items).
    #[default]
    #[value(help = "Base64 PEM text")]
    Pem,
    /// One raw DER item (perf_analyzer's `--ssl-https-*-type DER`).
    #[value(help = "Raw DER")]
    Der,
}

/// A client certificate for mutual TLS: file paths only. The key is read when a connection is
/// made and never kept in the plan, so it cannot reach artifacts or logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientIdentity {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// How the certificate file is encoded.
    pub cert_encoding: Encoding,
    /// The private key (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub key: PathBuf,
    /// How the key file is encoded.
    pub key_encoding: Encoding,
}

/// TLS settings of a target, used when its URL is `https://` (HTTP, and gRPC over TLS).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TlsSettings {
    /// What is checked of the server's certificate.
    pub verify: Verify,
    /// CA certificates trusted in addition to the system's roots (`--cacert`, PEM).
    pub ca_files: Vec<PathBuf>,
    /// The client certificate, for servers that require one (`--cert`, `--key`).
    pub identity: Option<ClientIdentity>,
}

impl TlsSettings {
    /// Whether verification is off entirely (`-k`).
    pub fn insecure(&self) -> bool {
        self.verify == Verify::Off
    }
}

/// Whether an API's responses can stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamSupport {
    /// Every endpoint of the API can stream (OpenAI's and Anthropic's APIs with `stream: true`).
    Always,
    /// Only a decoupled model streams (Triton: `model_transaction_policy { decoupled: true }`).
    IfDecoupled,
    /// Responses come whole (vectors, scores, tensors).
    Never,
}

/// The largest event, streamed message or body accepted when nothing else is said (4 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 4 << 20;

/// Where requests go and how they are framed.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// The API.
    pub api: Api,
    /// `scheme://host:port[/prefix]`, no trailing slash.
    pub base_url: String,
    /// Host name, for deriving the metrics URL.
    pub host: String,
    /// Endpoint path under the base URL, no leading slash (HTTP APIs).
    pub endpoint: String,
    /// Model name.
    pub model: String,
    /// Triton LLM input layout (kserve).
    pub backend: Backend,
    /// Stream responses.
    pub streaming: bool,
    /// Neither `--streaming` nor `--no-streaming` was given: `streaming` is the tool's choice,
    /// from what the API can do and, for Triton, from the model's config (see
    /// [`Api::stream_support`]).
    #[serde(skip)]
    pub streaming_by_default: bool,
    /// Extra headers (`-H`).
    pub headers: Vec<Header>,
    /// Names of `-H` headers that may also go to the server's metrics and statistics endpoints
    /// (`--metrics-header`); Triton's access-token header always may.
    pub metrics_headers: Vec<String>,
    /// Bearer token for the target's own origin only; skipped when serialising.
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Largest event, streamed message or whole body accepted (`--max-event-size`).
    #[serde(skip)]
    pub max_event_bytes: usize,
    /// Acknowledge every read at once over HTTP/1.1 (`--tcp-quickack`): the client's half of a
    /// Nagle / delayed-ACK stall taken out of the measurement.
    #[serde(default)]
    pub tcp_quickack: bool,
    /// TLS settings; apply when `base_url` is `https://`.
    pub tls: TlsSettings,
    /// How reranker requests are laid out (rankings only).
    #[serde(default)]
    pub rankings: RankingsLayout,
}

impl Target {
    /// Whether requests travel over TLS (the URL is `https://`).
    pub fn uses_tls(&self) -> bool {
        self.base_url.starts_with("https://")
    }

    /// Full URL of the inference endpoint.
    pub fn endpoint_url(&self) -> String {
        format!("{}/{}", self.base_url, self.endpoint)
    }

    /// `scheme://host:port` of the target: where the API key may go.
    pub fn origin(&self) -> String {
        reqwest::Url::parse(&self.base_url).map_or_else(
            |_| self.base_url.clone(),
            |u| u.origin().ascii_serialization(),
        )
    }

    /// Whether `-H` header `h` may go to the metrics and statistics endpoints: named by
    /// `--metrics-header`, or Triton's access-token header (the statistics API asks for it).
    pub fn is_metrics_header(&self, h: &Header) -> bool {
        let n = h.name.to_ascii_lowercase();
        n == TRITON_ACCESS_TOKEN
            || n == format!("triton-grpc-protocol-{TRITON_ACCESS_TOKEN}")
            || self
                .metrics_headers
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&h.name))
    }

    /// Headers sent on every inference and discovery call to the target's own origin: `-H`
    /// values plus the API key, as `Authorization: Bearer` (or, for Anthropic's Messages API,
    /// as `x-api-key` next to an `anthropic-version` unless `-H` names one).
    pub fn header_map(&self) -> Result<HeaderMap, UsageError> {
        let mut map = headers_of(self.headers.iter())?;
        let anthropic = self.api == Api::Messages;
        if anthropic && !map.contains_key("anthropic-version") {
            map.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        if let Some(key) = &self.api_key {
            let (name, value) = match anthropic {
                true => (HeaderName::from_static("x-api-key"), key.trim().to_string()),
                false => (AUTHORIZATION, format!("Bearer {}", key.trim())),
            };
            let mut v = HeaderValue::from_str(&value).map_err(|_| {
                UsageError("--api-key contains characters not allowed in a header".into())
            })?;
            v.set_sensitive(true);
            map.insert(name, v);
        }
        Ok(map)
    }

    /// Headers for the server's metrics and statistics endpoints: only the `-H` headers
    /// [`Target::is_metrics_header`] allows, never the API key.
    pub fn metrics_header_map(&self) -> Result<HeaderMap, UsageError> {
        headers_of(self.headers.iter().filter(|h| self.is_metrics_header(h)))
    }

    /// The tag GenAI-Perf puts in artifact directory names: backend for Triton, else endpoint type.
    pub fn dir_tag(&self) -> &'static str {
        match self.api {
            Api::Kserve => self.backend.name(),
            other => other.name(),
        }
    }
}

/// Triton's access-token header (PyTriton and `--http-restricted-api`), lower-cased.
pub const TRITON_ACCESS_TOKEN: &str = "triton-access-token";

fn headers_of<'a>(headers: impl Iterator<Item = &'a Header>) -> Result<HeaderMap, UsageError> {
    let mut map = HeaderMap::new();
    for h in headers {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| UsageError(format!("-H: '{}' is not a valid header name", h.name)))?;
        let mut value = HeaderValue::from_str(&h.value).map_err(|_| {
            UsageError(format!(
                "-H: the value of '{}' is not a valid header value",
                h.name
            ))
        })?;
        value.set_sensitive(h.is_secret());
        map.append(name, value);
    }
    Ok(map)
}

pub(crate) fn default_endpoint(api: Api, model: &str, streaming: bool) -> String {
    match api {
        Api::Chat => "v1/chat/completions".into(),
        Api::Completions => "v1/completions".into(),
        Api::Generate if streaming => format!("v2/models/{model}/generate_stream"),
        Api::Generate => format!("v2/models/{model}/generate"),
        Api::Kserve | Api::Infer => String::new(),
        Api::Responses => "v1/responses".into(),
        Api::Messages => "v1/messages".into(),
        Api::Embeddings => "v1/embeddings".into(),
        // The layout's own path is chosen where the layout is known ([`rankings_endpoint`]).
        Api::Rankings => "v1/rerank".into(),
    }
}

/// The path of a reranker layout: Cohere/Jina's `v1/rerank`, TEI's `rerank`, NIM's
/// `v1/ranking`.
pub(crate) fn rankings_endpoint(layout: RankingsLayout) -> &'static str {
    match layout {
        RankingsLayout::Rerank => "v1/rerank",
        RankingsLayout::Tei => "rerank",
        RankingsLayout::Nim => "v1/ranking",
    }
}

pub(crate) fn bracket_host(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// `-u` with or without scheme → (`scheme://host:port[/prefix]`, host).
pub fn normalize_url(raw: &str) -> Result<(String, String), UsageError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return usage("-u/--url is empty");
    }
    let with_scheme = if raw.contains("://") {
        raw.to_string()
    } else {
        format!("http://{raw}")
    };
    let url = reqwest::Url::parse(&with_scheme).map_err(|e| {
        UsageError(format!(
            "-u {raw}: not a valid address ({e}); expected host:port or http(s)://host:port"
        ))
    })?;
    match url.scheme() {
        "http" | "https" => {}
        "grpc" => {
            let rebuilt = with_scheme.replacen("grpc://", "http://", 1);
            return normalize_url(&rebuilt);
        }
        other => {
            return usage(format!(
                "-u {raw}: scheme '{other}' is not supported; use http:// or https://"
            ));
        }
    }
    let host = url
        .host_str()
        .ok_or_else(|| UsageError(format!("-u {raw}: no host")))?
        .to_string();
    let base = format!(
        "{}{}",
        url.origin().ascii_serialization(),
        url.path().trim_end_matches('/')
    );
    Ok((base, host.trim_matches(['[', ']']).to_string()))
}

/// A metrics URL as given (`host:port`, with or without `/metrics`) → its full URL.
pub fn normalize_metrics_url(raw: &str) -> Result<String, UsageError> {
    let (base, _) = normalize_url(raw)?;
    Ok(if base.ends_with("/metrics") {
        base
    } else {
        format!("{base}/metrics")
    })
}

/// `Name: value` or `Name:value`.
pub fn parse_header(raw: &str) -> Result<Header, UsageError> {
    match raw.split_once(':') {
        Some((n, v)) if !n.trim().is_empty() => Ok(Header {
            name: n.trim().to_string(),
            value: v.trim().to_string(),
        }),
        _ => usage(format!(
            "-H '{}': expected 'Name: value'",
            redact_header_arg(raw)
        )),
    }
}

fn redact_header_arg(raw: &str) -> String {
    match raw.split_once(':') {
        Some((n, _)) if is_secret_name(n) => format!("{n}: <redacted>"),
        _ => raw.to_string(),
    }
}

/// Flags whose values are credentials.
const SECRET_FLAGS: [&str; 4] = [
    "--api-key",
    "--access-token",
    "--require-api-key",
    "--password",
];

/// Whether `flag` (`--api-key`) takes a credential.
pub fn is_secret_flag(flag: &str) -> bool {
    SECRET_FLAGS.contains(&flag)
}

/// Whether a `Name: value` header argument holds a credential (its value is never recorded).
pub fn is_secret_header(raw: &str) -> bool {
    raw.split_once(':').is_some_and(|(n, _)| is_secret_name(n))
}

/// `s` with the password of a URL's user information replaced (`http://u:<redacted>@host`);
/// `None` when it holds none.
pub fn redact_url_password(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (userinfo, host) = rest[..authority_end].rsplit_once('@')?;
    let (user, _) = userinfo.split_once(':')?;
    Some(format!(
        "{scheme}://{user}:<redacted>@{host}{}",
        &rest[authority_end..]
    ))
}

/// The command line for the record, with secret flag values, secret headers and URL passwords
/// redacted.
pub fn redact_command_line(argv: &[String]) -> String {
    // The flag whose value the next argument is: a credential or a header.
    let mut value_of: Option<&str> = None;
    let shown: Vec<String> = argv
        .iter()
        .map(|a| match value_of.take() {
            Some("-H" | "--header") => shell_quote(&redact_header_arg(a)),
            Some(_) => "<redacted>".to_string(),
            None => {
                if is_secret_flag(a) || a == "-H" || a == "--header" {
                    value_of = Some(a);
                }
                if let Some((flag, _)) = a.split_once('=').filter(|(f, _)| is_secret_flag(f)) {
                    format!("{flag}=<redacted>")
                } else if let Some(h) = a.strip_prefix("--header=") {
                    format!("--header={}", shell_quote(&redact_header_arg(h)))
                } else {
                    shell_quote(&redact_url_password(a).unwrap_or_else(|| a.clone()))
                }
            }
        })
        .collect();
    shown.join(" ")
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+{}".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every API, reranker layout and backend reads back from the name flags and files use.
    #[test]
    fn names_round_trip() {
        crate::names::assert_serde_round_trip::<Api>();
        crate::names::assert_serde_round_trip::<RankingsLayout>();
        crate::names::assert_serde_round_trip::<Backend>();
        assert_eq!(Api::Kserve.name(), "kserve");
        assert_eq!(Backend::Tensorrtllm.name(), "tensorrtllm");
    }

    #[test]
    fn command_line_redaction() {
        let argv: Vec<String> = [
            "ttftbench",
            "profile",
            "--api-key",
            "sk-1",
            "--api-key=sk-2",
            "-H",
            "Authorization: Bearer x",
            "-m",
            "gpt 2",
            "--output-tokens-mean",
            "100",
            "-u",
            "https://svc:hunter2@gw.example:8443/v1?x=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let s = redact_command_line(&argv);
        assert_eq!(
            s,
            "ttftbench profile --api-key <redacted> --api-key=<redacted> -H 'Authorization: <redacted>' -m 'gpt 2' --output-tokens-mean 100 -u 'https://svc:<redacted>@gw.example:8443/v1?x=1'"
        );
        assert_eq!(
            redact_url_password("http://user@host/x"),
            None,
            "no password"
        );
        assert_eq!(redact_url_password("localhost:8001"), None);
        assert_eq!(redact_url_password("a@b"), None);
    }
}
