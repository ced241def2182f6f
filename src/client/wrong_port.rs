//! Does a port that failed discovery over one protocol answer the other? The diagnosis every mode
//! shares when `-u` points at Triton's HTTP port with a gRPC client, or the reverse: probed only
//! after the first exchange failed, so a healthy start costs nothing.

use std::time::Duration;

use crate::error::Error;
use crate::target::Target;

/// The two ways to talk to a KServe v2 server; its name in messages is the protocol's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
pub enum Wire {
    /// HTTP/1.1 (KServe v2 REST, OpenAI-compatible).
    #[strum(to_string = "HTTP")]
    Http,
    /// KServe v2 gRPC.
    #[strum(to_string = "gRPC")]
    Grpc,
}

/// How long each probe may take (a wrong port answers at once; a slow right one gets time).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether the target's address answers KServe gRPC (`ServerLive` succeeds, over TLS when the
/// target uses it), connection included within the probe's time (a host that drops packets must
/// not add the connect timeout again).
pub async fn answers_grpc(t: &Target) -> bool {
    let probe = async {
        let Ok(channel) = super::grpc::connect(t).await else {
            return false;
        };
        let mut c =
            crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient::new(channel);
        c.server_live(crate::proto::ServerLiveRequest {})
            .await
            .is_ok()
    };
    tokio::time::timeout(PROBE_TIMEOUT, probe)
        .await
        .unwrap_or(false)
}

/// Whether the target's address answers HTTP/1.1 at all (any status: a 404 is still HTTP), over
/// TLS when the target uses it.
pub async fn answers_http(t: &Target) -> bool {
    super::http::install_tls_provider();
    let client = || {
        let b = reqwest::Client::builder()
            .no_proxy()
            .http1_only()
            .timeout(PROBE_TIMEOUT);
        match t.uses_tls() {
            true => super::tls::TlsContext::new(&t.tls).ok()?.reqwest(b).ok()?,
            false => b,
        }
        .build()
        .ok()
    };
    let Some(c) = client() else {
        return false;
    };
    c.get(format!("{}/v2/health/live", t.base_url))
        .send()
        .await
        .is_ok()
}

/// `err` (a failure of the first exchange over `asked`), or, when the address answers the other
/// protocol, a usage error (exit 2) saying so and naming `fix`, the flag that fixes it in the
/// caller's mode. Usage errors the server already explained (unknown model, credentials) pass
/// through unprobed.
pub async fn explain(err: Error, t: &Target, asked: Wire, fix: &str) -> Error {
    if matches!(err, Error::Usage(_) | Error::Interrupted) {
        return err;
    }
    let (other, answers) = match asked {
        Wire::Grpc => (Wire::Http, answers_http(t).await),
        Wire::Http => (Wire::Grpc, answers_grpc(t).await),
    };
    if !answers {
        return err;
    }
    Error::usage(format!("{} speaks {other}, not {asked}: {fix}", t.base_url))
}
