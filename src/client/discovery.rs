//! Before any load: is the server there, does it know the model, does it want credentials?
//! Each failure becomes a message that says what to change.

use serde_json::Value;

use super::error_chain;
use crate::error::UsageError;
use crate::target::Target;
use crate::workload::tensor::{DataType, ModelInfo, TensorSpec};

/// Why the target cannot be profiled.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// The user's flags are wrong (unknown model, wrong credentials): exit code 2.
    #[error("{0}")]
    Usage(UsageError),
    /// The server is unreachable or broken: exit code 1.
    #[error("{0}")]
    Unavailable(String),
}

impl From<PreflightError> for crate::error::Error {
    fn from(e: PreflightError) -> crate::error::Error {
        match e {
            PreflightError::Usage(UsageError(m)) => crate::error::Error::Usage(m),
            PreflightError::Unavailable(m) => crate::error::Error::Failed(m),
        }
    }
}

fn unavailable(target: &Target, e: &reqwest::Error) -> PreflightError {
    let mut msg = format!(
        "cannot reach the server at {}: {}",
        target.base_url,
        error_chain(e)
    );
    if e.is_connect() {
        msg.push_str(&format!(
            "\n  check that the server is running and listening on that address (-u {}); if it runs in a container or on another host, use an address reachable from here and start it with --http-address 0.0.0.0 / --grpc-address 0.0.0.0",
            target.base_url.trim_start_matches("http://")
        ));
    }
    PreflightError::Unavailable(msg)
}

fn auth_error(target: &Target, status: reqwest::StatusCode, body: &str) -> PreflightError {
    // The Messages API takes its key as x-api-key, from ANTHROPIC_API_KEY.
    let key = match target.api {
        crate::target::Api::Messages => {
            "add --api-key KEY (or set ANTHROPIC_API_KEY; sent as x-api-key)"
        }
        _ => "add --api-key KEY (or set OPENAI_API_KEY)",
    };
    PreflightError::Usage(UsageError(format!(
        "the server refused the request with HTTP {status} ({}).\n  It wants credentials: {key}, or -H 'Header: value' for a gateway's own header. If you meant to reach Triton directly, check that -u points at Triton and not at a gateway.",
        body.trim().chars().take(200).collect::<String>()
    )))
}

/// GETs `url`; an unreachable server or a refused credential is the error, any other answer
/// is the caller's to read.
async fn get_authorized(
    client: &reqwest::Client,
    target: &Target,
    url: &str,
) -> Result<reqwest::Response, PreflightError> {
    let resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| unavailable(target, &e))?;
    let status = resp.status();
    if status == 401 || status == 403 {
        return Err(auth_error(
            target,
            status,
            &resp.text().await.unwrap_or_default(),
        ));
    }
    Ok(resp)
}

/// Model names an OpenAI-compatible server lists at `/v1/models`.
pub async fn openai_models(
    client: &reqwest::Client,
    target: &Target,
) -> Result<Option<Vec<String>>, PreflightError> {
    let url = format!("{}/v1/models", target.base_url);
    let resp = get_authorized(client, target, &url).await?;
    let status = resp.status();
    if !status.is_success() {
        // Not every OpenAI-compatible server implements /v1/models; that is not an error.
        return Ok(None);
    }
    let Ok(v) = resp.json::<Value>().await else {
        return Ok(None);
    };
    Ok(v.get("data").and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
            .collect()
    }))
}

/// Model names a Triton server reports, over HTTP: its repository index, or — when the index is
/// empty or restricted (PyTriton loads models with inline configs, so its index is empty) — the
/// per-model statistics, which list every loaded model.
pub async fn triton_models_http(client: &reqwest::Client, base_url: &str) -> Option<Vec<String>> {
    // The names in the list under `key` (the answer itself without one) of a successful answer.
    let names_at = |req: reqwest::RequestBuilder, key: Option<&'static str>| async move {
        let resp = req.send().await.ok().filter(|r| r.status().is_success())?;
        let v = resp.json::<Value>().await.ok()?;
        let list = key.map_or(Some(&v), |k| v.get(k))?.as_array()?;
        let names = list
            .iter()
            .filter_map(|m| m.get("name").and_then(Value::as_str).map(str::to_string));
        Some(names.collect::<Vec<_>>())
    };
    let index = client.post(format!("{base_url}/v2/repository/index"));
    let mut names = names_at(index.json(&serde_json::json!({})), None)
        .await
        .unwrap_or_default();
    if names.is_empty() {
        let stats = client.get(format!("{base_url}/v2/models/stats"));
        names = names_at(stats, Some("model_stats"))
            .await
            .unwrap_or_default();
    }
    if names.is_empty() {
        return None;
    }
    names.sort();
    names.dedup();
    Some(names)
}

