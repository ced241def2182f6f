//! perf's session: connects (detecting the protocol when `-i` was not given), reads the model's
//! metadata and config, refuses what perf_analyzer refuses, and builds the client and the
//! server probe for tensor requests.

use super::plan::{self, PerfPlan, Protocol};
use crate::client::grpc::{self, GrpcClient, ResponseMode};
use crate::client::wrong_port::{self, Wire};
use crate::client::{Client, HttpClient, tls};
use crate::error::{Result, UsageError};
use crate::load::Stimulus;
use crate::server_metrics::{ServerProbe, StatsSource};
use crate::workload::tensor::ModelInfo;

/// Connects (detecting the protocol when `-i` was not given), reads the model's metadata and
/// config, and builds the client and the server probe.
pub async fn prepare(plan: &PerfPlan) -> Result<(Protocol, ModelInfo, Client, ServerProbe)> {
    let t = &plan.target;
    let alpn = match plan.protocol {
        Some(Protocol::Grpc) => &[tls::ALPN_H2][..],
        Some(Protocol::Http) => &[tls::ALPN_HTTP1][..],
        None => tls::ALPN_ANY,
    };
    tls::check(t, alpn).await?;
    let protocol = match plan.protocol {
        Some(p) => p,
        None if wrong_port::answers_grpc(t).await => Protocol::Grpc,
        None => Protocol::Http,
    };
    match connect(plan, protocol).await {
        Ok((info, client, mut probe)) => {
            let workers = plan.levels.iter().map(Stimulus::workers).max().unwrap_or(1);
            probe
                .notices
                .extend(crate::engine::capacity::warnings(workers));
            Ok((protocol, info, client, probe))
        }
        Err(e) => {
            let (asked, fix) = match protocol {
                Protocol::Grpc => (
                    Wire::Grpc,
                    "give -i http to use this HTTP port (or drop -i to detect it), or point -u at the gRPC port (Triton's is 8001)",
                ),
                Protocol::Http => (
                    Wire::Http,
                    "give -i grpc to use this gRPC port (or drop -i to detect it), or point -u at the HTTP port (Triton's is 8000)",
                ),
            };
            Err(wrong_port::explain(e, t, asked, fix).await)
        }
    }
}

/// Reads the model over `protocol` and builds the client and the probe.
async fn connect(plan: &PerfPlan, protocol: Protocol) -> Result<(ModelInfo, Client, ServerProbe)> {
    let t = &plan.target;
    let workers = plan.levels.iter().map(Stimulus::workers).max().unwrap_or(1);
    let http = crate::engine::session::metrics_http_client(t)?;
    match protocol {
        Protocol::Grpc => {
            let channel = grpc::connect(t).await?;
            let info = grpc::discover_version(channel.clone(), t, &plan.model_version).await?;
            check_model(plan, &info, protocol)?;
            let client = GrpcClient::new(t, &info, ResponseMode::Tensors)?;
            let md = grpc::stats_metadata_for(t)?;
            let mut probe = ServerProbe::new(
                http,
                &t.model,
                &plan.probe_config(),
                StatsSource::Grpc(channel.clone(), md.clone()),
            )
            .await?
            .with_version(&plan.model_version);
            let model = Some(crate::server_metrics::identity::describe_model(&info));
            probe
                .identify(&t.base_url, Some((channel, &md)), model)
                .await;
            Ok((info, Client::Grpc(client), probe))
        }
        Protocol::Http => {
            let mut target = t.clone();
            target.api = crate::target::Api::Infer;
            // Discovery goes to the target with its own headers; the metrics client has fewer.
            let client = HttpClient::new(&target, workers)?;
            let info = crate::client::discovery::model_info_http_version(
                client.inner(),
                &target,
                &plan.model_version,
            )
            .await?;
            check_model(plan, &info, protocol)?;
            // perf_analyzer reads `v2/models/<m>[/versions/<v>]/stats`: with -x, that version only.
            let stats_url = format!(
                "{}/{}/stats",
                t.base_url,
                crate::client::discovery::model_path(&t.model, &plan.model_version)
            );
            let mut probe = ServerProbe::new(
                http,
                &t.model,
                &plan.probe_config(),
                StatsSource::Http(stats_url),
            )
            .await?;
            let model = Some(crate::server_metrics::identity::describe_model(&info));
            probe.identify(&t.base_url, None, model).await;
            Ok((info, Client::Http(client), probe))
        }
    }
}

fn check_model(plan: &PerfPlan, info: &ModelInfo, protocol: Protocol) -> Result<(), UsageError> {
    // Explicit `-i http --streaming` is refused by the plan; this catches a detected HTTP server.
    if plan.target.streaming && protocol == Protocol::Http {
        return Err(UsageError(format!(
            "{} (the server at {} answered HTTP, not gRPC)",
            plan::STREAMING_NEEDS_GRPC,
            plan.target.base_url
        )));
    }
    if plan.target.streaming && !info.decoupled {
        return Err(UsageError(format!(
            "model '{}' is not decoupled (model_transaction_policy.decoupled is false), so it answers each request once and cannot stream: drop --streaming",
            info.name
        )));
    }
    // As perf_analyzer: a decoupled model's responses only come over a gRPC stream, and timing
    // them as one request-response call would put the whole generation in "(un)marshal".
    if info.decoupled && !plan.target.streaming {
        let how = if protocol == Protocol::Http {
            "-i grpc --streaming"
        } else {
            "--streaming"
        };
        return Err(UsageError(format!(
            "model '{}' is decoupled (model_transaction_policy.decoupled is true): its responses stream over gRPC, so perf measures it only with streaming; add {how}",
            info.name
        )));
    }
    if info.inputs.is_empty() {
        return Err(UsageError(format!(
            "model '{}' declares no inputs; perf needs its metadata to build requests",
            info.name
        )));
    }
    Ok(())
}
