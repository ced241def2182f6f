//! Preparing a session for an LLM plan (`profile`, `demo`, `doctor`): the tokenizer, the client
//! for the endpoint (after checking the server knows the model and its layout), the requests
//! built once, and the server probe. Tensor sessions are prepared by `perf`, which knows tensors.

use crate::client::request_id::RequestIds;
use std::time::Duration;

use super::Session;
use crate::client::discovery::{check_http, model_info_http};
use crate::client::wrong_port::{self, Wire};
use crate::client::{Client, GrpcClient, HttpClient, grpc};
use crate::error::{Error, Result};
use crate::load::{Interrupt, Shared, Stimulus, gap_pool};
use crate::plan::RunPlan;
use crate::plan::resolve::check_server_count;
use crate::record::Clock;
use crate::server_metrics::{ServerProbe, StatsSource, identity};
use crate::target::{Api, Target};
use crate::workload::tokenizer::{HubEnv, Tokenizer};
use crate::workload::{Dataset, Salt, dataset, kserve};

/// Connects, checks the server, builds every request and opens the probe for `plan`. With a
/// `run_id`, requests carry `RUN-SEQ` ids ([`RequestIds`]).
pub async fn prepare_llm(
    plan: &RunPlan,
    interrupt: Interrupt,
    run_id: Option<&str>,
) -> Result<Session> {
    let tokenizer = match &plan.workload.tokenizer {
        Some(spec) => Tokenizer::from_spec(spec, &HubEnv::from_process())
            .map_err(|e| Error::usage(format!("--tokenizer: {e}")))?,
        None => Tokenizer::builtin_gpt2(),
    };
    let workers = plan.levels.iter().map(Stimulus::workers).max().unwrap_or(1);
    let (client, dataset, mut probe) = match connect_llm(plan, &tokenizer, workers).await {
        Ok(c) => c,
        Err(e) => return Err(explain_wrong_port(e, &plan.target).await),
    };
    let grpc = matches!(client, Client::Grpc(_));
    probe.notices.extend(super::capacity::warnings(workers));
    if dataset.is_empty() {
        return Err(Error::usage(
            "the workload has no requests: give --num-prompts of at least 1, or an --input-file with prompts",
        ));
    }
    let isl_edges = plan.isl_buckets.edges(|| dataset.isls());
    let scoring = scoring(plan, &dataset, &tokenizer);
    let shard = plan.shard.shard;
    let dataset = dataset.partition(shard.index, shard.count)?;
    let shared = Shared {
        client,
        dataset: std::sync::Arc::new(dataset),
        tokenizer,
        clock: Clock::start(),
        interrupt,
        timeout: plan.request_timeout,
        cancellation: plan.cancellation(),
        use_server_token_count: plan.use_server_token_count,
        // Embeddings and rankings answer with vectors and scores: no output text to count.
        count_tokens: plan.target.api.generates(),
        seed: plan.workload.seed,
        shard,
        gaps: gap_pool(),
        captures: plan.raw_export.then(crate::load::capture_pool),
        request_ids: request_ids(run_id, &plan.outputs, grpc),
        session_header: crate::load::session_header(
            plan.workload
                .sessions
                .as_ref()
                .and_then(|s| s.header.as_deref()),
            run_id,
            shard,
        ),
    };
    Ok(Session {
        isl_edges,
        scoring,
        ..Session::new(shared, probe)
    })
}

/// A scored workload's run-wide parts (`None` for any other workload).
fn scoring(plan: &RunPlan, dataset: &Dataset, tokenizer: &Tokenizer) -> Option<super::Scoring> {
    let key = dataset.answers()?;
    let confidence = match &plan.workload.prompts {
        crate::workload::PromptSource::Scored(s) => s.confidence,
        _ => 0.95,
    };
    Some(super::Scoring {
        references: key.greedy().then(|| {
            std::sync::Arc::new(crate::stats::scored::References::new(
                key.len(),
                tokenizer.clone(),
            ))
        }),
        confidence,
        chance: key.chance(),
    })
}

/// The run's request ids, when it has a run id and they go somewhere: over HTTP only in a
/// header (`--request-id-header none` sends none, so none is recorded), over gRPC always in
/// KServe's `id`.
pub fn request_ids(
    run_id: Option<&str>,
    outputs: &crate::plan::outputs::Outputs,
    grpc: bool,
) -> Option<std::sync::Arc<RequestIds>> {
    let header = outputs.request_id_header.as_deref();
    if header.is_none() && !grpc {
        return None;
    }
    run_id.map(|r| std::sync::Arc::new(RequestIds::new(r, header)))
}