/// Formats "models it has: a, b" or a pointer to how to list them.
pub fn list_hint(names: Option<&[String]>) -> String {
    match names {
        Some([]) => "the server reports no models loaded".to_string(),
        Some(n) => format!("models it has: {}", n.join(", ")),
        None => "list them with: curl -s -X POST <server>/v2/repository/index".to_string(),
    }
}

/// Checks that an HTTP target is up and serves the model.
pub async fn check_http(client: &reqwest::Client, target: &Target) -> Result<(), PreflightError> {
    match target.api {
        api if api.lists_openai_models() => {
            if let Some(names) = openai_models(client, target).await?
                && !names.is_empty()
                && !names.iter().any(|n| n == &target.model)
            {
                return Err(PreflightError::Usage(UsageError(format!(
                    "model '{}' is not served at {}; {}",
                    target.model,
                    target.base_url,
                    list_hint(Some(&names))
                ))));
            }
            Ok(())
        }
        _ => {
            let url = format!("{}/v2/models/{}", target.base_url, target.model);
            let resp = get_authorized(client, target, &url).await?;
            let status = resp.status();
            if status.is_success() {
                return Ok(());
            }
            if status == 400 || status == 404 {
                return Err(model_not_found(client, target).await);
            }
            Err(PreflightError::Unavailable(format!(
                "{url} answered HTTP {status}: {}",
                resp.text().await.unwrap_or_default().trim()
            )))
        }
    }
}

/// The usage error for a model a Triton HTTP server answered 400/404 for, listing the models
/// it does serve.
async fn model_not_found(client: &reqwest::Client, target: &Target) -> PreflightError {
    let names = triton_models_http(client, &target.base_url).await;
    PreflightError::Usage(UsageError(format!(
        "model '{}' is not found on {}; {}",
        target.model,
        target.base_url,
        list_hint(names.as_deref())
    )))
}

/// What a Triton HTTP server says about a model: its metadata (`GET /v2/models/{m}`) and config
/// (`GET /v2/models/{m}/config`), as one [`ModelInfo`]. Unknown models list the names that exist.
pub async fn model_info_http(
    client: &reqwest::Client,
    target: &Target,
) -> Result<ModelInfo, PreflightError> {
    model_info_http_version(client, target, "").await
}

/// `v2/models/{m}` or `v2/models/{m}/versions/{v}` (`""` = the server's choice).
pub fn model_path(model: &str, version: &str) -> String {
    if version.is_empty() {
        format!("v2/models/{model}")
    } else {
        format!("v2/models/{model}/versions/{version}")
    }
}

/// [`model_info_http`] for one model version: metadata and config from
/// `v2/models/{m}/versions/{v}[/config]`. An unknown version is a usage error at start (Triton
/// answers 404 "Request for unknown model: 'm' version 7 is not found"), as in perf_analyzer.
pub async fn model_info_http_version(
    client: &reqwest::Client,
    target: &Target,
    version: &str,
) -> Result<ModelInfo, PreflightError> {
    let base = format!("{}/{}", target.base_url, model_path(&target.model, version));
    let resp = get_authorized(client, target, &base).await?;
    let status = resp.status();
    if (status == 400 || status == 404) && !version.is_empty() {
        let unversioned = format!("{}/{}", target.base_url, model_path(&target.model, ""));
        if let Ok(r) = client.get(&unversioned).send().await
            && r.status().is_success()
        {
            return Err(PreflightError::Usage(UsageError(format!(
                "model '{}' has no version {version} on {} ({}): drop -x/--model-version to use the server's choice, or give one it has",
                target.model,
                target.base_url,
                resp.text().await.unwrap_or_default().trim()
            ))));
        }
    }
    if status == 400 || status == 404 {
        return Err(model_not_found(client, target).await);
    }
    if !status.is_success() {
        return Err(PreflightError::Unavailable(format!(
            "{base} answered HTTP {status}"
        )));
    }
    let meta: Value = resp.json().await.map_err(|e| {
        PreflightError::Unavailable(format!("{base}: model metadata is not JSON: {e}"))
    })?;
    let config: Option<Value> = match client.get(format!("{base}/config")).send().await {
        Ok(r) if r.status().is_success() => r.json().await.ok(),
        _ => None,
    };
    Ok(model_info_from_json(&meta, config.as_ref()))
}

