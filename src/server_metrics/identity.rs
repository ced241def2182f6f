//! Who the server is: its name and version and what it says about the model, read once before
//! the first level so a run records what it measured (`context.server`, `context.model`) and
//! `compare` can say when the server changed between two runs.
//!
//! Where it looks, first answer wins: KServe's server metadata (`GET /v2`, or the
//! `ServerMetadata` RPC over gRPC: Triton says `{"name": "triton", "version": "2.51.0"}`), vLLM's
//! and SGLang's `GET /version`, TGI's `GET /info`; failing those, the HTTP `Server` header.
//! Everything is best effort: a server that says nothing is recorded as unknown, never an error.
//! Bodies are read through [`super::fetch_page`] (bounded), and every string kept is cut to
//! [`MAX_FIELD`] characters, so a hostile server cannot bloat the artifacts.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::workload::tensor::ModelInfo;

/// Longest string kept from the server (characters).
pub const MAX_FIELD: usize = 200;

/// What the server says it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerIdentity {
    /// Its name (`triton`, `vllm`, `text-generation-inference`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its version, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Protocol extensions it declares (KServe v2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Where this was read (`GET /v2`, `gRPC ServerMetadata`, `GET /version`, `Server header`),
    /// or `none` when nothing answered.
    pub source: String,
}

impl ServerIdentity {
    /// "triton 2.51.0", "vllm", or "unknown" for messages and the report header.
    pub fn describe(&self) -> String {
        match (&self.name, &self.version) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.clone(),
            (None, Some(v)) => format!("version {v}"),
            (None, None) => "unknown".to_string(),
        }
    }

    fn unknown() -> ServerIdentity {
        ServerIdentity {
            source: "none".into(),
            ..ServerIdentity::default()
        }
    }
}

/// Cuts a server's string to [`MAX_FIELD`] characters.
fn field(s: &str) -> String {
    s.chars().take(MAX_FIELD).collect()
}

fn str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(field)
}

/// Reads a KServe v2 server metadata document (`GET /v2`).
pub fn from_kserve_json(v: &Value, source: &str) -> Option<ServerIdentity> {
    let name = str_at(v, "name");
    let version = str_at(v, "version");
    if name.is_none() && version.is_none() {
        return None;
    }
    let extensions = v
        .get("extensions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .take(32)
                .map(field)
                .collect()
        })
        .unwrap_or_default();
    Some(ServerIdentity {
        name,
        version,
        extensions,
        source: source.into(),
    })
}

/// Reads vLLM's or SGLang's `GET /version` (`{"version": "0.6.3"}`) or TGI's `GET /info`
/// (`{"version": "2.4.0", "model_id": …}`); `name` is the engine those endpoints belong to.
fn from_version_json(v: &Value, name: Option<&str>, source: &str) -> Option<ServerIdentity> {
    let version = str_at(v, "version")?;
    Some(ServerIdentity {
        name: name.map(str::to_string),
        version: Some(version),
        source: source.into(),
        ..ServerIdentity::default()
    })
}

/// Reads an identity from a JSON document.
type Reader = fn(&Value) -> Option<ServerIdentity>;

/// The server's identity over HTTP at `base_url`; `client` must carry no API key (the metrics
/// client), since these paths need none.
pub async fn identify_http(client: &reqwest::Client, base_url: &str) -> ServerIdentity {
    let json_at = |path: &'static str| async move {
        let text = super::fetch_page(client, &format!("{base_url}{path}"))
            .await
            .ok()?;
        serde_json::from_str::<Value>(&text).ok()
    };
    let readers: [(&str, Reader); 3] = [
        ("/v2", |v| from_kserve_json(v, "GET /v2")),
        ("/version", |v| from_version_json(v, None, "GET /version")),
        ("/info", |v| {
            from_version_json(v, Some("text-generation-inference"), "GET /info")
        }),
    ];
    for (path, read) in readers {
        if let Some(id) = json_at(path).await.and_then(|v| read(&v)) {
            return id;
        }
    }
    server_header(client, base_url)
        .await
        .unwrap_or_else(ServerIdentity::unknown)
}

/// The `Server` header of `GET /` (`uvicorn`, `nginx/1.22.1`): a name when nothing else says one.
async fn server_header(client: &reqwest::Client, base_url: &str) -> Option<ServerIdentity> {
    let resp = client
        .get(format!("{base_url}/"))
        .timeout(std::time::Duration::from_secs(5))
        .send()
        .await
        .ok()?;
    let h = resp.headers().get(reqwest::header::SERVER)?.to_str().ok()?;
    let (name, version) = h
        .split_once('/')
        .map_or((h, None), |(n, v)| (n, Some(field(v))));
    Some(ServerIdentity {
        name: Some(field(name)),
        version,
        source: "Server header".into(),
        ..ServerIdentity::default()
    })
}

