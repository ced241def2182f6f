//! Whether a run streams, when its flags leave it to the tool: what the target can do. An
//! OpenAI- or Anthropic-style endpoint always can; a Triton model only when it is decoupled,
//! which its config says, so that is read before the session is prepared. The run's first line
//! says what was chosen and why; with `--streaming` or `--no-streaming` nothing is chosen and
//! nothing is said (the seeds' commands keep their output).

use std::borrow::Cow;

use crate::client::discovery::model_info_http;
use crate::client::grpc;
use crate::error::{Error, Result};
use crate::plan::RunPlan;
use crate::target::{Api, StreamSupport, Target, default_endpoint};

/// A plan whose `streaming` is settled, with the line that says what was chosen (`None` when a
/// flag chose).
pub struct Settled<'a> {
    /// The plan to run.
    pub plan: Cow<'a, RunPlan>,
    /// What was chosen and why, for the run's first line.
    pub line: Option<String>,
}

/// Settles `plan`'s streaming. A Triton model whose config cannot be read keeps the provisional
/// choice: the session reads the same config next and reports what is wrong with it.
pub async fn settle(plan: &RunPlan) -> Result<Settled<'_>> {
    let t = &plan.target;
    if !t.streaming_by_default {
        return Ok(Settled {
            plan: Cow::Borrowed(plan),
            line: None,
        });
    }
    let (streams, decoupled) = match t.api.stream_support() {
        StreamSupport::Always => (true, None),
        StreamSupport::Never => (false, None),
        StreamSupport::IfDecoupled => {
            let decoupled = decoupled(t).await;
            (decoupled.unwrap_or(true), decoupled)
        }
    };
    let line = choice_line(t, streams, decoupled);
    if streams == t.streaming {
        return Ok(Settled {
            plan: Cow::Borrowed(plan),
            line,
        });
    }
    refuse_streamed_objectives(plan)?;
    let mut settled = plan.clone();
    let t = &mut settled.target;
    if t.endpoint == default_endpoint(t.api, &t.model, t.streaming) {
        t.endpoint = default_endpoint(t.api, &t.model, streams);
    }
    t.streaming = streams;
    Ok(Settled {
        plan: Cow::Owned(settled),
        line,
    })
}

/// Whether the model is decoupled, from its config (gRPC for KServe, HTTP for generate);
/// `None` when the config cannot be read.
async fn decoupled(t: &Target) -> Option<bool> {
    match t.api {
        Api::Kserve => {
            let channel = grpc::connect(t).await.ok()?;
            grpc::discover(channel, t).await.ok().map(|i| i.decoupled)
        }
        _ => {
            let http = crate::client::HttpClient::new(t, 1).ok()?;
            model_info_http(http.inner(), t)
                .await
                .ok()
                .map(|i| i.decoupled)
        }
    }
}

/// The run's first line: streaming on or off, and why.
fn choice_line(t: &Target, streams: bool, decoupled: Option<bool>) -> Option<String> {
    let why = match (t.api.stream_support(), decoupled) {
        (StreamSupport::Always, _) => format!("the {} endpoint streams", t.api.name()),
        (StreamSupport::IfDecoupled, Some(true)) => {
            format!("model '{}' is decoupled", t.model)
        }
        (StreamSupport::IfDecoupled, Some(false)) => format!(
            "model '{}' is not decoupled: it answers each request whole, so TTFT and ITL cannot be measured, only request latency",
            t.model
        ),
        // The session reads the config again and says what is wrong with it.
        (StreamSupport::IfDecoupled, None) => return None,
        (StreamSupport::Never, _) => return None,
    };
    Some(if streams {
        format!("streaming: on ({why}; --no-streaming times whole responses)")
    } else {
        format!("streaming: off ({why})")
    })
}

/// Objectives on streamed metrics cannot be met by whole responses: refused before anything
/// is sent, naming the model's config as the reason.
fn refuse_streamed_objectives(plan: &RunPlan) -> Result<()> {
    use crate::metrics::MetricRef;
    let streamed = plan
        .slos
        .iter()
        .chain(plan.target_moe.iter().flat_map(|r| r.objectives.iter()))
        .find(|s| matches!(s.metric, MetricRef::Dist(m, _) if m.streaming_only()));
    match streamed {
        Some(slo) => Err(Error::usage(format!(
            "--slo {slo}: model '{}' is not decoupled, so its responses come whole and {slo} cannot be measured: objectives on request_latency or throughput can, or deploy the model decoupled",
            plan.target.model
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::resolve::{TargetSpec, target};

    fn spec(api: Api, streaming: Option<bool>) -> Target {
        target(&TargetSpec {
            endpoint_type: Some(api),
            model: "m".into(),
            streaming,
            ..TargetSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn what_the_api_can_do_is_the_default() {
        assert!(spec(Api::Chat, None).streaming);
        assert!(spec(Api::Chat, None).streaming_by_default);
        assert!(!spec(Api::Chat, Some(false)).streaming);
        assert!(!spec(Api::Chat, Some(false)).streaming_by_default);
        assert!(!spec(Api::Embeddings, None).streaming);
        // Provisional until the model's config is read.
        assert!(spec(Api::Kserve, None).streaming);
        assert_eq!(
            spec(Api::Generate, None).endpoint,
            "v2/models/m/generate_stream"
        );
    }

    #[test]
    fn the_line_names_the_reason() {
        let chat = spec(Api::Chat, None);
        assert_eq!(
            choice_line(&chat, true, None).unwrap(),
            "streaming: on (the chat endpoint streams; --no-streaming times whole responses)"
        );
        let kserve = spec(Api::Kserve, None);
        assert_eq!(
            choice_line(&kserve, true, Some(true)).unwrap(),
            "streaming: on (model 'm' is decoupled; --no-streaming times whole responses)"
        );
        assert_eq!(
            choice_line(&kserve, false, Some(false)).unwrap(),
            "streaming: off (model 'm' is not decoupled: it answers each request whole, so TTFT and ITL cannot be measured, only request latency)"
        );
        assert_eq!(choice_line(&kserve, true, None), None);
    }
}