/// Combines metadata (names, datatypes, shapes) with config (batching, decoupled, optional inputs).
pub fn model_info(
    meta: crate::proto::ModelMetadataResponse,
    config: Option<crate::proto::ModelConfig>,
) -> ModelInfo {
    let max_batch_size = config.as_ref().map_or(0, |c| c.max_batch_size);
    let strip_batch = |shape: &[i64]| -> Vec<i64> {
        // Metadata shapes include the batch dimension (-1) when the model batches.
        if max_batch_size > 0 && !shape.is_empty() {
            shape[1..].to_vec()
        } else {
            shape.to_vec()
        }
    };
    let optional = |name: &str| {
        config
            .as_ref()
            .is_some_and(|c| c.input.iter().any(|i| i.name == name && i.optional))
    };
    let spec =
        |t: &crate::proto::model_metadata_response::TensorMetadata, may_be_optional| TensorSpec {
            name: t.name.clone(),
            datatype: DataType::from_name(&t.datatype).unwrap_or(DataType::Bytes),
            dims: strip_batch(&t.shape),
            optional: may_be_optional && optional(&t.name),
        };
    ModelInfo {
        name: meta.name,
        platform: meta.platform,
        backend: config
            .as_ref()
            .map(|c| c.backend.clone())
            .unwrap_or_default(),
        max_batch_size,
        decoupled: config
            .as_ref()
            .and_then(|c| c.model_transaction_policy.as_ref())
            .is_some_and(|p| p.decoupled),
        inputs: meta.inputs.iter().map(|t| spec(t, true)).collect(),
        outputs: meta.outputs.iter().map(|t| spec(t, false)).collect(),
    }
}

/// Builds [`ModelInfo`] from KServe metadata JSON and Triton's config JSON, read into the
/// messages gRPC answers with ([`model_info`]). Dimensions may be numbers or strings (protobuf's
/// JSON mapping writes int64 as strings).
pub fn model_info_from_json(meta: &Value, config: Option<&Value>) -> ModelInfo {
    use crate::proto::model_metadata_response::TensorMetadata;
    use crate::proto::{ModelConfig, ModelInput, ModelMetadataResponse, ModelTransactionPolicy};
    let int = |v: &Value| {
        v.as_i64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
    };
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let list = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let tensors = |key: &str| {
        list(meta, key)
            .iter()
            .map(|t| TensorMetadata {
                name: text(t, "name"),
                datatype: text(t, "datatype"),
                shape: list(t, "shape").iter().filter_map(int).collect(),
            })
            .collect()
    };
    let config = config.map(|c| ModelConfig {
        max_batch_size: c.get("max_batch_size").and_then(int).unwrap_or(0) as i32,
        backend: text(c, "backend"),
        input: list(c, "input")
            .iter()
            .map(|i| ModelInput {
                name: text(i, "name"),
                optional: i.get("optional").and_then(Value::as_bool) == Some(true),
                ..Default::default()
            })
            .collect(),
        model_transaction_policy: Some(ModelTransactionPolicy {
            decoupled: c
                .pointer("/model_transaction_policy/decoupled")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }),
        ..Default::default()
    });
    let meta = ModelMetadataResponse {
        name: text(meta, "name"),
        platform: text(meta, "platform"),
        inputs: tensors("inputs"),
        outputs: tensors("outputs"),
        ..Default::default()
    };
    model_info(meta, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_info_from_triton_json() {
        let meta = json!({"name": "yolov8s", "versions": ["1"], "platform": "onnxruntime_onnx",
            "inputs": [{"name": "images", "datatype": "FP32", "shape": [-1, 3, 640, 640]}],
            "outputs": [{"name": "output0", "datatype": "FP32", "shape": [-1, 84, 100]}]});
        let config = json!({"name": "yolov8s", "max_batch_size": 8, "backend": "onnxruntime",
            "input": [{"name": "images", "data_type": "TYPE_FP32", "dims": ["3", "640", "640"]}],
            "model_transaction_policy": {"decoupled": false}});
        let m = model_info_from_json(&meta, Some(&config));
        assert_eq!(m.max_batch_size, 8);
        assert_eq!(m.inputs[0].dims, [3, 640, 640]);
        assert_eq!(m.inputs[0].datatype, crate::workload::tensor::DataType::F32);
        assert_eq!(m.outputs[0].dims, [84, 100]);
        assert!(!m.decoupled);
        let m = model_info_from_json(&meta, None);
        assert_eq!(
            m.inputs[0].dims,
            [-1, 3, 640, 640],
            "without a config nothing is stripped"
        );
    }
}
