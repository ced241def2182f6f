//! Before any load: is the server there, does it know the model, does it want credentials?
//! Each failure becomes a message that says what to change.

use serde_json::Value;

use super::error_chain;
use crate::plan::{Api, Target, UsageError};

/// Why the target cannot be profiled.
#[derive(Debug)]
pub enum PreflightError {
    /// The user's flags are wrong (unknown model, wrong credentials): exit code 2.
    Usage(UsageError),
    /// The server is unreachable or broken: exit code 1.
    Unavailable(String),
}

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PreflightError::Usage(u) => write!(f, "{u}"),
            PreflightError::Unavailable(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for PreflightError {}

fn unavailable(target: &Target, url: &str, e: &reqwest::Error) -> PreflightError {
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
    let _ = url;
    PreflightError::Unavailable(msg)
}

fn auth_error(status: reqwest::StatusCode, body: &str) -> PreflightError {
    PreflightError::Usage(UsageError(format!(
        "the server refused the request with HTTP {status} ({}).\n  It wants credentials: add --api-key KEY (or set OPENAI_API_KEY), or -H 'Header: value' for a gateway's own header. If you meant to reach Triton directly, check that -u points at Triton and not at a gateway.",
        body.trim().chars().take(200).collect::<String>()
    )))
}

/// Model names an OpenAI-compatible server lists at `/v1/models`.
pub async fn openai_models(
    client: &reqwest::Client,
    target: &Target,
) -> Result<Option<Vec<String>>, PreflightError> {
    let url = format!("{}/v1/models", target.base_url);
    let resp = client
        .get(&url)
        .send()
        .await
        .map_err(|e| unavailable(target, &url, &e))?;
    let status = resp.status();
    if status == 401 || status == 403 {
        return Err(auth_error(status, &resp.text().await.unwrap_or_default()));
    }
    if !status.is_success() {
        // Not every OpenAI-compatible server implements /v1/models; that is not an error.
        return Ok(None);
    }
    let v: Value = match resp.json().await {
        Ok(v) => v,
        Err(_) => return Ok(None),
    };
    let names = v.get("data").and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
            .collect::<Vec<_>>()
    });
    Ok(names)
}

/// Model names a Triton server reports through its repository index (HTTP).
pub async fn triton_models_http(client: &reqwest::Client, base_url: &str) -> Option<Vec<String>> {
    let url = format!("{base_url}/v2/repository/index");
    let resp = client
        .post(&url)
        .json(&serde_json::json!({}))
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let v: Value = resp.json().await.ok()?;
    let mut names: Vec<String> = v
        .as_array()?
        .iter()
        .filter_map(|m| m.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
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
        Api::Chat | Api::Completions => {
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
        Api::Generate | Api::Kserve => {
            let url = format!("{}/v2/models/{}", target.base_url, target.model);
            let resp = client
                .get(&url)
                .send()
                .await
                .map_err(|e| unavailable(target, &url, &e))?;
            let status = resp.status();
            if status == 401 || status == 403 {
                return Err(auth_error(status, &resp.text().await.unwrap_or_default()));
            }
            if status.is_success() {
                return Ok(());
            }
            if status == 400 || status == 404 {
                let names = triton_models_http(client, &target.base_url).await;
                return Err(PreflightError::Usage(UsageError(format!(
                    "model '{}' is not found on {}; {}",
                    target.model,
                    target.base_url,
                    list_hint(names.as_deref())
                ))));
            }
            Err(PreflightError::Unavailable(format!(
                "{url} answered HTTP {status}: {}",
                resp.text().await.unwrap_or_default().trim()
            )))
        }
    }
}
