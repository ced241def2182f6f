//! `ttftbench doctor -u URL -m MODEL`: the seeds' troubleshooting order as one command —
//! reachability, health, server metadata, model metadata and config, metrics, statistics, then one
//! streamed request with each event's arrival time and content. It stops at the first step that
//! fails and says what to change.
//!
//! Steps that profiling can do without (the Prometheus endpoint, the statistics API) only warn.
//! The request is built exactly as `profile` builds it (same plan, same dataset code), so a
//! request that works here works there. Event times are milliseconds since the request was sent,
//! taken when each event has been read (after decoding, so they are indicative; `profile`
//! timestamps bytes before decoding).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::discovery::{PreflightError, list_hint, openai_models, triton_models_http};
use crate::client::{Payload, error_chain, grpc};
use crate::plan::RunPlan;
use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use crate::target::{Api, Target};
use crate::workload::tensor::ModelInfo;
use crate::workload::tokenizer::Tokenizer;
use crate::workload::{dataset, kserve};

/// How long one step may take before it counts as failed.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the streamed request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Events shown in full; later ones are summarised.
const SHOWN_EVENTS: usize = 20;

/// The outcome of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Works.
    Ok,
    /// Works without it, but something is missing.
    Warn,
    /// Broken: the steps after it were not run.
    Fail,
    /// Does not apply to this endpoint type.
    Skip,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }
}

/// One step's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Stable id: `connect`, `health`, `server`, `model`, `metrics`, `statistics`, `request`.
    pub id: &'static str,
    /// What was checked.
    pub title: String,
    /// Outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to change, for warnings and failures.
    pub fix: Option<String>,
    /// Extra lines (the request's events).
    pub lines: Vec<String>,
}

impl Step {
    fn new(id: &'static str, title: impl Into<String>) -> Step {
        Step {
            id,
            title: title.into(),
            status: Status::Ok,
            detail: String::new(),
            fix: None,
            lines: Vec::new(),
        }
    }

    fn ok(mut self, detail: impl Into<String>) -> Step {
        self.status = Status::Ok;
        self.detail = detail.into();
        self
    }

    fn warn(mut self, detail: impl Into<String>, fix: impl Into<String>) -> Step {
        self.status = Status::Warn;
        self.detail = detail.into();
        self.fix = Some(fix.into());
        self
    }

    fn fail(mut self, detail: impl Into<String>, fix: impl Into<String>) -> Step {
        self.status = Status::Fail;
        self.detail = detail.into();
        self.fix = Some(fix.into());
        self
    }

    /// The step with `lines` (the request's events) shown under it.
    fn with_lines(mut self, lines: Vec<String>) -> Step {
        self.lines = lines;
        self
    }

    fn skip(mut self, detail: impl Into<String>) -> Step {
        self.status = Status::Skip;
        self.detail = detail.into();
        self
    }

    /// The step as printed: `[3/7] server metadata ... ok: triton 2.51.0` plus fix and events.
    pub fn render(&self, index: usize, total: usize) -> String {
        let mut out = format!("[{index}/{total}] {}: {}", self.title, self.status.word());
        if !self.detail.is_empty() {
            let _ = write!(out, " — {}", self.detail);
        }
        out.push('\n');
        for l in &self.lines {
            let _ = writeln!(out, "      {l}");
        }
        if let Some(f) = &self.fix {
            let _ = writeln!(out, "      fix: {f}");
        }
        out
    }
}

/// Every step run, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diagnosis {
    /// Steps, up to and including the first failure.
    pub steps: Vec<Step>,
}

impl Diagnosis {
    /// The failing step, if any.
    pub fn failed(&self) -> Option<&Step> {
        self.steps.iter().find(|s| s.status == Status::Fail)
    }

