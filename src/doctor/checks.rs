//! doctor's checks before the request: TCP connect, health, server and model metadata (with the
//! layout and decoupling the request needs), the Prometheus endpoint and the statistics API. Each
//! says what it found and, when it fails or warns, what to change.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{BIND_FIX, KEY_FIX, NOT_DECOUPLED_FIX, Step};
use crate::client::discovery::{PreflightError, list_hint, openai_models, triton_models_http};
use crate::client::tls::{self, HandshakeError, TlsContext};
use crate::client::{error_chain, grpc};
use crate::error::UsageError;
use crate::plan::RunPlan;
use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use crate::target::{Api, Target};
use crate::workload::kserve;
use crate::workload::tensor::ModelInfo;

/// How long one step may take before it counts as failed.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a doctor step could not ask over HTTP: a step's detail, the step says the fix.
#[derive(Debug, thiserror::Error)]
pub(super) enum HttpError {
    /// `-H`, `--api-key` or the TLS flags do not make a client.
    #[error(transparent)]
    Flags(#[from] UsageError),
    /// The client library refused to build one.
    #[error("cannot build the HTTP client: {}", error_chain(.0))]
    Build(reqwest::Error),
    /// No answer.
    #[error("GET {url}: {}", error_chain(.source))]
    Get {
        /// The URL.
        url: String,
        /// What the client said.
        source: reqwest::Error,
    },
}

pub(super) fn http_client(t: &Target) -> Result<reqwest::Client, HttpError> {
    crate::client::http::install_tls_provider();
    let headers = t.header_map()?;
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .default_headers(headers)
        .timeout(STEP_TIMEOUT);
    if t.uses_tls() {
        b = TlsContext::new(&t.tls).and_then(|c| c.reqwest(b))?;
    }
    b.build().map_err(HttpError::Build)
}

pub(super) async fn connect(t: &Target) -> Step {
    let step = Step::new("connect", "TCP connect");
    let url = match reqwest::Url::parse(&t.base_url) {
        Ok(u) => u,
        Err(e) => return step.fail(format!("{}: {e}", t.base_url), "fix -u"),
    };
    let host = url.host_str().unwrap_or("").trim_matches(['[', ']']);
    let port = url.port_or_known_default().unwrap_or(80);
    let step = Step::new("connect", format!("TCP connect to {host}:{port}"));
    let start = Instant::now();
    let addrs =
        match tokio::time::timeout(STEP_TIMEOUT, tokio::net::lookup_host((host, port))).await {
            Ok(Ok(a)) => a.collect::<Vec<_>>(),
            Ok(Err(e)) => {
                return step.fail(
                    format!("cannot resolve '{host}': {e}"),
                    "check the host name in -u (or use an IP address)",
                );
            }
            Err(_) => {
                return step.fail(
                    format!("resolving '{host}' took over {}s", STEP_TIMEOUT.as_secs()),
                    "check DNS or use an IP address in -u",
                );
            }
        };
    let mut last = String::from("no address");
    for a in &addrs {
        match tokio::time::timeout(STEP_TIMEOUT, tokio::net::TcpStream::connect(a)).await {
            Ok(Ok(_)) if t.uses_tls() => return tls_step(step, t, host, port, start).await,
            Ok(Ok(_)) => {
                return step.ok(format!(
                    "{a} answered in {:.1} ms",
                    start.elapsed().as_secs_f64() * 1e3
                ));
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return step.fail(
                    format!("connection refused at {a}: nothing listens on that port"),
                    BIND_FIX,
                );
            }
            Ok(Err(e)) => last = format!("{a}: {e}"),
            Err(_) => last = format!("{a}: no answer within {}s", STEP_TIMEOUT.as_secs()),
        }
    }
    step.fail(
        last,
        "the host does not answer: check the address, routes and firewalls between here and the server",
    )
}

/// The TLS handshake of the connect step, made as `profile` and `perf` make it: a failure
/// reads the same as theirs.
async fn tls_step(step: Step, t: &Target, host: &str, port: u16, start: Instant) -> Step {
    let step = Step {
        title: format!("TCP and TLS connect to {host}:{port}"),
        ..step
    };
    let ctx = match TlsContext::new(&t.tls) {
        Ok(c) => c,
        Err(e) => return step.fail(e.0, "fix the TLS options (--cacert, --cert, --key)"),
    };
    let alpn = match t.api {
        Api::Kserve => tls::ALPN_H2,
        _ => tls::ALPN_HTTP1,
    };
    let alpn = [alpn];
    let shake = tls::handshake(&ctx, host, port, &alpn);
    match tokio::time::timeout(STEP_TIMEOUT, shake).await {
        Ok(Ok(())) => step.ok(format!(
            "TLS handshake done in {:.1} ms{}",
            start.elapsed().as_secs_f64() * 1e3,
            if t.tls.insecure() {
                " (certificate NOT verified: -k)"
            } else {
                ", certificate verified"
            }
        )),
        Ok(Err(HandshakeError::Tls(f))) => step.fail(f.detail(&format!("{host}:{port}")), f.fix()),
        Ok(Err(HandshakeError::Usage(u))) => step.fail(u.0, "fix the TLS options"),
        Ok(Err(HandshakeError::Io(e))) => step.fail(
            format!("the connection broke during the TLS handshake: {e}"),
            "check that -u names the server's TLS port; for a plain-HTTP server use http://",
        ),
        Err(_) => step.fail(
            format!("no TLS handshake within {}s", STEP_TIMEOUT.as_secs()),
            "check that -u names the server's TLS port; for a plain-HTTP server use http://",
        ),
    }
}

const GRPC_PORT_FIX: &str = "this port does not speak Triton's gRPC API: Triton's gRPC port is 8001 (for its HTTP port 8000 use --endpoint-type generate, for an OpenAI-compatible server --endpoint-type chat)";

pub(super) async fn grpc_health(t: &Target) -> (Step, Option<tonic::transport::Channel>) {
    let step = Step::new("health", "gRPC health (ServerLive, ServerReady)");
    let ch = match grpc::connect(t).await {
        Ok(c) => c,
        Err(e) => {
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            return (step.fail(first, GRPC_PORT_FIX), None);
        }
    };
    let md = match grpc::metadata_for(t) {
        Ok(m) => m,
        Err(e) => return (step.fail(e.0, "fix the -H values"), None),
    };
    let mut c = GrpcInferenceServiceClient::new(ch.clone());
    let live = tokio::time::timeout(
        STEP_TIMEOUT,
        c.server_live(grpc::with_metadata(
            tonic::Request::new(crate::proto::ServerLiveRequest {}),
            &md,
        )),
    )
    .await;
    let live = match live {
        Ok(Ok(r)) => r.into_inner().live,
        Ok(Err(s)) => return (grpc_status_step(step, &s), None),
        Err(_) => {
            return (
                step.fail(
                    format!("no gRPC answer within {}s", STEP_TIMEOUT.as_secs()),
                    GRPC_PORT_FIX,
                ),
                None,
            );
        }
    };
    let ready = match c
        .server_ready(grpc::with_metadata(
            tonic::Request::new(crate::proto::ServerReadyRequest {}),
            &md,
        ))
        .await
    {
        Ok(r) => r.into_inner().ready,
        Err(s) => return (grpc_status_step(step, &s), None),
    };
    if !live || !ready {
        return (
            step.fail(
                format!("live: {live}, ready: {ready}"),
                "the server is up but not ready: wait for its models to load, then check its log (a model that failed to load keeps it unready)",
            ),
            None,
        );
    }
    (step.ok("live and ready"), Some(ch))
}

fn grpc_status_step(step: Step, s: &tonic::Status) -> Step {
    use tonic::Code;
    let detail = format!("{:?}: {}", s.code(), s.message());
    match s.code() {
        Code::Unauthenticated | Code::PermissionDenied => step.fail(
            detail,
            "the server (or a gateway in front of it) wants credentials: add -H 'name: value' with the header it expects (e.g. -H 'triton-access-token: TOKEN') or --api-key",
        ),
        Code::Unimplemented | Code::Unknown | Code::Internal | Code::Unavailable => {
            step.fail(detail, GRPC_PORT_FIX)
        }
        _ => step.fail(detail, "see the server's log"),
    }
}

pub(super) async fn grpc_server(t: &Target, ch: tonic::transport::Channel) -> Step {
    let step = Step::new("server", "server metadata and extensions");
    let md = grpc::metadata_for(t).unwrap_or_default();
    let mut c = GrpcInferenceServiceClient::new(ch);
    match c
        .server_metadata(grpc::with_metadata(
            tonic::Request::new(crate::proto::ServerMetadataRequest {}),
            &md,
        ))
        .await
    {
        Ok(r) => {
            let m = r.into_inner();
            step.ok(format!(
                "{} {}; extensions: {}",
                m.name,
                m.version,
                if m.extensions.is_empty() {
                    "none".to_string()
                } else {
                    m.extensions.join(", ")
                }
            ))
        }
        Err(s) => grpc_status_step(step, &s),
    }
}

fn describe(info: &ModelInfo) -> String {
    use crate::target::Backend;
    // vLLM's layout needs only text_input, which TensorRT-LLM's has too: name the one the
    // model's own inputs point at.
    let fits: Vec<&str> = if info.input("sampling_parameters").is_some() {
        vec![Backend::Vllm.name()]
    } else {
        [Backend::Tensorrtllm, Backend::Vllm]
            .into_iter()
            .find(|b| kserve::check_layout(info, *b).is_ok())
            .map(|b| b.name())
            .into_iter()
            .collect()
    };
    format!(
        "{}: platform {}, backend {}, max_batch_size {}, decoupled: {}; inputs: {}; layout fits --backend {}",
        info.name,
        if info.platform.is_empty() {
            "-"
        } else {
            &info.platform
        },
        if info.backend.is_empty() {
            "-"
        } else {
            &info.backend
        },
        info.max_batch_size,
        if info.decoupled { "yes" } else { "no" },
        info.describe_inputs(),
        if fits.is_empty() {
            "none (not an LLM layout ttftbench profile knows)".to_string()
        } else {
            fits.join(" or ")
        }
    )
}

pub(super) async fn grpc_model(t: &Target, ch: tonic::transport::Channel) -> Step {
    let step = Step::new("model", format!("model '{}' metadata and config", t.model));
    match grpc::discover(ch, t).await {
        Ok(info) => {
            let detail = describe(&info);
            if let Err(e) = kserve::check_layout(&info, t.backend) {
                return step.fail(detail, format!("{e} (give the matching --backend)"));
            }
            if !info.decoupled {
                return step.fail(detail, NOT_DECOUPLED_FIX);
            }
            step.ok(detail)
        }
        Err(PreflightError::Usage(u)) => {
            let msg = u.0;
            let fix = if msg.contains("not found") {
                "use one of the model names listed, exactly as the server spells them (-m)"
            } else {
                "add the credentials the server asks for"
            };
            step.fail(msg, fix)
        }
        Err(PreflightError::Unavailable(m)) => step.fail(m, "see the server's log"),
    }
}

async fn http_get(client: &reqwest::Client, url: &str) -> Result<(u16, String), HttpError> {
    let resp = client
        .get(url)
        .send()
        .await
        .map_err(|source| HttpError::Get {
            url: url.into(),
            source,
        })?;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    Ok((status, text))
}

fn auth_or(status: u16, step: Step, detail: String, other_fix: &str) -> Step {
    if status == 401 || status == 403 {
        step.fail(detail, KEY_FIX)
    } else {
        step.fail(detail, other_fix)
    }
}

fn short(body: &str) -> String {
    let b = body.trim();
    if b.chars().count() > 200 {
        format!("{}…", b.chars().take(200).collect::<String>())
    } else {
        b.to_string()
    }
}

pub(super) async fn http_health(c: &reqwest::Client, t: &Target) -> Step {
    let step = Step::new("health", "HTTP health (/v2/health/live, /v2/health/ready)");
    for path in ["live", "ready"] {
        let url = format!("{}/v2/health/{path}", t.base_url);
        match http_get(c, &url).await {
            Ok((200, _)) => {}
            Ok((s, body)) => {
                return auth_or(
                    s,
                    step,
                    format!("{url} answered HTTP {s} {}", short(&body)),
                    if path == "ready" {
                        "the server is up but not ready: wait for its models to load and check its log"
                    } else {
                        "this is not a KServe v2 (Triton) HTTP endpoint: check -u (Triton's HTTP port is 8000) or use --endpoint-type chat for an OpenAI-compatible server"
                    },
                );
            }
            Err(e) => return step.fail(e, BIND_FIX),
        }
    }
    step.ok("live and ready")
}

pub(super) async fn http_server(c: &reqwest::Client, t: &Target) -> Step {
    let step = Step::new("server", "server metadata and extensions (GET /v2)");
    let url = format!("{}/v2", t.base_url);
    match http_get(c, &url).await {
        Ok((200, body)) => {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let ext: Vec<&str> = v
                .get("extensions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            step.ok(format!(
                "{} {}; extensions: {}",
                v.get("name").and_then(Value::as_str).unwrap_or("?"),
                v.get("version").and_then(Value::as_str).unwrap_or("?"),
                if ext.is_empty() {
                    "none".to_string()
                } else {
                    ext.join(", ")
                }
            ))
        }
        Ok((s, body)) => auth_or(
            s,
            step,
            format!("{url} answered HTTP {s} {}", short(&body)),
            "this is not a KServe v2 (Triton) HTTP server: check -u",
        ),
        Err(e) => step.fail(e, BIND_FIX),
    }
}

