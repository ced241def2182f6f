//! `ttftbench doctor -u URL -m MODEL`: the seeds' troubleshooting order as one command —
//! reachability, health, server metadata, model metadata and config, metrics, statistics, then one
//! streamed request with each event's arrival time and content. It stops at the first step that
//! fails and says what to change.
//!
//! Steps that profiling can do without (the Prometheus endpoint, the statistics API) only warn.
//! The checks are in [`checks`]; the request goes through the session and client `profile` uses
//! ([`request`]), and event times are its read timestamps: milliseconds since the request was sent,
//! taken when the bytes arrived, as `profile` takes them.

mod checks;
mod request;

use std::fmt::Write as _;

use crate::plan::RunPlan;
use crate::target::Api;
use checks::*;

/// Events shown in full; later ones are summarised.
const SHOWN_EVENTS: usize = 20;

const BIND_FIX: &str = "check the address and port (Triton listens on 8000 HTTP, 8001 gRPC, 8002 metrics); is the server running? If it runs in a container or on another host, start it with --http-address 0.0.0.0 --grpc-address 0.0.0.0 (it may be listening on 127.0.0.1 only) and give an address reachable from here (from a container: --net=host or the host's IP, not localhost)";

const KEY_FIX: &str = "the server wants credentials: add --api-key KEY (or set OPENAI_API_KEY) for 'Authorization: Bearer', or -H 'Header: value' for a gateway's own header; check the key has no stray spaces, and that -u points at the server rather than a gateway if you meant to reach Triton directly";

const NOT_DECOUPLED_FIX: &str = "the model sends one response per request, so TTFT equals the whole latency: deploy it in decoupled mode (model_transaction_policy { decoupled: true } in config.pbtxt, as TensorRT-LLM and vLLM streaming models are), or profile it without --streaming to measure request latency only";

/// The outcome of one step, named as a step's line prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
pub enum Status {
    /// Works.
    #[strum(serialize = "ok")]
    Ok,
    /// Works without it, but something is missing.
    #[strum(serialize = "WARN")]
    Warn,
    /// Broken: the steps after it were not run.
    #[strum(serialize = "FAIL")]
    Fail,
    /// Does not apply to this endpoint type.
    #[strum(serialize = "skip")]
    Skip,
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

    /// The step ended with `status`: what was found, and what to change.
    fn ended(mut self, status: Status, detail: String, fix: Option<String>) -> Step {
        (self.status, self.detail, self.fix) = (status, detail, fix);
        self
    }

    fn ok(self, detail: impl Into<String>) -> Step {
        self.ended(Status::Ok, detail.into(), None)
    }

    /// `detail`: what happened (a message, or an error's text).
    fn warn(self, detail: impl std::fmt::Display, fix: impl Into<String>) -> Step {
        self.ended(Status::Warn, detail.to_string(), Some(fix.into()))
    }

    /// `detail`: what happened (a message, or an error's text).
    fn fail(self, detail: impl std::fmt::Display, fix: impl Into<String>) -> Step {
        self.ended(Status::Fail, detail.to_string(), Some(fix.into()))
    }

    /// The step with `lines` (the request's events) shown under it.
    fn with_lines(mut self, lines: Vec<String>) -> Step {
        self.lines = lines;
        self
    }

    fn skip(self, detail: impl Into<String>) -> Step {
        self.ended(Status::Skip, detail.into(), None)
    }

    /// The step as printed: `[3/7] server metadata ... ok: triton 2.51.0` plus fix and events.
    pub fn render(&self, index: usize, total: usize) -> String {
        let status: &str = self.status.into();
        let mut out = format!("[{index}/{total}] {}: {status}", self.title);
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
    let _ = run_steps(plan, &mut |s: Step| {
        let failed = s.status == Status::Fail;
        report(d.steps.len() + 1, &s);
        d.steps.push(s);
        (!failed).then_some(())
    })
    .await;
    d
}

/// The steps in order, each handed to `push`, up to the first that fails (`push` says `None`).
async fn run_steps(plan: &RunPlan, push: &mut dyn FnMut(Step) -> Option<()>) -> Option<()> {
    let t = &plan.target;
    push(connect(t).await)?;
    let http = match http_client(t) {
        Ok(c) => c,
        Err(e) => {
            return push(
                Step::new("health", "health").fail(e, "check the -H values and --api-key"),
            );
        }
    };
    let mut channel = None;
    match t.api {
        Api::Kserve => {
            let (s, ch) = grpc_health(t).await;
            push(s)?;
            let ch = ch?;
            channel = Some(ch.clone());
            push(grpc_server(t, ch.clone()).await)?;
            push(grpc_model(t, ch).await)?;
        }
        Api::Generate => {
            push(http_health(&http, t).await)?;
            push(http_server(&http, t).await)?;
            push(http_model(&http, t).await)?;
        }
        api if api.lists_openai_models() => {
            let (s, names) = openai_health(&http, t).await;
            push(s)?;
            push(
                Step::new("server", "server metadata")
                    .skip("OpenAI-compatible servers have no KServe server metadata"),
            )?;
            push(openai_model(t, names))?;
        }
        // Other APIs (raw tensor inference) have no token stream to check.
        _ => {
            return push(Step::new("health", "endpoint type").fail(
                format!("doctor checks LLM endpoints; '{}' is not one", t.api.name()),
                "use --endpoint-type kserve, generate, chat, completions, responses, messages, embeddings or rankings",
            ));
        }
    }
    // Metrics and statistics get only the headers meant for them, never the API key.
    match crate::engine::session::metrics_http_client(t) {
        Ok(m) => {
            push(metrics(&m, plan).await);
            push(statistics(&m, t, channel.clone()).await);
        }
        Err(e) => {
            push(
                Step::new("metrics", "metrics endpoint").fail(e.to_string(), "check the -H values"),
            );
        }
    }
    push(request::request(plan).await)
}