    /// A step by id.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// Number of steps.
pub const STEPS: usize = 7;

/// Runs the checks for `plan` (built from `doctor`'s flags as a one-prompt streamed profile),
/// calling `report` after each step so the user sees progress.
pub async fn diagnose(plan: &RunPlan, report: &mut dyn FnMut(usize, &Step)) -> Diagnosis {
    let mut d = Diagnosis::default();
    let mut push = |d: &mut Diagnosis, s: Step| -> bool {
        let failed = s.status == Status::Fail;
        report(d.steps.len() + 1, &s);
        d.steps.push(s);
        !failed
    };
    let t = &plan.target;
    if !push(&mut d, connect(t).await) {
        return d;
    }
    let http = match http_client(t) {
        Ok(c) => c,
        Err(e) => {
            push(
                &mut d,
                Step::new("health", "health").fail(e, "check the -H values and --api-key"),
            );
            return d;
        }
    };
    let mut info = None;
    let mut channel = None;
    match t.api {
        Api::Kserve => {
            let (s, ch) = grpc_health(t).await;
            if !push(&mut d, s) {
                return d;
            }
            let Some(ch) = ch else { return d };
            channel = Some(ch.clone());
            if !push(&mut d, grpc_server(t, ch.clone()).await) {
                return d;
            }
            let (s, i) = grpc_model(t, ch).await;
            if !push(&mut d, s) {
                return d;
            }
            info = i;
        }
        Api::Generate => {
            if !push(&mut d, http_health(&http, t).await) {
                return d;
            }
            if !push(&mut d, http_server(&http, t).await) {
                return d;
            }
            if !push(&mut d, http_model(&http, t).await) {
                return d;
            }
        }
        Api::Chat | Api::Completions => {
            let (s, names) = openai_health(&http, t).await;
            if !push(&mut d, s) {
                return d;
            }
            push(
                &mut d,
                Step::new("server", "server metadata")
                    .skip("OpenAI-compatible servers have no KServe server metadata"),
            );
            if !push(&mut d, openai_model(t, names)) {
                return d;
            }
        }
        // Other APIs (raw tensor inference) have no token stream to check.
        #[allow(unreachable_patterns)]
        _ => {
            push(
                &mut d,
                Step::new("health", "endpoint type").fail(
                    format!("doctor checks LLM endpoints; '{}' is not one", t.api.name()),
                    "use --endpoint-type kserve, generate, chat or completions",
                ),
            );
            return d;
        }
    }
    push(&mut d, metrics(&http, plan).await);
    push(&mut d, statistics(&http, t, channel.clone()).await);
    let s = match (t.api, info) {
        (Api::Kserve, Some(info)) => match channel {
            Some(ch) => grpc_request(plan, ch, &info).await,
            None => Step::new("request", "one streamed request")
                .fail("no gRPC connection", "rerun doctor; the connection dropped"),
        },
        _ => http_request(plan, &http).await,
    };
    push(&mut d, s);
    d
}

fn http_client(t: &Target) -> Result<reqwest::Client, String> {
    crate::client::http::install_tls_provider();
    let headers = t.header_map().map_err(|e| e.0)?;
    reqwest::Client::builder()
        .no_proxy()
        .default_headers(headers)
        .timeout(STEP_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))
}

const BIND_FIX: &str = "check the address and port (Triton listens on 8000 HTTP, 8001 gRPC, 8002 metrics); is the server running? If it runs in a container or on another host, start it with --http-address 0.0.0.0 --grpc-address 0.0.0.0 (it may be listening on 127.0.0.1 only) and give an address reachable from here (from a container: --net=host or the host's IP, not localhost)";