/// The server's identity over KServe gRPC (the `ServerMetadata` RPC).
pub async fn identify_grpc(
    channel: tonic::transport::Channel,
    md: &tonic::metadata::MetadataMap,
) -> ServerIdentity {
    use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
    let mut c = GrpcInferenceServiceClient::new(channel);
    let req = super::grpc::with_metadata(
        tonic::Request::new(crate::proto::ServerMetadataRequest {}),
        md,
    );
    match tokio::time::timeout(std::time::Duration::from_secs(5), c.server_metadata(req)).await {
        Ok(Ok(r)) => {
            let m = r.into_inner();
            let v = json!({"name": m.name, "version": m.version, "extensions": m.extensions});
            from_kserve_json(&v, "gRPC ServerMetadata").unwrap_or_else(ServerIdentity::unknown)
        }
        _ => ServerIdentity::unknown(),
    }
}

/// What a Triton model's metadata and config say, for the record: name, platform, backend,
/// batching, decoupled, and its tensors.
pub fn describe_model(info: &ModelInfo) -> Value {
    let tensors = |ts: &[crate::workload::tensor::TensorSpec]| -> Vec<Value> {
        ts.iter()
            .take(64)
            .map(
                |t| json!({"name": field(&t.name), "datatype": t.datatype.name(), "shape": t.dims}),
            )
            .collect()
    };
    json!({
        "name": field(&info.name),
        "platform": field(&info.platform),
        "backend": field(&info.backend),
        "max_batch_size": info.max_batch_size,
        "decoupled": info.decoupled,
        "inputs": tensors(&info.inputs),
        "outputs": tensors(&info.outputs),
    })
}

/// The entry for `model` in an OpenAI `GET /v1/models` listing (`id`, `owned_by`, and, where
/// the server adds them, `max_model_len`, `root`), strings cut to [`MAX_FIELD`].
pub fn describe_openai_model(listing: &Value, model: &str) -> Option<Value> {
    let entry = listing
        .get("data")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))?;
    let keys = [
        "id",
        "owned_by",
        "root",
        "parent",
        "max_model_len",
        "created",
    ];
    let out = keys.into_iter().filter_map(|key| {
        let value = match entry.get(key)? {
            Value::String(s) => Value::String(field(s)),
            n @ Value::Number(_) => n.clone(),
            _ => return None,
        };
        Some((key.to_string(), value))
    });
    Some(Value::Object(out.collect()))
}

/// The model's entry from `GET {base_url}/v1/models` (bounded read); `client` is the
/// target's own (it carries the API key the listing may need, to the target's origin only).
pub async fn openai_model_http(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
) -> Option<Value> {
    let text = super::fetch_page(client, &format!("{base_url}/v1/models"))
        .await
        .ok()?;
    describe_openai_model(&serde_json::from_str(&text).ok()?, model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kserve_metadata_is_read_and_cut() {
        let long = "x".repeat(5000);
        let v = json!({"name": "triton", "version": long, "extensions": ["statistics", 3, "binary_tensor_data"]});
        let id = from_kserve_json(&v, "GET /v2").unwrap();
        assert_eq!(id.name.as_deref(), Some("triton"));
        assert_eq!(id.version.as_ref().map(String::len), Some(MAX_FIELD));
        assert_eq!(id.extensions, vec!["statistics", "binary_tensor_data"]);
        assert_eq!(
            from_kserve_json(&json!({"extensions": []}), "GET /v2"),
            None
        );
    }

    #[test]
    fn version_endpoints_and_descriptions() {
        let id = from_version_json(&json!({"version": "0.6.3"}), None, "GET /version").unwrap();
        assert_eq!(id.describe(), "version 0.6.3");
        let tgi = from_version_json(
            &json!({"version": "2.4.0", "model_id": "m"}),
            Some("text-generation-inference"),
            "GET /info",
        )
        .unwrap();
        assert_eq!(tgi.describe(), "text-generation-inference 2.4.0");
        assert_eq!(ServerIdentity::unknown().describe(), "unknown");
        assert_eq!(from_version_json(&json!({"ok": true}), None, "x"), None);
    }

    #[test]
    fn openai_entry_keeps_known_scalar_fields() {
        let listing = json!({"data": [
            {"id": "other"},
            {"id": "gpt2", "owned_by": "vllm", "max_model_len": 1024, "permission": [{"big": 1}]}
        ]});
        assert_eq!(
            describe_openai_model(&listing, "gpt2"),
            Some(json!({"id": "gpt2", "owned_by": "vllm", "max_model_len": 1024}))
        );
        assert_eq!(describe_openai_model(&listing, "absent"), None);
    }
}
