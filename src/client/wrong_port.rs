//! Does a port that failed discovery over one protocol answer the other? The diagnosis every mode
//! shares when `-u` points at Triton's HTTP port with a gRPC client, or the reverse: probed only
//! after the first exchange failed, so a healthy start costs nothing.

use std::time::Duration;

use crate::error::Error;

/// The two ways to talk to a KServe v2 server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// HTTP/1.1 (KServe v2 REST, OpenAI-compatible).
    Http,
    /// KServe v2 gRPC.
    Grpc,
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Wire::Http => "HTTP",
            Wire::Grpc => "gRPC",
        }
    }

    fn other(self) -> Wire {
        match self {
            Wire::Http => Wire::Grpc,
            Wire::Grpc => Wire::Http,
        }
    }
}

/// How long each probe may take (a wrong port answers at once; a slow right one gets time).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether `base_url` answers KServe gRPC (`ServerLive` succeeds), connection included within
/// the probe's time (a host that drops packets must not add the connect timeout again).
pub async fn answers_grpc(base_url: &str) -> bool {
    let probe = async {
        let Ok(channel) = super::grpc::connect(base_url).await else {
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

/// Whether `base_url` answers HTTP/1.1 at all (any status: a 404 is still HTTP).
pub async fn answers_http(base_url: &str) -> bool {
    super::http::install_tls_provider();
    let Ok(c) = reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .timeout(PROBE_TIMEOUT)
        .build()
    else {
        return false;
    };
    c.get(format!("{base_url}/v2/health/live"))
        .send()
        .await
        .is_ok()
}

/// `err` (a failure of the first exchange over `asked`), or, when the address answers the other
/// protocol, a usage error (exit 2) saying so and naming `fix`, the flag that fixes it in the
/// caller's mode. Usage errors the server already explained (unknown model, credentials) pass
/// through unprobed.
pub async fn explain(err: Error, base_url: &str, asked: Wire, fix: &str) -> Error {
    if matches!(err, Error::Usage(_) | Error::Interrupted) {
        return err;
    }
    let answers = match asked.other() {
        Wire::Http => answers_http(base_url).await,
        Wire::Grpc => answers_grpc(base_url).await,
    };
    if !answers {
        return err;
    }
    Error::usage(format!(
        "{base_url} speaks {}, not {}: {fix}",
        asked.other().name(),
        asked.name()
    ))
}