async fn connect(t: &Target) -> Step {
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

const GRPC_PORT_FIX: &str = "this port does not speak Triton's gRPC API: Triton's gRPC port is 8001 (for its HTTP port 8000 use --endpoint-type generate, for an OpenAI-compatible server --endpoint-type chat)";

async fn grpc_health(t: &Target) -> (Step, Option<tonic::transport::Channel>) {
    let step = Step::new("health", "gRPC health (ServerLive, ServerReady)");
    let ch = match grpc::connect(&t.base_url).await {
        Ok(c) => c,
        Err(e) => {
            let first = e.lines().next().unwrap_or("").to_string();
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

async fn grpc_server(t: &Target, ch: tonic::transport::Channel) -> Step {
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

const NOT_DECOUPLED_FIX: &str = "the model sends one response per request, so TTFT equals the whole latency: deploy it in decoupled mode (model_transaction_policy { decoupled: true } in config.pbtxt, as TensorRT-LLM and vLLM streaming models are), or profile it without --streaming to measure request latency only";

async fn grpc_model(t: &Target, ch: tonic::transport::Channel) -> (Step, Option<ModelInfo>) {
    let step = Step::new("model", format!("model '{}' metadata and config", t.model));
    match grpc::discover(ch, t).await {
        Ok(info) => {
            let detail = describe(&info);
            if let Err(e) = kserve::check_layout(&info, t.backend) {
                return (
                    step.fail(detail, format!("{e} (give the matching --backend)")),
                    None,
                );
            }
            if !info.decoupled {
                return (step.fail(detail, NOT_DECOUPLED_FIX), None);
            }
            (step.ok(detail), Some(info))
        }
        Err(PreflightError::Usage(u)) => {
            let msg = u.0;
            let fix = if msg.contains("not found") {
                "use one of the model names listed, exactly as the server spells them (-m)"
            } else {
                "add the credentials the server asks for"
            };
            (step.fail(msg, fix), None)
        }
        Err(PreflightError::Unavailable(m)) => (step.fail(m, "see the server's log"), None),
    }
}

async fn http_get(client: &reqwest::Client, url: &str) -> Result<(u16, String), String> {
    let resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {}", error_chain(&e)))?;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    Ok((status, text))
}

const KEY_FIX: &str = "the server wants credentials: add --api-key KEY (or set OPENAI_API_KEY) for 'Authorization: Bearer', or -H 'Header: value' for a gateway's own header; check the key has no stray spaces, and that -u points at the server rather than a gateway if you meant to reach Triton directly";

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

async fn http_health(c: &reqwest::Client, t: &Target) -> Step {
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

async fn http_server(c: &reqwest::Client, t: &Target) -> Step {
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

async fn http_model(c: &reqwest::Client, t: &Target) -> Step {
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

async fn openai_health(c: &reqwest::Client, t: &Target) -> (Step, Option<Vec<String>>) {
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

fn openai_model(t: &Target, names: Option<Vec<String>>) -> Step {
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

async fn metrics(c: &reqwest::Client, plan: &RunPlan) -> Step {
    let url = plan.server_metrics.url().to_string();
    let step = Step::new("metrics", format!("metrics endpoint {url}"));
    match crate::server_metrics::scrape(c, &url, &plan.target.model).await {
        Ok(s) => step.ok(format!(
            "Triton counters for '{}' (queue time {})",
            plan.target.model,
            if s.has_queue {
                "present"
            } else {
                "missing: an older Triton names it differently"
            }
        )),
        Err(e) => step.warn(
            e,
            "profiling works without it, but the server's queue/compute split then needs the statistics API: start Triton with --metrics-port 8002 (--allow-metrics true) or give --server-metrics-url",
        ),
    }
}

const RESTRICTED_FIX: &str = "the statistics API is restricted: add -H 'triton-access-token: TOKEN' (the header the server's --http-restricted-api / --grpc-restricted-protocol names) to see queue and compute time; profiling works without it";

async fn statistics(
    c: &reqwest::Client,
    t: &Target,
    channel: Option<tonic::transport::Channel>,
) -> Step {
    let step = Step::new("statistics", "statistics API (queue vs compute time)");
    match (t.api, channel) {
        (Api::Kserve, Some(ch)) => {
            let md = grpc::metadata_for(t).unwrap_or_default();
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

/// One arrival during the streamed request.
struct Event {
    at_ms: f64,
    text: String,
    note: &'static str,
}

fn event_lines(events: &[Event]) -> Vec<String> {
    let mut lines: Vec<String> = events
        .iter()
        .take(SHOWN_EVENTS)
        .enumerate()
        .map(|(i, e)| {
            let shown = if e.text.is_empty() {
                format!("({})", e.note)
            } else {
                let t: String = e.text.chars().take(60).collect();
                format!("{t:?}")
            };
            format!(
                "{:>10} ms  event {:>3}: {shown}",
                format!("+{:.1}", e.at_ms),
                i + 1
            )
        })
        .collect();
    if events.len() > SHOWN_EVENTS {
        lines.push(format!(
            "... {} more events, the last at +{:.1} ms",
            events.len() - SHOWN_EVENTS,
            events.last().map_or(0.0, |e| e.at_ms)
        ));
    }
    lines
}

/// Judges the events of the request: several text-bearing events are a stream.
fn judge(step: Step, events: Vec<Event>, one_body: bool) -> Step {
    let content: Vec<&Event> = events.iter().filter(|e| !e.text.is_empty()).collect();
    let lines = event_lines(&events);
    let step = if one_body {
        step.fail(
            format!(
                "the endpoint answered with one JSON body instead of a stream ({} bytes of text at +{:.1} ms): there is no time to first token",
                content.first().map_or(0, |e| e.text.len()),
                events.last().map_or(0.0, |e| e.at_ms)
            ),
            "use the streaming endpoint: pass --streaming to profile (Triton HTTP: v2/models/MODEL/generate_stream, not .../generate; OpenAI: \"stream\": true), and drop a custom --endpoint that points at a non-streaming route",
        )
    } else {
        match content.as_slice() {
            [] => step.fail(
                format!("{} events, none carried text", events.len()),
                "the model produced no output text: check its output tensor (text_output) and max tokens, and the server's log",
            ),
            [only] => step.fail(
                format!(
                    "only one event carried text (at +{:.1} ms): TTFT equals the whole latency",
                    only.at_ms
                ),
                NOT_DECOUPLED_FIX,
            ),
            [first, .., last] => step.ok(format!(
                "{} events, {} with text; first token at +{:.1} ms, last at +{:.1} ms",
                events.len(),
                content.len(),
                first.at_ms,
                last.at_ms
            )),
        }
    };
    step.with_lines(lines)
}

async fn http_request(plan: &RunPlan, client: &reqwest::Client) -> Step {
    let t = &plan.target;
    let step = Step::new(
        "request",
        format!("one streamed request (POST {})", t.endpoint_url()),
    );
    let tokenizer = Tokenizer::builtin_gpt2();
    let body = match dataset::build_http(&plan.target, &plan.workload, &tokenizer) {
        Ok(d) if !d.is_empty() => match &d.entry(0).payload {
            Payload::Http(b) => b.clone(),
            _ => {
                return step.fail("internal: wrong payload", "report this");
            }
        },
        Ok(_) => return step.fail("no prompt", "report this"),
        Err(e) => return step.fail(format!("{e:#}"), "fix the prompt flags"),
    };
    let sent = Instant::now();
    let resp = client
        .post(t.endpoint_url())
        .timeout(REQUEST_TIMEOUT)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    let mut resp = match resp {
        Ok(r) => r,
        Err(e) => return step.fail(error_chain(&e), BIND_FIX),
    };
    let status = resp.status().as_u16();
    if status != 200 {
        let body = resp.text().await.unwrap_or_default();
        let detail = format!("HTTP {status}: {}", short(&body));
        return match status {
            401 | 403 => step.fail(detail, KEY_FIX),
            404 | 400 => step.fail(
                detail,
                "check the model name (-m) and the endpoint (--endpoint-type, --endpoint): the route or model does not exist on this server",
            ),
            429 | 503 => step.fail(
                detail,
                "the server is up but refuses inference (overloaded, queue full, or the model is not ready): check /v2/models/MODEL/ready and the server's log, raise its queue limits, or retry when it has capacity",
            ),
            _ => step.fail(detail, "see the server's log"),
        };
    }
    let is_sse = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.to_ascii_lowercase().starts_with("text/event-stream"));
    let mut events = Vec::new();
    if !is_sse {
        let body = resp.bytes().await.unwrap_or_default();
        let mut text = String::new();
        let _ = crate::client::events::parse_event(&body, &mut text);
        events.push(Event {
            at_ms: sent.elapsed().as_secs_f64() * 1e3,
            text,
            note: "whole body",
        });
        return judge(step, events, true);
    }
    let mut parser = crate::client::sse::SseParser::new();
    let on = |at_ms: f64, name: &[u8], data: &[u8], events: &mut Vec<Event>| {
        let mut text = String::new();
        let note = if data == b"[DONE]" {
            "[DONE]"
        } else if name == b"error" {
            "error event"
        } else {
            match crate::client::events::parse_event(data, &mut text) {
                Ok(i) if i.error.is_some() => "error in event",
                Ok(i) if i.completion_tokens.is_some() => "usage",
                Ok(_) => "no text: role, final or empty",
                Err(_) => "not JSON",
            }
        };
        events.push(Event { at_ms, text, note });
    };
    loop {
        match tokio::time::timeout(REQUEST_TIMEOUT, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let at = sent.elapsed().as_secs_f64() * 1e3;
                let mut batch = Vec::new();
                if parser
                    .feed(&chunk, |n, d| batch.push((n.to_vec(), d.to_vec())))
                    .is_err()
                {
                    return step.fail("an event exceeded the size limit", "see the server's log");
                }
                for (n, d) in batch {
                    on(at, &n, &d, &mut events);
                }
                if events.last().is_some_and(|e| e.note == "[DONE]") {
                    break;
                }
            }
            Ok(Ok(None)) => {
                let at = sent.elapsed().as_secs_f64() * 1e3;
                let mut batch = Vec::new();
                parser.finish(|n, d| batch.push((n.to_vec(), d.to_vec())));
                for (n, d) in batch {
                    on(at, &n, &d, &mut events);
                }
                break;
            }
            Ok(Err(e)) => {
                return step.with_lines(event_lines(&events)).fail(
                    format!(
                        "the stream broke off after {} events: {}",
                        events.len(),
                        error_chain(&e)
                    ),
                    "the server or a proxy cut the response: see the server's log and any proxy timeouts",
                );
            }
            Err(_) => {
                return step.with_lines(event_lines(&events)).fail(
                    format!("no data for {}s", REQUEST_TIMEOUT.as_secs()),
                    "the server stalls: see its log",
                );
            }
        }
    }
    if let Some(e) = events
        .iter()
        .find(|e| e.note == "error event" || e.note == "error in event")
    {
        return step.with_lines(event_lines(&events)).fail(
            format!("the server reported an error at +{:.1} ms", e.at_ms),
            "see the server's log",
        );
    }
    judge(step, events, false)
}

async fn grpc_request(plan: &RunPlan, ch: tonic::transport::Channel, info: &ModelInfo) -> Step {
    use prost::Message;
    let t = &plan.target;
    let step = Step::new("request", "one streamed request (ModelStreamInfer)");
    let tokenizer = Tokenizer::builtin_gpt2();
    let bytes = match dataset::build_kserve(&plan.target, &plan.workload, &tokenizer, info) {
        Ok(d) if !d.is_empty() => match &d.entry(0).payload {
            Payload::Grpc(b) => b.clone(),
            _ => {
                return step.fail("internal: wrong payload", "report this");
            }
        },
        Ok(_) => return step.fail("no prompt", "report this"),
        Err(e) => return step.fail(format!("{e:#}"), "fix --backend or --extra-inputs"),
    };
    let mut req = match crate::proto::ModelInferRequest::decode(bytes.as_ref()) {
        Ok(r) => r,
        Err(e) => return step.fail(format!("internal: {e}"), "report this"),
    };
    req.id = "ttftbench-doctor".into();
    let md = grpc::metadata_for(t).unwrap_or_default();
    let mut c = GrpcInferenceServiceClient::new(ch);
    let sent = Instant::now();
    let call = c.model_stream_infer(grpc::with_metadata(
        tonic::Request::new(futures_util::stream::once(async move { req })),
        &md,
    ));
    let mut stream = match tokio::time::timeout(REQUEST_TIMEOUT, call).await {
        Ok(Ok(r)) => r.into_inner(),
        Ok(Err(s)) => return request_status_step(step, &s),
        Err(_) => return step.fail("no answer", "the server stalls: see its log"),
    };
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(REQUEST_TIMEOUT, stream.message()).await {
            Ok(Ok(Some(msg))) => {
                let at_ms = sent.elapsed().as_secs_f64() * 1e3;
                if !msg.error_message.is_empty() {
                    return step.with_lines(event_lines(&events)).fail(
                        format!("the server reported: {}", msg.error_message),
                        "see the server's log; check the inputs doctor listed against --backend and --extra-inputs",
                    );
                }
                let (text, fin) = stream_text(msg.infer_response.as_ref());
                events.push(Event {
                    at_ms,
                    text,
                    note: if fin { "final response" } else { "no text" },
                });
                if fin {
                    break;
                }
            }
            Ok(Ok(None)) => break,
            Ok(Err(s)) => {
                return request_status_step(step, &s).with_lines(event_lines(&events));
            }
            Err(_) => {
                return step.with_lines(event_lines(&events)).fail(
                    format!("no response for {}s", REQUEST_TIMEOUT.as_secs()),
                    "the server stalls: see its log",
                );
            }
        }
    }
    judge(step, events, false)
}

/// The text of a stream response (its `text_output` tensor, or its only output) and whether it is
/// the final response (`triton_final_response`; a response without it is final, as in Triton's
/// own client).
fn stream_text(r: Option<&crate::proto::ModelInferResponse>) -> (String, bool) {
    use crate::proto::infer_parameter::ParameterChoice;
    let Some(r) = r else {
        return (String::new(), true);
    };
    let fin = match r
        .parameters
        .get("triton_final_response")
        .and_then(|p| p.parameter_choice.as_ref())
    {
        Some(ParameterChoice::BoolParam(b)) => *b,
        _ => true,
    };
    let idx = r
        .outputs
        .iter()
        .position(|o| o.name == "text_output")
        .or((r.outputs.len() == 1).then_some(0));
    let mut text = String::new();
    if let Some(i) = idx {
        if let Some(raw) = r.raw_output_contents.get(i) {
            // BYTES elements: a 4-byte little-endian length, then the bytes.
            let mut rest = raw.as_slice();
            while rest.len() >= 4 {
                let n = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let end = (4 + n).min(rest.len());
                text.push_str(&String::from_utf8_lossy(&rest[4..end]));
                rest = &rest[end..];
            }
        } else if let Some(c) = r.outputs[i].contents.as_ref() {
            for b in &c.bytes_contents {
                text.push_str(&String::from_utf8_lossy(b));
            }
        }
    }
    (text, fin)
}

fn request_status_step(step: Step, s: &tonic::Status) -> Step {
    use tonic::Code;
    let detail = format!("{:?}: {}", s.code(), s.message());
    match s.code() {
        Code::Unavailable | Code::ResourceExhausted => step.fail(
            detail,
            "the server is up but refuses inference (overloaded, queue full, or the model is not ready): check the model's readiness and the server's log, raise its queue limits, or retry when it has capacity",
        ),
        Code::Unauthenticated | Code::PermissionDenied => step.fail(detail, KEY_FIX),
        Code::InvalidArgument => step.fail(
            detail,
            "the model rejected the request's inputs: check --backend (tensorrtllm or vllm layout) and --extra-inputs against the inputs listed above",
        ),
        _ => step.fail(detail, "see the server's log"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at_ms: f64, text: &str) -> Event {
        Event {
            at_ms,
            text: text.into(),
            note: "no text: role, final or empty",
        }
    }

    #[test]
    fn judging_the_events() {
        let s = || Step::new("request", "one streamed request");
        let ok = judge(
            s(),
            vec![ev(12.0, " the"), ev(15.5, " of"), ev(15.6, "")],
            false,
        );
        assert_eq!(ok.status, Status::Ok);
        assert_eq!(
            ok.detail,
            "3 events, 2 with text; first token at +12.0 ms, last at +15.5 ms"
        );
        assert_eq!(
            ok.lines,
            [
                "     +12.0 ms  event   1: \" the\"",
                "     +15.5 ms  event   2: \" of\"",
                "     +15.6 ms  event   3: (no text: role, final or empty)"
            ]
        );
        let one = judge(s(), vec![ev(80.0, "all of it"), ev(80.1, "")], false);
        assert_eq!(one.status, Status::Fail);
        assert!(one.detail.starts_with("only one event carried text"));
        assert_eq!(one.fix.as_deref(), Some(NOT_DECOUPLED_FIX));
        let none = judge(s(), vec![ev(5.0, "")], false);
        assert!(none.detail.contains("none carried text"));
        let body = judge(s(), vec![ev(90.0, "whole answer")], true);
        assert!(
            body.detail
                .starts_with("the endpoint answered with one JSON body")
        );
        let many: Vec<Event> = (0..25).map(|i| ev(f64::from(i), "x")).collect();
        let st = judge(s(), many, false);
        assert_eq!(st.lines.len(), SHOWN_EVENTS + 1);
        assert_eq!(
            st.lines[SHOWN_EVENTS],
            "... 5 more events, the last at +24.0 ms"
        );
    }

    #[test]
    fn stream_response_text_and_final_flag() {
        use crate::proto::model_infer_response::InferOutputTensor;
        use crate::proto::{InferParameter, ModelInferResponse, infer_parameter::ParameterChoice};
        let bytes = |parts: &[&str]| {
            let mut v = Vec::new();
            for p in parts {
                v.extend_from_slice(&(p.len() as u32).to_le_bytes());
                v.extend_from_slice(p.as_bytes());
            }
            v
        };
        let mut r = ModelInferResponse {
            outputs: vec![InferOutputTensor {
                name: "text_output".into(),
                datatype: "BYTES".into(),
                ..Default::default()
            }],
            raw_output_contents: vec![bytes(&[" hello", " world"])],
            ..Default::default()
        };
        r.parameters.insert(
            "triton_final_response".into(),
            InferParameter {
                parameter_choice: Some(ParameterChoice::BoolParam(false)),
            },
        );
        assert_eq!(stream_text(Some(&r)), (" hello world".to_string(), false));
        r.parameters.clear();
        r.raw_output_contents.clear();
        assert_eq!(stream_text(Some(&r)), (String::new(), true));
        assert_eq!(stream_text(None), (String::new(), true));
    }
}