async fn connect_llm(
    plan: &RunPlan,
    tokenizer: &Tokenizer,
    workers: usize,
) -> Result<(Client, Dataset, ServerProbe)> {
    let t = &plan.target;
    let alpn = match t.api {
        Api::Kserve => crate::client::tls::ALPN_H2,
        _ => crate::client::tls::ALPN_HTTP1,
    };
    crate::client::tls::check(t, &[alpn]).await?;
    let calls = metrics_http_client(t)?;
    match t.api {
        Api::Chat
        | Api::Completions
        | Api::Generate
        | Api::Responses
        | Api::Messages
        | Api::Embeddings
        | Api::Rankings => {
            let c = HttpClient::new(t, workers)?;
            check_http(c.inner(), t).await?;
            let mut dataset = dataset::build_http(t, &plan.workload, tokenizer, salt(plan))?;
            if plan.tokenizer_from_server {
                dataset = server_isls(c.inner(), t, dataset).await?;
            }
            let stats = match t.api {
                Api::Generate => {
                    StatsSource::Http(format!("{}/v2/models/{}/stats", t.base_url, t.model))
                }
                _ => StatsSource::None,
            };
            let mut probe = ServerProbe::new(calls, &t.model, &plan.probe_config(), stats).await?;
            let model = match t.api {
                Api::Generate => {
                    let info = model_info_http(c.inner(), t).await.ok();
                    if plan.use_server_token_count {
                        let outputs = info.as_ref().map_or(Vec::new(), output_names);
                        check_server_count(&t.model, &outputs, &plan.workload.extra_inputs)?;
                    }
                    info.map(|i| identity::describe_model(&i))
                }
                _ => identity::openai_model_http(c.inner(), &t.base_url, &t.model).await,
            };
            probe.identify(&t.base_url, None, model).await;
            Ok((Client::Http(c), dataset, probe))
        }
        Api::Infer => Err(Error::usage(
            "tensor inference (/v2/models/{m}/infer) is profiled with `ttftbench perf`, not `profile`",
        )),
        Api::Kserve => {
            let channel = grpc::connect(t).await?;
            let info = grpc::discover(channel.clone(), t).await?;
            if info.input("text_input").is_none() {
                return Err(Error::usage(tensor_model(&info, t)));
            }
            // Streaming a non-decoupled model is the more basic mistake: say so first.
            if t.streaming && !info.decoupled {
                return Err(Error::usage(format!(
                    "model '{}' is not decoupled (its config has no model_transaction_policy {{ decoupled: true }}), so it sends one response per request and cannot stream tokens: drop --streaming to measure whole-request latency, or deploy the model in decoupled mode",
                    info.name
                )));
            }
            kserve::check_layout(&info, t.backend)?;
            if plan.use_server_token_count {
                check_server_count(&t.model, &output_names(&info), &plan.workload.extra_inputs)?;
            }
            let dataset = dataset::build_kserve(t, &plan.workload, tokenizer, &info, salt(plan))?;
            let client = GrpcClient::new(t, &info, grpc::ResponseMode::Text)?;
            let md = grpc::stats_metadata_for(t)?;
            let mut probe = ServerProbe::new(
                calls,
                &t.model,
                &plan.probe_config(),
                StatsSource::Grpc(channel.clone(), md.clone()),
            )
            .await?;
            probe
                .identify(
                    &t.base_url,
                    Some((channel, &md)),
                    Some(identity::describe_model(&info)),
                )
                .await;
            Ok((Client::Grpc(client), dataset, probe))
        }
    }
}

/// The dataset with each entry's input length counted by the server's own tokenizer
/// (`--tokenizer-from-server`): each distinct request body once, before any load.
async fn server_isls(http: &reqwest::Client, t: &Target, dataset: Dataset) -> Result<Dataset> {
    let bodies: Vec<&[u8]> = (0..dataset.len())
        .map(|i| match &dataset.entry(i).payload {
            crate::workload::Payload::Http(b) => b.as_ref(),
            _ => &[][..],
        })
        .collect();
    let counts = crate::client::tokenize::count_all(http, t, &bodies).await?;
    Ok(dataset.with_isls(&counts))
}

/// This run's prompt salt: a fresh one per run (and per repetition: each prepares its own
/// session), derived from the plan and its start when the run has a `--start-at`, so the
/// shards of one run salt alike and still share what the workload shares across them.
fn salt(plan: &RunPlan) -> Salt {
    let shared = plan
        .shard
        .start_at_unix_ns
        .map(|at| crate::workload::salt::shared_value(&plan.plan_id(), at));
    Salt::resolve(&plan.workload.prompt_salt, shared)
}

/// The names of a model's outputs.
fn output_names(info: &crate::workload::tensor::ModelInfo) -> Vec<&str> {
    info.outputs.iter().map(|o| o.name.as_str()).collect()
}

/// `e` (the first exchange failed), or, when `-u` answers the other protocol than the endpoint
/// type speaks, the flag that fixes it.
async fn explain_wrong_port(e: Error, t: &Target) -> Error {
    let (asked, fix) = match t.api {
        Api::Kserve => (
            Wire::Grpc,
            "Triton's gRPC port is 8001; to use this HTTP port give --endpoint-type generate (Triton's generate API) or --endpoint-type chat (an OpenAI-compatible server)",
        ),
        _ => (
            Wire::Http,
            "this is a gRPC port (Triton's is 8001): give --endpoint-type kserve to profile over gRPC, or point -u at the HTTP port (Triton's is 8000)",
        ),
    };
    wrong_port::explain(e, t, asked, fix).await
}

/// Why `profile` cannot drive a model without a `text_input` (neither TensorRT-LLM's nor
/// vLLM's layout: a tensor model such as a detector or classifier), and the command that can.
fn tensor_model(info: &crate::workload::tensor::ModelInfo, t: &Target) -> String {
    format!(
        "model '{}' takes tensors, not a text prompt (its inputs: {}): `profile` measures text generation; measure this model with `ttftbench perf -m {} -u {}` (perf_analyzer's flags: -b, --concurrency-range, --shape)",
        info.name,
        info.describe_inputs(),
        info.name,
        t.base_url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
    )
}

/// A small HTTP client for `/metrics` and `/stats`: it carries only the `-H` headers those
/// endpoints may see (Triton's access token, and what `--metrics-header` names), never the API
/// key; follows no redirect (a redirect could lead the headers elsewhere); verifies TLS as the
/// target's clients do.
pub fn metrics_http_client(t: &Target) -> Result<reqwest::Client> {
    crate::client::http::install_tls_provider();
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(t.metrics_header_map()?)
        .timeout(Duration::from_secs(5));
    if t.uses_tls() {
        b = crate::client::tls::TlsContext::new(&t.tls)?.reqwest(b)?;
    }
    b.build()
        .map_err(|e| Error::failed(format!("cannot build the HTTP client: {e}")))
}