pub(super) async fn http_model(c: &reqwest::Client, t: &Target) -> Step {
    let step = Step::new("model", format!("model '{}' metadata and config", t.model));
    let url = format!("{}/v2/models/{}", t.base_url, t.model);
    let meta = match http_get(c, &url).await {
        Ok((200, body)) => serde_json::from_str::<Value>(&body).unwrap_or(Value::Null),
        Ok((s @ (400 | 404), body)) => {
            let names = triton_models_http(c, &t.base_url).await;
            return step.fail(
                format!(
                    "{url} answered HTTP {s} {}; {}",
                    short(&body),
                    list_hint(names.as_deref())
                ),
                "use one of the model names listed, exactly as the server spells them (-m)",
            );
        }
        Ok((s, body)) => {
            return auth_or(
                s,
                step,
                format!("{url} answered HTTP {s} {}", short(&body)),
                "see the server's log",
            );
        }
        Err(e) => return step.fail(e, BIND_FIX),
    };
    let cfg_url = format!("{url}/config");
    let cfg = match http_get(c, &cfg_url).await {
        Ok((200, body)) => serde_json::from_str::<Value>(&body).ok(),
        _ => None,
    };
    let decoupled = cfg
        .as_ref()
        .and_then(|c| c.pointer("/model_transaction_policy/decoupled"))
        .and_then(Value::as_bool);
    let inputs: Vec<String> = meta
        .get("inputs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|i| {
                    format!(
                        "{} {}",
                        i.get("name").and_then(Value::as_str).unwrap_or("?"),
                        i.get("datatype").and_then(Value::as_str).unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let detail = format!(
        "{}: platform {}, decoupled: {}; inputs: {}",
        t.model,
        meta.get("platform")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("-"),
        match decoupled {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown (config not readable)",
        },
        if inputs.is_empty() {
            "?".to_string()
        } else {
            inputs.join(", ")
        }
    );
    if decoupled == Some(false) && t.streaming {
        return step.fail(detail, NOT_DECOUPLED_FIX);
    }
    step.ok(detail)
}

pub(super) async fn openai_health(c: &reqwest::Client, t: &Target) -> (Step, Option<Vec<String>>) {
    let step = Step::new("health", "OpenAI API (GET /v1/models)");
    match openai_models(c, t).await {
        Ok(Some(names)) => (
            step.ok(format!("{} models listed", names.len())),
            Some(names),
        ),
        Ok(None) => (
            step.ok("answers, but does not list its models (/v1/models missing)"),
            None,
        ),
        Err(PreflightError::Usage(u)) => {
            (step.fail(u.0.lines().next().unwrap_or(""), KEY_FIX), None)
        }
        Err(PreflightError::Unavailable(m)) => (
            step.fail(m.lines().next().unwrap_or("").to_string(), BIND_FIX),
            None,
        ),
    }
}

pub(super) fn openai_model(t: &Target, names: Option<Vec<String>>) -> Step {
    let step = Step::new("model", format!("model '{}'", t.model));
    match names {
        Some(n) if !n.is_empty() && !n.contains(&t.model) => step.fail(
            format!("not served at {}; {}", t.base_url, list_hint(Some(&n))),
            "use one of the model names listed, exactly as the server spells them (-m)",
        ),
        Some(_) => step.ok("listed by the server"),
        None => step.ok("not checked (the server does not list models)"),
    }
}

pub(super) async fn metrics(c: &reqwest::Client, plan: &RunPlan) -> Step {
    use crate::server_metrics::{engines, prometheus, split};
    const FIX: &str = "profiling works without it, but the server's own view (queue, batch, KV cache) is then missing: start Triton with --metrics-port 8002 (--allow-metrics true), or give --server-metrics-url (vLLM, SGLang and TGI serve /metrics on their API port)";
    let model = &plan.target.model;
    let mut tried = Vec::new();
    for url in plan.server_metrics.candidates() {
        let text = match crate::server_metrics::fetch_page(c, url).await {
            Ok(t) => t,
            Err(e) => {
                tried.push(e.to_string());
                continue;
            }
        };
        let page = prometheus::parse(&text);
        let kind = plan.server_kind.or_else(|| engines::detect(&page));
        let Some(sample) = kind.and_then(|k| engines::read_sample(&page, k, Some(model))) else {
            tried.push(format!(
                "{url} has no metrics this version reads for '{model}'"
            ));
            continue;
        };
        let found: Vec<&str> = [
            (sample.waiting.is_some(), "waiting requests"),
            (sample.running.is_some(), "running requests"),
            (sample.kv_usage.is_some(), "KV-cache usage"),
            (sample.queue.is_some(), "queue time"),
            (sample.ttft.is_some(), "server TTFT"),
            (sample.prefix_cache.is_some(), "prefix cache"),
        ]
        .into_iter()
        .filter_map(|(present, name)| present.then_some(name))
        .collect();
        let whose = if sample.model_matched {
            format!("'{model}'")
        } else {
            "the page's only model (none is labelled with -m)".to_string()
        };
        return Step::new("metrics", format!("metrics endpoint {url}")).ok(format!(
            "{} metrics for {whose}: {}",
            split::engine_name(sample.kind),
            found.join(", ")
        ));
    }
    Step::new(
        "metrics",
        format!("metrics endpoint {}", plan.server_metrics.url()),
    )
    .warn(tried.join("; "), FIX)
}

const RESTRICTED_FIX: &str = "the statistics API is restricted: add -H 'triton-access-token: TOKEN' (the header the server's --http-restricted-api / --grpc-restricted-protocol names) to see queue and compute time; profiling works without it";

pub(super) async fn statistics(
    c: &reqwest::Client,
    t: &Target,
    channel: Option<tonic::transport::Channel>,
) -> Step {
    let step = Step::new("statistics", "statistics API (queue vs compute time)");
    match (t.api, channel) {
        (Api::Kserve, Some(ch)) => {
            let md = grpc::stats_metadata_for(t).unwrap_or_default();
            match crate::server_metrics::model_statistics(ch, &t.model, &md).await {
                Ok(s) => step.ok(format!("{} successful requests so far", s.success.count)),
                Err(s)
                    if matches!(
                        s.code(),
                        tonic::Code::PermissionDenied | tonic::Code::Unauthenticated
                    ) || s.message().contains("restricted") =>
                {
                    step.warn(format!("{:?}: {}", s.code(), s.message()), RESTRICTED_FIX)
                }
                Err(s) => step.warn(
                    format!("{:?}: {}", s.code(), s.message()),
                    "the server's own queue/compute split will be missing from the results",
                ),
            }
        }
        (Api::Generate, _) => {
            let url = format!("{}/v2/models/{}/stats", t.base_url, t.model);
            match http_get(c, &url).await {
                Ok((200, _)) => step.ok("readable"),
                Ok((s @ (401 | 403), body)) => {
                    step.warn(format!("HTTP {s} {}", short(&body)), RESTRICTED_FIX)
                }
                Ok((s, body)) => step.warn(
                    format!("HTTP {s} {}", short(&body)),
                    "the server's own queue/compute split will be missing from the results",
                ),
                Err(e) => step.warn(e, "the server's own queue/compute split will be missing"),
            }
        }
        _ => step.skip("not a KServe API"),
    }
}
